//! `reduce`, `reduce_slice` and `arg_reduce` against f64 / exact references.

mod common;

use common::{in_pool, make_view, Kind, Rng, KINDS};
use ferrograd_kernels::layout::Layout;
use ferrograd_kernels::par::Cost;
use ferrograd_kernels::reduce::{arg_reduce, reduce, reduce_slice, Max, Min, Prod, Reducer, Sum, SumAbs, SumSq};
use ferrograd_kernels::reference::{gather, sum_f64};
use ferrograd_kernels::Element;
use half::f16;

/// The values reduced into each output, in row-major order of the kept axes (groups) and of the
/// reduced axes (within a group).
fn groups<T: Element>(buf: &[T], l: &Layout, axes: &[bool]) -> Vec<Vec<T>> {
    let mut perm: Vec<usize> = (0..l.ndim()).filter(|&d| !axes[d]).collect();
    perm.extend((0..l.ndim()).filter(|&d| axes[d]));
    let p = l.permute(&perm);
    let m: usize = (0..l.ndim()).filter(|&d| axes[d]).map(|d| l.shape[d]).product();
    let n_out: usize = (0..l.ndim()).filter(|&d| !axes[d]).map(|d| l.shape[d]).product();
    let flat = gather(buf, &p);
    (0..n_out).map(|i| flat[i * m..(i + 1) * m].to_vec()).collect()
}

fn subsets(nd: usize) -> Vec<Vec<bool>> {
    (0..1u32 << nd).map(|mask| (0..nd).map(|d| mask >> d & 1 == 1).collect()).collect()
}

/// Checks a float reducer against `want(group)` with error ≤ `tol · scale(group)`.
#[allow(clippy::too_many_arguments)]
fn check_float<T: Element, R: Reducer<T>>(
    buf: &[T],
    l: &Layout,
    axes: &[bool],
    r: R,
    acc_f64: impl Fn(R::Acc) -> f64,
    want: impl Fn(&[f64]) -> f64,
    scale: impl Fn(&[f64]) -> f64,
    tol: f64,
    what: &str,
) {
    let gs = groups(buf, l, axes);
    let mut out = vec![r.init(); gs.len()];
    reduce(buf, l, axes, r, &mut out);
    for (i, (g, &o)) in gs.iter().zip(&out).enumerate() {
        let g: Vec<f64> = g.iter().map(|x| x.to_f64()).collect();
        let (got, w) = (acc_f64(o), want(&g));
        let ok = (got.is_nan() && w.is_nan()) || got == w || (got - w).abs() <= tol * scale(&g);
        assert!(ok, "{what} {:?} axes {axes:?} out {i}: got {got}, want {w} (m = {})", l.shape, g.len());
    }
}

fn abs_sum(g: &[f64]) -> f64 {
    sum_f64(g.iter().map(|x| x.abs()))
}

fn float_suite(rng: &mut Rng, shape: &[usize], kind: Kind, tol: f64) {
    let (buf, l) = make_view(shape, kind, || rng.range(-2.0, 2.0) as f32);
    for axes in subsets(shape.len()) {
        let w = format!("{kind:?}");
        check_float(&buf, &l, &axes, Sum, |a| a as f64, |g| sum_f64(g.iter().copied()), abs_sum, tol, &w);
        check_float(&buf, &l, &axes, SumAbs, |a| a as f64, abs_sum, abs_sum, tol, &w);
        let sq = |g: &[f64]| sum_f64(g.iter().map(|x| x * x));
        check_float(&buf, &l, &axes, SumSq, |a| a as f64, sq, sq, tol, &w);
        let max = |g: &[f64]| g.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let min = |g: &[f64]| g.iter().copied().fold(f64::INFINITY, f64::min);
        check_float(&buf, &l, &axes, Max, |a| a as f64, max, |_| 0.0, 0.0, &w);
        check_float(&buf, &l, &axes, Min, |a| a as f64, min, |_| 0.0, 0.0, &w);
    }
    // Products of values near 1, so long groups neither overflow nor vanish.
    let (buf, l) = make_view(shape, kind, || rng.range(0.999, 1.001));
    for axes in subsets(shape.len()) {
        let prod = |g: &[f64]| g.iter().product::<f64>();
        check_float(&buf, &l, &axes, Prod, |a| a, prod, prod, 1e-12, "f64 prod");
    }
}

#[test]
fn float_reductions_over_every_axis_subset() {
    let mut rng = Rng::new(10);
    in_pool(2, || {
        for kind in KINDS {
            float_suite(&mut rng, &[5, 6, 7], kind, 1e-6);
            float_suite(&mut rng, &[1, 9, 1], kind, 1e-6);
            float_suite(&mut rng, &[3, 0, 4], kind, 1e-6);
            float_suite(&mut rng, &[40, 64, 64], kind, 1e-6);
        }
        float_suite(&mut rng, &[5000, 3, 3], Kind::Contiguous, 1e-6);
        float_suite(&mut rng, &[3, 3, 9000], Kind::Permuted, 1e-6);
    });
}

#[test]
fn f16_reductions_accumulate_in_f32() {
    let mut rng = Rng::new(17);
    let sum = |g: &[f64]| sum_f64(g.iter().copied());
    let max = |g: &[f64]| g.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = |g: &[f64]| g.iter().copied().fold(f64::INFINITY, f64::min);
    for kind in KINDS {
        for shape in [&[5usize, 6, 7][..], &[30, 40, 50]] {
            let (buf, l) = make_view(shape, kind, || f16::from_f64(rng.range(-2.0, 2.0)));
            for axes in subsets(3) {
                // Accumulating in f32, not f16: error far below f16's 1e-3 resolution.
                check_float(&buf, &l, &axes, Sum, |a| a as f64, sum, abs_sum, 1e-6, "f16");
                check_float(&buf, &l, &axes, Max, |a| a as f64, max, |_| 0.0, 0.0, "f16");
                check_float(&buf, &l, &axes, Min, |a| a as f64, min, |_| 0.0, 0.0, "f16");
            }
        }
    }
    // 4096 ones: an f16 accumulator would stall at 2048.
    assert_eq!(reduce_slice(&[f16::ONE; 4096], Sum), 4096.0f32);
    assert!(reduce_slice(&[f16::ONE, f16::NAN, f16::ZERO], Max).is_nan());
}

#[test]
fn large_reductions_over_every_axis_subset_run_parallel() {
    // Above `Cost::Read.min_parallel()`, so every path splits across threads.
    let shape = [48, 110, 100];
    assert!(shape.iter().product::<usize>() >= Cost::Read.min_parallel());
    let mut rng = Rng::new(16);
    let sum = |g: &[f64]| sum_f64(g.iter().copied());
    let max = |g: &[f64]| g.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    in_pool(2, || {
        for kind in [Kind::Contiguous, Kind::Permuted, Kind::Stepped] {
            let (buf, l) = make_view(&shape, kind, || rng.range(-2.0, 2.0) as f32);
            for axes in subsets(3) {
                let w = format!("large {kind:?}");
                check_float(&buf, &l, &axes, Sum, |a| a as f64, sum, abs_sum, 1e-6, &w);
                check_float(&buf, &l, &axes, Max, |a| a as f64, max, |_| 0.0, 0.0, &w);
            }
        }
    });
}

fn int_suite<T: Element>(rng: &mut Rng, shape: &[usize], kind: Kind, lo: f64, hi: f64, wrap: impl Fn(i128) -> T)
where
    Sum: Reducer<T, Acc = T>,
    Prod: Reducer<T, Acc = T>,
    Max: Reducer<T, Acc = T>,
    Min: Reducer<T, Acc = T>,
{
    let (buf, l) = make_view(shape, kind, || T::from_f64(rng.range(lo, hi).floor()));
    let as_i = |x: T| x.to_f64() as i128;
    for axes in subsets(shape.len()) {
        let gs = groups(&buf, &l, &axes);
        let run = |r: &dyn Fn(&mut [T])| {
            let mut out = vec![T::default(); gs.len()];
            r(&mut out);
            out
        };
        let sum = run(&|o| reduce(&buf, &l, &axes, Sum, o));
        let prod = run(&|o| reduce(&buf, &l, &axes, Prod, o));
        let max = run(&|o| reduce(&buf, &l, &axes, Max, o));
        let min = run(&|o| reduce(&buf, &l, &axes, Min, o));
        for (i, g) in gs.iter().enumerate() {
            // Wrapping arithmetic is exact modulo 2^bits, so order does not matter.
            let s = wrap(g.iter().fold(0i128, |a, &x| a.wrapping_add(as_i(x)) % (1 << 64)));
            let p = wrap(g.iter().fold(1i128, |a, &x| a.wrapping_mul(as_i(x)) % (1 << 64)));
            assert_eq!(sum[i].to_f64(), s.to_f64(), "{} sum {shape:?} {kind:?} {axes:?}", T::NAME);
            assert_eq!(prod[i].to_f64(), p.to_f64(), "{} prod {shape:?} {kind:?} {axes:?}", T::NAME);
            let mx = g.iter().map(|&x| as_i(x)).max();
            let mn = g.iter().map(|&x| as_i(x)).min();
            assert_eq!(max[i].to_f64(), mx.map_or(Max.init().to_f64(), |v| v as f64));
            assert_eq!(min[i].to_f64(), mn.map_or(Min.init().to_f64(), |v| v as f64));
        }
    }
}

#[test]
fn integer_reductions_wrap_and_are_exact() {
    let mut rng = Rng::new(11);
    in_pool(2, || {
        for kind in KINDS {
            for shape in [&[5usize, 6, 7][..], &[2, 0, 3], &[40, 64, 64]] {
                int_suite::<i32>(&mut rng, shape, kind, -2e9, 2e9, |v| v as i32);
                int_suite::<i64>(&mut rng, shape, kind, -9e18, 9e18, |v| v as i64);
                int_suite::<u8>(&mut rng, shape, kind, 0.0, 256.0, |v| v as u8);
            }
        }
    });
    // A concrete overflow: 2^31 - 1 + 1 wraps to i32::MIN.
    let v = [i32::MAX, 1];
    assert_eq!(reduce_slice(&v, Sum), i32::MIN);
    assert_eq!(reduce_slice(&[200u8, 100], Sum), 44);
    // Integer SumSq / SumAbs accumulate in f64 and do not wrap.
    assert_eq!(reduce_slice(&[i32::MAX, i32::MIN], SumAbs), 4294967295.0);
    assert_eq!(reduce_slice(&[100_000i32; 3], SumSq), 3e10);
}

#[test]
fn long_reductions_on_every_path_are_accurate() {
    // Sizes chosen to hit: several column chunks and row blocks (leading axes reduced), long
    // strided runs split into parallel blocks, and full reductions of non-contiguous views.
    let mut rng = Rng::new(15);
    let sum = |g: &[f64]| sum_f64(g.iter().copied());
    let cases: &[(&[usize], Kind, &[bool])] = &[
        (&[300, 2000], Kind::Contiguous, &[true, false]),
        (&[300, 2000], Kind::Reversed, &[true, false]),
        (&[300, 2000], Kind::Stepped, &[true, false]),
        (&[120_000, 5], Kind::Contiguous, &[true, false]),
        (&[2000, 300], Kind::Permuted, &[false, true]),
        (&[3, 400, 400], Kind::Stepped, &[false, true, true]),
        (&[400, 3, 400], Kind::Stepped, &[true, false, true]),
        (&[800, 700], Kind::Permuted, &[true, true]),
        (&[800, 700], Kind::Stepped, &[true, true]),
        (&[800, 700], Kind::Broadcast, &[true, true]),
    ];
    in_pool(2, || {
        for &(shape, kind, axes) in cases {
            let (buf, l) = make_view(shape, kind, || rng.range(0.0, 1.0) as f32);
            check_float(&buf, &l, axes, Sum, |a| a as f64, sum, sum, 1e-6, &format!("{kind:?}"));
            let (buf, l) = make_view(shape, kind, || rng.range(-1.0, 1.0));
            check_float(&buf, &l, axes, Sum, |a| a, sum, abs_sum, 1e-15, &format!("f64 {kind:?}"));
        }
    });
}

#[test]
fn size_zero_axes_give_the_identity() {
    let buf: Vec<f32> = vec![];
    let l = Layout::contiguous(&[3, 0, 4]);
    let mut out = vec![7.0f32; 12];
    reduce(&buf, &l, &[false, true, false], Sum, &mut out);
    assert_eq!(out, vec![0.0; 12]);
    reduce(&buf, &l, &[false, true, false], Prod, &mut out);
    assert_eq!(out, vec![1.0; 12]);
    reduce(&buf, &l, &[false, true, false], Max, &mut out);
    assert_eq!(out, vec![f32::NEG_INFINITY; 12]);
    let mut all = [5.0f32];
    reduce(&buf, &l, &[true, true, true], Sum, &mut all);
    assert_eq!(all, [0.0]);
    let mut none: Vec<f32> = vec![];
    reduce(&buf, &l, &[true, false, false], Sum, &mut none);
    assert_eq!(reduce_slice(&buf, Sum), 0.0);
    assert_eq!(reduce_slice::<f32, _>(&[], Min), f32::INFINITY);
}

#[test]
fn max_min_propagate_nan_on_every_path() {
    let mut rng = Rng::new(12);
    in_pool(2, || {
        for shape in [&[5usize, 6, 7][..], &[40, 64, 64]] {
            for kind in [Kind::Contiguous, Kind::Permuted, Kind::Stepped] {
                let (mut buf, l) = make_view(shape, kind, || rng.range(-1.0, 1.0) as f32);
                for _ in 0..4 {
                    let i = rng.below(buf.len());
                    buf[i] = f32::NAN;
                }
                let nan_or =
                    |a: f64, x: f64, f: fn(f64, f64) -> f64| if a.is_nan() || x.is_nan() { f64::NAN } else { f(a, x) };
                let max = |g: &[f64]| g.iter().fold(f64::NEG_INFINITY, |a, &x| nan_or(a, x, f64::max));
                let min = |g: &[f64]| g.iter().fold(f64::INFINITY, |a, &x| nan_or(a, x, f64::min));
                for axes in subsets(3) {
                    check_float(&buf, &l, &axes, Max, |a| a as f64, max, |_| 0.0, 0.0, "nan max");
                    check_float(&buf, &l, &axes, Min, |a| a as f64, min, |_| 0.0, 0.0, "nan min");
                }
            }
        }
    });
    // NaN at the very first / last position of a long slice, and in the lane remainder.
    for pos in [0, 4095, 4096, 100_000, 100_002] {
        let mut v = vec![1.0f32; 100_003];
        v[pos] = f32::NAN;
        assert!(reduce_slice(&v, Max).is_nan(), "max nan at {pos}");
        assert!(reduce_slice(&v, Min).is_nan(), "min nan at {pos}");
        assert!(reduce_slice(&v, Sum).is_nan(), "sum nan at {pos}");
    }
    assert_eq!(reduce_slice(&[f64::NEG_INFINITY; 3], Max), f64::NEG_INFINITY);
    assert_eq!(reduce_slice(&[f64::INFINITY, -1.0], Min), -1.0);
}

#[test]
fn reduce_slice_4m_f32_is_accurate() {
    let mut rng = Rng::new(13);
    let n = 1 << 22;
    let pos = rng.vec_f32(n, 0.0, 1.0);
    let mixed = rng.vec_f32(n, -1.0, 1.0);
    for (v, name) in [(&pos, "uniform[0,1)"), (&mixed, "uniform[-1,1)")] {
        let exact = sum_f64(v.iter().map(|&x| x as f64));
        let scale = sum_f64(v.iter().map(|&x| (x as f64).abs()));
        let got = reduce_slice(v, Sum) as f64;
        let rel = (got - exact).abs() / scale;
        let naive = v.iter().sum::<f32>() as f64;
        let naive_rel = (naive - exact).abs() / scale;
        println!("{name}: relative error {rel:e} (sequential f32 loop: {naive_rel:e})");
        // Measured ~1e-10 (sequential loop: 3e-5 / 2e-8); bound: half an f32 ulp of the scale.
        assert!(rel < 6e-8, "{name}: relative error {rel:e}");
    }
}

/// First index of the maximum (minimum) along the last axis of each group; NaN wins at once.
fn arg_ref<T: Element>(g: &[T], want_max: bool) -> i64 {
    let mut best = 0;
    for (i, &x) in g.iter().enumerate() {
        if x.partial_cmp(&x).is_none() {
            return i as i64;
        }
        let better = if want_max { x > g[best] } else { x < g[best] };
        if better {
            best = i;
        }
    }
    best as i64
}

fn check_arg<T: Element>(buf: &[T], l: &Layout, what: &str) {
    for axis in 0..l.ndim() {
        let mut axes = vec![false; l.ndim()];
        axes[axis] = true;
        let gs = groups(buf, l, &axes);
        for want_max in [true, false] {
            let mut out = vec![-1i64; gs.len()];
            arg_reduce(buf, l, axis, want_max, &mut out);
            let want: Vec<i64> = gs.iter().map(|g| arg_ref(g, want_max)).collect();
            assert_eq!(out, want, "{what} axis {axis} max={want_max} {:?}", l.shape);
        }
    }
}

#[test]
fn arg_reduce_first_occurrence_and_nan() {
    let mut rng = Rng::new(14);
    for kind in KINDS {
        // Few distinct values: lots of ties.
        let (buf, l) = make_view(&[4, 5, 6], kind, || rng.below(3) as f32);
        check_arg(&buf, &l, "ties");
        let (mut buf, l) = make_view(&[4, 5, 6], kind, || rng.below(3) as f32);
        for _ in 0..10 {
            let i = rng.below(buf.len());
            buf[i] = f32::NAN;
        }
        check_arg(&buf, &l, "nan");
        let (buf, l) = make_view(&[3, 7], kind, || rng.below(5) as i32 - 2);
        check_arg(&buf, &l, "i32");
    }
    // All -inf: index 0 for both.
    let v = [f32::NEG_INFINITY; 4];
    let mut out = [9i64];
    arg_reduce(&v, &Layout::contiguous(&[4]), 0, true, &mut out);
    assert_eq!(out, [0]);
    // i64 values that f64 cannot tell apart.
    let big = [(1i64 << 60) + 1, (1i64 << 60) + 3, (1i64 << 60) + 2];
    arg_reduce(&big, &Layout::contiguous(&[3]), 0, true, &mut out);
    assert_eq!(out, [1]);
    arg_reduce(&big, &Layout::contiguous(&[3]), 0, false, &mut out);
    assert_eq!(out, [0]);
}
