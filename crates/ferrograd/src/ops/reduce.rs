//! Reductions: sum, mean, prod, max, min, nansum, nanprod, norm, argmax, argmin, argmax_channel.
//!
//! `axis` is `None` (all axes), one axis or several; `exclude=True` reduces every axis *not*
//! listed (MXNet). Without NumPy shape semantics a full reduction gives shape `(1,)` (MXNet's
//! legacy rule), with them `()`.

use std::sync::Arc;

use ferrograd_kernels::reduce::{self as kr, Reducer};
use ferrograd_kernels::{Element, Layout};

use super::binary::BinaryKind;
use super::params::NoParams;
use super::params::{OpDef, OpParams};
use super::unary::UnaryKind;
use super::{AttrValue, Ctx, Grad, Op, Saves, Val};
use super::{Attrs, OpRef};
use crate::dtype::{DType, DTypeElem};
use crate::error::fmt_shape;
use crate::error::{Error, Result};
use crate::ndarray::view::normalize_axis;
use crate::ndarray::{Meta, NDArray};
use crate::{np_shape, with_dtype};

/// Which reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceKind {
    Sum,
    Mean,
    Prod,
    Max,
    Min,
    NanSum,
    NanProd,
    /// L1 norm (`norm` with `ord=1`).
    Norm1,
    /// L2 norm (`norm` with `ord=2`).
    Norm2,
}

impl ReduceKind {
    pub fn name(self) -> &'static str {
        match self {
            ReduceKind::Sum => "sum",
            ReduceKind::Mean => "mean",
            ReduceKind::Prod => "prod",
            ReduceKind::Max => "max",
            ReduceKind::Min => "min",
            ReduceKind::NanSum => "nansum",
            ReduceKind::NanProd => "nanprod",
            ReduceKind::Norm1 | ReduceKind::Norm2 => "norm",
        }
    }
}

/// Flags of the reduced axes.
pub fn reduced_axes(op: &str, ndim: usize, axis: Option<&[i64]>, exclude: bool) -> Result<Vec<bool>> {
    let mut flags = vec![axis.is_none() || axis.is_some_and(<[i64]>::is_empty); ndim];
    if let Some(ax) = axis {
        for &a in ax {
            let d = normalize_axis(op, a, ndim)?;
            if flags[d]
                && !ax.is_empty()
                && ax.iter().filter(|&&b| normalize_axis(op, b, ndim).ok() == Some(d)).count() > 1
            {
                return Err(Error::Value(format!("{op}: duplicate axis {a} in {ax:?}")));
            }
            flags[d] = true;
        }
        if exclude && !ax.is_empty() {
            flags.iter_mut().for_each(|f| *f = !*f);
        }
    }
    Ok(flags)
}

/// Output shape of a reduction.
pub fn reduced_shape(shape: &[usize], flags: &[bool], keepdims: bool) -> Vec<usize> {
    let out: Vec<usize> =
        shape.iter().zip(flags).filter_map(|(&n, &r)| if r { keepdims.then_some(1) } else { Some(n) }).collect();
    if out.is_empty() && !shape.is_empty() && !np_shape() {
        return vec![1];
    }
    out
}

/// A reduction over axes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reduce {
    pub kind: ReduceKind,
    pub axis: Option<Vec<i64>>,
    pub keepdims: bool,
    pub exclude: bool,
}

impl Reduce {
    fn flags(&self, ndim: usize) -> Result<Vec<bool>> {
        reduced_axes(self.kind.name(), ndim, self.axis.as_deref(), self.exclude)
    }

    /// The gradient/output reshaped so it broadcasts against the input (reduced axes kept as 1).
    fn keep_shape(&self, in_shape: &[usize]) -> Result<Vec<usize>> {
        let flags = self.flags(in_shape.len())?;
        Ok(reduced_shape(in_shape, &flags, true))
    }
}

fn finish<T: DTypeElem, A: Element>(kind: ReduceKind, acc: &[A], count: usize, out: &mut [T]) {
    for (o, &a) in out.iter_mut().zip(acc) {
        let v = a.to_f64();
        *o = T::from_f64(match kind {
            ReduceKind::Mean => {
                let m = v / count as f64;
                if T::IS_FLOAT {
                    m
                } else {
                    m.trunc()
                }
            }
            ReduceKind::Norm2 => v.sqrt(),
            _ => v,
        });
    }
}

fn run_reducer<T, R>(r: R, kind: ReduceKind, src: &[T], l: &Layout, flags: &[bool], count: usize, out: &mut [T])
where
    T: DTypeElem,
    R: Reducer<T>,
    R::Acc: Element,
{
    let mut acc = vec![r.init(); out.len()];
    kr::reduce(src, l, flags, r, &mut acc);
    finish(kind, &acc, count, out);
}

/// Replaces NaN by `fill` (for nansum / nanprod).
fn without_nan(x: &NDArray, fill: f64) -> Result<NDArray> {
    if !x.dtype().is_float() {
        return Ok(x.clone());
    }
    let isnan = super::run1(
        &super::binary::Binary { kind: BinaryKind::Ne, broadcast: true },
        &Ctx::default(),
        &[x.clone(), x.clone()],
    )?;
    let keep = super::run1(
        &super::binary::Scalar { kind: BinaryKind::Eq, scalar: 0.0, reverse: false },
        &Ctx::default(),
        std::slice::from_ref(&isnan),
    )?;
    let zeroed = super::run1(
        &super::binary::Binary { kind: BinaryKind::Mul, broadcast: true },
        &Ctx::default(),
        &[x.clone(), keep],
    )?;
    // x*keep is NaN where x is NaN (NaN*0); rebuild with a select on the mask instead.
    let v = zeroed.to_f64_vec();
    let m = isnan.to_f64_vec();
    let data: Vec<f64> = v.iter().zip(&m).map(|(&a, &n)| if n != 0.0 { fill } else { a }).collect();
    Ok(NDArray::from_vec(data, x.shape())?.astype(x.dtype()))
}

impl Op for Reduce {
    fn name(&self) -> &'static str {
        self.kind.name()
    }

    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = Vec::new();
        if let Some(a) = &self.axis {
            v.push(("axis", AttrValue::Tuple(a.clone()).to_mx_string()));
        }
        if self.keepdims {
            v.push(("keepdims", "True".into()));
        }
        if self.exclude {
            v.push(("exclude", "True".into()));
        }
        match self.kind {
            ReduceKind::Norm1 => v.push(("ord", "1".into())),
            ReduceKind::Norm2 => v.push(("ord", "2".into())),
            _ => {}
        }
        v
    }

    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let m = &inputs[0];
        let flags = self.flags(m.shape.len())?;
        if matches!(self.kind, ReduceKind::Max | ReduceKind::Min) {
            if let Some(d) = flags.iter().zip(m.shape.iter()).position(|(&f, &n)| f && n == 0) {
                return Err(Error::Value(format!(
                    "{}: zero-size array to reduction operation (axis {d} has size 0) which has no identity",
                    self.name()
                )));
            }
        }
        // Booleans reduce as int64 (NumPy's sum/prod rule, applied to every reduction).
        let dtype = if m.dtype == DType::Bool { DType::I64 } else { m.dtype };
        Ok(vec![Meta::new(&reduced_shape(&m.shape, &flags, self.keepdims), dtype)])
    }

    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let mut x = inputs[0].clone();
        let flags = self.flags(x.ndim())?;
        let count: usize = x.shape().iter().zip(&flags).filter(|(_, &f)| f).map(|(&n, _)| n).product();
        let kind = match self.kind {
            ReduceKind::NanSum => {
                x = without_nan(&x, 0.0)?;
                ReduceKind::Sum
            }
            ReduceKind::NanProd => {
                x = without_nan(&x, 1.0)?;
                ReduceKind::Prod
            }
            k => k,
        };
        if x.dtype() == DType::Bool {
            x = x.astype(DType::I64);
        }
        let buf = x.snapshot();
        let l = x.layout().clone();
        macro_rules! go {
            ($T:ty) => {{
                let src = buf.typed::<$T>()?;
                outputs[0].write_out::<$T, _>(|o| reduce_typed::<$T>(kind, src, &l, &flags, count, o))
            }};
        }
        match x.dtype() {
            DType::F32 => go!(f32),
            DType::F64 => go!(f64),
            DType::F16 => go!(half::f16),
            DType::I32 => go!(i32),
            DType::I64 | DType::Bool => go!(i64),
            DType::U8 => go!(u8),
            DType::I8 => go!(i8),
        }
    }

    fn saves(&self) -> Saves {
        match self.kind {
            ReduceKind::Sum | ReduceKind::Mean => Saves::None,
            // The NaN mask comes from the input.
            ReduceKind::NanSum => Saves::Inputs,
            _ => Saves::InputsAndOutputs,
        }
    }

    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        let (x, y, gy) = (inputs[0], outputs[0], out_grads[0]);
        let xs = g.shape(x);
        let keep = self.keep_shape(&xs)?;
        let gk = g.reshape(gy, &keep)?;
        let gb = g.broadcast_to(gk, &xs)?;
        let gx = match self.kind {
            ReduceKind::Sum => gb,
            ReduceKind::Mean => {
                let n = xs.iter().product::<usize>() / keep.iter().product::<usize>().max(1);
                g.mul_scalar(gb, 1.0 / n.max(1) as f64)?
            }
            ReduceKind::NanSum => {
                let ok = g.binary(BinaryKind::Eq, x, x)?;
                g.mul(gb, ok)?
            }
            ReduceKind::Max | ReduceKind::Min => {
                let yk = g.reshape(y, &keep)?;
                let mask = g.binary(BinaryKind::Eq, x, yk)?;
                g.mul(gb, mask)?
            }
            ReduceKind::Prod => {
                // d/dx_i Πx = Π_{j≠i} x_j, computed without dividing by x_i (no NaN at zeros).
                let others =
                    g.apply1(ProdOthers { axis: self.axis.clone(), exclude: self.exclude, nan_as_one: false }, &[x])?;
                g.mul(gb, others)?
            }
            ReduceKind::NanProd => {
                // NaNs count as 1 in the others' product and get gradient 0 themselves.
                let others =
                    g.apply1(ProdOthers { axis: self.axis.clone(), exclude: self.exclude, nan_as_one: true }, &[x])?;
                let ok = g.binary(BinaryKind::Eq, x, x)?;
                let t = g.mul(gb, others)?;
                g.mul(t, ok)?
            }
            ReduceKind::Norm1 => {
                let s = g.unary(UnaryKind::Sign, x)?;
                g.mul(gb, s)?
            }
            ReduceKind::Norm2 => {
                // x / ‖x‖, with 0 where ‖x‖ = 0 (the minimum-norm subgradient).
                let yk = g.reshape(y, &keep)?;
                let r = g.unary(UnaryKind::RecipNonzero, yk)?;
                let t = g.mul(x, r)?;
                g.mul(gb, t)?
            }
        };
        Ok(vec![Some(gx)])
    }
}

fn reduce_typed<T: DTypeElem>(kind: ReduceKind, src: &[T], l: &Layout, flags: &[bool], count: usize, out: &mut [T])
where
    kr::Sum: Reducer<T>,
    kr::Prod: Reducer<T>,
    kr::Max: Reducer<T>,
    kr::Min: Reducer<T>,
    kr::SumSq: Reducer<T>,
    kr::SumAbs: Reducer<T>,
    <kr::Sum as Reducer<T>>::Acc: Element,
    <kr::Prod as Reducer<T>>::Acc: Element,
    <kr::Max as Reducer<T>>::Acc: Element,
    <kr::Min as Reducer<T>>::Acc: Element,
    <kr::SumSq as Reducer<T>>::Acc: Element,
    <kr::SumAbs as Reducer<T>>::Acc: Element,
{
    match kind {
        ReduceKind::Sum | ReduceKind::Mean | ReduceKind::NanSum => {
            run_reducer(kr::Sum, kind, src, l, flags, count, out)
        }
        ReduceKind::Prod | ReduceKind::NanProd => run_reducer(kr::Prod, kind, src, l, flags, count, out),
        ReduceKind::Max => run_reducer(kr::Max, kind, src, l, flags, count, out),
        ReduceKind::Min => run_reducer(kr::Min, kind, src, l, flags, count, out),
        ReduceKind::Norm2 => run_reducer(kr::SumSq, kind, src, l, flags, count, out),
        ReduceKind::Norm1 => run_reducer(kr::SumAbs, kind, src, l, flags, count, out),
    }
}

/// For each element, the product of the *other* elements of its reduction group (the gradient of
/// `prod`), via prefix and suffix products so zeros are handled exactly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProdOthers {
    pub axis: Option<Vec<i64>>,
    pub exclude: bool,
    /// Treat NaN as 1 (the gradient of `nanprod`).
    pub nan_as_one: bool,
}

impl Op for ProdOthers {
    fn name(&self) -> &'static str {
        "_prod_others"
    }

    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        Ok(vec![inputs[0].clone()])
    }

    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let x = &inputs[0];
        let flags = reduced_axes("prod", x.ndim(), self.axis.as_deref(), self.exclude)?;
        // Move reduced axes last so each group is a contiguous row of length m.
        let nd = x.ndim();
        let mut perm: Vec<i64> = (0..nd).filter(|&d| !flags[d]).map(|d| d as i64).collect();
        perm.extend((0..nd).filter(|&d| flags[d]).map(|d| d as i64));
        let m: usize = (0..nd).filter(|&d| flags[d]).map(|d| x.shape()[d]).product();
        let xt = x.transpose(&perm)?.to_contiguous();
        let mut v = xt.to_f64_vec();
        if self.nan_as_one {
            v.iter_mut().filter(|e| e.is_nan()).for_each(|e| *e = 1.0);
        }
        let mut res = vec![0.0; v.len()];
        if m > 0 {
            for (row, out) in v.chunks(m).zip(res.chunks_mut(m)) {
                let mut acc = 1.0;
                for i in 0..m {
                    out[i] = acc;
                    acc *= row[i];
                }
                acc = 1.0;
                for i in (0..m).rev() {
                    out[i] *= acc;
                    acc *= row[i];
                }
            }
        }
        let t = NDArray::from_vec(res, xt.shape())?;
        let mut inv = vec![0i64; nd];
        for (i, &p) in perm.iter().enumerate() {
            inv[p as usize] = i as i64;
        }
        outputs[0].write_from(&t.transpose(&inv)?)?;
        Ok(())
    }

    fn saves(&self) -> Saves {
        Saves::InputsAndOutputs
    }

    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        // o_i = Π_{j≠i} x_j, so ∂o_i/∂x_k = o_k / x_i·… ; for the second order we use
        // gx_k = Σ_{i≠k} g_i Π_{j∉{i,k}} x_j = (Σ_i g_i o_i − g_k o_k) / x_k, exact away from zeros.
        let (x, o, gy) = (inputs[0], outputs[0], out_grads[0]);
        let xs = g.shape(x);
        let go = g.mul(gy, o)?;
        let red = Reduce { kind: ReduceKind::Sum, axis: self.axis.clone(), keepdims: true, exclude: self.exclude };
        let s = g.apply1(red, &[go])?;
        let keep = reduced_shape(&xs, &reduced_axes("prod", xs.len(), self.axis.as_deref(), self.exclude)?, true);
        let s = g.reshape(s, &keep)?;
        let t = g.sub(s, go)?;
        Ok(vec![Some(g.div(t, x)?)])
    }
}

/// Index of the max/min along one axis (or of the flattened array when `axis` is `None`),
/// returned in the data's dtype like MXNet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgReduce {
    pub max: bool,
    pub axis: Option<i64>,
    pub keepdims: bool,
}

impl Op for ArgReduce {
    fn name(&self) -> &'static str {
        if self.max {
            "argmax"
        } else {
            "argmin"
        }
    }

    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = Vec::new();
        if let Some(a) = self.axis {
            v.push(("axis", a.to_string()));
        }
        if self.keepdims {
            v.push(("keepdims", "True".into()));
        }
        v
    }

    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let m = &inputs[0];
        let shape = match self.axis {
            None => {
                if m.shape.iter().product::<usize>() == 0 {
                    return Err(Error::Value(format!(
                        "{}: attempt to get {} of an empty sequence",
                        self.name(),
                        self.name()
                    )));
                }
                if self.keepdims {
                    vec![1; m.shape.len()]
                } else if np_shape() {
                    vec![]
                } else {
                    vec![1]
                }
            }
            Some(a) => {
                let d = normalize_axis(self.name(), a, m.shape.len())?;
                if m.shape[d] == 0 {
                    return Err(Error::Value(format!("{}: axis {a} has size 0", self.name())));
                }
                let flags: Vec<bool> = (0..m.shape.len()).map(|i| i == d).collect();
                reduced_shape(&m.shape, &flags, self.keepdims)
            }
        };
        Ok(vec![Meta::new(&shape, arg_dtype(m.dtype))])
    }

    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let x = match self.axis {
            None => inputs[0].reshape(&[inputs[0].size()])?,
            Some(_) => inputs[0].clone(),
        };
        let axis = match self.axis {
            None => 0,
            Some(a) => normalize_axis(self.name(), a, x.ndim())?,
        };
        let n = outputs[0].size();
        let mut idx = vec![0i64; n];
        let buf = x.snapshot();
        with_dtype!(x.dtype(), T => {
            let src = buf.typed::<T>()?;
            kr::arg_reduce(src, x.layout(), axis, self.max, &mut idx);
        });
        with_dtype!(outputs[0].dtype(), T => outputs[0].write_out::<T, _>(|o| {
            for (d, &i) in o.iter_mut().zip(&idx) {
                *d = T::from_f64(i as f64);
            }
        }))
    }

    fn differentiable(&self) -> bool {
        false
    }
    fn zero_gradient(&self) -> bool {
        true
    }

    fn saves(&self) -> Saves {
        Saves::None
    }

    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![None])
    }
}

/// The reductions' parameters (`sum`, `mean`, `prod`, `max`, `min`, `nansum`, `nanprod`).
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct ReduceParams {
    /// Axes to reduce; None reduces all of them.
    #[param(default = None)]
    pub axis: Option<Vec<i64>>,
    /// Keep the reduced axes as size 1.
    #[param(default = false)]
    pub keepdims: bool,
    /// Reduce over every axis except those in `axis`.
    #[param(default = false)]
    pub exclude: bool,
}

/// `norm`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct NormParams {
    /// The norm: 1 (sum of absolute values) or 2 (Euclidean).
    #[param(default = 2)]
    pub ord: i64,
    /// Axes to reduce; None flattens the array.
    #[param(default = None)]
    pub axis: Option<Vec<i64>>,
    /// Keep the reduced axes as size 1.
    #[param(default = false)]
    pub keepdims: bool,
}

/// `argmax`/`argmin`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct ArgReduceParams {
    /// The axis to search; None searches the flattened array.
    #[param(default = None)]
    pub axis: Option<i64>,
    /// Keep the searched axis as size 1.
    #[param(default = false)]
    pub keepdims: bool,
}

fn build_reduce(a: &Attrs) -> Result<OpRef> {
    let kind = match a.op.as_str() {
        "sum" => ReduceKind::Sum,
        "mean" => ReduceKind::Mean,
        "prod" => ReduceKind::Prod,
        "max" => ReduceKind::Max,
        "min" => ReduceKind::Min,
        "nansum" => ReduceKind::NanSum,
        "nanprod" => ReduceKind::NanProd,
        other => return Err(Error::Value(format!("unknown reduction {other}"))),
    };
    let p = ReduceParams::parse(a)?;
    Ok(Arc::new(Reduce { kind, axis: p.axis, keepdims: p.keepdims, exclude: p.exclude }))
}

fn build_norm(a: &Attrs) -> Result<OpRef> {
    let p = NormParams::parse(a)?;
    let kind = match p.ord {
        1 => ReduceKind::Norm1,
        2 => ReduceKind::Norm2,
        o => return Err(Error::Value(format!("norm: ord must be 1 or 2, got {o}"))),
    };
    Ok(Arc::new(Reduce { kind, axis: p.axis, keepdims: p.keepdims, exclude: false }))
}

fn build_arg_reduce(a: &Attrs) -> Result<OpRef> {
    let p = ArgReduceParams::parse(a)?;
    Ok(Arc::new(ArgReduce { max: a.op == "argmax", axis: p.axis, keepdims: p.keepdims }))
}

const fn reduction(name: &'static str, aliases: &'static [&'static str], doc: &'static str) -> OpDef {
    OpDef { name, aliases, args: &["data"], doc, params: ReduceParams::schema, build: build_reduce }
}

/// The dtype of `argmax`/`argmin`'s indices: the data's, as MXNet (float32 for bool data).
fn arg_dtype(data: DType) -> DType {
    if data == DType::Bool {
        DType::F32
    } else {
        data
    }
}

/// `argmax_channel(data)`: `argmax(data, axis=1)` (indices in the data's dtype), not differentiable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgmaxChannel;

impl ArgmaxChannel {
    fn argmax() -> ArgReduce {
        ArgReduce { max: true, axis: Some(1), keepdims: false }
    }
}

impl Op for ArgmaxChannel {
    fn name(&self) -> &'static str {
        "argmax_channel"
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        if inputs[0].shape.len() < 2 {
            return Err(Error::Shape(format!(
                "argmax_channel: data needs at least 2 dimensions (the channel axis is 1), got shape {}",
                fmt_shape(&inputs[0].shape)
            )));
        }
        Self::argmax().infer(inputs)
    }
    fn forward(&self, ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        self.infer(&[inputs[0].meta()])?;
        Self::argmax().forward(ctx, inputs, outputs)
    }
    fn differentiable(&self) -> bool {
        false
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![None])
    }
}

/// The reductions' declarations.
pub const DEFS: &[OpDef] = &[
    reduction("sum", &["sum_axis"], "Sum over axes."),
    reduction("mean", &[], "Mean over axes."),
    reduction("prod", &[], "Product over axes."),
    reduction("max", &["max_axis"], "Maximum over axes."),
    reduction("min", &["min_axis"], "Minimum over axes."),
    reduction("nansum", &[], "Sum over axes, NaN counted as 0."),
    reduction("nanprod", &[], "Product over axes, NaN counted as 1."),
    OpDef {
        name: "norm",
        aliases: &[],
        args: &["data"],
        doc: "L1 or L2 norm over axes (flattened when axis is None).",
        params: NormParams::schema,
        build: build_norm,
    },
    OpDef {
        name: "argmax",
        aliases: &[],
        args: &["data"],
        doc: "Index of the maximum along an axis (in the data's dtype, as MXNet).",
        params: ArgReduceParams::schema,
        build: build_arg_reduce,
    },
    OpDef {
        name: "argmin",
        aliases: &[],
        args: &["data"],
        doc: "Index of the minimum along an axis (in the data's dtype, as MXNet).",
        params: ArgReduceParams::schema,
        build: build_arg_reduce,
    },
    OpDef {
        name: "argmax_channel",
        aliases: &[],
        args: &["data"],
        doc: "Index of the maximum along axis 1, in the data's dtype (not differentiable).",
        params: NoParams::schema,
        build: |a| {
            NoParams::parse(a)?;
            Ok(Arc::new(ArgmaxChannel))
        },
    },
];
