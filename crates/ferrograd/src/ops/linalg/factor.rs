//! Factorisations and what follows from them: `_linalg_potrf` (Cholesky), `_linalg_potri`
//! (inverse from a Cholesky factor), `_linalg_inverse`, `_linalg_det`, `_linalg_slogdet`.
//!
//! Gradients are written with registered ops (trsm, gemm2, the triangle/diagonal ops and the
//! inverse), so they can be differentiated again. potrf reads only A's lower triangle, as
//! LAPACK's; its gradient is the symmetric one MXNet gives (A is meant to be symmetric).

use std::sync::Arc;

use super::common::{gemm2, per_matrix, scalar_shape, square, swap_last, transposed};
use super::diagonal::{diagonal_of, triangle_of};
use super::triangular::Triangular;
use crate::error::{Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::params::{NoParams, OpDef, OpParams};
use crate::ops::{Ctx, Grad, Op, OpRef, Saves, Val};

/// Cholesky factor of the lower triangle of `a`; `Err(i)` when the leading `i+1` block is not
/// positive definite.
fn cholesky(a: &[f64], n: usize) -> std::result::Result<Vec<f64>, usize> {
    let mut l = vec![0.0; n * n];
    for j in 0..n {
        let d = a[j * n + j] - (0..j).map(|p| l[j * n + p] * l[j * n + p]).sum::<f64>();
        if d.is_nan() || d <= 0.0 {
            return Err(j);
        }
        let d = d.sqrt();
        l[j * n + j] = d;
        for i in j + 1..n {
            let s = a[i * n + j] - (0..j).map(|p| l[i * n + p] * l[j * n + p]).sum::<f64>();
            l[i * n + j] = s / d;
        }
    }
    Ok(l)
}

/// Inverse of the lower triangle of `l`; `Err(i)` when `l[i][i]` is zero.
fn lower_inverse(l: &[f64], n: usize) -> std::result::Result<Vec<f64>, usize> {
    let mut x = vec![0.0; n * n];
    for c in 0..n {
        for i in c..n {
            let d = l[i * n + i];
            if d == 0.0 {
                return Err(i);
            }
            let rhs = if i == c { 1.0 } else { 0.0 };
            let s: f64 = (c..i).map(|p| l[i * n + p] * x[p * n + c]).sum();
            x[i * n + c] = (rhs - s) / d;
        }
    }
    Ok(x)
}

/// LU factorisation with partial pivoting: (packed LU, row permutation, its sign, whether a
/// pivot is exactly zero, i.e. the matrix is singular).
fn lu(a: &[f64], n: usize) -> (Vec<f64>, Vec<usize>, f64, bool) {
    let mut m = a.to_vec();
    let mut perm: Vec<usize> = (0..n).collect();
    let (mut sign, mut singular) = (1.0, false);
    for c in 0..n {
        let p = (c..n).max_by(|&i, &j| m[i * n + c].abs().total_cmp(&m[j * n + c].abs())).unwrap_or(c);
        if p != c {
            for j in 0..n {
                m.swap(c * n + j, p * n + j);
            }
            perm.swap(c, p);
            sign = -sign;
        }
        let d = m[c * n + c];
        if d == 0.0 {
            singular = true;
            continue;
        }
        for i in c + 1..n {
            let f = m[i * n + c] / d;
            m[i * n + c] = f;
            for j in c + 1..n {
                m[i * n + j] -= f * m[c * n + j];
            }
        }
    }
    (m, perm, sign, singular)
}

/// Which of the factorisation ops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Potrf,
    Potri,
    Inverse,
    Det,
    Slogdet,
}

/// One of `_linalg_potrf`, `_linalg_potri`, `_linalg_inverse`, `_linalg_det`, `_linalg_slogdet`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Factor {
    pub kind: Kind,
}

impl Factor {
    fn fail(&self, k: usize, why: String) -> Error {
        Error::Value(format!("{}: matrix {k} of the batch of A {why}", self.name()))
    }

    fn one(&self, k: usize, a: &[f64], n: usize, outs: &mut [Vec<f64>]) -> Result<()> {
        match self.kind {
            Kind::Potrf => {
                outs[0] = cholesky(a, n).map_err(|i| {
                    self.fail(k, format!("is not symmetric positive definite (the factorisation fails at row {i})"))
                })?;
            }
            Kind::Potri => {
                let inv = lower_inverse(a, n)
                    .map_err(|i| self.fail(k, format!("is not a Cholesky factor: its diagonal is zero at row {i}")))?;
                // (L·Lᵀ)⁻¹ = L⁻ᵀ·L⁻¹.
                outs[0] = super::common::matmul(&transposed(&inv, n, n), &inv, n, n, n);
            }
            Kind::Inverse => {
                let (m, perm, _, singular) = lu(a, n);
                if singular {
                    return Err(self.fail(k, "is singular, so it has no inverse".into()));
                }
                // Solve L·U·X = P·I column by column.
                let x = &mut outs[0];
                for c in 0..n {
                    let mut y: Vec<f64> = perm.iter().map(|&r| if r == c { 1.0 } else { 0.0 }).collect();
                    for i in 0..n {
                        y[i] -= (0..i).map(|p| m[i * n + p] * y[p]).sum::<f64>();
                    }
                    for i in (0..n).rev() {
                        y[i] = (y[i] - (i + 1..n).map(|p| m[i * n + p] * y[p]).sum::<f64>()) / m[i * n + i];
                    }
                    (0..n).for_each(|i| x[i * n + c] = y[i]);
                }
            }
            Kind::Det | Kind::Slogdet => {
                let (m, _, sign, singular) = lu(a, n);
                let (mut s, mut log) = (sign, 0.0);
                for i in 0..n {
                    let d = m[i * n + i];
                    s *= d.signum();
                    log += d.abs().ln();
                }
                if singular {
                    (s, log) = (0.0, f64::NEG_INFINITY);
                }
                if self.kind == Kind::Det {
                    outs[0][0] = s * log.exp();
                } else {
                    outs[0][0] = s;
                    outs[1][0] = log;
                }
            }
        }
        Ok(())
    }
}

impl Op for Factor {
    fn name(&self) -> &'static str {
        match self.kind {
            Kind::Potrf => "_linalg_potrf",
            Kind::Potri => "_linalg_potri",
            Kind::Inverse => "_linalg_inverse",
            Kind::Det => "_linalg_det",
            Kind::Slogdet => "_linalg_slogdet",
        }
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["A"]
    }
    fn num_outputs(&self) -> usize {
        if self.kind == Kind::Slogdet {
            2
        } else {
            1
        }
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        square(self.name(), "A", &inputs[0])?;
        let (s, dt) = (&inputs[0].shape, inputs[0].dtype);
        Ok(match self.kind {
            Kind::Potrf | Kind::Potri | Kind::Inverse => vec![inputs[0].clone()],
            Kind::Det => vec![Meta::new(&scalar_shape(s), dt)],
            Kind::Slogdet => vec![Meta::new(&scalar_shape(s), dt); 2],
        })
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (b, n) = square(self.name(), "A", &inputs[0].meta())?;
        let out_sizes: &[usize] = match self.kind {
            Kind::Potrf | Kind::Potri | Kind::Inverse => &[n * n],
            Kind::Det => &[1],
            Kind::Slogdet => &[1, 1],
        };
        let me = *self;
        per_matrix(&[&inputs[0]], &[n * n], b, outputs, out_sizes, n * n * n, |k, ins, outs| me.one(k, ins[0], n, outs))
    }
    fn saves(&self) -> Saves {
        match self.kind {
            Kind::Potrf | Kind::Inverse => Saves::Outputs,
            Kind::Slogdet => Saves::Inputs,
            Kind::Potri | Kind::Det => Saves::InputsAndOutputs,
        }
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], outputs: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let a = inputs[0];
        let solve = |transpose, rightside, alpha| Triangular { solve: true, transpose, rightside, lower: true, alpha };
        let ga = match self.kind {
            Kind::Potrf => {
                // dA = ½·L⁻ᵀ·(T + Tᵀ − diag(M))·L⁻¹ with M = Lᵀ·dL and T its lower triangle.
                let l = outputs[0];
                let m = gemm2(g, l, og[0], true, false, 1.0)?;
                let t = triangle_of(g, m, true)?;
                let tt = swap_last(g, t)?;
                let d = diagonal_of(g, m)?;
                let s = g.add(t, tt)?;
                let s = g.sub(s, d)?;
                let x = g.apply1(solve(true, false, 0.5), &[l, s])?;
                g.apply1(solve(false, true, 1.0), &[l, x])?
            }
            Kind::Potri => {
                // Y = (L·Lᵀ)⁻¹: dL = −tril(Y·(G + Gᵀ)·Y·L).
                let y = outputs[0];
                let gt = swap_last(g, og[0])?;
                let s = g.add(og[0], gt)?;
                let ys = gemm2(g, y, s, false, false, 1.0)?;
                let l = triangle_of(g, a, true)?; // only the lower triangle was read
                let yl = gemm2(g, y, l, false, false, 1.0)?;
                let w = gemm2(g, ys, yl, false, false, -1.0)?;
                triangle_of(g, w, true)?
            }
            Kind::Inverse => {
                // Y = A⁻¹: dA = −Yᵀ·G·Yᵀ.
                let y = outputs[0];
                let yg = gemm2(g, y, og[0], true, false, 1.0)?;
                gemm2(g, yg, y, false, true, -1.0)?
            }
            Kind::Det | Kind::Slogdet => {
                // d det / dA = det·A⁻ᵀ; d log|det| / dA = A⁻ᵀ.
                let scale = if self.kind == Kind::Det { g.mul(og[0], outputs[0])? } else { og[1] };
                let mut col = g.shape(a);
                let nd = col.len();
                col[nd - 2..].fill(1);
                let scale = g.reshape(scale, &col)?;
                let inv = g.apply1(Factor { kind: Kind::Inverse }, &[a])?;
                let inv_t = swap_last(g, inv)?;
                g.mul(scale, inv_t)?
            }
        };
        Ok(vec![Some(ga)])
    }
}

fn build(a: &crate::ops::Attrs, kind: Kind) -> Result<OpRef> {
    NoParams::parse(a)?;
    Ok(Arc::new(Factor { kind }))
}

/// The factorisation ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "_linalg_potrf",
        aliases: &["linalg_potrf"],
        args: &["A"],
        doc: "Cholesky factor L (lower triangular, A = L·Lᵀ) of each symmetric positive-definite matrix.",
        params: NoParams::schema,
        build: |a| build(a, Kind::Potrf),
    },
    OpDef {
        name: "_linalg_potri",
        aliases: &["linalg_potri"],
        args: &["A"],
        doc: "(L·Lᵀ)⁻¹ from each lower-triangular Cholesky factor L (the inverse of the factored matrix).",
        params: NoParams::schema,
        build: |a| build(a, Kind::Potri),
    },
    OpDef {
        name: "_linalg_inverse",
        aliases: &["linalg_inverse"],
        args: &["A"],
        doc: "The inverse of each square matrix on the last two axes.",
        params: NoParams::schema,
        build: |a| build(a, Kind::Inverse),
    },
    OpDef {
        name: "_linalg_det",
        aliases: &["linalg_det"],
        args: &["A"],
        doc: "The determinant of each square matrix on the last two axes.",
        params: NoParams::schema,
        build: |a| build(a, Kind::Det),
    },
    OpDef {
        name: "_linalg_slogdet",
        aliases: &["linalg_slogdet"],
        args: &["A"],
        doc: "(sign, log|det|) of each square matrix on the last two axes.",
        params: NoParams::schema,
        build: |a| build(a, Kind::Slogdet),
    },
];
