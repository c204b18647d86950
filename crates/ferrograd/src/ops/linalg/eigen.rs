//! `_linalg_syevd`: the eigen-decomposition `A = Uᵀ·diag(L)·U` of each symmetric matrix (its
//! lower triangle is read, as LAPACK's), with U's rows the eigenvectors, L ascending, and each
//! eigenvector's largest-magnitude entry positive (MXNet's sign convention). Computed with
//! cyclic Jacobi rotations; the gradient is written with registered ops.

use std::sync::Arc;

use super::common::{gemm2, per_matrix, square, swap_last};
use super::diagonal::Make;
use crate::error::Result;
use crate::ndarray::{Meta, NDArray};
use crate::ops::params::{NoParams, OpDef, OpParams};
use crate::ops::unary::UnaryKind;
use crate::ops::{Ctx, Grad, Op, Saves, Val};

/// Eigenvalues (ascending) and eigenvectors (rows) of the symmetric matrix whose lower triangle
/// is `a`'s.
fn jacobi(a: &[f64], n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut m = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            m[i * n + j] = a[i * n + j];
            m[j * n + i] = a[i * n + j];
        }
    }
    // v's columns converge to the eigenvectors.
    let mut v: Vec<f64> = (0..n * n).map(|x| f64::from(u8::from(x % (n + 1) == 0))).collect();
    let scale: f64 = m.iter().map(|x| x * x).sum::<f64>().sqrt();
    for _sweep in 0..100 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| m[i * n + j].powi(2))
            .sum();
        if off.sqrt() <= 1e-15 * scale || off == 0.0 {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = m[p * n + q];
                if apq == 0.0 {
                    continue;
                }
                // The rotation that zeroes m[p][q].
                let theta = (m[q * n + q] - m[p * n + p]) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..n {
                    let (mkp, mkq) = (m[k * n + p], m[k * n + q]);
                    m[k * n + p] = c * mkp - s * mkq;
                    m[k * n + q] = s * mkp + c * mkq;
                }
                for k in 0..n {
                    let (mpk, mqk) = (m[p * n + k], m[q * n + k]);
                    m[p * n + k] = c * mpk - s * mqk;
                    m[q * n + k] = s * mpk + c * mqk;
                }
                for k in 0..n {
                    let (vkp, vkq) = (v[k * n + p], v[k * n + q]);
                    v[k * n + p] = c * vkp - s * vkq;
                    v[k * n + q] = s * vkp + c * vkq;
                }
            }
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| m[i * n + i].total_cmp(&m[j * n + j]));
    let values = order.iter().map(|&i| m[i * n + i]).collect();
    let mut rows = vec![0.0; n * n];
    for (r, &i) in order.iter().enumerate() {
        let row = &mut rows[r * n..(r + 1) * n];
        (0..n).for_each(|k| row[k] = v[k * n + i]);
        // The first entry of largest magnitude is made positive.
        let big = (0..n).fold(0, |b, k| if row[k].abs() > row[b].abs() { k } else { b });
        if row[big] < 0.0 {
            row.iter_mut().for_each(|x| *x = -*x);
        }
    }
    (rows, values)
}

/// `_linalg_syevd(A)` -> (U, L).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Syevd;

impl Op for Syevd {
    fn name(&self) -> &'static str {
        "_linalg_syevd"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["A"]
    }
    fn num_outputs(&self) -> usize {
        2
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        square(self.name(), "A", &inputs[0])?;
        let s = &inputs[0].shape;
        Ok(vec![inputs[0].clone(), Meta::new(&s[..s.len() - 1], inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (b, n) = square(self.name(), "A", &inputs[0].meta())?;
        per_matrix(&[&inputs[0]], &[n * n], b, outputs, &[n * n, n], 10 * n * n * n, |_, ins, outs| {
            let (u, l) = jacobi(ins[0], n);
            outs[0] = u;
            outs[1] = l;
            Ok(())
        })
    }
    fn saves(&self) -> Saves {
        Saves::Outputs
    }
    fn grad(&self, g: &mut Grad<'_>, _i: &[Val], outputs: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        // dA = Uᵀ·sym(K)·U with K = (dU·Uᵀ) ∘ F + diag(dL), F_ij = 1/(L_i − L_j) off the diagonal.
        let (u, l) = (outputs[0], outputs[1]);
        let shape = g.shape(u);
        let nd = shape.len();
        let (mut col, mut row) = (shape.clone(), shape.clone());
        col[nd - 1] = 1;
        row[nd - 2] = 1;
        let lc = g.reshape(l, &col)?;
        let lr = g.reshape(l, &row)?;
        let diff = g.sub(lc, lr)?;
        let ones = g.ones_like(l)?;
        let eye = g.apply1(Make { diag: true, offset: 0, lower: true }, &[ones])?;
        let shifted = g.add(diff, eye)?; // 1 on the diagonal, so the reciprocal stays finite
        let recip = g.unary(UnaryKind::Reciprocal, shifted)?;
        let f = g.sub(recip, eye)?;
        let m = gemm2(g, og[0], u, false, true, 1.0)?;
        let k_off = g.mul(m, f)?;
        let dl = g.apply1(Make { diag: true, offset: 0, lower: true }, &[og[1]])?;
        let k = g.add(k_off, dl)?;
        let kt = swap_last(g, k)?;
        let sym = g.add(k, kt)?;
        let ut_sym = gemm2(g, u, sym, true, false, 0.5)?;
        Ok(vec![Some(gemm2(g, ut_sym, u, false, false, 1.0)?)])
    }
}

/// The eigen-decomposition's declaration.
pub const DEFS: &[OpDef] = &[OpDef {
    name: "_linalg_syevd",
    aliases: &["linalg_syevd"],
    args: &["A"],
    doc: "Eigen-decomposition of each symmetric matrix: (U, L) with A = Uᵀ·diag(L)·U, L ascending.",
    params: NoParams::schema,
    build: |a| {
        NoParams::parse(a)?;
        Ok(Arc::new(Syevd))
    },
}];
