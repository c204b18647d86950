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

/// Set once the global pool has taken in the thread that built it (see [`join_pool`]).
static CALLER_IN_POOL: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

thread_local! {
    /// Whether this thread is running a task of one of this module's parallel loops.
    static IN_TASK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Makes the calling thread (a program's main thread) thread 0 of rayon's global pool, with
/// the usual thread count (`RAYON_NUM_THREADS`, else one per logical CPU). Its parallel loops
/// then start in place: the thread runs a share of the tasks itself, while the others are
/// handed to the rest of the pool, and it takes back any task a worker has not picked up yet.
/// Outside the pool, a loop is handed over whole and the caller sleeps until it is done, which
/// on a virtual machine costs 0.1-0.2 ms of waking threads per loop (measured on a 2-core KVM
/// guest: an empty two-task loop 28 µs back to back, 120-230 µs after 0.2-5 ms of serial work;
/// mostly under 40 µs from inside the pool). Does nothing (`false`) when the global pool
/// already exists, when it would have one thread, or when `FERROGRAD_JOIN_POOL=0` keeps the
/// caller outside it.
pub fn join_pool() -> bool {
    #[cfg(feature = "rayon")]
    {
        if SERIAL_ONLY.load(std::sync::atomic::Ordering::Relaxed)
            || std::env::var("FERROGRAD_JOIN_POOL").is_ok_and(|v| v.trim() == "0")
        {
            return false;
        }
        // rayon's own default count. With one thread the caller would be the whole pool, and a
        // loop handed in from another thread would wait until the caller next entered it.
        let threads = std::env::var("RAYON_NUM_THREADS")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        if threads < 2 {
            return false;
        }
        let joined = rayon::ThreadPoolBuilder::new().num_threads(threads).use_current_thread().build_global().is_ok();
        if joined {
            CALLER_IN_POOL.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        joined
    }
    #[cfg(not(feature = "rayon"))]
    {
        false
    }
}

/// Runs `f` as a task of a parallel loop: kernels it calls stay serial (see [`in_worker`]).
pub fn in_task<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            IN_TASK.with(|t| t.set(self.0));
        }
    }
    let _restore = Restore(IN_TASK.with(|t| t.replace(true)));
    f()
}

/// True inside a parallel task (or on a rayon worker thread): nested work stays serial. The
/// thread taken into the pool by [`join_pool`] is a worker only while it runs a task.
pub fn in_worker() -> bool {
    #[cfg(feature = "rayon")]
    {
        IN_TASK.with(|t| t.get())
            || match rayon::current_thread_index() {
                Some(0) => !CALLER_IN_POOL.load(std::sync::atomic::Ordering::Relaxed),
                Some(_) => true,
                None => false,
            }
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
        out.par_chunks_mut(chunk).enumerate().for_each(|(i, c)| in_task(|| f(i * chunk, c)));
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
        out.par_chunks_mut(chunk).enumerate().for_each(|(i, c)| in_task(|| f(i * chunk, c)));
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
            return (0..n_tasks).into_par_iter().map(|t| in_task(|| f(t))).collect();
        }
    }
    (0..n_tasks).map(f).collect()
}

/// Chunk length for `n` elements: fixed by size alone (never by thread count).
pub fn chunk_len(n: usize, cost: Cost) -> usize {
    cost.chunk().min(n.max(1))
}
