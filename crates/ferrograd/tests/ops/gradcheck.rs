//! Finite-difference checking of gradient rules, first and second order.
//!
//! First order: `eval_grad(op, x, v)` must equal the central difference of `F(x) = Σ out·v`
//! (`EPS` = 1e-6, `|got - fd| <= 1e-6 + 1e-5·|fd|`), with `v` random and non-unit.
//! Second order: the gradient rule is replayed on a small recording graph, and the vector-Jacobian
//! product of its result with a random `w` (computed by applying each recorded op's own rule) must
//! equal the central difference of `G(x) = Σ eval_grad(op, x, v)·w` (`EPS2` = 1e-5,
//! `|got - fd| <= 1e-5 + 1e-4·|fd|`). That checks that rules are built from ops whose own rules
//! are right, i.e. that gradients are themselves differentiable.

use std::collections::HashMap;

use ferrograd::ops::grad::eval_grad;
use ferrograd::ops::registry::create;
use ferrograd::ops::{self, unbroadcast, Attrs, Ctx, Grad, GradGraph, OpRef, Val};
use ferrograd::{DType, Meta, NDArray};

use crate::common::*;

pub const EPS: f64 = 1e-6;
pub const RTOL: f64 = 1e-5;
pub const ATOL: f64 = 1e-6;
pub const EPS2: f64 = 1e-5;
pub const RTOL2: f64 = 1e-4;
pub const ATOL2: f64 = 1e-5;

pub fn build(name: &str, params: &[(&'static str, ferrograd::ops::AttrValue)]) -> OpRef {
    let mut a = Attrs::new(name);
    for (k, v) in params {
        a.items.push((k.to_string(), v.clone()));
    }
    create(name, &a).unwrap_or_else(|e| panic!("{name}{params:?}: {e}"))
}

fn with_element(x: &NDArray, j: usize, delta: f64) -> NDArray {
    let mut v = x.to_f64_vec();
    v[j] += delta;
    f64s(&v, x.shape())
}

fn dot_all(a: &[NDArray], b: &[NDArray]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x.to_f64_vec().iter().zip(y.to_f64_vec()).map(|(p, q)| p * q).sum::<f64>()).sum()
}

/// Random head gradients shaped like the op's outputs: magnitudes in [0.5, 2), random signs.
fn heads(outs: &[NDArray], rng: &mut Rng) -> Vec<NDArray> {
    outs.iter().map(|o| f64s(&rng.signed(o.size(), 0.5, 2.0), o.shape())).collect()
}

/// Gradients from the rule, `None` replaced by zeros, checked for shape and dtype.
fn rule_grads(what: &str, op: &OpRef, inputs: &[NDArray], v: &[NDArray]) -> Vec<NDArray> {
    let gs = eval_grad(op.as_ref(), inputs, v).unwrap_or_else(|e| panic!("{what}: eval_grad failed: {e}"));
    assert_eq!(gs.len(), inputs.len(), "{what}: one gradient per input");
    gs.into_iter()
        .zip(inputs)
        .map(|(g, x)| match g {
            Some(g) => {
                assert_eq!(g.shape(), x.shape(), "{what}: gradient shape");
                assert_eq!(g.dtype(), x.dtype(), "{what}: gradient dtype");
                g
            }
            None => NDArray::zeros(x.shape(), x.dtype()),
        })
        .collect()
}

/// Checks the op's gradient rule at `inputs` (float64) against finite differences, and (when
/// `second`) its second-order behaviour too.
pub fn check(what: &str, op: &OpRef, inputs: &[NDArray], rng: &mut Rng, second: bool) {
    let outs = ops::run(op.as_ref(), &Ctx::default(), inputs).unwrap_or_else(|e| panic!("{what}: forward: {e}"));
    let v = heads(&outs, rng);
    let got = rule_grads(what, op, inputs, &v);
    let f = |xs: &[NDArray]| dot_all(&ops::run(op.as_ref(), &Ctx::default(), xs).unwrap(), &v);
    for (i, x) in inputs.iter().enumerate() {
        let g = got[i].to_f64_vec();
        if x.dtype() != DType::F64 {
            // Index inputs (integer dtypes) receive no gradient.
            assert!(g.iter().all(|&v| v == 0.0), "{what}: input{i} of dtype {} got a gradient", x.dtype());
            continue;
        }
        for (j, &gj) in g.iter().enumerate() {
            let mut xs = inputs.to_vec();
            xs[i] = with_element(x, j, EPS);
            let fp = f(&xs);
            xs[i] = with_element(x, j, -EPS);
            let fm = f(&xs);
            let fd = (fp - fm) / (2.0 * EPS);
            assert!(
                close(gj, fd, RTOL, ATOL),
                "{what}: d/d input{i}[{j}]: rule {} vs finite difference {fd} (x = {:?})",
                gj,
                x.to_f64_vec()
            );
        }
    }
    check_tape(what, op, inputs, &v, &got);
    if second {
        check_second(what, op, inputs, &v, rng);
    }
}

/// The same gradients through the autograd tape, which gives the rule only the tensors the op
/// declares in `saves()` (placeholders for the rest): a wrong declaration shows up here.
pub fn check_tape(what: &str, op: &OpRef, inputs: &[NDArray], v: &[NDArray], want: &[NDArray]) {
    use ferrograd::autograd::{self, BackwardArgs, Entry, GradReq, Tracked};
    let xs: Vec<Tracked> = inputs
        .iter()
        .map(|x| {
            let mut x = Tracked::new(x.clone());
            if x.dtype().is_float() {
                x.set_entry(Some(Entry::variable(NDArray::zeros(x.shape(), x.dtype()), GradReq::Write)));
            }
            x
        })
        .collect();
    let prev = autograd::set_recording(true);
    let outs = autograd::invoke(op, xs.iter().cloned());
    autograd::set_recording(prev);
    let outs = outs.unwrap_or_else(|e| panic!("{what}: recorded forward: {e}"));
    let (vars, wants): (Vec<Tracked>, Vec<&NDArray>) =
        xs.iter().zip(want).filter(|(x, _)| x.has_entry()).map(|(x, w)| (x.clone(), w)).unzip();
    if vars.is_empty() || outs.iter().all(|o| !o.has_entry()) {
        return;
    }
    let heads: Vec<Option<Tracked>> = v.iter().cloned().map(|g| Some(Tracked::new(g))).collect();
    let args = BackwardArgs { retain_graph: false, create_graph: false, train_mode: false };
    let got = autograd::grad(&outs, &heads, &vars, args).unwrap_or_else(|e| panic!("{what}: tape grad: {e}"));
    for (i, (g, w)) in got.iter().zip(wants).enumerate() {
        assert_eq!(g.to_f64_vec(), w.to_f64_vec(), "{what}: tape gradient {i} differs from the rule's (saves()?)");
    }
}

/// A graph that records every op applied (the forward op and the gradient rule's ops).
#[derive(Default)]
struct Recorder {
    vals: Vec<NDArray>,
    nodes: Vec<(OpRef, Vec<Val>, Vec<Val>)>,
}

impl Recorder {
    fn leaf(&mut self, x: NDArray) -> Val {
        self.vals.push(x);
        Val(self.vals.len() as u32 - 1)
    }
}

impl GradGraph for Recorder {
    fn apply(&mut self, op: OpRef, inputs: &[Val]) -> ferrograd::Result<Vec<Val>> {
        let xs: Vec<NDArray> = inputs.iter().map(|v| self.vals[v.0 as usize].clone()).collect();
        let outs = ops::run(op.as_ref(), &Ctx::default(), &xs)?;
        let ys: Vec<Val> = outs.into_iter().map(|o| self.leaf(o)).collect();
        self.nodes.push((op, inputs.to_vec(), ys.clone()));
        Ok(ys)
    }
    fn meta(&self, v: Val) -> Meta {
        self.vals[v.0 as usize].meta()
    }
}

/// `∂/∂x Σ grad(x)·w` by reverse accumulation over the recorded rule, each node differentiated
/// with its own rule (`eval_grad`).
fn second_by_rules(op: &OpRef, inputs: &[NDArray], v: &[NDArray], w: &[NDArray]) -> Vec<NDArray> {
    let mut rec = Recorder::default();
    let xs: Vec<Val> = inputs.iter().map(|x| rec.leaf(x.clone())).collect();
    let ys = rec.apply(op.clone(), &xs).unwrap();
    let gs: Vec<Val> = v.iter().map(|g| rec.leaf(g.clone())).collect();
    let mut g = Grad::new(&mut rec);
    let grads = op.grad(&mut g, &xs, &ys, &gs).unwrap();
    let mut firsts = Vec::new();
    for (gv, x) in grads.into_iter().zip(inputs) {
        firsts.push(gv.map(|gv| unbroadcast(&mut g, gv, x.shape()).unwrap()));
    }
    let mut adj: HashMap<u32, NDArray> = HashMap::new();
    let add = |adj: &mut HashMap<u32, NDArray>, k: u32, g: NDArray| {
        let s = match adj.remove(&k) {
            Some(a) => ferrograd::call("elemwise_add", &[a, g], &[]).unwrap().swap_remove(0),
            None => g,
        };
        adj.insert(k, s);
    };
    for (f, wi) in firsts.iter().zip(w) {
        if let Some(f) = f {
            add(&mut adj, f.0, wi.clone());
        }
    }
    for (nop, ins, outs) in rec.nodes.iter().rev() {
        if !outs.iter().any(|o| adj.contains_key(&o.0)) || !nop.differentiable() {
            continue;
        }
        let og: Vec<NDArray> = outs
            .iter()
            .map(|o| {
                adj.get(&o.0).cloned().unwrap_or_else(|| NDArray::zeros(rec.vals[o.0 as usize].shape(), DType::F64))
            })
            .collect();
        let xv: Vec<NDArray> = ins.iter().map(|i| rec.vals[i.0 as usize].clone()).collect();
        let gi =
            eval_grad(nop.as_ref(), &xv, &og).unwrap_or_else(|e| panic!("second order through {}: {e}", nop.name()));
        for (i, gi) in ins.iter().zip(gi) {
            if let Some(gi) = gi {
                if gi.dtype() == DType::F64 {
                    add(&mut adj, i.0, gi);
                }
            }
        }
    }
    xs.iter()
        .zip(inputs)
        .map(|(x, xi)| adj.remove(&x.0).unwrap_or_else(|| NDArray::zeros(xi.shape(), DType::F64)))
        .collect()
}

pub fn check_second(what: &str, op: &OpRef, inputs: &[NDArray], v: &[NDArray], rng: &mut Rng) {
    let w: Vec<NDArray> = inputs
        .iter()
        .map(|x| {
            if x.dtype() == DType::F64 {
                f64s(&rng.signed(x.size(), 0.5, 2.0), x.shape())
            } else {
                NDArray::zeros(x.shape(), x.dtype())
            }
        })
        .collect();
    let got = second_by_rules(op, inputs, v, &w);
    let g_of = |xs: &[NDArray]| dot_all(&rule_grads(what, op, xs, v), &w);
    for (i, x) in inputs.iter().enumerate().filter(|(_, x)| x.dtype() == DType::F64) {
        let gv = got[i].to_f64_vec();
        for (j, &gj) in gv.iter().enumerate() {
            let mut xs = inputs.to_vec();
            xs[i] = with_element(x, j, EPS2);
            let gp = g_of(&xs);
            xs[i] = with_element(x, j, -EPS2);
            let gm = g_of(&xs);
            let fd = (gp - gm) / (2.0 * EPS2);
            assert!(
                close(gj, fd, RTOL2, ATOL2),
                "{what}: second order d/d input{i}[{j}]: rules {} vs finite difference {fd} (x = {:?})",
                gj,
                x.to_f64_vec()
            );
        }
    }
}

/// The checker itself: it rejects a wrong first-order rule, and a rule that is right in value but
/// built from an op without a gradient (wrong at second order).
mod self_test {
    use std::sync::Arc;

    use ferrograd::ops::{unary::Unary, unary::UnaryKind, Ctx, Grad, Op, OpRef, Val};
    use ferrograd::{Meta, NDArray, Result};

    use super::check;
    use crate::common::{f64s, Rng};

    /// `exp` whose rule is `gy·y·scale`, optionally routing `y` through [`Frozen`].
    #[derive(Debug)]
    struct Exp {
        scale: f64,
        freeze: bool,
    }

    /// Identity that claims a zero gradient.
    #[derive(Debug)]
    struct Frozen;

    impl Op for Frozen {
        fn name(&self) -> &'static str {
            "_test_frozen"
        }
        fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
            Ok(vec![inputs[0].clone()])
        }
        fn forward(&self, _c: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
            outputs[0] = inputs[0].copy();
            Ok(())
        }
        fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
            Ok(vec![None])
        }
    }

    impl Op for Exp {
        fn name(&self) -> &'static str {
            "_test_exp"
        }
        fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
            Ok(vec![inputs[0].clone()])
        }
        fn forward(&self, c: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
            Unary { kind: UnaryKind::Exp }.forward(c, inputs, outputs)
        }
        fn grad(&self, g: &mut Grad<'_>, _i: &[Val], outputs: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
            let y = if self.freeze { g.apply1(Frozen, &[outputs[0]])? } else { outputs[0] };
            let t = g.mul(og[0], y)?;
            Ok(vec![Some(g.mul_scalar(t, self.scale)?)])
        }
    }

    fn fails(op: OpRef, second: bool) -> bool {
        let x = f64s(&[0.3, -0.7, 1.1], &[3]);
        let run = std::panic::AssertUnwindSafe(|| check("self-test", &op, &[x], &mut Rng::new(1), second));
        std::panic::catch_unwind(run).is_err()
    }

    #[test]
    fn checker_is_not_vacuous() {
        assert!(!fails(Arc::new(Exp { scale: 1.0, freeze: false }), true), "a correct rule must pass");
        assert!(fails(Arc::new(Exp { scale: 1.01, freeze: false }), false), "a 1% error must be caught");
        assert!(!fails(Arc::new(Exp { scale: 1.0, freeze: true }), false), "first order is right");
        assert!(fails(Arc::new(Exp { scale: 1.0, freeze: true }), true), "second order is wrong");
    }
}
