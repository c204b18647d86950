//! MXNet NDArray files and pickling: translation to and from `ferrograd::io`.

use crate::errors::IntoPyResult;
use ferrograd::io::{self, Arrays, Storage};
use ferrograd::Error;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyByteArray, PyDict};

use crate::errors::{enter, enter_with_gil};
use crate::ndarray::PyNDArray;

/// A file's arrays, for a dict its keys (`None` for a list), and each array's storage type
/// (`'default'`, `'row_sparse'`, `'csr'`; the arrays themselves are dense).
type Loaded = (Vec<PyNDArray>, Option<Vec<String>>, Vec<&'static str>);

fn to_python((data, storage): (Arrays, Vec<Storage>)) -> Loaded {
    let stypes = storage.into_iter().map(Storage::name).collect();
    match data {
        Arrays::List(v) => (v.into_iter().map(PyNDArray::new).collect(), None, stypes),
        Arrays::Dict(v) => {
            let (keys, arrays): (Vec<_>, Vec<_>) = v.into_iter().unzip();
            (arrays.into_iter().map(PyNDArray::new).collect(), Some(keys), stypes)
        }
    }
}

/// Writes `arrays` (named by `keys`, or a list when `keys` is None) to `fname` in MXNet's format;
/// `stypes` gives each array's storage type (dense when None).
#[pyfunction]
#[pyo3(signature = (fname, arrays, keys=None, stypes=None))]
fn _nd_save(
    py: Python<'_>,
    fname: &str,
    arrays: Vec<PyRef<'_, PyNDArray>>,
    keys: Option<Vec<String>>,
    stypes: Option<Vec<String>>,
) -> PyResult<()> {
    let arrays: Vec<_> = arrays.iter().map(|a| a.array().py_err(py)).collect::<PyResult<_>>()?;
    let data = match keys {
        None => Arrays::List(arrays),
        Some(keys) => Arrays::Dict(keys.into_iter().zip(arrays).collect()),
    };
    let fname = fname.to_owned();
    enter(py, true, move || {
        let storage = stypes.unwrap_or_default().iter().map(|s| Storage::parse(s)).collect::<Result<Vec<_>, _>>()?;
        io::save_stored(&fname, &data, &storage)
    })
}

/// Reads an MXNet NDArray file: (arrays, keys or None).
#[pyfunction]
fn _nd_load(py: Python<'_>, fname: &str) -> PyResult<Loaded> {
    let fname = fname.to_owned();
    Ok(to_python(enter(py, true, move || io::load_stored(&fname))?))
}

/// Decodes an MXNet NDArray file held in `buf`: (arrays, keys or None).
#[pyfunction]
fn _nd_load_bytes(py: Python<'_>, buf: PyBackedBytes) -> PyResult<Loaded> {
    Ok(to_python(enter(py, true, move || io::from_bytes_stored(&buf, "the buffer"))?))
}

/// MXNet's pickled state of an array: `{'handle': bytearray(record)}`.
pub fn getstate<'py>(py: Python<'py>, a: &PyNDArray) -> PyResult<Bound<'py, PyDict>> {
    let bytes = enter_with_gil(py, || Ok::<_, Error>(io::array_to_bytes(&a.array()?)))?;
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
