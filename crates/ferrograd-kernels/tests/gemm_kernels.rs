//! ferrograd's packed GEMM (`gemm` module) against the naive `reference::matmul_f64` on odd
//! shapes, every operand layout, both kernel instruction sets (AVX2 forced through `Options`),
//! both orientations, and its determinism: the same bits for any number of parallel tasks.

mod common;

use common::Rng;
use ferrograd_kernels::gemm::{Gather, Isa, Options};
use ferrograd_kernels::matmul::{gemm_gathered, gemm_with, GemmElement, PackedRhs};
use ferrograd_kernels::reference::matmul_f64;
use ferrograd_kernels::Element;

/// How an `r×c` operand sits in its buffer.
#[derive(Clone, Copy, Debug)]
enum Store {
    RowMajor,
    /// Stored as its transpose: unit row stride.
    Transposed,
    /// Neither stride is 1: every other column of a padded row-major buffer.
    Strided,
    /// Transposed with rows walked backwards (negative column stride) and padding.
    ReversedTransposed,
    /// Stored as its transpose with 3 unused slots after each column (unit row stride).
    TransposedPadded,
}

const STORES: [Store; 4] = [Store::RowMajor, Store::Transposed, Store::Strided, Store::ReversedTransposed];
const DIMS: [usize; 6] = [1, 7, 17, 33, 65, 130];

/// Writes the row-major `r×c` matrix `m` into a buffer laid out as `how`; returns the buffer and
/// the `(offset, row_stride, col_stride)` view. Unused slots hold NaN, so reading one shows.
fn store<T: Element>(m: &[T], r: usize, c: usize, how: Store) -> (Vec<T>, (usize, isize, isize)) {
    let (len, view) = match how {
        Store::RowMajor => (r * c + 3, (3, c as isize, 1)),
        Store::Transposed => (r * c + 1, (1, 1, r as isize)),
        Store::Strided => (r * (2 * c + 1) + 2, (2, (2 * c + 1) as isize, 2)),
        Store::ReversedTransposed => {
            let ld = r + 2;
            (ld * c + 1, (1 + (c - 1) * ld, 1, -(ld as isize)))
        }
        Store::TransposedPadded => ((r + 3) * c + 2, (2, 1, (r + 3) as isize)),
    };
    let mut buf = vec![T::from_f64(f64::NAN); len];
    for i in 0..r {
        for j in 0..c {
            let p = view.0 as isize + i as isize * view.1 + j as isize * view.2;
            buf[p as usize] = m[i * c + j];
        }
    }
    (buf, view)
}

/// One product under one configuration; returns C.
#[allow(clippy::too_many_arguments)]
fn run<T: GemmElement>(
    (m, k, n): (usize, usize, usize),
    a: &[T],
    b: &[T],
    (sa, sb): (Store, Store),
    c0: &[T],
    accumulate: bool,
    options: Options,
) -> Vec<T> {
    let (ab, av) = store(a, m, k, sa);
    let (bb, bv) = store(b, k, n, sb);
    let mut c = c0.to_vec();
    gemm_with(m, n, k, &ab, av, &bb, bv, &mut c, accumulate, options);
    c
}

fn isas() -> Vec<Isa> {
    [Isa::Avx512, Isa::Avx2].into_iter().filter(|i| i.available()).collect()
}

/// Checks every configuration listed by `configs` for one shape against the reference.
fn check_shape<T: GemmElement>(
    rng: &mut Rng,
    (m, k, n): (usize, usize, usize),
    configs: &[(Store, Store, bool, Options)],
) {
    let a: Vec<T> = rng.vec(m * k, -1.0, 1.0);
    let b: Vec<T> = rng.vec(k * n, -1.0, 1.0);
    let c0: Vec<T> = rng.vec(m * n, -1.0, 1.0);
    let f = |v: &[T]| v.iter().map(|x| x.to_f64()).collect::<Vec<_>>();
    let abs = |v: &[T]| v.iter().map(|x| x.to_f64().abs()).collect::<Vec<_>>();
    let want = matmul_f64(&f(&a), &f(&b), m, k, n);
    let bound = matmul_f64(&abs(&a), &abs(&b), m, k, n);
    let eps = if T::NAME == "float32" { f32::EPSILON as f64 } else { f64::EPSILON };
    for &(sa, sb, accumulate, options) in configs {
        let c = run((m, k, n), &a, &b, (sa, sb), &c0, accumulate, options);
        for i in 0..m * n {
            let w = want[i] + if accumulate { c0[i].to_f64() } else { 0.0 };
            let tol = eps * (k as f64 + 2.0) * (bound[i] + 1.0);
            let got = c[i].to_f64();
            assert!(
                (got - w).abs() <= tol,
                "{} {m}x{k}x{n} {sa:?}·{sb:?} acc={accumulate} {options:?} [{i}]: {got} vs {w}",
                T::NAME
            );
        }
    }
}

/// Every (m, k, n) from [`DIMS`]; the configurations rotate so each layout pair, beta, kernel,
/// orientation and task count meets many shapes.
fn sweep<T: GemmElement>(seed: u64) {
    let mut rng = Rng::new(seed);
    let isas = isas();
    let mut turn = 0usize;
    for m in DIMS {
        for k in DIMS {
            for n in DIMS {
                let mut configs = Vec::new();
                for (si, sa) in STORES.into_iter().enumerate() {
                    let sb = STORES[(si + turn) % STORES.len()];
                    let options = Options {
                        isa: isas.get(turn % isas.len().max(1)).copied(),
                        tasks: Some(1 + turn % 3),
                        swap: [None, Some(false), Some(true)][(turn / 3) % 3],
                    };
                    configs.push((sa, sb, turn % 2 == 1, options));
                    turn += 1;
                }
                check_shape::<T>(&mut rng, (m, k, n), &configs);
            }
        }
    }
}

#[test]
fn odd_shapes_match_reference_f32() {
    sweep::<f32>(180);
}

#[test]
fn odd_shapes_match_reference_f64() {
    sweep::<f64>(181);
}

#[test]
fn every_layout_pair_and_beta_on_one_shape() {
    let mut rng = Rng::new(182);
    let mut configs = Vec::new();
    for sa in STORES {
        for sb in STORES {
            for accumulate in [false, true] {
                for isa in isas() {
                    for swap in [false, true] {
                        configs.push((
                            sa,
                            sb,
                            accumulate,
                            Options { isa: Some(isa), tasks: Some(2), swap: Some(swap) },
                        ));
                    }
                }
            }
        }
    }
    // Deeper than one K block and wider than one N block (f32: KC 256, NC 512).
    check_shape::<f32>(&mut rng, (37, 300, 530), &configs);
    check_shape::<f64>(&mut rng, (37, 300, 530), &configs);
}

/// Column-major operands go through the tiled transposing pack (8×8 for f32, 4×4 for f64):
/// depths and widths just under, at and over the tile and panel sizes, padded and reversed
/// columns, both kernels and both orientations (so A's and B's packs both transpose).
#[test]
fn transposing_packs_on_tile_edges() {
    let mut rng = Rng::new(186);
    let mut configs = Vec::new();
    for (sa, sb) in [
        (Store::RowMajor, Store::TransposedPadded),
        (Store::RowMajor, Store::Transposed),
        (Store::TransposedPadded, Store::TransposedPadded),
        (Store::RowMajor, Store::ReversedTransposed),
    ] {
        for isa in isas() {
            for swap in [false, true] {
                configs.push((
                    sa,
                    sb,
                    swap,
                    Options { isa: Some(isa), tasks: Some(1 + swap as usize), swap: Some(swap) },
                ));
            }
        }
    }
    for (m, k, n) in [(3, 8, 8), (9, 7, 31), (13, 9, 33), (8, 16, 16), (25, 31, 65), (17, 257, 40), (6, 4, 5)] {
        check_shape::<f32>(&mut rng, (m, k, n), &configs);
        check_shape::<f64>(&mut rng, (m, k, n), &configs);
    }
}

/// The same bits for 1..=7 tasks, both orientations and both kernels: each output element is
/// one fixed sum, whatever the split.
fn check_bitwise<T: GemmElement>(seed: u64, (m, k, n): (usize, usize, usize)) {
    let mut rng = Rng::new(seed);
    let a: Vec<T> = rng.vec(m * k, -1.0, 1.0);
    let b: Vec<T> = rng.vec(k * n, -1.0, 1.0);
    let c0: Vec<T> = rng.vec(m * n, -1.0, 1.0);
    for (sa, sb) in
        [(Store::RowMajor, Store::RowMajor), (Store::Transposed, Store::Strided), (Store::RowMajor, Store::Transposed)]
    {
        for accumulate in [false, true] {
            let base =
                run((m, k, n), &a, &b, (sa, sb), &c0, accumulate, Options { tasks: Some(1), ..Options::default() });
            let bits = |c: &[T]| c.iter().map(|x| x.to_f64().to_bits()).collect::<Vec<_>>();
            for isa in isas() {
                for tasks in [1, 2, 3, 7] {
                    for swap in [false, true] {
                        let options = Options { isa: Some(isa), tasks: Some(tasks), swap: Some(swap) };
                        let c = run((m, k, n), &a, &b, (sa, sb), &c0, accumulate, options);
                        assert!(bits(&c) == bits(&base), "{} {m}x{k}x{n} {sa:?}·{sb:?} {options:?}", T::NAME);
                    }
                }
            }
            // And the default path (the global pool, parallel when the product is big enough).
            let c = run((m, k, n), &a, &b, (sa, sb), &c0, accumulate, Options::default());
            assert!(bits(&c) == bits(&base), "{} {m}x{k}x{n} default", T::NAME);
        }
    }
}

#[test]
fn results_are_bitwise_equal_for_any_split() {
    check_bitwise::<f32>(183, (130, 600, 310));
    check_bitwise::<f64>(184, (310, 300, 130));
    check_bitwise::<f32>(185, (64, 147, 700));
}

#[test]
fn exact_small_products() {
    // [[1,2],[3,4]]·[[5,6],[7,8]] = [[19,22],[43,50]] on every kernel and orientation.
    for isa in isas() {
        for swap in [false, true] {
            let options = Options { isa: Some(isa), tasks: Some(1), swap: Some(swap) };
            let mut c = [1.0f32; 4];
            gemm_with(
                2,
                2,
                2,
                &[1.0, 2.0, 3.0, 4.0],
                (0, 2, 1),
                &[5.0, 6.0, 7.0, 8.0],
                (0, 2, 1),
                &mut c,
                true,
                options,
            );
            assert_eq!(c, [20.0, 23.0, 44.0, 51.0], "{options:?}");
            let mut c = [9.0f64; 4];
            gemm_with(
                2,
                2,
                2,
                &[1.0, 3.0, 2.0, 4.0],
                (0, 1, 2),
                &[5.0, 7.0, 6.0, 8.0],
                (0, 1, 2),
                &mut c,
                false,
                options,
            );
            assert_eq!(c, [19.0, 22.0, 43.0, 50.0], "{options:?}");
        }
    }
}

/// A right operand packed once (`PackedRhs`, the RNN's recurrent weights) gives the same bits
/// as the plain product, for shapes crossing the K (256) and N (512) block sizes, partial row
/// tiles, every layout of B and of A, with and without accumulation.
fn check_packed_rhs<T: GemmElement>(seed: u64) {
    let mut rng = Rng::new(seed);
    for (m, k, n) in [(1, 1, 1), (7, 33, 65), (16, 200, 800), (13, 300, 530), (9, 257, 17), (33, 5, 1030)] {
        for (si, sb) in STORES.into_iter().enumerate() {
            let sa = STORES[(si + 1) % STORES.len()];
            let a: Vec<T> = rng.vec(m * k, -1.0, 1.0);
            let b: Vec<T> = rng.vec(k * n, -1.0, 1.0);
            let c0: Vec<T> = rng.vec(m * n, -1.0, 1.0);
            let (ab, av) = store(&a, m, k, sa);
            let (bb, bv) = store(&b, k, n, sb);
            let packed = PackedRhs::new(k, n, &bb, bv);
            for accumulate in [false, true] {
                let want = run((m, k, n), &a, &b, (sa, sb), &c0, accumulate, Options::default());
                let mut got = c0.clone();
                packed.gemm(m, &ab, av, &mut got, accumulate);
                let bits = |v: &[T]| v.iter().map(|x| x.to_f64().to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "{} {m}x{k}x{n} {sa:?}·{sb:?} acc={accumulate}", T::NAME);
            }
        }
    }
}

#[test]
fn packed_rhs_matches_plain_gemm_bitwise() {
    check_packed_rhs::<f32>(91);
    check_packed_rhs::<f64>(92);
}

/// A gathered right operand (`Gather`: element `(p, j)` at `src[rows[p] + cols[j]]`, the
/// convolution's columns) gives the same bits as the product with the operand written out:
/// shapes crossing the K and N block sizes and the tile edges, long runs of consecutive offsets
/// (copied whole), short ones and scattered offsets (gathered value by value), one and several
/// parallel tasks, rows split when C is narrow.
fn check_gathered<T: GemmElement>(seed: u64) {
    let mut rng = Rng::new(seed);
    let bits = |v: &[T]| v.iter().map(|x| x.to_f64().to_bits()).collect::<Vec<_>>();
    for (m, k, n, run) in
        [(1, 1, 1, 1), (7, 33, 65, 65), (48, 300, 530, 28), (512, 257, 100, 3), (64, 20, 1030, 1), (300, 9, 50, 7)]
    {
        let src: Vec<T> = rng.vec(k * 3 + n * 5 + 40, -1.0, 1.0);
        // Columns in runs of `run` consecutive offsets, the runs 5 apart; rows 3 apart, reversed.
        let cols: Vec<usize> = (0..n).map(|j| (j / run) * 5 * run + j % run).collect();
        let max_col = *cols.iter().max().unwrap_or(&0);
        let rows: Vec<usize> = (0..k).map(|p| (k - 1 - p) * 3).collect();
        assert!(k * 3 + max_col < src.len());
        let gather = Gather::new(&src, &rows, &cols).expect("offsets inside src");
        let dense: Vec<T> = (0..k * n).map(|i| src[rows[i / n] + cols[i % n]]).collect();
        let a: Vec<T> = rng.vec(m * k, -1.0, 1.0);
        for tasks in [1, 3] {
            let mut want = vec![T::zero(); m * n];
            let options = Options { tasks: Some(tasks), ..Options::default() };
            gemm_with(m, n, k, &a, (0, k as isize, 1), &dense, (0, n as isize, 1), &mut want, false, options);
            let mut got = vec![T::zero(); m * n];
            common::in_pool(tasks.min(2), || gemm_gathered(m, &a, (0, k as isize, 1), &gather, &mut got));
            assert_eq!(bits(&got), bits(&want), "{} {m}x{k}x{n} runs of {run}", T::NAME);
        }
    }
    // An offset past the end of src is refused, not read.
    let src: Vec<T> = rng.vec(10, -1.0, 1.0);
    assert!(Gather::new(&src, &[0, 5], &[0, 4]).is_some());
    assert!(Gather::new(&src, &[0, 5], &[0, 5]).is_none());
    assert!(Gather::new(&src, &[usize::MAX], &[1]).is_none());
}

#[test]
fn gathered_rhs_matches_written_out_gemm_bitwise() {
    check_gathered::<f32>(93);
    check_gathered::<f64>(94);
}
