//! Products whose right operand is a gather with separable offsets: element `(p, j)` of the
//! `k×n` operand is `src[rows[p] + cols[j]]`. A convolution's im2col columns over a zero-padded
//! input have this form (`rows` per channel and kernel tap, `cols` per output position), and so
//! does their transpose. Packing the GEMM's blocks straight from the input skips writing and
//! re-reading the column matrix (nine times the input for a 3×3 kernel), and the packing runs in
//! the GEMM's own tasks instead of a parallel pass of its own.
//!
//! The packed blocks hold exactly the values the column matrix would, in the same places, so
//! the products give the same bits as [`super::gemm`] on the materialised operand.

use super::{
    default_threads, fill_zero, for_each_task, task_start, Block, Isa, Packed, SendMat, SPLIT_MIN_COLS,
    TASKS_PER_THREAD,
};
use crate::matmul::Mat;

/// Widest panel any micro-kernel uses (f32 on AVX-512: 32 columns).
const MAX_NR: usize = 32;
/// Panels whose runs of consecutive offsets average fewer values than this are gathered value by
/// value (a run's setup costs more than its few copies).
const SHORT_RUN: usize = 4;

/// A `k×n` operand gathered from `src`, `k = rows.len()`, `n = cols.len()`; every offset is
/// checked once, by [`Gather::new`].
#[derive(Clone, Copy)]
pub struct Gather<'a, T> {
    src: &'a [T],
    rows: &'a [usize],
    cols: &'a [usize],
}

impl<'a, T> Gather<'a, T> {
    /// `None` when some `rows[p] + cols[j]` falls outside `src`.
    pub fn new(src: &'a [T], rows: &'a [usize], cols: &'a [usize]) -> Option<Self> {
        let reach = match (rows.iter().max(), cols.iter().max()) {
            (Some(r), Some(c)) => r.checked_add(*c)?,
            _ => 0, // an empty operand reads nothing
        };
        (rows.is_empty() || cols.is_empty() || reach < src.len()).then_some(Gather { src, rows, cols })
    }

    pub fn k(&self) -> usize {
        self.rows.len()
    }

    pub fn n(&self) -> usize {
        self.cols.len()
    }

    /// Element `(p, j)` (for the slow paths; the products pack blocks directly).
    pub fn get(&self, p: usize, j: usize) -> T
    where
        T: Copy,
    {
        self.src[self.rows[p] + self.cols[j]]
    }
}

/// `c = a·b` (or `c += a·b` when `accumulate`) for an `m×k` `a` and the gathered `k×n` `b`,
/// threaded as [`super::gemm`] is; `false` (nothing done) when this CPU has no micro-kernel.
///
/// # Safety
/// `a` is readable at every `(i, p)`, `i < m`, `p < k`; `c` writable at every `(i, j)`, `j < n`,
/// overlapping neither `a` nor `b`'s source.
pub unsafe fn gemm_gather<T: Packed>(
    m: usize,
    c: Mat<*mut T>,
    a: Mat<*const T>,
    b: &Gather<'_, T>,
    accumulate: bool,
) -> bool {
    let Some(isa) = Isa::detect() else {
        return false;
    };
    let (n, k) = (b.n(), b.k());
    if m == 0 || n == 0 {
        return true;
    }
    if k == 0 {
        if !accumulate {
            // SAFETY: the caller's contract on `c`.
            unsafe { fill_zero(m, n, c) };
        }
        return true;
    }
    let (kernel, mr, nr) = T::kernel(isa);
    debug_assert!(nr <= MAX_NR);
    let split_rows = n < SPLIT_MIN_COLS && m > n;
    let (len, unit) = if split_rows { (m, mr) } else { (n, nr) };
    let per_thread = if split_rows { 1 } else { TASKS_PER_THREAD };
    let tasks = (default_threads(m, n, k) * per_thread).clamp(1, len.div_ceil(unit));
    // B's strided view is unused: the blocks come from the gather.
    let no_b = Mat { ptr: std::ptr::NonNull::<T>::dangling().as_ptr() as *const T, row_stride: 0, col_stride: 0 };
    let block = Block { kernel, mr, nr, c: SendMat(c), a: SendMat(a), b: SendMat(no_b), accumulate };
    let run = |t: usize| {
        let (start, end) = (task_start(t, tasks, len, unit), task_start(t + 1, tasks, len, unit));
        let size = end - start;
        // SAFETY: task `t` covers rows (or columns) `start..start+size` of C, disjoint from every
        // other task's; A and C are sub-views of the caller's valid ones, B's blocks are packed
        // from the checked gather.
        unsafe {
            if split_rows {
                block.sub_rows(start).run_gather(size, n, k, b, 0)
            } else {
                block.sub_c_cols(start).run_gather(m, size, k, b, start)
            }
        }
    };
    for_each_task(tasks, run);
    true
}

impl<T: Packed> Block<T> {
    /// The same product from column `j` of C on (B's columns are offset by the caller).
    unsafe fn sub_c_cols(mut self, j: usize) -> Self {
        // SAFETY: the caller keeps `j` inside C's column range.
        unsafe { self.c.0.ptr = self.c.0.ptr.offset(j as isize * self.c.0.col_stride) };
        self
    }

    /// `m×n×k` on the calling thread with B's columns `col0..col0+n` gathered from `b`.
    unsafe fn run_gather(self, m: usize, n: usize, k: usize, b: &Gather<'_, T>, col0: usize) {
        let nr = self.nr;
        T::with_buffers(|abuf, bbuf| {
            let b_pack = super::aligned(bbuf, T::NC.min(n).div_ceil(nr) * nr * T::KC.min(k));
            // SAFETY: the block's rows and columns lie inside the gather (the caller's range),
            // and `b_pack` was sized for the largest block.
            let pack_block = |jc: usize, pc: usize, kc: usize, nc: usize| unsafe {
                pack_gather(b, pc, kc, col0 + jc, nc, nr, b_pack);
                b_pack as *const T
            };
            // SAFETY: forwarded from the caller's contract.
            unsafe { self.run_blocks(m, n, k, abuf, pack_block) }
        })
    }
}

/// Packs rows `pc..pc+kc`, columns `jc..jc+nc` of `b` into the panel order of
/// `pack::pack_b`, zero-padding the last panel. Columns whose offsets follow one another (an
/// output row at stride 1) are copied as one run.
///
/// # Safety
/// `pc + kc <= b.k()`, `jc + nc <= b.n()`, `nr <= MAX_NR`; `buf` holds `nc.div_ceil(nr)·nr·kc`
/// values.
unsafe fn pack_gather<T: Copy + Default>(
    b: &Gather<'_, T>,
    pc: usize,
    kc: usize,
    jc: usize,
    nc: usize,
    nr: usize,
    buf: *mut T,
) {
    let src = b.src.as_ptr();
    let rows = &b.rows[pc..pc + kc];
    let mut runs = [(0usize, 0usize); MAX_NR];
    for (panel, j0) in (0..nc).step_by(nr).enumerate() {
        let width = nr.min(nc - j0);
        let offs = &b.cols[jc + j0..jc + j0 + width];
        let mut count = 0;
        let mut first = 0;
        for j in 1..=width {
            if j == width || offs[j] != offs[j - 1] + 1 {
                runs[count] = (first, j - first);
                count += 1;
                first = j;
            }
        }
        // SAFETY: every `row + offs[j]` is inside `src` (checked by `Gather::new`); the panel's
        // `kc·nr` slots lie inside `buf` (the caller's contract).
        unsafe {
            let dst_panel = buf.add(panel * nr * kc);
            for (p, &row) in rows.iter().enumerate() {
                let dst = dst_panel.add(p * nr);
                if count * SHORT_RUN > width {
                    // Mostly short runs (strided windows, kernel taps): value by value.
                    let from = src.add(row);
                    for (j, &off) in offs.iter().enumerate() {
                        *dst.add(j) = *from.add(off);
                    }
                } else {
                    for &(at, len) in &runs[..count] {
                        let from = src.add(row + offs[at]);
                        if len >= 8 {
                            std::ptr::copy_nonoverlapping(from, dst.add(at), len);
                        } else {
                            for t in 0..len {
                                *dst.add(at + t) = *from.add(t);
                            }
                        }
                    }
                }
                for j in width..nr {
                    *dst.add(j) = T::default();
                }
            }
        }
    }
}
