//! Copies, casts and element extraction.

use ferrograd_kernels::element::alloc_output;
use ferrograd_kernels::par::Cost;
use ferrograd_kernels::unary_binary::unary;
use ferrograd_kernels::{Element, Layout};

use super::NDArray;
use crate::buffer::Buffer;
use crate::dtype::{DType, DTypeElem};
use crate::error::{Error, Result};
use crate::{match_buffer, with_dtype};

/// Converts the elements of a view into a fresh contiguous buffer of `dtype`.
pub(crate) fn cast_copy(buf: &Buffer, layout: &Layout, dtype: DType) -> Buffer {
    with_dtype!(dtype, D => {
        let mut out = alloc_output::<D>(layout.numel());
        cast_into(buf, layout, &mut out);
        Buffer::from_vec(out)
    })
}

/// Writes the elements of a view, in row-major order and converted to `D`, into `out` (which
/// holds exactly `layout.numel()` elements).
pub(crate) fn cast_into<D: DTypeElem>(buf: &Buffer, layout: &Layout, out: &mut [D]) {
    match_buffer!(buf, m => {
        let src = m.as_slice();
        if buf.dtype() == D::DTYPE {
            // Same type: a plain copy, exact for every value (no round trip through f64).
            copy_same(src, layout, out);
        } else {
            unary(src, layout, out, Cost::Light, |x| D::from_f64(x.to_f64()));
        }
    })
}

fn copy_same<S: Element, D: Element>(src: &[S], layout: &Layout, out: &mut [D]) {
    // Only called when S == D; the transmute-free way is a cast through the element's own bits.
    // SAFETY: the caller checked that both buffers have the same dtype, so S and D are the same
    // type and the slices have identical layout in memory.
    let src: &[D] = unsafe { std::slice::from_raw_parts(src.as_ptr() as *const D, src.len()) };
    unary(src, layout, out, Cost::Light, |x| x);
}

impl NDArray {
    /// A private contiguous copy (never shares storage).
    pub fn to_contiguous_copy(&self) -> NDArray {
        let buf = self.snapshot();
        NDArray::from_buffer(cast_copy(&buf, &self.layout, self.dtype), &self.layout.shape)
            .expect("cast_copy yields numel elements") // ok: the kernel writes exactly numel
    }

    /// `self` if its layout is contiguous, else a contiguous copy.
    pub fn to_contiguous(&self) -> NDArray {
        if self.layout.is_contiguous() {
            self.clone()
        } else {
            self.to_contiguous_copy()
        }
    }

    /// MXNet `copy()`: a new array with its own storage.
    pub fn copy(&self) -> NDArray {
        self.to_contiguous_copy()
    }

    /// MXNet `astype(dtype)`: a converted copy (a copy even when the dtype is unchanged).
    pub fn astype(&self, dtype: DType) -> NDArray {
        let buf = self.snapshot();
        NDArray::from_buffer(cast_copy(&buf, &self.layout, dtype), &self.layout.shape)
            .expect("cast_copy yields numel elements") // ok: the kernel writes exactly numel
    }

    /// The elements in row-major order; `T` must be the array's element type.
    pub fn to_vec<T: DTypeElem>(&self) -> Result<Vec<T>> {
        if T::DTYPE != self.dtype {
            return Err(Error::DType(format!("to_vec: array has dtype {}, not {}", self.dtype, T::DTYPE)));
        }
        let buf = self.snapshot();
        let mut out = ferrograd_kernels::element::try_alloc_output::<T>(self.size())
            .ok_or_else(|| super::alloc_error("asnumpy", self.shape(), self.dtype))?;
        cast_into(&buf, &self.layout, &mut out);
        Ok(out)
    }

    /// The elements converted to f64, in row-major order (for tests and printing).
    pub fn to_f64_vec(&self) -> Vec<f64> {
        let mut out = vec![0.0; self.size()];
        cast_into(&self.snapshot(), &self.layout, &mut out);
        out
    }

    /// [`NDArray::to_f64_vec`] into `out`, reusing its allocation (staging buffers kept across
    /// calls).
    pub(crate) fn read_f64_into(&self, out: &mut Vec<f64>) {
        out.clear();
        out.resize(self.size(), 0.0);
        cast_into(&self.snapshot(), &self.layout, out);
    }

    /// The single element of a one-element array, as f64.
    pub fn item_f64(&self) -> Result<f64> {
        if self.size() != 1 {
            return Err(Error::Value("The current array is not a scalar".into()));
        }
        Ok(self.to_f64_vec()[0])
    }
}

/// `value`'s layout for assignment into `ndim` axes: leading size-1 axes beyond `ndim` are
/// dropped (as NumPy and MXNet do, e.g. `b[0] = np.array([x])` on a 1-D `b`), so that the usual
/// broadcasting applies to the rest.
pub(crate) fn assignable_layout(value: &Layout, ndim: usize) -> Layout {
    let extra = value.shape.len().saturating_sub(ndim);
    let drop = value.shape[..extra].iter().take_while(|&&n| n == 1).count();
    Layout {
        shape: value.shape[drop..].iter().copied().collect(),
        strides: value.strides[drop..].iter().copied().collect(),
        offset: value.offset,
    }
}

impl NDArray {
    /// Writes `src` (broadcast to this array's shape, converted to its dtype) into this array's
    /// elements, through its layout: writes through a view reach the viewed array.
    pub fn assign_from(&mut self, src: &NDArray) -> Result<()> {
        let shape = self.shape().to_vec();
        let sl = assignable_layout(src.layout(), shape.len()).broadcast_to(&shape).ok_or_else(|| {
            Error::Shape(format!(
                "assignment: cannot broadcast value of shape {} to {}",
                crate::error::fmt_shape(src.shape()),
                crate::error::fmt_shape(&shape)
            ))
        })?;
        let dtype = self.dtype;
        // Same dtype: copy the source's snapshot (safe even when it aliases this array).
        let src_buf = if src.dtype() == dtype {
            src.snapshot()
        } else {
            std::sync::Arc::new(cast_copy(&src.snapshot(), &sl, dtype))
        };
        let sl = if src.dtype() == dtype { sl } else { Layout::contiguous(&shape) };
        self.write(|buf, dl| {
            with_dtype!(dtype, T => {
                let s = src_buf.typed::<T>()?;
                let d = buf.typed_mut::<T>()?;
                ferrograd_kernels::unary_binary::assign(d, dl, s, &sl, |_, v| v);
                Ok(())
            })
        })
    }

    /// Writes `src`'s elements, in row-major order and converted to this array's dtype, into this
    /// contiguous array in one pass, in its own buffer: how a forward fills the output it was
    /// given with a view, a cast or a reshape of another array. The element counts must match;
    /// the shapes need not (row-major order is what is copied).
    pub fn write_from(&mut self, src: &NDArray) -> Result<()> {
        if src.size() != self.size() {
            return Err(Error::Shape(format!(
                "write_from: cannot write {} elements (shape {}) into {} (shape {})",
                src.size(),
                crate::error::fmt_shape(src.shape()),
                self.size(),
                crate::error::fmt_shape(self.shape())
            )));
        }
        let (buf, layout) = (src.snapshot(), src.layout.clone());
        with_dtype!(self.dtype, D => self.write_out::<D, _>(|o| cast_into(&buf, &layout, o)))
    }

    /// Like [`NDArray::assign_from`], but when both arrays are whole, contiguous buffers of the
    /// same shape and dtype (and this one's memory is not imported) this array takes a shared
    /// handle to `src`'s buffer instead of copying it. Writes to either side copy first
    /// (copy-on-write), so the result is indistinguishable from a copy; gradients written into
    /// `x.grad` use it to skip a full pass over memory.
    pub fn assign_shared(&mut self, src: &NDArray) -> Result<()> {
        let whole = |a: &NDArray, buf: &crate::buffer::Buffer| {
            a.layout().offset == 0 && a.layout().is_contiguous() && buf.len() == a.size()
        };
        if self.dtype == src.dtype() && self.shape() == src.shape() {
            let src_buf = src.snapshot();
            let mut guard = self.cell.buf.lock();
            // Imported memory (a NumPy array the user also sees) is written in place.
            if whole(self, &guard) && whole(src, &src_buf) && !guard.is_foreign() {
                self.cell.version.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                *guard = src_buf;
                return Ok(());
            }
        }
        self.assign_from(src)
    }

    /// Sets every element of this array (through its layout) to `value`.
    pub fn fill_scalar(&mut self, value: f64) {
        let dtype = self.dtype;
        let v = NDArray::full(&[], dtype, value);
        let _ = self.assign_from(&v); // ok: a 0-d value always broadcasts
    }

    /// `self[args] = src`: writes into the indexed region of this array's own storage.
    pub fn assign_index(&mut self, args: &[super::SliceArg], src: &NDArray) -> Result<()> {
        let mut layout = self.slice_layout(args)?;
        if super::has_repeated_positions(&self.layout) {
            // A broadcast array is materialised first: writing one row in place would also
            // change every row that shares its memory.
            *self = self.to_contiguous_copy();
            layout = self.slice_layout(args)?;
        }
        let mut region = self.with_layout(layout);
        region.assign_from(src)?;
        if !region.shares_storage(self) {
            // The region had to be materialised (never happens for basic indexing of a dense array).
            return Err(Error::Runtime("assignment: target is a broadcast view and cannot be written".into()));
        }
        Ok(())
    }
}
