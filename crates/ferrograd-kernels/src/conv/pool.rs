//! Pooling over NC(D)(H)W planes: max, average (with or without padding in the divisor), sum and
//! Lp, forward and backward, parallel over planes.

use super::{for_plane_chunks, Geom};
use crate::element::Element;
use crate::par::Cost;
use crate::simd_dispatch;

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

/// One axis of output position `o`'s window: `[lo, hi)` clamped to the input (`lo == hi` when
/// empty) and the window's extent inside the padded input (MXNet's `count_include_pad` divisor).
#[inline(always)]
fn axis_window(g: &Geom, axis: usize, o: usize) -> (usize, usize, usize) {
    let (n, p) = (g.inp[axis], g.p[axis]);
    let start = (o * g.s[axis]) as isize - p as isize;
    let end = (start + g.k[axis] as isize).min((n + p) as isize);
    let lo = start.max(0) as usize;
    let hi = (end.max(0) as usize).min(n).max(lo);
    (lo, hi, (end - start).max(0) as usize)
}

/// Calls `f(o, lo, hi, padded_area)` for every output position `o` of a plane: the window is
/// `[lo, hi)` per axis clamped to the input; `padded_area` counts the window inside the padded
/// input (MXNet's divisor with `count_include_pad`). The outer axes' windows are computed once
/// per row, so the per-output cost is one axis' bounds.
#[inline(always)]
fn for_windows(g: &Geom, mut f: impl FnMut(usize, [usize; 3], [usize; 3], usize)) {
    let mut o = 0;
    for zo in 0..g.out[0] {
        let (zlo, zhi, za) = axis_window(g, 0, zo);
        for yo in 0..g.out[1] {
            let (ylo, yhi, ya) = axis_window(g, 1, yo);
            for xo in 0..g.out[2] {
                let (xlo, xhi, xa) = axis_window(g, 2, xo);
                f(o, [zlo, ylo, xlo], [zhi, yhi, xhi], za * ya * xa);
                o += 1;
            }
        }
    }
}

/// Calls `f(row)` for every input row `x[row + lo[2] .. row + hi[2]]` of the window `[lo, hi)`.
#[inline(always)]
fn for_rows(g: &Geom, lo: [usize; 3], hi: [usize; 3], mut f: impl FnMut(usize)) {
    for z in lo[0]..hi[0] {
        for y in lo[1]..hi[1] {
            f((z * g.inp[1] + y) * g.inp[2]);
        }
    }
}

/// Calls `f(i)` for every input position `i` of the window `[lo, hi)`.
#[inline(always)]
fn for_positions(g: &Geom, lo: [usize; 3], hi: [usize; 3], mut f: impl FnMut(usize)) {
    for_rows(g, lo, hi, |row| (row + lo[2]..row + hi[2]).for_each(&mut f));
}

/// Index of the first maximum in the window, in row-major order (`None` for an empty window).
/// A NaN first element stays the maximum (nothing compares greater), later NaNs are skipped.
#[inline(always)]
fn argmax<T: PoolFloat>(x: &[T], g: &Geom, lo: [usize; 3], hi: [usize; 3]) -> Option<usize> {
    if (0..3).any(|i| lo[i] >= hi[i]) {
        return None;
    }
    let first = (lo[0] * g.inp[1] + lo[1]) * g.inp[2] + lo[2];
    let (mut best, mut bv) = (first, x[first]);
    for_rows(g, lo, hi, |row| {
        for (i, &v) in x[row + lo[2]..row + hi[2]].iter().enumerate() {
            if v > bv {
                (best, bv) = (row + lo[2] + i, v);
            }
        }
    });
    Some(best)
}

/// A 2-D (or 1-D) problem: no depth axis, so windows are rows of one plane.
fn is_2d(g: &Geom) -> bool {
    g.inp[0] == 1 && g.out[0] == 1 && g.k[0] == 1 && g.p[0] == 0
}

/// 2-D pooling whose windows tile the input in disjoint 2×2 squares (kernel 2, stride 2, no
/// padding, every window inside the input): the most common max pooling, with its own kernels.
fn is_2x2_tiling(g: &Geom) -> bool {
    is_2d(g)
        && g.k[1..] == [2, 2]
        && g.s[1..] == [2, 2]
        && g.p[1..] == [0, 0]
        && 2 * g.out[1] <= g.inp[1]
        && 2 * g.out[2] <= g.inp[2]
}

/// The first maximum of `[a, b, c, d]` in that order: a NaN first element stays the maximum,
/// later NaNs are skipped (the rule of the general kernels).
#[inline(always)]
fn first_max4<T: PoolFloat>(a: T, b: T, c: T, d: T) -> T {
    let m = if b > a { b } else { a };
    let m = if c > m { c } else { m };
    if d > m {
        d
    } else {
        m
    }
}

simd_dispatch! {
    /// 2×2/stride-2 max pooling of whole planes (`[in_h, in_w, out_h, out_w]`): one call per
    /// chunk of planes, since the demo-sized planes have only a few outputs per row.
    pub fn max2x2_planes<T>(xs: &[T], ys: &mut [T], dims: [usize; 4])
    where { T: PoolFloat }
    {
        let [ih, w, oh, ow] = dims;
        for (plane, out) in ys.chunks_exact_mut(oh * ow).enumerate() {
            let xp = &xs[plane * ih * w..(plane + 1) * ih * w];
            for (yo, out) in out.chunks_exact_mut(ow).enumerate() {
                let top = &xp[2 * yo * w..2 * yo * w + 2 * ow];
                let bottom = &xp[(2 * yo + 1) * w..(2 * yo + 1) * w + 2 * ow];
                for o in 0..ow {
                    out[o] = first_max4(top[2 * o], top[2 * o + 1], bottom[2 * o], bottom[2 * o + 1]);
                }
            }
        }
    }
}

simd_dispatch! {
    /// The gradient of [`max2x2_planes`]: each output gradient goes to its window's first
    /// maximum (windows are disjoint, so every input receives at most one); `dx` must be zero
    /// where no window reaches (an odd last row or column).
    pub fn max2x2_planes_backward<T>(xs: &[T], gy: &[T], dx: &mut [T], dims: [usize; 4])
    where { T: PoolFloat }
    {
        let [ih, w, oh, ow] = dims;
        let z = T::zero();
        for (plane, gp) in gy.chunks_exact(oh * ow).enumerate() {
            let xp = &xs[plane * ih * w..(plane + 1) * ih * w];
            let dp = &mut dx[plane * ih * w..(plane + 1) * ih * w];
            for (yo, gr) in gp.chunks_exact(ow).enumerate() {
                let top = &xp[2 * yo * w..2 * yo * w + 2 * ow];
                let bottom = &xp[(2 * yo + 1) * w..(2 * yo + 1) * w + 2 * ow];
                let (dtop, dbottom) = dp[2 * yo * w..(2 * yo + 2) * w].split_at_mut(w);
                let (dtop, dbottom) = (&mut dtop[..2 * ow], &mut dbottom[..2 * ow]);
                for o in 0..ow {
                    // Which element wins, as masks (no branches: random data would mispredict).
                    let (a, b, c, d) = (top[2 * o], top[2 * o + 1], bottom[2 * o], bottom[2 * o + 1]);
                    let s1 = b > a;
                    let m1 = if s1 { b } else { a };
                    let s2 = c > m1;
                    let m2 = if s2 { c } else { m1 };
                    let s3 = d > m2;
                    let g = gr[o];
                    dtop[2 * o] = if !s1 & !s2 & !s3 { g } else { z };
                    dtop[2 * o + 1] = if s1 & !s2 & !s3 { g } else { z };
                    dbottom[2 * o] = if s2 & !s3 { g } else { z };
                    dbottom[2 * o + 1] = if s3 { g } else { z };
                }
            }
        }
    }
}

/// A 2-D window: rows `y`, columns `x` (half-open, clamped to the input), and its extent inside
/// the padded input.
#[derive(Clone, Copy)]
struct Win2 {
    y: (usize, usize),
    x: (usize, usize),
    area: usize,
}

/// Calls `f(o, window)` for every output `o` of a 2-D plane, in order.
#[inline(always)]
fn for_windows_2d(g: &Geom, mut f: impl FnMut(usize, Win2)) {
    let ow = g.out[2];
    for yo in 0..g.out[1] {
        let (ylo, yhi, ya) = axis_window(g, 1, yo);
        for xo in 0..ow {
            let (xlo, xhi, xa) = axis_window(g, 2, xo);
            f(yo * ow + xo, Win2 { y: (ylo, yhi), x: (xlo, xhi), area: ya * xa });
        }
    }
}

/// The first maximum of a nonempty 2-D window of plane `xs` (row width `w`), in row-major order.
#[inline(always)]
fn argmax_2d<T: PoolFloat>(xs: &[T], w: usize, win: Win2) -> usize {
    let first = win.y.0 * w + win.x.0;
    let (mut best, mut bv) = (first, xs[first]);
    for y in win.y.0..win.y.1 {
        let start = y * w + win.x.0;
        for (i, &v) in xs[start..y * w + win.x.1].iter().enumerate() {
            if v > bv {
                (best, bv) = (start + i, v);
            }
        }
    }
    best
}

fn is_empty_2d(win: Win2) -> bool {
    win.y.0 >= win.y.1 || win.x.0 >= win.x.1
}

/// [`scale`] of a 2-D window.
#[inline(always)]
fn scale_2d<T: PoolFloat>(kind: PoolKind, win: Win2) -> T {
    scale(kind, [0, win.y.0, win.x.0], [1, win.y.1, win.x.1], win.area)
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

/// Window reads per plane: the parallel policy's work measure.
fn plane_work(g: &Geom) -> usize {
    (g.out_plane() * g.ksize()).max(1)
}

/// The output columns whose window lies wholly inside the input row (no padding, no clamping):
/// `lo..hi`, with their windows starting at `xo·s - p`.
fn interior_columns(g: &Geom) -> std::ops::Range<usize> {
    let (w, k, s, p, ow) = (g.inp[2], g.k[2], g.s[2], g.p[2], g.out[2]);
    let lo = p.div_ceil(s).min(ow);
    let hi = if w + p >= k { ((w + p - k) / s + 1).min(ow) } else { 0 };
    lo..hi.max(lo)
}

/// Folds one input row into output row `out` for max (`first`: this is the window's first row,
/// so each output starts from its window's first element) or for a sum.
#[inline(always)]
fn fold_row<T: PoolFloat>(g: &Geom, max: bool, first: bool, row: &[T], out: &mut [T], inner: &std::ops::Range<usize>) {
    let (k, s, p) = (g.k[2], g.s[2], g.p[2]);
    let fold = |o: &mut T, win: &[T]| {
        if max {
            let mut m = if first { win[0] } else { *o };
            for &v in win {
                if v > m {
                    m = v;
                }
            }
            *o = m;
        } else {
            let mut acc = *o;
            win.iter().for_each(|&v| acc += v);
            *o = acc;
        }
    };
    for xo in (0..inner.start).chain(inner.end..out.len()) {
        let (xlo, xhi, _) = axis_window(g, 2, xo);
        if xlo < xhi {
            fold(&mut out[xo], &row[xlo..xhi]);
        }
    }
    let start = inner.start * s - p;
    if s == k {
        let span = &row[start..start + inner.len() * k];
        for (o, win) in out[inner.clone()].iter_mut().zip(span.chunks_exact(k)) {
            fold(o, win);
        }
    } else {
        for (j, o) in out[inner.clone()].iter_mut().enumerate() {
            let x = start + j * s;
            fold(o, &row[x..x + k]);
        }
    }
}

/// 2-D max, average or sum pooling of one plane, an output row at a time: each input row of the
/// window rows is folded into the whole output row, so the input is read row by row and max
/// pooling tracks no positions. Every output still folds its window in row-major order, from
/// its first element (max) or from zero (sums), so the results are those of a per-window loop:
/// a NaN first element stays the maximum, later NaNs are skipped.
fn pool_plane_2d<T: PoolFloat>(g: &Geom, kind: PoolKind, xs: &[T], ys: &mut [T]) {
    let (w, ow) = (g.inp[2], g.out[2]);
    let max = kind == PoolKind::Max;
    let inner = interior_columns(g);
    for (yo, out) in ys.chunks_mut(ow).enumerate() {
        let (ylo, yhi, ya) = axis_window(g, 1, yo);
        out.fill(T::zero());
        for y in ylo..yhi {
            fold_row(g, max, y == ylo, &xs[y * w..(y + 1) * w], out, &inner);
        }
        if max {
            continue; // empty windows (only at clamped edges) stay 0
        }
        for (xo, o) in out.iter_mut().enumerate() {
            let (xlo, xhi, xa) = axis_window(g, 2, xo);
            let win = Win2 { y: (ylo, yhi), x: (xlo, xhi), area: ya * xa };
            *o = *o * scale_2d::<T>(kind, win);
        }
    }
}

/// Pooling forward over `planes` contiguous planes (`g.c` is ignored). Empty windows (only
/// possible with the `full` convention) give 0.
pub fn pool_forward<T: PoolFloat>(g: &Geom, kind: PoolKind, x: &[T], y: &mut [T]) {
    let (ip, op) = (g.in_plane(), g.out_plane());
    if op == 0 || ip == 0 {
        y.fill(T::zero());
        return;
    }
    let tiles = kind == PoolKind::Max && is_2x2_tiling(g);
    for_plane_chunks(y, op, plane_work(g), Cost::Read, |first, ys| {
        if tiles {
            let planes = ys.len() / op;
            return max2x2_planes(&x[first * ip..(first + planes) * ip], ys, [g.inp[1], g.inp[2], g.out[1], g.out[2]]);
        }
        for (j, ys) in ys.chunks_mut(op).enumerate() {
            let xs = &x[(first + j) * ip..][..ip];
            match kind {
                PoolKind::Max | PoolKind::Avg { .. } | PoolKind::Sum if is_2d(g) => pool_plane_2d(g, kind, xs, ys),
                PoolKind::Max => for_windows(g, |o, lo, hi, _| {
                    ys[o] = argmax(xs, g, lo, hi).map_or(T::zero(), |i| xs[i]);
                }),
                PoolKind::Lp(p) => for_windows(g, |o, lo, hi, _| {
                    let mut acc = 0.0f64;
                    for_positions(g, lo, hi, |i| acc += xs[i].to_f64().abs().powf(p));
                    ys[o] = T::from_f64(acc.powf(1.0 / p));
                }),
                _ => for_windows(g, |o, lo, hi, area| {
                    let mut acc = T::zero();
                    for_rows(g, lo, hi, |row| xs[row + lo[2]..row + hi[2]].iter().for_each(|&v| acc += v));
                    ys[o] = acc * scale::<T>(kind, lo, hi, area);
                }),
            }
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
    for_plane_chunks(dx, ip, plane_work(g), Cost::Read, |first, dxs| {
        for (j, ds) in dxs.chunks_mut(ip).enumerate() {
            let gs = &gy[(first + j) * op..][..op];
            if is_2d(g) {
                let w = g.inp[2];
                for_windows_2d(g, |o, win| {
                    let v = gs[o] * scale_2d::<T>(kind, win);
                    for y in win.y.0..win.y.1 {
                        ds[y * w + win.x.0..y * w + win.x.1].iter_mut().for_each(|d| *d += v);
                    }
                });
                continue;
            }
            for_windows(g, |o, lo, hi, area| {
                let v = gs[o] * scale::<T>(kind, lo, hi, area);
                for_rows(g, lo, hi, |row| ds[row + lo[2]..row + hi[2]].iter_mut().for_each(|d| *d += v));
            });
        }
    });
}

/// Max pooling gradient: `dx[argmax(o)] += gy[o]` (first maximum of each window).
pub fn pool_max_backward<T: PoolFloat>(g: &Geom, gy: &[T], x: &[T], dx: &mut [T]) {
    let (ip, op) = (g.in_plane(), g.out_plane());
    let tiles = is_2x2_tiling(g);
    // Tiles covering the whole plane write every element themselves.
    if !(tiles && 2 * g.out[1] == g.inp[1] && 2 * g.out[2] == g.inp[2]) {
        dx.fill(T::zero());
    }
    if op == 0 || ip == 0 {
        return;
    }
    for_plane_chunks(dx, ip, plane_work(g), Cost::Read, |first, dxs| {
        if tiles {
            let planes = dxs.len() / ip;
            let (gs, xs) = (&gy[first * op..(first + planes) * op], &x[first * ip..(first + planes) * ip]);
            return max2x2_planes_backward(xs, gs, dxs, [g.inp[1], g.inp[2], g.out[1], g.out[2]]);
        }
        for (j, ds) in dxs.chunks_mut(ip).enumerate() {
            let (gs, xs) = (&gy[(first + j) * op..][..op], &x[(first + j) * ip..][..ip]);
            if is_2d(g) {
                for_windows_2d(g, |o, win| {
                    if !is_empty_2d(win) {
                        ds[argmax_2d(xs, g.inp[2], win)] += gs[o];
                    }
                });
                continue;
            }
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
    for_plane_chunks(y, op, plane_work(g), Cost::Read, |first, ys| {
        for (j, ys) in ys.chunks_mut(op).enumerate() {
            let (hs, xs) = (&h[(first + j) * ip..][..ip], &x[(first + j) * ip..][..ip]);
            for_windows(g, |o, lo, hi, _| {
                ys[o] = argmax(xs, g, lo, hi).map_or(T::zero(), |i| hs[i]);
            });
        }
    });
}
