//! MXNet's sparse records (`row_sparse`, `csr`): loaded as dense arrays (ferrograd's arrays keep
//! their values dense, and the values are what a user of the file needs), and written from dense
//! values (the stored entries are the nonzero ones).

use super::codec::{self, LeBytes};
use super::Storage;
use crate::dtype::DType;
use crate::{with_dtype, Buffer, NDArray};

/// The parts of a sparse record, as read from the file.
pub(crate) struct Sparse<'a> {
    pub shape: &'a [usize],
    pub dtype: DType,
    pub data: &'a [u8],
    /// Index arrays (bytes, element width 4 or 8): row indices for row_sparse; row pointers
    /// then column indices for csr.
    pub aux: &'a [(&'a [u8], usize)],
}

fn indices(bytes: &[u8], width: usize) -> Vec<i64> {
    if width == 4 {
        codec::decode::<i32>(bytes).into_iter().map(i64::from).collect()
    } else {
        codec::decode::<i64>(bytes)
    }
}

/// A zero-filled vector of `n` elements, or an error instead of an abort when it cannot exist.
fn zeros<T: Copy + Default>(n: usize, shape: &[usize]) -> Result<Vec<T>, String> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| format!("its dense shape {shape:?} is too large to allocate"))?;
    v.resize(n, T::default());
    Ok(v)
}

/// The dense array a sparse record stands for; the message says what is inconsistent.
pub(crate) fn densify(sp: &Sparse<'_>) -> Result<NDArray, String> {
    let numel = sp.shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d)).ok_or("its shape is too large")?;
    let buf = with_dtype!(sp.dtype, T => {
        let values = codec::decode::<T>(sp.data);
        let mut dense = zeros::<T>(numel, sp.shape)?;
        match sp.aux {
            [(rows, w)] => scatter_rows(sp, &values, &indices(rows, *w), &mut dense)?,
            [(indptr, wp), (cols, wc)] => scatter_csr(sp, &values, &indices(indptr, *wp), &indices(cols, *wc), &mut dense)?,
            _ => return Err("unexpected number of index arrays".into()),
        }
        Buffer::from_vec(dense)
    });
    NDArray::from_buffer(buf, sp.shape).map_err(|e| e.to_string())
}

/// row_sparse: stored row `i` is dense row `rows[i]`.
fn scatter_rows<T: LeBytes>(sp: &Sparse<'_>, values: &[T], rows: &[i64], dense: &mut [T]) -> Result<(), String> {
    let Some((&n_rows, rest)) = sp.shape.split_first() else {
        return Err("a row_sparse array must have a dimension".into());
    };
    let row_len: usize = rest.iter().product();
    if values.len() != rows.len() * row_len {
        return Err(format!("{} values do not fill {} rows of shape {:?}", values.len(), rows.len(), sp.shape));
    }
    for (i, &r) in rows.iter().enumerate() {
        let r = usize::try_from(r)
            .ok()
            .filter(|&r| r < n_rows)
            .ok_or_else(|| format!("row index {r} is outside 0..{n_rows}"))?;
        dense[r * row_len..(r + 1) * row_len].copy_from_slice(&values[i * row_len..(i + 1) * row_len]);
    }
    Ok(())
}

/// csr: the values of row `r` are at `indptr[r]..indptr[r + 1]`, in columns `cols[..]`.
fn scatter_csr<T: LeBytes>(
    sp: &Sparse<'_>,
    values: &[T],
    indptr: &[i64],
    cols: &[i64],
    dense: &mut [T],
) -> Result<(), String> {
    let &[n_rows, n_cols] = sp.shape else { return Err(format!("a csr array must be 2-D, not {:?}", sp.shape)) };
    let nnz = values.len();
    if cols.len() != nnz {
        return Err(format!("{nnz} values but {} column indices", cols.len()));
    }
    if nnz == 0 && indptr.iter().all(|&p| p == 0) {
        return Ok(()); // an all-zero csr array may store no row pointers at all
    }
    if indptr.len() != n_rows + 1 || indptr[0] != 0 || indptr[n_rows] != nnz as i64 {
        return Err(format!("row pointers {indptr:?} do not describe {n_rows} rows of {nnz} values"));
    }
    for (r, bounds) in indptr.windows(2).enumerate() {
        let (lo, hi) = (bounds[0], bounds[1]);
        if lo > hi || hi > nnz as i64 {
            return Err(format!("row pointers {indptr:?} are not nondecreasing within 0..={nnz}"));
        }
        let (lo, hi) = (lo as usize, hi as usize); // within 0..=nnz: checked above
        for (&c, &v) in cols[lo..hi].iter().zip(&values[lo..hi]) {
            let col = usize::try_from(c).ok().filter(|&c| c < n_cols);
            let col = col.ok_or_else(|| format!("column index {c} is outside 0..{n_cols}"))?;
            dense[r * n_cols + col] = v;
        }
    }
    Ok(())
}

/// What a sparse record of `storage` stores for the row-major `values` of `shape`: the stored
/// values, the index arrays in file order (row_sparse: row numbers; csr: row pointers, then
/// column numbers) and the storage shape. `shape` must fit (`csr`: 2-D; `row_sparse`: ≥ 1-D).
pub(crate) fn components<T: Copy + Default + PartialEq>(
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
