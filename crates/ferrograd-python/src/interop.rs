//! Zero-copy interop with NumPy and DLPack. All `unsafe` for sharing memory across the boundary
//! lives in this module.

use pyo3::prelude::*;

/// Adds the interop functions to the module.
pub fn register(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}
