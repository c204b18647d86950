//! Along-axis gathers: `pick`, `batch_take`, `one_hot`, and the along-axis gather and scatter
//! (`TakeAlong`, `ScatterAlong`) that `pick`, `topk` and `sort` use for their values and gradients.
//!
//! Each forward computes, for every output element, the flat source position it reads, then
//! gathers (`common::gather`); each gradient scatters (adds) through the same map, and the
//! scatter's gradient gathers again, so every op here is differentiable any number of times.

use std::sync::Arc;

use ferrograd_kernels::Element;

use super::attrs::fmt_tuple;
use super::common::{gather, resolve_index, scatter_add, to_i64};
use super::indexing::{index_values, TakeMode};
use super::params::{NoParams, OpDef, OpParams, ParamEnum};
use super::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::view::normalize_axis;
use crate::ndarray::{Meta, NDArray};
use crate::with_dtype;

/// Map for an along-axis gather from `data_shape` with an index array of `idx_shape` (equal to
/// `data_shape` except along `axis`).
fn along_map(
    op: &str,
    data_shape: &[usize],
    axis: usize,
    idx: &[i64],
    idx_shape: &[usize],
    mode: TakeMode,
) -> Result<Vec<usize>> {
    let n = data_shape[axis];
    let k = idx_shape[axis];
    let inner: usize = data_shape[axis + 1..].iter().product();
    let mut map = Vec::with_capacity(idx.len());
    for (p, &i) in idx.iter().enumerate() {
        let (o, rem) = (p / (k * inner).max(1), p % (k * inner).max(1));
        let c = rem % inner.max(1);
        map.push((o * n + resolve_index(op, i, n, axis, mode)?) * inner + c);
    }
    Ok(map)
}

fn check_along(op: &str, data: &[usize], idx: &[usize], axis: usize) -> Result<()> {
    let ok = data.len() == idx.len() && data.iter().zip(idx).enumerate().all(|(d, (a, b))| d == axis || a == b);
    if !ok {
        return Err(Error::Shape(format!(
            "{op}: index of shape {} does not match data of shape {} outside axis {axis}",
            fmt_shape(idx),
            fmt_shape(data)
        )));
    }
    Ok(())
}

/// `_take_along_axis(data, index, axis, mode)`: `out[.., j, ..] = data[.., index[.., j, ..], ..]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TakeAlong {
    pub axis: i64,
    pub mode: TakeMode,
}

impl Op for TakeAlong {
    fn name(&self) -> &'static str {
        "_take_along_axis"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["data", "index"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("axis", self.axis.to_string()), ("mode", self.mode.name().into())]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let axis = normalize_axis(self.name(), self.axis, inputs[0].shape.len())?;
        check_along(self.name(), &inputs[0].shape, &inputs[1].shape, axis)?;
        Ok(vec![Meta::new(&inputs[1].shape, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (x, ind) = (&inputs[0], &inputs[1]);
        let axis = normalize_axis(self.name(), self.axis, x.ndim())?;
        let map = along_map(self.name(), x.shape(), axis, &index_values(ind)?, ind.shape(), self.mode)?;
        gather(x, &map, 0.0, &mut outputs[0])?;
        Ok(())
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let shape = g.shape(inputs[0]);
        Ok(vec![Some(g.apply1(ScatterAlong { axis: self.axis, mode: self.mode, shape }, &[og[0], inputs[1]])?), None])
    }
}

/// `_scatter_along_axis(data, index, axis, mode, shape)`: zeros of `shape` with `data` added at
/// the along-axis positions `index` (the gradient of [`TakeAlong`]; its own gradient gathers).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScatterAlong {
    pub axis: i64,
    pub mode: TakeMode,
    pub shape: Vec<usize>,
}

impl Op for ScatterAlong {
    fn name(&self) -> &'static str {
        "_scatter_along_axis"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["data", "index"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("axis", self.axis.to_string()),
            ("mode", self.mode.name().into()),
            ("shape", fmt_tuple(&to_i64(&self.shape))),
        ]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let axis = normalize_axis(self.name(), self.axis, self.shape.len())?;
        check_along(self.name(), &self.shape, &inputs[1].shape, axis)?;
        if inputs[0].shape != inputs[1].shape {
            return Err(Error::Shape(format!(
                "{}: data of shape {} must match index of shape {}",
                self.name(),
                fmt_shape(&inputs[0].shape),
                fmt_shape(&inputs[1].shape)
            )));
        }
        Ok(vec![Meta::new(&self.shape, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (x, ind) = (&inputs[0], &inputs[1]);
        let axis = normalize_axis(self.name(), self.axis, self.shape.len())?;
        let map = along_map(self.name(), &self.shape, axis, &index_values(ind)?, ind.shape(), self.mode)?;
        scatter_add(x, &map, &mut outputs[0])?;
        Ok(())
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![Some(g.apply1(TakeAlong { axis: self.axis, mode: self.mode }, &[og[0], inputs[1]])?), None])
    }
}

/// `pick(data, index, axis=-1, keepdims=False, mode='clip')`: one element per lane along `axis`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pick {
    pub axis: i64,
    pub keepdims: bool,
    pub mode: TakeMode,
}

impl Pick {
    /// (axis, index shape with the axis kept as 1, output shape).
    fn plan(&self, data: &[usize], index: &[usize]) -> Result<(usize, Vec<usize>, Vec<usize>)> {
        let axis = normalize_axis("pick", self.axis, data.len())?;
        let mut kept = data.to_vec();
        kept[axis] = 1;
        let mut dropped = data.to_vec();
        dropped.remove(axis);
        if index != kept.as_slice() && index != dropped.as_slice() {
            return Err(Error::Shape(format!(
                "pick: index of shape {} does not fit data of shape {} along axis {axis} (expected {} or {})",
                fmt_shape(index),
                fmt_shape(data),
                fmt_shape(&dropped),
                fmt_shape(&kept)
            )));
        }
        let out = if self.keepdims { kept.clone() } else { dropped };
        Ok((axis, kept, out))
    }
}

impl Op for Pick {
    fn name(&self) -> &'static str {
        "pick"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["data", "index"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = vec![("axis", self.axis.to_string()), ("mode", self.mode.name().into())];
        if self.keepdims {
            v.push(("keepdims", "True".into()));
        }
        v
    }
    fn infer_partial(
        &self,
        ins: &mut [super::partial::PartialShape],
        outs: &mut [super::partial::PartialShape],
    ) -> Result<()> {
        super::partial::pick(self.axis, self.keepdims, ins, outs)
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let (_, _, out) = self.plan(&inputs[0].shape, &inputs[1].shape)?;
        Ok(vec![Meta::new(&out, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (x, ind) = (&inputs[0], &inputs[1]);
        let (axis, kept, _) = self.plan(x.shape(), ind.shape())?;
        let map = along_map("pick", x.shape(), axis, &index_values(ind)?, &kept, self.mode)?;
        gather(x, &map, 0.0, &mut outputs[0])?;
        Ok(())
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let shape = g.shape(inputs[0]);
        let (axis, kept, _) = self.plan(&shape, &g.shape(inputs[1]))?;
        let gk = g.reshape(og[0], &kept)?;
        let ik = g.reshape(inputs[1], &kept)?;
        let back = ScatterAlong { axis: axis as i64, mode: self.mode, shape };
        Ok(vec![Some(g.apply1(back, &[gk, ik])?), None])
    }
}

/// `batch_take(a, indices)`: `out[i] = a[i, indices[i]]` for `a` of shape (N, M) (indices clipped).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchTake;

impl BatchTake {
    fn check(a: &[usize], ind: &[usize]) -> Result<usize> {
        let n: usize = ind.iter().product();
        if a.len() != 2 || a[0] != n {
            return Err(Error::Shape(format!(
                "batch_take: a must have shape (N, M) with N = indices.size, got a {} and indices {}",
                fmt_shape(a),
                fmt_shape(ind)
            )));
        }
        Ok(n)
    }
}

impl Op for BatchTake {
    fn name(&self) -> &'static str {
        "batch_take"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["a", "indices"]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        BatchTake::check(&inputs[0].shape, &inputs[1].shape)?;
        Ok(vec![Meta::new(&inputs[1].shape, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (a, ind) = (&inputs[0], &inputs[1]);
        let n = BatchTake::check(a.shape(), ind.shape())?;
        let map = along_map("batch_take", a.shape(), 1, &index_values(ind)?, &[n, 1], TakeMode::Clip)?;
        gather(a, &map, 0.0, &mut outputs[0])?;
        Ok(())
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let shape = g.shape(inputs[0]);
        let n = shape[0];
        let gk = g.reshape(og[0], &[n, 1])?;
        let ik = g.reshape(inputs[1], &[n, 1])?;
        let back = ScatterAlong { axis: 1, mode: TakeMode::Clip, shape };
        Ok(vec![Some(g.apply1(back, &[gk, ik])?), None])
    }
}

/// `one_hot(indices, depth, on_value=1, off_value=0, dtype='float32')`; indices outside
/// `[0, depth)` give a row of `off_value` (MXNet). Not differentiable.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OneHot {
    pub depth: usize,
    pub on_value: f64,
    pub off_value: f64,
    pub dtype: DType,
}

impl Op for OneHot {
    fn name(&self) -> &'static str {
        "one_hot"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["indices"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        use super::AttrValue::Float;
        vec![
            ("depth", self.depth.to_string()),
            ("on_value", Float(self.on_value).to_mx_string()),
            ("off_value", Float(self.off_value).to_mx_string()),
            ("dtype", self.dtype.name().into()),
        ]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let mut s = inputs[0].shape.to_vec();
        s.push(self.depth);
        crate::ndarray::checked_numel("one_hot", &s)?;
        Ok(vec![Meta::new(&s, self.dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let idx = index_values(&inputs[0])?;
        let (d, on, off) = (self.depth, self.on_value, self.off_value);
        with_dtype!(self.dtype, T => {
            let (on, off) = (T::from_f64(on), T::from_f64(off));
            outputs[0].write_out::<T, _>(|o| {
                o.fill(off);
                for (r, &i) in idx.iter().enumerate() {
                    if i >= 0 && (i as u64) < d as u64 {
                        o[r * d + i as usize] = on;
                    }
                }
            })
        })
    }
    fn differentiable(&self) -> bool {
        false
    }
    fn zero_gradient(&self) -> bool {
        true
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![None])
    }
}

/// The out-of-range index handling `pick` accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ParamEnum)]
pub enum PickMode {
    Clip,
    Wrap,
}

/// An output dtype MXNet allows for index-valued results (`one_hot`, `topk`, `argsort`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ParamEnum)]
#[param(dtype)]
pub enum IndexDType {
    Float16,
    Float32,
    Float64,
    Int32,
    Int64,
    Uint8,
}

impl IndexDType {
    /// The array dtype.
    pub fn dtype(self) -> DType {
        match self {
            IndexDType::Float16 => DType::F16,
            IndexDType::Float32 => DType::F32,
            IndexDType::Float64 => DType::F64,
            IndexDType::Int32 => DType::I32,
            IndexDType::Int64 => DType::I64,
            IndexDType::Uint8 => DType::U8,
        }
    }
}

/// `pick`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct PickParams {
    /// Axis to pick along (None, picking from the flattened array, is not supported).
    #[param(default = Some(-1))]
    pub axis: Option<i64>,
    /// Keep the picked axis as a size-1 axis.
    #[param(default = false)]
    pub keepdims: bool,
    /// What an index outside the axis does: clamp or wrap around.
    #[param(default = PickMode::Clip)]
    pub mode: PickMode,
}

/// `one_hot`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct OneHotParams {
    /// Length of each one-hot row.
    pub depth: i64,
    /// Value at the indexed position.
    #[param(default = 1.0)]
    pub on_value: f64,
    /// Value everywhere else.
    #[param(default = 0.0)]
    pub off_value: f64,
    /// Output dtype (MXNet's bfloat16 and int8 are not supported).
    #[param(default = IndexDType::Float32)]
    pub dtype: IndexDType,
}

pub fn pick_op(a: &Attrs) -> Result<OpRef> {
    let p = PickParams::parse(a)?;
    let Some(axis) = p.axis else {
        return Err(Error::Value("pick: axis=None is not supported; give an axis".into()));
    };
    let mode = match p.mode {
        PickMode::Clip => TakeMode::Clip,
        PickMode::Wrap => TakeMode::Wrap,
    };
    Ok(Arc::new(Pick { axis, keepdims: p.keepdims, mode }))
}

pub fn batch_take_op(a: &Attrs) -> Result<OpRef> {
    NoParams::parse(a)?;
    Ok(Arc::new(BatchTake))
}

pub fn one_hot_op(a: &Attrs) -> Result<OpRef> {
    let p = OneHotParams::parse(a)?;
    if p.depth < 0 {
        return Err(Error::Value(format!("one_hot: depth must be >= 0, got {}", p.depth)));
    }
    Ok(Arc::new(OneHot {
        depth: p.depth as usize,
        on_value: p.on_value,
        off_value: p.off_value,
        dtype: p.dtype.dtype(),
    }))
}
/// The along-axis gather ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "pick",
        aliases: &["choose_element_0index"],
        args: &["data", "index"],
        doc: "One element per lane along axis at the given index (mode clip or wrap).",
        params: PickParams::schema,
        build: pick_op,
    },
    OpDef {
        name: "batch_take",
        aliases: &[],
        args: &["a", "indices"],
        doc: "out[i] = a[i, indices[i]] for a of shape (N, M) (indices clipped).",
        params: NoParams::schema,
        build: batch_take_op,
    },
    OpDef {
        name: "one_hot",
        aliases: &[],
        args: &["indices"],
        doc: "One-hot rows of length depth (out-of-range indices give all off_value).",
        params: OneHotParams::schema,
        build: one_hot_op,
    },
];
