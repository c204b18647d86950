//! Convolution and pooling kernels over contiguous NC(D)(H)W buffers.
//!
//! Every spatial problem is normalised to three spatial axes (1-D and 2-D problems get leading
//! axes of size 1), so one im2col/col2im pair and one pooling loop serve 1-D, 2-D and 3-D.
//! Convolutions are im2col + GEMM per image; the batch is split into chunks whose size depends
//! only on the problem (never on the thread count), processed in parallel through [`par`], and
//! per-chunk weight/bias gradient partials are summed in chunk order, so results are bitwise
//! identical for any number of threads.

use crate::element::Element;
use crate::matmul::{gemm, GemmElement};
use crate::par::{self, Cost};
use crate::reduce::{fold_lanes, Reducer};
use crate::simd_dispatch;

/// Spatial geometry of one convolution or pooling window problem (three spatial axes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geom {
    /// Channels of the (image-side) input.
    pub c: usize,
    pub inp: [usize; 3],
    pub out: [usize; 3],
    pub k: [usize; 3],
    pub s: [usize; 3],
    pub p: [usize; 3],
    pub d: [usize; 3],
}

impl Geom {
    pub fn in_plane(&self) -> usize {
        self.inp.iter().product()
    }
    pub fn out_plane(&self) -> usize {
        self.out.iter().product()
    }
    pub fn ksize(&self) -> usize {
        self.k.iter().product()
    }
    /// im2col is the identity (1x1 kernel, stride 1, no padding).
    fn trivial(&self) -> bool {
        self.k == [1, 1, 1] && self.s == [1, 1, 1] && self.p == [0, 0, 0]
    }
}

/// Output positions `o` in `[lo, hi)` with `0 <= o*s + off < n_in`.
#[inline]
fn valid_range(n_out: usize, s: usize, off: isize, n_in: usize) -> (usize, usize) {
    let s = s as isize;
    let lo = if off >= 0 { 0 } else { ((-off) + s - 1) / s };
    let lim = n_in as isize - off;
    let hi = if lim <= 0 { 0 } else { (lim + s - 1) / s };
    let hi = (hi as usize).min(n_out);
    ((lo as usize).min(hi), hi)
}

/// Runs `$body` for every im2col row, in the shared row order: channel, then kernel d, h, w.
macro_rules! for_rows {
    ($g:expr, |$row:ident, $c:ident, $kd:ident, $kh:ident, $kw:ident| $body:block) => {{
        let mut $row = 0usize;
        for $c in 0..$g.c {
            for $kd in 0..$g.k[0] {
                for $kh in 0..$g.k[1] {
                    for $kw in 0..$g.k[2] {
                        $body
                        $row += 1;
                    }
                }
            }
        }
    }};
}

/// `col[(c,kd,kh,kw), (od,oh,ow)] = x[c, od*s+kd*d-p, ...]` (zero outside the input).
pub fn im2col<T: Element>(x: &[T], g: &Geom, col: &mut [T]) {
    let (plane, pout) = (g.in_plane(), g.out_plane());
    let [id, ih, iw] = g.inp;
    let [od, oh, ow] = g.out;
    for_rows!(g, |row, c, kd, kh, kw| {
        let xc = &x[c * plane..(c + 1) * plane];
        let dst = &mut col[row * pout..(row + 1) * pout];
        let off_w = (kw * g.d[2]) as isize - g.p[2] as isize;
        let (lo, hi) = valid_range(ow, g.s[2], off_w, iw);
        for zo in 0..od {
            let z = (zo * g.s[0] + kd * g.d[0]) as isize - g.p[0] as isize;
            for yo in 0..oh {
                let seg = &mut dst[(zo * oh + yo) * ow..(zo * oh + yo + 1) * ow];
                let y = (yo * g.s[1] + kh * g.d[1]) as isize - g.p[1] as isize;
                if z < 0 || z >= id as isize || y < 0 || y >= ih as isize || lo >= hi {
                    seg.fill(T::zero());
                    continue;
                }
                let src = &xc[(z as usize * ih + y as usize) * iw..][..iw];
                seg[..lo].fill(T::zero());
                seg[hi..].fill(T::zero());
                if g.s[2] == 1 {
                    let start = (lo as isize + off_w) as usize;
                    seg[lo..hi].copy_from_slice(&src[start..start + (hi - lo)]);
                } else {
                    for (o, v) in seg[lo..hi].iter_mut().enumerate() {
                        *v = src[(((lo + o) * g.s[2]) as isize + off_w) as usize];
                    }
                }
            }
        }
    });
}

/// The adjoint of [`im2col`]: `x[c, ...] += col[(c,k), o]` over every window position.
pub fn col2im<T: Element + std::ops::AddAssign>(col: &[T], g: &Geom, x: &mut [T]) {
    let (plane, pout) = (g.in_plane(), g.out_plane());
    let [id, ih, iw] = g.inp;
    let [od, oh, ow] = g.out;
    for_rows!(g, |row, c, kd, kh, kw| {
        let xc = &mut x[c * plane..(c + 1) * plane];
        let srcrow = &col[row * pout..(row + 1) * pout];
        let off_w = (kw * g.d[2]) as isize - g.p[2] as isize;
        let (lo, hi) = valid_range(ow, g.s[2], off_w, iw);
        if lo < hi {
            for zo in 0..od {
                let z = (zo * g.s[0] + kd * g.d[0]) as isize - g.p[0] as isize;
                if z < 0 || z >= id as isize {
                    continue;
                }
                for yo in 0..oh {
                    let y = (yo * g.s[1] + kh * g.d[1]) as isize - g.p[1] as isize;
                    if y < 0 || y >= ih as isize {
                        continue;
                    }
                    let seg = &srcrow[(zo * oh + yo) * ow..(zo * oh + yo + 1) * ow];
                    let dst = &mut xc[(z as usize * ih + y as usize) * iw..][..iw];
                    if g.s[2] == 1 {
                        let start = (lo as isize + off_w) as usize;
                        for (d, &v) in dst[start..start + (hi - lo)].iter_mut().zip(&seg[lo..hi]) {
                            *d += v;
                        }
                    } else {
                        for (o, &v) in seg[lo..hi].iter().enumerate() {
                            dst[(((lo + o) * g.s[2]) as isize + off_w) as usize] += v;
                        }
                    }
                }
            }
        }
    });
}

/// Shape of a grouped convolution: `f` filters, `groups` groups, geometry `g` (g.c = all input
/// channels). Weight is `(f, g.c/groups, k...)`, contiguous.
#[derive(Clone, Copy, Debug)]
pub struct ConvShape {
    pub n: usize,
    pub f: usize,
    pub groups: usize,
    pub g: Geom,
}

impl ConvShape {
    fn cg_k(&self) -> usize {
        self.g.c / self.groups * self.g.ksize()
    }
    fn fg(&self) -> usize {
        self.f / self.groups
    }
    /// Multiply-adds per image of one GEMM pass.
    fn work(&self) -> usize {
        (self.f * self.cg_k() * self.g.out_plane()).max(1)
    }
    /// Images per task: fixed by the problem size only.
    fn chunk_images(&self) -> usize {
        ((1usize << 22) / self.work()).clamp(1, self.n.max(1))
    }
}

/// One chunk of a batched backward: chunk index, its data-gradient slice, its weight/bias partial.
type BackwardChunk<'a, T> = (usize, Option<&'a mut [T]>, Vec<T>);
/// Two input planes and one output plane.
type PlanePair<'a, T> = ((&'a [T], &'a [T]), &'a mut [T]);

/// Forward convolution: `y (n, f, out...) = conv(x (n, c, in...), w) (+ bias)`.
pub fn conv_forward<T: GemmElement + std::ops::AddAssign>(
    s: &ConvShape,
    x: &[T],
    w: &[T],
    bias: Option<&[T]>,
    y: &mut [T],
) {
    let (xin, yout) = (s.g.c * s.g.in_plane(), s.f * s.g.out_plane());
    if s.n == 0 || yout == 0 {
        return;
    }
    let ci = s.chunk_images();
    let mut items: Vec<(&[T], &mut [T])> = x.chunks(ci * xin).zip(y.chunks_mut(ci * yout)).collect();
    par::for_each_chunk_weighted(&mut items, s.work() * ci, Cost::Heavy, |_, part| {
        let mut col = Vec::new();
        for (xs, ys) in part.iter_mut() {
            for (xi, yi) in xs.chunks(xin).zip(ys.chunks_mut(yout)) {
                forward_image(s, xi, w, bias, yi, &mut col);
            }
        }
    });
}

fn forward_image<T: GemmElement>(s: &ConvShape, x: &[T], w: &[T], bias: Option<&[T]>, y: &mut [T], col: &mut Vec<T>) {
    let (p, ck, fg) = (s.g.out_plane(), s.cg_k(), s.fg());
    let cols: &[T] = if s.g.trivial() {
        x
    } else {
        col.resize(s.g.c * s.g.ksize() * p, T::zero());
        im2col(x, &s.g, col);
        col
    };
    if let Some(b) = bias {
        for (row, &bv) in y.chunks_mut(p).zip(b) {
            row.fill(bv);
        }
    }
    for gi in 0..s.groups {
        gemm(
            fg,
            p,
            ck,
            w,
            (gi * fg * ck, ck as isize, 1),
            cols,
            (gi * ck * p, p as isize, 1),
            &mut y[gi * fg * p..(gi + 1) * fg * p],
            bias.is_some(),
        );
    }
}

/// Backward of [`conv_forward`]: `dx` (overwritten) from `dy` and `w`; `dw` and `db`
/// (overwritten) from `dy` and `x` (`x` is required when `dw` is wanted).
#[allow(clippy::too_many_arguments)]
pub fn conv_backward<T: GemmElement + std::ops::AddAssign>(
    s: &ConvShape,
    dy: &[T],
    x: Option<&[T]>,
    w: &[T],
    dx: Option<&mut [T]>,
    dw: Option<&mut [T]>,
    db: Option<&mut [T]>,
) {
    let (xin, yout) = (s.g.c * s.g.in_plane(), s.f * s.g.out_plane());
    let (wlen, blen) = (s.f * s.cg_k(), if db.is_some() { s.f } else { 0 });
    let plen = if dw.is_some() { wlen } else { 0 } + blen;
    let ci = s.chunk_images();
    let n_chunks = s.n.div_ceil(ci);
    let mut dx_parts: Vec<Option<&mut [T]>> = match dx {
        Some(d) => d.chunks_mut(ci * xin).map(Some).collect(),
        None => (0..n_chunks).map(|_| None).collect(),
    };
    dx_parts.resize_with(n_chunks, || None);
    let mut items: Vec<BackwardChunk<'_, T>> =
        dx_parts.into_iter().enumerate().map(|(i, d)| (i, d, vec![T::zero(); plen])).collect();
    let want_dw = plen > blen;
    if yout != 0 && xin != 0 {
        par::for_each_chunk_weighted(&mut items, 2 * s.work() * ci, Cost::Heavy, |_, part| {
            let (mut col, mut dcol) = (Vec::new(), Vec::new());
            for (ci_idx, dxs, partial) in part.iter_mut() {
                let first = *ci_idx * ci;
                let last = (first + ci).min(s.n);
                if let Some(d) = dxs.as_deref_mut() {
                    d.fill(T::zero());
                }
                for img in first..last {
                    let dyi = &dy[img * yout..(img + 1) * yout];
                    let dxi = dxs.as_deref_mut().map(|d| &mut d[(img - first) * xin..(img - first + 1) * xin]);
                    let xi = x.map(|x| &x[img * xin..(img + 1) * xin]);
                    backward_image(s, dyi, xi, w, dxi, partial, want_dw, blen > 0, &mut col, &mut dcol);
                }
            }
        });
    } else {
        for (_, d, _) in items.iter_mut() {
            if let Some(d) = d.as_deref_mut() {
                d.fill(T::zero());
            }
        }
    }
    let mut total = vec![T::zero(); plen];
    for (_, _, p) in &items {
        for (t, &v) in total.iter_mut().zip(p) {
            *t += v;
        }
    }
    if let Some(dw) = dw {
        dw.copy_from_slice(&total[..wlen]);
    }
    if let Some(db) = db {
        db.copy_from_slice(&total[plen - blen..]);
    }
}

#[allow(clippy::too_many_arguments)]
fn backward_image<T: GemmElement + std::ops::AddAssign>(
    s: &ConvShape,
    dy: &[T],
    x: Option<&[T]>,
    w: &[T],
    dx: Option<&mut [T]>,
    partial: &mut [T],
    want_dw: bool,
    want_db: bool,
    col: &mut Vec<T>,
    dcol: &mut Vec<T>,
) {
    let (p, ck, fg) = (s.g.out_plane(), s.cg_k(), s.fg());
    let rows = s.g.c * s.g.ksize();
    let trivial = s.g.trivial();
    if let Some(dx) = dx {
        // dcol = Wᵀ·dy per group, scattered back into dx (written straight for 1x1 kernels).
        if !trivial {
            dcol.resize(rows * p, T::zero());
        }
        let target: &mut [T] = if trivial { &mut *dx } else { &mut dcol[..] };
        for gi in 0..s.groups {
            gemm(
                ck,
                p,
                fg,
                w,
                (gi * fg * ck, 1, ck as isize),
                dy,
                (gi * fg * p, p as isize, 1),
                &mut target[gi * ck * p..(gi + 1) * ck * p],
                false,
            );
        }
        if !trivial {
            col2im(dcol, &s.g, dx);
        }
    }
    if want_dw {
        if let Some(x) = x {
            let cols: &[T] = if trivial {
                x
            } else {
                col.resize(rows * p, T::zero());
                im2col(x, &s.g, col);
                col
            };
            for gi in 0..s.groups {
                gemm(
                    fg,
                    ck,
                    p,
                    dy,
                    (gi * fg * p, p as isize, 1),
                    cols,
                    (gi * ck * p, 1, p as isize),
                    &mut partial[gi * fg * ck..(gi + 1) * fg * ck],
                    true,
                );
            }
        }
    }
    if want_db {
        let off = if want_dw { s.f * ck } else { 0 };
        for (f, row) in dy.chunks(p).enumerate().take(s.f) {
            let mut acc = T::zero();
            for &v in row {
                acc += v;
            }
            partial[off + f] += acc;
        }
    }
}

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

/// `y = x·a + b` with `a`, `b` given per `mid` index of the `(outer, mid, inner)` view
/// (BatchNorm's per-channel affine after folding mean and inverse std in).
pub fn channel_affine<T: PoolFloat>(x: &[T], inner: usize, mid: usize, a: &[T], b: &[T], y: &mut [T]) {
    let inner = inner.max(1);
    par::for_each_chunk(y, Cost::Light, |start, ys| {
        let mut i = 0;
        while i < ys.len() {
            let pos = start + i;
            let m = (pos / inner) % mid.max(1);
            let run = (inner - pos % inner).min(ys.len() - i);
            let (av, bv) = (a[m], b[m]);
            for (yv, &xv) in ys[i..i + run].iter_mut().zip(&x[pos..pos + run]) {
                *yv = xv * av + bv;
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
