//! Spatial resampling ops (bilinear resize, adaptive average pooling) against references written
//! here, their adjoint ops, gradients to second order, and bad input.

use ferrograd::call;
use ferrograd::DType::{F32, F64};
use ferrograd::{Error, NDArray};

use crate::common::*;
use crate::gradcheck::{build, check, check_tape, ATOL, EPS, RTOL};
use ferrograd::ops::grad::eval_grad;
use ferrograd::ops::{self, Ctx, OpRef};

pub fn resize_p() -> Params {
    vec![("height", int(3)), ("width", int(2))]
}

pub fn adaptive_p() -> Params {
    vec![("output_size", int(2))]
}

fn rand(rng: &mut Rng, shape: &[usize]) -> NDArray {
    f64s(&rng.signed(numel(shape), 0.1, 1.0), shape)
}

/// Source position and the two neighbours with weights, for output `o` of `out` over `inp`.
fn bilinear_taps(o: usize, inp: usize, out: usize, align: bool) -> [(usize, f64); 2] {
    let r = if out == 1 {
        0.0
    } else if align {
        o as f64 * (inp as f64 - 1.0) / (out as f64 - 1.0)
    } else {
        ((o as f64 + 0.5) * inp as f64 / out as f64 - 0.5).max(0.0)
    };
    let lo = r.floor() as usize;
    let hi = (lo + 1).min(inp - 1);
    [(lo, 1.0 - (r - lo as f64)), (hi, r - lo as f64)]
}

/// (output shape, dense matrix rows: for each output element, (input index, weight) pairs).
type LinearMap = (Vec<usize>, Vec<Vec<(usize, f64)>>);

fn resize_map(xs: &[usize], oh: usize, ow: usize, align: bool) -> LinearMap {
    let os = vec![xs[0], xs[1], oh, ow];
    let rows = (0..numel(&os))
        .map(|o| {
            let i = unravel(o, &os);
            let mut taps = Vec::new();
            for (hy, wy) in bilinear_taps(i[2], xs[2], oh, align) {
                for (hx, wx) in bilinear_taps(i[3], xs[3], ow, align) {
                    taps.push((ravel(&[i[0], i[1], hy, hx], xs), wy * wx));
                }
            }
            taps
        })
        .collect();
    (os, rows)
}

fn adaptive_map(xs: &[usize], oh: usize, ow: usize) -> LinearMap {
    let os = vec![xs[0], xs[1], oh, ow];
    let rows = (0..numel(&os))
        .map(|o| {
            let i = unravel(o, &os);
            let (h0, h1) = (i[2] * xs[2] / oh, ((i[2] + 1) * xs[2]).div_ceil(oh));
            let (w0, w1) = (i[3] * xs[3] / ow, ((i[3] + 1) * xs[3]).div_ceil(ow));
            let area = ((h1 - h0) * (w1 - w0)) as f64;
            let mut taps = Vec::new();
            for h in h0..h1 {
                for w in w0..w1 {
                    taps.push((ravel(&[i[0], i[1], h, w], xs), 1.0 / area));
                }
            }
            taps
        })
        .collect();
    (os, rows)
}

fn apply(rows: &[Vec<(usize, f64)>], x: &[f64]) -> Vec<f64> {
    rows.iter().map(|t| t.iter().map(|&(i, w)| w * x[i]).sum()).collect()
}

fn apply_t(rows: &[Vec<(usize, f64)>], g: &[f64], n: usize) -> Vec<f64> {
    let mut dx = vec![0.0; n];
    for (t, &gv) in rows.iter().zip(g) {
        for &(i, w) in t {
            dx[i] += w * gv;
        }
    }
    dx
}

/// (data shape, params, expected output height and width, align_corners).
fn resize_configs() -> Vec<(Vec<usize>, Params, [usize; 2], bool)> {
    let hw = |h: i64, w: i64| vec![("height", int(h)), ("width", int(w))];
    let mut v = vec![
        (vec![2, 3, 3, 4], hw(5, 7), [5, 7], true),
        (vec![1, 2, 5, 6], hw(2, 3), [2, 3], true),
        (vec![1, 1, 3, 4], hw(1, 1), [1, 1], true),
        (vec![1, 1, 1, 1], hw(3, 2), [3, 2], true),
        (vec![0, 2, 3, 3], hw(4, 4), [4, 4], true),
    ];
    for (xs, h, w) in [(vec![2, 2, 3, 4], 6, 8), (vec![1, 2, 5, 7], 2, 3), (vec![1, 1, 3, 4], 1, 2)] {
        let mut p = hw(h, w);
        p.push(("align_corners", boolean(false)));
        v.push((xs, p, [h as usize, w as usize], false));
    }
    v.push((vec![1, 2, 3, 4], vec![("scale_height", float(2.0)), ("scale_width", float(1.5))], [6, 6], true));
    let odd = vec![("scale_height", float(0.5)), ("scale_width", float(1.5)), ("mode", string("odd_scale"))];
    v.push((vec![1, 1, 5, 4], odd, [3, 6], true));
    for (mode, hw) in [("to_even_up", [4, 4]), ("to_even_down", [2, 4]), ("to_odd_up", [3, 5]), ("to_odd_down", [3, 3])]
    {
        v.push((vec![1, 2, 3, 4], vec![("mode", string(mode))], hw, true));
    }
    v
}

pub fn resize(name: &'static str) {
    let mut rng = Rng::new(2001);
    for (xs, params, [oh, ow], align) in resize_configs() {
        let x = rand(&mut rng, &xs);
        let (os, rows) = resize_map(&xs, oh, ow, align);
        let want = apply(&rows, &x.to_f64_vec());
        for dt in [F64, F32] {
            for (vname, xv) in variants(&x.astype(dt)) {
                let y = call1(name, &[xv], &params);
                let (rtol, atol) = tol(dt);
                check_arr(&format!("{name} {xs:?} {params:?} {dt} {vname}"), &y, &os, dt, &want, rtol, atol);
            }
        }
    }
    // mode 'like' takes the output size from the second input.
    let x = rand(&mut rng, &[1, 2, 3, 3]);
    let like = NDArray::zeros(&[7, 1, 4, 5], F64);
    let y = call1(name, &[x.clone(), like], &[("mode", string("like"))]);
    let (os, rows) = resize_map(&[1, 2, 3, 3], 4, 5, true);
    check_arr("like", &y, &os, F64, &apply(&rows, &x.to_f64_vec()), 1e-12, 1e-12);
    // MXNet string attributes.
    let y = call1(name, std::slice::from_ref(&x), &[("height", string("2")), ("align_corners", string("False"))]);
    let (os, rows) = resize_map(&[1, 2, 3, 3], 2, 1, false);
    check_arr("string attrs", &y, &os, F64, &apply(&rows, &x.to_f64_vec()), 1e-12, 1e-12);
}

pub fn resize_grad(name: &'static str) {
    let mut rng = Rng::new(2002);
    for (xs, params, _, _) in resize_configs().into_iter().filter(|(xs, ..)| numel(xs) > 0 && numel(xs) <= 40) {
        let op = build(name, &params);
        check(&format!("{name} {xs:?} {params:?}"), &op, &[rand(&mut rng, &xs)], &mut rng, true);
    }
    let op = build(name, &[("mode", string("like"))]);
    let inputs = [rand(&mut rng, &[1, 1, 2, 3]), rand(&mut rng, &[1, 1, 3, 2])];
    check(&format!("{name} like"), &op, &inputs, &mut rng, true);
}

pub fn resize_backward(name: &'static str) {
    let mut rng = Rng::new(2003);
    for (xs, params, [oh, ow], align) in resize_configs() {
        let (os, rows) = resize_map(&xs, oh, ow, align);
        let (x, gy) = (rand(&mut rng, &xs), rand(&mut rng, &os));
        let want = apply_t(&rows, &gy.to_f64_vec(), numel(&xs));
        let p: Params = vec![("align_corners", boolean(align))];
        for dt in [F64, F32] {
            let dx = call1(name, &[gy.astype(dt), x.astype(dt)], &p);
            let (rtol, atol) = if dt == F64 { (1e-12, 1e-12) } else { (1e-5, 1e-5) };
            check_arr(&format!("{name} {xs:?} {params:?} {dt}"), &dx, &xs, dt, &want, rtol, atol);
        }
    }
}

pub fn resize_backward_grad(name: &'static str) {
    let mut rng = Rng::new(2004);
    for (xs, os, align) in [([1, 2, 3, 2], [1, 2, 2, 4], true), ([1, 1, 3, 4], [1, 1, 5, 2], false)] {
        let op = build(name, &[("align_corners", boolean(align))]);
        check(&format!("{name} {xs:?}"), &op, &[rand(&mut rng, &os), rand(&mut rng, &xs)], &mut rng, true);
    }
}

fn adaptive_configs() -> Vec<(Vec<usize>, Params, [usize; 2])> {
    vec![
        (vec![1, 1, 5, 7], vec![("output_size", int(3))], [3, 3]),
        (vec![2, 3, 5, 7], vec![("output_size", tuple(&[2, 4]))], [2, 4]),
        (vec![1, 2, 5, 7], vec![("output_size", tuple(&[8, 9]))], [8, 9]),
        (vec![2, 2, 4, 3], vec![], [1, 1]),
        (vec![1, 2, 6, 6], vec![("output_size", tuple(&[3]))], [3, 3]),
        (vec![0, 2, 3, 3], vec![("output_size", int(2))], [2, 2]),
    ]
}

pub fn adaptive(name: &'static str) {
    let mut rng = Rng::new(2005);
    for (xs, params, [oh, ow]) in adaptive_configs() {
        let x = rand(&mut rng, &xs);
        let (os, rows) = adaptive_map(&xs, oh, ow);
        let want = apply(&rows, &x.to_f64_vec());
        for dt in [F64, F32] {
            for (vname, xv) in variants(&x.astype(dt)) {
                let y = call1(name, &[xv], &params);
                let (rtol, atol) = tol(dt);
                check_arr(&format!("{name} {xs:?} {params:?} {dt} {vname}"), &y, &os, dt, &want, rtol, atol);
            }
        }
    }
}

pub fn adaptive_grad(name: &'static str) {
    let mut rng = Rng::new(2006);
    for (xs, params, _) in adaptive_configs().into_iter().filter(|(xs, ..)| numel(xs) > 0 && numel(xs) <= 80) {
        let op = build(name, &params);
        check(&format!("{name} {xs:?} {params:?}"), &op, &[rand(&mut rng, &xs)], &mut rng, true);
    }
}

pub fn adaptive_backward(name: &'static str) {
    let mut rng = Rng::new(2007);
    for (xs, params, [oh, ow]) in adaptive_configs() {
        let (os, rows) = adaptive_map(&xs, oh, ow);
        let (x, gy) = (rand(&mut rng, &xs), rand(&mut rng, &os));
        let want = apply_t(&rows, &gy.to_f64_vec(), numel(&xs));
        for dt in [F64, F32] {
            let dx = call1(name, &[gy.astype(dt), x.astype(dt)], &[]);
            let (rtol, atol) = if dt == F64 { (1e-12, 1e-12) } else { (1e-5, 1e-5) };
            check_arr(&format!("{name} {xs:?} {params:?} {dt}"), &dx, &xs, dt, &want, rtol, atol);
        }
    }
}

pub fn adaptive_backward_grad(name: &'static str) {
    let mut rng = Rng::new(2008);
    let op = build(name, &[]);
    let inputs = [rand(&mut rng, &[1, 2, 2, 3]), rand(&mut rng, &[1, 2, 3, 5])];
    check(name, &op, &inputs, &mut rng, true);
}

#[test]
fn resize_errors() {
    let z = |s: &[usize]| NDArray::zeros(s, F32);
    let r = call("_contrib_BilinearResize2D", &[z(&[2, 3, 4])], &[("height", int(2))]);
    assert!(
        matches!(r, Err(Error::Shape(ref m)) if m.contains("BilinearResize2D") && m.contains("(2, 3, 4)")),
        "{r:?}"
    );
    let r = call("_contrib_BilinearResize2D", &[z(&[1, 1, 2, 2])], &[("height", int(0))]);
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("height")), "{r:?}");
    let r = call("_contrib_BilinearResize2D", &[z(&[1, 1, 2, 2])], &[("mode", string("like"))]);
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("like")), "{r:?}");
    let r = call("_contrib_BilinearResize2D", &[z(&[1, 1, 2, 2])], &[("mode", string("odd_scale"))]);
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("scale_height")), "{r:?}");
    let r = call("_contrib_BilinearResize2D", &[z(&[1, 1, 0, 2])], &[("height", int(2))]);
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("(1, 1, 0, 2)")), "{r:?}");
    let r = call("_contrib_BilinearResize2D", &[NDArray::zeros(&[1, 1, 2, 2], ferrograd::DType::I32)], &[]);
    assert!(matches!(r, Err(Error::DType(ref m)) if m.contains("data")), "{r:?}");
    let r = call("_contrib_AdaptiveAvgPooling2D", &[z(&[1, 1, 2, 2])], &[("output_size", tuple(&[1, 2, 3]))]);
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("output_size")), "{r:?}");
    let r = call("_contrib_AdaptiveAvgPooling2D", &[z(&[1, 2, 2, 2, 2])], &[("output_size", int(1))]);
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("(1, 2, 2, 2, 2)")), "{r:?}");
    let r = call("_backward_contrib_AdaptiveAvgPooling2D", &[z(&[1, 2, 2, 2]), z(&[1, 3, 4, 4])], &[]);
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("ograd") && m.contains("(1, 3, 4, 4)")), "{r:?}");
    let _ = F64;
}

// ---- GridGenerator, BilinearSampler, SpatialTransformer ----

pub fn grid_p() -> Params {
    vec![("transform_type", string("affine")), ("target_shape", tuple(&[2, 3]))]
}

pub fn grid_back_p() -> Params {
    vec![("transform_type", string("affine"))]
}

pub fn st_p() -> Params {
    vec![("transform_type", string("affine")), ("sampler_type", string("bilinear")), ("target_shape", tuple(&[3, 2]))]
}

/// Normalised coordinate of position `i` of `n`: -1 .. 1 corner to corner.
fn norm_pos(i: usize, n: usize) -> f64 {
    if n == 1 {
        -1.0
    } else {
        -1.0 + 2.0 * i as f64 / (n - 1) as f64
    }
}

fn affine_grid_ref(theta: &[f64], n: usize, h: usize, w: usize) -> Vec<f64> {
    let os = [n, 2, h, w];
    (0..numel(&os))
        .map(|o| {
            let i = unravel(o, &os);
            let t = &theta[i[0] * 6 + i[1] * 3..][..3];
            t[0] * norm_pos(i[3], w) + t[1] * norm_pos(i[2], h) + t[2]
        })
        .collect()
}

fn warp_grid_ref(flow: &[f64], fs: &[usize]) -> Vec<f64> {
    (0..numel(fs))
        .map(|o| {
            let i = unravel(o, fs);
            let (pos, n) = if i[1] == 0 { (i[3], fs[3]) } else { (i[2], fs[2]) };
            let unit = if n == 1 { 2.0 } else { 2.0 / (n - 1) as f64 };
            -1.0 + (flow[o] + pos as f64) * unit
        })
        .collect()
}

/// Bilinear sampling with zero outside, one output value at a time.
fn sampler_ref(x: &[f64], xs: &[usize], grid: &[f64], gs: &[usize]) -> (Vec<usize>, Vec<f64>) {
    let os = vec![xs[0], xs[1], gs[2], gs[3]];
    let vals = (0..numel(&os))
        .map(|o| {
            let i = unravel(o, &os);
            let gx = grid[ravel(&[i[0], 0, i[2], i[3]], gs)];
            let gy = grid[ravel(&[i[0], 1, i[2], i[3]], gs)];
            let (px, py) = ((gx + 1.0) / 2.0 * (xs[3] as f64 - 1.0), (gy + 1.0) / 2.0 * (xs[2] as f64 - 1.0));
            let mut s = 0.0;
            for (yy, wy) in [(py.floor(), 1.0 - (py - py.floor())), (py.floor() + 1.0, py - py.floor())] {
                for (xx, wx) in [(px.floor(), 1.0 - (px - px.floor())), (px.floor() + 1.0, px - px.floor())] {
                    if yy >= 0.0 && xx >= 0.0 && (yy as usize) < xs[2] && (xx as usize) < xs[3] {
                        s += wy * wx * x[ravel(&[i[0], i[1], yy as usize, xx as usize], xs)];
                    }
                }
            }
            s
        })
        .collect();
    (os, vals)
}

pub fn grid(name: &'static str) {
    let mut rng = Rng::new(2101);
    for (n, h, w) in [(2, 2, 3), (1, 4, 1), (3, 1, 5)] {
        let theta = rand(&mut rng, &[n, 6]);
        let want = affine_grid_ref(&theta.to_f64_vec(), n, h, w);
        let p = vec![("transform_type", string("affine")), ("target_shape", tuple(&[h as i64, w as i64]))];
        for dt in [F64, F32] {
            for (vname, tv) in variants(&theta.astype(dt)) {
                let (rtol, atol) = tol(dt);
                check_arr(
                    &format!("{name} affine {n} {h} {w} {dt} {vname}"),
                    &call1(name, &[tv], &p),
                    &[n, 2, h, w],
                    dt,
                    &want,
                    rtol,
                    atol,
                );
            }
        }
    }
    for fs in [[2, 2, 3, 4], [1, 2, 1, 3]] {
        let flow = rand(&mut rng, &fs);
        let want = warp_grid_ref(&flow.to_f64_vec(), &fs);
        for dt in [F64, F32] {
            let y = call1(name, &[flow.astype(dt)], &[("transform_type", string("warp"))]);
            let (rtol, atol) = tol(dt);
            check_arr(&format!("{name} warp {fs:?} {dt}"), &y, &fs, dt, &want, rtol, atol);
        }
    }
}

pub fn grid_grad(name: &'static str) {
    let mut rng = Rng::new(2102);
    check(&format!("{name} affine"), &build(name, &grid_p()), &[rand(&mut rng, &[2, 6])], &mut rng, true);
    let op = build(name, &[("transform_type", string("warp"))]);
    check(&format!("{name} warp"), &op, &[rand(&mut rng, &[1, 2, 2, 3])], &mut rng, true);
}

pub fn grid_backward(name: &'static str) {
    let mut rng = Rng::new(2103);
    // <G(theta), g> = <theta, G*(g)> for the linear affine grid.
    let (theta, g) = (rand(&mut rng, &[2, 6]), rand(&mut rng, &[2, 2, 3, 4]));
    let d = call1(name, std::slice::from_ref(&g), &[("transform_type", string("affine"))]);
    let grid = affine_grid_ref(&theta.to_f64_vec(), 2, 3, 4);
    let lhs: f64 = grid.iter().zip(g.to_f64_vec()).map(|(a, b)| a * b).sum();
    let rhs: f64 = theta.to_f64_vec().iter().zip(d.to_f64_vec()).map(|(a, b)| a * b).sum();
    assert!(close(lhs, rhs, 1e-12, 1e-12), "{name} affine adjoint: {lhs} vs {rhs}");
    assert_eq!(d.shape(), &[2, 6]);
    // Warp: channel 0 scales by 2/(W-1), channel 1 by 2/(H-1).
    let g = rand(&mut rng, &[1, 2, 3, 5]);
    let d = call1(name, std::slice::from_ref(&g), &[("transform_type", string("warp"))]);
    let want: Vec<f64> = g.to_f64_vec().iter().enumerate().map(|(i, v)| v * if i < 15 { 0.5 } else { 1.0 }).collect();
    check_arr(&format!("{name} warp"), &d, &[1, 2, 3, 5], F64, &want, 1e-15, 0.0);
}

pub fn grid_backward_grad(name: &'static str) {
    let mut rng = Rng::new(2104);
    for t in ["affine", "warp"] {
        let op = build(name, &[("transform_type", string(t))]);
        check(&format!("{name} {t}"), &op, &[rand(&mut rng, &[2, 2, 2, 3])], &mut rng, true);
    }
}

/// A grid whose positions reach a little outside the input (zero padding is exercised).
pub fn rand_grid(rng: &mut Rng, shape: &[usize]) -> NDArray {
    f64s(&rng.vec(numel(shape), -1.15, 1.15), shape)
}

pub fn sampler(name: &'static str) {
    let mut rng = Rng::new(2105);
    for (xs, gs) in [([2, 3, 4, 5], [2, 2, 3, 4]), ([1, 1, 1, 3], [1, 2, 2, 2]), ([2, 2, 3, 3], [2, 2, 0, 4])] {
        let (x, g) = (rand(&mut rng, &xs), rand_grid(&mut rng, &gs));
        let (os, want) = sampler_ref(&x.to_f64_vec(), &xs, &g.to_f64_vec(), &gs);
        for dt in [F64, F32] {
            for (vname, xv) in variants(&x.astype(dt)) {
                let y = call1(name, &[xv, g.astype(dt)], &[]);
                let (rtol, atol) = if dt == F64 { tol(dt) } else { (1e-5, 1e-5) };
                check_arr(&format!("{name} {xs:?} {gs:?} {dt} {vname}"), &y, &os, dt, &want, rtol, atol);
            }
        }
    }
    // Exact corners: x = 1 is the last column, y = -1 the first row.
    let x = f64s(&(0..12).map(|v| v as f64).collect::<Vec<_>>(), &[1, 1, 3, 4]);
    let g = f64s(&[1.0, -1.0, -1.0, 1.0], &[1, 2, 1, 2]);
    check_arr(
        "corners",
        &call1(name, &[x, g], &[("cudnn_off", boolean(true))]),
        &[1, 1, 1, 2],
        F64,
        &[3.0, 8.0],
        0.0,
        0.0,
    );
}

pub fn sampler_grad(name: &'static str) {
    let mut rng = Rng::new(2106);
    let op = build(name, &[]);
    check(name, &op, &[rand(&mut rng, &[2, 2, 3, 4]), rand_grid(&mut rng, &[2, 2, 2, 3])], &mut rng, false);
}

pub fn sampler_backward(name: &'static str) {
    let mut rng = Rng::new(2107);
    let (xs, gs) = ([2, 2, 3, 4], [2, 2, 2, 3]);
    let (x, g) = (rand(&mut rng, &xs), rand_grid(&mut rng, &gs));
    let (os, _) = sampler_ref(&x.to_f64_vec(), &xs, &g.to_f64_vec(), &gs);
    let h = rand(&mut rng, &os);
    let hv = h.to_f64_vec();
    let loss =
        |xv: &[f64], gv: &[f64]| -> f64 { sampler_ref(xv, &xs, gv, &gs).1.iter().zip(&hv).map(|(a, b)| a * b).sum() };
    // Both gradients by central differences of the reference (the loss is linear in x).
    let fd = |v: &[f64], f: &dyn Fn(&[f64]) -> f64| -> Vec<f64> {
        (0..v.len())
            .map(|j| {
                let (mut p, mut m) = (v.to_vec(), v.to_vec());
                p[j] += 1e-6;
                m[j] -= 1e-6;
                (f(&p) - f(&m)) / 2e-6
            })
            .collect()
    };
    let (xv, gv) = (x.to_f64_vec(), g.to_f64_vec());
    let want_dx = fd(&xv, &|v| loss(v, &gv));
    let want_dg = fd(&gv, &|v| loss(&xv, v));
    for dt in [F64, F32] {
        let r = call(name, &[h.astype(dt), x.astype(dt), g.astype(dt)], &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
        let (rtol, atol) = if dt == F64 { (1e-6, 1e-7) } else { (1e-4, 1e-4) };
        check_arr(&format!("{name} ddata {dt}"), &r[0], &xs, dt, &want_dx, rtol, atol);
        check_arr(&format!("{name} dgrid {dt}"), &r[1], &gs, dt, &want_dg, rtol, atol);
    }
}

pub fn transformer(name: &'static str) {
    let mut rng = Rng::new(2108);
    for (xs, (h, w)) in [([2, 3, 4, 5], (3, 2)), ([1, 1, 3, 3], (3, 3))] {
        let x = rand(&mut rng, &xs);
        let loc = f64s(
            &(0..xs[0] * 6).map(|i| [1.0, 0.0, 0.0, 0.0, 1.0, 0.0][i % 6] + rng.uniform(-0.3, 0.3)).collect::<Vec<_>>(),
            &[xs[0], 6],
        );
        let gs = [xs[0], 2, h, w];
        let grid = affine_grid_ref(&loc.to_f64_vec(), xs[0], h, w);
        let (os, want) = sampler_ref(&x.to_f64_vec(), &xs, &grid, &gs);
        let p = vec![
            ("transform_type", string("affine")),
            ("sampler_type", string("bilinear")),
            ("target_shape", tuple(&[h as i64, w as i64])),
        ];
        for dt in [F64, F32] {
            let y = call1(name, &[x.astype(dt), loc.astype(dt)], &p);
            let (rtol, atol) = if dt == F64 { tol(dt) } else { (1e-5, 1e-5) };
            check_arr(&format!("{name} {xs:?} {dt}"), &y, &os, dt, &want, rtol, atol);
        }
    }
}

pub fn transformer_grad(name: &'static str) {
    let mut rng = Rng::new(2109);
    // No sample lands on a pixel row or column, where bilinear sampling has a kink.
    let loc = f64s(&[0.9, 0.15, 0.03, -0.1, 1.1, 0.07], &[1, 6]);
    check(name, &build(name, &st_p()), &[rand(&mut rng, &[1, 2, 3, 4]), loc], &mut rng, false);
}

#[test]
fn spatial_errors() {
    let z = |s: &[usize]| NDArray::zeros(s, F32);
    let r = call("GridGenerator", &[z(&[2, 5])], &grid_p());
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("GridGenerator") && m.contains("(2, 5)")), "{r:?}");
    let r = call("GridGenerator", &[z(&[2, 6])], &[("transform_type", string("affine"))]);
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("target_shape")), "{r:?}");
    let r = call("GridGenerator", &[z(&[1, 3, 2, 2])], &[("transform_type", string("warp"))]);
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("(1, 3, 2, 2)")), "{r:?}");
    let r = call("BilinearSampler", &[z(&[2, 1, 3, 3]), z(&[1, 2, 2, 2])], &[]);
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("grid") && m.contains("(1, 2, 2, 2)")), "{r:?}");
    let r = call("BilinearSampler", &[z(&[2, 1, 3, 3]), z(&[2, 3, 2, 2])], &[]);
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("(2, 3, 2, 2)")), "{r:?}");
    let r = call("SpatialTransformer", &[z(&[2, 1, 3, 3]), z(&[3, 6])], &st_p());
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("loc") && m.contains("(3, 6)")), "{r:?}");
    let mut p = st_p();
    p.retain(|(k, _)| *k != "target_shape");
    let r = call("SpatialTransformer", &[z(&[2, 1, 3, 3]), z(&[2, 6])], &p);
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("target_shape")), "{r:?}");
}

// ---- ROIPooling, ROIAlign ----

/// First-order check of the data gradient only: the rois get no gradient (as in MXNet), though
/// the output moves with them.
pub fn check_data_grad(what: &str, op: &OpRef, inputs: &[NDArray], rng: &mut Rng) {
    let outs = ops::run(op.as_ref(), &Ctx::default(), inputs).unwrap_or_else(|e| panic!("{what}: {e}"));
    let v: Vec<NDArray> = outs.iter().map(|o| f64s(&rng.signed(o.size(), 0.5, 2.0), o.shape())).collect();
    let got = eval_grad(op.as_ref(), inputs, &v).unwrap_or_else(|e| panic!("{what}: eval_grad: {e}"));
    assert!(got[1].is_none(), "{what}: rois got a gradient");
    let dx = got[0].clone().unwrap_or_else(|| panic!("{what}: no data gradient"));
    let f = |x: &NDArray| -> f64 {
        let y = ops::run(op.as_ref(), &Ctx::default(), &[x.clone(), inputs[1].clone()]).unwrap();
        y[0].to_f64_vec().iter().zip(v[0].to_f64_vec()).map(|(a, b)| a * b).sum()
    };
    let xv = inputs[0].to_f64_vec();
    for (j, g) in dx.to_f64_vec().into_iter().enumerate() {
        let (mut p, mut m) = (xv.clone(), xv.clone());
        p[j] += EPS;
        m[j] -= EPS;
        let fd = (f(&f64s(&p, inputs[0].shape())) - f(&f64s(&m, inputs[0].shape()))) / (2.0 * EPS);
        assert!(close(g, fd, RTOL, ATOL), "{what}: d/d data[{j}]: rule {g} vs finite difference {fd}");
    }
    check_tape(what, op, inputs, &v, &[dx, NDArray::zeros(inputs[1].shape(), inputs[1].dtype())]);
}

pub fn roi_pool_p() -> Params {
    vec![("pooled_size", tuple(&[2, 2])), ("spatial_scale", float(1.0))]
}

pub fn roi_align_p() -> Params {
    vec![("pooled_size", tuple(&[2, 2])), ("spatial_scale", float(1.0))]
}

/// Rois over a (·, ·, 5, 6) map: inside, fractional, partly outside, a point, another image, a
/// skipped (negative) batch index.
pub fn test_rois() -> NDArray {
    let rows = [
        [0.0, 1.0, 1.0, 4.0, 3.0],
        [1.0, 0.5, 0.4, 2.5, 4.6],
        [0.0, -2.0, -1.0, 2.0, 2.0],
        [1.0, 3.0, 3.0, 3.0, 3.0],
        [1.0, 4.2, 2.7, 7.9, 6.3],
        [-1.0, 1.0, 1.0, 3.0, 3.0],
    ];
    f64s(&rows.concat(), &[6, 5])
}

/// ROIPooling reference: integer bins, max, 0 for an empty bin or a skipped roi.
fn roi_pool_ref(x: &NDArray, rois: &NDArray, ph: usize, pw: usize, scale: f64) -> (Vec<usize>, Vec<f64>) {
    let (xs, xv, rv) = (x.shape().to_vec(), x.to_f64_vec(), rois.to_f64_vec());
    let os = vec![rois.shape()[0], xs[1], ph, pw];
    let vals = (0..numel(&os))
        .map(|o| {
            let i = unravel(o, &os);
            let r = &rv[i[0] * 5..][..5];
            if r[0] < 0.0 || r[0] as usize >= xs[0] {
                return 0.0;
            }
            let c = |v: f64| (v * scale).round() as i64;
            let (rh, rw) = ((c(r[4]) - c(r[2]) + 1).max(1) as f64, (c(r[3]) - c(r[1]) + 1).max(1) as f64);
            let lim = |v: i64, n: usize| v.clamp(0, n as i64) as usize;
            let h0 = lim((i[2] as f64 * rh / ph as f64).floor() as i64 + c(r[2]), xs[2]);
            let h1 = lim(((i[2] + 1) as f64 * rh / ph as f64).ceil() as i64 + c(r[2]), xs[2]);
            let w0 = lim((i[3] as f64 * rw / pw as f64).floor() as i64 + c(r[1]), xs[3]);
            let w1 = lim(((i[3] + 1) as f64 * rw / pw as f64).ceil() as i64 + c(r[1]), xs[3]);
            let mut m = f64::NEG_INFINITY;
            for h in h0..h1 {
                for w in w0..w1 {
                    m = m.max(xv[ravel(&[r[0] as usize, i[1], h, w], &xs)]);
                }
            }
            if m == f64::NEG_INFINITY {
                0.0
            } else {
                m
            }
        })
        .collect();
    (os, vals)
}

pub fn roi_pooling(name: &'static str) {
    let mut rng = Rng::new(2201);
    let x = rand(&mut rng, &[2, 3, 5, 6]);
    let rois = test_rois();
    for (ph, pw, scale) in [(2, 2, 1.0), (2, 3, 0.5), (3, 1, 1.5)] {
        let (os, want) = roi_pool_ref(&x, &rois, ph, pw, scale);
        let p = vec![("pooled_size", tuple(&[ph as i64, pw as i64])), ("spatial_scale", float(scale))];
        for dt in [F64, F32] {
            for (vname, xv) in variants(&x.astype(dt)) {
                let y = call1(name, &[xv, rois.astype(dt)], &p);
                let (rtol, atol) = tol(dt);
                check_arr(&format!("{name} {ph}x{pw} {scale} {dt} {vname}"), &y, &os, dt, &want, rtol, atol);
            }
        }
    }
    // A batch index past the batch gives 0, as in MXNet.
    let y = call1(name, &[x, f64s(&[5.0, 0.0, 0.0, 2.0, 2.0], &[1, 5])], &roi_pool_p());
    check_arr("batch past the end", &y, &[1, 3, 2, 2], F64, &[0.0; 12], 0.0, 0.0);
}

pub fn roi_pooling_grad(name: &'static str) {
    let mut rng = Rng::new(2202);
    let op = build(name, &roi_pool_p());
    check_data_grad(name, &op, &[rand(&mut rng, &[2, 2, 5, 6]), test_rois()], &mut rng);
}

pub fn roi_pooling_backward(name: &'static str) {
    let mut rng = Rng::new(2203);
    let (x, rois) = (rand(&mut rng, &[2, 2, 5, 6]), test_rois());
    let (os, _) = roi_pool_ref(&x, &rois, 2, 2, 1.0);
    let g = rand(&mut rng, &os);
    // The data gradient of Σ g·ROIPooling(x) by central differences (piecewise linear in x).
    let (xv, gv) = (x.to_f64_vec(), g.to_f64_vec());
    let loss = |v: &[f64]| -> f64 {
        roi_pool_ref(&f64s(v, x.shape()), &rois, 2, 2, 1.0).1.iter().zip(&gv).map(|(a, b)| a * b).sum()
    };
    let want: Vec<f64> = (0..xv.len())
        .map(|j| {
            let (mut p, mut m) = (xv.clone(), xv.clone());
            p[j] += 1e-7;
            m[j] -= 1e-7;
            (loss(&p) - loss(&m)) / 2e-7
        })
        .collect();
    for dt in [F64, F32] {
        let dx = call1(name, &[g.astype(dt), x.astype(dt), rois.astype(dt)], &roi_pool_p());
        let (rtol, atol) = if dt == F64 { (1e-6, 1e-7) } else { (1e-5, 1e-5) };
        check_arr(&format!("{name} {dt}"), &dx, x.shape(), dt, &want, rtol, atol);
    }
}

/// ROIAlign reference, one bilinear sample at a time.
#[allow(clippy::too_many_arguments)]
fn roi_align_ref(
    x: &NDArray,
    rois: &NDArray,
    ph: usize,
    pw: usize,
    scale: f64,
    ratio: i64,
    ps: bool,
    aligned: bool,
) -> (Vec<usize>, Vec<f64>) {
    let (xs, xv, rv) = (x.shape().to_vec(), x.to_f64_vec(), rois.to_f64_vec());
    let oc = if ps { xs[1] / (ph * pw) } else { xs[1] };
    let os = vec![rois.shape()[0], oc, ph, pw];
    let (h, w) = (xs[2] as f64, xs[3] as f64);
    let vals = (0..numel(&os))
        .map(|o| {
            let i = unravel(o, &os);
            let r = &rv[i[0] * 5..][..5];
            if r[0] < 0.0 {
                return 0.0;
            }
            let ch = if ps { (i[1] * ph + i[2]) * pw + i[3] } else { i[1] };
            let off = if aligned { 0.5 } else { 0.0 };
            let (sx, sy) = (r[1] * scale - off, r[2] * scale - off);
            let (mut rw, mut rh) = (r[3] * scale - off - sx, r[4] * scale - off - sy);
            if !aligned {
                rw = rw.max(1.0);
                rh = rh.max(1.0);
            }
            let (bh, bw) = (rh / ph as f64, rw / pw as f64);
            let gh = if ratio > 0 { ratio as usize } else { bh.ceil() as usize };
            let gw = if ratio > 0 { ratio as usize } else { bw.ceil() as usize };
            let at = |yy: usize, xx: usize| xv[ravel(&[r[0] as usize, ch, yy, xx], &xs)];
            let mut sum = 0.0;
            for iy in 0..gh {
                for ix in 0..gw {
                    let y = sy + i[2] as f64 * bh + (iy as f64 + 0.5) * bh / gh as f64;
                    let xx = sx + i[3] as f64 * bw + (ix as f64 + 0.5) * bw / gw as f64;
                    if y < -1.0 || y > h || xx < -1.0 || xx > w {
                        continue;
                    }
                    let (y, xx) = (y.max(0.0).min(h - 1.0), xx.max(0.0).min(w - 1.0));
                    let (y0, x0) = (y.floor() as usize, xx.floor() as usize);
                    let (y1, x1) = ((y0 + 1).min(xs[2] - 1), (x0 + 1).min(xs[3] - 1));
                    let (ly, lx) = (y - y0 as f64, xx - x0 as f64);
                    sum += (1.0 - ly) * ((1.0 - lx) * at(y0, x0) + lx * at(y0, x1))
                        + ly * ((1.0 - lx) * at(y1, x0) + lx * at(y1, x1));
                }
            }
            sum / (gh * gw).max(1) as f64
        })
        .collect();
    (os, vals)
}

pub fn roi_align(name: &'static str) {
    let mut rng = Rng::new(2204);
    let x = rand(&mut rng, &[2, 4, 5, 6]);
    let rois = test_rois();
    for (ph, pw, scale, ratio, ps, aligned) in [
        (2, 2, 1.0, -1, false, false),
        (2, 3, 0.5, 2, false, false),
        (2, 2, 1.0, -1, false, true),
        (2, 2, 1.0, 1, true, false),
        (1, 4, 0.8, 3, true, true),
    ] {
        let (os, want) = roi_align_ref(&x, &rois, ph, pw, scale, ratio, ps, aligned);
        let p = vec![
            ("pooled_size", tuple(&[ph as i64, pw as i64])),
            ("spatial_scale", float(scale)),
            ("sample_ratio", int(ratio)),
            ("position_sensitive", boolean(ps)),
            ("aligned", boolean(aligned)),
        ];
        for dt in [F64, F32] {
            for (vname, xv) in variants(&x.astype(dt)) {
                let y = call1(name, &[xv, rois.astype(dt)], &p);
                let (rtol, atol) = if dt == F64 { tol(dt) } else { (1e-5, 1e-5) };
                check_arr(&format!("{name} {p:?} {dt} {vname}"), &y, &os, dt, &want, rtol, atol);
            }
        }
    }
}

pub fn roi_align_grad(name: &'static str) {
    let mut rng = Rng::new(2205);
    let op = build(name, &[("pooled_size", tuple(&[2, 2])), ("spatial_scale", float(1.0)), ("sample_ratio", int(2))]);
    check_data_grad(name, &op, &[rand(&mut rng, &[2, 2, 5, 6]), test_rois()], &mut rng);
    let op = build(
        name,
        &[("pooled_size", tuple(&[1, 2])), ("spatial_scale", float(0.7)), ("position_sensitive", boolean(true))],
    );
    check_data_grad(name, &op, &[rand(&mut rng, &[2, 4, 5, 6]), test_rois()], &mut rng);
}

pub fn roi_align_backward(name: &'static str) {
    let mut rng = Rng::new(2206);
    let (x, rois) = (rand(&mut rng, &[2, 4, 5, 6]), test_rois());
    for ps in [false, true] {
        let p =
            vec![("pooled_size", tuple(&[1, 2])), ("spatial_scale", float(1.0)), ("position_sensitive", boolean(ps))];
        let (os, _) = roi_align_ref(&x, &rois, 1, 2, 1.0, -1, ps, false);
        let g = rand(&mut rng, &os);
        // ROIAlign is linear in the data: the gradient is the transpose, probed with unit inputs.
        let want: Vec<f64> = (0..x.size())
            .map(|j| {
                let mut e = vec![0.0; x.size()];
                e[j] = 1.0;
                let (_, col) = roi_align_ref(&f64s(&e, x.shape()), &rois, 1, 2, 1.0, -1, ps, false);
                col.iter().zip(g.to_f64_vec()).map(|(a, b)| a * b).sum()
            })
            .collect();
        for dt in [F64, F32] {
            let dx = call1(name, &[g.astype(dt), x.astype(dt), rois.astype(dt)], &p);
            let (rtol, atol) = if dt == F64 { (1e-12, 1e-12) } else { (1e-5, 1e-5) };
            check_arr(&format!("{name} ps={ps} {dt}"), &dx, x.shape(), dt, &want, rtol, atol);
        }
    }
}

#[test]
fn roi_errors() {
    let z = |s: &[usize]| NDArray::zeros(s, F32);
    let r = call("ROIPooling", &[z(&[1, 2, 4, 4]), z(&[3, 4])], &roi_pool_p());
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("rois") && m.contains("(3, 4)")), "{r:?}");
    let r = call("ROIPooling", &[z(&[2, 4, 4]), z(&[3, 5])], &roi_pool_p());
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("ROIPooling") && m.contains("(2, 4, 4)")), "{r:?}");
    let r = call(
        "ROIPooling",
        &[z(&[1, 2, 4, 4]), z(&[3, 5])],
        &[("pooled_size", tuple(&[2])), ("spatial_scale", float(1.0))],
    );
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("pooled_size")), "{r:?}");
    let p = vec![("pooled_size", tuple(&[2, 2])), ("spatial_scale", float(1.0)), ("position_sensitive", boolean(true))];
    let r = call("_contrib_ROIAlign", &[z(&[1, 6, 4, 4]), z(&[3, 5])], &p);
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("position_sensitive") && m.contains('6')), "{r:?}");
    let rois = f64s(&[3.0, 0.0, 0.0, 2.0, 2.0], &[1, 5]).astype(F32);
    let r = call("_contrib_ROIAlign", &[z(&[2, 2, 4, 4]), rois], &roi_align_p());
    assert!(matches!(r, Err(Error::Index(ref m)) if m.contains("batch_index") && m.contains('3')), "{r:?}");
}

// ---- Correlation ----

pub fn corr_p() -> Params {
    vec![("kernel_size", int(3)), ("max_displacement", int(2)), ("pad_size", int(2))]
}

/// (kernel_size, max_displacement, stride1, stride2, pad_size, is_multiply).
pub type CorrCfg = (usize, usize, usize, usize, usize, bool);

pub fn corr_params(c: CorrCfg) -> Params {
    vec![
        ("kernel_size", int(c.0 as i64)),
        ("max_displacement", int(c.1 as i64)),
        ("stride1", int(c.2 as i64)),
        ("stride2", int(c.3 as i64)),
        ("pad_size", int(c.4 as i64)),
        ("is_multiply", boolean(c.5)),
    ]
}

/// Correlation reference over explicitly zero-padded copies.
fn corr_ref(a: &NDArray, b: &NDArray, (k, md, s1, s2, pad, mult): CorrCfg) -> (Vec<usize>, Vec<f64>) {
    let s = a.shape().to_vec();
    let (ph, pw) = (s[2] + 2 * pad, s[3] + 2 * pad);
    let padded = |x: &NDArray| -> Vec<f64> {
        let v = x.to_f64_vec();
        let mut p = vec![0.0; s[0] * s[1] * ph * pw];
        for (i, &val) in v.iter().enumerate() {
            let ix = unravel(i, &s);
            p[ravel(&[ix[0], ix[1], ix[2] + pad, ix[3] + pad], &[s[0], s[1], ph, pw])] = val;
        }
        p
    };
    let (pa, pb) = (padded(a), padded(b));
    let border = md + (k - 1) / 2;
    let (th, tw) = ((ph - 2 * border).div_ceil(s1), (pw - 2 * border).div_ceil(s1));
    let r = md / s2;
    let gw = 2 * r + 1;
    let os = vec![s[0], gw * gw, th, tw];
    let at = |p: &[f64], n: usize, c: usize, y: usize, x: usize| p[ravel(&[n, c, y, x], &[s[0], s[1], ph, pw])];
    let vals = (0..numel(&os))
        .map(|o| {
            let [n, t, i, j] = unravel(o, &os)[..] else { unreachable!() };
            let (y1, x1) = (i * s1 + md, j * s1 + md);
            let y2 = (y1 as i64 + ((t / gw) as i64 - r as i64) * s2 as i64) as usize;
            let x2 = (x1 as i64 + ((t % gw) as i64 - r as i64) * s2 as i64) as usize;
            let mut sum = 0.0;
            for c in 0..s[1] {
                for ky in 0..k {
                    for kx in 0..k {
                        let (va, vb) = (at(&pa, n, c, y1 + ky, x1 + kx), at(&pb, n, c, y2 + ky, x2 + kx));
                        sum += if mult { va * vb } else { (va - vb).abs() };
                    }
                }
            }
            sum / (k * k * s[1]) as f64
        })
        .collect();
    (os, vals)
}

fn corr_configs() -> Vec<CorrCfg> {
    vec![
        (1, 1, 1, 1, 0, true),
        (3, 2, 1, 1, 2, true),
        (3, 4, 2, 2, 4, false),
        (1, 2, 1, 2, 2, true),
        (5, 1, 2, 1, 3, false),
    ]
}

pub fn correlation(name: &'static str) {
    let mut rng = Rng::new(2301);
    let (a, b) = (rand(&mut rng, &[2, 3, 7, 8]), rand(&mut rng, &[2, 3, 7, 8]));
    for cfg in corr_configs() {
        let (os, want) = corr_ref(&a, &b, cfg);
        for dt in [F64, F32] {
            for (vname, av) in variants(&a.astype(dt)) {
                let y = call1(name, &[av, b.astype(dt)], &corr_params(cfg));
                let (rtol, atol) = if dt == F64 { tol(dt) } else { (1e-5, 1e-5) };
                check_arr(&format!("{name} {cfg:?} {dt} {vname}"), &y, &os, dt, &want, rtol, atol);
            }
        }
    }
}

pub fn correlation_grad(name: &'static str) {
    let mut rng = Rng::new(2302);
    for cfg in [(3, 1, 1, 1, 1, true), (1, 2, 2, 2, 1, false)] {
        let op = build(name, &corr_params(cfg));
        let inputs = [rand(&mut rng, &[1, 2, 4, 5]), rand(&mut rng, &[1, 2, 4, 5])];
        check(&format!("{name} {cfg:?}"), &op, &inputs, &mut rng, false);
    }
}

pub fn correlation_backward(name: &'static str) {
    let mut rng = Rng::new(2303);
    let cfg = (3, 2, 1, 1, 2, true);
    let (a, b) = (rand(&mut rng, &[1, 2, 4, 5]), rand(&mut rng, &[1, 2, 4, 5]));
    let (os, _) = corr_ref(&a, &b, cfg);
    let g = rand(&mut rng, &os);
    let loss = |x: &NDArray, y: &NDArray| -> f64 {
        corr_ref(x, y, cfg).1.iter().zip(g.to_f64_vec()).map(|(p, q)| p * q).sum()
    };
    // Bilinear: the gradient in one input is exact by unit probes.
    let unit = |j: usize| {
        let mut e = vec![0.0; a.size()];
        e[j] = 1.0;
        f64s(&e, a.shape())
    };
    let want_a: Vec<f64> = (0..a.size()).map(|j| loss(&unit(j), &b)).collect();
    let want_b: Vec<f64> = (0..b.size()).map(|j| loss(&a, &unit(j))).collect();
    for dt in [F64, F32] {
        let r = call(name, &[g.astype(dt), a.astype(dt), b.astype(dt)], &corr_params(cfg))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let (rtol, atol) = if dt == F64 { (1e-12, 1e-12) } else { (1e-5, 1e-5) };
        check_arr(&format!("{name} d1 {dt}"), &r[0], a.shape(), dt, &want_a, rtol, atol);
        check_arr(&format!("{name} d2 {dt}"), &r[1], b.shape(), dt, &want_b, rtol, atol);
    }
}

#[test]
fn correlation_errors() {
    let z = |s: &[usize]| NDArray::zeros(s, F32);
    let r = call("Correlation", &[z(&[1, 2, 4, 4]), z(&[1, 2, 4, 5])], &[]);
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("(1, 2, 4, 5)")), "{r:?}");
    let r = call("Correlation", &[z(&[1, 2, 3, 3]), z(&[1, 2, 3, 3])], &[("max_displacement", int(2))]);
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("too small")), "{r:?}");
    let r = call("Correlation", &[z(&[1, 2, 4, 4]), z(&[1, 2, 4, 4])], &[("kernel_size", int(2))]);
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("kernel_size") && m.contains("odd")), "{r:?}");
    let r = call("Correlation", &[z(&[1, 2, 4, 4]), z(&[1, 2, 4, 4])], &[("stride1", int(0))]);
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("stride1")), "{r:?}");
}

#[test]
fn roi_coordinates_must_be_finite() {
    let rois = f64s(&[0.0, 0.0, 0.0, f64::INFINITY, 2.0], &[1, 5]);
    let r = call("_contrib_ROIAlign", &[NDArray::zeros(&[1, 1, 4, 4], F64), rois], &roi_align_p());
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("not finite")), "{r:?}");
}
