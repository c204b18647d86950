//! Binary arithmetic, comparison and logical ops, array⊗array (broadcasting or equal-shape) and
//! array⊗scalar.
//!
//! Operands are promoted to a common dtype ([`DType::promote`]); comparisons return 0/1 in that
//! dtype (MXNet's legacy rule). Scalar ops keep the array's dtype. Integer division truncates and
//! integer division or modulo by zero gives 0 (never a panic).

use std::sync::Arc;

use ferrograd_kernels::par::Cost;
use ferrograd_kernels::unary_binary::{binary, unary};
use ferrograd_kernels::{Element, Layout};
use half::f16;

use super::params::{NoParams, OpDef, OpParams};
use super::unary::UnaryKind;
use super::{AttrValue, Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::view::broadcast_pair;
use crate::ndarray::{Meta, NDArray};
use crate::with_dtype;

macro_rules! binary_kinds {
    ($($v:ident => $bname:literal, $ename:literal, $sname:literal, $rname:literal);* $(;)?) => {
        /// Which binary function.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum BinaryKind { $($v),* }
        impl BinaryKind {
            pub const ALL: &'static [BinaryKind] = &[$(BinaryKind::$v),*];
            /// (broadcasting name, equal-shape name, scalar name, reversed-scalar name).
            pub fn names(self) -> (&'static str, &'static str, &'static str, &'static str) {
                match self { $(BinaryKind::$v => ($bname, $ename, $sname, $rname)),* }
            }
        }
    };
}

binary_kinds! {
    Add => "broadcast_add", "elemwise_add", "_plus_scalar", "_plus_scalar";
    Sub => "broadcast_sub", "elemwise_sub", "_minus_scalar", "_rminus_scalar";
    Mul => "broadcast_mul", "elemwise_mul", "_mul_scalar", "_mul_scalar";
    Div => "broadcast_div", "elemwise_div", "_div_scalar", "_rdiv_scalar";
    Mod => "broadcast_mod", "_mod", "_mod_scalar", "_rmod_scalar";
    Pow => "broadcast_power", "_power", "_power_scalar", "_rpower_scalar";
    FloorDiv => "broadcast_floor_divide", "_floor_divide", "_floor_divide_scalar", "_rfloor_divide_scalar";
    Maximum => "broadcast_maximum", "_maximum", "_maximum_scalar", "_maximum_scalar";
    Minimum => "broadcast_minimum", "_minimum", "_minimum_scalar", "_minimum_scalar";
    Hypot => "broadcast_hypot", "_hypot", "_hypot_scalar", "_hypot_scalar";
    Eq => "broadcast_equal", "_equal", "_equal_scalar", "_equal_scalar";
    Ne => "broadcast_not_equal", "_not_equal", "_not_equal_scalar", "_not_equal_scalar";
    Gt => "broadcast_greater", "_greater", "_greater_scalar", "_lesser_scalar";
    Ge => "broadcast_greater_equal", "_greater_equal", "_greater_equal_scalar", "_lesser_equal_scalar";
    Lt => "broadcast_lesser", "_lesser", "_lesser_scalar", "_greater_scalar";
    Le => "broadcast_lesser_equal", "_lesser_equal", "_lesser_equal_scalar", "_greater_equal_scalar";
    And => "broadcast_logical_and", "_logical_and", "_logical_and_scalar", "_logical_and_scalar";
    Or => "broadcast_logical_or", "_logical_or", "_logical_or_scalar", "_logical_or_scalar";
    Xor => "broadcast_logical_xor", "_logical_xor", "_logical_xor_scalar", "_logical_xor_scalar";
}

impl BinaryKind {
    /// Comparisons and logical ops: 0/1 valued, no gradient.
    pub fn is_predicate(self) -> bool {
        use BinaryKind::*;
        matches!(self, Eq | Ne | Gt | Ge | Lt | Le | And | Or | Xor)
    }

    /// The function on f64 (reference semantics for every dtype).
    pub fn eval_f64(self, a: f64, b: f64) -> f64 {
        use BinaryKind::*;
        let t = |c: bool| f64::from(u8::from(c));
        match self {
            Add => a + b,
            Sub => a - b,
            Mul => a * b,
            Div => a / b,
            Mod => py_mod(a, b),
            Pow => a.powf(b),
            FloorDiv => (a / b).floor(),
            Maximum => fmax(a, b),
            Minimum => fmin(a, b),
            Hypot => a.hypot(b),
            Eq => t(a == b),
            Ne => t(a != b),
            Gt => t(a > b),
            Ge => t(a >= b),
            Lt => t(a < b),
            Le => t(a <= b),
            And => t(a != 0.0 && b != 0.0),
            Or => t(a != 0.0 || b != 0.0),
            Xor => t((a != 0.0) != (b != 0.0)),
        }
    }
}

#[inline(always)]
fn fmax(a: f64, b: f64) -> f64 {
    if a > b || a.is_nan() {
        a
    } else {
        b
    }
}
#[inline(always)]
fn fmin(a: f64, b: f64) -> f64 {
    if a < b || a.is_nan() {
        a
    } else {
        b
    }
}
/// Python/MXNet modulo: the result takes the divisor's sign; modulo by zero is 0 (MXNet).
#[inline(always)]
fn py_mod(a: f64, b: f64) -> f64 {
    if b == 0.0 {
        return 0.0;
    }
    let r = a % b;
    if r != 0.0 && ((r < 0.0) != (b < 0.0)) {
        r + b
    } else {
        r
    }
}

/// Element arithmetic with each dtype's own semantics (wrapping, zero-safe integer division).
pub trait Num: Element {
    fn add(a: Self, b: Self) -> Self;
    fn sub(a: Self, b: Self) -> Self;
    fn mul(a: Self, b: Self) -> Self;
    fn div(a: Self, b: Self) -> Self;
    fn max(a: Self, b: Self) -> Self;
    fn min(a: Self, b: Self) -> Self;
    fn truth(c: bool) -> Self {
        Self::from_f64(f64::from(u8::from(c)))
    }
}

macro_rules! num_float {
    ($t:ty) => {
        impl Num for $t {
            #[inline(always)]
            fn add(a: $t, b: $t) -> $t {
                a + b
            }
            #[inline(always)]
            fn sub(a: $t, b: $t) -> $t {
                a - b
            }
            #[inline(always)]
            fn mul(a: $t, b: $t) -> $t {
                a * b
            }
            #[inline(always)]
            fn div(a: $t, b: $t) -> $t {
                a / b
            }
            #[inline(always)]
            fn max(a: $t, b: $t) -> $t {
                if a > b || a != a {
                    a
                } else {
                    b
                }
            }
            #[inline(always)]
            fn min(a: $t, b: $t) -> $t {
                if a < b || a != a {
                    a
                } else {
                    b
                }
            }
        }
    };
}
num_float!(f32);
num_float!(f64);

macro_rules! num_int {
    ($($t:ty),*) => {$(
        impl Num for $t {
            #[inline(always)]
            fn add(a: $t, b: $t) -> $t { a.wrapping_add(b) }
            #[inline(always)]
            fn sub(a: $t, b: $t) -> $t { a.wrapping_sub(b) }
            #[inline(always)]
            fn mul(a: $t, b: $t) -> $t { a.wrapping_mul(b) }
            #[inline(always)]
            fn div(a: $t, b: $t) -> $t { if b == 0 { 0 } else { a.wrapping_div(b) } }
            #[inline(always)]
            fn max(a: $t, b: $t) -> $t { Ord::max(a, b) }
            #[inline(always)]
            fn min(a: $t, b: $t) -> $t { Ord::min(a, b) }
        }
    )*};
}
num_int!(i32, i64, u8, i8);

macro_rules! num_via_f64 {
    ($t:ty) => {
        impl Num for $t {
            fn add(a: $t, b: $t) -> $t {
                <$t>::from_f64(a.to_f64() + b.to_f64())
            }
            fn sub(a: $t, b: $t) -> $t {
                <$t>::from_f64(a.to_f64() - b.to_f64())
            }
            fn mul(a: $t, b: $t) -> $t {
                <$t>::from_f64(a.to_f64() * b.to_f64())
            }
            fn div(a: $t, b: $t) -> $t {
                <$t>::from_f64(a.to_f64() / b.to_f64())
            }
            fn max(a: $t, b: $t) -> $t {
                <$t>::from_f64(fmax(a.to_f64(), b.to_f64()))
            }
            fn min(a: $t, b: $t) -> $t {
                <$t>::from_f64(fmin(a.to_f64(), b.to_f64()))
            }
        }
    };
}
num_via_f64!(f16);
num_via_f64!(bool);

/// Runs `kind` over two broadcast views into `out`.
fn kernel<T: Num>(kind: BinaryKind, a: &[T], la: &Layout, b: &[T], lb: &Layout, out: &mut [T]) {
    use BinaryKind::*;
    let lt = Cost::Light;
    match kind {
        Add => binary(a, la, b, lb, out, lt, T::add),
        Sub => binary(a, la, b, lb, out, lt, T::sub),
        Mul => binary(a, la, b, lb, out, lt, T::mul),
        Div => binary(a, la, b, lb, out, lt, T::div),
        Maximum => binary(a, la, b, lb, out, lt, T::max),
        Minimum => binary(a, la, b, lb, out, lt, T::min),
        Eq => binary(a, la, b, lb, out, lt, |x: T, y: T| T::truth(x == y)),
        Ne => binary(a, la, b, lb, out, lt, |x: T, y: T| T::truth(x != y)),
        Gt => binary(a, la, b, lb, out, lt, |x: T, y: T| T::truth(x > y)),
        Ge => binary(a, la, b, lb, out, lt, |x: T, y: T| T::truth(x >= y)),
        Lt => binary(a, la, b, lb, out, lt, |x: T, y: T| T::truth(x < y)),
        Le => binary(a, la, b, lb, out, lt, |x: T, y: T| T::truth(x <= y)),
        FloorDiv if !T::IS_FLOAT => binary(a, la, b, lb, out, lt, |x: T, y: T| {
            let (x, y) = (x.to_f64(), y.to_f64());
            T::from_f64(if y == 0.0 { 0.0 } else { (x / y).floor() })
        }),
        k => binary(a, la, b, lb, out, Cost::Heavy, move |x: T, y: T| T::from_f64(k.eval_f64(x.to_f64(), y.to_f64()))),
    }
}

fn cast_to(x: &NDArray, dt: DType) -> NDArray {
    if x.dtype() == dt {
        x.clone()
    } else {
        x.astype(dt)
    }
}

/// `lhs op rhs` for two arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Binary {
    pub kind: BinaryKind,
    /// NumPy broadcasting (`broadcast_*`, NDArray operators) or equal shapes (`elemwise_*`).
    pub broadcast: bool,
}

impl Op for Binary {
    fn name(&self) -> &'static str {
        let (b, e, _, _) = self.kind.names();
        if self.broadcast {
            b
        } else {
            e
        }
    }

    fn arg_names(&self) -> &'static [&'static str] {
        &["lhs", "rhs"]
    }

    fn infer_missing(&self, inputs: &[Option<Meta>]) -> Vec<Option<Meta>> {
        // Equal-shape ops: a missing operand has the other's shape.
        match (self.broadcast, inputs) {
            (false, [Some(a), None]) => vec![None, Some(a.clone())],
            (false, [None, Some(b)]) => vec![Some(b.clone()), None],
            _ => Vec::new(),
        }
    }

    fn infer_partial(
        &self,
        ins: &mut [super::partial::PartialShape],
        outs: &mut [super::partial::PartialShape],
    ) -> Result<()> {
        if self.broadcast {
            super::partial::broadcast_binary(ins, outs)
        } else {
            super::partial::same_shape(ins, outs)
        }
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let (a, b) = (&inputs[0], &inputs[1]);
        let shape = if self.broadcast {
            broadcast_pair(self.name(), &a.shape, &b.shape)?
        } else if a.shape == b.shape {
            a.shape.clone()
        } else {
            return Err(Error::Shape(format!(
                "{}: operands must have the same shape (use broadcast_* to broadcast), got lhs {} and rhs {}",
                self.name(),
                fmt_shape(&a.shape),
                fmt_shape(&b.shape)
            )));
        };
        Ok(vec![Meta { shape, dtype: DType::promote(a.dtype, b.dtype) }])
    }

    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let dt = outputs[0].dtype();
        let (a, b) = (cast_to(&inputs[0], dt), cast_to(&inputs[1], dt));
        let shape = outputs[0].shape().to_vec();
        let bcast =
            |x: &NDArray| x.layout().broadcast_to(&shape).ok_or_else(|| Error::Runtime("internal: broadcast".into()));
        let (la, lb) = (bcast(&a)?, bcast(&b)?);
        let (sa, sb) = (a.snapshot(), b.snapshot());
        with_dtype!(dt, T => {
            let (xa, xb) = (sa.typed::<T>()?, sb.typed::<T>()?);
            outputs[0].write_out::<T, _>(|o| kernel(self.kind, xa, &la, xb, &lb, o))
        })
    }

    fn differentiable(&self) -> bool {
        !self.kind.is_predicate() && self.kind != BinaryKind::FloorDiv
    }

    fn zero_gradient(&self) -> bool {
        self.kind.is_predicate()
    }

    fn saves(&self) -> Saves {
        match self.kind {
            BinaryKind::Add | BinaryKind::Sub => Saves::None,
            BinaryKind::Mul | BinaryKind::Mod | BinaryKind::Maximum | BinaryKind::Minimum => Saves::Inputs,
            _ => Saves::InputsAndOutputs,
        }
    }

    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        use BinaryKind::*;
        let (a, b, y, gy) = (inputs[0], inputs[1], outputs[0], out_grads[0]);
        let (ga, gb) = match self.kind {
            Add => (gy, gy),
            Sub => (gy, g.neg(gy)?),
            Mul => (g.mul(gy, b)?, g.mul(gy, a)?),
            Div => {
                let t = g.div(gy, b)?;
                let u = g.mul(t, y)?;
                (t, g.neg(u)?)
            }
            Mod => {
                let q = g.div(a, b)?;
                let q = g.unary(UnaryKind::Floor, q)?;
                let u = g.mul(gy, q)?;
                (gy, g.neg(u)?)
            }
            Pow => {
                // d/da a^b = b·a^(b-1); d/db a^b = a^b·ln a.
                let bm1 = g.add_scalar(b, -1.0)?;
                let p = g.binary(Pow, a, bm1)?;
                let t = g.mul(b, p)?;
                let ln = g.unary(UnaryKind::Log, a)?;
                let u = g.mul(y, ln)?;
                (g.mul(gy, t)?, g.mul(gy, u)?)
            }
            Maximum | Minimum => {
                let (ka, kb) = if self.kind == Maximum { (Ge, Lt) } else { (Le, Gt) };
                let ma = g.binary(ka, a, b)?;
                let mb = g.binary(kb, a, b)?;
                (g.mul(gy, ma)?, g.mul(gy, mb)?)
            }
            Hypot => {
                let t = g.div(gy, y)?;
                (g.mul(t, a)?, g.mul(t, b)?)
            }
            _ => return Ok(vec![None, None]),
        };
        Ok(vec![Some(ga), Some(gb)])
    }
}

/// `x op scalar` (or `scalar op x` when `reverse`); the output keeps x's dtype.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scalar {
    pub kind: BinaryKind,
    pub scalar: f64,
    pub reverse: bool,
}

impl Op for Scalar {
    fn name(&self) -> &'static str {
        let (_, _, s, r) = self.kind.names();
        if self.reverse {
            r
        } else {
            s
        }
    }

    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("scalar", AttrValue::Float(self.scalar).to_mx_string())]
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
        let x = &inputs[0];
        let src = x.snapshot();
        let (kind, s, rev) = (self.kind, self.scalar, self.reverse);
        with_dtype!(x.dtype(), T => {
            let xs = src.typed::<T>()?;
            outputs[0].write_out::<T, _>(|o| scalar_kernel::<T>(kind, xs, x.layout(), s, rev, o))
        })
    }

    fn differentiable(&self) -> bool {
        !self.kind.is_predicate() && self.kind != BinaryKind::FloorDiv
    }

    fn zero_gradient(&self) -> bool {
        self.kind.is_predicate()
    }

    fn saves(&self) -> Saves {
        match self.kind {
            BinaryKind::Add | BinaryKind::Sub | BinaryKind::Mul => Saves::None,
            _ => Saves::InputsAndOutputs,
        }
    }

    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        use BinaryKind::*;
        let (x, y, gy, s) = (inputs[0], outputs[0], out_grads[0], self.scalar);
        let gx = match (self.kind, self.reverse) {
            (Add, _) | (Sub, false) | (Mod, false) => gy,
            (Sub, true) => g.neg(gy)?,
            (Mul, _) => g.mul_scalar(gy, s)?,
            (Div, false) => g.mul_scalar(gy, 1.0 / s)?,
            (Div, true) => {
                // d/dx s/x = -y/x
                let t = g.div(y, x)?;
                let t = g.mul(gy, t)?;
                g.neg(t)?
            }
            (Mod, true) => {
                let q = g.scalar(Div, x, s, true)?;
                let q = g.unary(UnaryKind::Floor, q)?;
                let u = g.mul(gy, q)?;
                g.neg(u)?
            }
            (Pow, false) => {
                let p = g.scalar(Pow, x, s - 1.0, false)?;
                let t = g.mul_scalar(p, s)?;
                g.mul(gy, t)?
            }
            (Pow, true) => {
                let t = g.mul_scalar(y, s.ln())?;
                g.mul(gy, t)?
            }
            (Maximum | Minimum, _) => {
                let k = if self.kind == Maximum { Ge } else { Le };
                let m = g.scalar(k, x, s, false)?;
                g.mul(gy, m)?
            }
            (Hypot, _) => {
                let t = g.div(x, y)?;
                g.mul(gy, t)?
            }
            _ => return Ok(vec![None]),
        };
        Ok(vec![Some(gx)])
    }
}

fn scalar_kernel<T: Num>(kind: BinaryKind, x: &[T], l: &Layout, s: f64, reverse: bool, out: &mut [T]) {
    use BinaryKind::*;
    // The scalar is first converted to the array's dtype (MXNet's `DType(scalar)`), for every
    // kind alike: `float32 == 0.1` compares at float32, `int32 + 2.5` adds 2.
    let c = T::from_f64(s);
    let cf = c.to_f64();
    let lt = Cost::Light;
    match (kind, reverse) {
        (Add, _) => unary(x, l, out, lt, move |v: T| T::add(v, c)),
        (Sub, false) => unary(x, l, out, lt, move |v: T| T::sub(v, c)),
        (Sub, true) => unary(x, l, out, lt, move |v: T| T::sub(c, v)),
        (Mul, _) => unary(x, l, out, lt, move |v: T| T::mul(v, c)),
        (Div, false) if T::IS_FLOAT => unary(x, l, out, lt, move |v: T| T::div(v, c)),
        (Div, true) => unary(x, l, out, lt, move |v: T| T::div(c, v)),
        (Maximum, _) => unary(x, l, out, lt, move |v: T| T::max(v, c)),
        (Minimum, _) => unary(x, l, out, lt, move |v: T| T::min(v, c)),
        (Gt, false) => unary(x, l, out, lt, move |v: T| T::truth(v > c)),
        (Lt, false) => unary(x, l, out, lt, move |v: T| T::truth(v < c)),
        (k, false) => unary(x, l, out, Cost::Heavy, move |v: T| T::from_f64(int_safe(k, v.to_f64(), cf, T::IS_FLOAT))),
        (k, true) => unary(x, l, out, Cost::Heavy, move |v: T| T::from_f64(int_safe(k, cf, v.to_f64(), T::IS_FLOAT))),
    }
}

/// f64 evaluation with integer semantics for integer dtypes (truncating, zero-safe division).
#[inline(always)]
fn int_safe(kind: BinaryKind, a: f64, b: f64, is_float: bool) -> f64 {
    match kind {
        BinaryKind::Div | BinaryKind::FloorDiv if !is_float && b == 0.0 => 0.0,
        BinaryKind::Div if !is_float => (a / b).trunc(),
        k => k.eval_f64(a, b),
    }
}

fn build_binary(a: &Attrs) -> Result<OpRef> {
    NoParams::parse(a)?;
    let (kind, broadcast) = BinaryKind::ALL
        .iter()
        .find_map(|&k| {
            let (b, e, _, _) = k.names();
            (a.op == b || a.op == e).then_some((k, a.op == b))
        })
        .ok_or_else(|| Error::Value(format!("unknown binary op {}", a.op)))?;
    Ok(Arc::new(Binary { kind, broadcast }))
}

/// The scalar ops' parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct ScalarParams {
    /// The scalar operand.
    pub scalar: f64,
    /// Whether MXNet treated the scalar as an integer (written by MXNet 1.9; the value is used as
    /// given).
    #[param(default = true)]
    pub is_int: bool,
}

fn build_scalar(a: &Attrs) -> Result<OpRef> {
    let scalar = ScalarParams::parse(a)?.scalar;
    // Reversed-comparison names are plain comparisons with the roles swapped (2 > x is x < 2).
    for &kind in BinaryKind::ALL {
        let (_, _, fwd, rev) = kind.names();
        if a.op == fwd {
            return Ok(Arc::new(Scalar { kind, scalar, reverse: false }));
        }
        if a.op == rev && !kind.is_predicate() {
            return Ok(Arc::new(Scalar { kind, scalar, reverse: true }));
        }
    }
    Err(Error::Value(format!("unknown scalar op {}", a.op)))
}

/// A parameterless binary op.
const fn binary_def(name: &'static str, aliases: &'static [&'static str], doc: &'static str) -> OpDef {
    OpDef { name, aliases, args: &["lhs", "rhs"], doc, params: NoParams::schema, build: build_binary }
}

/// An op of an array and a scalar parameter.
const fn scalar_def(name: &'static str, aliases: &'static [&'static str], doc: &'static str) -> OpDef {
    OpDef { name, aliases, args: &["data"], doc, params: ScalarParams::schema, build: build_scalar }
}

/// The binary and scalar ops' declarations.
pub const DEFS: &[OpDef] = &[
    binary_def("broadcast_add", &["broadcast_plus"], "lhs + rhs with broadcasting."),
    binary_def("broadcast_sub", &["broadcast_minus"], "lhs - rhs with broadcasting."),
    binary_def("broadcast_mul", &[], "lhs * rhs with broadcasting."),
    binary_def("broadcast_div", &[], "lhs / rhs with broadcasting."),
    binary_def("broadcast_mod", &[], "lhs % rhs with broadcasting (sign of rhs)."),
    binary_def("broadcast_power", &["power"], "lhs ** rhs with broadcasting."),
    binary_def("broadcast_floor_divide", &[], "floor(lhs / rhs) with broadcasting."),
    binary_def("broadcast_maximum", &["maximum"], "max(lhs, rhs) with broadcasting."),
    binary_def("broadcast_minimum", &["minimum"], "min(lhs, rhs) with broadcasting."),
    binary_def("broadcast_hypot", &["hypot"], "sqrt(lhs² + rhs²) with broadcasting."),
    binary_def("broadcast_equal", &[], "lhs == rhs (0/1) with broadcasting."),
    binary_def("broadcast_not_equal", &[], "lhs != rhs (0/1) with broadcasting."),
    binary_def("broadcast_greater", &[], "lhs > rhs (0/1) with broadcasting."),
    binary_def("broadcast_greater_equal", &[], "lhs >= rhs (0/1) with broadcasting."),
    binary_def("broadcast_lesser", &[], "lhs < rhs (0/1) with broadcasting."),
    binary_def("broadcast_lesser_equal", &[], "lhs <= rhs (0/1) with broadcasting."),
    binary_def("broadcast_logical_and", &[], "lhs and rhs (0/1) with broadcasting."),
    binary_def("broadcast_logical_or", &[], "lhs or rhs (0/1) with broadcasting."),
    binary_def("broadcast_logical_xor", &[], "lhs xor rhs (0/1) with broadcasting."),
    binary_def("elemwise_add", &["_add", "_plus", "_Plus"], "lhs + rhs, equal shapes."),
    binary_def("elemwise_sub", &["_sub", "_minus", "_Minus"], "lhs - rhs, equal shapes."),
    binary_def("elemwise_mul", &["_mul", "_Mul"], "lhs * rhs, equal shapes."),
    binary_def("elemwise_div", &["_div", "_Div"], "lhs / rhs, equal shapes."),
    binary_def("_mod", &[], "lhs % rhs, equal shapes."),
    binary_def("_power", &["_Power"], "lhs ** rhs, equal shapes."),
    binary_def("_floor_divide", &[], "floor(lhs / rhs), equal shapes."),
    binary_def("_maximum", &["_Maximum"], "max(lhs, rhs), equal shapes."),
    binary_def("_minimum", &["_Minimum"], "min(lhs, rhs), equal shapes."),
    binary_def("_hypot", &[], "sqrt(lhs² + rhs²), equal shapes."),
    binary_def("_equal", &[], "lhs == rhs (0/1), equal shapes."),
    binary_def("_not_equal", &[], "lhs != rhs (0/1), equal shapes."),
    binary_def("_greater", &[], "lhs > rhs (0/1), equal shapes."),
    binary_def("_greater_equal", &[], "lhs >= rhs (0/1), equal shapes."),
    binary_def("_lesser", &[], "lhs < rhs (0/1), equal shapes."),
    binary_def("_lesser_equal", &[], "lhs <= rhs (0/1), equal shapes."),
    binary_def("_logical_and", &[], "lhs and rhs (0/1), equal shapes."),
    binary_def("_logical_or", &[], "lhs or rhs (0/1), equal shapes."),
    binary_def("_logical_xor", &[], "lhs xor rhs (0/1), equal shapes."),
    scalar_def("_plus_scalar", &["_PlusScalar"], "x + scalar."),
    scalar_def("_minus_scalar", &["_MinusScalar"], "x - scalar."),
    scalar_def("_rminus_scalar", &["_RMinusScalar"], "scalar - x."),
    scalar_def("_mul_scalar", &["_MulScalar"], "x * scalar."),
    scalar_def("_div_scalar", &["_DivScalar"], "x / scalar."),
    scalar_def("_rdiv_scalar", &["_RDivScalar"], "scalar / x."),
    scalar_def("_mod_scalar", &[], "x % scalar."),
    scalar_def("_rmod_scalar", &[], "scalar % x."),
    scalar_def("_power_scalar", &["_PowerScalar"], "x ** scalar."),
    scalar_def("_rpower_scalar", &["_RPowerScalar"], "scalar ** x."),
    scalar_def("_floor_divide_scalar", &[], "floor(x / scalar)."),
    scalar_def("_rfloor_divide_scalar", &[], "floor(scalar / x)."),
    scalar_def("_maximum_scalar", &["_MaximumScalar"], "max(x, scalar)."),
    scalar_def("_minimum_scalar", &["_MinimumScalar"], "min(x, scalar)."),
    scalar_def("_hypot_scalar", &[], "sqrt(x² + scalar²)."),
    scalar_def("_equal_scalar", &[], "x == scalar (0/1)."),
    scalar_def("_not_equal_scalar", &[], "x != scalar (0/1)."),
    scalar_def("_greater_scalar", &[], "x > scalar (0/1)."),
    scalar_def("_greater_equal_scalar", &[], "x >= scalar (0/1)."),
    scalar_def("_lesser_scalar", &[], "x < scalar (0/1)."),
    scalar_def("_lesser_equal_scalar", &[], "x <= scalar (0/1)."),
    scalar_def("_logical_and_scalar", &[], "x and scalar (0/1)."),
    scalar_def("_logical_or_scalar", &[], "x or scalar (0/1)."),
    scalar_def("_logical_xor_scalar", &[], "x xor scalar (0/1)."),
];
