//! Shape, strides (in elements, may be zero or negative) and offset of a view into a buffer.

use smallvec::SmallVec;

/// Dimensions: up to 6 stay inline, so small tensors do not allocate for their shape.
pub type Dims = SmallVec<[usize; 6]>;
/// Strides in elements.
pub type Strides = SmallVec<[isize; 6]>;

/// How a view maps a multi-index to a buffer position: `offset + Σ index[d]·strides[d]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub shape: Dims,
    pub strides: Strides,
    pub offset: usize,
}

/// Row-major strides of a contiguous array of `shape`.
pub fn contiguous_strides(shape: &[usize]) -> Strides {
    let mut strides: Strides = SmallVec::from_elem(0, shape.len());
    let mut s = 1isize;
    for d in (0..shape.len()).rev() {
        strides[d] = s;
        s *= shape[d].max(1) as isize;
    }
    strides
}

/// NumPy broadcasting of two shapes; `None` when they are incompatible.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Option<Dims> {
    let n = a.len().max(b.len());
    let mut out: Dims = SmallVec::from_elem(0, n);
    for i in 0..n {
        let da = if i + a.len() >= n { a[i + a.len() - n] } else { 1 };
        let db = if i + b.len() >= n { b[i + b.len() - n] } else { 1 };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return None;
        };
    }
    Some(out)
}

impl Layout {
    pub fn contiguous(shape: &[usize]) -> Self {
        Layout { shape: SmallVec::from_slice(shape), strides: contiguous_strides(shape), offset: 0 }
    }

    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// True when the view is row-major contiguous (dimensions of size 1 may have any stride).
    pub fn is_contiguous(&self) -> bool {
        if self.numel() == 0 {
            // No element is reached, so any strides qualify (fresh empty outputs included).
            return true;
        }
        let mut expected = 1isize;
        for d in (0..self.shape.len()).rev() {
            if self.shape[d] == 1 {
                continue;
            }
            if self.strides[d] != expected {
                return false;
            }
            expected *= self.shape[d] as isize;
        }
        true
    }

    /// The element range `[offset, offset + numel)` when the view is contiguous.
    pub fn contiguous_range(&self) -> Option<std::ops::Range<usize>> {
        self.is_contiguous().then(|| self.offset..self.offset + self.numel())
    }

    /// True when every element is the same buffer position (a broadcast scalar).
    pub fn is_scalar_broadcast(&self) -> bool {
        self.shape.iter().zip(&self.strides).all(|(&n, &s)| n <= 1 || s == 0)
    }

    /// The view broadcast to `shape` (stride 0 on new or size-1 axes); `None` if incompatible.
    pub fn broadcast_to(&self, shape: &[usize]) -> Option<Layout> {
        if shape.len() < self.ndim() {
            return None;
        }
        let lead = shape.len() - self.ndim();
        let mut strides: Strides = SmallVec::from_elem(0, shape.len());
        for (i, &target) in shape.iter().enumerate().skip(lead) {
            let (n, s) = (self.shape[i - lead], self.strides[i - lead]);
            strides[i] = if n == target {
                s
            } else if n == 1 {
                0
            } else {
                return None;
            };
        }
        Some(Layout { shape: SmallVec::from_slice(shape), strides, offset: self.offset })
    }

    /// Axes reordered: output axis `i` is input axis `perm[i]`. `perm` must be a permutation.
    pub fn permute(&self, perm: &[usize]) -> Layout {
        Layout {
            shape: perm.iter().map(|&p| self.shape[p]).collect(),
            strides: perm.iter().map(|&p| self.strides[p]).collect(),
            offset: self.offset,
        }
    }

    /// `len` elements of `axis` starting at `start` with step `step` (may be negative).
    /// The caller guarantees the indices are in range.
    pub fn slice_axis(&self, axis: usize, start: usize, step: isize, len: usize) -> Layout {
        let mut out = self.clone();
        if len > 0 {
            out.offset = (self.offset as isize + start as isize * self.strides[axis]) as usize;
        }
        out.shape[axis] = len;
        out.strides[axis] = self.strides[axis] * step;
        out
    }

    /// Index `i` of `axis`, removing the axis. The caller guarantees `i` is in range.
    pub fn index_axis(&self, axis: usize, i: usize) -> Layout {
        let mut out = self.clone();
        out.offset = (self.offset as isize + i as isize * self.strides[axis]) as usize;
        out.shape.remove(axis);
        out.strides.remove(axis);
        out
    }

    /// Inserts an axis of size 1 at `axis`.
    pub fn insert_axis(&self, axis: usize) -> Layout {
        let mut out = self.clone();
        out.shape.insert(axis, 1);
        out.strides.insert(axis, 0);
        out
    }

    /// A view with `shape` over the same elements in row-major order, when the strides allow it
    /// without a copy (always for contiguous views).
    pub fn reshape(&self, shape: &[usize]) -> Option<Layout> {
        if self.is_contiguous() {
            return Some(Layout {
                shape: SmallVec::from_slice(shape),
                strides: contiguous_strides(shape),
                offset: self.offset,
            });
        }
        None
    }

    /// Buffer positions (relative to nothing: absolute) of the first and one-past-last element
    /// that the view may touch; used to check a view fits in its buffer.
    pub fn span(&self) -> (isize, isize) {
        if self.numel() == 0 {
            return (self.offset as isize, self.offset as isize);
        }
        let (mut lo, mut hi) = (self.offset as isize, self.offset as isize);
        for (&n, &s) in self.shape.iter().zip(&self.strides) {
            let reach = (n as isize - 1) * s;
            if reach < 0 {
                lo += reach;
            } else {
                hi += reach;
            }
        }
        (lo, hi + 1)
    }
}

/// Merges adjacent axes that are contiguous with each other in *every* layout (all share a
/// shape), so strided loops run over as few, as long dimensions as possible.
pub fn coalesce(layouts: &[&Layout]) -> (Dims, Vec<Strides>) {
    let shape = &layouts[0].shape;
    let mut out_shape: Dims = SmallVec::new();
    let mut out_strides: Vec<Strides> = vec![SmallVec::new(); layouts.len()];
    for d in 0..shape.len() {
        if shape[d] == 1 {
            continue;
        }
        let mergeable = !out_shape.is_empty()
            && layouts.iter().enumerate().all(|(k, l)| {
                let prev = *out_strides[k].last().unwrap_or(&0);
                prev == l.strides[d] * shape[d] as isize
            });
        if mergeable {
            let last = out_shape.len() - 1;
            out_shape[last] *= shape[d];
            for (k, l) in layouts.iter().enumerate() {
                out_strides[k][last] = l.strides[d];
            }
        } else {
            out_shape.push(shape[d]);
            for (k, l) in layouts.iter().enumerate() {
                out_strides[k].push(l.strides[d]);
            }
        }
    }
    (out_shape, out_strides)
}

/// Walks the rows (last coalesced axis) of the elements `[start, start+count)` in row-major order,
/// calling `f(first_out_index, row_len, base_offsets)` for each run along the last axis.
pub fn for_each_row<const K: usize>(
    shape: &[usize],
    strides: &[Strides; K],
    offsets: [usize; K],
    start: usize,
    count: usize,
    mut f: impl FnMut(usize, usize, [isize; K]),
) {
    if count == 0 {
        return;
    }
    if shape.is_empty() {
        f(start, 1, offsets.map(|o| o as isize));
        return;
    }
    let nd = shape.len();
    let inner = shape[nd - 1];
    // Multi-index of `start`.
    let mut idx: Dims = SmallVec::from_elem(0, nd);
    let mut rem = start;
    for d in (0..nd).rev() {
        idx[d] = rem % shape[d];
        rem /= shape[d];
    }
    let mut base = [0isize; K];
    for k in 0..K {
        base[k] = offsets[k] as isize + (0..nd).map(|d| idx[d] as isize * strides[k][d]).sum::<isize>();
    }
    let mut done = 0;
    let mut pos = start;
    while done < count {
        let run = (inner - idx[nd - 1]).min(count - done);
        f(pos, run, base);
        done += run;
        pos += run;
        // Advance the multi-index by `run` along the last axis, carrying into outer axes.
        idx[nd - 1] += run;
        for k in 0..K {
            base[k] += run as isize * strides[k][nd - 1];
        }
        let mut d = nd - 1;
        while idx[d] == shape[d] && d > 0 {
            for k in 0..K {
                base[k] -= shape[d] as isize * strides[k][d];
                base[k] += strides[k][d - 1];
            }
            idx[d] = 0;
            idx[d - 1] += 1;
            d -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcast_rules() {
        assert_eq!(broadcast_shapes(&[2, 1, 3], &[4, 1]).unwrap().as_slice(), &[2, 4, 3]);
        assert_eq!(broadcast_shapes(&[0, 1, 3], &[0, 10, 3]).unwrap().as_slice(), &[0, 10, 3]);
        assert!(broadcast_shapes(&[2, 3], &[3, 2]).is_none());
        assert_eq!(broadcast_shapes(&[], &[5]).unwrap().as_slice(), &[5]);
    }

    #[test]
    fn coalesce_merges_contiguous_axes() {
        let l = Layout::contiguous(&[2, 3, 4]);
        let (shape, strides) = coalesce(&[&l]);
        assert_eq!(shape.as_slice(), &[24]);
        assert_eq!(strides[0].as_slice(), &[1]);
        let t = l.permute(&[0, 2, 1]);
        let (shape, _) = coalesce(&[&t]);
        assert_eq!(shape.as_slice(), &[2, 4, 3]);
    }

    #[test]
    fn rows_visit_every_offset_in_order() {
        let l = Layout::contiguous(&[3, 4]).permute(&[1, 0]); // 4x3 transposed view
        let mut seen = vec![];
        for_each_row(&l.shape, std::array::from_ref(&l.strides), [0], 2, 7, |_, n, [b]| {
            for j in 0..n as isize {
                seen.push(b + j * l.strides[1]);
            }
        });
        assert_eq!(seen, vec![8, 1, 5, 9, 2, 6, 10]);
    }
}
