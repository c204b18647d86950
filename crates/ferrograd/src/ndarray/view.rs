//! Layout-only operations: reshape, transpose, slicing, axis insertion/removal, broadcasting.
//!
//! Following MXNet, reshapes and contiguous slices are *views* (writes reach the source), while
//! transposes, broadcasts and strided slices are *lazy copies* (they share the buffer until either
//! side is written; see the aliasing rule in the parent module).

use ferrograd_kernels::layout::broadcast_shapes;

use super::NDArray;
use crate::error::{fmt_shape, Error, Result};

/// One axis of a basic index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SliceArg {
    /// A single position (the axis is removed); may be negative.
    Index(i64),
    /// `start:stop:step` with Python semantics (`None` = open end).
    Range { start: Option<i64>, stop: Option<i64>, step: i64 },
    /// `None`/`newaxis`: insert an axis of size 1.
    NewAxis,
}

/// Normalises a possibly negative axis for an array of `ndim` dimensions.
pub fn normalize_axis(op: &str, axis: i64, ndim: usize) -> Result<usize> {
    let n = ndim as i64;
    // A 0-d array has no axis at all (NumPy's AxisError); accepting 0/-1 here used to index
    // past the end of empty axis lists.
    if axis < -n || axis >= n {
        return Err(Error::Index(format!("{op}: axis {axis} is out of range for an array with {ndim} dimensions")));
    }
    Ok(if axis < 0 { (axis + n) as usize } else { axis as usize })
}

/// Python slice semantics: (start, step, len) of `start:stop:step` on an axis of `n`.
pub fn resolve_range(n: usize, start: Option<i64>, stop: Option<i64>, step: i64) -> Result<(usize, isize, usize)> {
    if step == 0 {
        return Err(Error::Value("slice step cannot be zero".into()));
    }
    let n = n as i64;
    let clamp = |v: i64, lo: i64, hi: i64| v.max(lo).min(hi);
    let norm = |v: i64| if v < 0 { v + n } else { v };
    let (s, e) = if step > 0 {
        (start.map_or(0, |v| clamp(norm(v), 0, n)), stop.map_or(n, |v| clamp(norm(v), 0, n)))
    } else {
        (start.map_or(n - 1, |v| clamp(norm(v), -1, n - 1)), stop.map_or(-1, |v| clamp(norm(v), -1, n - 1)))
    };
    let len = if step > 0 { (e - s + step - 1).max(0) / step } else { (s - e - step - 1).max(0) / -step };
    Ok((s.max(0) as usize, step as isize, len as usize))
}

impl NDArray {
    /// A view with a new shape over the same elements; copies first if not contiguous.
    /// Not recorded by autograd (the result is untracked); use [`NDArray::reshaped`] for that.
    pub fn reshape(&self, shape: &[usize]) -> Result<NDArray> {
        let n: usize = shape.iter().product();
        if n != self.size() {
            return Err(Error::Shape(format!(
                "reshape: cannot reshape array of shape {} ({} elements) into shape {} ({n} elements)",
                fmt_shape(self.shape()),
                self.size(),
                fmt_shape(shape)
            )));
        }
        match self.layout.reshape(shape) {
            Some(l) => Ok(self.with_layout(l)),
            None => Ok(self.to_contiguous_copy().with_layout(ferrograd_kernels::Layout::contiguous(shape))),
        }
    }

    /// Axes permuted (`axes` empty = reversed), as a lazy copy.
    /// Not recorded by autograd; use [`NDArray::transposed`] / [`NDArray::permute_axes`] for that.
    pub fn transpose(&self, axes: &[i64]) -> Result<NDArray> {
        let nd = self.ndim();
        let perm: Vec<usize> = if axes.is_empty() {
            (0..nd).rev().collect()
        } else {
            if axes.len() != nd {
                return Err(Error::Value(format!(
                    "transpose: axes {axes:?} do not match an array of shape {}",
                    fmt_shape(self.shape())
                )));
            }
            let p = axes.iter().map(|&a| normalize_axis("transpose", a, nd)).collect::<Result<Vec<_>>>()?;
            let mut seen = vec![false; nd];
            for &a in &p {
                if std::mem::replace(&mut seen[a], true) {
                    return Err(Error::Value(format!("transpose: repeated axis in {axes:?}")));
                }
            }
            p
        };
        Ok(self.lazy_copy(self.layout.permute(&perm)))
    }

    /// Inserts a size-1 axis at `axis` (view).
    pub fn expand_dims(&self, axis: i64) -> Result<NDArray> {
        let a = normalize_axis("expand_dims", axis, self.ndim() + 1)?;
        Ok(self.with_layout(self.layout.insert_axis(a)))
    }

    /// Removes size-1 axes (all of them when `axes` is `None`) (view).
    pub fn squeeze(&self, axes: Option<&[i64]>) -> Result<NDArray> {
        let nd = self.ndim();
        let drop: Vec<usize> = match axes {
            None => (0..nd).filter(|&d| self.shape()[d] == 1).collect(),
            Some(ax) => {
                let mut v = ax.iter().map(|&a| normalize_axis("squeeze", a, nd)).collect::<Result<Vec<_>>>()?;
                for &d in &v {
                    if self.shape()[d] != 1 {
                        return Err(Error::Shape(format!(
                            "squeeze: cannot select axis {d} of shape {}: its size is not 1",
                            fmt_shape(self.shape())
                        )));
                    }
                }
                v.sort_unstable();
                v.dedup();
                v
            }
        };
        let mut l = self.layout.clone();
        for &d in drop.iter().rev() {
            l.shape.remove(d);
            l.strides.remove(d);
        }
        Ok(self.with_layout(l))
    }

    /// Broadcasts to `shape` under NumPy rules (lazy copy, no data moved).
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<NDArray> {
        match self.layout.broadcast_to(shape) {
            Some(l) => Ok(self.lazy_copy(l)),
            None => Err(Error::Shape(format!(
                "broadcast_to: cannot broadcast shape {} to {}",
                fmt_shape(self.shape()),
                fmt_shape(shape)
            ))),
        }
    }

    /// Basic indexing. Returns a view when the result is contiguous in memory (MXNet semantics:
    /// writes reach the source), otherwise a lazy copy. Indexes beyond the given args keep all.
    pub fn slice(&self, args: &[SliceArg]) -> Result<NDArray> {
        let l = self.slice_layout(args)?;
        Ok(if l.is_contiguous() { self.with_layout(l) } else { self.lazy_copy(l) })
    }

    /// The layout selected by a basic index (no data touched).
    pub fn slice_layout(&self, args: &[SliceArg]) -> Result<ferrograd_kernels::Layout> {
        let mut l = self.layout.clone();
        let mut axis = 0usize; // current axis in `l`
        let mut src_axis = 0usize; // the axis of `self` being indexed (for error messages)
        let consumed = args.iter().filter(|a| !matches!(a, SliceArg::NewAxis)).count();
        if consumed > self.ndim() {
            return Err(Error::Index(format!(
                "too many indices for array of shape {}: {consumed} given",
                fmt_shape(self.shape())
            )));
        }
        for arg in args {
            match *arg {
                SliceArg::Index(i) => {
                    let n = l.shape[axis] as i64;
                    if i < -n || i >= n {
                        return Err(Error::Index(format!(
                            "index {i} is out of bounds for axis {src_axis} with size {n} (array shape {})",
                            fmt_shape(self.shape())
                        )));
                    }
                    l = l.index_axis(axis, if i < 0 { (i + n) as usize } else { i as usize });
                    src_axis += 1;
                }
                SliceArg::Range { start, stop, step } => {
                    let (s, st, len) = resolve_range(l.shape[axis], start, stop, step)?;
                    l = l.slice_axis(axis, s, st, len);
                    axis += 1;
                    src_axis += 1;
                }
                SliceArg::NewAxis => {
                    l = l.insert_axis(axis);
                    axis += 1;
                }
            }
        }
        Ok(l)
    }
}

/// Broadcast shape of two arrays, or a shape error naming the op and both shapes.
pub fn broadcast_pair(op: &str, a: &[usize], b: &[usize]) -> Result<ferrograd_kernels::layout::Dims> {
    broadcast_shapes(a, b).ok_or_else(|| {
        Error::Shape(format!(
            "{op}: operands could not be broadcast together with shapes {} {}",
            fmt_shape(a),
            fmt_shape(b)
        ))
    })
}
