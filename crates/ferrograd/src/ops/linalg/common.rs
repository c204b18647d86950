//! What the linalg ops share: the geometry of a stack of matrices on the last two axes, the
//! per-matrix evaluation (in float64, spread over the batch when the work pays) and small
//! gradient-building helpers written with registered ops.

use ferrograd_kernels::par::{map_tasks, Cost};
use ferrograd_kernels::Element;

use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::nn::dense::LinalgGemm2;
use crate::ops::{Grad, Val};
use crate::with_dtype;

/// The linalg ops compute in float32 or float64 only, as MXNet's.
pub(crate) fn check_float(op: &str, arg: &str, m: &Meta) -> Result<()> {
    if matches!(m.dtype, DType::F32 | DType::F64) {
        Ok(())
    } else {
        Err(Error::DType(format!("{op}: {arg} must be float32 or float64, got {}", m.dtype)))
    }
}

/// `(batch, rows, cols)` of a stack of matrices on the last two axes.
pub(crate) fn matrices(op: &str, arg: &str, m: &Meta) -> Result<(usize, usize, usize)> {
    check_float(op, arg, m)?;
    let s = &m.shape;
    if s.len() < 2 {
        return Err(Error::Shape(format!(
            "{op}: {arg} must be a tensor of matrices (at least 2 dimensions), got shape {}",
            fmt_shape(s)
        )));
    }
    Ok((s[..s.len() - 2].iter().product(), s[s.len() - 2], s[s.len() - 1]))
}

/// `(batch, n)` of a stack of square matrices.
pub(crate) fn square(op: &str, arg: &str, m: &Meta) -> Result<(usize, usize)> {
    let (b, r, c) = matrices(op, arg, m)?;
    if r != c {
        return Err(Error::Shape(format!(
            "{op}: {arg} must be a tensor of square matrices, got shape {}",
            fmt_shape(&m.shape)
        )));
    }
    Ok((b, r))
}

/// The shape of a per-matrix scalar result (`det`, `sumlogdiag`): the leading axes, or `(1,)`
/// for a single matrix, as MXNet's.
pub(crate) fn scalar_shape(shape: &[usize]) -> Vec<usize> {
    let lead = &shape[..shape.len() - 2];
    if lead.is_empty() {
        vec![1]
    } else {
        lead.to_vec()
    }
}

/// The inputs' values in float64.
fn values(x: &NDArray) -> Result<Vec<f64>> {
    x.astype(DType::F64).to_vec::<f64>()
}

fn store(out: &mut NDArray, v: &[f64]) -> Result<()> {
    with_dtype!(out.dtype(), T => out.write_out::<T, _>(|o| {
        for (o, &x) in o.iter_mut().zip(v) {
            *o = T::from_f64(x);
        }
    }))
}

/// Runs `f(k, inputs_k, outputs_k)` for each matrix `k` of a batch of `batch`, where input `i`
/// contributes `in_sizes[i]` values per matrix and output `j` takes `out_sizes[j]` (zeroed before
/// `f`). Computes in float64; goes parallel over the batch when `batch · work` elements of work
/// (per-matrix flops) pay for it. The first error (in batch order) is returned.
pub(crate) fn per_matrix<F>(
    inputs: &[&NDArray],
    in_sizes: &[usize],
    batch: usize,
    outputs: &mut [NDArray],
    out_sizes: &[usize],
    work: usize,
    f: F,
) -> Result<()>
where
    F: Fn(usize, &[&[f64]], &mut [Vec<f64>]) -> Result<()> + Sync + Send,
{
    let vals = inputs.iter().map(|x| values(x)).collect::<Result<Vec<_>>>()?;
    let results = map_tasks(batch, batch.saturating_mul(work), Cost::Heavy, |k| {
        let ins: Vec<&[f64]> = vals.iter().zip(in_sizes).map(|(v, &s)| &v[k * s..(k + 1) * s]).collect();
        let mut outs: Vec<Vec<f64>> = out_sizes.iter().map(|&s| vec![0.0; s]).collect();
        f(k, &ins, &mut outs).map(|()| outs)
    });
    let mut flat: Vec<Vec<f64>> = out_sizes.iter().map(|&s| Vec::with_capacity(s * batch)).collect();
    for r in results {
        for (dst, part) in flat.iter_mut().zip(r?) {
            dst.extend(part);
        }
    }
    for (out, v) in outputs.iter_mut().zip(&flat) {
        store(out, v)?;
    }
    Ok(())
}

/// Row-major `a (m×k) · b (k×n)`.
pub(crate) fn matmul(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for p in 0..k {
            let x = a[i * k + p];
            if x != 0.0 {
                for j in 0..n {
                    c[i * n + j] += x * b[p * n + j];
                }
            }
        }
    }
    c
}

/// Row-major transpose of an `r×c` matrix.
pub(crate) fn transposed(a: &[f64], r: usize, c: usize) -> Vec<f64> {
    let mut t = vec![0.0; r * c];
    for i in 0..r {
        for j in 0..c {
            t[j * r + i] = a[i * c + j];
        }
    }
    t
}

/// `v` with its last two axes swapped.
pub(crate) fn swap_last(g: &mut Grad<'_>, v: Val) -> Result<Val> {
    let nd = g.shape(v).len() as i64;
    let mut axes: Vec<i64> = (0..nd).collect();
    axes.swap(nd as usize - 2, nd as usize - 1);
    g.transpose(v, axes)
}

/// `alpha · op(a) · op(b)` over the last two axes (the registered `linalg_gemm2`).
pub(crate) fn gemm2(g: &mut Grad<'_>, a: Val, b: Val, ta: bool, tb: bool, alpha: f64) -> Result<Val> {
    g.apply1(LinalgGemm2 { transpose_a: ta, transpose_b: tb, alpha }, &[a, b])
}
