//! The builder that gradient rules are written against.
//!
//! A rule sees only [`Val`] handles and builds new values by applying ops. [`EagerGraph`] evaluates
//! them immediately on NDArrays; the autograd tape (recording under `create_graph`) and the symbol
//! graph provide other implementations, so one rule serves every consumer and is itself
//! differentiable.

use std::sync::Arc;

use super::binary::{Binary, BinaryKind, Scalar};
use super::broadcast::{BroadcastExact, BroadcastTo};
use super::convert::Cast;
use super::fill::Fill;
use super::layout::{Reshape, ReshapeExact, Transpose};
use super::matmul::Dot;
use super::reduce::{Reduce, ReduceKind};
use super::unary::{Unary, UnaryKind};
use super::{run, Ctx, Op, OpRef};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::{Meta, NDArray};

/// A value in the graph a gradient rule is building.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Val(pub u32);

/// Something that can apply ops to values: eager arrays, a recording tape, a symbolic graph.
pub trait GradGraph {
    fn apply(&mut self, op: OpRef, inputs: &[Val]) -> Result<Vec<Val>>;
    fn meta(&self, v: Val) -> Meta;
    /// The concrete array behind `v`, for graphs that evaluate eagerly (`None` for symbolic ones).
    /// (The tape and the eager evaluator read their results through it.)
    fn value(&self, _v: Val) -> Option<NDArray> {
        None
    }
    /// Whether the caller wants a gradient for input value `v`. Rules may skip the work for an
    /// input that needs none (FullyConnected's data gradient); returning it anyway is harmless.
    fn needs_grad(&self, _v: Val) -> bool {
        true
    }
    /// Whether the values built here may be differentiated again (a `create_graph` tape): a rule
    /// with a faster fused first-order backward uses it only when not.
    fn differentiable(&self) -> bool {
        true
    }
    /// The graph itself, for a gradient rule defined by the layer that owns the graph type (the
    /// autograd tape's custom functions read its tracked values); `None` by default.
    fn as_any_mut(&mut self) -> Option<&mut dyn std::any::Any> {
        None
    }
}

/// Convenience methods over a [`GradGraph`] for writing gradient rules.
pub struct Grad<'a> {
    graph: &'a mut dyn GradGraph,
}

impl<'a> Grad<'a> {
    pub fn new(graph: &'a mut dyn GradGraph) -> Self {
        Grad { graph }
    }

    pub fn apply(&mut self, op: OpRef, inputs: &[Val]) -> Result<Vec<Val>> {
        self.graph.apply(op, inputs)
    }

    /// See [`GradGraph::differentiable`].
    pub fn differentiable(&self) -> bool {
        self.graph.differentiable()
    }

    pub fn apply1(&mut self, op: impl Op + 'static, inputs: &[Val]) -> Result<Val> {
        Ok(self.graph.apply(Arc::new(op), inputs)?[0])
    }

    pub fn meta(&self, v: Val) -> Meta {
        self.graph.meta(v)
    }

    /// See [`GradGraph::needs_grad`].
    pub fn needs_grad(&self, v: Val) -> bool {
        self.graph.needs_grad(v)
    }

    /// See [`GradGraph::as_any_mut`].
    pub fn graph_any(&mut self) -> Option<&mut dyn std::any::Any> {
        self.graph.as_any_mut()
    }

    pub fn shape(&self, v: Val) -> Vec<usize> {
        self.graph.meta(v).shape.to_vec()
    }

    fn bin(&mut self, kind: BinaryKind, a: Val, b: Val) -> Result<Val> {
        self.apply1(Binary { kind, broadcast: true }, &[a, b])
    }

    pub fn add(&mut self, a: Val, b: Val) -> Result<Val> {
        self.bin(BinaryKind::Add, a, b)
    }
    pub fn sub(&mut self, a: Val, b: Val) -> Result<Val> {
        self.bin(BinaryKind::Sub, a, b)
    }
    pub fn mul(&mut self, a: Val, b: Val) -> Result<Val> {
        self.bin(BinaryKind::Mul, a, b)
    }
    pub fn div(&mut self, a: Val, b: Val) -> Result<Val> {
        self.bin(BinaryKind::Div, a, b)
    }
    /// `a op b` for any binary kind (comparisons give 0/1 in a's dtype).
    pub fn binary(&mut self, kind: BinaryKind, a: Val, b: Val) -> Result<Val> {
        self.bin(kind, a, b)
    }
    /// `a op s` (or `s op a` when `reverse`).
    pub fn scalar(&mut self, kind: BinaryKind, a: Val, s: f64, reverse: bool) -> Result<Val> {
        self.apply1(Scalar { kind, scalar: s, reverse }, &[a])
    }
    pub fn mul_scalar(&mut self, a: Val, s: f64) -> Result<Val> {
        self.scalar(BinaryKind::Mul, a, s, false)
    }
    pub fn add_scalar(&mut self, a: Val, s: f64) -> Result<Val> {
        self.scalar(BinaryKind::Add, a, s, false)
    }
    /// `s - a`.
    pub fn rsub_scalar(&mut self, s: f64, a: Val) -> Result<Val> {
        self.scalar(BinaryKind::Sub, a, s, true)
    }
    pub fn neg(&mut self, a: Val) -> Result<Val> {
        self.unary(UnaryKind::Negative, a)
    }
    pub fn unary(&mut self, kind: UnaryKind, a: Val) -> Result<Val> {
        self.apply1(Unary { kind }, &[a])
    }
    pub fn sum_axes(&mut self, a: Val, axes: Vec<i64>, keepdims: bool) -> Result<Val> {
        self.apply1(Reduce { kind: ReduceKind::Sum, axis: Some(axes), keepdims, exclude: false }, &[a])
    }
    pub fn reshape(&mut self, a: Val, shape: &[usize]) -> Result<Val> {
        if self.shape(a) == shape {
            return Ok(a);
        }
        if shape.contains(&0) {
            // MXNet's Reshape reads 0 as "copy this axis": empty shapes need the exact op.
            return self.apply1(ReshapeExact { shape: shape.to_vec() }, &[a]);
        }
        self.apply1(Reshape::to(shape), &[a])
    }
    pub fn broadcast_to(&mut self, a: Val, shape: &[usize]) -> Result<Val> {
        if self.shape(a) == shape {
            return Ok(a);
        }
        if shape.contains(&0) {
            // broadcast_to reads 0 as "keep this axis": empty shapes need the exact op.
            return self.apply1(BroadcastExact { shape: shape.to_vec() }, &[a]);
        }
        self.apply1(BroadcastTo { shape: shape.to_vec() }, &[a])
    }
    pub fn transpose(&mut self, a: Val, axes: Vec<i64>) -> Result<Val> {
        self.apply1(Transpose { axes }, &[a])
    }
    pub fn dot(&mut self, a: Val, b: Val, transpose_a: bool, transpose_b: bool, batch: bool) -> Result<Val> {
        self.apply1(Dot { transpose_a, transpose_b, batch }, &[a, b])
    }
    pub fn cast(&mut self, a: Val, dtype: DType) -> Result<Val> {
        if self.meta(a).dtype == dtype {
            return Ok(a);
        }
        self.apply1(Cast { dtype }, &[a])
    }
    /// Zeros shaped like `a` (as `a * 0`, which keeps the graph connected for higher orders).
    pub fn zeros_like(&mut self, a: Val) -> Result<Val> {
        self.apply1(Fill { value: 0.0 }, &[a])
    }
    pub fn ones_like(&mut self, a: Val) -> Result<Val> {
        self.apply1(Fill { value: 1.0 }, &[a])
    }
}

/// Sums a gradient computed in a broadcast shape back to the shape of the input it belongs to.
/// This is the one place where broadcasting is undone, for the tape and the executor alike.
pub fn unbroadcast(g: &mut Grad<'_>, v: Val, target: &[usize]) -> Result<Val> {
    let shape = g.shape(v);
    if shape == target {
        return Ok(v);
    }
    let lead = shape
        .len()
        .checked_sub(target.len())
        .ok_or_else(|| Error::Shape(format!("unbroadcast: gradient of shape {shape:?} cannot reduce to {target:?}")))?;
    let axes: Vec<i64> =
        (0..shape.len()).filter(|&d| d < lead || (target[d - lead] == 1 && shape[d] != 1)).map(|d| d as i64).collect();
    let s = if axes.is_empty() { v } else { g.sum_axes(v, axes, true)? };
    g.reshape(s, target)
}

/// A gradient as the input it belongs to needs it: unbroadcast to the input's shape and cast to
/// its dtype. The tape and the executor both finish every input gradient here.
pub fn fit_to_input(g: &mut Grad<'_>, v: Val, input: &Meta) -> Result<Val> {
    let v = unbroadcast(g, v, &input.shape)?;
    g.cast(v, input.dtype)
}

/// Evaluates gradient rules immediately on arrays.
#[derive(Default)]
pub struct EagerGraph {
    pub vals: Vec<NDArray>,
    pub ctx: Ctx,
}

impl EagerGraph {
    pub fn push(&mut self, x: NDArray) -> Val {
        self.vals.push(x);
        Val(self.vals.len() as u32 - 1)
    }

    pub fn get(&self, v: Val) -> &NDArray {
        &self.vals[v.0 as usize]
    }
}

impl GradGraph for EagerGraph {
    fn apply(&mut self, op: OpRef, inputs: &[Val]) -> Result<Vec<Val>> {
        let xs: Vec<NDArray> = inputs.iter().map(|v| self.vals[v.0 as usize].clone()).collect();
        let outs = run(op.as_ref(), &self.ctx, &xs)?;
        Ok(outs.into_iter().map(|o| self.push(o)).collect())
    }

    fn differentiable(&self) -> bool {
        false
    }

    fn meta(&self, v: Val) -> Meta {
        self.vals[v.0 as usize].meta()
    }

    fn value(&self, v: Val) -> Option<NDArray> {
        Some(self.get(v).clone())
    }
}

/// Evaluates `op`'s gradient rule eagerly: gradients w.r.t. each input, unbroadcast to the input
/// shapes (`None` where the rule gives none). Used to test rules before the tape exists.
pub fn eval_grad(op: &dyn Op, inputs: &[NDArray], out_grads: &[NDArray]) -> Result<Vec<Option<NDArray>>> {
    let mut graph = EagerGraph::default();
    let outs = run(op, &graph.ctx, inputs)?;
    let xs: Vec<Val> = inputs.iter().map(|x| graph.push(x.clone())).collect();
    let ys: Vec<Val> = outs.into_iter().map(|y| graph.push(y)).collect();
    let gs: Vec<Val> = out_grads.iter().map(|g| graph.push(g.clone())).collect();
    let mut g = Grad::new(&mut graph);
    let grads = op.grad(&mut g, &xs, &ys, &gs)?;
    let mut out = Vec::with_capacity(grads.len());
    for (gv, x) in grads.into_iter().zip(inputs) {
        out.push(match gv {
            None => None,
            Some(v) => Some(unbroadcast(&mut g, v, x.shape())?),
        });
    }
    Ok(out.into_iter().map(|o| o.map(|v| graph.get(v).clone())).collect())
}
