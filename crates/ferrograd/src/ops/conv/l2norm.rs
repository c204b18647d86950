//! `L2Normalization`: `y = x / sqrt(Σ x² + eps)` with the sum over all axes but the batch
//! (`instance`), over the channel axis (`channel`) or over the spatial axes (`spatial`).
//! Rule: `dx = (gy - y·Σ(gy·y)) / n`, with `n` recomputed from `x` by registered ops.

use std::sync::Arc;

use super::Contig;
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::attrs::fmt_float;
use crate::ops::unary::UnaryKind;
use crate::ops::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum L2Mode {
    Instance,
    Channel,
    Spatial,
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
        match self.mode {
            L2Mode::Instance => "instance",
            L2Mode::Channel => "channel",
            L2Mode::Spatial => "spatial",
        }
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

pub fn l2_normalization_op(a: &Attrs) -> Result<OpRef> {
    let mode = match a.str_or("mode", "instance")? {
        "instance" => L2Mode::Instance,
        "channel" => L2Mode::Channel,
        "spatial" => L2Mode::Spatial,
        other => {
            return Err(Error::Value(format!(
                "L2Normalization: parameter 'mode' must be instance, channel or spatial, got '{other}'"
            )))
        }
    };
    Ok(Arc::new(L2Normalization { mode, eps: a.f64_or("eps", 1e-10)? }))
}
