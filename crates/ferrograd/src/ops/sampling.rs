//! Random samplers as ops (not differentiable), drawing from the crate's Philox stream
//! ([`crate::random`]): `_random_uniform`, `_random_normal`, `_random_randint` (no inputs, scalar
//! parameters) and `_sample_uniform`, `_sample_normal` (one distribution per element of the
//! parameter arrays, `shape` samples each: output shape `low.shape + shape`).

use std::sync::Arc;

use super::attrs::fmt_tuple;
use super::shape_more::{dense, sizes};
use super::{AttrValue, Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::random;

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
    fn forward(&self, _ctx: &Ctx, _inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let named = |e: Error| match e {
            Error::Value(m) => Error::Value(format!("{}: {m}", self.name())),
            Error::DType(m) => Error::DType(format!("{}: {m}", self.name())),
            e => e,
        };
        outputs[0] = match self.dist {
            Dist::Uniform => random::uniform(self.a, self.b, &self.shape, self.dtype),
            Dist::Normal => random::normal(self.a, self.b, &self.shape, self.dtype),
            Dist::Randint => random::randint(self.a as i64, self.b as i64, &self.shape, self.dtype),
        }
        .map_err(named)?;
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
        let zs = buf.slice::<f64>().map_or(&[][..], |s| &s[range]);
        let v: Vec<f64> = zs
            .iter()
            .enumerate()
            .map(|(q, &u)| {
                let p = q / per.max(1);
                match self.dist {
                    Dist::Normal => pa[p] + pb[p] * u,
                    _ => pa[p] + (pb[p] - pa[p]) * u,
                }
            })
            .collect();
        outputs[0] = NDArray::from_vec(v, &out_meta.shape)?.astype(out_meta.dtype);
        Ok(())
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

fn shape_of(a: &Attrs) -> Result<Vec<usize>> {
    sizes(&a.op, "shape", &a.tuple("shape")?.unwrap_or_default())
}

fn dtype_of(a: &Attrs, default: DType) -> Result<DType> {
    match a.str_or("dtype", "None")? {
        "None" => Ok(default),
        s => DType::from_name(s),
    }
}

pub fn random_uniform_op(a: &Attrs) -> Result<OpRef> {
    let (low, high) = (a.f64_or("low", 0.0)?, a.f64_or("high", 1.0)?);
    if !(low.is_finite() && high.is_finite() && low <= high) {
        return Err(Error::Value(format!("_random_uniform: need finite low <= high, got low={low}, high={high}")));
    }
    let dtype = dtype_of(a, DType::F32)?;
    if !dtype.is_float() {
        return Err(Error::DType(format!("_random_uniform: dtype must be a float type, got {dtype}")));
    }
    Ok(Arc::new(Random { dist: Dist::Uniform, a: low, b: high, shape: shape_of(a)?, dtype }))
}

pub fn random_normal_op(a: &Attrs) -> Result<OpRef> {
    let (loc, scale) = (a.f64_or("loc", 0.0)?, a.f64_or("scale", 1.0)?);
    if !(loc.is_finite() && scale.is_finite() && scale >= 0.0) {
        return Err(Error::Value(format!(
            "_random_normal: need finite loc and scale >= 0, got loc={loc}, scale={scale}"
        )));
    }
    let dtype = dtype_of(a, DType::F32)?;
    if !dtype.is_float() {
        return Err(Error::DType(format!("_random_normal: dtype must be a float type, got {dtype}")));
    }
    Ok(Arc::new(Random { dist: Dist::Normal, a: loc, b: scale, shape: shape_of(a)?, dtype }))
}

pub fn random_randint_op(a: &Attrs) -> Result<OpRef> {
    if a.f64_or("low", f64::NAN)?.is_nan() || a.f64_or("high", f64::NAN)?.is_nan() {
        return Err(Error::Value("_random_randint: required parameters 'low' and 'high' are missing".into()));
    }
    let (low, high) = (a.int_or("low", 0)?, a.int_or("high", 0)?);
    if high <= low {
        return Err(Error::Value(format!("_random_randint: need low < high, got low={low}, high={high}")));
    }
    let dtype = dtype_of(a, DType::I32)?;
    Ok(Arc::new(Random { dist: Dist::Randint, a: low as f64, b: high as f64, shape: shape_of(a)?, dtype }))
}

fn sample(a: &Attrs, dist: Dist) -> Result<OpRef> {
    let dtype = match a.str_or("dtype", "None")? {
        "None" => None,
        s => Some(DType::from_name(s)?),
    };
    Ok(Arc::new(Sample { dist, shape: shape_of(a)?, dtype }))
}

pub fn sample_uniform_op(a: &Attrs) -> Result<OpRef> {
    sample(a, Dist::Uniform)
}

pub fn sample_normal_op(a: &Attrs) -> Result<OpRef> {
    sample(a, Dist::Normal)
}
