//! The recurrences through time, run on ranges of batch rows. A batch row's state at step `t`
//! depends only on the same row at step `t − 1`, so the rows split over threads once per layer
//! and direction and each task runs every step for its rows: one hand-off per layer, not one per
//! step (the per-step products are too small to split profitably). A row's arithmetic is the same
//! in any range, so results do not depend on the split.

use std::marker::PhantomData;
use std::ops::Range;

use super::{cells, time, Dims, Mode, RnnFloat};
use crate::matmul::PackedRhs;
use crate::par;

/// Work (steps · rows · recurrent multiply-adds per row) from which the rows split over threads.
const PAR_MIN_WORK: usize = 1 << 22;
/// Rows per task are a multiple of this (the GEMM tile height) where the batch allows.
const ROW_UNIT: usize = 8;

/// The batch-row ranges of one recurrence: one per thread when the work is worth it.
pub(super) fn row_chunks(d: &Dims) -> Vec<Range<usize>> {
    let n = d.batch;
    let work = d.seq * n * d.gh() * d.hidden;
    let threads = par::num_threads();
    let tasks =
        if threads > 1 && !par::in_worker() && work >= PAR_MIN_WORK { threads.min(n / ROW_UNIT).max(1) } else { 1 };
    let units = n.div_ceil(ROW_UNIT);
    let bound = |t: usize| (t * units / tasks * ROW_UNIT).min(n);
    (0..tasks).map(|t| bound(t)..if t + 1 == tasks { n } else { bound(t + 1) }).collect()
}

/// `f` over each range, in parallel when there are several; results in range order.
pub(super) fn run_chunks<R: Send>(chunks: &[Range<usize>], f: impl Fn(Range<usize>) -> R + Sync + Send) -> Vec<R> {
    #[cfg(feature = "rayon")]
    if chunks.len() > 1 {
        use rayon::prelude::*;
        return chunks.par_iter().cloned().map(|r| par::in_task(|| f(r))).collect();
    }
    chunks.iter().cloned().map(f).collect()
}

/// A buffer that row tasks write at disjoint positions (each task owns its batch rows at every
/// time step, and reads back only what it wrote).
pub(super) struct Disjoint<'a, T> {
    ptr: *mut T,
    len: usize,
    _buf: PhantomData<&'a mut [T]>,
}

// SAFETY: tasks only reach disjoint ranges (the contract of `Disjoint::range`), and the buffer
// is borrowed mutably for the whole lifetime, so no one else sees it meanwhile.
unsafe impl<T: Send> Send for Disjoint<'_, T> {}
// SAFETY: as for Send.
unsafe impl<T: Send> Sync for Disjoint<'_, T> {}

impl<'a, T> Disjoint<'a, T> {
    pub(super) fn new(buf: &'a mut [T]) -> Self {
        Disjoint { ptr: buf.as_mut_ptr(), len: buf.len(), _buf: PhantomData }
    }

    /// The values at `r`. Panics if `r` is outside the buffer.
    ///
    /// # Safety
    /// No other live slice from this buffer (in this task or another) overlaps `r`.
    #[allow(clippy::mut_from_ref)]
    unsafe fn range(&self, r: Range<usize>) -> &mut [T] {
        assert!(r.start <= r.end && r.end <= self.len, "rnn buffer range {r:?} outside {}", self.len);
        // SAFETY: in bounds (checked) and unaliased (caller's contract).
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(r.start), r.len()) }
    }
}

/// What one layer direction's forward recurrence reads, shared by its row tasks.
pub(super) struct Forward<'a, T> {
    pub d: &'a Dims,
    pub dir: usize,
    /// Input projections of every step, `(T·N, G·H)`, with `b_i2h` added.
    pub gi: &'a [T],
    /// `W_h2hᵀ` (`H × G·H`).
    pub w_h: &'a PackedRhs<T>,
    /// `b_h2h`.
    pub bias: &'a [T],
    /// This direction's initial states `(N, H)` (`c0` for LSTM only).
    pub h0: &'a [T],
    pub c0: Option<&'a [T]>,
    pub clip: (T, T),
    /// Where the layer's outputs, this direction's gates and its cells / GRU extra start in the
    /// output buffer.
    pub y_at: usize,
    pub gates_at: usize,
    pub extra_at: usize,
}

impl<T: RnnFloat> Forward<'_, T> {
    /// Runs every step for batch rows `rows`, writing their outputs, gates and extra into `out`;
    /// returns their last cell state (LSTM; zeros otherwise).
    pub(super) fn run(&self, rows: Range<usize>, out: &Disjoint<'_, T>) -> Vec<T> {
        let d = self.d;
        let (n, h, gh, dh, dir) = (d.batch, d.hidden, d.gh(), d.dirs * d.hidden, self.dir);
        let (r0, r) = (rows.start, rows.len());
        let mut h_prev = self.h0[r0 * h..rows.end * h].to_vec();
        let mut c = match self.c0 {
            Some(c0) => c0[r0 * h..rows.end * h].to_vec(),
            None => vec![T::zero(); r * h],
        };
        let mut step = vec![T::zero(); r * gh];
        let y_row = |t: usize, b: usize| {
            let at = self.y_at + t * n * dh + b * dh + dir * h;
            at..at + h
        };
        for k in 0..d.seq {
            let t = time(d, dir, k);
            // The previous state, gathered into one contiguous block: h0 or this layer's
            // outputs at the previous step.
            if k > 0 {
                let tp = time(d, dir, k - 1);
                for (i, dst) in h_prev.chunks_exact_mut(h).enumerate() {
                    // SAFETY: row r0 + i is this task's; no other slice of it is live.
                    dst.copy_from_slice(unsafe { out.range(y_row(tp, r0 + i)) });
                }
            }
            // step = h_prev · W_h2hᵀ (b_h2h is added by the cell kernels).
            self.w_h.gemm(r, &h_prev, (0, h as isize, 1), &mut step, false);
            for i in 0..r {
                let b = r0 + i;
                let gi_row = &self.gi[(t * n + b) * gh..(t * n + b + 1) * gh];
                let st = &step[i * gh..(i + 1) * gh];
                let cells_at = self.extra_at + (t * n + b) * h;
                // SAFETY: the gates, output and extra of (t, b) are three disjoint regions of
                // this task's row b.
                let (g_row, y_out) = unsafe {
                    let at = self.gates_at + (t * n + b) * gh;
                    (out.range(at..at + gh), out.range(y_row(t, b)))
                };
                let state = i * h..(i + 1) * h;
                match d.mode {
                    Mode::Relu | Mode::Tanh => {
                        cells::simple_forward(gi_row, st, self.bias, d.mode == Mode::Tanh, g_row, y_out)
                    }
                    Mode::Lstm => cells::lstm_forward(
                        gi_row,
                        st,
                        self.bias,
                        self.clip.0,
                        self.clip.1,
                        &mut c[state],
                        g_row,
                        // SAFETY: as above.
                        unsafe { out.range(cells_at..cells_at + h) },
                        y_out,
                    ),
                    Mode::Gru => cells::gru_forward(
                        gi_row,
                        st,
                        self.bias,
                        &h_prev[state],
                        g_row,
                        // SAFETY: as above.
                        unsafe { out.range(cells_at..cells_at + h) },
                        y_out,
                    ),
                }
            }
        }
        c
    }
}

/// What one layer direction's backward recurrence reads, shared by its row tasks.
pub(super) struct Backward<'a, T> {
    pub d: &'a Dims,
    pub dir: usize,
    /// This direction's activated gates and cells / GRU extra, from the reserve.
    pub gates: &'a [T],
    pub extra: &'a [T],
    /// The layer's outputs `(T, N, D·H)` and their gradient.
    pub y: &'a [T],
    pub dy: &'a [T],
    /// This direction's initial states and final-state gradients `(N, H)`.
    pub h0: &'a [T],
    pub c0: Option<&'a [T]>,
    pub dhy: Option<&'a [T]>,
    pub dcy: Option<&'a [T]>,
    /// `W_h2h` (`G·H × H`).
    pub w_h: &'a PackedRhs<T>,
    pub clip: (T, T),
}

impl<T: RnnFloat> Backward<'_, T> {
    /// Runs every step backwards for batch rows `rows`, writing their gate gradients into `dgi`
    /// (and GRU's `h·W_h` gradients into `dgh`), both `(T·N, G·H)`; returns the rows' gradients
    /// of `h0` and `c0`.
    pub(super) fn run(&self, rows: Range<usize>, dgi: &Disjoint<'_, T>, dgh: &Disjoint<'_, T>) -> (Vec<T>, Vec<T>) {
        let d = self.d;
        let (n, h, gh, dh, dir) = (d.batch, d.hidden, d.gh(), d.dirs * d.hidden, self.dir);
        let (r0, r) = (rows.start, rows.len());
        let state_rows = r0 * h..rows.end * h;
        let mut dh_next = self.dhy.map_or_else(|| vec![T::zero(); r * h], |v| v[state_rows.clone()].to_vec());
        let mut dc_next = match self.dcy {
            Some(v) if d.mode == Mode::Lstm => v[state_rows.clone()].to_vec(),
            _ => vec![T::zero(); r * h],
        };
        let mut dh_rec = vec![T::zero(); r * h];
        let zeros = vec![T::zero(); h];
        for k in (0..d.seq).rev() {
            let t = time(d, dir, k);
            for i in 0..r {
                let b = r0 + i;
                let row = (t * n + b) * gh..(t * n + b + 1) * gh;
                let gr = &self.gates[row.clone()];
                let dy_at = t * n * dh + b * dh + dir * h;
                let dy_row = &self.dy[dy_at..dy_at + h];
                let state = i * h..(i + 1) * h;
                let dh_row = &dh_next[state.clone()];
                // LSTM cells or GRU `h·W_hn + b_hn` (empty for the vanilla modes).
                let e_row = self.extra.get((t * n + b) * h..(t * n + b + 1) * h).unwrap_or(&[]);
                // The state this step started from: h0 / c0, or the previous step's.
                let prev = |stride: usize, off: usize| {
                    let at = time(d, dir, k - 1) * stride + off;
                    at..at + h
                };
                match d.mode {
                    Mode::Relu | Mode::Tanh => cells::simple_backward(
                        gr,
                        dy_row,
                        dh_row,
                        d.mode == Mode::Tanh,
                        // SAFETY: row (t, b) is this task's; no other slice of it is live.
                        unsafe { dgi.range(row.start..row.start + h) },
                    ),
                    Mode::Lstm => {
                        let cp: &[T] = if k == 0 {
                            self.c0.map_or(&zeros[..], |c0| &c0[b * h..(b + 1) * h])
                        } else {
                            &self.extra[prev(n * h, b * h)]
                        };
                        cells::lstm_backward(
                            gr,
                            e_row,
                            cp,
                            dy_row,
                            dh_row,
                            self.clip.0,
                            self.clip.1,
                            &mut dc_next[state],
                            // SAFETY: as above.
                            unsafe { dgi.range(row) },
                        )
                    }
                    Mode::Gru => {
                        let hp: &[T] =
                            if k == 0 { &self.h0[b * h..(b + 1) * h] } else { &self.y[prev(n * dh, b * dh + dir * h)] };
                        // SAFETY: as above (dgi and dgh are different buffers).
                        let (gi_out, gh_out) = unsafe { (dgi.range(row.clone()), dgh.range(row)) };
                        cells::gru_backward(gr, e_row, hp, dy_row, dh_row, gi_out, gh_out, &mut dh_rec[state])
                    }
                }
            }
            // dh_prev = dA_h · W_h2h (+ the direct path, GRU's z ⊙ dh).
            let da = if d.mode == Mode::Gru { dgh } else { dgi };
            // SAFETY: rows r0..r0+r of step t are this task's, and the cells above are done
            // with them.
            let da_rows = unsafe { &*da.range((t * n + r0) * gh..(t * n + rows.end) * gh) };
            self.w_h.gemm(r, da_rows, (0, gh as isize, 1), &mut dh_next, false);
            if d.mode == Mode::Gru {
                for (a, &b) in dh_next.iter_mut().zip(&dh_rec) {
                    *a = *a + b;
                }
            }
        }
        (dh_next, dc_next)
    }
}
