//! `Pooling` (max, avg, sum, lp; 1-D/2-D/3-D; `global_pool`; `valid`/`full` conventions;
//! `count_include_pad`) and its gradient ops.
//!
//! Rules: max pooling's gradient is `_backward_Pooling` (scatter of the head gradient to the first
//! maximum of each window), whose own gradient in the head is `_pooling_max_gather` (reading the
//! head at those maxima) and vice versa; both are piecewise constant in the data. Average and sum
//! pooling are linear: `_backward_Pooling` is their adjoint and `Pooling` is its adjoint. Lp
//! pooling is `(Σ x^p)^(1/p)` on the signed values for p = 1, 2, 3 as in MXNet (p = 1 is the
//! window sum, p = 3 a real cube root) and `(Σ |x|^p)^(1/p)` for larger p (MXNet has none). Its
//! rule is composite: `dx = x^(p-1) · Sᵀ(gy · y^(1-p))` (`sign(x)·|x|^(p-1)` for p > 3) with
//! `Sᵀ` the sum pooling adjoint. Windows that hold no input position (only possible with
//! `full`) give 0.

use std::sync::Arc;

use ferrograd_kernels::conv::{pool_forward, pool_linear_backward, pool_max_backward, pool_max_gather, Geom, PoolKind};
use ferrograd_kernels::Element;

use super::{check_float, check_layout, fmt_us, Contig, PoolLayout, Window};
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::binary::BinaryKind;
use crate::ops::params::{OpDef, OpParams, ParamEnum};
use crate::ops::unary::UnaryKind;
use crate::ops::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};

/// Pooling's reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ParamEnum)]
pub enum PoolType {
    Avg,
    Lp,
    Max,
    Sum,
}

/// How the output size is rounded (`same` is not supported).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ParamEnum)]
pub enum PoolingConvention {
    Full,
    Same,
    Valid,
}

/// `Pooling`'s parameters (also `_backward_Pooling`'s and `_pooling_max_gather`'s).
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct PoolingParams {
    /// Window size per spatial axis (may be left out with global_pool).
    #[param(default = Vec::new())]
    pub kernel: Vec<i64>,
    /// Reduction over each window.
    #[param(default = PoolType::Max)]
    pub pool_type: PoolType,
    /// Pool over the whole spatial extent, ignoring kernel, stride and pad.
    #[param(default = false)]
    pub global_pool: bool,
    /// Disable cuDNN (accepted and ignored).
    #[param(default = false)]
    pub cudnn_off: bool,
    /// Output size rounding: down (valid) or up (full); same is not supported.
    #[param(default = PoolingConvention::Valid)]
    pub pooling_convention: PoolingConvention,
    /// Step per spatial axis (empty: 1 on every axis).
    #[param(default = Vec::new())]
    pub stride: Vec<i64>,
    /// Zero padding on both sides per spatial axis (empty: none).
    #[param(default = Vec::new())]
    pub pad: Vec<i64>,
    /// The p of lp pooling (required for lp).
    #[param(default = None)]
    pub p_value: Option<i64>,
    /// Average pooling divides by the full window, padding included (None means True).
    #[param(default = None)]
    pub count_include_pad: Option<bool>,
    /// Data layout (only the channel-first NCW, NCHW, NCDHW are supported).
    #[param(default = None)]
    pub layout: Option<PoolLayout>,
}

/// The checked pooling configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct PoolParams {
    /// `None` only with `global_pool` and no kernel given.
    pub win: Option<Window>,
    pub pool_type: PoolType,
    pub global_pool: bool,
    pub full: bool,
    pub count_include_pad: bool,
    /// The p of lp pooling (unused by the other types).
    pub p_value: i64,
    pub layout: Option<String>,
}

impl PoolParams {
    /// Checks the declared parameters of op `op`.
    pub fn new(op: &str, p: &PoolingParams) -> Result<PoolParams> {
        let win = if !p.kernel.is_empty() || !p.global_pool {
            // MXNet's Pooling reads only the first `kernel.len()` pad entries (a 1-D pooling
            // given `pad=(1, 1, 1)` pads by 1), so longer tuples are cut, not rejected.
            let pad = if p.pad.len() > p.kernel.len() && !p.kernel.is_empty() {
                &p.pad[..p.kernel.len()]
            } else {
                &p.pad[..]
            };
            Some(Window::new(op, &p.kernel, &p.stride, &[], pad)?)
        } else {
            None
        };
        let full = match p.pooling_convention {
            PoolingConvention::Valid => false,
            PoolingConvention::Full => true,
            PoolingConvention::Same => {
                return Err(Error::Value(format!(
                    "{op}: parameter 'pooling_convention' must be 'valid' or 'full' ('same' is not supported)"
                )))
            }
        };
        let p_value = match (p.pool_type, p.p_value) {
            (PoolType::Lp, None) => {
                return Err(Error::Value(format!("{op}: pool_type 'lp' needs parameter 'p_value'")));
            }
            (PoolType::Lp, Some(v)) if v < 1 => {
                return Err(Error::Value(format!("{op}: parameter 'p_value' must be a positive integer, got {v}")));
            }
            (_, v) => v.unwrap_or(0),
        };
        let layout = p.layout.map(|l| l.name().to_string());
        if let Some(w) = &win {
            check_layout(op, layout.as_deref(), w.nd())?;
        }
        Ok(PoolParams {
            win,
            pool_type: p.pool_type,
            global_pool: p.global_pool,
            full,
            count_include_pad: p.count_include_pad != Some(false),
            p_value,
            layout,
        })
    }

    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = Vec::new();
        if let Some(w) = &self.win {
            w.attrs(&mut v, false);
        }
        v.push(("pool_type", self.pool_type.name().into()));
        if self.global_pool {
            v.push(("global_pool", "True".into()));
        }
        if self.full {
            v.push(("pooling_convention", "full".into()));
        }
        if !self.count_include_pad {
            v.push(("count_include_pad", "False".into()));
        }
        if self.pool_type == PoolType::Lp {
            v.push(("p_value", self.p_value.to_string()));
        }
        if let Some(l) = &self.layout {
            v.push(("layout", l.clone()));
        }
        v
    }

    fn kind(&self) -> PoolKind {
        match self.pool_type {
            PoolType::Max => PoolKind::Max,
            PoolType::Avg => PoolKind::Avg { count_include_pad: self.count_include_pad },
            PoolType::Sum => PoolKind::Sum,
            PoolType::Lp => PoolKind::Lp(self.p_value as f64),
        }
    }

    /// (geometry of one plane, number of planes, output shape) for data of shape `data`.
    fn geom(&self, op: &str, data: &[usize]) -> Result<(Geom, usize, Vec<usize>)> {
        let nd = data.len().wrapping_sub(2);
        let win = match (&self.win, self.global_pool) {
            (_, true) => {
                if !(1..=3).contains(&nd) {
                    return Err(Error::Shape(format!(
                        "{op}: data must be 3-D, 4-D or 5-D (N, C, spatial...), got shape {}",
                        fmt_shape(data)
                    )));
                }
                Window { kernel: data[2..].to_vec(), stride: vec![1; nd], dilate: vec![1; nd], pad: vec![0; nd] }
            }
            (Some(w), false) => w.clone(),
            (None, false) => return Err(Error::Value(format!("{op}: required parameter 'kernel' is missing"))),
        };
        if data.len() != win.nd() + 2 {
            return Err(Error::Shape(format!(
                "{op}: data must be {}-D for a {}-D kernel {}, got shape {}",
                win.nd() + 2,
                win.nd(),
                fmt_us(&win.kernel),
                fmt_shape(data)
            )));
        }
        let mut out = data[..2].to_vec();
        for i in 0..win.nd() {
            let padded = data[2 + i] + 2 * win.pad[i];
            if win.kernel[i] > padded || (data[2 + i] == 0 && !self.global_pool) {
                return Err(Error::Shape(format!(
                    "{op}: kernel {} with pad {} does not fit data of shape {} (axis {} has size {})",
                    fmt_us(&win.kernel),
                    fmt_us(&win.pad),
                    fmt_shape(data),
                    i + 2,
                    data[2 + i]
                )));
            }
            let span = padded - win.kernel[i];
            let s = win.stride[i];
            out.push(if self.full { span.div_ceil(s) } else { span / s } + 1);
        }
        let g = win.geom(1, &data[2..], &out[2..]);
        Ok((g, data[0] * data[1], out))
    }

    /// Whether this is lp pooling with p = 1 or 3, which MXNet computes on the signed values
    /// (`sum(x)`, `cbrt(sum(x³))`); other p use `|x|` (MXNet supports only 1, 2 and 3).
    fn signed_lp(&self) -> bool {
        self.pool_type == PoolType::Lp && matches!(self.p_value, 1 | 3)
    }
    fn with_type(&self, t: PoolType) -> PoolParams {
        PoolParams { pool_type: t, ..self.clone() }
    }
}

/// MXNet `Pooling`.
#[derive(Clone, Debug, PartialEq)]
pub struct Pooling {
    pub p: PoolParams,
}

impl Op for Pooling {
    fn name(&self) -> &'static str {
        "Pooling"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.p.attrs()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let dt = check_float(self.name(), &["data"], inputs)?;
        let (_, _, out) = self.p.geom(self.name(), &inputs[0].shape)?;
        Ok(vec![Meta::new(&out, dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (g, _, _) = self.p.geom(self.name(), inputs[0].shape())?;
        let x = Contig::new(&inputs[0]);
        if self.p.signed_lp() {
            // MXNet raises the values themselves to p (no absolute value): p = 1 sums the window,
            // p = 3 takes the real cube root of its sum of cubes.
            let sum = self.p.with_type(PoolType::Sum).kind();
            let cube = self.p.p_value == 3;
            return float_kernel!(self.name(), inputs[0].dtype(), T => outputs[0].write_out::<T, _>(|y| {
                if cube {
                    let c: Vec<T> = x.get::<T>().iter().map(|&v| v * v * v).collect();
                    pool_forward(&g, sum, &c, y);
                    y.iter_mut().for_each(|v| *v = T::from_f64(v.to_f64().cbrt()));
                } else {
                    pool_forward(&g, sum, x.get(), y);
                }
            }));
        }
        let kind = self.p.kind();
        float_kernel!(self.name(), inputs[0].dtype(), T => outputs[0].write_out::<T, _>(|y| pool_forward(&g, kind, x.get(), y)))
    }
    fn saves(&self) -> Saves {
        if self.p.pool_type == PoolType::Lp {
            Saves::InputsAndOutputs
        } else {
            Saves::Inputs
        }
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        let (x, gy) = (inputs[0], out_grads[0]);
        if self.p.pool_type != PoolType::Lp {
            return Ok(vec![Some(g.apply1(PoolBackward { p: self.p.clone() }, &[gy, x])?)]);
        }
        let p = self.p.p_value as f64;
        let t = if p == 1.0 {
            gy
        } else {
            let yp = g.scalar(BinaryKind::Pow, outputs[0], 1.0 - p, false)?;
            g.mul(gy, yp)?
        };
        let s = g.apply1(PoolBackward { p: self.p.with_type(PoolType::Sum) }, &[t, x])?;
        let f = match self.p.p_value {
            1 => return Ok(vec![Some(s)]),
            2 => x,
            3 => g.mul(x, x)?,
            _ => {
                let a = g.unary(UnaryKind::Abs, x)?;
                let a = g.scalar(BinaryKind::Pow, a, p - 2.0, false)?;
                g.mul(x, a)?
            }
        };
        Ok(vec![Some(g.mul(s, f)?)])
    }
}

fn check_pair(op: &str, p: &PoolParams, a: &[usize], a_name: &str, x: &[usize], a_is_out: bool) -> Result<Geom> {
    let (g, _, out) = p.geom(op, x)?;
    let want = if a_is_out { &out[..] } else { x };
    if a != want {
        return Err(Error::Shape(format!(
            "{op}: {a_name} has shape {}, expected {} for data of shape {}",
            fmt_shape(a),
            fmt_shape(want),
            fmt_shape(x)
        )));
    }
    Ok(g)
}

/// `_backward_Pooling(ograd, data)`: the data gradient of max/avg/sum pooling.
#[derive(Clone, Debug, PartialEq)]
pub struct PoolBackward {
    pub p: PoolParams,
}

impl Op for PoolBackward {
    fn name(&self) -> &'static str {
        "_backward_Pooling"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["ograd", "data"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.p.attrs()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let dt = check_float(self.name(), self.arg_names(), inputs)?;
        check_pair(self.name(), &self.p, &inputs[0].shape, "ograd", &inputs[1].shape, true)?;
        Ok(vec![Meta::new(&inputs[1].shape, dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let g = check_pair(self.name(), &self.p, inputs[0].shape(), "ograd", inputs[1].shape(), true)?;
        let (gy, x) = (Contig::new(&inputs[0]), Contig::new(&inputs[1]));
        let kind = self.p.kind();
        float_kernel!(self.name(), inputs[0].dtype(), T => outputs[0].write_out::<T, _>(|dx| match kind {
            PoolKind::Max => pool_max_backward(&g, gy.get(), x.get(), dx),
            _ => pool_linear_backward(&g, kind, gy.get(), dx),
        }))
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        let (x, h) = (inputs[1], out_grads[0]);
        let gg = match self.p.pool_type {
            PoolType::Max => g.apply1(PoolMaxGather { p: self.p.clone() }, &[h, x])?,
            _ => g.apply1(Pooling { p: self.p.clone() }, &[h])?,
        };
        Ok(vec![Some(gg), None])
    }
}

/// `_pooling_max_gather(data_like, data)`: for each max-pooling window of `data`, the value of
/// `data_like` at the window's first maximum (the adjoint of max pooling's gradient).
#[derive(Clone, Debug, PartialEq)]
pub struct PoolMaxGather {
    pub p: PoolParams,
}

impl Op for PoolMaxGather {
    fn name(&self) -> &'static str {
        "_pooling_max_gather"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["head", "data"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.p.attrs()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let dt = check_float(self.name(), self.arg_names(), inputs)?;
        check_pair(self.name(), &self.p, &inputs[0].shape, "head", &inputs[1].shape, false)?;
        let (_, _, out) = self.p.geom(self.name(), &inputs[1].shape)?;
        Ok(vec![Meta::new(&out, dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let g = check_pair(self.name(), &self.p, inputs[0].shape(), "head", inputs[1].shape(), false)?;
        let (h, x) = (Contig::new(&inputs[0]), Contig::new(&inputs[1]));
        float_kernel!(self.name(), inputs[0].dtype(), T => outputs[0].write_out::<T, _>(|y| pool_max_gather(&g, h.get(), x.get(), y)))
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        let gh = g.apply1(PoolBackward { p: self.p.clone() }, &[out_grads[0], inputs[1]])?;
        Ok(vec![Some(gh), None])
    }
}

fn parse(a: &Attrs) -> Result<PoolParams> {
    PoolParams::new(&a.op, &PoolingParams::parse(a)?)
}

fn build_pooling(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(Pooling { p: parse(a)? }))
}

fn max_avg_sum(a: &Attrs) -> Result<PoolParams> {
    let p = parse(a)?;
    if p.pool_type == PoolType::Lp {
        return Err(Error::Value(format!(
            "{}: pool_type 'lp' has no fused gradient op (Pooling's lp rule is composite); use max, avg or sum",
            a.op
        )));
    }
    Ok(p)
}

fn build_pool_backward(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(PoolBackward { p: max_avg_sum(a)? }))
}

fn build_pool_max_gather(a: &Attrs) -> Result<OpRef> {
    let p = max_avg_sum(a)?;
    if p.pool_type != PoolType::Max {
        return Err(Error::Value(format!("{}: only pool_type 'max' is meaningful here", a.op)));
    }
    Ok(Arc::new(PoolMaxGather { p }))
}

/// The pooling ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "Pooling",
        aliases: &[],
        args: &["data"],
        doc: "Max/avg/sum/lp pooling over 1-D/2-D/3-D windows (global_pool, pooling_convention valid/full, count_include_pad).",
        params: PoolingParams::schema,
        build: build_pooling,
    },
    OpDef {
        name: "_backward_Pooling",
        aliases: &[],
        args: &["ograd", "data"],
        doc: "Data gradient of max/avg/sum Pooling from (ograd, data).",
        params: PoolingParams::schema,
        build: build_pool_backward,
    },
    OpDef {
        name: "_pooling_max_gather",
        aliases: &[],
        args: &["head", "data"],
        doc: "For each max-pooling window of data, head at the window's first maximum (gradient helper).",
        params: PoolingParams::schema,
        build: build_pool_max_gather,
    },
];
