//! `Dropout(data, p=0.5, mode='training', axes=())`.
//!
//! When active (training mode — `autograd.is_training()` / `forward(is_train=True)` — or
//! `mode='always'`), each element is kept with probability `1 - p` and scaled by `1/(1 - p)`;
//! `axes` share one draw along the listed axes (e.g. `axes=(2, 3)` drops whole channels). The
//! scaled mask (0 or `1/(1-p)`, broadcast to the data's shape) is a hidden second output saved
//! for the gradient `g·mask`. Otherwise the op is the identity (mask of ones). Draws come from the
//! crate's Philox stream (`mx.random.seed` makes them reproducible). `p = 1` drops everything.

use std::sync::Arc;

use super::float_only;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::view::normalize_axis;
use crate::ndarray::{Meta, NDArray};
use crate::ops::attrs::{fmt_float, fmt_tuple};
use crate::ops::binary::{Binary, BinaryKind};
use crate::ops::params::{OpDef, OpParams, ParamEnum};
use crate::ops::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};

#[derive(Clone, Debug, PartialEq)]
pub struct Dropout {
    pub p: f64,
    pub always: bool,
    pub axes: Vec<i64>,
}

impl Dropout {
    /// The shape of one draw: the data's shape with `axes` set to 1.
    fn mask_shape(&self, shape: &[usize]) -> Result<Vec<usize>> {
        let mut m = shape.to_vec();
        for &a in &self.axes {
            m[normalize_axis("Dropout", a, shape.len())?] = 1;
        }
        Ok(m)
    }
}

impl Op for Dropout {
    fn is_random(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        "Dropout"
    }
    fn num_outputs(&self) -> usize {
        2
    }
    fn num_visible_outputs(&self) -> usize {
        1
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = Vec::new();
        if self.p != 0.5 {
            v.push(("p", fmt_float(self.p)));
        }
        if self.always {
            v.push(("mode", "always".into()));
        }
        if !self.axes.is_empty() {
            v.push(("axes", fmt_tuple(&self.axes)));
        }
        v
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        float_only("Dropout", "data", inputs[0].dtype)?;
        self.mask_shape(&inputs[0].shape)?;
        Ok(vec![inputs[0].clone(), inputs[0].clone()])
    }
    fn forward(&self, ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let x = &inputs[0];
        if !(ctx.is_train || self.always) || self.p == 0.0 {
            outputs[0].write_from(x)?;
            outputs[1].fill_scalar(1.0);
            return Ok(());
        }
        let ms = self.mask_shape(x.shape())?;
        let keep = if self.p >= 1.0 { 0.0 } else { 1.0 / (1.0 - self.p) };
        let u = crate::random::uniform(0.0, 1.0, &ms, DType::F64)?.to_f64_vec();
        let m: Vec<f64> = u.into_iter().map(|v| if v >= self.p { keep } else { 0.0 }).collect();
        // The mask is converted and broadcast straight into its output, then multiplied into the
        // first output by the elementwise product's own forward.
        outputs[1].write_from(&NDArray::from_vec(m, &ms)?.broadcast_to(x.shape())?)?;
        let mask = outputs[1].clone();
        Binary { kind: BinaryKind::Mul, broadcast: false }.forward(ctx, &[x.clone(), mask], &mut outputs[..1])
    }
    fn saves(&self) -> Saves {
        Saves::Outputs
    }
    fn grad(&self, g: &mut Grad<'_>, _inputs: &[Val], outputs: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![Some(g.mul(og[0], outputs[1])?)])
    }
}

/// When `Dropout` is active.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ParamEnum)]
pub enum DropoutMode {
    Always,
    Training,
}

/// `Dropout`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct DropoutParams {
    /// Probability of zeroing each element, in [0, 1].
    #[param(default = 0.5)]
    pub p: f64,
    /// Drop only while training, or also in inference.
    #[param(default = DropoutMode::Training)]
    pub mode: DropoutMode,
    /// Axes along which one draw is shared (variational dropout).
    #[param(default = Vec::new())]
    pub axes: Vec<i64>,
    /// Accepted and ignored (no cuDNN on the CPU).
    #[param(default = Some(false))]
    pub cudnn_off: Option<bool>,
}

fn build_dropout(a: &Attrs) -> Result<OpRef> {
    let p = DropoutParams::parse(a)?;
    if !(0.0..=1.0).contains(&p.p) {
        return Err(Error::Value(format!("Dropout: p must be in [0, 1], got {}", p.p)));
    }
    Ok(Arc::new(Dropout { p: p.p, always: p.mode == DropoutMode::Always, axes: p.axes }))
}

/// The dropout op's declaration.
pub const DEFS: &[OpDef] = &[OpDef {
    name: "Dropout",
    aliases: &[],
    args: &["data"],
    doc: "Drops elements with probability p in training (or mode=always), scaling the rest by 1/(1-p).",
    params: DropoutParams::schema,
    build: build_dropout,
}];
