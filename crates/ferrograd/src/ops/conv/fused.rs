//! Inference-time `Convolution → BatchNorm [→ relu | clip]` in one step.
//!
//! Not training, BatchNorm is a per-channel affine map of the moving statistics (C numbers,
//! computed per forward from gamma, beta, moving mean and variance), and relu / clip are
//! elementwise: both are applied to each convolution output plane right after it is written,
//! instead of two more passes over memory. Each value is computed with exactly the expressions
//! the separate ops use, in the same element type, so the fused output is bitwise the unfused
//! one. The executor decides where the chain may run fused (see `executor::fusion`).

use ferrograd_kernels::conv::{conv_forward_then, AffineAct};
use ferrograd_kernels::Element;

use super::convolution::{ConvParams, ConvolutionParams};
use super::norm::BatchNormParams;
use super::Contig;
use crate::error::Result;
use crate::ndarray::NDArray;
use crate::ops::params::OpParams;
use crate::ops::{AttrValue, Attrs, Op};

/// The elementwise map after BatchNorm.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FusedAct {
    None,
    /// `Activation(act_type='relu')`: `x` where `x > 0` or NaN, else 0.
    Relu,
    /// `clip(a_min, a_max)`, the bounds as clip applies them (float32 parameters).
    Clip(f64, f64),
}

impl FusedAct {
    /// The kernels' form of the map for element type `T`.
    pub fn affine<T: Element>(self) -> AffineAct<T> {
        match self {
            FusedAct::None => AffineAct::Identity,
            FusedAct::Relu => AffineAct::Relu,
            FusedAct::Clip(lo, hi) => AffineAct::Clip(T::from_f64(lo), T::from_f64(hi)),
        }
    }

    /// The map of an activation op that may follow BatchNorm (`Activation(act_type='relu')` or
    /// `clip`), or `None`.
    pub fn of(op: &dyn Op) -> Option<FusedAct> {
        let a = attrs_of(op);
        match op.name() {
            "Activation" if a.str_or("act_type", "").ok()? == "relu" => Some(FusedAct::Relu),
            // MXNet's clip bounds are float32 parameters (see `Clip::bounds`).
            "clip" => {
                Some(FusedAct::Clip(a.f64_req("a_min").ok()? as f32 as f64, a.f64_req("a_max").ok()? as f32 as f64))
            }
            _ => None,
        }
    }
}

/// A recognised `Convolution → BatchNorm → FusedAct` chain.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvBnAct {
    conv: ConvParams,
    eps: f64,
    fix_gamma: bool,
    pub act: FusedAct,
}

/// An op's declared attributes read back as MXNet strings.
pub(super) fn attrs_of(op: &dyn Op) -> Attrs {
    let mut a = Attrs::new(op.name());
    for (k, v) in op.attrs() {
        a = a.with(k, AttrValue::Str(v));
    }
    a
}

impl ConvBnAct {
    /// The chain's fused form, or `None` when the ops are not a fusable convolution (channel-first),
    /// BatchNorm over axis 1 and relu/clip (or nothing).
    pub fn recognise(conv: &dyn Op, bn: &dyn Op, act: Option<&dyn Op>) -> Option<ConvBnAct> {
        if conv.name() != "Convolution" || bn.name() != "BatchNorm" {
            return None;
        }
        let conv = ConvParams::from_conv("Convolution", &ConvolutionParams::parse(&attrs_of(conv)).ok()?).ok()?;
        let bnp = BatchNormParams::parse(&attrs_of(bn)).ok()?;
        if bnp.axis != 1 {
            return None;
        }
        let act = match act {
            None => FusedAct::None,
            Some(op) => FusedAct::of(op)?,
        };
        Some(ConvBnAct { conv, eps: bnp.eps, fix_gamma: bnp.fix_gamma, act })
    }

    /// `conv_inputs` are the convolution's (data, weight[, bias]), `bn_params` BatchNorm's
    /// (gamma, beta, moving_mean, moving_var); the result lands in `out`.
    pub fn forward(&self, conv_inputs: &[NDArray], bn_params: &[NDArray], out: &mut NDArray) -> Result<()> {
        const OP: &str = "Convolution";
        let bias_shape = conv_inputs.get(2).map(|b| b.shape().to_vec());
        let (s, _) = self.conv.conv(OP, conv_inputs[0].shape(), conv_inputs[1].shape(), bias_shape.as_deref())?;
        let (x, w) = (Contig::new(&conv_inputs[0]), Contig::new(&conv_inputs[1]));
        let b = conv_inputs.get(2).map(Contig::new);
        let (gamma, beta) = (bn_params[0].to_f64_vec(), bn_params[1].to_f64_vec());
        let (mean, var) = (bn_params[2].to_f64_vec(), bn_params[3].to_f64_vec());
        // BatchNorm's inference affine, as its forward computes it: (y - mean)·a + beta.
        let a: Vec<f64> = var
            .iter()
            .zip(&gamma)
            .map(|(&v, &g)| if self.fix_gamma { 1.0 } else { g } / (v + self.eps).sqrt())
            .collect();
        let act = self.act;
        float_kernel!(OP, conv_inputs[0].dtype(), T => {
            let cast = |v: &[f64]| -> Vec<T> { v.iter().map(|&e| e as T).collect() };
            let (mv, av, bv) = (cast(&mean), cast(&a), cast(&beta));
            let (lo, hi) = match act {
                FusedAct::Clip(lo, hi) => (lo as T, hi as T),
                _ => (0.0, 0.0),
            };
            let epilogue = |f: usize, plane: &mut [T]| {
                let (m, a, b) = (mv[f], av[f], bv[f]);
                match act {
                    FusedAct::None => plane.iter_mut().for_each(|v| *v = (*v - m) * a + b),
                    FusedAct::Relu => plane.iter_mut().for_each(|v| {
                        let t = (*v - m) * a + b;
                        *v = if t > 0.0 || t.is_nan() { t } else { 0.0 };
                    }),
                    // clip's `t < lo ? lo : t > hi ? hi : t` (NaN stays NaN) as two selects, so
                    // it vectorises instead of branching on every element.
                    FusedAct::Clip(..) => plane.iter_mut().for_each(|v| {
                        let t = (*v - m) * a + b;
                        let upper = if t > hi { hi } else { t };
                        *v = if t < lo { lo } else { upper };
                    }),
                }
            };
            out.write_out::<T, _>(|y| conv_forward_then(&s, x.get(), w.get(), b.as_ref().map(|b| b.get()), y, &epilogue))
        })
    }
}
