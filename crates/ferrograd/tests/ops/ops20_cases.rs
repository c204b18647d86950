//! Task ops20's operators against naive float64 loops written here: the sequence ops
//! (`SequenceMask`, `SequenceLast`, `SequenceReverse`), `hard_sigmoid`, `all_finite` /
//! `multi_all_finite`, `depth_to_space` / `space_to_depth` and `moments`; gradients to second
//! order by finite differences; bad inputs.

use ferrograd::ops::AttrValue;
use ferrograd::DType::{F32, F64, I32};
use ferrograd::{call, Error, NDArray};

use crate::common::*;
use crate::gradcheck::{build, check};

fn rand(rng: &mut Rng, shape: &[usize]) -> NDArray {
    f64s(&rng.vec(numel(shape), -2.0, 2.0), shape)
}

/// (steps, batch) of data with the sequence on `axis`, and the row-major offset of (t, b, i).
fn seq_geom(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    (shape[axis], shape[1 - axis], shape[2..].iter().product())
}

fn seq_at(shape: &[usize], axis: usize, t: usize, b: usize, i: usize) -> usize {
    let (steps, batch, inner) = seq_geom(shape, axis);
    let row = if axis == 0 { t * batch + b } else { b * steps + t };
    row * inner + i
}

fn seq_params(use_len: bool, axis: i64) -> Params {
    vec![("use_sequence_length", boolean(use_len)), ("axis", int(axis))]
}

/// Naive reference of one sequence op on `x` with per-entry `lens` (already truncated).
fn seq_ref(name: &str, x: &NDArray, axis: usize, lens: &[i64], value: f64) -> (Vec<usize>, Vec<f64>) {
    let s = x.shape().to_vec();
    let v = x.to_f64_vec();
    let (steps, batch, inner) = seq_geom(&s, axis);
    match name {
        "SequenceMask" => {
            let mut out = v.clone();
            for (b, &n) in lens.iter().enumerate().take(batch) {
                for t in 0..steps {
                    for i in 0..inner {
                        if t as i64 >= n {
                            out[seq_at(&s, axis, t, b, i)] = value;
                        }
                    }
                }
            }
            (s, out)
        }
        "SequenceReverse" => {
            let mut out = v.clone();
            for (b, &n) in lens.iter().enumerate().take(batch) {
                let n = n as usize;
                for t in 0..n {
                    for i in 0..inner {
                        out[seq_at(&s, axis, t, b, i)] = v[seq_at(&s, axis, n - 1 - t, b, i)];
                    }
                }
            }
            (s, out)
        }
        _ => {
            let mut shape = s.clone();
            shape.remove(axis);
            let mut out = Vec::new();
            for (b, &n) in lens.iter().enumerate().take(batch) {
                for i in 0..inner {
                    out.push(v[seq_at(&s, axis, n as usize - 1, b, i)]);
                }
            }
            (shape, out)
        }
    }
}

pub fn sequence_p() -> Params {
    seq_params(true, 0)
}

pub fn sequence(name: &'static str) {
    let mut rng = Rng::new(2001);
    let axes: &[usize] = if name == "SequenceReverse" { &[0] } else { &[0, 1] };
    for &shape in &[&[4usize, 3, 2][..], &[5, 2], &[3, 4, 2, 2]] {
        for &axis in axes {
            let (steps, batch, _) = seq_geom(shape, axis);
            let x = rand(&mut rng, shape);
            // Fractional lengths truncate toward zero; Mask also takes lengths past the end and
            // negative ones; Last needs at least one step; Reverse allows zero.
            let raw: Vec<f64> = (0..batch)
                .map(|b| {
                    let lo = if name == "SequenceLast" { 1 } else { 0 };
                    let n = lo + (b * 7 + 1) % (steps + 1 - lo);
                    n as f64 + if b % 2 == 1 { 0.7 } else { 0.0 }
                })
                .map(|n| n.min(steps as f64))
                .collect();
            let mut lens_list = vec![raw.clone()];
            if name == "SequenceMask" {
                lens_list.push((0..batch).map(|b| if b % 2 == 0 { -1.0 } else { steps as f64 + 3.0 }).collect());
            }
            for lens in lens_list {
                let trunc: Vec<i64> = lens.iter().map(|v| v.trunc() as i64).collect();
                for dt in [F64, F32, I32] {
                    let xd = x.astype(dt);
                    let value = if dt == I32 { -3.0 } else { -1.5 };
                    let (ws, want) = seq_ref(name, &xd, axis, &trunc, value);
                    let mut params = seq_params(true, axis as i64);
                    if name == "SequenceMask" {
                        params.push(("value", float(value)));
                    }
                    for ldt in [F64, I32] {
                        let l = arr(&lens, &[batch], ldt);
                        if ldt == I32 && lens.iter().any(|v| v.fract() != 0.0) {
                            continue;
                        }
                        for (vn, xv) in variants(&xd) {
                            let y = call1(name, &[xv, l.clone()], &params);
                            check_arr(
                                &format!("{name} {shape:?} axis={axis} {dt} {vn} lens={lens:?}"),
                                &y,
                                &ws,
                                dt,
                                &want,
                                0.0,
                                0.0,
                            );
                        }
                    }
                    // Without lengths every sequence is full.
                    let (ws, want) = seq_ref(name, &xd, axis, &vec![steps as i64; batch], value);
                    let mut params = seq_params(false, axis as i64);
                    if name == "SequenceMask" {
                        params.push(("value", float(value)));
                    }
                    let y = call1(name, std::slice::from_ref(&xd), &params);
                    check_arr(&format!("{name} {shape:?} axis={axis} {dt} full"), &y, &ws, dt, &want, 0.0, 0.0);
                }
            }
        }
    }
    // Bad inputs: rank, axis, lengths shape, out-of-range lengths, wrong input count.
    let x = rand(&mut rng, &[4, 3, 2]);
    let r = call(name, &[f64s(&[1.0, 2.0], &[2]), f64s(&[1.0], &[1])], &seq_params(true, 0));
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains(name) && m.contains("(2,)")), "{r:?}");
    let r = call(name, &[x.clone(), f64s(&[1.0, 2.0], &[2])], &seq_params(true, 0));
    assert!(
        matches!(r, Err(Error::Shape(ref m)) if m.contains(name) && m.contains("sequence_length") && m.contains("(2,)") && m.contains("(3,)")),
        "{r:?}"
    );
    let r = call(name, &[x.clone(), f64s(&[1.0, 2.0, 3.0], &[3])], &seq_params(true, 2));
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains(name) && m.contains("axis")), "{r:?}");
    let r = call(name, std::slice::from_ref(&x), &seq_params(true, 0));
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains(name) && m.contains("sequence_length")), "{r:?}");
    let r = call(name, &[x.clone(), f64s(&[1.0, 2.0, 3.0], &[3])], &seq_params(false, 0));
    assert!(r.is_err(), "{name}: two inputs without use_sequence_length: {r:?}");
    if name != "SequenceMask" {
        let r = call(name, &[x.clone(), f64s(&[1.0, 5.0, 2.0], &[3])], &seq_params(true, 0));
        assert!(matches!(r, Err(Error::Index(ref m)) if m.contains(name) && m.contains("sequence_length[1]")), "{r:?}");
    }
    if name == "SequenceLast" {
        let r = call(name, &[x.clone(), f64s(&[1.0, 0.0, 2.0], &[3])], &seq_params(true, 0));
        assert!(matches!(r, Err(Error::Index(ref m)) if m.contains("sequence_length[1] = 0")), "{r:?}");
    }
    if name == "SequenceReverse" {
        let r = call(name, &[x, f64s(&[1.0, 2.0, 3.0, 4.0], &[4])], &seq_params(true, 1));
        assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("axis must be 0")), "{r:?}");
    }
}

pub fn sequence_grad(name: &'static str) {
    let mut rng = Rng::new(2002);
    let axes: &[i64] = if name == "SequenceReverse" { &[0] } else { &[0, 1] };
    for &axis in axes {
        let x = rand(&mut rng, &[3, 4, 2]);
        let batch = x.shape()[1 - axis as usize];
        let lens: Vec<f64> = (0..batch).map(|b| (1 + b % 3) as f64).collect();
        let op = build(name, &seq_params(true, axis));
        check(&format!("{name} axis={axis}"), &op, &[x.clone(), arr(&lens, &[batch], I32)], &mut rng, true);
        let op = build(name, &seq_params(false, axis));
        check(&format!("{name} axis={axis} full"), &op, &[x], &mut rng, true);
    }
}

pub fn hard_sigmoid(name: &'static str) {
    let xs = [-5.0, -2.5, -1.0, 0.0, 1.0, 2.5, 3.0, f64::NAN];
    for (alpha, beta) in [(0.2, 0.5), (0.5, 0.25), (-0.3, 0.4)] {
        // MXNet's parameters are float32.
        let (a, b) = (alpha as f32 as f64, beta as f32 as f64);
        for dt in [F64, F32] {
            for (vn, xv) in variants(&arr(&xs, &[2, 4], dt)) {
                // NaN stays NaN (f64::clamp keeps it).
                let want: Vec<f64> =
                    xv.to_f64_vec().iter().map(|&v| round_to((a * v + b).clamp(0.0, 1.0), dt)).collect();
                let y = call1(name, std::slice::from_ref(&xv), &[("alpha", float(alpha)), ("beta", float(beta))]);
                let (rt, at) = tol(dt);
                check_arr(&format!("{name} alpha={alpha} {dt} {vn}"), &y, xv.shape(), dt, &want, rt, at);
            }
        }
    }
    let y = call1(name, &[f64s(&[-1.0, 0.0, 1.0], &[3])], &[]);
    assert_close(
        "hard_sigmoid defaults",
        &y.to_f64_vec(),
        &[0.5 - 0.2f32 as f64, 0.5, 0.5 + 0.2f32 as f64],
        0.0,
        1e-15,
    );
    let r = call(name, &[arr(&[1.0], &[1], I32)], &[]);
    assert!(matches!(r, Err(Error::DType(ref m)) if m.contains("hard_sigmoid") && m.contains("int32")), "{r:?}");
}

pub fn hard_sigmoid_grad(name: &'static str) {
    let mut rng = Rng::new(2004);
    // Points away from the kinks at alpha·x + beta = 0 and 1.
    let x = f64s(&[-4.0, -2.2, -1.0, 0.3, 1.1, 2.2, 3.5, -0.4], &[2, 4]);
    for (alpha, beta) in [(0.2, 0.5), (-0.3, 0.4)] {
        let op = build(name, &[("alpha", float(alpha)), ("beta", float(beta))]);
        check(&format!("{name} alpha={alpha}"), &op, std::slice::from_ref(&x), &mut rng, true);
    }
}

pub fn all_finite(name: &'static str) {
    let multi = name == "multi_all_finite";
    let cases: &[(&[f64], bool)] = &[
        (&[1.0, -2.0, 3.5], true),
        (&[1.0, f64::INFINITY], false),
        (&[f64::NEG_INFINITY, 0.0], false),
        (&[f64::NAN, 1.0], false),
        (&[], true),
    ];
    for dt in [F64, F32] {
        for &(vals, ok) in cases {
            let x = arr(vals, &[vals.len()], dt);
            let want = [if ok { 1.0 } else { 0.0 }];
            if multi {
                let clean = arr(&[1.0, 2.0], &[2], F32);
                for (ins, n) in [(vec![clean.clone(), x.clone()], 2), (vec![x.clone(), clean, x.clone()], 3)] {
                    let y = call1(name, &ins, &[("num_arrays", int(n))]);
                    check_arr(&format!("{name} {vals:?} {dt}"), &y, &[1], F32, &want, 0.0, 0.0);
                }
            } else {
                for init in [true, false] {
                    let y = call1(name, std::slice::from_ref(&x), &[("init_output", boolean(init))]);
                    check_arr(&format!("{name} {vals:?} {dt} init={init}"), &y, &[1], F32, &want, 0.0, 0.0);
                }
            }
        }
    }
    // A large array: the chunked scan finds one non-finite element anywhere.
    let mut big = vec![0.5; 200_003];
    for pos in [0, 100_000, 200_002] {
        big[pos] = f64::NAN;
        let y = call1(name, &[arr(&big, &[big.len()], F32)], &[]);
        assert_eq!(y.to_f64_vec(), [0.0], "{name}: NaN at {pos}");
        big[pos] = 0.5;
    }
    let y = call1(name, &[arr(&big, &[big.len()], F32)], &[]);
    assert_eq!(y.to_f64_vec(), [1.0]);
    let r = call(name, &[arr(&[1.0], &[1], I32)], &[]);
    assert!(matches!(r, Err(Error::DType(ref m)) if m.contains(name) && m.contains("int32")), "{r:?}");
    if multi {
        let a = f64s(&[1.0], &[1]);
        let r = call(name, &[a.clone(), a], &[("num_arrays", int(3))]);
        assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("num_arrays=3") && m.contains("2 array")), "{r:?}");
    }
    assert!(!build(name, &[]).differentiable());
}

pub fn space_depth_p() -> Params {
    vec![("block_size", int(2))]
}

/// Naive depth_to_space / space_to_depth.
fn space_depth_ref(name: &str, x: &NDArray, b: usize) -> (Vec<usize>, Vec<f64>) {
    let s = x.shape().to_vec();
    let v = x.to_f64_vec();
    let (n, c, h, w) = (s[0], s[1], s[2], s[3]);
    if name == "depth_to_space" {
        let c2 = c / (b * b);
        let out_s = vec![n, c2, h * b, w * b];
        let mut out = vec![0.0; numel(&out_s)];
        for (o, slot) in out.iter_mut().enumerate() {
            let [ni, ci, y, xx] = unravel(o, &out_s)[..] else { unreachable!() };
            let src_c = ((y % b) * b + (xx % b)) * c2 + ci;
            *slot = v[ravel(&[ni, src_c, y / b, xx / b], &s)];
        }
        (out_s, out)
    } else {
        let out_s = vec![n, c * b * b, h / b, w / b];
        let mut out = vec![0.0; numel(&out_s)];
        for (o, slot) in out.iter_mut().enumerate() {
            let [ni, co, y, xx] = unravel(o, &out_s)[..] else { unreachable!() };
            let (blk, ci) = (co / c, co % c);
            *slot = v[ravel(&[ni, ci, y * b + blk / b, xx * b + blk % b], &s)];
        }
        (out_s, out)
    }
}

pub fn space_depth(name: &'static str) {
    let to_space = name == "depth_to_space";
    let cases: &[(&[usize], usize)] = if to_space {
        &[(&[1, 12, 2, 2], 2), (&[2, 9, 1, 3], 3), (&[1, 4, 2, 3], 1), (&[0, 8, 2, 2], 2)]
    } else {
        &[(&[1, 3, 4, 4], 2), (&[2, 1, 3, 6], 3), (&[1, 2, 2, 3], 1), (&[0, 2, 2, 2], 2)]
    };
    for &(shape, b) in cases {
        let x = f64s(&(0..numel(shape)).map(|i| i as f64).collect::<Vec<_>>(), shape);
        let (ws, want) = space_depth_ref(name, &x, b);
        for dt in [F64, F32, I32] {
            for (vn, xv) in variants(&x.astype(dt)) {
                let got_ref = space_depth_ref(name, &xv, b).1;
                let y = call1(name, &[xv], &[("block_size", int(b as i64))]);
                check_arr(&format!("{name} {shape:?} b={b} {dt} {vn}"), &y, &ws, dt, &got_ref, 0.0, 0.0);
            }
        }
        // The two ops undo each other.
        let other = if to_space { "space_to_depth" } else { "depth_to_space" };
        let back = call1(other, &[f64s(&want, &ws)], &[("block_size", int(b as i64))]);
        check_arr(&format!("{name} round trip"), &back, shape, F64, &x.to_f64_vec(), 0.0, 0.0);
    }
    let x = f64s(&[0.0; 12], &[1, 3, 2, 2]);
    let bad_block = if to_space { 2 } else { 3 };
    let r = call(name, std::slice::from_ref(&x), &[("block_size", int(bad_block))]);
    let want_msg = if to_space { "multiple of block_size" } else { "multiples of block_size" };
    assert!(
        matches!(r, Err(Error::Shape(ref m)) if m.contains(name) && m.contains(want_msg) && m.contains("(1, 3, 2, 2)")),
        "{r:?}"
    );
    let r = call(name, &[f64s(&[0.0; 12], &[12, 1])], &[("block_size", int(1))]);
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains(name) && m.contains("4-D")), "{r:?}");
    for bad in [0, -2] {
        let r = call(name, std::slice::from_ref(&x), &[("block_size", int(bad))]);
        assert!(matches!(r, Err(Error::Value(ref m)) if m.contains(name) && m.contains("block_size")), "{r:?}");
    }
}

pub fn space_depth_grad(name: &'static str) {
    let mut rng = Rng::new(2005);
    let shape: &[usize] = if name == "depth_to_space" { &[2, 8, 1, 2] } else { &[2, 2, 2, 4] };
    let op = build(name, &space_depth_p());
    check(name, &op, &[rand(&mut rng, shape)], &mut rng, true);
}

pub fn moments_p() -> Params {
    vec![("axes", tuple(&[0]))]
}

fn moments_ref(x: &NDArray, axes: &[usize], keepdims: bool) -> (Vec<usize>, Vec<f64>, Vec<f64>) {
    let s = x.shape().to_vec();
    let v = x.to_f64_vec();
    let kept: Vec<usize> = (0..s.len()).map(|d| if axes.contains(&d) { 1 } else { s[d] }).collect();
    let m = numel(&kept);
    let (mut sum, mut cnt) = (vec![0.0; m], vec![0usize; m]);
    let key = |i: usize| {
        let mut idx = unravel(i, &s);
        for &a in axes {
            idx[a] = 0;
        }
        ravel(&idx, &kept)
    };
    for (i, &xi) in v.iter().enumerate() {
        sum[key(i)] += xi;
        cnt[key(i)] += 1;
    }
    let mean: Vec<f64> = sum.iter().zip(&cnt).map(|(s, &c)| s / c as f64).collect();
    let mut sq = vec![0.0; m];
    for (i, &xi) in v.iter().enumerate() {
        sq[key(i)] += (xi - mean[key(i)]).powi(2);
    }
    let var = sq.iter().zip(&cnt).map(|(s, &c)| s / c as f64).collect();
    let out = if keepdims { kept } else { (0..s.len()).filter(|d| !axes.contains(d)).map(|d| s[d]).collect() };
    (out, mean, var)
}

pub fn moments(name: &'static str) {
    let mut rng = Rng::new(2006);
    let cases: &[(&[usize], &[i64])] =
        &[(&[2, 3, 4], &[1]), (&[2, 3, 4], &[0, 2]), (&[2, 3, 4], &[-1, 0]), (&[5], &[0]), (&[3, 4], &[0, 1])];
    for &(shape, axes) in cases {
        let x = f64s(&rng.vec(numel(shape), -3.0, 5.0), shape);
        let norm: Vec<usize> =
            axes.iter().map(|&a| if a < 0 { (a + shape.len() as i64) as usize } else { a as usize }).collect();
        for keepdims in [false, true] {
            let (os, mean, var) = moments_ref(&x, &norm, keepdims);
            for dt in [F64, F32] {
                for (vn, xv) in variants(&x.astype(dt)) {
                    let outs = call(name, &[xv], &[("axes", tuple(axes)), ("keepdims", boolean(keepdims))]).unwrap();
                    assert_eq!(outs.len(), 2);
                    let (rt, at) = if dt == F64 { (1e-12, 1e-12) } else { (1e-5, 1e-5) };
                    let what = format!("{name} {shape:?} axes={axes:?} keepdims={keepdims} {dt} {vn}");
                    check_arr(&format!("{what} mean"), &outs[0], &os, dt, &mean, rt, at);
                    check_arr(&format!("{what} var"), &outs[1], &os, dt, &var, rt, at);
                }
            }
        }
    }
    let x = f64s(&[0.0; 24], &[2, 3, 4]);
    let r = call(name, std::slice::from_ref(&x), &[]);
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("moments") && m.contains("axes")), "{r:?}");
    let r = call(name, std::slice::from_ref(&x), &[("axes", tuple(&[]))]);
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("moments") && m.contains("axes")), "{r:?}");
    let r = call(name, std::slice::from_ref(&x), &[("axes", tuple(&[1, -2]))]);
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("moments") && m.contains("duplicate")), "{r:?}");
    let r = call(name, &[x], &[("axes", tuple(&[3]))]);
    assert!(r.is_err(), "{r:?}");
}

pub fn moments_grad(name: &'static str) {
    let mut rng = Rng::new(2007);
    for (axes, keepdims) in [(vec![1], false), (vec![0, 2], true), (vec![0, 1, 2], false)] {
        let op = build(name, &[("axes", tuple(&axes)), ("keepdims", boolean(keepdims))]);
        check(&format!("{name} axes={axes:?}"), &op, &[rand(&mut rng, &[2, 3, 2])], &mut rng, true);
    }
}

pub fn group_norm_p() -> Params {
    vec![("num_groups", int(2))]
}

/// Naive GroupNorm: (out, mean, std) with per-group gamma/beta.
fn group_norm_ref(x: &NDArray, gamma: &[f64], beta: &[f64], groups: usize, eps: f64) -> [Vec<f64>; 3] {
    let s = x.shape();
    let v = x.to_f64_vec();
    let per_group = v.len() / (s[0] * groups).max(1);
    let (mut out, mut mean, mut std) = (vec![0.0; v.len()], vec![], vec![]);
    for (k, chunk) in v.chunks(per_group.max(1)).enumerate().take(s[0] * groups) {
        let mu = chunk.iter().sum::<f64>() / chunk.len() as f64;
        let var = chunk.iter().map(|a| (a - mu).powi(2)).sum::<f64>() / chunk.len() as f64;
        let sd = (var + eps).sqrt();
        let gi = k % groups;
        for (j, a) in chunk.iter().enumerate() {
            out[k * per_group + j] = (a - mu) / sd * gamma[gi] + beta[gi];
        }
        mean.push(mu);
        std.push(sd);
    }
    [out, mean, std]
}

pub fn group_norm(name: &'static str) {
    let mut rng = Rng::new(2008);
    for (shape, groups, eps) in
        [(&[2usize, 4, 3][..], 2, 1e-5), (&[3, 6, 2, 2], 3, 1e-3), (&[2, 3, 5], 1, 1e-5), (&[1, 4, 1, 1, 2], 4, 0.1)]
    {
        let x = f64s(&rng.vec(numel(shape), -2.0, 3.0), shape);
        let (gamma, beta) = (rng.vec(groups, 0.5, 1.5), rng.vec(groups, -1.0, 1.0));
        let [out, mean, std] = group_norm_ref(&x, &gamma, &beta, groups, eps);
        for dt in [F64, F32] {
            for (vn, xv) in variants(&x.astype(dt)) {
                let params =
                    [("num_groups", int(groups as i64)), ("eps", float(eps)), ("output_mean_var", boolean(true))];
                let ins = [xv, arr(&gamma, &[groups], dt), arr(&beta, &[groups], dt)];
                let outs = call(name, &ins, &params).unwrap();
                assert_eq!(outs.len(), 3);
                let (rt, at) = if dt == F64 { (1e-10, 1e-10) } else { (1e-4, 1e-4) };
                let what = format!("{name} {shape:?} groups={groups} {dt} {vn}");
                check_arr(&what, &outs[0], shape, dt, &out, rt, at);
                check_arr(&format!("{what} mean"), &outs[1], &[shape[0], groups], dt, &mean, rt, at);
                check_arr(&format!("{what} std"), &outs[2], &[shape[0], groups], dt, &std, rt, at);
                let one = call(name, &ins, &params[..2]).unwrap();
                assert_eq!(one.len(), 1, "{what}: mean/std hidden without output_mean_var");
            }
        }
    }
    let z = |s: &[usize]| f64s(&vec![0.0; numel(s)], s);
    let p = [("num_groups", int(2))];
    let r = call(name, &[z(&[2, 3, 2]), z(&[2]), z(&[2])], &p);
    assert!(
        matches!(r, Err(Error::Shape(ref m)) if m.contains("GroupNorm") && m.contains("num_groups=2") && m.contains("(2, 3, 2)")),
        "{r:?}"
    );
    let r = call(name, &[z(&[2, 4, 2]), z(&[4]), z(&[2])], &p);
    assert!(
        matches!(r, Err(Error::Shape(ref m)) if m.contains("GroupNorm") && m.contains("gamma") && m.contains("(4,)")),
        "{r:?}"
    );
    let r = call(name, &[z(&[2, 4]), z(&[2]), z(&[2])], &p);
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("GroupNorm") && m.contains("3 axes")), "{r:?}");
    let r = call(name, &[z(&[2, 4, 2]), z(&[1]), z(&[1])], &[("num_groups", int(0))]);
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("num_groups")), "{r:?}");
    let r = call(name, &[z(&[2, 4, 2]).astype(I32), z(&[1]).astype(I32), z(&[1]).astype(I32)], &[]);
    assert!(matches!(r, Err(Error::DType(ref m)) if m.contains("GroupNorm")), "{r:?}");
}

pub fn group_norm_grad(name: &'static str) {
    let mut rng = Rng::new(2009);
    for (shape, groups, omv) in [(&[2usize, 4, 3][..], 2, false), (&[2, 2, 2, 2], 1, true)] {
        let x = rand(&mut rng, shape);
        let gamma = f64s(&rng.vec(groups, 0.5, 1.5), &[groups]);
        let beta = f64s(&rng.vec(groups, -1.0, 1.0), &[groups]);
        let op = build(name, &[("num_groups", int(groups as i64)), ("output_mean_var", boolean(omv))]);
        check(&format!("{name} {shape:?}"), &op, &[x, gamma, beta], &mut rng, true);
    }
}

/// Naive SVMOutput loss gradient: rows over all but the last axis, classes on the last.
fn svm_grad_ref(x: &[f64], labels: &[f64], classes: usize, margin: f64, reg: f64, linear: bool) -> Vec<f64> {
    let mut out = vec![0.0; x.len()];
    for (r, &l) in labels.iter().enumerate() {
        for k in 0..classes {
            let v = x[r * classes + k];
            let is_label = k == l.trunc() as usize;
            out[r * classes + k] = match (is_label, linear) {
                (true, false) => {
                    if margin > v {
                        -2.0 * (margin - v)
                    } else {
                        0.0
                    }
                }
                (false, false) => {
                    if margin > -v {
                        2.0 * (margin + v)
                    } else {
                        0.0
                    }
                }
                (true, true) => {
                    if margin > v {
                        -1.0
                    } else {
                        0.0
                    }
                }
                (false, true) => {
                    if margin > -v {
                        1.0
                    } else {
                        0.0
                    }
                }
            } * reg;
        }
    }
    out
}

pub fn svm(name: &'static str) {
    use ferrograd::ops::grad::eval_grad;
    let mut rng = Rng::new(2010);
    for (shape, lshape) in [(&[4usize, 3][..], &[4usize][..]), (&[2, 3, 4], &[2, 3])] {
        let x = f64s(&rng.vec(numel(shape), -2.0, 2.0), shape);
        let classes = shape[shape.len() - 1];
        let labels: Vec<f64> = (0..numel(lshape)).map(|i| (i % classes) as f64 + 0.6).collect();
        for (margin, reg, linear) in [(1.0, 1.0, false), (0.5, 2.0, false), (1.0, 1.0, true), (0.5, 3.0, true)] {
            let params = [
                ("margin", float(margin)),
                ("regularization_coefficient", float(reg)),
                ("use_linear", boolean(linear)),
            ];
            let op = build(name, &params);
            assert!(op.is_loss());
            let l = f64s(&labels, lshape);
            let y = call1(name, &[x.clone(), l.clone()], &params);
            check_arr("SVMOutput forward", &y, shape, F64, &x.to_f64_vec(), 0.0, 0.0);
            // The head gradient is ignored.
            let head = f64s(&vec![5.0; numel(shape)], shape);
            let gs = eval_grad(op.as_ref(), &[x.clone(), l], &[head]).unwrap();
            let want = svm_grad_ref(&x.to_f64_vec(), &labels, classes, margin, reg, linear);
            let what = format!("{name} {shape:?} margin={margin} reg={reg} linear={linear}");
            check_arr(&what, gs[0].as_ref().unwrap(), shape, F64, &want, 1e-12, 1e-12);
            assert!(gs[1].is_none(), "{what}: label gets no gradient");
        }
    }
    let x = f64s(&[0.0; 6], &[2, 3]);
    let r = call(name, &[x.clone(), f64s(&[0.0, 1.0, 2.0], &[3])], &[]);
    assert!(
        matches!(r, Err(Error::Shape(ref m)) if m.contains("SVMOutput") && m.contains("(3,)") && m.contains("(2, 3)")),
        "{r:?}"
    );
    let r = call(name, &[x.clone(), f64s(&[0.0, 3.0], &[2])], &[]);
    assert!(matches!(r, Err(Error::Index(ref m)) if m.contains("SVMOutput") && m.contains("label[1] = 3")), "{r:?}");
    let r = call(name, &[x.astype(I32), f64s(&[0.0, 1.0], &[2])], &[]);
    assert!(matches!(r, Err(Error::DType(ref m)) if m.contains("SVMOutput")), "{r:?}");
}

pub fn svm_grad(name: &'static str) {
    // The loss gradient's own derivative (L2: 2·reg where the hinge is active), by finite
    // differences of the gradient rule; points kept away from the hinge kinks.
    let mut rng = Rng::new(2011);
    let x = f64s(&[0.3, -1.7, 1.9, -0.4, 0.6, 2.6], &[2, 3]);
    let l = arr(&[2.0, 0.0], &[2], I32);
    let op = build(name, &[("margin", float(1.0)), ("regularization_coefficient", float(1.5))]);
    crate::gradcheck::check_second(name, &op, &[x, l], &[f64s(&[1.0; 6], &[2, 3])], &mut rng);
}

pub fn amp_cast(name: &'static str) {
    use ferrograd::DType::{F16, I64};
    let vals = [1.5, -2.25, 70000.0, 0.1];
    let x = f64s(&vals, &[2, 2]);
    for (to, want_dt) in [(F16, F16), (F32, F32), (I32, I32)] {
        let y = call1(name, std::slice::from_ref(&x), &[("dtype", string(to.name()))]);
        let want: Vec<f64> = vals.iter().map(|&v| round_to(v, want_dt)).collect();
        check_arr(&format!("{name} to {to}"), &y, &[2, 2], want_dt, &want, 0.0, 0.0);
    }
    // Integer inputs pass through unchanged (as in MXNet).
    let xi = arr(&[1.0, -2.0], &[2], I64);
    let y = call1(name, &[xi], &[("dtype", string("float16"))]);
    check_arr(&format!("{name} int passes"), &y, &[2], I64, &[1.0, -2.0], 0.0, 0.0);
    let r = call(name, &[x], &[("dtype", string("bfloat17"))]);
    assert!(r.is_err());
}

pub fn amp_cast_grad(name: &'static str) {
    let mut rng = Rng::new(2012);
    let op = build(name, &[("dtype", string("float64"))]);
    check(name, &op, &[rand(&mut rng, &[2, 3])], &mut rng, true);
}

pub fn amp_multicast_p() -> Params {
    vec![("num_outputs", int(1))]
}

pub fn amp_multicast(name: &'static str) {
    use ferrograd::DType::F16;
    let a = arr(&[1.5, 70000.0], &[2], F32);
    let b = arr(&[0.5, -1.0, 2.0], &[3], F16);
    let c = arr(&[3.0], &[1], I32);
    for (narrow, dt) in [(false, F32), (true, F16)] {
        let outs = call(
            name,
            &[a.clone(), b.clone(), c.clone()],
            &[("num_outputs", int(3)), ("cast_narrow", boolean(narrow))],
        )
        .unwrap();
        assert_eq!(outs.len(), 3);
        check_arr("a", &outs[0], &[2], dt, &[1.5, round_to(70000.0, dt)], 0.0, 0.0);
        check_arr("b", &outs[1], &[3], dt, &[0.5, -1.0, 2.0], 0.0, 0.0);
        check_arr("c passes", &outs[2], &[1], I32, &[3.0], 0.0, 0.0);
    }
    let r = call(name, &[a.clone(), b], &[("num_outputs", int(3))]);
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("num_outputs=3") && m.contains("2 array")), "{r:?}");
    let r = call(name, &[a], &[]);
    assert!(r.is_err(), "num_outputs is required: {r:?}");
}

pub fn amp_multicast_grad(name: &'static str) {
    let mut rng = Rng::new(2013);
    let op = build(name, &[("num_outputs", int(2))]);
    check(name, &op, &[rand(&mut rng, &[2, 2]), rand(&mut rng, &[3])], &mut rng, true);
}

pub fn ravel_p() -> Params {
    vec![("shape", tuple(&[7, 6]))]
}

pub fn ravel_index(name: &'static str) {
    let ravel = name == "_ravel_multi_index";
    let shape = [3usize, 4, 5];
    let p = [("shape", tuple(&[3, 4, 5]))];
    let flat: Vec<f64> = vec![0.0, 59.0, 17.0, 33.0, 40.0];
    let multi: Vec<Vec<usize>> = flat.iter().map(|&f| unravel(f as usize, &shape)).collect();
    let rows: Vec<f64> = (0..3).flat_map(|d| multi.iter().map(move |m| m[d] as f64)).collect();
    for dt in [F32, F64, I32, ferrograd::DType::I64] {
        if ravel {
            // Fractions truncate toward zero.
            let frac: Vec<f64> = rows.iter().map(|&v| if dt.is_float() { v + 0.4 } else { v }).collect();
            let y = call1(name, &[arr(&frac, &[3, 5], dt)], &p);
            check_arr(&format!("{name} {dt}"), &y, &[5], dt, &flat, 0.0, 0.0);
        } else {
            let y = call1(name, &[arr(&flat, &[5], dt)], &p);
            check_arr(&format!("{name} {dt}"), &y, &[3, 5], dt, &rows, 0.0, 0.0);
            let y = call1(name, &[arr(&flat[..4], &[2, 2], dt)], &p);
            let want: Vec<f64> = (0..3).flat_map(|d| multi[..4].iter().map(move |m| m[d] as f64)).collect();
            check_arr(&format!("{name} 2-D {dt}"), &y, &[3, 2, 2], dt, &want, 0.0, 0.0);
        }
    }
    if ravel {
        let r = call(name, &[f64s(&[1.0, 2.0, 3.0, 4.0], &[2, 2])], &p);
        assert!(
            matches!(r, Err(Error::Shape(ref m)) if m.contains("ravel_multi_index") && m.contains("3 rows")),
            "{r:?}"
        );
        let r = call(name, &[f64s(&[1.0, 4.0, 0.0], &[3, 1])], &p);
        assert!(matches!(r, Err(Error::Index(ref m)) if m.contains("index 4 on axis 1")), "{r:?}");
        let r = call(name, &[f64s(&[-1.0, 0.0, 0.0], &[3, 1])], &p);
        assert!(matches!(r, Err(Error::Index(_))), "{r:?}");
    } else {
        let r = call(name, &[f64s(&[60.0], &[1])], &p);
        assert!(matches!(r, Err(Error::Index(ref m)) if m.contains("unravel_index") && m.contains("60")), "{r:?}");
    }
    let r = call(name, &[f64s(&[1.0], &[1])], &[]);
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("shape")), "{r:?}");
    assert!(!build(name, &p).differentiable());
}

pub fn im2col_p() -> Params {
    vec![("kernel", tuple(&[2, 2]))]
}

pub fn col2im_p() -> Params {
    vec![("kernel", tuple(&[2, 2])), ("output_size", tuple(&[3, 3]))]
}

/// Naive im2col over any number of spatial axes (the column array as f64s).
fn im2col_ref(x: &NDArray, k: &[usize], s: &[usize], d: &[usize], p: &[usize]) -> (Vec<usize>, Vec<f64>) {
    let shape = x.shape().to_vec();
    let v = x.to_f64_vec();
    let nd = k.len();
    let img = &shape[2..];
    let out: Vec<usize> = (0..nd).map(|a| (img[a] + 2 * p[a] - d[a] * (k[a] - 1) - 1) / s[a] + 1).collect();
    let (kk, l) = (numel(k), numel(&out));
    let cols = vec![shape[0], shape[1] * kk, l];
    let mut res = vec![0.0; numel(&cols)];
    for (i, slot) in res.iter_mut().enumerate() {
        let [n, row, o] = unravel(i, &cols)[..] else { unreachable!() };
        let (c, kpos) = (row / kk, unravel(row % kk, k));
        let opos = unravel(o, &out);
        let mut idx = vec![n, c];
        let mut ok = true;
        for (a, &size) in img.iter().enumerate().take(nd) {
            let at = (opos[a] * s[a] + kpos[a] * d[a]) as i64 - p[a] as i64;
            ok &= at >= 0 && (at as usize) < size;
            idx.push(at.max(0) as usize);
        }
        if ok {
            *slot = v[ravel(&idx, &shape)];
        }
    }
    (cols, res)
}

type Geometry = (&'static [usize], &'static [usize], &'static [usize], &'static [usize], &'static [usize]);

const IM2COL_CASES: &[Geometry] = &[
    (&[2, 2, 3, 4], &[2, 2], &[1, 1], &[1, 1], &[0, 0]),
    (&[2, 2, 3, 4], &[2, 2], &[1, 2], &[2, 1], &[1, 0]),
    (&[1, 3, 7], &[3], &[2], &[1], &[1]),
    (&[1, 2, 3, 2, 4], &[2, 1, 2], &[1, 1, 2], &[1, 1, 1], &[0, 1, 1]),
];

fn geom_params(k: &[usize], s: &[usize], d: &[usize], p: &[usize]) -> Params {
    let t = |v: &[usize]| tuple(&v.iter().map(|&x| x as i64).collect::<Vec<_>>());
    vec![("kernel", t(k)), ("stride", t(s)), ("dilate", t(d)), ("pad", t(p))]
}

pub fn im2col(name: &'static str) {
    for &(shape, k, s, d, p) in IM2COL_CASES {
        let x = f64s(&(0..numel(shape)).map(|i| i as f64 + 1.0).collect::<Vec<_>>(), shape);
        let (cols, want) = im2col_ref(&x, k, s, d, p);
        for dt in [F64, F32] {
            if name == "im2col" {
                for (vn, xv) in variants(&x.astype(dt)) {
                    let y = call1(name, &[xv], &geom_params(k, s, d, p));
                    check_arr(&format!("{name} {shape:?} k={k:?} {dt} {vn}"), &y, &cols, dt, &want, 0.0, 0.0);
                }
            } else {
                // col2im is im2col's adjoint: <im2col(x), c> == <x, col2im(c)>.
                let c: Vec<f64> = (0..numel(&cols)).map(|i| ((i * 7) % 11) as f64 - 5.0).collect();
                let mut params = geom_params(k, s, d, p);
                params.push(("output_size", tuple(&shape[2..].iter().map(|&v| v as i64).collect::<Vec<_>>())));
                let y = call1(name, &[arr(&c, &cols, dt)], &params);
                assert_eq!(y.shape(), shape);
                let lhs: f64 = want.iter().zip(&c).map(|(a, b)| a * b).sum();
                let rhs: f64 = x.to_f64_vec().iter().zip(y.to_f64_vec()).map(|(a, b)| a * b).sum();
                assert!(close(lhs, rhs, 1e-6, 1e-6), "{name} {shape:?} {dt}: adjoint {lhs} vs {rhs}");
            }
        }
    }
    let x = f64s(&[0.0; 24], &[2, 2, 3, 2]);
    if name == "im2col" {
        let r = call(name, std::slice::from_ref(&x), &[("kernel", tuple(&[4, 1]))]);
        assert!(
            matches!(r, Err(Error::Shape(ref m)) if m.contains("im2col") && m.contains("larger than the padded image")),
            "{r:?}"
        );
        let r = call(name, std::slice::from_ref(&x), &[("kernel", tuple(&[2]))]);
        assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("im2col") && m.contains("3 axes")), "{r:?}");
        let r = call(name, std::slice::from_ref(&x), &[("kernel", tuple(&[2, 2])), ("stride", tuple(&[0, 1]))]);
        assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("stride")), "{r:?}");
        let r = call(name, &[x.astype(I32)], &[("kernel", tuple(&[2, 2]))]);
        assert!(matches!(r, Err(Error::DType(_))), "{r:?}");
    } else {
        let r =
            call(name, &[f64s(&[0.0; 48], &[2, 8, 3])], &[("kernel", tuple(&[2, 2])), ("output_size", tuple(&[3, 4]))]);
        assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("col2im") && m.contains("(2, 8, 3)")), "{r:?}");
    }
}

pub fn im2col_grad(name: &'static str) {
    let mut rng = Rng::new(2014);
    let &(shape, k, s, d, p) = &IM2COL_CASES[1];
    let x = rand(&mut rng, shape);
    if name == "im2col" {
        let op = build(name, &geom_params(k, s, d, p));
        check(name, &op, &[x], &mut rng, true);
    } else {
        let (cols, _) = im2col_ref(&x, k, s, d, p);
        let mut params = geom_params(k, s, d, p);
        params.push(("output_size", tuple(&[3, 4])));
        let op = build(name, &params);
        check(name, &op, &[rand(&mut rng, &cols)], &mut rng, true);
    }
}

pub fn histogram(name: &'static str) {
    use ferrograd::DType::I64;
    let d = [0.0, 1.0, 1.5, 2.0, 3.0, 3.0, 5.0, -1.0, 7.0, f64::NAN];
    for dt in [F32, F64] {
        let x = arr(&d, &[2, 5], dt);
        let outs =
            call(name, std::slice::from_ref(&x), &[("bin_cnt", int(3)), ("range", AttrValue::Str("(0, 3)".into()))])
                .unwrap();
        check_arr("uniform counts", &outs[0], &[3], I64, &[1.0, 2.0, 3.0], 0.0, 0.0);
        check_arr("uniform edges", &outs[1], &[4], dt, &[0.0, 1.0, 2.0, 3.0], 0.0, 0.0);
        let edges = arr(&[0.0, 1.0, 2.5, 7.0], &[4], dt);
        let outs = call(name, &[x.clone(), edges], &[]).unwrap();
        check_arr("edge counts", &outs[0], &[3], I64, &[1.0, 3.0, 4.0], 0.0, 0.0);
        check_arr("edges", &outs[1], &[4], dt, &[0.0, 1.0, 2.5, 7.0], 0.0, 0.0);
    }
    // An empty range widens by half a unit each side (as NumPy).
    let outs =
        call(name, &[f64s(&[2.0, 2.0], &[2])], &[("bin_cnt", int(2)), ("range", AttrValue::Str("(2, 2)".into()))])
            .unwrap();
    check_arr("empty range", &outs[0], &[2], I64, &[0.0, 2.0], 0.0, 0.0);
    let x = f64s(&d[..9], &[9]);
    let r = call(name, &[x.clone(), f64s(&[3.0, 1.0, 5.0], &[3])], &[]);
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("_histogram") && m.contains("monotonically")), "{r:?}");
    let r = call(name, std::slice::from_ref(&x), &[("bin_cnt", int(3))]);
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("together")), "{r:?}");
    let r = call(name, std::slice::from_ref(&x), &[("bin_cnt", int(3)), ("range", AttrValue::Str("(4, 1)".into()))]);
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("lower <= upper")), "{r:?}");
    let r = call(name, &[x, f64s(&[1.0], &[1])], &[]);
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("at least 2 edges")), "{r:?}");
    assert!(!build(name, &[]).differentiable());
}
