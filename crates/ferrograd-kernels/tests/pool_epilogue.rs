//! Pooling (forward, both backwards, the max gather) against a direct reference, and the
//! convolution epilogue; every result bitwise identical on 1, 2 and 3 rayon threads.

mod common;

use common::{in_pool, Rng};
use ferrograd_kernels::conv::{
    conv_forward, conv_forward_then, pool_forward, pool_linear_backward, pool_max_backward, pool_max_gather, ConvShape,
    Geom, PoolKind,
};

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn out_len(n: usize, k: usize, s: usize, p: usize) -> usize {
    (n + 2 * p - k) / s + 1
}

fn geom(inp: [usize; 3], k: [usize; 3], s: [usize; 3], p: [usize; 3]) -> Geom {
    let out = [0, 1, 2].map(|i| out_len(inp[i], k[i], s[i], p[i]));
    Geom { c: 1, inp, out, k, s, p, d: [1, 1, 1] }
}

/// Reference windows of one plane: for each output, its in-input positions in row-major order
/// and the window's extent inside the padded input.
fn windows(g: &Geom) -> Vec<(Vec<usize>, usize)> {
    let mut res = Vec::new();
    for zo in 0..g.out[0] {
        for yo in 0..g.out[1] {
            for xo in 0..g.out[2] {
                let o = [zo, yo, xo];
                let (mut pos, mut area) = (Vec::new(), 1);
                let ranges: Vec<(isize, isize)> = (0..3)
                    .map(|i| {
                        let start = (o[i] * g.s[i]) as isize - g.p[i] as isize;
                        let end = (start + g.k[i] as isize).min((g.inp[i] + g.p[i]) as isize);
                        (start, end)
                    })
                    .collect();
                ranges.iter().for_each(|(a, b)| area *= (b - a).max(0) as usize);
                for z in ranges[0].0..ranges[0].1 {
                    for y in ranges[1].0..ranges[1].1 {
                        for x in ranges[2].0..ranges[2].1 {
                            let inside = [z, y, x].iter().zip(g.inp).all(|(&v, n)| v >= 0 && (v as usize) < n);
                            if inside {
                                pos.push(((z as usize) * g.inp[1] + y as usize) * g.inp[2] + x as usize);
                            }
                        }
                    }
                }
                res.push((pos, area));
            }
        }
    }
    res
}

/// (input, kernel, stride, pad, planes).
type Case = ([usize; 3], [usize; 3], [usize; 3], [usize; 3], usize);

const CASES: &[Case] = &[
    // (input, kernel, stride, pad, planes): ResNet's stem max pool, the demo CNN's small maps,
    // a global pool, 1-D and 3-D problems, planes enough to go parallel.
    ([1, 56, 56], [1, 3, 3], [1, 2, 2], [0, 1, 1], 96),
    ([1, 8, 8], [1, 2, 2], [1, 2, 2], [0, 0, 0], 2048),
    ([1, 4, 4], [1, 2, 2], [1, 2, 2], [0, 0, 0], 4096),
    ([1, 4, 4], [1, 4, 4], [1, 1, 1], [0, 0, 0], 4096),
    ([1, 1, 37], [1, 1, 5], [1, 1, 3], [0, 0, 2], 64),
    ([5, 6, 7], [2, 3, 2], [2, 1, 2], [1, 1, 0], 40),
];

#[test]
fn pooling_matches_reference_and_is_bitwise_identical_on_1_2_3_threads() {
    let mut rng = Rng::new(18);
    for &(inp, k, s, p, planes) in CASES {
        let g = geom(inp, k, s, p);
        let (ip, op) = (g.in_plane(), g.out_plane());
        // Repeated values test the first-maximum rule; a NaN the skipping of later NaNs.
        let mut x: Vec<f32> = (0..planes * ip).map(|_| (rng.below(7) as f32 - 3.0) * 0.5).collect();
        x[ip / 2] = f32::NAN;
        let gy = rng.vec_f32(planes * op, -1.0, 1.0);
        let h = rng.vec_f32(planes * ip, -1.0, 1.0);
        let wins = windows(&g);
        let (mut max_ref, mut avg_ref, mut avg_ex_ref) =
            (vec![0f32; planes * op], vec![0f32; planes * op], vec![0f32; planes * op]);
        let (mut dmax_ref, mut davg_ref, mut gather_ref) =
            (vec![0f32; planes * ip], vec![0f32; planes * ip], vec![0f32; planes * op]);
        for pl in 0..planes {
            let xs = &x[pl * ip..][..ip];
            for (o, (pos, area)) in wins.iter().enumerate() {
                let mut best = pos[0];
                for &i in pos {
                    if xs[i] > xs[best] {
                        best = i;
                    }
                }
                max_ref[pl * op + o] = xs[best];
                dmax_ref[pl * ip + best] += gy[pl * op + o];
                gather_ref[pl * op + o] = h[pl * ip + best];
                let mut acc = 0f32;
                pos.iter().for_each(|&i| acc += xs[i]);
                avg_ref[pl * op + o] = acc * (1.0 / *area as f32);
                avg_ex_ref[pl * op + o] = acc * (1.0 / pos.len() as f32);
                let v = gy[pl * op + o] * (1.0 / *area as f32);
                pos.iter().for_each(|&i| davg_ref[pl * ip + i] += v);
            }
        }
        let run = || {
            let mut outs = Vec::new();
            for kind in
                [PoolKind::Max, PoolKind::Avg { count_include_pad: true }, PoolKind::Avg { count_include_pad: false }]
            {
                let mut y = vec![f32::NAN; planes * op];
                pool_forward(&g, kind, &x, &mut y);
                outs.push(bits(&y));
            }
            let mut dx = vec![f32::NAN; planes * ip];
            pool_max_backward(&g, &gy, &x, &mut dx);
            outs.push(bits(&dx));
            pool_linear_backward(&g, PoolKind::Avg { count_include_pad: true }, &gy, &mut dx);
            outs.push(bits(&dx));
            let mut y = vec![f32::NAN; planes * op];
            pool_max_gather(&g, &h, &x, &mut y);
            outs.push(bits(&y));
            outs
        };
        let one = in_pool(1, run);
        assert_eq!(one, in_pool(2, run), "{inp:?} k{k:?}: 2 threads differ from 1");
        assert_eq!(one, in_pool(3, run), "{inp:?} k{k:?}: 3 threads differ from 1");
        let want = [max_ref, avg_ref, avg_ex_ref, dmax_ref, davg_ref, gather_ref];
        for (j, (got, want)) in one.iter().zip(&want).enumerate() {
            assert_eq!(got, &bits(want), "{inp:?} k{k:?}: result {j} differs from the reference");
        }
    }
}

#[test]
fn conv_epilogue_sees_every_plane_once_with_its_filter() {
    let mut rng = Rng::new(19);
    // Pointwise (direct GEMM), 3x3 across several images per batch, and depthwise.
    let shapes = [(8, 16, 24, 1, [1, 14, 14], 1), (8, 32, 64, 1, [1, 7, 7], 3), (8, 24, 24, 24, [1, 28, 28], 3)];
    for (n, c, f, groups, inp, k) in shapes {
        let pad = k / 2;
        let g = Geom { c, inp, out: inp, k: [1, k, k], s: [1, 1, 1], p: [0, pad, pad], d: [1, 1, 1] };
        let s = ConvShape { n, f, groups, g };
        let x = rng.vec_f32(n * c * g.in_plane(), -1.0, 1.0);
        let w = rng.vec_f32(f * c / groups * k * k, -1.0, 1.0);
        let b = rng.vec_f32(f, -1.0, 1.0);
        let scale: Vec<f32> = (0..f).map(|i| 0.5 + i as f32 * 0.25).collect();
        let p = g.out_plane();
        let mut plain = vec![0f32; n * f * p];
        conv_forward(&s, &x, &w, Some(&b), &mut plain);
        let want: Vec<f32> = plain.iter().enumerate().map(|(i, &v)| (v * scale[i / p % f]).max(0.0)).collect();
        let run = || {
            let mut y = vec![f32::NAN; n * f * p];
            conv_forward_then(&s, &x, &w, Some(&b), &mut y, &|fi: usize, plane: &mut [f32]| {
                plane.iter_mut().for_each(|v| *v = (*v * scale[fi]).max(0.0))
            });
            bits(&y)
        };
        let one = in_pool(1, run);
        assert_eq!(one, bits(&want), "n{n} c{c} f{f} g{groups}: epilogue result differs from conv then map");
        assert_eq!(one, in_pool(2, run), "n{n} c{c} f{f} g{groups}: 2 threads differ");
        assert_eq!(one, in_pool(3, run), "n{n} c{c} f{f} g{groups}: 3 threads differ");
    }
}
