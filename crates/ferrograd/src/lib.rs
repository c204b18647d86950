//! # ferrograd
//!
//! Automatic differentiation with Apache MXNet's programming model (NDArray, `autograd`,
//! `symbol`, `executor`) on a Rust core. This crate is the engine: arrays with copy-on-write
//! storage, the operator registry (one definition per op: inference, forward, gradient rule), and
//! numeric helpers. The Python package `ferrograd` wraps it.
//!
//! ```
//! use ferrograd::{NDArray, ops};
//! let x = NDArray::from_vec(vec![1.0f32, 2.0, 3.0], &[3])?;
//! let y = ops::call("exp", &[x], &[])?;
//! assert!((y[0].to_f64_vec()[0] - 1.0f64.exp()).abs() < 1e-6);
//! # Ok::<(), ferrograd::error::Error>(())
//! ```

pub mod autograd;
pub mod buffer;
pub mod dtype;
pub mod error;
pub mod executor;
pub mod ndarray;
pub mod ops;
pub mod random;
pub mod symbol;

use std::sync::atomic::{AtomicBool, Ordering};

pub use buffer::Buffer;
pub use dtype::{DType, DTypeElem};
pub use error::{Error, Result};
pub use half::f16;
pub use ndarray::{Meta, NDArray, SliceArg};

static NP_SHAPE: AtomicBool = AtomicBool::new(false);

/// Whether NumPy shape semantics are on (0-d results; `npx.set_np()`). Off by default: full
/// reductions and scalar indexing give shape `(1,)` as in MXNet 1.x.
pub fn np_shape() -> bool {
    NP_SHAPE.load(Ordering::Relaxed)
}

/// Turns NumPy shape semantics on or off, returning the previous setting.
pub fn set_np_shape(on: bool) -> bool {
    NP_SHAPE.swap(on, Ordering::Relaxed)
}
