//! The one parallel policy.
//!
//! Work below [`PAR_MIN_ELEMS`] (scaled by a per-kernel [`Cost`]) runs on the calling thread, so small
//! tensors never touch rayon. Above it, work is split into chunks whose boundaries depend only on
//! the problem size, never on the thread count: results are identical for any `RAYON_NUM_THREADS`.
//! Building without the `rayon` feature makes everything sequential.

/// Elements of cheap elementwise work below which a kernel stays on the calling thread.
///
/// Measured on the project's 2-core AVX-512 machine: handing work to rayon's workers costs
/// ~5-10 µs (wake-up), while a vectorised add does ~8 elements/ns in cache, so splitting pays only
/// from ~100K elements (at 32K, two threads were 2x slower than one).
pub const PAR_MIN_ELEMS: usize = 1 << 17;
/// Elements per task once parallel.
pub const CHUNK_ELEMS: usize = 1 << 15;

/// Relative cost of one element of work; heavier kernels go parallel at smaller sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cost {
    /// Memory-bound: add, copy, compare (one output per element).
    Light,
    /// Transcendentals and other compute-bound element work.
    Heavy,
    /// Reading an element into an accumulator (contiguous reductions): ~4x cheaper than Light.
    Read,
}

impl Cost {
    /// Elements of work from which going parallel pays off.
    pub fn min_parallel(self) -> usize {
        match self {
            Cost::Light => PAR_MIN_ELEMS,
            // exp: ~3.5 elements/ns on one core, so ~28 µs of work.
            Cost::Heavy => PAR_MIN_ELEMS / 4 * 3,
            Cost::Read => PAR_MIN_ELEMS * 4,
        }
    }

    fn chunk(self) -> usize {
        match self {
            Cost::Light | Cost::Read => CHUNK_ELEMS,
            Cost::Heavy => CHUNK_ELEMS / 4,
        }
    }
}

/// Whether `n` elements of work at `cost` are worth running on rayon.
pub fn is_parallel(n: usize, cost: Cost) -> bool {
    cfg!(feature = "rayon") && n >= cost.min_parallel() && num_threads() > 1
}

/// Set in a process forked from one whose rayon pool had started: the pool's threads do not
/// survive `fork`, so handing work to them would wait forever.
static SERIAL_ONLY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Runs every kernel on the calling thread from now on (called in a forked child process).
pub fn run_serially() {
    SERIAL_ONLY.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Threads in the pool that parallel kernels use (1 after [`run_serially`]).
pub fn num_threads() -> usize {
    #[cfg(feature = "rayon")]
    {
        if SERIAL_ONLY.load(std::sync::atomic::Ordering::Relaxed) {
            return 1;
        }
        rayon::current_num_threads()
    }
    #[cfg(not(feature = "rayon"))]
    {
        1
    }
}

/// True on one of rayon's worker threads (inside a parallel task): nested work stays serial.
pub fn in_worker() -> bool {
    #[cfg(feature = "rayon")]
    {
        rayon::current_thread_index().is_some()
    }
    #[cfg(not(feature = "rayon"))]
    {
        false
    }
}

/// Calls `f(start, chunk)` over `out` split into fixed-size chunks, in parallel when worth it.
pub fn for_each_chunk<T: Send>(out: &mut [T], cost: Cost, f: impl Fn(usize, &mut [T]) + Sync + Send) {
    let n = out.len();
    if !is_parallel(n, cost) {
        f(0, out);
        return;
    }
    let chunk = chunk_len(n, cost);
    #[cfg(feature = "rayon")]
    {
        use rayon::prelude::*;
        out.par_chunks_mut(chunk).enumerate().for_each(|(i, c)| f(i * chunk, c));
    }
    #[cfg(not(feature = "rayon"))]
    {
        out.chunks_mut(chunk).enumerate().for_each(|(i, c)| f(i * chunk, c));
    }
}

/// Like [`for_each_chunk`] for items that each cost `work` elements (e.g. one reduction output
/// over `work` inputs): parallel when the total work is worth it, chunks of about
/// [`CHUNK_ELEMS`] elements of work. Items must not depend on how they are chunked.
pub fn for_each_chunk_weighted<T: Send>(
    out: &mut [T],
    work: usize,
    cost: Cost,
    f: impl Fn(usize, &mut [T]) + Sync + Send,
) {
    let (n, work) = (out.len(), work.max(1));
    if n < 2 || !is_parallel(n.saturating_mul(work), cost) {
        f(0, out);
        return;
    }
    let chunk = (CHUNK_ELEMS / work).clamp(1, n);
    #[cfg(feature = "rayon")]
    {
        use rayon::prelude::*;
        out.par_chunks_mut(chunk).enumerate().for_each(|(i, c)| f(i * chunk, c));
    }
    #[cfg(not(feature = "rayon"))]
    {
        out.chunks_mut(chunk).enumerate().for_each(|(i, c)| f(i * chunk, c));
    }
}

/// Maps `n_tasks` independent tasks to results in task order, in parallel when `total_work`
/// (elements) at `cost` is worth it.
pub fn map_tasks<R: Send>(
    n_tasks: usize,
    total_work: usize,
    cost: Cost,
    f: impl Fn(usize) -> R + Sync + Send,
) -> Vec<R> {
    if n_tasks > 1 && is_parallel(total_work, cost) {
        #[cfg(feature = "rayon")]
        {
            use rayon::prelude::*;
            return (0..n_tasks).into_par_iter().map(f).collect();
        }
    }
    (0..n_tasks).map(f).collect()
}

/// Chunk length for `n` elements: fixed by size alone (never by thread count).
pub fn chunk_len(n: usize, cost: Cost) -> usize {
    cost.chunk().min(n.max(1))
}
