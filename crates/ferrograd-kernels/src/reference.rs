//! Naive reference kernels: the oracles that the fast kernels are tested against.
//!
//! Deliberately simple: one multi-index walk, f64 accumulation (compensated where it matters).
//! Public so that `tests/` and the op crate's tests can use them; not meant for production.

use crate::element::Element;
use crate::layout::Layout;

/// All elements of a view in row-major order.
pub fn gather<T: Element>(buf: &[T], layout: &Layout) -> Vec<T> {
    let n = layout.numel();
    let mut out = Vec::with_capacity(n);
    let nd = layout.ndim();
    let mut idx = vec![0usize; nd];
    for _ in 0..n {
        let off =
            layout.offset as isize + idx.iter().zip(&layout.strides).map(|(&i, &s)| i as isize * s).sum::<isize>();
        out.push(buf[off as usize]);
        for d in (0..nd).rev() {
            idx[d] += 1;
            if idx[d] < layout.shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

/// Kahan-compensated f64 sum.
pub fn sum_f64(values: impl IntoIterator<Item = f64>) -> f64 {
    let (mut s, mut c) = (0.0f64, 0.0f64);
    for v in values {
        let y = v - c;
        let t = s + y;
        c = (t - s) - y;
        s = t;
    }
    s
}

/// Row-major `m×k · k×n` in f64.
pub fn matmul_f64(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut out = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            out[i * n + j] = sum_f64((0..k).map(|p| a[i * k + p] * b[p * n + j]));
        }
    }
    out
}

/// Local response normalisation of a contiguous `(outer, c, inner)` array over windows of
/// `nsize` (odd) channels: `x · (k + alpha/nsize · Σ x²)^(-beta)`.
#[allow(clippy::too_many_arguments)]
pub fn lrn_f64(
    x: &[f64],
    outer: usize,
    c: usize,
    inner: usize,
    nsize: usize,
    k: f64,
    alpha: f64,
    beta: f64,
) -> Vec<f64> {
    let half = nsize / 2;
    let mut out = vec![0.0; x.len()];
    for o in 0..outer {
        for ch in 0..c {
            for s in 0..inner {
                let lo = ch.saturating_sub(half);
                let hi = (ch + half).min(c - 1);
                let sq = sum_f64((lo..=hi).map(|j| x[(o * c + j) * inner + s].powi(2)));
                let i = (o * c + ch) * inner + s;
                out[i] = x[i] / (k + alpha / nsize as f64 * sq).powf(beta);
            }
        }
    }
    out
}
