//! Results are bitwise identical whether kernels run on 1 or 2 rayon threads.

mod common;

use common::{in_pool, Rng};
use ferrograd_kernels::layout::Layout;
use ferrograd_kernels::par::Cost;
use ferrograd_kernels::reduce::{reduce, reduce_slice, Max, Sum, SumSq};
use ferrograd_kernels::unary_binary::{assign, binary, unary};
use ferrograd_kernels::vmath::{exp_f32, tanh_f32};

const N: usize = 1 << 22;

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn reductions_are_bitwise_identical_for_1_and_2_threads() {
    let mut rng = Rng::new(20);
    let a = rng.vec_f32(N, -1.0, 1.0);
    let sq = Layout::contiguous(&[2048, 2048]);
    let cases: Vec<(Layout, Vec<bool>)> = vec![
        (sq.clone(), vec![true, false]),
        (sq.clone(), vec![false, true]),
        (sq.clone(), vec![true, true]),
        (sq.permute(&[1, 0]), vec![true, false]),
        (sq.permute(&[1, 0]), vec![true, true]),
        (Layout::contiguous(&[2048, 2048]).slice_axis(1, 1, 2, 1023), vec![true, true]),
        (Layout::contiguous(&[2048, 2048]).slice_axis(1, 1, 2, 1023), vec![false, true]),
        (Layout::contiguous(&[64, 256, 256]), vec![true, false, true]),
    ];
    let run = || {
        let mut res = vec![bits(&[reduce_slice(&a, Sum), reduce_slice(&a, SumSq), reduce_slice(&a, Max)])];
        for (l, axes) in &cases {
            let n_out = (0..l.ndim()).filter(|&d| !axes[d]).map(|d| l.shape[d]).product();
            let mut out = vec![0f32; n_out];
            reduce(&a, l, axes, Sum, &mut out);
            res.push(bits(&out));
        }
        res
    };
    let one = in_pool(1, run);
    let two = in_pool(2, run);
    assert_eq!(one, two);
    // And the sum is right (not merely stable).
    let exact = ferrograd_kernels::reference::sum_f64(a.iter().map(|&x| x as f64));
    assert!((f32::from_bits(one[0][0]) as f64 - exact).abs() < 1e-3);
}

#[test]
fn elementwise_is_bitwise_identical_for_1_and_2_threads() {
    let mut rng = Rng::new(21);
    let a = rng.vec_f32(N, -10.0, 10.0);
    let b = rng.vec_f32(N, -10.0, 10.0);
    let l = Layout::contiguous(&[N]);
    let sq = Layout::contiguous(&[2048, 2048]);
    let t = sq.permute(&[1, 0]);
    let row = Layout::contiguous(&[2048]).broadcast_to(&[2048, 2048]).unwrap();
    let run = || {
        let mut outs = vec![vec![0f32; N]; 5];
        binary(&a, &l, &b, &l, &mut outs[0], Cost::Light, |x, y| x + y);
        unary(&a, &l, &mut outs[1], Cost::Heavy, exp_f32);
        unary(&a, &t, &mut outs[2], Cost::Heavy, tanh_f32);
        binary(&a, &t, &b, &row, &mut outs[3], Cost::Light, |x, y| x * y);
        outs[4].copy_from_slice(&b);
        assign(&mut outs[4], &sq, &a, &t, |d, s| d - s);
        outs.iter().map(|o| bits(o)).collect::<Vec<_>>()
    };
    let one = in_pool(1, run);
    let two = in_pool(2, run);
    assert!(one == two);
    assert_eq!(f32::from_bits(one[0][5]), a[5] + b[5]);
    assert_eq!(f32::from_bits(one[4][1]), b[1] - a[2048]);
}
