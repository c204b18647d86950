//! `unary`, `binary` and `assign` against `reference::gather` plus a naive loop, over every input
//! layout kind, with sizes on both sides of the parallel threshold.

mod common;

use common::{assert_all_same, in_pool, make_view, Kind, Rng, KINDS, WRITABLE};
use ferrograd_kernels::element::alloc_output;
use ferrograd_kernels::layout::{broadcast_shapes, Layout};
use ferrograd_kernels::par::{Cost, PAR_MIN_ELEMS};
use ferrograd_kernels::reference::gather;
use ferrograd_kernels::unary_binary::{assign, binary, unary};
use ferrograd_kernels::vmath::exp_f32;
use ferrograd_kernels::Element;
use half::f16;

const SMALL: &[&[usize]] = &[&[], &[1], &[7], &[3, 5], &[2, 3, 4], &[1, 1, 1], &[0], &[0, 3], &[3, 0, 2], &[4, 1, 6]];
/// Above `PAR_MIN_ELEMS` (light work goes parallel).
const LARGE: &[&[usize]] = &[&[140, 1000], &[3, 230, 201]];

fn check_unary<T: Element, U: Element>(
    rng: &mut Rng,
    shape: &[usize],
    kind: Kind,
    cost: Cost,
    f: impl Fn(T) -> U + Copy + Send + Sync,
) {
    let (buf, l) = make_view(shape, kind, || T::from_f64(rng.range(-3.0, 3.0)));
    let want: Vec<U> = gather(&buf, &l).into_iter().map(f).collect();
    let mut got = vec![U::default(); l.numel()];
    unary(&buf, &l, &mut got, cost, f);
    assert_all_same(&got, &want, &format!("unary {shape:?} {kind:?} {cost:?}"));
}

#[test]
fn unary_matches_reference_on_all_layouts() {
    let mut rng = Rng::new(1);
    in_pool(2, || {
        for &shape in SMALL.iter().chain(LARGE) {
            for kind in KINDS {
                check_unary(&mut rng, shape, kind, Cost::Light, |x: f32| x * 2.0 + 1.0);
                check_unary(&mut rng, shape, kind, Cost::Heavy, exp_f32);
                check_unary(&mut rng, shape, kind, Cost::Light, |x: f64| x.abs().sqrt());
                check_unary(&mut rng, shape, kind, Cost::Light, |x: i32| x as f32 * 0.5);
                check_unary(&mut rng, shape, kind, Cost::Light, |x: f32| x > 0.5);
                check_unary(&mut rng, shape, kind, Cost::Light, |x: u8| x.wrapping_mul(3));
                check_unary(&mut rng, shape, kind, Cost::Light, |x: f16| f32::from(x) * 2.0);
            }
        }
    });
}

#[test]
fn unary_large_paths_really_run_in_parallel_sizes() {
    // Guard the fixture: the large shapes must cross the threshold, else the parallel path is
    // never exercised.
    for &s in LARGE {
        assert!(s.iter().product::<usize>() >= PAR_MIN_ELEMS.max(Cost::Heavy.min_parallel()));
    }
}

fn check_binary<A: Element, B: Element, C: Element>(
    rng: &mut Rng,
    sa: &[usize],
    sb: &[usize],
    ka: Kind,
    kb: Kind,
    f: impl Fn(A, B) -> C + Copy + Send + Sync,
) {
    let out_shape = broadcast_shapes(sa, sb).expect("compatible");
    let (a, la) = make_view(sa, ka, || A::from_f64(rng.range(-5.0, 5.0)));
    let (b, lb) = make_view(sb, kb, || B::from_f64(rng.range(-5.0, 5.0)));
    let (la, lb) = (la.broadcast_to(&out_shape).unwrap(), lb.broadcast_to(&out_shape).unwrap());
    let want: Vec<C> = gather(&a, &la).into_iter().zip(gather(&b, &lb)).map(|(x, y)| f(x, y)).collect();
    let mut got = vec![C::default(); out_shape.iter().product()];
    binary(&a, &la, &b, &lb, &mut got, Cost::Light, f);
    assert_all_same(&got, &want, &format!("binary {sa:?}({ka:?}) x {sb:?}({kb:?})"));
}

const PAIRS: &[(&[usize], &[usize])] = &[
    (&[3, 4, 5], &[3, 4, 5]),
    (&[3, 1, 5], &[1, 4, 1]),
    (&[4, 5], &[5]),
    (&[4, 1], &[4, 5]),
    (&[], &[3, 4]),
    (&[2, 3], &[]),
    (&[], &[]),
    (&[1], &[3, 4]),
    (&[0, 1, 3], &[0, 10, 3]),
    (&[0, 1], &[0, 5]),
    (&[2, 0], &[1]),
    (&[1, 0], &[3, 1]),
    (&[2, 1, 3, 1], &[4, 1, 5]),
    // Above the parallel threshold.
    (&[400, 350], &[400, 350]),
    (&[400, 1], &[1, 350]),
    (&[400, 350], &[350]),
    (&[400, 350], &[400, 1]),
    (&[140_000], &[]),
    (&[2, 1, 25_000], &[1, 3, 1]),
];

#[test]
fn binary_broadcasting_matches_reference() {
    let mut rng = Rng::new(2);
    in_pool(2, || {
        for &(sa, sb) in PAIRS {
            for ka in KINDS {
                for kb in KINDS {
                    check_binary(&mut rng, sa, sb, ka, kb, |x: f32, y: f32| x * 3.0 - y);
                    check_binary(&mut rng, sa, sb, ka, kb, |x: i32, y: i32| x.wrapping_sub(y));
                }
            }
            // Mixed element types and a comparison producing bool.
            check_binary(&mut rng, sa, sb, Kind::Permuted, Kind::Contiguous, |x: f64, y: f32| x / y as f64);
            check_binary(&mut rng, sa, sb, Kind::Contiguous, Kind::Stepped, |x: f32, y: f32| x < y);
        }
    });
}

#[test]
fn binary_zero_size_broadcast_of_empty_operand_does_not_read() {
    // (0,1) broadcast to (0,5) has stride 0 on the non-empty axis: it looks like a scalar
    // broadcast but its buffer is empty.
    let a: Vec<f32> = vec![];
    let la = Layout::contiguous(&[0, 1]).broadcast_to(&[0, 5]).unwrap();
    let b: Vec<f32> = vec![];
    let lb = Layout::contiguous(&[0, 5]);
    let mut out: Vec<f32> = vec![];
    binary(&a, &la, &b, &lb, &mut out, Cost::Light, |x, y| x + y);
    binary(&b, &lb, &a, &la, &mut out, Cost::Light, |x, y| x + y);
    binary(&a, &la, &a, &la, &mut out, Cost::Light, |x, y| x + y);
    unary(&a, &la, &mut out, Cost::Light, |x: f32| x);
    let mut dst: Vec<f32> = vec![];
    assign(&mut dst, &lb, &a, &la, |_, s| s);
    assert!(out.is_empty() && dst.is_empty());
}

fn check_assign<T: Element, S: Element>(
    rng: &mut Rng,
    shape: &[usize],
    src_shape: &[usize],
    kd: Kind,
    ks: Kind,
    f: impl Fn(T, S) -> T + Copy + Send + Sync,
) {
    let (mut dst, ld) = make_view(shape, kd, || T::from_f64(rng.range(-9.0, 9.0)));
    let (src, ls) = make_view(src_shape, ks, || S::from_f64(rng.range(-9.0, 9.0)));
    let ls = ls.broadcast_to(shape).unwrap();
    // Positions of the destination view, found by gathering an index buffer through its layout.
    let positions: Vec<i64> = gather(&(0..dst.len() as i64).collect::<Vec<_>>(), &ld);
    let mut want = dst.clone();
    for (&p, s) in positions.iter().zip(gather(&src, &ls)) {
        want[p as usize] = f(want[p as usize], s);
    }
    assign(&mut dst, &ld, &src, &ls, f);
    assert_all_same(&dst, &want, &format!("assign {shape:?}({kd:?}) <- {src_shape:?}({ks:?})"));
}

#[test]
fn assign_matches_reference_on_all_layouts() {
    let mut rng = Rng::new(3);
    let cases: &[(&[usize], &[usize])] = &[
        (&[], &[]),
        (&[5], &[5]),
        (&[5], &[]),
        (&[3, 4], &[4]),
        (&[3, 4], &[3, 1]),
        (&[2, 3, 4], &[2, 3, 4]),
        (&[0, 4], &[4]),
        (&[3, 0], &[1, 0]),
        (&[400, 350], &[400, 350]),
        (&[400, 350], &[350]),
        (&[400, 350], &[1]),
        (&[400, 350], &[400, 1]),
    ];
    in_pool(2, || {
        for &(shape, src_shape) in cases {
            for kd in WRITABLE {
                for ks in KINDS {
                    check_assign(&mut rng, shape, src_shape, kd, ks, |_: f32, s: f32| s);
                    check_assign(&mut rng, shape, src_shape, kd, ks, |d: f32, s: f32| d * 0.5 + s);
                    check_assign(&mut rng, shape, src_shape, kd, ks, |d: i64, s: i32| d - s as i64);
                }
            }
        }
    });
}

#[test]
fn alloc_output_has_the_requested_length() {
    assert_eq!(alloc_output::<f32>(100_000).len(), 100_000);
    assert_eq!(alloc_output::<f64>(3), vec![0.0; 3]);
    // bool is always zeroed (not every byte is a valid bool).
    assert!(alloc_output::<bool>(50_000).iter().all(|&b| !b));
}
