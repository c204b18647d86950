//! Densities of the samplers' distributions: `_random_pdf_<dist>(sample, params..., is_log)`.
//!
//! The parameter arrays share one shape `P`; `sample` has shape `P + T` (one density per sample,
//! each read with the parameters of its leading index), and so has the output. Dirichlet works
//! on vectors: `alpha` is `P + (k,)`, `sample` `P + T + (k,)` and the output `P + T`. Values are
//! computed in f64 and stored in the sample's dtype. The gradient (w.r.t. the sample, and w.r.t.
//! every parameter, summed over `T`) comes from `_backward_pdf`, which uses
//! d pdf = pdf · d log pdf.

use std::sync::Arc;

use super::params::{OpDef, OpParams};
use super::{Ctx, Grad, Op, OpRef, Saves, Val};
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::with_dtype;
use ferrograd_kernels::special::{gammaln, polygamma};
use ferrograd_kernels::Element;

/// The distribution whose density is computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PdfDist {
    Uniform,
    Normal,
    Gamma,
    Exponential,
    Poisson,
    NegativeBinomial,
    GeneralizedNegativeBinomial,
    Dirichlet,
}

use PdfDist::*;

impl PdfDist {
    fn op_name(self) -> &'static str {
        match self {
            Uniform => "_random_pdf_uniform",
            Normal => "_random_pdf_normal",
            Gamma => "_random_pdf_gamma",
            Exponential => "_random_pdf_exponential",
            Poisson => "_random_pdf_poisson",
            NegativeBinomial => "_random_pdf_negative_binomial",
            GeneralizedNegativeBinomial => "_random_pdf_generalized_negative_binomial",
            Dirichlet => "_random_pdf_dirichlet",
        }
    }

    fn arg_names(self) -> &'static [&'static str] {
        match self {
            Uniform => &["sample", "low", "high"],
            Normal => &["sample", "mu", "sigma"],
            Gamma => &["sample", "alpha", "beta"],
            Exponential | Poisson => &["sample", "lam"],
            NegativeBinomial => &["sample", "k", "p"],
            GeneralizedNegativeBinomial => &["sample", "mu", "alpha"],
            Dirichlet => &["sample", "alpha"],
        }
    }

    fn from_name(name: &str) -> Option<PdfDist> {
        [Uniform, Normal, Gamma, Exponential, Poisson, NegativeBinomial, GeneralizedNegativeBinomial, Dirichlet]
            .into_iter()
            .find(|d| d.op_name() == name || name == &d.op_name()[1..])
    }
}

/// ln Γ(x + k) − ln Γ(x + 1) − ln Γ(k) + k ln p + x ln(1 − p): the negative binomial's log mass.
fn nbinom_logpmf(x: f64, k: f64, p: f64) -> f64 {
    gammaln(x + k) - gammaln(x + 1.0) - gammaln(k) + k * p.ln() + x * (1.0 - p).ln()
}

/// The log density of one scalar law at `x` with parameters `a` (and `b`).
fn log_density(d: PdfDist, x: f64, a: f64, b: f64) -> f64 {
    match d {
        Uniform if (a..=b).contains(&x) => -(b - a).ln(),
        Uniform => f64::NEG_INFINITY,
        Normal => {
            let z = (x - a) / b;
            -0.5 * z * z - b.ln() - 0.5 * std::f64::consts::TAU.ln()
        }
        Gamma => a * b.ln() + (a - 1.0) * x.ln() - b * x - gammaln(a),
        Exponential => a.ln() - a * x,
        Poisson => x * a.ln() - a - gammaln(x + 1.0),
        NegativeBinomial => nbinom_logpmf(x, a, b),
        // alpha = 0 is the Poisson limit.
        GeneralizedNegativeBinomial if b == 0.0 => log_density(Poisson, x, a, 0.0),
        GeneralizedNegativeBinomial => nbinom_logpmf(x, 1.0 / b, 1.0 / (1.0 + a * b)),
        Dirichlet => unreachable!("dirichlet densities are computed per vector"),
    }
}

/// d log density / d(x, a, b) for one scalar law.
fn log_density_grad(d: PdfDist, x: f64, a: f64, b: f64) -> [f64; 3] {
    let psi = |v: f64| polygamma(0, v);
    match d {
        Uniform if (a..=b).contains(&x) => [0.0, 1.0 / (b - a), -1.0 / (b - a)],
        Uniform => [0.0; 3],
        Normal => {
            let r = (x - a) / (b * b);
            [-r, r, (x - a) * (x - a) / (b * b * b) - 1.0 / b]
        }
        Gamma => [(a - 1.0) / x - b, b.ln() + x.ln() - psi(a), a / b - x],
        Exponential => [-a, 1.0 / a - x, 0.0],
        // Counts: the derivative in x is that of the formula's continuation (through ln Γ).
        Poisson => [a.ln() - psi(x + 1.0), x / a - 1.0, 0.0],
        NegativeBinomial => {
            [psi(x + a) - psi(x + 1.0) + (1.0 - b).ln(), psi(x + a) - psi(a) + b.ln(), a / b - x / (1.0 - b)]
        }
        GeneralizedNegativeBinomial if b == 0.0 => [a.ln() - psi(x + 1.0), x / a - 1.0, 0.0],
        GeneralizedNegativeBinomial => {
            let (k, s) = (1.0 / b, 1.0 + a * b);
            let d_x = psi(x + k) - psi(x + 1.0) + (a * b / s).ln();
            let d_mu = x / a - (x * b + 1.0) / s;
            let d_alpha = -(psi(x + k) - psi(k)) * k * k + k * k * s.ln() - k * a / s + x / b - x * a / s;
            [d_x, d_mu, d_alpha]
        }
        Dirichlet => unreachable!("dirichlet densities are computed per vector"),
    }
}

/// Dirichlet log density of `x` (length k) with concentration `alpha`.
fn dirichlet_log_density(x: &[f64], alpha: &[f64]) -> f64 {
    let total: f64 = alpha.iter().sum();
    gammaln(total) + x.iter().zip(alpha).map(|(&x, &a)| (a - 1.0) * x.ln() - gammaln(a)).sum::<f64>()
}

/// How the inputs' shapes relate: `params` = size of `P`, `per` = size of `T`, `k` = the
/// Dirichlet vector length (1 otherwise).
#[derive(Clone, Copy, Debug)]
struct Geometry {
    params: usize,
    per: usize,
    k: usize,
}

/// `_random_pdf_<dist>(sample, params..., is_log)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pdf {
    pub dist: PdfDist,
    pub is_log: bool,
}

impl Pdf {
    /// Checks the shapes and dtypes; returns the output shape and the geometry.
    fn check(&self, inputs: &[Meta]) -> Result<(Vec<usize>, Geometry)> {
        let name = self.dist.op_name();
        let names = self.dist.arg_names();
        let sample = &inputs[0];
        for (m, n) in inputs.iter().zip(names).skip(1) {
            if m.shape != inputs[1].shape {
                return Err(Error::Shape(format!(
                    "{name}: the parameters must share one shape, got {} {} and {} {}",
                    names[1],
                    fmt_shape(&inputs[1].shape),
                    n,
                    fmt_shape(&m.shape)
                )));
            }
            if m.dtype != sample.dtype {
                return Err(Error::DType(format!(
                    "{name}: {n} has dtype {} but sample has {} (they must match)",
                    m.dtype, sample.dtype
                )));
            }
        }
        if !sample.dtype.is_float() {
            return Err(Error::DType(format!("{name}: sample must be a float array, got {}", sample.dtype)));
        }
        let p = &inputs[1].shape;
        let bad = || {
            Error::Shape(format!(
                "{name}: the shape of {} {} must be a leading part of sample's shape {}{}",
                names[1],
                fmt_shape(p),
                fmt_shape(&sample.shape),
                if self.dist == Dirichlet { " (and both end with the same vector length)" } else { "" }
            ))
        };
        if self.dist == Dirichlet {
            let (Some(&k), Some(&ks)) = (p.last(), sample.shape.last()) else { return Err(bad()) };
            let (lead, slead) = (&p[..p.len() - 1], &sample.shape[..sample.shape.len() - 1]);
            if k != ks || !slead.starts_with(lead) {
                return Err(bad());
            }
            let params = lead.iter().product::<usize>();
            let per = slead[lead.len()..].iter().product::<usize>();
            return Ok((slead.to_vec(), Geometry { params, per, k }));
        }
        if !sample.shape.starts_with(p) {
            return Err(bad());
        }
        let per = sample.shape[p.len()..].iter().product::<usize>();
        Ok((sample.shape.to_vec(), Geometry { params: p.iter().product(), per, k: 1 }))
    }
}

fn values(x: &NDArray) -> Result<Vec<f64>> {
    x.astype(DType::F64).to_vec::<f64>()
}

impl Op for Pdf {
    fn name(&self) -> &'static str {
        self.dist.op_name()
    }
    fn arg_names(&self) -> &'static [&'static str] {
        self.dist.arg_names()
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("is_log", if self.is_log { "True" } else { "False" }.into())]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let (shape, _) = self.check(inputs)?;
        Ok(vec![Meta::new(&shape, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let metas: Vec<Meta> = inputs.iter().map(NDArray::meta).collect();
        let (_, g) = self.check(&metas)?;
        let x = values(&inputs[0])?;
        let a = values(&inputs[1])?;
        let b = if inputs.len() > 2 { values(&inputs[2])? } else { vec![0.0; a.len()] };
        let n = g.params * g.per;
        let mut out = Vec::with_capacity(n);
        for q in 0..n {
            let p = q / g.per.max(1);
            let lp = if self.dist == Dirichlet {
                dirichlet_log_density(&x[q * g.k..(q + 1) * g.k], &a[p * g.k..(p + 1) * g.k])
            } else {
                log_density(self.dist, x[q], a[p], b[p])
            };
            out.push(if self.is_log { lp } else { lp.exp() });
        }
        with_dtype!(outputs[0].dtype(), T => outputs[0].write_out::<T, _>(|o| {
            for (o, &v) in o.iter_mut().zip(&out) {
                *o = T::from_f64(v);
            }
        }))
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let mut args = vec![og[0]];
        args.extend_from_slice(inputs);
        let grads = g.apply(Arc::new(PdfGrad { pdf: *self }) as OpRef, &args)?;
        Ok(grads.into_iter().map(Some).collect())
    }
}

/// `_backward_pdf(out_grad, sample, params...)`: the gradients of a `Pdf` w.r.t. the sample and
/// each parameter (summed over the samples that share it). Not differentiable again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PdfGrad {
    pub pdf: Pdf,
}

impl Op for PdfGrad {
    fn name(&self) -> &'static str {
        "_backward_pdf"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        if self.pdf.dist.arg_names().len() == 2 {
            &["out_grad", "sample", "param"]
        } else {
            &["out_grad", "sample", "param1", "param2"]
        }
    }
    fn num_outputs(&self) -> usize {
        self.pdf.dist.arg_names().len()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        self.pdf.check(&inputs[1..])?;
        Ok(inputs[1..].to_vec())
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let metas: Vec<Meta> = inputs[1..].iter().map(NDArray::meta).collect();
        let (_, geo) = self.pdf.check(&metas)?;
        let dist = self.pdf.dist;
        let og = values(&inputs[0])?;
        let x = values(&inputs[1])?;
        let a = values(&inputs[2])?;
        let b = if inputs.len() > 3 { values(&inputs[3])? } else { vec![0.0; a.len()] };
        let mut gx = vec![0.0; x.len()];
        let mut ga = vec![0.0; a.len()];
        let mut gb = vec![0.0; b.len()];
        for q in 0..geo.params * geo.per {
            let p = q / geo.per.max(1);
            if dist == Dirichlet {
                let (xs, al) = (&x[q * geo.k..(q + 1) * geo.k], &a[p * geo.k..(p + 1) * geo.k]);
                let lp = dirichlet_log_density(xs, al);
                let scale = og[q] * if self.pdf.is_log { 1.0 } else { lp.exp() };
                let psi_total = polygamma(0, al.iter().sum());
                for j in 0..geo.k {
                    gx[q * geo.k + j] += scale * (al[j] - 1.0) / xs[j];
                    ga[p * geo.k + j] += scale * (psi_total - polygamma(0, al[j]) + xs[j].ln());
                }
                continue;
            }
            let lp = log_density(dist, x[q], a[p], b[p]);
            let scale = og[q] * if self.pdf.is_log { 1.0 } else { lp.exp() };
            if scale == 0.0 {
                continue; // outside the support: no gradient (and no 0 * inf)
            }
            let [dx, da, db] = log_density_grad(dist, x[q], a[p], b[p]);
            gx[q] = scale * dx;
            ga[p] += scale * da;
            gb[p] += scale * db;
        }
        for (o, v) in outputs.iter_mut().zip([gx, ga, gb]) {
            with_dtype!(o.dtype(), T => o.write_out::<T, _>(|o| {
                for (o, &v) in o.iter_mut().zip(&v) {
                    *o = T::from_f64(v);
                }
            }))?;
        }
        Ok(())
    }
    fn differentiable(&self) -> bool {
        false
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![None; self.pdf.dist.arg_names().len() + 1])
    }
}

/// The density ops' parameter.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct PdfParams {
    /// Return the log density instead of the density.
    #[param(default = false)]
    pub is_log: bool,
}

fn pdf_op(a: &super::Attrs) -> Result<OpRef> {
    let p = PdfParams::parse(a)?;
    let dist = PdfDist::from_name(&a.op).ok_or_else(|| Error::Value(format!("{}: not a density op", a.op)))?;
    Ok(Arc::new(Pdf { dist, is_log: p.is_log }))
}

macro_rules! pdf_def {
    ($name:literal, $alias:literal, $args:expr, $doc:literal) => {
        OpDef { name: $name, aliases: &[$alias], args: $args, doc: $doc, params: PdfParams::schema, build: pdf_op }
    };
}

/// The density ops' declarations.
pub const DEFS: &[OpDef] = &[
    pdf_def!(
        "_random_pdf_uniform",
        "random_pdf_uniform",
        &["sample", "low", "high"],
        "Density of U(low, high) at sample (0 outside [low, high])."
    ),
    pdf_def!(
        "_random_pdf_normal",
        "random_pdf_normal",
        &["sample", "mu", "sigma"],
        "Density of N(mu, sigma²) at sample."
    ),
    pdf_def!(
        "_random_pdf_gamma",
        "random_pdf_gamma",
        &["sample", "alpha", "beta"],
        "Density of the gamma law with shape alpha and rate beta at sample."
    ),
    pdf_def!("_random_pdf_exponential", "random_pdf_exponential", &["sample", "lam"], "Density of Exp(lam) at sample."),
    pdf_def!("_random_pdf_poisson", "random_pdf_poisson", &["sample", "lam"], "Mass of Poisson(lam) at sample."),
    pdf_def!(
        "_random_pdf_negative_binomial",
        "random_pdf_negative_binomial",
        &["sample", "k", "p"],
        "Mass at sample of the failures before the k-th success, success probability p."
    ),
    pdf_def!(
        "_random_pdf_generalized_negative_binomial",
        "random_pdf_generalized_negative_binomial",
        &["sample", "mu", "alpha"],
        "Mass of the negative binomial with mean mu and dispersion alpha at sample."
    ),
    pdf_def!(
        "_random_pdf_dirichlet",
        "random_pdf_dirichlet",
        &["sample", "alpha"],
        "Density of Dirichlet(alpha) at the vectors along sample's last axis."
    ),
];
