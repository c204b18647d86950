//! Element data types and NumPy-style promotion.

use half::f16;

use crate::buffer::{Buffer, Mem};
use crate::error::{Error, Result};
use ferrograd_kernels::Element;

/// The element type of an array.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    Bool,
    I8,
    U8,
    I32,
    I64,
    F16,
    F32,
    F64,
}

impl DType {
    pub const ALL: [DType; 8] =
        [DType::F32, DType::F64, DType::F16, DType::I32, DType::I64, DType::U8, DType::I8, DType::Bool];

    /// NumPy name (`float32`, ...).
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I8 => "int8",
            DType::U8 => "uint8",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::F16 => "float16",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }

    /// Parses a NumPy-style name or character code.
    pub fn from_name(s: &str) -> Result<DType> {
        Ok(match s {
            "bool" | "bool_" | "?" | "b1" => DType::Bool,
            "int8" | "i1" | "b" => DType::I8,
            "uint8" | "u1" | "B" => DType::U8,
            "int32" | "i4" | "i" => DType::I32,
            "int64" | "i8" | "l" | "q" | "int" => DType::I64,
            "float16" | "f2" | "e" | "half" => DType::F16,
            "float32" | "f4" | "f" | "float" => DType::F32,
            "float64" | "f8" | "d" | "double" => DType::F64,
            _ => {
                return Err(Error::DType(format!(
                "unsupported dtype '{s}': expected one of float32, float64, float16, int32, int64, int8, uint8, bool"
            )))
            }
        })
    }

    /// MXNet's numeric type id (used in symbol JSON `__dtype__`).
    pub fn mx_type_id(self) -> i32 {
        match self {
            DType::F32 => 0,
            DType::F64 => 1,
            DType::F16 => 2,
            DType::U8 => 3,
            DType::I32 => 4,
            DType::I8 => 5,
            DType::I64 => 6,
            DType::Bool => 7,
        }
    }

    pub fn from_mx_type_id(id: i32) -> Result<DType> {
        DType::ALL
            .into_iter()
            .find(|d| d.mx_type_id() == id)
            .ok_or_else(|| Error::DType(format!("unknown MXNet type id {id}")))
    }

    pub fn size(self) -> usize {
        match self {
            DType::Bool | DType::I8 | DType::U8 => 1,
            DType::F16 => 2,
            DType::I32 | DType::F32 => 4,
            DType::I64 | DType::F64 => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::F32 | DType::F64)
    }

    /// Result type of a binary operation between arrays of these types. Integers promote as in
    /// NumPy; an integer meeting a float gives that float type (MXNet's rule, which avoids NumPy's
    /// silent upcast of int32 + float32 to float64).
    pub fn promote(a: DType, b: DType) -> DType {
        use DType::*;
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        match (lo, hi) {
            (Bool, x) => x,
            // int8 and uint8 share no 8-bit type; int32 is the smallest we have holding both
            // (NumPy's int16 is not an MXNet dtype).
            (I8, U8) => I32,
            (_, x) if x.is_float() => x,
            _ => hi,
        }
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Links a Rust element type to its [`DType`] and its [`Buffer`] variant.
pub trait DTypeElem: Element {
    const DTYPE: DType;
    fn wrap(mem: Mem<Self>) -> Buffer;
    fn mem(buf: &Buffer) -> Option<&Mem<Self>>;
    fn mem_mut(buf: &mut Buffer) -> Option<&mut Mem<Self>>;
}

macro_rules! impl_dtype_elem {
    ($t:ty, $v:ident) => {
        impl DTypeElem for $t {
            const DTYPE: DType = DType::$v;
            fn wrap(mem: Mem<Self>) -> Buffer {
                Buffer::$v(mem)
            }
            fn mem(buf: &Buffer) -> Option<&Mem<Self>> {
                match buf {
                    Buffer::$v(m) => Some(m),
                    _ => None,
                }
            }
            fn mem_mut(buf: &mut Buffer) -> Option<&mut Mem<Self>> {
                match buf {
                    Buffer::$v(m) => Some(m),
                    _ => None,
                }
            }
        }
    };
}
impl_dtype_elem!(f32, F32);
impl_dtype_elem!(f64, F64);
impl_dtype_elem!(f16, F16);
impl_dtype_elem!(i32, I32);
impl_dtype_elem!(i64, I64);
impl_dtype_elem!(u8, U8);
impl_dtype_elem!(i8, I8);
impl_dtype_elem!(bool, Bool);

/// Runs `$body` with `$T` bound to the Rust element type of `$dtype`.
#[macro_export]
macro_rules! with_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {{
        use $crate::DType as __D;
        match $dtype {
            __D::F32 => {
                type $T = f32;
                $body
            }
            __D::F64 => {
                type $T = f64;
                $body
            }
            __D::F16 => {
                type $T = $crate::f16;
                $body
            }
            __D::I32 => {
                type $T = i32;
                $body
            }
            __D::I64 => {
                type $T = i64;
                $body
            }
            __D::U8 => {
                type $T = u8;
                $body
            }
            __D::I8 => {
                type $T = i8;
                $body
            }
            __D::Bool => {
                type $T = bool;
                $body
            }
        }
    }};
}

/// Like [`with_dtype!`] for float types only; other dtypes evaluate `$else`.
#[macro_export]
macro_rules! with_float_dtype {
    ($dtype:expr, $T:ident => $body:expr, else $other:expr) => {{
        use $crate::DType as __D;
        match $dtype {
            __D::F32 => {
                type $T = f32;
                $body
            }
            __D::F64 => {
                type $T = f64;
                $body
            }
            __D::F16 => {
                type $T = $crate::f16;
                $body
            }
            _ => $other,
        }
    }};
}
