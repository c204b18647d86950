//! Small ops MXNet code puts in graphs: `argmax_channel`, `shape_array`, `size_array`,
//! `reshape_like`, `_identity_with_attr_like_rhs` (a shape constraint that lets inference run
//! backwards), `_sample_unique_zipfian` (log-uniform candidates without replacement) and the
//! input-less constants `_zeros`, `_ones`, `_full` behind `sym.zeros`/`ones`/`full`.

use std::collections::HashSet;
use std::sync::Arc;

use super::params::{NoParams, OpDef, OpParams};
use super::partial::{self, PartialShape};
use super::reduce::ArgReduce;
use super::shape_more::sizes;
use super::{Ctx, Grad, Op, OpRef, Saves, Val};
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::random;

/// `argmax_channel(data)`: `argmax(data, axis=1)` (float32 indices), not differentiable.
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

/// `shape_array(data)` (the shape as int64, `(ndim,)`) and `size_array(data)` (the element
/// count as int64, `(1,)`); neither reads the data nor is differentiable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShapeInfo {
    pub size: bool,
}

impl ShapeInfo {
    fn values(&self, shape: &[usize]) -> Vec<i64> {
        if self.size {
            vec![shape.iter().product::<usize>() as i64]
        } else {
            shape.iter().map(|&d| d as i64).collect()
        }
    }
}

impl Op for ShapeInfo {
    fn name(&self) -> &'static str {
        if self.size {
            "size_array"
        } else {
            "shape_array"
        }
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let n = if self.size { 1 } else { inputs[0].shape.len() };
        Ok(vec![Meta::new(&[n], DType::I64)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let v = self.values(inputs[0].shape());
        outputs[0].write_out::<i64, _>(|o| o.copy_from_slice(&v))
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

/// `_identity_with_attr_like_rhs(lhs, rhs)`: `lhs` unchanged, constrained to `rhs`'s shape and
/// dtype; shape inference flows through it in both directions. `rhs` gets no gradient.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdentityLikeRhs;

impl Op for IdentityLikeRhs {
    fn name(&self) -> &'static str {
        "_identity_with_attr_like_rhs"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["lhs", "rhs"]
    }
    fn infer_partial(&self, ins: &mut [PartialShape], outs: &mut [PartialShape]) -> Result<()> {
        partial::same_shape(ins, outs)
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let (l, r) = (&inputs[0], &inputs[1]);
        if l.shape != r.shape || l.dtype != r.dtype {
            return Err(Error::Shape(format!(
                "_identity_with_attr_like_rhs: lhs {} {} must have rhs's shape and dtype, got rhs {} {}",
                fmt_shape(&l.shape),
                l.dtype,
                fmt_shape(&r.shape),
                r.dtype
            )));
        }
        Ok(vec![l.clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        outputs[0].write_from(&inputs[0])?;
        Ok(())
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![Some(og[0]), None])
    }
}

/// `_sample_unique_zipfian(range_max, shape=(batch, n))`: per row, `n` distinct classes drawn
/// from P(k) = log((k + 2) / (k + 1)) / log(range_max + 1) by rejecting repeats, and the number
/// of draws each row took. Both outputs are int64.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SampleUniqueZipfian {
    pub range_max: usize,
    pub batch: usize,
    pub num_sampled: usize,
}

impl Op for SampleUniqueZipfian {
    fn name(&self) -> &'static str {
        "_sample_unique_zipfian"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &[]
    }
    fn is_random(&self) -> bool {
        true
    }
    fn num_outputs(&self) -> usize {
        2
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("range_max", self.range_max.to_string()), ("shape", format!("({}, {})", self.batch, self.num_sampled))]
    }
    fn infer(&self, _inputs: &[Meta]) -> Result<Vec<Meta>> {
        crate::ndarray::checked_numel(self.name(), &[self.batch, self.num_sampled])?;
        Ok(vec![Meta::new(&[self.batch, self.num_sampled], DType::I64), Meta::new(&[self.batch], DType::I64)])
    }
    fn forward(&self, _ctx: &Ctx, _inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let log_range = (self.range_max as f64 + 1.0).ln();
        let mut classes = Vec::with_capacity(self.batch * self.num_sampled);
        let mut tries = Vec::with_capacity(self.batch);
        for _ in 0..self.batch {
            let mut rng = random::sequence_rng();
            let mut seen = HashSet::with_capacity(self.num_sampled);
            let mut n = 0i64;
            while seen.len() < self.num_sampled {
                n += 1;
                // Inverse CDF of the log-uniform law; the modulo guards the rounding at the top.
                let k = ((rng.uniform() * log_range).exp() - 1.0) as usize % self.range_max;
                if seen.insert(k) {
                    classes.push(k as i64);
                }
            }
            tries.push(n);
        }
        outputs[0].write_out::<i64, _>(|o| o.copy_from_slice(&classes))?;
        outputs[1].write_out::<i64, _>(|o| o.copy_from_slice(&tries))
    }
    fn differentiable(&self) -> bool {
        false
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![])
    }
}

/// `_zeros` / `_ones` / `_full(value)`: a constant array of `shape` and `dtype`, no inputs.
#[derive(Clone, Debug, PartialEq)]
pub struct Constant {
    /// `_full` (else `_ones` for 1, `_zeros` for 0).
    pub full: bool,
    pub value: f64,
    pub shape: Vec<usize>,
    pub dtype: DType,
}

impl Op for Constant {
    fn name(&self) -> &'static str {
        if self.full {
            "_full"
        } else if self.value == 1.0 {
            "_ones"
        } else {
            "_zeros"
        }
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &[]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let shape: Vec<i64> = self.shape.iter().map(|&d| d as i64).collect();
        let mut v = vec![("shape", super::attrs::fmt_tuple(&shape)), ("dtype", self.dtype.name().into())];
        if self.full {
            v.push(("value", super::AttrValue::Float(self.value).to_mx_string()));
        }
        v
    }
    fn fixed_dtype(&self) -> Option<DType> {
        Some(self.dtype)
    }
    fn infer(&self, _inputs: &[Meta]) -> Result<Vec<Meta>> {
        crate::ndarray::checked_numel(self.name(), &self.shape)?;
        Ok(vec![Meta::new(&self.shape, self.dtype)])
    }
    fn forward(&self, _ctx: &Ctx, _inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        outputs[0].fill_scalar(self.value);
        Ok(())
    }
    fn differentiable(&self) -> bool {
        false
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![])
    }
}

// ---- declarations ----

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

/// `_sample_unique_zipfian`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct UniqueZipfianParams {
    /// The number of classes: samples lie in [0, range_max).
    pub range_max: i64,
    /// (batch_size, num_sampled): the rows and the distinct samples per row.
    #[param(default = None)]
    pub shape: Option<Vec<i64>>,
}

/// `_zeros`'s and `_ones`' parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct ConstantParams {
    /// The output shape (None: an empty tuple).
    #[param(default = None)]
    pub shape: Option<Vec<i64>>,
    /// Device of the output (accepted and ignored: ferrograd computes on the CPU).
    #[param(default = String::new())]
    pub ctx: String,
    /// The output dtype.
    #[param(default = DType::F32)]
    pub dtype: DType,
}

/// `_full`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct FullParams {
    /// The output shape (None: an empty tuple).
    #[param(default = None)]
    pub shape: Option<Vec<i64>>,
    /// Device of the output (accepted and ignored: ferrograd computes on the CPU).
    #[param(default = String::new())]
    pub ctx: String,
    /// The output dtype.
    #[param(default = DType::F32)]
    pub dtype: DType,
    /// The value every element takes.
    pub value: f64,
}

fn constant_op(a: &super::Attrs) -> Result<OpRef> {
    let (shape, dtype, value) = if a.op == "_full" {
        let p = FullParams::parse(a)?;
        (p.shape, p.dtype, p.value)
    } else {
        let p = ConstantParams::parse(a)?;
        (p.shape, p.dtype, if a.op == "_ones" { 1.0 } else { 0.0 })
    };
    let shape = sizes(&a.op, "shape", &shape.unwrap_or_default())?;
    Ok(Arc::new(Constant { full: a.op == "_full", value, shape, dtype }))
}

fn unique_zipfian_op(a: &super::Attrs) -> Result<OpRef> {
    let p = UniqueZipfianParams::parse(a)?;
    let shape = sizes(&a.op, "shape", &p.shape.unwrap_or_default())?;
    let [batch, num_sampled] = shape[..] else {
        return Err(Error::Value(format!(
            "_sample_unique_zipfian: shape must be (batch_size, num_sampled), got {}",
            fmt_shape(&shape)
        )));
    };
    if p.range_max <= 0 || num_sampled as i64 > p.range_max {
        return Err(Error::Value(format!(
            "_sample_unique_zipfian: need 0 < num_sampled <= range_max to draw distinct classes, got \
             num_sampled={num_sampled}, range_max={}",
            p.range_max
        )));
    }
    Ok(Arc::new(SampleUniqueZipfian { range_max: p.range_max as usize, batch, num_sampled }))
}

/// The graph helper ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "argmax_channel",
        aliases: &[],
        args: &["data"],
        doc: "Index of the maximum along axis 1, as float32 (not differentiable).",
        params: NoParams::schema,
        build: |a| {
            NoParams::parse(a)?;
            Ok(Arc::new(ArgmaxChannel))
        },
    },
    OpDef {
        name: "shape_array",
        aliases: &[],
        args: &["data"],
        doc: "The shape of data as a 1-D int64 array (not differentiable).",
        params: NoParams::schema,
        build: |a| {
            NoParams::parse(a)?;
            Ok(Arc::new(ShapeInfo { size: false }))
        },
    },
    OpDef {
        name: "size_array",
        aliases: &[],
        args: &["data"],
        doc: "The number of elements of data as a 1-element int64 array (not differentiable).",
        params: NoParams::schema,
        build: |a| {
            NoParams::parse(a)?;
            Ok(Arc::new(ShapeInfo { size: true }))
        },
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
    OpDef {
        name: "_identity_with_attr_like_rhs",
        aliases: &[],
        args: &["lhs", "rhs"],
        doc: "lhs unchanged, constrained to rhs's shape and dtype (lets shape inference run backwards).",
        params: NoParams::schema,
        build: |a| {
            NoParams::parse(a)?;
            Ok(Arc::new(IdentityLikeRhs))
        },
    },
    OpDef {
        name: "_sample_unique_zipfian",
        aliases: &[],
        args: &[],
        doc: "Distinct log-uniform (Zipfian) classes per row, and the draws each row took (not differentiable).",
        params: UniqueZipfianParams::schema,
        build: unique_zipfian_op,
    },
    OpDef {
        name: "_zeros",
        aliases: &[],
        args: &[],
        doc: "An array of zeros of the given shape and dtype (no inputs).",
        params: ConstantParams::schema,
        build: constant_op,
    },
    OpDef {
        name: "_ones",
        aliases: &[],
        args: &[],
        doc: "An array of ones of the given shape and dtype (no inputs).",
        params: ConstantParams::schema,
        build: constant_op,
    },
    OpDef {
        name: "_full",
        aliases: &[],
        args: &[],
        doc: "An array of the given shape and dtype filled with value (no inputs).",
        params: FullParams::schema,
        build: constant_op,
    },
];
