//! [`Tracked`]: an array paired with its place in the recorded graph.
//!
//! The storage handle ([`NDArray`]) is what ops, kernels and the executor see; it knows nothing of
//! autograd. The tape slot lives here instead, so the ops and array layers build and test without
//! any tape types, and only code that records (the Python binding, the Rust front door's tracked
//! methods, `CachedOp` runs) holds `Tracked` values.

use std::ops::Deref;

use super::Entry;
use crate::ndarray::NDArray;

/// An array and its autograd entry: a marked variable, a recorded op's output, or none (a
/// constant). The entry belongs to this handle, not to the storage, so views and copies of the
/// array start untracked. Derefs to the array for reading (shape, dtype, values).
#[derive(Clone)]
pub struct Tracked {
    array: NDArray,
    entry: Option<Entry>,
}

impl Tracked {
    /// An untracked handle (a constant for autograd).
    pub fn new(array: NDArray) -> Tracked {
        Tracked { array, entry: None }
    }

    /// A handle with the given place in the graph.
    pub fn with_entry(array: NDArray, entry: Option<Entry>) -> Tracked {
        Tracked { array, entry }
    }

    /// The storage handle.
    pub fn array(&self) -> &NDArray {
        &self.array
    }

    /// The storage handle, for writing (in-place writes are checked by [`super::check_inplace`]
    /// first where they may meet a recorded graph).
    pub fn array_mut(&mut self) -> &mut NDArray {
        &mut self.array
    }

    pub fn into_array(self) -> NDArray {
        self.array
    }

    /// The storage handle and the entry, taken apart (no reference count changes).
    pub fn into_parts(self) -> (NDArray, Option<Entry>) {
        (self.array, self.entry)
    }

    /// The array's autograd entry (`None` for constants).
    pub fn entry(&self) -> Option<&Entry> {
        self.entry.as_ref()
    }

    pub fn has_entry(&self) -> bool {
        self.entry.is_some()
    }

    /// Sets the entry and returns the old one (its drop may free a recorded history).
    pub fn set_entry(&mut self, e: Option<Entry>) -> Option<Entry> {
        std::mem::replace(&mut self.entry, e)
    }

    /// MXNet `detach()`: the same storage without autograd history.
    pub fn detach(&self) -> Tracked {
        Tracked::new(self.array.clone())
    }
}

impl Deref for Tracked {
    type Target = NDArray;
    fn deref(&self) -> &NDArray {
        &self.array
    }
}

impl From<NDArray> for Tracked {
    fn from(array: NDArray) -> Tracked {
        Tracked::new(array)
    }
}

impl std::fmt::Debug for Tracked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.entry {
            None => "constant",
            Some(Entry::Var(_)) => "variable",
            Some(Entry::Out(..)) => "recorded",
        };
        write!(f, "Tracked({kind}, {:?})", self.array)
    }
}
