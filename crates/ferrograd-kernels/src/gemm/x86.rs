//! x86-64 micro-kernels: an `MR×NR` tile of C from packed panels of A (`MR` values per k) and B
//! (`NR` values per k), `NR` = two SIMD vectors. One macro writes all four (f32/f64 × AVX-512 /
//! AVX2+FMA) so they share one arithmetic order: each element of the tile is
//! `fma(a[k-1], b[k-1], … fma(a[0], b[0], 0))`, then added to (or stored into) C. That order does
//! not depend on where the tile sits, so any split of C over threads gives the same bits.

use std::arch::x86_64::*;

/// Signature shared by every micro-kernel.
///
/// `(kc, a, (a_row_step, a_k_step), b_panel, c, (c_row_stride, c_col_stride), rows, cols, add_to_c)`:
/// A is read in place through its steps (a packed panel has steps `(1, MR)`); `rows ≤ MR` and
/// `cols ≤ NR` are the valid part of the tile (edges); `add_to_c` adds the products to C instead
/// of overwriting it.
pub(super) type MicroKernel<T> =
    unsafe fn(usize, *const T, (isize, isize), *const T, *mut T, (isize, isize), usize, usize, bool);

macro_rules! micro_kernel {
    ($name:ident, $t:ty, $feat:literal, $lanes:expr, $mr:expr, $nv:expr,
     $zero:ident, $loadu:ident, $set1:ident, $fmadd:ident, $add:ident, $storeu:ident) => {
        /// # Safety
        /// The CPU supports the enabled features; `a` is readable at `i·a_row_step + p·a_k_step`
        /// for every `i < MR`, `p < kc`; `b` holds `kc·NR` values; `c` is valid for reads and writes at every `(i, j)` with `i < rows`, `j < cols` through
        /// its strides.
        #[target_feature(enable = $feat)]
        #[allow(clippy::too_many_arguments)]
        pub(super) unsafe fn $name(
            kc: usize,
            a: *const $t,
            (ars, aks): (isize, isize),
            b: *const $t,
            c: *mut $t,
            (rsc, csc): (isize, isize),
            rows: usize,
            cols: usize,
            add_to_c: bool,
        ) {
            const MR: usize = $mr;
            const NV: usize = $nv;
            const NR: usize = NV * $lanes;
            // SAFETY: reads stay inside A's `MR×kc` block and B's packed `kc·NR` panel and C is
            // touched only at the valid (i < rows, j < cols) positions, per the contract above.
            unsafe {
                // Fetch C's tile while the products run (it is usually cold: read once per KC).
                for i in 0..rows {
                    let row = c.offset(i as isize * rsc);
                    for j in (0..cols).step_by(64 / std::mem::size_of::<$t>()) {
                        _mm_prefetch::<_MM_HINT_T0>(row.offset(j as isize * csc) as *const i8);
                    }
                    _mm_prefetch::<_MM_HINT_T0>(row.offset((cols - 1) as isize * csc) as *const i8);
                }
                let mut acc = [[$zero(); NV]; MR];
                let (mut ap, mut bp) = (a, b);
                for _ in 0..kc {
                    let mut bv = [$zero(); NV];
                    for v in 0..NV {
                        bv[v] = $loadu(bp.add(v * $lanes));
                    }
                    for i in 0..MR {
                        let ai = $set1(*ap.offset(i as isize * ars));
                        for v in 0..NV {
                            acc[i][v] = $fmadd(ai, bv[v], acc[i][v]);
                        }
                    }
                    ap = ap.offset(aks);
                    bp = bp.add(NR);
                }
                if rows == MR && cols == NR && csc == 1 {
                    for i in 0..MR {
                        let p = c.offset(i as isize * rsc);
                        for v in 0..NV {
                            let mut x = acc[i][v];
                            if add_to_c {
                                x = $add($loadu(p.add(v * $lanes)), x);
                            }
                            $storeu(p.add(v * $lanes), x);
                        }
                    }
                } else {
                    // An edge tile or a strided C: through a local tile, same sums.
                    let mut tile = [0.0 as $t; MR * NR];
                    for i in 0..MR {
                        for v in 0..NV {
                            $storeu(tile.as_mut_ptr().add(i * NR + v * $lanes), acc[i][v]);
                        }
                    }
                    for i in 0..rows {
                        for j in 0..cols {
                            let p = c.offset(i as isize * rsc + j as isize * csc);
                            let v = tile[i * NR + j];
                            *p = if add_to_c { *p + v } else { v };
                        }
                    }
                }
            }
        }
    };
}

/// Rows of the AVX-512 tiles (24 of the 32 zmm registers hold accumulators).
pub(super) const MR_AVX512: usize = 8;
/// Rows of the AVX2 tiles (12 of the 16 ymm registers hold accumulators).
pub(super) const MR_AVX2: usize = 6;
/// SIMD vectors per tile row.
pub(super) const NV_AVX512: usize = 2;

micro_kernel!(
    f32_avx512,
    f32,
    "avx512f",
    16,
    MR_AVX512,
    NV_AVX512,
    _mm512_setzero_ps,
    _mm512_loadu_ps,
    _mm512_set1_ps,
    _mm512_fmadd_ps,
    _mm512_add_ps,
    _mm512_storeu_ps
);
micro_kernel!(
    f64_avx512,
    f64,
    "avx512f",
    8,
    MR_AVX512,
    NV_AVX512,
    _mm512_setzero_pd,
    _mm512_loadu_pd,
    _mm512_set1_pd,
    _mm512_fmadd_pd,
    _mm512_add_pd,
    _mm512_storeu_pd
);
micro_kernel!(
    f32_avx2,
    f32,
    "avx2,fma",
    8,
    MR_AVX2,
    2,
    _mm256_setzero_ps,
    _mm256_loadu_ps,
    _mm256_set1_ps,
    _mm256_fmadd_ps,
    _mm256_add_ps,
    _mm256_storeu_ps
);
micro_kernel!(
    f64_avx2,
    f64,
    "avx2,fma",
    4,
    MR_AVX2,
    2,
    _mm256_setzero_pd,
    _mm256_loadu_pd,
    _mm256_set1_pd,
    _mm256_fmadd_pd,
    _mm256_add_pd,
    _mm256_storeu_pd
);
