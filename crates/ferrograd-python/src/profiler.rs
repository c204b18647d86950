//! `mx.profiler`'s native side: switching the operator profiler and reading its events.

use std::borrow::Cow;

use ferrograd::profiler;
use pyo3::prelude::*;

/// One event as `(name, category, start_ns, duration_ns, thread)`.
type EventRow = (String, String, u64, u64, u64);

/// Starts (`True`) or stops (`False`) timing every operator call.
#[pyfunction]
fn _profiler_set_running(on: bool) {
    profiler::set_running(on);
}

/// Nanoseconds on the profiler's clock (the events' time base).
#[pyfunction]
fn _profiler_now_ns() -> u64 {
    profiler::now_ns()
}

/// Adds one event from user code (`Task`, `Frame`, `Event`, `Marker`).
#[pyfunction]
fn _profiler_record(name: String, category: String, start_ns: u64, duration_ns: u64) {
    profiler::record(Cow::Owned(name), Cow::Owned(category), start_ns, duration_ns);
}

/// The events recorded so far, oldest first; `reset` empties the list.
#[pyfunction]
#[pyo3(signature = (reset=false))]
fn _profiler_events(reset: bool) -> Vec<EventRow> {
    profiler::events(reset)
        .into_iter()
        .map(|e| (e.name.into_owned(), e.category.into_owned(), e.start_ns, e.duration_ns, e.thread))
        .collect()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_profiler_set_running, m)?)?;
    m.add_function(wrap_pyfunction!(_profiler_now_ns, m)?)?;
    m.add_function(wrap_pyfunction!(_profiler_record, m)?)?;
    m.add_function(wrap_pyfunction!(_profiler_events, m)?)?;
    Ok(())
}
