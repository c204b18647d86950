//! The element types kernels operate on.

use half::f16;

/// A scalar type that can live in a tensor buffer.
pub trait Element: Copy + Send + Sync + PartialOrd + Default + std::fmt::Debug + 'static {
    /// NumPy-style name of the type.
    const NAME: &'static str;
    /// Whether the type is a floating-point type (gradients are defined only for these).
    const IS_FLOAT: bool;
    fn to_f64(self) -> f64;
    /// Converts with `as`-cast semantics (truncation toward zero, saturation for integers).
    fn from_f64(v: f64) -> Self;
    fn zero() -> Self {
        Self::from_f64(0.0)
    }
    fn one() -> Self {
        Self::from_f64(1.0)
    }
}

macro_rules! impl_element {
    ($t:ty, $name:literal, $float:literal) => {
        impl Element for $t {
            const NAME: &'static str = $name;
            const IS_FLOAT: bool = $float;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
        }
    };
}
impl_element!(f32, "float32", true);
impl_element!(f64, "float64", true);
impl_element!(i32, "int32", false);
impl_element!(i64, "int64", false);
impl_element!(u8, "uint8", false);
impl_element!(i8, "int8", false);

impl Element for f16 {
    const NAME: &'static str = "float16";
    const IS_FLOAT: bool = true;
    #[inline(always)]
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        f16::from_f64(v)
    }
}

impl Element for bool {
    const NAME: &'static str = "bool";
    const IS_FLOAT: bool = false;
    #[inline(always)]
    fn to_f64(self) -> f64 {
        if self {
            1.0
        } else {
            0.0
        }
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
}

/// A zero-filled vector of `n` elements, or `None` when the allocator refuses (instead of the
/// abort `vec![0; n]` does). Zeros come from `alloc_zeroed` (calloc: pages zeroed lazily by the OS).
pub fn try_alloc_zeroed<T: Element>(n: usize) -> Option<Vec<T>> {
    if n == 0 || std::mem::size_of::<T>() == 0 {
        return Some(vec![T::default(); n]);
    }
    let layout = std::alloc::Layout::array::<T>(n).ok()?;
    // SAFETY: the layout has a non-zero size (n > 0, T is not zero-sized).
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<T>();
    if ptr.is_null() {
        return None;
    }
    // SAFETY: `ptr` comes from the global allocator with exactly the layout of `n` `T`s, and every
    // `Element` (plain numbers and bool) is valid as all-zero bytes and is `T::default()` there.
    Some(unsafe { Vec::from_raw_parts(ptr, n, n) })
}

/// [`alloc_output`] that returns `None` instead of aborting when the allocator refuses.
pub fn try_alloc_output<T: Element>(n: usize) -> Option<Vec<T>> {
    crate::pool::take(n).or_else(|| try_alloc_zeroed(n))
}

/// Allocates a vector of `n` elements that the caller will overwrite completely: a recycled
/// buffer of the same size when one is free (see [`crate::pool`]), else zeroed memory. Never
/// uninitialised: every element is a valid number before the caller writes it.
pub fn alloc_output<T: Element>(n: usize) -> Vec<T> {
    match try_alloc_output(n) {
        Some(v) => v,
        None => {
            std::alloc::handle_alloc_error(std::alloc::Layout::array::<T>(n).unwrap_or(std::alloc::Layout::new::<T>()))
        }
    }
}
