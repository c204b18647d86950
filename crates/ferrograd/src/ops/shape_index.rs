//! Index-map ops: `pick`, `batch_take`, `one_hot`, `Pad`, `diag`, and the along-axis gather and
//! scatter that `pick`, `topk` and `sort` use for their values and gradients.
//!
//! Each forward computes, for every output element, the flat source position it reads (or none,
//! for padding), then gathers; each gradient scatters (adds) through the same map, and the
//! scatter's gradient gathers again, so every op here is differentiable any number of times.

use std::sync::Arc;

use ferrograd_kernels::par::{self, Cost};
use ferrograd_kernels::Element;

use super::attrs::fmt_tuple;
use super::binary::Num;
use super::indexing::{index_values, TakeMode};
use super::params::{NoParams, OpDef, OpParams, ParamEnum};
use super::shape_more::{dense, sizes};
use super::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::view::normalize_axis;
use crate::ndarray::{Meta, NDArray};
use crate::with_dtype;

/// No source element: the output takes the fill value.
const NONE: usize = usize::MAX;

fn to_i64(s: &[usize]) -> Vec<i64> {
    s.iter().map(|&d| d as i64).collect()
}

/// `out[p] = src[map[p]]` (or `fill` where `map[p] == NONE`), written into `out` (an op output).
fn gather(x: &NDArray, map: &[usize], fill: f64, out: &mut NDArray) -> Result<()> {
    let dtype = out.dtype();
    let (buf, range) = dense(&x.astype_if(dtype));
    with_dtype!(dtype, T => {
        let src = &buf.typed::<T>()?[range];
        let f = T::from_f64(fill);
        out.write_out::<T, _>(|o| {
            par::for_each_chunk(o, Cost::Light, |start, chunk| {
                for (v, &m) in chunk.iter_mut().zip(&map[start..]) {
                    *v = if m == NONE { f } else { src[m] };
                }
            })
        })?;
    });
    Ok(())
}

/// `out` set to zeros, then `out[map[p]] += src[p]` (sequential: positions may repeat).
fn scatter_add(x: &NDArray, map: &[usize], out: &mut NDArray) -> Result<()> {
    let (buf, range) = dense(&x.astype_if(out.dtype()));
    with_dtype!(out.dtype(), T => {
        let src = &buf.typed::<T>()?[range];
        out.write_out::<T, _>(|o| {
            o.fill(T::zero());
            for (&v, &m) in src.iter().zip(map) {
                if m != NONE {
                    o[m] = T::add(o[m], v);
                }
            }
        })?;
    });
    Ok(())
}

trait AstypeIf {
    fn astype_if(&self, dt: DType) -> NDArray;
}
impl AstypeIf for NDArray {
    fn astype_if(&self, dt: DType) -> NDArray {
        if self.dtype() == dt {
            self.clone()
        } else {
            self.astype(dt)
        }
    }
}

fn resolve(op: &str, i: i64, n: usize, axis: usize, mode: TakeMode) -> Result<usize> {
    let m = n as i64;
    if n == 0 {
        return Err(Error::Index(format!("{op}: cannot pick index {i} from axis {axis} with size 0")));
    }
    Ok(match mode {
        TakeMode::Clip => i.clamp(0, m - 1) as usize,
        TakeMode::Wrap => i.rem_euclid(m) as usize,
        TakeMode::Raise => {
            if i < -m || i >= m {
                return Err(Error::Index(format!("{op}: index {i} is out of bounds for axis {axis} with size {n}")));
            }
            i.rem_euclid(m) as usize
        }
    })
}

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
        map.push((o * n + resolve(op, i, n, axis, mode)?) * inner + c);
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
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![None])
    }
}

/// Padding modes of `Pad`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ParamEnum)]
pub enum PadMode {
    Constant,
    Edge,
    Reflect,
}

/// A `usize` vector of capacity `n`, or a MemoryError naming the op (index maps can be far
/// larger than the data when a pad width is huge).
fn try_index_vec(op: &str, n: usize) -> Result<Vec<usize>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| {
        let bytes = (n as u128) * std::mem::size_of::<usize>() as u128;
        Error::Memory(format!("{op}: cannot allocate {bytes} bytes for an index map of {n} elements: out of memory"))
    })?;
    Ok(v)
}

/// The output shape of padding `shape` by `width` in `mode`, checked (widths, mode limits and
/// element count) without allocating anything.
fn pad_shape(op: &str, shape: &[usize], width: &[usize], mode: PadMode) -> Result<Vec<usize>> {
    if width.len() != 2 * shape.len() {
        return Err(Error::Shape(format!(
            "{op}: pad_width {} needs 2 entries per axis of data with shape {} ({} entries)",
            fmt_tuple(&to_i64(width)),
            fmt_shape(shape),
            2 * shape.len()
        )));
    }
    // Output sizes first (checked), so absurd widths fail before any allocation.
    let out_shape = shape
        .iter()
        .enumerate()
        .map(|(d, &n)| n.checked_add(width[2 * d]).and_then(|v| v.checked_add(width[2 * d + 1])))
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(|| Error::Value(format!("{op}: pad_width {} is too large", fmt_tuple(&to_i64(width)))))?;
    crate::ndarray::checked_numel(op, &out_shape)?;
    for (d, &n) in shape.iter().enumerate() {
        let (b, a) = (width[2 * d], width[2 * d + 1]);
        let limit = match mode {
            PadMode::Constant => usize::MAX,
            PadMode::Edge => {
                if n == 0 {
                    0
                } else {
                    usize::MAX
                }
            }
            PadMode::Reflect => n.saturating_sub(1),
        };
        if (b > 0 || a > 0) && (b > limit || a > limit) {
            return Err(Error::Shape(format!(
                "{op}: mode '{}' cannot pad axis {d} of size {n} by ({b}, {a}) (data shape {}, pad_width {})",
                mode.name(),
                fmt_shape(shape),
                fmt_tuple(&to_i64(width))
            )));
        }
    }
    Ok(out_shape)
}

/// (output shape, flat source position per output element or NONE) for padding `shape`.
fn pad_map(op: &str, shape: &[usize], width: &[usize], mode: PadMode) -> Result<(Vec<usize>, Vec<usize>)> {
    let out_shape = pad_shape(op, shape, width, mode)?;
    let total: usize = out_shape.iter().product();
    if total == 0 {
        return Ok((out_shape, Vec::new())); // nothing to map (and no huge axis maps to build)
    }
    let mut axis_maps = Vec::with_capacity(shape.len());
    for (d, &n) in shape.iter().enumerate() {
        let (b, a) = (width[2 * d], width[2 * d + 1]);
        let mut m = try_index_vec(op, out_shape[d])?;
        m.extend((0..n + b + a).map(|o| {
            let p = o as i64 - b as i64;
            let last = n as i64 - 1;
            if (0..n as i64).contains(&p) {
                p as usize
            } else {
                match mode {
                    PadMode::Constant => NONE,
                    PadMode::Edge => p.clamp(0, last) as usize,
                    PadMode::Reflect => (if p < 0 { -p } else { 2 * last - p }) as usize,
                }
            }
        }));
        axis_maps.push(m);
    }
    let mut map = try_index_vec(op, total)?;
    map.resize(total, 0);
    let nd = shape.len();
    if total > 0 && nd > 0 {
        // Row-major strides of the source.
        let mut strides = vec![1usize; nd];
        for d in (0..nd.saturating_sub(1)).rev() {
            strides[d] = strides[d + 1] * shape[d + 1];
        }
        // Rows of the last output axis: one base offset per row, then the last axis's map.
        let (last, row_len) = (nd - 1, out_shape[nd - 1]);
        let mut idx = vec![0usize; nd];
        for row in map.chunks_mut(row_len.max(1)) {
            let mut base = Some(0usize);
            for d in 0..last {
                let s = axis_maps[d][idx[d]];
                base = base.filter(|_| s != NONE).map(|b| b + s * strides[d]);
            }
            for (m, &s) in row.iter_mut().zip(&axis_maps[last]) {
                *m = match base {
                    Some(b) if s != NONE => b + s,
                    _ => NONE,
                };
            }
            for d in (0..last).rev() {
                idx[d] += 1;
                if idx[d] < out_shape[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
    }
    Ok((out_shape, map))
}

/// `Pad` / `pad(data, mode='constant', pad_width, constant_value=0)`. Any rank (MXNet itself
/// accepts only 4-D/5-D data with zero padding on the first two axes); `pad_width` holds (before,
/// after) per axis.
#[derive(Clone, Debug, PartialEq)]
pub struct Pad {
    pub mode: PadMode,
    pub pad_width: Vec<usize>,
    pub constant_value: f64,
}

impl Op for Pad {
    fn name(&self) -> &'static str {
        "Pad"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("mode", self.mode.name().into()),
            ("pad_width", fmt_tuple(&to_i64(&self.pad_width))),
            ("constant_value", super::AttrValue::Float(self.constant_value).to_mx_string()),
        ]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let s = pad_shape("Pad", &inputs[0].shape, &self.pad_width, self.mode)?;
        Ok(vec![Meta::new(&s, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let x = &inputs[0];
        let (_, map) = pad_map("Pad", x.shape(), &self.pad_width, self.mode)?;
        gather(x, &map, self.constant_value, &mut outputs[0])?;
        Ok(())
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let back = PadGrad { mode: self.mode, pad_width: self.pad_width.clone(), shape: g.shape(inputs[0]) };
        Ok(vec![Some(g.apply1(back, &[og[0]])?)])
    }
}

/// `_backward_Pad`: the transpose of padding, adding each padded element's gradient into the source
/// element it copies. Its gradient is `Pad` with constant 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PadGrad {
    pub mode: PadMode,
    pub pad_width: Vec<usize>,
    pub shape: Vec<usize>,
}

impl Op for PadGrad {
    fn name(&self) -> &'static str {
        "_backward_Pad"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("mode", self.mode.name().into()),
            ("pad_width", fmt_tuple(&to_i64(&self.pad_width))),
            ("shape", fmt_tuple(&to_i64(&self.shape))),
        ]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let s = pad_shape(self.name(), &self.shape, &self.pad_width, self.mode)?;
        if s != inputs[0].shape.as_slice() {
            return Err(Error::Shape(format!(
                "_backward_Pad: gradient of shape {} does not match the padded shape {}",
                fmt_shape(&inputs[0].shape),
                fmt_shape(&s)
            )));
        }
        Ok(vec![Meta::new(&self.shape, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (_, map) = pad_map(self.name(), &self.shape, &self.pad_width, self.mode)?;
        scatter_add(&inputs[0], &map, &mut outputs[0])?;
        Ok(())
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, _i: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let fwd = Pad { mode: self.mode, pad_width: self.pad_width.clone(), constant_value: 0.0 };
        Ok(vec![Some(g.apply1(fwd, &[og[0]])?)])
    }
}

/// Diagonal geometry: (output shape of extraction, map from the extraction's output to source).
fn diag_map(shape: &[usize], k: i64, axis1: i64, axis2: i64) -> Result<(Vec<usize>, Vec<usize>)> {
    let a1 = normalize_axis("diag", axis1, shape.len())?;
    let a2 = normalize_axis("diag", axis2, shape.len())?;
    if a1 == a2 {
        return Err(Error::Value(format!("diag: axis1 and axis2 must differ, both are {a1}")));
    }
    let (n1, n2, k) = (shape[a1] as i128, shape[a2] as i128, k as i128);
    // MXNet allows an empty diagonal just past the edge (|k| equal to the axis size) but no
    // further.
    if k > n2 || -k > n1 {
        return Err(Error::Value(format!(
            "diag: diagonal k={k} does not exist for axes {a1} and {a2} of sizes {n1} and {n2}"
        )));
    }
    let (o1, o2) = (if k < 0 { -k } else { 0 }, if k > 0 { k } else { 0 });
    let len = (n1 - o1).min(n2 - o2).max(0) as usize;
    // Offsets only matter when the diagonal is non-empty (then they are below the axis sizes).
    let (o1, o2) = if len == 0 { (0, 0) } else { (o1 as usize, o2 as usize) };
    let rest: Vec<usize> = (0..shape.len()).filter(|&d| d != a1 && d != a2).collect();
    let mut out: Vec<usize> = rest.iter().map(|&d| shape[d]).collect();
    out.push(len);
    let mut strides = vec![1usize; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    let total: usize = out.iter().product();
    let mut map = Vec::with_capacity(total);
    let mut idx = vec![0usize; out.len()];
    for _ in 0..total {
        let mut pos = 0;
        for (r, &d) in rest.iter().enumerate() {
            pos += idx[r] * strides[d];
        }
        let j = idx[out.len() - 1];
        pos += (j + o1) * strides[a1] + (j + o2) * strides[a2];
        map.push(pos);
        for d in (0..out.len()).rev() {
            idx[d] += 1;
            if idx[d] < out[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    Ok((out, map))
}

/// `diag(data, k=0, axis1=0, axis2=1)`: for 1-D data the square matrix with data on diagonal k;
/// otherwise diagonal k of the (axis1, axis2) planes, appended as the last axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Diag {
    pub k: i64,
    pub axis1: i64,
    pub axis2: i64,
}

impl Diag {
    fn square(&self, n: usize) -> Result<usize> {
        usize::try_from(self.k.unsigned_abs())
            .ok()
            .and_then(|k| n.checked_add(k))
            .filter(|&m| crate::ndarray::checked_numel("diag", &[m, m]).is_ok())
            .ok_or_else(|| Error::Value(format!("diag: k={} is too large for a vector of length {n}", self.k)))
    }
}

impl Op for Diag {
    fn name(&self) -> &'static str {
        "diag"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("k", self.k.to_string()), ("axis1", self.axis1.to_string()), ("axis2", self.axis2.to_string())]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let s = &inputs[0].shape;
        let out = match s.len() {
            0 => return Err(Error::Shape("diag: data must have at least one dimension, got shape ()".into())),
            1 => vec![self.square(s[0])?; 2],
            _ => diag_map(s, self.k, self.axis1, self.axis2)?.0,
        };
        Ok(vec![Meta::new(&out, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let x = &inputs[0];
        if x.ndim() == 1 {
            let m = self.square(x.shape()[0])?;
            let (_, map) = diag_map(&[m, m], self.k, 0, 1)?;
            scatter_add(x, &map, &mut outputs[0])?;
        } else {
            let (_, map) = diag_map(x.shape(), self.k, self.axis1, self.axis2)?;
            gather(x, &map, 0.0, &mut outputs[0])?;
        }
        Ok(())
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let shape = g.shape(inputs[0]);
        if shape.len() == 1 {
            return Ok(vec![Some(g.apply1(Diag { k: self.k, axis1: 0, axis2: 1 }, &[og[0]])?)]);
        }
        Ok(vec![Some(g.apply1(DiagGrad { diag: *self, shape }, &[og[0]])?)])
    }
}

/// `_backward_diag`: zeros of `shape` with the gradient written onto the extracted diagonal. Its
/// gradient is the extraction again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiagGrad {
    pub diag: Diag,
    pub shape: Vec<usize>,
}

impl Op for DiagGrad {
    fn name(&self) -> &'static str {
        "_backward_diag"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = self.diag.attrs();
        v.push(("shape", fmt_tuple(&to_i64(&self.shape))));
        v
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let (s, _) = diag_map(&self.shape, self.diag.k, self.diag.axis1, self.diag.axis2)?;
        if s != inputs[0].shape.as_slice() {
            return Err(Error::Shape(format!(
                "_backward_diag: gradient of shape {} does not match the diagonal shape {}",
                fmt_shape(&inputs[0].shape),
                fmt_shape(&s)
            )));
        }
        Ok(vec![Meta::new(&self.shape, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (_, map) = diag_map(&self.shape, self.diag.k, self.diag.axis1, self.diag.axis2)?;
        scatter_add(&inputs[0], &map, &mut outputs[0])?;
        Ok(())
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, _i: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![Some(g.apply1(self.diag, &[og[0]])?)])
    }
}

// ---- registry builders ----

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

/// `Pad`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct PadParams {
    /// Fill with constant_value, repeat the edge values, or mirror the data at its edges.
    pub mode: PadMode,
    /// Amounts added before and after each axis, flattened: (before_0, after_0, before_1, ...).
    pub pad_width: Vec<i64>,
    /// Fill value for mode constant.
    #[param(default = 0.0)]
    pub constant_value: f64,
}

/// `diag`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct DiagParams {
    /// Diagonal offset: positive above the main diagonal, negative below.
    #[param(default = 0)]
    pub k: i64,
    /// First axis of the planes whose diagonal is taken (ignored for 1-D data).
    #[param(default = 0)]
    pub axis1: i64,
    /// Second axis of the planes whose diagonal is taken (ignored for 1-D data).
    #[param(default = 1)]
    pub axis2: i64,
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

pub fn pad_op(a: &Attrs) -> Result<OpRef> {
    let p = PadParams::parse(a)?;
    Ok(Arc::new(Pad {
        mode: p.mode,
        pad_width: sizes("Pad", "pad_width", &p.pad_width)?,
        constant_value: p.constant_value,
    }))
}

pub fn diag_op(a: &Attrs) -> Result<OpRef> {
    let p = DiagParams::parse(a)?;
    Ok(Arc::new(Diag { k: p.k, axis1: p.axis1, axis2: p.axis2 }))
}

/// The index-map ops' declarations.
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
    OpDef {
        name: "Pad",
        aliases: &["pad"],
        args: &["data"],
        doc: "Pad with a constant, the edge values or a reflection (pad_width: before/after per axis).",
        params: PadParams::schema,
        build: pad_op,
    },
    OpDef {
        name: "diag",
        aliases: &[],
        args: &["data"],
        doc: "Diagonal k of a matrix (or of axis1/axis2 planes), or a matrix from a 1-D diagonal.",
        params: DiagParams::schema,
        build: diag_op,
    },
];
