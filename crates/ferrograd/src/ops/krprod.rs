//! `khatri_rao(*args)`: the column-wise Kronecker product of matrices `A_i` of shape `(M_i, N)`,
//! giving `(M_1·…·M_n, N)` with row `(i_1, …, i_n)` (row-major, `i_1` slowest) of column `k`
//! equal to `Π_j A_j[i_j, k]`.
//!
//! MXNet 1.9.1 has no gradient for it and runs float32/float64 only. Here every numeric dtype
//! works, and the gradient is written with registered ops (reshape, broadcast, product, sum):
//! `dA_j = Σ_{all i but i_j} h[i_1, …, i_n, k] · Π_{l≠j} A_l[i_l, k]`, so it differentiates again.

use std::sync::Arc;

use ferrograd_kernels::par::{self, Cost};
use ferrograd_kernels::Element;

use super::binary::Num;
use super::common::dense;
use super::params::{OpDef, OpParams};
use super::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::with_dtype;

/// `khatri_rao`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct KhatriRaoParams {
    /// Number of input matrices (filled in from the arrays given; checked against them).
    #[param(default = None)]
    pub num_args: Option<i64>,
}

/// `khatri_rao(*args, num_args)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KhatriRao {
    pub num_args: Option<usize>,
}

fn shapes_text(inputs: &[Meta]) -> String {
    inputs.iter().map(|m| fmt_shape(&m.shape)).collect::<Vec<_>>().join(", ")
}

impl Op for KhatriRao {
    fn name(&self) -> &'static str {
        "khatri_rao"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["*args"]
    }
    fn variadic(&self) -> bool {
        true
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.num_args.map(|n| vec![("num_args", n.to_string())]).unwrap_or_default()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let n = inputs.len();
        if let Some(k) = self.num_args.filter(|&k| k != n) {
            return Err(Error::Value(format!("khatri_rao: num_args={k} but {n} matrices were given")));
        }
        let first = inputs.first().ok_or_else(|| Error::Value("khatri_rao: needs at least one matrix".into()))?;
        let mut rows = 1usize;
        for (i, m) in inputs.iter().enumerate() {
            if m.shape.len() != 2 || m.shape[1] != first.shape.get(1).copied().unwrap_or(0) {
                return Err(Error::Shape(format!(
                    "khatri_rao: every input must be a matrix (M_i, N) with the same number of columns N; input \
                     {i} has shape {} (inputs: {})",
                    fmt_shape(&m.shape),
                    shapes_text(inputs)
                )));
            }
            if m.dtype != first.dtype {
                return Err(Error::DType(format!(
                    "khatri_rao: input {i} has dtype {}, input 0 has {}; all inputs must share one dtype",
                    m.dtype, first.dtype
                )));
            }
            rows = rows.checked_mul(m.shape[0]).ok_or_else(|| {
                Error::Shape(format!("khatri_rao: the product's row count overflows (inputs: {})", shapes_text(inputs)))
            })?;
        }
        if first.dtype == DType::Bool {
            return Err(Error::DType("khatri_rao: inputs must be numeric, got bool".into()));
        }
        Ok(vec![Meta::new(&[rows, first.shape[1]], first.dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let cols = inputs[0].shape()[1];
        let rows: Vec<usize> = inputs.iter().map(|x| x.shape()[0]).collect();
        let dense: Vec<_> = inputs.iter().map(dense).collect();
        with_dtype!(outputs[0].dtype(), T => {
            let srcs: Vec<&[T]> =
                dense.iter().map(|(b, r)| b.typed::<T>().map(|s| &s[r.clone()])).collect::<Result<_>>()?;
            outputs[0].write_out::<T, _>(|o| {
                if cols == 0 {
                    return;
                }
                par::for_each_chunk(o, Cost::Light, |start, chunk| {
                    for (e, v) in chunk.iter_mut().enumerate() {
                        let (mut r, k) = ((start + e) / cols, (start + e) % cols);
                        // Split the row index into (i_1, …, i_n), the last matrix fastest.
                        let mut acc = T::one();
                        for (s, &m) in srcs.iter().zip(&rows).rev() {
                            acc = T::mul(acc, s[(r % m) * cols + k]);
                            r /= m;
                        }
                        *v = acc;
                    }
                });
            })
        })
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let n = inputs.len();
        let shapes: Vec<Vec<usize>> = inputs.iter().map(|&v| g.shape(v)).collect();
        let cols = shapes[0][1];
        // The head gradient with its row axis split into one axis per matrix.
        let mut full: Vec<usize> = shapes.iter().map(|s| s[0]).collect();
        full.push(cols);
        let h = g.reshape(og[0], &full)?;
        // Each matrix as an (n+1)-axis array that broadcasts along the other matrices' axes.
        let mut spread = Vec::with_capacity(n);
        for (j, &a) in inputs.iter().enumerate() {
            let mut s = vec![1; n + 1];
            s[j] = shapes[j][0];
            s[n] = cols;
            let r = g.reshape(a, &s)?;
            spread.push(g.broadcast_to(r, &full)?);
        }
        let mut grads = Vec::with_capacity(n);
        for (j, shape) in shapes.iter().enumerate() {
            let mut t = h;
            for (l, &b) in spread.iter().enumerate() {
                if l != j {
                    t = g.mul(t, b)?;
                }
            }
            let axes: Vec<i64> = (0..n).filter(|&l| l != j).map(|l| l as i64).collect();
            let s = if axes.is_empty() { t } else { g.sum_axes(t, axes, false)? };
            grads.push(Some(g.reshape(s, shape)?));
        }
        Ok(grads)
    }
}

fn build(a: &Attrs) -> Result<OpRef> {
    let p = KhatriRaoParams::parse(a)?;
    let num_args = match p.num_args {
        None => None,
        Some(n) if n >= 1 => Some(n as usize),
        Some(n) => return Err(Error::Value(format!("khatri_rao: num_args must be >= 1, got {n}"))),
    };
    Ok(Arc::new(KhatriRao { num_args }))
}

/// `khatri_rao`'s declaration.
pub const DEFS: &[OpDef] = &[OpDef {
    name: "khatri_rao",
    aliases: &[],
    args: &["*args"],
    doc: "Column-wise Kronecker (Khatri-Rao) product of matrices (M_i, N): an (M_1·…·M_n, N) matrix whose \
          column k is the outer product of the inputs' columns k.",
    params: KhatriRaoParams::schema,
    build,
}];
