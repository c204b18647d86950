//! `L2Normalization`: `y = x / sqrt(Σ x² + eps)` with the sum over all axes but the batch
//! (`instance`), over the channel axis (`channel`) or over the spatial axes (`spatial`).
//! Rule: `dx = (gy - y·Σ(gy·y)) / n`, with `n` recomputed from `x` by registered ops.

use std::sync::Arc;

use super::Contig;
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::attrs::fmt_float;
use crate::ops::params::{OpDef, OpParams, ParamEnum};
use crate::ops::unary::UnaryKind;
use crate::ops::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};

/// The axes `L2Normalization` sums over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ParamEnum)]
pub enum L2Mode {
    Channel,
    Instance,
    Spatial,
}

/// `L2Normalization`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct L2NormalizationParams {
    /// Added to the sum of squares before the square root.
    #[param(default = 1e-10)]
    pub eps: f64,
    /// Sum over all axes but the batch (instance), over axis 1 (channel) or over the axes after 1 (spatial).
    #[param(default = L2Mode::Instance)]
    pub mode: L2Mode,
}

#[derive(Clone, Debug, PartialEq)]
pub struct L2Normalization {
    pub mode: L2Mode,
    pub eps: f64,
}

impl L2Normalization {
    /// (outer, mid, inner) with the sum over `mid`, and the summed axes.
    fn dims(&self, s: &[usize]) -> Result<(usize, usize, usize, Vec<i64>)> {
        let need = if self.mode == L2Mode::Instance { 1 } else { 2 };
        if s.len() < need || (self.mode == L2Mode::Spatial && s.len() < 3) {
            return Err(Error::Shape(format!(
                "L2Normalization: data of shape {} has too few axes for mode '{}'",
                fmt_shape(s),
                self.mode_name()
            )));
        }
        let n = s.len() as i64;
        Ok(match self.mode {
            L2Mode::Instance => (s[0], s[1..].iter().product(), 1, (1..n).collect()),
            L2Mode::Channel => (s[0], s[1], s[2..].iter().product(), vec![1]),
            L2Mode::Spatial => (s[0] * s[1], s[2..].iter().product(), 1, (2..n).collect()),
        })
    }
    fn mode_name(&self) -> &'static str {
        self.mode.name()
    }
}

impl Op for L2Normalization {
    fn name(&self) -> &'static str {
        "L2Normalization"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("eps", fmt_float(self.eps)), ("mode", self.mode_name().into())]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let dt = super::check_float(self.name(), &["data"], inputs)?;
        self.dims(&inputs[0].shape)?;
        Ok(vec![Meta::new(&inputs[0].shape, dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (outer, mid, inner, _) = self.dims(inputs[0].shape())?;
        let x = Contig::new(&inputs[0]);
        let eps = self.eps;
        macro_rules! run {
            ($T:ty) => {{
                let xs = x.get::<$T>();
                outputs[0].write_out::<$T, _>(|y| {
                    for o in 0..outer {
                        for i in 0..inner {
                            let at = |m: usize| (o * mid + m) * inner + i;
                            let ss: f64 = (0..mid).map(|m| f64::from(xs[at(m)]).powi(2)).sum();
                            let inv = 1.0 / (ss + eps).sqrt();
                            for m in 0..mid {
                                y[at(m)] = (f64::from(xs[at(m)]) * inv) as $T;
                            }
                        }
                    }
                })
            }};
        }
        match inputs[0].dtype() {
            DType::F32 => run!(f32),
            DType::F64 => run!(f64),
            other => Err(Error::DType(format!("L2Normalization: unsupported dtype {other}"))),
        }
    }
    fn saves(&self) -> Saves {
        Saves::InputsAndOutputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        let (x, y, gy) = (inputs[0], outputs[0], out_grads[0]);
        let (_, _, _, axes) = self.dims(&g.shape(x))?;
        let sq = g.mul(x, x)?;
        let ss = g.sum_axes(sq, axes.clone(), true)?;
        let ss = g.add_scalar(ss, self.eps)?;
        let n = g.unary(UnaryKind::Sqrt, ss)?;
        let gyy = g.mul(gy, y)?;
        let s = g.sum_axes(gyy, axes, true)?;
        let ys = g.mul(y, s)?;
        let d = g.sub(gy, ys)?;
        Ok(vec![Some(g.div(d, n)?)])
    }
}

fn build_l2_normalization(a: &Attrs) -> Result<OpRef> {
    let p = L2NormalizationParams::parse(a)?;
    Ok(Arc::new(L2Normalization { mode: p.mode, eps: p.eps }))
}

/// The L2 normalisation op's declaration.
pub const DEFS: &[OpDef] = &[OpDef {
    name: "L2Normalization",
    aliases: &[],
    args: &["data"],
    doc: "x / sqrt(sum(x^2) + eps) over all axes but the batch (instance), the channel axis (channel) or the spatial axes (spatial).",
    params: L2NormalizationParams::schema,
    build: build_l2_normalization,
}];
