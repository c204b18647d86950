//! Local response normalisation across the channel axis of a contiguous `(outer, C, inner)` array
//! (NCHW: `outer = N`, `inner = H·W`).
//!
//! Each output element reads its own window of channels, so the output splits into chunks
//! anywhere (bitwise identical for any thread count). Sums accumulate in f64.

use crate::element::Element;
use crate::par::{self, Cost};

/// The array's channel geometry and the window's half-width (the window is `2·half + 1`
/// channels, truncated at the first and last channel).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChannelWindow {
    pub channels: usize,
    pub inner: usize,
    pub half: usize,
}

impl ChannelWindow {
    /// `Σ f(x[j])` over the channels `j` in the window of flat element `i`.
    #[inline]
    fn sum_at<T: Element>(&self, x: &[T], i: usize, f: impl Fn(f64) -> f64) -> f64 {
        let c = (i / self.inner) % self.channels;
        // Flat index of channel 0 in the same (outer, ·, spatial) column.
        let base = i - c * self.inner;
        let lo = c.saturating_sub(self.half);
        let hi = (c + self.half).min(self.channels - 1);
        (lo..=hi).map(|j| f(x[base + j * self.inner].to_f64())).sum()
    }
}

/// `out[i] = Σ x[j]` over the channel window of `i` (the window sum is its own adjoint, since
/// the window is symmetric).
pub fn window_sum<T: Element>(x: &[T], w: ChannelWindow, out: &mut [T]) {
    assert_eq!(x.len(), out.len(), "window_sum: input and output lengths differ");
    if out.is_empty() {
        return;
    }
    par::for_each_chunk(out, Cost::Light, |start, chunk| {
        for (k, o) in chunk.iter_mut().enumerate() {
            *o = T::from_f64(w.sum_at(x, start + k, |v| v));
        }
    });
}

/// `out[i] = x[i] · (knorm + salpha · Σ x[j]²)^(-beta)` over the channel window of `i`.
pub fn lrn_forward<T: Element>(x: &[T], w: ChannelWindow, knorm: f64, salpha: f64, beta: f64, out: &mut [T]) {
    assert_eq!(x.len(), out.len(), "lrn_forward: input and output lengths differ");
    if out.is_empty() {
        return;
    }
    par::for_each_chunk(out, Cost::Heavy, |start, chunk| {
        for (k, o) in chunk.iter_mut().enumerate() {
            let i = start + k;
            let s = w.sum_at(x, i, |v| v * v);
            *o = T::from_f64(x[i].to_f64() * (knorm + salpha * s).powf(-beta));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::lrn_f64;

    fn data(n: usize) -> Vec<f64> {
        (0..n).map(|i| ((i * 7919) % 23) as f64 / 5.0 - 2.0).collect()
    }

    #[test]
    fn matches_reference_for_odd_sizes() {
        for &(outer, c, inner) in &[(1, 1, 1), (2, 5, 3), (3, 7, 1), (1, 4, 11), (2, 3, 200_000)] {
            let x = data(outer * c * inner);
            for nsize in [1usize, 3, 5] {
                if nsize > c {
                    continue;
                }
                let w = ChannelWindow { channels: c, inner, half: nsize / 2 };
                let (k, alpha, beta) = (1.5, 0.3, 0.7);
                let mut got = vec![0.0; x.len()];
                lrn_forward(&x, w, k, alpha / nsize as f64, beta, &mut got);
                let want = lrn_f64(&x, outer, c, inner, nsize, k, alpha, beta);
                for (i, (a, b)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        (a - b).abs() <= 1e-12 * b.abs().max(1.0),
                        "{outer}x{c}x{inner} n={nsize} at {i}: {a} vs {b}"
                    );
                }
                let mut s = vec![0.0; x.len()];
                window_sum(&x, w, &mut s);
                // The window sum of squares recovers the reference's normaliser.
                let sq: Vec<f64> = x.iter().map(|v| v * v).collect();
                let mut s2 = vec![0.0; x.len()];
                window_sum(&sq, w, &mut s2);
                for i in 0..x.len().min(5000) {
                    let y = x[i] * (k + alpha / nsize as f64 * s2[i]).powf(-beta);
                    assert!((y - want[i]).abs() <= 1e-12 * want[i].abs().max(1.0));
                }
            }
        }
    }

    #[test]
    fn float32_and_empty() {
        let x: Vec<f32> = data(2 * 3 * 4).iter().map(|&v| v as f32).collect();
        let w = ChannelWindow { channels: 3, inner: 4, half: 1 };
        let mut got = vec![0f32; x.len()];
        lrn_forward(&x, w, 2.0, 1e-4 / 3.0, 0.75, &mut got);
        let xd: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        let want = lrn_f64(&xd, 2, 3, 4, 3, 2.0, 1e-4, 0.75);
        for (a, b) in got.iter().zip(&want) {
            assert!((*a as f64 - b).abs() <= 1e-6 * b.abs().max(1.0));
        }
        let mut e: Vec<f32> = Vec::new();
        lrn_forward(&[], w, 2.0, 1.0, 0.75, &mut e);
        window_sum(&[], w, &mut e);
    }
}
