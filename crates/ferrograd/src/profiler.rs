//! A per-operator profiler: while it runs, every operator call (imperative or in an executor)
//! is recorded with its start and duration, for `mx.profiler`'s aggregate table and trace file.
//!
//! Off by default; when off, an operator pays one relaxed atomic load. Events from user code
//! (`mx.profiler.Task`, `Frame`, ...) are added through [`record`].

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

static RUNNING: AtomicBool = AtomicBool::new(false);
static EVENTS: Mutex<Vec<Event>> = Mutex::new(Vec::new());

/// One timed interval.
#[derive(Clone, Debug)]
pub struct Event {
    pub name: Cow<'static, str>,
    /// The table it is aggregated under (`operator` for ops).
    pub category: Cow<'static, str>,
    /// Nanoseconds since the profiler's epoch (the first use in this process).
    pub start_ns: u64,
    pub duration_ns: u64,
    /// A small per-thread number (the trace's `tid`).
    pub thread: u64,
}

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Nanoseconds since the profiler's epoch.
pub fn now_ns() -> u64 {
    epoch().elapsed().as_nanos() as u64
}

fn thread_number() -> u64 {
    use std::sync::atomic::AtomicU64;
    static NEXT: AtomicU64 = AtomicU64::new(0);
    thread_local!(static ID: u64 = NEXT.fetch_add(1, Ordering::Relaxed));
    ID.with(|id| *id)
}

/// Starts or stops recording.
pub fn set_running(on: bool) {
    epoch();
    RUNNING.store(on, Ordering::Relaxed);
}

pub fn is_running() -> bool {
    RUNNING.load(Ordering::Relaxed)
}

/// Adds one event (recorded whether or not the profiler runs: the caller decides).
pub fn record(name: Cow<'static, str>, category: Cow<'static, str>, start_ns: u64, duration_ns: u64) {
    let event = Event { name, category, start_ns, duration_ns, thread: thread_number() };
    // A poisoned lock only means another thread panicked mid-push; the list is still valid.
    EVENTS.lock().unwrap_or_else(|e| e.into_inner()).push(event);
}

/// The events recorded so far, oldest first; `reset` empties the list.
pub fn events(reset: bool) -> Vec<Event> {
    let mut guard = EVENTS.lock().unwrap_or_else(|e| e.into_inner());
    if reset {
        std::mem::take(&mut *guard)
    } else {
        guard.clone()
    }
}

/// Times `f` as one call of the operator `name` when the profiler runs.
#[inline]
pub fn time_op<R>(name: &'static str, f: impl FnOnce() -> R) -> R {
    if !is_running() {
        return f();
    }
    let start = now_ns();
    let out = f();
    record(Cow::Borrowed(name), Cow::Borrowed("operator"), start, now_ns().saturating_sub(start));
    out
}
