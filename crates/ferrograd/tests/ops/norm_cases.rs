//! Normalisation layers against naive float64 references: outputs, statistics outputs, in-place
//! moving-statistics updates, gradients (training and prediction) to second order, errors.

use std::sync::Arc;

use ferrograd::ops::{self, Ctx, Grad, Op, OpRef, Saves, Val};
use ferrograd::DType::{F32, F64};
use ferrograd::{Error, Meta, NDArray, Result};

use crate::common::*;
use crate::gradcheck::{build, check};

struct BnRef {
    out: Vec<f64>,
    mean: Vec<f64>,
    var: Vec<f64>,
    mm: Vec<f64>,
    mv: Vec<f64>,
}

#[allow(clippy::too_many_arguments)]
fn bn_ref(
    x: &NDArray,
    gamma: &[f64],
    beta: &[f64],
    mm: &[f64],
    mv: &[f64],
    axis: usize,
    train: bool,
    fix_gamma: bool,
) -> BnRef {
    let s = x.shape();
    let c = s[axis];
    let xv = x.to_f64_vec();
    let ch = |i: usize| unravel(i, s)[axis];
    let (mut mean, mut var) = (mm.to_vec(), mv.to_vec());
    let (mut nmm, mut nmv) = (mm.to_vec(), mv.to_vec());
    if train {
        let m = (x.size() / c.max(1)).max(1) as f64;
        mean = (0..c).map(|k| (0..x.size()).filter(|&i| ch(i) == k).map(|i| xv[i]).sum::<f64>() / m).collect();
        var = (0..c)
            .map(|k| (0..x.size()).filter(|&i| ch(i) == k).map(|i| (xv[i] - mean[k]).powi(2)).sum::<f64>() / m)
            .collect();
        let mom = 0.9_f32 as f64; // MXNet's momentum is a float32 parameter
        for k in 0..c {
            nmm[k] = mm[k] * mom + mean[k] * (1.0 - mom);
            nmv[k] = mv[k] * mom + var[k] * (1.0 - mom);
        }
    }
    let eps = 1e-3_f32 as f64; // MXNet's default: 1e-3 as a float32
    let out = (0..x.size())
        .map(|i| {
            let k = ch(i);
            let gm = if fix_gamma { 1.0 } else { gamma[k] };
            (xv[i] - mean[k]) / (var[k] + eps).sqrt() * gm + beta[k]
        })
        .collect();
    BnRef { out, mean, var, mm: nmm, mv: nmv }
}

fn bn_params(axis: i64, fix_gamma: bool, global: bool) -> Params {
    vec![
        ("axis", int(axis)),
        ("fix_gamma", boolean(fix_gamma)),
        ("use_global_stats", boolean(global)),
        ("output_mean_var", boolean(true)),
    ]
}

pub fn batch_norm(name: &'static str) {
    let mut rng = Rng::new(31);
    let cases: &[(&[usize], i64)] =
        &[(&[4, 3, 2, 3], 1), (&[5, 3], -1), (&[3, 4], 0), (&[2, 3, 5], 1), (&[0, 3, 2], 1)];
    for &(shape, axis) in cases {
        let ax = if axis < 0 { (shape.len() as i64 + axis) as usize } else { axis as usize };
        let c = shape[ax];
        let x = f64s(&rng.vec(numel(shape), -2.0, 2.0), shape);
        let (gamma, beta) = (rng.vec(c, 0.5, 1.5), rng.vec(c, -1.0, 1.0));
        let (mm, mv) = (rng.vec(c, -0.5, 0.5), rng.vec(c, 0.5, 1.5));
        for dt in [F64, F32] {
            for (train, fix_gamma, global) in
                [(true, false, false), (true, true, false), (false, false, false), (true, false, true)]
            {
                for (vname, xv) in variants(&x.astype(dt)) {
                    let op = build(name, &bn_params(axis, fix_gamma, global));
                    assert_eq!(op.num_visible_outputs(), 3);
                    let (amm, amv) = (arr(&mm, &[c], dt), arr(&mv, &[c], dt));
                    let ins = [xv, arr(&gamma, &[c], dt), arr(&beta, &[c], dt), amm.clone(), amv.clone()];
                    let outs = ops::run(op.as_ref(), &Ctx { is_train: train }, &ins).unwrap();
                    let uses_batch = train && !global;
                    let r = bn_ref(&x, &gamma, &beta, &mm, &mv, ax, uses_batch, fix_gamma);
                    let what = format!(
                        "{name} {shape:?} axis={axis} train={train} fix_gamma={fix_gamma} global={global} {dt} {vname}"
                    );
                    let (rtol, atol) = if dt == F64 { (1e-10, 1e-10) } else { (1e-4, 1e-4) };
                    check_arr(&what, &outs[0], shape, dt, &r.out, rtol, atol);
                    check_arr(&format!("{what} mean"), &outs[1], &[c], dt, &r.mean, rtol, atol);
                    // The visible third output is MXNet's inverse std; the variance is hidden.
                    let eps = 1e-3_f32 as f64;
                    let inv_std: Vec<f64> = r.var.iter().map(|&v| 1.0 / (v + eps).sqrt()).collect();
                    check_arr(&format!("{what} inv_std"), &outs[2], &[c], dt, &inv_std, rtol, atol);
                    assert_eq!(outs[3].to_f64_vec(), vec![if uses_batch { 1.0 } else { 0.0 }], "{what} flag");
                    check_arr(&format!("{what} var"), &outs[4], &[c], dt, &r.var, rtol, atol);
                    // Moving statistics: the forward leaves them alone; the backward's update
                    // folds in the batch statistics only when the forward used them.
                    check_arr(&format!("{what} moving_mean after forward"), &amm, &[c], dt, &mm, rtol, atol);
                    check_arr(&format!("{what} moving_var after forward"), &amv, &[c], dt, &mv, rtol, atol);
                    let updated = op.updated_by_backward();
                    assert_eq!(updated, if global { &[][..] } else { &[3, 4][..] }, "{what}");
                    let mut targets: Vec<NDArray> = updated.iter().map(|&i| ins[i].clone()).collect();
                    op.update_on_backward(&mut targets, &outs).unwrap();
                    check_arr(&format!("{what} moving_mean"), &amm, &[c], dt, &r.mm, rtol, atol);
                    check_arr(&format!("{what} moving_var"), &amv, &[c], dt, &r.mv, rtol, atol);
                }
            }
        }
    }
    let op = build(name, &[]);
    assert_eq!(op.num_visible_outputs(), 1);
    assert_eq!(op.aux_names(), ["moving_mean", "moving_var"]);
}

/// BatchNorm with its moving statistics held inside and a fixed mode, so finite differences
/// see a function of (data, gamma, beta) only (aux inputs get no gradient by design).
#[derive(Debug)]
struct BnWrap {
    inner: OpRef,
    train: bool,
    mm: NDArray,
    mv: NDArray,
}

impl Op for BnWrap {
    fn name(&self) -> &'static str {
        "_test_batch_norm"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["data", "gamma", "beta"]
    }
    fn num_outputs(&self) -> usize {
        5
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let mut m = inputs.to_vec();
        m.extend([self.mm.meta(), self.mv.meta()]);
        self.inner.infer(&m)
    }
    fn forward(&self, _c: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let mut ins = inputs.to_vec();
        ins.extend([self.mm.copy(), self.mv.copy()]);
        self.inner.forward(&Ctx { is_train: self.train }, &ins, outputs)
    }
    fn saves(&self) -> Saves {
        self.inner.saves()
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        // The rule never reads the aux inputs: pass placeholders.
        let ins = [inputs[0], inputs[1], inputs[2], inputs[1], inputs[1]];
        // No caller gives the hidden variance output a head, so the rule does not read one; the
        // finite differences here do: it reaches the rule through the inverse std s (output 2),
        // as var = s⁻² - eps gives d var = -2 s⁻³ d s.
        let s3 = g.mul(outputs[2], outputs[2])?;
        let s3 = g.mul(s3, outputs[2])?;
        let t = g.div(out_grads[4], s3)?;
        let t = g.mul_scalar(t, -2.0)?;
        let mut ogs = out_grads.to_vec();
        ogs[2] = g.add(out_grads[2], t)?;
        let mut v = self.inner.grad(g, &ins, outputs, &ogs)?;
        v.truncate(3);
        Ok(v)
    }
}

pub fn batch_norm_grad(name: &'static str) {
    let mut rng = Rng::new(32);
    let cases: &[(&[usize], i64)] = &[(&[3, 2, 2], 1), (&[4, 3], -1), (&[2, 2, 1, 3], 1)];
    for &(shape, axis) in cases {
        let ax = if axis < 0 { (shape.len() as i64 + axis) as usize } else { axis as usize };
        let c = shape[ax];
        for (train, fix_gamma) in [(true, false), (true, true), (false, false)] {
            let op: OpRef = Arc::new(BnWrap {
                inner: build(name, &bn_params(axis, fix_gamma, false)),
                train,
                mm: f64s(&rng.vec(c, -0.5, 0.5), &[c]),
                mv: f64s(&rng.vec(c, 0.5, 1.5), &[c]),
            });
            let ins = [
                f64s(&rng.vec(numel(shape), -2.0, 2.0), shape),
                f64s(&rng.vec(c, 0.5, 1.5), &[c]),
                f64s(&rng.vec(c, -1.0, 1.0), &[c]),
            ];
            check(
                &format!("{name} {shape:?} axis={axis} train={train} fix_gamma={fix_gamma}"),
                &op,
                &ins,
                &mut rng,
                true,
            );
        }
    }
}

#[test]
fn batch_norm_errors() {
    let z = |s: &[usize]| NDArray::zeros(s, F32);
    let r = ferrograd::call("BatchNorm", &[z(&[2, 3, 4]), z(&[3]), z(&[4]), z(&[3]), z(&[3])], &[]);
    assert!(
        matches!(r, Err(Error::Shape(ref m)) if m.contains("BatchNorm") && m.contains("beta") && m.contains("(4,)") && m.contains("(2, 3, 4)")),
        "{r:?}"
    );
    let r = ferrograd::call("BatchNorm", &[z(&[2, 3]), z(&[3]), z(&[3]), z(&[3]), z(&[3])], &[("axis", int(2))]);
    assert!(r.is_err(), "{r:?}");
    let r = ferrograd::call("BatchNorm", &[z(&[2, 3]), z(&[3]), z(&[3])], &[]);
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("moving_mean")), "{r:?}");
    let r = ferrograd::call("BatchNorm", &[z(&[2, 3]), z(&[3]), z(&[3]), z(&[3]), z(&[3])], &[("eps", float(-1.0))]);
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("eps")), "{r:?}");
}

/// Inputs of `_backward_BatchNorm` for data of `shape` (channel axis 1).
fn bn_bw_inputs(rng: &mut Rng, shape: &[usize], t: f64) -> Vec<NDArray> {
    let c = shape[1];
    let r = |rng: &mut Rng, n: usize, lo: f64, hi: f64| f64s(&rng.vec(n, lo, hi), &[n]);
    vec![
        f64s(&rng.signed(numel(shape), 0.2, 1.5), shape),
        f64s(&rng.vec(numel(shape), -2.0, 2.0), shape),
        r(rng, c, 0.5, 1.5),
        r(rng, c, -0.5, 0.5),
        r(rng, c, 0.5, 1.5),
        f64s(&[t], &[1]),
        r(rng, c, -1.0, 1.0),
        r(rng, c, -1.0, 1.0),
    ]
}

pub fn batch_norm_backward(name: &'static str) {
    let mut rng = Rng::new(33);
    for (shape, t, fix_gamma) in
        [(&[3, 2, 4][..], 1.0, false), (&[2, 3, 2, 2][..], 0.0, false), (&[4, 2][..], 1.0, true)]
    {
        let ins = bn_bw_inputs(&mut rng, shape, t);
        let v: Vec<Vec<f64>> = ins.iter().map(|a| a.to_f64_vec()).collect();
        let (c, eps) = (shape[1], 1e-3_f32 as f64);
        let ch = |i: usize| unravel(i, shape)[1];
        let n = numel(shape);
        let m = (n / c) as f64;
        let gam = |k: usize| if fix_gamma { 1.0 } else { v[2][k] };
        let istd: Vec<f64> = (0..c).map(|k| 1.0 / (v[4][k] + eps).sqrt()).collect();
        let xhat = |i: usize| (v[1][i] - v[3][ch(i)]) * istd[ch(i)];
        let mut s1 = vec![0.0; c];
        let mut s2 = vec![0.0; c];
        for i in 0..n {
            s1[ch(i)] += v[0][i];
            s2[ch(i)] += v[0][i] * xhat(i);
        }
        let dx: Vec<f64> = (0..n)
            .map(|i| {
                let k = ch(i);
                let gg = v[0][i] * gam(k);
                istd[k] * (gg - t * gam(k) * (s1[k] + xhat(i) * s2[k]) / m)
                    + t * (v[6][k] + 2.0 * v[7][k] * (v[1][i] - v[3][k])) / m
            })
            .collect();
        let dg: Vec<f64> = if fix_gamma { vec![0.0; c] } else { s2.clone() };
        let mut p = vec![("fix_gamma", boolean(fix_gamma))];
        p.push(("eps", float(eps)));
        for dt in [F64, F32] {
            let xs: Vec<NDArray> = ins.iter().map(|a| a.astype(dt)).collect();
            let outs = ferrograd::call(name, &xs, &p).unwrap();
            let (rtol, atol) = if dt == F64 { (1e-10, 1e-10) } else { (1e-4, 1e-4) };
            check_arr(&format!("{name} {shape:?} dx {dt}"), &outs[0], shape, dt, &dx, rtol, atol);
            check_arr(&format!("{name} {shape:?} dgamma {dt}"), &outs[1], &[c], dt, &dg, rtol, atol);
            check_arr(&format!("{name} {shape:?} dbeta {dt}"), &outs[2], &[c], dt, &s1, rtol, atol);
        }
    }
}

pub fn batch_norm_backward_grad(name: &'static str) {
    let mut rng = Rng::new(34);
    for (shape, fix_gamma) in [(&[3, 2, 2][..], false), (&[2, 2][..], true)] {
        let ins = bn_bw_inputs(&mut rng, shape, 1.0);
        let op = build(name, &[("fix_gamma", boolean(fix_gamma))]);
        check(&format!("{name} {shape:?} fix_gamma={fix_gamma}"), &op, &ins, &mut rng, true);
    }
}

/// Naive LayerNorm/InstanceNorm: (out, mean, std) with statistics over `stat_axes`, parameters
/// indexed along `param_axis`.
fn ln_ref(
    x: &NDArray,
    gamma: &[f64],
    beta: &[f64],
    stat_axes: &[usize],
    param_axis: usize,
    eps: f64,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let s = x.shape();
    let xv = x.to_f64_vec();
    let st: Vec<usize> = s.iter().enumerate().map(|(d, &n)| if stat_axes.contains(&d) { 1 } else { n }).collect();
    let key = |i: usize| {
        let mut idx = unravel(i, s);
        stat_axes.iter().for_each(|&d| idx[d] = 0);
        ravel(&idx, &st)
    };
    let ns = numel(&st);
    let (mut sum, mut cnt) = (vec![0.0; ns], vec![0.0; ns]);
    for (i, &v) in xv.iter().enumerate() {
        sum[key(i)] += v;
        cnt[key(i)] += 1.0;
    }
    let mean: Vec<f64> = sum.iter().zip(&cnt).map(|(s, c)| s / c).collect();
    let mut var = vec![0.0; ns];
    for (i, &v) in xv.iter().enumerate() {
        var[key(i)] += (v - mean[key(i)]).powi(2);
    }
    let std: Vec<f64> = var.iter().zip(&cnt).map(|(v, c)| (v / c + eps).sqrt()).collect();
    let out = (0..xv.len())
        .map(|i| {
            let p = unravel(i, s)[param_axis];
            (xv[i] - mean[key(i)]) / std[key(i)] * gamma[p] + beta[p]
        })
        .collect();
    (out, mean, std)
}

pub fn layer_norm(name: &'static str) {
    let mut rng = Rng::new(35);
    let cases: &[(&[usize], i64)] = &[(&[3, 5], -1), (&[2, 3, 4], 1), (&[4, 2, 3], 0), (&[0, 4], -1), (&[6], 0)];
    for &(shape, axis) in cases {
        let ax = if axis < 0 { (shape.len() as i64 + axis) as usize } else { axis as usize };
        let p = shape[ax];
        let x = f64s(&rng.vec(numel(shape), -2.0, 2.0), shape);
        let (gamma, beta) = (rng.vec(p, 0.5, 1.5), rng.vec(p, -1.0, 1.0));
        let (out, mean, std) = ln_ref(&x, &gamma, &beta, &[ax], ax, 1e-5);
        let mut st = shape.to_vec();
        st[ax] = 1;
        for dt in [F64, F32] {
            for (vname, xv) in variants(&x.astype(dt)) {
                let params = [("axis", int(axis)), ("output_mean_var", boolean(true))];
                let outs = ferrograd::call(name, &[xv, arr(&gamma, &[p], dt), arr(&beta, &[p], dt)], &params).unwrap();
                let what = format!("{name} {shape:?} axis={axis} {dt} {vname}");
                let (rtol, atol) = if dt == F64 { (1e-10, 1e-10) } else { (1e-4, 1e-4) };
                check_arr(&what, &outs[0], shape, dt, &out, rtol, atol);
                check_arr(&format!("{what} mean"), &outs[1], &st, dt, &mean, rtol, atol);
                check_arr(&format!("{what} std"), &outs[2], &st, dt, &std, rtol, atol);
            }
        }
    }
}

pub fn layer_norm_grad(name: &'static str) {
    let mut rng = Rng::new(36);
    let cases: &[(&[usize], i64)] = &[(&[3, 4], -1), (&[2, 3, 2], 1)];
    for &(shape, axis) in cases {
        let ax = if axis < 0 { (shape.len() as i64 + axis) as usize } else { axis as usize };
        let p = shape[ax];
        let op = build(name, &[("axis", int(axis)), ("output_mean_var", boolean(true))]);
        let ins = [
            f64s(&rng.vec(numel(shape), -2.0, 2.0), shape),
            f64s(&rng.vec(p, 0.5, 1.5), &[p]),
            f64s(&rng.vec(p, -1.0, 1.0), &[p]),
        ];
        check(&format!("{name} {shape:?} axis={axis}"), &op, &ins, &mut rng, true);
    }
}

pub fn instance_norm(name: &'static str) {
    let mut rng = Rng::new(37);
    for shape in [&[2, 3, 4][..], &[2, 2, 3, 2], &[0, 2, 3], &[1, 2, 2, 2, 2]] {
        let c = shape[1];
        let x = f64s(&rng.vec(numel(shape), -2.0, 2.0), shape);
        let (gamma, beta) = (rng.vec(c, 0.5, 1.5), rng.vec(c, -1.0, 1.0));
        let axes: Vec<usize> = (2..shape.len()).collect();
        let (out, _, _) = ln_ref(&x, &gamma, &beta, &axes, 1, 1e-3);
        for dt in [F64, F32] {
            for (vname, xv) in variants(&x.astype(dt)) {
                let op = build(name, &[]);
                assert_eq!(op.num_visible_outputs(), 1);
                let y = call1(name, &[xv, arr(&gamma, &[c], dt), arr(&beta, &[c], dt)], &[]);
                let (rtol, atol) = if dt == F64 { (1e-10, 1e-10) } else { (1e-4, 1e-4) };
                check_arr(&format!("{name} {shape:?} {dt} {vname}"), &y, shape, dt, &out, rtol, atol);
            }
        }
    }
}

pub fn instance_norm_grad(name: &'static str) {
    let mut rng = Rng::new(38);
    for shape in [&[2, 2, 3][..], &[1, 2, 2, 2]] {
        let c = shape[1];
        let op = build(name, &[("eps", float(1e-3))]);
        let ins = [
            f64s(&rng.vec(numel(shape), -2.0, 2.0), shape),
            f64s(&rng.vec(c, 0.5, 1.5), &[c]),
            f64s(&rng.vec(c, -1.0, 1.0), &[c]),
        ];
        check(&format!("{name} {shape:?}"), &op, &ins, &mut rng, true);
    }
}

#[test]
fn layer_and_instance_norm_errors() {
    let z = |s: &[usize]| NDArray::zeros(s, F32);
    let r = ferrograd::call("LayerNorm", &[z(&[2, 3]), z(&[2]), z(&[3])], &[]);
    assert!(
        matches!(r, Err(Error::Shape(ref m)) if m.contains("LayerNorm") && m.contains("gamma") && m.contains("(2,)")),
        "{r:?}"
    );
    let r = ferrograd::call("InstanceNorm", &[z(&[2, 3]), z(&[3]), z(&[3])], &[]);
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("InstanceNorm") && m.contains("(2, 3)")), "{r:?}");
    let r = ferrograd::call("LayerNorm", &[z(&[2, 3]), z(&[3]), z(&[3])], &[("axis", int(5))]);
    assert!(r.is_err(), "{r:?}");
}

fn l2_ref(x: &NDArray, axes: &[usize], eps: f64) -> Vec<f64> {
    let s = x.shape();
    let xv = x.to_f64_vec();
    let st: Vec<usize> = s.iter().enumerate().map(|(d, &n)| if axes.contains(&d) { 1 } else { n }).collect();
    let key = |i: usize| {
        let mut idx = unravel(i, s);
        axes.iter().for_each(|&d| idx[d] = 0);
        ravel(&idx, &st)
    };
    let mut ss = vec![0.0; numel(&st)];
    for (i, &v) in xv.iter().enumerate() {
        ss[key(i)] += v * v;
    }
    xv.iter().enumerate().map(|(i, &v)| v / (ss[key(i)] + eps).sqrt()).collect()
}

pub fn l2_normalization(name: &'static str) {
    let mut rng = Rng::new(39);
    for (shape, mode) in [
        (&[3, 4][..], "instance"),
        (&[2, 3, 2, 2][..], "instance"),
        (&[2, 3, 4][..], "channel"),
        (&[2, 3, 2, 2][..], "spatial"),
        (&[0, 3, 2][..], "channel"),
    ] {
        let axes: Vec<usize> = match mode {
            "instance" => (1..shape.len()).collect(),
            "channel" => vec![1],
            _ => (2..shape.len()).collect(),
        };
        let x = f64s(&rng.vec(numel(shape), -2.0, 2.0), shape);
        let want = l2_ref(&x, &axes, 1e-10);
        for dt in [F64, F32] {
            for (vname, xv) in variants(&x.astype(dt)) {
                let y = call1(name, &[xv], &[("mode", string(mode))]);
                let (rtol, atol) = if dt == F64 { (1e-12, 1e-12) } else { (1e-5, 1e-6) };
                check_arr(&format!("{name} {shape:?} {mode} {dt} {vname}"), &y, shape, dt, &want, rtol, atol);
            }
        }
    }
    let r = ferrograd::call(name, &[NDArray::zeros(&[2, 3], F32)], &[("mode", string("spatial"))]);
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("L2Normalization") && m.contains("(2, 3)")), "{r:?}");
    let r = ferrograd::call(name, &[NDArray::zeros(&[2, 3], F32)], &[("mode", string("pixel"))]);
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("pixel")), "{r:?}");
}

pub fn l2_normalization_grad(name: &'static str) {
    let mut rng = Rng::new(40);
    for (shape, mode) in [(&[2, 3][..], "instance"), (&[2, 2, 3][..], "channel"), (&[1, 2, 2, 2][..], "spatial")] {
        let op = build(name, &[("mode", string(mode))]);
        let x = f64s(&rng.signed(numel(shape), 0.3, 2.0), shape);
        check(&format!("{name} {shape:?} {mode}"), &op, &[x], &mut rng, true);
    }
}
