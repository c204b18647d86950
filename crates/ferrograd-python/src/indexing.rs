//! `x[key]` and `x[key] = value`: Python keys parsed into index items. Keys of ints, slices, `...`
//! and `None` select views (basic indexing); keys with integer arrays or boolean masks run the
//! advanced plan of `take`/`gather_nd` ops (see `advanced.rs`).

use crate::errors::IntoPyResult;
use ferrograd::ops::indexing::advanced::{self as adv, IndexItem};
use ferrograd::{np_shape, Error, NDArray, SliceArg, Tracked};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyEllipsis, PyInt, PyNone, PySlice, PyTuple};

use crate::convert;
use crate::errors::{enter, enter_with_gil, is_heavy, to_py};
use crate::ndarray::{run_shared, PyNDArray};

/// One element of a key: basic items directly, anything else through the array parser.
fn parse_item(it: &Bound<'_, PyAny>) -> PyResult<IndexItem> {
    let py = it.py();
    if it.is_instance_of::<PyEllipsis>() {
        return Ok(IndexItem::Ellipsis);
    }
    if it.is_instance_of::<PyNone>() {
        return Ok(IndexItem::Basic(SliceArg::NewAxis));
    }
    if let Ok(s) = it.cast::<PySlice>() {
        let get = |n: &str| -> PyResult<Option<i64>> {
            s.getattr(n)?.extract().map_err(|_| {
                let r = s.repr().map(|r| r.to_string()).unwrap_or_default();
                to_py(py, Error::Index(format!("slice {n} must be an integer or None, got {r}")))
            })
        };
        let step = get("step")?.unwrap_or(1);
        if step == 0 {
            return Err(to_py(py, Error::Value("slice step cannot be zero".into())));
        }
        return Ok(IndexItem::Basic(SliceArg::Range { start: get("start")?, stop: get("stop")?, step }));
    }
    if it.is_instance_of::<PyBool>() {
        // A bare bool is a 0-d mask in NumPy; the core rejects it with a clear message.
        return Ok(IndexItem::Mask { shape: vec![], values: vec![it.extract()?] });
    }
    if it.is_instance_of::<PyInt>() || is_int_scalar(it)? {
        return match it.extract::<i64>() {
            Ok(i) => Ok(IndexItem::Basic(SliceArg::Index(i))),
            Err(_) => Err(to_py(py, Error::Index(format!("index {it} does not fit in 64 bits")))),
        };
    }
    crate::advanced::parse_array(it)
}

/// The items of a key (a tuple holds several; a list is one index array, as in NumPy).
fn parse_key(key: &Bound<'_, PyAny>) -> PyResult<Vec<IndexItem>> {
    match key.cast::<PyTuple>() {
        Ok(t) => t.iter().map(|it| parse_item(&it)).collect(),
        Err(_) => Ok(vec![parse_item(key)?]),
    }
}

fn is_int_scalar(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    let np = convert::numpy(obj.py())?;
    obj.is_instance(&np.getattr("integer")?)
}

/// `x[key]`.
pub fn getitem(py: Python<'_>, x: &Tracked, key: &Bound<'_, PyAny>) -> PyResult<Tracked> {
    let items = parse_key(key)?;
    let steps = enter_with_gil(py, || adv::plan(x.shape(), &items))?;
    let mut y = x.clone();
    for s in &steps {
        y = match &s.index {
            Some(i) => run_shared(py, &s.op, [y, Tracked::new(i.clone())])?,
            None => run_shared(py, &s.op, [y])?,
        };
    }
    // MXNet 1.x: indexing never yields a 0-d array unless NumPy shapes are on.
    if y.ndim() == 0 && !np_shape() {
        y = crate::ndarray::run_op(py, ferrograd::ops::layout::Reshape::to(&[1]), [y])?;
    }
    Ok(y)
}

/// `x[key] = value`: writes into x's storage (seen by every view of x).
pub fn setitem(slf: &Bound<'_, PyNDArray>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = slf.py();
    let (shape, dtype) = slf.get().with(|x| (x.shape().to_vec(), x.dtype())).py_err(py)?;
    let items = parse_key(key)?;
    // The value as given: its conversion below may be a fresh array without autograd history.
    let given: Option<Tracked> = value.cast::<PyNDArray>().ok().map(|v| v.get().tracked().py_err(py)).transpose()?;
    let src = Tracked::new(if value.is_instance_of::<PyInt>() || value.is_instance_of::<pyo3::types::PyFloat>() {
        NDArray::full(&[], dtype, value.extract::<f64>()?)
    } else {
        convert::array_from_py(value, Some(dtype))?
    });
    let basic = enter_with_gil(py, || adv::basic_args(&shape, &items))?;
    // One step with respect to other threads writing this array (`ndarray_sync`).
    crate::ndarray_sync::update_storage(py, slf.get(), |target| {
        enter_with_gil(py, || ferrograd::autograd::check_inplace(target, Some(given.as_ref().unwrap_or(&src))))?;
        let work = src.size().max(target.size());
        let (target, src) = (target.array_mut(), src.array());
        enter(py, is_heavy(work), move || match basic {
            Some(args) => target.assign_index(&args, src),
            None => adv::assign(target, &items, src),
        })
    })
}
