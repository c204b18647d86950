//! `LRN`: local response normalisation across channels,
//! `y = x · (knorm + alpha/nsize · Σ x²)^(-beta)`, the sum over the `nsize` channels centred on
//! each channel (truncated at the edges) at the same batch item and spatial position.
//!
//! MXNet 1.9.1 reads `alpha`, `beta` and `knorm` as float32 and supports only odd `nsize` no
//! larger than the channel count, on 4-D NCHW data; all three checks happen at build or shape
//! inference here. MXNet runs float32 only (float16/float64 data fail inside its kernel); this
//! op takes any float dtype, accumulating in float64.
//!
//! Gradient: with `N = knorm + a·W(x²)` (`a = alpha/nsize`, `W` the channel-window sum),
//! `dx = h·N^-β − 2aβ · x · W(h·x·N^(-β-1))`. `W` is symmetric, so it is its own adjoint; the rule
//! is written with registered ops and `W` itself, so it is differentiable again.

use std::sync::Arc;

use ferrograd_kernels::lrn::{lrn_forward, window_sum, ChannelWindow};

use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::binary::BinaryKind;
use crate::ops::common::dense;
use crate::ops::nn::float_only;
use crate::ops::params::{OpDef, OpParams};
use crate::ops::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::with_float_dtype;

/// `LRN`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct LrnParams {
    /// The scale α of the sum of squares (divided by nsize).
    #[param(default = 1e-4)]
    pub alpha: f64,
    /// The power β the normaliser is raised to.
    #[param(default = 0.75)]
    pub beta: f64,
    /// The constant k added to the scaled sum of squares.
    #[param(default = 2.0)]
    pub knorm: f64,
    /// Width of the channel window (odd, at most the number of channels).
    pub nsize: i64,
}

/// `LRN(data, alpha, beta, knorm, nsize)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Lrn {
    pub p: LrnParams,
}

impl Lrn {
    /// `(knorm, alpha/nsize, beta)` as MXNet computes them (float32).
    fn coeffs(&self) -> (f64, f64, f64) {
        let salpha = self.p.alpha as f32 / self.p.nsize as f32;
        (self.p.knorm as f32 as f64, salpha as f64, self.p.beta as f32 as f64)
    }
    fn half(&self) -> usize {
        (self.p.nsize / 2) as usize
    }
    fn window(&self, shape: &[usize]) -> Result<ChannelWindow> {
        let [_, c, h, w] = *shape else {
            return Err(Error::Shape(format!(
                "LRN: data must be 4-D (batch, channel, height, width), got shape {}",
                fmt_shape(shape)
            )));
        };
        if self.p.nsize as usize > c {
            return Err(Error::Shape(format!(
                "LRN: nsize={} is larger than the {c} channels (axis 1) of data {}",
                self.p.nsize,
                fmt_shape(shape)
            )));
        }
        Ok(ChannelWindow { channels: c, inner: h * w, half: self.half() })
    }
}

impl Op for Lrn {
    fn name(&self) -> &'static str {
        "LRN"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.p.to_attrs()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        float_only("LRN", "data", inputs[0].dtype)?;
        self.window(&inputs[0].shape)?;
        Ok(vec![inputs[0].clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let x = &inputs[0];
        let w = self.window(x.shape())?;
        let (k, a, b) = self.coeffs();
        let (buf, range) = dense(x);
        with_float_dtype!(x.dtype(), T => {
            let s = &buf.typed::<T>()?[range];
            outputs[0].write_out::<T, _>(|o| lrn_forward(s, w, k, a, b, o))
        }, else Err(Error::DType(format!("LRN: data must have a float dtype, got {}", x.dtype()))))
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let (x, h) = (inputs[0], og[0]);
        let (k, a, b) = self.coeffs();
        let win = ChannelSum { half: self.half() };
        let sq = g.mul(x, x)?;
        let s = g.apply1(win, &[sq])?;
        let n = g.mul_scalar(s, a)?;
        let n = g.add_scalar(n, k)?;
        let p = g.scalar(BinaryKind::Pow, n, -b, false)?;
        let direct = g.mul(h, p)?;
        let q = g.div(p, n)?;
        let hx = g.mul(h, x)?;
        let hxq = g.mul(hx, q)?;
        let wq = g.apply1(win, &[hxq])?;
        let xw = g.mul(x, wq)?;
        let through = g.mul_scalar(xw, -2.0 * a * b)?;
        Ok(vec![Some(g.add(direct, through)?)])
    }
}

/// `_lrn_channel_sum`: the sum over the `2·half + 1` channels (axis 1) centred on each channel,
/// LRN's window. Linear and symmetric, so its gradient is itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChannelSum {
    pub half: usize,
}

impl Op for ChannelSum {
    fn name(&self) -> &'static str {
        "_lrn_channel_sum"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("nsize", (2 * self.half + 1).to_string())]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        if inputs[0].shape.len() < 2 {
            return Err(Error::Shape(format!(
                "_lrn_channel_sum: data needs a channel axis (axis 1), got shape {}",
                fmt_shape(&inputs[0].shape)
            )));
        }
        Ok(vec![inputs[0].clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let x = &inputs[0];
        let shape = x.shape();
        let w = ChannelWindow { channels: shape[1], inner: shape[2..].iter().product(), half: self.half };
        let (buf, range) = dense(x);
        with_float_dtype!(x.dtype(), T => {
            let s = &buf.typed::<T>()?[range];
            outputs[0].write_out::<T, _>(|o| window_sum(s, w, o))
        }, else Err(Error::DType(format!("_lrn_channel_sum: data must have a float dtype, got {}", x.dtype()))))
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, _i: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![Some(g.apply1(*self, &[og[0]])?)])
    }
}

fn build_lrn(a: &Attrs) -> Result<OpRef> {
    let p = LrnParams::parse(a)?;
    if p.nsize < 1 || p.nsize % 2 == 0 {
        return Err(Error::Value(format!(
            "LRN: nsize must be a positive odd number (MXNet supports only odd windows), got {}",
            p.nsize
        )));
    }
    Ok(Arc::new(Lrn { p }))
}

/// `LRN`'s declaration.
pub const DEFS: &[OpDef] = &[OpDef {
    name: "LRN",
    aliases: &[],
    args: &["data"],
    doc: "Local response normalisation across channels: x · (knorm + alpha/nsize · Σ x²)^(-beta), the sum \
          over the nsize (odd) channels centred on each channel; 4-D NCHW float data.",
    params: LrnParams::schema,
    build: build_lrn,
}];
