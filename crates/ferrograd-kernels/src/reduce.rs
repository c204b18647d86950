//! Reductions over any set of axes, deterministic for any thread count.
//!
//! Contiguous runs are folded in fixed blocks of [`BLOCK`] elements with 16 independent lanes
//! (vectorised), and block results are combined pairwise. Block boundaries depend only on the
//! length, so the result is bitwise identical whether blocks run on 1 or N threads.

use half::f16;

use crate::element::Element;
use crate::layout::{coalesce, for_each_row, Layout, Strides};
use crate::par::{self, Cost};
use crate::simd_dispatch;

/// Elements folded sequentially (in 16 lanes) before results are combined pairwise.
pub const BLOCK: usize = 4096;
const LANES: usize = 16;

/// A monoid folded over elements of `T` into an accumulator.
pub trait Reducer<T: Element>: Copy + Send + Sync {
    type Acc: Copy + Send + Sync + std::fmt::Debug;
    fn init(&self) -> Self::Acc;
    fn fold(&self, acc: Self::Acc, x: T) -> Self::Acc;
    fn combine(&self, a: Self::Acc, b: Self::Acc) -> Self::Acc;
}

/// Σx. Floats accumulate in their own type (f16 in f32); integers wrap.
#[derive(Clone, Copy, Debug)]
pub struct Sum;
/// Πx.
#[derive(Clone, Copy, Debug)]
pub struct Prod;
/// max x (NaN wins, as in NumPy).
#[derive(Clone, Copy, Debug)]
pub struct Max;
/// min x (NaN wins, as in NumPy).
#[derive(Clone, Copy, Debug)]
pub struct Min;
/// Σx² (for the L2 norm).
#[derive(Clone, Copy, Debug)]
pub struct SumSq;
/// Σ|x| (for the L1 norm).
#[derive(Clone, Copy, Debug)]
pub struct SumAbs;

macro_rules! float_reducers {
    ($t:ty, $acc:ty, $to:expr) => {
        impl Reducer<$t> for Sum {
            type Acc = $acc;
            #[inline(always)]
            fn init(&self) -> $acc {
                0.0
            }
            #[inline(always)]
            fn fold(&self, a: $acc, x: $t) -> $acc {
                a + $to(x)
            }
            #[inline(always)]
            fn combine(&self, a: $acc, b: $acc) -> $acc {
                a + b
            }
        }
        impl Reducer<$t> for Prod {
            type Acc = $acc;
            #[inline(always)]
            fn init(&self) -> $acc {
                1.0
            }
            #[inline(always)]
            fn fold(&self, a: $acc, x: $t) -> $acc {
                a * $to(x)
            }
            #[inline(always)]
            fn combine(&self, a: $acc, b: $acc) -> $acc {
                a * b
            }
        }
        impl Reducer<$t> for SumSq {
            type Acc = $acc;
            #[inline(always)]
            fn init(&self) -> $acc {
                0.0
            }
            #[inline(always)]
            fn fold(&self, a: $acc, x: $t) -> $acc {
                let v = $to(x);
                a + v * v
            }
            #[inline(always)]
            fn combine(&self, a: $acc, b: $acc) -> $acc {
                a + b
            }
        }
        impl Reducer<$t> for SumAbs {
            type Acc = $acc;
            #[inline(always)]
            fn init(&self) -> $acc {
                0.0
            }
            #[inline(always)]
            fn fold(&self, a: $acc, x: $t) -> $acc {
                a + $to(x).abs()
            }
            #[inline(always)]
            fn combine(&self, a: $acc, b: $acc) -> $acc {
                a + b
            }
        }
        impl Reducer<$t> for Max {
            type Acc = $acc;
            #[inline(always)]
            fn init(&self) -> $acc {
                <$acc>::NEG_INFINITY
            }
            #[inline(always)]
            fn fold(&self, a: $acc, x: $t) -> $acc {
                let v = $to(x);
                if v > a || v != v {
                    v
                } else {
                    a
                }
            }
            #[inline(always)]
            fn combine(&self, a: $acc, b: $acc) -> $acc {
                self.fold(a, b as $t)
            }
        }
        impl Reducer<$t> for Min {
            type Acc = $acc;
            #[inline(always)]
            fn init(&self) -> $acc {
                <$acc>::INFINITY
            }
            #[inline(always)]
            fn fold(&self, a: $acc, x: $t) -> $acc {
                let v = $to(x);
                if v < a || v != v {
                    v
                } else {
                    a
                }
            }
            #[inline(always)]
            fn combine(&self, a: $acc, b: $acc) -> $acc {
                self.fold(a, b as $t)
            }
        }
    };
}
float_reducers!(f32, f32, |x: f32| x);
float_reducers!(f64, f64, |x: f64| x);

// f16 accumulates in f32; `combine` of Max/Min above casts through `$t`, so f16 is written out.
macro_rules! f16_reducer {
    ($r:ty, $init:expr, $fold:expr, $comb:expr) => {
        impl Reducer<f16> for $r {
            type Acc = f32;
            #[inline(always)]
            fn init(&self) -> f32 {
                $init
            }
            #[inline(always)]
            fn fold(&self, a: f32, x: f16) -> f32 {
                $fold(a, f32::from(x))
            }
            #[inline(always)]
            fn combine(&self, a: f32, b: f32) -> f32 {
                $comb(a, b)
            }
        }
    };
}
fn fmax(a: f32, v: f32) -> f32 {
    if v > a || v != v {
        v
    } else {
        a
    }
}
fn fmin(a: f32, v: f32) -> f32 {
    if v < a || v != v {
        v
    } else {
        a
    }
}
f16_reducer!(Sum, 0.0, |a, v| a + v, |a, b| a + b);
f16_reducer!(Prod, 1.0, |a, v| a * v, |a: f32, b| a * b);
f16_reducer!(SumSq, 0.0, |a, v: f32| a + v * v, |a, b| a + b);
f16_reducer!(SumAbs, 0.0, |a, v: f32| a + v.abs(), |a, b| a + b);
f16_reducer!(Max, f32::NEG_INFINITY, fmax, fmax);
f16_reducer!(Min, f32::INFINITY, fmin, fmin);

macro_rules! int_reducers {
    ($($t:ty),*) => {$(
        impl Reducer<$t> for Sum {
            type Acc = $t;
            #[inline(always)]
            fn init(&self) -> $t { 0 }
            #[inline(always)]
            fn fold(&self, a: $t, x: $t) -> $t { a.wrapping_add(x) }
            #[inline(always)]
            fn combine(&self, a: $t, b: $t) -> $t { a.wrapping_add(b) }
        }
        impl Reducer<$t> for Prod {
            type Acc = $t;
            #[inline(always)]
            fn init(&self) -> $t { 1 }
            #[inline(always)]
            fn fold(&self, a: $t, x: $t) -> $t { a.wrapping_mul(x) }
            #[inline(always)]
            fn combine(&self, a: $t, b: $t) -> $t { a.wrapping_mul(b) }
        }
        impl Reducer<$t> for Max {
            type Acc = $t;
            #[inline(always)]
            fn init(&self) -> $t { <$t>::MIN }
            #[inline(always)]
            fn fold(&self, a: $t, x: $t) -> $t { a.max(x) }
            #[inline(always)]
            fn combine(&self, a: $t, b: $t) -> $t { a.max(b) }
        }
        impl Reducer<$t> for Min {
            type Acc = $t;
            #[inline(always)]
            fn init(&self) -> $t { <$t>::MAX }
            #[inline(always)]
            fn fold(&self, a: $t, x: $t) -> $t { a.min(x) }
            #[inline(always)]
            fn combine(&self, a: $t, b: $t) -> $t { a.min(b) }
        }
        impl Reducer<$t> for SumSq {
            type Acc = f64;
            #[inline(always)]
            fn init(&self) -> f64 { 0.0 }
            #[inline(always)]
            fn fold(&self, a: f64, x: $t) -> f64 { a + (x as f64) * (x as f64) }
            #[inline(always)]
            fn combine(&self, a: f64, b: f64) -> f64 { a + b }
        }
        impl Reducer<$t> for SumAbs {
            type Acc = f64;
            #[inline(always)]
            fn init(&self) -> f64 { 0.0 }
            #[inline(always)]
            fn fold(&self, a: f64, x: $t) -> f64 { a + (x as f64).abs() }
            #[inline(always)]
            fn combine(&self, a: f64, b: f64) -> f64 { a + b }
        }
    )*};
}
int_reducers!(i32, i64, u8);

simd_dispatch! {
    /// Folds a slice in 16 interleaved lanes, then combines the lanes in a fixed tree.
    pub fn fold_lanes<T, R>(s: &[T], r: R) -> R::Acc
    where { T: Element, R: Reducer<T> }
    {
        let mut lanes = [r.init(); LANES];
        let chunks = s.chunks_exact(LANES);
        let rem = chunks.remainder();
        for c in chunks {
            for i in 0..LANES {
                lanes[i] = r.fold(lanes[i], c[i]);
            }
        }
        let mut w = LANES / 2;
        while w > 0 {
            for i in 0..w {
                lanes[i] = r.combine(lanes[i], lanes[i + w]);
            }
            w /= 2;
        }
        let mut acc = lanes[0];
        for &x in rem {
            acc = r.fold(acc, x);
        }
        acc
    }
}

/// Pairwise combination of block results, in a fixed tree.
fn combine_pairwise<T: Element, R: Reducer<T>>(r: R, mut v: Vec<R::Acc>) -> R::Acc {
    if v.is_empty() {
        return r.init();
    }
    while v.len() > 1 {
        let next = v.chunks(2).map(|p| if p.len() == 2 { r.combine(p[0], p[1]) } else { p[0] }).collect();
        v = next;
    }
    v[0]
}

/// Reduces a contiguous slice; parallel over blocks when long, same bits either way.
pub fn reduce_slice<T: Element, R: Reducer<T>>(s: &[T], r: R) -> R::Acc {
    if s.len() <= BLOCK {
        return fold_lanes(s, r);
    }
    let n_blocks = s.len().div_ceil(BLOCK);
    let blocks = par::map_tasks(n_blocks, s.len(), Cost::Light, |i| {
        fold_lanes(&s[i * BLOCK..((i + 1) * BLOCK).min(s.len())], r)
    });
    combine_pairwise(r, blocks)
}

/// Reduces the axes flagged in `reduce_axes`; `out` has one accumulator per kept element, in
/// row-major order of the kept axes. The caller finishes (mean scaling, sqrt, casts).
pub fn reduce<T: Element, R: Reducer<T>>(src: &[T], layout: &Layout, reduce_axes: &[bool], r: R, out: &mut [R::Acc]) {
    let kept: Vec<usize> = (0..layout.ndim()).filter(|&d| !reduce_axes[d]).collect();
    let red: Vec<usize> = (0..layout.ndim()).filter(|&d| reduce_axes[d]).collect();
    let sub = |axes: &[usize]| Layout {
        shape: axes.iter().map(|&d| layout.shape[d]).collect(),
        strides: axes.iter().map(|&d| layout.strides[d]).collect(),
        offset: 0,
    };
    let (kl, rl) = (sub(&kept), sub(&red));
    debug_assert_eq!(kl.numel(), out.len());
    let m = rl.numel();
    let (rshape, rstrides) = coalesce(&[&rl]);
    let (kshape, kstrides) = coalesce(&[&kl]);
    let rstride = [rstrides[0].clone()];
    let kstride = [kstrides[0].clone()];
    let total = m * out.len();

    // Reduced elements contiguous for each output: a vectorised fold per output.
    let inner_contig = rshape.len() <= 1 && rstride[0].first().copied().unwrap_or(1) == 1;
    if m == 0 || inner_contig {
        par::for_each_chunk(out, if m > 64 { Cost::Heavy } else { Cost::Light }, |start, o| {
            let mut rows = Vec::with_capacity(o.len());
            for_each_row(&kshape, &kstride, [layout.offset], start, o.len(), |_, n, [b]| {
                let s = *kstride[0].last().unwrap_or(&0);
                for j in 0..n as isize {
                    rows.push((b + j * s) as usize);
                }
            });
            for (acc, base) in o.iter_mut().zip(rows) {
                *acc = if m == 0 { r.init() } else { reduce_slice(&src[base..base + m], r) };
            }
        });
        return;
    }
    // Kept elements contiguous (reducing leading axes): accumulate whole rows, vectorised over the
    // kept axis; each output still folds its inputs in index order.
    let kept_contig = kshape.len() == 1 && kstride[0][0] == 1;
    if kept_contig && total >= out.len() {
        par::for_each_chunk(out, Cost::Light, |start, o| {
            o.fill(r.init());
            for_each_row(&rshape, &rstride, [layout.offset], 0, m, |_, n, [b]| {
                let s = *rstride[0].last().unwrap_or(&0);
                for j in 0..n as isize {
                    let base = (b + j * s) as usize + start;
                    fold_rows(o, &src[base..base + o.len()], r);
                }
            });
        });
        return;
    }
    // General strided case.
    par::for_each_chunk(out, Cost::Heavy, |start, o| {
        let mut bases = Vec::with_capacity(o.len());
        for_each_row(&kshape, &kstride, [layout.offset], start, o.len(), |_, n, [b]| {
            let s = *kstride[0].last().unwrap_or(&0);
            for j in 0..n as isize {
                bases.push((b + j * s) as usize);
            }
        });
        for (acc, base) in o.iter_mut().zip(bases) {
            let mut a = r.init();
            strided_fold(src, &rshape, &rstride, base, m, |x| a = r.fold(a, x));
            *acc = a;
        }
    });
}

fn strided_fold<T: Element>(
    src: &[T],
    shape: &[usize],
    strides: &[Strides; 1],
    base: usize,
    m: usize,
    mut f: impl FnMut(T),
) {
    let s = *strides[0].last().unwrap_or(&0);
    for_each_row(shape, strides, [base], 0, m, |_, n, [b]| {
        for j in 0..n as isize {
            f(src[(b + j * s) as usize]);
        }
    });
}

simd_dispatch! {
    /// `acc[j] = fold(acc[j], row[j])`.
    pub fn fold_rows<T, R>(acc: &mut [R::Acc], row: &[T], r: R)
    where { T: Element, R: Reducer<T> }
    {
        for (a, &x) in acc.iter_mut().zip(row) {
            *a = r.fold(*a, x);
        }
    }
}

/// Index of the maximum (`want_max`) or minimum along `axis`, first occurrence wins, NaN counts as
/// the extreme (as in NumPy). `out` is row-major over the other axes.
pub fn arg_reduce<T: Element>(src: &[T], layout: &Layout, axis: usize, want_max: bool, out: &mut [i64]) {
    let nd = layout.ndim();
    let mut perm: Vec<usize> = (0..nd).filter(|&d| d != axis).collect();
    perm.push(axis);
    let l = layout.permute(&perm);
    let n = layout.shape[axis];
    let stride = layout.strides[axis];
    let outer = Layout { shape: l.shape[..nd - 1].into(), strides: l.strides[..nd - 1].into(), offset: 0 };
    let (oshape, ostrides) = coalesce(&[&outer]);
    let ostr = [ostrides[0].clone()];
    let mut k = 0;
    for_each_row(&oshape, &ostr, [layout.offset], 0, out.len(), |_, cnt, [b]| {
        let s = *ostr[0].last().unwrap_or(&0);
        for j in 0..cnt as isize {
            let base = b + j * s;
            let (mut best, mut bi) = (f64::NAN, 0i64);
            for i in 0..n {
                let v = src[(base + i as isize * stride) as usize].to_f64();
                if v.is_nan() {
                    bi = i as i64;
                    break;
                }
                if i == 0 || (want_max && v > best) || (!want_max && v < best) {
                    best = v;
                    bi = i as i64;
                }
            }
            out[k] = bi;
            k += 1;
        }
    });
}
