//! The elementwise part of one recurrent step, for one batch row: gate activations and state
//! updates forward, their derivatives backward. Each kernel runs under [`simd_dispatch!`] on
//! slices cut to the hidden size, so the gate loops vectorise (with the FMA-based
//! [`crate::vmath`] transcendentals) instead of calling libm per element; every instruction-set
//! path gives the same bits.
//!
//! Slices: `gi` the step's input projection with `b_i2h`, `st` the recurrent product `h·W_h2hᵀ`,
//! `bh` the bias `b_h2h` (gate-major, `G·H` each); `h`-long slices otherwise.

use crate::rnn::RnnFloat;
use crate::simd_dispatch;

/// `if v < lo { lo } else if v > hi { hi } else { v }` (NaN passes), branch-free once inlined.
#[inline(always)]
fn clamp<T: RnnFloat>(v: T, lo: T, hi: T) -> T {
    let v = if v < lo { lo } else { v };
    if v > hi {
        hi
    } else {
        v
    }
}

simd_dispatch! {
    /// Vanilla RNN step: `out = act(gi + (st + bh))`, written to `gates` and `y`.
    pub fn simple_forward<T>(gi: &[T], st: &[T], bh: &[T], tanh: bool, gates: &mut [T], y: &mut [T])
    where { T: RnnFloat }
    {
        let h = y.len();
        let (gi, st, bh, gates) = (&gi[..h], &st[..h], &bh[..h], &mut gates[..h]);
        for j in 0..h {
            let a = gi[j] + (st[j] + bh[j]);
            let v = if tanh { a.tanh() } else if a > T::zero() { a } else { T::zero() };
            gates[j] = v;
            y[j] = v;
        }
    }
}

simd_dispatch! {
    /// LSTM step (gates `i, f, g, o`): `c = clamp(f·c + i·g)`, `y = o·tanh(c)`; `c` is updated
    /// in place and also stored in `cell`, the activated gates in `gates`.
    #[allow(clippy::too_many_arguments)]
    pub fn lstm_forward<T>(gi: &[T], st: &[T], bh: &[T], lo: T, hi: T, c: &mut [T], gates: &mut [T], cell: &mut [T], y: &mut [T])
    where { T: RnnFloat }
    {
        let h = y.len();
        let (c, cell) = (&mut c[..h], &mut cell[..h]);
        let (gi_i, gi_f, gi_g, gi_o) = (&gi[..h], &gi[h..2 * h], &gi[2 * h..3 * h], &gi[3 * h..4 * h]);
        let (st_i, st_f, st_g, st_o) = (&st[..h], &st[h..2 * h], &st[2 * h..3 * h], &st[3 * h..4 * h]);
        let (b_i, b_f, b_g, b_o) = (&bh[..h], &bh[h..2 * h], &bh[2 * h..3 * h], &bh[3 * h..4 * h]);
        let (g_i, rest) = gates[..4 * h].split_at_mut(h);
        let (g_f, rest) = rest.split_at_mut(h);
        let (g_g, g_o) = rest.split_at_mut(h);
        for j in 0..h {
            let i = (gi_i[j] + (st_i[j] + b_i[j])).sigmoid();
            let f = (gi_f[j] + (st_f[j] + b_f[j])).sigmoid();
            let g = (gi_g[j] + (st_g[j] + b_g[j])).tanh();
            let o = (gi_o[j] + (st_o[j] + b_o[j])).sigmoid();
            (g_i[j], g_f[j], g_g[j], g_o[j]) = (i, f, g, o);
            let cn = clamp(f * c[j] + i * g, lo, hi);
            c[j] = cn;
            cell[j] = cn;
            y[j] = o * cn.tanh();
        }
    }
}

simd_dispatch! {
    /// GRU step (gates `r, z, n`): `n = tanh(gi_n + r·(st_n + bh_n))`, `y = (1 − z)·n + z·hp`;
    /// `st_n + bh_n` is kept in `hn` for the backward.
    #[allow(clippy::too_many_arguments)]
    pub fn gru_forward<T>(gi: &[T], st: &[T], bh: &[T], hp: &[T], gates: &mut [T], hn: &mut [T], y: &mut [T])
    where { T: RnnFloat }
    {
        let h = y.len();
        let (hp, hn) = (&hp[..h], &mut hn[..h]);
        let (gi_r, gi_z, gi_n) = (&gi[..h], &gi[h..2 * h], &gi[2 * h..3 * h]);
        let (st_r, st_z, st_n) = (&st[..h], &st[h..2 * h], &st[2 * h..3 * h]);
        let (b_r, b_z, b_n) = (&bh[..h], &bh[h..2 * h], &bh[2 * h..3 * h]);
        let (g_r, rest) = gates[..3 * h].split_at_mut(h);
        let (g_z, g_n) = rest.split_at_mut(h);
        for j in 0..h {
            let r = (gi_r[j] + (st_r[j] + b_r[j])).sigmoid();
            let z = (gi_z[j] + (st_z[j] + b_z[j])).sigmoid();
            let hnj = st_n[j] + b_n[j];
            let n = (gi_n[j] + r * hnj).tanh();
            (g_r[j], g_z[j], g_n[j]) = (r, z, n);
            hn[j] = hnj;
            y[j] = (T::one() - z) * n + z * hp[j];
        }
    }
}

simd_dispatch! {
    /// Vanilla RNN step backward: `da = (dy + dh) · act'(out)` from the activated `gates`.
    pub fn simple_backward<T>(gates: &[T], dy: &[T], dh: &[T], tanh: bool, da: &mut [T])
    where { T: RnnFloat }
    {
        let h = da.len();
        let (gates, dy, dh) = (&gates[..h], &dy[..h], &dh[..h]);
        for j in 0..h {
            let dht = dy[j] + dh[j];
            let v = gates[j];
            da[j] = if tanh { dht * (T::one() - v * v) } else if v > T::zero() { dht } else { T::zero() };
        }
    }
}

simd_dispatch! {
    /// LSTM step backward. `cell`/`cp`: this and the previous cell state; `dc` carries the cell
    /// gradient from the next step in and to the previous step out; writes the pre-activation
    /// gradients `da` (`4·H`). A cell clipped to `[lo, hi]` passes no gradient into its update.
    #[allow(clippy::too_many_arguments)]
    pub fn lstm_backward<T>(gates: &[T], cell: &[T], cp: &[T], dy: &[T], dh: &[T], lo: T, hi: T, dc: &mut [T], da: &mut [T])
    where { T: RnnFloat }
    {
        let h = dc.len();
        let (cell, cp, dy, dh) = (&cell[..h], &cp[..h], &dy[..h], &dh[..h]);
        let (g_i, g_f, g_g, g_o) = (&gates[..h], &gates[h..2 * h], &gates[2 * h..3 * h], &gates[3 * h..4 * h]);
        let (d_i, rest) = da[..4 * h].split_at_mut(h);
        let (d_f, rest) = rest.split_at_mut(h);
        let (d_g, d_o) = rest.split_at_mut(h);
        for j in 0..h {
            let (i, f, g, o) = (g_i[j], g_f[j], g_g[j], g_o[j]);
            let dht = dy[j] + dh[j];
            let tc = cell[j].tanh();
            let raw = f * cp[j] + i * g;
            let clipped = raw < lo || raw > hi;
            let dcj = dc[j] + dht * o * (T::one() - tc * tc);
            let dcj = if clipped { T::zero() } else { dcj };
            d_i[j] = dcj * g * i * (T::one() - i);
            d_f[j] = dcj * cp[j] * f * (T::one() - f);
            d_g[j] = dcj * i * (T::one() - g * g);
            d_o[j] = dht * tc * o * (T::one() - o);
            dc[j] = dcj * f;
        }
    }
}

simd_dispatch! {
    /// GRU step backward from the gates, `hn = st_n + bh_n` and the previous state `hp`: writes
    /// the input-side gradients `dgi`, the recurrent-side `dgh` (`3·H` each; they differ in the
    /// `n` gate, scaled by `r`) and the direct path `dh_rec = dh_total · z`.
    #[allow(clippy::too_many_arguments)]
    pub fn gru_backward<T>(gates: &[T], hn: &[T], hp: &[T], dy: &[T], dh: &[T], dgi: &mut [T], dgh: &mut [T], dh_rec: &mut [T])
    where { T: RnnFloat }
    {
        let h = dh_rec.len();
        let (hn, hp, dy, dh) = (&hn[..h], &hp[..h], &dy[..h], &dh[..h]);
        let (g_r, g_z, g_n) = (&gates[..h], &gates[h..2 * h], &gates[2 * h..3 * h]);
        let (i_r, rest) = dgi[..3 * h].split_at_mut(h);
        let (i_z, i_n) = rest.split_at_mut(h);
        let (h_r, rest) = dgh[..3 * h].split_at_mut(h);
        let (h_z, h_n) = rest.split_at_mut(h);
        for j in 0..h {
            let (r, z, n) = (g_r[j], g_z[j], g_n[j]);
            let dht = dy[j] + dh[j];
            let dan = dht * (T::one() - z) * (T::one() - n * n);
            let dar = dan * hn[j] * r * (T::one() - r);
            let daz = dht * (hp[j] - n) * z * (T::one() - z);
            (i_r[j], i_z[j], i_n[j]) = (dar, daz, dan);
            (h_r[j], h_z[j], h_n[j]) = (dar, daz, dan * r);
            dh_rec[j] = dht * z;
        }
    }
}
