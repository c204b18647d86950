//! Elementwise selection: `clip` (each element limited to a range) and `where` (each element taken
//! from one of two arrays by a condition).

use std::sync::Arc;

use ferrograd_kernels::par::{self, Cost};
use ferrograd_kernels::unary_binary::unary;
use ferrograd_kernels::Element;

use super::common::dense;
use super::params::{NoParams, OpDef, OpParams};
use super::{AttrValue, Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::with_dtype;

/// `clip(data, a_min, a_max)`: values limited to [a_min, a_max] (NaN stays NaN); the gradient
/// passes where a_min <= x <= a_max (bounds included, as in MXNet) and is 0 outside.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Clip {
    pub a_min: f64,
    pub a_max: f64,
}

impl Clip {
    /// The bounds as MXNet applies them: its `a_min`/`a_max` are float32 parameters, so float64
    /// data is clipped at the float32 nearest the given bound (`-0.2` clips at
    /// `-0.20000000298023224`).
    fn bounds(&self) -> (f64, f64) {
        (self.a_min as f32 as f64, self.a_max as f32 as f64)
    }
}

impl Op for Clip {
    fn name(&self) -> &'static str {
        "clip"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("a_min", AttrValue::Float(self.a_min).to_mx_string()),
            ("a_max", AttrValue::Float(self.a_max).to_mx_string()),
        ]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        Ok(vec![inputs[0].clone()])
    }
    #[allow(clippy::bool_comparison)] // the generic kernel also serves bool arrays
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let x = &inputs[0];
        let src = x.snapshot();
        with_dtype!(x.dtype(), T => {
            let s = src.typed::<T>()?;
            let (lo, hi) = self.bounds();
            let (lo, hi) = (T::from_f64(lo), T::from_f64(hi));
            outputs[0].write_out::<T, _>(|o| {
                unary(s, x.layout(), o, Cost::Light, move |v: T| if v < lo { lo } else if v > hi { hi } else { v })
            })
        })
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        // One fused pass, recorded with x as an input (second-order gradients are zeros).
        let (lo, hi) = self.bounds();
        let fused = crate::ops::nn::act_grad::MaskedGrad::clip(lo, hi);
        Ok(vec![Some(g.apply1(fused, &[og[0], inputs[0]])?)])
    }
}

/// `where(condition, x, y)`: x where condition is nonzero, else y. x and y have one shape;
/// condition has that shape too, or is 1-D with one entry per row (x.shape[0]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Where;

impl Where {
    fn cond_view(cond: &NDArray, shape: &[usize]) -> Result<NDArray> {
        let c = if cond.shape() != shape && cond.ndim() == 1 {
            let mut s = vec![1; shape.len()];
            s[0] = cond.shape()[0];
            cond.reshape(&s)?
        } else {
            cond.clone()
        };
        c.broadcast_to(shape)
    }
}

impl Op for Where {
    fn name(&self) -> &'static str {
        "where"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["condition", "x", "y"]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let (c, x, y) = (&inputs[0], &inputs[1], &inputs[2]);
        if x.shape != y.shape {
            return Err(Error::Shape(format!(
                "where: x and y must have the same shape, got x {} and y {}",
                fmt_shape(&x.shape),
                fmt_shape(&y.shape)
            )));
        }
        if x.dtype != y.dtype {
            return Err(Error::DType(format!("where: x has dtype {} but y has {}", x.dtype, y.dtype)));
        }
        let row = c.shape.len() == 1 && !x.shape.is_empty() && c.shape[0] == x.shape[0];
        if c.shape != x.shape && !row {
            return Err(Error::Shape(format!(
                "where: condition of shape {} must match x and y of shape {} (or be 1-D of length {})",
                fmt_shape(&c.shape),
                fmt_shape(&x.shape),
                x.shape.first().map_or("x.shape[0]".into(), |d| d.to_string())
            )));
        }
        Ok(vec![x.clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let shape = inputs[1].shape().to_vec();
        let cond = Where::cond_view(&inputs[0], &shape)?.astype(DType::Bool);
        let (cb, cr) = dense(&cond);
        let (xb, xr) = dense(&inputs[1]);
        let (yb, yr) = dense(&inputs[2]);
        let c = &cb.typed::<bool>()?[cr];
        with_dtype!(inputs[1].dtype(), T => {
            let xs = &xb.typed::<T>()?[xr];
            let ys = &yb.typed::<T>()?[yr];
            outputs[0].write_out::<T, _>(|o| {
                par::for_each_chunk(o, Cost::Light, |start, chunk| {
                    for (j, v) in chunk.iter_mut().enumerate() {
                        let i = start + j;
                        *v = if c[i] { xs[i] } else { ys[i] };
                    }
                })
            })
        })
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let z = g.zeros_like(og[0])?;
        let gx = g.apply1(Where, &[inputs[0], og[0], z])?;
        let gy = g.apply1(Where, &[inputs[0], z, og[0]])?;
        Ok(vec![None, Some(gx), Some(gy)])
    }
}

/// `clip`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct ClipParams {
    /// Lower bound of the output values.
    pub a_min: f64,
    /// Upper bound of the output values.
    pub a_max: f64,
}

pub fn clip_op(a: &Attrs) -> Result<OpRef> {
    let p = ClipParams::parse(a)?;
    Ok(Arc::new(Clip { a_min: p.a_min, a_max: p.a_max }))
}

pub fn where_op(a: &Attrs) -> Result<OpRef> {
    NoParams::parse(a)?;
    Ok(Arc::new(Where))
}
/// The selection ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "clip",
        aliases: &[],
        args: &["data"],
        doc: "Limit values to [a_min, a_max]; gradient passes inside (bounds included).",
        params: ClipParams::schema,
        build: clip_op,
    },
    OpDef {
        name: "where",
        aliases: &[],
        args: &["condition", "x", "y"],
        doc: "x where condition is nonzero, else y (condition may be 1-D, one entry per row).",
        params: NoParams::schema,
        build: where_op,
    },
];
