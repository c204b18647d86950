//! `ferrograd._ferrograd`: the native module behind the `ferrograd` Python package.
//!
//! This is the only crate that knows PyO3. Python modules (`ferrograd.ndarray`, ...) stay thin and
//! call into the functions and the `NDArray` class exported here.

mod advanced;
mod autograd;
mod convert;
mod errors;
mod indexing;
mod interop;
mod io;
mod ndarray;
mod ndarray_sync;
mod opfunc;
mod profiler;
mod sparse;

pub(crate) use opfunc::attr_value;
mod symbol;

use ferrograd::{random, DType, NDArray, Tracked};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::{enter, is_heavy, IntoPyResult};
use crate::ndarray::PyNDArray;

/// Copies an array-like into a new NDArray (`dtype=None` keeps the source dtype).
#[pyfunction]
#[pyo3(signature = (obj, dtype=None))]
fn _array(obj: &Bound<'_, PyAny>, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<PyNDArray> {
    let dt = dtype.filter(|d| !d.is_none()).map(convert::dtype_from_py).transpose()?;
    Ok(PyNDArray::new(convert::array_from_py(obj, dt)?))
}

fn shape_of(shape: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
    let v: Vec<i64> = match shape.extract::<Vec<i64>>() {
        Ok(v) => v,
        Err(_) => vec![shape.extract::<i64>()?],
    };
    if let Some(d) = v.iter().find(|&&d| d < 0) {
        return Err(errors::to_py(
            shape.py(),
            ferrograd::Error::Value(format!("negative dimension {d} in shape {v:?}")),
        ));
    }
    Ok(v.into_iter().map(|d| d as usize).collect())
}

/// Runs the fused optimizer update `name` writing the weight arrays in place (see
/// `ferrograd::ops::optim::update_in_place`); the optimizers' fast path.
#[pyfunction]
#[pyo3(signature = (name, arrays, **params))]
fn _update_inplace(
    py: Python<'_>,
    name: &str,
    arrays: Vec<PyRef<'_, PyNDArray>>,
    params: Option<&Bound<'_, PyDict>>,
) -> PyResult<()> {
    let mut attrs = ferrograd::ops::Attrs::new(name);
    if let Some(kw) = params {
        for (k, v) in kw.iter() {
            attrs.items.push((k.extract::<String>()?, attr_value(&v)?));
        }
    }
    let xs: Vec<Tracked> = arrays.iter().map(|a| a.tracked().py_err(py)).collect::<PyResult<_>>()?;
    opfunc::update_in_place(py, name, &attrs, &xs)
}

/// An array of `shape` filled with `value`.
#[pyfunction]
fn _full(py: Python<'_>, shape: &Bound<'_, PyAny>, value: f64, dtype: &Bound<'_, PyAny>) -> PyResult<PyNDArray> {
    let (s, dt) = (shape_of(shape)?, convert::dtype_from_py(dtype)?);
    ferrograd::ndarray::checked_numel("full", &s).py_err(py)?;
    Ok(PyNDArray::new(enter(py, is_heavy(s.iter().product()), || NDArray::try_full("full", &s, dt, value))?))
}

#[pyfunction]
fn _random_seed(seed: u64) {
    random::seed(seed);
}

#[pyfunction]
fn _random_uniform(
    py: Python<'_>,
    low: f64,
    high: f64,
    shape: &Bound<'_, PyAny>,
    dtype: &Bound<'_, PyAny>,
) -> PyResult<PyNDArray> {
    let (s, dt) = (shape_of(shape)?, convert::dtype_from_py(dtype)?);
    Ok(PyNDArray::new(enter(py, true, || random::uniform(low, high, &s, dt))?))
}

#[pyfunction]
fn _random_normal(
    py: Python<'_>,
    loc: f64,
    scale: f64,
    shape: &Bound<'_, PyAny>,
    dtype: &Bound<'_, PyAny>,
) -> PyResult<PyNDArray> {
    let (s, dt) = (shape_of(shape)?, convert::dtype_from_py(dtype)?);
    Ok(PyNDArray::new(enter(py, true, || random::normal(loc, scale, &s, dt))?))
}

#[pyfunction]
fn _random_randint(
    py: Python<'_>,
    low: i64,
    high: i64,
    shape: &Bound<'_, PyAny>,
    dtype: &Bound<'_, PyAny>,
) -> PyResult<PyNDArray> {
    let (s, dt) = (shape_of(shape)?, convert::dtype_from_py(dtype)?);
    Ok(PyNDArray::new(enter(py, true, || random::randint(low, high, &s, dt))?))
}

/// Sets NumPy shape semantics for the calling thread; returns the previous setting.
#[pyfunction]
fn _set_np_shape(on: bool) -> bool {
    ferrograd::set_np_shape(on)
}

/// Sets the process-wide NumPy shape switch (all threads); returns the previous setting.
#[pyfunction]
fn _set_np_shape_global(on: bool) -> bool {
    ferrograd::set_np_shape_global(on)
}

#[pyfunction]
fn _np_shape() -> bool {
    ferrograd::np_shape()
}

/// How this build runs: SIMD level and thread count (for bug reports and benchmarks).
#[pyfunction]
fn build_info(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("version", env!("CARGO_PKG_VERSION"))?;
    d.set_item("simd", format!("{:?}", ferrograd_kernels::simd::level()))?;
    d.set_item("threads", ferrograd_kernels::par::num_threads())?;
    d.set_item("debug_assertions", cfg!(debug_assertions))?;
    Ok(d)
}

/// Makes a forked child process run every kernel on its calling thread (rayon's threads stay
/// behind in the parent); registered with `os.register_at_fork`.
#[pyfunction]
fn _after_fork_in_child() {
    ferrograd_kernels::par::run_serially();
}

#[pymodule]
fn _ferrograd(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // The importing thread (Python's main thread) becomes thread 0 of the kernels' pool, so a
    // parallel kernel called from it starts in place instead of waking the pool and sleeping.
    ferrograd_kernels::par::join_pool();
    m.add_class::<PyNDArray>()?;
    opfunc::register(m)?;
    m.add_function(wrap_pyfunction!(errors::_init_errors, m)?)?;
    m.add_function(wrap_pyfunction!(ndarray::_init_context, m)?)?;
    m.add_function(wrap_pyfunction!(_array, m)?)?;
    m.add_function(wrap_pyfunction!(_full, m)?)?;
    m.add_function(wrap_pyfunction!(_update_inplace, m)?)?;
    m.add_function(wrap_pyfunction!(ndarray_sync::_storage_stamp, m)?)?;
    m.add_function(wrap_pyfunction!(_random_seed, m)?)?;
    m.add_function(wrap_pyfunction!(_random_uniform, m)?)?;
    m.add_function(wrap_pyfunction!(_random_normal, m)?)?;
    m.add_function(wrap_pyfunction!(_random_randint, m)?)?;
    m.add_function(wrap_pyfunction!(_set_np_shape, m)?)?;
    m.add_function(wrap_pyfunction!(_set_np_shape_global, m)?)?;
    m.add_function(wrap_pyfunction!(_np_shape, m)?)?;
    m.add_function(wrap_pyfunction!(build_info, m)?)?;
    m.add_function(wrap_pyfunction!(_after_fork_in_child, m)?)?;
    interop::register(m)?;
    autograd::register(m)?;
    symbol::register(m)?;
    io::register(m)?;
    profiler::register(m)?;
    sparse::register(m)?;
    let _ = DType::F32;
    Ok(())
}
