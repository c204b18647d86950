//! `diag`: a diagonal of a matrix (or of a stack of them), or a matrix with a vector on a diagonal,
//! through an index map; the gradient scatters back through the same map.

use std::sync::Arc;

use super::attrs::fmt_tuple;
use super::common::{gather, scatter_add, to_i64};
use super::params::{OpDef, OpParams};
use super::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::view::normalize_axis;
use crate::ndarray::{Meta, NDArray};

/// Diagonal geometry: (output shape of extraction, map from the extraction's output to source).
fn diag_map(shape: &[usize], k: i64, axis1: i64, axis2: i64) -> Result<(Vec<usize>, Vec<usize>)> {
    let a1 = normalize_axis("diag", axis1, shape.len())?;
    let a2 = normalize_axis("diag", axis2, shape.len())?;
    if a1 == a2 {
        return Err(Error::Value(format!("diag: axis1 and axis2 must differ, both are {a1}")));
    }
    let (n1, n2, k) = (shape[a1] as i128, shape[a2] as i128, k as i128);
    // MXNet allows an empty diagonal just past the edge (|k| equal to the axis size) but no
    // further.
    if k > n2 || -k > n1 {
        return Err(Error::Value(format!(
            "diag: diagonal k={k} does not exist for axes {a1} and {a2} of sizes {n1} and {n2}"
        )));
    }
    let (o1, o2) = (if k < 0 { -k } else { 0 }, if k > 0 { k } else { 0 });
    let len = (n1 - o1).min(n2 - o2).max(0) as usize;
    // Offsets only matter when the diagonal is non-empty (then they are below the axis sizes).
    let (o1, o2) = if len == 0 { (0, 0) } else { (o1 as usize, o2 as usize) };
    let rest: Vec<usize> = (0..shape.len()).filter(|&d| d != a1 && d != a2).collect();
    let mut out: Vec<usize> = rest.iter().map(|&d| shape[d]).collect();
    out.push(len);
    let mut strides = vec![1usize; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    let total: usize = out.iter().product();
    let mut map = Vec::with_capacity(total);
    let mut idx = vec![0usize; out.len()];
    for _ in 0..total {
        let mut pos = 0;
        for (r, &d) in rest.iter().enumerate() {
            pos += idx[r] * strides[d];
        }
        let j = idx[out.len() - 1];
        pos += (j + o1) * strides[a1] + (j + o2) * strides[a2];
        map.push(pos);
        for d in (0..out.len()).rev() {
            idx[d] += 1;
            if idx[d] < out[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    Ok((out, map))
}

/// `diag(data, k=0, axis1=0, axis2=1)`: for 1-D data the square matrix with data on diagonal k;
/// otherwise diagonal k of the (axis1, axis2) planes, appended as the last axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Diag {
    pub k: i64,
    pub axis1: i64,
    pub axis2: i64,
}

impl Diag {
    fn square(&self, n: usize) -> Result<usize> {
        usize::try_from(self.k.unsigned_abs())
            .ok()
            .and_then(|k| n.checked_add(k))
            .filter(|&m| crate::ndarray::checked_numel("diag", &[m, m]).is_ok())
            .ok_or_else(|| Error::Value(format!("diag: k={} is too large for a vector of length {n}", self.k)))
    }
}

impl Op for Diag {
    fn name(&self) -> &'static str {
        "diag"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("k", self.k.to_string()), ("axis1", self.axis1.to_string()), ("axis2", self.axis2.to_string())]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let s = &inputs[0].shape;
        let out = match s.len() {
            0 => return Err(Error::Shape("diag: data must have at least one dimension, got shape ()".into())),
            1 => vec![self.square(s[0])?; 2],
            _ => diag_map(s, self.k, self.axis1, self.axis2)?.0,
        };
        Ok(vec![Meta::new(&out, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let x = &inputs[0];
        if x.ndim() == 1 {
            let m = self.square(x.shape()[0])?;
            let (_, map) = diag_map(&[m, m], self.k, 0, 1)?;
            scatter_add(x, &map, &mut outputs[0])?;
        } else {
            let (_, map) = diag_map(x.shape(), self.k, self.axis1, self.axis2)?;
            gather(x, &map, 0.0, &mut outputs[0])?;
        }
        Ok(())
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let shape = g.shape(inputs[0]);
        if shape.len() == 1 {
            return Ok(vec![Some(g.apply1(Diag { k: self.k, axis1: 0, axis2: 1 }, &[og[0]])?)]);
        }
        Ok(vec![Some(g.apply1(DiagGrad { diag: *self, shape }, &[og[0]])?)])
    }
}

/// `_backward_diag`: zeros of `shape` with the gradient written onto the extracted diagonal. Its
/// gradient is the extraction again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiagGrad {
    pub diag: Diag,
    pub shape: Vec<usize>,
}

impl Op for DiagGrad {
    fn name(&self) -> &'static str {
        "_backward_diag"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = self.diag.attrs();
        v.push(("shape", fmt_tuple(&to_i64(&self.shape))));
        v
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let (s, _) = diag_map(&self.shape, self.diag.k, self.diag.axis1, self.diag.axis2)?;
        if s != inputs[0].shape.as_slice() {
            return Err(Error::Shape(format!(
                "_backward_diag: gradient of shape {} does not match the diagonal shape {}",
                fmt_shape(&inputs[0].shape),
                fmt_shape(&s)
            )));
        }
        Ok(vec![Meta::new(&self.shape, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (_, map) = diag_map(&self.shape, self.diag.k, self.diag.axis1, self.diag.axis2)?;
        scatter_add(&inputs[0], &map, &mut outputs[0])?;
        Ok(())
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, _i: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![Some(g.apply1(self.diag, &[og[0]])?)])
    }
}

/// `diag`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct DiagParams {
    /// Diagonal offset: positive above the main diagonal, negative below.
    #[param(default = 0)]
    pub k: i64,
    /// First axis of the planes whose diagonal is taken (ignored for 1-D data).
    #[param(default = 0)]
    pub axis1: i64,
    /// Second axis of the planes whose diagonal is taken (ignored for 1-D data).
    #[param(default = 1)]
    pub axis2: i64,
}

pub fn diag_op(a: &Attrs) -> Result<OpRef> {
    let p = DiagParams::parse(a)?;
    Ok(Arc::new(Diag { k: p.k, axis1: p.axis1, axis2: p.axis2 }))
}
/// `diag`'s declaration.
pub const DEFS: &[OpDef] = &[OpDef {
    name: "diag",
    aliases: &[],
    args: &["data"],
    doc: "Diagonal k of a matrix (or of axis1/axis2 planes), or a matrix from a 1-D diagonal.",
    params: DiagParams::schema,
    build: diag_op,
}];
