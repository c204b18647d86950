//! Zero-copy interop with NumPy, the buffer protocol (`interop/buffer.rs`) and DLPack
//! (`interop/dlpack.rs`). All `unsafe` for sharing memory across the boundary lives in this module
//! and its two submodules.
//!
//! * **Exports** (`x.to_numpy()`, `np.asarray(x)`, `memoryview(x)`, `x.__dlpack__()`) are
//!   read-only views of a *snapshot*: their owner holds a clone of the array's `Arc<Buffer>`, so a
//!   later in-place write to `x` copies the buffer first (copy-on-write) and the exported memory is
//!   never changed by ferrograd. O(1): no data is copied.
//! * **Imports** (`nd.from_numpy(a)`, `nd.from_dlpack(t)`) wrap the source's memory as
//!   `Mem::Foreign`, whose owner keeps the source alive (a reference to the NumPy array, or the
//!   DLPack producer's deleter). Writes through either side are seen by the other while the buffer
//!   is unshared; a read-only source is copied on ferrograd's first write. Strided sources are
//!   shared with their strides; only memory that cannot be described in whole elements
//!   (misaligned, byte-swapped, strides not a multiple of the item size, overlapping writable
//!   views, bool bytes other than 0/1) is copied.
//!
//! Shared memory has the usual caveat (as with `torch.from_numpy`): the source can change an
//! imported buffer at any time, including arrays and exports that share it; snapshots only
//! protect against writes made by ferrograd. Writing from another thread while a ferrograd op
//! reads the same memory is a data race.

use std::any::Any;
use std::ffi::{c_int, c_void};
use std::ptr::{self, NonNull};
use std::sync::Arc;

use ferrograd::buffer::{Foreign, Mem};
use ferrograd::{with_dtype, Buffer, DType, DTypeElem, Error, NDArray};
use ferrograd_kernels::layout::{Dims, Strides};
use ferrograd_kernels::Layout;
use numpy::npyffi::{self, npy_intp, NpyTypes, PY_ARRAY_API};
use numpy::{Element as NpElement, PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use smallvec::SmallVec;

use crate::convert;
use crate::errors::{enter_with_gil, to_py, IntoPyResult};
use crate::ndarray::PyNDArray;

#[cfg(any(not(Py_LIMITED_API), Py_3_11))]
mod buffer;
mod dlpack;

#[cfg(any(not(Py_LIMITED_API), Py_3_11))]
pub use buffer::{get_buffer, release_buffer};
pub use dlpack::{dlpack_device, to_dlpack};

// ---------------------------------------------------------------------------------------------
// Foreign memory → NDArray
// ---------------------------------------------------------------------------------------------

/// A foreign strided view in whole elements: the lowest address it touches, the number of
/// elements from there to the highest, and the layout relative to that base.
struct Span {
    base: *const u8,
    len: usize,
    layout: Layout,
}

/// Describes `data` + byte strides in elements; `None` when that is impossible (misaligned data,
/// a stride that is not a multiple of the item size, arithmetic overflow). `shape` must be
/// non-empty in elements (numel > 0).
fn span_of(data: *const u8, dt: DType, shape: &[usize], byte_strides: &[isize]) -> Option<Span> {
    let item = dt.size() as isize;
    // Alignment of every supported type divides its size, so this is at least as strict.
    if data.is_null() || !(data as usize).is_multiple_of(dt.size()) {
        return None;
    }
    let (mut lo, mut hi) = (0isize, 0isize);
    let mut strides = Strides::new();
    for (&n, &s) in shape.iter().zip(byte_strides) {
        if n <= 1 {
            strides.push(0);
            continue;
        }
        if s % item != 0 {
            return None;
        }
        let e = s / item;
        let reach = e.checked_mul(n as isize - 1)?;
        if reach < 0 {
            lo = lo.checked_add(reach)?;
        } else {
            hi = hi.checked_add(reach)?;
        }
        strides.push(e);
    }
    let len = usize::try_from(hi.checked_sub(lo)?.checked_add(1)?).ok()?;
    len.checked_mul(dt.size())?;
    Some(Span {
        base: data.wrapping_offset(lo * item),
        len,
        layout: Layout { shape: Dims::from_slice(shape), strides, offset: lo.unsigned_abs() },
    })
}

/// True unless the layout provably maps distinct indices to distinct elements (sufficient test:
/// axes sorted by stride each step over everything the smaller axes reach).
fn may_overlap(l: &Layout) -> bool {
    let mut axes: SmallVec<[(usize, usize); 6]> =
        l.shape.iter().zip(&l.strides).filter(|(&n, _)| n > 1).map(|(&n, &s)| (s.unsigned_abs(), n)).collect();
    axes.sort_unstable();
    let mut extent = 1usize;
    for (s, n) in axes {
        if s < extent {
            return true;
        }
        extent = extent.saturating_add(s.saturating_mul(n - 1));
    }
    false
}

/// True when every byte of a bool span is 0 or 1 (anything else is not a valid Rust `bool`).
///
/// # Safety
/// `span` must describe readable memory.
unsafe fn bools_valid(span: &Span) -> bool {
    // SAFETY: guaranteed by the caller; `u8` has no invalid values and alignment 1.
    let bytes = unsafe { std::slice::from_raw_parts(span.base, span.len) };
    bytes.iter().all(|&b| b <= 1)
}

/// Whether a foreign view can be shared as it is.
///
/// # Safety
/// `span` must describe readable memory.
unsafe fn shareable(span: &Span, dt: DType, writable: bool) -> bool {
    // A writable overlapping view would make one ferrograd write land in several elements.
    // SAFETY: forwarded from the caller.
    (!writable || !may_overlap(&span.layout)) && (dt != DType::Bool || unsafe { bools_valid(span) })
}

/// Wraps foreign memory as an NDArray.
///
/// # Safety
/// `span` must describe memory that is valid (and aligned) for reads of `span.len` elements of
/// `dt` — and for writes when `writable` — for as long as `owner` is alive.
unsafe fn wrap_span(
    dt: DType,
    span: Span,
    writable: bool,
    owner: Box<dyn Any + Send + Sync>,
) -> Result<NDArray, Error> {
    let buf = with_dtype!(dt, T => {
        let ptr = NonNull::new(span.base as *mut T)
            .ok_or_else(|| Error::Runtime("interop: null data pointer".into()))?;
        // SAFETY: forwarded from the caller's contract (validity, alignment, lifetime via owner).
        <T as DTypeElem>::wrap(Mem::Foreign(unsafe { Foreign::new(ptr, span.len, writable, owner) }))
    });
    NDArray::from_shared(Arc::new(buf), span.layout)
}

/// Reads a strided foreign view into a new contiguous buffer (the fallback when it cannot be
/// shared). Bool bytes are normalised (non-zero is true).
///
/// # Safety
/// Every element `data + Σ i_d·byte_strides[d]` must be readable (alignment not required).
unsafe fn gather(data: *const u8, dt: DType, shape: &[usize], byte_strides: &[isize]) -> Buffer {
    /// Visits element addresses in row-major order.
    fn walk<T>(data: *const u8, shape: &[usize], strides: &[isize], read: impl Fn(*const u8) -> T) -> Vec<T> {
        let n: usize = shape.iter().product();
        let mut out = Vec::with_capacity(n);
        let mut idx: SmallVec<[usize; 6]> = SmallVec::from_elem(0, shape.len());
        let mut p = data;
        for _ in 0..n {
            out.push(read(p));
            for d in (0..shape.len()).rev() {
                idx[d] += 1;
                p = p.wrapping_offset(strides[d]);
                if idx[d] < shape[d] {
                    break;
                }
                p = p.wrapping_offset(-strides[d] * shape[d] as isize);
                idx[d] = 0;
            }
        }
        out
    }
    if dt == DType::Bool {
        // SAFETY: each visited address is a readable element (caller's contract).
        return Buffer::from_vec(walk(data, shape, byte_strides, |p| unsafe { *p } != 0));
    }
    with_dtype!(dt, T => {
        // SAFETY: as above; `read_unaligned` tolerates any alignment, and every bit pattern is a
        // valid value of the numeric types that reach this arm (bool returned above).
        Buffer::from_vec(walk(data, shape, byte_strides, |p| unsafe { p.cast::<T>().read_unaligned() }))
    })
}

// ---------------------------------------------------------------------------------------------
// nd.from_numpy
// ---------------------------------------------------------------------------------------------

fn dtype_of_descr(kind: u8, size: usize) -> Option<DType> {
    Some(match (kind, size) {
        (b'f', 4) => DType::F32,
        (b'f', 8) => DType::F64,
        (b'f', 2) => DType::F16,
        (b'i', 4) => DType::I32,
        (b'i', 8) => DType::I64,
        (b'u', 1) => DType::U8,
        (b'i', 1) => DType::I8,
        (b'b', 1) => DType::Bool,
        _ => return None,
    })
}

const SUPPORTED: &str = "float32, float64, float16, int32, int64, int8, uint8, bool";

/// `nd.from_numpy(ndarray, zero_copy=True)`: an NDArray sharing the NumPy array's memory.
#[pyfunction]
#[pyo3(signature = (ndarray, zero_copy=true))]
fn _from_numpy(ndarray: &Bound<'_, PyAny>, zero_copy: bool) -> PyResult<PyNDArray> {
    enter_with_gil(ndarray.py(), || from_numpy(ndarray, zero_copy))
}

fn from_numpy(ndarray: &Bound<'_, PyAny>, zero_copy: bool) -> PyResult<PyNDArray> {
    let py = ndarray.py();
    let Ok(arr) = ndarray.cast::<PyUntypedArray>() else {
        return Err(PyTypeError::new_err(format!(
            "from_numpy: expected a numpy.ndarray, got {}",
            ndarray.get_type().name()?
        )));
    };
    let descr = arr.dtype();
    let dt = dtype_of_descr(descr.kind(), descr.itemsize()).ok_or_else(|| {
        let name = descr.str().map(|s| s.to_string()).unwrap_or_else(|_| "?".into());
        to_py(py, Error::DType(format!("from_numpy: dtype {name} is not supported (supported: {SUPPORTED})")))
    })?;
    if zero_copy {
        if let Some(x) = share_numpy(arr, dt)? {
            return Ok(PyNDArray::new(x));
        }
    }
    // Not shareable (or zero_copy=False): a fresh copy made by NumPy (native byte order, aligned,
    // C order; bool bytes normalised to 0/1), which the result then owns alone.
    let fresh = if dt == DType::Bool {
        ndarray.call_method1("view", ("uint8",))?.call_method1("__ne__", (0,))?
    } else {
        let kw = PyDict::new(py);
        kw.set_item("dtype", dt.name())?;
        kw.set_item("order", "C")?;
        convert::numpy(py)?.call_method("array", (ndarray,), Some(&kw))?
    };
    let x = share_numpy(fresh.cast::<PyUntypedArray>()?, dt)?
        .ok_or_else(|| to_py(py, Error::Runtime("from_numpy: internal: a fresh NumPy copy is not shareable".into())))?;
    Ok(PyNDArray::new(x))
}

/// An NDArray over the memory of `arr` (of dtype `dt`), or `None` when it cannot be shared.
fn share_numpy(arr: &Bound<'_, PyUntypedArray>, dt: DType) -> PyResult<Option<NDArray>> {
    let (py, shape) = (arr.py(), arr.shape());
    if shape.iter().product::<usize>() == 0 {
        let empty = with_dtype!(dt, T => Buffer::from_vec(Vec::<T>::new()));
        return NDArray::from_buffer(empty, shape).py_err(py).map(Some);
    }
    if arr.dtype().is_native_byteorder() == Some(false) {
        return Ok(None);
    }
    let raw = arr.as_array_ptr();
    // SAFETY: `raw` is the live PyArrayObject behind `arr` (we hold a reference); reading its
    // fields is what NumPy's own accessor macros do.
    let (data, flags) = unsafe {
        let f = npyffi::_PyArray_GET_ITEM_DATA(raw);
        ((*f).data as *const u8, (*f).flags)
    };
    let writable = flags & npyffi::NPY_ARRAY_WRITEABLE != 0;
    let Some(span) = span_of(data, dt, shape, arr.strides()) else { return Ok(None) };
    // SAFETY: NumPy guarantees every element the array addresses lies in its allocation, and
    // `span` covers exactly the lowest to the highest of them.
    if !unsafe { shareable(&span, dt, writable) } {
        return Ok(None);
    }
    let owner: Box<dyn Any + Send + Sync> = Box::new(arr.clone().into_any().unbind());
    // SAFETY: the memory stays allocated while `owner` holds a reference to the array (NumPy
    // refuses to resize an array that is referenced); it is writable when the array's WRITEABLE
    // flag says so; alignment was checked by `span_of`.
    unsafe { wrap_span(dt, span, writable, owner) }.py_err(py).map(Some)
}

// ---------------------------------------------------------------------------------------------
// Export to NumPy: x.to_numpy(), np.asarray(x)
// ---------------------------------------------------------------------------------------------

/// The base object of exported NumPy arrays: keeps the snapshot buffer alive.
#[pyclass(frozen, name = "_Snapshot", module = "ferrograd._ferrograd")]
pub struct SnapshotOwner {
    _buf: Arc<Buffer>,
}

/// Address of element `[0, ..., 0]` of `x`'s layout in `buf` (for an empty array, any valid
/// pointer: nothing is read).
fn first_element(buf: &Buffer, x: &NDArray) -> *const u8 {
    buf.data_ptr().wrapping_add(x.layout().offset * x.dtype().size())
}

/// A read-only NumPy view of a snapshot of `x` (zero-copy, strided like `x`).
pub fn to_numpy<'py>(py: Python<'py>, x: &NDArray) -> PyResult<Bound<'py, PyAny>> {
    let buf = x.snapshot();
    let (l, item) = (x.layout(), x.dtype().size() as isize);
    let mut dims: SmallVec<[npy_intp; 6]> = l.shape.iter().map(|&d| d as npy_intp).collect();
    let mut strides: SmallVec<[npy_intp; 6]> = l.strides.iter().map(|&s| s * item).collect();
    let data = first_element(&buf, x) as *mut c_void;
    let descr = with_dtype!(x.dtype(), T => <T as NpElement>::get_dtype(py)).into_dtype_ptr();
    let owner = Bound::new(py, SnapshotOwner { _buf: buf })?;
    // SAFETY: `dims`/`strides` hold `ndim` entries and are only read during the call; `data` and
    // the strides address elements inside the snapshot buffer (the layout fits it, checked when
    // the view was made), which lives as long as the base object `owner`. Flags 0 makes the array
    // read-only, so NumPy never writes the shared memory. NewFromDescr steals `descr`;
    // SetBaseObject steals `owner`, also on failure.
    unsafe {
        let ty = npyffi::get_type_object(py, NpyTypes::PyArray_Type);
        let nd = dims.len() as c_int;
        let arr = PY_ARRAY_API.PyArray_NewFromDescr(
            py,
            ty,
            descr,
            nd,
            dims.as_mut_ptr(),
            strides.as_mut_ptr(),
            data,
            0,
            ptr::null_mut(),
        );
        if arr.is_null() {
            return Err(PyErr::fetch(py));
        }
        let arr = Bound::from_owned_ptr(py, arr);
        if PY_ARRAY_API.PyArray_SetBaseObject(py, arr.as_ptr().cast(), owner.into_ptr()) < 0 {
            return Err(PyErr::fetch(py));
        }
        Ok(arr)
    }
}

/// `x.__array__(dtype=None, copy=None)` (NumPy 2 protocol): the read-only zero-copy view, or a
/// writable copy when `copy=True` or another dtype is requested.
pub fn array<'py>(
    py: Python<'py>,
    x: &NDArray,
    dtype: Option<&Bound<'py, PyAny>>,
    copy: Option<bool>,
) -> PyResult<Bound<'py, PyAny>> {
    let view = to_numpy(py, x)?;
    let Some(want) = dtype.filter(|d| !d.is_none()) else {
        return if copy == Some(true) { view.call_method0("copy") } else { Ok(view) };
    };
    let want = convert::numpy(py)?.getattr("dtype")?.call1((want,))?;
    if want.eq(view.getattr("dtype")?)? {
        return if copy == Some(true) { view.call_method0("copy") } else { Ok(view) };
    }
    if copy == Some(false) {
        return Err(PyValueError::new_err(format!(
            "__array__: converting {} to {} needs a copy, but copy=False",
            x.dtype(),
            want.str()?
        )));
    }
    view.call_method1("astype", (want,))
}

/// Adds the interop functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_from_numpy, m)?)?;
    m.add_function(wrap_pyfunction!(dlpack::_from_dlpack, m)?)?;
    Ok(())
}
