//! Packing: copies a block of B into the panel order the micro-kernels read, zero-padding the
//! last panel so every kernel call sees full `NR` columns. A block of A packs the same way as
//! its transpose (`pack_b(a.transposed(), ...)`: a panel of A's rows is a panel of Aᵀ's columns).
//!
//! A column-major B (or a row-major A, packed through its transpose) needs a transpose: its
//! columns are contiguous but a panel wants each k's `nr` columns side by side. That runs as
//! in-register 8×8 (4-byte values) or 4×4 (8-byte values) tile transposes, with the ragged
//! edges copied one value at a time. Packing only moves bits, so results do not depend on it.

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
                // Column-major B: whole tiles in registers, then the edges value by value.
                let (tile_cols, tile_k) = if rs == 1 { transpose_tiles(src, cs, kc, cols, nr, dst) } else { (0, 0) };
                for j in 0..cols {
                    let col = src.offset(j as isize * cs);
                    let first = if j < tile_cols { tile_k } else { 0 };
                    for p in first..kc {
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

/// Transposes the whole tiles of a panel whose columns are contiguous (`src[j·cs + p]` is
/// column `j`, depth `p`) into `dst[p·nr + j]`. Returns the corner it filled: columns
/// `0..tile_cols` at depths `0..tile_k` (`(0, 0)` when no SIMD transpose applies).
///
/// # Safety
/// `src` is readable at `j·cs + p` for `j < cols`, `p < kc`; `dst` is writable at `p·nr + j`
/// for the same range.
unsafe fn transpose_tiles<T: Copy>(
    src: *const T,
    cs: isize,
    kc: usize,
    cols: usize,
    nr: usize,
    dst: *mut T,
) -> (usize, usize) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: AVX is present; the element size picks the tile whose lanes are exactly one
        // value wide, so the tiles move whole values (bit copies, valid for any `Copy` type);
        // the ranges are the caller's.
        unsafe {
            match std::mem::size_of::<T>() {
                4 => return x86_transpose::tiles_32(src.cast(), cs, kc, cols, nr, dst.cast()),
                8 => return x86_transpose::tiles_64(src.cast(), cs, kc, cols, nr, dst.cast()),
                _ => {}
            }
        }
    }
    let _ = (src, cs, kc, cols, nr, dst);
    (0, 0)
}

#[cfg(target_arch = "x86_64")]
mod x86_transpose {
    use std::arch::x86_64::*;

    /// 8×8 tiles of 4-byte values (as `f32` lanes: only bits move).
    ///
    /// # Safety
    /// AVX is available; ranges as for [`super::transpose_tiles`].
    #[target_feature(enable = "avx")]
    pub(super) unsafe fn tiles_32(
        src: *const f32,
        cs: isize,
        kc: usize,
        cols: usize,
        nr: usize,
        dst: *mut f32,
    ) -> (usize, usize) {
        let (tile_cols, tile_k) = (cols / 8 * 8, kc / 8 * 8);
        for j in (0..tile_cols).step_by(8) {
            for p in (0..tile_k).step_by(8) {
                // SAFETY: columns j..j+8 ≤ cols and depths p..p+8 ≤ kc (caller's ranges).
                unsafe {
                    // (A macro, not a closure: the loads must inherit this function's AVX.)
                    macro_rules! r {
                        ($q:expr) => {
                            _mm256_loadu_ps(src.offset((j + $q) as isize * cs + p as isize))
                        };
                    }
                    let (r0, r1, r2, r3, r4, r5, r6, r7) = (r!(0), r!(1), r!(2), r!(3), r!(4), r!(5), r!(6), r!(7));
                    // Pairs of columns interleaved, then quads, then the 128-bit halves swapped.
                    let (t0, t1) = (_mm256_unpacklo_ps(r0, r1), _mm256_unpackhi_ps(r0, r1));
                    let (t2, t3) = (_mm256_unpacklo_ps(r2, r3), _mm256_unpackhi_ps(r2, r3));
                    let (t4, t5) = (_mm256_unpacklo_ps(r4, r5), _mm256_unpackhi_ps(r4, r5));
                    let (t6, t7) = (_mm256_unpacklo_ps(r6, r7), _mm256_unpackhi_ps(r6, r7));
                    let (u0, u1) = (_mm256_shuffle_ps::<0x44>(t0, t2), _mm256_shuffle_ps::<0xEE>(t0, t2));
                    let (u2, u3) = (_mm256_shuffle_ps::<0x44>(t1, t3), _mm256_shuffle_ps::<0xEE>(t1, t3));
                    let (u4, u5) = (_mm256_shuffle_ps::<0x44>(t4, t6), _mm256_shuffle_ps::<0xEE>(t4, t6));
                    let (u6, u7) = (_mm256_shuffle_ps::<0x44>(t5, t7), _mm256_shuffle_ps::<0xEE>(t5, t7));
                    let out = dst.add(p * nr + j);
                    _mm256_storeu_ps(out, _mm256_permute2f128_ps::<0x20>(u0, u4));
                    _mm256_storeu_ps(out.add(nr), _mm256_permute2f128_ps::<0x20>(u1, u5));
                    _mm256_storeu_ps(out.add(2 * nr), _mm256_permute2f128_ps::<0x20>(u2, u6));
                    _mm256_storeu_ps(out.add(3 * nr), _mm256_permute2f128_ps::<0x20>(u3, u7));
                    _mm256_storeu_ps(out.add(4 * nr), _mm256_permute2f128_ps::<0x31>(u0, u4));
                    _mm256_storeu_ps(out.add(5 * nr), _mm256_permute2f128_ps::<0x31>(u1, u5));
                    _mm256_storeu_ps(out.add(6 * nr), _mm256_permute2f128_ps::<0x31>(u2, u6));
                    _mm256_storeu_ps(out.add(7 * nr), _mm256_permute2f128_ps::<0x31>(u3, u7));
                }
            }
        }
        (tile_cols, tile_k)
    }

    /// 4×4 tiles of 8-byte values (as `f64` lanes: only bits move).
    ///
    /// # Safety
    /// AVX is available; ranges as for [`super::transpose_tiles`].
    #[target_feature(enable = "avx")]
    pub(super) unsafe fn tiles_64(
        src: *const f64,
        cs: isize,
        kc: usize,
        cols: usize,
        nr: usize,
        dst: *mut f64,
    ) -> (usize, usize) {
        let (tile_cols, tile_k) = (cols / 4 * 4, kc / 4 * 4);
        for j in (0..tile_cols).step_by(4) {
            for p in (0..tile_k).step_by(4) {
                // SAFETY: columns j..j+4 ≤ cols and depths p..p+4 ≤ kc (caller's ranges).
                unsafe {
                    macro_rules! r {
                        ($q:expr) => {
                            _mm256_loadu_pd(src.offset((j + $q) as isize * cs + p as isize))
                        };
                    }
                    let (r0, r1, r2, r3) = (r!(0), r!(1), r!(2), r!(3));
                    let (t0, t1) = (_mm256_unpacklo_pd(r0, r1), _mm256_unpackhi_pd(r0, r1));
                    let (t2, t3) = (_mm256_unpacklo_pd(r2, r3), _mm256_unpackhi_pd(r2, r3));
                    let out = dst.add(p * nr + j);
                    _mm256_storeu_pd(out, _mm256_permute2f128_pd::<0x20>(t0, t2));
                    _mm256_storeu_pd(out.add(nr), _mm256_permute2f128_pd::<0x20>(t1, t3));
                    _mm256_storeu_pd(out.add(2 * nr), _mm256_permute2f128_pd::<0x31>(t0, t2));
                    _mm256_storeu_pd(out.add(3 * nr), _mm256_permute2f128_pd::<0x31>(t1, t3));
                }
            }
        }
        (tile_cols, tile_k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tiled transpose packs exactly what the value-by-value copy would, at every edge.
    fn check<T: Copy + Default + PartialEq + std::fmt::Debug>(make: impl Fn(usize) -> T) {
        for nr in [6, 8, 16, 32] {
            for kc in [1, 3, 4, 8, 9, 17, 31] {
                for nc in [1, 5, 8, 13, 33, 40] {
                    for ld in [kc, kc + 3] {
                        // Column j starts at j·ld: contiguous columns, padded when ld > kc.
                        let data: Vec<T> = (0..ld * nc + 1).map(&make).collect();
                        let b = Mat { ptr: data.as_ptr(), row_stride: 1, col_stride: ld as isize };
                        let mut got = vec![make(usize::MAX); nc.div_ceil(nr) * nr * kc];
                        // SAFETY: `data` covers every (p < kc, j < nc) at p + j·ld; `got` is sized
                        // as pack_b requires.
                        unsafe { pack_b(b, kc, nc, nr, got.as_mut_ptr()) };
                        for (i, g) in got.iter().enumerate() {
                            let (panel, p, jj) = (i / (nr * kc), i % (nr * kc) / nr, i % nr);
                            let j = panel * nr + jj;
                            let want = if j < nc { data[p + j * ld] } else { T::default() };
                            assert_eq!(*g, want, "nr {nr} kc {kc} nc {nc} ld {ld} at {i}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn transposing_pack_matches_element_copy() {
        check(|i| i as f32 + 0.5);
        check(|i| i as f64 * 0.25 - 3.0);
        check(|i| i as u32);
        check(|i| i as u16);
    }
}
