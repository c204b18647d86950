//! `Pad` (constant, edge and reflect modes) and its gradient, through an index map: each output
//! element reads one source position or the fill value; the gradient scatters back.

use std::sync::Arc;

use super::attrs::fmt_tuple;
use super::common::{gather, scatter_add, sizes, to_i64, NONE};
use super::params::{OpDef, OpParams, ParamEnum};
use super::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};

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

pub fn pad_op(a: &Attrs) -> Result<OpRef> {
    let p = PadParams::parse(a)?;
    Ok(Arc::new(Pad {
        mode: p.mode,
        pad_width: sizes("Pad", "pad_width", &p.pad_width)?,
        constant_value: p.constant_value,
    }))
}
/// `Pad`'s declaration.
pub const DEFS: &[OpDef] = &[OpDef {
    name: "Pad",
    aliases: &["pad"],
    args: &["data"],
    doc: "Pad with a constant, the edge values or a reflection (pad_width: before/after per axis).",
    params: PadParams::schema,
    build: pad_op,
}];
