//! Moving between matrices and their diagonals or triangles: `_linalg_extractdiag`,
//! `_linalg_makediag`, `_linalg_extracttrian`, `_linalg_maketrian`, and `_linalg_sumlogdiag`.
//!
//! A triangle is read in MXNet's order: a lower one row by row; an upper one (positive offset,
//! or `lower=False`) as the lower triangle of the transpose, i.e. column by column. Extraction
//! and construction are each other's gradients (the same index map, both ways).

use std::sync::Arc;

use super::common::{per_matrix, scalar_shape, square};
use crate::error::{Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::params::{OpDef, OpParams};
use crate::ops::unary::UnaryKind;
use crate::ops::{Ctx, Grad, Op, Saves, Val};

/// Row-major positions, in an `n×n` matrix, of the diagonal at `offset`.
fn diag_positions(n: usize, offset: i64) -> Vec<usize> {
    let k = offset.unsigned_abs() as usize;
    (0..n.saturating_sub(k)).map(|i| if offset >= 0 { i * n + i + k } else { (i + k) * n + i }).collect()
}

/// Row-major positions, in an `n×n` matrix, of the triangle at `offset` in MXNet's order.
fn trian_positions(n: usize, offset: i64, lower: bool) -> Vec<usize> {
    let k = offset.unsigned_abs() as usize;
    let use_lower = offset < 0 || (offset == 0 && lower);
    let m = n.saturating_sub(k);
    let mut pos = Vec::with_capacity(m * (m + 1) / 2);
    for i in 0..m {
        for j in 0..=i {
            pos.push(if use_lower { (i + k) * n + j } else { j * n + i + k });
        }
    }
    pos
}

/// The matrix side `n` whose diagonal or triangle at `offset` has `len` elements.
fn side_for(op: &str, len: usize, offset: i64, diag: bool) -> Result<usize> {
    let k = offset.unsigned_abs() as usize;
    let m = if diag {
        len
    } else {
        let m = (((8 * len + 1) as f64).sqrt() as usize).saturating_sub(1) / 2;
        if m * (m + 1) / 2 != len {
            return Err(Error::Shape(format!(
                "{op}: the last axis of A ({len}) is not a triangular number m(m+1)/2, so it cannot fill a triangle"
            )));
        }
        m
    };
    Ok(m + k)
}

/// `_linalg_extractdiag` / `_linalg_extracttrian`: the diagonal or triangle at `offset` of each
/// square matrix, as a vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extract {
    pub diag: bool,
    pub offset: i64,
    pub lower: bool,
}

/// `_linalg_makediag` / `_linalg_maketrian`: square matrices with the vector on the last axis
/// written to the diagonal or triangle at `offset`, zeros elsewhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Make {
    pub diag: bool,
    pub offset: i64,
    pub lower: bool,
}

fn map_attrs(diag: bool, offset: i64, lower: bool) -> Vec<(&'static str, String)> {
    let mut v = Vec::new();
    if offset != 0 {
        v.push(("offset", offset.to_string()));
    }
    if !diag && !lower {
        v.push(("lower", "False".into()));
    }
    v
}

impl Extract {
    fn positions(&self, n: usize) -> Vec<usize> {
        if self.diag {
            diag_positions(n, self.offset)
        } else {
            trian_positions(n, self.offset, self.lower)
        }
    }
    /// (batch, n, vector length), checked.
    fn dims(&self, m: &Meta) -> Result<(usize, usize, usize)> {
        let (b, n) = square(self.name(), "A", m)?;
        // Just past the edge the diagonal or triangle is empty (so that the gradient of a
        // makediag/maketrian of an empty vector exists); further out is an error.
        if (n as u64) < self.offset.unsigned_abs() {
            return Err(Error::Value(format!(
                "{}: offset {} is out of range for matrices of size {n}x{n} (|offset| must be <= {n})",
                self.name(),
                self.offset
            )));
        }
        Ok((b, n, self.positions(n).len()))
    }
}

impl Op for Extract {
    fn name(&self) -> &'static str {
        if self.diag {
            "_linalg_extractdiag"
        } else {
            "_linalg_extracttrian"
        }
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["A"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        map_attrs(self.diag, self.offset, self.lower)
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let (_, _, len) = self.dims(&inputs[0])?;
        let s = &inputs[0].shape;
        let mut out = s[..s.len() - 2].to_vec();
        out.push(len);
        Ok(vec![Meta::new(&out, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (b, n, len) = self.dims(&inputs[0].meta())?;
        let pos = self.positions(n);
        per_matrix(&[&inputs[0]], &[n * n], b, outputs, &[len], len, |_, ins, outs| {
            outs[0].iter_mut().zip(&pos).for_each(|(o, &p)| *o = ins[0][p]);
            Ok(())
        })
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, _i: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let make = Make { diag: self.diag, offset: self.offset, lower: self.lower };
        Ok(vec![Some(g.apply1(make, &[og[0]])?)])
    }
}

impl Make {
    fn dims(&self, m: &Meta) -> Result<(usize, usize, usize)> {
        super::common::check_float(self.name(), "A", m)?;
        let Some((&len, lead)) = m.shape.split_last() else {
            return Err(Error::Shape(format!("{}: A must have at least 1 dimension, got a scalar", self.name())));
        };
        let n = side_for(self.name(), len, self.offset, self.diag)?;
        Ok((lead.iter().product(), len, n))
    }
}

impl Op for Make {
    fn name(&self) -> &'static str {
        if self.diag {
            "_linalg_makediag"
        } else {
            "_linalg_maketrian"
        }
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["A"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        map_attrs(self.diag, self.offset, self.lower)
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let (_, _, n) = self.dims(&inputs[0])?;
        let s = &inputs[0].shape;
        let mut out = s[..s.len() - 1].to_vec();
        out.extend([n, n]);
        crate::ndarray::checked_numel(self.name(), &out)?;
        Ok(vec![Meta::new(&out, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (b, len, n) = self.dims(&inputs[0].meta())?;
        let ext = Extract { diag: self.diag, offset: self.offset, lower: self.lower };
        let pos = ext.positions(n);
        per_matrix(&[&inputs[0]], &[len], b, outputs, &[n * n], n * n, |_, ins, outs| {
            pos.iter().zip(ins[0]).for_each(|(&p, &x)| outs[0][p] = x);
            Ok(())
        })
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, _i: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let ext = Extract { diag: self.diag, offset: self.offset, lower: self.lower };
        Ok(vec![Some(g.apply1(ext, &[og[0]])?)])
    }
}

/// `v` with everything outside its lower (or upper) triangle set to zero, in registered ops.
pub(crate) fn triangle_of(g: &mut Grad<'_>, v: Val, lower: bool) -> Result<Val> {
    let t = g.apply1(Extract { diag: false, offset: 0, lower }, &[v])?;
    g.apply1(Make { diag: false, offset: 0, lower }, &[t])
}

/// `v`'s diagonal as a diagonal matrix, in registered ops.
pub(crate) fn diagonal_of(g: &mut Grad<'_>, v: Val) -> Result<Val> {
    let d = g.apply1(Extract { diag: true, offset: 0, lower: true }, &[v])?;
    g.apply1(Make { diag: true, offset: 0, lower: true }, &[d])
}

/// `_linalg_sumlogdiag(A)`: the sum of the logarithms of each square matrix's diagonal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SumLogDiag;

impl Op for SumLogDiag {
    fn name(&self) -> &'static str {
        "_linalg_sumlogdiag"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["A"]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        square(self.name(), "A", &inputs[0])?;
        Ok(vec![Meta::new(&scalar_shape(&inputs[0].shape), inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (b, n) = square(self.name(), "A", &inputs[0].meta())?;
        per_matrix(&[&inputs[0]], &[n * n], b, outputs, &[1], n, |_, ins, outs| {
            outs[0][0] = (0..n).map(|i| ins[0][i * n + i].ln()).sum();
            Ok(())
        })
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        // d/dA_ii = g / A_ii on the diagonal, zero elsewhere.
        let shape = g.shape(inputs[0]);
        let mut col = shape[..shape.len() - 2].to_vec();
        col.push(1);
        let d = g.apply1(Extract { diag: true, offset: 0, lower: true }, &[inputs[0]])?;
        let inv = g.unary(UnaryKind::Reciprocal, d)?;
        let head = g.reshape(og[0], &col)?;
        let scaled = g.mul(head, inv)?;
        Ok(vec![Some(g.apply1(Make { diag: true, offset: 0, lower: true }, &[scaled])?)])
    }
}

/// `extractdiag` / `makediag`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct DiagParams {
    /// Which diagonal: 0 the main one, > 0 above it, < 0 below it.
    #[param(default = 0)]
    pub offset: i64,
}

/// `extracttrian` / `maketrian`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct TrianParams {
    /// Which triangle: 0 the one including the main diagonal, > 0 the upper one starting at that
    /// diagonal, < 0 the lower one.
    #[param(default = 0)]
    pub offset: i64,
    /// With offset 0: the lower triangle (else the upper one).
    #[param(default = true)]
    pub lower: bool,
}

/// The ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "_linalg_extractdiag",
        aliases: &["linalg_extractdiag"],
        args: &["A"],
        doc: "The diagonal at offset of each square matrix on the last two axes, as a vector.",
        params: DiagParams::schema,
        build: |a| {
            let p = DiagParams::parse(a)?;
            Ok(Arc::new(Extract { diag: true, offset: p.offset, lower: true }))
        },
    },
    OpDef {
        name: "_linalg_makediag",
        aliases: &["linalg_makediag"],
        args: &["A"],
        doc: "Square matrices with the vectors on the last axis on the diagonal at offset, zeros elsewhere.",
        params: DiagParams::schema,
        build: |a| {
            let p = DiagParams::parse(a)?;
            Ok(Arc::new(Make { diag: true, offset: p.offset, lower: true }))
        },
    },
    OpDef {
        name: "_linalg_extracttrian",
        aliases: &["linalg_extracttrian"],
        args: &["A"],
        doc: "The triangle at offset of each square matrix, as a vector (lower: row by row; upper: column by column).",
        params: TrianParams::schema,
        build: |a| {
            let p = TrianParams::parse(a)?;
            Ok(Arc::new(Extract { diag: false, offset: p.offset, lower: p.lower }))
        },
    },
    OpDef {
        name: "_linalg_maketrian",
        aliases: &["linalg_maketrian"],
        args: &["A"],
        doc: "Square matrices with the vectors on the last axis (length m(m+1)/2) filling the triangle at offset.",
        params: TrianParams::schema,
        build: |a| {
            let p = TrianParams::parse(a)?;
            Ok(Arc::new(Make { diag: false, offset: p.offset, lower: p.lower }))
        },
    },
    OpDef {
        name: "_linalg_sumlogdiag",
        aliases: &["linalg_sumlogdiag"],
        args: &["A"],
        doc: "The sum of the logarithms of the diagonal of each square matrix on the last two axes.",
        params: crate::ops::params::NoParams::schema,
        build: |a| {
            crate::ops::params::NoParams::parse(a)?;
            Ok(Arc::new(SumLogDiag))
        },
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triangles_follow_mxnet_order() {
        // 4x4, values 1..16 row-major: MXNet reads offset 1 as [2, 3, 7, 4, 8, 12].
        let upper: Vec<usize> = trian_positions(4, 1, true).iter().map(|p| p + 1).collect();
        assert_eq!(upper, [2, 3, 7, 4, 8, 12]);
        let lower: Vec<usize> = trian_positions(4, -1, true).iter().map(|p| p + 1).collect();
        assert_eq!(lower, [5, 9, 10, 13, 14, 15]);
        assert_eq!(side_for("t", 6, -1, false).unwrap(), 4);
        assert!(side_for("t", 4, 0, false).is_err());
    }
}
