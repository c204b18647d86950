//! The one dtype adapter: ops whose kernels exist only for some dtypes (float16 has no GEMM, no
//! vectorised `exp`) compute in a wider one. The op's forward calls [`forward_widened`] for such
//! a dtype; inputs are cast up, the op runs natively, and the results are cast back into the
//! outputs it was given (so the executor's planned buffers are still the ones written).

use super::{Ctx, Op};
use crate::dtype::DType;
use crate::error::Result;
use crate::ndarray::NDArray;

/// The dtype `dt` is computed in by ops without a native kernel for it (float16 → float32);
/// `None` when `dt` needs no widening.
pub fn wider(dt: DType) -> Option<DType> {
    match dt {
        DType::F16 => Some(DType::F32),
        _ => None,
    }
}

/// Runs `op` with every input of dtype `narrow` cast to `wide` (other inputs, such as integer
/// labels or indices, are passed as they are), then writes each result into `outputs`, cast
/// back to the output's dtype.
pub fn forward_widened(
    op: &dyn Op,
    ctx: &Ctx,
    inputs: &[NDArray],
    outputs: &mut [NDArray],
    narrow: DType,
    wide: DType,
) -> Result<()> {
    let xs: Vec<NDArray> =
        inputs.iter().map(|x| if x.dtype() == narrow { x.astype(wide) } else { x.clone() }).collect();
    let ys = super::run(op, ctx, &xs)?;
    for (o, y) in outputs.iter_mut().zip(&ys) {
        o.write_from(y)?;
    }
    Ok(())
}
