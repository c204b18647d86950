//! Depthwise convolution (one group per input channel) computed directly, without im2col.
//!
//! With one input channel per group, im2col+GEMM degenerates into GEMMs of `multiplier` rows and
//! `ksize` inner elements, dominated by building the columns. Here each channel's input plane is
//! copied once into a zero-bordered scratch grid, split by stride phase (with stride 2, even and
//! odd rows and columns apart), so that every kernel tap reads one contiguous run of the grid:
//! output `o`, counted in "extended" rows as wide as the grid (their last columns are computed and
//! dropped), reads grid element `o + offset(tap)`. The forward is then a sum of `ksize` shifted
//! vectors kept in registers, the data gradient the same sum with the taps read backwards, the
//! weight gradient `ksize` dot products; all three run at the CPU's vector width
//! ([`simd_dispatch!`]). Every task owns whole planes (forward, data gradient) or whole filters
//! (weight gradient, images summed in order), so results do not depend on the thread count.

use std::ops::{AddAssign, Mul};

use super::cols::for_kernel_rows;
use super::convolution::{ConvScratch, ConvShape};
use super::{for_plane_chunks, Geom};
use crate::element::Element;
use crate::par::Cost;
use crate::simd_dispatch;

/// Whether [`ConvShape`] is depthwise: one input channel per group (any channel multiplier).
pub fn is_depthwise(s: &ConvShape) -> bool {
    s.groups > 1 && s.groups == s.g.c && s.f.is_multiple_of(s.groups)
}

/// Where one channel's zero-padded input sits in the phase-split scratch grid, and where each
/// kernel tap reads it.
struct PhaseGrid {
    g: Geom,
    /// Element pitches of one phase's grid along each axis.
    pitch: [usize; 3],
    /// Extended outputs: output `(zo, yo, xo)` is element `zo·pitch₀ + yo·pitch₁ + xo`.
    out_len: usize,
    /// `(weight index, grid offset)` of each kernel tap, in weight order.
    taps: Vec<(usize, usize)>,
    /// The same taps read backwards, for the data gradient: grid element `j` gathers extended
    /// output `j - offset`, i.e. element `j + (lead - offset)` of the extended outputs placed
    /// after `lead` zeros.
    back_taps: Vec<(usize, usize)>,
    lead: usize,
    /// Grid elements the data gradient computes (every phase, in whole blocks).
    grid_out: usize,
    /// For each input row, `min(s_w, iw)` grid offsets: the row's elements `q, q + s_w, …` go to
    /// grid elements `runs[q], runs[q] + 1, …`.
    runs: Vec<usize>,
}

impl PhaseGrid {
    fn new(g: &Geom) -> Self {
        // The padded extent, at least what the outputs reach (so every read is inside the grid).
        let extent: [usize; 3] = std::array::from_fn(|a| {
            let reach = (g.out[a].max(1) - 1) * g.s[a] + (g.k[a].max(1) - 1) * g.d[a] + 1;
            (g.inp[a] + 2 * g.p[a]).max(reach).div_ceil(g.s[a])
        });
        let pitch = [extent[1] * extent[2], extent[2], 1];
        let len: usize = extent.iter().product();
        let [od, oh, ow] = g.out;
        // Rounded up to whole vector blocks: the extra outputs are dropped like the rows' tails.
        let out_len = if g.out_plane() == 0 { 0 } else { (od - 1) * pitch[0] + (oh - 1) * pitch[1] + ow };
        let out_len = out_len.next_multiple_of(BLOCK);
        let mut taps = Vec::with_capacity(g.ksize());
        for_kernel_rows(g, |index, kd, kh, kw| {
            let (mut phase, mut offset) = (0, 0);
            for (a, k) in [kd, kh, kw].into_iter().enumerate() {
                let reach = k * g.d[a];
                phase = phase * g.s[a] + reach % g.s[a];
                offset += reach / g.s[a] * pitch[a];
            }
            taps.push((index, phase * len + offset));
        });
        let Geom { inp: [id, ih, iw], s, p, .. } = *g;
        let mut runs = Vec::with_capacity(id * ih * s[2].min(iw));
        for z in 0..id {
            let (qz, gz) = ((z + p[0]) % s[0], (z + p[0]) / s[0]);
            for y in 0..ih {
                let (qy, gy) = ((y + p[1]) % s[1], (y + p[1]) / s[1]);
                runs.extend((0..s[2].min(iw)).map(|x0| {
                    let (qx, gx) = ((x0 + p[2]) % s[2], (x0 + p[2]) / s[2]);
                    ((qz * s[1] + qy) * s[2] + qx) * len + gz * pitch[0] + gy * pitch[1] + gx
                }));
            }
        }
        let lead = taps.iter().map(|&(_, off)| off).max().unwrap_or(0);
        let back_taps: Vec<(usize, usize)> = taps.iter().map(|&(wi, off)| (wi, lead - off)).collect();
        let grid_out = (len * s.iter().product::<usize>()).next_multiple_of(BLOCK);
        PhaseGrid { g: *g, pitch, out_len, taps, runs, back_taps, lead, grid_out }
    }

    /// Elements of the scratch grid: all phases in whole blocks, and room for the last tap's
    /// reads of the rounded-up extended outputs.
    fn buf_len(&self) -> usize {
        self.grid_out.max(self.lead + self.out_len)
    }

    /// Copies one input plane into the grid (the borders stay as they are: zero).
    fn load<T: Copy>(&self, xc: &[T], grid: &mut [T]) {
        let (iw, sw) = (self.g.inp[2], self.g.s[2]);
        for (runs, i) in self.runs.chunks_exact(sw.min(iw).max(1)).zip((0..).step_by(iw)) {
            match *runs {
                [at] => grid[at..at + iw].copy_from_slice(&xc[i..i + iw]),
                [a, b] => {
                    let (a, b, src) = (a..a + iw.div_ceil(2), b..b + iw / 2, &xc[i..i + iw]);
                    let (evens, odds) = disjoint(grid, a, b);
                    for ((e, o), pair) in evens.iter_mut().zip(odds.iter_mut()).zip(src.chunks_exact(2)) {
                        (*e, *o) = (pair[0], pair[1]);
                    }
                    if iw % 2 == 1 {
                        evens[iw / 2] = src[iw - 1];
                    }
                }
                _ => {
                    for (x0, &at) in runs.iter().enumerate() {
                        let n = (iw - x0).div_ceil(sw);
                        (0..n).for_each(|j| grid[at + j] = xc[i + x0 + j * sw]);
                    }
                }
            }
        }
    }

    /// The inverse of [`Self::load`]: the grid's interior back into an input plane.
    fn store<T: Copy>(&self, grid: &[T], xc: &mut [T]) {
        let (iw, sw) = (self.g.inp[2], self.g.s[2]);
        for (runs, i) in self.runs.chunks_exact(sw.min(iw).max(1)).zip((0..).step_by(iw)) {
            match *runs {
                [at] => xc[i..i + iw].copy_from_slice(&grid[at..at + iw]),
                [a, b] => {
                    let (evens, odds, dst) = (&grid[a..a + iw.div_ceil(2)], &grid[b..b + iw / 2], &mut xc[i..i + iw]);
                    for ((&e, &o), pair) in evens.iter().zip(odds).zip(dst.chunks_exact_mut(2)) {
                        (pair[0], pair[1]) = (e, o);
                    }
                    if iw % 2 == 1 {
                        dst[iw - 1] = evens[iw / 2];
                    }
                }
                _ => {
                    for (x0, &at) in runs.iter().enumerate() {
                        let n = (iw - x0).div_ceil(sw);
                        (0..n).for_each(|j| xc[i + x0 + j * sw] = grid[at + j]);
                    }
                }
            }
        }
    }

    /// Calls `f(plane_offset, extended_offset)` for each output row (`ow` elements).
    fn for_output_rows(&self, mut f: impl FnMut(usize, usize)) {
        let [od, oh, ow] = self.g.out;
        for zo in 0..od {
            for yo in 0..oh {
                f((zo * oh + yo) * ow, zo * self.pitch[0] + yo * self.pitch[1]);
            }
        }
    }

    /// An output plane into its extended rows (whose dropped columns stay as they are: zero).
    fn expand<T: Copy>(&self, plane: &[T], ext: &mut [T]) {
        let ow = self.g.out[2];
        self.for_output_rows(|o, e| ext[e..e + ow].copy_from_slice(&plane[o..o + ow]));
    }

    /// Extended rows into an output plane.
    fn compact<T: Copy>(&self, ext: &[T], plane: &mut [T]) {
        let ow = self.g.out[2];
        self.for_output_rows(|o, e| plane[o..o + ow].copy_from_slice(&ext[e..e + ow]));
    }
}

/// Two non-overlapping ranges of `buf`, mutably.
fn disjoint<T>(buf: &mut [T], a: std::ops::Range<usize>, b: std::ops::Range<usize>) -> (&mut [T], &mut [T]) {
    if a.start < b.start {
        let (lo, hi) = buf.split_at_mut(b.start);
        (&mut lo[a], &mut hi[..b.end - b.start])
    } else {
        let (lo, hi) = buf.split_at_mut(a.start);
        (&mut hi[..a.end - a.start], &mut lo[b])
    }
}

/// Outputs summed over the taps a block at a time, in registers; also the lanes of the weight
/// gradient's dot products (independent chains of vectors). Extended outputs come in whole blocks.
const BLOCK: usize = 32;

simd_dispatch! {
    /// `acc[i] += Σ_t w[t.0] · grid[t.1 + i]` for every `i`, taps in order; `acc` comes in whole
    /// blocks.
    pub fn shifted_sum<T>(acc: &mut [T], grid: &[T], taps: &[(usize, usize)], w: &[T])
    where { T: Element + AddAssign + Mul<Output = T> }
    {
        debug_assert_eq!(acc.len() % BLOCK, 0);
        for (block, out) in acc.chunks_exact_mut(BLOCK).enumerate() {
            let (start, mut a) = (block * BLOCK, [T::zero(); BLOCK]);
            a.copy_from_slice(out);
            for &(wi, off) in taps {
                let (wv, src) = (w[wi], &grid[off + start..off + start + BLOCK]);
                for i in 0..BLOCK {
                    a[i] += wv * src[i];
                }
            }
            out.copy_from_slice(&a);
        }
    }
}

simd_dispatch! {
    /// `acc[t] += Σ_i dy[i] · grid[taps[t].1 + i]`: each sum in [`BLOCK`] lanes of `T`,
    /// combined in a fixed order, then added in f64; `dy` comes in whole blocks.
    pub fn shifted_dots<T>(dy: &[T], grid: &[T], taps: &[(usize, usize)], acc: &mut [f64])
    where { T: Element + AddAssign + Mul<Output = T> }
    {
        debug_assert_eq!(dy.len() % BLOCK, 0);
        for (&(_, off), out) in taps.iter().zip(acc.iter_mut()) {
            let mut lanes = [T::zero(); BLOCK];
            for (a, b) in dy.chunks_exact(BLOCK).zip(grid[off..off + dy.len()].chunks_exact(BLOCK)) {
                for i in 0..BLOCK {
                    lanes[i] += a[i] * b[i];
                }
            }
            let mut width = BLOCK / 2;
            while width > 0 {
                for i in 0..width {
                    let v = lanes[i + width];
                    lanes[i] += v;
                }
                width /= 2;
            }
            *out += lanes[0].to_f64();
        }
    }
}

/// `buf` grown to `n` elements and zeroed: the grids' borders and the extended rows' dropped
/// columns are never written afterwards.
fn zeroed<T: Element>(buf: &mut Vec<T>, n: usize) -> &mut [T] {
    buf.clear();
    buf.resize(n, T::zero());
    buf
}

/// Forward: `y (n, f, out...)` from `x (n, c, in...)` and `w (f, 1, k...)` (+ bias).
/// `epilogue(filter, plane)` runs on each output plane once it is complete.
pub fn depthwise_forward<T, E>(s: &ConvShape, x: &[T], w: &[T], bias: Option<&[T]>, y: &mut [T], epilogue: &E)
where
    T: ConvScratch + AddAssign + Mul<Output = T>,
    E: Fn(usize, &mut [T]) + Sync + Send,
{
    let (p, plane, ks, mult) = (s.g.out_plane(), s.g.in_plane(), s.g.ksize(), s.f / s.groups);
    let grid = PhaseGrid::new(&s.g);
    for_plane_chunks(y, p, plane + grid.out_len * ks, Cost::Light, |first, ys| {
        T::with_scratch(|gbuf, ebuf| {
            let (gb, ext) = (zeroed(gbuf, grid.buf_len()), zeroed(ebuf, grid.out_len));
            let mut loaded = None;
            for (j, yp) in ys.chunks_mut(p).enumerate() {
                let (img, f) = ((first + j) / s.f, (first + j) % s.f);
                let channel = img * s.g.c + f / mult;
                if loaded != Some(channel) {
                    grid.load(&x[channel * plane..][..plane], gb);
                    loaded = Some(channel);
                }
                ext.fill(bias.map_or(T::zero(), |b| b[f]));
                shifted_sum(ext, gb, &grid.taps, &w[f * ks..][..ks]);
                grid.compact(ext, yp);
                epilogue(f, yp);
            }
        })
    });
}

/// Backward: `dx` (overwritten) from `dy` and `w`; `dw` (overwritten) from `dy` and `x`.
pub fn depthwise_backward<T: ConvScratch + AddAssign + Mul<Output = T>>(
    s: &ConvShape,
    dy: &[T],
    x: Option<&[T]>,
    w: &[T],
    dx: Option<&mut [T]>,
    dw: Option<&mut [T]>,
) {
    let (p, plane, ks, mult) = (s.g.out_plane(), s.g.in_plane(), s.g.ksize(), s.f / s.groups);
    let grid = PhaseGrid::new(&s.g);
    if let Some(dx) = dx {
        // Each input plane gathers from the `mult` output planes its channel feeds: the
        // forward's shifted sum over the taps read backwards, into the grid, then cropped.
        for_plane_chunks(dx, plane, mult * ks * grid.grid_out, Cost::Light, |first, dxs| {
            T::with_scratch(|gbuf, ebuf| {
                let ext = zeroed(ebuf, grid.lead + grid.grid_out);
                let gb = zeroed(gbuf, grid.grid_out);
                for (j, dxc) in dxs.chunks_mut(plane).enumerate() {
                    let (img, c) = ((first + j) / s.g.c, (first + j) % s.g.c);
                    gb.fill(T::zero());
                    for f in c * mult..(c + 1) * mult {
                        grid.expand(&dy[(img * s.f + f) * p..][..p], &mut ext[grid.lead..]);
                        shifted_sum(gb, ext, &grid.back_taps, &w[f * ks..][..ks]);
                    }
                    grid.store(gb, dxc);
                }
            })
        });
    }
    if let Some(dw) = dw {
        let Some(x) = x else {
            dw.fill(T::zero());
            return;
        };
        // One task per filter: every tap's sum over positions, then over images in order (in f64).
        for_plane_chunks(dw, ks, s.n * (plane + ks * grid.out_len), Cost::Light, |first, dws| {
            T::with_scratch(|gbuf, ebuf| {
                let (gb, ext) = (zeroed(gbuf, grid.buf_len()), zeroed(ebuf, grid.out_len));
                let mut acc = vec![0f64; ks];
                for (j, dwf) in dws.chunks_mut(ks).enumerate() {
                    let f = first + j;
                    acc.fill(0.0);
                    for img in 0..s.n {
                        grid.load(&x[(img * s.g.c + f / mult) * plane..][..plane], gb);
                        grid.expand(&dy[(img * s.f + f) * p..][..p], ext);
                        shifted_dots(ext, gb, &grid.taps, &mut acc);
                    }
                    for (&(wi, _), &a) in grid.taps.iter().zip(&acc) {
                        dwf[wi] = T::from_f64(a);
                    }
                }
            })
        });
    }
}
