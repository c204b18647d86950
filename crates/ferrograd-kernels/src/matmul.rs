//! Matrix multiplication: `C (m×n) = A (m×k) · B (k×n)` over strided operands.
//!
//! Floats go to ferrograd's own packed GEMM ([`crate::gemm`]: AVX-512 or AVX2 micro-kernels
//! chosen at run time), or to the `gemm` crate on CPUs without AVX2; other element types use a
//! plain loop (they are rare in practice). Strides are in elements, so transposed
//! operands are just swapped strides, never copies.

use crate::element::Element;
use crate::gemm::{Gather, Options, PackedB};
use crate::par;

/// A strided matrix operand.
#[derive(Clone, Copy, Debug)]
pub struct Mat<P> {
    pub ptr: P,
    pub row_stride: isize,
    pub col_stride: isize,
}

impl<P> Mat<P> {
    /// The transposed view of the same elements.
    pub fn transposed(self) -> Self {
        Mat { ptr: self.ptr, row_stride: self.col_stride, col_stride: self.row_stride }
    }
}

/// Work (m·n·k) below which GEMM runs on the calling thread: measured on this project's 2-core
/// AVX-512 machine, threading smaller products (or narrow outputs) is 2-3x slower, not faster.
const GEMM_PAR_MIN_WORK: usize = 1 << 20;
const GEMM_PAR_MIN_DIM: usize = 32;

/// Element types with a fast GEMM.
pub trait GemmElement: Element + crate::gemm::Packed {
    /// `c = a·b` (or `c += a·b` when `accumulate`).
    ///
    /// # Safety
    /// Each operand must be valid for reads (writes for `c`) at every position its strides reach
    /// for the given `m`, `n`, `k`, and `c` must not overlap `a` or `b`.
    unsafe fn gemm_raw(
        m: usize,
        n: usize,
        k: usize,
        c: Mat<*mut Self>,
        a: Mat<*const Self>,
        b: Mat<*const Self>,
        accumulate: bool,
    ) {
        // SAFETY: forwarded from the caller's contract.
        unsafe { Self::gemm_raw_with(m, n, k, c, a, b, accumulate, Options::default()) }
    }

    /// [`Self::gemm_raw`] with forced [`Options`] (tests and benches).
    ///
    /// # Safety
    /// As [`Self::gemm_raw`].
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm_raw_with(
        m: usize,
        n: usize,
        k: usize,
        c: Mat<*mut Self>,
        a: Mat<*const Self>,
        b: Mat<*const Self>,
        accumulate: bool,
        options: Options,
    );
}

fn parallelism(m: usize, n: usize, k: usize) -> gemm::Parallelism {
    let threads = par::num_threads();
    // Inside a parallel task (e.g. one image of a batched convolution) the product stays serial.
    if threads > 1 && !par::in_worker() && m * n * k >= GEMM_PAR_MIN_WORK && m.min(n) >= GEMM_PAR_MIN_DIM {
        #[cfg(feature = "rayon")]
        return gemm::Parallelism::Rayon(threads);
    }
    gemm::Parallelism::None
}

macro_rules! impl_gemm {
    ($t:ty) => {
        impl GemmElement for $t {
            unsafe fn gemm_raw_with(
                m: usize,
                n: usize,
                k: usize,
                c: Mat<*mut Self>,
                a: Mat<*const Self>,
                b: Mat<*const Self>,
                accumulate: bool,
                options: Options,
            ) {
                // SAFETY: forwarded from the caller's contract.
                if unsafe { crate::gemm::gemm(m, n, k, c, a, b, accumulate, options) } {
                    return;
                }
                // SAFETY: forwarded from the caller's contract.
                unsafe {
                    gemm::gemm(
                        m,
                        n,
                        k,
                        c.ptr,
                        c.col_stride,
                        c.row_stride,
                        accumulate,
                        a.ptr,
                        a.col_stride,
                        a.row_stride,
                        b.ptr,
                        b.col_stride,
                        b.row_stride,
                        1.0,
                        1.0,
                        false,
                        false,
                        false,
                        parallelism(m, n, k),
                    )
                }
            }
        }
    };
}
impl_gemm!(f32);
impl_gemm!(f64);

/// Safe GEMM on slices: `a` and `b` are read through `(offset, row_stride, col_stride)`, `c` is a
/// contiguous row-major `m×n` output. Panics (a bug, not user input) if a stride reaches outside a
/// slice: callers validate shapes first.
#[allow(clippy::too_many_arguments)]
pub fn gemm<T: GemmElement>(
    m: usize,
    n: usize,
    k: usize,
    a: &[T],
    a_view: (usize, isize, isize),
    b: &[T],
    b_view: (usize, isize, isize),
    c: &mut [T],
    accumulate: bool,
) {
    gemm_with(m, n, k, a, a_view, b, b_view, c, accumulate, Options::default())
}

/// [`gemm`] with forced [`Options`] (kernel instruction set, number of parallel tasks): for
/// tests and benches.
#[doc(hidden)]
#[allow(clippy::too_many_arguments)]
pub fn gemm_with<T: GemmElement>(
    m: usize,
    n: usize,
    k: usize,
    a: &[T],
    a_view: (usize, isize, isize),
    b: &[T],
    b_view: (usize, isize, isize),
    c: &mut [T],
    accumulate: bool,
    options: Options,
) {
    if empty_product(m, n, k, c, accumulate) {
        return;
    }
    check_reach(a.len(), a_view, m, k);
    check_reach(b.len(), b_view, k, n);
    // SAFETY: `check_reach` proved every position read lies inside `a` / `b`; `c` is an exclusive
    // slice of exactly m·n contiguous elements, so it cannot overlap the shared inputs.
    unsafe {
        T::gemm_raw_with(
            m,
            n,
            k,
            Mat { ptr: c.as_mut_ptr(), row_stride: n as isize, col_stride: 1 },
            Mat { ptr: a.as_ptr().add(a_view.0), row_stride: a_view.1, col_stride: a_view.2 },
            Mat { ptr: b.as_ptr().add(b_view.0), row_stride: b_view.1, col_stride: b_view.2 },
            accumulate,
            options,
        )
    }
}

/// `c = a·b` into the contiguous row-major `m×n` `c` for a gathered `k×n` `b` ([`Gather`]),
/// with the same bits as [`gemm`] on `b` materialised. On CPUs without micro-kernels `b` is
/// materialised and given to [`gemm`]. Panics (a bug, not user input) if `a`'s view reaches
/// outside `a`.
pub fn gemm_gathered<T: GemmElement>(m: usize, a: &[T], a_view: (usize, isize, isize), b: &Gather<'_, T>, c: &mut [T]) {
    let (k, n) = (b.k(), b.n());
    if empty_product(m, n, k, c, false) {
        return;
    }
    check_reach(a.len(), a_view, m, k);
    let c_mat = Mat { ptr: c.as_mut_ptr(), row_stride: n as isize, col_stride: 1 };
    // SAFETY: `check_reach` proved the reads of `a` in bounds, `Gather::new` those of `b`; `c`
    // is an exclusive slice of exactly m·n elements.
    let done = unsafe {
        let a_mat = Mat { ptr: a.as_ptr().add(a_view.0), row_stride: a_view.1, col_stride: a_view.2 };
        crate::gemm::gemm_gather(m, c_mat, a_mat, b, false)
    };
    if !done {
        let dense: Vec<T> = (0..k * n).map(|i| b.get(i / n, i % n)).collect();
        gemm(m, n, k, a, a_view, &dense, (0, n as isize, 1), c, false);
    }
}

/// A right operand `B` (`k×n`) prepared once for many products `C = A·B` with it (the
/// recurrent weights at every step of an RNN): packed for the micro-kernels, or a row-major copy
/// on CPUs without them. Each product gives the same bits as [`gemm`] with the original `B`.
pub struct PackedRhs<T> {
    k: usize,
    n: usize,
    repr: Rhs<T>,
}

enum Rhs<T> {
    Panels(PackedB<T>),
    Dense(Vec<T>),
}

impl<T: GemmElement> PackedRhs<T> {
    /// Prepares `b` read through `(offset, row_stride, col_stride)` as a `k×n` matrix. Panics (a
    /// bug, not user input) if the view reaches outside `b`.
    pub fn new(k: usize, n: usize, b: &[T], b_view: (usize, isize, isize)) -> Self {
        if k > 0 && n > 0 {
            check_reach(b.len(), b_view, k, n);
        }
        let view = Mat { ptr: b.as_ptr().wrapping_add(b_view.0), row_stride: b_view.1, col_stride: b_view.2 };
        // SAFETY: `check_reach` proved every position of the k×n view lies inside `b`.
        let packed = if k > 0 && n > 0 { unsafe { PackedB::new(k, n, view) } } else { None };
        let repr = match packed {
            Some(p) => Rhs::Panels(p),
            None => {
                let (off, rs, cs) = b_view;
                let at = |p: usize, j: usize| b[(off as isize + p as isize * rs + j as isize * cs) as usize];
                Rhs::Dense((0..k * n).map(|i| at(i / n, i % n)).collect())
            }
        };
        PackedRhs { k, n, repr }
    }

    /// `c = a·B` (or `c += a·B` when `accumulate`) into the contiguous row-major `m×n` `c`, on
    /// the calling thread: callers that want threads give each its own rows of `a` and `c`.
    pub fn gemm(&self, m: usize, a: &[T], a_view: (usize, isize, isize), c: &mut [T], accumulate: bool) {
        let (k, n) = (self.k, self.n);
        if empty_product(m, n, k, c, accumulate) {
            return;
        }
        check_reach(a.len(), a_view, m, k);
        let c_mat = Mat { ptr: c.as_mut_ptr(), row_stride: n as isize, col_stride: 1 };
        // SAFETY: `check_reach` proved the reads of `a` in bounds (and `new` those of B); `c` is
        // an exclusive slice of exactly m·n elements.
        unsafe {
            let a_mat = Mat { ptr: a.as_ptr().add(a_view.0), row_stride: a_view.1, col_stride: a_view.2 };
            match &self.repr {
                Rhs::Panels(p) => p.gemm(m, c_mat, a_mat, accumulate),
                Rhs::Dense(b) => {
                    let b_mat = Mat { ptr: b.as_ptr(), row_stride: n as isize, col_stride: 1 };
                    T::gemm_raw_with(
                        m,
                        n,
                        k,
                        c_mat,
                        a_mat,
                        b_mat,
                        accumulate,
                        Options { tasks: Some(1), ..Options::default() },
                    )
                }
            }
        }
    }
}

/// Checks the contiguous `m×n` output's size and settles a product with a zero dimension (an
/// empty `C`, or `C = 0` / unchanged for an empty inner dimension); `true` when nothing is left.
fn empty_product<T: Element>(m: usize, n: usize, k: usize, c: &mut [T], accumulate: bool) -> bool {
    assert_eq!(c.len(), m * n, "gemm output size");
    if k == 0 && !accumulate {
        c.fill(T::zero());
    }
    m == 0 || n == 0 || k == 0
}

fn check_reach(len: usize, (off, rs, cs): (usize, isize, isize), rows: usize, cols: usize) {
    let corners =
        [0, (rows as isize - 1) * rs, (cols as isize - 1) * cs, (rows as isize - 1) * rs + (cols as isize - 1) * cs];
    for c in corners {
        let p = off as isize + c;
        assert!(p >= 0 && (p as usize) < len, "gemm operand out of bounds");
    }
}

/// Plain-loop matmul for element types without a fast GEMM (integers): accumulates in f64 and
/// converts with the element's cast. Same operand convention as [`gemm`].
#[allow(clippy::too_many_arguments)]
pub fn matmul_generic<T: Element>(
    m: usize,
    n: usize,
    k: usize,
    a: &[T],
    (ao, ars, acs): (usize, isize, isize),
    b: &[T],
    (bo, brs, bcs): (usize, isize, isize),
    c: &mut [T],
) {
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0.0f64;
            for p in 0..k {
                let x = a[(ao as isize + i as isize * ars + p as isize * acs) as usize].to_f64();
                let y = b[(bo as isize + p as isize * brs + j as isize * bcs) as usize].to_f64();
                acc += x * y;
            }
            c[i * n + j] = T::from_f64(acc);
        }
    }
}
