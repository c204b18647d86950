//! `gemm` (f32/f64) and `matmul_generic` (i32) against `reference::matmul_f64`, with plain,
//! transposed (swapped strides), reversed (negative stride) and offset operands.

mod common;

use common::{in_pool, Rng};
use ferrograd_kernels::matmul::{gemm, matmul_generic, GemmElement};
use ferrograd_kernels::reference::matmul_f64;
use ferrograd_kernels::Element;

/// How an `r×c` operand is stored.
#[derive(Clone, Copy, Debug)]
enum Store {
    RowMajor,
    /// Stored as its transpose (`c×r` row-major): strides swapped.
    Transposed,
    /// Row-major with rows in reverse order (negative row stride).
    Reversed,
}

const STORES: [Store; 3] = [Store::RowMajor, Store::Transposed, Store::Reversed];

/// Stores the row-major `r×c` matrix `m` behind a 2-element pad; returns buffer and view.
fn store<T: Element>(m: &[T], r: usize, c: usize, how: Store) -> (Vec<T>, (usize, isize, isize)) {
    let pad = 2;
    let mut buf = vec![T::from_f64(99.0); r * c + 2 * pad];
    let view = match how {
        Store::RowMajor => (pad, c as isize, 1),
        Store::Transposed => (pad, 1, r as isize),
        Store::Reversed => (pad + r.saturating_sub(1) * c, -(c as isize), 1),
    };
    for i in 0..r {
        for j in 0..c {
            let p = view.0 as isize + i as isize * view.1 + j as isize * view.2;
            buf[p as usize] = m[i * c + j];
        }
    }
    (buf, view)
}

fn check_gemm<T: GemmElement>(rng: &mut Rng, m: usize, k: usize, n: usize, eps: f64) {
    let a: Vec<T> = rng.vec(m * k, -1.0, 1.0);
    let b: Vec<T> = rng.vec(k * n, -1.0, 1.0);
    let f = |v: &[T]| v.iter().map(|x| x.to_f64()).collect::<Vec<_>>();
    let want = matmul_f64(&f(&a), &f(&b), m, k, n);
    let abs = matmul_f64(
        &f(&a).iter().map(|x| x.abs()).collect::<Vec<_>>(),
        &f(&b).iter().map(|x| x.abs()).collect::<Vec<_>>(),
        m,
        k,
        n,
    );
    let c0: Vec<T> = rng.vec(m * n, -1.0, 1.0);
    for sa in STORES {
        for sb in STORES {
            let (ab, av) = store(&a, m, k, sa);
            let (bb, bv) = store(&b, k, n, sb);
            for accumulate in [false, true] {
                let mut c = c0.clone();
                gemm(m, n, k, &ab, av, &bb, bv, &mut c, accumulate);
                for i in 0..m * n {
                    let w = want[i] + if accumulate { c0[i].to_f64() } else { 0.0 };
                    let tol = eps * (k as f64 + 2.0) * (abs[i] + 1.0);
                    let got = c[i].to_f64();
                    assert!(
                        (got - w).abs() <= tol,
                        "{} {m}x{k}x{n} {sa:?}·{sb:?} acc={accumulate} [{i}]: {got} vs {w}",
                        T::NAME
                    );
                }
            }
        }
    }
}

const SHAPES: &[(usize, usize, usize)] = &[
    (1, 1, 1),
    (3, 5, 7),
    (7, 5, 3),
    (64, 64, 64),
    (300, 200, 100),
    (1, 300, 1),
    (33, 1, 65),
    (2, 0, 3),
    (0, 4, 5),
    (4, 5, 0),
];

#[test]
fn gemm_f32_f64_match_reference() {
    let mut rng = Rng::new(30);
    in_pool(2, || {
        for &(m, k, n) in SHAPES {
            check_gemm::<f32>(&mut rng, m, k, n, f32::EPSILON as f64);
            check_gemm::<f64>(&mut rng, m, k, n, f64::EPSILON);
        }
    });
}

#[test]
fn gemm_k0_zeroes_or_keeps_output() {
    let mut c = vec![5.0f32; 6];
    gemm(2, 3, 0, &[], (0, 0, 1), &[], (0, 3, 1), &mut c, true);
    assert_eq!(c, vec![5.0; 6]);
    gemm(2, 3, 0, &[], (0, 0, 1), &[], (0, 3, 1), &mut c, false);
    assert_eq!(c, vec![0.0; 6]);
    // m = 0 / n = 0: nothing is read or written.
    let mut empty: Vec<f64> = vec![];
    gemm(0, 3, 4, &[], (0, 4, 1), &[1.0; 12], (0, 3, 1), &mut empty, false);
    gemm(3, 0, 4, &[1.0; 12], (0, 4, 1), &[], (0, 0, 1), &mut empty, false);
}

#[test]
fn gemm_small_exact_values() {
    // [[1,2],[3,4]]·[[5,6],[7,8]] = [[19,22],[43,50]]; Bᵀ stored column-major.
    let a = [1.0f32, 2.0, 3.0, 4.0];
    let bt = [5.0f32, 7.0, 6.0, 8.0];
    let mut c = [0.0f32; 4];
    gemm(2, 2, 2, &a, (0, 2, 1), &bt, (0, 1, 2), &mut c, false);
    assert_eq!(c, [19.0, 22.0, 43.0, 50.0]);
}

#[test]
#[should_panic(expected = "gemm operand out of bounds")]
fn gemm_rejects_views_past_the_buffer() {
    let mut c = [0.0f32; 4];
    gemm(2, 2, 2, &[1.0; 3], (0, 2, 1), &[1.0; 4], (0, 2, 1), &mut c, false);
}

#[test]
fn matmul_generic_i32_is_exact() {
    let mut rng = Rng::new(31);
    for &(m, k, n) in SHAPES.iter().filter(|s| s.0 * s.1 * s.2 <= 300_000) {
        let a: Vec<i32> = (0..m * k).map(|_| rng.below(201) as i32 - 100).collect();
        let b: Vec<i32> = (0..k * n).map(|_| rng.below(201) as i32 - 100).collect();
        let f = |v: &[i32]| v.iter().map(|&x| x as f64).collect::<Vec<_>>();
        let want = matmul_f64(&f(&a), &f(&b), m, k, n);
        for sa in STORES {
            for sb in STORES {
                let (ab, av) = store(&a, m, k, sa);
                let (bb, bv) = store(&b, k, n, sb);
                let mut c = vec![7i32; m * n];
                matmul_generic(m, n, k, &ab, av, &bb, bv, &mut c);
                let got: Vec<f64> = c.iter().map(|&x| x as f64).collect();
                assert_eq!(got, want, "i32 {m}x{k}x{n} {sa:?}·{sb:?}");
            }
        }
    }
}
