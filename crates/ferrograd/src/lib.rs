//! # ferrograd
//!
//! Automatic differentiation with Apache MXNet's programming model (NDArray, `autograd`,
//! `symbol`, `executor`) on a Rust core. This crate is the engine: arrays with copy-on-write
//! storage, the operator registry (one definition per op: inference, forward, gradient rule), and
//! numeric helpers. The Python package `ferrograd` wraps it.
//!
//! Two array types share one front door ([`call`] runs any registered op by name; the [`api`]
//! module adds typed methods and operators over it):
//!
//! - [`NDArray`], the storage handle that ops, kernels and the executor see: calls run untracked;
//! - [`Tracked`], an array with its place in the autograd graph: inside [`autograd::record`] calls
//!   are recorded on the tape exactly as Python's `nd.<op>` calls are.
//!
//! ## Arrays and operators
//!
//! Operators return `Result<NDArray>` (a shape mismatch is an error, not a panic), so each one
//! ends in `?`:
//!
//! ```
//! use ferrograd::NDArray;
//! let x = NDArray::from_vec(vec![1.0f32, 2.0, 3.0], &[3])?;
//! let y = ferrograd::call("exp", std::slice::from_ref(&x), &[])?;
//! assert!((y[0].to_f64_vec()[0] - 1.0f64.exp()).abs() < 1e-6);
//! let z = ((&x * 2.0)? + &x)?; // 3x
//! assert_eq!(z.to_f64_vec(), vec![3.0, 6.0, 9.0]);
//! # Ok::<(), ferrograd::error::Error>(())
//! ```
//!
//! ## Reductions
//!
//! ```
//! use ferrograd::NDArray;
//! let m = NDArray::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
//! assert_eq!(m.sum_axis(0)?.to_f64_vec(), vec![5.0, 7.0, 9.0]);
//! assert_eq!(m.mean_axes(&[1], true)?.shape(), &[2, 1]);
//! assert_eq!(m.max()?.item_f64()?, 6.0);
//! # Ok::<(), ferrograd::Error>(())
//! ```
//!
//! ## Autograd
//!
//! ```
//! use ferrograd::{autograd, NDArray, Tracked};
//! let mut x = Tracked::new(NDArray::from_vec(vec![0.0f64, 1.0], &[2])?);
//! x.attach_grad();
//! // y = sum(x · e^x); dy/dx = e^x (1 + x) = [1, 2e]
//! let y = autograd::record(|| (&x * &x.exp()?)?.sum())?;
//! y.backward()?;
//! let g = x.grad().map(|g| g.to_f64_vec()).unwrap_or_default();
//! assert!((g[0] - 1.0).abs() < 1e-12 && (g[1] - 2.0 * 1f64.exp()).abs() < 1e-12);
//! # Ok::<(), ferrograd::Error>(())
//! ```
//!
//! ## Symbols and executors
//!
//! ```
//! use ferrograd::{autograd::GradReq, executor::Executor, ops::AttrValue, symbol::Symbol, NDArray};
//! // out = tanh(FullyConnected(data, num_hidden=1)), with fc_weight and fc_bias created by name.
//! let fc = Symbol::op("FullyConnected", "fc", &[Symbol::var("data")], &[("num_hidden", AttrValue::Int(1))])?;
//! let out = Symbol::op("tanh", "act", &[fc], &[])?;
//! let mut exe = Executor::simple_bind(&out, &[("data", &[2, 2])], GradReq::Write)?;
//! exe.set_arg("data", &NDArray::from_vec(vec![1.0f32, 0.0, 0.0, 1.0], &[2, 2])?)?;
//! exe.set_arg("fc_weight", &NDArray::from_vec(vec![0.5f32, -0.5], &[1, 2])?)?;
//! exe.forward(false, &mut |_, _| {})?;
//! let o = exe.outputs[0].to_f64_vec(); // [tanh(0.5), tanh(-0.5)]
//! assert!((o[0] - 0.5f64.tanh()).abs() < 1e-6 && (o[1] + 0.5f64.tanh()).abs() < 1e-6);
//! # Ok::<(), ferrograd::Error>(())
//! ```

pub mod api;
pub mod autograd;
pub mod buffer;
pub mod dtype;
pub mod error;
pub mod executor;
pub mod io;
pub mod ndarray;
pub mod ops;
pub mod profiler;
pub mod random;
pub mod symbol;

use std::sync::atomic::{AtomicBool, Ordering};

pub use api::{call, call1, Operand};
pub use autograd::Tracked;
pub use buffer::Buffer;
pub use dtype::{DType, DTypeElem};
pub use error::{Error, Result};
/// Makes the calling thread (call it from `main`) thread 0 of the kernels' thread pool, so
/// parallel kernels called from it start in place (see `ferrograd_kernels::par::join_pool`).
pub use ferrograd_kernels::par::join_pool;
pub use half::f16;
pub use ndarray::{Meta, NDArray, SliceArg};

// NumPy shape semantics, as in MXNet: a per-thread switch, plus a process-wide one that
// turns the semantics on in every thread (MXNet's `set_np_shape(2)`).
static NP_SHAPE_GLOBAL: AtomicBool = AtomicBool::new(false);

thread_local! {
    static NP_SHAPE_LOCAL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether NumPy shape semantics are on in the calling thread (0-d results; `npx.set_np()`):
/// its own switch or the process-wide one. Off by default: full reductions and scalar indexing
/// give shape `(1,)` as in MXNet 1.x.
pub fn np_shape() -> bool {
    NP_SHAPE_GLOBAL.load(Ordering::Relaxed) || NP_SHAPE_LOCAL.with(std::cell::Cell::get)
}

/// Sets the calling thread's NumPy-shape switch, returning the previous `np_shape()`.
pub fn set_np_shape(on: bool) -> bool {
    let prev = np_shape();
    NP_SHAPE_LOCAL.with(|c| c.set(on));
    prev
}

/// Sets the calling thread's NumPy-shape switch until dropped, then restores it: work handed to
/// another thread (a rayon task) that must see its caller's setting holds one of these.
pub struct NpShapeScope(bool);

impl NpShapeScope {
    pub fn enter(on: bool) -> Self {
        NpShapeScope(NP_SHAPE_LOCAL.with(|c| c.replace(on)))
    }
}

impl Drop for NpShapeScope {
    fn drop(&mut self) {
        NP_SHAPE_LOCAL.with(|c| c.set(self.0));
    }
}

/// Sets the process-wide NumPy-shape switch (seen by every thread while on), returning the
/// previous `np_shape()` of the calling thread.
pub fn set_np_shape_global(on: bool) -> bool {
    let prev = np_shape();
    NP_SHAPE_GLOBAL.store(on, Ordering::Relaxed);
    prev
}
