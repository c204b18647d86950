//! `RNN`'s gradient built from registered, differentiable ops, for gradients that are themselves
//! differentiated again (`create_graph`).
//!
//! The rule replays the forward unrolled over the time steps — slices of the flat parameter
//! vector in the kernels' packing, `FullyConnected` for the input and recurrent projections,
//! `sigmoid`/`tanh`/`relu` and elementwise products for the cells, `stack`/`Concat` to gather
//! the outputs — and takes the vector-Jacobian product of that composite with every op's own
//! rule ([`composite_vjp`]), which is backpropagation through time written in ops. Every op
//! involved has a differentiable rule, so the result can be differentiated to any order.
//!
//! Dropout between layers reuses the forward's masks, read from the reserve (held constant with
//! `BlockGrad`), so training-mode gradients follow the same dropped units as the forward.

use ferrograd_kernels::rnn::{Dims, Mode};

use crate::error::{Error, Result};
use crate::ops::binary::BinaryKind;
use crate::ops::conv::norm::composite_vjp;
use crate::ops::join::{Concat, Stack};
use crate::ops::nn::dense::FullyConnected;
use crate::ops::nn::loss::BlockGrad;
use crate::ops::slice::SliceAxis;
use crate::ops::unary::UnaryKind;
use crate::ops::{Grad, Val};

/// Everything the unrolled forward reads besides the op's inputs.
pub(crate) struct Unroll {
    pub dims: Dims,
    /// Per layer but the last: the dropout mask on its output, `(T, N, D·H)`, when there is one.
    pub masks: Vec<Option<Val>>,
    /// Visible outputs to return: `out`, then `hy`, then `cy` (LSTM).
    pub visible: usize,
}

/// `x[begin..end]` along `axis`.
fn slice(g: &mut Grad<'_>, x: Val, axis: i64, begin: usize, end: usize) -> Result<Val> {
    g.apply1(SliceAxis { axis, begin: begin as i64, end: Some(end as i64) }, &[x])
}

/// `len` elements of the flat vector `w` from `at`, shaped `shape`.
fn flat_part(g: &mut Grad<'_>, w: Val, at: usize, shape: &[usize]) -> Result<Val> {
    let part = slice(g, w, 0, at, at + shape.iter().product::<usize>())?;
    g.reshape(part, shape)
}

/// `x · wᵀ + b` over the last axis of `x`.
fn affine(g: &mut Grad<'_>, x: Val, w: Val, b: Val, out: usize) -> Result<Val> {
    g.apply1(FullyConnected { num_hidden: out, no_bias: false, flatten: false }, &[x, w, b])
}

/// Gate `k` (of width `h`) of a `(N, G·H)` pre-activation.
fn gate(g: &mut Grad<'_>, a: Val, k: usize, h: usize) -> Result<Val> {
    slice(g, a, 1, k * h, (k + 1) * h)
}

/// One layer and direction's weights, as matrices and bias vectors.
struct Weights {
    w_i: Val,
    w_h: Val,
    b_i: Val,
    b_h: Val,
}

fn weights(g: &mut Grad<'_>, d: &Dims, params: Val, l: usize, dir: usize) -> Result<Weights> {
    let gh = d.mode.gates() * d.hidden;
    let (wi, wh, bi, bh) = d.param_offsets(l, dir);
    Ok(Weights {
        w_i: flat_part(g, params, wi, &[gh, d.layer_input(l)])?,
        w_h: flat_part(g, params, wh, &[gh, d.hidden])?,
        b_i: flat_part(g, params, bi, &[gh])?,
        b_h: flat_part(g, params, bh, &[gh])?,
    })
}

/// One step: from the input projection `gi` and the recurrent projection `st` (both `(N, G·H)`,
/// biases included) and the previous states, the new hidden state (and LSTM cell).
fn cell(g: &mut Grad<'_>, d: &Dims, gi: Val, st: Val, hp: Val, cp: Option<Val>) -> Result<(Val, Option<Val>)> {
    let h = d.hidden;
    match d.mode {
        Mode::Relu | Mode::Tanh => {
            let a = g.add(gi, st)?;
            let act = if d.mode == Mode::Relu { UnaryKind::Relu } else { UnaryKind::Tanh };
            Ok((g.unary(act, a)?, None))
        }
        Mode::Lstm => {
            let cp = cp.ok_or_else(|| Error::Runtime("RNN gradient: the LSTM step has no cell state".into()))?;
            let a = g.add(gi, st)?;
            let mut act = Vec::with_capacity(4);
            for (k, kind) in
                [UnaryKind::Sigmoid, UnaryKind::Sigmoid, UnaryKind::Tanh, UnaryKind::Sigmoid].into_iter().enumerate()
            {
                let pre = gate(g, a, k, h)?;
                act.push(g.unary(kind, pre)?);
            }
            let (i, f, gg, o) = (act[0], act[1], act[2], act[3]);
            let kept = g.mul(f, cp)?;
            let new = g.mul(i, gg)?;
            let mut c = g.add(kept, new)?;
            if let Some((lo, hi)) = d.clip {
                // max(min(c, hi), lo): no gradient through a clipped cell, like the kernels.
                let upper = g.scalar(BinaryKind::Minimum, c, hi, false)?;
                c = g.scalar(BinaryKind::Maximum, upper, lo, false)?;
            }
            let tc = g.unary(UnaryKind::Tanh, c)?;
            Ok((g.mul(o, tc)?, Some(c)))
        }
        Mode::Gru => {
            let (gi_r, st_r) = (gate(g, gi, 0, h)?, gate(g, st, 0, h)?);
            let (gi_z, st_z) = (gate(g, gi, 1, h)?, gate(g, st, 1, h)?);
            let (gi_n, st_n) = (gate(g, gi, 2, h)?, gate(g, st, 2, h)?);
            let ar = g.add(gi_r, st_r)?;
            let r = g.unary(UnaryKind::Sigmoid, ar)?;
            let az = g.add(gi_z, st_z)?;
            let z = g.unary(UnaryKind::Sigmoid, az)?;
            let rn = g.mul(r, st_n)?;
            let an = g.add(gi_n, rn)?;
            let n = g.unary(UnaryKind::Tanh, an)?;
            // (1 − z)·n + z·h_prev = n + z·(h_prev − n)
            let diff = g.sub(hp, n)?;
            let zd = g.mul(z, diff)?;
            Ok((g.add(n, zd)?, None))
        }
    }
}

/// State `s` of a `(L·D, N, H)` state tensor, as `(N, H)`.
fn state_at(g: &mut Grad<'_>, d: &Dims, states: Val, s: usize) -> Result<Val> {
    let one = slice(g, states, 0, s, s + 1)?;
    g.reshape(one, &[d.batch, d.hidden])
}

/// The forward, unrolled in ops: `inputs` = `(data, parameters, state[, state_cell])`; returns
/// the visible outputs `out (T, N, D·H)`, `hy`, `cy`.
fn unrolled(g: &mut Grad<'_>, u: &Unroll, inputs: &[Val]) -> Result<Vec<Option<Val>>> {
    let d = &u.dims;
    let (n, gh) = (d.batch, d.mode.gates() * d.hidden);
    let lstm = d.mode == Mode::Lstm;
    let (params, h0) = (inputs[1], inputs[2]);
    let c0 = if lstm { inputs.get(3).copied() } else { None };
    let mut layer_in = inputs[0];
    let (mut hy, mut cy) = (Vec::new(), Vec::new());
    for l in 0..d.layers {
        let mut dir_out = Vec::with_capacity(d.dirs);
        for dir in 0..d.dirs {
            let w = weights(g, d, params, l, dir)?;
            let s = l * d.dirs + dir;
            // All steps' input projections at once: (T, N, G·H).
            let gi_all = affine(g, layer_in, w.w_i, w.b_i, gh)?;
            let mut hp = state_at(g, d, h0, s)?;
            let mut cp = match c0 {
                Some(c0) => Some(state_at(g, d, c0, s)?),
                None => None,
            };
            let mut ys: Vec<Option<Val>> = vec![None; d.seq];
            for k in 0..d.seq {
                let t = if dir == 0 { k } else { d.seq - 1 - k };
                let gi_t = slice(g, gi_all, 0, t, t + 1)?;
                let gi_t = g.reshape(gi_t, &[n, gh])?;
                let st = affine(g, hp, w.w_h, w.b_h, gh)?;
                let (hn, cn) = cell(g, d, gi_t, st, hp, cp)?;
                ys[t] = Some(hn);
                hp = hn;
                cp = cn;
            }
            let ys: Vec<Val> = ys.into_iter().flatten().collect();
            dir_out.push(g.apply1(Stack { axis: 0, num_args: None }, &ys)?);
            hy.push(hp);
            if let Some(c) = cp {
                cy.push(c);
            }
        }
        let y = if dir_out.len() == 1 { dir_out[0] } else { g.apply1(Concat { dim: 2, num_args: None }, &dir_out)? };
        layer_in = match u.masks.get(l).copied().flatten() {
            Some(m) => g.mul(y, m)?,
            None => y,
        };
    }
    let mut outs = vec![Some(layer_in), Some(g.apply1(Stack { axis: 0, num_args: None }, &hy)?)];
    if lstm {
        outs.push(Some(g.apply1(Stack { axis: 0, num_args: None }, &cy)?));
    }
    outs.truncate(u.visible);
    Ok(outs)
}

/// The gradients w.r.t. `inputs` (data, parameters, state[, state_cell]) for the visible head
/// gradients `heads`, built from differentiable ops. `reserve` is the forward's hidden output
/// (only its dropout masks are read).
pub(crate) fn grad(
    g: &mut Grad<'_>,
    dims: Dims,
    visible: usize,
    inputs: &[Val],
    reserve: Val,
    heads: &[Val],
) -> Result<Vec<Option<Val>>> {
    if dims.seq == 0 {
        // No step runs: out is empty, hy = h0 and cy = c0.
        let mut v = vec![Some(g.zeros_like(inputs[0])?), Some(g.zeros_like(inputs[1])?)];
        for (k, &x) in inputs[2..].iter().enumerate() {
            v.push(Some(match heads.get(k + 1) {
                Some(&hg) => hg,
                None => g.zeros_like(x)?,
            }));
        }
        return Ok(v);
    }
    let mut masks = Vec::with_capacity(dims.layers);
    for l in 0..dims.layers {
        masks.push(match dims.mask_range(l) {
            Some(r) => {
                let m = slice(g, reserve, 0, r.start, r.end)?;
                let m = g.apply1(BlockGrad, &[m])?;
                Some(g.reshape(m, &[dims.seq, dims.batch, dims.dirs * dims.hidden])?)
            }
            None => None,
        });
    }
    let u = Unroll { dims, masks, visible };
    composite_vjp(g, inputs, &heads[..visible], |g, ins| unrolled(g, &u, ins))
}
