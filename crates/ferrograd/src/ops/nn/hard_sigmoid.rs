//! `hard_sigmoid`: `max(0, min(1, alpha·x + beta))`, and its fused gradient.
//!
//! MXNet reads `alpha` and `beta` as float32 parameters, so both are rounded to float32 before use
//! (float64 data then sees MXNet's exact numbers). The gradient is `alpha·ograd` where
//! `0 < alpha·x + beta < 1` and 0 elsewhere; it is linear in the head gradient, so its own
//! gradient is the same op again (n-times differentiable) and zero with respect to `x`.

use std::sync::Arc;

use ferrograd_kernels::par::Cost;
use ferrograd_kernels::unary_binary::{binary, unary};
use ferrograd_kernels::Element;

use super::float_only;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::attrs::AttrValue;
use crate::ops::params::{OpDef, OpParams};
use crate::ops::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::with_dtype;

/// `hard_sigmoid(data, alpha=0.2, beta=0.5)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HardSigmoid {
    pub alpha: f64,
    pub beta: f64,
}

impl HardSigmoid {
    /// The parameters as MXNet uses them (float32).
    fn coeffs(&self) -> (f64, f64) {
        (self.alpha as f32 as f64, self.beta as f32 as f64)
    }
    fn param_attrs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("alpha", AttrValue::Float(self.alpha).to_mx_string()),
            ("beta", AttrValue::Float(self.beta).to_mx_string()),
        ]
    }
}

impl Op for HardSigmoid {
    fn name(&self) -> &'static str {
        "hard_sigmoid"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.param_attrs()
    }
    fn infer_partial(
        &self,
        ins: &mut [crate::ops::partial::PartialShape],
        outs: &mut [crate::ops::partial::PartialShape],
    ) -> Result<()> {
        crate::ops::partial::same_shape(ins, outs)
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        float_only("hard_sigmoid", "data", inputs[0].dtype)?;
        Ok(vec![inputs[0].clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let x = &inputs[0];
        let src = x.snapshot();
        let (a, b) = self.coeffs();
        with_dtype!(x.dtype(), T => {
            let s = src.typed::<T>()?;
            outputs[0].write_out::<T, _>(|o| {
                unary(s, x.layout(), o, Cost::Light, move |v: T| {
                    let y = a * v.to_f64() + b;
                    // NaN passes through (clamp keeps it).
                    T::from_f64(y.clamp(0.0, 1.0))
                })
            })
        })
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![Some(g.apply1(HardSigmoidGrad { fwd: *self }, &[og[0], inputs[0]])?)])
    }
}

/// `_backward_hard_sigmoid(ograd, data)`: `alpha·ograd` where the forward was strictly between 0
/// and 1, else 0.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HardSigmoidGrad {
    pub fwd: HardSigmoid,
}

impl Op for HardSigmoidGrad {
    fn name(&self) -> &'static str {
        "_backward_hard_sigmoid"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["ograd", "data"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.fwd.param_attrs()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let (g, x) = (&inputs[0], &inputs[1]);
        if g.shape != x.shape || g.dtype != x.dtype {
            return Err(Error::Shape(format!(
                "_backward_hard_sigmoid: ograd {} ({}) must match data {} ({})",
                fmt_shape(&g.shape),
                g.dtype,
                fmt_shape(&x.shape),
                x.dtype
            )));
        }
        Ok(vec![g.clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (g, x) = (&inputs[0], &inputs[1]);
        let (gb, xb) = (g.snapshot(), x.snapshot());
        let (a, b) = self.fwd.coeffs();
        with_dtype!(g.dtype(), T => {
            let (gv, xv) = (gb.typed::<T>()?, xb.typed::<T>()?);
            outputs[0].write_out::<T, _>(|o| {
                binary(gv, g.layout(), xv, x.layout(), o, Cost::Light, move |d: T, v: T| {
                    let y = a * v.to_f64() + b;
                    T::from_f64(if y > 0.0 && y < 1.0 { a * d.to_f64() } else { 0.0 })
                })
            })
        })
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![Some(g.apply1(*self, &[og[0], inputs[1]])?), None])
    }
}

/// `hard_sigmoid`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct HardSigmoidParams {
    /// Slope of the linear part.
    #[param(default = 0.2)]
    pub alpha: f64,
    /// Offset of the linear part.
    #[param(default = 0.5)]
    pub beta: f64,
}

fn hard_sigmoid_op(a: &Attrs) -> Result<OpRef> {
    let p = HardSigmoidParams::parse(a)?;
    Ok(Arc::new(HardSigmoid { alpha: p.alpha, beta: p.beta }))
}

/// `hard_sigmoid`'s declaration.
pub const DEFS: &[OpDef] = &[OpDef {
    name: "hard_sigmoid",
    aliases: &[],
    args: &["data"],
    doc: "max(0, min(1, alpha·x + beta)), elementwise (float dtypes).",
    params: HardSigmoidParams::schema,
    build: hard_sigmoid_op,
}];
