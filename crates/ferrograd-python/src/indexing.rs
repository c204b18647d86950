//! `x[key]` and `x[key] = value`: Python keys parsed into basic index arguments.

use ferrograd::ops::shape::BasicIndex;
use ferrograd::{np_shape, Error, NDArray, SliceArg};
use pyo3::prelude::*;
use pyo3::types::{PyEllipsis, PyNone, PySlice, PyTuple};

use crate::convert;
use crate::errors::{enter, is_heavy, to_py};
use crate::ndarray::{run_op, PyNDArray};

/// A key of ints, slices, `...` and `None` as basic index arguments (Ellipsis expanded).
fn basic_args(key: &Bound<'_, PyAny>, ndim: usize) -> PyResult<Option<Vec<SliceArg>>> {
    let items: Vec<Bound<'_, PyAny>> = match key.cast::<PyTuple>() {
        Ok(t) => t.iter().collect(),
        Err(_) => vec![key.clone()],
    };
    let mut args = Vec::with_capacity(items.len());
    let mut ellipsis_at = None;
    for it in &items {
        if it.is_instance_of::<PyEllipsis>() {
            if ellipsis_at.replace(args.len()).is_some() {
                return Err(to_py(key.py(), Error::Index("an index can only have a single ellipsis ('...')".into())));
            }
        } else if it.is_instance_of::<PyNone>() {
            args.push(SliceArg::NewAxis);
        } else if let Ok(s) = it.cast::<PySlice>() {
            let get = |n: &str| -> PyResult<Option<i64>> { s.getattr(n)?.extract() };
            let step = get("step")?.unwrap_or(1);
            if step == 0 {
                return Err(to_py(key.py(), Error::Value("slice step cannot be zero".into())));
            }
            args.push(SliceArg::Range { start: get("start")?, stop: get("stop")?, step });
        } else if it.is_instance_of::<pyo3::types::PyInt>() || is_int_scalar(it)? {
            args.push(SliceArg::Index(it.extract()?));
        } else {
            return Ok(None);
        }
    }
    if let Some(at) = ellipsis_at {
        let used = args.iter().filter(|a| !matches!(a, SliceArg::NewAxis)).count();
        let fill = ndim.saturating_sub(used);
        args.splice(at..at, std::iter::repeat_n(SliceArg::Range { start: None, stop: None, step: 1 }, fill));
    }
    Ok(Some(args))
}

fn is_int_scalar(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    let np = convert::numpy(obj.py())?;
    obj.is_instance(&np.getattr("integer")?)
}

/// `x[key]`.
pub fn getitem(py: Python<'_>, x: &NDArray, key: &Bound<'_, PyAny>) -> PyResult<NDArray> {
    if let Some(args) = basic_args(key, x.ndim())? {
        let mut y = run_op(py, &BasicIndex { args }, std::slice::from_ref(x))?;
        // MXNet 1.x: integer indexing never yields a 0-d array unless NumPy shapes are on.
        if y.ndim() == 0 && !np_shape() {
            y = y.reshape(&[1]).map_err(|e| to_py(py, e))?;
        }
        return Ok(y);
    }
    crate::advanced::getitem(py, x, key)
}

/// `x[key] = value`: writes into x's storage (seen by every view of x).
pub fn setitem(slf: &Bound<'_, PyNDArray>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = slf.py();
    let (ndim, dtype) = {
        let me = slf.borrow();
        (me.inner.ndim(), me.inner.dtype())
    };
    let src = if let Ok(v) = value.extract::<f64>() {
        NDArray::full(&[], dtype, v)
    } else {
        convert::array_from_py(value, Some(dtype))?
    };
    if let Some(args) = basic_args(key, ndim)? {
        let mut me = slf.borrow_mut();
        let target = &mut me.inner;
        return enter(py, is_heavy(src.size()), || target.assign_index(&args, &src));
    }
    crate::advanced::setitem(slf, key, &src)
}
