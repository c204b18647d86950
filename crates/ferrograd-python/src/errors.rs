//! The one place where native failures become Python exceptions.
//!
//! Error kinds map to classes defined in `ferrograd.base` (`MXNetError(RuntimeError)` and its
//! ValueError/TypeError/IndexError subclasses). Every native call that can fail or panic goes
//! through [`enter`], which also decides whether to release the GIL.

use std::panic::{catch_unwind, AssertUnwindSafe};

use ferrograd::Error;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

static CLASSES: PyOnceLock<[Py<PyType>; 5]> = PyOnceLock::new();

fn classes(py: Python<'_>) -> PyResult<&[Py<PyType>; 5]> {
    CLASSES.get_or_try_init(py, || {
        let base = py.import("ferrograd.base")?;
        let get = |n: &str| -> PyResult<Py<PyType>> { Ok(base.getattr(n)?.cast_into::<PyType>()?.unbind()) };
        Ok([get("MXNetError")?, get("ShapeError")?, get("DTypeError")?, get("IndexError_")?, get("ValueError_")?])
    })
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

/// Work (elements) above which a native call releases the GIL: the same threshold at which
/// kernels go parallel, since below it releasing costs more than it frees.
pub fn is_heavy(elems: usize) -> bool {
    elems >= ferrograd_kernels::par::PAR_MIN_ELEMS
}

/// Runs native work: releases the GIL when `heavy`, and turns a returned error or a panic into a
/// Python exception (a panic is a ferrograd bug, reported as `MXNetError`, never PanicException).
pub fn enter<T: Send>(py: Python<'_>, heavy: bool, f: impl FnOnce() -> Result<T, Error> + Send) -> PyResult<T> {
    let guarded = || catch_unwind(AssertUnwindSafe(f));
    let r = if heavy { py.detach(guarded) } else { guarded() };
    settle(py, r)
}

/// [`enter`] for work that calls back into Python (it keeps the GIL, so needs no `Send`).
pub fn enter_with_gil<T>(py: Python<'_>, f: impl FnOnce() -> Result<T, Error>) -> PyResult<T> {
    settle(py, catch_unwind(AssertUnwindSafe(f)))
}

fn settle<T>(py: Python<'_>, r: std::thread::Result<Result<T, Error>>) -> PyResult<T> {
    match r {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(to_py(py, e)),
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
