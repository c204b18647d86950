//! `NDArray`: a cheap handle (an `Arc` to a storage cell, a layout, a dtype).
//!
//! # Aliasing rule (copy-on-write snapshots)
//! A [`Cell`] holds an `Arc<Buffer>`. Views of one array share the cell, so a write through a view
//! is seen by the array. A *snapshot* (a tensor saved for backward, a zero-copy export to NumPy or
//! DLPack, a lazy copy such as a transpose) clones the `Arc<Buffer>`. Every write first makes the
//! cell's buffer unique (`Arc::make_mut`): if a snapshot shares it, the buffer is copied into the
//! cell first. In-place updates therefore never corrupt saved tensors or exported arrays, and an
//! unshared buffer is written in place at no cost.
//!
//! A DLPack export hands a consumer memory it may write (PyTorch ignores the read-only flag), so
//! [`NDArray::export_buffer`] first makes the buffer unshared and marks the storage *exported*:
//! from then on tensors saved for backward are eager copies, never the exported memory.

pub(crate) mod convert;
pub mod view;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use ferrograd_kernels::element::{alloc_output, try_alloc_output, try_alloc_zeroed};
use ferrograd_kernels::layout::Dims;
use ferrograd_kernels::Layout;
use parking_lot::Mutex;

use crate::buffer::Buffer;
use crate::dtype::{DType, DTypeElem};
use crate::error::{fmt_shape, Error, Result};
use crate::with_dtype;

pub use view::SliceArg;

/// The shared storage of an array and all its views.
pub struct Cell {
    buf: Mutex<Arc<Buffer>>,
    /// The buffer (or one it was lazily copied from) was handed to a consumer that may write it.
    exported: AtomicBool,
    /// Counts writes through ferrograd (see [`NDArray::storage_version`]).
    version: AtomicU64,
}

/// Shape and dtype, everything shape/type inference needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Meta {
    pub shape: Dims,
    pub dtype: DType,
}

impl Meta {
    pub fn new(shape: &[usize], dtype: DType) -> Meta {
        Meta { shape: shape.into(), dtype }
    }
}

/// An n-dimensional array on the CPU: the storage handle ops, kernels and the executor see.
/// It knows nothing of autograd; the autograd layer pairs it with a place in the graph
/// (`autograd::Tracked`).
#[derive(Clone)]
pub struct NDArray {
    cell: Arc<Cell>,
    layout: Layout,
    dtype: DType,
}

impl std::fmt::Debug for NDArray {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NDArray({} {}, {:?})", fmt_shape(self.shape()), self.dtype, self.to_f64_vec())
    }
}

fn check_len(len: usize, shape: &[usize]) -> Result<()> {
    let n: usize = shape.iter().product();
    if n != len {
        return Err(Error::Shape(format!(
            "array: {len} elements cannot form an array of shape {} ({n} elements)",
            fmt_shape(shape)
        )));
    }
    Ok(())
}

impl NDArray {
    /// A new, untracked handle over its own storage cell.
    fn make(buf: Arc<Buffer>, layout: Layout, dtype: DType) -> NDArray {
        let cell = Cell { buf: Mutex::new(buf), exported: AtomicBool::new(false), version: AtomicU64::new(0) };
        NDArray { cell: Arc::new(cell), layout, dtype }
    }

    /// Wraps a buffer as a contiguous array of `shape`.
    pub fn from_buffer(buf: Buffer, shape: &[usize]) -> Result<NDArray> {
        check_len(buf.len(), shape)?;
        let dtype = buf.dtype();
        Ok(NDArray::make(Arc::new(buf), Layout::contiguous(shape), dtype))
    }

    pub fn from_vec<T: DTypeElem>(v: Vec<T>, shape: &[usize]) -> Result<NDArray> {
        NDArray::from_buffer(Buffer::from_vec(v), shape)
    }

    /// A 0-d array.
    pub fn scalar<T: DTypeElem>(v: T) -> NDArray {
        NDArray::make(Arc::new(Buffer::from_vec(vec![v])), Layout::contiguous(&[]), T::DTYPE)
    }

    /// An array whose contents the caller overwrites completely (op outputs).
    pub(crate) fn uninit(shape: &[usize], dtype: DType) -> NDArray {
        let n = shape.iter().product();
        let buf = with_dtype!(dtype, T => Buffer::from_vec(alloc_output::<T>(n)));
        NDArray::make(Arc::new(buf), Layout::contiguous(shape), dtype)
    }

    /// [`NDArray::uninit`] that fails cleanly instead of aborting: a shape whose element count
    /// overflows is a `Value` error, storage the allocator refuses a `Memory` error; both name
    /// `op`, the shape and (for memory) the requested bytes.
    pub fn try_uninit(op: &str, shape: &[usize], dtype: DType) -> Result<NDArray> {
        let n = checked_numel(op, shape)?;
        let buf = with_dtype!(dtype, T => Buffer::from_vec(try_alloc_output::<T>(n).ok_or_else(|| alloc_error(op, shape, dtype))?));
        Ok(NDArray::make(Arc::new(buf), Layout::contiguous(shape), dtype))
    }

    /// [`NDArray::full`] that fails cleanly instead of aborting (see [`NDArray::try_uninit`]).
    pub fn try_full(op: &str, shape: &[usize], dtype: DType, value: f64) -> Result<NDArray> {
        let n = checked_numel(op, shape)?;
        let refused = || alloc_error(op, shape, dtype);
        let buf = with_dtype!(dtype, T => {
            let v = <T as ferrograd_kernels::Element>::from_f64(value);
            if value == 0.0 {
                Buffer::from_vec(try_alloc_zeroed::<T>(n).ok_or_else(refused)?)
            } else {
                let mut out = try_alloc_output::<T>(n).ok_or_else(refused)?;
                ferrograd_kernels::par::for_each_chunk(&mut out, ferrograd_kernels::par::Cost::Light, |_, c| c.fill(v));
                Buffer::from_vec(out)
            }
        });
        Ok(NDArray::make(Arc::new(buf), Layout::contiguous(shape), dtype))
    }

    pub fn full(shape: &[usize], dtype: DType, value: f64) -> NDArray {
        let n = shape.iter().product();
        let buf = with_dtype!(dtype, T => {
            let v = <T as ferrograd_kernels::Element>::from_f64(value);
            if value == 0.0 || !ferrograd_kernels::par::is_parallel(n, ferrograd_kernels::par::Cost::Light) {
                // Zeros come from calloc (pages zeroed lazily by the OS); small fills stay serial.
                Buffer::from_vec(vec![v; n])
            } else {
                // Large fills (the implicit head gradient of ones) are split like any light kernel.
                let mut out = alloc_output::<T>(n);
                ferrograd_kernels::par::for_each_chunk(&mut out, ferrograd_kernels::par::Cost::Light, |_, c| c.fill(v));
                Buffer::from_vec(out)
            }
        });
        NDArray::make(Arc::new(buf), Layout::contiguous(shape), dtype)
    }

    pub fn zeros(shape: &[usize], dtype: DType) -> NDArray {
        NDArray::full(shape, dtype, 0.0)
    }

    pub fn ones(shape: &[usize], dtype: DType) -> NDArray {
        NDArray::full(shape, dtype, 1.0)
    }

    pub fn shape(&self) -> &[usize] {
        &self.layout.shape
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }

    pub fn meta(&self) -> Meta {
        Meta { shape: Dims::from_slice(&self.layout.shape), dtype: self.dtype }
    }

    pub fn size(&self) -> usize {
        self.layout.numel()
    }

    pub fn ndim(&self) -> usize {
        self.layout.ndim()
    }

    /// A snapshot of the current buffer: later writes to this array never change it.
    pub fn snapshot(&self) -> Arc<Buffer> {
        self.cell.buf.lock().clone()
    }

    /// Reads the elements as `(buffer slice, layout)`; `T` must be the array's element type.
    pub fn read<T: DTypeElem, R>(&self, f: impl FnOnce(&[T], &Layout) -> R) -> Result<R> {
        let buf = self.snapshot();
        let s = buf
            .slice::<T>()
            .ok_or_else(|| Error::DType(format!("read: array has dtype {}, not {}", self.dtype, T::DTYPE)))?;
        Ok(f(s, &self.layout))
    }

    /// Writes through this array's layout (copy-on-write if the buffer is shared with a
    /// snapshot). A broadcast layout (one position seen several times) is first materialised
    /// into a private contiguous buffer, since writing it in place would be ambiguous.
    pub fn write<R>(&mut self, f: impl FnOnce(&mut Buffer, &Layout) -> R) -> R {
        if has_repeated_positions(&self.layout) {
            *self = self.to_contiguous_copy();
        }
        let mut guard = self.cell.buf.lock();
        self.cell.version.fetch_add(1, Ordering::Relaxed);
        let buf = Arc::make_mut(&mut guard);
        f(buf, &self.layout)
    }

    /// Typed contiguous write access for op outputs: `f` overwrites every element of the
    /// range. (So an output whose whole buffer a snapshot still holds gets a fresh buffer rather
    /// than a copy of values about to be overwritten: an executor's gradient array handed to the
    /// user last step, for instance.)
    pub(crate) fn write_out<T: DTypeElem, R>(&mut self, f: impl FnOnce(&mut [T]) -> R) -> Result<R> {
        let (dtype, range) = (self.dtype, self.layout.contiguous_range());
        self.detach_for_overwrite();
        self.write(|buf, _| {
            let r = range.ok_or_else(|| Error::Runtime("internal: op output is not contiguous".into()))?;
            let s = buf.slice_mut::<T>().ok_or_else(|| {
                Error::DType(format!("internal: output has dtype {dtype}, kernel wrote {}", T::DTYPE))
            })?;
            Ok(f(&mut s[r]))
        })
    }

    /// Gives this storage a new buffer of the same size when its buffer is shared with a
    /// snapshot and this array covers all of it, so that a complete overwrite does not first copy
    /// the old values (what `Arc::make_mut` would do). Imported and exported memory keep their
    /// copy-on-write rules.
    fn detach_for_overwrite(&mut self) {
        let Some(range) = self.layout.contiguous_range() else { return };
        let mut guard = self.cell.buf.lock();
        if Arc::strong_count(&guard) == 1 || self.is_exported() || guard.is_foreign() {
            return;
        }
        if range.start != 0 || range.end != guard.len() || guard.dtype() != self.dtype {
            return;
        }
        let fresh = with_dtype!(self.dtype, T => Buffer::from_vec(alloc_output::<T>(range.end)));
        *guard = Arc::new(fresh);
    }

    /// Sets element `i` (row-major) of a contiguous float array, converting from `f64`.
    pub fn set_flat_f64(&mut self, i: usize, v: f64) -> Result<()> {
        let (dtype, n) = (self.dtype, self.size());
        if i >= n {
            return Err(Error::Index(format!("set_flat_f64: index {i} out of range for {n} elements")));
        }
        let range = self
            .layout
            .contiguous_range()
            .ok_or_else(|| Error::Value("set_flat_f64: the array is not contiguous".into()))?;
        self.write(|buf, _| {
            let at = range.start + i;
            match buf {
                Buffer::F32(m) => m.as_mut_slice()[at] = v as f32,
                Buffer::F64(m) => m.as_mut_slice()[at] = v,
                Buffer::F16(m) => m.as_mut_slice()[at] = half::f16::from_f64(v),
                _ => return Err(Error::DType(format!("set_flat_f64: array has dtype {dtype}, not a float"))),
            }
            Ok(())
        })
    }

    /// True when both arrays share one storage cell (writes through one are seen by the other).
    pub fn shares_storage(&self, other: &NDArray) -> bool {
        Arc::ptr_eq(&self.cell, &other.cell)
    }

    /// A view over the same cell with another layout (writes reach the original).
    pub(crate) fn with_layout(&self, layout: Layout) -> NDArray {
        NDArray { cell: self.cell.clone(), layout, dtype: self.dtype }
    }

    /// A lazy copy: a new cell sharing the current buffer (writes to either copy it first).
    pub(crate) fn lazy_copy(&self, layout: Layout) -> NDArray {
        let copy = NDArray::make(self.snapshot(), layout, self.dtype);
        // It shares the (possibly exported) buffer until either side writes.
        copy.cell.exported.store(self.is_exported(), Ordering::Relaxed);
        copy
    }

    /// True when the storage's memory was handed to a consumer that may write it.
    pub fn is_exported(&self) -> bool {
        self.cell.exported.load(Ordering::Relaxed)
    }

    /// The buffer to hand to a consumer outside ferrograd that may write it (a DLPack export):
    /// a buffer some snapshot also holds (a tensor saved for backward, a NumPy view) is first
    /// copied into this storage, so the consumer's writes reach this array and its views but
    /// never a snapshot, and tensors saved from this storage from now on are eager copies.
    pub fn export_buffer(&self) -> Arc<Buffer> {
        let mut guard = self.cell.buf.lock();
        Arc::make_mut(&mut guard);
        self.cell.exported.store(true, Ordering::Relaxed);
        guard.clone()
    }

    /// A number that changes whenever ferrograd writes this storage (through any view), or
    /// `None` when memory outside ferrograd's control may have been written: an exported buffer
    /// or imported (foreign) memory. Lets a caller tell whether an array was modified since it
    /// last looked (a gradient sent early to an allreduce).
    pub fn storage_version(&self) -> Option<u64> {
        let guard = self.cell.buf.lock();
        if self.is_exported() || guard.is_foreign() {
            return None;
        }
        Some(self.cell.version.load(Ordering::Relaxed))
    }

    /// An address identifying the storage cell (shared by views) while this handle lives.
    pub fn storage_id(&self) -> usize {
        Arc::as_ptr(&self.cell) as usize
    }

    /// Builds an array over an existing snapshot (e.g. a buffer imported zero-copy).
    pub fn from_shared(buf: Arc<Buffer>, layout: Layout) -> Result<NDArray> {
        let (lo, hi) = layout.span();
        if lo < 0 || hi as usize > buf.len().max(layout.offset) {
            return Err(Error::Shape(format!(
                "from_shared: layout {} with offset {} reaches outside a buffer of {} elements",
                fmt_shape(&layout.shape),
                layout.offset,
                buf.len()
            )));
        }
        let dtype = buf.dtype();
        Ok(NDArray::make(buf, layout, dtype))
    }
}

/// Snapshots for the autograd tape.
impl NDArray {
    /// A copy-on-write snapshot for the tape: later writes to `self` never reach it.
    pub fn saved_copy(&self) -> NDArray {
        // Exported memory can change behind ferrograd's back: save a private copy instead.
        if self.is_exported() {
            self.to_contiguous_copy()
        } else {
            self.lazy_copy(self.layout.clone())
        }
    }
}

/// True when some buffer position is reached by two different indices (a broadcast view).
fn has_repeated_positions(l: &Layout) -> bool {
    l.shape.iter().zip(&l.strides).any(|(&n, &s)| n > 1 && s == 0)
}

/// The number of elements of `shape`, checked against overflow.
/// The error for storage the allocator refused: names the op, the shape and the bytes asked for.
pub fn alloc_error(op: &str, shape: &[usize], dtype: DType) -> Error {
    let bytes = shape.iter().fold(dtype.size() as u128, |b, &d| b.saturating_mul(d as u128));
    Error::Memory(format!(
        "{op}: cannot allocate {bytes} bytes for an array of shape {} ({dtype}): out of memory",
        fmt_shape(shape)
    ))
}

pub fn checked_numel(op: &str, shape: &[usize]) -> Result<usize> {
    shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .filter(|&n| n.checked_mul(8).is_some_and(|b| b <= isize::MAX as usize))
        .ok_or_else(|| Error::Value(format!("{op}: shape {} is too large", fmt_shape(shape))))
}
