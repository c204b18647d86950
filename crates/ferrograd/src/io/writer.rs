//! Encoding arrays as MXNet NDArray records and files.

use super::codec::{self, LeBytes};
use super::reader::{MAGIC_V2, MAGIC_V3};
use super::{sparse, Storage};
use std::io::{self, Write};

use crate::{with_dtype, NDArray};

/// The `u64` that opens every NDArray file.
pub(crate) const FILE_MAGIC: u64 = 0x112;

/// MXNet's device type for the CPU.
const CPU_DEVICE: i32 = 1;

/// Elements encoded per write: large enough to amortise the call, small enough to stay in cache
/// (a whole-file buffer would double the memory and page-fault every byte once more).
const CHUNK_ELEMS: usize = 1 << 16;

/// MXNet's type code of the index arrays ferrograd writes (int64).
const INDEX_TYPE: i32 = 6;

fn write_shape(shape: &[usize], scratch: &mut Vec<u8>) {
    (shape.len() as u32).write_le(scratch);
    for &d in shape {
        (d as i64).write_le(scratch);
    }
}

/// Starts a record in `scratch`: version magic, storage type code, the storage shape (sparse
/// records only), the shape, the device and the element type.
fn header(scratch: &mut Vec<u8>, magic: u32, stype: i32, stored: Option<&[usize]>, a: &NDArray) {
    scratch.clear();
    magic.write_le(scratch);
    stype.write_le(scratch);
    if let Some(stored) = stored {
        write_shape(stored, scratch);
    }
    write_shape(a.shape(), scratch);
    CPU_DEVICE.write_le(scratch);
    0i32.write_le(scratch); // device id
    a.dtype().mx_type_id().write_le(scratch);
}

/// Writes one record. MXNet writes V3 records (NumPy shapes) while NumPy shape semantics are on
/// and V2 records otherwise; a 0-d array has no V2 form (ndim 0 means "empty" there), so it is
/// always written as V3. `scratch` is a reusable encoding buffer. A sparse `storage` needs an
/// array of a fitting shape (checked by the caller).
pub(crate) fn record<W: Write>(
    out: &mut W,
    a: &NDArray,
    storage: Storage,
    np_shape: bool,
    scratch: &mut Vec<u8>,
) -> io::Result<()> {
    if storage != Storage::Dense {
        return sparse_record(out, a, storage, np_shape, scratch);
    }
    let magic = if np_shape || a.ndim() == 0 { MAGIC_V3 } else { MAGIC_V2 };
    header(scratch, magic, 0, None, a);
    out.write_all(scratch)?;
    let a = a.to_contiguous();
    let n = a.size();
    let mut written = Ok(());
    with_dtype!(a.dtype(), T => {
        // ok to ignore the outer result: the dtype matches by construction, so `read` cannot fail
        let _ = a.read::<T, _>(|s, l| {
            written = s[l.offset..l.offset + n].chunks(CHUNK_ELEMS).try_for_each(|chunk| {
                scratch.clear();
                codec::encode(chunk, scratch);
                out.write_all(scratch)
            });
        });
    });
    written
}

/// A sparse record: the header (storage type, storage shape, shape, device, element type, then
/// each index array's type and shape), the stored values, then the index arrays.
fn sparse_record<W: Write>(
    out: &mut W,
    a: &NDArray,
    storage: Storage,
    np_shape: bool,
    scratch: &mut Vec<u8>,
) -> io::Result<()> {
    let a = a.to_contiguous();
    let parts = with_dtype!(a.dtype(), T => {
        let mut parts = None;
        // ok to ignore the outer result: the dtype matches by construction
        let _ = a.read::<T, _>(|s, l| parts = Some(sparse::components(&s[l.offset..l.offset + a.size()], a.shape(), storage)));
        parts.map(|(values, index, stored)| {
            let mut bytes = Vec::new();
            codec::encode(&values, &mut bytes);
            (bytes, index, stored)
        })
    });
    let Some((values, index, stored_shape)) = parts else { return Ok(()) };
    let stype = if storage == Storage::Csr { 2 } else { 1 };
    header(scratch, if np_shape { MAGIC_V3 } else { MAGIC_V2 }, stype, Some(&stored_shape), &a);
    for ix in &index {
        INDEX_TYPE.write_le(scratch);
        write_shape(&[ix.len()], scratch);
    }
    scratch.extend_from_slice(&values);
    for ix in &index {
        codec::encode(ix, scratch);
    }
    out.write_all(scratch)
}

/// Writes a whole file: header, records (`storage[i]` for array `i`, dense when missing), then
/// the keys (none for a list).
pub(crate) fn file<W: Write>(
    out: &mut W,
    arrays: &[&NDArray],
    storage: &[Storage],
    keys: &[&str],
    np_shape: bool,
) -> io::Result<()> {
    let mut scratch = Vec::new();
    FILE_MAGIC.write_le(&mut scratch);
    0u64.write_le(&mut scratch); // reserved
    (arrays.len() as u64).write_le(&mut scratch);
    out.write_all(&scratch)?;
    for (i, a) in arrays.iter().enumerate() {
        record(out, a, storage.get(i).copied().unwrap_or(Storage::Dense), np_shape, &mut scratch)?;
    }
    scratch.clear();
    (keys.len() as u64).write_le(&mut scratch);
    for k in keys {
        (k.len() as u64).write_le(&mut scratch);
        scratch.extend_from_slice(k.as_bytes());
    }
    out.write_all(&scratch)
}
