//! Products with a csr matrix given by its components (`data`, `indices`, `indptr`, as dense
//! arrays; the Python `CSRNDArray` holds them): `_sparse_dot_csr` computes `csr · dense` or
//! `csrᵀ · dense`, `_sparse_dot_dense_csr` computes `dense · csr`. Work is proportional to the
//! stored values; the components are read in place (int64 indices stay int64, no copies). Each
//! output row is summed in a fixed order by one task, so results are bitwise identical for any
//! thread count. These forward kernels are not differentiable: the
//! Python front end records products through `dot` on the dense values when autograd records.

use std::ops::{Add, Mul, Range};
use std::sync::Arc;

use ferrograd_kernels::par::{for_each_chunk_weighted, num_threads, Cost};

use super::attrs::AttrValue;
use super::params::{OpDef, OpParams};
use super::{Ctx, Grad, Op, Saves, Val};
use crate::buffer::Buffer;
use crate::dtype::{DType, DTypeElem};
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};

/// Parameters of `_sparse_dot_csr`.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct SparseDotCsrParams {
    /// Number of columns of the csr matrix (its row count is `len(indptr) - 1`).
    pub num_cols: i64,
    /// Multiply by the csr matrix's transpose.
    #[param(default = false)]
    pub transpose_a: bool,
}

/// Parameters of `_sparse_dot_dense_csr`.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct SparseDotDenseCsrParams {
    /// Number of columns of the csr matrix (its row count is `len(indptr) - 1`).
    pub num_cols: i64,
}

/// An array's elements as a contiguous run of one buffer, held without copying (a cast or a
/// strided layout is copied once, as `dtype`).
struct Contig {
    buf: Arc<Buffer>,
    range: Range<usize>,
}

impl Contig {
    fn new(x: &NDArray, dtype: DType) -> Result<Contig> {
        let x = if x.dtype() == dtype { x.to_contiguous() } else { x.astype(dtype) };
        let range =
            x.layout().contiguous_range().ok_or_else(|| Error::Runtime("internal: copy is not contiguous".into()))?;
        Ok(Contig { buf: x.snapshot(), range })
    }

    fn slice<T: DTypeElem>(&self) -> Result<&[T]> {
        let s = self.buf.slice::<T>().ok_or_else(|| Error::DType(format!("internal: buffer is not {}", T::DTYPE)))?;
        Ok(&s[self.range.clone()])
    }
}

/// A csr matrix's index arrays, read in place (int64 indices are not copied) and checked.
struct CsrIndex {
    rows: usize,
    cols: usize,
    indptr: Contig,
    indices: Contig,
}

fn index_array(op: &str, what: &str, x: &NDArray) -> Result<Contig> {
    if x.ndim() != 1 {
        return Err(Error::Shape(format!("{op}: {what} must be 1-D, got shape {}", fmt_shape(x.shape()))));
    }
    Contig::new(x, DType::I64)
}

impl CsrIndex {
    /// Reads and checks `indptr` and `indices` against `nnz` stored values and `cols` columns.
    fn new(op: &str, indices: &NDArray, indptr: &NDArray, nnz: usize, cols: usize) -> Result<CsrIndex> {
        let csr = CsrIndex {
            rows: indptr.size().saturating_sub(1),
            cols,
            indptr: index_array(op, "indptr", indptr)?,
            indices: index_array(op, "indices", indices)?,
        };
        let (ptr, idx) = (csr.indptr.slice::<i64>()?, csr.indices.slice::<i64>()?);
        if ptr.is_empty() || ptr[0] != 0 || ptr[ptr.len() - 1] != nnz as i64 || ptr.windows(2).any(|w| w[0] > w[1]) {
            return Err(Error::Value(format!(
                "{op}: indptr must rise from 0 to the number of stored values ({nnz}) without decreasing"
            )));
        }
        if idx.len() != nnz {
            return Err(Error::Shape(format!("{op}: {} column indices for {nnz} stored values", idx.len())));
        }
        if let Some(&bad) = idx.iter().find(|&&c| c < 0 || c as usize >= cols) {
            return Err(Error::Value(format!("{op}: column index {bad} is outside [0, {cols})")));
        }
        Ok(csr)
    }

    /// `(indptr, indices)`, checked by [`CsrIndex::new`]: every entry is a valid position.
    fn parts(&self) -> Result<(&[i64], &[i64])> {
        Ok((self.indptr.slice::<i64>()?, self.indices.slice::<i64>()?))
    }
}

fn check_float(op: &str, inputs: &[&Meta]) -> Result<DType> {
    let dt = inputs[0].dtype;
    if !matches!(dt, DType::F32 | DType::F64) || inputs.iter().any(|m| m.dtype != dt) {
        return Err(Error::DType(format!("{op}: data and the dense operand must both be float32 or both float64")));
    }
    Ok(dt)
}

fn dim(v: i64, op: &str) -> Result<usize> {
    usize::try_from(v).map_err(|_| Error::Value(format!("{op}: num_cols must be >= 0, got {v}")))
}

trait Num: DTypeElem + Copy + Send + Sync + Default + Add<Output = Self> + Mul<Output = Self> {}
impl Num for f32 {}
impl Num for f64 {}

/// `row += v · src`, lane by lane (vectorised over the dense operand's columns).
#[inline]
fn axpy<T: Num>(row: &mut [T], v: T, src: &[T]) {
    row.iter_mut().zip(src).for_each(|(o, &x)| *o = *o + v * x);
}

/// `out[r, :] = Σ_j data[j] · rhs[indices[j], :]` over row `r`'s stored values, in order: each
/// output row is a sum of rows of `rhs`, made by one task (bitwise the same for any threads).
fn csr_times_dense<T: Num>(csr: &CsrIndex, data: &[T], rhs: &[T], n: usize, out: &mut [T]) -> Result<()> {
    let (ptr, idx) = csr.parts()?;
    let mut rows: Vec<&mut [T]> = out.chunks_mut(n.max(1)).collect();
    let work = (idx.len() / csr.rows.max(1) + 1) * n;
    for_each_chunk_weighted(&mut rows, work, Cost::Light, |start, chunk| {
        for (i, row) in chunk.iter_mut().enumerate() {
            let r = start + i;
            row.fill(T::default());
            for j in ptr[r] as usize..ptr[r + 1] as usize {
                let c = idx[j] as usize;
                axpy(row, data[j], &rhs[c * n..(c + 1) * n]);
            }
        }
    });
    Ok(())
}

/// `out[c, :] = Σ_r csr[r, c] · rhs[r, :]` (csrᵀ · rhs) without building the transpose: the
/// stored values are scattered row by row, so each output row sums in increasing `r`. Tasks
/// own disjoint ranges of output rows and each reads the whole structure (cheap next to the
/// `n`-wide updates), so the order, and the result, does not depend on the thread count.
fn csr_t_times_dense<T: Num>(csr: &CsrIndex, data: &[T], rhs: &[T], n: usize, out: &mut [T]) -> Result<()> {
    let (ptr, idx) = csr.parts()?;
    out.fill(T::default());
    let tasks = num_threads().clamp(1, csr.cols.max(1));
    let per_task = csr.cols.div_ceil(tasks).max(1);
    let mut parts: Vec<&mut [T]> = out.chunks_mut(per_task * n.max(1)).collect();
    let work = (idx.len() * n / parts.len().max(1)).max(1);
    for_each_chunk_weighted(&mut parts, work, Cost::Light, |first, chunk| {
        for (p, part) in chunk.iter_mut().enumerate() {
            let lo = (first + p) * per_task;
            let hi = lo + part.len() / n.max(1);
            for r in 0..csr.rows {
                let src = &rhs[r * n..(r + 1) * n];
                for j in ptr[r] as usize..ptr[r + 1] as usize {
                    let c = idx[j] as usize;
                    if (lo..hi).contains(&c) {
                        axpy(&mut part[(c - lo) * n..(c - lo + 1) * n], data[j], src);
                    }
                }
            }
        }
    });
    Ok(())
}

/// `out[i, :] = Σ_r lhs[i, r] · csr[r, :]` for every row `i` of the dense `lhs` (`m x rows`).
fn dense_times_csr<T: Num>(csr: &CsrIndex, data: &[T], lhs: &[T], m: usize, out: &mut [T]) -> Result<()> {
    let (ptr, idx) = csr.parts()?;
    let n = csr.cols;
    let mut rows: Vec<&mut [T]> = out.chunks_mut(n.max(1)).take(m).collect();
    let work = idx.len() + csr.rows + n;
    for_each_chunk_weighted(&mut rows, work, Cost::Light, |start, chunk| {
        for (i, row) in chunk.iter_mut().enumerate() {
            let a_row = &lhs[(start + i) * csr.rows..(start + i + 1) * csr.rows];
            row.fill(T::default());
            for (r, &a) in a_row.iter().enumerate() {
                for j in ptr[r] as usize..ptr[r + 1] as usize {
                    let o = &mut row[idx[j] as usize];
                    *o = *o + a * data[j];
                }
            }
        }
    });
    Ok(())
}

fn csr_forward<T: Num>(csr: &CsrIndex, transpose: bool, inputs: &[NDArray], n: usize, out: &mut NDArray) -> Result<()> {
    let (data, rhs) = (Contig::new(&inputs[0], T::DTYPE)?, Contig::new(&inputs[3], T::DTYPE)?);
    let (data, rhs) = (data.slice::<T>()?, rhs.slice::<T>()?);
    out.write_out::<T, _>(|out| {
        if transpose {
            csr_t_times_dense(csr, data, rhs, n, out)
        } else {
            csr_times_dense(csr, data, rhs, n, out)
        }
    })?
}

fn dense_csr_forward<T: Num>(csr: &CsrIndex, inputs: &[NDArray], m: usize, out: &mut NDArray) -> Result<()> {
    let (lhs, data) = (Contig::new(&inputs[0], T::DTYPE)?, Contig::new(&inputs[1], T::DTYPE)?);
    let (lhs, data) = (lhs.slice::<T>()?, data.slice::<T>()?);
    out.write_out::<T, _>(|out| dense_times_csr(csr, data, lhs, m, out))?
}

/// `_sparse_dot_csr(data, indices, indptr, rhs)`: csr · rhs, or csrᵀ · rhs with `transpose_a`.
#[derive(Clone, Debug, PartialEq)]
pub struct SparseDotCsr {
    num_cols: i64,
    transpose_a: bool,
}

impl Op for SparseDotCsr {
    fn name(&self) -> &'static str {
        "_sparse_dot_csr"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["data", "indices", "indptr", "rhs"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("num_cols", self.num_cols.to_string()), ("transpose_a", AttrValue::Bool(self.transpose_a).to_mx_string())]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let op = self.name();
        let dt = check_float(op, &[&inputs[0], &inputs[3]])?;
        let cols = dim(self.num_cols, op)?;
        let rows = inputs[2].shape.first().copied().unwrap_or(1).saturating_sub(1);
        let (inner, outer) = if self.transpose_a { (rows, cols) } else { (cols, rows) };
        let rhs = &inputs[3].shape;
        if rhs.len() != 2 || rhs[0] != inner {
            let a = if self.transpose_a { format!("({cols}, {rows})") } else { format!("({rows}, {cols})") };
            return Err(Error::Shape(format!(
                "{op}: the csr matrix{} of shape {a} does not fit rhs of shape {}",
                if self.transpose_a { " (transposed)" } else { "" },
                fmt_shape(rhs)
            )));
        }
        Ok(vec![Meta::new(&[outer, rhs[1]], dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let op = self.name();
        let nnz = inputs[0].size();
        let csr = CsrIndex::new(op, &inputs[1], &inputs[2], nnz, dim(self.num_cols, op)?)?;
        let n = inputs[3].shape()[1];
        match inputs[0].dtype() {
            DType::F32 => csr_forward::<f32>(&csr, self.transpose_a, inputs, n, &mut outputs[0]),
            _ => csr_forward::<f64>(&csr, self.transpose_a, inputs, n, &mut outputs[0]),
        }
    }
    fn differentiable(&self) -> bool {
        false
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![None; 4])
    }
}

/// `_sparse_dot_dense_csr(lhs, data, indices, indptr)`: lhs · csr.
#[derive(Clone, Debug, PartialEq)]
pub struct SparseDotDenseCsr {
    num_cols: i64,
}

impl Op for SparseDotDenseCsr {
    fn name(&self) -> &'static str {
        "_sparse_dot_dense_csr"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["lhs", "data", "indices", "indptr"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("num_cols", self.num_cols.to_string())]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let op = self.name();
        let dt = check_float(op, &[&inputs[0], &inputs[1]])?;
        let cols = dim(self.num_cols, op)?;
        let rows = inputs[3].shape.first().copied().unwrap_or(1).saturating_sub(1);
        let lhs = &inputs[0].shape;
        if lhs.len() != 2 || lhs[1] != rows {
            return Err(Error::Shape(format!(
                "{op}: lhs of shape {} does not fit the csr matrix of shape ({rows}, {cols})",
                fmt_shape(lhs)
            )));
        }
        Ok(vec![Meta::new(&[lhs[0], cols], dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let op = self.name();
        let csr = CsrIndex::new(op, &inputs[2], &inputs[3], inputs[1].size(), dim(self.num_cols, op)?)?;
        let m = inputs[0].shape()[0];
        match inputs[0].dtype() {
            DType::F32 => dense_csr_forward::<f32>(&csr, inputs, m, &mut outputs[0]),
            _ => dense_csr_forward::<f64>(&csr, inputs, m, &mut outputs[0]),
        }
    }
    fn differentiable(&self) -> bool {
        false
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![None; 4])
    }
}

/// The sparse product ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "_sparse_dot_csr",
        aliases: &[],
        args: &["data", "indices", "indptr", "rhs"],
        doc: "csr · rhs (or csrᵀ · rhs with transpose_a) from the csr matrix's components; not differentiable.",
        params: SparseDotCsrParams::schema,
        build: |a| {
            let p = SparseDotCsrParams::parse(a)?;
            Ok(Arc::new(SparseDotCsr { num_cols: p.num_cols, transpose_a: p.transpose_a }))
        },
    },
    OpDef {
        name: "_sparse_dot_dense_csr",
        aliases: &[],
        args: &["lhs", "data", "indices", "indptr"],
        doc: "lhs · csr from the csr matrix's components; not differentiable.",
        params: SparseDotDenseCsrParams::schema,
        build: |a| {
            let p = SparseDotDenseCsrParams::parse(a)?;
            Ok(Arc::new(SparseDotDenseCsr { num_cols: p.num_cols }))
        },
    },
];
