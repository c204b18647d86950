//! The first of MXNet's `linalg` operators: `_linalg_gelqf`, the LQ factorisation `A = L Q` of
//! each `m x n` matrix (`m <= n`) on the last two axes, with `Q`'s rows orthonormal and `L` lower
//! triangular, computed with Householder reflections as LAPACK's `gelqf` does (so the signs
//! agree with MXNet's). Its gradient is `_backward_linalg_gelqf`.

pub mod common;
pub mod diagonal;
pub mod eigen;
pub mod factor;
pub mod products;
pub mod triangular;

use std::sync::Arc;

use super::params::{NoParams, OpDef, OpParams};
use super::{Ctx, Grad, Op, OpRef, Saves, Val};
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::with_dtype;
use ferrograd_kernels::Element;

/// (batch, m, n) of a stack of matrices, checked for gelqf.
fn gelqf_dims(op: &str, m: &Meta) -> Result<(usize, usize, usize)> {
    let s = &m.shape;
    if s.len() < 2 || s[s.len() - 2] > s[s.len() - 1] {
        return Err(Error::Shape(format!(
            "{op}: A must have at least 2 dimensions with rows <= columns on the last two, got shape {}",
            fmt_shape(s)
        )));
    }
    if !matches!(m.dtype, DType::F32 | DType::F64) {
        return Err(Error::DType(format!("{op}: A must be float32 or float64, got {}", m.dtype)));
    }
    let (r, c) = (s[s.len() - 2], s[s.len() - 1]);
    Ok((s[..s.len() - 2].iter().product(), r, c))
}

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

/// LQ of one row-major `m x n` matrix: returns (Q `m x n`, L `m x m`).
fn lq(a: &[f64], m: usize, n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut w = a.to_vec();
    let mut reflectors: Vec<(Vec<f64>, f64)> = Vec::with_capacity(m);
    for i in 0..m {
        let alpha = w[i * n + i];
        let xnorm = (i + 1..n).map(|j| w[i * n + j].powi(2)).sum::<f64>().sqrt();
        if xnorm == 0.0 {
            reflectors.push((Vec::new(), 0.0)); // H = I, as LAPACK's dlarfg
            continue;
        }
        let beta = -alpha.signum() * alpha.hypot(xnorm);
        let tau = (beta - alpha) / beta;
        let mut v = vec![1.0; n - i];
        for j in i + 1..n {
            v[j - i] = w[i * n + j] / (alpha - beta);
        }
        // Apply H = I - tau v vᵀ from the right to rows i.. on columns i..
        for r in i..m {
            let row = &mut w[r * n + i..(r + 1) * n];
            let dot: f64 = row.iter().zip(&v).map(|(x, y)| x * y).sum();
            row.iter_mut().zip(&v).for_each(|(x, y)| *x -= tau * dot * y);
        }
        reflectors.push((v, tau));
    }
    let mut l = vec![0.0; m * m];
    for r in 0..m {
        for c in 0..=r {
            l[r * m + c] = w[r * n + c];
        }
    }
    // Q = the first m rows of H_{m-1} ... H_0.
    let mut q = vec![0.0; m * n];
    (0..m).for_each(|r| q[r * n + r] = 1.0);
    for (i, (v, tau)) in reflectors.iter().enumerate().rev() {
        if *tau == 0.0 {
            continue;
        }
        for r in 0..m {
            let row = &mut q[r * n + i..(r + 1) * n];
            let dot: f64 = row.iter().zip(v).map(|(x, y)| x * y).sum();
            row.iter_mut().zip(v).for_each(|(x, y)| *x -= tau * dot * y);
        }
    }
    (q, l)
}

/// `_linalg_gelqf(A)` -> (Q, L).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gelqf;

impl Op for Gelqf {
    fn name(&self) -> &'static str {
        "_linalg_gelqf"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["A"]
    }
    fn num_outputs(&self) -> usize {
        2
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let (_, m, _) = gelqf_dims(self.name(), &inputs[0])?;
        let s = &inputs[0].shape;
        let mut ls = s.clone();
        let k = ls.len();
        ls[k - 1] = m;
        Ok(vec![Meta::new(s, inputs[0].dtype), Meta::new(&ls, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (b, m, n) = gelqf_dims(self.name(), &inputs[0].meta())?;
        let a = values(&inputs[0])?;
        let (mut qs, mut ls) = (Vec::with_capacity(b * m * n), Vec::with_capacity(b * m * m));
        for k in 0..b {
            let (q, l) = lq(&a[k * m * n..(k + 1) * m * n], m, n);
            if (0..m).any(|i| l[i * m + i] == 0.0) {
                return Err(Error::Value(format!(
                    "_linalg_gelqf: matrix {k} of the batch does not have full row rank"
                )));
            }
            qs.extend(q);
            ls.extend(l);
        }
        store(&mut outputs[0], &qs)?;
        store(&mut outputs[1], &ls)
    }
    fn saves(&self) -> Saves {
        Saves::Outputs
    }
    fn grad(&self, g: &mut Grad<'_>, _i: &[Val], outputs: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let back = g.apply(Arc::new(GelqfGrad) as OpRef, &[og[0], og[1], outputs[0], outputs[1]])?;
        Ok(vec![Some(back[0])])
    }
}

/// `_backward_linalg_gelqf(dQ, dL, Q, L)` -> dA = L⁻ᵀ (dQ + sym(M) Q) with M = Lᵀ dL − dQ Qᵀ,
/// where sym copies M's lower triangle onto its upper one. Not differentiable again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GelqfGrad;

impl Op for GelqfGrad {
    fn name(&self) -> &'static str {
        "_backward_linalg_gelqf"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["dQ", "dL", "Q", "L"]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        gelqf_dims(self.name(), &inputs[2])?;
        Ok(vec![inputs[2].clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (b, m, n) = gelqf_dims(self.name(), &inputs[2].meta())?;
        let [dq, dl, q, l] = [0, 1, 2, 3].map(|i| values(&inputs[i]));
        let (dq, dl, q, l) = (dq?, dl?, q?, l?);
        let mut da = vec![0.0; b * m * n];
        for k in 0..b {
            let (dq, q) = (&dq[k * m * n..(k + 1) * m * n], &q[k * m * n..(k + 1) * m * n]);
            let (dl, l) = (&dl[k * m * m..(k + 1) * m * m], &l[k * m * m..(k + 1) * m * m]);
            // M = Lᵀ dL − dQ Qᵀ, then mirrored from its lower triangle.
            let mut mm = vec![0.0; m * m];
            for r in 0..m {
                for c in 0..=r {
                    let ltdl: f64 = (0..m).map(|t| l[t * m + r] * dl[t * m + c]).sum();
                    let dqqt: f64 = (0..n).map(|t| dq[r * n + t] * q[c * n + t]).sum();
                    mm[r * m + c] = ltdl - dqqt;
                    mm[c * m + r] = ltdl - dqqt;
                }
            }
            // rhs = dQ + M Q, then solve Lᵀ X = rhs (Lᵀ is upper triangular: back substitution).
            let out = &mut da[k * m * n..(k + 1) * m * n];
            for r in 0..m {
                for c in 0..n {
                    out[r * n + c] = dq[r * n + c] + (0..m).map(|t| mm[r * m + t] * q[t * n + c]).sum::<f64>();
                }
            }
            for r in (0..m).rev() {
                for c in 0..n {
                    let mut s = out[r * n + c];
                    for t in r + 1..m {
                        s -= l[t * m + r] * out[t * n + c];
                    }
                    out[r * n + c] = s / l[r * m + r];
                }
            }
        }
        store(&mut outputs[0], &da)
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

/// The linalg ops' declarations.
pub const DEFS: &[OpDef] = &[OpDef {
    name: "_linalg_gelqf",
    aliases: &["linalg_gelqf"],
    args: &["A"],
    doc: "LQ factorisation A = L Q of the matrices on the last two axes (rows <= columns): returns (Q, L).",
    params: NoParams::schema,
    build: |a| {
        NoParams::parse(a)?;
        Ok(Arc::new(Gelqf))
    },
}];
