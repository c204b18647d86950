//! ferrograd's own GEMM for f32/f64 on x86-64: BLIS-style blocking (B packed in `KC×NC` blocks,
//! A in `MC×KC` blocks, both in thread-local buffers reused across calls) around AVX-512 or
//! AVX2+FMA micro-kernels chosen at run time.
//!
//! Determinism: the K dimension is blocked by a constant of the element type alone and each
//! output element is summed in one fixed order (see `x86.rs`), so splitting the output over
//! threads (by rows or by columns, never along K) cannot change a bit.

mod gather;
mod pack;
#[cfg(target_arch = "x86_64")]
mod x86;

pub use gather::{gemm_gather, Gather};

use std::cell::RefCell;
use std::sync::OnceLock;

use crate::matmul::Mat;
use crate::par;

/// Instruction sets with a micro-kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    Avx512,
    Avx2,
}

impl Isa {
    /// The best kernel this CPU runs, or `None` (callers then use the `gemm` crate).
    pub fn detect() -> Option<Isa> {
        static DETECTED: OnceLock<Option<Isa>> = OnceLock::new();
        *DETECTED.get_or_init(|| {
            #[cfg(target_arch = "x86_64")]
            {
                if std::arch::is_x86_feature_detected!("avx512f") {
                    return Some(Isa::Avx512);
                }
                if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
                    return Some(Isa::Avx2);
                }
            }
            None
        })
    }

    /// Whether this CPU can run `self`'s kernels.
    pub fn available(self) -> bool {
        matches!((Isa::detect(), self), (Some(Isa::Avx512), _) | (Some(Isa::Avx2), Isa::Avx2))
    }
}

/// Choices a test or bench may force; the default picks both from the CPU and the thread pool.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Kernel instruction set (must be [`Isa::available`]).
    pub isa: Option<Isa>,
    /// Number of output blocks run as parallel tasks (1: the calling thread only).
    pub tasks: Option<usize>,
    /// Compute `Cᵀ = Bᵀ·Aᵀ` (true) or `C = A·B` (false) instead of choosing by cost.
    pub swap: Option<bool>,
}

/// Work (m·n·k) below which GEMM runs on the calling thread: handing work to rayon costs
/// ~5-10 µs, more than a 2-core split saves on products this small.
const PAR_MIN_WORK: usize = 1 << 20;
/// Column blocks per thread once parallel: more than one so a core slowed by other processes
/// hands its share to the other. Row blocks each repack all of B, so those get one per thread.
const TASKS_PER_THREAD: usize = 3;

/// Element types with micro-kernels, and their blocking.
pub trait Packed: Copy + Default + Send + Sync + 'static {
    /// Depth of one packed block (fixed per type: part of the summation order).
    const KC: usize;
    /// Rows of A packed at once (kept in L2).
    const MC: usize;
    /// Columns of B packed at once.
    const NC: usize;
    #[doc(hidden)]
    fn kernel(isa: Isa) -> (Kernel<Self>, usize, usize);
    #[doc(hidden)]
    fn with_buffers<R>(f: impl FnOnce(&mut Vec<Self>, &mut Vec<Self>) -> R) -> R;
}

#[cfg(target_arch = "x86_64")]
type Kernel<T> = x86::MicroKernel<T>;
#[cfg(not(target_arch = "x86_64"))]
type Kernel<T> = unsafe fn(usize, *const T, (isize, isize), *const T, *mut T, (isize, isize), usize, usize, bool);

macro_rules! impl_packed {
    ($t:ty, $kc:expr, $mc:expr, $nc:expr, $avx512:ident, $avx2:ident) => {
        impl Packed for $t {
            const KC: usize = $kc;
            const MC: usize = $mc;
            const NC: usize = $nc;
            fn kernel(isa: Isa) -> (Kernel<Self>, usize, usize) {
                #[cfg(target_arch = "x86_64")]
                {
                    let lanes = 64 / std::mem::size_of::<$t>();
                    match isa {
                        Isa::Avx512 => (x86::$avx512, x86::MR_AVX512, x86::NV_AVX512 * lanes),
                        Isa::Avx2 => (x86::$avx2, x86::MR_AVX2, lanes),
                    }
                }
                #[cfg(not(target_arch = "x86_64"))]
                unreachable!("no micro-kernel for {isa:?} on this architecture")
            }
            fn with_buffers<R>(f: impl FnOnce(&mut Vec<Self>, &mut Vec<Self>) -> R) -> R {
                thread_local! {
                    static BUFFERS: RefCell<(Vec<$t>, Vec<$t>)> = const { RefCell::new((Vec::new(), Vec::new())) };
                }
                BUFFERS.with(|cell| match cell.try_borrow_mut() {
                    Ok(mut bufs) => {
                        let (a, b) = &mut *bufs;
                        f(a, b)
                    }
                    // Re-entered on this thread (not expected): fresh buffers rather than a panic.
                    Err(_) => f(&mut Vec::new(), &mut Vec::new()),
                })
            }
        }
    };
}
// KC·NR·size: one B micro-panel is 16-32 KB (L1); KC·NC·size: one B block is 512 KB (L2).
impl_packed!(f32, 256, 96, 512, f32_avx512, f32_avx2);
impl_packed!(f64, 256, 96, 512, f64_avx512, f64_avx2);

/// `c = a·b` (or `c += a·b` when `accumulate`) with the micro-kernels; `false` (nothing done)
/// when this CPU has none.
///
/// # Safety
/// As [`crate::matmul::GemmElement::gemm_raw`]: every operand valid at every position its
/// strides reach for `m`, `n`, `k`, and `c` overlapping neither `a` nor `b`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemm<T: Packed>(
    m: usize,
    n: usize,
    k: usize,
    c: Mat<*mut T>,
    a: Mat<*const T>,
    b: Mat<*const T>,
    accumulate: bool,
    options: Options,
) -> bool {
    let Some(isa) = options.isa.or_else(Isa::detect) else {
        return false;
    };
    assert!(isa.available(), "GEMM kernel {isa:?} is not supported by this CPU");
    if m == 0 || n == 0 {
        return true;
    }
    let (kernel, mr, nr) = T::kernel(isa);
    if k == 0 {
        if !accumulate {
            // SAFETY: the caller's contract on `c`.
            unsafe { fill_zero(m, n, c) };
        }
        return true;
    }
    // Cᵀ = Bᵀ·Aᵀ is the same product (each element the same sum in the same order): take the
    // orientation that packs less.
    let (m, n, c, a, b) = if swap_pays(m, n, k, c, a, b, options) {
        (n, m, c.transposed(), b.transposed(), a.transposed())
    } else {
        (m, n, c, a, b)
    };
    // Column blocks pack only their own part of B; row blocks each pack all of it.
    let split_rows = n < SPLIT_MIN_COLS && m > n;
    let (len, unit) = if split_rows { (m, mr) } else { (n, nr) };
    let per_thread = if split_rows { 1 } else { TASKS_PER_THREAD };
    let tasks = options.tasks.unwrap_or_else(|| default_threads(m, n, k) * per_thread).clamp(1, len.div_ceil(unit));
    let bound = |t: usize| task_start(t, tasks, len, unit);
    let block = Block { kernel, mr, nr, c: SendMat(c), a: SendMat(a), b: SendMat(b), accumulate };
    let run = |t: usize| {
        let (start, size) = (bound(t), bound(t + 1) - bound(t));
        // SAFETY: task `t` covers rows (or columns) `start..start+size` of C, disjoint from every
        // other task's; its operands are sub-views of the caller's valid ones.
        unsafe {
            if split_rows {
                block.sub_rows(start).run(size, n, k)
            } else {
                block.sub_cols(start).run(m, size, k)
            }
        }
    };
    for_each_task(tasks, run);
    true
}

/// Runs `run(task)` for every task of a product: on this thread for one, else over rayon.
pub(super) fn for_each_task(tasks: usize, run: impl Fn(usize) + Sync + Send) {
    if tasks == 1 {
        run(0);
        return;
    }
    #[cfg(feature = "rayon")]
    {
        use rayon::prelude::*;
        (0..tasks).into_par_iter().for_each(|t| par::in_task(|| run(t)));
    }
    #[cfg(not(feature = "rayon"))]
    (0..tasks).for_each(run);
}

/// `C = 0` (the product of an empty inner dimension).
///
/// # Safety
/// `c` is writable at every `(i, j)`, `i < m`, `j < n`.
unsafe fn fill_zero<T: Default>(m: usize, n: usize, c: Mat<*mut T>) {
    for i in 0..m {
        for j in 0..n {
            // SAFETY: (i, j) is inside C's m×n extent (caller's contract).
            unsafe { *c.ptr.offset(i as isize * c.row_stride + j as isize * c.col_stride) = T::default() };
        }
    }
}

/// Where task `t` of `tasks` starts in `0..len` (and `t = tasks` ends): at whole `unit`s, task
/// sizes differing by at most one unit and the larger ones spread out, so rayon's halving of the
/// task range hands each thread an equal share (a short last block would not).
fn task_start(t: usize, tasks: usize, len: usize, unit: usize) -> usize {
    (t * len.div_ceil(unit) / tasks * unit).min(len)
}

/// Outputs narrower than this are split over threads by rows.
const SPLIT_MIN_COLS: usize = 256;

/// Whether computing `Cᵀ = Bᵀ·Aᵀ` costs less. Relative costs per element (measured on Zen 4):
/// packing B's side is a copy (2) when its rows are contiguous, a tiled transpose (3) when its
/// columns are, a gather (6) otherwise; A's side is read in place (0) when one of its strides is
/// 1, else gathered (6); a C whose rows are not contiguous goes through the kernels' edge path,
/// value by value, once per K block (12).
fn swap_pays<T: Packed>(
    m: usize,
    n: usize,
    k: usize,
    c: Mat<*mut T>,
    a: Mat<*const T>,
    b: Mat<*const T>,
    options: Options,
) -> bool {
    if let Some(swap) = options.swap {
        return swap;
    }
    let pack = |x: Mat<*const T>, elems: usize| match (x.col_stride == 1, x.row_stride == 1) {
        (true, _) => 2 * elems,
        (false, true) => 3 * elems,
        (false, false) => 6 * elems,
    };
    let in_place = |x: Mat<*const T>, elems: usize| if x.row_stride == 1 || x.col_stride == 1 { 0 } else { 6 * elems };
    let store = |contiguous: bool| if contiguous { 0 } else { 12 * m * n * k.div_ceil(T::KC) };
    let normal = pack(b, k * n) + in_place(a, m * k) + store(c.col_stride == 1);
    let swapped = pack(a.transposed(), k * m) + in_place(b, n * k) + store(c.row_stride == 1);
    swapped < normal
}

/// Threads for an `m×n×k` product under the current pool: 1 for small products, nested calls
/// (already inside a parallel task) and narrow outputs.
fn default_threads(m: usize, n: usize, k: usize) -> usize {
    let threads = par::num_threads();
    if threads > 1 && !par::in_worker() && m * n * k >= PAR_MIN_WORK && m.min(n) >= 32 {
        threads
    } else {
        1
    }
}

/// A strided operand that tasks on other threads may read (or, for C, write disjoint parts of).
#[derive(Clone, Copy)]
struct SendMat<P>(Mat<P>);
// SAFETY: tasks only read `a`/`b` and write disjoint row or column ranges of `c`, and the call
// that creates them waits for all of them before returning (the caller's borrows outlive them).
unsafe impl<P> Send for SendMat<P> {}
// SAFETY: as for Send.
unsafe impl<P> Sync for SendMat<P> {}

/// One single-threaded product over sub-views of the operands.
#[derive(Clone, Copy)]
struct Block<T> {
    kernel: Kernel<T>,
    mr: usize,
    nr: usize,
    c: SendMat<*mut T>,
    a: SendMat<*const T>,
    b: SendMat<*const T>,
    accumulate: bool,
}

impl<T: Packed> Block<T> {
    /// The same product from row `i` of A and C on.
    unsafe fn sub_rows(mut self, i: usize) -> Self {
        // SAFETY: the caller keeps `i` inside the operands' row range.
        unsafe {
            self.a.0.ptr = self.a.0.ptr.offset(i as isize * self.a.0.row_stride);
            self.c.0.ptr = self.c.0.ptr.offset(i as isize * self.c.0.row_stride);
        }
        self
    }

    /// The same product from column `j` of B and C on.
    unsafe fn sub_cols(mut self, j: usize) -> Self {
        // SAFETY: the caller keeps `j` inside the operands' column range.
        unsafe {
            self.b.0.ptr = self.b.0.ptr.offset(j as isize * self.b.0.col_stride);
            self.c.0.ptr = self.c.0.ptr.offset(j as isize * self.c.0.col_stride);
        }
        self
    }

    /// `m×n×k` on the calling thread: loops over NC columns, KC depths, MC rows, then tiles.
    unsafe fn run(self, m: usize, n: usize, k: usize) {
        let (nr, b) = (self.nr, self.b.0);
        T::with_buffers(|abuf, bbuf| {
            let b_pack = aligned(bbuf, T::NC.min(n).div_ceil(nr) * nr * T::KC.min(k));
            // SAFETY: the block at (pc, jc) lies inside the k×n B the caller vouched for, and
            // `b_pack` was sized for the largest block.
            let pack_block = |jc: usize, pc: usize, kc: usize, nc: usize| unsafe {
                let blk = Mat { ptr: b.ptr.offset(pc as isize * b.row_stride + jc as isize * b.col_stride), ..b };
                pack::pack_b(blk, kc, nc, nr, b_pack);
                b_pack as *const T
            };
            // SAFETY: forwarded from the caller's contract.
            unsafe { self.run_blocks(m, n, k, abuf, pack_block) }
        })
    }

    /// The blocked loops of [`Self::run`], with B's packed `kc×nc` block at `(pc, jc)` given by
    /// `b_block(jc, pc, kc, nc)` (packed now, or once for many products: [`PackedB`]).
    unsafe fn run_blocks(
        self,
        m: usize,
        n: usize,
        k: usize,
        abuf: &mut Vec<T>,
        mut b_block: impl FnMut(usize, usize, usize, usize) -> *const T,
    ) {
        let (mr, nr) = (self.mr, self.nr);
        let (a, c) = (self.a.0, self.c.0);
        let a_pack = aligned(abuf, T::MC.min(m).div_ceil(mr) * mr * T::KC.min(k));
        for jc in (0..n).step_by(T::NC) {
            let nc = T::NC.min(n - jc);
            for pc in (0..k).step_by(T::KC) {
                let kc = T::KC.min(k - pc);
                let add_to_c = self.accumulate || pc > 0;
                let b_pack = b_block(jc, pc, kc, nc);
                // SAFETY: every index below stays inside the m×n×k problem the caller
                // vouched for; the packed buffers hold the whole block.
                unsafe {
                    for ic in (0..m).step_by(T::MC) {
                        let mc = T::MC.min(m - ic);
                        let a_blk =
                            Mat { ptr: a.ptr.offset(ic as isize * a.row_stride + pc as isize * a.col_stride), ..a };
                        // A row- or column-major A is read in place (packing it would be a
                        // transpose or a plain copy); other strides and the last, partial
                        // panel are packed.
                        let direct = a.row_stride == 1 || a.col_stride == 1;
                        let full = if direct { mc / mr * mr } else { 0 };
                        if full < mc {
                            let rest = Mat { ptr: a_blk.ptr.offset(full as isize * a.row_stride), ..a };
                            pack::pack_b(rest.transposed(), kc, mc - full, mr, a_pack);
                        }
                        for ir in (0..mc).step_by(mr) {
                            for (jp, jr) in (0..nc).step_by(nr).enumerate() {
                                let bp = b_pack.add(jp * nr * kc);
                                let cp =
                                    c.ptr.offset((ic + ir) as isize * c.row_stride + (jc + jr) as isize * c.col_stride);
                                let (ap, steps) = if ir < full {
                                    (a_blk.ptr.offset(ir as isize * a.row_stride), (a.row_stride, a.col_stride))
                                } else {
                                    (a_pack.add((ir - full) * kc) as *const T, (1, mr as isize))
                                };
                                (self.kernel)(
                                    kc,
                                    ap,
                                    steps,
                                    bp,
                                    cp,
                                    (c.row_stride, c.col_stride),
                                    mr.min(mc - ir),
                                    nr.min(nc - jr),
                                    add_to_c,
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}

/// A right operand packed once for many products `C = A·B` with the same `B` (an RNN's
/// recurrent weights, used at every time step): the products skip packing B, and each element
/// is the same sum, in the same order, as [`gemm`] gives.
pub struct PackedB<T> {
    k: usize,
    n: usize,
    kernel: Kernel<T>,
    mr: usize,
    nr: usize,
    /// The `kc×nc` blocks in the order the products visit them (by NC columns, then KC depths).
    blocks: Vec<T>,
    /// Where each block starts in `blocks`, in the same order.
    starts: Vec<usize>,
}

impl<T: Packed> PackedB<T> {
    /// Packs the `k×n` matrix `b`; `None` when this CPU has no micro-kernel.
    ///
    /// # Safety
    /// `b` is readable at every `(p, j)` with `p < k`, `j < n`.
    pub unsafe fn new(k: usize, n: usize, b: Mat<*const T>) -> Option<Self> {
        let (kernel, mr, nr) = T::kernel(Isa::detect()?);
        let mut starts = Vec::new();
        let mut len = 0;
        for jc in (0..n).step_by(T::NC) {
            for pc in (0..k).step_by(T::KC) {
                starts.push(len);
                len += T::NC.min(n - jc).div_ceil(nr) * nr * T::KC.min(k - pc);
            }
        }
        // Blocks start 64-byte aligned, as the per-product buffers do.
        let slack = 64 / std::mem::size_of::<T>();
        let mut blocks = vec![T::default(); len + slack];
        let base = blocks.as_ptr().align_offset(64).min(slack);
        starts.iter_mut().for_each(|s| *s += base);
        let mut at = starts.iter();
        for jc in (0..n).step_by(T::NC) {
            let nc = T::NC.min(n - jc);
            for pc in (0..k).step_by(T::KC) {
                let kc = T::KC.min(k - pc);
                let start = at.next().copied().unwrap_or(base);
                // SAFETY: the block lies inside `b` (caller's contract); its `nc·kc` slots (rounded
                // up to whole panels) were counted into `blocks` above.
                unsafe {
                    let blk = Mat { ptr: b.ptr.offset(pc as isize * b.row_stride + jc as isize * b.col_stride), ..b };
                    pack::pack_b(blk, kc, nc, nr, blocks.as_mut_ptr().add(start))
                };
            }
        }
        Some(PackedB { k, n, kernel, mr, nr, blocks, starts })
    }

    /// `c = a·B` (or `c += a·B`) for an `m×k` `a`, on the calling thread (callers that want
    /// threads split the rows of `a` and `c`).
    ///
    /// # Safety
    /// `a` is readable at every `(i, p)`, `i < m`, `p < k`; `c` writable at every `(i, j)`,
    /// `j < n`, overlapping neither `a` nor the packed operand.
    pub unsafe fn gemm(&self, m: usize, c: Mat<*mut T>, a: Mat<*const T>, accumulate: bool) {
        if m == 0 || self.n == 0 || self.k == 0 {
            if !accumulate {
                // SAFETY: the caller's contract on `c`.
                unsafe { fill_zero(m, self.n, c) };
            }
            return;
        }
        let b = Mat { ptr: self.blocks.as_ptr(), row_stride: 0, col_stride: 0 };
        let block = Block {
            kernel: self.kernel,
            mr: self.mr,
            nr: self.nr,
            c: SendMat(c),
            a: SendMat(a),
            b: SendMat(b),
            accumulate,
        };
        let mut next = self.starts.iter();
        // The loops visit the blocks in packing order.
        let b_block = |_: usize, _: usize, _: usize, _: usize| {
            let start = next.next().copied().unwrap_or(0);
            // SAFETY: `start` is a block's offset inside `blocks`.
            unsafe { self.blocks.as_ptr().add(start) }
        };
        T::with_buffers(|abuf, _| {
            // SAFETY: forwarded from the caller's contract; the blocks cover the k×n operand.
            unsafe { block.run_blocks(m, self.n, self.k, abuf, b_block) }
        })
    }
}

/// Gives the calling thread and every thread of the pool their packing buffers at the largest
/// block size now. Buffers otherwise grow on a thread's first (or first larger) block, and which
/// thread takes which block depends on scheduling; after this, no product allocates on any
/// thread. For callers that must not allocate later (and tests that count allocations).
pub fn prepare_threads() {
    fn full<T: Packed>() {
        let Some(isa) = Isa::detect() else { return };
        let (_, mr, nr) = T::kernel(isa);
        T::with_buffers(|a, b| {
            aligned(a, T::MC.div_ceil(mr) * mr * T::KC);
            aligned(b, T::NC.div_ceil(nr) * nr * T::KC);
        });
    }
    let both = || {
        full::<f32>();
        full::<f64>();
    };
    both();
    #[cfg(feature = "rayon")]
    rayon::broadcast(|_| both());
}

/// A 64-byte-aligned pointer to `len` values inside `buf` (grown as needed, never shrunk).
fn aligned<T: Default + Clone>(buf: &mut Vec<T>, len: usize) -> *mut T {
    let slack = 64 / std::mem::size_of::<T>();
    if buf.len() < len + slack {
        buf.resize(len + slack, T::default());
    }
    let off = buf.as_ptr().align_offset(64).min(slack);
    // SAFETY: off ≤ slack, so `off + len` ≤ buf.len().
    unsafe { buf.as_mut_ptr().add(off) }
}

#[cfg(test)]
mod tests {
    use super::task_start;

    #[test]
    fn tasks_cover_c_in_near_equal_tile_ranges() {
        for (len, unit) in [(784usize, 32usize), (512, 32), (147, 32), (3136, 32), (576, 8), (1, 8), (130, 6)] {
            for tasks in 1..=len.div_ceil(unit) {
                let starts: Vec<usize> = (0..=tasks).map(|t| task_start(t, tasks, len, unit)).collect();
                assert_eq!((starts[0], starts[tasks]), (0, len));
                let sizes: Vec<usize> = starts.windows(2).map(|w| w[1] - w[0]).collect();
                assert!(starts[..tasks].iter().all(|s| s % unit == 0), "{len}/{unit}/{tasks}: {starts:?}");
                let units: Vec<usize> = sizes.iter().map(|s| s.div_ceil(unit)).collect();
                let (lo, hi) = (units.iter().min().unwrap(), units.iter().max().unwrap());
                assert!(*lo >= 1 && hi - lo <= 1, "{len}/{unit}/{tasks}: {sizes:?}");
            }
        }
        // Six tasks on 784 columns: each half of the range (one per thread under rayon's split)
        // gets 12 or 13 of the 25 tiles, not 10 and 15.
        let half = |tasks: usize| task_start(tasks / 2, tasks, 784, 32);
        assert_eq!(half(6), 384);
    }
}
