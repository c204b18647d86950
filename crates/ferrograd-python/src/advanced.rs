//! Index arrays and masks from Python objects: ferrograd NDArrays (bool dtype = mask; any other
//! dtype = integer indices, floats truncated as in MXNet), NumPy arrays and (nested) lists.

use crate::errors::IntoPyResult;
use ferrograd::ops::indexing::advanced::{array_item, mask_item, IndexItem};
use ferrograd::ops::indexing::index_values;
use ferrograd::{DType, Error};
use numpy::{PyArrayDyn, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;

use crate::convert;
use crate::errors::{enter_with_gil, to_py};
use crate::ndarray::PyNDArray;

fn bad_index(obj: &Bound<'_, PyAny>, why: &str) -> PyErr {
    let r = obj.repr().map(|r| r.to_string()).unwrap_or_else(|_| "<object>".into());
    let r = if r.chars().count() > 80 { format!("{}...", r.chars().take(77).collect::<String>()) } else { r };
    to_py(
        obj.py(),
        Error::Index(format!(
            "only integers, slices (`:`), ellipsis (`...`), None and integer or boolean arrays are valid \
             indices{why}; got {r}"
        )),
    )
}

/// An index array or mask from a non-basic key element.
pub fn parse_array(obj: &Bound<'_, PyAny>) -> PyResult<IndexItem> {
    let py = obj.py();
    if let Ok(a) = obj.cast::<PyNDArray>() {
        let x = a.get().tracked().py_err(py)?;
        return enter_with_gil(py, || {
            if x.dtype() == DType::Bool {
                return mask_item(&x);
            }
            Ok(array_item(index_values(&x)?, x.shape()))
        });
    }
    let np = convert::numpy(py)?;
    let arr = np.call_method1("asarray", (obj,)).map_err(|_| bad_index(obj, " (ragged or not array-like)"))?;
    let kind: String = arr.getattr("dtype")?.getattr("kind")?.extract()?;
    let size: usize = arr.getattr("size")?.extract()?;
    let shape: Vec<usize> = arr.cast::<PyUntypedArray>()?.shape().to_vec();
    match kind.as_str() {
        "b" => {
            let a = np.call_method1("ascontiguousarray", (&arr,))?;
            let values = a.cast::<PyArrayDyn<bool>>()?.readonly().as_slice().map(<[bool]>::to_vec);
            let values = values.map_err(|e| to_py(py, Error::Index(e.to_string())))?;
            Ok(IndexItem::Mask { shape, values })
        }
        // An empty list is an (empty) integer index in NumPy, whatever dtype asarray picked.
        "i" | "u" | "f" if kind != "f" || size == 0 => {
            let a = np.call_method1("ascontiguousarray", (&arr, "int64"))?;
            let values = a.cast::<PyArrayDyn<i64>>()?.readonly().as_slice().map(<[i64]>::to_vec);
            let values = values.map_err(|e| to_py(py, Error::Index(e.to_string())))?;
            enter_with_gil(py, || Ok::<_, Error>(array_item(values, &shape)))
        }
        "f" => Err(bad_index(obj, " (arrays used as indices must be of integer or boolean type)")),
        _ => Err(bad_index(obj, "")),
    }
}
