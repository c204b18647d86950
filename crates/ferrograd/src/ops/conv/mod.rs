//! Convolution, deconvolution, pooling, upsampling and normalisation layers.
//!
//! Shared here: the spatial parameters (`kernel`, `stride`, `dilate`, `pad`) parsed from keyword
//! arguments or MXNet strings, their validation, the mapping of 1-D/2-D/3-D problems onto the
//! kernels' three-axis [`Geom`], and contiguous typed access to input buffers.

pub mod bn_act;
pub mod convolution;
pub mod fused;
pub mod group_norm;
pub mod l2norm;
pub mod lrn;
pub mod norm;
pub mod pooling;
pub mod resize;
pub mod upsampling;

use std::ops::Range;
use std::sync::Arc;

use ferrograd_kernels::conv::Geom;

use super::params::ParamEnum;
use super::AttrValue;
use crate::buffer::Buffer;
use crate::dtype::{DType, DTypeElem};
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};

/// A contiguous snapshot of an input, read as a typed slice.
pub(crate) struct Contig {
    buf: Arc<Buffer>,
    range: Range<usize>,
}

impl Contig {
    pub(crate) fn new(x: &NDArray) -> Contig {
        let c = x.to_contiguous();
        let range = c.layout().contiguous_range().unwrap_or(0..0); // ok: to_contiguous is contiguous
        Contig { buf: c.snapshot(), range }
    }

    pub(crate) fn get<T: DTypeElem>(&self) -> &[T] {
        self.buf.slice::<T>().and_then(|s| s.get(self.range.clone())).unwrap_or(&[])
    }
}

/// Spatial window parameters shared by Convolution, Deconvolution and Pooling.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    pub kernel: Vec<usize>,
    pub stride: Vec<usize>,
    pub dilate: Vec<usize>,
    pub pad: Vec<usize>,
}

fn positive(op: &str, key: &str, t: &[i64], allow_zero: bool) -> Result<Vec<usize>> {
    t.iter()
        .map(|&v| {
            if v < 0 || (!allow_zero && v == 0) {
                Err(Error::Value(format!(
                    "{op}: parameter '{key}' must be {} integers, got {}",
                    if allow_zero { "non-negative" } else { "positive" },
                    super::attrs::fmt_tuple(t)
                )))
            } else {
                Ok(v as usize)
            }
        })
        .collect()
}

impl Window {
    /// Builds the window of op `op` from its declared `kernel` (required: an empty tuple is a
    /// missing kernel) and per-axis `stride`/`dilate`/`pad` (empty: 1/1/0 on every axis; otherwise
    /// one entry per kernel axis).
    pub fn new(op: &str, kernel: &[i64], stride: &[i64], dilate: &[i64], pad: &[i64]) -> Result<Window> {
        if kernel.is_empty() {
            return Err(Error::Value(format!("{op}: required parameter 'kernel' is missing")));
        }
        let kernel = positive(op, "kernel", kernel, false)?;
        let nd = kernel.len();
        if !(1..=3).contains(&nd) {
            return Err(Error::Value(format!(
                "{op}: kernel must have 1, 2 or 3 dimensions (1-D, 2-D, 3-D), got {}",
                super::attrs::fmt_tuple(&kernel.iter().map(|&k| k as i64).collect::<Vec<_>>())
            )));
        }
        let per_axis = |key: &str, t: &[i64], default: usize, allow_zero: bool| -> Result<Vec<usize>> {
            match t.len() {
                0 => Ok(vec![default; nd]),
                n if n == nd => positive(op, key, t, allow_zero),
                _ => Err(Error::Value(format!(
                    "{op}: parameter '{key}' {} must have {nd} entries like kernel",
                    super::attrs::fmt_tuple(t)
                ))),
            }
        };
        Ok(Window {
            stride: per_axis("stride", stride, 1, false)?,
            dilate: per_axis("dilate", dilate, 1, false)?,
            pad: per_axis("pad", pad, 0, true)?,
            kernel,
        })
    }

    pub fn nd(&self) -> usize {
        self.kernel.len()
    }

    /// MXNet string attributes of the window (stride/dilate/pad only when not default).
    pub fn attrs(&self, out: &mut Vec<(&'static str, String)>, with_dilate: bool) {
        let t = |v: &[usize]| AttrValue::Tuple(v.iter().map(|&x| x as i64).collect()).to_mx_string();
        out.push(("kernel", t(&self.kernel)));
        if self.stride.iter().any(|&s| s != 1) {
            out.push(("stride", t(&self.stride)));
        }
        if with_dilate && self.dilate.iter().any(|&s| s != 1) {
            out.push(("dilate", t(&self.dilate)));
        }
        if self.pad.iter().any(|&s| s != 0) {
            out.push(("pad", t(&self.pad)));
        }
    }

    /// Effective (dilated) kernel extent along axis `i`.
    pub fn extent(&self, i: usize) -> usize {
        self.dilate[i] * (self.kernel[i] - 1) + 1
    }

    /// Output spatial sizes of a convolution over `spatial` (floor division), or a Shape error
    /// when the window does not fit.
    pub fn conv_out(&self, op: &str, data: &[usize]) -> Result<Vec<usize>> {
        let spatial = &data[2..];
        (0..self.nd())
            .map(|i| {
                // Checked: a pad near 2^63 must be an error, not a wrapped size.
                let padded = self.pad[i].checked_mul(2).and_then(|p| p.checked_add(spatial[i])).ok_or_else(|| {
                    Error::Shape(format!(
                        "{op}: pad {} is too large for data of shape {}",
                        fmt_us(&self.pad),
                        fmt_shape(data)
                    ))
                })?;
                if self.extent(i) > padded {
                    return Err(Error::Shape(format!(
                        "{op}: kernel {} (dilate {}) with pad {} does not fit data of shape {} (axis {} has size {} \
                         padded to {padded})",
                        fmt_us(&self.kernel),
                        fmt_us(&self.dilate),
                        fmt_us(&self.pad),
                        fmt_shape(data),
                        i + 2,
                        spatial[i]
                    )));
                }
                Ok((padded - self.extent(i)) / self.stride[i] + 1)
            })
            .collect()
    }

    /// The kernels' three-axis geometry (leading axes of size 1 for 1-D/2-D).
    pub fn geom(&self, c: usize, inp: &[usize], out: &[usize]) -> Geom {
        let lead = 3 - self.nd();
        let pad3 = |v: &[usize], fill: usize| -> [usize; 3] {
            let mut r = [fill; 3];
            r[lead..].copy_from_slice(v);
            r
        };
        Geom {
            c,
            inp: pad3(inp, 1),
            out: pad3(out, 1),
            k: pad3(&self.kernel, 1),
            s: pad3(&self.stride, 1),
            p: pad3(&self.pad, 0),
            d: pad3(&self.dilate, 1),
        }
    }
}

pub(crate) fn fmt_us(v: &[usize]) -> String {
    fmt_shape(v)
}

/// MXNet's `layout` values for Convolution and Deconvolution (only the channel-first ones run).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ParamEnum)]
pub enum ConvLayout {
    #[param(name = "NCDHW")]
    Ncdhw,
    #[param(name = "NCHW")]
    Nchw,
    #[param(name = "NCW")]
    Ncw,
    #[param(name = "NDHWC")]
    Ndhwc,
    #[param(name = "NHWC")]
    Nhwc,
}

/// MXNet's `layout` values for Pooling (only the channel-first ones run).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ParamEnum)]
pub enum PoolLayout {
    #[param(name = "NCDHW")]
    Ncdhw,
    #[param(name = "NCHW")]
    Nchw,
    #[param(name = "NCW")]
    Ncw,
    #[param(name = "NDHWC")]
    Ndhwc,
    #[param(name = "NHWC")]
    Nhwc,
    #[param(name = "NWC")]
    Nwc,
}

/// MXNet's `cudnn_tune` values (accepted and ignored).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ParamEnum)]
pub enum CudnnTune {
    Fastest,
    #[param(name = "limited_workspace")]
    LimitedWorkspace,
    Off,
}

/// Checks the MXNet `layout` parameter against the number of spatial axes (only channel-first
/// layouts are supported).
pub(crate) fn check_layout(op: &str, layout: Option<&str>, nd: usize) -> Result<()> {
    let want = ["NCW", "NCHW", "NCDHW"][nd - 1];
    match layout {
        None => Ok(()),
        Some(l) if l == want => Ok(()),
        Some(l) => Err(Error::Value(format!(
            "{op}: layout '{l}' is not supported for a {nd}-D kernel (only the channel-first layout '{want}')"
        ))),
    }
}

/// Float32/float64 inputs of one dtype; the error names the op and the argument.
pub(crate) fn check_float(op: &str, names: &[&str], metas: &[Meta]) -> Result<DType> {
    let dt = metas[0].dtype;
    for (m, n) in metas.iter().zip(names) {
        if !matches!(m.dtype, DType::F32 | DType::F64) {
            return Err(Error::DType(format!("{op}: argument '{n}' must be float32 or float64, got {}", m.dtype)));
        }
        if m.dtype != dt {
            return Err(Error::DType(format!(
                "{op}: argument '{n}' has dtype {}, but '{}' has {dt}",
                m.dtype, names[0]
            )));
        }
    }
    Ok(dt)
}
