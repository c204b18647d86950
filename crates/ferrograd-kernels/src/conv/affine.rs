//! BatchNorm's per-channel affine passes, alone or fused with the activation that follows.
//!
//! A channel-first `(outer, mid, inner)` view has one coefficient set per `mid` index (the
//! channel). The forward is `y = act((x - μ)·a + b)`; the backward's second pass is
//! `dx = g·a + (x - μ)·k + c`, and with a fused activation the head gradient `g` is the
//! activation's gradient mask, recomputed from the same pre-activation the forward made, times the
//! incoming gradient. Every value is computed with the expressions the separate ops use, in the
//! same element type, so a fused pass gives the unfused ops' bits. The loops run under
//! [`simd_dispatch!`](crate::simd_dispatch) (the crate itself is built for baseline x86-64).

use super::stats::{Segments, LANES};
use super::PoolFloat;
use crate::par::{self, Cost};
use crate::simd_dispatch;

/// The elementwise map after BatchNorm's affine in a fused pass.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AffineAct<T> {
    Identity,
    /// relu: `t` where `t > 0` or NaN, else 0; its gradient mask 1 where `t > 0`, NaN where `t` is
    /// NaN, else 0 (the mask of `_backward_relu` read from relu's output).
    Relu,
    /// clip to `[lo, hi]`: NaN stays NaN; its gradient mask 1 where `lo <= t <= hi`, else 0.
    Clip(T, T),
}

impl<T: PoolFloat> AffineAct<T> {
    #[inline(always)]
    fn apply(self, t: T) -> T {
        match self {
            AffineAct::Identity => t,
            AffineAct::Relu => {
                #[allow(clippy::eq_op)] // t != t: NaN
                let nan = t != t;
                if t > T::zero() || nan {
                    t
                } else {
                    T::zero()
                }
            }
            // Two selects (`t < lo ? lo : t > hi ? hi : t`), which vectorise.
            AffineAct::Clip(lo, hi) => {
                let upper = if t > hi { hi } else { t };
                if t < lo {
                    lo
                } else {
                    upper
                }
            }
        }
    }

    /// `g · mask(t)`, as the activation's fused gradient computes it.
    #[inline(always)]
    fn grad(self, g: T, t: T) -> T {
        match self {
            AffineAct::Identity => g,
            AffineAct::Relu => {
                #[allow(clippy::eq_op)]
                let nan = t != t;
                let m = if t > T::zero() {
                    T::one()
                } else if nan {
                    T::from_f64(f64::NAN)
                } else {
                    T::zero()
                };
                g * m
            }
            AffineAct::Clip(lo, hi) => g * if (t >= lo) & (t <= hi) { T::one() } else { T::zero() },
        }
    }
}

/// The forward's coefficients per channel: `t = (x - mu)·a + b`.
#[derive(Clone, Copy, Debug)]
pub struct Affine<'a, T> {
    pub mu: &'a [T],
    pub a: &'a [T],
    pub b: &'a [T],
}

/// Runs `$body` with `$map` bound to a closure computing `act`'s `$what` (`apply` or `grad`) with
/// the variant fixed, so each loop is compiled (and vectorised) once per activation instead of
/// matching on it per element.
macro_rules! with_act {
    ($act:expr, $map:ident = |$($arg:ident),*| $what:ident, $body:expr) => {
        match $act {
            AffineAct::Identity => {
                let $map = |$($arg: T),*| AffineAct::<T>::Identity.$what($($arg),*);
                $body
            }
            AffineAct::Relu => {
                let $map = |$($arg: T),*| AffineAct::<T>::Relu.$what($($arg),*);
                $body
            }
            AffineAct::Clip(lo, hi) => {
                let $map = move |$($arg: T),*| AffineAct::Clip(lo, hi).$what($($arg),*);
                $body
            }
        }
    };
}

/// Runs `$body` for each channel run of a chunk starting at element `$start` of the `(outer,
/// mid, inner)` view, with `$m` the channel, `$i` the run's offset in the chunk and `$run` its
/// length. A macro, not a closure: a closure's loop is compiled apart from the `simd_dispatch!`
/// function that calls it, at the baseline instruction set.
macro_rules! for_runs {
    ($start:expr, $len:expr, $inner:expr, $mid:expr, |$m:ident, $i:ident, $run:ident| $body:block) => {{
        let mut $i = 0;
        while $i < $len {
            let pos = $start + $i;
            let $run = ($inner - pos % $inner).min($len - $i);
            let $m = (pos / $inner) % $mid;
            $body
            $i += $run;
        }
    }};
}

simd_dispatch! {
    pub fn affine_act_chunk<T>(x: &[T], start: usize, inner: usize, mid: usize, f: Affine<'_, T>, act: AffineAct<T>, ys: &mut [T])
    where { T: PoolFloat + std::ops::Sub<Output = T> }
    {
        with_act!(act, map = |t| apply, for_runs!(start, ys.len(), inner, mid, |m, i, run| {
            let (mv, av, bv) = (f.mu[m], f.a[m], f.b[m]);
            let xs = &x[start + i..][..run];
            ys[i..i + run].iter_mut().zip(xs).for_each(|(y, &x)| *y = map((x - mv) * av + bv));
        }))
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
    channel_affine_act(x, inner, mid, Affine { mu, a, b }, AffineAct::Identity, y)
}

/// `y = act((x - μ)·a + b)`: [`channel_affine`] with the activation in the same pass.
pub fn channel_affine_act<T: PoolFloat + std::ops::Sub<Output = T>>(
    x: &[T],
    inner: usize,
    mid: usize,
    f: Affine<'_, T>,
    act: AffineAct<T>,
    y: &mut [T],
) {
    let (inner, mid) = (inner.max(1), mid.max(1));
    par::for_each_chunk(y, Cost::Light, |start, ys| affine_act_chunk(x, start, inner, mid, f, act, ys));
}

simd_dispatch! {
    /// `(Σ g, Σ g·x)` in f64 over a channel's runs, `g = act'(t)·dy` with `t` the forward's
    /// pre-activation (channel coefficients `(mv, av, bv)`).
    pub fn masked_sum_dot<T>(dy: &[T], x: &[T], seg: Segments, mv: T, av: T, bv: T, act: AffineAct<T>) -> (f64, f64)
    where { T: PoolFloat + std::ops::Sub<Output = T> }
    {
        with_act!(act, grad = |d, t| grad, sum_dot_runs(dy, x, seg, |d: T, xv: T| grad(d, (xv - mv) * av + bv)))
    }
}

/// `(Σ g(dy, x), Σ g(dy, x)·x)` in f64 over a channel's runs.
#[inline(always)]
fn sum_dot_runs<T: PoolFloat>(dy: &[T], x: &[T], seg: Segments, g: impl Fn(T, T) -> T) -> (f64, f64) {
    let (mut s1, mut s2) = ([0.0f64; LANES], [0.0f64; LANES]);
    let (mut t1, mut t2) = (0.0f64, 0.0f64);
    for o in 0..seg.count {
        let (rd, rx) = (seg.run(dy, o), seg.run(x, o));
        let (cd, cx) = (rd.chunks_exact(LANES), rx.chunks_exact(LANES));
        for (&d, &xv) in cd.remainder().iter().zip(cx.remainder()) {
            let gv = g(d, xv).to_f64();
            t1 += gv;
            t2 += gv * xv.to_f64();
        }
        for (d, xs) in cd.zip(cx) {
            for i in 0..LANES {
                let gv = g(d[i], xs[i]).to_f64();
                s1[i] += gv;
                s2[i] = gv.mul_add(xs[i].to_f64(), s2[i]);
            }
        }
    }
    (s1.iter().sum::<f64>() + t1, s2.iter().sum::<f64>() + t2)
}

/// Per-channel `(Σ g, Σ g·x)` of the `(outer, mid, inner)` view, `g = act'(t)·dy` with `t` the
/// forward's pre-activation: [`super::channel_dot`] of the activation's gradient, without it
/// written out. With [`AffineAct::Identity`] the same sums as `channel_dot(dy, x)`.
pub fn channel_dot_masked<T: PoolFloat + std::ops::Sub<Output = T>>(
    dy: &[T],
    x: &[T],
    (outer, mid, inner): (usize, usize, usize),
    f: Affine<'_, T>,
    act: AffineAct<T>,
) -> Vec<(f64, f64)> {
    par::map_tasks(mid, 2 * outer * mid * inner, Cost::Read, |m| {
        let seg = Segments::channel(m, outer, mid, inner);
        masked_sum_dot(dy, x, seg, f.mu[m], f.a[m], f.b[m], act)
    })
}

/// The backward's coefficients per channel: `dx = g·a + (x - mu)·k + c`.
#[derive(Clone, Copy, Debug)]
pub struct GradAffine<'a, T> {
    pub a: &'a [T],
    pub mu: &'a [T],
    pub k: &'a [T],
    pub c: &'a [T],
}

simd_dispatch! {
    pub fn affine2_chunk<T>(
        g: &[T],
        x: &[T],
        view: (usize, usize, usize),
        fw: Affine<'_, T>,
        bw: GradAffine<'_, T>,
        act: AffineAct<T>,
        ys: &mut [T],
    ) where { T: PoolFloat + std::ops::Sub<Output = T> }
    {
        // (the chunk's first element, inner, mid)
        let (start, inner, mid) = view;
        with_act!(act, grad = |d, t| grad, for_runs!(start, ys.len(), inner, mid, |m, i, run| {
            let (av, mv, kv, cv) = (bw.a[m], bw.mu[m], bw.k[m], bw.c[m]);
            let (gs, xs) = (&g[start + i..][..run], &x[start + i..][..run]);
            let out = ys[i..i + run].iter_mut().zip(gs).zip(xs);
            if act == AffineAct::Identity {
                out.for_each(|((y, &u), &v)| *y = u * av + (v - mv) * kv + cv);
            } else {
                let (fm, fa, fb) = (fw.mu[m], fw.a[m], fw.b[m]);
                out.for_each(|((y, &d), &v)| {
                    let u = grad(d, (v - fm) * fa + fb);
                    *y = u * av + (v - mv) * kv + cv
                });
            }
        }));
    }
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
    let none = Affine { mu: &[], a: &[], b: &[] };
    channel_affine2_masked(u, v, (inner, mid), none, GradAffine { a, mu, k, c }, AffineAct::Identity, y)
}

/// [`channel_affine2`] with `u = act'(t)·dy`, `t` the forward's pre-activation `(v - fw.mu)·fw.a +
/// fw.b` (unused with [`AffineAct::Identity`]).
pub fn channel_affine2_masked<T: PoolFloat + std::ops::Sub<Output = T>>(
    dy: &[T],
    v: &[T],
    (inner, mid): (usize, usize),
    fw: Affine<'_, T>,
    bw: GradAffine<'_, T>,
    act: AffineAct<T>,
    y: &mut [T],
) {
    let (inner, mid) = (inner.max(1), mid.max(1));
    par::for_each_chunk(y, Cost::Light, |start, ys| affine2_chunk(dy, v, (start, inner, mid), fw, bw, act, ys));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values on and around the bounds, signed zeros, NaN and infinities, over 2 channels × 37
    /// (a run longer than the vector lanes, with a remainder).
    fn data() -> Vec<f32> {
        let special = [0.0, -0.0, 6.0, -0.2, 0.3, f32::NAN, f32::INFINITY, -f32::INFINITY, 1e-30];
        (0..2 * 2 * 37)
            .map(|i| if i % 5 == 0 { special[i / 5 % special.len()] } else { (i as f32 * 0.37).sin() * 8.0 })
            .collect()
    }

    fn same(a: &[f32], b: &[f32]) {
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            assert!(x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()), "element {i}: {x} vs {y}");
        }
    }

    #[test]
    fn fused_passes_equal_the_separate_maps() {
        let x = data();
        let (inner, mid) = (37, 2);
        let (mu, a, b) = ([0.5f32, -1.0], [1.25f32, 0.75], [0.0f32, 0.1]);
        let f = Affine { mu: &mu, a: &a, b: &b };
        let mut t = vec![0f32; x.len()];
        channel_affine(&x, inner, mid, (&mu, &a, &b), &mut t);
        let dy: Vec<f32> = (0..x.len()).map(|i| if i % 7 == 0 { f32::INFINITY } else { (i as f32).cos() }).collect();
        let (ka, km, kk, kc) = ([0.5f32, 2.0], [0.1f32, 0.2], [-0.3f32, 0.4], [0.01f32, -0.02]);
        let bw = GradAffine { a: &ka, mu: &km, k: &kk, c: &kc };
        for act in [AffineAct::Relu, AffineAct::Clip(-0.2, 0.3), AffineAct::Clip(0.0, 6.0)] {
            // The separate ops: the activation of t, its gradient mask times dy, then the passes.
            let reference_y: Vec<f32> = t.iter().map(|&v| act.apply(v)).collect();
            let mut y = vec![0f32; x.len()];
            channel_affine_act(&x, inner, mid, f, act, &mut y);
            same(&y, &reference_y);

            let g: Vec<f32> = dy.iter().zip(&t).map(|(&d, &v)| act.grad(d, v)).collect();
            let want = super::super::channel_dot(&g, &x, 1, mid, inner);
            let got = channel_dot_masked(&dy, &x, (1, mid, inner), f, act);
            for (w, h) in want.iter().zip(&got) {
                assert!(w.0.to_bits() == h.0.to_bits() || (w.0.is_nan() && h.0.is_nan()));
                assert!(w.1.to_bits() == h.1.to_bits() || (w.1.is_nan() && h.1.is_nan()));
            }
            let (mut dx_ref, mut dx) = (vec![0f32; x.len()], vec![0f32; x.len()]);
            channel_affine2(&g, &x, inner, mid, &ka, (&km, &kk), &kc, &mut dx_ref);
            channel_affine2_masked(&dy, &x, (inner, mid), f, bw, act, &mut dx);
            same(&dx, &dx_ref);
        }
    }

    #[test]
    fn masks_follow_the_activations() {
        let clip = AffineAct::Clip(0.0f32, 6.0);
        assert_eq!(
            [clip.grad(2.0, 0.0), clip.grad(2.0, 6.0), clip.grad(2.0, 6.5), clip.grad(2.0, -0.1)],
            [2.0, 2.0, 0.0, 0.0]
        );
        assert_eq!(clip.grad(2.0, f32::NAN), 0.0);
        assert!(clip.apply(f32::NAN).is_nan());
        let relu = AffineAct::<f32>::Relu;
        assert_eq!([relu.grad(2.0, 0.0), relu.grad(2.0, 1e-30), relu.grad(2.0, -0.0)], [0.0, 2.0, 0.0]);
        assert!(relu.grad(2.0, f32::NAN).is_nan() && relu.apply(f32::NAN).is_nan());
        assert_eq!(relu.apply(-3.0), 0.0);
    }
}
