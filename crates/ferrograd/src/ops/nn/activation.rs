//! `Activation` (relu, sigmoid, softrelu, softsign, tanh) and `LeakyReLU` (leaky, elu, selu,
//! gelu, prelu).
//!
//! relu, sigmoid, tanh and softsign run the vectorised unary kernels and reuse their gradient
//! rules. `softrelu(x) = log(1 + e^x)`, computed as `max(x, 0) + log1p(e^-|x|)` (no overflow, no
//! loss of precision for very negative x). Kinks: relu and the leaky family use the `x > 0`
//! branch's derivative only for `x > 0`, so at exactly 0 the derivative is the negative side's
//! (0 for relu, `slope` for leaky, `slope` for elu, `λ·α` for selu, `gamma` for prelu).
//!
//! `gelu` is the exact form MXNet 1.9.1 computes, `0.5·x·(1 + erf(x/√2))`. `slope` is rounded to
//! float32 before use, as MXNet stores it (so float64 results match MXNet's).
//!
//! `rrelu` (randomised leaky ReLU) has two visible outputs, `output` and `mask`, as in MXNet.
//! In training (`autograd.record(train_mode=True)`, `forward(is_train=True)`) each element draws
//! its negative-side slope uniformly from `[lower_bound, upper_bound)` (the crate's Philox stream,
//! so `mx.random.seed` makes it reproducible); in inference the slope is the mean
//! `(lower_bound + upper_bound)/2`. `mask` holds the slope each element used, and the gradient is
//! `h` where `x > 0` and `h·mask` elsewhere (MXNet 1.9.1 crashes in training mode for rrelu and
//! leaves `mask` uninitialised in inference).

use std::sync::Arc;

use ferrograd_kernels::par::Cost;
use ferrograd_kernels::unary_binary::unary;
use ferrograd_kernels::Element;

use super::float_only;
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::binary::BinaryKind;
use crate::ops::params::{OpDef, OpParams, ParamEnum};
use crate::ops::unary::{Unary, UnaryKind};
use crate::ops::{Ctx, Grad, Op, Saves, Val};
use crate::with_float_dtype;
use ferrograd_kernels::special::erf;

/// `out = f(x)` elementwise in f64 for any float dtype.
fn map_f64(x: &NDArray, out: &mut NDArray, f: impl Fn(f64) -> f64 + Copy + Send + Sync) -> Result<()> {
    let src = x.snapshot();
    with_float_dtype!(x.dtype(), T => {
        let s = src.typed::<T>()?;
        out.write_out::<T, _>(|o| unary(s, x.layout(), o, Cost::Heavy, move |v: T| T::from_f64(f(v.to_f64()))))
    }, else Err(Error::DType(format!("activation: data must have a float dtype, got {}", x.dtype()))))
}

#[inline]
fn softrelu(x: f64) -> f64 {
    x.max(0.0) + (-x.abs()).exp().ln_1p()
}

/// Which `Activation`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, ParamEnum)]
pub enum ActType {
    Relu,
    Sigmoid,
    Softrelu,
    Softsign,
    Tanh,
}

/// `Activation`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct ActivationParams {
    /// Activation function to apply.
    pub act_type: ActType,
}

impl ActType {
    /// The unary op with the same function, if any.
    fn unary(self) -> Option<Unary> {
        let kind = match self {
            ActType::Relu => UnaryKind::Relu,
            ActType::Sigmoid => UnaryKind::Sigmoid,
            ActType::Softsign => UnaryKind::Softsign,
            ActType::Tanh => UnaryKind::Tanh,
            ActType::Softrelu => return None,
        };
        Some(Unary { kind })
    }
}

/// `Activation(data, act_type)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Activation {
    pub act: ActType,
}

impl Op for Activation {
    fn name(&self) -> &'static str {
        "Activation"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        ActivationParams { act_type: self.act }.to_attrs()
    }
    fn infer_partial(
        &self,
        ins: &mut [crate::ops::partial::PartialShape],
        outs: &mut [crate::ops::partial::PartialShape],
    ) -> Result<()> {
        crate::ops::partial::same_shape(ins, outs)
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        float_only("Activation", "data", inputs[0].dtype)?;
        Ok(vec![inputs[0].clone()])
    }
    fn forward(&self, ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        match self.act.unary() {
            Some(u) => u.forward(ctx, inputs, outputs),
            None => map_f64(&inputs[0], &mut outputs[0], softrelu),
        }
    }
    fn saves(&self) -> Saves {
        match self.act.unary() {
            Some(u) => u.saves(),
            None => Saves::Inputs,
        }
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], outputs: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        match self.act.unary() {
            Some(u) => u.grad(g, inputs, outputs, og),
            None => {
                // d softrelu / dx = sigmoid(x).
                let s = g.unary(UnaryKind::Sigmoid, inputs[0])?;
                Ok(vec![Some(g.mul(og[0], s)?)])
            }
        }
    }
}

/// Which `LeakyReLU`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, ParamEnum)]
pub enum LeakyType {
    Elu,
    Gelu,
    Leaky,
    Prelu,
    Rrelu,
    Selu,
}

/// `LeakyReLU`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct LeakyReluParams {
    /// Activation function to apply.
    #[param(default = LeakyType::Leaky)]
    pub act_type: LeakyType,
    /// Slope of the negative side (leaky), or the scale of elu's negative side.
    #[param(default = 0.25)]
    pub slope: f64,
    /// Lower bound of rrelu's random slope (rrelu only).
    #[param(default = 0.125)]
    pub lower_bound: f64,
    /// Upper bound of rrelu's random slope (rrelu only).
    #[param(default = 0.334)]
    pub upper_bound: f64,
}

const SELU_ALPHA: f64 = 1.673_263_242_354_377_3;
const SELU_LAMBDA: f64 = 1.050_700_987_355_480_5;
const FRAC_1_SQRT_2PI: f64 = 0.398_942_280_401_432_7; // 1/√(2π)

/// `LeakyReLU(data, gamma?, act_type, slope, lower_bound, upper_bound)`; `gamma` only for
/// prelu, the bounds only for rrelu.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LeakyReLU {
    pub act: LeakyType,
    pub slope: f64,
    pub lower: f64,
    pub upper: f64,
}

impl LeakyReLU {
    /// A LeakyReLU of a kind without random slopes (rrelu's bounds at their defaults).
    pub fn new(act: LeakyType, slope: f64) -> LeakyReLU {
        LeakyReLU { act, slope, lower: 0.125, upper: 0.334 }
    }
    /// rrelu's bounds as MXNet uses them (float32).
    fn bounds(&self) -> (f64, f64) {
        (self.lower as f32 as f64, self.upper as f32 as f64)
    }
    /// rrelu's inference slope, `(lower + upper)/2` computed in float32 as MXNet does.
    fn mean_slope(&self) -> f64 {
        ((self.lower as f32 + self.upper as f32) / 2.0) as f64
    }
    /// rrelu's forward: `mask` gets each element's slope (sampled in training, else the mean)
    /// rounded to the data's dtype, and `out = x > 0 ? x : mask·x`.
    fn rrelu_forward(&self, ctx: &Ctx, x: &NDArray, outputs: &mut [NDArray]) -> Result<()> {
        let n = x.size();
        let slopes: Vec<f64> = if ctx.is_train {
            let (lo, hi) = self.bounds();
            let u = crate::random::uniform(0.0, 1.0, &[n], DType::F64)?.to_f64_vec();
            u.into_iter().map(|u| lo + (hi - lo) * u).collect()
        } else {
            vec![self.mean_slope(); n]
        };
        let xv = x.to_contiguous();
        let src = xv.snapshot();
        with_float_dtype!(x.dtype(), T => {
            let s = &src.typed::<T>()?[xv.layout().contiguous_range().unwrap_or(0..0)];
            let mask: Vec<T> = slopes.iter().map(|&a| T::from_f64(a)).collect();
            outputs[0].write_out::<T, _>(|o| {
                for ((o, &v), &m) in o.iter_mut().zip(s).zip(&mask) {
                    let v = v.to_f64();
                    *o = T::from_f64(if v > 0.0 { v } else { m.to_f64() * v });
                }
            })?;
            outputs[1].write_out::<T, _>(|o| o.copy_from_slice(&mask))
        }, else Err(Error::DType("LeakyReLU: data must have a float dtype".into())))
    }
    /// `slope` as MXNet uses it: a float32 parameter.
    fn slope(&self) -> f64 {
        self.slope as f32 as f64
    }
    /// The shape `gamma` broadcasts to against data of `shape`: `(1, C, 1, ...)`.
    fn gamma_bshape(&self, shape: &[usize], gamma: &[usize]) -> Result<Vec<usize>> {
        let n: usize = gamma.iter().product();
        let c = if shape.len() >= 2 { shape[1] } else { 1 };
        if gamma.len() > 1 || (n != c && n != 1) {
            return Err(Error::Shape(format!(
                "LeakyReLU: prelu gamma must have shape ({c},) (the channels, axis 1) or (1,) for data {}, got {}",
                fmt_shape(shape),
                fmt_shape(gamma)
            )));
        }
        let mut b = vec![1; shape.len()];
        if shape.len() >= 2 {
            b[1] = n;
        } else if shape.len() == 1 {
            b[0] = 1;
        }
        Ok(b)
    }
}

impl Op for LeakyReLU {
    fn name(&self) -> &'static str {
        "LeakyReLU"
    }
    fn num_outputs(&self) -> usize {
        if self.act == LeakyType::Rrelu {
            2
        } else {
            1
        }
    }
    fn output_names(&self) -> Option<&'static [&'static str]> {
        (self.act == LeakyType::Rrelu).then_some(&["output", "mask"][..])
    }
    fn is_random(&self) -> bool {
        self.act == LeakyType::Rrelu
    }
    fn arg_names(&self) -> &'static [&'static str] {
        if self.act == LeakyType::Prelu {
            &["data", "gamma"]
        } else {
            &["data"]
        }
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = vec![("act_type", self.act.name().to_string())];
        let p =
            LeakyReluParams { act_type: self.act, slope: self.slope, lower_bound: self.lower, upper_bound: self.upper };
        v.extend(p.to_attrs().into_iter().filter(|(k, _)| *k != "act_type"));
        v
    }
    fn infer_missing(&self, inputs: &[Option<Meta>]) -> Vec<Option<Meta>> {
        let Some(d) = inputs.first().cloned().flatten() else { return Vec::new() };
        let c = if d.shape.len() >= 2 { d.shape[1] } else { 1 };
        vec![None, Some(Meta::new(&[c], d.dtype))]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        float_only("LeakyReLU", "data", inputs[0].dtype)?;
        if self.act == LeakyType::Prelu {
            self.gamma_bshape(&inputs[0].shape, &inputs[1].shape)?;
            if inputs[1].dtype != inputs[0].dtype {
                return Err(Error::DType(format!(
                    "LeakyReLU: gamma dtype {} must match data dtype {}",
                    inputs[1].dtype, inputs[0].dtype
                )));
            }
        }
        Ok(vec![inputs[0].clone(); self.num_outputs()])
    }
    fn forward(&self, ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let x = &inputs[0];
        let a = self.slope();
        match self.act {
            LeakyType::Rrelu => self.rrelu_forward(ctx, x, outputs),
            LeakyType::Leaky => map_f64(x, &mut outputs[0], move |v| if v > 0.0 { v } else { a * v }),
            LeakyType::Elu => map_f64(x, &mut outputs[0], move |v| if v > 0.0 { v } else { a * v.exp_m1() }),
            LeakyType::Selu => {
                map_f64(x, &mut outputs[0], |v| SELU_LAMBDA * if v > 0.0 { v } else { SELU_ALPHA * v.exp_m1() })
            }
            LeakyType::Gelu => {
                map_f64(x, &mut outputs[0], |v| 0.5 * v * (1.0 + erf(v * std::f64::consts::FRAC_1_SQRT_2)))
            }
            LeakyType::Prelu => {
                let bshape = self.gamma_bshape(x.shape(), inputs[1].shape())?;
                let gamma = inputs[1].reshape(&bshape)?.broadcast_to(x.shape())?;
                let gv = gamma.to_contiguous().to_f64_vec();
                let xv = x.to_contiguous();
                let src = xv.snapshot();
                with_float_dtype!(x.dtype(), T => {
                    let s = &src.typed::<T>()?[xv.layout().contiguous_range().unwrap_or(0..0)];
                    outputs[0].write_out::<T, _>(|o| {
                        for ((o, &v), &gm) in o.iter_mut().zip(s).zip(&gv) {
                            let v = v.to_f64();
                            *o = T::from_f64(if v > 0.0 { v } else { gm * v });
                        }
                    })
                }, else Err(Error::DType("LeakyReLU: data must have a float dtype".into())))
            }
        }
    }
    fn saves(&self) -> Saves {
        if self.act == LeakyType::Rrelu {
            Saves::InputsAndOutputs
        } else {
            Saves::Inputs
        }
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], outputs: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let (x, h) = (inputs[0], og[0]);
        match self.act {
            LeakyType::Rrelu => {
                // d = [x > 0] + [x <= 0]·mask; the mask is a constant of the draw (no gradient).
                let m = g.scalar(BinaryKind::Gt, x, 0.0, false)?;
                let nm = g.rsub_scalar(1.0, m)?;
                let neg = g.mul(nm, outputs[1])?;
                let d = g.add(m, neg)?;
                Ok(vec![Some(g.mul(h, d)?)])
            }
            // d = 1 where x > 0, else slope: one fused pass.
            LeakyType::Leaky => Ok(vec![Some(g.apply1(super::act_grad::MaskedGrad::leaky(self.slope()), &[h, x])?)]),
            LeakyType::Elu | LeakyType::Selu => {
                // d = [x > 0] + [x <= 0]·c·exp(min(x, 0)), scaled by λ for selu.
                let (c, lam) = if self.act == LeakyType::Elu {
                    (self.slope(), 1.0)
                } else {
                    (SELU_ALPHA * SELU_LAMBDA, SELU_LAMBDA)
                };
                let m = g.scalar(BinaryKind::Gt, x, 0.0, false)?;
                let nm = g.rsub_scalar(1.0, m)?;
                let xm = g.scalar(BinaryKind::Minimum, x, 0.0, false)?;
                let e = g.unary(UnaryKind::Exp, xm)?;
                let e = g.mul_scalar(e, c)?;
                let neg = g.mul(nm, e)?;
                let pos = g.mul_scalar(m, lam)?;
                let d = g.add(pos, neg)?;
                Ok(vec![Some(g.mul(h, d)?)])
            }
            LeakyType::Gelu => {
                // y = 0.5·x·(1 + erf(x/√2)): dy/dx = 0.5·(1 + erf(x/√2)) + x·φ(x), φ the normal pdf.
                let xs = g.mul_scalar(x, std::f64::consts::FRAC_1_SQRT_2)?;
                let e = g.unary(UnaryKind::Erf, xs)?;
                let cdf = g.add_scalar(e, 1.0)?;
                let cdf = g.mul_scalar(cdf, 0.5)?;
                let x2 = g.mul(x, x)?;
                let x2 = g.mul_scalar(x2, -0.5)?;
                let pdf = g.unary(UnaryKind::Exp, x2)?;
                let pdf = g.mul_scalar(pdf, FRAC_1_SQRT_2PI)?;
                let xp = g.mul(x, pdf)?;
                let d = g.add(cdf, xp)?;
                Ok(vec![Some(g.mul(h, d)?)])
            }
            LeakyType::Prelu => {
                let gamma = inputs[1];
                let (xs, gs) = (g.shape(x), g.shape(gamma));
                let bshape = self.gamma_bshape(&xs, &gs)?;
                let gb = g.reshape(gamma, &bshape)?;
                let m = g.scalar(BinaryKind::Gt, x, 0.0, false)?;
                let nm = g.rsub_scalar(1.0, m)?;
                // dx = h·([x > 0] + [x <= 0]·gamma), dgamma = Σ h·x·[x <= 0] over all but axis 1.
                let ng = g.mul(nm, gb)?;
                let d = g.add(m, ng)?;
                let gx = g.mul(h, d)?;
                let hx = g.mul(h, x)?;
                let hxn = g.mul(hx, nm)?;
                let axes: Vec<i64> =
                    (0..xs.len()).filter(|&d| !(xs.len() >= 2 && d == 1 && bshape[1] != 1)).map(|d| d as i64).collect();
                let s = if axes.is_empty() { hxn } else { g.sum_axes(hxn, axes, true)? };
                let gg = g.reshape(s, &gs)?;
                Ok(vec![Some(gx), Some(gg)])
            }
        }
    }
}

fn build_leaky_relu(a: &crate::ops::Attrs) -> Result<crate::ops::OpRef> {
    let p = LeakyReluParams::parse(a)?;
    if p.act_type == LeakyType::Rrelu && !(p.lower_bound.is_finite() && p.upper_bound.is_finite()) {
        return Err(Error::Value(format!(
            "LeakyReLU: rrelu needs finite lower_bound and upper_bound, got {} and {}",
            p.lower_bound, p.upper_bound
        )));
    }
    Ok(Arc::new(LeakyReLU { act: p.act_type, slope: p.slope, lower: p.lower_bound, upper: p.upper_bound }))
}

/// The activation ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "Activation",
        aliases: &[],
        args: &["data"],
        doc: "Elementwise activation: relu, sigmoid, softrelu (log(1 + e^x)), softsign or tanh.",
        params: ActivationParams::schema,
        build: |a| Ok(Arc::new(Activation { act: ActivationParams::parse(a)?.act_type })),
    },
    OpDef {
        name: "LeakyReLU",
        aliases: &[],
        args: &["data", "gamma?"],
        doc: "Leaky ReLU family: leaky, elu, selu, gelu (erf form), prelu (learned gamma per channel, axis 1), \
              rrelu (random slope in [lower_bound, upper_bound) while training, their mean in inference; \
              outputs output and mask).",
        params: LeakyReluParams::schema,
        build: build_leaky_relu,
    },
];
