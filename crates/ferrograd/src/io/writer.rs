//! Encoding arrays as MXNet NDArray records and files.

use super::codec::{self, LeBytes};
use super::reader::{MAGIC_V2, MAGIC_V3};
use std::io::{self, Write};

use crate::{with_dtype, NDArray};

/// The `u64` that opens every NDArray file.
pub(crate) const FILE_MAGIC: u64 = 0x112;

/// MXNet's device type for the CPU.
const CPU_DEVICE: i32 = 1;

/// Elements encoded per write: large enough to amortise the call, small enough to stay in cache
/// (a whole-file buffer would double the memory and page-fault every byte once more).
const CHUNK_ELEMS: usize = 1 << 16;

/// Writes one dense record. MXNet writes V3 records (NumPy shapes) while NumPy shape semantics
/// are on and V2 records otherwise; a 0-d array has no V2 form (ndim 0 means "empty" there), so
/// it is always written as V3. `scratch` is a reusable encoding buffer.
pub(crate) fn record<W: Write>(out: &mut W, a: &NDArray, np_shape: bool, scratch: &mut Vec<u8>) -> io::Result<()> {
    scratch.clear();
    let magic = if np_shape || a.ndim() == 0 { MAGIC_V3 } else { MAGIC_V2 };
    magic.write_le(scratch);
    0i32.write_le(scratch); // storage type: dense
    (a.ndim() as u32).write_le(scratch);
    for &d in a.shape() {
        (d as i64).write_le(scratch);
    }
    CPU_DEVICE.write_le(scratch);
    0i32.write_le(scratch); // device id
    a.dtype().mx_type_id().write_le(scratch);
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

/// Writes a whole file: header, records, then the keys (none for a list).
pub(crate) fn file<W: Write>(out: &mut W, arrays: &[&NDArray], keys: &[&str], np_shape: bool) -> io::Result<()> {
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
