//! Element bytes and MXNet's dtype codes.
//!
//! MXNet stores elements little-endian and names each array's element type by a numeric code.
//! Codes of types ferrograd lacks are still recognised, so an error can name the type.

use half::f16;

use crate::dtype::DType;

/// MXNet's element type codes (`mshadow` type flags), with their NumPy names and widths.
const MX_DTYPES: [(i32, &str, usize); 13] = [
    (0, "float32", 4),
    (1, "float64", 8),
    (2, "float16", 2),
    (3, "uint8", 1),
    (4, "int32", 4),
    (5, "int8", 1),
    (6, "int64", 8),
    (7, "bool", 1),
    (8, "int16", 2),
    (9, "uint16", 2),
    (10, "uint32", 4),
    (11, "uint64", 8),
    (12, "bfloat16", 2),
];

/// What a type code in a file stands for.
pub(crate) enum CodeType {
    /// A dtype ferrograd has.
    Known(DType),
    /// An MXNet dtype ferrograd lacks: its name and element width (so its bytes can be skipped).
    Unsupported(&'static str, usize),
}

/// Looks up a type code; `None` for a code MXNet never writes (a corrupt file).
pub(crate) fn code_type(code: i32) -> Option<CodeType> {
    let &(_, name, width) = MX_DTYPES.iter().find(|(c, _, _)| *c == code)?;
    Some(match DType::from_mx_type_id(code) {
        Ok(d) => CodeType::Known(d),
        Err(_) => CodeType::Unsupported(name, width),
    })
}

/// An element type that converts from and to little-endian bytes.
pub(crate) trait LeBytes: Copy {
    const WIDTH: usize;
    fn read_le(bytes: &[u8]) -> Self;
    /// Writes the `WIDTH` bytes into `out` (exactly that long).
    fn write_le_into(self, out: &mut [u8]);
    fn write_le(self, out: &mut Vec<u8>) {
        let at = out.len();
        out.resize(at + Self::WIDTH, 0);
        self.write_le_into(&mut out[at..]);
    }
}

macro_rules! le_number {
    ($($t:ty),*) => {$(
        impl LeBytes for $t {
            const WIDTH: usize = std::mem::size_of::<$t>();
            #[inline(always)]
            fn read_le(bytes: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(bytes);
                <$t>::from_le_bytes(a)
            }
            #[inline(always)]
            fn write_le_into(self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
        }
    )*};
}
// i8 is listed for when ferrograd gains that dtype; the codec has no other dependency on it.
le_number!(f32, f64, f16, i8, i32, i64, u8, u32, u64);

impl LeBytes for bool {
    const WIDTH: usize = 1;
    #[inline(always)]
    fn read_le(bytes: &[u8]) -> Self {
        // Any nonzero byte is true (reading the byte as a Rust `bool` directly would be unsound).
        bytes[0] != 0
    }
    #[inline(always)]
    fn write_le_into(self, out: &mut [u8]) {
        out[0] = u8::from(self);
    }
}

/// Decodes `bytes` (a whole number of elements) into a vector.
pub(crate) fn decode<T: LeBytes>(bytes: &[u8]) -> Vec<T> {
    bytes.chunks_exact(T::WIDTH).map(T::read_le).collect()
}

/// Appends the elements' bytes to `out`.
pub(crate) fn encode<T: LeBytes>(elems: &[T], out: &mut Vec<u8>) {
    let at = out.len();
    out.resize(at + elems.len() * T::WIDTH, 0);
    for (dst, &e) in out[at..].chunks_exact_mut(T::WIDTH).zip(elems) {
        e.write_le_into(dst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dtype_has_its_mxnet_code_and_width() {
        for d in DType::ALL {
            match code_type(d.mx_type_id()) {
                Some(CodeType::Known(k)) => assert_eq!(k, d),
                _ => panic!("{d} has no MXNet code"),
            }
            let (_, name, width) = MX_DTYPES.iter().find(|(c, _, _)| *c == d.mx_type_id()).copied().unwrap_or_default();
            assert_eq!((name, width), (d.name(), d.size()));
        }
        assert!(code_type(13).is_none() && code_type(-1).is_none());
        assert!(matches!(code_type(12), Some(CodeType::Unsupported("bfloat16", 2))));
    }

    #[test]
    fn elements_round_trip_through_little_endian_bytes() {
        let mut out = Vec::new();
        encode(&[1.5f32, -2.0], &mut out);
        assert_eq!(out, [0, 0, 0xc0, 0x3f, 0, 0, 0, 0xc0]);
        assert_eq!(decode::<f32>(&out), vec![1.5, -2.0]);
        assert_eq!(decode::<bool>(&[0, 1, 7]), vec![false, true, true]);
    }
}
