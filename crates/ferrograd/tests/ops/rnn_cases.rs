//! The fused `RNN` op: a hand-derived forward, shape errors, and its native BPTT gradient
//! (`_backward_RNN`) against finite differences of the visible outputs for every mode, two layers,
//! both directions; and its differentiable rule (taken under create_graph), equal to the fused one
//! at first order and checked against finite differences at second order. Full NumPy/MXNet
//! comparisons live in the Python tests (`tests/test_rnn_op.py`, `tests/test_second_order_rnn.py`).

use ferrograd::call;
use ferrograd::ops::grad::eval_grad;
use ferrograd::ops::{self, Ctx, EagerGraph, Grad, GradGraph, OpRef, Val};
use ferrograd::{Error, NDArray};

use crate::common::*;
use crate::gradcheck::{build, check_second, EPS};

fn rnn_p(mode: &str, layers: i64, bidir: bool) -> Vec<(&'static str, ferrograd::ops::AttrValue)> {
    vec![
        ("state_size", int(2)),
        ("num_layers", int(layers)),
        ("mode", string(mode)),
        ("bidirectional", boolean(bidir)),
        ("state_outputs", boolean(true)),
    ]
}

fn gates(mode: &str) -> usize {
    match mode {
        "lstm" => 4,
        "gru" => 3,
        _ => 1,
    }
}

/// Inputs `(data, parameters, state[, state_cell])` for T=3, N=2, I=3, H=2.
fn inputs(mode: &str, layers: usize, dirs: usize, rng: &mut Rng) -> Vec<NDArray> {
    let (t, n, i, h) = (3, 2, 3, 2);
    let g = gates(mode);
    let size: usize = (0..layers).map(|l| dirs * g * h * (if l == 0 { i } else { dirs * h } + h + 2)).sum();
    let mut v = vec![
        f64s(&rng.signed(t * n * i, 0.1, 1.0), &[t, n, i]),
        f64s(&rng.signed(size, 0.1, 0.6), &[size]),
        f64s(&rng.signed(layers * dirs * n * h, 0.1, 1.0), &[layers * dirs, n, h]),
    ];
    if mode == "lstm" {
        v.push(f64s(&rng.signed(layers * dirs * n * h, 0.1, 1.0), &[layers * dirs, n, h]));
    }
    v
}

/// One tanh unit, one input, two steps: h1 = tanh(w·x1 + u·h0 + b1 + b2), h2 likewise.
pub fn rnn(name: &'static str) {
    let p = [("state_size", int(1)), ("num_layers", int(1)), ("mode", string("rnn_tanh"))];
    let (w, u, b1, b2, h0) = (0.5, -0.3, 0.1, 0.2, 0.4);
    let x = f64s(&[1.0, -2.0], &[2, 1, 1]);
    let y = call1(name, &[x, f64s(&[w, u, b1, b2], &[4]), f64s(&[h0], &[1, 1, 1])], &p);
    let h1 = (w + u * h0 + b1 + b2).tanh();
    let h2 = (-2.0 * w + u * h1 + b1 + b2).tanh();
    check_arr("rnn_tanh by hand", &y, &[2, 1, 1], ferrograd::DType::F64, &[h1, h2], 1e-12, 1e-12);
    // A wrong parameter vector names the op, the argument and both sizes.
    let r = call(name, &[f64s(&[0.0; 6], &[3, 2, 1]), f64s(&[0.0; 5], &[5]), f64s(&[0.0; 2], &[1, 2, 1])], &p);
    assert!(
        matches!(r, Err(Error::Shape(ref m)) if m.contains("RNN") && m.contains("parameters") && m.contains("(5,)") && m.contains("(4,)")),
        "{r:?}"
    );
    let r = call(name, &[f64s(&[0.0; 6], &[3, 2, 1]), f64s(&[0.0; 4], &[4]), f64s(&[0.0; 3], &[1, 3, 1])], &p);
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("state") && m.contains("(1, 3, 1)")), "{r:?}");
}

fn visible_dot(op: &OpRef, xs: &[NDArray], v: &[NDArray]) -> f64 {
    let outs = ops::run(op.as_ref(), &Ctx::default(), xs).unwrap();
    outs.iter().zip(v).map(|(o, w)| o.to_f64_vec().iter().zip(w.to_f64_vec()).map(|(a, b)| a * b).sum::<f64>()).sum()
}

/// The rule's gradients (head zero on the hidden reserve) against central differences.
pub fn rnn_grad(name: &'static str) {
    let mut rng = Rng::new(41);
    for mode in ["rnn_relu", "rnn_tanh", "lstm", "gru"] {
        for (layers, dirs) in [(1, 1), (2, 2)] {
            let op = build(name, &rnn_p(mode, layers as i64, dirs == 2));
            let xs = inputs(mode, layers, dirs, &mut rng);
            let outs = ops::run(op.as_ref(), &Ctx::default(), &xs).unwrap();
            let vis = op.num_visible_outputs();
            let mut v: Vec<NDArray> =
                outs[..vis].iter().map(|o| f64s(&rng.signed(o.size(), 0.5, 2.0), o.shape())).collect();
            let grads = eval_grad(op.as_ref(), &xs, &{
                let mut all = v.clone();
                all.push(NDArray::zeros(outs[vis].shape(), outs[vis].dtype()));
                all
            })
            .unwrap();
            v.truncate(vis);
            for (i, x) in xs.iter().enumerate() {
                let g = grads[i].as_ref().expect("gradient").to_f64_vec();
                for (j, &gj) in g.iter().enumerate() {
                    let mut d = x.to_f64_vec();
                    d[j] += EPS;
                    let mut p = xs.clone();
                    p[i] = f64s(&d, x.shape());
                    let fp = visible_dot(&op, &p, &v);
                    d[j] -= 2.0 * EPS;
                    p[i] = f64s(&d, x.shape());
                    let fm = visible_dot(&op, &p, &v);
                    let fd = (fp - fm) / (2.0 * EPS);
                    assert!(
                        close(gj, fd, 1e-5, 1e-6),
                        "{mode} L{layers} D{dirs}: d/d input{i}[{j}]: rule {gj} vs fd {fd}"
                    );
                }
            }
        }
    }
}

/// `_backward_RNN` called directly equals the gradient the RNN rule produces.
pub fn rnn_backward(name: &'static str) {
    let mut rng = Rng::new(42);
    let p = rnn_p("gru", 2, true);
    let fwd = build("RNN", &p);
    let xs = inputs("gru", 2, 2, &mut rng);
    let outs = ops::run(fwd.as_ref(), &Ctx::default(), &xs).unwrap();
    let dy = f64s(&rng.signed(outs[0].size(), 0.5, 2.0), outs[0].shape());
    let dh = f64s(&rng.signed(outs[1].size(), 0.5, 2.0), outs[1].shape());
    let want =
        eval_grad(fwd.as_ref(), &xs, &[dy.clone(), dh.clone(), NDArray::zeros(outs[2].shape(), outs[2].dtype())])
            .unwrap();
    let back = build(name, &p);
    let got = ops::run(
        back.as_ref(),
        &Ctx::default(),
        &[xs[0].clone(), xs[1].clone(), xs[2].clone(), outs[2].clone(), dy, dh],
    )
    .unwrap();
    for i in 0..3 {
        assert_close(
            &format!("{name} output {i}"),
            &got[i].to_f64_vec(),
            &want[i].as_ref().unwrap().to_f64_vec(),
            1e-12,
            1e-12,
        );
    }
}

/// Evaluates gradient rules on arrays like [`EagerGraph`], reporting itself differentiable or
/// not, so that rules take their create_graph path (RNN: BPTT in ops) or their fused one.
struct Graph {
    eager: EagerGraph,
    differentiable: bool,
}

impl GradGraph for Graph {
    fn apply(&mut self, op: OpRef, inputs: &[Val]) -> ferrograd::Result<Vec<Val>> {
        self.eager.apply(op, inputs)
    }
    fn meta(&self, v: Val) -> ferrograd::Meta {
        self.eager.meta(v)
    }
    fn differentiable(&self) -> bool {
        self.differentiable
    }
}

/// The rule's gradients for the forward's `outs` (reserve last) and visible heads `v`.
fn rule_at(op: &OpRef, xs: &[NDArray], outs: &[NDArray], v: &[NDArray], differentiable: bool) -> Vec<NDArray> {
    let mut graph = Graph { eager: EagerGraph::default(), differentiable };
    let reserve = outs.last().expect("reserve");
    let zero = NDArray::zeros(reserve.shape(), reserve.dtype());
    let ins: Vec<Val> = xs.iter().map(|x| graph.eager.push(x.clone())).collect();
    let ys: Vec<Val> = outs.iter().map(|y| graph.eager.push(y.clone())).collect();
    let hs: Vec<Val> = v.iter().chain([&zero]).map(|h| graph.eager.push(h.clone())).collect();
    let grads = op.grad(&mut Grad::new(&mut graph), &ins, &ys, &hs).unwrap_or_else(|e| panic!("RNN rule: {e}"));
    grads.into_iter().map(|gv| graph.eager.get(gv.expect("a gradient for every input")).clone()).collect()
}

struct Config {
    mode: &'static str,
    layers: usize,
    dirs: usize,
    state_outputs: bool,
    extra: Vec<(&'static str, ferrograd::ops::AttrValue)>,
}

fn cfg(mode: &'static str, layers: usize, dirs: usize) -> Config {
    Config { mode, layers, dirs, state_outputs: true, extra: Vec::new() }
}

impl Config {
    fn op(&self) -> OpRef {
        let mut p = rnn_p(self.mode, self.layers as i64, self.dirs == 2);
        p[4].1 = boolean(self.state_outputs);
        p.extend(self.extra.iter().cloned());
        build("RNN", &p)
    }
    fn what(&self) -> String {
        format!("{} L{} D{} state_outputs={} {:?}", self.mode, self.layers, self.dirs, self.state_outputs, self.extra)
    }
}

/// Random visible heads for `outs` (reserve last, excluded).
fn visible_heads(op: &OpRef, outs: &[NDArray], rng: &mut Rng) -> Vec<NDArray> {
    outs[..op.num_visible_outputs()].iter().map(|o| f64s(&rng.signed(o.size(), 0.5, 2.0), o.shape())).collect()
}

/// The differentiable rule's first-order gradients equal the fused `_backward_RNN`'s.
fn paths_agree(what: &str, op: &OpRef, xs: &[NDArray], outs: &[NDArray], v: &[NDArray]) {
    let fused = rule_at(op, xs, outs, v, false);
    let composed = rule_at(op, xs, outs, v, true);
    for (i, (a, b)) in composed.iter().zip(&fused).enumerate() {
        assert_eq!(a.shape(), b.shape(), "{what}: gradient {i} shape");
        let what = format!("{what}: gradient {i}, ops vs fused");
        assert_close(&what, &a.to_f64_vec(), &b.to_f64_vec(), 1e-10, 1e-10);
    }
}

fn configs() -> Vec<Config> {
    let mut v = Vec::new();
    for mode in ["rnn_relu", "rnn_tanh", "lstm", "gru"] {
        v.push(cfg(mode, 1, 1));
        v.push(cfg(mode, 2, 2));
    }
    v.push(Config { state_outputs: false, ..cfg("lstm", 2, 1) });
    v.push(Config { state_outputs: false, ..cfg("rnn_tanh", 1, 2) });
    v.push(Config {
        extra: vec![("lstm_state_clip_min", float(-0.5)), ("lstm_state_clip_max", float(0.5))],
        ..cfg("lstm", 1, 2)
    });
    // Dropout between layers (inference here: the masks in the reserve are ones).
    v.push(Config { extra: vec![("p", float(0.3))], ..cfg("gru", 2, 1) });
    v
}

/// Under create_graph the rule is BPTT written in ops: its first-order result equals the fused
/// `_backward_RNN`, and differentiating it again agrees with central differences of the fused
/// gradient (every mode; two bidirectional layers; hy/cy heads or none; clipping; dropout).
#[test]
fn rnn_second_order() {
    let mut rng = Rng::new(43);
    for c in configs() {
        let (op, what) = (c.op(), c.what());
        let xs = inputs(c.mode, c.layers, c.dirs, &mut rng);
        let outs = ops::run(op.as_ref(), &Ctx::default(), &xs).unwrap();
        let v = visible_heads(&op, &outs, &mut rng);
        paths_agree(&what, &op, &xs, &outs, &v);
        let mut all = v.clone();
        all.push(NDArray::zeros(outs[outs.len() - 1].shape(), outs[0].dtype()));
        check_second(&what, &op, &xs, &all, &mut rng);
    }
}

/// Training-mode dropout: the differentiable rule reads the forward's masks from the reserve, so
/// it drops the same units as the fused backward.
#[test]
fn rnn_second_order_dropout_masks() {
    let mut rng = Rng::new(44);
    for mode in ["lstm", "rnn_relu"] {
        let c = Config { extra: vec![("p", float(0.5))], ..cfg(mode, 3, 2) };
        let (op, what) = (c.op(), c.what());
        let xs = inputs(c.mode, c.layers, c.dirs, &mut rng);
        let outs = ops::run(op.as_ref(), &Ctx { is_train: true }, &xs).unwrap();
        let v = visible_heads(&op, &outs, &mut rng);
        paths_agree(&what, &op, &xs, &outs, &v);
    }
}
