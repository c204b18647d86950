//! ferrograd's CPU compute kernels.
//!
//! Kernels see only slices and [`Layout`]s: no tensors, no autograd, no Python. Each kernel writes
//! into a caller-provided output, so the imperative path can allocate fresh outputs while the
//! executor writes into planned buffers. Parallelism is decided in one place, [`par`].

pub mod conv;
pub mod element;
pub mod gemm;
pub mod layout;
pub mod lrn;
pub mod matmul;
pub mod par;
pub mod pool;
pub mod reduce;
pub mod reference;
pub mod rnn;
mod rnn_cells;
pub mod simd;
pub mod special;
pub mod unary_binary;
pub mod vmath;

pub use element::Element;
pub use layout::Layout;
