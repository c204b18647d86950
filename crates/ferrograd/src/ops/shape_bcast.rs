//! Shape-borrowing ops: `broadcast_like`, `broadcast_axis`, `slice_like` (views or lazy
//! copies; gradients through the caller's unbroadcast or the basic-index gradient).

use std::sync::Arc;

use super::attrs::fmt_tuple;
use super::params::{OpDef, OpParams};
use super::shape::BasicIndex;
use super::shape_more::sizes;
use super::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::view::normalize_axis;
use crate::ndarray::{Meta, NDArray, SliceArg};

fn to_i64(s: &[usize]) -> Vec<i64> {
    s.iter().map(|&d| d as i64).collect()
}

/// `broadcast_like(lhs, rhs, lhs_axes=None, rhs_axes=None)`: lhs broadcast to rhs's shape (or, with
/// axes, lhs's shape with `lhs_axes[i]` taking the size of rhs's `rhs_axes[i]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BroadcastLike {
    pub lhs_axes: Option<Vec<i64>>,
    pub rhs_axes: Option<Vec<i64>>,
}

impl BroadcastLike {
    fn target(&self, lhs: &[usize], rhs: &[usize]) -> Result<Vec<usize>> {
        let bad = |why: String| {
            Error::Shape(format!(
                "broadcast_like: cannot broadcast lhs {} like rhs {}: {why}",
                fmt_shape(lhs),
                fmt_shape(rhs)
            ))
        };
        let t = match (&self.lhs_axes, &self.rhs_axes) {
            (None, None) => rhs.to_vec(),
            (Some(la), Some(ra)) => {
                if la.is_empty() {
                    // MXNet rejects empty axes; omitting both broadcasts like the whole of rhs.
                    return Err(bad("lhs_axes and rhs_axes are empty (omit both to use all of rhs's shape)".into()));
                }
                if la.len() != ra.len() {
                    return Err(bad(format!(
                        "lhs_axes {} and rhs_axes {} differ in length",
                        fmt_tuple(la),
                        fmt_tuple(ra)
                    )));
                }
                let mut t = lhs.to_vec();
                for (&a, &b) in la.iter().zip(ra) {
                    let a = normalize_axis("broadcast_like", a, lhs.len())?;
                    let b = normalize_axis("broadcast_like", b, rhs.len())?;
                    t[a] = rhs[b];
                }
                t
            }
            _ => return Err(bad("lhs_axes and rhs_axes must be given together".into())),
        };
        if lhs.len() > t.len() || lhs.iter().rev().zip(t.iter().rev()).any(|(&a, &b)| a != b && a != 1) {
            return Err(bad(format!("target shape {} (only size-1 axes can grow)", fmt_shape(&t))));
        }
        Ok(t)
    }
}

impl Op for BroadcastLike {
    fn name(&self) -> &'static str {
        "broadcast_like"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["lhs", "rhs"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = Vec::new();
        if let (Some(a), Some(b)) = (&self.lhs_axes, &self.rhs_axes) {
            v.push(("lhs_axes", fmt_tuple(a)));
            v.push(("rhs_axes", fmt_tuple(b)));
        }
        v
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        Ok(vec![Meta::new(&self.target(&inputs[0].shape, &inputs[1].shape)?, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let v = inputs[0].broadcast_to(outputs[0].shape())?;
        outputs[0].write_from(&v)?;
        Ok(())
    }
    fn view(&self, inputs: &[NDArray]) -> Option<Result<NDArray>> {
        Some(self.target(inputs[0].shape(), inputs[1].shape()).and_then(|t| inputs[0].broadcast_to(&t)))
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        // The caller's unbroadcast sums the gradient back to lhs's shape; rhs only lends a shape.
        Ok(vec![Some(og[0]), None])
    }
}

/// `broadcast_axis` / `broadcast_axes(data, axis, size)`: size-1 axes broadcast to given sizes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BroadcastAxis {
    pub axis: Vec<i64>,
    pub size: Vec<usize>,
}

impl BroadcastAxis {
    fn target(&self, shape: &[usize]) -> Result<Vec<usize>> {
        if self.axis.len() != self.size.len() {
            return Err(Error::Value(format!(
                "broadcast_axis: axis={} and size={} must have the same length",
                fmt_tuple(&self.axis),
                fmt_tuple(&to_i64(&self.size))
            )));
        }
        let mut t = shape.to_vec();
        for (&a, &n) in self.axis.iter().zip(&self.size) {
            let a = normalize_axis("broadcast_axis", a, shape.len())?;
            if shape[a] != 1 && shape[a] != n {
                return Err(Error::Shape(format!(
                    "broadcast_axis: axis {a} of data with shape {} has size {}, only size-1 axes can be broadcast \
                     (to size {n})",
                    fmt_shape(shape),
                    shape[a]
                )));
            }
            t[a] = n;
        }
        Ok(t)
    }
}

impl Op for BroadcastAxis {
    fn name(&self) -> &'static str {
        "broadcast_axis"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("axis", fmt_tuple(&self.axis)), ("size", fmt_tuple(&to_i64(&self.size)))]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        Ok(vec![Meta::new(&self.target(&inputs[0].shape)?, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let v = inputs[0].broadcast_to(outputs[0].shape())?;
        outputs[0].write_from(&v)?;
        Ok(())
    }
    fn view(&self, inputs: &[NDArray]) -> Option<Result<NDArray>> {
        Some(self.target(inputs[0].shape()).and_then(|t| inputs[0].broadcast_to(&t)))
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![Some(og[0])])
    }
}

/// `slice_like(data, shape_like, axes=())`: the leading corner of data with shape_like's sizes on
/// the given axes (all axes when empty; then both must have the same rank).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SliceLike {
    pub axes: Vec<i64>,
}

impl SliceLike {
    fn index(&self, data: &[usize], like: &[usize]) -> Result<BasicIndex> {
        let bad = |why: String| {
            Error::Shape(format!(
                "slice_like: cannot slice data of shape {} like shape_like {}: {why}",
                fmt_shape(data),
                fmt_shape(like)
            ))
        };
        let mut args = vec![SliceArg::Range { start: None, stop: None, step: 1 }; data.len()];
        let axes: Vec<usize> = if self.axes.is_empty() {
            if data.len() != like.len() {
                return Err(bad("with axes=() both must have the same number of dimensions".into()));
            }
            (0..data.len()).collect()
        } else {
            self.axes.iter().map(|&a| normalize_axis("slice_like", a, data.len())).collect::<Result<_>>()?
        };
        for a in axes {
            let n = *like.get(a).ok_or_else(|| bad(format!("shape_like has no axis {a}")))?;
            if n > data[a] {
                return Err(bad(format!("axis {a} of shape_like ({n}) is larger than data's ({})", data[a])));
            }
            args[a] = SliceArg::Range { start: Some(0), stop: Some(n as i64), step: 1 };
        }
        Ok(BasicIndex { args })
    }
}

impl Op for SliceLike {
    fn name(&self) -> &'static str {
        "slice_like"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["data", "shape_like"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("axes", fmt_tuple(&self.axes))]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        self.index(&inputs[0].shape, &inputs[1].shape)?.infer(&inputs[..1])
    }
    fn forward(&self, ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        self.index(inputs[0].shape(), inputs[1].shape())?.forward(ctx, &inputs[..1], outputs)
    }
    fn view(&self, inputs: &[NDArray]) -> Option<Result<NDArray>> {
        Some(self.index(inputs[0].shape(), inputs[1].shape()).and_then(|op| inputs[0].slice(&op.args)))
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], outputs: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let op = self.index(&g.shape(inputs[0]), &g.shape(inputs[1]))?;
        let mut gx = op.grad(g, &inputs[..1], outputs, og)?;
        gx.push(None);
        Ok(gx)
    }
}

// ---- registry builders ----

/// `broadcast_like`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct BroadcastLikeParams {
    /// Axes of lhs to broadcast (None: broadcast lhs to the whole shape of rhs).
    #[param(default = None)]
    pub lhs_axes: Option<Vec<i64>>,
    /// Axes of rhs whose sizes the lhs_axes take, pairwise.
    #[param(default = None)]
    pub rhs_axes: Option<Vec<i64>>,
}

/// `broadcast_axis`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct BroadcastAxisParams {
    /// Size-1 axes to broadcast.
    #[param(default = Vec::new())]
    pub axis: Vec<i64>,
    /// Target size of each listed axis, pairwise with axis.
    #[param(default = Vec::new())]
    pub size: Vec<i64>,
}

/// `slice_like`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct SliceLikeParams {
    /// Axes cut to shape_like's sizes (empty: every axis; negatives count from the end).
    #[param(default = Vec::new())]
    pub axes: Vec<i64>,
}

pub fn broadcast_like_op(a: &Attrs) -> Result<OpRef> {
    let p = BroadcastLikeParams::parse(a)?;
    Ok(Arc::new(BroadcastLike { lhs_axes: p.lhs_axes, rhs_axes: p.rhs_axes }))
}

pub fn broadcast_axis_op(a: &Attrs) -> Result<OpRef> {
    let p = BroadcastAxisParams::parse(a)?;
    let op = BroadcastAxis { axis: p.axis, size: sizes("broadcast_axis", "size", &p.size)? };
    if op.axis.len() != op.size.len() {
        op.target(&[])?; // reports the length mismatch
    }
    Ok(Arc::new(op))
}

pub fn slice_like_op(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(SliceLike { axes: SliceLikeParams::parse(a)?.axes }))
}

/// The shape-borrowing ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "broadcast_like",
        aliases: &[],
        args: &["lhs", "rhs"],
        doc: "Broadcast lhs to the shape of rhs (or of rhs's rhs_axes on lhs_axes).",
        params: BroadcastLikeParams::schema,
        build: broadcast_like_op,
    },
    OpDef {
        name: "broadcast_axis",
        aliases: &["broadcast_axes"],
        args: &["data"],
        doc: "Broadcast size-1 axes to the given sizes.",
        params: BroadcastAxisParams::schema,
        build: broadcast_axis_op,
    },
    OpDef {
        name: "slice_like",
        aliases: &[],
        args: &["data", "shape_like"],
        doc: "Slice data to the shape of shape_like on the given axes (all when empty).",
        params: SliceLikeParams::schema,
        build: slice_like_op,
    },
];
