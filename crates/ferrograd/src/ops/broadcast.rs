//! Broadcasting ops: `broadcast_to`, `broadcast_like`, `broadcast_axis` (views with zero strides or
//! lazy copies); their gradients sum over the broadcast axes.

use std::sync::Arc;

use super::attrs::fmt_tuple;
use super::common::{sizes, to_i64};
use super::params::{OpDef, OpParams};
use super::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::view::normalize_axis;
use crate::ndarray::{Meta, NDArray};

/// `broadcast_to(shape)` (lazy copy); 0 in `shape` keeps the input's size (MXNet).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BroadcastTo {
    pub shape: Vec<usize>,
}

impl BroadcastTo {
    fn target(&self, src: &[usize]) -> Vec<usize> {
        let lead = self.shape.len().saturating_sub(src.len());
        self.shape.iter().enumerate().map(|(i, &d)| if d == 0 && i >= lead { src[i - lead] } else { d }).collect()
    }
}

impl Op for BroadcastTo {
    fn name(&self) -> &'static str {
        "broadcast_to"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("shape", fmt_tuple(&self.shape.iter().map(|&d| d as i64).collect::<Vec<_>>()))]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let t = self.target(&inputs[0].shape);
        if inputs[0].shape.len() > t.len()
            || inputs[0].shape.iter().rev().zip(t.iter().rev()).any(|(&a, &b)| a != b && a != 1)
        {
            return Err(Error::Shape(format!(
                "broadcast_to: cannot broadcast shape {} to {}",
                fmt_shape(&inputs[0].shape),
                fmt_shape(&t)
            )));
        }
        Ok(vec![Meta::new(&t, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let v = inputs[0].broadcast_to(outputs[0].shape())?;
        outputs[0].write_from(&v)?;
        Ok(())
    }
    fn view(&self, inputs: &[NDArray]) -> Option<Result<NDArray>> {
        Some(inputs[0].broadcast_to(&self.target(inputs[0].shape())))
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        // The caller's unbroadcast sums the output-shaped gradient back to the input shape.
        Ok(vec![Some(og[0])])
    }
}

/// Broadcast to an exact shape (NumPy rules; 0 is a real size, unlike `broadcast_to`'s "keep").
/// Used by gradient rules for shapes with a zero.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BroadcastExact {
    pub shape: Vec<usize>,
}

impl Op for BroadcastExact {
    fn name(&self) -> &'static str {
        "_broadcast_exact"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("shape", fmt_tuple(&self.shape.iter().map(|&d| d as i64).collect::<Vec<_>>()))]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let probe = NDArray::zeros(&[], inputs[0].dtype).broadcast_to(&inputs[0].shape)?;
        probe.broadcast_to(&self.shape)?;
        Ok(vec![Meta::new(&self.shape, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let v = inputs[0].broadcast_to(&self.shape)?;
        outputs[0].write_from(&v)?;
        Ok(())
    }
    fn view(&self, inputs: &[NDArray]) -> Option<Result<NDArray>> {
        Some(inputs[0].broadcast_to(&self.shape))
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        // As for `broadcast_to`: the caller's unbroadcast sums back to the input shape.
        Ok(vec![Some(og[0])])
    }
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

/// `broadcast_to`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct BroadcastToParams {
    /// The target shape; 0 keeps the input's size on that axis.
    pub shape: Vec<i64>,
}

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

fn build_broadcast_to(a: &Attrs) -> Result<OpRef> {
    let shape = BroadcastToParams::parse(a)?.shape;
    if shape.iter().any(|&d| d < 0) {
        return Err(Error::Value(format!("broadcast_to: negative size in shape {shape:?}")));
    }
    Ok(Arc::new(BroadcastTo { shape: shape.into_iter().map(|d| d as usize).collect() }))
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
/// The broadcasting ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "broadcast_to",
        aliases: &[],
        args: &["data"],
        doc: "Broadcast to a shape (0 keeps the input size).",
        params: BroadcastToParams::schema,
        build: build_broadcast_to,
    },
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
];
