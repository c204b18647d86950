//! Arithmetic operators on arrays. Each has `Output = Result<NDArray>` (see the [`crate::api`]
//! docs): a shape mismatch is an error naming the op and the shapes, never a panic.

use std::ops::{Add, Div, Mul, Neg, Sub};

use super::call1;
use crate::error::Result;
use crate::ndarray::NDArray;
use crate::ops::AttrValue;

fn with_scalar(op: &str, x: &NDArray, s: f64) -> Result<NDArray> {
    call1(op, std::slice::from_ref(x), &[("scalar", AttrValue::Float(s))])
}

/// One operator for every owned/borrowed pairing of arrays, array with `f64`, and `f64` with
/// array (`$rscalar`: the op computing `scalar <op> x`).
macro_rules! binary_operator {
    ($Trait:ident, $method:ident, $op:literal, $scalar:literal, $rscalar:literal) => {
        impl $Trait<&NDArray> for &NDArray {
            type Output = Result<NDArray>;
            fn $method(self, rhs: &NDArray) -> Result<NDArray> {
                call1($op, &[self.clone(), rhs.clone()], &[])
            }
        }
        impl $Trait<NDArray> for &NDArray {
            type Output = Result<NDArray>;
            fn $method(self, rhs: NDArray) -> Result<NDArray> {
                self.$method(&rhs)
            }
        }
        impl $Trait<&NDArray> for NDArray {
            type Output = Result<NDArray>;
            fn $method(self, rhs: &NDArray) -> Result<NDArray> {
                (&self).$method(rhs)
            }
        }
        impl $Trait<NDArray> for NDArray {
            type Output = Result<NDArray>;
            fn $method(self, rhs: NDArray) -> Result<NDArray> {
                (&self).$method(&rhs)
            }
        }
        impl $Trait<f64> for &NDArray {
            type Output = Result<NDArray>;
            fn $method(self, rhs: f64) -> Result<NDArray> {
                with_scalar($scalar, self, rhs)
            }
        }
        impl $Trait<f64> for NDArray {
            type Output = Result<NDArray>;
            fn $method(self, rhs: f64) -> Result<NDArray> {
                with_scalar($scalar, &self, rhs)
            }
        }
        impl $Trait<&NDArray> for f64 {
            type Output = Result<NDArray>;
            fn $method(self, rhs: &NDArray) -> Result<NDArray> {
                with_scalar($rscalar, rhs, self)
            }
        }
        impl $Trait<NDArray> for f64 {
            type Output = Result<NDArray>;
            fn $method(self, rhs: NDArray) -> Result<NDArray> {
                with_scalar($rscalar, &rhs, self)
            }
        }
    };
}

binary_operator!(Add, add, "broadcast_add", "_plus_scalar", "_plus_scalar");
binary_operator!(Sub, sub, "broadcast_sub", "_minus_scalar", "_rminus_scalar");
binary_operator!(Mul, mul, "broadcast_mul", "_mul_scalar", "_mul_scalar");
binary_operator!(Div, div, "broadcast_div", "_div_scalar", "_rdiv_scalar");

impl Neg for &NDArray {
    type Output = Result<NDArray>;
    fn neg(self) -> Result<NDArray> {
        call1("negative", std::slice::from_ref(self), &[])
    }
}

impl Neg for NDArray {
    type Output = Result<NDArray>;
    fn neg(self) -> Result<NDArray> {
        -&self
    }
}
