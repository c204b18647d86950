//! Normalisation statistics and per-channel affine maps (BatchNorm, LayerNorm, InstanceNorm),
//! accumulated in f64.

use super::PoolFloat;
use crate::element::Element;
use crate::par::{self, Cost};
use crate::reduce::{fold_lanes, Reducer};
use crate::simd_dispatch;

/// `Σ f(x)` accumulated in f64 (`f` sees the element as f64): the statistics' passes.
#[derive(Clone, Copy)]
struct SumOf<F>(F);

impl<T: Element, F: Fn(f64) -> f64 + Copy + Send + Sync> Reducer<T> for SumOf<F> {
    type Acc = f64;
    #[inline(always)]
    fn init(&self) -> f64 {
        0.0
    }
    #[inline(always)]
    fn fold(&self, a: f64, x: T) -> f64 {
        a + (self.0)(x.to_f64())
    }
    #[inline(always)]
    fn combine(&self, a: f64, b: f64) -> f64 {
        a + b
    }
}

/// `Σx` in f64 (the statistics' first pass).
fn sum_f64<T: Element>(s: &[T]) -> f64 {
    fold_lanes(s, SumOf(|v: f64| v))
}

/// `Σ(x - mean)²` in f64 (the second pass: no cancellation).
fn sq_dev<T: Element>(s: &[T], mean: f64) -> f64 {
    fold_lanes(s, SumOf(move |v: f64| (v - mean) * (v - mean)))
}

/// Normalisation statistics of `x` viewed as `(outer, mid, inner)`: when `per_mid`, one
/// (mean, biased variance) per `mid` index over (outer, inner) (BatchNorm); otherwise one per
/// (outer, inner) pair over `mid` (LayerNorm, InstanceNorm), in row-major (outer, inner) order.
/// Accumulated in f64, two passes (mean, then squared deviations: no cancellation); contiguous
/// runs are folded in vector lanes; parallel over the statistics.
pub fn norm_stats<T: Element>(x: &[T], outer: usize, mid: usize, inner: usize, per_mid: bool) -> Vec<(f64, f64)> {
    let total = outer * mid * inner;
    if per_mid {
        par::map_tasks(mid, total, Cost::Read, |m| {
            let n = (outer * inner).max(1) as f64;
            let seg = |o: usize| &x[(o * mid + m) * inner..(o * mid + m + 1) * inner];
            let mean = (0..outer).map(|o| sum_f64(seg(o))).sum::<f64>() / n;
            let var = (0..outer).map(|o| sq_dev(seg(o), mean)).sum::<f64>() / n;
            (mean, var)
        })
    } else if inner == 1 {
        // Each statistic covers one contiguous row of `mid` elements (LayerNorm on the last axis).
        par::map_tasks(outer, total, Cost::Read, |o| {
            let row = &x[o * mid..(o + 1) * mid];
            let n = mid.max(1) as f64;
            let mean = sum_f64(row) / n;
            (mean, sq_dev(row, mean) / n)
        })
    } else {
        par::map_tasks(outer * inner, total, Cost::Read, |r| {
            let (o, i) = (r / inner.max(1), r % inner.max(1));
            let at = |m: usize| x[(o * mid + m) * inner + i].to_f64();
            let n = mid.max(1) as f64;
            let mean = (0..mid).map(at).sum::<f64>() / n;
            let var = (0..mid).map(|m| (at(m) - mean) * (at(m) - mean)).sum::<f64>() / n;
            (mean, var)
        })
    }
}

/// `y = (x - μ)·a + b` with `μ`, `a`, `b` given per `mid` index of the `(outer, mid, inner)` view
/// (BatchNorm's per-channel affine, inverse std and gamma folded into `a`). Centring before scaling
/// keeps float32 precise when a channel's spread is small beside its mean (`x·a - μ·a` would cancel).
pub fn channel_affine<T: PoolFloat + std::ops::Sub<Output = T>>(
    x: &[T],
    inner: usize,
    mid: usize,
    (mu, a, b): (&[T], &[T], &[T]),
    y: &mut [T],
) {
    let inner = inner.max(1);
    par::for_each_chunk(y, Cost::Light, |start, ys| {
        let mut i = 0;
        while i < ys.len() {
            let pos = start + i;
            let m = (pos / inner) % mid.max(1);
            let run = (inner - pos % inner).min(ys.len() - i);
            let (mv, av, bv) = (mu[m], a[m], b[m]);
            for (yv, &xv) in ys[i..i + run].iter_mut().zip(&x[pos..pos + run]) {
                *yv = (xv - mv) * av + bv;
            }
            i += run;
        }
    });
}

simd_dispatch! {
    /// `(Σ u, Σ u·v)` in f64 over two equally long slices, in 16 interleaved lanes each.
    pub fn sum_and_dot<T>(u: &[T], v: &[T]) -> (f64, f64)
    where { T: Element }
    {
        const L: usize = 16;
        let (mut s1, mut s2) = ([0.0f64; L], [0.0f64; L]);
        let (cu, cv) = (u.chunks_exact(L), v.chunks_exact(L));
        let (ru, rv) = (cu.remainder(), cv.remainder());
        for (a, b) in cu.zip(cv) {
            for i in 0..L {
                let x = a[i].to_f64();
                s1[i] += x;
                s2[i] = x.mul_add(b[i].to_f64(), s2[i]);
            }
        }
        let (mut t1, mut t2) = (s1.iter().sum::<f64>(), s2.iter().sum::<f64>());
        for (a, b) in ru.iter().zip(rv) {
            t1 += a.to_f64();
            t2 += a.to_f64() * b.to_f64();
        }
        (t1, t2)
    }
}

/// Per-`mid` sums `(Σ u, Σ u·v)` over the `(outer, mid, inner)` view (f64 accumulation).
pub fn channel_dot<T: Element>(u: &[T], v: &[T], outer: usize, mid: usize, inner: usize) -> Vec<(f64, f64)> {
    par::map_tasks(mid, 2 * outer * mid * inner, Cost::Read, |m| {
        let (mut s1, mut s2) = (0.0f64, 0.0f64);
        for o in 0..outer {
            let r = (o * mid + m) * inner..(o * mid + m + 1) * inner;
            let (a, b) = sum_and_dot(&u[r.clone()], &v[r]);
            s1 += a;
            s2 += b;
        }
        (s1, s2)
    })
}

/// `y = u·a + (v - μ)·k + c` with per-`mid` coefficients of the `(outer, mid, inner)` view.
/// Centring `v` before scaling keeps float32 precise when `v`'s spread is small beside its mean
/// (BatchNorm's gradient; `v·k - μ·k` would cancel).
#[allow(clippy::too_many_arguments)]
pub fn channel_affine2<T: PoolFloat + std::ops::Sub<Output = T>>(
    u: &[T],
    v: &[T],
    inner: usize,
    mid: usize,
    a: &[T],
    (mu, k): (&[T], &[T]),
    c: &[T],
    y: &mut [T],
) {
    let inner = inner.max(1);
    par::for_each_chunk(y, Cost::Light, |start, ys| {
        let mut i = 0;
        while i < ys.len() {
            let pos = start + i;
            let m = (pos / inner) % mid.max(1);
            let run = (inner - pos % inner).min(ys.len() - i);
            let (av, mv, kv, cv) = (a[m], mu[m], k[m], c[m]);
            for ((yv, &uv), &vv) in ys[i..i + run].iter_mut().zip(&u[pos..pos + run]).zip(&v[pos..pos + run]) {
                *yv = uv * av + (vv - mv) * kv + cv;
            }
            i += run;
        }
    });
}
