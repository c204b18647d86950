//! Normalisation statistics and per-channel affine maps (BatchNorm, LayerNorm, InstanceNorm),
//! accumulated in f64.

use crate::element::Element;
use crate::par::{self, Cost};
use crate::simd_dispatch;

/// One channel's values in an `(outer, mid, inner)` view: `count` runs of `len` values, `stride`
/// apart, from `start`.
#[derive(Clone, Copy, Debug)]
pub struct Segments {
    pub start: usize,
    pub count: usize,
    pub stride: usize,
    pub len: usize,
}

impl Segments {
    /// Channel `m` of the `(outer, mid, inner)` view.
    pub(super) fn channel(m: usize, outer: usize, mid: usize, inner: usize) -> Self {
        Segments { start: m * inner, count: outer, stride: mid * inner, len: inner }
    }
    pub(super) fn run<'a, T>(&self, x: &'a [T], o: usize) -> &'a [T] {
        &x[self.start + o * self.stride..][..self.len]
    }
}

/// Lanes the channel sums keep across runs: short runs (the 4×4 and 8×8 planes of small
/// networks) would otherwise pay a fold of the lanes each.
pub(super) const LANES: usize = 16;

simd_dispatch! {
    /// `Σ (x - center)` (or `Σ (x - center)²` when `square`) in f64 over a channel's runs.
    pub fn channel_moment<T>(x: &[T], seg: Segments, center: f64, square: bool) -> f64
    where { T: Element }
    {
        let (mut acc, mut tail) = ([0.0f64; LANES], 0.0f64);
        for o in 0..seg.count {
            let run = seg.run(x, o);
            let chunks = run.chunks_exact(LANES);
            let rest = chunks.remainder();
            if square {
                for c in chunks {
                    for i in 0..LANES {
                        let d = c[i].to_f64() - center;
                        acc[i] = d.mul_add(d, acc[i]);
                    }
                }
                for v in rest {
                    let d = v.to_f64() - center;
                    tail += d * d;
                }
            } else {
                for c in chunks {
                    for i in 0..LANES {
                        acc[i] += c[i].to_f64() - center;
                    }
                }
                for v in rest {
                    tail += v.to_f64() - center;
                }
            }
        }
        acc.iter().sum::<f64>() + tail
    }
}

simd_dispatch! {
    /// `(Σ u, Σ u·v)` in f64 over a channel's runs of two equally shaped arrays.
    pub fn channel_sum_dot<T>(u: &[T], v: &[T], seg: Segments) -> (f64, f64)
    where { T: Element }
    {
        let (mut s1, mut s2) = ([0.0f64; LANES], [0.0f64; LANES]);
        let (mut t1, mut t2) = (0.0f64, 0.0f64);
        for o in 0..seg.count {
            let (ru, rv) = (seg.run(u, o), seg.run(v, o));
            let (cu, cv) = (ru.chunks_exact(LANES), rv.chunks_exact(LANES));
            for (a, b) in cu.remainder().iter().zip(cv.remainder()) {
                t1 += a.to_f64();
                t2 += a.to_f64() * b.to_f64();
            }
            for (a, b) in cu.zip(cv) {
                for i in 0..LANES {
                    let x = a[i].to_f64();
                    s1[i] += x;
                    s2[i] = x.mul_add(b[i].to_f64(), s2[i]);
                }
            }
        }
        (s1.iter().sum::<f64>() + t1, s2.iter().sum::<f64>() + t2)
    }
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
            let seg = Segments::channel(m, outer, mid, inner);
            let mean = channel_moment(x, seg, 0.0, false) / n;
            (mean, channel_moment(x, seg, mean, true) / n)
        })
    } else if inner == 1 {
        // Each statistic covers one contiguous row of `mid` elements (LayerNorm on the last axis).
        par::map_tasks(outer, total, Cost::Read, |o| {
            let row = Segments { start: o * mid, count: 1, stride: 0, len: mid };
            let n = mid.max(1) as f64;
            let mean = channel_moment(x, row, 0.0, false) / n;
            (mean, channel_moment(x, row, mean, true) / n)
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

/// Per-`mid` sums `(Σ u, Σ u·v)` over the `(outer, mid, inner)` view (f64 accumulation).
pub fn channel_dot<T: Element>(u: &[T], v: &[T], outer: usize, mid: usize, inner: usize) -> Vec<(f64, f64)> {
    par::map_tasks(mid, 2 * outer * mid * inner, Cost::Read, |m| {
        channel_sum_dot(u, v, Segments::channel(m, outer, mid, inner))
    })
}
