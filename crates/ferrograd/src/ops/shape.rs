//! Layout ops (reshape with MXNet's special codes, transpose, axis insertion/removal, broadcast,
//! basic slicing), casts, fills and copies. Layout ops return views or lazy copies, never moving
//! data; their gradients are the inverse layout op (or a sum, for broadcasts).

use std::sync::Arc;

use ferrograd_kernels::unary_binary::assign;

use super::attrs::fmt_tuple;
use super::params::{NoParams, OpDef, OpParams};
use super::partial::PartialShape;
use super::{AttrValue, Ctx, Grad, Op, Saves, Val};
use super::{Attrs, OpRef};
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray, SliceArg};
use crate::{match_buffer, with_dtype};

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
        let known: i64 = out.iter().enumerate().filter(|&(n, _)| n != k).map(|(_, &d)| d).product();
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
    if shape.iter().product::<usize>() != total {
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

/// `broadcast_to(shape)` (lazy copy); 0 in `shape` keeps the input's size (MXNet).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BroadcastTo {
    pub shape: Vec<usize>,
}

impl BroadcastTo {
    fn target(&self, src: &[usize]) -> Vec<usize> {
        let lead = self.shape.len().saturating_sub(src.len());
        self.shape.iter().enumerate().map(|(i, &d)| if d == 0 && i >= lead { src[i - lead] } else { d }).collect()
    }
}

impl Op for BroadcastTo {
    fn name(&self) -> &'static str {
        "broadcast_to"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("shape", fmt_tuple(&self.shape.iter().map(|&d| d as i64).collect::<Vec<_>>()))]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let t = self.target(&inputs[0].shape);
        if inputs[0].shape.len() > t.len()
            || inputs[0].shape.iter().rev().zip(t.iter().rev()).any(|(&a, &b)| a != b && a != 1)
        {
            return Err(Error::Shape(format!(
                "broadcast_to: cannot broadcast shape {} to {}",
                fmt_shape(&inputs[0].shape),
                fmt_shape(&t)
            )));
        }
        Ok(vec![Meta::new(&t, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let v = inputs[0].broadcast_to(outputs[0].shape())?;
        outputs[0].write_from(&v)?;
        Ok(())
    }
    fn view(&self, inputs: &[NDArray]) -> Option<Result<NDArray>> {
        Some(inputs[0].broadcast_to(&self.target(inputs[0].shape())))
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        // The caller's unbroadcast sums the output-shaped gradient back to the input shape.
        Ok(vec![Some(og[0])])
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

/// Broadcast to an exact shape (NumPy rules; 0 is a real size, unlike `broadcast_to`'s "keep").
/// Used by gradient rules for shapes with a zero.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BroadcastExact {
    pub shape: Vec<usize>,
}

impl Op for BroadcastExact {
    fn name(&self) -> &'static str {
        "_broadcast_exact"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("shape", fmt_tuple(&self.shape.iter().map(|&d| d as i64).collect::<Vec<_>>()))]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let probe = NDArray::zeros(&[], inputs[0].dtype).broadcast_to(&inputs[0].shape)?;
        probe.broadcast_to(&self.shape)?;
        Ok(vec![Meta::new(&self.shape, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let v = inputs[0].broadcast_to(&self.shape)?;
        outputs[0].write_from(&v)?;
        Ok(())
    }
    fn view(&self, inputs: &[NDArray]) -> Option<Result<NDArray>> {
        Some(inputs[0].broadcast_to(&self.shape))
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        // As for `broadcast_to`: the caller's unbroadcast sums back to the input shape.
        Ok(vec![Some(og[0])])
    }
}

/// `Cast(dtype)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cast {
    pub dtype: DType,
}

impl Op for Cast {
    fn name(&self) -> &'static str {
        "Cast"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("dtype", self.dtype.name().to_string())]
    }
    fn fixed_dtype(&self) -> Option<DType> {
        Some(self.dtype)
    }
    fn infer_partial(&self, inputs: &mut [PartialShape], outputs: &mut [PartialShape]) -> Result<()> {
        super::partial::same_shape(inputs, outputs)
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        Ok(vec![Meta::new(&inputs[0].shape, self.dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        outputs[0].write_from(&inputs[0])?;
        Ok(())
    }
    // Casting to an integer type still passes the gradient through to a float input (as in
    // MXNet, where `x.astype('int32')` is recorded and backward gives ones).
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let dt = g.meta(inputs[0]).dtype;
        if !dt.is_float() {
            return Ok(vec![None]);
        }
        Ok(vec![Some(g.cast(og[0], dt)?)])
    }
}

/// An array shaped like the input filled with `value` (`zeros_like`, `ones_like`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fill {
    pub value: f64,
}

impl Op for Fill {
    fn name(&self) -> &'static str {
        if self.value == 0.0 {
            "zeros_like"
        } else if self.value == 1.0 {
            "ones_like"
        } else {
            "_full_like"
        }
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        if self.value == 0.0 || self.value == 1.0 {
            vec![]
        } else {
            vec![("fill_value", AttrValue::Float(self.value).to_mx_string())]
        }
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        Ok(vec![inputs[0].clone()])
    }
    fn forward(&self, _ctx: &Ctx, _inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        outputs[0].fill_scalar(self.value);
        Ok(())
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![None])
    }
}

/// `_copy` / `identity`: a fresh copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity;

impl Op for Identity {
    fn name(&self) -> &'static str {
        "_copy"
    }
    fn infer_partial(
        &self,
        ins: &mut [super::partial::PartialShape],
        outs: &mut [super::partial::PartialShape],
    ) -> Result<()> {
        super::partial::same_shape(ins, outs)
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        Ok(vec![inputs[0].clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        outputs[0].write_from(&inputs[0])?;
        Ok(())
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![Some(og[0])])
    }
}

/// Basic indexing (`x[1:3, ::2, None, 0]`): a view when contiguous, else a lazy copy. MXNet's
/// `slice`, `slice_axis` and integer indexing are expressed with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BasicIndex {
    pub args: Vec<SliceArg>,
}

fn args_attr(args: &[SliceArg]) -> String {
    let parts: Vec<String> = args
        .iter()
        .map(|a| match *a {
            SliceArg::Index(i) => i.to_string(),
            SliceArg::NewAxis => "None".into(),
            SliceArg::Range { start, stop, step } => {
                let f = |v: Option<i64>| v.map_or(String::new(), |x| x.to_string());
                format!("{}:{}:{}", f(start), f(stop), step)
            }
        })
        .collect();
    format!("[{}]", parts.join(", "))
}

impl Op for BasicIndex {
    fn name(&self) -> &'static str {
        "_basic_index"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("key", args_attr(&self.args))]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        // Shape inference by slicing an empty-strided probe: layout math only, no data.
        let probe = NDArray::zeros(&[], inputs[0].dtype).broadcast_to(&inputs[0].shape)?;
        let v = probe.slice(&self.args)?;
        Ok(vec![Meta::new(v.shape(), inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let v = inputs[0].slice(&self.args)?;
        outputs[0].write_from(&v)?;
        Ok(())
    }
    fn view(&self, inputs: &[NDArray]) -> Option<Result<NDArray>> {
        Some(inputs[0].slice(&self.args))
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let shape = g.shape(inputs[0]);
        Ok(vec![Some(g.apply1(BasicIndexGrad { args: self.args.clone(), shape }, &[og[0]])?)])
    }
}

/// The gradient of [`BasicIndex`]: zeros of the source shape with the indexed region set to the
/// incoming gradient. Its own gradient is the indexing again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BasicIndexGrad {
    pub args: Vec<SliceArg>,
    pub shape: Vec<usize>,
}

impl Op for BasicIndexGrad {
    fn name(&self) -> &'static str {
        "_backward_basic_index"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("key", args_attr(&self.args)),
            ("shape", fmt_tuple(&self.shape.iter().map(|&d| d as i64).collect::<Vec<_>>())),
        ]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        Ok(vec![Meta::new(&self.shape, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let out = &mut outputs[0];
        out.fill_scalar(0.0);
        // Only the layout: a sliced view would hold the buffer and force a copy on the write.
        let dl = out.slice_layout(&self.args)?;
        let src = inputs[0].snapshot();
        let sl = inputs[0].layout().clone();
        out.write(|buf, _| {
            match_buffer!(buf, m => {
                let d = m.as_mut_slice();
                with_dtype!(inputs[0].dtype(), S => {
                    let s = src.typed::<S>()?;
                    assign(d, &dl, s, &sl, |_, v| ferrograd_kernels::Element::from_f64(ferrograd_kernels::Element::to_f64(v)));
                    Ok::<(), crate::Error>(())
                })
            })
        })?;
        Ok(())
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, _i: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![Some(g.apply1(BasicIndex { args: self.args.clone() }, &[og[0]])?)])
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

/// `broadcast_to`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct BroadcastToParams {
    /// The target shape; 0 keeps the input's size on that axis.
    pub shape: Vec<i64>,
}

/// `Cast`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct CastParams {
    /// The output dtype.
    pub dtype: DType,
}

/// `slice`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct SliceParams {
    /// Start index per axis (None: from the start).
    pub begin: Vec<Option<i64>>,
    /// Stop index per axis, exclusive (None: to the end).
    pub end: Vec<Option<i64>>,
    /// Step per axis (None or absent: 1).
    #[param(default = Vec::new())]
    pub step: Vec<Option<i64>>,
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

fn build_broadcast_to(a: &Attrs) -> Result<OpRef> {
    let shape = BroadcastToParams::parse(a)?.shape;
    if shape.iter().any(|&d| d < 0) {
        return Err(Error::Value(format!("broadcast_to: negative size in shape {shape:?}")));
    }
    Ok(Arc::new(BroadcastTo { shape: shape.into_iter().map(|d| d as usize).collect() }))
}

fn build_cast(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(Cast { dtype: CastParams::parse(a)?.dtype }))
}

fn build_fill(a: &Attrs) -> Result<OpRef> {
    NoParams::parse(a)?;
    Ok(Arc::new(Fill { value: if a.op == "ones_like" { 1.0 } else { 0.0 } }))
}

fn build_identity(a: &Attrs) -> Result<OpRef> {
    NoParams::parse(a)?;
    Ok(Arc::new(Identity))
}

fn build_slice(a: &Attrs) -> Result<OpRef> {
    let SliceParams { begin: b, end: e, step: s } = SliceParams::parse(a)?;
    if b.len() != e.len() || (!s.is_empty() && s.len() != b.len()) {
        return Err(Error::Value(format!("slice: begin {b:?}, end {e:?} and step {s:?} must have equal lengths")));
    }
    let args = b
        .iter()
        .zip(&e)
        .enumerate()
        .map(|(i, (&start, &stop))| {
            let step = s.get(i).copied().flatten().unwrap_or(1);
            if step == 0 {
                return Err(Error::Value("slice: step cannot be 0".into()));
            }
            Ok(SliceArg::Range { start, stop, step })
        })
        .collect::<Result<_>>()?;
    Ok(Arc::new(BasicIndex { args }))
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
        name: "broadcast_to",
        aliases: &[],
        args: &["data"],
        doc: "Broadcast to a shape (0 keeps the input size).",
        params: BroadcastToParams::schema,
        build: build_broadcast_to,
    },
    OpDef {
        name: "Cast",
        aliases: &["cast"],
        args: &["data"],
        doc: "Convert to another dtype.",
        params: CastParams::schema,
        build: build_cast,
    },
    OpDef {
        name: "zeros_like",
        aliases: &[],
        args: &["data"],
        doc: "Zeros with the input's shape and dtype.",
        params: NoParams::schema,
        build: build_fill,
    },
    OpDef {
        name: "ones_like",
        aliases: &[],
        args: &["data"],
        doc: "Ones with the input's shape and dtype.",
        params: NoParams::schema,
        build: build_fill,
    },
    OpDef {
        name: "_copy",
        aliases: &["identity"],
        args: &["data"],
        doc: "A copy of the input.",
        params: NoParams::schema,
        build: build_identity,
    },
    OpDef {
        name: "slice",
        aliases: &["crop"],
        args: &["data"],
        doc: "Basic slice with begin/end/step per axis.",
        params: SliceParams::schema,
        build: build_slice,
    },
];
