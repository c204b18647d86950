//! Fused recurrent layers (MXNet's `RNN` operator): vanilla ReLU/tanh RNN, LSTM and GRU, stacked
//! and optionally bidirectional, forward and backward through time.
//!
//! Layout is MXNet's: data `(T, N, I)`, states `(L·D, N, H)`, and one flat parameter vector
//! holding every layer/direction's `W_i2h (G·H × in)` and `W_h2h (G·H × H)`, then every layer/
//! direction's `b_i2h` and `b_h2h` (`G·H` each). Gate order: LSTM `i, f, g, o`; GRU `r, z, n` with
//! `n = tanh(x·W_in + b_in + r ⊙ (h·W_hn + b_hn))` and `h' = (1 − z) ⊙ n + z ⊙ h`.
//!
//! The input projections of all time steps are one GEMM per layer and direction; only the
//! recurrent `h·W_h2hᵀ` product runs per step, against weights packed once per layer, with the
//! batch rows split over threads for the whole recurrence ([`steps`]). The forward keeps in a *reserve* buffer what the
//! backward needs (each layer's output sequence, activated gates, LSTM cells, GRU `h·W_hn + b_hn`,
//! dropout masks between layers), so the backward never recomputes the forward.

use std::ops::{Add, Mul, Neg, Sub};

mod steps;

use crate::matmul::{gemm, GemmElement, PackedRhs};
use crate::rnn_cells as cells;
use crate::vmath;
use steps::Disjoint;

/// The recurrence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Relu,
    Tanh,
    Lstm,
    Gru,
}

impl Mode {
    /// Gates per hidden unit.
    pub fn gates(self) -> usize {
        match self {
            Mode::Relu | Mode::Tanh => 1,
            Mode::Lstm => 4,
            Mode::Gru => 3,
        }
    }
}

/// Float types the recurrent kernels run on.
pub trait RnnFloat:
    GemmElement + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Neg<Output = Self>
{
    fn sigmoid(self) -> Self;
    fn tanh(self) -> Self;
}

impl RnnFloat for f32 {
    #[inline(always)]
    fn sigmoid(self) -> f32 {
        vmath::sigmoid_f32(self)
    }
    #[inline(always)]
    fn tanh(self) -> f32 {
        vmath::tanh_f32(self)
    }
}

impl RnnFloat for f64 {
    #[inline(always)]
    fn sigmoid(self) -> f64 {
        vmath::sigmoid_f64(self)
    }
    #[inline(always)]
    fn tanh(self) -> f64 {
        vmath::tanh_f64(self)
    }
}

/// The problem's sizes; every buffer size and offset derives from them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dims {
    pub mode: Mode,
    pub seq: usize,
    pub batch: usize,
    pub input: usize,
    pub hidden: usize,
    pub layers: usize,
    pub dirs: usize,
    /// Dropout between layers is active (its masks are in the reserve).
    pub dropout: bool,
    /// LSTM cell clipping bounds (applied after each cell update).
    pub clip: Option<(f64, f64)>,
}

impl Dims {
    fn gh(&self) -> usize {
        self.mode.gates() * self.hidden
    }
    /// Input width of layer `l`.
    pub fn layer_input(&self, l: usize) -> usize {
        if l == 0 {
            self.input
        } else {
            self.dirs * self.hidden
        }
    }
    /// Length of the flat parameter vector.
    pub fn param_size(&self) -> usize {
        (0..self.layers).map(|l| self.dirs * self.gh() * (self.layer_input(l) + self.hidden + 2)).sum()
    }
    /// Offsets in the flat parameter vector of `(W_i2h, W_h2h, b_i2h, b_h2h)` of layer `l`,
    /// direction `d` (row-major `G·H × in`, `G·H × H`, then `G·H` and `G·H`).
    pub fn param_offsets(&self, l: usize, d: usize) -> (usize, usize, usize, usize) {
        let gh = self.gh();
        let mut w = 0;
        for ll in 0..l {
            w += self.dirs * gh * (self.layer_input(ll) + self.hidden);
        }
        w += d * gh * (self.layer_input(l) + self.hidden);
        let weights: usize = (0..self.layers).map(|ll| self.dirs * gh * (self.layer_input(ll) + self.hidden)).sum();
        let b = weights + (l * self.dirs + d) * 2 * gh;
        (w, w + gh * self.layer_input(l), b, b + gh)
    }
    fn seq_len(&self) -> usize {
        self.seq * self.batch * self.dirs * self.hidden
    }
    fn per_dir(&self) -> usize {
        let th = self.seq * self.batch * self.hidden;
        self.seq * self.batch * self.gh() + if matches!(self.mode, Mode::Lstm | Mode::Gru) { th } else { 0 }
    }
    fn per_layer(&self, l: usize) -> usize {
        let drop = if self.dropout && l + 1 < self.layers { 2 * self.seq_len() } else { 0 };
        self.seq_len() + drop + self.dirs * self.per_dir()
    }
    /// Length of the reserve buffer written by [`forward`] and read by [`backward`].
    pub fn reserve_size(&self) -> usize {
        (0..self.layers).map(|l| self.per_layer(l)).sum()
    }
    /// Number of dropout mask elements (one mask per layer but the last).
    pub fn mask_size(&self) -> usize {
        self.layers.saturating_sub(1) * self.seq_len()
    }
    /// Where the reserve holds the (scaled) dropout mask applied to layer `l`'s output, `(T, N,
    /// D·H)` elements; `None` for the last layer or without dropout.
    pub fn mask_range(&self, l: usize) -> Option<std::ops::Range<usize>> {
        layer_res(self, l).drop.map(|(mask, _)| mask)
    }
    fn layer_start(&self, l: usize) -> usize {
        (0..l).map(|ll| self.per_layer(ll)).sum()
    }
}

/// One layer's regions of the reserve: `y` (the layer's outputs, `(T, N, D·H)`), with dropout the
/// `mask` and the masked `next` input, then per direction the gates and the LSTM cells or GRU
/// `h·W_hn + b_hn`.
struct LayerRes {
    y: std::ops::Range<usize>,
    drop: Option<(std::ops::Range<usize>, std::ops::Range<usize>)>,
    gates: Vec<std::ops::Range<usize>>,
    extra: Vec<std::ops::Range<usize>>,
}

fn layer_res(d: &Dims, l: usize) -> LayerRes {
    let mut at = d.layer_start(l);
    let mut take = |n: usize| {
        at += n;
        at - n..at
    };
    let y = take(d.seq_len());
    let drop = (d.dropout && l + 1 < d.layers).then(|| (take(d.seq_len()), take(d.seq_len())));
    let (mut gates, mut extra) = (Vec::new(), Vec::new());
    let th = d.seq * d.batch * d.hidden;
    for _ in 0..d.dirs {
        gates.push(take(d.seq * d.batch * d.gh()));
        extra.push(take(if matches!(d.mode, Mode::Lstm | Mode::Gru) { th } else { 0 }));
    }
    LayerRes { y, drop, gates, extra }
}

/// Time step processed at position `k` of direction `dir`.
fn time(d: &Dims, dir: usize, k: usize) -> usize {
    if dir == 0 {
        k
    } else {
        d.seq - 1 - k
    }
}

/// The LSTM cell clipping bounds in `T` (infinite when there is no clipping, which leaves every
/// value, NaN included, as it is).
fn clip_bounds<T: RnnFloat>(d: &Dims) -> (T, T) {
    let (lo, hi) = d.clip.unwrap_or((f64::NEG_INFINITY, f64::INFINITY));
    (T::from_f64(lo), T::from_f64(hi))
}

/// Forward pass. `x`: `(T, N, I)`; `w`: flat parameters; `h0`/`c0`: `(L·D, N, H)` (`c0` for LSTM);
/// `masks`: dropout masks, already scaled, `mask_size()` elements when `dims.dropout`.
/// Writes `y` `(T, N, D·H)`, `hy`/`cy` `(L·D, N, H)` and the reserve.
#[allow(clippy::too_many_arguments)]
pub fn forward<T: RnnFloat>(
    d: &Dims,
    x: &[T],
    w: &[T],
    h0: &[T],
    c0: Option<&[T]>,
    masks: Option<&[T]>,
    y: &mut [T],
    hy: &mut [T],
    cy: &mut [T],
    reserve: &mut [T],
) {
    let (n, h, gh, dh) = (d.batch, d.hidden, d.gh(), d.dirs * d.hidden);
    let mut gi = vec![T::zero(); d.seq * n * gh];
    let chunks = steps::row_chunks(d);
    let (lo, hi) = clip_bounds::<T>(d);
    for l in 0..d.layers {
        let lr = layer_res(d, l);
        let inp = d.layer_input(l);
        // The layer's input: the data, or the previous layer's (dropped-out) output.
        let (input, res): (&[T], &mut [T]) = if l == 0 {
            (x, reserve)
        } else {
            let prev = layer_res(d, l - 1);
            let src = prev.drop.as_ref().map_or(prev.y.clone(), |(_, next)| next.clone());
            let (before, after) = reserve.split_at_mut(lr.y.start);
            (&before[src], after)
        };
        let base = lr.y.start;
        for dir in 0..d.dirs {
            let (wi, wh, bi, bh) = d.param_offsets(l, dir);
            // All time steps' input projections at once: gi = X · W_i2hᵀ + b_i2h.
            gemm(d.seq * n, gh, inp, input, (0, inp as isize, 1), w, (wi, 1, inp as isize), &mut gi, false);
            for row in gi.chunks_exact_mut(gh) {
                for (g, &b) in row.iter_mut().zip(&w[bi..bi + gh]) {
                    *g = *g + b;
                }
            }
            let s = l * d.dirs + dir;
            let states = s * n * h..(s + 1) * n * h;
            let w_h = PackedRhs::new(h, gh, w, (wh, 1, h as isize));
            let step = steps::Forward {
                d,
                dir,
                gi: &gi,
                w_h: &w_h,
                bias: &w[bh..bh + gh],
                h0: &h0[states.clone()],
                c0: c0.map(|c| &c[states.clone()]),
                clip: (lo, hi),
                y_at: lr.y.start - base,
                gates_at: lr.gates[dir].start - base,
                extra_at: lr.extra[dir].start - base,
            };
            let out = Disjoint::new(res);
            let cells = steps::run_chunks(&chunks, |rows| step.run(rows, &out));
            // Final states: the last processed step of this direction.
            let t_last = time(d, dir, d.seq.saturating_sub(1));
            for b in 0..n {
                for j in 0..h {
                    let o = s * n * h + b * h + j;
                    hy[o] = if d.seq == 0 {
                        h0[o]
                    } else {
                        res[lr.y.start - base + t_last * n * dh + b * dh + dir * h + j]
                    };
                }
            }
            if d.mode == Mode::Lstm {
                // The cells after the last step (c0 itself for an empty sequence).
                for (rows, c) in chunks.iter().zip(&cells) {
                    cy[s * n * h + rows.start * h..s * n * h + rows.end * h].copy_from_slice(c);
                }
            }
        }
        if let (Some((mask, next)), Some(masks)) = (&lr.drop, masks) {
            let m = &masks[l * d.seq_len()..(l + 1) * d.seq_len()];
            let yo = lr.y.start - base;
            for i in 0..d.seq_len() {
                res[mask.start - base + i] = m[i];
                res[next.start - base + i] = res[yo + i] * m[i];
            }
        }
    }
    let last = layer_res(d, d.layers - 1);
    y.copy_from_slice(&reserve[last.y]);
}

/// Backward pass from the head gradients `dy` `(T, N, D·H)`, `dhy`/`dcy` `(L·D, N, H)` (absent =
/// zero). Writes `dx`, `dw` (flat, like the parameters), `dh0` and `dc0` (LSTM).
#[allow(clippy::too_many_arguments)]
pub fn backward<T: RnnFloat>(
    d: &Dims,
    x: &[T],
    w: &[T],
    h0: &[T],
    c0: Option<&[T]>,
    reserve: &[T],
    dy: &[T],
    dhy: Option<&[T]>,
    dcy: Option<&[T]>,
    dx: &mut [T],
    dw: &mut [T],
    dh0: &mut [T],
    dc0: &mut [T],
) {
    let (n, h, gh, dh) = (d.batch, d.hidden, d.gh(), d.dirs * d.hidden);
    let rows = d.seq * n;
    let mut dgi = vec![T::zero(); rows * gh];
    let mut dgh = vec![T::zero(); rows * gh];
    let chunks = steps::row_chunks(d);
    let (lo, hi) = clip_bounds::<T>(d);
    // Gradient w.r.t. the current layer's output sequence.
    let mut dy_l: Vec<T> = dy.to_vec();
    dw.fill(T::zero());
    for l in (0..d.layers).rev() {
        let lr = layer_res(d, l);
        let inp = d.layer_input(l);
        let input: &[T] = if l == 0 {
            x
        } else {
            let prev = layer_res(d, l - 1);
            &reserve[prev.drop.map_or(prev.y, |(_, next)| next)]
        };
        let mut dinput = vec![T::zero(); rows * inp];
        let y = &reserve[lr.y.clone()];
        for dir in 0..d.dirs {
            let (wi, wh, bi, bh) = d.param_offsets(l, dir);
            let s = l * d.dirs + dir;
            let gates = &reserve[lr.gates[dir].clone()];
            let extra = &reserve[lr.extra[dir].clone()];
            let st = s * n * h..(s + 1) * n * h;
            let w_h = PackedRhs::new(gh, h, w, (wh, h as isize, 1));
            let step = steps::Backward {
                d,
                dir,
                gates,
                extra,
                y,
                dy: &dy_l,
                h0: &h0[st.clone()],
                c0: c0.map(|c| &c[st.clone()]),
                dhy: dhy.map(|v| &v[st.clone()]),
                dcy: dcy.map(|v| &v[st.clone()]),
                w_h: &w_h,
                clip: (lo, hi),
            };
            let (dgi_out, dgh_out) = (Disjoint::new(&mut dgi), Disjoint::new(&mut dgh));
            let firsts = steps::run_chunks(&chunks, |rows| step.run(rows, &dgi_out, &dgh_out));
            for (rows, (dh, dc)) in chunks.iter().zip(&firsts) {
                let at = st.start + rows.start * h..st.start + rows.end * h;
                dh0[at.clone()].copy_from_slice(dh);
                if d.mode == Mode::Lstm {
                    dc0[at].copy_from_slice(dc);
                }
            }
            let da_h: &[T] = if d.mode == Mode::Gru { &dgh } else { &dgi };
            // Weight gradients as whole-sequence GEMMs.
            gemm(
                gh,
                inp,
                rows,
                &dgi,
                (0, 1, gh as isize),
                input,
                (0, inp as isize, 1),
                &mut dw[wi..wi + gh * inp],
                false,
            );
            let dwh = &mut dw[wh..wh + gh * h];
            // Rows whose previous state is h0 (the first processed step), then the rest.
            let t0 = time(d, dir, 0);
            if d.seq > 0 {
                gemm(gh, h, n, da_h, (t0 * n * gh, 1, gh as isize), h0, (st.start, h as isize, 1), dwh, false);
            }
            if d.seq > 1 {
                // Forward direction: steps 1..T use outputs 0..T-1; backward: steps 0..T-1 use 1..T.
                let (da_from, y_from) = if dir == 0 { (n, 0) } else { (0, n) };
                gemm(
                    gh,
                    h,
                    (d.seq - 1) * n,
                    da_h,
                    (da_from * gh, 1, gh as isize),
                    y,
                    (y_from * dh + dir * h, dh as isize, 1),
                    dwh,
                    true,
                );
            }
            let dbi = &mut dw[bi..bi + gh];
            dbi.fill(T::zero());
            for row in dgi.chunks_exact(gh) {
                for (a, &b) in dbi.iter_mut().zip(row) {
                    *a = *a + b;
                }
            }
            let dbh = &mut dw[bh..bh + gh];
            dbh.fill(T::zero());
            for row in da_h.chunks_exact(gh) {
                for (a, &b) in dbh.iter_mut().zip(row) {
                    *a = *a + b;
                }
            }
            // Input gradient: dX += dGi · W_i2h.
            gemm(rows, inp, gh, &dgi, (0, gh as isize, 1), w, (wi, inp as isize, 1), &mut dinput, true);
        }
        if l == 0 {
            dx.copy_from_slice(&dinput);
        } else {
            let prev = layer_res(d, l - 1);
            if let Some((mask, _)) = prev.drop {
                for (a, &m) in dinput.iter_mut().zip(&reserve[mask]) {
                    *a = *a * m;
                }
            }
            dy_l = dinput;
        }
    }
}
