//! Pooling over NC(D)(H)W planes: max, average (with or without padding in the divisor), sum and
//! Lp, forward and backward, parallel over planes.

use super::Geom;
use crate::element::Element;
use crate::par::{self, Cost};

/// Two input planes and one output plane.
type PlanePair<'a, T> = ((&'a [T], &'a [T]), &'a mut [T]);

/// Float element types the pooling kernels run on.
pub trait PoolFloat:
    Element
    + std::ops::AddAssign
    + std::ops::Add<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
{
}
impl PoolFloat for f32 {}
impl PoolFloat for f64 {}

/// Pooling reduction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PoolKind {
    Max,
    /// Mean over the window; the divisor counts padding (inside the padded input) when
    /// `count_include_pad`, else only positions inside the input.
    Avg {
        count_include_pad: bool,
    },
    Sum,
    /// `(Σ |x|^p)^(1/p)`.
    Lp(f64),
}

/// Calls `f(o, lo, hi, padded_area)` for every output position `o` of a plane: the window is
/// `[lo, hi)` per axis clamped to the input; `padded_area` counts the window inside the padded
/// input (MXNet's divisor with `count_include_pad`).
#[inline]
fn for_windows(g: &Geom, mut f: impl FnMut(usize, [usize; 3], [usize; 3], usize)) {
    let mut o = 0;
    for zo in 0..g.out[0] {
        for yo in 0..g.out[1] {
            for xo in 0..g.out[2] {
                let pos = [zo, yo, xo];
                let (mut lo, mut hi, mut area) = ([0; 3], [0; 3], 1);
                for i in 0..3 {
                    let start = (pos[i] * g.s[i]) as isize - g.p[i] as isize;
                    let end = (start + g.k[i] as isize).min((g.inp[i] + g.p[i]) as isize);
                    area *= (end - start).max(0) as usize;
                    lo[i] = start.max(0) as usize;
                    hi[i] = (end.max(0) as usize).min(g.inp[i]).max(lo[i]);
                }
                f(o, lo, hi, area);
                o += 1;
            }
        }
    }
}

/// Calls `f(i)` for every input position `i` of the window `[lo, hi)`.
#[inline]
fn for_positions(g: &Geom, lo: [usize; 3], hi: [usize; 3], mut f: impl FnMut(usize)) {
    for z in lo[0]..hi[0] {
        for y in lo[1]..hi[1] {
            let row = (z * g.inp[1] + y) * g.inp[2];
            for x in lo[2]..hi[2] {
                f(row + x);
            }
        }
    }
}

/// Index of the first maximum in the window (`None` for an empty window).
#[inline]
fn argmax<T: PoolFloat>(x: &[T], g: &Geom, lo: [usize; 3], hi: [usize; 3]) -> Option<usize> {
    let mut best: Option<(usize, T)> = None;
    for_positions(g, lo, hi, |i| {
        let v = x[i];
        match best {
            Some((_, b)) => {
                if v > b {
                    best = Some((i, v));
                }
            }
            None => best = Some((i, v)),
        }
    });
    best.map(|(i, _)| i)
}

fn valid_area(lo: [usize; 3], hi: [usize; 3]) -> usize {
    (0..3).map(|i| hi[i] - lo[i]).product()
}

/// The divisor of each output for a linear pooling (1 for sum).
#[inline]
fn scale<T: PoolFloat>(kind: PoolKind, lo: [usize; 3], hi: [usize; 3], area: usize) -> T {
    match kind {
        PoolKind::Avg { count_include_pad } => {
            let n = if count_include_pad { area } else { valid_area(lo, hi) };
            if n == 0 {
                T::zero()
            } else {
                T::one() / T::from_f64(n as f64)
            }
        }
        _ => T::one(),
    }
}

fn plane_work(g: &Geom) -> usize {
    (g.out_plane() * g.ksize()).max(1)
}

/// Pooling forward over `planes` contiguous planes (`g.c` is ignored). Empty windows (only
/// possible with the `full` convention) give 0.
pub fn pool_forward<T: PoolFloat>(g: &Geom, kind: PoolKind, x: &[T], y: &mut [T]) {
    let (ip, op) = (g.in_plane(), g.out_plane());
    if op == 0 || ip == 0 {
        y.fill(T::zero());
        return;
    }
    let mut items: Vec<(&[T], &mut [T])> = x.chunks(ip).zip(y.chunks_mut(op)).collect();
    par::for_each_chunk_weighted(&mut items, plane_work(g), Cost::Light, |_, part| {
        for (xs, ys) in part.iter_mut() {
            for_windows(g, |o, lo, hi, area| {
                ys[o] = match kind {
                    PoolKind::Max => argmax(xs, g, lo, hi).map_or(T::zero(), |i| xs[i]),
                    PoolKind::Lp(p) => {
                        let mut acc = 0.0f64;
                        for_positions(g, lo, hi, |i| acc += xs[i].to_f64().abs().powf(p));
                        T::from_f64(acc.powf(1.0 / p))
                    }
                    _ => {
                        let mut acc = T::zero();
                        for_positions(g, lo, hi, |i| acc += xs[i]);
                        acc * scale::<T>(kind, lo, hi, area)
                    }
                };
            });
        }
    });
}

/// Adjoint of the linear poolings (sum, avg): `dx[i] = Σ_o gy[o]·scale(o)` over windows holding i.
pub fn pool_linear_backward<T: PoolFloat>(g: &Geom, kind: PoolKind, gy: &[T], dx: &mut [T]) {
    let (ip, op) = (g.in_plane(), g.out_plane());
    dx.fill(T::zero());
    if op == 0 || ip == 0 {
        return;
    }
    let mut items: Vec<(&[T], &mut [T])> = gy.chunks(op).zip(dx.chunks_mut(ip)).collect();
    par::for_each_chunk_weighted(&mut items, plane_work(g), Cost::Light, |_, part| {
        for (gs, ds) in part.iter_mut() {
            for_windows(g, |o, lo, hi, area| {
                let v = gs[o] * scale::<T>(kind, lo, hi, area);
                for_positions(g, lo, hi, |i| ds[i] += v);
            });
        }
    });
}

/// Max pooling gradient: `dx[argmax(o)] += gy[o]` (first maximum of each window).
pub fn pool_max_backward<T: PoolFloat>(g: &Geom, gy: &[T], x: &[T], dx: &mut [T]) {
    let (ip, op) = (g.in_plane(), g.out_plane());
    dx.fill(T::zero());
    if op == 0 || ip == 0 {
        return;
    }
    let mut items: Vec<PlanePair<'_, T>> = gy.chunks(op).zip(x.chunks(ip)).zip(dx.chunks_mut(ip)).collect();
    par::for_each_chunk_weighted(&mut items, plane_work(g), Cost::Light, |_, part| {
        for ((gs, xs), ds) in part.iter_mut() {
            for_windows(g, |o, lo, hi, _| {
                if let Some(i) = argmax(xs, g, lo, hi) {
                    ds[i] += gs[o];
                }
            });
        }
    });
}

/// The adjoint of [`pool_max_backward`] in `gy`: `y[o] = h[argmax(o)]` (0 for empty windows).
pub fn pool_max_gather<T: PoolFloat>(g: &Geom, h: &[T], x: &[T], y: &mut [T]) {
    let (ip, op) = (g.in_plane(), g.out_plane());
    if op == 0 || ip == 0 {
        y.fill(T::zero());
        return;
    }
    let mut items: Vec<PlanePair<'_, T>> = h.chunks(ip).zip(x.chunks(ip)).zip(y.chunks_mut(op)).collect();
    par::for_each_chunk_weighted(&mut items, plane_work(g), Cost::Light, |_, part| {
        for ((hs, xs), ys) in part.iter_mut() {
            for_windows(g, |o, lo, hi, _| {
                ys[o] = argmax(xs, g, lo, hi).map_or(T::zero(), |i| hs[i]);
            });
        }
    });
}
