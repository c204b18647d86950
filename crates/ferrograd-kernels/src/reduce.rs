//! Reductions over any set of axes, deterministic for any thread count.
//!
//! Contiguous runs are folded in fixed blocks of [`BLOCK`] elements with 64 independent lanes
//! (vectorised: four AVX-512 accumulators, enough to hide the add latency), and block results are
//! combined pairwise. Strided reductions fold leaves of a few hundred elements and combine them
//! pairwise too, so error grows like O(log n) on every path. Block boundaries and combination
//! trees depend only on the shapes, so results are bitwise identical on 1 or N threads.

use half::f16;

use crate::element::Element;
use crate::layout::{coalesce, for_each_row, Layout, Strides};
use crate::par::{self, Cost};
use crate::simd_dispatch;

/// Elements folded sequentially (in [`LANES`] lanes) before results are combined pairwise.
pub const BLOCK: usize = 4096;
/// Independent accumulators of [`fold_lanes`]: with one 16-lane accumulator a sum is bound by
/// the add latency (~40 GB/s in cache); four reach ~90 GB/s.
const LANES: usize = 64;

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
                if v > a || v.is_nan() {
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
                if v < a || v.is_nan() {
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
    if v > a || v.is_nan() {
        v
    } else {
        a
    }
}
fn fmin(a: f32, v: f32) -> f32 {
    if v < a || v.is_nan() {
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
int_reducers!(i32, i64, u8, i8);

simd_dispatch! {
    /// Folds a slice in [`LANES`] interleaved lanes, then combines the lanes in a fixed tree.
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
    let blocks =
        par::map_tasks(n_blocks, s.len(), Cost::Read, |i| fold_lanes(&s[i * BLOCK..((i + 1) * BLOCK).min(s.len())], r));
    combine_pairwise(r, blocks)
}

/// Elements (or rows) folded sequentially before partial results are combined pairwise, so long
/// strided reductions keep O(log n) error growth.
const LEAF: usize = 256;
/// Rows folded sequentially into a row accumulator before combining pairwise.
const ROW_LEAF: usize = 64;
/// Elements per parallel task of one long strided reduction (a multiple of [`LEAF`]).
const STRIDED_BLOCK: usize = 1 << 15;
/// Output columns per task when reducing leading axes into a contiguous output.
const COL_CHUNK: usize = 2048;
/// Elements of work per task when reducing leading axes.
const ROW_TASK: usize = 1 << 17;

/// Streaming pairwise combination: partial results of equal level merge as soon as both exist
/// (a binary counter), so the tree depends only on how many partials are pushed.
struct Cascade<V> {
    stack: Vec<(u32, V)>,
}

impl<V> Cascade<V> {
    fn new() -> Self {
        Cascade { stack: Vec::new() }
    }

    fn push(&mut self, mut v: V, merge: &impl Fn(V, V) -> V) {
        let mut level = 0;
        while self.stack.last().is_some_and(|&(l, _)| l == level) {
            if let Some((_, earlier)) = self.stack.pop() {
                v = merge(earlier, v);
            }
            level += 1;
        }
        self.stack.push((level, v));
    }

    fn finish(mut self, merge: &impl Fn(V, V) -> V) -> Option<V> {
        let mut acc = self.stack.pop()?.1;
        while let Some((_, earlier)) = self.stack.pop() {
            acc = merge(earlier, acc);
        }
        Some(acc)
    }
}

/// Reduces the axes flagged in `reduce_axes`; `out` has one accumulator per kept element, in
/// row-major order of the kept axes. The caller finishes (mean scaling, sqrt, casts).
///
/// The reduced axes are visited in memory order (the operations are commutative up to rounding),
/// and every output's combination tree depends only on the shapes, so results are bitwise
/// identical for any thread count.
pub fn reduce<T: Element, R: Reducer<T>>(src: &[T], layout: &Layout, reduce_axes: &[bool], r: R, out: &mut [R::Acc]) {
    let nd = layout.ndim();
    debug_assert_eq!(reduce_axes.len(), nd);
    let kept: Vec<usize> = (0..nd).filter(|&d| !reduce_axes[d]).collect();
    let kl = Layout {
        shape: kept.iter().map(|&d| layout.shape[d]).collect(),
        strides: kept.iter().map(|&d| layout.strides[d]).collect(),
        offset: 0,
    };
    debug_assert_eq!(kl.numel(), out.len());
    if out.is_empty() {
        // Nothing to write; the reduced axes may still point past an empty buffer.
        return;
    }
    let (rl, shift) = reduced_in_memory_order(layout, reduce_axes);
    let m = rl.numel();
    if m == 0 {
        let init = r.init();
        par::for_each_chunk(out, Cost::Light, |_, o| o.fill(init));
        return;
    }
    // Position of the first reduced element of output 0 (never negative: it is the lowest
    // position the reduced axes reach from the view's offset).
    let base = (layout.offset as isize + shift) as usize;
    let (kshape, kstrides) = coalesce(&[&kl]);
    let kstride = [kstrides[0].clone()];
    let kinner = *kstride[0].last().unwrap_or(&0);
    // Calls `g(i, position)` with the first reduced element of each output in `[start, start+len)`.
    let outputs = |start: usize, len: usize, g: &mut dyn FnMut(usize, usize)| {
        let mut i = 0;
        for_each_row(&kshape, &kstride, [base], start, len, |_, n, [b]| {
            for j in 0..n as isize {
                g(i, (b + j * kinner) as usize);
                i += 1;
            }
        });
    };
    let (rshape, rstrides) = coalesce(&[&rl]);
    let rstride = [rstrides[0].clone()];

    if m == 1 {
        // Nothing to combine: one fold per output, walking the kept rows directly.
        par::for_each_chunk(out, Cost::Light, |start, o| {
            let mut i = 0;
            for_each_row(&kshape, &kstride, [base], start, o.len(), |_, n, [b]| {
                for j in 0..n as isize {
                    o[i] = r.fold(r.init(), src[(b + j * kinner) as usize]);
                    i += 1;
                }
            });
        });
    } else if rshape.len() == 1 && rstride[0][0] == 1 {
        // Each output reduces one contiguous run: the vectorised slice reduction.
        par::for_each_chunk_weighted(out, m, Cost::Read, |start, o| {
            outputs(start, o.len(), &mut |i, p| o[i] = reduce_slice(&src[p..p + m], r));
        });
    } else if kshape.len() == 1 && kinner == 1 {
        // Reducing leading axes into a contiguous output: accumulate whole rows (vectorised).
        reduce_rows(src, &rshape, &rstride, base, m, r, out);
    } else {
        par::for_each_chunk_weighted(out, m, Cost::Light, |start, o| {
            outputs(start, o.len(), &mut |i, p| o[i] = reduce_strided(src, &rshape, &rstride, p, m, r));
        });
    }
}

/// The reduced axes as a layout (offset 0) in memory order: stride-0 axes outermost, then by
/// decreasing |stride|, negative strides flipped. Returns the layout and the offset shift that
/// flipping introduced.
fn reduced_in_memory_order(layout: &Layout, reduce_axes: &[bool]) -> (Layout, isize) {
    let mut axes: Vec<(usize, isize)> =
        (0..layout.ndim()).filter(|&d| reduce_axes[d]).map(|d| (layout.shape[d], layout.strides[d])).collect();
    let mut shift = 0;
    for (n, s) in axes.iter_mut() {
        if *s < 0 && *n > 0 {
            shift += (*n as isize - 1) * *s;
            *s = -*s;
        }
    }
    // Stable: equal keys keep index order, so the order is a function of the layout alone.
    axes.sort_by_key(|&(_, s)| if s == 0 { (0, 0) } else { (1, usize::MAX - s as usize) });
    let l =
        Layout { shape: axes.iter().map(|a| a.0).collect(), strides: axes.iter().map(|a| a.1).collect(), offset: 0 };
    (l, shift)
}

/// Reduces `m` elements reached through `shape`/`strides` from `base`: parallel over fixed blocks
/// when long, a [`Cascade`] of [`LEAF`]-sized sequential folds inside each block.
fn reduce_strided<T: Element, R: Reducer<T>>(
    src: &[T],
    shape: &[usize],
    strides: &[Strides; 1],
    base: usize,
    m: usize,
    r: R,
) -> R::Acc {
    if m <= STRIDED_BLOCK {
        return fold_strided(src, shape, strides, base, 0, m, r);
    }
    let n_blocks = m.div_ceil(STRIDED_BLOCK);
    let blocks = par::map_tasks(n_blocks, m, Cost::Light, |i| {
        let start = i * STRIDED_BLOCK;
        fold_strided(src, shape, strides, base, start, STRIDED_BLOCK.min(m - start), r)
    });
    combine_pairwise(r, blocks)
}

fn fold_strided<T: Element, R: Reducer<T>>(
    src: &[T],
    shape: &[usize],
    strides: &[Strides; 1],
    base: usize,
    start: usize,
    count: usize,
    r: R,
) -> R::Acc {
    let inner = *strides[0].last().unwrap_or(&0);
    let merge = |a, b| r.combine(a, b);
    let mut cascade = Cascade::new();
    let (mut cur, mut filled) = (r.init(), 0);
    for_each_row(shape, strides, [base], start, count, |_, n, [b]| {
        let mut j = 0;
        while j < n {
            let take = (LEAF - filled).min(n - j);
            let p = b + j as isize * inner;
            if inner == 1 && take >= 2 * LANES {
                let p = p as usize;
                cur = r.combine(cur, fold_lanes(&src[p..p + take], r));
            } else {
                for k in 0..take as isize {
                    cur = r.fold(cur, src[(p + k * inner) as usize]);
                }
            }
            j += take;
            filled += take;
            if filled == LEAF {
                cascade.push(cur, &merge);
                (cur, filled) = (r.init(), 0);
            }
        }
    });
    if filled > 0 {
        cascade.push(cur, &merge);
    }
    cascade.finish(&merge).unwrap_or(r.init())
}

/// `out[c] = reduce over rows of src[row_base + c]` for a contiguous output: tasks over column
/// chunks × row blocks (fixed by the sizes), rows folded with [`fold_rows`] in a [`Cascade`],
/// row blocks combined pairwise.
fn reduce_rows<T: Element, R: Reducer<T>>(
    src: &[T],
    rshape: &[usize],
    rstride: &[Strides; 1],
    base: usize,
    m: usize,
    r: R,
    out: &mut [R::Acc],
) {
    let cols = out.len();
    let cl = cols.min(COL_CHUNK);
    let n_cc = cols.div_ceil(cl);
    let rb = (ROW_TASK / cl).next_multiple_of(ROW_LEAF).min(m);
    let n_rb = m.div_ceil(rb);
    let parts = par::map_tasks(n_cc * n_rb, m * cols, Cost::Read, |t| {
        let (c0, r0) = ((t / n_rb) * cl, (t % n_rb) * rb);
        let width = cl.min(cols - c0);
        fold_row_block(src, rshape, rstride, base + c0, r0, rb.min(m - r0), width, r)
    });
    let merge = |mut a: Vec<R::Acc>, b: Vec<R::Acc>| {
        for (x, &y) in a.iter_mut().zip(&b) {
            *x = r.combine(*x, y);
        }
        a
    };
    let mut parts = parts.into_iter();
    for o in out.chunks_mut(cl) {
        // Pairwise over the row blocks of this column chunk, in a fixed tree.
        let mut level: Vec<Vec<R::Acc>> = parts.by_ref().take(n_rb).collect();
        while level.len() > 1 {
            let mut next = Vec::with_capacity(level.len().div_ceil(2));
            let mut it = level.into_iter();
            while let Some(a) = it.next() {
                next.push(match it.next() {
                    Some(b) => merge(a, b),
                    None => a,
                });
            }
            level = next;
        }
        if let Some(v) = level.pop() {
            o.copy_from_slice(&v);
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn fold_row_block<T: Element, R: Reducer<T>>(
    src: &[T],
    rshape: &[usize],
    rstride: &[Strides; 1],
    base: usize,
    row0: usize,
    rows: usize,
    width: usize,
    r: R,
) -> Vec<R::Acc> {
    let s = *rstride[0].last().unwrap_or(&0);
    let merge = |mut a: Vec<R::Acc>, b: Vec<R::Acc>| {
        for (x, &y) in a.iter_mut().zip(&b) {
            *x = r.combine(*x, y);
        }
        a
    };
    let mut cascade = Cascade::new();
    let (mut cur, mut filled) = (vec![r.init(); width], 0);
    for_each_row(rshape, rstride, [base], row0, rows, |_, n, [b]| {
        for j in 0..n as isize {
            let p = (b + j * s) as usize;
            fold_rows(&mut cur, &src[p..p + width], r);
            filled += 1;
            if filled == ROW_LEAF {
                cascade.push(std::mem::replace(&mut cur, vec![r.init(); width]), &merge);
                filled = 0;
            }
        }
    });
    if filled > 0 {
        cascade.push(cur, &merge);
    }
    cascade.finish(&merge).unwrap_or_else(|| vec![r.init(); width])
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
/// the extreme (as in NumPy). `out` is row-major over the other axes. Values are compared in their
/// own type (an i64 beyond 2^53 is not rounded).
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
    let os = *ostr[0].last().unwrap_or(&0);
    par::for_each_chunk_weighted(out, n, Cost::Light, |start, o| {
        let mut k = 0;
        for_each_row(&oshape, &ostr, [layout.offset], start, o.len(), |_, cnt, [b]| {
            for j in 0..cnt as isize {
                let base = b + j * os;
                let mut bi = 0;
                if n > 0 {
                    let mut best = src[base as usize];
                    for i in 0..n {
                        let v = src[(base + i as isize * stride) as usize];
                        #[allow(clippy::eq_op)] // only NaN differs from itself
                        if v != v {
                            bi = i;
                            break;
                        }
                        if (want_max && v > best) || (!want_max && v < best) {
                            best = v;
                            bi = i;
                        }
                    }
                }
                o[k] = bi as i64;
                k += 1;
            }
        });
    });
}
