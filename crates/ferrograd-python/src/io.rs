//! MXNet NDArray files and pickling: translation to and from `ferrograd::io`.

use crate::errors::IntoPyResult;
use ferrograd::io::{self, Entries, SparseParts, Storage, Stored};
use ferrograd::Error;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyByteArray, PyDict};

use crate::errors::{enter, enter_with_gil};
use crate::ndarray::PyNDArray;

/// One array of a file: a dense NDArray, or a sparse array's components as
/// `(stype, shape, data, [aux...])` (csr: aux = [indptr, indices]; row_sparse: [indices]).
#[derive(IntoPyObject)]
enum LoadedItem {
    Dense(PyNDArray),
    Sparse((&'static str, Vec<usize>, PyNDArray, Vec<PyNDArray>)),
}

/// A file's arrays and, for a dict, its keys (`None` for a list).
type Loaded = (Vec<LoadedItem>, Option<Vec<String>>);

fn to_python(entries: Entries) -> Loaded {
    let items = entries.arrays.into_iter().map(|a| match a {
        Stored::Dense(a) => LoadedItem::Dense(PyNDArray::new(a)),
        Stored::Sparse(p) => LoadedItem::Sparse((
            p.storage.name(),
            p.shape,
            PyNDArray::new(p.data),
            p.aux.into_iter().map(PyNDArray::new).collect(),
        )),
    });
    (items.collect(), entries.keys)
}

/// What `_nd_save` takes for one array: a dense NDArray, or sparse components as
/// `(stype, shape, data, [aux...])`.
#[derive(FromPyObject)]
enum SavedItem<'py> {
    Dense(PyRef<'py, PyNDArray>),
    Sparse((String, Vec<usize>, PyRef<'py, PyNDArray>, Vec<PyRef<'py, PyNDArray>>)),
}

/// Writes `items` (named by `keys`, or a list when `keys` is None) to `fname` in MXNet's format.
/// `stypes[i]` (dense when None) stores the dense item `i` sparse, as its nonzero entries.
#[pyfunction]
#[pyo3(signature = (fname, items, keys=None, stypes=None))]
fn _nd_save(
    py: Python<'_>,
    fname: &str,
    items: Vec<SavedItem<'_>>,
    keys: Option<Vec<String>>,
    stypes: Option<Vec<String>>,
) -> PyResult<()> {
    enum Pending {
        Dense(ferrograd::NDArray),
        Parts(SparseParts),
    }
    let mut pending = Vec::with_capacity(items.len());
    for item in items {
        pending.push(match item {
            SavedItem::Dense(a) => Pending::Dense(a.array().py_err(py)?),
            SavedItem::Sparse((stype, shape, data, aux)) => {
                let storage = Storage::parse(&stype).py_err(py)?;
                let data = data.array().py_err(py)?;
                let aux = aux.iter().map(|a| a.array().py_err(py)).collect::<PyResult<_>>()?;
                Pending::Parts(SparseParts { storage, shape, data, aux })
            }
        });
    }
    let fname = fname.to_owned();
    enter(py, true, move || {
        let stypes = stypes.unwrap_or_default();
        let mut arrays = Vec::with_capacity(pending.len());
        for (i, p) in pending.into_iter().enumerate() {
            arrays.push(match p {
                Pending::Parts(parts) => Stored::Sparse(parts),
                Pending::Dense(a) => match stypes.get(i).map(|s| Storage::parse(s)).transpose()? {
                    None | Some(Storage::Dense) => Stored::Dense(a),
                    Some(s) => Stored::Sparse(SparseParts::from_dense(&a, s)?),
                },
            });
        }
        io::save_entries(&fname, &Entries { arrays, keys })
    })
}

/// Reads an MXNet NDArray file: (items, keys or None), sparse records as their components.
#[pyfunction]
fn _nd_load(py: Python<'_>, fname: &str) -> PyResult<Loaded> {
    let fname = fname.to_owned();
    Ok(to_python(enter(py, true, move || io::load_entries(&fname))?))
}

/// Decodes an MXNet NDArray file held in `buf`: (items, keys or None).
#[pyfunction]
fn _nd_load_bytes(py: Python<'_>, buf: PyBackedBytes) -> PyResult<Loaded> {
    Ok(to_python(enter(py, true, move || io::entries_from_bytes(&buf, "the buffer"))?))
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
