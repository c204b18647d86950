//! `moments`: mean and (population) variance over a set of axes, as two outputs. The forward runs
//! the reduction kernels (mean, then mean of squared deviations); the gradient is
//! `og_mean/n + og_var·2(x - mean)/n`, written in ops from the input alone so it can be
//! differentiated again.

use std::sync::Arc;

use super::binary::{Binary, BinaryKind};
use super::params::{OpDef, OpParams};
use super::reduce::{Reduce, ReduceKind};
use super::{run1, Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::error::{Error, Result};
use crate::ndarray::view::normalize_axis;
use crate::ndarray::{Meta, NDArray};

/// `moments(data, axes, keepdims=False)` → (mean, var).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Moments {
    pub axes: Vec<i64>,
    pub keepdims: bool,
}

impl Moments {
    /// The reduced axes (sorted, checked), the kept-dims shape and the output shape.
    fn plan(&self, shape: &[usize]) -> Result<(Vec<usize>, Vec<usize>, Vec<usize>)> {
        let mut axes =
            self.axes.iter().map(|&a| normalize_axis("moments", a, shape.len())).collect::<Result<Vec<_>>>()?;
        axes.sort_unstable();
        if axes.windows(2).any(|w| w[0] == w[1]) {
            return Err(Error::Value(format!("moments: axes {:?} contain a duplicate", self.axes)));
        }
        let kept: Vec<usize> = (0..shape.len()).map(|d| if axes.contains(&d) { 1 } else { shape[d] }).collect();
        let out = if self.keepdims {
            kept.clone()
        } else {
            (0..shape.len()).filter(|d| !axes.contains(d)).map(|d| shape[d]).collect()
        };
        Ok((axes, kept, out))
    }

    fn mean_op(&self) -> Reduce {
        Reduce { kind: ReduceKind::Mean, axis: Some(self.axes.clone()), keepdims: true, exclude: false }
    }
}

impl Op for Moments {
    fn name(&self) -> &'static str {
        "moments"
    }
    fn num_outputs(&self) -> usize {
        2
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = vec![("axes", super::attrs::fmt_tuple(&self.axes))];
        if self.keepdims {
            v.push(("keepdims", "True".into()));
        }
        v
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let (_, _, out) = self.plan(&inputs[0].shape)?;
        let m = Meta::new(&out, inputs[0].dtype);
        Ok(vec![m.clone(), m])
    }
    fn forward(&self, ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let x = &inputs[0];
        self.plan(x.shape())?;
        let mean = run1(&self.mean_op(), ctx, std::slice::from_ref(x))?;
        let dev = run1(&Binary { kind: BinaryKind::Sub, broadcast: true }, ctx, &[x.clone(), mean.clone()])?;
        let sq = run1(&Binary { kind: BinaryKind::Mul, broadcast: false }, ctx, &[dev.clone(), dev])?;
        let var = run1(&self.mean_op(), ctx, &[sq])?;
        outputs[0].write_from(&mean)?;
        outputs[1].write_from(&var)
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let x = inputs[0];
        let shape = g.shape(x);
        let (axes, kept, _) = self.plan(&shape)?;
        let n: usize = axes.iter().map(|&d| shape[d]).product();
        if n == 0 {
            return Ok(vec![Some(g.zeros_like(x)?)]);
        }
        let inv_n = 1.0 / n as f64;
        let mean = g.apply1(self.mean_op(), &[x])?;
        let dev = g.sub(x, mean)?;
        let gm = g.reshape(og[0], &kept)?;
        let gv = g.reshape(og[1], &kept)?;
        let gv = g.mul_scalar(gv, 2.0 * inv_n)?;
        let from_var = g.mul(dev, gv)?;
        let gm = g.mul_scalar(gm, inv_n)?;
        let gx = g.add(from_var, gm)?;
        Ok(vec![Some(gx)])
    }
}

/// `moments`' parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct MomentsParams {
    /// Axes to compute the mean and variance over (required, non-empty, no duplicates).
    #[param(default = None)]
    pub axes: Option<Vec<i64>>,
    /// Keep the reduced axes with size 1.
    #[param(default = false)]
    pub keepdims: bool,
}

fn moments_op(a: &Attrs) -> Result<OpRef> {
    let p = MomentsParams::parse(a)?;
    let axes = p.axes.filter(|a| !a.is_empty()).ok_or_else(|| {
        Error::Value("moments: axes must name at least one axis (pass every axis for global moments), got none".into())
    })?;
    Ok(Arc::new(Moments { axes, keepdims: p.keepdims }))
}

/// `moments`' declaration.
pub const DEFS: &[OpDef] = &[OpDef {
    name: "moments",
    aliases: &[],
    args: &["data"],
    doc: "Mean and variance of data over `axes`, as two outputs (mean, var).",
    params: MomentsParams::schema,
    build: moments_op,
}];
