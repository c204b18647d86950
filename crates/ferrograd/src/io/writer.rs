//! Encoding arrays as MXNet NDArray records and files.

use super::codec::{self, LeBytes};
use super::reader::{MAGIC_V2, MAGIC_V3};
use crate::{with_dtype, NDArray};

/// The `u64` that opens every NDArray file.
pub(crate) const FILE_MAGIC: u64 = 0x112;

/// MXNet's device type for the CPU.
const CPU_DEVICE: i32 = 1;

/// Appends one dense record. MXNet writes V3 records (NumPy shapes) while NumPy shape semantics
/// are on and V2 records otherwise; a 0-d array has no V2 form (ndim 0 means "empty" there), so
/// it is always written as V3.
pub(crate) fn record(out: &mut Vec<u8>, a: &NDArray, np_shape: bool) {
    let magic = if np_shape || a.ndim() == 0 { MAGIC_V3 } else { MAGIC_V2 };
    magic.write_le(out);
    0i32.write_le(out); // storage type: dense
    (a.ndim() as u32).write_le(out);
    for &d in a.shape() {
        (d as i64).write_le(out);
    }
    CPU_DEVICE.write_le(out);
    0i32.write_le(out); // device id
    a.dtype().mx_type_id().write_le(out);
    let a = a.to_contiguous();
    let n = a.size();
    with_dtype!(a.dtype(), T => {
        // ok to ignore: the dtype matches by construction, so `read` cannot fail
        let _ = a.read::<T, _>(|s, l| codec::encode(&s[l.offset..l.offset + n], out));
    });
}

/// A whole file: header, records, then the keys (none for a list).
pub(crate) fn file(arrays: &[&NDArray], keys: &[&str], np_shape: bool) -> Vec<u8> {
    let data: usize = arrays.iter().map(|a| a.size() * a.dtype().size() + 32 + 8 * a.ndim()).sum();
    let mut out = Vec::with_capacity(32 + data + keys.iter().map(|k| k.len() + 8).sum::<usize>());
    FILE_MAGIC.write_le(&mut out);
    0u64.write_le(&mut out); // reserved
    (arrays.len() as u64).write_le(&mut out);
    for a in arrays {
        record(&mut out, a, np_shape);
    }
    (keys.len() as u64).write_le(&mut out);
    for k in keys {
        (k.len() as u64).write_le(&mut out);
        out.extend_from_slice(k.as_bytes());
    }
    out
}
