//! Convolution forward and backward against a direct six-loop reference in f64, on shapes that
//! exercise batching across images (several batches, a partial last batch), groups, depthwise,
//! strides, dilation, padding, 1x1 kernels and 1-D/3-D problems; plus bitwise determinism across
//! thread counts.

mod common;

use common::{in_pool, Rng};
use ferrograd_kernels::conv::{conv_backward, conv_forward, set_gathered_columns, ConvShape, Geom};

/// A convolution problem in NCDHW form.
#[derive(Clone, Copy, Debug)]
struct Case {
    n: usize,
    c: usize,
    f: usize,
    groups: usize,
    inp: [usize; 3],
    k: [usize; 3],
    s: [usize; 3],
    p: [usize; 3],
    d: [usize; 3],
}

impl Case {
    fn shape(&self) -> ConvShape {
        let out = [0, 1, 2].map(|i| (self.inp[i] + 2 * self.p[i] - self.d[i] * (self.k[i] - 1) - 1) / self.s[i] + 1);
        let g = Geom { c: self.c, inp: self.inp, out, k: self.k, s: self.s, p: self.p, d: self.d };
        ConvShape { n: self.n, f: self.f, groups: self.groups, g }
    }
}

/// Calls `f(x_index, w_index, y_index)` for every multiply-add of the convolution.
fn for_each_tap(s: &ConvShape, mut f: impl FnMut(usize, usize, usize)) {
    let g = &s.g;
    let (cg, fg) = (g.c / s.groups, s.f / s.groups);
    for n in 0..s.n {
        for fo in 0..s.f {
            let grp = fo / fg;
            for ci in 0..cg {
                let c = grp * cg + ci;
                for o in 0..g.out_plane() {
                    let oz = o / (g.out[1] * g.out[2]);
                    let oy = o / g.out[2] % g.out[1];
                    let ox = o % g.out[2];
                    for kz in 0..g.k[0] {
                        for ky in 0..g.k[1] {
                            for kx in 0..g.k[2] {
                                let pos = [(oz, kz, 0), (oy, ky, 1), (ox, kx, 2)]
                                    .map(|(o, k, a)| (o * g.s[a] + k * g.d[a]) as isize - g.p[a] as isize);
                                if (0..3).any(|a| pos[a] < 0 || pos[a] >= g.inp[a] as isize) {
                                    continue;
                                }
                                let xi = ((n * g.c + c) * g.inp[0] + pos[0] as usize) * g.inp[1] * g.inp[2]
                                    + pos[1] as usize * g.inp[2]
                                    + pos[2] as usize;
                                let wi = ((fo * cg + ci) * g.k[0] + kz) * g.k[1] * g.k[2] + ky * g.k[2] + kx;
                                let yi = (n * s.f + fo) * g.out_plane() + o;
                                f(xi, wi, yi);
                            }
                        }
                    }
                }
            }
        }
    }
}

fn max_rel(a: &[f32], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    let scale = b.iter().fold(1.0f64, |m, v| m.max(v.abs()));
    a.iter().zip(b).map(|(&x, &y)| (x as f64 - y).abs()).fold(0.0, f64::max) / scale
}

fn check(case: Case, seed: u64) {
    let s = case.shape();
    let mut rng = Rng::new(seed);
    let xlen = s.n * s.g.c * s.g.in_plane();
    let wlen = s.f * s.g.c / s.groups * s.g.ksize();
    let ylen = s.n * s.f * s.g.out_plane();
    let (x, w, b, dy) = (
        rng.vec_f32(xlen, -1.0, 1.0),
        rng.vec_f32(wlen, -1.0, 1.0),
        rng.vec_f32(s.f, -1.0, 1.0),
        rng.vec_f32(ylen, -1.0, 1.0),
    );

    let (mut y_ref, mut dx_ref, mut dw_ref) = (vec![0f64; ylen], vec![0f64; xlen], vec![0f64; wlen]);
    for (i, v) in y_ref.iter_mut().enumerate() {
        *v = b[i / s.g.out_plane() % s.f] as f64;
    }
    for_each_tap(&s, |xi, wi, yi| {
        y_ref[yi] += x[xi] as f64 * w[wi] as f64;
        dx_ref[xi] += dy[yi] as f64 * w[wi] as f64;
        dw_ref[wi] += dy[yi] as f64 * x[xi] as f64;
    });
    let db_ref: Vec<f64> = (0..s.f)
        .map(|f| dy.iter().enumerate().filter(|(i, _)| i / s.g.out_plane() % s.f == f).map(|(_, &v)| v as f64).sum())
        .collect();

    let run = || {
        let mut y = vec![f32::NAN; ylen];
        conv_forward(&s, &x, &w, Some(&b), &mut y);
        let (mut dx, mut dw, mut db) = (vec![f32::NAN; xlen], vec![f32::NAN; wlen], vec![f32::NAN; s.f]);
        conv_backward(&s, &dy, Some(&x), &w, Some(&mut dx), Some(&mut dw), Some(&mut db));
        (y, dx, dw, db)
    };
    let (y, dx, dw, db) = in_pool(2, run);
    let tol = 1e-5;
    assert!(max_rel(&y, &y_ref) < tol, "{case:?}: forward off by {}", max_rel(&y, &y_ref));
    assert!(max_rel(&dx, &dx_ref) < tol, "{case:?}: data gradient off by {}", max_rel(&dx, &dx_ref));
    assert!(max_rel(&dw, &dw_ref) < tol, "{case:?}: weight gradient off by {}", max_rel(&dw, &dw_ref));
    assert!(max_rel(&db, &db_ref) < tol, "{case:?}: bias gradient off by {}", max_rel(&db, &db_ref));

    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let (y1, dx1, dw1, db1) = in_pool(1, run);
    assert!(bits(&y) == bits(&y1) && bits(&dx) == bits(&dx1), "{case:?}: thread count changed a result");
    assert!(bits(&dw) == bits(&dw1) && bits(&db) == bits(&db1), "{case:?}: thread count changed a gradient");

    // Columns gathered from the padded images (the default where they apply) and the written-out
    // column matrix give the same bits. (Other tests may run meanwhile: either path gives them
    // the same results.)
    set_gathered_columns(false);
    let (y0, dx0, dw0, db0) = in_pool(2, run);
    set_gathered_columns(true);
    assert!(bits(&y) == bits(&y0) && bits(&dx) == bits(&dx0), "{case:?}: gathered columns changed a result");
    assert!(bits(&dw) == bits(&dw0) && bits(&db) == bits(&db0), "{case:?}: gathered columns changed a gradient");
}

const ONE: [usize; 3] = [1, 1, 1];
const ZERO: [usize; 3] = [0, 0, 0];

#[test]
fn conv_3x3_matches_reference_within_one_batch_and_across_batches() {
    let base = Case { n: 3, c: 4, f: 6, groups: 1, inp: [1, 7, 6], k: [1, 3, 3], s: ONE, p: [0, 1, 1], d: ONE };
    check(base, 1);
    // 1024 positions per image: one image per batch, 30 batches run in parallel.
    check(Case { n: 30, c: 16, f: 4, inp: [1, 32, 32], ..base }, 2);
    // 256 positions: two images per batch, three batches (the last partial) one after another.
    check(Case { n: 5, c: 3, f: 4, inp: [1, 16, 16], ..base }, 11);
}

#[test]
fn conv_strides_dilation_groups_and_depthwise_match_reference() {
    let base =
        Case { n: 2, c: 4, f: 6, groups: 2, inp: [1, 9, 8], k: [1, 3, 2], s: [1, 2, 3], p: [0, 2, 1], d: [1, 2, 1] };
    check(base, 3);
    check(Case { f: 4, groups: 4, s: ONE, d: ONE, ..base }, 4);
    check(Case { n: 1, ..base }, 5);
}

#[test]
fn depthwise_conv_matches_reference_for_multipliers_strides_dilation_and_3d() {
    let base = Case { n: 3, c: 4, f: 4, groups: 4, inp: [1, 9, 8], k: [1, 3, 3], s: ONE, p: [0, 1, 1], d: ONE };
    check(base, 20);
    check(Case { f: 8, ..base }, 21); // channel multiplier 2
    check(Case { s: [1, 2, 2], ..base }, 22);
    check(Case { s: [1, 3, 2], p: [0, 2, 3], d: [1, 2, 1], k: [1, 3, 2], ..base }, 23);
    check(Case { inp: [5, 4, 6], k: [3, 2, 3], p: [1, 1, 0], s: [2, 1, 1], ..base }, 24);
    // A window that never meets the input along one axis for some outputs (padding > kernel reach).
    check(Case { inp: [1, 2, 2], k: [1, 1, 1], p: [0, 2, 2], ..base }, 25);
    // Stride 2 on even widths, no padding, rows narrower than the stride, stride 3 with 1-D.
    check(Case { inp: [1, 8, 10], s: [1, 2, 2], p: ZERO, ..base }, 26);
    check(Case { inp: [1, 5, 1], s: [1, 2, 2], ..base }, 27);
    check(Case { inp: [1, 1, 13], k: [1, 1, 5], s: [1, 1, 3], p: [0, 0, 2], ..base }, 28);
    // Large enough to run in parallel (the thread-count comparison then means something), on
    // MobileNet-like maps: 28×28 at stride 1 and 2, 4×4 with many channels.
    let wide = Case { n: 4, c: 48, f: 48, groups: 48, inp: [1, 28, 28], ..base };
    check(wide, 29);
    check(Case { s: [1, 2, 2], ..wide }, 30);
    check(Case { n: 8, c: 96, f: 96, groups: 96, inp: [1, 4, 4], ..wide }, 31);
}

#[test]
fn conv_1x1_matches_reference_for_one_and_many_images() {
    let base = Case { n: 1, c: 5, f: 3, groups: 1, inp: [1, 4, 5], k: ONE, s: ONE, p: ZERO, d: ONE };
    check(base, 6);
    check(Case { n: 4, ..base }, 7);
    check(Case { n: 4, s: [1, 2, 2], ..base }, 8);
}

#[test]
fn conv_1d_and_3d_match_reference() {
    check(Case { n: 3, c: 2, f: 3, groups: 1, inp: [1, 1, 11], k: [1, 1, 4], s: [1, 1, 2], p: [0, 0, 1], d: ONE }, 9);
    check(Case { n: 2, c: 2, f: 2, groups: 1, inp: [4, 5, 3], k: [2, 3, 2], s: ONE, p: [1, 0, 1], d: ONE }, 10);
}

#[test]
fn conv_backward_without_input_gives_zero_weight_gradient() {
    let s = Case { n: 2, c: 2, f: 2, groups: 1, inp: [1, 3, 3], k: [1, 2, 2], s: ONE, p: ZERO, d: ONE }.shape();
    let dy = vec![1f32; 2 * 2 * 4];
    let w = vec![1f32; 2 * 2 * 4];
    let mut dw = vec![f32::NAN; 16];
    conv_backward(&s, &dy, None, &w, None, Some(&mut dw), None);
    assert!(dw.iter().all(|&v| v == 0.0));
}

#[test]
fn gathered_columns_match_reference_on_resnet_like_layers() {
    // Single batches (the gathered GEMM threads itself) and several: a 7×7 stride-2 stem with
    // three channels, stride-2 3×3 and 1×1 downsamples, 3×3 layers on 14×14 (three images per
    // batch), 7×7 and 4×4 maps, and a dilated 5×5.
    let base =
        Case { n: 8, c: 3, f: 16, groups: 1, inp: [1, 30, 30], k: [1, 7, 7], s: [1, 2, 2], p: [0, 3, 3], d: ONE };
    check(base, 40);
    check(Case { n: 8, c: 16, f: 32, inp: [1, 14, 14], k: [1, 3, 3], s: [1, 2, 2], p: [0, 1, 1], ..base }, 41);
    check(Case { n: 8, c: 16, f: 32, inp: [1, 14, 14], k: [1, 1, 1], s: [1, 2, 2], p: ZERO, ..base }, 42);
    check(Case { n: 7, c: 24, f: 24, inp: [1, 14, 14], k: [1, 3, 3], s: ONE, p: [0, 1, 1], ..base }, 43);
    check(Case { n: 8, c: 40, f: 48, inp: [1, 7, 7], k: [1, 3, 3], s: ONE, p: [0, 1, 1], ..base }, 44);
    check(Case { n: 8, c: 64, f: 40, inp: [1, 4, 4], k: [1, 3, 3], s: ONE, p: [0, 1, 1], ..base }, 45);
    check(Case { n: 2, c: 5, f: 9, inp: [1, 19, 23], k: [1, 5, 5], s: ONE, p: [0, 4, 2], d: [1, 2, 2], ..base }, 46);
}

#[test]
fn channels_last_columns_on_small_maps_match_reference() {
    // 8 or more channels on maps with short rows, in at least four batches (which then run in
    // parallel), take the channels-last columns.
    let base = Case { n: 130, c: 16, f: 8, groups: 1, inp: [1, 4, 4], k: [1, 3, 3], s: ONE, p: [0, 1, 1], d: ONE };
    check(base, 30); // 16 positions: 32 images per batch, five batches, the last partial
    let strided =
        Case { n: 141, c: 8, f: 5, inp: [1, 9, 8], k: [1, 3, 2], s: [1, 2, 3], p: [0, 2, 1], d: [1, 2, 1], ..base };
    check(strided, 31);
    check(Case { n: 45, c: 9, f: 3, inp: [3, 4, 5], k: [2, 3, 2], p: [1, 0, 1], ..base }, 32);
    // Padding beyond the kernel's reach: whole windows in the padding.
    check(Case { n: 130, c: 8, f: 3, inp: [1, 2, 2], p: [0, 2, 2], ..base }, 33);
    check(Case { n: 105, c: 12, f: 7, inp: [1, 1, 13], k: [1, 1, 3], p: [0, 0, 1], ..base }, 34);
}
