//! Decoding MXNet's NDArray records: every read is bounded by the bytes that remain, so a corrupt
//! length field is an error at its offset, never a huge allocation.

use std::borrow::Cow;
use std::fmt::Display;
use std::io::{BufReader, Read};

use super::codec::{self, CodeType, LeBytes};
use super::Storage;
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

/// Where the bytes come from: memory, or a file read as it is decoded (so a large file's bytes
/// are not held twice).
enum Src<'a> {
    Bytes(&'a [u8]),
    File(BufReader<std::fs::File>),
}

/// Bytes per read when decoding elements from a file: large enough to amortise the call, small
/// enough to stay in cache.
const CHUNK: usize = 1 << 18;

/// A cursor over the bytes of a file or buffer, named in its errors.
pub(crate) struct Reader<'a> {
    src: Src<'a>,
    len: usize,
    pos: usize,
    source: &'a str,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8], source: &'a str) -> Self {
        Reader { src: Src::Bytes(bytes), len: bytes.len(), pos: 0, source }
    }

    /// Reads `file`, of `len` bytes.
    pub(crate) fn from_file(file: std::fs::File, len: usize, source: &'a str) -> Self {
        Reader { src: Src::File(BufReader::with_capacity(CHUNK, file)), len, pos: 0, source }
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn remaining(&self) -> usize {
        self.len - self.pos
    }

    /// An error for malformed content at byte offset `at`.
    pub(crate) fn corrupt(&self, at: usize, what: impl Display) -> Error {
        Error::Runtime(format!("nd.load: {} is truncated or corrupt at byte offset {at}: {what}", self.source))
    }

    /// Checks that `n` more bytes exist (`what` names them in the error) and claims them.
    fn claim(&mut self, n: usize, what: &str) -> Result<usize> {
        if n > self.remaining() {
            return Err(self.corrupt(self.pos, format!("{what} needs {n} bytes, {} remain", self.remaining())));
        }
        let at = self.pos;
        self.pos += n;
        Ok(at)
    }

    /// Fills `buf` with the bytes at offset `at` (already claimed).
    fn fill(&mut self, at: usize, buf: &mut [u8]) -> Result<()> {
        match &mut self.src {
            Src::Bytes(b) => buf.copy_from_slice(&b[at..at + buf.len()]),
            Src::File(f) => f.read_exact(buf).map_err(|e| {
                Error::Runtime(format!("nd.load: cannot read {} at byte offset {at}: {e}", self.source))
            })?,
        }
        Ok(())
    }

    /// The next `n` bytes.
    pub(crate) fn take(&mut self, n: usize, what: &str) -> Result<Cow<'a, [u8]>> {
        let at = self.claim(n, what)?;
        match &self.src {
            Src::Bytes(b) => Ok(Cow::Borrowed(&b[at..at + n])),
            Src::File(_) => {
                let mut v = vec![0u8; n]; // bounded by the file's length (claim)
                self.fill(at, &mut v)?;
                Ok(Cow::Owned(v))
            }
        }
    }

    /// Passes over the next `n` bytes.
    pub(crate) fn skip(&mut self, n: usize, what: &str) -> Result<()> {
        let at = self.claim(n, what)?;
        if let Src::File(f) = &mut self.src {
            let copied = std::io::copy(&mut f.by_ref().take(n as u64), &mut std::io::sink());
            if !matches!(copied, Ok(c) if c == n as u64) {
                return Err(Error::Runtime(format!("nd.load: cannot read {} at byte offset {at}", self.source)));
            }
        }
        Ok(())
    }

    /// The next `n` elements of `T`, decoded as they are read.
    pub(crate) fn elems<T: LeBytes>(&mut self, n: usize, what: &str) -> Result<Vec<T>> {
        let nbytes = n.checked_mul(T::WIDTH).ok_or_else(|| self.corrupt(self.pos, format!("{what} is too large")))?;
        let at = self.claim(nbytes, what)?;
        if let Src::Bytes(b) = &self.src {
            return Ok(codec::decode(&b[at..at + nbytes]));
        }
        let mut out = Vec::with_capacity(n);
        let mut buf = vec![0u8; CHUNK.min(nbytes)];
        let per_chunk = buf.len() / T::WIDTH.max(1) * T::WIDTH;
        let mut done = 0;
        while done < nbytes {
            let k = per_chunk.min(nbytes - done);
            self.fill(at + done, &mut buf[..k])?;
            out.extend(buf[..k].chunks_exact(T::WIDTH).map(T::read_le));
            done += k;
        }
        Ok(out)
    }

    pub(crate) fn u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::read_le(&self.take(4, what)?))
    }

    pub(crate) fn i32(&mut self, what: &str) -> Result<i32> {
        Ok(i32::read_le(&self.take(4, what)?))
    }

    pub(crate) fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::read_le(&self.take(8, what)?))
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
    /// A sparse record's shape, stored values and index arrays (widened to int64), checked
    /// once the array's name is known.
    Sparse {
        shape: Vec<usize>,
        data: NDArray,
        aux: Vec<Vec<i64>>,
    },
    /// An element type ferrograd lacks (its MXNet name); its bytes were skipped.
    Unsupported(&'static str),
}

/// One decoded record, with where it starts and how its shape was written.
pub(crate) struct Record {
    pub offset: usize,
    pub version: Version,
    /// How the file stored the array.
    pub storage: Storage,
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

/// Byte length of an `n`-element block of `width`-byte elements of array `index`.
fn block_len(r: &Reader<'_>, at: usize, n: usize, width: usize, index: usize) -> Result<usize> {
    n.checked_mul(width).ok_or_else(|| r.corrupt(at, format!("array #{index} is too large")))
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
    let (storage, n_aux) = match stype {
        0 => (Storage::Dense, 0),
        1 => (Storage::RowSparse, 1), // row indices
        2 => (Storage::Csr, 2),       // row pointers, column indices
        s => return Err(r.corrupt(stype_at, format!("unknown storage type {s} for array #{index}"))),
    };
    if n_aux > 0 {
        r.shape(version, "the storage shape")?;
    }
    let shape_at = r.pos();
    let Some(shape) = r.shape(version, &format!("the shape of array #{index}"))? else {
        return Ok(Record { offset, version, storage, body: Body::None });
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
    let what = format!("the data of array #{index}");
    let dtype = match ty {
        CodeType::Known(d) => d,
        CodeType::Unsupported(name, _) => {
            let data_len = block_len(r, shape_at, n, width, index)?;
            r.skip(data_len, &what)?;
            for a in &aux {
                r.skip(block_len(r, shape_at, a.len, a.width, index)?, &what)?;
            }
            return Ok(Record { offset, version, storage, body: Body::Unsupported(name) });
        }
    };
    if n_aux == 0 {
        let buf = with_dtype!(dtype, T => Buffer::from_vec(r.elems::<T>(n, &what)?));
        let array = NDArray::from_buffer(buf, &shape)?;
        return Ok(Record { offset, version, storage, body: Body::Array(array) });
    }
    let data_shape = match storage {
        Storage::RowSparse => [&[aux[0].len][..], shape.get(1..).unwrap_or_default()].concat(),
        _ => vec![n],
    };
    let buf = with_dtype!(dtype, T => Buffer::from_vec(r.elems::<T>(n, &what)?));
    let data = NDArray::from_buffer(buf, &data_shape)?;
    let mut index = Vec::with_capacity(n_aux);
    for a in &aux {
        index.push(if a.width == 4 {
            r.elems::<i32>(a.len, &what)?.into_iter().map(i64::from).collect()
        } else {
            r.elems::<i64>(a.len, &what)?
        });
    }
    Ok(Record { offset, version, storage, body: Body::Sparse { shape, data, aux: index } })
}
