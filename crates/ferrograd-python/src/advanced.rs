//! Advanced indexing (integer arrays, boolean masks).

use ferrograd::{Error, NDArray};
use pyo3::prelude::*;

use crate::errors::to_py;
use crate::ndarray::PyNDArray;

/// `x[key]` for keys that are not basic.
pub fn getitem(py: Python<'_>, _x: &NDArray, key: &Bound<'_, PyAny>) -> PyResult<NDArray> {
    Err(to_py(py, Error::Index(format!("unsupported index {}", key.repr()?))))
}

/// `x[key] = src` for keys that are not basic.
pub fn setitem(slf: &Bound<'_, PyNDArray>, key: &Bound<'_, PyAny>, _src: &NDArray) -> PyResult<()> {
    Err(to_py(slf.py(), Error::Index(format!("unsupported index {}", key.repr()?))))
}
