//! Arithmetic operators on both array types ([`NDArray`] untracked, [`Tracked`] recorded). Each has `Output = Result<NDArray>` (see the [`crate::api`]
//! docs): a shape mismatch is an error naming the op and the shapes, never a panic.

use std::ops::{Add, Div, Mul, Neg, Sub};

use super::{call1, Operand, Tracked};
use crate::error::Result;
use crate::ndarray::NDArray;
use crate::ops::AttrValue;

fn with_scalar<T: Operand>(op: &str, x: &T, s: f64) -> Result<T> {
    call1(op, std::slice::from_ref(x), &[("scalar", AttrValue::Float(s))])
}

/// One operator for every owned/borrowed pairing of arrays, array with `f64`, and `f64` with
/// array (`$rscalar`: the op computing `scalar <op> x`).
macro_rules! binary_operator {
    ($T:ty, $Trait:ident, $method:ident, $op:literal, $scalar:literal, $rscalar:literal) => {
        impl $Trait<&$T> for &$T {
            type Output = Result<$T>;
            fn $method(self, rhs: &$T) -> Result<$T> {
                call1($op, &[self.clone(), rhs.clone()], &[])
            }
        }
        impl $Trait<$T> for &$T {
            type Output = Result<$T>;
            fn $method(self, rhs: $T) -> Result<$T> {
                self.$method(&rhs)
            }
        }
        impl $Trait<&$T> for $T {
            type Output = Result<$T>;
            fn $method(self, rhs: &$T) -> Result<$T> {
                (&self).$method(rhs)
            }
        }
        impl $Trait<$T> for $T {
            type Output = Result<$T>;
            fn $method(self, rhs: $T) -> Result<$T> {
                (&self).$method(&rhs)
            }
        }
        impl $Trait<f64> for &$T {
            type Output = Result<$T>;
            fn $method(self, rhs: f64) -> Result<$T> {
                with_scalar($scalar, self, rhs)
            }
        }
        impl $Trait<f64> for $T {
            type Output = Result<$T>;
            fn $method(self, rhs: f64) -> Result<$T> {
                with_scalar($scalar, &self, rhs)
            }
        }
        impl $Trait<&$T> for f64 {
            type Output = Result<$T>;
            fn $method(self, rhs: &$T) -> Result<$T> {
                with_scalar($rscalar, rhs, self)
            }
        }
        impl $Trait<$T> for f64 {
            type Output = Result<$T>;
            fn $method(self, rhs: $T) -> Result<$T> {
                with_scalar($rscalar, &rhs, self)
            }
        }
    };
}

/// The four arithmetic operators and negation for one array type.
macro_rules! arithmetic {
    ($T:ty) => {
        binary_operator!($T, Add, add, "broadcast_add", "_plus_scalar", "_plus_scalar");
        binary_operator!($T, Sub, sub, "broadcast_sub", "_minus_scalar", "_rminus_scalar");
        binary_operator!($T, Mul, mul, "broadcast_mul", "_mul_scalar", "_mul_scalar");
        binary_operator!($T, Div, div, "broadcast_div", "_div_scalar", "_rdiv_scalar");

        impl Neg for &$T {
            type Output = Result<$T>;
            fn neg(self) -> Result<$T> {
                call1("negative", std::slice::from_ref(self), &[])
            }
        }

        impl Neg for $T {
            type Output = Result<$T>;
            fn neg(self) -> Result<$T> {
                -&self
            }
        }
    };
}

arithmetic!(NDArray);
arithmetic!(Tracked);
