//! Packing: copies a block of B into the panel order the micro-kernels read, zero-padding the
//! last panel so every kernel call sees full `NR` columns. A block of A packs the same way as
//! its transpose (`pack_b(a.transposed(), ...)`: a panel of A's rows is a panel of Aᵀ's columns).

use crate::matmul::Mat;

/// Packs rows `0..kc`, columns `0..nc` of `b` into `nc.div_ceil(nr)` panels of `kc×nr` values
/// (for each k, `nr` consecutive columns; packing Aᵀ this way gives A's panels of `mr` rows).
///
/// # Safety
/// `b` is readable at every `(p, j)` with `p < kc`, `j < nc`; `buf` holds
/// `nc.div_ceil(nr)·nr·kc` values.
pub(super) unsafe fn pack_b<T: Copy + Default>(b: Mat<*const T>, kc: usize, nc: usize, nr: usize, buf: *mut T) {
    let (rs, cs) = (b.row_stride, b.col_stride);
    for (panel, j0) in (0..nc).step_by(nr).enumerate() {
        let cols = nr.min(nc - j0);
        // SAFETY: columns `j0..j0+cols` < nc and rows < kc are readable; the panel's `kc·nr`
        // slots lie inside `buf` (panel < nc.div_ceil(nr)).
        unsafe {
            let dst = buf.add(panel * nr * kc);
            let src = b.ptr.offset(j0 as isize * cs);
            if cs == 1 {
                // Row-major B: each k's columns are one contiguous run.
                for p in 0..kc {
                    std::ptr::copy_nonoverlapping(src.offset(p as isize * rs), dst.add(p * nr), cols);
                }
            } else {
                for j in 0..cols {
                    let col = src.offset(j as isize * cs);
                    for p in 0..kc {
                        *dst.add(p * nr + j) = *col.offset(p as isize * rs);
                    }
                }
            }
            if cols < nr {
                for p in 0..kc {
                    for j in cols..nr {
                        *dst.add(p * nr + j) = T::default();
                    }
                }
            }
        }
    }
}
