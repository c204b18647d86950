//! The buffer protocol (`memoryview(x)`): read-only, strided exports of a snapshot. Compiled
//! only where PyO3 has `Py_buffer` (stable ABI from Python 3.11, or a non-abi3 build).

use crate::errors::IntoPyResult;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::ptr;
use std::sync::Arc;

use ferrograd::{Buffer, DType};
use ferrograd_kernels::Layout;
use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::prelude::*;

use super::first_element;
use crate::ndarray::PyNDArray;

/// What a `Py_buffer` points into; freed by `release_buffer`.
struct Export {
    _buf: Arc<Buffer>,
    shape: Vec<isize>,
    strides: Vec<isize>,
}

fn format(dt: DType) -> &'static CStr {
    match dt {
        DType::F32 => c"f",
        DType::F64 => c"d",
        DType::F16 => c"e",
        DType::I32 => c"i",
        DType::I64 => c"q",
        DType::U8 => c"B",
        DType::I8 => c"b",
        DType::Bool => c"?",
    }
}

fn is_f_contiguous(l: &Layout) -> bool {
    let mut expected = 1isize;
    for (&n, &s) in l.shape.iter().zip(&l.strides) {
        if n != 1 && s != expected {
            return false;
        }
        expected *= n as isize;
    }
    true
}

/// Fills `view` with a read-only export of a snapshot of `slf`.
///
/// # Safety
/// `view` must be null or point to a `Py_buffer` the caller owns (CPython's contract for
/// `bf_getbuffer`).
pub unsafe fn get_buffer(slf: &Bound<'_, PyNDArray>, view: *mut ffi::Py_buffer, flags: c_int) -> PyResult<()> {
    if view.is_null() {
        return Err(PyBufferError::new_err("NDArray.__getbuffer__: view is NULL"));
    }
    let has = |f: c_int| flags & f == f;
    if has(ffi::PyBUF_WRITABLE) {
        return Err(PyBufferError::new_err(
            "NDArray exports a read-only snapshot; use x.asnumpy() for a writable copy",
        ));
    }
    let x = slf.get().tracked().py_err(slf.py())?;
    let l = x.layout();
    let c_contig = l.is_contiguous();
    let contiguity_ok = if has(ffi::PyBUF_C_CONTIGUOUS) {
        c_contig
    } else if has(ffi::PyBUF_F_CONTIGUOUS) {
        is_f_contiguous(l)
    } else if has(ffi::PyBUF_ANY_CONTIGUOUS) {
        c_contig || is_f_contiguous(l)
    } else {
        has(ffi::PyBUF_STRIDES) || c_contig
    };
    if !contiguity_ok {
        return Err(PyBufferError::new_err(
            "NDArray is not contiguous in the requested order; request strides or copy it first",
        ));
    }
    let item = x.dtype().size() as isize;
    let buf = x.snapshot();
    let data = first_element(&buf, &x);
    let mut export = Box::new(Export {
        _buf: buf,
        shape: l.shape.iter().map(|&d| d as isize).collect(),
        strides: l.strides.iter().map(|&s| s * item).collect(),
    });
    // SAFETY: `view` is valid (checked non-null; caller's contract). The data, shape and
    // strides it points to live in `export` (heap, moved into `internal`) until
    // `release_buffer` frees it; `format` is static; `obj` gets a new reference to `slf`.
    unsafe {
        let v = &mut *view;
        v.buf = data as *mut c_void;
        v.len = x.size() as isize * item;
        v.itemsize = item;
        v.readonly = 1;
        v.ndim = l.ndim() as c_int;
        v.format = if has(ffi::PyBUF_FORMAT) { format(x.dtype()).as_ptr() as *mut c_char } else { ptr::null_mut() };
        v.shape = if has(ffi::PyBUF_ND) { export.shape.as_mut_ptr() } else { ptr::null_mut() };
        v.strides = if has(ffi::PyBUF_STRIDES) { export.strides.as_mut_ptr() } else { ptr::null_mut() };
        v.suboffsets = ptr::null_mut();
        v.internal = Box::into_raw(export) as *mut c_void;
        v.obj = slf.clone().into_any().into_ptr();
    }
    Ok(())
}

/// Frees what `get_buffer` allocated for `view`.
///
/// # Safety
/// `view` must be a buffer filled by `get_buffer`, released once (CPython guarantees both).
pub unsafe fn release_buffer(view: *mut ffi::Py_buffer) {
    // SAFETY: `internal` is the `Box<Export>` leaked by `get_buffer`, freed exactly once.
    unsafe {
        let internal = (*view).internal as *mut Export;
        if !internal.is_null() {
            drop(Box::from_raw(internal));
            (*view).internal = ptr::null_mut();
        }
    }
}
