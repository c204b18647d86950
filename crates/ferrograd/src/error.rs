//! One error type for the whole crate. Every variant names the op (or API entry) at fault; the
//! Python layer maps the kind to an exception class (`MXNetError` and its Value/Type/Index
//! subclasses) without parsing messages.

/// What went wrong, by kind; the message names the op, the argument and the shapes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Incompatible or invalid shapes (Python: `MXNetError` + `ValueError`).
    #[error("{0}")]
    Shape(String),
    /// Unsupported or mismatched dtypes (Python: `MXNetError` + `TypeError`).
    #[error("{0}")]
    DType(String),
    /// Out-of-range or malformed index (Python: `MXNetError` + `IndexError`).
    #[error("{0}")]
    Index(String),
    /// Bad parameter value (Python: `MXNetError` + `ValueError`).
    #[error("{0}")]
    Value(String),
    /// Wrong kind of call: an unknown keyword, a missing required parameter or input
    /// (Python: `MXNetError` + `TypeError`).
    #[error("{0}")]
    Type(String),
    /// Array storage could not be allocated (Python: `MXNetError` + `MemoryError`).
    #[error("{0}")]
    Memory(String),
    /// Anything else, e.g. misuse of the autograd API (Python: `MXNetError`).
    #[error("{0}")]
    Runtime(String),
}

pub type Result<T> = std::result::Result<T, Error>;

/// `Err(Error::DType(format!(...)))`.
#[macro_export]
macro_rules! dtype_err {
    ($($t:tt)*) => { Err($crate::Error::DType(format!($($t)*))) };
}

/// Formats a shape the way MXNet prints it: `(2, 3)`, `(4,)`, `()`.
pub fn fmt_shape(shape: &[usize]) -> String {
    match shape.len() {
        1 => format!("({},)", shape[0]),
        _ => format!("({})", shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
    }
}
