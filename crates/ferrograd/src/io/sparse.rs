//! MXNet's sparse records (`row_sparse`, `csr`) as their components: the stored values and the
//! index arrays are read and written as they are (explicitly stored zeros included), never
//! through a dense copy, so a file's cost follows its stored values, not its shape.

use super::Storage;
use crate::error::{fmt_shape, Error, Result};
use crate::{with_dtype, DType, NDArray};

/// The components of a sparse array, as MXNet stores them.
///
/// `data` holds the stored values: for row_sparse one row per entry of `aux[0]` (the sorted row
/// numbers), shape `(rows, *shape[1..])`; for csr a 1-D array of the values in row-major order,
/// with `aux = [indptr, indices]` (row pointers, then column numbers). Index arrays are 1-D
/// int64 (int32 in a file is widened on load).
#[derive(Clone)]
pub struct SparseParts {
    pub storage: Storage,
    pub shape: Vec<usize>,
    pub data: NDArray,
    pub aux: Vec<NDArray>,
}

/// The stored entries of `values` (row-major, of `shape`): the stored values, the index arrays
/// in file order and the stored values' shape. `shape` must fit `storage`.
fn components<T: Copy + Default + PartialEq>(
    values: &[T],
    shape: &[usize],
    storage: Storage,
) -> (Vec<T>, Vec<Vec<i64>>, Vec<usize>) {
    let zero = T::default();
    match (storage, shape) {
        (Storage::Csr, &[rows, cols]) => {
            let (mut stored, mut col_ids, mut indptr) = (Vec::new(), Vec::new(), vec![0i64]);
            for r in 0..rows {
                for (c, &v) in values[r * cols..(r + 1) * cols].iter().enumerate() {
                    if v != zero {
                        stored.push(v);
                        col_ids.push(c as i64);
                    }
                }
                indptr.push(stored.len() as i64);
            }
            let nnz = stored.len();
            (stored, vec![indptr, col_ids], vec![nnz])
        }
        _ => {
            let row_len: usize = shape.iter().skip(1).product();
            let mut stored = Vec::new();
            let mut row_ids = Vec::new();
            for (r, row) in values.chunks(row_len.max(1)).enumerate().take(shape.first().copied().unwrap_or(0)) {
                if row_len > 0 && row.iter().any(|&v| v != zero) {
                    stored.extend_from_slice(row);
                    row_ids.push(r as i64);
                }
            }
            let mut stored_shape = shape.to_vec();
            if let Some(first) = stored_shape.first_mut() {
                *first = row_ids.len();
            }
            (stored, vec![row_ids], stored_shape)
        }
    }
}

fn index_array(v: Vec<i64>) -> Result<NDArray> {
    let n = v.len();
    NDArray::from_vec(v, &[n])
}

impl SparseParts {
    /// The nonzero entries of the dense array `a` stored as `storage` (csr: 2-D `a`;
    /// row_sparse: at least 1-D), with int64 indices.
    pub fn from_dense(a: &NDArray, storage: Storage) -> Result<SparseParts> {
        let fits = match storage {
            Storage::Dense => false,
            Storage::RowSparse => a.ndim() >= 1,
            Storage::Csr => a.ndim() == 2,
        };
        if !fits {
            let need = match storage {
                Storage::Csr => "2-D",
                Storage::RowSparse => "at least 1-D",
                Storage::Dense => "sparse",
            };
            return Err(Error::Value(format!(
                "nd.save: a {} array must be {need}, got shape {}",
                storage.name(),
                fmt_shape(a.shape())
            )));
        }
        with_dtype!(a.dtype(), T => {
            let values = a.to_vec::<T>()?;
            let (stored, index, stored_shape) = components(&values, a.shape(), storage);
            Ok(SparseParts {
                storage,
                shape: a.shape().to_vec(),
                data: NDArray::from_vec(stored, &stored_shape)?,
                aux: index.into_iter().map(index_array).collect::<Result<_>>()?,
            })
        })
    }

    /// Checks that the components describe an array MXNet can load (before writing them); the
    /// message starts with `what` (the caller and the array) and says what does not fit.
    pub(crate) fn check(&self, what: &str) -> Result<()> {
        let bad = |msg: String| Err(Error::Value(format!("{what}: {msg}")));
        if let Some(a) = self.aux.iter().find(|a| a.ndim() != 1 || !matches!(a.dtype(), DType::I64 | DType::I32)) {
            return bad(format!("index arrays must be 1-D int64 or int32, got {} {}", a.dtype(), fmt_shape(a.shape())));
        }
        let d = self.data.shape();
        match (self.storage, self.aux.as_slice()) {
            (Storage::RowSparse, [rows]) => {
                if self.shape.is_empty()
                    || d.len() != self.shape.len()
                    || d[1..] != self.shape[1..]
                    || d[0] != rows.size()
                {
                    return bad(format!(
                        "data of shape {} does not hold {} rows of an array of shape {}",
                        fmt_shape(d),
                        rows.size(),
                        fmt_shape(&self.shape)
                    ));
                }
            }
            (Storage::Csr, [indptr, cols]) => {
                if self.shape.len() != 2 || d.len() != 1 || d[0] != cols.size() || indptr.size() != self.shape[0] + 1 {
                    return bad(format!(
                        "data {}, indptr {} and indices {} do not describe a csr array of shape {}",
                        fmt_shape(d),
                        fmt_shape(indptr.shape()),
                        fmt_shape(cols.shape()),
                        fmt_shape(&self.shape)
                    ));
                }
            }
            _ => return bad(format!("{} index arrays for storage {}", self.aux.len(), self.storage.name())),
        }
        // What is written must load again (here and in MXNet): the same index checks as a read.
        let mut aux = self.index_values()?;
        check_read(self.storage, &self.shape, &mut aux).or_else(bad)
    }

    fn index_values(&self) -> Result<Vec<Vec<i64>>> {
        self.aux.iter().map(|a| a.astype(DType::I64).to_vec::<i64>()).collect()
    }

    /// The dense array the components stand for (an error if they do not describe one).
    pub fn densify(&self) -> Result<NDArray> {
        self.check("densify: sparse array")?;
        let aux = self.index_values()?;
        let numel = self.shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
        let numel = numel.ok_or_else(|| Error::Value(format!("shape {} is too large", fmt_shape(&self.shape))))?;
        with_dtype!(self.data.dtype(), T => {
            let values = self.data.to_vec::<T>()?;
            let mut dense = Vec::new();
            dense.try_reserve_exact(numel).map_err(|_| {
                Error::Runtime(format!("the dense shape {} is too large to allocate", fmt_shape(&self.shape)))
            })?;
            dense.resize(numel, T::default());
            match (self.storage, aux.as_slice()) {
                (Storage::Csr, [indptr, cols]) => {
                    let n_cols = self.shape[1];
                    for (r, w) in indptr.windows(2).enumerate() {
                        for k in w[0] as usize..w[1] as usize {
                            dense[r * n_cols + cols[k] as usize] = values[k];
                        }
                    }
                }
                (_, [rows, ..]) => {
                    let row_len: usize = self.shape[1..].iter().product();
                    for (i, &r) in rows.iter().enumerate() {
                        let r = r as usize;
                        dense[r * row_len..(r + 1) * row_len].copy_from_slice(&values[i * row_len..(i + 1) * row_len]);
                    }
                }
                _ => {}
            }
            NDArray::from_vec(dense, &self.shape)
        })
    }
}

/// Checks a sparse record's index arrays against its shape (the values' count was taken from
/// them): in-bounds, sorted, unique indices and row pointers rising from 0 to the number of
/// values. An all-zero csr record may store no row pointers; they are made. The message says
/// what is inconsistent.
pub(crate) fn check_read(storage: Storage, shape: &[usize], aux: &mut [Vec<i64>]) -> std::result::Result<(), String> {
    match (storage, aux) {
        (Storage::RowSparse, [rows]) => {
            let Some(&n_rows) = shape.first() else { return Err("a row_sparse array must have a dimension".into()) };
            if let Some(&r) = rows.iter().find(|&&r| r < 0 || r as u64 >= n_rows as u64) {
                return Err(format!("row index {r} is outside 0..{n_rows}"));
            }
            if let Some(w) = rows.windows(2).find(|w| w[0] >= w[1]) {
                return Err(format!("row indices must be sorted and unique, got {} then {}", w[0], w[1]));
            }
            Ok(())
        }
        (Storage::Csr, [indptr, cols]) => {
            let &[n_rows, n_cols] = shape else { return Err(format!("a csr array must be 2-D, not {shape:?}")) };
            let nnz = cols.len();
            if nnz == 0 && indptr.is_empty() {
                *indptr = vec![0; n_rows + 1];
            }
            if indptr.len() != n_rows + 1 {
                return Err(format!("{} row pointers for {n_rows} rows (need {})", indptr.len(), n_rows + 1));
            }
            if indptr[0] != 0 || indptr[n_rows] != nnz as i64 {
                return Err(format!(
                    "row pointers run from {} to {}, not from 0 to the number of values ({nnz})",
                    indptr[0], indptr[n_rows]
                ));
            }
            for (r, w) in indptr.windows(2).enumerate() {
                if w[0] > w[1] || w[1] > nnz as i64 {
                    return Err(format!("row pointers decrease at row {r} ({} then {})", w[0], w[1]));
                }
                let row = &cols[w[0] as usize..w[1] as usize]; // within 0..=nnz: checked above
                if let Some(&c) = row.iter().find(|&&c| c < 0 || c as u64 >= n_cols as u64) {
                    return Err(format!("column index {c} of row {r} is outside 0..{n_cols}"));
                }
                if row.windows(2).any(|p| p[0] >= p[1]) {
                    return Err(format!("column indices of row {r} must be sorted and unique, got {row:?}"));
                }
            }
            Ok(())
        }
        _ => Err("unexpected number of index arrays".into()),
    }
}

/// Builds the components of a checked record.
pub(crate) fn assemble(storage: Storage, shape: Vec<usize>, data: NDArray, aux: Vec<Vec<i64>>) -> Result<SparseParts> {
    let aux = aux.into_iter().map(index_array).collect::<Result<_>>()?;
    Ok(SparseParts { storage, shape, data, aux })
}
