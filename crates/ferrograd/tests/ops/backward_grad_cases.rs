//! Gradient cases of the `_backward_X` ops of the sampling, ROI and correlation operators: their
//! own gradient rules (what second-order gradients of the forward ops go through), checked
//! against finite differences, and at second order where every input is differentiable.

use ferrograd::ops::grad::eval_grad;
use ferrograd::ops::{self, Ctx, OpRef};
use ferrograd::NDArray;

use crate::common::*;
use crate::detect2_cases::{ps_rois, psroi_params};
use crate::gradcheck::{build, check, check_tape, ATOL, EPS, RTOL};
use crate::spatial20_cases::{corr_params, rand_grid, test_rois};

fn rand(rng: &mut Rng, shape: &[usize]) -> NDArray {
    f64s(&rng.signed(numel(shape), 0.1, 1.0), shape)
}

pub fn sampler_backward_grad(name: &'static str) {
    let mut rng = Rng::new(2401);
    let op = build(name, &[]);
    let (x, grid) = (rand(&mut rng, &[2, 2, 3, 4]), rand_grid(&mut rng, &[2, 2, 2, 3]));
    let og = rand(&mut rng, &[2, 2, 2, 3]);
    check(name, &op, &[og, x, grid], &mut rng, true);
}

pub fn correlation_backward_grad(name: &'static str) {
    let mut rng = Rng::new(2402);
    for cfg in [(3, 1, 1, 1, 1, true), (1, 2, 2, 2, 1, true), (1, 1, 1, 1, 1, false)] {
        let op = build(name, &corr_params(cfg));
        let (a, b) = (rand(&mut rng, &[1, 2, 4, 5]), rand(&mut rng, &[1, 2, 4, 5]));
        let y = call1("Correlation", &[a.clone(), b.clone()], &corr_params(cfg));
        let og = rand(&mut rng, y.shape());
        check(&format!("{name} {cfg:?}"), &op, &[og, a, b], &mut rng, true);
    }
}

/// `_backward_X(ograd, data, rois)`: the gradients in ograd and data against finite
/// differences (rois get none), and the same through the tape.
fn check_roi_backward(what: &str, op: &OpRef, inputs: &[NDArray], rng: &mut Rng) {
    let outs = ops::run(op.as_ref(), &Ctx::default(), inputs).unwrap_or_else(|e| panic!("{what}: {e}"));
    let v: Vec<NDArray> = outs.iter().map(|o| f64s(&rng.signed(o.size(), 0.5, 2.0), o.shape())).collect();
    let got = eval_grad(op.as_ref(), inputs, &v).unwrap_or_else(|e| panic!("{what}: eval_grad: {e}"));
    assert!(got[2].is_none(), "{what}: rois got a gradient");
    let f = |xs: &[NDArray]| -> f64 {
        let y = ops::run(op.as_ref(), &Ctx::default(), xs).unwrap();
        y[0].to_f64_vec().iter().zip(v[0].to_f64_vec()).map(|(a, b)| a * b).sum()
    };
    let mut wants = Vec::new();
    for i in 0..2 {
        let x = &inputs[i];
        let g = got[i].clone().unwrap_or_else(|| NDArray::zeros(x.shape(), x.dtype()));
        for (j, gj) in g.to_f64_vec().into_iter().enumerate() {
            let mut xs = inputs.to_vec();
            let mut xv = x.to_f64_vec();
            xv[j] += EPS;
            xs[i] = f64s(&xv, x.shape());
            let fp = f(&xs);
            xv[j] -= 2.0 * EPS;
            xs[i] = f64s(&xv, x.shape());
            let fd = (fp - f(&xs)) / (2.0 * EPS);
            assert!(close(gj, fd, RTOL, ATOL), "{what}: d/d input{i}[{j}]: rule {gj} vs finite difference {fd}");
        }
        wants.push(g);
    }
    wants.push(NDArray::zeros(inputs[2].shape(), inputs[2].dtype()));
    check_tape(what, op, inputs, &v, &wants);
}

fn roi_case(name: &str, forward: &str, params: &Params, data: &[usize], rois: NDArray, rng: &mut Rng) {
    let x = rand(rng, data);
    let y = call1(forward, &[x.clone(), rois.clone()], params);
    let og = rand(rng, y.shape());
    check_roi_backward(&format!("{name} {params:?}"), &build(name, params), &[og, x, rois], rng);
}

pub fn roi_pooling_backward_grad(name: &'static str) {
    let mut rng = Rng::new(2403);
    let p = vec![("pooled_size", tuple(&[2, 2])), ("spatial_scale", float(1.0))];
    roi_case(name, "ROIPooling", &p, &[2, 2, 5, 6], test_rois(), &mut rng);
}

pub fn roi_align_backward_grad(name: &'static str) {
    let mut rng = Rng::new(2404);
    let p = vec![("pooled_size", tuple(&[2, 2])), ("spatial_scale", float(1.0)), ("sample_ratio", int(2))];
    roi_case(name, "_contrib_ROIAlign", &p, &[2, 2, 5, 6], test_rois(), &mut rng);
    let p = vec![("pooled_size", tuple(&[1, 2])), ("spatial_scale", float(0.7)), ("position_sensitive", boolean(true))];
    roi_case(name, "_contrib_ROIAlign", &p, &[2, 4, 5, 6], test_rois(), &mut rng);
}

pub fn psroi_pooling_backward_grad(name: &'static str) {
    let mut rng = Rng::new(2405);
    roi_case(name, "_contrib_PSROIPooling", &psroi_params(0.9, 2, 2, 2), &[2, 8, 6, 7], ps_rois(), &mut rng);
}
