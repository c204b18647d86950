//! Products with a csr matrix given by its components (`data`, `indices`, `indptr`, as dense
//! arrays; the Python `CSRNDArray` holds them): `_sparse_dot_csr` computes `csr · dense` or
//! `csrᵀ · dense`, `_sparse_dot_dense_csr` computes `dense · csr`. Work is proportional to the
//! stored values. Each output row is summed in a fixed order by one task, so results are
//! bitwise identical for any thread count. These forward kernels are not differentiable: the
//! Python front end records products through `dot` on the dense values when autograd records.

use std::ops::{Add, Mul};
use std::sync::Arc;

use ferrograd_kernels::par::{for_each_chunk_weighted, Cost};

use super::attrs::AttrValue;
use super::params::{OpDef, OpParams};
use super::{Ctx, Grad, Op, Saves, Val};
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

/// A csr matrix's checked structure: row pointers and column numbers as `usize`.
struct CsrIndex {
    rows: usize,
    cols: usize,
    indptr: Vec<usize>,
    indices: Vec<usize>,
}

fn index_values(op: &str, what: &str, x: &NDArray) -> Result<Vec<i64>> {
    if x.ndim() != 1 {
        return Err(Error::Shape(format!("{op}: {what} must be 1-D, got shape {}", fmt_shape(x.shape()))));
    }
    x.astype(DType::I64).to_vec::<i64>()
}

impl CsrIndex {
    /// Reads and checks `indptr` and `indices` against `nnz` stored values and `cols` columns.
    fn new(op: &str, indices: &NDArray, indptr: &NDArray, nnz: usize, cols: usize) -> Result<CsrIndex> {
        let ptr = index_values(op, "indptr", indptr)?;
        let idx = index_values(op, "indices", indices)?;
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
        Ok(CsrIndex {
            rows: ptr.len() - 1,
            cols,
            indptr: ptr.into_iter().map(|p| p as usize).collect(),
            indices: idx.into_iter().map(|c| c as usize).collect(),
        })
    }

    /// The transpose's structure (csc of this matrix) and, per stored value, where it came from;
    /// within each column the rows stay in increasing order.
    fn transposed(&self) -> (CsrIndex, Vec<usize>) {
        let mut counts = vec![0usize; self.cols + 1];
        for &c in &self.indices {
            counts[c + 1] += 1;
        }
        for c in 0..self.cols {
            counts[c + 1] += counts[c];
        }
        let mut next = counts.clone();
        let (mut rows, mut origin) = (vec![0; self.indices.len()], vec![0; self.indices.len()]);
        for r in 0..self.rows {
            for j in self.indptr[r]..self.indptr[r + 1] {
                let c = self.indices[j];
                rows[next[c]] = r;
                origin[next[c]] = j;
                next[c] += 1;
            }
        }
        (CsrIndex { rows: self.cols, cols: self.rows, indptr: counts, indices: rows }, origin)
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

/// `out[r, :] = Σ_j data[j] · rhs[indices[j], :]` over row `r`'s stored values, for every row.
fn gather_rows<T: Num>(csr: &CsrIndex, data: &[T], order: Option<&[usize]>, rhs: &[T], n: usize, out: &mut [T]) {
    let mut rows: Vec<&mut [T]> = out.chunks_mut(n.max(1)).collect();
    let work = (csr.indices.len() / csr.rows.max(1) + 1) * n;
    for_each_chunk_weighted(&mut rows, work, Cost::Light, |start, chunk| {
        for (i, row) in chunk.iter_mut().enumerate() {
            let r = start + i;
            row.iter_mut().for_each(|o| *o = T::default());
            for j in csr.indptr[r]..csr.indptr[r + 1] {
                let v = data[order.map_or(j, |o| o[j])];
                let src = &rhs[csr.indices[j] * n..(csr.indices[j] + 1) * n];
                row.iter_mut().zip(src).for_each(|(o, &x)| *o = *o + v * x);
            }
        }
    });
}

/// `out[i, :] = Σ_r lhs[i, r] · csr[r, :]` for every row `i` of the dense `lhs` (`m x rows`).
fn dense_times_csr<T: Num>(csr: &CsrIndex, data: &[T], lhs: &[T], m: usize, out: &mut [T]) {
    let n = csr.cols;
    let mut rows: Vec<&mut [T]> = out.chunks_mut(n.max(1)).take(m).collect();
    let work = csr.indices.len() + csr.rows + n;
    for_each_chunk_weighted(&mut rows, work, Cost::Light, |start, chunk| {
        for (i, row) in chunk.iter_mut().enumerate() {
            let a_row = &lhs[(start + i) * csr.rows..(start + i + 1) * csr.rows];
            row.iter_mut().for_each(|o| *o = T::default());
            for (r, &a) in a_row.iter().enumerate() {
                for j in csr.indptr[r]..csr.indptr[r + 1] {
                    let o = &mut row[csr.indices[j]];
                    *o = *o + a * data[j];
                }
            }
        }
    });
}

fn values<T: Num>(x: &NDArray) -> Result<Vec<T>> {
    x.to_vec::<T>()
}

fn csr_forward<T: Num>(csr: &CsrIndex, transpose: bool, inputs: &[NDArray], n: usize, out: &mut NDArray) -> Result<()> {
    let (data, rhs) = (values::<T>(&inputs[0])?, values::<T>(&inputs[3])?);
    out.write_out::<T, _>(|out| {
        if transpose {
            let (csc, origin) = csr.transposed();
            gather_rows(&csc, &data, Some(&origin), &rhs, n, out);
        } else {
            gather_rows(csr, &data, None, &rhs, n, out);
        }
    })
}

fn dense_csr_forward<T: Num>(csr: &CsrIndex, inputs: &[NDArray], m: usize, out: &mut NDArray) -> Result<()> {
    let (lhs, data) = (values::<T>(&inputs[0])?, values::<T>(&inputs[1])?);
    out.write_out::<T, _>(|out| dense_times_csr(csr, &data, &lhs, m, out))
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
