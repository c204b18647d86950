//! Encoding arrays as MXNet NDArray records and files.

use super::codec::{self, LeBytes};
use super::reader::{MAGIC_V2, MAGIC_V3};
use super::{SparseParts, Storage, Stored};
use std::io::{self, Write};

use crate::{with_dtype, DType, NDArray};

/// The `u64` that opens every NDArray file.
pub(crate) const FILE_MAGIC: u64 = 0x112;

/// MXNet's device type for the CPU.
const CPU_DEVICE: i32 = 1;

/// Elements encoded per write: large enough to amortise the call, small enough to stay in cache
/// (a whole-file buffer would double the memory and page-fault every byte once more).
const CHUNK_ELEMS: usize = 1 << 16;

fn write_shape(shape: &[usize], scratch: &mut Vec<u8>) {
    (shape.len() as u32).write_le(scratch);
    for &d in shape {
        (d as i64).write_le(scratch);
    }
}

/// Starts a record in `scratch`: version magic, storage type code, the storage shape (sparse
/// records only), the shape, the device and the element type.
fn header(scratch: &mut Vec<u8>, magic: u32, stype: i32, stored: Option<&[usize]>, shape: &[usize], dtype: DType) {
    scratch.clear();
    magic.write_le(scratch);
    stype.write_le(scratch);
    if let Some(stored) = stored {
        write_shape(stored, scratch);
    }
    write_shape(shape, scratch);
    CPU_DEVICE.write_le(scratch);
    0i32.write_le(scratch); // device id
    dtype.mx_type_id().write_le(scratch);
}

/// Writes one record. MXNet writes V3 records (NumPy shapes) while NumPy shape semantics are on
/// and V2 records otherwise; a 0-d array has no V2 form (ndim 0 means "empty" there), so it is
/// always written as V3. `scratch` is a reusable encoding buffer. Sparse components must fit
/// (checked by the caller).
pub(crate) fn record<W: Write>(out: &mut W, item: &Stored, np_shape: bool, scratch: &mut Vec<u8>) -> io::Result<()> {
    let a = match item {
        Stored::Sparse(parts) => return sparse_record(out, parts, np_shape, scratch),
        Stored::Dense(a) => a,
    };
    let magic = if np_shape || a.ndim() == 0 { MAGIC_V3 } else { MAGIC_V2 };
    header(scratch, magic, 0, None, a.shape(), a.dtype());
    out.write_all(scratch)?;
    elements(out, a, scratch)
}

/// Writes the elements of `a` in row-major order, a chunk at a time.
fn elements<W: Write>(out: &mut W, a: &NDArray, scratch: &mut Vec<u8>) -> io::Result<()> {
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

/// A sparse record: the header (storage type, the stored values' shape, the shape, device,
/// element type, then each index array's type and shape), the stored values, then the index
/// arrays.
fn sparse_record<W: Write>(out: &mut W, parts: &SparseParts, np_shape: bool, scratch: &mut Vec<u8>) -> io::Result<()> {
    let stype = if parts.storage == Storage::Csr { 2 } else { 1 };
    let magic = if np_shape { MAGIC_V3 } else { MAGIC_V2 };
    header(scratch, magic, stype, Some(parts.data.shape()), &parts.shape, parts.data.dtype());
    for ix in &parts.aux {
        ix.dtype().mx_type_id().write_le(scratch);
        write_shape(ix.shape(), scratch);
    }
    out.write_all(scratch)?;
    elements(out, &parts.data, scratch)?;
    parts.aux.iter().try_for_each(|ix| elements(out, ix, scratch))
}

/// Writes a whole file: header, records, then the keys (none for a list).
pub(crate) fn file<W: Write>(out: &mut W, arrays: &[Stored], keys: &[&str], np_shape: bool) -> io::Result<()> {
    let mut scratch = Vec::new();
    FILE_MAGIC.write_le(&mut scratch);
    0u64.write_le(&mut scratch); // reserved
    (arrays.len() as u64).write_le(&mut scratch);
    out.write_all(&scratch)?;
    for a in arrays {
        record(out, a, np_shape, &mut scratch)?;
    }
    scratch.clear();
    (keys.len() as u64).write_le(&mut scratch);
    for k in keys {
        (k.len() as u64).write_le(&mut scratch);
        scratch.extend_from_slice(k.as_bytes());
    }
    out.write_all(&scratch)
}
