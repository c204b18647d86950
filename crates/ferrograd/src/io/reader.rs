//! Decoding MXNet's NDArray records: every read is bounded by the bytes that remain, so a corrupt
//! length field is an error at its offset, never a huge allocation.

use std::fmt::Display;

use super::codec::{self, CodeType, LeBytes};
use super::sparse;
use crate::error::{Error, Result};
use crate::{with_dtype, Buffer, NDArray};

/// Record magic numbers (the first `u32` of an array record).
pub(crate) const MAGIC_V1: u32 = 0xF993_FAC8;
pub(crate) const MAGIC_V2: u32 = 0xF993_FAC9;
pub(crate) const MAGIC_V3: u32 = 0xF993_FACA;

/// How a record lays out its shape (and whether it has a storage type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Version {
    /// No magic: the first word is the number of dimensions, each dimension a `u32`.
    Legacy(u32),
    /// `u32` ndim, `i64` dims, no storage type.
    V1,
    /// Storage type, then `u32` ndim and `i64` dims; ndim 0 is an empty ("none") array.
    V2,
    /// As V2 with NumPy shape semantics: `i32` ndim (-1 unknown), so ndim 0 is a 0-d array.
    V3,
}

impl Version {
    pub(crate) fn np_shape(self) -> bool {
        self == Version::V3
    }
}

/// A cursor over the bytes of a file or buffer, named in its errors.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    source: &'a str,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8], source: &'a str) -> Self {
        Reader { bytes, pos: 0, source }
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// An error for malformed content at byte offset `at`.
    pub(crate) fn corrupt(&self, at: usize, what: impl Display) -> Error {
        Error::Runtime(format!("nd.load: {} is truncated or corrupt at byte offset {at}: {what}", self.source))
    }

    /// The next `n` bytes (`what` names them in the error when fewer remain).
    pub(crate) fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(self.corrupt(self.pos, format!("{what} needs {n} bytes, {} remain", self.remaining())));
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub(crate) fn u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::read_le(self.take(4, what)?))
    }

    pub(crate) fn i32(&mut self, what: &str) -> Result<i32> {
        Ok(i32::read_le(self.take(4, what)?))
    }

    pub(crate) fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::read_le(self.take(8, what)?))
    }

    /// A count or length field, as `usize`, no larger than the remaining bytes allow when each
    /// item takes at least `min_item` bytes.
    pub(crate) fn count(&mut self, what: &str, min_item: usize) -> Result<usize> {
        let at = self.pos;
        let n = self.u64(what)?;
        let bound = self.remaining() / min_item.max(1);
        match usize::try_from(n) {
            Ok(n) if n <= bound => Ok(n),
            _ => Err(self.corrupt(at, format!("{what} is {n}, but only {} bytes remain", self.remaining()))),
        }
    }

    /// A shape in the record's layout; `None` is MXNet's empty ("none") array.
    fn shape(&mut self, version: Version, what: &str) -> Result<Option<Vec<usize>>> {
        let at = self.pos;
        let (ndim, dim_width) = match version {
            Version::Legacy(ndim) => (ndim as usize, 4),
            Version::V1 | Version::V2 => (self.u32(what)? as usize, 8),
            Version::V3 => match self.i32(what)? {
                -1 => return Ok(None),
                n if n < 0 => return Err(self.corrupt(at, format!("{what} has {n} dimensions"))),
                n => (n as usize, 8),
            },
        };
        if ndim == 0 && !version.np_shape() {
            return Ok(None);
        }
        let bytes = self.take(ndim.saturating_mul(dim_width), what)?;
        let mut dims = Vec::with_capacity(ndim);
        for d in bytes.chunks_exact(dim_width) {
            let v = if dim_width == 4 { i64::from(u32::read_le(d)) } else { i64::read_le(d) };
            let d = usize::try_from(v).map_err(|_| self.corrupt(at, format!("{what} has a dimension {v}")))?;
            dims.push(d);
        }
        Ok(Some(dims))
    }
}

/// What one record holds.
pub(crate) enum Body {
    /// MXNet's empty array (`NDArray()`, never allocated).
    None,
    Array(NDArray),
    /// An element type ferrograd lacks (its MXNet name); its bytes were skipped.
    Unsupported(&'static str),
}

/// One decoded record, with where it starts and how its shape was written.
pub(crate) struct Record {
    pub offset: usize,
    pub version: Version,
    pub body: Body,
}

/// A sparse record's index arrays: (type width is 4 or 8, shape).
struct Aux {
    width: usize,
    len: usize,
}

/// Number of elements of `shape`, or an error at `at` if it overflows.
fn numel(r: &Reader<'_>, at: usize, shape: &[usize]) -> Result<usize> {
    shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .ok_or_else(|| r.corrupt(at, format!("shape {shape:?} has too many elements")))
}

/// Reads the `n`-element data block of a record's element type.
fn data_bytes<'a>(r: &mut Reader<'a>, at: usize, n: usize, width: usize, index: usize) -> Result<&'a [u8]> {
    let nbytes = n.checked_mul(width).ok_or_else(|| r.corrupt(at, format!("array #{index} is too large")))?;
    r.take(nbytes, &format!("the data of array #{index}"))
}

/// Decodes one record (`index` counts records from 0, for messages).
pub(crate) fn record(r: &mut Reader<'_>, index: usize) -> Result<Record> {
    let offset = r.pos();
    let magic = r.u32(&format!("the header of array #{index}"))?;
    let version = match magic {
        MAGIC_V1 => Version::V1,
        MAGIC_V2 => Version::V2,
        MAGIC_V3 => Version::V3,
        ndim => Version::Legacy(ndim),
    };
    let stype_at = r.pos();
    let stype = match version {
        Version::V2 | Version::V3 => r.i32("the storage type")?,
        _ => 0,
    };
    let n_aux = match stype {
        0 => 0,
        1 => 1, // row_sparse: row indices
        2 => 2, // csr: row pointers, column indices
        s => return Err(r.corrupt(stype_at, format!("unknown storage type {s} for array #{index}"))),
    };
    if n_aux > 0 {
        r.shape(version, "the storage shape")?;
    }
    let shape_at = r.pos();
    let Some(shape) = r.shape(version, &format!("the shape of array #{index}"))? else {
        return Ok(Record { offset, version, body: Body::None });
    };
    r.take(8, "the device")?; // device type and id: every array loads onto the CPU
    let type_at = r.pos();
    let code = r.i32("the element type")?;
    let Some(ty) = codec::code_type(code) else {
        return Err(r.corrupt(type_at, format!("unknown element type code {code} for array #{index}")));
    };
    let mut aux = Vec::with_capacity(n_aux);
    for _ in 0..n_aux {
        let at = r.pos();
        let width = match r.i32("an index type")? {
            4 => 4,
            6 => 8,
            c => return Err(r.corrupt(at, format!("index type code {c} of sparse array #{index} is not int32/int64"))),
        };
        let s = r.shape(version, "an index shape")?.unwrap_or_default();
        aux.push(Aux { width, len: numel(r, at, &s)? });
    }
    // The element count of the data block. A sparse record's storage shape is not trusted:
    // MXNet 1.9 writes a stale first dimension for some row_sparse arrays, and reads the count
    // from the index arrays, as here.
    let n = match aux.as_slice() {
        [] => numel(r, shape_at, &shape)?,
        [rows] => rows
            .len
            .checked_mul(numel(r, shape_at, shape.get(1..).unwrap_or_default())?)
            .ok_or_else(|| r.corrupt(shape_at, format!("sparse array #{index} is too large")))?,
        [_, cols, ..] => cols.len,
    };
    let width = match ty {
        CodeType::Known(d) => d.size(),
        CodeType::Unsupported(_, w) => w,
    };
    let data = data_bytes(r, shape_at, n, width, index)?;
    let mut aux_data = Vec::with_capacity(n_aux);
    for a in &aux {
        aux_data.push((data_bytes(r, shape_at, a.len, a.width, index)?, a.width));
    }
    let dtype = match ty {
        CodeType::Known(d) => d,
        CodeType::Unsupported(name, _) => return Ok(Record { offset, version, body: Body::Unsupported(name) }),
    };
    let array = if n_aux == 0 {
        let buf = with_dtype!(dtype, T => Buffer::from_vec(codec::decode::<T>(data)));
        NDArray::from_buffer(buf, &shape)?
    } else {
        let sp = sparse::Sparse { shape: &shape, dtype, data, aux: &aux_data };
        sparse::densify(&sp).map_err(|msg| r.corrupt(offset, format!("sparse array #{index}: {msg}")))?
    };
    Ok(Record { offset, version, body: Body::Array(array) })
}
