//! Depthwise convolution (one group per input channel) computed directly, without im2col.
//!
//! With one input channel per group, im2col+GEMM degenerates into GEMMs of `multiplier` rows and
//! `ksize` inner elements, dominated by building the columns. Here each output row is a sum of
//! shifted input rows scaled by one weight each (an axpy over the row, which vectorises for
//! stride 1), and the adjoint passes are the same loops transposed. Every task owns whole
//! planes (forward, data gradient) or whole channels (weight gradient, images summed in order),
//! so results do not depend on the thread count.

use super::cols::{for_kernel_rows, valid_range};
use super::convolution::ConvShape;
use crate::element::Element;
use crate::par::{self, Cost};

/// Whether [`ConvShape`] is depthwise: one input channel per group (any channel multiplier).
pub fn is_depthwise(s: &ConvShape) -> bool {
    s.groups > 1 && s.groups == s.g.c && s.f.is_multiple_of(s.groups)
}

/// One kernel tap: its weight index within a filter, and the input offsets it reads at output
/// position 0 along each spatial axis.
#[derive(Clone, Copy)]
struct Tap {
    index: usize,
    off: [isize; 3],
}

fn taps(s: &ConvShape) -> Vec<Tap> {
    let g = &s.g;
    let off = |a: usize, k: usize| (k * g.d[a]) as isize - g.p[a] as isize;
    let mut out = Vec::with_capacity(g.ksize());
    for_kernel_rows(g, |index, kd, kh, kw| out.push(Tap { index, off: [off(0, kd), off(1, kh), off(2, kw)] }));
    out
}

/// Calls `f(out_row_start, in_row_start, lo, hi)` for every output row of `tap` that reads a
/// valid input row: output columns `[lo, hi)` read input columns `lo*s + off_w ..`.
#[inline]
fn for_tap_rows(s: &ConvShape, tap: &Tap, mut f: impl FnMut(usize, usize, usize, usize)) {
    let g = &s.g;
    let [id, ih, iw] = g.inp;
    let [od, oh, ow] = g.out;
    let (lo, hi) = valid_range(ow, g.s[2], tap.off[2], iw);
    if lo >= hi {
        return;
    }
    let (zlo, zhi) = valid_range(od, g.s[0], tap.off[0], id);
    let (ylo, yhi) = valid_range(oh, g.s[1], tap.off[1], ih);
    for zo in zlo..zhi {
        let z = (zo * g.s[0]) as isize + tap.off[0];
        for yo in ylo..yhi {
            let y = (yo * g.s[1]) as isize + tap.off[1];
            f((zo * oh + yo) * ow, (z as usize * ih + y as usize) * iw, lo, hi);
        }
    }
}

/// `dst[o] += w · src[o·stride + off]` for `o` in `[lo, hi)`.
#[inline]
fn axpy_strided<T: Element + std::ops::AddAssign + std::ops::Mul<Output = T>>(
    dst: &mut [T],
    src: &[T],
    w: T,
    (lo, hi): (usize, usize),
    stride: usize,
    off: isize,
) {
    if stride == 1 {
        let start = (lo as isize + off) as usize;
        for (d, &v) in dst[lo..hi].iter_mut().zip(&src[start..start + (hi - lo)]) {
            *d += w * v;
        }
    } else {
        for (o, d) in dst[lo..hi].iter_mut().enumerate() {
            *d += w * src[(((lo + o) * stride) as isize + off) as usize];
        }
    }
}

/// Forward: `y (n, f, out...)` from `x (n, c, in...)` and `w (f, 1, k...)` (+ bias).
/// `epilogue(filter, plane)` runs on each output plane once it is complete.
pub fn depthwise_forward<T, E>(s: &ConvShape, x: &[T], w: &[T], bias: Option<&[T]>, y: &mut [T], epilogue: &E)
where
    T: Element + std::ops::AddAssign + std::ops::Mul<Output = T>,
    E: Fn(usize, &mut [T]) + Sync + Send,
{
    let (p, plane, ks, mult) = (s.g.out_plane(), s.g.in_plane(), s.g.ksize(), s.f / s.groups);
    let taps = taps(s);
    let mut planes: Vec<(usize, &mut [T])> = y.chunks_mut(p.max(1)).enumerate().collect();
    par::for_each_chunk_weighted(&mut planes, p * ks, Cost::Light, |_, part| {
        for (idx, yp) in part.iter_mut() {
            let (img, f) = (*idx / s.f, *idx % s.f);
            let xc = &x[(img * s.g.c + f / mult) * plane..][..plane];
            yp.fill(bias.map_or(T::zero(), |b| b[f]));
            for tap in &taps {
                let wv = w[f * ks + tap.index];
                for_tap_rows(s, tap, |yo, xi, lo, hi| {
                    axpy_strided(&mut yp[yo..], &xc[xi..], wv, (lo, hi), s.g.s[2], tap.off[2]);
                });
            }
            epilogue(f, yp);
        }
    });
}

/// Backward: `dx` (overwritten) from `dy` and `w`; `dw` (overwritten) from `dy` and `x`.
pub fn depthwise_backward<T: Element + std::ops::AddAssign + std::ops::Mul<Output = T>>(
    s: &ConvShape,
    dy: &[T],
    x: Option<&[T]>,
    w: &[T],
    dx: Option<&mut [T]>,
    dw: Option<&mut [T]>,
) {
    let (p, plane, ks, mult) = (s.g.out_plane(), s.g.in_plane(), s.g.ksize(), s.f / s.groups);
    let taps = taps(s);
    if let Some(dx) = dx {
        // Each input plane gathers from the `mult` output planes its channel feeds.
        let mut planes: Vec<(usize, &mut [T])> = dx.chunks_mut(plane.max(1)).enumerate().collect();
        par::for_each_chunk_weighted(&mut planes, p * ks * mult, Cost::Light, |_, part| {
            for (idx, dxc) in part.iter_mut() {
                let (img, c) = (*idx / s.g.c, *idx % s.g.c);
                dxc.fill(T::zero());
                for f in c * mult..(c + 1) * mult {
                    let dyp = &dy[(img * s.f + f) * p..][..p];
                    for tap in &taps {
                        let wv = w[f * ks + tap.index];
                        for_tap_rows(s, tap, |yo, xi, lo, hi| {
                            scatter_row(&mut dxc[xi..], &dyp[yo..], wv, (lo, hi), s.g.s[2], tap.off[2])
                        });
                    }
                }
            }
        });
    }
    if let Some(dw) = dw {
        let Some(x) = x else {
            dw.fill(T::zero());
            return;
        };
        // One task per filter: every tap's sum over images (in order) and positions, in f64.
        let mut filters: Vec<(usize, &mut [T])> = dw.chunks_mut(ks.max(1)).enumerate().collect();
        par::for_each_chunk_weighted(&mut filters, s.n * p * ks, Cost::Light, |_, part| {
            for (f, dwf) in part.iter_mut() {
                let c = *f / mult;
                for tap in &taps {
                    let mut acc = 0.0f64;
                    for img in 0..s.n {
                        let dyp = &dy[(img * s.f + *f) * p..][..p];
                        let xc = &x[(img * s.g.c + c) * plane..][..plane];
                        for_tap_rows(s, tap, |yo, xi, lo, hi| {
                            acc += row_dot(&dyp[yo..], &xc[xi..], (lo, hi), s.g.s[2], tap.off[2])
                        });
                    }
                    dwf[tap.index] = T::from_f64(acc);
                }
            }
        });
    }
}

/// The adjoint of [`axpy_strided`]: `dst[o·stride + off] += w · src[o]`.
#[inline]
fn scatter_row<T: Element + std::ops::AddAssign + std::ops::Mul<Output = T>>(
    dst: &mut [T],
    src: &[T],
    w: T,
    (lo, hi): (usize, usize),
    stride: usize,
    off: isize,
) {
    if stride == 1 {
        let start = (lo as isize + off) as usize;
        for (d, &v) in dst[start..start + (hi - lo)].iter_mut().zip(&src[lo..hi]) {
            *d += w * v;
        }
    } else {
        for (o, &v) in src[lo..hi].iter().enumerate() {
            dst[(((lo + o) * stride) as isize + off) as usize] += w * v;
        }
    }
}

/// `Σ dy[o] · x[o·stride + off]` over `o` in `[lo, hi)`, in f64.
#[inline]
fn row_dot<T: Element>(dy: &[T], x: &[T], (lo, hi): (usize, usize), stride: usize, off: isize) -> f64 {
    if stride == 1 {
        let start = (lo as isize + off) as usize;
        dy[lo..hi].iter().zip(&x[start..start + (hi - lo)]).map(|(a, b)| a.to_f64() * b.to_f64()).sum()
    } else {
        (lo..hi).map(|o| dy[o].to_f64() * x[((o * stride) as isize + off) as usize].to_f64()).sum()
    }
}
