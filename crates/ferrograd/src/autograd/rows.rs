//! Row-sparse gradients (MXNet's `row_sparse` gradient storage).
//!
//! A variable marked row-sparse holds its gradient as rows: `data` (`k × row shape`) for the
//! sorted, unique row numbers `indices` (`k`, int64), never a table-sized buffer. A backward sweep
//! collects what row lookups ([`crate::ops::Op::row_lookup`]) send to such a variable as
//! (row numbers, output-gradient rows) and merges them once at the end; any other contribution
//! makes the gradient dense (with the rows added in), which stays correct, only not sparse.

use ferrograd_kernels::Element;
use parking_lot::Mutex;

use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::NDArray;
use crate::ops::binary::Num;
use crate::ops::common::{dense, resolve_index};
use crate::ops::indexing::{index_values, RowLookup};
use crate::with_dtype;

use super::{GradReq, Tracked};

/// A row-sparse gradient: row `indices[i]` of the full gradient is `data[i]`; other rows are 0.
#[derive(Clone, Debug)]
pub struct RowGrad {
    pub data: NDArray,
    pub indices: NDArray,
}

/// A variable's gradient as a backward pass produced it.
#[derive(Clone)]
pub enum GradValue {
    /// A dense gradient (tracked: under `create_graph` it is differentiable again).
    Dense(Tracked),
    Rows(RowGrad),
}

/// What a row-sparse variable holds: rows, or a dense gradient after a contribution that was not
/// a row lookup.
#[derive(Clone)]
pub(crate) enum RowState {
    Rows(RowGrad),
    Dense(NDArray),
}

impl RowState {
    pub(crate) fn into_value(self) -> GradValue {
        match self {
            RowState::Rows(r) => GradValue::Rows(r),
            RowState::Dense(d) => GradValue::Dense(Tracked::new(d)),
        }
    }
}

/// The gradient store of a row-sparse variable of `shape` and `dtype`.
pub(crate) struct RowSparse {
    pub(crate) shape: Vec<usize>,
    pub(crate) dtype: DType,
    pub(crate) state: Mutex<RowState>,
}

impl RowSparse {
    pub(crate) fn new(shape: &[usize], dtype: DType) -> Result<RowSparse> {
        if shape.is_empty() {
            return Err(Error::Shape(
                "attach_grad: a row_sparse gradient needs at least one dimension, got shape ()".into(),
            ));
        }
        Ok(RowSparse { shape: shape.to_vec(), dtype, state: Mutex::new(RowState::Rows(empty_rows(shape, dtype))) })
    }

    /// Stores a backward's result per `req` (`add` merges rows with the stored ones).
    pub(crate) fn store(&self, req: GradReq, value: RowState) -> Result<()> {
        let mut state = self.state.lock();
        match req {
            GradReq::Null => {}
            GradReq::Write => *state = value,
            GradReq::Add => *state = add_states(&self.shape, &state, value)?,
        }
        Ok(())
    }

    /// No stored rows (what `zero_grad` leaves, as in MXNet).
    pub(crate) fn clear(&self) {
        *self.state.lock() = RowState::Rows(empty_rows(&self.shape, self.dtype));
    }
}

pub(crate) fn empty_rows(shape: &[usize], dtype: DType) -> RowGrad {
    let mut data_shape = shape.to_vec();
    data_shape[0] = 0;
    RowGrad { data: NDArray::zeros(&data_shape, dtype), indices: NDArray::zeros(&[0], DType::I64) }
}

/// One sweep's contribution from a row lookup: gradient rows `rows` for the rows numbered by
/// `indices` (before resolving out-of-range numbers by `lookup.mode`).
pub(crate) struct RowPart {
    pub(crate) indices: NDArray,
    pub(crate) rows: NDArray,
    pub(crate) lookup: RowLookup,
    pub(crate) op: &'static str,
}

/// Row numbers and a contiguous `(n, inner)` block of rows, ready to merge.
struct Block {
    rows: Vec<usize>,
    data: NDArray,
}

impl Block {
    fn from_part(part: &RowPart, shape: &[usize], dtype: DType) -> Result<Block> {
        let op = part.op;
        let n = shape[0];
        let rows = index_values(&part.indices)?
            .into_iter()
            .map(|i| resolve_index(op, i, n, 0, part.lookup.mode))
            .collect::<Result<Vec<usize>>>()?;
        let mut want = part.indices.shape().to_vec();
        want.extend_from_slice(&shape[1..]);
        if part.rows.shape() != want.as_slice() {
            return Err(Error::Shape(format!(
                "{op}: output gradient of shape {} does not match indices {} and rows of {}",
                fmt_shape(part.rows.shape()),
                fmt_shape(part.indices.shape()),
                fmt_shape(shape)
            )));
        }
        let data = if part.rows.dtype() == dtype { part.rows.clone() } else { part.rows.astype(dtype) };
        Ok(Block { rows, data })
    }

    fn from_rows(r: &RowGrad) -> Result<Block> {
        let rows = r.indices.to_vec::<i64>()?.into_iter().map(|i| i as usize).collect();
        Ok(Block { rows, data: r.data.clone() })
    }
}

/// Sums blocks of rows by row number: sorted unique row numbers, each row the sum of its
/// contributions in the order given (blocks in order, rows in order within a block), so the
/// result is the same bit for bit on every run.
fn merge(shape: &[usize], dtype: DType, blocks: &[Block]) -> Result<RowGrad> {
    let inner: usize = shape[1..].iter().product();
    let mut order: Vec<(usize, u32, u32)> = Vec::with_capacity(blocks.iter().map(|b| b.rows.len()).sum());
    for (b, block) in blocks.iter().enumerate() {
        order.extend(block.rows.iter().enumerate().map(|(i, &r)| (r, b as u32, i as u32)));
    }
    order.sort_unstable();
    let mut indices: Vec<i64> = order.iter().map(|&(r, ..)| r as i64).collect();
    indices.dedup();
    let k = indices.len();
    let data = with_dtype!(dtype, T => {
        let srcs: Vec<_> = blocks.iter().map(|b| dense(&b.data)).collect();
        let slices: Vec<&[T]> = srcs.iter().map(|(buf, range)| buf.typed::<T>().map(|s| &s[range.clone()])).collect::<Result<_>>()?;
        let mut out = vec![T::zero(); k * inner];
        let mut slot = 0usize;
        for (j, &(r, b, i)) in order.iter().enumerate() {
            let src = &slices[b as usize][i as usize * inner..(i as usize + 1) * inner];
            let first = j == 0 || order[j - 1].0 != r;
            if first && j > 0 {
                slot += 1;
            }
            let dst = &mut out[slot * inner..(slot + 1) * inner];
            if first {
                dst.copy_from_slice(src);
            } else {
                dst.iter_mut().zip(src).for_each(|(o, &v)| *o = <T as Num>::add(*o, v));
            }
        }
        let mut data_shape = shape.to_vec();
        data_shape[0] = k;
        NDArray::from_vec(out, &data_shape)?
    });
    Ok(RowGrad { data, indices: NDArray::from_vec(indices, &[k])? })
}

/// `base` with `rows` added into their rows (a new array).
fn add_rows(base: &NDArray, rows: &RowGrad) -> Result<NDArray> {
    let inner: usize = base.shape()[1..].iter().product();
    let idx = rows.indices.to_vec::<i64>()?;
    Ok(with_dtype!(base.dtype(), T => {
        let mut out = base.to_vec::<T>()?;
        let add = rows.data.astype(base.dtype()).to_vec::<T>()?;
        for (j, &r) in idx.iter().enumerate() {
            let dst = &mut out[r as usize * inner..(r as usize + 1) * inner];
            dst.iter_mut().zip(&add[j * inner..(j + 1) * inner]).for_each(|(o, &v)| *o = <T as Num>::add(*o, v));
        }
        NDArray::from_vec(out, base.shape())?
    }))
}

/// The dense array `rows` stand for (allocates the whole table: only for callers asking for a
/// dense gradient).
pub(crate) fn densify(shape: &[usize], rows: &RowGrad) -> Result<NDArray> {
    add_rows(&NDArray::try_full("row_sparse gradient", shape, rows.data.dtype(), 0.0)?, rows)
}

fn dense_sum(a: &NDArray, b: &NDArray) -> Result<NDArray> {
    let add = crate::ops::binary::Binary { kind: crate::ops::binary::BinaryKind::Add, broadcast: false };
    crate::ops::run1(&add, &Default::default(), &[a.clone(), b.clone()])
}

fn add_states(shape: &[usize], old: &RowState, new: RowState) -> Result<RowState> {
    Ok(match (old, new) {
        (RowState::Rows(a), RowState::Rows(b)) => {
            RowState::Rows(merge(shape, a.data.dtype(), &[Block::from_rows(a)?, Block::from_rows(&b)?])?)
        }
        (RowState::Dense(d), RowState::Rows(r)) => RowState::Dense(add_rows(d, &r)?),
        (RowState::Rows(r), RowState::Dense(d)) => RowState::Dense(add_rows(&d, r)?),
        (RowState::Dense(a), RowState::Dense(b)) => RowState::Dense(dense_sum(a, &b)?),
    })
}

/// One sweep's gradient for a row-sparse variable: the row lookups' parts merged, plus the dense
/// sum of every other contribution (if any), which makes the result dense.
pub(crate) fn finish(
    shape: &[usize],
    dtype: DType,
    dense: Option<NDArray>,
    parts: &[RowPart],
) -> Result<Option<RowState>> {
    if parts.is_empty() {
        return Ok(dense.map(RowState::Dense));
    }
    let blocks = parts.iter().map(|p| Block::from_part(p, shape, dtype)).collect::<Result<Vec<_>>>()?;
    let rows = merge(shape, dtype, &blocks)?;
    Ok(Some(match dense {
        Some(d) => RowState::Dense(add_rows(&d, &rows)?),
        None => RowState::Rows(rows),
    }))
}
