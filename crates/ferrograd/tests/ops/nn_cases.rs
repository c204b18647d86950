//! Neural-network ops (issue 4): FullyConnected, linalg_gemm2, Embedding, activations and the
//! softmax family, against naive float64 references, plus their gradient checks. Loss ops and
//! Dropout are in `nn_loss_cases.rs`.

use ferrograd::ops::AttrValue;
use ferrograd::DType::{self, F16, F32, F64, I32, I64};
use ferrograd::NDArray;

use crate::common::*;
use crate::gradcheck::{build, check};

fn rand(rng: &mut Rng, shape: &[usize]) -> NDArray {
    f64s(&rng.vec(numel(shape), -1.5, 1.5), shape)
}

fn dtol(dt: DType) -> (f64, f64) {
    match dt {
        F16 => (5e-3, 5e-3),
        F32 => (2e-5, 2e-5),
        _ => (1e-11, 1e-12),
    }
}

// ---------------------------------------------------------------------------------------------
// FullyConnected

fn fc_ref(x: &NDArray, w: &NDArray, b: Option<&NDArray>, h: usize, flatten: bool) -> (Vec<usize>, Vec<f64>) {
    let s = x.shape();
    let (m, k, mut out_shape) = if flatten {
        (s[0], numel(&s[1..]), vec![s[0]])
    } else {
        (numel(&s[..s.len() - 1]), s[s.len() - 1], s[..s.len() - 1].to_vec())
    };
    out_shape.push(h);
    let (xv, wv) = (x.to_f64_vec(), w.to_f64_vec());
    let bv = b.map(|b| b.to_f64_vec());
    let mut out = vec![0.0; m * h];
    for i in 0..m {
        for j in 0..h {
            let mut acc = bv.as_ref().map_or(0.0, |b| b[j]);
            for p in 0..k {
                acc += xv[i * k + p] * wv[j * k + p];
            }
            out[i * h + j] = acc;
        }
    }
    (out_shape, out)
}

fn fc_params(h: usize, no_bias: bool, flatten: bool) -> Vec<(&'static str, AttrValue)> {
    vec![("num_hidden", int(h as i64)), ("no_bias", boolean(no_bias)), ("flatten", boolean(flatten))]
}

const FC_SHAPES: &[(&[usize], bool)] =
    &[(&[4, 5], true), (&[2, 3, 2], true), (&[2, 3, 2], false), (&[0, 3], true), (&[3], true), (&[2, 0], true)];

pub fn fully_connected(name: &'static str) {
    let mut rng = Rng::new(101);
    for &(ds, flatten) in FC_SHAPES {
        let k = if flatten { numel(&ds[1..]) } else { ds[ds.len() - 1] };
        for h in [3usize, 1] {
            for no_bias in [false, true] {
                for dt in [F64, F32, F16] {
                    let x = arr(&rng.vec(numel(ds), -1.0, 1.0), ds, dt);
                    let w = arr(&rng.vec(h * k, -1.0, 1.0), &[h, k], dt);
                    let b = arr(&rng.vec(h, -1.0, 1.0), &[h], dt);
                    let (ws, want) = fc_ref(&x, &w, if no_bias { None } else { Some(&b) }, h, flatten);
                    for (vn, xv) in variants(&x) {
                        for (wn, wv) in variants(&w) {
                            let mut ins = vec![xv.clone(), wv];
                            if !no_bias {
                                ins.push(b.clone());
                            }
                            let y = call1(name, &ins, &fc_params(h, no_bias, flatten));
                            let (r, a) = dtol(dt);
                            let what = format!("FC {ds:?} h={h} no_bias={no_bias} flatten={flatten} {dt} {vn}/{wn}");
                            check_arr(&what, &y, &ws, dt, &want, r, a * k.max(1) as f64);
                        }
                    }
                }
            }
        }
    }
}

pub fn fully_connected_grad(name: &'static str) {
    let mut rng = Rng::new(102);
    for &(ds, flatten) in &FC_SHAPES[..4] {
        let k = if flatten { numel(&ds[1..]) } else { ds[ds.len() - 1] };
        for no_bias in [false, true] {
            let op = build(name, &fc_params(3, no_bias, flatten));
            let mut ins = vec![rand(&mut rng, ds), rand(&mut rng, &[3, k])];
            if !no_bias {
                ins.push(rand(&mut rng, &[3]));
            }
            check(&format!("FC {ds:?} no_bias={no_bias} flatten={flatten}"), &op, &ins, &mut rng, true);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// linalg_gemm2

fn gemm2_ref(a: &NDArray, b: &NDArray, ta: bool, tb: bool, alpha: f64) -> (Vec<usize>, Vec<f64>) {
    let (sa, sb) = (a.shape(), b.shape());
    let nd = sa.len();
    let lead = &sa[..nd - 2];
    let (ar, ac) = (sa[nd - 2], sa[nd - 1]);
    let (br, bc) = (sb[nd - 2], sb[nd - 1]);
    let (m, k) = if ta { (ac, ar) } else { (ar, ac) };
    let n = if tb { br } else { bc };
    let (av, bv) = (a.to_f64_vec(), b.to_f64_vec());
    let batch = numel(lead);
    let mut out = vec![0.0; batch * m * n];
    for t in 0..batch {
        let at = |i: usize, p: usize| av[t * ar * ac + if ta { p * ac + i } else { i * ac + p }];
        let bt = |p: usize, j: usize| bv[t * br * bc + if tb { j * bc + p } else { p * bc + j }];
        for i in 0..m {
            for j in 0..n {
                out[(t * m + i) * n + j] = alpha * (0..k).map(|p| at(i, p) * bt(p, j)).sum::<f64>();
            }
        }
    }
    let mut s = lead.to_vec();
    s.extend([m, n]);
    (s, out)
}

fn gemm2_shapes(lead: &[usize], m: usize, k: usize, n: usize, ta: bool, tb: bool) -> (Vec<usize>, Vec<usize>) {
    let mut a = lead.to_vec();
    a.extend(if ta { [k, m] } else { [m, k] });
    let mut b = lead.to_vec();
    b.extend(if tb { [n, k] } else { [k, n] });
    (a, b)
}

fn gemm2_params(ta: bool, tb: bool, alpha: f64) -> Vec<(&'static str, AttrValue)> {
    vec![("transpose_a", boolean(ta)), ("transpose_b", boolean(tb)), ("alpha", float(alpha))]
}

pub fn linalg_gemm2(name: &'static str) {
    let mut rng = Rng::new(103);
    for lead in [&[][..], &[2], &[2, 1]] {
        for (m, k, n) in [(2, 3, 4), (1, 1, 1), (0, 2, 3), (2, 0, 2)] {
            for ta in [false, true] {
                for tb in [false, true] {
                    for dt in [F64, F32] {
                        let (sa, sb) = gemm2_shapes(lead, m, k, n, ta, tb);
                        let a = arr(&rng.vec(numel(&sa), -1.0, 1.0), &sa, dt);
                        let b = arr(&rng.vec(numel(&sb), -1.0, 1.0), &sb, dt);
                        let (ws, want) = gemm2_ref(&a, &b, ta, tb, 0.5);
                        for (vn, av) in variants(&a) {
                            let y = call1(name, &[av, b.clone()], &gemm2_params(ta, tb, 0.5));
                            let (r, at) = dtol(dt);
                            check_arr(
                                &format!("gemm2 {sa:?}x{sb:?} ta={ta} tb={tb} {dt} {vn}"),
                                &y,
                                &ws,
                                dt,
                                &want,
                                r,
                                at,
                            );
                        }
                    }
                }
            }
        }
    }
}

pub fn linalg_gemm2_grad(name: &'static str) {
    let mut rng = Rng::new(104);
    for lead in [&[][..], &[2]] {
        for ta in [false, true] {
            for tb in [false, true] {
                let (sa, sb) = gemm2_shapes(lead, 2, 3, 2, ta, tb);
                let op = build(name, &gemm2_params(ta, tb, 1.5));
                let ins = [rand(&mut rng, &sa), rand(&mut rng, &sb)];
                check(&format!("gemm2 {sa:?}x{sb:?} ta={ta} tb={tb}"), &op, &ins, &mut rng, true);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Embedding

pub fn embedding(name: &'static str) {
    let mut rng = Rng::new(105);
    let (vocab, dim) = (4usize, 3usize);
    let w = rand(&mut rng, &[vocab, dim]);
    let wv = w.to_f64_vec();
    // Out-of-range indices are clipped (documented), floats truncate toward zero.
    let sets: &[(&[f64], &[usize])] = &[
        (&[0.0, 3.0, 1.0], &[3]),
        (&[2.0, 7.0, -2.0, 1.9], &[2, 2]),
        (&[], &[0]),
        (&[3.0], &[]),
        (&[1.0; 6], &[1, 2, 3]),
    ];
    for &(ind, ishape) in sets {
        for idt in [F32, I32, I64, F64] {
            let idx = arr(ind, ishape, idt);
            for (vn, wvv) in variants(&w) {
                let y = call1(name, &[idx.clone(), wvv], &[("input_dim", int(4)), ("output_dim", int(3))]);
                let mut want = Vec::new();
                for &i in ind {
                    let r = (i.trunc() as i64).clamp(0, vocab as i64 - 1) as usize;
                    want.extend_from_slice(&wv[r * dim..(r + 1) * dim]);
                }
                let mut ws = ishape.to_vec();
                ws.push(dim);
                check_arr(&format!("Embedding {ind:?} {idt} {vn}"), &y, &ws, F64, &want, 0.0, 0.0);
            }
        }
    }
}

pub fn embedding_grad(name: &'static str) {
    let mut rng = Rng::new(106);
    let op = build(name, &[("input_dim", int(4)), ("output_dim", int(3)), ("dtype", string("float64"))]);
    for (ind, ishape) in [(vec![0.0, 3.0, 3.0, 9.0], vec![2, 2]), (vec![1.0], vec![1])] {
        let ins = [arr(&ind, &ishape, F32), rand(&mut rng, &[4, 3])];
        check(&format!("Embedding {ind:?}"), &op, &ins, &mut rng, true);
    }
}

// ---------------------------------------------------------------------------------------------
// Activation and LeakyReLU

fn act_ref(act: &str, x: f64, slope: f64, gamma: f64) -> f64 {
    let sig = |v: f64| 1.0 / (1.0 + (-v).exp());
    let slope = slope as f32 as f64; // MXNet's slope is a float32 parameter
    match act {
        "relu" => x.max(0.0),
        "sigmoid" => sig(x),
        "tanh" => x.tanh(),
        "softsign" => x / (1.0 + x.abs()),
        "softrelu" => (1.0 + x.exp()).ln(),
        "leaky" => {
            if x > 0.0 {
                x
            } else {
                slope * x
            }
        }
        "elu" => {
            if x > 0.0 {
                x
            } else {
                slope * (x.exp() - 1.0)
            }
        }
        "selu" => {
            let (a, l) = (1.673_263_242_354_377_3, 1.050_700_987_355_480_5);
            l * if x > 0.0 { x } else { a * (x.exp() - 1.0) }
        }
        "gelu" => 0.5 * x * (1.0 + crate::elem_extra_cases::erf_ref(x / std::f64::consts::SQRT_2)),
        "prelu" => {
            if x > 0.0 {
                x
            } else {
                gamma * x
            }
        }
        other => panic!("no reference for {other}"),
    }
}

const ACTS: &[&str] = &["relu", "sigmoid", "tanh", "softsign", "softrelu"];
const LEAKY: &[&str] = &["leaky", "elu", "selu", "gelu"];

fn act_inputs(rng: &mut Rng) -> Vec<NDArray> {
    let mut v = vec![f64s(&[-3.0, -0.5, 0.0, 0.25, 2.0, 40.0, -40.0], &[7]), f64s(&[0.7], &[])];
    v.push(rand(rng, &[2, 3, 2]));
    v.push(f64s(&[], &[2, 0]));
    v
}

pub fn activation(name: &'static str) {
    let mut rng = Rng::new(107);
    for act in ACTS {
        for x in act_inputs(&mut rng) {
            for dt in [F64, F32, F16] {
                let xd = x.astype(dt);
                let want: Vec<f64> = xd.to_f64_vec().iter().map(|&v| act_ref(act, v, 0.0, 0.0)).collect();
                for (vn, xv) in variants(&xd) {
                    let y = call1(name, &[xv], &[("act_type", string(act))]);
                    let (r, a) = dtol(dt);
                    check_arr(
                        &format!("Activation {act} {dt} {vn} {:?}", x.shape()),
                        &y,
                        x.shape(),
                        dt,
                        &want,
                        r * 4.0,
                        a,
                    );
                }
            }
        }
    }
}

pub fn activation_grad(name: &'static str) {
    let mut rng = Rng::new(108);
    for act in ACTS {
        let op = build(name, &[("act_type", string(act))]);
        for shape in [&[][..], &[5], &[2, 3]] {
            let x = f64s(&rng.signed(numel(shape), 0.2, 2.0), shape);
            check(&format!("Activation {act} {shape:?}"), &op, &[x], &mut rng, true);
        }
    }
    // relu at the kink: gradient 0 at exactly 0 (documented).
    let g = ferrograd::ops::grad::eval_grad(
        build(name, &[("act_type", string("relu"))]).as_ref(),
        &[f64s(&[0.0, 1.0], &[2])],
        &[f64s(&[1.0, 1.0], &[2])],
    )
    .unwrap();
    assert_eq!(g[0].as_ref().unwrap().to_f64_vec(), vec![0.0, 1.0]);
}

pub fn leaky_relu(name: &'static str) {
    let mut rng = Rng::new(109);
    for act in LEAKY {
        for slope in [0.25, 0.1] {
            for x in act_inputs(&mut rng) {
                for dt in [F64, F32] {
                    let xd = x.astype(dt);
                    let want: Vec<f64> = xd.to_f64_vec().iter().map(|&v| act_ref(act, v, slope, 0.0)).collect();
                    for (vn, xv) in variants(&xd) {
                        let y = call1(name, &[xv], &[("act_type", string(act)), ("slope", float(slope))]);
                        let (r, a) = dtol(dt);
                        check_arr(&format!("LeakyReLU {act} {dt} {vn}"), &y, x.shape(), dt, &want, r * 4.0, a);
                    }
                }
            }
        }
    }
    // prelu: gamma per channel (axis 1), or one value.
    for (ds, gs) in [(&[2, 3, 2][..], &[3][..]), (&[2, 3][..], &[1][..]), (&[4][..], &[1][..]), (&[0, 2][..], &[2][..])]
    {
        let x = rand(&mut rng, ds);
        let gm = rand(&mut rng, gs);
        let (xv, gv) = (x.to_f64_vec(), gm.to_f64_vec());
        let want: Vec<f64> = (0..xv.len())
            .map(|i| {
                let c = if ds.len() >= 2 && gs[0] > 1 { unravel(i, ds)[1] } else { 0 };
                act_ref("prelu", xv[i], 0.0, gv[c])
            })
            .collect();
        for (vn, xx) in variants(&x) {
            let y = call1(name, &[xx, gm.clone()], &[("act_type", string("prelu"))]);
            check_arr(&format!("prelu {ds:?} {vn}"), &y, ds, F64, &want, 1e-12, 1e-12);
        }
    }
}

pub fn leaky_relu_grad(name: &'static str) {
    let mut rng = Rng::new(110);
    for act in LEAKY {
        let op = build(name, &[("act_type", string(act)), ("slope", float(0.3))]);
        for shape in [&[][..], &[6], &[2, 3]] {
            let x = f64s(&rng.signed(numel(shape), 0.2, 2.0), shape);
            check(&format!("LeakyReLU {act} {shape:?}"), &op, &[x], &mut rng, true);
        }
    }
    let op = build(name, &[("act_type", string("prelu"))]);
    for (ds, gs) in [(&[2, 3, 2][..], &[3][..]), (&[2, 3][..], &[1][..]), (&[4][..], &[1][..])] {
        let ins = [f64s(&rng.signed(numel(ds), 0.2, 2.0), ds), rand(&mut rng, gs)];
        check(&format!("prelu {ds:?}"), &op, &ins, &mut rng, true);
    }
}

// ---------------------------------------------------------------------------------------------
// softmax family

/// Naive softmax over `axis` of `s·x` (log when `log`).
pub fn softmax_ref(x: &[f64], shape: &[usize], axis: usize, s: f64, log: bool) -> Vec<f64> {
    let (outer, n, inner) = (numel(&shape[..axis]), shape[axis], numel(&shape[axis + 1..]));
    let mut out = vec![0.0; x.len()];
    for o in 0..outer {
        for j in 0..inner {
            let at = |c: usize| (o * n + c) * inner + j;
            let m = (0..n).map(|c| s * x[at(c)]).fold(f64::NEG_INFINITY, f64::max);
            let sum: f64 = (0..n).map(|c| (s * x[at(c)] - m).exp()).sum();
            for c in 0..n {
                let z = s * x[at(c)] - m;
                out[at(c)] = if log { z - sum.ln() } else { z.exp() / sum };
            }
        }
    }
    out
}

fn sm_scale(name: &str, t: Option<f64>) -> (f64, bool) {
    let s = 1.0 / t.unwrap_or(1.0);
    match name {
        "softmin" | "_backward_softmin" => (-s, false),
        "log_softmax" | "_backward_log_softmax" => (s, true),
        _ => (s, false),
    }
}

fn sm_params(axis: i64, t: Option<f64>) -> Vec<(&'static str, AttrValue)> {
    let mut p = vec![("axis", int(axis))];
    if let Some(t) = t {
        p.push(("temperature", float(t)));
    }
    p
}

const SM_SHAPES: &[(&[usize], i64)] = &[
    (&[3, 5], -1),
    (&[3, 5], 0),
    (&[2, 3, 4], 1),
    (&[2, 37], -1),
    (&[4], 0),
    (&[0, 3], -1),
    (&[2, 0], -1),
    (&[2, 0, 3], 1),
];

pub fn softmax(name: &'static str) {
    let mut rng = Rng::new(111);
    for &(shape, axis) in SM_SHAPES {
        for t in [None, Some(2.5)] {
            let x = f64s(&rng.vec(numel(shape), -4.0, 4.0), shape);
            let ax = if axis < 0 { (axis + shape.len() as i64) as usize } else { axis as usize };
            let (s, log) = sm_scale(name, t);
            for dt in [F64, F32, F16] {
                let xd = x.astype(dt);
                let want = softmax_ref(&xd.to_f64_vec(), shape, ax, s, log);
                for (vn, xv) in variants(&xd) {
                    let y = call1(name, &[xv], &sm_params(axis, t));
                    let (r, a) = dtol(dt);
                    check_arr(
                        &format!("{name} {shape:?} axis={axis} t={t:?} {dt} {vn}"),
                        &y,
                        shape,
                        dt,
                        &want,
                        r * 4.0,
                        a * 4.0,
                    );
                }
            }
        }
    }
    // Numerically stable: huge inputs do not overflow; the dtype parameter converts.
    let x = f64s(&[1000.0, 1001.0, -1000.0], &[3]);
    let y = call1(name, &[x.astype(F32)], &[("dtype", string("float64"))]);
    let (s, log) = sm_scale(name, None);
    check_arr(&format!("{name} large"), &y, &[3], F64, &softmax_ref(&x.to_f64_vec(), &[3], 0, s, log), 1e-6, 1e-6);
}

pub fn softmax_grad(name: &'static str) {
    let mut rng = Rng::new(112);
    for &(shape, axis) in &SM_SHAPES[..5] {
        for t in [None, Some(0.7)] {
            let op = build(name, &sm_params(axis, t));
            let x = rand(&mut rng, shape);
            check(&format!("{name} {shape:?} axis={axis} t={t:?}"), &op, &[x], &mut rng, true);
        }
    }
}

/// `_backward_softmax` & co. against the formula, on arbitrary (g, y).
pub fn softmax_backward(name: &'static str) {
    let mut rng = Rng::new(113);
    for &(shape, axis) in SM_SHAPES {
        for t in [None, Some(2.0)] {
            let (s, log) = sm_scale(name, t);
            let ax = if axis < 0 { (axis + shape.len() as i64) as usize } else { axis as usize };
            let (outer, n, inner) = (numel(&shape[..ax]), shape[ax], numel(&shape[ax + 1..]));
            for dt in [F64, F32] {
                let g = arr(&rng.vec(numel(shape), -1.0, 1.0), shape, dt);
                let y = arr(&rng.vec(numel(shape), -1.0, 1.0), shape, dt);
                let (gv, yv) = (g.to_f64_vec(), y.to_f64_vec());
                let mut want = vec![0.0; gv.len()];
                for o in 0..outer {
                    for j in 0..inner {
                        let at = |c: usize| (o * n + c) * inner + j;
                        let d: f64 = (0..n).map(|c| if log { gv[at(c)] } else { gv[at(c)] * yv[at(c)] }).sum();
                        for c in 0..n {
                            let i = at(c);
                            want[i] = if log { s * (gv[i] - yv[i].exp() * d) } else { s * yv[i] * (gv[i] - d) };
                        }
                    }
                }
                for (vn, gvv) in variants(&g) {
                    let r = call1(name, &[gvv, y.clone()], &sm_params(axis, t));
                    let (rt, at) = dtol(dt);
                    check_arr(
                        &format!("{name} {shape:?} axis={axis} {dt} {vn}"),
                        &r,
                        shape,
                        dt,
                        &want,
                        rt * 4.0,
                        at * 4.0,
                    );
                }
            }
        }
    }
}

pub fn softmax_backward_grad(name: &'static str) {
    let mut rng = Rng::new(114);
    for &(shape, axis) in &SM_SHAPES[..3] {
        let op = build(name, &sm_params(axis, Some(1.3)));
        let ins = [rand(&mut rng, shape), rand(&mut rng, shape)];
        check(&format!("{name} {shape:?} axis={axis}"), &op, &ins, &mut rng, true);
    }
}

pub fn softmax_activation(name: &'static str) {
    let mut rng = Rng::new(115);
    for shape in [&[2, 3, 2][..], &[3, 4], &[2, 0, 3], &[4]] {
        for mode in ["instance", "channel"] {
            if mode == "channel" && shape.len() < 2 {
                continue;
            }
            let x = f64s(&rng.vec(numel(shape), -3.0, 3.0), shape);
            let want = if mode == "channel" {
                softmax_ref(&x.to_f64_vec(), shape, 1, 1.0, false)
            } else {
                softmax_ref(&x.to_f64_vec(), &[shape[0], numel(&shape[1..])], 1, 1.0, false)
            };
            for (vn, xv) in variants(&x) {
                let y = call1(name, &[xv], &[("mode", string(mode))]);
                check_arr(&format!("SoftmaxActivation {mode} {shape:?} {vn}"), &y, shape, F64, &want, 1e-12, 1e-13);
            }
        }
    }
}

pub fn softmax_activation_grad(name: &'static str) {
    let mut rng = Rng::new(116);
    for mode in ["instance", "channel"] {
        let op = build(name, &[("mode", string(mode))]);
        for shape in [&[2, 3, 2][..], &[2, 3]] {
            check(&format!("SoftmaxActivation {mode} {shape:?}"), &op, &[rand(&mut rng, shape)], &mut rng, true);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Bad inputs

#[track_caller]
fn expect_err(name: &str, inputs: &[NDArray], params: &[(&str, AttrValue)], kind: &str, needles: &[&str]) {
    let r = ferrograd::call(name, inputs, params);
    let (k, msg) = match &r {
        Err(ferrograd::Error::Shape(m)) => ("shape", m),
        Err(ferrograd::Error::DType(m)) => ("dtype", m),
        Err(ferrograd::Error::Index(m)) => ("index", m),
        Err(ferrograd::Error::Value(m)) => ("value", m),
        Err(ferrograd::Error::Type(m)) => ("type", m),
        _ => panic!("{name}{params:?}: expected a {kind} error, got {r:?}"),
    };
    assert_eq!(k, kind, "{name}: {msg}");
    for n in needles {
        assert!(msg.contains(n), "{name}: message {msg:?} does not mention {n:?}");
    }
}

fn z(shape: &[usize]) -> NDArray {
    NDArray::zeros(shape, F32)
}

#[test]
fn nn_bad_inputs() {
    let fc = |h: i64| vec![("num_hidden", int(h))];
    expect_err(
        "FullyConnected",
        &[z(&[2, 5]), z(&[3, 4]), z(&[3])],
        &fc(3),
        "shape",
        &["FullyConnected", "weight", "(3, 5)", "(3, 4)"],
    );
    expect_err(
        "FullyConnected",
        &[z(&[2, 5]), z(&[3, 5]), z(&[4])],
        &fc(3),
        "shape",
        &["FullyConnected", "bias", "(4,)"],
    );
    expect_err("FullyConnected", &[z(&[2, 5]), z(&[3, 5])], &fc(3), "value", &["FullyConnected", "3 input"]);
    expect_err("FullyConnected", &[z(&[2, 5]), z(&[3, 5]), z(&[3])], &[], "value", &["FullyConnected", "num_hidden"]);
    expect_err(
        "FullyConnected",
        &[z(&[2, 5]), z(&[3, 5]).astype(F64), z(&[3])],
        &fc(3),
        "dtype",
        &["FullyConnected", "weight"],
    );
    expect_err(
        "FullyConnected",
        &[z(&[2, 5]), z(&[3, 5]), z(&[3])],
        &[("num_hidden", int(3)), ("flaten", boolean(true))],
        "type",
        &["unknown parameter 'flaten'"],
    );
    expect_err(
        "FullyConnected",
        &[z(&[2, 5]), z(&[3, 5]), z(&[3])],
        &[("num_hidden", string("abc"))],
        "value",
        &["num_hidden"],
    );
    expect_err("linalg_gemm2", &[z(&[2, 3]), z(&[4, 2])], &[], "shape", &["linalg_gemm2", "(2, 3)", "(4, 2)"]);
    expect_err("linalg_gemm2", &[z(&[2, 2, 3]), z(&[3, 3, 2])], &[], "shape", &["linalg_gemm2", "batch"]);
    expect_err(
        "Embedding",
        &[z(&[2]), z(&[5, 3])],
        &[("input_dim", int(4)), ("output_dim", int(3))],
        "shape",
        &["Embedding", "weight", "(4, 3)", "(5, 3)"],
    );
    expect_err("Embedding", &[z(&[2]), z(&[4, 3])], &[("input_dim", int(4))], "value", &["Embedding", "output_dim"]);
    expect_err(
        "Activation",
        &[z(&[2])],
        &[("act_type", string("relu6"))],
        "value",
        &["Activation", "act_type", "relu6"],
    );
    expect_err("Activation", &[z(&[2])], &[], "value", &["Activation", "act_type"]);
    expect_err(
        "Activation",
        &[NDArray::zeros(&[2], I32)],
        &[("act_type", string("relu"))],
        "dtype",
        &["Activation", "int32"],
    );
    expect_err(
        "LeakyReLU",
        &[z(&[2, 3, 4]), z(&[4])],
        &[("act_type", string("prelu"))],
        "shape",
        &["LeakyReLU", "gamma", "(3,)", "(4,)"],
    );
    expect_err(
        "LeakyReLU",
        &[z(&[2])],
        &[("act_type", string("rrelu")), ("upper_bound", float(f64::INFINITY))],
        "value",
        &["LeakyReLU", "rrelu", "upper_bound"],
    );
    expect_err("softmax", &[z(&[2, 3])], &[("axis", int(2))], "index", &["softmax", "axis 2"]);
    expect_err("log_softmax", &[z(&[2, 3])], &[("temperature", float(0.0))], "value", &["log_softmax", "temperature"]);
    expect_err("softmax", &[NDArray::zeros(&[2], I64)], &[], "dtype", &["softmax", "int64"]);
    expect_err("softmax", &[z(&[2])], &[("use_length", boolean(true))], "value", &["softmax", "length"]);
    expect_err(
        "SoftmaxActivation",
        &[z(&[2])],
        &[("mode", string("channel"))],
        "shape",
        &["SoftmaxActivation", "(2,)"],
    );
    expect_err(
        "SoftmaxActivation",
        &[z(&[2, 2])],
        &[("mode", string("spatial"))],
        "value",
        &["SoftmaxActivation", "mode"],
    );
    expect_err(
        "_backward_softmax",
        &[z(&[2, 3]), z(&[3, 2])],
        &[],
        "shape",
        &["_backward_softmax", "(2, 3)", "(3, 2)"],
    );
    expect_err("SoftmaxOutput", &[z(&[4, 3]), z(&[3])], &[], "shape", &["SoftmaxOutput", "label", "(3,)", "(4, 3)"]);
    expect_err(
        "Softmax",
        &[z(&[2, 3, 4]), z(&[3, 4])],
        &[("multi_output", boolean(true))],
        "shape",
        &["SoftmaxOutput", "(3, 4)"],
    );
    expect_err(
        "SoftmaxOutput",
        &[z(&[4, 3]), z(&[4])],
        &[("normalization", string("sum"))],
        "value",
        &["SoftmaxOutput", "normalization", "sum"],
    );
    expect_err(
        "softmax_cross_entropy",
        &[z(&[2, 3]), z(&[3])],
        &[],
        "shape",
        &["softmax_cross_entropy", "(2, 3)", "(3,)"],
    );
    expect_err(
        "softmax_cross_entropy",
        &[z(&[2, 3]), f64s(&[0.0, 3.0], &[2])],
        &[],
        "index",
        &["softmax_cross_entropy", "label 3", "3 classes"],
    );
    expect_err(
        "LinearRegressionOutput",
        &[z(&[2, 3]), z(&[2, 2])],
        &[],
        "shape",
        &["LinearRegressionOutput", "(2, 2)", "(2, 3)"],
    );
    expect_err("MakeLoss", &[z(&[2])], &[("normalization", string("mean"))], "value", &["MakeLoss", "normalization"]);
    expect_err("Dropout", &[z(&[2])], &[("p", float(1.5))], "value", &["Dropout", "p"]);
    expect_err("Dropout", &[z(&[2])], &[("mode", string("train"))], "value", &["Dropout", "mode"]);
    expect_err("Dropout", &[z(&[2, 2])], &[("axes", tuple(&[2]))], "index", &["Dropout"]);
}

/// MXNet string attributes (`'(3, 3)'`, `'True'`, `'relu'`) build the same ops as typed values.
#[test]
fn nn_params_from_strings() {
    let x = f64s(&[1.0, -2.0, 3.0, 0.5, -0.1, 2.0], &[2, 3]);
    let w = f64s(&[0.1, 0.2, 0.3, -0.4, 0.5, 0.6], &[2, 3]);
    let a =
        call1("FullyConnected", &[x.clone(), w.clone()], &[("num_hidden", string("2")), ("no_bias", string("True"))]);
    let b = call1("FullyConnected", &[x.clone(), w], &[("num_hidden", int(2)), ("no_bias", boolean(true))]);
    assert_eq!(a.to_f64_vec(), b.to_f64_vec());
    let a = call1("Activation", std::slice::from_ref(&x), &[("act_type", string("tanh"))]);
    assert_eq!(a.to_f64_vec(), call1("tanh", std::slice::from_ref(&x), &[]).to_f64_vec());
    let a = call1("softmax", std::slice::from_ref(&x), &[("axis", string("0")), ("temperature", string("2.0"))]);
    let b = call1("softmax", std::slice::from_ref(&x), &[("axis", int(0)), ("temperature", float(2.0))]);
    assert_eq!(a.to_f64_vec(), b.to_f64_vec());
    let a = call1("Dropout", std::slice::from_ref(&x), &[("axes", string("(0, 1)")), ("p", string("0.2"))]);
    assert_eq!(a.to_f64_vec(), x.to_f64_vec()); // predict mode
    let _ = (I32, I64, F16);
}
