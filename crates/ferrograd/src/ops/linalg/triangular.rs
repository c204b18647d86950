//! Products with and solves against triangular matrices: `_linalg_trmm` (`alpha·op(A)·B` or
//! `alpha·B·op(A)`) and `_linalg_trsm` (`alpha·op(A)⁻¹·B` or `alpha·B·op(A)⁻¹`), where only the
//! lower (or, with `lower=False`, upper) triangle of A is read and `op` is an optional transpose.
//! Their gradients are trmm/trsm/gemm2 again, with A's gradient cut to the triangle read.

use std::sync::Arc;

use super::common::{gemm2, matmul, matrices, per_matrix, square, transposed};
use super::diagonal::triangle_of;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::attrs::fmt_float;
use crate::ops::params::{OpDef, OpParams};
use crate::ops::{Ctx, Grad, Op, Saves, Val};

/// Shared parameters of trmm and trsm, and which of the two.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Triangular {
    /// trsm (solve) rather than trmm (multiply).
    pub solve: bool,
    pub transpose: bool,
    pub rightside: bool,
    pub lower: bool,
    pub alpha: f64,
}

/// The dense `n×n` matrix `op(tri(A))`, and whether it is lower triangular.
fn effective(a: &[f64], n: usize, lower: bool, transpose: bool) -> (Vec<f64>, bool) {
    let mut t = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            if (lower && j <= i) || (!lower && j >= i) {
                t[i * n + j] = a[i * n + j];
            }
        }
    }
    if transpose {
        (transposed(&t, n, n), !lower)
    } else {
        (t, lower)
    }
}

/// Solves `T·X = B` in place (`b` is `n×c`) for triangular `T`; `Err(i)` if `T[i][i]` is zero.
fn solve_left(t: &[f64], n: usize, t_lower: bool, b: &mut [f64], c: usize) -> std::result::Result<(), usize> {
    let rows: Vec<usize> = if t_lower { (0..n).collect() } else { (0..n).rev().collect() };
    for &i in &rows {
        let d = t[i * n + i];
        if d == 0.0 {
            return Err(i);
        }
        let known: Vec<usize> = if t_lower { (0..i).collect() } else { (i + 1..n).collect() };
        for col in 0..c {
            let s: f64 = known.iter().map(|&p| t[i * n + p] * b[p * c + col]).sum();
            b[i * c + col] = (b[i * c + col] - s) / d;
        }
    }
    Ok(())
}

impl Triangular {
    /// (batch, n = side of A, rows and cols of B).
    fn dims(&self, a: &Meta, b: &Meta) -> Result<(usize, usize, usize, usize)> {
        let (batch, n) = square(self.name(), "A", a)?;
        let (_, r, c) = matrices(self.name(), "B", b)?;
        let (sa, sb) = (&a.shape, &b.shape);
        let fits = if self.rightside { c == n } else { r == n };
        if sa.len() != sb.len() || sa[..sa.len() - 2] != sb[..sb.len() - 2] || !fits || a.dtype != b.dtype {
            return Err(Error::Shape(format!(
                "{}: A {} ({}) and B {} ({}) do not fit: B needs the batch axes of A and {} {n} (rightside={})",
                self.name(),
                fmt_shape(sa),
                a.dtype,
                fmt_shape(sb),
                b.dtype,
                if self.rightside { "columns =" } else { "rows =" },
                self.rightside
            )));
        }
        Ok((batch, n, r, c))
    }

    fn with(&self, solve: bool, transpose: bool, alpha: f64) -> Triangular {
        Triangular { solve, transpose, alpha, ..*self }
    }
}

impl Op for Triangular {
    fn name(&self) -> &'static str {
        if self.solve {
            "_linalg_trsm"
        } else {
            "_linalg_trmm"
        }
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["A", "B"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = Vec::new();
        for (key, on) in [("transpose", self.transpose), ("rightside", self.rightside)] {
            if on {
                v.push((key, "True".into()));
            }
        }
        if !self.lower {
            v.push(("lower", "False".into()));
        }
        if self.alpha != 1.0 {
            v.push(("alpha", fmt_float(self.alpha)));
        }
        v
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        self.dims(&inputs[0], &inputs[1])?;
        Ok(vec![inputs[1].clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (batch, n, r, c) = self.dims(&inputs[0].meta(), &inputs[1].meta())?;
        let me = *self;
        per_matrix(&[&inputs[0], &inputs[1]], &[n * n, r * c], batch, outputs, &[r * c], n * r * c, |k, ins, outs| {
            let (t, t_lower) = effective(ins[0], n, me.lower, me.transpose);
            let mut y = match (me.solve, me.rightside) {
                (false, false) => matmul(&t, ins[1], n, n, c),
                (false, true) => matmul(ins[1], &t, r, n, n),
                (true, false) => {
                    let mut x = ins[1].to_vec();
                    solve_left(&t, n, t_lower, &mut x, c).map_err(|i| me.singular(k, i))?;
                    x
                }
                (true, true) => {
                    // X·T = B  <=>  Tᵀ·Xᵀ = Bᵀ.
                    let mut xt = transposed(ins[1], r, c);
                    solve_left(&transposed(&t, n, n), n, !t_lower, &mut xt, r).map_err(|i| me.singular(k, i))?;
                    transposed(&xt, c, r)
                }
            };
            if me.alpha != 1.0 {
                y.iter_mut().for_each(|v| *v *= me.alpha);
            }
            outs[0] = y;
            Ok(())
        })
    }
    fn saves(&self) -> Saves {
        if self.solve {
            Saves::InputsAndOutputs
        } else {
            Saves::Inputs
        }
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], outputs: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let (a, b, gy) = (inputs[0], inputs[1], og[0]);
        let (t, right) = (self.transpose, self.rightside);
        // T = op(tri(A)); dT is the gradient with respect to T, dA = op(dT) cut to the triangle.
        let (gb, ga) = if self.solve {
            let y = outputs[0];
            // W = T⁻ᵀ·G (or G·T⁻ᵀ): dB = alpha·W, dT = -W·Yᵀ (or -Yᵀ·W).
            let w = g.apply1(self.with(true, !t, 1.0), &[a, gy])?;
            let gb = g.mul_scalar(w, self.alpha)?;
            let ga = match (right, t) {
                (false, false) => gemm2(g, w, y, false, true, -1.0)?,
                (false, true) => gemm2(g, y, w, false, true, -1.0)?,
                (true, false) => gemm2(g, y, w, true, false, -1.0)?,
                (true, true) => gemm2(g, w, y, true, false, -1.0)?,
            };
            (gb, ga)
        } else {
            // dB = alpha·Tᵀ·G (or alpha·G·Tᵀ), dT = alpha·G·Bᵀ (or alpha·Bᵀ·G).
            let gb = g.apply1(self.with(false, !t, self.alpha), &[a, gy])?;
            let ga = match (right, t) {
                (false, false) => gemm2(g, gy, b, false, true, self.alpha)?,
                (false, true) => gemm2(g, b, gy, false, true, self.alpha)?,
                (true, false) => gemm2(g, b, gy, true, false, self.alpha)?,
                (true, true) => gemm2(g, gy, b, true, false, self.alpha)?,
            };
            (gb, ga)
        };
        let ga = triangle_of(g, ga, self.lower)?;
        Ok(vec![Some(ga), Some(gb)])
    }
}

impl Triangular {
    fn singular(&self, k: usize, i: usize) -> Error {
        Error::Value(format!(
            "{}: matrix {k} of the batch of A is singular (zero on the diagonal at row {i}), so it cannot be solved against",
            self.name()
        ))
    }
}

/// `trmm` / `trsm`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct TriangularParams {
    /// Use the transpose of A's triangle.
    #[param(default = false)]
    pub transpose: bool,
    /// Put the triangular matrix on the right (B·op(A)) instead of the left.
    #[param(default = false)]
    pub rightside: bool,
    /// Read A's lower triangle (else its upper one).
    #[param(default = true)]
    pub lower: bool,
    /// Factor applied to the result.
    #[param(default = 1.0)]
    pub alpha: f64,
}

fn build(a: &crate::ops::Attrs, solve: bool) -> Result<crate::ops::OpRef> {
    let p = TriangularParams::parse(a)?;
    Ok(Arc::new(Triangular { solve, transpose: p.transpose, rightside: p.rightside, lower: p.lower, alpha: p.alpha }))
}

/// The triangular ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "_linalg_trmm",
        aliases: &["linalg_trmm"],
        args: &["A", "B"],
        doc: "alpha·op(A)·B (or alpha·B·op(A) with rightside) for triangular A (lower, or upper with lower=False).",
        params: TriangularParams::schema,
        build: |a| build(a, false),
    },
    OpDef {
        name: "_linalg_trsm",
        aliases: &["linalg_trsm"],
        args: &["A", "B"],
        doc: "alpha·op(A)⁻¹·B (or alpha·B·op(A)⁻¹ with rightside): solves with triangular A.",
        params: TriangularParams::schema,
        build: |a| build(a, true),
    },
];
