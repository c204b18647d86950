//! `BatchNorm → relu | clip` as one op pair for training: `_fused_BatchNorm_relu`/`_clip` and
//! their backward.
//!
//! Unfused, a training step makes five passes over the activation-sized tensors of the pair
//! beyond BatchNorm's statistics: BatchNorm writes its output, the activation reads it and writes
//! its own, the activation's gradient reads the head gradient and the saved value and writes the
//! masked gradient, which BatchNorm's backward then reads twice. Fused, the forward writes only
//! the activation's output, and the backward reads the head gradient and the data in each of its
//! two passes, recomputing the pre-activation from the data and the per-channel affine the forward
//! used (a sixth output: `scale`) to get the mask. The recomputed values are the forward's bits,
//! so the results are the unfused ops' bits. The executor builds these ops when binding (see
//! `executor::fusion`); they are not registered for users, and their gradient is taken only by
//! the executor, never differentiated again.

use std::sync::Arc;

use super::fused::{attrs_of, FusedAct};
use super::norm::{BatchNorm, BatchNormBackward};
use crate::error::{Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::{Ctx, Grad, Op, Saves, Val};

/// `act(BatchNorm(data, gamma, beta, moving_mean, moving_var))`: BatchNorm's outputs with the
/// first replaced by the activation's, plus the per-channel `scale` of the affine.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchNormAct {
    pub bn: BatchNorm,
    pub act: FusedAct,
}

impl BatchNormAct {
    /// The fused form of `bn` followed by `act`, when `bn` is a BatchNorm and `act` relu or clip.
    pub fn recognise(bn: &dyn Op, act: &dyn Op) -> Option<BatchNormAct> {
        if bn.name() != "BatchNorm" {
            return None;
        }
        let bn = BatchNorm::from_attrs(&attrs_of(bn)).ok()?;
        match FusedAct::of(act)? {
            FusedAct::None => None,
            a => Some(BatchNormAct { bn, act: a }),
        }
    }
}

impl Op for BatchNormAct {
    fn name(&self) -> &'static str {
        match self.act {
            FusedAct::Clip(..) => "_fused_BatchNorm_clip",
            _ => "_fused_BatchNorm_relu",
        }
    }
    fn arg_names(&self) -> &'static [&'static str] {
        self.bn.arg_names()
    }
    fn aux_names(&self) -> &'static [&'static str] {
        self.bn.aux_names()
    }
    fn num_outputs(&self) -> usize {
        6
    }
    fn num_visible_outputs(&self) -> usize {
        self.bn.num_visible_outputs()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let mut outs = self.bn.infer(inputs)?;
        let scale = outs[1].clone();
        outs.push(scale);
        Ok(outs)
    }
    fn forward(&self, ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        self.bn.forward_act(ctx, inputs, outputs, self.act)
    }
    fn saves(&self) -> Saves {
        Saves::InputsAndOutputs
    }
    fn updated_by_backward(&self) -> &'static [usize] {
        self.bn.updated_by_backward()
    }
    fn update_on_backward(&self, targets: &mut [NDArray], outputs: &[NDArray]) -> Result<()> {
        self.bn.update_on_backward(targets, outputs)
    }
    /// BatchNorm's output, by BatchNorm's own forward with the statistics the fused forward used
    /// (batch statistics when its flag output is 1): the same bits.
    fn unstored_values(&self, inputs: &[NDArray], outputs: &[NDArray]) -> Result<Vec<NDArray>> {
        let flag = outputs.get(3).map(|f| f.to_f64_vec()).unwrap_or_default();
        let ctx = Ctx { is_train: flag.first() == Some(&1.0) };
        let metas = self.bn.infer(&inputs.iter().map(NDArray::meta).collect::<Vec<_>>())?;
        let mut outs =
            metas.iter().map(|m| NDArray::try_uninit(self.bn.name(), &m.shape, m.dtype)).collect::<Result<Vec<_>>>()?;
        self.bn.forward(&ctx, inputs, &mut outs)?;
        Ok(outs.into_iter().take(1).collect())
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        // BatchNorm's rule, with the activation's head gradient and what recomputes its mask.
        let mut ins = self.bn.backward_inputs(g, inputs, outputs, out_grads)?;
        ins.extend([outputs[5], inputs[2]]);
        let bw = BatchNormActBackward { bn: self.bn.backward_op(), act: self.act };
        let r = g.apply(Arc::new(bw), &ins)?;
        Ok(self.bn.input_grads(&r))
    }
}

/// `_backward_BatchNorm`'s inputs with `ograd` the activation's head gradient, then `scale` and
/// `beta` → `(data_grad, gamma_grad, beta_grad)`.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchNormActBackward {
    pub bn: BatchNormBackward,
    pub act: FusedAct,
}

const ARGS: &[&str] = &["ograd", "data", "gamma", "mean", "var", "flag", "mean_ograd", "var_ograd", "scale", "beta"];

impl Op for BatchNormActBackward {
    fn name(&self) -> &'static str {
        match self.act {
            FusedAct::Clip(..) => "_backward_fused_BatchNorm_clip",
            _ => "_backward_fused_BatchNorm_relu",
        }
    }
    fn arg_names(&self) -> &'static [&'static str] {
        ARGS
    }
    fn num_outputs(&self) -> usize {
        3
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let outs = self.bn.infer(&inputs[..8])?;
        for (k, name) in [(8, "scale"), (9, "beta")] {
            if inputs[k] != outs[1] {
                return Err(Error::Shape(format!(
                    "{}: {name} must be one value per channel like gamma, got {:?} for data of shape {:?}",
                    self.name(),
                    inputs[k].shape,
                    inputs[1].shape
                )));
            }
        }
        Ok(outs)
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        self.bn.backward_act(inputs, outputs, self.act)
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Err(Error::Value(format!(
            "{}: an executor's fused backward is not differentiated again (bind without fusion: \
             FERROGRAD_TRAINING_FUSION=0)",
            self.name()
        )))
    }
}
