//! Parameters of the fused optimizer ops, with MXNet 1.9.1's names and defaults.

use super::rules::{GradPrep, Rule};
use crate::error::Result;
use crate::ops::params::OpParams;
use crate::ops::Attrs;

/// `sgd_update` / `mp_sgd_update`.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct SgdParams {
    /// Learning rate.
    pub lr: f64,
    /// Weight decay (L2 penalty) coefficient.
    #[param(default = 0.0)]
    pub wd: f64,
    /// Multiplies the gradient before clipping.
    #[param(default = 1.0)]
    pub rescale_grad: f64,
    /// Clips the gradient to [-clip_gradient, clip_gradient]; negative turns clipping off.
    #[param(default = -1.0)]
    pub clip_gradient: f64,
    /// Accepted for MXNet compatibility (sparse gradients only).
    #[param(default = true)]
    pub lazy_update: bool,
}

/// `sgd_mom_update` / `mp_sgd_mom_update`.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct SgdMomParams {
    /// Learning rate.
    pub lr: f64,
    /// Decay rate of the momentum.
    #[param(default = 0.0)]
    pub momentum: f64,
    /// Weight decay (L2 penalty) coefficient.
    #[param(default = 0.0)]
    pub wd: f64,
    /// Multiplies the gradient before clipping.
    #[param(default = 1.0)]
    pub rescale_grad: f64,
    /// Clips the gradient to [-clip_gradient, clip_gradient]; negative turns clipping off.
    #[param(default = -1.0)]
    pub clip_gradient: f64,
    /// Accepted for MXNet compatibility (sparse gradients only).
    #[param(default = true)]
    pub lazy_update: bool,
}

/// `signsgd_update`.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct SignSgdParams {
    /// Learning rate.
    pub lr: f64,
    /// Weight decay (L2 penalty) coefficient.
    #[param(default = 0.0)]
    pub wd: f64,
    /// Multiplies the gradient before clipping (no effect on its sign).
    #[param(default = 1.0)]
    pub rescale_grad: f64,
    /// Clips the gradient; negative turns clipping off (no effect on its sign).
    #[param(default = -1.0)]
    pub clip_gradient: f64,
}

/// `signum_update`.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct SignumParams {
    /// Learning rate.
    pub lr: f64,
    /// Decay rate of the momentum.
    #[param(default = 0.0)]
    pub momentum: f64,
    /// Weight decay folded into the momentum.
    #[param(default = 0.0)]
    pub wd: f64,
    /// Multiplies the gradient before clipping.
    #[param(default = 1.0)]
    pub rescale_grad: f64,
    /// Clips the gradient to [-clip_gradient, clip_gradient]; negative turns clipping off.
    #[param(default = -1.0)]
    pub clip_gradient: f64,
    /// Weight decay applied directly to the weight, outside the momentum.
    #[param(default = 0.0)]
    pub wd_lh: f64,
}

/// `nag_mom_update` / `mp_nag_mom_update`.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct NagMomParams {
    /// Learning rate.
    pub lr: f64,
    /// Decay rate of the momentum.
    #[param(default = 0.0)]
    pub momentum: f64,
    /// Weight decay (L2 penalty) coefficient.
    #[param(default = 0.0)]
    pub wd: f64,
    /// Multiplies the gradient before clipping.
    #[param(default = 1.0)]
    pub rescale_grad: f64,
    /// Clips the gradient to [-clip_gradient, clip_gradient]; negative turns clipping off.
    #[param(default = -1.0)]
    pub clip_gradient: f64,
}

/// `adam_update`.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct AdamParams {
    /// Learning rate.
    pub lr: f64,
    /// Decay rate of the first moment.
    #[param(default = 0.9)]
    pub beta1: f64,
    /// Decay rate of the second moment.
    #[param(default = 0.999)]
    pub beta2: f64,
    /// Added to the root of the second moment.
    #[param(default = 1e-8)]
    pub epsilon: f64,
    /// Weight decay (L2 penalty) coefficient.
    #[param(default = 0.0)]
    pub wd: f64,
    /// Multiplies the gradient before clipping.
    #[param(default = 1.0)]
    pub rescale_grad: f64,
    /// Clips the gradient to [-clip_gradient, clip_gradient]; negative turns clipping off.
    #[param(default = -1.0)]
    pub clip_gradient: f64,
    /// Accepted for MXNet compatibility (sparse gradients only).
    #[param(default = true)]
    pub lazy_update: bool,
}

/// `_adamw_update` / `_mp_adamw_update` (`rescale_grad` is an input array there).
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct AdamWParams {
    /// Learning rate.
    pub lr: f64,
    /// Decay rate of the first moment.
    #[param(default = 0.9)]
    pub beta1: f64,
    /// Decay rate of the second moment.
    #[param(default = 0.999)]
    pub beta2: f64,
    /// Added to the root of the second moment.
    #[param(default = 1e-8)]
    pub epsilon: f64,
    /// Decoupled weight decay coefficient.
    #[param(default = 0.0)]
    pub wd: f64,
    /// Learning rate schedule multiplier.
    pub eta: f64,
    /// Clips the gradient to [-clip_gradient, clip_gradient]; negative turns clipping off.
    #[param(default = -1.0)]
    pub clip_gradient: f64,
}

/// `rmsprop_update`.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct RmsPropParams {
    /// Learning rate.
    pub lr: f64,
    /// Decay rate of the squared-gradient average.
    #[param(default = 0.95)]
    pub gamma1: f64,
    /// Added inside the square root.
    #[param(default = 1e-8)]
    pub epsilon: f64,
    /// Weight decay (L2 penalty) coefficient.
    #[param(default = 0.0)]
    pub wd: f64,
    /// Multiplies the gradient before clipping.
    #[param(default = 1.0)]
    pub rescale_grad: f64,
    /// Clips the gradient to [-clip_gradient, clip_gradient]; negative turns clipping off.
    #[param(default = -1.0)]
    pub clip_gradient: f64,
    /// Clips the updated weight to [-clip_weights, clip_weights]; negative turns it off.
    #[param(default = -1.0)]
    pub clip_weights: f64,
}

/// `rmspropalex_update` (centered RMSProp).
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct RmsPropAlexParams {
    /// Learning rate.
    pub lr: f64,
    /// Decay rate of the gradient and squared-gradient averages.
    #[param(default = 0.95)]
    pub gamma1: f64,
    /// Decay rate of the update (momentum).
    #[param(default = 0.9)]
    pub gamma2: f64,
    /// Added inside the square root.
    #[param(default = 1e-8)]
    pub epsilon: f64,
    /// Weight decay (L2 penalty) coefficient.
    #[param(default = 0.0)]
    pub wd: f64,
    /// Multiplies the gradient before clipping.
    #[param(default = 1.0)]
    pub rescale_grad: f64,
    /// Clips the gradient to [-clip_gradient, clip_gradient]; negative turns clipping off.
    #[param(default = -1.0)]
    pub clip_gradient: f64,
    /// Clips the updated weight to [-clip_weights, clip_weights]; negative turns it off.
    #[param(default = -1.0)]
    pub clip_weights: f64,
}

/// `ftrl_update`.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct FtrlParams {
    /// Learning rate.
    pub lr: f64,
    /// L1 regularisation coefficient.
    #[param(default = 0.01)]
    pub lamda1: f64,
    /// Per-coordinate learning rate beta.
    #[param(default = 1.0)]
    pub beta: f64,
    /// Weight decay (L2 penalty) coefficient.
    #[param(default = 0.0)]
    pub wd: f64,
    /// Multiplies the gradient before clipping.
    #[param(default = 1.0)]
    pub rescale_grad: f64,
    /// Clips the gradient to [-clip_gradient, clip_gradient]; negative turns clipping off.
    #[param(default = -1.0)]
    pub clip_gradient: f64,
}

/// `ftml_update`.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct FtmlParams {
    /// Learning rate.
    pub lr: f64,
    /// Decay rate of the `z` average.
    #[param(default = 0.6)]
    pub beta1: f64,
    /// Decay rate of the squared-gradient average.
    #[param(default = 0.999)]
    pub beta2: f64,
    /// Added to the root of the second moment.
    #[param(default = 1e-8)]
    pub epsilon: f64,
    /// Number of the update (from 1).
    pub t: i64,
    /// Weight decay (L2 penalty) coefficient.
    #[param(default = 0.0)]
    pub wd: f64,
    /// Multiplies the gradient before clipping.
    #[param(default = 1.0)]
    pub rescale_grad: f64,
    /// Clips the gradient to [-clip_grad, clip_grad]; negative turns clipping off.
    #[param(default = -1.0)]
    pub clip_grad: f64,
}

/// `lamb_update_phase1`.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct LambPhase1Params {
    /// Decay rate of the first moment.
    #[param(default = 0.9)]
    pub beta1: f64,
    /// Decay rate of the second moment.
    #[param(default = 0.999)]
    pub beta2: f64,
    /// Added to the root of the second moment.
    #[param(default = 1e-6)]
    pub epsilon: f64,
    /// Number of the update (from 1), for bias correction.
    pub t: i64,
    /// Divide the moments by (1 - beta^t).
    #[param(default = true)]
    pub bias_correction: bool,
    /// Weight decay coefficient (added to the update direction).
    pub wd: f64,
    /// Multiplies the gradient before clipping.
    #[param(default = 1.0)]
    pub rescale_grad: f64,
    /// Clips the gradient to [-clip_gradient, clip_gradient]; negative turns clipping off.
    #[param(default = -1.0)]
    pub clip_gradient: f64,
}

/// `lamb_update_phase2`.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct LambPhase2Params {
    /// Learning rate.
    pub lr: f64,
    /// Lower limit of the weight norm r1; not set when <= 0.
    #[param(default = -1.0)]
    pub lower_bound: f64,
    /// Upper limit of the weight norm r1; not set when <= 0.
    #[param(default = -1.0)]
    pub upper_bound: f64,
}

/// `multi_sgd_update` / `multi_mp_sgd_update`.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct MultiSgdParams {
    /// Learning rate of each weight.
    pub lrs: Vec<f64>,
    /// Weight decay of each weight.
    pub wds: Vec<f64>,
    /// Multiplies the gradients before clipping.
    #[param(default = 1.0)]
    pub rescale_grad: f64,
    /// Clips the gradients to [-clip_gradient, clip_gradient]; negative turns clipping off.
    #[param(default = -1.0)]
    pub clip_gradient: f64,
    /// Number of weights updated.
    #[param(default = 1)]
    pub num_weights: i64,
}

/// `multi_sgd_mom_update` / `multi_mp_sgd_mom_update`.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct MultiSgdMomParams {
    /// Learning rate of each weight.
    pub lrs: Vec<f64>,
    /// Weight decay of each weight.
    pub wds: Vec<f64>,
    /// Decay rate of the momentum.
    #[param(default = 0.0)]
    pub momentum: f64,
    /// Multiplies the gradients before clipping.
    #[param(default = 1.0)]
    pub rescale_grad: f64,
    /// Clips the gradients to [-clip_gradient, clip_gradient]; negative turns clipping off.
    #[param(default = -1.0)]
    pub clip_gradient: f64,
    /// Number of weights updated.
    #[param(default = 1)]
    pub num_weights: i64,
}

fn prep(rescale: f64, clip: f64) -> GradPrep {
    GradPrep { rescale, clip }
}

/// The rule of a single-weight op from its parameters (`rescale` from an input for AdamW,
/// LAMB's norms later, when the arrays are seen).
pub fn rule_of(op: &str, a: &Attrs) -> Result<Rule> {
    Ok(match op {
        "sgd_update" | "mp_sgd_update" => {
            let p = SgdParams::parse(a)?;
            Rule::Sgd { lr: p.lr, wd: p.wd, prep: prep(p.rescale_grad, p.clip_gradient) }
        }
        "sgd_mom_update" | "mp_sgd_mom_update" => {
            let p = SgdMomParams::parse(a)?;
            Rule::SgdMom { lr: p.lr, momentum: p.momentum, wd: p.wd, prep: prep(p.rescale_grad, p.clip_gradient) }
        }
        "signsgd_update" => {
            let p = SignSgdParams::parse(a)?;
            Rule::SignSgd { lr: p.lr, wd: p.wd }
        }
        "signum_update" => {
            let p = SignumParams::parse(a)?;
            let prep = prep(p.rescale_grad, p.clip_gradient);
            Rule::Signum { lr: p.lr, momentum: p.momentum, wd: p.wd, wd_lh: p.wd_lh, prep }
        }
        "nag_mom_update" | "mp_nag_mom_update" => {
            let p = NagMomParams::parse(a)?;
            Rule::NagMom { lr: p.lr, momentum: p.momentum, wd: p.wd, prep: prep(p.rescale_grad, p.clip_gradient) }
        }
        "adam_update" => {
            let p = AdamParams::parse(a)?;
            let prep = prep(p.rescale_grad, p.clip_gradient);
            Rule::Adam { lr: p.lr, beta1: p.beta1, beta2: p.beta2, epsilon: p.epsilon, wd: p.wd, prep }
        }
        "_adamw_update" | "_mp_adamw_update" => {
            let p = AdamWParams::parse(a)?;
            let (beta1, beta2, epsilon) = (p.beta1, p.beta2, p.epsilon);
            Rule::AdamW { lr: p.lr, eta: p.eta, beta1, beta2, epsilon, wd: p.wd, prep: prep(1.0, p.clip_gradient) }
        }
        "rmsprop_update" => {
            let p = RmsPropParams::parse(a)?;
            let prep = prep(p.rescale_grad, p.clip_gradient);
            Rule::RmsProp {
                lr: p.lr,
                gamma1: p.gamma1,
                epsilon: p.epsilon,
                wd: p.wd,
                clip_weights: p.clip_weights,
                prep,
            }
        }
        "rmspropalex_update" => {
            let p = RmsPropAlexParams::parse(a)?;
            let prep = prep(p.rescale_grad, p.clip_gradient);
            let (gamma1, gamma2, epsilon, clip_weights) = (p.gamma1, p.gamma2, p.epsilon, p.clip_weights);
            Rule::RmsPropAlex { lr: p.lr, gamma1, gamma2, epsilon, wd: p.wd, clip_weights, prep }
        }
        "ftrl_update" => {
            let p = FtrlParams::parse(a)?;
            let prep = prep(p.rescale_grad, p.clip_gradient);
            Rule::Ftrl { lr: p.lr, lamda1: p.lamda1, beta: p.beta, wd: p.wd, prep }
        }
        "ftml_update" => {
            let p = FtmlParams::parse(a)?;
            let prep = prep(p.rescale_grad, p.clip_grad);
            Rule::Ftml { lr: p.lr, beta1: p.beta1, beta2: p.beta2, epsilon: p.epsilon, t: p.t, wd: p.wd, prep }
        }
        "lamb_update_phase1" => {
            let p = LambPhase1Params::parse(a)?;
            let prep = prep(p.rescale_grad, p.clip_gradient);
            let (beta1, beta2, epsilon, t, bias_correction) = (p.beta1, p.beta2, p.epsilon, p.t, p.bias_correction);
            Rule::LambPhase1 { beta1, beta2, epsilon, t, bias_correction, wd: p.wd, prep }
        }
        "lamb_update_phase2" => {
            LambPhase2Params::parse(a)?;
            Rule::LambPhase2 { scale: 0.0 }
        }
        other => unreachable!("fused update: no rule for {other}"),
    })
}
