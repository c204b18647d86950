//! Elementwise unary math, including the parameterised `smooth_l1` and `_polygamma` (the gradient
//! of `gamma`/`gammaln`; special functions come from `ferrograd_kernels::special`).
//!
//! Float kernels run natively in f32/f64 (f32 `exp`, `log`, `tanh`, `sigmoid` vectorised through
//! `ferrograd_kernels::vmath`); float16 computes in f32; integer inputs compute in f64 and keep
//! their dtype (MXNet's legacy rule). Gradients are written in ferrograd ops.

use std::sync::Arc;

use ferrograd_kernels::par::Cost;
use ferrograd_kernels::unary_binary::unary;
use ferrograd_kernels::vmath;
use ferrograd_kernels::Element;

use super::binary::BinaryKind;
use super::params::{NoParams, OpDef, OpParams};
use super::widen::forward_widened;
use super::AttrValue;
use super::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::with_dtype;
use ferrograd_kernels::special;

macro_rules! unary_kinds {
    ($($v:ident => $name:literal),* $(,)?) => {
        /// Which unary function.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum UnaryKind { $($v),* }
        impl UnaryKind {
            pub const ALL: &'static [UnaryKind] = &[$(UnaryKind::$v),*];
            /// MXNet op name.
            pub fn name(self) -> &'static str {
                match self { $(UnaryKind::$v => $name),* }
            }
        }
    };
}

unary_kinds! {
    Negative => "negative", Abs => "abs", Sign => "sign", Square => "square", Sqrt => "sqrt",
    Rsqrt => "rsqrt", Cbrt => "cbrt", Reciprocal => "reciprocal", Exp => "exp", Expm1 => "expm1",
    Log => "log", Log2 => "log2", Log10 => "log10", Log1p => "log1p", Sin => "sin", Cos => "cos",
    Tan => "tan", Arcsin => "arcsin", Arccos => "arccos", Arctan => "arctan", Sinh => "sinh",
    Cosh => "cosh", Tanh => "tanh", Arcsinh => "arcsinh", Arccosh => "arccosh",
    Arctanh => "arctanh", Sigmoid => "sigmoid", Relu => "relu", Softsign => "softsign",
    Floor => "floor", Ceil => "ceil", Round => "round", Rint => "rint", Fix => "fix",
    Trunc => "trunc", Degrees => "degrees", Radians => "radians", LogicalNot => "logical_not",
    RecipNonzero => "_reciprocal_nonzero", Rcbrt => "rcbrt", Erf => "erf", Erfinv => "erfinv",
    Gamma => "gamma", Gammaln => "gammaln",
}

impl UnaryKind {
    pub fn from_name(name: &str) -> Option<UnaryKind> {
        UnaryKind::ALL.iter().copied().find(|k| k.name() == name)
    }

    /// Step-like functions whose derivative is zero almost everywhere.
    fn is_piecewise_constant(self) -> bool {
        use UnaryKind::*;
        matches!(self, Sign | Floor | Ceil | Round | Rint | Fix | Trunc | LogicalNot)
    }

    /// The function on f64 (the reference for every dtype).
    pub fn eval_f64(self, x: f64) -> f64 {
        use UnaryKind::*;
        match self {
            Negative => -x,
            Abs => x.abs(),
            Sign => sign(x),
            Square => x * x,
            Sqrt => x.sqrt(),
            Rsqrt => 1.0 / x.sqrt(),
            Cbrt => x.cbrt(),
            Reciprocal => 1.0 / x,
            Exp => x.exp(),
            Expm1 => x.exp_m1(),
            Log => x.ln(),
            Log2 => x.log2(),
            Log10 => x.log10(),
            Log1p => x.ln_1p(),
            Sin => x.sin(),
            Cos => x.cos(),
            Tan => x.tan(),
            Arcsin => x.asin(),
            Arccos => x.acos(),
            Arctan => x.atan(),
            Sinh => x.sinh(),
            Cosh => x.cosh(),
            Tanh => x.tanh(),
            Arcsinh => x.asinh(),
            Arccosh => x.acosh(),
            Arctanh => x.atanh(),
            Sigmoid => 1.0 / (1.0 + (-x).exp()),
            Relu => relu(x),
            Softsign => x / (1.0 + x.abs()),
            Floor => x.floor(),
            Ceil => x.ceil(),
            Round => x.round(),
            Rint => rint(x),
            Fix | Trunc => x.trunc(),
            Degrees => x.to_degrees(),
            Radians => x.to_radians(),
            LogicalNot => f64::from(u8::from(x == 0.0)),
            RecipNonzero => recip_nonzero(x),
            Rcbrt => 1.0 / x.cbrt(),
            Erf => special::erf(x),
            Erfinv => special::erfinv(x),
            Gamma => special::gamma(x),
            Gammaln => special::gammaln(x),
        }
    }
}

#[inline(always)]
fn sign(x: f64) -> f64 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else {
        x // 0 stays 0 (and NaN stays NaN)
    }
}

#[inline(always)]
fn relu(x: f64) -> f64 {
    // NaN propagates (NumPy's maximum(x, 0) semantics).
    if x > 0.0 || x.is_nan() {
        x
    } else {
        0.0
    }
}

#[inline(always)]
fn rint(x: f64) -> f64 {
    // MXNet's rint (nd and np alike) sends halves down, to the floor: rint(1.5) = 1,
    // rint(-0.5) = -1 (its documentation shows 1.5 -> 1); other values go to the nearest.
    let f = x.floor();
    if x - f == 0.5 {
        f
    } else {
        x.round()
    }
}

#[inline(always)]
fn recip_nonzero(x: f64) -> f64 {
    if x == 0.0 {
        0.0
    } else {
        1.0 / x
    }
}

/// f32 kernels: vectorised where it matters, otherwise f32-native or via f64.
fn forward_f32(kind: UnaryKind, src: &[f32], l: &ferrograd_kernels::Layout, out: &mut [f32]) {
    use UnaryKind::*;
    let (lt, hv) = (Cost::Light, Cost::Heavy);
    match kind {
        Negative => unary(src, l, out, lt, |x: f32| -x),
        Abs => unary(src, l, out, lt, |x: f32| x.abs()),
        Square => unary(src, l, out, lt, |x: f32| x * x),
        Sqrt => unary(src, l, out, lt, |x: f32| x.sqrt()),
        Rsqrt => unary(src, l, out, lt, |x: f32| 1.0 / x.sqrt()),
        Reciprocal => unary(src, l, out, lt, |x: f32| 1.0 / x),
        Exp => unary(src, l, out, hv, vmath::exp_f32),
        Log => unary(src, l, out, hv, vmath::ln_f32),
        Tanh => unary(src, l, out, hv, vmath::tanh_f32),
        Sigmoid => unary(src, l, out, hv, vmath::sigmoid_f32),
        Relu => unary(src, l, out, lt, |x: f32| if x > 0.0 || x.is_nan() { x } else { 0.0 }),
        Softsign => unary(src, l, out, lt, |x: f32| x / (1.0 + x.abs())),
        Floor => unary(src, l, out, lt, |x: f32| x.floor()),
        Ceil => unary(src, l, out, lt, |x: f32| x.ceil()),
        Trunc | Fix => unary(src, l, out, lt, |x: f32| x.trunc()),
        k => unary(src, l, out, hv, move |x: f32| k.eval_f64(f64::from(x)) as f32),
    }
}

/// f64 kernels: the common transcendentals vectorised, the rest through `eval_f64` (libm).
fn forward_f64(kind: UnaryKind, src: &[f64], l: &ferrograd_kernels::Layout, out: &mut [f64]) {
    use UnaryKind::*;
    match kind {
        Exp => unary(src, l, out, Cost::Heavy, vmath::exp_f64),
        Tanh => unary(src, l, out, Cost::Heavy, vmath::tanh_f64),
        Sigmoid => unary(src, l, out, Cost::Heavy, vmath::sigmoid_f64),
        k => forward_any(k, src, l, out),
    }
}

fn forward_any<T: Element>(kind: UnaryKind, src: &[T], l: &ferrograd_kernels::Layout, out: &mut [T]) {
    use UnaryKind::*;
    match kind {
        Negative => unary(src, l, out, Cost::Light, |x: T| T::from_f64(-x.to_f64())),
        Square => unary(src, l, out, Cost::Light, |x: T| {
            let v = x.to_f64();
            T::from_f64(v * v)
        }),
        k => unary(src, l, out, Cost::Heavy, move |x: T| T::from_f64(k.eval_f64(x.to_f64()))),
    }
}

/// An elementwise unary op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unary {
    pub kind: UnaryKind,
}

impl Op for Unary {
    fn name(&self) -> &'static str {
        self.kind.name()
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

    fn forward(&self, ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let x = &inputs[0];
        match x.dtype() {
            DType::F32 => {
                let src = x.snapshot();
                let s = src.typed::<f32>()?;
                outputs[0].write_out::<f32, _>(|o| forward_f32(self.kind, s, x.layout(), o))
            }
            DType::F16 => forward_widened(self, ctx, inputs, outputs, DType::F16, DType::F32),
            DType::F64 => {
                let src = x.snapshot();
                let s = src.typed::<f64>()?;
                outputs[0].write_out::<f64, _>(|o| forward_f64(self.kind, s, x.layout(), o))
            }
            dt => with_dtype!(dt, T => {
                let src = x.snapshot();
                let s = src.typed::<T>()?;
                outputs[0].write_out::<T, _>(|o| forward_any(self.kind, s, x.layout(), o))
            }),
        }
    }

    fn differentiable(&self) -> bool {
        !matches!(self.kind, UnaryKind::LogicalNot)
    }

    fn zero_gradient(&self) -> bool {
        true
    }

    fn saves(&self) -> Saves {
        use UnaryKind::*;
        match self.kind {
            Negative => Saves::None,
            Exp | Expm1 | Sqrt | Rsqrt | Tanh | Sigmoid | Reciprocal | RecipNonzero | Cbrt | Tan | Rcbrt | Erfinv
            | Relu => Saves::Outputs,
            Gamma => Saves::InputsAndOutputs,
            _ => Saves::Inputs,
        }
    }

    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        use UnaryKind::*;
        let (x, y, gy) = (inputs[0], outputs[0], out_grads[0]);
        if self.kind.is_piecewise_constant() {
            return Ok(vec![None]);
        }
        // d = dy/dx as a value, then gx = gy * d.
        let d = match self.kind {
            Negative => return Ok(vec![Some(g.neg(gy)?)]),
            Abs => g.unary(Sign, x)?,
            Square => g.mul_scalar(x, 2.0)?,
            Sqrt => {
                let t = g.mul_scalar(y, 2.0)?;
                return Ok(vec![Some(g.div(gy, t)?)]);
            }
            Rsqrt => {
                // d/dx x^-1/2 = -y^3 / 2, from the output alone.
                let t = g.mul(y, y)?;
                let t = g.mul(t, y)?;
                g.mul_scalar(t, -0.5)?
            }
            Cbrt => {
                let t = g.mul(y, y)?;
                let t = g.mul_scalar(t, 3.0)?;
                return Ok(vec![Some(g.div(gy, t)?)]);
            }
            Reciprocal | RecipNonzero => {
                let t = g.mul(y, y)?;
                g.neg(t)?
            }
            Exp => y,
            Expm1 => g.add_scalar(y, 1.0)?,
            Log => return Ok(vec![Some(g.div(gy, x)?)]),
            Log2 | Log10 => {
                let c = if self.kind == Log2 { std::f64::consts::LN_2 } else { std::f64::consts::LN_10 };
                let t = g.mul_scalar(x, c)?;
                return Ok(vec![Some(g.div(gy, t)?)]);
            }
            Log1p => {
                let t = g.add_scalar(x, 1.0)?;
                return Ok(vec![Some(g.div(gy, t)?)]);
            }
            Sin => g.unary(Cos, x)?,
            Cos => {
                let s = g.unary(Sin, x)?;
                g.neg(s)?
            }
            Tan => {
                let t = g.mul(y, y)?;
                g.add_scalar(t, 1.0)?
            }
            Sinh => g.unary(Cosh, x)?,
            Cosh => g.unary(Sinh, x)?,
            Tanh => {
                let t = g.mul(y, y)?;
                g.rsub_scalar(1.0, t)?
            }
            Arcsin | Arccos => {
                let t = g.mul(x, x)?;
                let t = g.rsub_scalar(1.0, t)?;
                let t = g.unary(Rsqrt, t)?;
                if self.kind == Arccos {
                    g.neg(t)?
                } else {
                    t
                }
            }
            Arctan | Arctanh => {
                let t = g.mul(x, x)?;
                let t = if self.kind == Arctan { g.add_scalar(t, 1.0)? } else { g.rsub_scalar(1.0, t)? };
                return Ok(vec![Some(g.div(gy, t)?)]);
            }
            Arcsinh | Arccosh => {
                let t = g.mul(x, x)?;
                let t = g.add_scalar(t, if self.kind == Arcsinh { 1.0 } else { -1.0 })?;
                g.unary(Rsqrt, t)?
            }
            Sigmoid => {
                let t = g.rsub_scalar(1.0, y)?;
                g.mul(y, t)?
            }
            // One fused pass: gy·sign(relu(x)), 1 where x > 0, 0 elsewhere and NaN at NaN
            // (MXNet's gradient); recorded with y as an input, so second-order gradients are zeros.
            Relu => return Ok(vec![Some(g.apply1(crate::ops::nn::act_grad::MaskedGrad::relu(), &[gy, y])?)]),
            Softsign => {
                let t = g.unary(Abs, x)?;
                let t = g.add_scalar(t, 1.0)?;
                let t = g.mul(t, t)?;
                return Ok(vec![Some(g.div(gy, t)?)]);
            }
            Degrees => g.ones_like(x).and_then(|o| g.mul_scalar(o, 180.0 / std::f64::consts::PI))?,
            Radians => g.ones_like(x).and_then(|o| g.mul_scalar(o, std::f64::consts::PI / 180.0))?,
            Rcbrt => {
                // d/dx x^(-1/3) = -y⁴/3, from the output alone.
                let t = g.mul(y, y)?;
                let t = g.mul(t, t)?;
                g.mul_scalar(t, -1.0 / 3.0)?
            }
            Erf => {
                let t = g.mul(x, x)?;
                let t = g.neg(t)?;
                let t = g.unary(Exp, t)?;
                g.mul_scalar(t, std::f64::consts::FRAC_2_SQRT_PI)?
            }
            Erfinv => {
                let t = g.mul(y, y)?;
                let t = g.unary(Exp, t)?;
                g.mul_scalar(t, std::f64::consts::PI.sqrt() / 2.0)?
            }
            Gamma => {
                let psi = g.apply1(PolyGamma { n: 0 }, &[x])?;
                g.mul(y, psi)?
            }
            Gammaln => g.apply1(PolyGamma { n: 0 }, &[x])?,
            Sign | Floor | Ceil | Round | Rint | Fix | Trunc | LogicalNot => unreachable!(), // ok: returned above
        };
        Ok(vec![Some(g.mul(gy, d)?)])
    }
}

fn build_unary(a: &Attrs) -> Result<OpRef> {
    NoParams::parse(a)?;
    let kind = UnaryKind::from_name(&a.op).ok_or_else(|| Error::Value(format!("unknown unary op {}", a.op)))?;
    Ok(Arc::new(Unary { kind }))
}

/// A parameterless elementwise op.
const fn def(name: &'static str, doc: &'static str) -> OpDef {
    OpDef { name, aliases: &[], args: &["data"], doc, params: NoParams::schema, build: build_unary }
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
            outputs[0].write_out::<T, _>(|o| unary(s, x.layout(), o, Cost::Heavy, move |v: T| T::from_f64(special::polygamma(n, v.to_f64()))))
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

/// `smooth_l1`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct SmoothL1Params {
    /// σ: the quadratic part covers |x| < 1/σ² (a positive number).
    #[param(default = 1.0)]
    pub scalar: f64,
}

pub fn smooth_l1_op(a: &Attrs) -> Result<OpRef> {
    let sigma = SmoothL1Params::parse(a)?.scalar;
    if !(sigma > 0.0 && sigma.is_finite()) {
        return Err(Error::Value(format!("smooth_l1: scalar (sigma) must be a positive number, got {sigma}")));
    }
    Ok(Arc::new(SmoothL1 { sigma }))
}

/// The elementwise unary ops' declarations.
pub const DEFS: &[OpDef] = &[
    def("negative", "Numerical negative, elementwise."),
    def("abs", "Absolute value, elementwise."),
    def("sign", "Sign (-1, 0, 1), elementwise; gradient 0."),
    def("square", "x², elementwise."),
    def("sqrt", "Square root, elementwise."),
    def("rsqrt", "1/√x, elementwise."),
    def("cbrt", "Cube root, elementwise."),
    def("reciprocal", "1/x, elementwise."),
    def("exp", "e^x, elementwise."),
    def("expm1", "e^x - 1, elementwise (accurate near 0)."),
    def("log", "Natural logarithm, elementwise."),
    def("log2", "Base-2 logarithm, elementwise."),
    def("log10", "Base-10 logarithm, elementwise."),
    def("log1p", "log(1 + x), elementwise (accurate near 0)."),
    def("sin", "Sine, elementwise."),
    def("cos", "Cosine, elementwise."),
    def("tan", "Tangent, elementwise."),
    def("arcsin", "Inverse sine, elementwise."),
    def("arccos", "Inverse cosine, elementwise."),
    def("arctan", "Inverse tangent, elementwise."),
    def("sinh", "Hyperbolic sine, elementwise."),
    def("cosh", "Hyperbolic cosine, elementwise."),
    def("tanh", "Hyperbolic tangent, elementwise."),
    def("arcsinh", "Inverse hyperbolic sine, elementwise."),
    def("arccosh", "Inverse hyperbolic cosine, elementwise."),
    def("arctanh", "Inverse hyperbolic tangent, elementwise."),
    def("sigmoid", "Logistic sigmoid 1/(1+e^-x), elementwise."),
    def("relu", "max(x, 0), elementwise; gradient 0 at 0."),
    def("softsign", "x/(1+|x|), elementwise."),
    def("floor", "Floor, elementwise; gradient 0."),
    def("ceil", "Ceiling, elementwise; gradient 0."),
    def("round", "Round half away from zero, elementwise; gradient 0."),
    def("rint", "Round to the nearest integer, halves down (1.5 -> 1, -0.5 -> -1, as MXNet), elementwise; gradient 0."),
    def("fix", "Round toward zero, elementwise; gradient 0."),
    def("trunc", "Truncate toward zero, elementwise; gradient 0."),
    def("degrees", "Radians to degrees, elementwise."),
    def("radians", "Degrees to radians, elementwise."),
    def("logical_not", "1 where x == 0 else 0, elementwise."),
    def("_reciprocal_nonzero", "1/x where x != 0, else 0 (gradient helper)."),
    def("rcbrt", "1/cbrt(x), elementwise."),
    def("erf", "Gauss error function, elementwise."),
    def("erfinv", "Inverse error function on [-1, 1], elementwise (±inf at ±1)."),
    def("gamma", "Gamma function, elementwise (NaN at poles 0, -1, ...)."),
    def("gammaln", "ln|Γ(x)|, elementwise (+inf at poles)."),
    OpDef {
        name: "smooth_l1",
        aliases: &[],
        args: &["data"],
        doc: "0.5(σx)² where |x| < 1/σ², else |x| - 0.5/σ² (scalar = σ).",
        params: SmoothL1Params::schema,
        build: smooth_l1_op,
    },
];
