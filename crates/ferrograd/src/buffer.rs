//! Typed buffers: owned `Vec`s, or memory borrowed from a foreign owner (a NumPy array, a DLPack
//! producer) that is kept alive by an opaque handle.

use std::any::Any;
use std::ptr::NonNull;

use half::f16;

use crate::dtype::{DType, DTypeElem};

/// Memory of one element type.
pub enum Mem<T> {
    Owned(Vec<T>),
    Foreign(Foreign<T>),
}

/// Memory owned by someone else; `owner` keeps it alive and is dropped with the buffer.
pub struct Foreign<T> {
    ptr: NonNull<T>,
    len: usize,
    writable: bool,
    _owner: Box<dyn Any + Send + Sync>,
}

// SAFETY: the pointed-to memory is only accessed through `&Mem` (shared reads) or `&mut Mem`
// (exclusive writes), exactly like a `Vec<T>`; the owner handle is itself `Send + Sync`.
unsafe impl<T: Send + Sync> Send for Foreign<T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync> Sync for Foreign<T> {}

impl<T> Foreign<T> {
    /// Wraps foreign memory.
    ///
    /// # Safety
    /// `ptr` must be valid and aligned for reads of `len` elements of `T` (and writes when
    /// `writable`) for as long as `owner` is alive, and nothing else may write to it meanwhile
    /// except through this buffer.
    pub unsafe fn new(ptr: NonNull<T>, len: usize, writable: bool, owner: Box<dyn Any + Send + Sync>) -> Self {
        Foreign { ptr, len, writable, _owner: owner }
    }
}

impl<T: DTypeElem> Mem<T> {
    pub fn as_slice(&self) -> &[T] {
        match self {
            Mem::Owned(v) => v,
            // SAFETY: guaranteed by the contract of `Foreign::new`.
            Mem::Foreign(f) => unsafe { std::slice::from_raw_parts(f.ptr.as_ptr(), f.len) },
        }
    }

    /// Mutable access; read-only foreign memory is first copied into an owned vector.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        if let Mem::Foreign(f) = self {
            if !f.writable {
                *self = Mem::Owned(self.as_slice().to_vec());
            }
        }
        match self {
            Mem::Owned(v) => v,
            // SAFETY: guaranteed by the contract of `Foreign::new`; `&mut self` is exclusive.
            Mem::Foreign(f) => unsafe { std::slice::from_raw_parts_mut(f.ptr.as_ptr(), f.len) },
        }
    }

    pub fn is_foreign(&self) -> bool {
        matches!(self, Mem::Foreign(_))
    }
}

impl<T: DTypeElem> Clone for Mem<T> {
    /// Cloning always yields owned memory (the copy half of copy-on-write).
    fn clone(&self) -> Self {
        Mem::Owned(self.as_slice().to_vec())
    }
}

/// A buffer of one of the supported element types.
#[derive(Clone)]
pub enum Buffer {
    F32(Mem<f32>),
    F64(Mem<f64>),
    F16(Mem<f16>),
    I32(Mem<i32>),
    I64(Mem<i64>),
    U8(Mem<u8>),
    I8(Mem<i8>),
    Bool(Mem<bool>),
}

/// Runs `$body` with `$m` bound to the buffer's typed `Mem` (by the given reference kind).
#[macro_export]
macro_rules! match_buffer {
    ($buf:expr, $m:ident => $body:expr) => {
        match $buf {
            $crate::Buffer::F32($m) => $body,
            $crate::Buffer::F64($m) => $body,
            $crate::Buffer::F16($m) => $body,
            $crate::Buffer::I32($m) => $body,
            $crate::Buffer::I64($m) => $body,
            $crate::Buffer::U8($m) => $body,
            $crate::Buffer::I8($m) => $body,
            $crate::Buffer::Bool($m) => $body,
        }
    };
}

/// Owned memory goes back to the output pool (`ferrograd_kernels::pool`), where the next output
/// of the same size picks it up instead of asking the allocator for (and zeroing) new memory.
impl Drop for Buffer {
    fn drop(&mut self) {
        match_buffer!(self, m => if let Mem::Owned(v) = m {
            ferrograd_kernels::pool::give(std::mem::take(v));
        })
    }
}

impl Buffer {
    pub fn from_vec<T: DTypeElem>(v: Vec<T>) -> Buffer {
        T::wrap(Mem::Owned(v))
    }

    pub fn dtype(&self) -> DType {
        match self {
            Buffer::F32(_) => DType::F32,
            Buffer::F64(_) => DType::F64,
            Buffer::F16(_) => DType::F16,
            Buffer::I32(_) => DType::I32,
            Buffer::I64(_) => DType::I64,
            Buffer::U8(_) => DType::U8,
            Buffer::I8(_) => DType::I8,
            Buffer::Bool(_) => DType::Bool,
        }
    }

    pub fn len(&self) -> usize {
        match_buffer!(self, m => m.as_slice().len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the memory is imported (NumPy, DLPack): writes must land in it, not in a copy.
    pub fn is_foreign(&self) -> bool {
        match_buffer!(self, m => m.is_foreign())
    }

    /// The typed slice; `None` if `T` is not this buffer's element type.
    pub fn slice<T: DTypeElem>(&self) -> Option<&[T]> {
        T::mem(self).map(Mem::as_slice)
    }

    pub fn slice_mut<T: DTypeElem>(&mut self) -> Option<&mut [T]> {
        T::mem_mut(self).map(Mem::as_mut_slice)
    }

    /// The typed slice, or a DType error naming the expected and the actual element type.
    pub fn typed<T: DTypeElem>(&self) -> crate::Result<&[T]> {
        let actual = self.dtype();
        match T::mem(self) {
            Some(m) => Ok(m.as_slice()),
            None => crate::dtype_err!("buffer holds {actual}, but {} was expected", T::DTYPE),
        }
    }

    /// The typed mutable slice, or a DType error naming the expected and the actual element type.
    pub fn typed_mut<T: DTypeElem>(&mut self) -> crate::Result<&mut [T]> {
        let actual = self.dtype();
        match T::mem_mut(self) {
            Some(m) => Ok(m.as_mut_slice()),
            None => crate::dtype_err!("buffer holds {actual}, but {} was expected", T::DTYPE),
        }
    }

    /// Address of the first element (for zero-copy export and aliasing checks).
    pub fn data_ptr(&self) -> *const u8 {
        match_buffer!(self, m => m.as_slice().as_ptr().cast::<u8>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    #[test]
    fn typed_access_with_the_wrong_element_type_is_a_dtype_error() {
        let mut buf = Buffer::from_vec(vec![1.0f32, 2.0]);
        assert_eq!(buf.typed::<f32>().ok(), Some(&[1.0f32, 2.0][..]));
        match buf.typed::<f64>() {
            Err(Error::DType(msg)) => {
                assert!(msg.contains("float32") && msg.contains("float64"), "{msg}");
            }
            other => panic!("expected a DType error, got {:?}", other.map(<[f64]>::len)),
        }
        assert!(matches!(buf.typed_mut::<i32>(), Err(Error::DType(_))));
        assert!(buf.typed_mut::<f32>().is_ok());
    }
}
