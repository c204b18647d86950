//! Copying conversions between Python objects / NumPy arrays and NDArrays.

use ferrograd::{DType, DTypeElem, NDArray};
use numpy::{Element as NpElement, IntoPyArray, PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyModule;

use crate::errors::{enter, enter_with_gil, is_heavy, IntoPyResult};
use crate::ndarray::PyNDArray;

static NUMPY: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// The `numpy` module (imported once).
pub fn numpy(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    Ok(NUMPY.get_or_try_init(py, || Ok::<_, PyErr>(py.import("numpy")?.unbind()))?.bind(py))
}

/// A dtype from a string, a NumPy dtype or type class (`np.float32`), or a Python type.
pub fn dtype_from_py(obj: &Bound<'_, PyAny>) -> PyResult<DType> {
    let py = obj.py();
    if let Ok(s) = obj.extract::<String>() {
        return DType::from_name(&s).py_err(py);
    }
    let name: String = numpy(py)?.getattr("dtype")?.call1((obj,))?.getattr("name")?.extract()?;
    DType::from_name(&name).py_err(py)
}

/// The dtype of a NumPy array (or anything with `.dtype`).
pub fn dtype_of_numpy(arr: &Bound<'_, PyAny>) -> PyResult<DType> {
    let name: String = arr.getattr("dtype")?.getattr("name")?.extract()?;
    DType::from_name(&name).py_err(arr.py())
}

fn read_contiguous<T: DTypeElem + NpElement>(arr: &Bound<'_, PyAny>, shape: &[usize]) -> PyResult<NDArray> {
    let a = arr.cast::<PyArrayDyn<T>>()?.readonly();
    let v = a.as_slice().map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?.to_vec();
    enter_with_gil(arr.py(), || NDArray::from_vec(v, shape))
}

/// Copies any array-like (nested lists, scalars, NumPy arrays, NDArrays) into a new NDArray.
/// `dtype = None` keeps the source's dtype (NumPy's inference for lists).
pub fn array_from_py(obj: &Bound<'_, PyAny>, dtype: Option<DType>) -> PyResult<NDArray> {
    let py = obj.py();
    if let Ok(x) = obj.cast::<PyNDArray>() {
        let x = x.get().tracked().py_err(py)?;
        let dt = dtype.unwrap_or(x.dtype());
        return enter(py, is_heavy(x.size()), || Ok(x.astype(dt)));
    }
    let np = numpy(py)?;
    // `asarray(order="C")`, not `ascontiguousarray`: the latter turns a scalar into shape (1,).
    let kw = pyo3::types::PyDict::new(py);
    kw.set_item("order", "C")?;
    if let Some(dt) = dtype {
        kw.set_item("dtype", dt.name())?;
    }
    let arr = np.call_method("asarray", (obj,), Some(&kw))?;
    let dt = dtype_of_numpy(&arr)?;
    let shape: Vec<usize> = arr.cast::<numpy::PyUntypedArray>()?.shape().to_vec();
    match dt {
        DType::F32 => read_contiguous::<f32>(&arr, &shape),
        DType::F64 => read_contiguous::<f64>(&arr, &shape),
        DType::F16 => read_contiguous::<half::f16>(&arr, &shape),
        DType::I32 => read_contiguous::<i32>(&arr, &shape),
        DType::I64 => read_contiguous::<i64>(&arr, &shape),
        DType::U8 => read_contiguous::<u8>(&arr, &shape),
        DType::I8 => read_contiguous::<i8>(&arr, &shape),
        DType::Bool => read_contiguous::<bool>(&arr, &shape),
    }
}

fn to_numpy_typed<'py, T: DTypeElem + NpElement>(py: Python<'py>, x: &NDArray) -> PyResult<Bound<'py, PyAny>> {
    let x2 = x.clone();
    let v: Vec<T> = enter(py, is_heavy(x.size()), || x2.to_vec::<T>())?;
    let arr = v.into_pyarray(py);
    Ok(arr.reshape(x.shape())?.into_any())
}

/// A new, writable, C-contiguous NumPy copy of the array (MXNet `asnumpy`).
pub fn to_numpy_copy<'py>(py: Python<'py>, x: &NDArray) -> PyResult<Bound<'py, PyAny>> {
    match x.dtype() {
        DType::F32 => to_numpy_typed::<f32>(py, x),
        DType::F64 => to_numpy_typed::<f64>(py, x),
        DType::F16 => to_numpy_typed::<half::f16>(py, x),
        DType::I32 => to_numpy_typed::<i32>(py, x),
        DType::I64 => to_numpy_typed::<i64>(py, x),
        DType::U8 => to_numpy_typed::<u8>(py, x),
        DType::I8 => to_numpy_typed::<i8>(py, x),
        DType::Bool => to_numpy_typed::<bool>(py, x),
    }
}
