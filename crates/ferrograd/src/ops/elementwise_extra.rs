//! Elementwise extras: `clip`, `where`, `smooth_l1`, the polygamma helper op behind the gradients
//! of `gamma`/`gammaln`, and the special functions (`erf`, `erfinv`, `gamma`, `gammaln`,
//! polygamma) used by the unary kinds. The special functions are written here (no dependency) and
//! are accurate to ~1e-13 relative in f64 away from poles.

use std::f64::consts::PI;
use std::sync::Arc;

use ferrograd_kernels::par::{self, Cost};
use ferrograd_kernels::unary_binary::unary;
use ferrograd_kernels::Element;

use super::binary::BinaryKind;
use super::params::{NoParams, OpDef, OpParams};
use super::shape_more::dense;
use super::unary::UnaryKind;
use super::{AttrValue, Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::with_dtype;

const TWO_OVER_SQRT_PI: f64 = std::f64::consts::FRAC_2_SQRT_PI;

/// erfc(x) for x >= 2.5 by its continued fraction (backward evaluation).
fn erfc_cf(x: f64) -> f64 {
    let mut f = x;
    for n in (1..=120).rev() {
        f = x + (n as f64 * 0.5) / f;
    }
    (-x * x).exp() / (f * PI.sqrt())
}

/// The error function.
pub fn erf(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    let r = if a < 2.5 {
        // erf(a) = 2/√π e^{-a²} Σ 2ⁿ a^{2n+1} / (1·3·…·(2n+1)): positive terms, no cancellation.
        let a2 = a * a;
        let (mut term, mut sum) = (a, a);
        for n in 1..200 {
            term *= 2.0 * a2 / (2 * n + 1) as f64;
            sum += term;
            if term <= sum * 1e-17 {
                break;
            }
        }
        TWO_OVER_SQRT_PI * (-a2).exp() * sum
    } else if a < 6.0 {
        1.0 - erfc_cf(a)
    } else {
        1.0
    };
    r.copysign(x)
}

/// erfc(a) for a >= 0.
fn erfc_pos(a: f64) -> f64 {
    if a < 2.5 {
        1.0 - erf(a)
    } else if a < 27.0 {
        erfc_cf(a)
    } else {
        0.0
    }
}

/// The inverse error function on [-1, 1] (±inf at ±1, NaN outside).
pub fn erfinv(y: f64) -> f64 {
    if y.is_nan() || y.abs() > 1.0 {
        return f64::NAN;
    }
    if y.abs() == 1.0 {
        return f64::INFINITY.copysign(y);
    }
    if y == 0.0 {
        return y;
    }
    // Giles' single-precision approximation, then Halley steps on erf (or erfc near ±1).
    let w = -((1.0 - y) * (1.0 + y)).ln();
    let p = if w < 5.0 {
        let w = w - 2.5;
        [
            2.810_226_36e-08,
            3.432_739_39e-07,
            -3.523_387_7e-06,
            -4.391_506_54e-06,
            0.000_218_580_87,
            -0.001_253_725_03,
            -0.004_177_681_64,
            0.246_640_727,
            1.501_409_41,
        ]
        .iter()
        .fold(0.0, |p, &c| c + p * w)
    } else {
        let w = w.sqrt() - 3.0;
        [
            -0.000_200_214_257,
            0.000_100_950_558,
            0.001_349_343_22,
            -0.003_673_428_44,
            0.005_739_507_73,
            -0.007_622_461_3,
            0.009_438_870_47,
            1.001_674_06,
            2.832_976_82,
        ]
        .iter()
        .fold(0.0, |p, &c| c + p * w)
    };
    let (s, ay) = (y.signum(), y.abs());
    let mut r = p * ay;
    for _ in 0..3 {
        let d = TWO_OVER_SQRT_PI * (-r * r).exp();
        if d == 0.0 {
            break;
        }
        // f(r) = erf(r) - y, computed as (1-y) - erfc(r) when y is near 1 (no cancellation).
        let f = if ay > 0.5 { (1.0 - ay) - erfc_pos(r) } else { erf(r) - ay };
        let dr = f / d;
        r -= dr / (1.0 + r * dr);
    }
    s * r
}

const LANCZOS_G: f64 = 7.0;
const LANCZOS: [f64; 9] = [
    0.999_999_999_999_809_9,
    676.520_368_121_885_1,
    -1_259.139_216_722_402_8,
    771.323_428_777_653_1,
    -176.615_029_162_140_6,
    12.507_343_278_686_905,
    -0.138_571_095_265_720_12,
    9.984_369_578_019_572e-6,
    1.505_632_735_149_311_6e-7,
];

fn lanczos_sum(x: f64) -> f64 {
    LANCZOS[1..].iter().enumerate().fold(LANCZOS[0], |a, (i, &c)| a + c / (x + (i + 1) as f64))
}

/// The gamma function: ±inf at ±0 (the limit from that side, as C's `tgamma` and SciPy), NaN at
/// the poles -1, -2, ... (the two one-sided limits differ in sign).
pub fn gamma(x: f64) -> f64 {
    if x == 0.0 {
        return f64::INFINITY.copysign(x);
    }
    if x.is_nan() || (x < 0.0 && x == x.floor()) {
        return f64::NAN;
    }
    if x < 0.5 {
        return PI / ((PI * x).sin() * gamma(1.0 - x));
    }
    if x > 171.7 {
        return f64::INFINITY;
    }
    let z = x - 1.0;
    let t = z + LANCZOS_G + 0.5;
    // t^(z+0.5) split in two halves so that it cannot overflow before e^{-t} scales it down.
    let h = t.powf(0.5 * (z + 0.5));
    (2.0 * PI).sqrt() * h * ((-t).exp() * h) * lanczos_sum(z)
}

/// ln|Γ(x)| (+inf at poles and at ±inf, as C's `lgamma`; exactly 0 at 1 and 2).
pub fn gammaln(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x.is_infinite() {
        return f64::INFINITY;
    }
    if x == 1.0 || x == 2.0 {
        return 0.0;
    }
    if x <= 0.0 && x == x.floor() {
        return f64::INFINITY;
    }
    if x < 0.5 {
        return (PI / (PI * x).sin().abs()).ln() - gammaln(1.0 - x);
    }
    let z = x - 1.0;
    let t = z + LANCZOS_G + 0.5;
    0.5 * (2.0 * PI).ln() + (z + 0.5) * t.ln() - t + lanczos_sum(z).ln()
}

/// Bernoulli numbers B2, B4, ..., B20.
const BERNOULLI: [f64; 10] = [
    1.0 / 6.0,
    -1.0 / 30.0,
    1.0 / 42.0,
    -1.0 / 30.0,
    5.0 / 66.0,
    -691.0 / 2730.0,
    7.0 / 6.0,
    -3617.0 / 510.0,
    43867.0 / 798.0,
    -174_611.0 / 330.0,
];

/// The polygamma function ψ⁽ⁿ⁾(x) (n = 0: digamma). At the poles 0, -1, -2, ... as SciPy:
/// digamma is ∓inf at ±0 and NaN at the negative integers; for n ≥ 1 the pole is (-1)ⁿ⁺¹·inf
/// from both sides.
pub fn polygamma(n: u32, x: f64) -> f64 {
    let sign = if n.is_multiple_of(2) { 1.0 } else { -1.0 }; // (-1)^n
    if x.is_nan() {
        return x;
    }
    if x <= 0.0 && x == x.floor() {
        return match n {
            0 if x == 0.0 => -f64::INFINITY.copysign(x),
            0 => f64::NAN,
            _ => -sign * f64::INFINITY,
        };
    }
    let nf = n as f64;
    let fact = |k: u32| (1..=k).fold(1.0, |a, i| a * i as f64);
    let n_fact = fact(n);
    // Recurrence ψ⁽ⁿ⁾(x) = ψ⁽ⁿ⁾(x+1) - (-1)ⁿ n! / x^{n+1}, up to where the asymptotic series is exact.
    let (mut x, mut acc) = (x, 0.0);
    while x < 15.0 {
        acc -= sign * n_fact / x.powi(n as i32 + 1);
        x += 1.0;
    }
    let asym = if n == 0 {
        let x2 = 1.0 / (x * x);
        let mut s = x.ln() - 0.5 / x;
        let mut p = x2;
        for (k, &b) in BERNOULLI.iter().enumerate() {
            s -= b / (2.0 * (k + 1) as f64) * p;
            p *= x2;
        }
        s
    } else {
        // (-1)^{n+1} [ (n-1)!/xⁿ + n!/(2x^{n+1}) + Σ B2k (2k+n-1)!/((2k)! x^{2k+n}) ]
        let mut s = fact(n - 1) / x.powf(nf) + n_fact / (2.0 * x.powf(nf + 1.0));
        for (k, &b) in BERNOULLI.iter().enumerate() {
            let k2 = 2 * (k as u32 + 1);
            s += b * fact(k2 + n - 1) / fact(k2) / x.powf(k2 as f64 + nf);
        }
        -sign * s
    };
    acc + asym
}

/// `_polygamma(data, n)`: ψ⁽ⁿ⁾ elementwise (the gradient of `gammaln` is n = 0); its gradient is
/// the next order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PolyGamma {
    pub n: u32,
}

impl Op for PolyGamma {
    fn name(&self) -> &'static str {
        "_polygamma"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("n", self.n.to_string())]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        Ok(vec![inputs[0].clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let x = &inputs[0];
        let n = self.n;
        let src = x.snapshot();
        with_dtype!(x.dtype(), T => {
            let s = src.typed::<T>()?;
            outputs[0].write_out::<T, _>(|o| unary(s, x.layout(), o, Cost::Heavy, move |v: T| T::from_f64(polygamma(n, v.to_f64()))))
        })
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let d = g.apply1(PolyGamma { n: self.n + 1 }, &[inputs[0]])?;
        Ok(vec![Some(g.mul(og[0], d)?)])
    }
}

/// `clip(data, a_min, a_max)`: values limited to [a_min, a_max] (NaN stays NaN); the gradient
/// passes where a_min <= x <= a_max (bounds included, as in MXNet) and is 0 outside.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Clip {
    pub a_min: f64,
    pub a_max: f64,
}

impl Op for Clip {
    fn name(&self) -> &'static str {
        "clip"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("a_min", AttrValue::Float(self.a_min).to_mx_string()),
            ("a_max", AttrValue::Float(self.a_max).to_mx_string()),
        ]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        Ok(vec![inputs[0].clone()])
    }
    #[allow(clippy::bool_comparison)] // the generic kernel also serves bool arrays
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let x = &inputs[0];
        let src = x.snapshot();
        with_dtype!(x.dtype(), T => {
            let s = src.typed::<T>()?;
            let (lo, hi) = (T::from_f64(self.a_min), T::from_f64(self.a_max));
            outputs[0].write_out::<T, _>(|o| {
                unary(s, x.layout(), o, Cost::Light, move |v: T| if v < lo { lo } else if v > hi { hi } else { v })
            })
        })
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let x = inputs[0];
        let lo = g.scalar(BinaryKind::Ge, x, self.a_min, false)?;
        let hi = g.scalar(BinaryKind::Le, x, self.a_max, false)?;
        let m = g.mul(lo, hi)?;
        // Comparisons are not recorded; adding zeros_like(x) ties the mask to x so that a
        // second-order gradient is zero instead of "not in a computational graph".
        let z = g.zeros_like(x)?;
        let m = g.add(m, z)?;
        Ok(vec![Some(g.mul(og[0], m)?)])
    }
}

/// `where(condition, x, y)`: x where condition is nonzero, else y. x and y have one shape;
/// condition has that shape too, or is 1-D with one entry per row (x.shape[0]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Where;

impl Where {
    fn cond_view(cond: &NDArray, shape: &[usize]) -> Result<NDArray> {
        let c = if cond.shape() != shape && cond.ndim() == 1 {
            let mut s = vec![1; shape.len()];
            s[0] = cond.shape()[0];
            cond.reshape(&s)?
        } else {
            cond.clone()
        };
        c.broadcast_to(shape)
    }
}

impl Op for Where {
    fn name(&self) -> &'static str {
        "where"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["condition", "x", "y"]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let (c, x, y) = (&inputs[0], &inputs[1], &inputs[2]);
        if x.shape != y.shape {
            return Err(Error::Shape(format!(
                "where: x and y must have the same shape, got x {} and y {}",
                fmt_shape(&x.shape),
                fmt_shape(&y.shape)
            )));
        }
        if x.dtype != y.dtype {
            return Err(Error::DType(format!("where: x has dtype {} but y has {}", x.dtype, y.dtype)));
        }
        let row = c.shape.len() == 1 && !x.shape.is_empty() && c.shape[0] == x.shape[0];
        if c.shape != x.shape && !row {
            return Err(Error::Shape(format!(
                "where: condition of shape {} must match x and y of shape {} (or be 1-D of length {})",
                fmt_shape(&c.shape),
                fmt_shape(&x.shape),
                x.shape.first().map_or("x.shape[0]".into(), |d| d.to_string())
            )));
        }
        Ok(vec![x.clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let shape = inputs[1].shape().to_vec();
        let cond = Where::cond_view(&inputs[0], &shape)?.astype(DType::Bool);
        let (cb, cr) = dense(&cond);
        let (xb, xr) = dense(&inputs[1]);
        let (yb, yr) = dense(&inputs[2]);
        let c = &cb.typed::<bool>()?[cr];
        with_dtype!(inputs[1].dtype(), T => {
            let xs = &xb.typed::<T>()?[xr];
            let ys = &yb.typed::<T>()?[yr];
            outputs[0].write_out::<T, _>(|o| {
                par::for_each_chunk(o, Cost::Light, |start, chunk| {
                    for (j, v) in chunk.iter_mut().enumerate() {
                        let i = start + j;
                        *v = if c[i] { xs[i] } else { ys[i] };
                    }
                })
            })
        })
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let z = g.zeros_like(og[0])?;
        let gx = g.apply1(Where, &[inputs[0], og[0], z])?;
        let gy = g.apply1(Where, &[inputs[0], z, og[0]])?;
        Ok(vec![None, Some(gx), Some(gy)])
    }
}

/// `smooth_l1(data, scalar=σ)`: 0.5·(σx)² where |x| < 1/σ², else |x| - 0.5/σ².
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SmoothL1 {
    pub sigma: f64,
}

impl Op for SmoothL1 {
    fn name(&self) -> &'static str {
        "smooth_l1"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("scalar", AttrValue::Float(self.sigma).to_mx_string())]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        Ok(vec![inputs[0].clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let x = &inputs[0];
        let src = x.snapshot();
        let s2 = self.sigma * self.sigma;
        with_dtype!(x.dtype(), T => {
            let s = src.typed::<T>()?;
            outputs[0].write_out::<T, _>(|o| {
                unary(s, x.layout(), o, Cost::Light, move |v: T| {
                    let v = v.to_f64();
                    T::from_f64(if v.abs() < 1.0 / s2 { 0.5 * s2 * v * v } else { v.abs() - 0.5 / s2 })
                })
            })
        })
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        // d = m·σ²x + (1 - m)·sign(x), with m = (|x| < 1/σ²).
        let x = inputs[0];
        let s2 = self.sigma * self.sigma;
        let ax = g.unary(UnaryKind::Abs, x)?;
        let m = g.scalar(BinaryKind::Lt, ax, 1.0 / s2, false)?;
        let inner = g.mul_scalar(x, s2)?;
        let inner = g.mul(inner, m)?;
        let sg = g.unary(UnaryKind::Sign, x)?;
        let sm = g.mul(sg, m)?;
        let outer = g.sub(sg, sm)?;
        let d = g.add(inner, outer)?;
        Ok(vec![Some(g.mul(og[0], d)?)])
    }
}

// ---- registry builders ----

/// `clip`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct ClipParams {
    /// Lower bound of the output values.
    pub a_min: f64,
    /// Upper bound of the output values.
    pub a_max: f64,
}

/// `smooth_l1`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct SmoothL1Params {
    /// σ: the quadratic part covers |x| < 1/σ² (a positive number).
    #[param(default = 1.0)]
    pub scalar: f64,
}

pub fn clip_op(a: &Attrs) -> Result<OpRef> {
    let p = ClipParams::parse(a)?;
    Ok(Arc::new(Clip { a_min: p.a_min, a_max: p.a_max }))
}

pub fn where_op(a: &Attrs) -> Result<OpRef> {
    NoParams::parse(a)?;
    Ok(Arc::new(Where))
}

pub fn smooth_l1_op(a: &Attrs) -> Result<OpRef> {
    let sigma = SmoothL1Params::parse(a)?.scalar;
    if !(sigma > 0.0 && sigma.is_finite()) {
        return Err(Error::Value(format!("smooth_l1: scalar (sigma) must be a positive number, got {sigma}")));
    }
    Ok(Arc::new(SmoothL1 { sigma }))
}

/// The elementwise extras' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "clip",
        aliases: &[],
        args: &["data"],
        doc: "Limit values to [a_min, a_max]; gradient passes inside (bounds included).",
        params: ClipParams::schema,
        build: clip_op,
    },
    OpDef {
        name: "where",
        aliases: &[],
        args: &["condition", "x", "y"],
        doc: "x where condition is nonzero, else y (condition may be 1-D, one entry per row).",
        params: NoParams::schema,
        build: where_op,
    },
    OpDef {
        name: "smooth_l1",
        aliases: &[],
        args: &["data"],
        doc: "0.5(σx)² where |x| < 1/σ², else |x| - 0.5/σ² (scalar = σ).",
        params: SmoothL1Params::schema,
        build: smooth_l1_op,
    },
];
