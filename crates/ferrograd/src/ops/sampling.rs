//! Random samplers as ops (not differentiable), drawing from the crate's Philox stream
//! ([`crate::random`]): `_random_uniform`, `_random_normal`, `_random_randint` (no inputs, scalar
//! parameters) and `_sample_uniform`, `_sample_normal` (one distribution per element of the
//! parameter arrays, `shape` samples each: output shape `low.shape + shape`), and
//! `_sample_unique_zipfian` (log-uniform candidates without replacement).

use std::collections::HashSet;
use std::sync::Arc;

use super::attrs::fmt_tuple;
use super::common::{dense, sizes};
use super::params::{OpDef, OpParams, ParamEnum};
use super::{AttrValue, Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::random;
use crate::with_dtype;
use ferrograd_kernels::Element;

/// Which distribution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dist {
    Uniform,
    Normal,
    Randint,
}

/// `_random_uniform(low=0, high=1, shape, dtype)`, `_random_normal(loc=0, scale=1, shape, dtype)`,
/// `_random_randint(low, high, shape, dtype='int32')`.
#[derive(Clone, Debug, PartialEq)]
pub struct Random {
    pub dist: Dist,
    /// (low, high) or (loc, scale).
    pub a: f64,
    pub b: f64,
    pub shape: Vec<usize>,
    pub dtype: DType,
}

impl Random {
    fn keys(&self) -> (&'static str, &'static str) {
        match self.dist {
            Dist::Normal => ("loc", "scale"),
            _ => ("low", "high"),
        }
    }
}

impl Op for Random {
    fn is_random(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        match self.dist {
            Dist::Uniform => "_random_uniform",
            Dist::Normal => "_random_normal",
            Dist::Randint => "_random_randint",
        }
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &[]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let (ka, kb) = self.keys();
        let f = |v: f64| {
            if self.dist == Dist::Randint {
                (v as i64).to_string()
            } else {
                AttrValue::Float(v).to_mx_string()
            }
        };
        vec![
            (ka, f(self.a)),
            (kb, f(self.b)),
            ("shape", fmt_tuple(&self.shape.iter().map(|&d| d as i64).collect::<Vec<_>>())),
            ("dtype", self.dtype.name().into()),
        ]
    }
    fn infer(&self, _inputs: &[Meta]) -> Result<Vec<Meta>> {
        crate::ndarray::checked_numel(self.name(), &self.shape)?;
        Ok(vec![Meta::new(&self.shape, self.dtype)])
    }
    fn open_outputs(&self) -> Option<Vec<crate::ops::partial::PartialShape>> {
        crate::ops::partial::open_shape(&self.shape)
    }
    fn forward(&self, _ctx: &Ctx, _inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let named = |e: Error| match e {
            Error::Value(m) => Error::Value(format!("{}: {m}", self.name())),
            Error::DType(m) => Error::DType(format!("{}: {m}", self.name())),
            e => e,
        };
        let out = &mut outputs[0];
        match self.dist {
            Dist::Uniform => random::uniform_into(self.a, self.b, out),
            Dist::Normal => random::normal_into(self.a, self.b, out),
            Dist::Randint => random::randint_into(self.a as i64, self.b as i64, out),
        }
        .map_err(named)
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

/// `_sample_uniform(low, high, shape, dtype)` and `_sample_normal(mu, sigma, shape, dtype)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub dist: Dist,
    pub shape: Vec<usize>,
    /// `None`: the parameters' dtype (float32 for integer parameters).
    pub dtype: Option<DType>,
}

impl Op for Sample {
    fn is_random(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        match self.dist {
            Dist::Normal => "_sample_normal",
            _ => "_sample_uniform",
        }
    }
    fn arg_names(&self) -> &'static [&'static str] {
        match self.dist {
            Dist::Normal => &["mu", "sigma"],
            _ => &["low", "high"],
        }
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = vec![("shape", fmt_tuple(&self.shape.iter().map(|&d| d as i64).collect::<Vec<_>>()))];
        if let Some(d) = self.dtype {
            v.push(("dtype", d.name().into()));
        }
        v
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let (a, b) = (&inputs[0], &inputs[1]);
        let names = self.arg_names();
        if a.shape != b.shape {
            return Err(Error::Shape(format!(
                "{}: {} of shape {} and {} of shape {} must have the same shape",
                self.name(),
                names[0],
                fmt_shape(&a.shape),
                names[1],
                fmt_shape(&b.shape)
            )));
        }
        let mut s = a.shape.to_vec();
        s.extend_from_slice(&self.shape);
        crate::ndarray::checked_numel(self.name(), &s)?;
        let dt = self.dtype.unwrap_or(if a.dtype.is_float() { a.dtype } else { DType::F32 });
        if !dt.is_float() {
            return Err(Error::DType(format!("{}: dtype must be a float type, got {dt}", self.name())));
        }
        Ok(vec![Meta::new(&s, dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let out_meta = self.infer(&[inputs[0].meta(), inputs[1].meta()])?.swap_remove(0);
        let per: usize = self.shape.iter().product();
        let pa = inputs[0].astype(DType::F64).to_vec::<f64>()?;
        let pb = inputs[1].astype(DType::F64).to_vec::<f64>()?;
        let names = self.arg_names();
        for (i, (&a, &b)) in pa.iter().zip(&pb).enumerate() {
            let ok = match self.dist {
                Dist::Normal => a.is_finite() && b.is_finite() && b >= 0.0,
                _ => a.is_finite() && b.is_finite() && a <= b,
            };
            if !ok {
                let want = if self.dist == Dist::Normal { "finite mu and sigma >= 0" } else { "finite low <= high" };
                return Err(Error::Value(format!(
                    "{}: element {i} has {}={a}, {}={b} (need {want})",
                    self.name(),
                    names[0],
                    names[1]
                )));
            }
        }
        let z = match self.dist {
            Dist::Normal => random::normal(0.0, 1.0, &out_meta.shape, DType::F64)?,
            _ => random::uniform(0.0, 1.0, &out_meta.shape, DType::F64)?,
        };
        let (buf, range) = dense(&z);
        let zs = &buf.typed::<f64>()?[range];
        let sample = |q: usize, u: f64| {
            let p = q / per.max(1);
            match self.dist {
                Dist::Normal => pa[p] + pb[p] * u,
                _ => pa[p] + (pb[p] - pa[p]) * u,
            }
        };
        with_dtype!(out_meta.dtype, T => outputs[0].write_out::<T, _>(|o| {
            for (q, (o, &u)) in o.iter_mut().zip(zs).enumerate() {
                *o = T::from_f64(sample(q, u));
            }
        }))
    }
    fn differentiable(&self) -> bool {
        false
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![None, None])
    }
}

// ---- registry builders ----

/// A float output dtype of the samplers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ParamEnum)]
#[param(dtype)]
pub enum FloatDType {
    Float16,
    Float32,
    Float64,
}

impl FloatDType {
    pub(crate) fn dtype(self) -> DType {
        match self {
            FloatDType::Float16 => DType::F16,
            FloatDType::Float32 => DType::F32,
            FloatDType::Float64 => DType::F64,
        }
    }
}

/// An integer output dtype of `_random_randint`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ParamEnum)]
#[param(dtype)]
pub enum IntDType {
    Int32,
    Int64,
}

/// `_random_uniform`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct RandomUniformParams {
    /// Lower bound (inclusive).
    #[param(default = 0.0)]
    pub low: f64,
    /// Upper bound (exclusive).
    #[param(default = 1.0)]
    pub high: f64,
    /// Output shape (None: a scalar-shaped draw, as an empty tuple).
    #[param(default = None)]
    pub shape: Option<Vec<i64>>,
    /// Device of the output (accepted and ignored: ferrograd computes on the CPU).
    #[param(default = String::new())]
    pub ctx: String,
    /// Output dtype (None: float32).
    #[param(default = None)]
    pub dtype: Option<FloatDType>,
}

/// `_random_normal`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct RandomNormalParams {
    /// Mean.
    #[param(default = 0.0)]
    pub loc: f64,
    /// Standard deviation (>= 0).
    #[param(default = 1.0)]
    pub scale: f64,
    /// Output shape (None: a scalar-shaped draw, as an empty tuple).
    #[param(default = None)]
    pub shape: Option<Vec<i64>>,
    /// Device of the output (accepted and ignored: ferrograd computes on the CPU).
    #[param(default = String::new())]
    pub ctx: String,
    /// Output dtype (None: float32).
    #[param(default = None)]
    pub dtype: Option<FloatDType>,
}

/// `_random_randint`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct RandomRandintParams {
    /// Lower bound (inclusive).
    pub low: i64,
    /// Upper bound (exclusive).
    pub high: i64,
    /// Output shape (None: a scalar-shaped draw, as an empty tuple).
    #[param(default = None)]
    pub shape: Option<Vec<i64>>,
    /// Device of the output (accepted and ignored: ferrograd computes on the CPU).
    #[param(default = String::new())]
    pub ctx: String,
    /// Output dtype (None: int32).
    #[param(default = None)]
    pub dtype: Option<IntDType>,
}

/// `_sample_uniform`'s and `_sample_normal`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct SampleParams {
    /// Samples drawn per distribution, appended to the parameter arrays' shape.
    #[param(default = Vec::new())]
    pub shape: Vec<i64>,
    /// Output dtype (None: the parameters' dtype, float32 for integer parameters).
    #[param(default = None)]
    pub dtype: Option<FloatDType>,
}

fn shape_of(op: &str, shape: Option<Vec<i64>>) -> Result<Vec<usize>> {
    sizes(op, "shape", &shape.unwrap_or_default())
}

pub fn random_uniform_op(a: &Attrs) -> Result<OpRef> {
    let p = RandomUniformParams::parse(a)?;
    let (low, high) = (p.low, p.high);
    if !(low.is_finite() && high.is_finite() && low <= high) {
        return Err(Error::Value(format!("_random_uniform: need finite low <= high, got low={low}, high={high}")));
    }
    let dtype = p.dtype.map_or(DType::F32, FloatDType::dtype);
    Ok(Arc::new(Random { dist: Dist::Uniform, a: low, b: high, shape: shape_of(&a.op, p.shape)?, dtype }))
}

pub fn random_normal_op(a: &Attrs) -> Result<OpRef> {
    let p = RandomNormalParams::parse(a)?;
    let (loc, scale) = (p.loc, p.scale);
    if !(loc.is_finite() && scale.is_finite() && scale >= 0.0) {
        return Err(Error::Value(format!(
            "_random_normal: need finite loc and scale >= 0, got loc={loc}, scale={scale}"
        )));
    }
    let dtype = p.dtype.map_or(DType::F32, FloatDType::dtype);
    Ok(Arc::new(Random { dist: Dist::Normal, a: loc, b: scale, shape: shape_of(&a.op, p.shape)?, dtype }))
}

pub fn random_randint_op(a: &Attrs) -> Result<OpRef> {
    let p = RandomRandintParams::parse(a)?;
    let (low, high) = (p.low, p.high);
    if high <= low {
        return Err(Error::Value(format!("_random_randint: need low < high, got low={low}, high={high}")));
    }
    let dtype = match p.dtype {
        None | Some(IntDType::Int32) => DType::I32,
        Some(IntDType::Int64) => DType::I64,
    };
    let shape = shape_of(&a.op, p.shape)?;
    Ok(Arc::new(Random { dist: Dist::Randint, a: low as f64, b: high as f64, shape, dtype }))
}

fn sample(a: &Attrs, dist: Dist) -> Result<OpRef> {
    let p = SampleParams::parse(a)?;
    Ok(Arc::new(Sample { dist, shape: sizes(&a.op, "shape", &p.shape)?, dtype: p.dtype.map(FloatDType::dtype) }))
}

pub fn sample_uniform_op(a: &Attrs) -> Result<OpRef> {
    sample(a, Dist::Uniform)
}

pub fn sample_normal_op(a: &Attrs) -> Result<OpRef> {
    sample(a, Dist::Normal)
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

/// `_sample_unique_zipfian`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct UniqueZipfianParams {
    /// The number of classes: samples lie in [0, range_max).
    pub range_max: i64,
    /// (batch_size, num_sampled): the rows and the distinct samples per row.
    #[param(default = None)]
    pub shape: Option<Vec<i64>>,
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

/// The samplers' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "_random_uniform",
        aliases: &["random_uniform", "uniform"],
        args: &[],
        doc: "Samples uniform in [low, high) (not differentiable).",
        params: RandomUniformParams::schema,
        build: random_uniform_op,
    },
    OpDef {
        name: "_random_normal",
        aliases: &["random_normal", "normal"],
        args: &[],
        doc: "Samples from N(loc, scale²) (not differentiable).",
        params: RandomNormalParams::schema,
        build: random_normal_op,
    },
    OpDef {
        name: "_random_randint",
        aliases: &["random_randint"],
        args: &[],
        doc: "Integers uniform in [low, high) (not differentiable).",
        params: RandomRandintParams::schema,
        build: random_randint_op,
    },
    OpDef {
        name: "_sample_uniform",
        aliases: &["sample_uniform"],
        args: &["low", "high"],
        doc: "shape samples per element of low/high, uniform in [low, high) (not differentiable).",
        params: SampleParams::schema,
        build: sample_uniform_op,
    },
    OpDef {
        name: "_sample_normal",
        aliases: &["sample_normal"],
        args: &["mu", "sigma"],
        doc: "shape samples per element of mu/sigma from N(mu, sigma²) (not differentiable).",
        params: SampleParams::schema,
        build: sample_normal_op,
    },
    OpDef {
        name: "_sample_unique_zipfian",
        aliases: &[],
        args: &[],
        doc: "Distinct log-uniform (Zipfian) classes per row, and the draws each row took (not differentiable).",
        params: UniqueZipfianParams::schema,
        build: unique_zipfian_op,
    },
];
