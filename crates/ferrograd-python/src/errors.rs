//! The one place where native failures become Python exceptions.
//!
//! Error kinds map to classes defined in `ferrograd.base` (`MXNetError(RuntimeError)` and its
//! ValueError/TypeError/IndexError subclasses), handed over once when `ferrograd.base` is imported
//! (`_init_errors`; looked up on first use if a native error could ever come earlier).
//! Every native entry point that runs core code goes through the one guard, [`enter`] (which also
//! decides whether to release the GIL) or its GIL-holding form [`enter_with_gil`]; only trivial
//! accessors that cannot panic (thread-local flags, a shape, a length) call the core directly.

use std::panic::{catch_unwind, AssertUnwindSafe};

use ferrograd::Error;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

static CLASSES: PyOnceLock<[Py<PyType>; 6]> = PyOnceLock::new();

fn classes(py: Python<'_>) -> PyResult<&[Py<PyType>; 6]> {
    CLASSES.get_or_try_init(py, || {
        let base = py.import("ferrograd.base")?;
        let get = |n: &str| -> PyResult<Py<PyType>> { Ok(base.getattr(n)?.cast_into::<PyType>()?.unbind()) };
        Ok([
            get("MXNetError")?,
            get("ShapeError")?,
            get("DTypeError")?,
            get("IndexError_")?,
            get("ValueError_")?,
            get("MemoryError_")?,
        ])
    })
}

/// Receives the exception classes from `ferrograd.base` at its import.
#[pyfunction]
pub fn _init_errors(
    py: Python<'_>,
    mxnet: Py<PyType>,
    shape: Py<PyType>,
    dtype: Py<PyType>,
    index: Py<PyType>,
    value: Py<PyType>,
    memory: Py<PyType>,
) {
    // A second import (a reload) keeps the first classes: errors already raised stay catchable.
    let _ = CLASSES.set(py, [mxnet, shape, dtype, index, value, memory]);
}

/// Converts a native error to the matching `ferrograd.base` exception.
pub fn to_py(py: Python<'_>, e: Error) -> PyErr {
    let Ok(c) = classes(py) else {
        return PyRuntimeError::new_err(e.to_string());
    };
    let cls = match &e {
        Error::Runtime(_) => &c[0],
        Error::Shape(_) => &c[1],
        Error::DType(_) | Error::Type(_) => &c[2],
        Error::Index(_) => &c[3],
        Error::Value(_) => &c[4],
        Error::Memory(_) => &c[5],
    };
    PyErr::from_type(cls.bind(py).clone(), e.to_string())
}

/// Extension: `result.py_err(py)?`.
pub trait IntoPyResult<T> {
    fn py_err(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for Result<T, Error> {
    fn py_err(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py(py, e))
    }
}

/// Work (elements) above which a single-op call releases the GIL: the same threshold at which
/// kernels go parallel, since below it releasing costs more than it frees.
pub fn is_heavy(elems: usize) -> bool {
    elems >= ferrograd_kernels::par::PAR_MIN_ELEMS
}

/// Whether a backward (or `grad`, or a history walk) from `heads` has a recorded graph to walk:
/// some head is the output of a recorded op. The size of the heads says nothing about that work
/// (a loss is a scalar at the end of the whole forward), and the core exposes no measure of a
/// graph's size; a walk through even one recorded node (graph traversal, gradient kernels,
/// accumulation) costs far more than releasing the GIL (~100 ns), so any history releases it.
pub fn has_history(heads: &[ferrograd::Tracked]) -> bool {
    heads.iter().any(|h| h.entry().is_some_and(|e| !e.is_variable()))
}

/// A failure the guard turns into a Python exception: a native [`Error`] (mapped to its
/// `ferrograd.base` class) or an already-built Python exception (passed through unchanged), so
/// entry points that mix Python calls with core calls can run entirely inside the guard.
pub trait Raise {
    fn raise(self, py: Python<'_>) -> PyErr;
}

impl Raise for Error {
    fn raise(self, py: Python<'_>) -> PyErr {
        to_py(py, self)
    }
}

impl Raise for PyErr {
    fn raise(self, _py: Python<'_>) -> PyErr {
        self
    }
}

/// The guard every native entry point runs core code through: releases the GIL when `release`
/// (the caller's estimate of the callee's real work says it is worth it), and turns a returned
/// error or a panic into a Python exception (a panic is a ferrograd bug, reported as `MXNetError`,
/// never PanicException).
///
/// With the GIL released `f` must not touch Python objects: callers clone the arrays they need out
/// of their `PyRef`s and drop the borrows before calling.
pub fn enter<T: Send>(py: Python<'_>, release: bool, f: impl FnOnce() -> Result<T, Error> + Send) -> PyResult<T> {
    let guarded = || catch_unwind(AssertUnwindSafe(f));
    let r = if release { py.detach(guarded) } else { guarded() };
    settle(py, r)
}

/// [`enter`] keeping the GIL: for short core calls, and for work that calls back into Python or
/// holds Python objects (it needs no `Send`). `f` may fail with a native [`Error`] or a `PyErr`.
pub fn enter_with_gil<T, E: Raise>(py: Python<'_>, f: impl FnOnce() -> Result<T, E>) -> PyResult<T> {
    settle(py, catch_unwind(AssertUnwindSafe(f)))
}

fn settle<T, E: Raise>(py: Python<'_>, r: std::thread::Result<Result<T, E>>) -> PyResult<T> {
    match r {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(e.raise(py)),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(to_py(py, Error::Runtime(format!("internal error in ferrograd (please report): {msg}"))))
        }
    }
}
