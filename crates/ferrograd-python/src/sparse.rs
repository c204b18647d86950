//! Sparse arrays without dense backing. A `CSRNDArray` / `RowSparseNDArray` (Python subclasses
//! of `NDArray`) keeps its components here, on the native object; the handle holds an empty
//! placeholder until something native needs the dense values (see `PyNDArray::materialize` and
//! `PyNDArray::input`). Memory and creation cost follow the stored values, not the shape.

use ferrograd::{with_dtype, DType, Error, NDArray, Result};
use pyo3::prelude::*;
use pyo3::types::PyType;

use crate::errors::{enter, is_heavy, to_py};
use crate::ndarray::PyNDArray;

/// A sparse array's components (dense NDArrays, checked by the Python constructors).
#[derive(Debug)]
pub struct SparseParts {
    csr: bool,
    shape: Vec<usize>,
    data: NDArray,
    /// `[indptr, indices]` for csr, `[indices]` for row_sparse.
    aux: Vec<NDArray>,
}

fn index_vec(op: &str, what: &str, x: &NDArray) -> Result<Vec<usize>> {
    let values = x.astype(DType::I64).to_vec::<i64>()?;
    values
        .into_iter()
        .map(|v| usize::try_from(v).map_err(|_| Error::Value(format!("{op}: {what} holds the negative value {v}"))))
        .collect()
}

impl SparseParts {
    fn new(stype: &str, shape: Vec<usize>, data: NDArray, aux: Vec<NDArray>) -> Result<SparseParts> {
        let csr = match (stype, aux.len()) {
            ("csr", 2) if shape.len() == 2 => true,
            ("row_sparse", 1) if !shape.is_empty() => false,
            _ => {
                return Err(Error::Value(format!(
                    "sparse array: storage {stype:?} with {} index arrays does not describe shape {shape:?}",
                    aux.len()
                )))
            }
        };
        Ok(SparseParts { csr, shape, data, aux })
    }

    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }

    /// The dense values: zeros with the stored values scattered in (out-of-range positions are
    /// an error, never a panic).
    pub fn to_dense(&self) -> Result<NDArray> {
        let op = if self.csr { "csr to dense" } else { "row_sparse to dense" };
        let dtype = self.dtype();
        let mut out = NDArray::try_full(op, &self.shape, dtype, 0.0)?;
        let outside = || Error::Value(format!("{op}: an index lies outside shape {:?}", self.shape));
        let (dst, width) = if self.csr {
            let (ptr, cols) = (index_vec(op, "indptr", &self.aux[0])?, index_vec(op, "indices", &self.aux[1])?);
            let n_cols = self.shape[1];
            let mut dst = Vec::with_capacity(cols.len());
            for (r, w) in ptr.windows(2).enumerate() {
                for &c in cols.get(w[0]..w[1]).ok_or_else(outside)? {
                    if c >= n_cols {
                        return Err(outside());
                    }
                    dst.push(r * n_cols + c);
                }
            }
            (dst, 1)
        } else {
            let width: usize = self.shape[1..].iter().product();
            let rows = index_vec(op, "indices", &self.aux[0])?;
            if rows.iter().any(|&r| r >= self.shape[0]) {
                return Err(outside());
            }
            (rows.into_iter().map(|r| r * width).collect(), width)
        };
        with_dtype!(dtype, T => {
            let values = self.data.to_vec::<T>()?;
            if values.len() != dst.len() * width {
                return Err(Error::Shape(format!(
                    "{op}: {} stored values for {} positions of width {width}",
                    values.len(),
                    dst.len()
                )));
            }
            out.write(|buf, _| -> Result<()> {
                let s = buf.slice_mut::<T>().ok_or_else(|| Error::Runtime(format!("{op}: internal dtype mismatch")))?;
                for (k, &d) in dst.iter().enumerate() {
                    let target = s.get_mut(d..d + width).ok_or_else(outside)?;
                    target.copy_from_slice(&values[k * width..(k + 1) * width]);
                }
                Ok(())
            })?;
        });
        Ok(out)
    }
}

fn parts(
    py: Python<'_>,
    stype: &str,
    shape: Vec<usize>,
    data: &PyNDArray,
    aux: &[PyRef<'_, PyNDArray>],
) -> PyResult<SparseParts> {
    let aux = aux.iter().map(|a| a.array()).collect::<ferrograd::Result<_>>().map_err(|e| to_py(py, e))?;
    let data = data.array().map_err(|e| to_py(py, e))?;
    SparseParts::new(stype, shape, data, aux).map_err(|e| to_py(py, e))
}

/// A new `cls` instance (a sparse subclass) holding only the components.
#[pyfunction]
fn _sparse_new<'py>(
    cls: &Bound<'py, PyType>,
    stype: &str,
    shape: Vec<usize>,
    data: PyRef<'_, PyNDArray>,
    aux: Vec<PyRef<'_, PyNDArray>>,
) -> PyResult<Bound<'py, PyAny>> {
    let p = parts(cls.py(), stype, shape, &data, &aux)?;
    let obj = cls.call0()?;
    obj.cast::<PyNDArray>()?.get().set_pending(p);
    Ok(obj)
}

/// Gives `x` new components (its dense values, if built, are dropped); entry and context stay.
#[pyfunction]
fn _sparse_reset(
    x: PyRef<'_, PyNDArray>,
    stype: &str,
    shape: Vec<usize>,
    data: PyRef<'_, PyNDArray>,
    aux: Vec<PyRef<'_, PyNDArray>>,
) -> PyResult<()> {
    let p = parts(x.py(), stype, shape, &data, &aux)?;
    x.set_pending(p);
    Ok(())
}

/// Whether `x`'s dense values are not built (it holds only its components).
#[pyfunction]
fn _sparse_pending(x: PyRef<'_, PyNDArray>) -> bool {
    x.is_pending()
}

/// A new dense array from sparse components (the object they came from is left as it is).
#[pyfunction]
fn _sparse_to_dense(
    py: Python<'_>,
    stype: &str,
    shape: Vec<usize>,
    data: PyRef<'_, PyNDArray>,
    aux: Vec<PyRef<'_, PyNDArray>>,
) -> PyResult<PyNDArray> {
    let p = parts(py, stype, shape, &data, &aux)?;
    drop((data, aux));
    let work = p.shape.iter().product();
    Ok(PyNDArray::new(enter(py, is_heavy(work), move || p.to_dense())?))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_sparse_new, m)?)?;
    m.add_function(wrap_pyfunction!(_sparse_reset, m)?)?;
    m.add_function(wrap_pyfunction!(_sparse_pending, m)?)?;
    m.add_function(wrap_pyfunction!(_sparse_to_dense, m)?)?;
    Ok(())
}
