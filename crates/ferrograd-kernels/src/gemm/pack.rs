//! Packing: copies a block of A (or B) into the panel order the micro-kernels read, zero-padding
//! the last panel so every kernel call sees full `MR` (`NR`) rows (columns).

use crate::matmul::Mat;

/// Packs rows `0..mc`, columns `0..kc` of `a` into `mc.div_ceil(mr)` panels of `kc×mr` values
/// (for each k, `mr` consecutive rows).
///
/// # Safety
/// `a` is readable at every `(i, p)` with `i < mc`, `p < kc`; `buf` holds
/// `mc.div_ceil(mr)·mr·kc` values.
pub(super) unsafe fn pack_a<T: Copy + Default>(a: Mat<*const T>, mc: usize, kc: usize, mr: usize, buf: *mut T) {
    let (rs, cs) = (a.row_stride, a.col_stride);
    for (panel, i0) in (0..mc).step_by(mr).enumerate() {
        let rows = mr.min(mc - i0);
        // SAFETY: rows `i0..i0+rows` < mc and columns < kc are readable; the panel's `kc·mr`
        // slots lie inside `buf` (panel < mc.div_ceil(mr)).
        unsafe {
            let dst = buf.add(panel * mr * kc);
            let src = a.ptr.offset(i0 as isize * rs);
            if cs == 1 {
                // Row-major A: read each row contiguously.
                for i in 0..rows {
                    let row = src.offset(i as isize * rs);
                    for p in 0..kc {
                        *dst.add(p * mr + i) = *row.add(p);
                    }
                }
            } else {
                for p in 0..kc {
                    let col = src.offset(p as isize * cs);
                    for i in 0..rows {
                        *dst.add(p * mr + i) = *col.offset(i as isize * rs);
                    }
                }
            }
            if rows < mr {
                for p in 0..kc {
                    for i in rows..mr {
                        *dst.add(p * mr + i) = T::default();
                    }
                }
            }
        }
    }
}

/// Packs rows `0..kc`, columns `0..nc` of `b` into `nc.div_ceil(nr)` panels of `kc×nr` values
/// (for each k, `nr` consecutive columns).
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
