//! Inference fusion: `Convolution → BatchNorm [→ relu | clip]` as one step when not training.
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
