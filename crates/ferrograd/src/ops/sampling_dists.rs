//! The other samplers of MXNet's `nd.random` (not differentiable), on the crate's Philox stream
//! with one independent word sequence per output element ([`random::ElemRng`]), so rejection
//! samplers stay deterministic for any thread count:
//!
//! - `_random_{gamma, exponential, poisson, negative_binomial, generalized_negative_binomial}`:
//!   scalar parameters, output `shape`;
//! - `_sample_<same>`: one distribution per element of the parameter arrays, output
//!   `param.shape + shape`;
//! - `_sample_multinomial`: categories drawn from rows of probabilities;
//! - `_shuffle`: a random permutation of the first axis.
//!
//! Invalid parameters raise at the call (MXNet raises them later, at the first read).

use std::sync::Arc;

use super::attrs::fmt_tuple;
use super::common::{dense, sizes};
use super::params::{NoParams, OpDef, OpParams, ParamEnum};
use super::sampling::{FloatDType, SampleParams};
use super::{AttrValue, Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{checked_numel, Meta, NDArray};
use crate::random::{self, ElemRng};
use crate::with_dtype;

/// A parametric distribution with one or two scalar parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// `alpha` (shape), `beta` (scale): mean `alpha * beta`.
    Gamma,
    /// `lam` (rate): mean `1 / lam`.
    Exponential,
    /// `lam`: mean `lam`.
    Poisson,
    /// `k` (successes), `p` (success probability): the number of failures before the `k`-th
    /// success, mean `k (1 - p) / p`.
    NegBinomial,
    /// `mu` (mean), `alpha` (dispersion): variance `mu + alpha mu²`.
    GenNegBinomial,
}

impl Family {
    fn random_name(self) -> &'static str {
        match self {
            Family::Gamma => "_random_gamma",
            Family::Exponential => "_random_exponential",
            Family::Poisson => "_random_poisson",
            Family::NegBinomial => "_random_negative_binomial",
            Family::GenNegBinomial => "_random_generalized_negative_binomial",
        }
    }

    fn sample_name(self) -> &'static str {
        match self {
            Family::Gamma => "_sample_gamma",
            Family::Exponential => "_sample_exponential",
            Family::Poisson => "_sample_poisson",
            Family::NegBinomial => "_sample_negative_binomial",
            Family::GenNegBinomial => "_sample_generalized_negative_binomial",
        }
    }

    /// The parameter names, as MXNet's.
    pub fn params(self) -> &'static [&'static str] {
        match self {
            Family::Gamma => &["alpha", "beta"],
            Family::Exponential | Family::Poisson => &["lam"],
            Family::NegBinomial => &["k", "p"],
            Family::GenNegBinomial => &["mu", "alpha"],
        }
    }

    /// `None` when `(a, b)` are valid parameters, else what they must satisfy.
    fn invalid(self, a: f64, b: f64) -> Option<&'static str> {
        let ok = a.is_finite()
            && b.is_finite()
            && match self {
                Family::Gamma => a > 0.0 && b > 0.0,
                Family::Exponential => a > 0.0,
                Family::Poisson => a >= 0.0,
                Family::NegBinomial => a > 0.0 && b > 0.0 && b <= 1.0,
                Family::GenNegBinomial => a >= 0.0 && b >= 0.0,
            };
        (!ok).then_some(match self {
            Family::Gamma => "alpha > 0 and beta > 0",
            Family::Exponential => "lam > 0",
            Family::Poisson => "lam >= 0",
            Family::NegBinomial => "k > 0 and 0 < p <= 1",
            Family::GenNegBinomial => "mu >= 0 and alpha >= 0",
        })
    }

    fn check(self, op: &str, at: &str, a: f64, b: f64) -> Result<()> {
        match self.invalid(a, b) {
            None => Ok(()),
            Some(need) => {
                let names = self.params();
                let got = if names.len() == 2 {
                    format!("{}={a}, {}={b}", names[0], names[1])
                } else {
                    format!("{}={a}", names[0])
                };
                Err(Error::Value(format!("{op}: {at}{got} (need finite {need})")))
            }
        }
    }

    /// One draw (parameters already checked).
    fn draw(self, rng: &mut ElemRng, a: f64, b: f64) -> f64 {
        match self {
            Family::Gamma => rng.gamma(a) * b,
            Family::Exponential => -(1.0 - rng.uniform()).ln() / a,
            Family::Poisson => rng.poisson(a),
            Family::NegBinomial if b >= 1.0 => 0.0,
            Family::NegBinomial => {
                let lam = rng.gamma(a) * (1.0 - b) / b;
                rng.poisson(lam)
            }
            Family::GenNegBinomial if b == 0.0 => rng.poisson(a),
            Family::GenNegBinomial => {
                let lam = rng.gamma(1.0 / b) * b * a;
                rng.poisson(lam)
            }
        }
    }
}

/// `_random_<family>`: scalar parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct RandomDist {
    pub family: Family,
    pub a: f64,
    pub b: f64,
    pub shape: Vec<usize>,
    pub dtype: DType,
}

fn no_grad(n: usize) -> Result<Vec<Option<Val>>> {
    Ok(vec![None; n])
}

impl Op for RandomDist {
    fn is_random(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        self.family.random_name()
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &[]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let names = self.family.params();
        let mut v: Vec<(&'static str, String)> =
            names.iter().zip([self.a, self.b]).map(|(&n, x)| (n, AttrValue::Float(x).to_mx_string())).collect();
        v.push(("shape", fmt_tuple(&self.shape.iter().map(|&d| d as i64).collect::<Vec<_>>())));
        v.push(("dtype", self.dtype.name().into()));
        v
    }
    fn infer(&self, _inputs: &[Meta]) -> Result<Vec<Meta>> {
        checked_numel(self.name(), &self.shape)?;
        Ok(vec![Meta::new(&self.shape, self.dtype)])
    }
    fn open_outputs(&self) -> Option<Vec<crate::ops::partial::PartialShape>> {
        crate::ops::partial::open_shape(&self.shape)
    }
    fn forward(&self, _ctx: &Ctx, _inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (f, a, b) = (self.family, self.a, self.b);
        random::fill_per_element(&mut outputs[0], |rng, _| f.draw(rng, a, b))
    }
    fn differentiable(&self) -> bool {
        false
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        no_grad(0)
    }
}

/// `_sample_<family>`: one distribution per element of the parameter arrays.
#[derive(Clone, Debug, PartialEq)]
pub struct SampleDist {
    pub family: Family,
    pub shape: Vec<usize>,
    pub dtype: DType,
}

impl Op for SampleDist {
    fn is_random(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        self.family.sample_name()
    }
    fn arg_names(&self) -> &'static [&'static str] {
        self.family.params()
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("shape", fmt_tuple(&self.shape.iter().map(|&d| d as i64).collect::<Vec<_>>())),
            ("dtype", self.dtype.name().into()),
        ]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let names = self.family.params();
        if let [a, b] = inputs {
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
        }
        let mut s = inputs[0].shape.to_vec();
        s.extend_from_slice(&self.shape);
        checked_numel(self.name(), &s)?;
        Ok(vec![Meta::new(&s, self.dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let pa = inputs[0].to_f64_vec();
        let pb = if inputs.len() > 1 { inputs[1].to_f64_vec() } else { vec![0.0; pa.len()] };
        for (i, (&a, &b)) in pa.iter().zip(&pb).enumerate() {
            self.family.check(self.name(), &format!("element {i} has "), a, b)?;
        }
        let per = self.shape.iter().product::<usize>().max(1);
        let f = self.family;
        random::fill_per_element(&mut outputs[0], |rng, q| f.draw(rng, pa[q / per], pb[q / per]))
    }
    fn differentiable(&self) -> bool {
        false
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        no_grad(i.len())
    }
}

/// `_sample_multinomial`: for each row of probabilities (the last axis of `data`), `shape`
/// category indices drawn with those probabilities (normalised by the row's sum).
#[derive(Clone, Debug, PartialEq)]
pub struct Multinomial {
    pub shape: Vec<usize>,
    pub dtype: DType,
}

impl Op for Multinomial {
    fn is_random(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        "_sample_multinomial"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["data"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("shape", fmt_tuple(&self.shape.iter().map(|&d| d as i64).collect::<Vec<_>>())),
            ("dtype", self.dtype.name().into()),
        ]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let d = &inputs[0];
        let Some((&k, batch)) = d.shape.split_last() else {
            return Err(Error::Shape(format!("{}: data must have at least one axis, got shape ()", self.name())));
        };
        // The largest category index must be exact in the output dtype.
        let max_exact: usize = match self.dtype {
            DType::U8 => 1 << 8,
            DType::F16 => 1 << 11,
            DType::F32 => 1 << 24,
            _ => usize::MAX,
        };
        if k == 0 || k > max_exact {
            return Err(Error::Value(format!(
                "{}: data has {k} categories; dtype {} holds category indices up to {}",
                self.name(),
                self.dtype,
                max_exact - 1
            )));
        }
        let mut s = batch.to_vec();
        s.extend_from_slice(&self.shape);
        checked_numel(self.name(), &s)?;
        Ok(vec![Meta::new(&s, self.dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let k = *inputs[0].shape().last().unwrap_or(&1);
        let probs = inputs[0].to_f64_vec();
        let mut cdf = Vec::with_capacity(probs.len());
        for (r, row) in probs.chunks(k.max(1)).enumerate() {
            let mut acc = 0.0;
            for &p in row {
                if !(p >= 0.0 && p.is_finite()) {
                    return Err(Error::Value(format!(
                        "{}: row {r} has probability {p} (need finite values >= 0)",
                        self.name()
                    )));
                }
                acc += p;
                cdf.push(acc);
            }
            if acc <= 0.0 {
                return Err(Error::Value(format!("{}: row {r} has probabilities summing to 0", self.name())));
            }
        }
        let per = self.shape.iter().product::<usize>().max(1);
        random::fill_per_element(&mut outputs[0], |rng, q| {
            let row = &cdf[(q / per) * k..(q / per + 1) * k];
            let u = rng.uniform() * row[k - 1];
            row.partition_point(|&c| c <= u).min(k - 1) as f64
        })
    }
    fn differentiable(&self) -> bool {
        false
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        no_grad(1)
    }
}

/// `_shuffle`: the rows along the first axis in a random order (Fisher-Yates).
#[derive(Clone, Debug, PartialEq)]
pub struct Shuffle;

impl Op for Shuffle {
    fn is_random(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        "_shuffle"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["data"]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        Ok(vec![inputs[0].clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let x = &inputs[0];
        let rows = x.shape().first().copied().unwrap_or(1);
        let inner = x.size().checked_div(rows).unwrap_or(0);
        let mut perm: Vec<usize> = (0..rows).collect();
        let mut rng = random::sequence_rng();
        for i in (1..rows).rev() {
            let j = ((rng.uniform() * (i + 1) as f64) as usize).min(i);
            perm.swap(i, j);
        }
        let (buf, range) = dense(x);
        with_dtype!(x.dtype(), T => {
            let src = &buf.typed::<T>()?[range];
            outputs[0].write_out::<T, _>(|o| {
                for (dst, &p) in o.chunks_mut(inner.max(1)).zip(&perm) {
                    dst.copy_from_slice(&src[p * inner..(p + 1) * inner]);
                }
            })
        })
    }
    fn differentiable(&self) -> bool {
        false
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        no_grad(1)
    }
}

// ---- declarations ----

/// `_random_gamma`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct RandomGammaParams {
    /// Shape (> 0).
    #[param(default = 1.0)]
    pub alpha: f64,
    /// Scale (> 0).
    #[param(default = 1.0)]
    pub beta: f64,
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

/// `_random_exponential`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct RandomExponentialParams {
    /// Rate (> 0): the mean is 1 / lam.
    #[param(default = 1.0)]
    pub lam: f64,
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

/// `_random_poisson`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct RandomPoissonParams {
    /// Mean (>= 0).
    #[param(default = 1.0)]
    pub lam: f64,
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

/// `_random_negative_binomial`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct RandomNegBinomialParams {
    /// Number of successes (> 0).
    #[param(default = 1.0)]
    pub k: f64,
    /// Success probability in (0, 1].
    #[param(default = 1.0)]
    pub p: f64,
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

/// `_random_generalized_negative_binomial`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct RandomGenNegBinomialParams {
    /// Mean (>= 0).
    #[param(default = 1.0)]
    pub mu: f64,
    /// Dispersion (>= 0).
    #[param(default = 1.0)]
    pub alpha: f64,
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

fn float_dtype(d: Option<FloatDType>) -> DType {
    d.map_or(DType::F32, FloatDType::dtype)
}

fn random_op(
    a: &Attrs,
    family: Family,
    pa: f64,
    pb: f64,
    shape: Option<Vec<i64>>,
    dtype: Option<FloatDType>,
) -> Result<OpRef> {
    family.check(family.random_name(), "got ", pa, pb)?;
    let shape = sizes(&a.op, "shape", &shape.unwrap_or_default())?;
    Ok(Arc::new(RandomDist { family, a: pa, b: pb, shape, dtype: float_dtype(dtype) }))
}

fn random_gamma_op(a: &Attrs) -> Result<OpRef> {
    let p = RandomGammaParams::parse(a)?;
    random_op(a, Family::Gamma, p.alpha, p.beta, p.shape, p.dtype)
}

fn random_exponential_op(a: &Attrs) -> Result<OpRef> {
    let p = RandomExponentialParams::parse(a)?;
    random_op(a, Family::Exponential, p.lam, 0.0, p.shape, p.dtype)
}

fn random_poisson_op(a: &Attrs) -> Result<OpRef> {
    let p = RandomPoissonParams::parse(a)?;
    random_op(a, Family::Poisson, p.lam, 0.0, p.shape, p.dtype)
}

fn random_neg_binomial_op(a: &Attrs) -> Result<OpRef> {
    let p = RandomNegBinomialParams::parse(a)?;
    random_op(a, Family::NegBinomial, p.k, p.p, p.shape, p.dtype)
}

fn random_gen_neg_binomial_op(a: &Attrs) -> Result<OpRef> {
    let p = RandomGenNegBinomialParams::parse(a)?;
    random_op(a, Family::GenNegBinomial, p.mu, p.alpha, p.shape, p.dtype)
}

fn sample_op(a: &Attrs, family: Family) -> Result<OpRef> {
    let p = SampleParams::parse(a)?;
    Ok(Arc::new(SampleDist { family, shape: sizes(&a.op, "shape", &p.shape)?, dtype: float_dtype(p.dtype) }))
}

/// An output dtype of `_sample_multinomial`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ParamEnum)]
#[param(dtype)]
pub enum MultinomialDType {
    Uint8,
    Int32,
    Float16,
    Float32,
    Float64,
}

/// `_sample_multinomial`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct MultinomialParams {
    /// Samples drawn per row of probabilities, appended to the batch shape.
    #[param(default = Vec::new())]
    pub shape: Vec<i64>,
    /// Also return the log-probability of each sample (handled by `nd.random.multinomial`; the
    /// op itself returns the samples only).
    #[param(default = false)]
    pub get_prob: bool,
    /// Output dtype of the category indices.
    #[param(default = MultinomialDType::Int32)]
    pub dtype: MultinomialDType,
}

fn multinomial_op(a: &Attrs) -> Result<OpRef> {
    let p = MultinomialParams::parse(a)?;
    if p.get_prob {
        return Err(Error::Value(
            "_sample_multinomial: get_prob=True is computed by nd.random.multinomial / sym.random.multinomial \
             (a differentiable log-probability); the raw op returns the samples only"
                .into(),
        ));
    }
    let dtype = match p.dtype {
        MultinomialDType::Uint8 => DType::U8,
        MultinomialDType::Int32 => DType::I32,
        MultinomialDType::Float16 => DType::F16,
        MultinomialDType::Float32 => DType::F32,
        MultinomialDType::Float64 => DType::F64,
    };
    Ok(Arc::new(Multinomial { shape: sizes(&a.op, "shape", &p.shape)?, dtype }))
}

/// The samplers' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "_random_gamma",
        aliases: &["random_gamma"],
        args: &[],
        doc: "Samples from Gamma(alpha, beta) with shape alpha and scale beta (not differentiable).",
        params: RandomGammaParams::schema,
        build: random_gamma_op,
    },
    OpDef {
        name: "_random_exponential",
        aliases: &["random_exponential"],
        args: &[],
        doc: "Samples from the exponential distribution with rate lam (not differentiable).",
        params: RandomExponentialParams::schema,
        build: random_exponential_op,
    },
    OpDef {
        name: "_random_poisson",
        aliases: &["random_poisson"],
        args: &[],
        doc: "Samples from the Poisson distribution with mean lam, as floats (not differentiable).",
        params: RandomPoissonParams::schema,
        build: random_poisson_op,
    },
    OpDef {
        name: "_random_negative_binomial",
        aliases: &["random_negative_binomial"],
        args: &[],
        doc: "Failures before k successes of probability p (not differentiable).",
        params: RandomNegBinomialParams::schema,
        build: random_neg_binomial_op,
    },
    OpDef {
        name: "_random_generalized_negative_binomial",
        aliases: &["random_generalized_negative_binomial"],
        args: &[],
        doc: "Samples with mean mu and variance mu + alpha mu² (not differentiable).",
        params: RandomGenNegBinomialParams::schema,
        build: random_gen_neg_binomial_op,
    },
    OpDef {
        name: "_sample_gamma",
        aliases: &["sample_gamma"],
        args: &["alpha", "beta"],
        doc: "shape samples per element of alpha/beta from Gamma(alpha, beta) (not differentiable).",
        params: SampleParams::schema,
        build: |a| sample_op(a, Family::Gamma),
    },
    OpDef {
        name: "_sample_exponential",
        aliases: &["sample_exponential"],
        args: &["lam"],
        doc: "shape samples per element of lam from the exponential distribution (not differentiable).",
        params: SampleParams::schema,
        build: |a| sample_op(a, Family::Exponential),
    },
    OpDef {
        name: "_sample_poisson",
        aliases: &["sample_poisson"],
        args: &["lam"],
        doc: "shape samples per element of lam from the Poisson distribution (not differentiable).",
        params: SampleParams::schema,
        build: |a| sample_op(a, Family::Poisson),
    },
    OpDef {
        name: "_sample_negative_binomial",
        aliases: &["sample_negative_binomial"],
        args: &["k", "p"],
        doc: "shape samples per element of k/p from the negative binomial distribution (not differentiable).",
        params: SampleParams::schema,
        build: |a| sample_op(a, Family::NegBinomial),
    },
    OpDef {
        name: "_sample_generalized_negative_binomial",
        aliases: &["sample_generalized_negative_binomial"],
        args: &["mu", "alpha"],
        doc: "shape samples per element of mu/alpha from the generalized negative binomial (not differentiable).",
        params: SampleParams::schema,
        build: |a| sample_op(a, Family::GenNegBinomial),
    },
    OpDef {
        name: "_sample_multinomial",
        aliases: &["sample_multinomial"],
        args: &["data"],
        doc: "shape category indices per row of probabilities in data's last axis (not differentiable).",
        params: MultinomialParams::schema,
        build: multinomial_op,
    },
    OpDef {
        name: "_shuffle",
        aliases: &["shuffle"],
        args: &["data"],
        doc: "The rows of data along its first axis in a random order (not differentiable).",
        params: NoParams::schema,
        build: |a| {
            NoParams::parse(a)?;
            Ok(Arc::new(Shuffle))
        },
    },
];
