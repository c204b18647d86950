//! PSROIPooling, the deformable convolutions and the RPN proposal ops, against naive references
//! written here (their rules checked by running MXNet 1.9.1); gradients by finite differences.

use ferrograd::ops::grad::eval_grad;
use ferrograd::DType::{F32, F64};
use ferrograd::{call, Error, NDArray};

use crate::common::*;
use crate::gradcheck::{build, check};
use crate::spatial20_cases::check_data_grad;

fn rand(rng: &mut Rng, shape: &[usize]) -> NDArray {
    f64s(&rng.signed(numel(shape), 0.1, 1.0), shape)
}

// ---- PSROIPooling ----

pub fn psroi_p() -> Params {
    vec![("spatial_scale", float(1.0)), ("output_dim", int(2)), ("pooled_size", int(2))]
}

pub fn psroi_params(scale: f64, od: i64, ps: i64, gs: i64) -> Params {
    vec![("spatial_scale", float(scale)), ("output_dim", int(od)), ("pooled_size", int(ps)), ("group_size", int(gs))]
}

/// Rois over a (·, ·, 6, 7) map: inside, fractional, beyond the map, reversed, tiny, image 1.
pub fn ps_rois() -> NDArray {
    let rows = [
        [0.0, 1.0, 1.0, 4.0, 3.0],
        [1.0, 0.3, 1.2, 5.8, 4.6],
        [0.0, -3.0, -2.0, 9.0, 8.0],
        [1.0, 5.0, 4.0, 2.0, 1.0],
        [0.0, 3.2, 2.9, 3.3, 3.1],
        [1.0, 2.0, 0.0, 6.0, 5.0],
    ];
    f64s(&rows.concat(), &[6, 5])
}

/// PSROIPooling reference: average over integer bins of the bin's channel group.
fn psroi_ref(x: &NDArray, rois: &NDArray, scale: f64, od: usize, ps: usize, gs: usize) -> (Vec<usize>, Vec<f64>) {
    let (xs, xv, rv) = (x.shape().to_vec(), x.to_f64_vec(), rois.to_f64_vec());
    let os = vec![rois.shape()[0], od, ps, ps];
    let vals = (0..numel(&os))
        .map(|o| {
            let i = unravel(o, &os);
            let r = &rv[i[0] * 5..][..5];
            // MXNet's spatial_scale is a float32 parameter, also for float64 data.
            let scale = scale as f32 as f64;
            let (x1, y1) = (r[1].round() * scale, r[2].round() * scale);
            let (x2, y2) = ((r[3].round() + 1.0) * scale, (r[4].round() + 1.0) * scale);
            let (bw, bh) = ((x2 - x1).max(0.1) / ps as f64, (y2 - y1).max(0.1) / ps as f64);
            let lim = |v: f64, n: usize| v.clamp(0.0, n as f64) as usize;
            let (h0, h1) =
                (lim((i[2] as f64 * bh + y1).floor(), xs[2]), lim(((i[2] + 1) as f64 * bh + y1).ceil(), xs[2]));
            let (w0, w1) =
                (lim((i[3] as f64 * bw + x1).floor(), xs[3]), lim(((i[3] + 1) as f64 * bw + x1).ceil(), xs[3]));
            if h1 <= h0 || w1 <= w0 {
                return 0.0;
            }
            let cell = |k: usize| (k * gs / ps).min(gs - 1);
            let ch = (i[1] * gs + cell(i[2])) * gs + cell(i[3]);
            let mut sum = 0.0;
            for h in h0..h1 {
                for w in w0..w1 {
                    sum += xv[ravel(&[r[0] as usize, ch, h, w], &xs)];
                }
            }
            sum / ((h1 - h0) * (w1 - w0)) as f64
        })
        .collect();
    (os, vals)
}

pub fn psroi_pooling(name: &'static str) {
    let mut rng = Rng::new(3301);
    let rois = ps_rois();
    for (scale, od, ps, gs) in [(1.0, 2, 2, 2), (1.0, 1, 3, 3), (0.5, 2, 3, 2), (0.75, 1, 2, 3), (1.0, 3, 4, 1)] {
        let x = rand(&mut rng, &[2, od * gs * gs, 6, 7]);
        let (os, want) = psroi_ref(&x, &rois, scale, od, ps, gs);
        let p = psroi_params(scale, od as i64, ps as i64, gs as i64);
        for dt in [F64, F32] {
            for (vname, xv) in variants(&x.astype(dt)) {
                let y = call1(name, &[xv, rois.astype(dt)], &p);
                let (rtol, atol) = if dt == F64 { tol(dt) } else { (1e-5, 1e-6) };
                check_arr(&format!("{name} {p:?} {dt} {vname}"), &y, &os, dt, &want, rtol, atol);
            }
        }
    }
    // group_size 0 means pooled_size.
    let x = rand(&mut rng, &[2, 18, 6, 7]);
    let y = call1(name, &[x.clone(), rois.clone()], &psroi_params(1.0, 2, 3, 0));
    check_arr("group_size 0", &y, &[6, 2, 3, 3], F64, &psroi_ref(&x, &rois, 1.0, 2, 3, 3).1, 1e-12, 1e-13);
}

pub fn psroi_pooling_grad(name: &'static str) {
    let mut rng = Rng::new(3302);
    for (od, ps, gs) in [(2, 2, 2), (1, 3, 2)] {
        let op = build(name, &psroi_params(0.9, od, ps, gs));
        let x = rand(&mut rng, &[2, (od * gs * gs) as usize, 6, 7]);
        check_data_grad(name, &op, &[x, ps_rois()], &mut rng);
    }
}

pub fn psroi_pooling_backward(name: &'static str) {
    let mut rng = Rng::new(3303);
    let (x, rois) = (rand(&mut rng, &[2, 8, 6, 7]), ps_rois());
    let (os, _) = psroi_ref(&x, &rois, 1.0, 2, 3, 2);
    let g = rand(&mut rng, &os);
    // Linear in the data: the gradient is the transpose, probed with unit inputs.
    let want: Vec<f64> = (0..x.size())
        .map(|j| {
            let mut e = vec![0.0; x.size()];
            e[j] = 1.0;
            let (_, col) = psroi_ref(&f64s(&e, x.shape()), &rois, 1.0, 2, 3, 2);
            col.iter().zip(g.to_f64_vec()).map(|(a, b)| a * b).sum()
        })
        .collect();
    for dt in [F64, F32] {
        let dx = call1(name, &[g.astype(dt), x.astype(dt), rois.astype(dt)], &psroi_params(1.0, 2, 3, 2));
        let (rtol, atol) = if dt == F64 { (1e-12, 1e-12) } else { (1e-5, 1e-5) };
        check_arr(&format!("{name} {dt}"), &dx, x.shape(), dt, &want, rtol, atol);
    }
}

// ---- DeformableConvolution, ModulatedDeformableConvolution ----

pub fn dcn_p() -> Params {
    vec![("kernel", tuple(&[2, 2])), ("num_filter", int(2))]
}

/// (kernel, stride, pad, dilate, num_group, num_deformable_group, no_bias).
type DcnCfg = ([usize; 2], [usize; 2], [usize; 2], [usize; 2], usize, usize, bool);

fn dcn_params(c: &DcnCfg, f: usize) -> Params {
    let t = |v: [usize; 2]| tuple(&[v[0] as i64, v[1] as i64]);
    vec![
        ("kernel", t(c.0)),
        ("stride", t(c.1)),
        ("pad", t(c.2)),
        ("dilate", t(c.3)),
        ("num_filter", int(f as i64)),
        ("num_group", int(c.4 as i64)),
        ("num_deformable_group", int(c.5 as i64)),
        ("no_bias", boolean(c.6)),
    ]
}

/// Bilinear sample with MXNet's border rules: DCNv1 (`v1`) reads [0, h) × [0, w) and repeats
/// the last row/column; DCNv2 reads (-1, h) × (-1, w) with zeros beyond the image.
fn bilinear(p: &[f64], h: usize, w: usize, y: f64, x: f64, v1: bool) -> f64 {
    let (hf, wf) = (h as f64, w as f64);
    let inside = if v1 { y >= 0.0 && x >= 0.0 } else { y > -1.0 && x > -1.0 };
    if !(inside && y < hf && x < wf) {
        return 0.0;
    }
    let (mut y0, mut x0) = (y.floor(), x.floor());
    let (mut yy, mut xx) = (y, x);
    if v1 && y0 >= hf - 1.0 {
        y0 = hf - 1.0;
        yy = y0;
    }
    if v1 && x0 >= wf - 1.0 {
        x0 = wf - 1.0;
        xx = x0;
    }
    let at = |r: f64, c: f64| {
        if r < 0.0 || c < 0.0 || r >= hf || c >= wf {
            0.0
        } else {
            p[r as usize * w + c as usize]
        }
    };
    let (ly, lx) = (yy - y0, xx - x0);
    (1.0 - ly) * (1.0 - lx) * at(y0, x0)
        + (1.0 - ly) * lx * at(y0, x0 + 1.0)
        + ly * (1.0 - lx) * at(y0 + 1.0, x0)
        + ly * lx * at(y0 + 1.0, x0 + 1.0)
}

/// Deformable convolution reference, one output element at a time.
fn dcn_ref(
    c: &DcnCfg,
    x: &NDArray,
    off: &NDArray,
    mask: Option<&NDArray>,
    w: &NDArray,
    b: Option<&NDArray>,
) -> (Vec<usize>, Vec<f64>) {
    let (xs, xv, ov, wv) = (x.shape().to_vec(), x.to_f64_vec(), off.to_f64_vec(), w.to_f64_vec());
    let mv = mask.map(|m| m.to_f64_vec());
    let bv = b.map(|b| b.to_f64_vec());
    let (n, ch, h, wd) = (xs[0], xs[1], xs[2], xs[3]);
    let (f, [kh, kw], [sh, sw], [ph, pw], [dh, dw], g, dg) = (w.shape()[0], c.0, c.1, c.2, c.3, c.4, c.5);
    let ho = (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1;
    let wo = (wd + 2 * pw - dw * (kw - 1) - 1) / sw + 1;
    let os = vec![n, f, ho, wo];
    let (cg, fg, taps) = (ch / g, f / g, kh * kw);
    let vals = (0..numel(&os))
        .map(|o| {
            let [im, oc, oy, ox] = [0, 1, 2, 3].map(|q| unravel(o, &os)[q]);
            let mut acc = bv.as_ref().map_or(0.0, |b| b[oc]);
            for ci in 0..cg {
                let cin = (oc / fg) * cg + ci;
                let grp = cin / (ch / dg);
                let plane = &xv[(im * ch + cin) * h * wd..][..h * wd];
                for t in 0..taps {
                    let (i, j) = (t / kw, t % kw);
                    let at = |chan: usize| ov[ravel(&[im, chan, oy, ox], off.shape())];
                    let y = (oy * sh + i * dh) as f64 - ph as f64 + at(grp * 2 * taps + 2 * t);
                    let xx = (ox * sw + j * dw) as f64 - pw as f64 + at(grp * 2 * taps + 2 * t + 1);
                    let m = mv.as_ref().map_or(1.0, |m| m[ravel(&[im, grp * taps + t, oy, ox], mask.unwrap().shape())]);
                    acc += wv[((oc * cg + ci) * kh + i) * kw + j] * m * bilinear(plane, h, wd, y, xx, mask.is_none());
                }
            }
            acc
        })
        .collect();
    (os, vals)
}

const DCN_CFGS: &[DcnCfg] = &[
    ([3, 3], [1, 1], [1, 1], [1, 1], 1, 1, false),
    ([2, 3], [2, 1], [0, 1], [1, 2], 2, 2, false),
    ([3, 2], [1, 2], [2, 0], [2, 1], 1, 2, true),
    ([1, 1], [1, 1], [0, 0], [1, 1], 2, 1, true),
];

/// Inputs (data, offset, [mask], weight, [bias]) for a config: offsets up to ±2.5 px so that
/// samples cross the border.
fn dcn_inputs(
    rng: &mut Rng,
    c: &DcnCfg,
    modulated: bool,
    n: usize,
    ch: usize,
    hw: [usize; 2],
    f: usize,
) -> Vec<NDArray> {
    let ho = (hw[0] + 2 * c.2[0] - c.3[0] * (c.0[0] - 1) - 1) / c.1[0] + 1;
    let wo = (hw[1] + 2 * c.2[1] - c.3[1] * (c.0[1] - 1) - 1) / c.1[1] + 1;
    let taps = c.0[0] * c.0[1];
    let mut v = vec![
        rand(rng, &[n, ch, hw[0], hw[1]]),
        f64s(&rng.vec(n * 2 * c.5 * taps * ho * wo, -2.5, 2.5), &[n, 2 * c.5 * taps, ho, wo]),
    ];
    if modulated {
        v.push(f64s(&rng.vec(n * c.5 * taps * ho * wo, 0.1, 1.0), &[n, c.5 * taps, ho, wo]));
    }
    v.push(rand(rng, &[f, ch / c.4, c.0[0], c.0[1]]));
    if !c.6 {
        v.push(rand(rng, &[f]));
    }
    v
}

fn is_modulated(name: &str) -> bool {
    name.contains("Modulated")
}

pub fn deformable(name: &'static str) {
    let mut rng = Rng::new(3311);
    let m = is_modulated(name);
    for c in DCN_CFGS {
        let ins = dcn_inputs(&mut rng, c, m, 2, 4, [5, 6], 4);
        let wi = if m { 3 } else { 2 };
        let (os, want) = dcn_ref(c, &ins[0], &ins[1], m.then(|| &ins[2]), &ins[wi], ins.get(wi + 1));
        for dt in [F64, F32] {
            let xs: Vec<NDArray> = ins.iter().map(|a| a.astype(dt)).collect();
            let y = call1(name, &xs, &dcn_params(c, 4));
            let (rtol, atol) = if dt == F64 { (1e-11, 1e-12) } else { (1e-4, 1e-5) };
            check_arr(&format!("{name} {c:?} {dt}"), &y, &os, dt, &want, rtol, atol);
        }
    }
    // Zero offsets (and a unit mask) make it an ordinary convolution.
    let c = &DCN_CFGS[1];
    let mut ins = dcn_inputs(&mut rng, c, m, 2, 4, [5, 6], 4);
    ins[1] = NDArray::zeros(ins[1].shape(), F64);
    if m {
        ins[2] = NDArray::ones(ins[2].shape(), F64);
    }
    let wi = if m { 3 } else { 2 };
    let conv = call1(
        "Convolution",
        &[ins[0].clone(), ins[wi].clone(), ins[wi + 1].clone()],
        &[
            ("kernel", tuple(&[2, 3])),
            ("stride", tuple(&[2, 1])),
            ("pad", tuple(&[0, 1])),
            ("dilate", tuple(&[1, 2])),
            ("num_filter", int(4)),
            ("num_group", int(2)),
        ],
    );
    let y = call1(name, &ins, &dcn_params(c, 4));
    check_arr("zero offsets", &y, conv.shape(), F64, &conv.to_f64_vec(), 1e-12, 1e-12);
}

pub fn deformable_grad(name: &'static str) {
    let mut rng = Rng::new(3312);
    let m = is_modulated(name);
    for (k, c) in DCN_CFGS[..3].iter().enumerate() {
        let ins = dcn_inputs(&mut rng, c, m, 2, 4, [4, 5], 2);
        let op = build(name, &dcn_params(c, 2));
        // The gradient is built from differentiable ops: second order checked on the first.
        check(&format!("{name} {c:?}"), &op, &ins, &mut rng, k == 0);
    }
}

pub fn deformable_backward(name: &'static str) {
    let mut rng = Rng::new(3313);
    let fwd = name.replace("_backward_", "_contrib_");
    let m = is_modulated(name);
    let c = &DCN_CFGS[1];
    let ins = dcn_inputs(&mut rng, c, m, 2, 4, [5, 6], 4);
    let op = build(&fwd, &dcn_params(c, 4));
    let y = call1(&fwd, &ins, &dcn_params(c, 4));
    let g = rand(&mut rng, y.shape());
    let want = eval_grad(op.as_ref(), &ins, std::slice::from_ref(&g)).unwrap();
    let wi = if m { 3 } else { 2 };
    for dt in [F64, F32] {
        let mut args = vec![g.astype(dt)];
        args.extend(ins[..=wi].iter().map(|a| a.astype(dt)));
        let got = call(name, &args, &dcn_params(c, 4)).unwrap();
        assert_eq!(got.len(), want.len(), "{name}: one gradient per input");
        let (rtol, atol) = if dt == F64 { (1e-12, 1e-12) } else { (1e-4, 1e-4) };
        for (k, (a, b)) in got.iter().zip(&want).enumerate() {
            let b = b.as_ref().unwrap();
            check_arr(&format!("{name} {dt} gradient {k}"), a, b.shape(), dt, &b.to_f64_vec(), rtol, atol);
        }
    }
}

// ---- Proposal, MultiProposal ----

/// One anchor (ratio 1, scale 1, stride 4: the box [0, 0, 3, 3] at each cell), no minimum size.
pub fn proposal_p() -> Params {
    vec![
        ("scales", tuple(&[1])),
        ("ratios", tuple(&[1])),
        ("feature_stride", int(4)),
        ("rpn_min_size", int(0)),
        ("rpn_pre_nms_top_n", int(-1)),
        ("rpn_post_nms_top_n", int(5)),
        ("threshold", float(0.5)),
        ("output_score", boolean(true)),
    ]
}

pub fn proposal(name: &'static str) {
    let multi = name.contains("Multi");
    // A 2×2 map of cells 4 px apart; foreground scores in the second half of cls_prob.
    let fg = [0.2, 0.9, 0.5, 0.7];
    let mut cls = vec![0.0; 4];
    cls.extend(fg);
    let cls = f64s(&cls, &[1, 2, 2, 2]);
    // Cell (0, 1) doubles in size (dw = dh = ln 2) and cell (1, 1) moves left by half a box
    // (dx = -0.5).
    let mut deltas = vec![0.0; 16];
    let at = |q: usize, j: usize, k: usize| q * 4 + j * 2 + k;
    deltas[at(2, 0, 1)] = 2f64.ln();
    deltas[at(3, 0, 1)] = 2f64.ln();
    deltas[at(0, 1, 1)] = -0.5;
    let deltas = f64s(&deltas, &[1, 4, 2, 2]);
    let info = f64s(&[8.0, 8.0, 1.0], &[1, 3]);
    let one = [cls.clone(), deltas.clone(), info.clone()];
    // Boxes before suppression (clipped to [0, 7]):
    // (0,0) [0,0,3,3] 0.2; (0,1) centre (5.5, 1.5), 8 × 8 -> [2,0,7,5] 0.9; (1,0) [0,4,3,7] 0.5;
    // (1,1) [2,4,5,7] 0.7 (pixel-inclusive areas 16, 36, 16, 16).
    // Order 0.9, 0.7, 0.5, 0.2. IoU((0,1), (1,1)) = 4·2/(36 + 16 - 8) = 2/11; IoU((1,1), (1,0))
    // = 8/24 = 1/3; IoU((0,1), (0,0)) = 2/11: at threshold 0.5 all four are kept, then rows repeat.
    let want_boxes = [[2.0, 0.0, 7.0, 5.0], [2.0, 4.0, 5.0, 7.0], [0.0, 4.0, 3.0, 7.0], [0.0, 0.0, 3.0, 3.0]];
    let want_scores = [0.9, 0.7, 0.5, 0.2];
    let (cls, deltas, info) = if multi {
        // A second image: the same scores reversed, and a 4×4 image (one real cell).
        let c2: Vec<f64> = cls.to_f64_vec().iter().copied().chain([0.0; 4]).chain(fg.iter().rev().copied()).collect();
        let d2: Vec<f64> = deltas.to_f64_vec().iter().copied().chain(deltas.to_f64_vec()).collect();
        (f64s(&c2, &[2, 2, 2, 2]), f64s(&d2, &[2, 4, 2, 2]), f64s(&[8.0, 8.0, 1.0, 4.0, 4.0, 1.0], &[2, 3]))
    } else {
        (cls, deltas, info)
    };
    let mut rows = Vec::new();
    let mut scores = Vec::new();
    for i in 0..5 {
        rows.push(0.0);
        rows.extend(want_boxes[i % 4]);
        scores.push(want_scores[i % 4]);
    }
    if multi {
        // Image 1 (clipped to [0, 3]): (0,0) [0,0,3,3] 0.7; (0,1) [2,0,3,3] -1 (padded);
        // (1,0) [0,3,3,3] -1; (1,1) [2,3,3,3] -1. Order: 0.7, then the -1 boxes in anchor order.
        // IoU([0,0,3,3], [2,0,3,3]) = 8/16 = 0.5: kept (not above 0.5); [0,3,3,3] overlaps it
        // by 4/16; [2,3,3,3] by 2/16.
        let b1 = [[0.0, 0.0, 3.0, 3.0], [2.0, 0.0, 3.0, 3.0], [0.0, 3.0, 3.0, 3.0], [2.0, 3.0, 3.0, 3.0]];
        let s1 = [0.7, -1.0, -1.0, -1.0];
        for i in 0..5 {
            rows.push(1.0);
            rows.extend(b1[i % 4]);
            scores.push(s1[i % 4]);
        }
    }
    let n = if multi { 10 } else { 5 };
    for dt in [F64, F32] {
        let out = call(name, &[cls.astype(dt), deltas.astype(dt), info.astype(dt)], &proposal_p()).unwrap();
        assert_eq!(out.len(), 2, "{name}: output and score");
        let (rtol, atol) = if dt == F64 { (1e-12, 1e-12) } else { (1e-6, 1e-6) };
        check_arr(&format!("{name} {dt} rois"), &out[0], &[n, 5], dt, &rows, rtol, atol);
        check_arr(&format!("{name} {dt} scores"), &out[1], &[n, 1], dt, &scores, rtol, atol);
    }
    // A stricter threshold suppresses: at 0.3, (1,0) goes under (1,1); (0,0) stays.
    let mut p = proposal_p();
    p.retain(|(k, _)| *k != "threshold");
    p.push(("threshold", float(0.3)));
    let out = call(name, &one, &p).unwrap();
    let want: Vec<f64> = (0..5).flat_map(|i| [0.0].into_iter().chain(want_boxes[[0, 1, 3][i % 3]])).collect();
    check_arr(&format!("{name} threshold 0.3"), &out[0], &[5, 5], F64, &want, 1e-12, 1e-12);
    // rpn_min_size 5 (in pixels of a scale-1 image): every 4-px box is too small and grows by
    // 2.5 each side with score -1; only the 6 × 6 (0,1) box keeps its score.
    let mut p = proposal_p();
    p.retain(|(k, _)| *k != "rpn_min_size");
    p.push(("rpn_min_size", int(5)));
    let out = call(name, &one, &p).unwrap();
    let s = out[1].to_f64_vec();
    assert_eq!(s[0], 0.9, "{name}: min size: best score");
    // (Suppression may then drop a grown box, and the rows repeat.)
    assert!(s[1] == -1.0 && s[2] == -1.0, "{name}: min size: small boxes scored -1: {s:?}");
    let r = out[0].to_f64_vec();
    assert_eq!(&r[1..5], &[2.0, 0.0, 7.0, 5.0], "{name}: min size: best box");
    assert!(r.chunks(5).any(|row| row[1..] == [-2.5, -2.5, 5.5, 5.5]), "{name}: min size: grown box: {r:?}");
}

pub fn proposal_zero_grad(name: &'static str) {
    let ins = [
        f64s(&[0.1, 0.2, 0.3, 0.4, 0.9, 0.8, 0.7, 0.6], &[1, 2, 2, 2]),
        f64s(&[0.05; 16], &[1, 4, 2, 2]),
        f64s(&[8.0, 8.0, 1.0], &[1, 3]),
    ];
    let op = build(name, &proposal_p());
    let g = eval_grad(op.as_ref(), &ins, &[NDArray::ones(&[5, 5], F64), NDArray::ones(&[5, 1], F64)]).unwrap();
    assert!(g.iter().all(|g| g.as_ref().is_none_or(|g| g.to_f64_vec().iter().all(|&v| v == 0.0))), "{name}: {g:?}");
}

#[test]
fn detect2_errors() {
    let z = |s: &[usize]| NDArray::zeros(s, F32);
    let r = call("_contrib_PSROIPooling", &[z(&[1, 8, 4, 4]), z(&[3, 4])], &psroi_p());
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("PSROIPooling") && m.contains("(3, 4)")), "{r:?}");
    let r = call("_contrib_PSROIPooling", &[z(&[1, 6, 4, 4]), z(&[3, 5])], &psroi_p());
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("output_dim") && m.contains('6')), "{r:?}");
    let r = call("_contrib_PSROIPooling", &[z(&[1, 8, 4, 4]), z(&[1, 5])], &psroi_params(2.0, 2, 2, 2));
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("spatial_scale")), "{r:?}");
    let rois = f64s(&[1.0, 0.0, 0.0, 2.0, 2.0], &[1, 5]).astype(F32);
    let r = call("_contrib_PSROIPooling", &[z(&[1, 8, 4, 4]), rois], &psroi_p());
    assert!(matches!(r, Err(Error::Index(ref m)) if m.contains("batch_index") && m.contains('1')), "{r:?}");
    let rois = f64s(&[-1.0, 0.0, 0.0, 2.0, 2.0], &[1, 5]).astype(F32);
    let r = call("_contrib_PSROIPooling", &[z(&[1, 8, 4, 4]), rois], &psroi_p());
    assert!(matches!(r, Err(Error::Index(ref m)) if m.contains("batch_index")), "{r:?}");

    let dcn = "_contrib_DeformableConvolution";
    let p = vec![("kernel", tuple(&[3, 3])), ("num_filter", int(2)), ("no_bias", boolean(true))];
    let r = call(dcn, &[z(&[1, 2, 5, 5]), z(&[1, 9, 3, 3]), z(&[2, 2, 3, 3])], &p);
    assert!(
        matches!(r, Err(Error::Shape(ref m)) if m.contains("offset") && m.contains("(1, 9, 3, 3)") && m.contains("(1, 18, 3, 3)")),
        "{r:?}"
    );
    let r = call(dcn, &[z(&[1, 2, 5, 5]), z(&[1, 18, 3, 3]), z(&[2, 1, 3, 3])], &p);
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("weight") && m.contains("(2, 1, 3, 3)")), "{r:?}");
    let mut pg = p.clone();
    pg.push(("num_group", int(2)));
    let r = call(dcn, &[z(&[1, 3, 5, 5]), z(&[1, 18, 3, 3]), z(&[2, 1, 3, 3])], &pg);
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("num_group") && m.contains("(1, 3, 5, 5)")), "{r:?}");
    let mut pd = p.clone();
    pd.push(("num_deformable_group", int(2)));
    let r = call(dcn, &[z(&[1, 3, 5, 5]), z(&[1, 36, 3, 3]), z(&[2, 3, 3, 3])], &pd);
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("num_deformable_group")), "{r:?}");
    let r = call(dcn, &[z(&[1, 2, 2, 2]), z(&[1, 18, 1, 1]), z(&[2, 2, 3, 3])], &p);
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("kernel") && m.contains("(1, 2, 2, 2)")), "{r:?}");
    let p3 = vec![("kernel", tuple(&[3, 3, 3])), ("num_filter", int(2))];
    let r = call(dcn, &[z(&[1, 2, 5, 5, 5]), z(&[1, 2, 3, 3, 3]), z(&[2, 2, 3, 3, 3])], &p3);
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("2-D")), "{r:?}");
    let mdcn = "_contrib_ModulatedDeformableConvolution";
    let r = call(mdcn, &[z(&[1, 2, 5, 5]), z(&[1, 18, 3, 3]), z(&[1, 18, 3, 3]), z(&[2, 2, 3, 3])], &p);
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("mask") && m.contains("(1, 9, 3, 3)")), "{r:?}");

    let pp = proposal_p();
    let r = call("_contrib_Proposal", &[z(&[2, 2, 2, 2]), z(&[2, 4, 2, 2]), z(&[2, 3])], &pp);
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("MultiProposal")), "{r:?}");
    let r = call("_contrib_Proposal", &[z(&[1, 4, 2, 2]), z(&[1, 8, 2, 2]), z(&[1, 3])], &pp);
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("anchors") && m.contains("(1, 4, 2, 2)")), "{r:?}");
    let r = call("_contrib_MultiProposal", &[z(&[1, 2, 2, 2]), z(&[1, 2, 2, 2]), z(&[1, 3])], &pp);
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("bbox_pred") && m.contains("(1, 4, 2, 2)")), "{r:?}");
    let info = f64s(&[16.0, 16.0, 1.0], &[1, 3]).astype(F32);
    let r = call("_contrib_MultiProposal", &[z(&[1, 2, 2, 2]), z(&[1, 4, 2, 2]), info], &pp);
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("im_info")), "{r:?}");
}
