//! MXNet NDArray files and pickling: translation to and from `ferrograd::io`.

use ferrograd::io::{self, Arrays};
use ferrograd::Error;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyByteArray, PyDict};

use crate::errors::{enter, enter_with_gil};
use crate::ndarray::PyNDArray;

/// A file's arrays and, for a dict, its keys (`None` for a list).
type Loaded = (Vec<PyNDArray>, Option<Vec<String>>);

fn to_python(data: Arrays) -> Loaded {
    match data {
        Arrays::List(v) => (v.into_iter().map(PyNDArray::new).collect(), None),
        Arrays::Dict(v) => {
            let (keys, arrays): (Vec<_>, Vec<_>) = v.into_iter().unzip();
            (arrays.into_iter().map(PyNDArray::new).collect(), Some(keys))
        }
    }
}

/// Writes `arrays` (named by `keys`, or a list when `keys` is None) to `fname` in MXNet's format.
#[pyfunction]
#[pyo3(signature = (fname, arrays, keys=None))]
fn _nd_save(py: Python<'_>, fname: &str, arrays: Vec<PyRef<'_, PyNDArray>>, keys: Option<Vec<String>>) -> PyResult<()> {
    let arrays: Vec<_> = arrays.iter().map(|a| a.array()).collect();
    let data = match keys {
        None => Arrays::List(arrays),
        Some(keys) => Arrays::Dict(keys.into_iter().zip(arrays).collect()),
    };
    let fname = fname.to_owned();
    enter(py, true, move || io::save(&fname, &data))
}

/// Reads an MXNet NDArray file: (arrays, keys or None).
#[pyfunction]
fn _nd_load(py: Python<'_>, fname: &str) -> PyResult<Loaded> {
    let fname = fname.to_owned();
    Ok(to_python(enter(py, true, move || io::load(&fname))?))
}

/// Decodes an MXNet NDArray file held in `buf`: (arrays, keys or None).
#[pyfunction]
fn _nd_load_bytes(py: Python<'_>, buf: PyBackedBytes) -> PyResult<Loaded> {
    Ok(to_python(enter(py, true, move || io::from_bytes(&buf, "the buffer"))?))
}

/// MXNet's pickled state of an array: `{'handle': bytearray(record)}`.
pub fn getstate<'py>(py: Python<'py>, a: &PyNDArray) -> PyResult<Bound<'py, PyDict>> {
    let bytes = enter_with_gil(py, || Ok::<_, Error>(io::array_to_bytes(&a.array())))?;
    let d = PyDict::new(py);
    d.set_item("handle", PyByteArray::new(py, &bytes))?;
    Ok(d)
}

/// Replaces the array with the one a pickled state holds (arrays pickled on a GPU load onto
/// the CPU).
pub fn setstate(slf: &Bound<'_, PyNDArray>, state: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = slf.py();
    let handle = state.get_item("handle").map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err("NDArray.__setstate__: state must be a dict with a 'handle' entry")
    })?;
    let bytes: PyBackedBytes = handle.extract().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err("NDArray.__setstate__: state['handle'] must be bytes or a bytearray")
    })?;
    let a = enter(py, true, move || io::array_from_bytes(&bytes, "the pickled NDArray state"))?;
    slf.get().set_array(a);
    Ok(())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_nd_save, m)?)?;
    m.add_function(wrap_pyfunction!(_nd_load, m)?)?;
    m.add_function(wrap_pyfunction!(_nd_load_bytes, m)?)?;
    Ok(())
}
