//! Fusion of the executor's schedule.
//!
//! Training: `BatchNorm → relu | clip` whose BatchNorm output nobody else reads becomes one
//! forward step (`_fused_BatchNorm_relu`/`_clip`, see `ops::conv::bn_act`) before the backward
//! steps are derived, so its gradient is one fused step too ([`fuse_training`]).
//!
//! Inference: `Convolution → BatchNorm [→ relu | clip]` as one step when not training.
//!
//! A chain qualifies when its steps are consecutive in the schedule, the convolution's output is
//! read only by the BatchNorm, the BatchNorm's statistics outputs by nobody, and (with an
//! activation) its normalised output only by the activation; reads by backward steps count, so
//! an executor whose gradients need the intermediate values never skips them. The fused step
//! writes the chain's last value into that value's planned buffer while it reads the chain's
//! inputs, so the memory plan keeps those inputs alive to the chain's last step (see
//! [`planned_reads`]) and the buffers are checked apart once planned. Forwards with
//! `is_train=True` always run the ops one by one.

use super::plan::StepIo;
use super::Step;
use crate::ndarray::NDArray;
use std::sync::Arc;

use crate::ndarray::Meta;
use crate::ops::conv::bn_act::BatchNormAct;
use crate::ops::conv::fused::{ConvBnAct, FusedAct};

/// One fusable chain.
pub(super) struct Chain {
    /// Steps `first..=last` of the schedule (the convolution first).
    pub first: usize,
    pub last: usize,
    pub op: ConvBnAct,
    /// The convolution's inputs (data, weight[, bias]).
    pub conv_inputs: Vec<u32>,
    /// BatchNorm's gamma, beta, moving_mean, moving_var.
    pub bn_params: Vec<u32>,
    /// The value the chain produces (the activation's output, or BatchNorm's).
    pub output: u32,
}

/// The chains of the first `n_forward` steps that may run fused. `readers[v]` counts the reads
/// of value `v` by any step plus its uses as a head or kept value.
pub(super) fn find_chains(steps: &[Step], n_forward: usize, readers: &[usize]) -> Vec<Chain> {
    let mut chains = Vec::new();
    let mut s = 0;
    while s + 1 < n_forward {
        match chain_at(steps, s, n_forward, readers) {
            Some(c) => {
                s = c.last + 1;
                chains.push(c);
            }
            None => s += 1,
        }
    }
    chains
}

/// The step inputs the memory plan must see: each chain's inputs are read again at its last
/// step, so no buffer of theirs is handed to the chain's output.
pub(super) fn planned_reads(steps: &[Step], chains: &[Chain]) -> Vec<StepIo> {
    let mut ios: Vec<StepIo> = steps.iter().map(|s| s.io.clone()).collect();
    for c in chains {
        let extra: Vec<u32> = c.conv_inputs.iter().chain(&c.bn_params).copied().collect();
        ios[c.last].inputs.extend(extra);
    }
    ios
}

/// Whether the chain's output buffer is apart from every buffer it reads (`storage` and `bound`
/// give each value's planned or bound array).
pub(super) fn writes_apart(c: &Chain, storage: &[Option<NDArray>], bound: &[Option<NDArray>]) -> bool {
    let Some(out) = storage[c.output as usize].as_ref() else { return false };
    !c.conv_inputs.iter().chain(&c.bn_params).any(|&v| {
        let v = v as usize;
        [&storage[v], &bound[v]].into_iter().flatten().any(|b| b.shares_storage(out))
    })
}

fn chain_at(steps: &[Step], s: usize, n_forward: usize, readers: &[usize]) -> Option<Chain> {
    let (conv, bn) = (&steps[s], &steps[s + 1]);
    if conv.op.name() != "Convolution" || bn.op.name() != "BatchNorm" {
        return None;
    }
    let conv_out = *conv.io.outputs.first()?;
    let (bn_in, bn_out) = (&bn.io.inputs, &bn.io.outputs);
    if conv.io.outputs.len() != 1 || bn_in.len() != 5 || bn_out.len() != 5 {
        return None;
    }
    if bn_in[0] != conv_out || readers[conv_out as usize] != 1 || bn_out[1..].iter().any(|&v| readers[v as usize] != 0)
    {
        return None;
    }
    // The activation joins when it is the BatchNorm output's only reader.
    let act = steps.get(s + 2).filter(|a| {
        s + 2 < n_forward
            && matches!(a.op.name(), "Activation" | "clip")
            && a.io.inputs == [bn_out[0]]
            && a.io.outputs.len() == 1
            && readers[bn_out[0] as usize] == 1
    });
    let mut op = ConvBnAct::recognise(conv.op.as_ref(), bn.op.as_ref(), act.map(|a| a.op.as_ref()));
    let (last, output) = match (&op, act) {
        (Some(f), Some(a)) if f.act != FusedAct::None => (s + 2, a.io.outputs[0]),
        _ => {
            // The activation is not one the epilogue knows: fuse the convolution and BatchNorm.
            op = ConvBnAct::recognise(conv.op.as_ref(), bn.op.as_ref(), None);
            (s + 1, bn_out[0])
        }
    };
    Some(Chain { first: s, last, op: op?, conv_inputs: conv.io.inputs.clone(), bn_params: bn_in[1..].to_vec(), output })
}

/// Whether binding fuses `BatchNorm → relu | clip` for training (on unless
/// `FERROGRAD_TRAINING_FUSION=0`).
pub(super) fn training_fusion_enabled() -> bool {
    std::env::var_os("FERROGRAD_TRAINING_FUSION").is_none_or(|v| v != "0")
}

/// Rewrites the forward `steps` so that each `BatchNorm → relu | clip` pair a gradient flows
/// through (`needs` of BatchNorm's output) is one fused step at BatchNorm's place, when the
/// activation is the only reader of BatchNorm's output and that output is not a head. The fused
/// step writes the activation's output, BatchNorm's statistics and a new per-channel `scale`
/// value (appended to `metas` and `needs`); BatchNorm's own output is then never written.
pub(super) fn fuse_training(steps: &mut Vec<Step>, metas: &mut Vec<Meta>, needs: &mut Vec<bool>, heads: &[u32]) {
    let mut readers = vec![0usize; metas.len()];
    steps.iter().flat_map(|st| &st.io.inputs).for_each(|&v| readers[v as usize] += 1);
    heads.iter().for_each(|&v| readers[v as usize] += 1);
    let mut removed = vec![false; steps.len()];
    for s in 0..steps.len() {
        let (bn, outs) = (&steps[s], &steps[s].io.outputs);
        if bn.op.name() != "BatchNorm" || outs.len() != 5 || !needs[outs[0] as usize] {
            continue;
        }
        let y = outs[0];
        if readers[y as usize] != 1 {
            continue;
        }
        let Some(t) = (s + 1..steps.len()).find(|&t| steps[t].io.inputs.contains(&y)) else { continue };
        let act = &steps[t];
        if act.io.inputs != [y] || act.io.outputs.len() != 1 {
            continue;
        }
        let Some(op) = BatchNormAct::recognise(bn.op.as_ref(), act.op.as_ref()) else { continue };
        let scale = metas.len() as u32;
        metas.push(metas[outs[1] as usize].clone());
        needs.push(true);
        let mut outputs = outs.clone();
        outputs[0] = act.io.outputs[0];
        outputs.push(scale);
        let mut labels = bn.labels.clone();
        if let (Some(first), Some(act_label)) = (labels.first_mut(), act.labels.first()) {
            first.clone_from(act_label);
        }
        let unstored = bn.labels.first().cloned().into_iter().collect();
        let fused = &mut steps[s];
        fused.op = Arc::new(op);
        fused.io.outputs = outputs;
        fused.labels = labels;
        fused.unstored_labels = unstored;
        removed[t] = true;
    }
    let mut keep = removed.iter().map(|r| !r);
    steps.retain(|_| keep.next().unwrap_or(true));
}
