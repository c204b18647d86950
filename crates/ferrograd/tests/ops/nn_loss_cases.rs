//! Loss ops (MXNet backward semantics, spec §3.4), BlockGrad and Dropout.
//!
//! A loss op's gradient is not the derivative of its output, so finite differences of the
//! forward do not apply: the rule is checked against the spec's formula with random (ignored)
//! head gradients, through the tape, and at second order (the rule's own ops differentiate it
//! correctly, by finite differences of the rule).

use ferrograd::ops::grad::eval_grad;
use ferrograd::ops::{self, AttrValue, Ctx, OpRef};
use ferrograd::DType::{F32, F64};
use ferrograd::NDArray;

use crate::common::*;
use crate::gradcheck::{build, check, check_second, check_tape};
use crate::nn_cases::softmax_ref;

/// Checks a loss op's rule: data gradient == `want` for a random head gradient (ignored unless
/// `uses_head`, in which case `want` is multiplied by it), tape consistency, second order.
fn check_loss(what: &str, op: &OpRef, inputs: &[NDArray], want: &[f64], uses_head: bool, rng: &mut Rng) {
    let outs = ops::run(op.as_ref(), &Ctx::default(), inputs).unwrap();
    let heads: Vec<NDArray> = outs.iter().map(|o| f64s(&rng.signed(o.size(), 0.5, 2.0), o.shape())).collect();
    let gs = eval_grad(op.as_ref(), inputs, &heads).unwrap_or_else(|e| panic!("{what}: {e}"));
    let got = gs[0].as_ref().unwrap_or_else(|| panic!("{what}: no data gradient"));
    let want: Vec<f64> = if uses_head {
        let h = heads[0].to_f64_vec();
        want.iter().enumerate().map(|(i, w)| w * if h.len() == 1 { h[0] } else { h[i] }).collect()
    } else {
        want.to_vec()
    };
    check_arr(what, got, inputs[0].shape(), F64, &want, 1e-10, 1e-12);
    for (i, g) in gs.iter().enumerate().skip(1) {
        assert!(g.is_none(), "{what}: input {i} (label) got a gradient");
    }
    let full: Vec<NDArray> =
        gs.iter().zip(inputs).map(|(g, x)| g.clone().unwrap_or_else(|| NDArray::zeros(x.shape(), x.dtype()))).collect();
    check_tape(what, op, inputs, &heads, &full);
    check_second(what, op, inputs, &heads, rng);
}

/// The spec's SoftmaxOutput gradient for index labels over `(outer, k, inner)`.
#[allow(clippy::too_many_arguments)]
fn sm_out_ref(
    p: &[f64],
    labels: &[f64],
    (outer, k, inner): (usize, usize, usize),
    scale: f64,
    norm: &str,
    multi: bool,
    use_ignore: bool,
    ignore: f64,
    alpha: f64,
) -> Vec<f64> {
    let valid = labels.iter().filter(|&&l| l.trunc() != ignore).count().max(1) as f64;
    let div = match norm {
        "batch" => (outer * inner) as f64,
        "valid" => valid,
        _ if multi => inner as f64,
        _ => 1.0,
    };
    let mut out = vec![0.0; p.len()];
    for o in 0..outer {
        for j in 0..inner {
            let l = labels[o * inner + j].trunc();
            for c in 0..k {
                let i = (o * k + c) * inner + j;
                if use_ignore && l == ignore {
                    continue;
                }
                let t = if c as f64 == l { 1.0 - alpha } else { alpha / (k as f64 - 1.0) };
                out[i] = scale * (p[i] - t) / div;
            }
        }
    }
    out
}

struct SmCase {
    data: &'static [usize],
    labels: &'static [f64],
    label_shape: &'static [usize],
    params: Vec<(&'static str, AttrValue)>,
}

fn sm_cases() -> Vec<SmCase> {
    let c = |data, labels, label_shape, params| SmCase { data, labels, label_shape, params };
    vec![
        c(&[3, 4], &[0.0, 2.0, 1.0], &[3], vec![]),
        c(&[3, 4], &[0.0, 2.0, 1.0], &[3], vec![("grad_scale", float(2.0))]),
        c(&[3, 4], &[0.0, 2.0, 1.0], &[3], vec![("normalization", string("batch"))]),
        c(&[3, 4], &[0.0, 1.0, 1.0], &[3], vec![("use_ignore", boolean(true)), ("ignore_label", float(1.0))]),
        c(&[3, 4], &[0.0, -1.0, 3.0], &[3], vec![("normalization", string("valid"))]),
        c(&[3, 4], &[0.0, -1.0, 3.0], &[3], vec![("normalization", string("valid")), ("use_ignore", boolean(true))]),
        c(&[3, 4], &[1.7, 7.0, 0.2], &[3], vec![]),
        c(&[3, 4], &[0.0, 2.0, 1.0], &[3], vec![("smooth_alpha", float(0.1))]),
        c(&[2, 3, 2], &[0.0, 2.0, 1.0, 1.0], &[2, 2], vec![("multi_output", boolean(true))]),
        c(
            &[2, 3, 2],
            &[0.0, 2.0, 1.0, -1.0],
            &[2, 1, 2],
            vec![("multi_output", boolean(true)), ("normalization", string("batch"))],
        ),
        c(
            &[2, 3, 2],
            &[0.0, 2.0, 1.0, -1.0],
            &[2, 2],
            vec![("multi_output", boolean(true)), ("normalization", string("valid"))],
        ),
        c(&[2, 2, 3], &[0.0, 2.0, 1.0, 1.0], &[2, 2], vec![("preserve_shape", boolean(true))]),
        c(&[2, 3, 2], &[0.0, 5.0], &[2], vec![]),
    ]
}

fn sm_geometry(case: &SmCase) -> ((usize, usize, usize), bool, bool) {
    let get = |k: &str| case.params.iter().any(|(n, v)| *n == k && *v == boolean(true));
    let (multi, preserve) = (get("multi_output"), get("preserve_shape"));
    let d = case.data;
    let dims = if multi {
        (d[0], d[1], numel(&d[2..]))
    } else if preserve {
        (numel(&d[..d.len() - 1]), d[d.len() - 1], 1)
    } else {
        (d[0], numel(&d[1..]), 1)
    };
    (dims, multi, preserve)
}

fn param_f(case: &SmCase, k: &str, default: f64) -> f64 {
    case.params.iter().find(|(n, _)| *n == k).map_or(default, |(_, v)| match v {
        AttrValue::Float(f) => *f,
        _ => default,
    })
}

fn param_s(case: &SmCase, k: &str) -> String {
    case.params.iter().find(|(n, _)| *n == k).map_or("null".into(), |(_, v)| v.to_mx_string())
}

pub fn softmax_output(name: &'static str) {
    let mut rng = Rng::new(201);
    for case in sm_cases() {
        let x = f64s(&rng.vec(numel(case.data), -2.0, 2.0), case.data);
        let l = f64s(case.labels, case.label_shape);
        let ((outer, k, inner), _, _) = sm_geometry(&case);
        let want = softmax_ref(&x.to_f64_vec(), &[outer, k, inner], 1, 1.0, false);
        for dt in [F64, F32] {
            for (vn, xv) in variants(&x.astype(dt)) {
                let y = call1(name, &[xv, l.astype(dt)], &case.params);
                let (r, a) = tol(dt);
                check_arr(&format!("SoftmaxOutput {:?} {dt} {vn}", case.params), &y, case.data, dt, &want, r * 10.0, a);
            }
        }
    }
    // Probability labels: the label has the data's shape.
    let x = f64s(&rng.vec(6, -2.0, 2.0), &[2, 3]);
    let y = call1(name, &[x.clone(), f64s(&[0.2, 0.3, 0.5, 1.0, 0.0, 0.0], &[2, 3])], &[]);
    check_arr(
        "SoftmaxOutput prob",
        &y,
        &[2, 3],
        F64,
        &softmax_ref(&x.to_f64_vec(), &[2, 3], 1, 1.0, false),
        1e-12,
        0.0,
    );
}

pub fn softmax_output_grad(name: &'static str) {
    let mut rng = Rng::new(202);
    for case in sm_cases() {
        let x = f64s(&rng.vec(numel(case.data), -2.0, 2.0), case.data);
        let ((outer, k, inner), multi, _) = sm_geometry(&case);
        let p = softmax_ref(&x.to_f64_vec(), &[outer, k, inner], 1, 1.0, false);
        let use_ignore = case.params.iter().any(|(n, v)| *n == "use_ignore" && *v == boolean(true));
        let want = sm_out_ref(
            &p,
            case.labels,
            (outer, k, inner),
            param_f(&case, "grad_scale", 1.0),
            &param_s(&case, "normalization"),
            multi,
            use_ignore,
            param_f(&case, "ignore_label", -1.0),
            param_f(&case, "smooth_alpha", 0.0),
        );
        let op = build(name, &case.params);
        let ins = [x, arr(case.labels, case.label_shape, F32)];
        check_loss(&format!("SoftmaxOutput {:?}", case.params), &op, &ins, &want, false, &mut rng);
    }
    // Probability labels: grad_scale·(p - label), /n for 'batch'.
    let x = f64s(&rng.vec(6, -2.0, 2.0), &[2, 3]);
    let lab = [0.2f32 as f64, 0.3f32 as f64, 0.5f32 as f64, 1.0, 0.0, 0.0];
    let p = softmax_ref(&x.to_f64_vec(), &[2, 3], 1, 1.0, false);
    for (norm, div) in [("null", 1.0), ("batch", 2.0), ("valid", 1.0)] {
        let op = build(name, &[("grad_scale", float(3.0)), ("normalization", string(norm))]);
        let want: Vec<f64> = p.iter().zip(lab).map(|(p, l)| 3.0 * (p - l) / div).collect();
        check_loss(
            &format!("SoftmaxOutput prob {norm}"),
            &op,
            &[x.clone(), f64s(&lab, &[2, 3]).astype(F32)],
            &want,
            false,
            &mut rng,
        );
    }
    // out_grad=True multiplies by the real head gradient.
    let op = build(name, &[("out_grad", boolean(true))]);
    let want = sm_out_ref(&p, &[2.0, 0.0], (2, 3, 1), 1.0, "null", false, false, -1.0, 0.0);
    check_loss("SoftmaxOutput out_grad", &op, &[x, arr(&[2.0, 0.0], &[2], F32)], &want, true, &mut rng);
}

/// `_backward_SoftmaxOutput` on arbitrary `p`.
pub fn softmax_output_backward(name: &'static str) {
    let mut rng = Rng::new(203);
    for case in sm_cases() {
        let p = rng.vec(numel(case.data), 0.0, 1.0);
        let ((outer, k, inner), multi, _) = sm_geometry(&case);
        let use_ignore = case.params.iter().any(|(n, v)| *n == "use_ignore" && *v == boolean(true));
        let want = sm_out_ref(
            &p,
            case.labels,
            (outer, k, inner),
            param_f(&case, "grad_scale", 1.0),
            &param_s(&case, "normalization"),
            multi,
            use_ignore,
            param_f(&case, "ignore_label", -1.0),
            param_f(&case, "smooth_alpha", 0.0),
        );
        let y = call1(name, &[f64s(&p, case.data), f64s(case.labels, case.label_shape)], &case.params);
        check_arr(&format!("_backward_SoftmaxOutput {:?}", case.params), &y, case.data, F64, &want, 1e-12, 1e-14);
    }
}

pub fn softmax_output_backward_grad(name: &'static str) {
    let mut rng = Rng::new(204);
    for case in sm_cases().into_iter().take(9) {
        let op = build(name, &case.params);
        let ins = [f64s(&rng.vec(numel(case.data), 0.0, 1.0), case.data), arr(case.labels, case.label_shape, F32)];
        check(&format!("_backward_SoftmaxOutput {:?}", case.params), &op, &ins, &mut rng, true);
    }
}

pub fn softmax_cross_entropy(name: &'static str) {
    let mut rng = Rng::new(205);
    for (n, k) in [(3usize, 4usize), (1, 1), (0, 3), (5, 2)] {
        let x = f64s(&rng.vec(n * k, -3.0, 3.0), &[n, k]);
        let labels: Vec<f64> = (0..n).map(|_| rng.int(0, k as i64 - 1) as f64).collect();
        let ls = softmax_ref(&x.to_f64_vec(), &[n, k], 1, 1.0, true);
        let want: f64 = -labels.iter().enumerate().map(|(i, &l)| ls[i * k + l as usize]).sum::<f64>();
        for dt in [F64, F32] {
            for (vn, xv) in variants(&x.astype(dt)) {
                let y = call1(name, &[xv, f64s(&labels, &[n]).astype(dt)], &[]);
                check_arr(&format!("softmax_cross_entropy ({n}, {k}) {dt} {vn}"), &y, &[1], dt, &[want], 1e-5, 1e-6);
            }
        }
    }
}

pub fn softmax_cross_entropy_grad(name: &'static str) {
    let mut rng = Rng::new(206);
    let op = build(name, &[]);
    for (n, k) in [(3usize, 4usize), (2, 2)] {
        let labels: Vec<f64> = (0..n).map(|_| rng.int(0, k as i64 - 1) as f64).collect();
        let ins = [f64s(&rng.vec(n * k, -2.0, 2.0), &[n, k]), arr(&labels, &[n], F32)];
        check(&format!("softmax_cross_entropy ({n}, {k})"), &op, &ins, &mut rng, true);
    }
}

pub fn regression_output(name: &'static str) {
    let mut rng = Rng::new(207);
    for shape in [&[2, 3][..], &[4], &[0, 2]] {
        let x = rand(&mut rng, shape);
        let l = rand(&mut rng, shape);
        let want: Vec<f64> = x
            .to_f64_vec()
            .iter()
            .map(|&v| if name == "LogisticRegressionOutput" { 1.0 / (1.0 + (-v).exp()) } else { v })
            .collect();
        for (vn, xv) in variants(&x) {
            let y = call1(name, &[xv, l.clone()], &[("grad_scale", float(2.0))]);
            check_arr(&format!("{name} {shape:?} {vn}"), &y, shape, F64, &want, 1e-12, 1e-14);
        }
    }
}

fn rand(rng: &mut Rng, shape: &[usize]) -> NDArray {
    f64s(&rng.vec(numel(shape), -1.5, 1.5), shape)
}

pub fn regression_output_grad(name: &'static str) {
    let mut rng = Rng::new(208);
    for (shape, lshape) in [(&[2, 2][..], &[2, 2][..]), (&[3, 2], &[3, 2]), (&[4], &[4]), (&[4, 1], &[4])] {
        let x = f64s(&rng.vec(numel(shape), -1.5, 1.5), shape);
        // MAE: keep data away from the label (sign jumps there); pin x == label below.
        let l: Vec<f64> =
            x.to_f64_vec().iter().map(|&v| (v + if rng.int(0, 1) == 0 { 0.5 } else { -0.5 }) as f32 as f64).collect();
        let num_output = numel(lshape) as f64 / lshape[0] as f64;
        let s = 1.5;
        let want: Vec<f64> = x
            .to_f64_vec()
            .iter()
            .zip(&l)
            .map(|(&v, &lv)| {
                s / num_output
                    * match name {
                        "LinearRegressionOutput" => v - lv,
                        "LogisticRegressionOutput" => 1.0 / (1.0 + (-v).exp()) - lv,
                        _ => (v - lv).signum(),
                    }
            })
            .collect();
        let op = build(name, &[("grad_scale", float(s))]);
        check_loss(&format!("{name} {shape:?}"), &op, &[x, arr(&l, lshape, F32)], &want, false, &mut rng);
    }
    if name == "MAERegressionOutput" {
        // Pinned: sign(0) = -1 (MXNet), so x == label gives -grad_scale/num_output.
        let op = build(name, &[]);
        let g = eval_grad(
            op.as_ref(),
            &[f64s(&[1.0, 2.0], &[1, 2]), f64s(&[1.0, 2.0], &[1, 2])],
            &[f64s(&[1.0, 1.0], &[1, 2])],
        )
        .unwrap();
        assert_eq!(g[0].as_ref().unwrap().to_f64_vec(), vec![-0.5, -0.5]);
    }
}

pub fn make_loss(name: &'static str) {
    let mut rng = Rng::new(209);
    for shape in [&[2, 3][..], &[], &[0]] {
        let x = rand(&mut rng, shape);
        for (vn, xv) in variants(&x) {
            let y = call1(name, &[xv], &[]);
            check_arr(&format!("{name} {shape:?} {vn}"), &y, shape, F64, &x.to_f64_vec(), 0.0, 0.0);
        }
    }
}

pub fn make_loss_grad(name: &'static str) {
    let mut rng = Rng::new(210);
    let x = f64s(&[0.5, -1.0, 2.0, 0.1, -0.2, 3.0], &[2, 3]);
    let cases: Vec<(Vec<(&'static str, AttrValue)>, f64)> = if name == "make_loss" {
        vec![(vec![], 1.0)]
    } else {
        vec![
            (vec![], 1.0),
            (vec![("grad_scale", float(2.0))], 2.0),
            (vec![("grad_scale", float(3.0)), ("normalization", string("batch"))], 1.5),
            (vec![("normalization", string("valid")), ("valid_thresh", float(0.3))], 1.0 / 3.0),
            (vec![("normalization", string("valid")), ("valid_thresh", float(10.0))], 1.0),
        ]
    };
    for (params, c) in cases {
        let op = build(name, &params);
        check_loss(&format!("{name} {params:?}"), &op, std::slice::from_ref(&x), &[c; 6], false, &mut rng);
    }
    if name == "MakeLoss" {
        // 'batch' on 1-D data flattens to (1, n): nothing is divided (MXNet).
        let op = build(name, &[("normalization", string("batch"))]);
        check_loss("MakeLoss batch 1-D", &op, &[f64s(&[1.0, 2.0, 3.0, 4.0], &[4])], &[1.0; 4], false, &mut rng);
    }
}

pub fn block_grad(name: &'static str) {
    let x = f64s(&[1.0, -2.0, 3.0, 4.0], &[2, 2]);
    for (vn, xv) in variants(&x) {
        check_arr(&format!("{name} {vn}"), &call1(name, &[xv], &[]), &[2, 2], F64, &x.to_f64_vec(), 0.0, 0.0);
    }
    check_arr(&format!("{name} 0-d"), &call1(name, &[f64s(&[2.5], &[])], &[]), &[], F64, &[2.5], 0.0, 0.0);
}

pub fn block_grad_grad(name: &'static str) {
    let op = build(name, &[]);
    let x = f64s(&[1.0, -2.0], &[2]);
    let g = eval_grad(op.as_ref(), std::slice::from_ref(&x), &[f64s(&[1.0, 1.0], &[2])]).unwrap();
    assert!(g[0].is_none(), "{name}: gradient must be zero (None)");
    check_tape(name, &op, &[x], &[f64s(&[1.0, 1.0], &[2])], &[NDArray::zeros(&[2], F64)]);
}

fn run_train(op: &OpRef, x: &NDArray, train: bool) -> Vec<NDArray> {
    ops::run(op.as_ref(), &Ctx { is_train: train }, std::slice::from_ref(x)).unwrap()
}

pub fn dropout(name: &'static str) {
    let x = f64s(&(0..4000).map(|i| 1.0 + (i % 7) as f64).collect::<Vec<_>>(), &[40, 100]);
    // Predict mode with mode='training': the identity, mask of ones.
    let op = build(name, &[("p", float(0.5))]);
    let outs = run_train(&op, &x, false);
    assert_eq!(outs.len(), 2);
    assert_eq!(op.num_visible_outputs(), 1);
    check_arr("Dropout predict", &outs[0], &[40, 100], F64, &x.to_f64_vec(), 0.0, 0.0);
    check_arr("Dropout predict mask", &outs[1], &[40, 100], F64, &[1.0; 4000], 0.0, 0.0);
    for (params, train) in
        [(vec![("p", float(0.3))], true), (vec![("p", float(0.3)), ("mode", string("always"))], false)]
    {
        let op = build(name, &params);
        ferrograd::random::seed(7);
        let outs = run_train(&op, &x, train);
        let (y, m) = (outs[0].to_f64_vec(), outs[1].to_f64_vec());
        let keep = 1.0 / 0.7;
        let kept = m.iter().filter(|&&v| v != 0.0).count() as f64 / 4000.0;
        assert!((kept - 0.7).abs() < 0.04, "Dropout: kept fraction {kept}");
        for ((&yv, &mv), &xv) in y.iter().zip(&m).zip(&x.to_f64_vec()) {
            assert!(mv == 0.0 || (mv - keep).abs() < 1e-12, "mask value {mv}");
            assert!((yv - xv * mv).abs() < 1e-12);
        }
        ferrograd::random::seed(7);
        assert_eq!(run_train(&op, &x, train)[1].to_f64_vec(), m, "Dropout: seeding reproduces the mask");
    }
    // axes share one draw along the listed axes.
    let op = build(name, &[("mode", string("always")), ("axes", tuple(&[1]))]);
    let m = run_train(&op, &x, false)[1].to_f64_vec();
    for r in m.chunks(100) {
        assert!(r.iter().all(|&v| v == r[0]), "Dropout axes=(1,): one draw per row");
    }
    // p = 0 is the identity, p = 1 drops everything; float32 and a strided view work.
    let y = &run_train(&build(name, &[("p", float(0.0)), ("mode", string("always"))]), &x, true)[0];
    check_arr("Dropout p=0", y, &[40, 100], F64, &x.to_f64_vec(), 0.0, 0.0);
    let y = &run_train(&build(name, &[("p", float(1.0)), ("mode", string("always"))]), &x, true)[0];
    check_arr("Dropout p=1", y, &[40, 100], F64, &[0.0; 4000], 0.0, 0.0);
    let xs = strided_view(&x.astype(F32));
    let outs = run_train(&build(name, &[("mode", string("always"))]), &xs, false);
    let (y, m) = (outs[0].to_f64_vec(), outs[1].to_f64_vec());
    assert_eq!(outs[0].dtype(), F32);
    for ((&yv, &mv), &xv) in y.iter().zip(&m).zip(&x.to_f64_vec()) {
        assert!((yv - xv * mv).abs() < 1e-5);
    }
    let e = run_train(&build(name, &[]), &f64s(&[], &[0, 3]), true);
    assert_eq!(e[0].shape(), &[0, 3]);
}

/// Gradient `g·mask` through the tape (one recorded draw), and the rule's second order.
pub fn dropout_grad(name: &'static str) {
    use ferrograd::autograd::{self, BackwardArgs, Entry, GradReq, Tracked};
    let op = build(name, &[("p", float(0.4))]);
    let mut rng = Rng::new(211);
    let mut x = Tracked::new(f64s(&rng.vec(200, -1.0, 1.0), &[10, 20]));
    x.set_entry(Some(Entry::variable(NDArray::zeros(&[10, 20], F64), GradReq::Write)));
    let (pr, pt) = (autograd::set_recording(true), autograd::set_training(true));
    let outs = autograd::invoke(&op, [x.clone()]).unwrap();
    autograd::set_recording(pr);
    autograd::set_training(pt);
    let v = f64s(&rng.signed(200, 0.5, 2.0), &[10, 20]);
    let args = BackwardArgs { retain_graph: false, create_graph: false, train_mode: true };
    let g = autograd::grad(&outs[..1], &[Some(Tracked::new(v.clone()))], &[x], args).unwrap();
    let want: Vec<f64> = v.to_f64_vec().iter().zip(outs[1].to_f64_vec()).map(|(a, b)| a * b).collect();
    assert!(outs[1].to_f64_vec().contains(&0.0));
    check_arr("Dropout grad", &g[0], &[10, 20], F64, &want, 0.0, 0.0);
    // In predict mode (mode='training') the op is the identity: ordinary checks apply.
    check("Dropout predict", &op, &[f64s(&rng.vec(6, -1.0, 1.0), &[2, 3])], &mut rng, true);
}

/// Two steps, one sequence, alphabet {blank = 0, a = 1}, label "a": the alignments are a·a, ∅·a
/// and a·∅, so the loss is -ln(a₁a₂ + ∅₁a₂ + a₁∅₂) of the per-step softmax probabilities.
pub fn ctc_loss(name: &'static str) {
    let x = [0.3, -0.2, 1.1, 0.4]; // (T, N, C) = (2, 1, 2)
    let softmax = |t: usize| {
        let (b, a) = (f64::exp(x[2 * t]), f64::exp(x[2 * t + 1]));
        (b / (a + b), a / (a + b))
    };
    let ((b1, a1), (b2, a2)) = (softmax(0), softmax(1));
    let want = -(a1 * a2 + b1 * a2 + a1 * b2).ln();
    for dt in [F64, F32] {
        let y = call1(name, &[f64s(&x, &[2, 1, 2]).astype(dt), arr(&[1.0], &[1, 1], dt)], &[]);
        check_arr(&format!("{name} (2, 1, 2) {dt}"), &y, &[1], dt, &[want], 1e-6, 1e-7);
    }
}

/// The rule's data gradient against central differences of `Σ_n h_n·loss_n` (the hidden
/// gradient output is not a differentiable head, so the generic check does not apply).
pub fn ctc_loss_grad(name: &'static str) {
    let mut rng = Rng::new(231);
    let op = build(name, &[]);
    let x = rng.vec(3 * 2 * 4, -1.0, 1.0);
    let label = arr(&[1.0, 2.0, 3.0, 0.0], &[2, 2], F32); // padded with 0 (`blank_label='first'`)
    let h = [0.7, -1.3];
    let loss = |xv: &[f64]| -> f64 {
        let y = call1(name, &[f64s(xv, &[3, 2, 4]), label.clone()], &[]).to_f64_vec();
        y.iter().zip(&h).map(|(l, w)| l * w).sum()
    };
    let heads = [f64s(&h, &[2]), NDArray::zeros(&[3, 2, 4], F64)];
    let g = eval_grad(op.as_ref(), &[f64s(&x, &[3, 2, 4]), label.clone()], &heads).unwrap();
    let got = g[0].as_ref().expect("a data gradient").to_f64_vec();
    for (j, &gj) in got.iter().enumerate() {
        let (mut up, mut down) = (x.clone(), x.clone());
        up[j] += 1e-6;
        down[j] -= 1e-6;
        let fd = (loss(&up) - loss(&down)) / 2e-6;
        assert!((gj - fd).abs() <= 1e-6 + 1e-5 * fd.abs(), "{name}: d/d data[{j}]: rule {gj} vs difference {fd}");
    }
}
