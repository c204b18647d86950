//! Columns in channels-last order for convolutions on small maps.
//!
//! On the 8×8, 7×7 and 4×4 maps of deep layers an output row is a handful of values, so the
//! plane-by-plane im2col of [`super::cols`] copies a few values at a time, once per channel, and
//! costs more than the GEMM. Here each image is first transposed to `(position, channel)`; a
//! column entry for one output position and kernel offset is then all `C` channels at once, one
//! contiguous copy, and the column matrix is stored transposed: `(images·positions, K·C)` with
//! the kernel offset outer and the channel inner. The weight is reordered to `(F, K·C)` to match
//! (its gradient back to `(F, C, K)`). The products are the same sums over the same terms as the
//! plane-by-plane path, only in another order along the inner dimension.

use super::cols::for_kernel_rows;
use super::convolution::ConvShape;
use crate::element::Element;

/// Channels from which the channels-last columns pay (a copy of fewer values gains little).
const MIN_CHANNELS: usize = 8;
/// Output rows at least this wide keep the plane-by-plane columns (their copies are long, and
/// the gathered columns beat these there: ResNet-18's 64-channel 3×3 layer on 28×28 maps at batch
/// 8, forward 2.82–2.91 ms against 3.16–3.63 ms, backward about even; on 4×4 and 8×8 maps these
/// stay faster, the backward up to 1.7×).
const MAX_ROW: usize = 16;

/// Whether `s` takes the channels-last columns: one group, enough channels, short output rows,
/// a kernel that is not the identity, and batches that run in parallel (each batch's columns are
/// built on one thread here; with a single batch the plane-by-plane path, parallel over
/// channels, is faster — measured 2× on 512 channels at 4×4, batch 8).
pub(super) fn applies(s: &ConvShape) -> bool {
    s.groups == 1 && s.g.c >= MIN_CHANNELS && s.g.out[2] < MAX_ROW && s.g.ksize() > 1 && s.parallel_batches()
}

/// For every output position `o` (in plane order) and kernel offset `k`: the input position the
/// window reads, or `None` in the padding. `f(o, k, input_position)`.
fn for_taps(s: &ConvShape, mut f: impl FnMut(usize, usize, Option<usize>)) {
    let g = &s.g;
    let [id, ih, iw] = g.inp;
    let [od, oh, ow] = g.out;
    let at = |o: usize, k: usize, st: usize, d: usize, p: usize, n: usize| {
        let v = (o * st + k * d) as isize - p as isize;
        (v >= 0 && v < n as isize).then_some(v as usize)
    };
    let mut o = 0;
    for zo in 0..od {
        for yo in 0..oh {
            for xo in 0..ow {
                for_kernel_rows(g, |k, kd, kh, kw| {
                    let z = at(zo, kd, g.s[0], g.d[0], g.p[0], id);
                    let y = at(yo, kh, g.s[1], g.d[1], g.p[1], ih);
                    let x = at(xo, kw, g.s[2], g.d[2], g.p[2], iw);
                    let pos = match (z, y, x) {
                        (Some(z), Some(y), Some(x)) => Some((z * ih + y) * iw + x),
                        _ => None,
                    };
                    f(o, k, pos);
                });
                o += 1;
            }
        }
    }
}

/// The transposed columns `(images·P, K·C)` of `images` consecutive NCHW images `xs`, through
/// the channels-last copy `xt` (scratch, `P_in·C` values per image).
pub(super) fn fill_cols_t<T: Element>(s: &ConvShape, xs: &[T], images: usize, xt: &mut Vec<T>, cols_t: &mut [T]) {
    let (c, pin, p, k) = (s.g.c, s.g.in_plane(), s.g.out_plane(), s.g.ksize());
    xt.resize(pin * c, T::zero());
    let kc = k * c;
    for j in 0..images {
        let img = &xs[j * c * pin..(j + 1) * c * pin];
        for (ci, plane) in img.chunks_exact(pin).enumerate() {
            for (q, &v) in plane.iter().enumerate() {
                xt[q * c + ci] = v;
            }
        }
        let out = &mut cols_t[j * p * kc..(j + 1) * p * kc];
        for_taps(s, |o, kk, pos| {
            let dst = &mut out[o * kc + kk * c..o * kc + (kk + 1) * c];
            match pos {
                Some(q) => dst.copy_from_slice(&xt[q * c..(q + 1) * c]),
                None => dst.fill(T::zero()),
            }
        });
    }
}

/// The adjoint of [`fill_cols_t`]: NCHW data gradients `dxs` (overwritten) of `images` images
/// from transposed column gradients `dcols_t`, through the channels-last scratch `dxt`.
pub(super) fn scatter_cols_t<T: Element + std::ops::AddAssign>(
    s: &ConvShape,
    dcols_t: &[T],
    images: usize,
    dxt: &mut Vec<T>,
    dxs: &mut [T],
) {
    let (c, pin, p, k) = (s.g.c, s.g.in_plane(), s.g.out_plane(), s.g.ksize());
    let kc = k * c;
    for j in 0..images {
        dxt.clear();
        dxt.resize(pin * c, T::zero());
        let cols = &dcols_t[j * p * kc..(j + 1) * p * kc];
        for_taps(s, |o, kk, pos| {
            if let Some(q) = pos {
                let src = &cols[o * kc + kk * c..o * kc + (kk + 1) * c];
                for (d, &v) in dxt[q * c..(q + 1) * c].iter_mut().zip(src) {
                    *d += v;
                }
            }
        });
        let img = &mut dxs[j * c * pin..(j + 1) * c * pin];
        for (ci, plane) in img.chunks_exact_mut(pin).enumerate() {
            for (q, v) in plane.iter_mut().enumerate() {
                *v = dxt[q * c + ci];
            }
        }
    }
}

/// The weight `(F, C, K)` reordered to the columns' order `(F, K, C)`.
pub(super) fn weight_to_kc<T: Element>(s: &ConvShape, w: &[T]) -> Vec<T> {
    let (c, k) = (s.g.c, s.g.ksize());
    let mut out = vec![T::zero(); s.f * c * k];
    for f in 0..s.f {
        for ci in 0..c {
            for kk in 0..k {
                out[(f * k + kk) * c + ci] = w[(f * c + ci) * k + kk];
            }
        }
    }
    out
}

/// A weight gradient in the columns' order `(F, K, C)` written back as `(F, C, K)`.
pub(super) fn weight_from_kc<T: Element>(s: &ConvShape, dw_kc: &[T], dw: &mut [T]) {
    let (c, k) = (s.g.c, s.g.ksize());
    for f in 0..s.f {
        for ci in 0..c {
            for kk in 0..k {
                dw[(f * c + ci) * k + kk] = dw_kc[(f * k + kk) * c + ci];
            }
        }
    }
}
