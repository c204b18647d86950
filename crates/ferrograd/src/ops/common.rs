//! Small helpers shared by the op files: contiguous buffer access, parameter conversions, index
//! resolution and index-map gather/scatter.

use std::ops::Range;
use std::sync::Arc;

use ferrograd_kernels::par::{self, Cost};
use ferrograd_kernels::Element;

use super::attrs::fmt_tuple;
use super::binary::Num;
use super::indexing::TakeMode;
use crate::buffer::Buffer;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::with_dtype;

/// The contiguous elements of `x` (copying only when its layout is not contiguous).
pub(crate) fn dense(x: &NDArray) -> (Arc<Buffer>, Range<usize>) {
    let c = x.to_contiguous();
    let range = c.layout().contiguous_range().unwrap_or(0..0); // ok: to_contiguous is contiguous
    (c.snapshot(), range)
}

/// `(outer, n, inner)` of `shape` around `axis`: the products of the sizes before it, its size,
/// and the product of the sizes after it.
pub(crate) fn split3(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    (shape[..axis].iter().product(), shape[axis], shape[axis + 1..].iter().product())
}

/// A shape as `i64`s (the type of shape parameters).
pub(crate) fn to_i64(s: &[usize]) -> Vec<i64> {
    s.iter().map(|&d| d as i64).collect()
}

/// Non-negative sizes from a parameter tuple, or an error naming op and parameter.
pub(crate) fn sizes(op: &str, key: &str, t: &[i64]) -> Result<Vec<usize>> {
    t.iter()
        .map(|&d| {
            usize::try_from(d).map_err(|_| Error::Value(format!("{op}: negative value in {key}={}", fmt_tuple(t))))
        })
        .collect()
}

/// No source element: the output takes the fill value.
pub(crate) const NONE: usize = usize::MAX;

/// `out[p] = src[map[p]]` (or `fill` where `map[p] == NONE`), written into `out` (an op output).
pub(crate) fn gather(x: &NDArray, map: &[usize], fill: f64, out: &mut NDArray) -> Result<()> {
    let dtype = out.dtype();
    let (buf, range) = dense(&x.astype_if(dtype));
    with_dtype!(dtype, T => {
        let src = &buf.typed::<T>()?[range];
        let f = T::from_f64(fill);
        out.write_out::<T, _>(|o| {
            par::for_each_chunk(o, Cost::Light, |start, chunk| {
                for (v, &m) in chunk.iter_mut().zip(&map[start..]) {
                    *v = if m == NONE { f } else { src[m] };
                }
            })
        })?;
    });
    Ok(())
}

/// `out` set to zeros, then `out[map[p]] += src[p]` (sequential: positions may repeat).
pub(crate) fn scatter_add(x: &NDArray, map: &[usize], out: &mut NDArray) -> Result<()> {
    let (buf, range) = dense(&x.astype_if(out.dtype()));
    with_dtype!(out.dtype(), T => {
        let src = &buf.typed::<T>()?[range];
        out.write_out::<T, _>(|o| {
            o.fill(T::zero());
            for (&v, &m) in src.iter().zip(map) {
                if m != NONE {
                    o[m] = T::add(o[m], v);
                }
            }
        })?;
    });
    Ok(())
}

/// `x` in dtype `dt`, sharing its buffer when it already has that dtype.
pub(crate) trait AstypeIf {
    fn astype_if(&self, dt: DType) -> NDArray;
}

impl AstypeIf for NDArray {
    fn astype_if(&self, dt: DType) -> NDArray {
        if self.dtype() == dt {
            self.clone()
        } else {
            self.astype(dt)
        }
    }
}

/// Resolves one index against an axis of size `n`, or fails naming the op, axis, size and index.
pub(crate) fn resolve_index(op: &str, i: i64, n: usize, axis: usize, mode: TakeMode) -> Result<usize> {
    let m = n as i64;
    if n == 0 {
        return Err(Error::Index(format!("{op}: cannot take index {i} from axis {axis} with size 0")));
    }
    Ok(match mode {
        TakeMode::Clip => i.clamp(0, m - 1) as usize,
        TakeMode::Wrap => i.rem_euclid(m) as usize,
        TakeMode::Raise => {
            if i < -m || i >= m {
                return Err(Error::Index(format!("{op}: index {i} is out of bounds for axis {axis} with size {n}")));
            }
            if i < 0 {
                (i + m) as usize
            } else {
                i as usize
            }
        }
    })
}
