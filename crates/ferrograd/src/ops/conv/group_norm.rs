//! `GroupNorm`: the channels of (N, C, ...) data split into `num_groups` groups, each sample's
//! group normalised over its channels and spatial positions, then scaled and shifted by a
//! per-group `gamma` and `beta` (MXNet 1.9.1 gives them shape (num_groups,)). Outputs `out`,
//! and with `output_mean_var` the per-(sample, group) `mean` and `std` (shape (N, num_groups)).
//!
//! On data viewed as (N, G, M) this is exactly `InstanceNorm` (per (sample, channel) statistics,
//! per-channel parameters), so the forward and the gradient rule are `InstanceNorm`'s, applied to
//! reshapes. Unlike MXNet, the gradient includes the contributions of the `mean` and `std`
//! outputs (MXNet drops them), as `LayerNorm`'s does.

use std::sync::Arc;

use super::norm::Norm;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::attrs::fmt_float;
use crate::ops::params::{OpDef, OpParams};
use crate::ops::{run, Attrs, Ctx, Grad, Op, OpRef, Saves, Val};

/// `GroupNorm(data, gamma, beta, num_groups=1, eps=1e-5, output_mean_var=False)`.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupNorm {
    pub num_groups: usize,
    pub eps: f64,
    pub output_mean_var: bool,
}

impl GroupNorm {
    /// (N, G, M): the data viewed as groups of M elements.
    fn grouped(&self, shape: &[usize]) -> Result<[usize; 3]> {
        if shape.len() < 3 {
            return Err(Error::Shape(format!(
                "GroupNorm: data must have at least 3 axes (N, C, spatial...), got shape {}",
                fmt_shape(shape)
            )));
        }
        let (c, g) = (shape[1], self.num_groups);
        if !c.is_multiple_of(g) {
            return Err(Error::Shape(format!(
                "GroupNorm: the {c} channels of data {} do not divide into num_groups={g} groups",
                fmt_shape(shape)
            )));
        }
        Ok([shape[0], g, shape[1..].iter().product::<usize>() / g])
    }

    fn inner(&self) -> Norm {
        Norm { instance: true, axis: 1, eps: self.eps, output_mean_var: false }
    }
}

impl Op for GroupNorm {
    fn name(&self) -> &'static str {
        "GroupNorm"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["data", "gamma", "beta"]
    }
    fn num_outputs(&self) -> usize {
        3
    }
    fn num_visible_outputs(&self) -> usize {
        if self.output_mean_var {
            3
        } else {
            1
        }
    }
    fn output_names(&self) -> Option<&'static [&'static str]> {
        self.output_mean_var.then_some(&["output", "mean", "std"][..])
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = vec![("num_groups", self.num_groups.to_string()), ("eps", fmt_float(self.eps))];
        if self.output_mean_var {
            v.push(("output_mean_var", "True".into()));
        }
        v
    }
    fn infer_missing(&self, inputs: &[Option<Meta>]) -> Vec<Option<Meta>> {
        match inputs.first() {
            Some(Some(d)) if d.shape.len() >= 3 => {
                let m = Some(Meta::new(&[self.num_groups], d.dtype));
                vec![None, m.clone(), m]
            }
            _ => Vec::new(),
        }
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let (x, dt) = (&inputs[0].shape, inputs[0].dtype);
        let [n, g, _] = self.grouped(x)?;
        if !dt.is_float() {
            return Err(Error::DType(format!("GroupNorm: data must have a float dtype, got {dt}")));
        }
        for (name, m) in [("gamma", &inputs[1]), ("beta", &inputs[2])] {
            if m.shape.as_slice() != [g] {
                return Err(Error::Shape(format!(
                    "GroupNorm: {name} has shape {}, expected ({g},) (num_groups) for data of shape {}",
                    fmt_shape(&m.shape),
                    fmt_shape(x)
                )));
            }
            if m.dtype != dt {
                return Err(Error::DType(format!("GroupNorm: {name} has dtype {}, but data has {dt}", m.dtype)));
            }
        }
        Ok(vec![Meta::new(x, dt), Meta::new(&[n, g], dt), Meta::new(&[n, g], dt)])
    }
    fn forward(&self, ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let grouped = self.grouped(inputs[0].shape())?;
        let xr = inputs[0].reshape(&grouped)?;
        let outs = run(&self.inner(), ctx, &[xr, inputs[1].clone(), inputs[2].clone()])?;
        for (dst, src) in outputs.iter_mut().zip(&outs) {
            dst.write_from(src)?;
        }
        Ok(())
    }
    fn saves(&self) -> Saves {
        Saves::InputsAndOutputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], outputs: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let shape = g.shape(inputs[0]);
        let [n, gr, m] = self.grouped(&shape)?;
        let (full, stat) = ([n, gr, m], [n, gr, 1]);
        let xr = g.reshape(inputs[0], &full)?;
        let yr = g.reshape(outputs[0], &full)?;
        let mean = g.reshape(outputs[1], &stat)?;
        let std = g.reshape(outputs[2], &stat)?;
        let gy = g.reshape(og[0], &full)?;
        let gm = g.reshape(og[1], &stat)?;
        let gs = g.reshape(og[2], &stat)?;
        let mut grads = self.inner().grad(g, &[xr, inputs[1], inputs[2]], &[yr, mean, std], &[gy, gm, gs])?;
        if let Some(dx) = grads[0] {
            grads[0] = Some(g.reshape(dx, &shape)?);
        }
        Ok(grads)
    }
}

/// `GroupNorm`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct GroupNormParams {
    /// Number of channel groups (must divide the channel count).
    #[param(default = 1)]
    pub num_groups: i64,
    /// Added to the variance before the square root.
    #[param(default = 1e-5)]
    pub eps: f64,
    /// Also output the per-group mean and standard deviation.
    #[param(default = false)]
    pub output_mean_var: bool,
}

fn build_group_norm(a: &Attrs) -> Result<OpRef> {
    let p = GroupNormParams::parse(a)?;
    let num_groups = usize::try_from(p.num_groups)
        .ok()
        .filter(|&g| g >= 1)
        .ok_or_else(|| Error::Value(format!("GroupNorm: num_groups must be at least 1, got {}", p.num_groups)))?;
    if p.eps <= 0.0 {
        return Err(Error::Value(format!("GroupNorm: parameter 'eps' must be positive, got {}", p.eps)));
    }
    Ok(Arc::new(GroupNorm { num_groups, eps: p.eps, output_mean_var: p.output_mean_var }))
}

/// `GroupNorm`'s declaration.
pub const DEFS: &[OpDef] = &[OpDef {
    name: "GroupNorm",
    aliases: &[],
    args: &["data", "gamma", "beta"],
    doc: "Group normalisation: channels in num_groups groups, each normalised per sample, then \
          scaled and shifted by per-group gamma and beta (shape (num_groups,)).",
    params: GroupNormParams::schema,
    build: build_group_norm,
}];
