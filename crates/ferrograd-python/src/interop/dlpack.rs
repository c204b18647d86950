//! DLPack: `x.__dlpack__()` exports a read-only snapshot (versioned 1.0 capsule with the
//! read-only flag, or a legacy capsule), and `nd.from_dlpack(t)` imports any CPU tensor zero-copy.

use std::ffi::{c_void, CStr};
use std::ptr;
use std::sync::Arc;

use ferrograd::{with_dtype, Buffer, DType, Error, NDArray};
use ferrograd_kernels::layout::contiguous_strides;
use pyo3::exceptions::{PyBufferError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict};

use super::{first_element, gather, shareable, span_of, wrap_span, SUPPORTED};
use crate::errors::{to_py, IntoPyResult};
use crate::ndarray::PyNDArray;

const DL_CPU: i32 = 1;
const DL_INT: u8 = 0;
const DL_UINT: u8 = 1;
const DL_FLOAT: u8 = 2;
const DL_BOOL: u8 = 6;
const FLAG_READ_ONLY: u64 = 1;
const FLAG_IS_COPIED: u64 = 2;

const NAME_LEGACY: &CStr = c"dltensor";
const NAME_LEGACY_USED: &CStr = c"used_dltensor";
const NAME_VERSIONED: &CStr = c"dltensor_versioned";
const NAME_VERSIONED_USED: &CStr = c"used_dltensor_versioned";

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

#[repr(C)]
struct DLPackVersion {
    major: u32,
    minor: u32,
}

#[repr(C)]
struct DLManagedTensorVersioned {
    version: DLPackVersion,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DLTensor,
}

fn dl_dtype(dt: DType) -> DLDataType {
    let (code, bits) = match dt {
        DType::F32 => (DL_FLOAT, 32),
        DType::F64 => (DL_FLOAT, 64),
        DType::F16 => (DL_FLOAT, 16),
        DType::I32 => (DL_INT, 32),
        DType::I64 => (DL_INT, 64),
        DType::U8 => (DL_UINT, 8),
        DType::I8 => (DL_INT, 8),
        DType::Bool => (DL_BOOL, 8),
    };
    DLDataType { code, bits, lanes: 1 }
}

fn dtype_of_dl(t: DLDataType) -> Option<DType> {
    if t.lanes != 1 {
        return None;
    }
    DType::ALL.into_iter().find(|&d| {
        let e = dl_dtype(d);
        e.code == t.code && e.bits == t.bits
    })
}

/// An exported tensor and everything it points to; `managed` comes first so a pointer to it is
/// a pointer to the whole context (`repr(C)`).
#[repr(C)]
struct ExportCtx<M> {
    managed: M,
    _buf: Arc<Buffer>,
    shape: Vec<i64>,
    strides: Vec<i64>,
}

/// The deleter of exported tensors: frees the context (and with it the snapshot reference).
///
/// # Safety
/// `m` must be the `managed` field of a leaked `Box<ExportCtx<M>>`, deleted once.
unsafe extern "C" fn delete_export<M>(m: *mut M) {
    if m.is_null() {
        return;
    }
    // SAFETY: `managed` is at offset 0 of the repr(C) context, leaked by `to_dlpack`.
    let mut ctx = Some(unsafe { Box::from_raw(m as *mut ExportCtx<M>) });
    // The snapshot may own a NumPy array (an imported buffer). Consumers and capsule destructors
    // call us outside PyO3, which would defer that decref to PyO3's next entry; attaching
    // (re-entrant when the GIL is held) releases it now.
    let _ = Python::try_attach(|_| drop(ctx.take()));
    drop(ctx);
}

/// The deleter of our legacy exports, non-generic so that its address identifies them: a legacy
/// capsule has no read-only flag, and this is how `from_dlpack` recognises a snapshot of ours.
unsafe extern "C" fn delete_export_legacy(m: *mut DLManagedTensor) {
    // SAFETY: same contract as `delete_export`.
    unsafe { delete_export(m) }
}

/// Destructor of an exported capsule that nobody consumed: runs the tensor's deleter.
unsafe extern "C" fn capsule_destructor_legacy(cap: *mut ffi::PyObject) {
    // SAFETY: CPython calls this with the capsule; a consumer renames it, so a valid name means
    // it was never consumed and the pointer is still our DLManagedTensor. IsValid sets no error.
    unsafe {
        if ffi::PyCapsule_IsValid(cap, NAME_LEGACY.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(cap, NAME_LEGACY.as_ptr()) as *mut DLManagedTensor;
            if let Some(d) = (*m).deleter {
                d(m);
            }
        }
    }
}

/// As above, for versioned capsules.
unsafe extern "C" fn capsule_destructor_versioned(cap: *mut ffi::PyObject) {
    // SAFETY: as in `capsule_destructor_legacy`.
    unsafe {
        if ffi::PyCapsule_IsValid(cap, NAME_VERSIONED.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(cap, NAME_VERSIONED.as_ptr()) as *mut DLManagedTensorVersioned;
            if let Some(d) = (*m).deleter {
                d(m);
            }
        }
    }
}

/// Wraps a leaked tensor in a capsule, deleting it if the capsule cannot be made.
///
/// # Safety
/// `m` must come from `Box::into_raw` of an `ExportCtx` whose deleter is `delete`.
unsafe fn make_capsule<'py, M>(
    py: Python<'py>,
    m: *mut M,
    name: &'static CStr,
    destructor: unsafe extern "C" fn(*mut ffi::PyObject),
    delete: unsafe extern "C" fn(*mut M),
) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: `name` is static (capsules keep the pointer); on failure nothing owns `m` yet.
    unsafe {
        let cap = ffi::PyCapsule_New(m as *mut c_void, name.as_ptr(), Some(destructor));
        if cap.is_null() {
            delete(m);
            return Err(PyErr::fetch(py));
        }
        Ok(Bound::from_owned_ptr(py, cap))
    }
}

/// `x.__dlpack__(stream=None, *, max_version=None, dl_device=None, copy=None)`.
pub fn to_dlpack<'py>(
    py: Python<'py>,
    x: &NDArray,
    stream: Option<&Bound<'py, PyAny>>,
    max_version: Option<(u32, u32)>,
    dl_device: Option<(i32, i32)>,
    copy: Option<bool>,
) -> PyResult<Bound<'py, PyAny>> {
    if stream.is_some_and(|s| !s.is_none()) {
        return Err(PyBufferError::new_err("__dlpack__: ferrograd arrays live on the CPU; stream must be None"));
    }
    if let Some(d) = dl_device.filter(|&d| d != (DL_CPU, 0)) {
        return Err(PyBufferError::new_err(format!("__dlpack__: cannot export to device {d:?}; only (1, 0) (CPU)")));
    }
    let copied = copy == Some(true);
    let owned = if copied {
        let x = x.clone();
        crate::errors::enter(py, crate::errors::is_heavy(x.size()), move || Ok(x.copy()))?
    } else {
        x.clone()
    };
    // The consumer may write the memory (PyTorch ignores the read-only flag): a zero-copy export
    // shares the array's storage but never a tensor saved for backward (see `export_buffer`).
    let buf = if copied { owned.snapshot() } else { owned.export_buffer() };
    let l = owned.layout();
    let data = first_element(&buf, &owned) as *mut c_void;
    let tensor = DLTensor {
        data,
        device: DLDevice { device_type: DL_CPU, device_id: 0 },
        ndim: l.ndim() as i32,
        dtype: dl_dtype(owned.dtype()),
        shape: ptr::null_mut(),
        strides: ptr::null_mut(),
        byte_offset: 0,
    };
    let shape: Vec<i64> = l.shape.iter().map(|&d| d as i64).collect();
    let strides: Vec<i64> = l.strides.iter().map(|&s| s as i64).collect();
    if max_version.is_some_and(|(major, _)| major >= 1) {
        let flags = FLAG_READ_ONLY | if copied { FLAG_IS_COPIED } else { 0 };
        let managed = DLManagedTensorVersioned {
            version: DLPackVersion { major: 1, minor: 0 },
            manager_ctx: ptr::null_mut(),
            deleter: Some(delete_export::<DLManagedTensorVersioned>),
            flags,
            dl_tensor: tensor,
        };
        let raw = Box::into_raw(Box::new(ExportCtx { managed, _buf: buf, shape, strides }));
        // SAFETY: `raw` was just leaked and is exclusively ours; the Vecs' heap storage never
        // moves, so the pointers into it stay valid until the deleter frees the context. `m` is
        // derived from `raw` (offset 0, repr(C)), as `delete_export` expects.
        unsafe {
            let ctx = &mut *raw;
            ctx.managed.manager_ctx = raw as *mut c_void;
            ctx.managed.dl_tensor.shape = ctx.shape.as_mut_ptr();
            ctx.managed.dl_tensor.strides = ctx.strides.as_mut_ptr();
            let m = raw.cast::<DLManagedTensorVersioned>();
            make_capsule(py, m, NAME_VERSIONED, capsule_destructor_versioned, delete_export::<DLManagedTensorVersioned>)
        }
    } else {
        let managed =
            DLManagedTensor { dl_tensor: tensor, manager_ctx: ptr::null_mut(), deleter: Some(delete_export_legacy) };
        let raw = Box::into_raw(Box::new(ExportCtx { managed, _buf: buf, shape, strides }));
        // SAFETY: as above.
        unsafe {
            let ctx = &mut *raw;
            ctx.managed.manager_ctx = raw as *mut c_void;
            ctx.managed.dl_tensor.shape = ctx.shape.as_mut_ptr();
            ctx.managed.dl_tensor.strides = ctx.strides.as_mut_ptr();
            let m = raw.cast::<DLManagedTensor>();
            make_capsule(py, m, NAME_LEGACY, capsule_destructor_legacy, delete_export_legacy)
        }
    }
}

/// `x.__dlpack_device__()`: (kDLCPU, 0).
pub fn dlpack_device() -> (i32, i32) {
    (DL_CPU, 0)
}

/// A consumed DLPack tensor; dropping it calls the producer's deleter (DLPack requires deleters
/// to be callable from any thread).
enum Managed {
    Legacy(*mut DLManagedTensor),
    Versioned(*mut DLManagedTensorVersioned),
}

struct DlOwner(Managed);

// SAFETY: the pointer is used only once, in `drop`, to call the producer's deleter, which the
// DLPack contract allows from any thread; it is never dereferenced otherwise.
unsafe impl Send for DlOwner {}
// SAFETY: `&DlOwner` gives no access to the pointer.
unsafe impl Sync for DlOwner {}

impl Drop for DlOwner {
    fn drop(&mut self) {
        // SAFETY: the tensor was consumed from its capsule (renamed), so this is its only owner
        // and the deleter runs exactly once.
        unsafe {
            match self.0 {
                Managed::Legacy(m) => {
                    if let Some(d) = (*m).deleter {
                        d(m)
                    }
                }
                Managed::Versioned(m) => {
                    if let Some(d) = (*m).deleter {
                        d(m)
                    }
                }
            }
        }
    }
}

fn dl_err(py: Python<'_>, msg: String) -> PyErr {
    to_py(py, Error::Value(format!("from_dlpack: {msg}")))
}

/// Imports a DLPack capsule (consuming it).
fn import_capsule(py: Python<'_>, cap: &Bound<'_, PyAny>) -> PyResult<NDArray> {
    let p = cap.as_ptr();
    // SAFETY: `p` is a capsule (checked by the caller); GetName returns its static name or null.
    let name = unsafe { ffi::PyCapsule_GetName(p) };
    if name.is_null() {
        return Err(dl_err(py, "the capsule has no name; expected a 'dltensor' capsule".into()));
    }
    // SAFETY: capsule names are NUL-terminated strings owned by the producer.
    let name = unsafe { CStr::from_ptr(name) };
    let versioned = match name.to_bytes() {
        b"dltensor_versioned" => true,
        b"dltensor" => false,
        n if n.starts_with(b"used_") => {
            return Err(dl_err(py, "this DLPack capsule was already consumed (a capsule can be imported once)".into()))
        }
        _ => return Err(dl_err(py, format!("expected a 'dltensor' capsule, got '{}'", name.to_string_lossy()))),
    };
    // SAFETY: the name matched, so the pointer is the producer's (Versioned)DLManagedTensor.
    let raw = unsafe { ffi::PyCapsule_GetPointer(p, name.as_ptr()) };
    if raw.is_null() {
        return Err(PyErr::fetch(py));
    }
    let (tensor, read_only, managed, used) = if versioned {
        let m = raw as *mut DLManagedTensorVersioned;
        // SAFETY: `m` is valid until its deleter runs; only the version is read before checking it.
        let (major, minor) = unsafe { ((*m).version.major, (*m).version.minor) };
        if major != 1 {
            return Err(dl_err(py, format!("unsupported DLPack version {major}.{minor} (ferrograd reads 1.x)")));
        }
        // SAFETY: a 1.x versioned tensor has this layout.
        let (t, flags) = unsafe { (&(*m).dl_tensor as *const DLTensor, (*m).flags) };
        (t, flags & FLAG_READ_ONLY != 0, Managed::Versioned(m), NAME_VERSIONED_USED)
    } else {
        let m = raw as *mut DLManagedTensor;
        // SAFETY: as above. Legacy tensors carry no read-only flag: shared writable (like torch),
        // except our own snapshots, recognised by their deleter.
        let (t, deleter) = unsafe { (&(*m).dl_tensor as *const DLTensor, (*m).deleter) };
        let ours = deleter.map(|d| d as *const ()) == Some(delete_export_legacy as *const ());
        (t, ours, Managed::Legacy(m), NAME_LEGACY_USED)
    };
    // SAFETY: the tensor stays valid until the deleter runs (after the owner is dropped).
    let t = unsafe { &*tensor };
    if t.device.device_type != DL_CPU {
        return Err(dl_err(
            py,
            format!("only CPU tensors (device type 1) can be imported, got device type {}", t.device.device_type),
        ));
    }
    let dt = dtype_of_dl(t.dtype).ok_or_else(|| {
        let d = t.dtype;
        dl_err(
            py,
            format!("unsupported dtype (code {}, bits {}, lanes {}); supported: {SUPPORTED}", d.code, d.bits, d.lanes),
        )
    })?;
    let ndim = usize::try_from(t.ndim).map_err(|_| dl_err(py, format!("negative ndim {}", t.ndim)))?;
    if ndim > 0 && t.shape.is_null() {
        return Err(dl_err(py, "the tensor has no shape".into()));
    }
    // SAFETY: DLPack guarantees `shape` (and `strides` when non-null) hold `ndim` entries.
    let (shape_raw, strides_raw) = unsafe {
        let sh = if ndim == 0 { &[][..] } else { std::slice::from_raw_parts(t.shape, ndim) };
        let st =
            if t.strides.is_null() || ndim == 0 { None } else { Some(std::slice::from_raw_parts(t.strides, ndim)) };
        (sh, st)
    };
    let shape: Vec<usize> = shape_raw
        .iter()
        .map(|&d| usize::try_from(d))
        .collect::<Result<_, _>>()
        .map_err(|_| dl_err(py, format!("negative dimension in shape {shape_raw:?}")))?;
    let numel = ferrograd::ndarray::checked_numel("from_dlpack", &shape).py_err(py)?;
    let item = dt.size() as isize;
    let byte_strides: Vec<isize> = match strides_raw {
        Some(s) => s.iter().map(|&e| isize::try_from(e).ok().and_then(|e| e.checked_mul(item))).collect::<Option<_>>(),
        None => contiguous_strides(&shape).iter().map(|&e| e.checked_mul(item)).collect(),
    }
    .ok_or_else(|| dl_err(py, format!("strides {strides_raw:?} overflow")))?;
    let data = (t.data as *const u8).wrapping_add(t.byte_offset as usize);
    if numel > 0 && t.data.is_null() {
        return Err(dl_err(py, "the tensor's data pointer is null".into()));
    }
    // Consume: rename the capsule first, so its destructor no longer frees the tensor, and only
    // then create the owner that will (exactly one deleter call, whatever fails below).
    // SAFETY: `p` is a live capsule; `used` is static.
    if unsafe { ffi::PyCapsule_SetName(p, used.as_ptr()) } != 0 {
        return Err(PyErr::fetch(py));
    }
    let owner = DlOwner(managed);
    if numel == 0 {
        return NDArray::from_buffer(with_dtype!(dt, T => Buffer::from_vec(Vec::<T>::new())), &shape).py_err(py);
    }
    if let Some(span) = span_of(data, dt, &shape, &byte_strides) {
        // SAFETY: a DLPack producer guarantees the addressed elements are readable (writable
        // unless flagged read-only) until its deleter runs, and `span` covers exactly those.
        if unsafe { shareable(&span, dt, !read_only) } {
            // SAFETY: as above; the owner calls the deleter when the buffer is dropped.
            return unsafe { wrap_span(dt, span, !read_only, Box::new(owner)) }.py_err(py);
        }
    }
    // SAFETY: every element the tensor addresses is readable until `owner` drops (below).
    let buf = unsafe { gather(data, dt, &shape, &byte_strides) };
    drop(owner);
    NDArray::from_buffer(buf, &shape).py_err(py)
}

/// `nd.from_dlpack(obj)`: an object with `__dlpack__` (NumPy, PyTorch, ferrograd) or a raw
/// DLPack capsule, imported zero-copy.
#[pyfunction]
pub(super) fn _from_dlpack(obj: &Bound<'_, PyAny>) -> PyResult<PyNDArray> {
    crate::errors::enter_with_gil(obj.py(), || from_dlpack(obj))
}

fn from_dlpack(obj: &Bound<'_, PyAny>) -> PyResult<PyNDArray> {
    let py = obj.py();
    if obj.is_instance_of::<PyCapsule>() {
        return Ok(PyNDArray::new(import_capsule(py, obj)?));
    }
    if !obj.hasattr("__dlpack__")? {
        return Err(PyTypeError::new_err(format!(
            "from_dlpack: expected an object with __dlpack__ or a DLPack capsule, got {}",
            obj.get_type().name()?
        )));
    }
    if obj.hasattr("__dlpack_device__")? {
        let (kind, id): (i64, i64) = obj.call_method0("__dlpack_device__")?.extract()?;
        if kind != DL_CPU as i64 {
            return Err(dl_err(
                py,
                format!("only CPU tensors (device type 1) can be imported, got device ({kind}, {id})"),
            ));
        }
    }
    let kw = PyDict::new(py);
    kw.set_item("max_version", (1, 0))?;
    let cap = match obj.call_method("__dlpack__", (), Some(&kw)) {
        Ok(c) => c,
        // A producer older than DLPack 1.0 does not know `max_version`.
        Err(e) if e.is_instance_of::<PyTypeError>(py) => obj.call_method0("__dlpack__")?,
        Err(e) => return Err(e),
    };
    if !cap.is_instance_of::<PyCapsule>() {
        return Err(PyTypeError::new_err("from_dlpack: __dlpack__ did not return a capsule"));
    }
    Ok(PyNDArray::new(import_capsule(py, &cap)?))
}
