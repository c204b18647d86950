//! Layout ops: `Reshape` (with MXNet's special codes), `Flatten`, `transpose`, `expand_dims`,
//! `squeeze`, `SwapAxis`, `reverse` and `reshape_like`. They return views or lazy copies, never
//! moving data; their gradients are the inverse layout op.

use std::sync::Arc;

use super::attrs::fmt_tuple;
use super::params::{NoParams, OpDef, OpParams};
use super::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::view::normalize_axis;
use crate::ndarray::{Meta, NDArray, SliceArg};

/// Resolves MXNet reshape codes: 0 copy, -1 infer, -2 copy rest, -3 merge two, -4 split one.
pub fn infer_reshape(src: &[usize], spec: &[i64], reverse: bool) -> Result<Vec<usize>> {
    let err = |why: &str| {
        Error::Shape(format!(
            "Reshape: cannot reshape array of shape {} with shape={} ({why})",
            fmt_shape(src),
            fmt_tuple(spec)
        ))
    };
    let (src_v, spec_v): (Vec<usize>, Vec<i64>) = if reverse {
        (src.iter().rev().copied().collect(), spec.iter().rev().copied().collect())
    } else {
        (src.to_vec(), spec.to_vec())
    };
    let mut out: Vec<i64> = Vec::new();
    let (mut i, mut j) = (0usize, 0usize); // i: position in src, j: in spec
    let mut infer_at: Option<usize> = None;
    let mut infer_src = 0usize; // the input axis the -1 stands at
    while j < spec_v.len() {
        match spec_v[j] {
            0 => {
                let d = *src_v.get(i).ok_or_else(|| err("code 0 has no matching input axis"))?;
                out.push(d as i64);
                i += 1;
            }
            -1 => {
                if infer_at.replace(out.len()).is_some() {
                    return Err(err("more than one -1"));
                }
                infer_src = i;
                out.push(-1);
                i += 1;
            }
            -2 => {
                out.extend(src_v.get(i..).unwrap_or(&[]).iter().map(|&d| d as i64));
                i = src_v.len();
            }
            -3 => {
                let (a, b) = (src_v.get(i), src_v.get(i + 1));
                let (a, b) = a.zip(b).ok_or_else(|| err("code -3 needs two input axes"))?;
                out.push((a * b) as i64);
                i += 2;
            }
            -4 => {
                let d = *src_v.get(i).ok_or_else(|| err("code -4 has no matching input axis"))? as i64;
                let (p, q) = (spec_v.get(j + 1).copied(), spec_v.get(j + 2).copied());
                let (mut p, mut q) = p.zip(q).ok_or_else(|| err("code -4 needs two following values"))?;
                if p == -1 && q > 0 && d % q == 0 {
                    p = d / q;
                } else if q == -1 && p > 0 && d % p == 0 {
                    q = d / p;
                }
                if p <= 0 || q <= 0 || p * q != d {
                    return Err(err("code -4 split does not match the axis"));
                }
                out.extend([p, q]);
                i += 1;
                j += 2;
            }
            d if d > 0 => {
                out.push(d);
                i += 1;
            }
            _ => return Err(err("invalid code")),
        }
        j += 1;
    }
    let total: usize = src.iter().product();
    if let Some(k) = infer_at {
        // Saturating: a product past i64 cannot divide any real element count.
        let known: i64 =
            out.iter().enumerate().filter(|&(n, _)| n != k).fold(1i64, |acc, (_, &d)| acc.saturating_mul(d));
        if known == 0 && total == 0 {
            // An empty array (`(0, 3)` flattened by `(0, -1)`): the size cannot come from the
            // element count, so -1 takes the input axes it stands for (its own and any left
            // unconsumed at the end), which makes Flatten of an empty batch give `(0, 3)`.
            let covered =
                src_v.get(infer_src).copied().unwrap_or(1) * src_v.get(i..).unwrap_or(&[]).iter().product::<usize>();
            out[k] = covered as i64;
        } else if known == 0 || total as i64 % known != 0 {
            return Err(err("-1 cannot be inferred"));
        } else {
            out[k] = total as i64 / known;
        }
    }
    let mut shape: Vec<usize> = out.into_iter().map(|d| d as usize).collect();
    if reverse {
        shape.reverse();
    }
    // Checked: a requested shape whose size overflows cannot match the element count.
    if shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d)) != Some(total) {
        return Err(err(&format!("{} elements cannot take shape {}", total, fmt_shape(&shape))));
    }
    Ok(shape)
}

/// `Reshape` / `reshape` (view).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reshape {
    pub spec: Vec<i64>,
    pub reverse: bool,
}

impl Reshape {
    pub fn to(shape: &[usize]) -> Reshape {
        Reshape { spec: shape.iter().map(|&d| d as i64).collect(), reverse: false }
    }
}

impl Op for Reshape {
    fn name(&self) -> &'static str {
        "Reshape"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = vec![("shape", fmt_tuple(&self.spec))];
        if self.reverse {
            v.push(("reverse", "True".into()));
        }
        v
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        Ok(vec![Meta::new(&infer_reshape(&inputs[0].shape, &self.spec, self.reverse)?, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let v = inputs[0].reshape(outputs[0].shape())?;
        outputs[0].write_from(&v)?;
        Ok(())
    }
    fn view(&self, inputs: &[NDArray]) -> Option<Result<NDArray>> {
        Some(infer_reshape(inputs[0].shape(), &self.spec, self.reverse).and_then(|s| inputs[0].reshape(&s)))
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let s = g.shape(inputs[0]);
        Ok(vec![Some(g.reshape(og[0], &s)?)])
    }
}

/// `Flatten`: `(d0, d1, ...)` → `(d0, d1·d2·…)`, a view. Its own op (not a `Reshape`) so graphs
/// serialise it under MXNet's name, without attributes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flatten;

impl Flatten {
    fn spec() -> Reshape {
        Reshape { spec: vec![0, -1], reverse: false }
    }
}

impl Op for Flatten {
    fn name(&self) -> &'static str {
        "Flatten"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        Flatten::spec().infer(inputs)
    }
    fn forward(&self, ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        Flatten::spec().forward(ctx, inputs, outputs)
    }
    fn view(&self, inputs: &[NDArray]) -> Option<Result<NDArray>> {
        Flatten::spec().view(inputs)
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        Flatten::spec().grad(g, inputs, o, og)
    }
}

/// `transpose(axes)`; empty axes reverse the axis order (lazy copy).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transpose {
    pub axes: Vec<i64>,
}

impl Op for Transpose {
    fn name(&self) -> &'static str {
        "transpose"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        if self.axes.is_empty() {
            vec![]
        } else {
            vec![("axes", fmt_tuple(&self.axes))]
        }
    }
    fn infer_partial(
        &self,
        ins: &mut [super::partial::PartialShape],
        outs: &mut [super::partial::PartialShape],
    ) -> Result<()> {
        super::partial::transpose(&self.axes, ins, outs)
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let probe = NDArray::zeros(&vec![0; inputs[0].shape.len()], inputs[0].dtype).transpose(&self.axes)?;
        let perm: Vec<usize> = if self.axes.is_empty() {
            (0..inputs[0].shape.len()).rev().collect()
        } else {
            let nd = inputs[0].shape.len() as i64;
            self.axes.iter().map(|&a| if a < 0 { (a + nd) as usize } else { a as usize }).collect()
        };
        let _ = probe;
        Ok(vec![Meta::new(&perm.iter().map(|&p| inputs[0].shape[p]).collect::<Vec<_>>(), inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let v = inputs[0].transpose(&self.axes)?;
        outputs[0].write_from(&v)?;
        Ok(())
    }
    fn view(&self, inputs: &[NDArray]) -> Option<Result<NDArray>> {
        Some(inputs[0].transpose(&self.axes))
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let nd = g.shape(inputs[0]).len();
        let inv = if self.axes.is_empty() {
            vec![]
        } else {
            let mut inv = vec![0i64; nd];
            for (i, &a) in self.axes.iter().enumerate() {
                let a = if a < 0 { a + nd as i64 } else { a };
                inv[a as usize] = i as i64;
            }
            inv
        };
        Ok(vec![Some(g.transpose(og[0], inv)?)])
    }
}

/// Reshape to an exact shape, where 0 is a real (empty) size rather than MXNet's "copy" code.
/// Gradient rules use it (through [`Grad::reshape`](super::Grad::reshape)) only for shapes with a
/// zero, so ordinary graphs keep MXNet's `Reshape`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReshapeExact {
    pub shape: Vec<usize>,
}

impl Op for ReshapeExact {
    fn name(&self) -> &'static str {
        "_reshape_exact"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("shape", fmt_tuple(&self.shape.iter().map(|&d| d as i64).collect::<Vec<_>>()))]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        if inputs[0].shape.iter().product::<usize>() != self.shape.iter().product::<usize>() {
            return Err(Error::Shape(format!(
                "_reshape_exact: cannot reshape array of shape {} into shape {}",
                fmt_shape(&inputs[0].shape),
                fmt_shape(&self.shape)
            )));
        }
        Ok(vec![Meta::new(&self.shape, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let v = inputs[0].reshape(&self.shape)?;
        outputs[0].write_from(&v)?;
        Ok(())
    }
    fn view(&self, inputs: &[NDArray]) -> Option<Result<NDArray>> {
        Some(self.infer(&[inputs[0].meta()]).and_then(|_| inputs[0].reshape(&self.shape)))
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let s = g.shape(inputs[0]);
        Ok(vec![Some(g.reshape(og[0], &s)?)])
    }
}

/// `expand_dims(axis)` (view).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExpandDims {
    pub axis: i64,
}

impl Op for ExpandDims {
    fn name(&self) -> &'static str {
        "expand_dims"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("axis", self.axis.to_string())]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let mut s = inputs[0].shape.to_vec();
        s.insert(normalize_axis("expand_dims", self.axis, s.len() + 1)?, 1);
        Ok(vec![Meta::new(&s, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let v = inputs[0].expand_dims(self.axis)?;
        outputs[0].write_from(&v)?;
        Ok(())
    }
    fn view(&self, inputs: &[NDArray]) -> Option<Result<NDArray>> {
        Some(inputs[0].expand_dims(self.axis))
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let s = g.shape(inputs[0]);
        Ok(vec![Some(g.reshape(og[0], &s)?)])
    }
}

/// `squeeze(axis)` (view); all size-1 axes when `axis` is `None`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Squeeze {
    pub axis: Option<Vec<i64>>,
}

impl Op for Squeeze {
    fn name(&self) -> &'static str {
        "squeeze"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.axis.as_ref().map(|a| vec![("axis", super::attrs::fmt_tuple(a))]).unwrap_or_default()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let probe = NDArray::zeros(&[], inputs[0].dtype).broadcast_to(&inputs[0].shape)?;
        let mut s = probe.squeeze(self.axis.as_deref())?.shape().to_vec();
        if s.is_empty() && !inputs[0].shape.is_empty() && !crate::np_shape() {
            s = vec![1];
        }
        Ok(vec![Meta::new(&s, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let v = inputs[0].reshape(outputs[0].shape())?;
        outputs[0].write_from(&v)?;
        Ok(())
    }
    fn view(&self, inputs: &[NDArray]) -> Option<Result<NDArray>> {
        Some(self.infer(&[inputs[0].meta()]).and_then(|m| inputs[0].reshape(&m[0].shape)))
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let s = g.shape(inputs[0]);
        Ok(vec![Some(g.reshape(og[0], &s)?)])
    }
}

/// `SwapAxis` / `swapaxes(data, dim1=0, dim2=0)` (lazy copy).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwapAxis {
    pub dim1: i64,
    pub dim2: i64,
}

impl SwapAxis {
    fn perm(&self, ndim: usize) -> Result<Vec<i64>> {
        let a = normalize_axis("SwapAxis", self.dim1, ndim)?;
        let b = normalize_axis("SwapAxis", self.dim2, ndim)?;
        let mut p: Vec<i64> = (0..ndim as i64).collect();
        p.swap(a, b);
        Ok(p)
    }
}

impl Op for SwapAxis {
    fn name(&self) -> &'static str {
        "SwapAxis"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("dim1", self.dim1.to_string()), ("dim2", self.dim2.to_string())]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let p = self.perm(inputs[0].shape.len())?;
        let s: Vec<usize> = p.iter().map(|&a| inputs[0].shape[a as usize]).collect();
        Ok(vec![Meta::new(&s, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let v = inputs[0].transpose(&self.perm(inputs[0].ndim())?)?;
        outputs[0].write_from(&v)?;
        Ok(())
    }
    fn view(&self, inputs: &[NDArray]) -> Option<Result<NDArray>> {
        Some(self.perm(inputs[0].ndim()).and_then(|p| inputs[0].transpose(&p)))
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, _i: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![Some(g.apply1(*self, &[og[0]])?)])
    }
}

/// `reverse` / `flip(data, axis)`: elements in reverse order along the given axes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reverse {
    pub axis: Vec<i64>,
}

impl Reverse {
    fn index(&self, ndim: usize) -> Result<Vec<SliceArg>> {
        let mut args = vec![SliceArg::Range { start: None, stop: None, step: 1 }; ndim];
        for &a in &self.axis {
            args[normalize_axis("reverse", a, ndim)?] = SliceArg::Range { start: None, stop: None, step: -1 };
        }
        Ok(args)
    }
}

impl Op for Reverse {
    fn name(&self) -> &'static str {
        "reverse"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("axis", fmt_tuple(&self.axis))]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        self.index(inputs[0].shape.len())?;
        Ok(vec![inputs[0].clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let v = inputs[0].slice(&self.index(inputs[0].ndim())?)?;
        outputs[0].write_from(&v)?;
        Ok(())
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, _i: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![Some(g.apply1(self.clone(), &[og[0]])?)])
    }
}

/// `reshape_like(lhs, rhs, lhs_begin, lhs_end, rhs_begin, rhs_end)`: `lhs` with the axes
/// `lhs_begin..lhs_end` replaced by `rhs`'s axes `rhs_begin..rhs_end` (all of them by default).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReshapeLike {
    pub lhs_begin: Option<i64>,
    pub lhs_end: Option<i64>,
    pub rhs_begin: Option<i64>,
    pub rhs_end: Option<i64>,
}

/// A Python-style `[begin, end)` range over `n` axes (negative counts from the end).
fn axis_span(what: &str, n: usize, begin: Option<i64>, end: Option<i64>) -> Result<(usize, usize)> {
    let fix = |v: i64, name: &str| -> Result<usize> {
        let w = if v < 0 { v + n as i64 } else { v };
        if w < 0 || w > n as i64 {
            return Err(Error::Index(format!("reshape_like: {what}_{name} {v} is out of range for {n} axes")));
        }
        Ok(w as usize)
    };
    let b = begin.map_or(Ok(0), |v| fix(v, "begin"))?;
    let e = end.map_or(Ok(n), |v| fix(v, "end"))?;
    if b > e {
        return Err(Error::Value(format!("reshape_like: {what}_begin {b} is after {what}_end {e}")));
    }
    Ok((b, e))
}

impl ReshapeLike {
    fn target(&self, lhs: &[usize], rhs: &[usize]) -> Result<Vec<usize>> {
        let (lb, le) = axis_span("lhs", lhs.len(), self.lhs_begin, self.lhs_end)?;
        let (rb, re) = axis_span("rhs", rhs.len(), self.rhs_begin, self.rhs_end)?;
        let shape: Vec<usize> = lhs[..lb].iter().chain(&rhs[rb..re]).chain(&lhs[le..]).copied().collect();
        if shape.iter().product::<usize>() != lhs.iter().product::<usize>() {
            return Err(Error::Shape(format!(
                "reshape_like: cannot reshape lhs of shape {} to {} (from rhs of shape {})",
                fmt_shape(lhs),
                fmt_shape(&shape),
                fmt_shape(rhs)
            )));
        }
        Ok(shape)
    }
}

fn fmt_opt(v: Option<i64>) -> String {
    v.map_or("None".into(), |v| v.to_string())
}

impl Op for ReshapeLike {
    fn name(&self) -> &'static str {
        "reshape_like"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["lhs", "rhs"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("lhs_begin", fmt_opt(self.lhs_begin)),
            ("lhs_end", fmt_opt(self.lhs_end)),
            ("rhs_begin", fmt_opt(self.rhs_begin)),
            ("rhs_end", fmt_opt(self.rhs_end)),
        ]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        Ok(vec![Meta::new(&self.target(&inputs[0].shape, &inputs[1].shape)?, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let v = inputs[0].reshape(outputs[0].shape())?;
        outputs[0].write_from(&v)?;
        Ok(())
    }
    fn view(&self, inputs: &[NDArray]) -> Option<Result<NDArray>> {
        Some(self.target(inputs[0].shape(), inputs[1].shape()).and_then(|s| inputs[0].reshape(&s)))
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let s = g.shape(inputs[0]);
        Ok(vec![Some(g.reshape(og[0], &s)?), None])
    }
}

/// `Reshape`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct ReshapeParams {
    /// The new shape, with MXNet's codes: 0 copies a dimension, -1 infers one, -2 copies the
    /// rest, -3 merges two, -4 splits one.
    pub shape: Vec<i64>,
    /// Read the special codes from right to left.
    #[param(default = false)]
    pub reverse: bool,
}

/// `transpose`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct TransposeParams {
    /// The permutation of the axes; empty reverses them.
    #[param(default = Vec::new())]
    pub axes: Vec<i64>,
}

/// `expand_dims`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct ExpandDimsParams {
    /// Where the new size-1 axis goes (negative counts from the end of the output).
    pub axis: i64,
}

/// `squeeze`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct SqueezeParams {
    /// The size-1 axes to remove; None removes all of them.
    #[param(default = None)]
    pub axis: Option<Vec<i64>>,
}

/// `SwapAxis`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct SwapAxisParams {
    /// First axis of the pair exchanged.
    #[param(default = 0)]
    pub dim1: i64,
    /// Second axis of the pair exchanged.
    #[param(default = 0)]
    pub dim2: i64,
}

/// `reverse`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct ReverseParams {
    /// Axes whose order is reversed.
    pub axis: Vec<i64>,
}

/// `reshape_like`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct ReshapeLikeParams {
    /// First axis of lhs to replace (None: 0).
    #[param(default = None)]
    pub lhs_begin: Option<i64>,
    /// End (exclusive) of the replaced lhs axes (None: all).
    #[param(default = None)]
    pub lhs_end: Option<i64>,
    /// First axis of rhs whose size is used (None: 0).
    #[param(default = None)]
    pub rhs_begin: Option<i64>,
    /// End (exclusive) of the rhs axes used (None: all).
    #[param(default = None)]
    pub rhs_end: Option<i64>,
}

fn build_reshape(a: &Attrs) -> Result<OpRef> {
    let p = ReshapeParams::parse(a)?;
    Ok(Arc::new(Reshape { spec: p.shape, reverse: p.reverse }))
}

fn build_flatten(a: &Attrs) -> Result<OpRef> {
    NoParams::parse(a)?;
    Ok(Arc::new(Flatten))
}

fn build_transpose(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(Transpose { axes: TransposeParams::parse(a)?.axes }))
}

pub fn swapaxis_op(a: &Attrs) -> Result<OpRef> {
    let p = SwapAxisParams::parse(a)?;
    Ok(Arc::new(SwapAxis { dim1: p.dim1, dim2: p.dim2 }))
}

pub fn reverse_op(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(Reverse { axis: ReverseParams::parse(a)?.axis }))
}
/// The layout ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "Reshape",
        aliases: &["reshape"],
        args: &["data"],
        doc: "Reshape with MXNet's codes 0, -1, -2, -3, -4.",
        params: ReshapeParams::schema,
        build: build_reshape,
    },
    OpDef {
        name: "Flatten",
        aliases: &["flatten"],
        args: &["data"],
        doc: "Collapse all axes but the first.",
        params: NoParams::schema,
        build: build_flatten,
    },
    OpDef {
        name: "transpose",
        aliases: &[],
        args: &["data"],
        doc: "Permute axes (reverse when axes is empty).",
        params: TransposeParams::schema,
        build: build_transpose,
    },
    OpDef {
        name: "expand_dims",
        aliases: &[],
        args: &["data"],
        doc: "Insert a size-1 axis.",
        params: ExpandDimsParams::schema,
        build: |a| Ok(std::sync::Arc::new(ExpandDims { axis: ExpandDimsParams::parse(a)?.axis })),
    },
    OpDef {
        name: "squeeze",
        aliases: &[],
        args: &["data"],
        doc: "Remove size-1 axes.",
        params: SqueezeParams::schema,
        build: |a| Ok(std::sync::Arc::new(Squeeze { axis: SqueezeParams::parse(a)?.axis })),
    },
    OpDef {
        name: "SwapAxis",
        aliases: &["swapaxes"],
        args: &["data"],
        doc: "Interchange two axes.",
        params: SwapAxisParams::schema,
        build: swapaxis_op,
    },
    OpDef {
        name: "reverse",
        aliases: &["flip"],
        args: &["data"],
        doc: "Reverse the order of elements along the given axes.",
        params: ReverseParams::schema,
        build: reverse_op,
    },
    OpDef {
        name: "reshape_like",
        aliases: &[],
        args: &["lhs", "rhs"],
        doc: "lhs reshaped so that its axes lhs_begin..lhs_end take rhs's sizes on rhs_begin..rhs_end.",
        params: ReshapeLikeParams::schema,
        build: |a| {
            let p = ReshapeLikeParams::parse(a)?;
            Ok(Arc::new(ReshapeLike {
                lhs_begin: p.lhs_begin,
                lhs_end: p.lhs_end,
                rhs_begin: p.rhs_begin,
                rhs_end: p.rhs_end,
            }))
        },
    },
];
