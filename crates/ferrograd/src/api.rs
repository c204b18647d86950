//! The typed Rust front door: methods and operators on arrays, autograd helpers, and
//! symbol/executor conveniences.
//!
//! Every method here is a thin call through the op registry ([`call`]), and exists on both array
//! types:
//!
//! - on an [`NDArray`] (a plain storage handle) it runs the op untracked, honouring
//!   [`autograd::is_training`];
//! - on a [`Tracked`] array it behaves exactly like the same op called from Python: inside
//!   [`autograd::record`] it is recorded on the tape and gets a gradient.
//!
//! # Operators return `Result`
//!
//! `&a + &b`, `&a - &b`, `&a * &b`, `&a / &b`, `-&a` and their forms with an `f64` scalar
//! (`&a * 2.0`, `1.0 - &a`) have `Output = Result<NDArray>`: a shape mismatch is an ordinary
//! error naming the op and both shapes, never a panic. Use `?` on each operation:
//! `(&(&a + &b)? * 2.0)?`. Owned operands work too (`((&a + &b)? * 2.0)?`). Binary array
//! operators broadcast (`broadcast_add`, ...); scalar operators use `_plus_scalar`, `_mul_scalar`,
//! ... with the scalar in the array's dtype.
//!
//! ```
//! use ferrograd::NDArray;
//! let a = NDArray::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
//! let b = NDArray::from_vec(vec![10.0f32, 20.0], &[2])?; // broadcast over rows
//! let c = ((&a + &b)? * 2.0)?;
//! assert_eq!(c.to_f64_vec(), vec![22.0, 44.0, 26.0, 48.0]);
//! assert_eq!((-&a)?.sum()?.item_f64()?, -10.0);
//! let bad = NDArray::from_vec(vec![1.0f32, 2.0, 3.0], &[3])?;
//! assert!((&a + &bad).is_err()); // (2, 2) and (3,) do not broadcast
//! # Ok::<(), ferrograd::Error>(())
//! ```
//!
//! # Reshape and transpose
//!
//! [`NDArray::reshape`] and [`NDArray::transpose`] are the storage-level view primitives the
//! kernels use; they are never recorded. The op forms, recorded on a [`Tracked`] array, are
//! `reshaped` (MXNet's `Reshape`, with its codes `0`, `-1`, ...), `transposed` and
//! `permute_axes` (`transpose`).
//!
//! # Autograd
//!
//! ```
//! use ferrograd::{autograd, NDArray, Tracked};
//! let mut x = Tracked::new(NDArray::from_vec(vec![1.0f64, 2.0], &[2])?);
//! x.attach_grad();
//! // y = sum(x² · 3 + x); dy/dx = 6x + 1 = [7, 13]
//! let y = autograd::record(|| ((&x * &x)? * 3.0)?.add_arr(&x)?.sum())?;
//! assert_eq!(y.item_f64()?, 18.0);
//! y.backward()?;
//! assert_eq!(x.grad().map(|g| g.to_f64_vec()), Some(vec![7.0, 13.0]));
//! # Ok::<(), ferrograd::Error>(())
//! ```

mod arith;
mod symbolic;

pub use crate::autograd::Tracked;
use crate::autograd::{self, BackwardArgs, Entry, GradReq};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::ops::{self, AttrValue, Ctx};

/// An array type the front door's methods and operators work on: how a registered op runs on it.
pub trait Operand: Clone + Sized {
    /// Runs registered op `name` on `inputs` with `(key, value)` parameters and returns its
    /// visible outputs.
    fn call(name: &str, inputs: &[Self], params: &[(&str, AttrValue)]) -> Result<Vec<Self>>;
}

/// Untracked: the op runs on the storage handles, with the thread's training flag.
impl Operand for NDArray {
    fn call(name: &str, inputs: &[Self], params: &[(&str, AttrValue)]) -> Result<Vec<Self>> {
        let op = ops::build(name, params, inputs.len())?;
        let mut outs = ops::run(op.as_ref(), &Ctx { is_train: autograd::is_training() }, inputs)?;
        outs.truncate(op.num_visible_outputs());
        Ok(outs)
    }
}

/// Tracked: recorded on the tape inside [`autograd::record`] ([`autograd::call`]).
impl Operand for Tracked {
    fn call(name: &str, inputs: &[Self], params: &[(&str, AttrValue)]) -> Result<Vec<Self>> {
        autograd::call(name, inputs, params)
    }
}

/// Runs registered op `name` on `inputs` (either array type, see [`Operand`]) and returns its
/// visible outputs.
///
/// ```
/// use ferrograd::NDArray;
/// let x = NDArray::from_vec(vec![1.0f32, 2.0, 3.0], &[3])?;
/// let y = ferrograd::call("exp", std::slice::from_ref(&x), &[])?;
/// assert!((y[0].to_f64_vec()[0] - 1.0f64.exp()).abs() < 1e-6);
/// # Ok::<(), ferrograd::Error>(())
/// ```
pub fn call<T: Operand>(name: &str, inputs: &[T], params: &[(&str, AttrValue)]) -> Result<Vec<T>> {
    T::call(name, inputs, params)
}

/// [`call`], returning the first visible output.
pub fn call1<T: Operand>(name: &str, inputs: &[T], params: &[(&str, AttrValue)]) -> Result<T> {
    T::call(name, inputs, params)?
        .into_iter()
        .next()
        .ok_or_else(|| Error::Runtime(format!("{name}: the op returned no output")))
}

fn axes_value(axes: &[i64]) -> AttrValue {
    AttrValue::Tuple(axes.to_vec())
}

/// Unary elementwise methods, one registered op each.
macro_rules! unary_methods {
    ($T:ty { $($(#[$doc:meta])* $method:ident => $op:literal;)* }) => {
        impl $T {
            $(
                $(#[$doc])*
                pub fn $method(&self) -> Result<$T> {
                    call1($op, std::slice::from_ref(self), &[])
                }
            )*
        }
    };
}

/// The unary methods for both array types.
macro_rules! unary_table {
    ($T:ty) => {
        unary_methods! { $T {
            /// e^x, elementwise (`exp`).
            exp => "exp";
            /// Natural logarithm, elementwise (`log`).
            log => "log";
            /// log(1 + x), elementwise (`log1p`).
            log1p => "log1p";
            /// Hyperbolic tangent, elementwise (`tanh`).
            tanh => "tanh";
            /// 1 / (1 + e^-x), elementwise (`sigmoid`).
            sigmoid => "sigmoid";
            /// max(x, 0), elementwise (`relu`).
            relu => "relu";
            /// Square root, elementwise (`sqrt`).
            sqrt => "sqrt";
            /// x², elementwise (`square`).
            square => "square";
            /// |x|, elementwise (`abs`).
            abs => "abs";
            /// -x, elementwise (`negative`); also `-&x`.
            neg => "negative";
            /// 1 / x, elementwise (`reciprocal`).
            reciprocal => "reciprocal";
            /// Sine, elementwise (`sin`).
            sin => "sin";
            /// Cosine, elementwise (`cos`).
            cos => "cos";
        }}
    };
}

unary_table!(NDArray);
unary_table!(Tracked);

/// Reductions: full (`sum()`), over one axis (`sum_axis(1)`), over axes with `keepdims`
/// (`sum_axes(&[0, 1], true)`).
macro_rules! reduce_methods {
    ($T:ty; $($op:literal: $full:ident, $one:ident, $many:ident;)*) => {
        impl $T {
            $(
                #[doc = concat!("`", $op, "` over all elements: shape `(1,)` (`()` with NumPy shape semantics).")]
                pub fn $full(&self) -> Result<$T> {
                    call1($op, std::slice::from_ref(self), &[])
                }
                #[doc = concat!("`", $op, "` over `axis` (negative counts from the end); the axis is dropped.")]
                pub fn $one(&self, axis: i64) -> Result<$T> {
                    self.$many(&[axis], false)
                }
                #[doc = concat!("`", $op, "` over `axes`; `keepdims` keeps them with size 1.")]
                pub fn $many(&self, axes: &[i64], keepdims: bool) -> Result<$T> {
                    let params = [("axis", axes_value(axes)), ("keepdims", AttrValue::Bool(keepdims))];
                    call1($op, std::slice::from_ref(self), &params)
                }
            )*
        }
    };
}

macro_rules! reduce_table {
    ($T:ty) => {
        reduce_methods! { $T;
            "sum": sum, sum_axis, sum_axes;
            "mean": mean, mean_axis, mean_axes;
            "max": max, max_axis, max_axes;
            "min": min, min_axis, min_axes;
        }
    };
}

reduce_table!(NDArray);
reduce_table!(Tracked);

/// Matrix products, shape changes, softmax and scalar powers.
macro_rules! matrix_methods {
    ($T:ty) => {
        impl $T {
            /// Matrix product `self · rhs` (`dot`): 2-D × 2-D, 1-D vectors, or N-d × N-d contracting the
            /// last axis of `self` with the first of `rhs`.
            ///
            /// ```
            /// use ferrograd::NDArray;
            /// let a = NDArray::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2])?;
            /// let v = NDArray::from_vec(vec![1.0f64, -1.0], &[2])?;
            /// assert_eq!(a.dot(&v)?.to_f64_vec(), vec![-1.0, -1.0]);
            /// # Ok::<(), ferrograd::Error>(())
            /// ```
            pub fn dot(&self, rhs: &$T) -> Result<$T> {
                self.dot_t(rhs, false, false)
            }

            /// `dot` with either operand transposed first (`transpose_a`, `transpose_b`).
            pub fn dot_t(&self, rhs: &$T, transpose_a: bool, transpose_b: bool) -> Result<$T> {
                let params =
                    [("transpose_a", AttrValue::Bool(transpose_a)), ("transpose_b", AttrValue::Bool(transpose_b))];
                call1("dot", &[self.clone(), rhs.clone()], &params)
            }

            /// Reshape as an op (`Reshape`): `shape` may use MXNet's codes (`-1` infers one
            /// dimension, `0` copies the input's). Unlike the view primitive `NDArray::reshape`,
            /// it is recorded on a tracked array.
            pub fn reshaped(&self, shape: &[i64]) -> Result<$T> {
                call1("Reshape", std::slice::from_ref(self), &[("shape", axes_value(shape))])
            }

            /// Transpose with the axes reversed as an op (`transpose`; a matrix's transpose).
            pub fn transposed(&self) -> Result<$T> {
                call1("transpose", std::slice::from_ref(self), &[])
            }

            /// Axis permutation as an op (`transpose` with `axes`).
            pub fn permute_axes(&self, axes: &[i64]) -> Result<$T> {
                call1("transpose", std::slice::from_ref(self), &[("axes", axes_value(axes))])
            }

            /// Softmax along `axis` (`softmax`; `-1` is the last axis).
            pub fn softmax(&self, axis: i64) -> Result<$T> {
                call1("softmax", std::slice::from_ref(self), &[("axis", AttrValue::Int(axis))])
            }

            /// log(softmax) along `axis` (`log_softmax`), computed stably.
            pub fn log_softmax(&self, axis: i64) -> Result<$T> {
                call1("log_softmax", std::slice::from_ref(self), &[("axis", AttrValue::Int(axis))])
            }

            /// x^p, elementwise (`_power_scalar`).
            pub fn powf(&self, p: f64) -> Result<$T> {
                call1("_power_scalar", std::slice::from_ref(self), &[("scalar", AttrValue::Float(p))])
            }

            /// `self + rhs` with broadcasting, as a method for chains (`x.dot(&w)?.add_arr(&b)?`).
            pub fn add_arr(&self, rhs: &$T) -> Result<$T> {
                self + rhs
            }

            /// `self * rhs` with broadcasting, as a method for chains.
            pub fn mul_arr(&self, rhs: &$T) -> Result<$T> {
                self * rhs
            }
        }
    };
}

matrix_methods!(NDArray);
matrix_methods!(Tracked);

/// Autograd on tracked arrays (MXNet's `x.attach_grad()`, `y.backward()`, `x.grad`).
impl Tracked {
    /// Makes this handle a fresh leaf of the graph with a zero gradient buffer and `grad_req`
    /// `write` (any recorded history of the handle is cut). Other handles to the same storage are
    /// not marked: use this handle (or its clones) in the computation.
    pub fn attach_grad(&mut self) {
        self.attach_grad_req(GradReq::Write);
    }

    /// [`Tracked::attach_grad`] with an explicit request: `Add` accumulates across backward
    /// calls, `Null` marks the variable without computing its gradient.
    pub fn attach_grad_req(&mut self, req: GradReq) {
        let buf = NDArray::zeros(self.shape(), self.dtype());
        self.set_entry(Some(Entry::variable(buf, req)));
    }

    /// The gradient buffer of a variable marked by [`Tracked::attach_grad`] (`None` for anything
    /// else, or with grad_req `null`). It holds zeros until a backward writes it.
    pub fn grad(&self) -> Option<NDArray> {
        self.entry().and_then(Entry::grad_buffer)
    }

    /// Backpropagates from this array with a head gradient of ones (MXNet's `y.backward()`:
    /// training mode, graph freed afterwards).
    pub fn backward(&self) -> Result<()> {
        self.backward_with(None, false)
    }

    /// Backpropagates with an explicit head gradient (`None`: ones); `retain_graph` keeps the
    /// recorded graph for another backward.
    pub fn backward_with(&self, head_grad: Option<&NDArray>, retain_graph: bool) -> Result<()> {
        let args = BackwardArgs { retain_graph, create_graph: false, train_mode: true };
        autograd::backward(std::slice::from_ref(self), &[head_grad.cloned().map(Tracked::new)], args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arr(v: &[f64], shape: &[usize]) -> NDArray {
        NDArray::from_vec(v.to_vec(), shape).expect("array")
    }

    #[test]
    fn reductions_take_axes_and_keepdims() -> Result<()> {
        let x = arr(&[1.0, 5.0, 3.0, 2.0, 4.0, 6.0], &[2, 3]);
        assert_eq!(x.sum()?.to_f64_vec(), vec![21.0]);
        assert_eq!(x.sum_axis(0)?.to_f64_vec(), vec![3.0, 9.0, 9.0]);
        assert_eq!(x.mean_axis(-1)?.to_f64_vec(), vec![3.0, 4.0]);
        assert_eq!(x.max_axes(&[1], true)?.shape(), &[2, 1]);
        assert_eq!(x.max_axes(&[1], true)?.to_f64_vec(), vec![5.0, 6.0]);
        assert_eq!(x.min()?.to_f64_vec(), vec![1.0]);
        assert!(x.sum_axis(2).is_err());
        Ok(())
    }

    #[test]
    fn shape_methods_record() -> Result<()> {
        let mut x = Tracked::new(arr(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]));
        x.attach_grad();
        let w = Tracked::new(arr(&[1.0, 10.0, 100.0, 1000.0, 1e4, 1e5], &[3, 2]));
        let y = autograd::record(|| x.transposed()?.mul_arr(&w)?.reshaped(&[-1])?.sum())?;
        y.backward()?;
        // d/dx sum(xᵀ ∘ w) = wᵀ
        assert_eq!(x.grad().map(|g| g.to_f64_vec()), Some(vec![1.0, 100.0, 1e4, 10.0, 1000.0, 1e5]));
        assert_eq!(x.permute_axes(&[1, 0])?.shape(), &[3, 2]);
        Ok(())
    }

    #[test]
    fn softmax_rows_sum_to_one() -> Result<()> {
        let x = arr(&[1.0, 2.0, 3.0, -1.0, 0.0, 1.0], &[2, 3]);
        let s = x.softmax(-1)?.sum_axis(1)?.to_f64_vec();
        assert!(s.iter().all(|v| (v - 1.0).abs() < 1e-12), "{s:?}");
        let l = x.log_softmax(1)?.exp()?.to_f64_vec();
        let p = x.softmax(1)?.to_f64_vec();
        assert!(l.iter().zip(&p).all(|(a, b)| (a - b).abs() < 1e-12));
        Ok(())
    }
}
