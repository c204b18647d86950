//! Neural-network ops: activations, the softmax family, loss ops (with MXNet's backward
//! semantics), `FullyConnected`, `linalg_gemm2`, `Embedding` and `Dropout`.
//!
//! Loss ops (`SoftmaxOutput`, `*RegressionOutput`, `MakeLoss`) follow MXNet: their gradient rule
//! returns the loss gradient and ignores the head gradient (spec §3.4); label inputs never get a
//! gradient. Their rules are written from the inputs (recomputing e.g. the softmax) so that
//! differentiating the rule again gives the derivative of that loss gradient.

pub mod act_grad;
pub mod activation;
pub mod ctc;
pub mod dense;
pub mod dropout;
pub mod hard_sigmoid;
pub mod loss;
pub mod softmax;
pub mod softmax_length;
pub mod svm;

use crate::dtype::DType;
use crate::error::{Error, Result};

/// Fails with a DType error unless `dt` is a float type.
pub(crate) fn float_only(op: &str, arg: &str, dt: DType) -> Result<()> {
    if dt.is_float() {
        Ok(())
    } else {
        Err(Error::DType(format!("{op}: {arg} must have a float dtype (float16, float32, float64), got {dt}")))
    }
}

pub(crate) use super::common::{dense, split3};
