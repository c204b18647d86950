//! Convolution as im2col + GEMM, batched across images.
//!
//! The columns of several images are laid side by side, so every GEMM's free dimension is
//! `images × out_plane` rather than one image's plane: deep layers with tiny planes (4×4, 7×7)
//! would otherwise run GEMMs with 16 or 49 columns (or, for the weight gradient, an inner
//! dimension of 16) at a fraction of the machine's speed. The weight gradient accumulates into the
//! caller's buffer batch after batch, with no per-image partials. How many images share a batch
//! depends only on the problem (a column-buffer budget), and the GEMMs' own parallelism keeps the
//! summation order fixed, so results are bitwise identical for any thread count.

use super::cols::{col2im_channel, im2col_channel, Pad};
use super::depthwise::{depthwise_backward, depthwise_forward, is_depthwise};
use super::{channels_last, for_plane_chunks, gathered, Geom};
use crate::element::Element;
use crate::matmul::{gemm, GemmElement};
use crate::par::{self, Cost};

/// GEMM columns (images × output positions) a batch aims for: below a few hundred the GEMMs run
/// well under the machine's speed; above, one image per batch and parallel batches do as well.
const TARGET_COLS: usize = 512;
/// Elements of im2col columns one batch may use (at least one image): 8 MB of f32.
const COL_BUDGET: usize = 1 << 21;
/// Elements of weight-gradient partials that parallel batches may hold at once.
const PARTIAL_BUDGET: usize = 1 << 22;

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
    /// im2col rows of all channels.
    fn rows(&self) -> usize {
        self.g.c * self.g.ksize()
    }
    /// im2col rows (= weight columns) of one group.
    fn cg_k(&self) -> usize {
        self.g.c / self.groups * self.g.ksize()
    }
    fn fg(&self) -> usize {
        self.f / self.groups
    }
    fn image_in(&self) -> usize {
        self.g.c * self.g.in_plane()
    }
    fn image_out(&self) -> usize {
        self.f * self.g.out_plane()
    }
    /// Images per batched GEMM: enough for [`TARGET_COLS`] columns, within [`COL_BUDGET`];
    /// fixed by the problem size only.
    fn batch_images(&self) -> usize {
        let p = self.g.out_plane().max(1);
        TARGET_COLS.div_ceil(p).min(COL_BUDGET / (self.rows() * p).max(1)).clamp(1, self.n.max(1))
    }
    /// Whether batches run in parallel (each GEMM on one thread) rather than one after another
    /// (each GEMM parallel inside): only with enough batches to share out evenly and with small
    /// weight-gradient partials. Either way gives the same bits.
    pub(super) fn parallel_batches(&self) -> bool {
        let n_batches = self.n.div_ceil(self.batch_images());
        n_batches >= 4 && (n_batches - 1) * self.f * self.cg_k() <= PARTIAL_BUDGET
    }
    /// Runs `f` on every batch item, in parallel when [`Self::parallel_batches`].
    fn run_batches<I: Send>(&self, items: &mut [I], f: impl Fn(&mut I) + Sync + Send) {
        if self.parallel_batches() {
            let work = self.f * self.cg_k() * self.g.out_plane() * self.batch_images();
            par::for_each_chunk_weighted(items, work, Cost::Heavy, |_, part| part.iter_mut().for_each(&f));
        } else {
            items.iter_mut().for_each(f);
        }
    }
}

/// Fills `cols` (all rows × `images·p`) with the columns of `images` consecutive images of `x`,
/// image `j` at column offset `j·p`; parallel over channels.
fn fill_cols<T: Element>(s: &ConvShape, x: &[T], images: usize, cols: &mut [T]) {
    let (p, k, plane, xin) = (s.g.out_plane(), s.g.ksize(), s.g.in_plane(), s.image_in());
    let ld = images * p;
    let mut blocks: Vec<(usize, &mut [T])> = cols.chunks_mut((k * ld).max(1)).enumerate().collect();
    par::for_each_chunk_weighted(&mut blocks, k * ld, Cost::Light, |_, part| {
        let mut pad = Pad::default();
        for (c, block) in part.iter_mut() {
            for j in 0..images {
                let xc = &x[j * xin + *c * plane..][..plane];
                im2col_channel(xc, &s.g, &mut block[j * p..], ld, &mut pad);
            }
        }
    });
}

/// `dx` images (overwritten) from batched columns `dcols` (all rows × `images·p`): col2im per
/// image, parallel over images.
fn scatter_cols<T: Element + std::ops::AddAssign>(s: &ConvShape, dcols: &[T], images: usize, dx: &mut [T]) {
    let (p, k, plane, xin) = (s.g.out_plane(), s.g.ksize(), s.g.in_plane(), s.image_in());
    let ld = images * p;
    let mut imgs: Vec<(usize, &mut [T])> = dx.chunks_mut(xin.max(1)).enumerate().collect();
    par::for_each_chunk_weighted(&mut imgs, s.rows() * p, Cost::Light, |_, part| {
        let mut pad = Pad::default();
        for (j, xi) in part.iter_mut() {
            xi.fill(T::zero());
            for (c, xc) in xi.chunks_mut(plane.max(1)).enumerate() {
                col2im_channel(&dcols[c * k * ld + *j * p..], &s.g, ld, xc, &mut pad);
            }
        }
    });
}

/// Runs `f(group, block)` over the per-group blocks of `out`, in parallel across groups when
/// there are several and their GEMMs are worth it (a single group's GEMM parallelises itself).
fn for_groups<T: Send>(out: &mut [T], groups: usize, work: usize, f: impl Fn(usize, &mut [T]) + Sync + Send) {
    let per = (out.len() / groups.max(1)).max(1);
    let mut blocks: Vec<(usize, &mut [T])> = out.chunks_mut(per).enumerate().collect();
    par::for_each_chunk_weighted(&mut blocks, work, Cost::Heavy, |_, part| {
        for (gi, block) in part.iter_mut() {
            f(*gi, block);
        }
    });
}

/// Gathers one batch's images `(images, f, p)` into the batched layout `(f, images·p)`.
fn gather_batch<T: Element>(src: &[T], f: usize, p: usize, images: usize, batched: &mut [T]) {
    let ld = images * p;
    let mut rows: Vec<(usize, &mut [T])> = batched.chunks_mut(ld.max(1)).enumerate().collect();
    par::for_each_chunk_weighted(&mut rows, ld, Cost::Light, |_, part| {
        for (fi, row) in part.iter_mut() {
            for (j, seg) in row.chunks_mut(p.max(1)).enumerate() {
                seg.copy_from_slice(&src[(j * f + *fi) * p..][..p]);
            }
        }
    });
}

/// The inverse of [`gather_batch`]: the batched `(f, images·p)` back into `(images, f, p)`.
fn scatter_batch<T: Element>(batched: &[T], f: usize, p: usize, images: usize, dst: &mut [T]) {
    let ld = images * p;
    let mut imgs: Vec<(usize, &mut [T])> = dst.chunks_mut((f * p).max(1)).enumerate().collect();
    par::for_each_chunk_weighted(&mut imgs, f * p, Cost::Light, |_, part| {
        for (j, img) in part.iter_mut() {
            for (fi, seg) in img.chunks_mut(p.max(1)).enumerate() {
                seg.copy_from_slice(&batched[fi * ld + *j * p..][..p]);
            }
        }
    });
}

/// Element types with per-thread scratch for the im2col columns, batched outputs and
/// weight-gradient partials, kept across calls: a convolution allocates and zeroes nothing once
/// they have grown (every element used is overwritten before it is read).
pub trait ConvScratch: Element {
    fn with_scratch<R>(f: impl FnOnce(&mut Vec<Self>, &mut Vec<Self>) -> R) -> R;
    /// The backward's weight-gradient partials (a buffer of their own: the batches inside use
    /// [`Self::with_scratch`]).
    fn with_partials<R>(f: impl FnOnce(&mut Vec<Self>) -> R) -> R;
}

macro_rules! impl_conv_scratch {
    ($t:ty) => {
        impl ConvScratch for $t {
            fn with_scratch<R>(f: impl FnOnce(&mut Vec<Self>, &mut Vec<Self>) -> R) -> R {
                thread_local! {
                    static SCRATCH: std::cell::RefCell<(Vec<$t>, Vec<$t>)> =
                        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
                }
                SCRATCH.with(|cell| match cell.try_borrow_mut() {
                    Ok(mut bufs) => {
                        let (a, b) = &mut *bufs;
                        f(a, b)
                    }
                    // Re-entered on this thread (a rayon worker running another batch while it
                    // waits): fresh buffers for the nested call.
                    Err(_) => f(&mut Vec::new(), &mut Vec::new()),
                })
            }
            fn with_partials<R>(f: impl FnOnce(&mut Vec<Self>) -> R) -> R {
                thread_local! {
                    static PARTIALS: std::cell::RefCell<Vec<$t>> = const { std::cell::RefCell::new(Vec::new()) };
                }
                PARTIALS.with(|cell| match cell.try_borrow_mut() {
                    Ok(mut buf) => f(&mut buf),
                    Err(_) => f(&mut Vec::new()),
                })
            }
        }
    };
}
impl_conv_scratch!(f32);
impl_conv_scratch!(f64);

/// The first `n` elements of `buf`, growing it (zero-filled) when shorter.
fn grown<T: Element>(buf: &mut Vec<T>, n: usize) -> &mut [T] {
    if buf.len() < n {
        buf.resize(n, T::zero());
    }
    &mut buf[..n]
}

/// Forward convolution: `y (n, f, out...) = conv(x (n, c, in...), w) (+ bias)`.
pub fn conv_forward<T: GemmElement + ConvScratch + std::ops::AddAssign + std::ops::Mul<Output = T>>(
    s: &ConvShape,
    x: &[T],
    w: &[T],
    bias: Option<&[T]>,
    y: &mut [T],
) {
    conv_forward_then(s, x, w, bias, y, &|_, _| {})
}

/// [`conv_forward`], then `epilogue(filter, plane)` on every output plane of each batch as soon
/// as the batch is written (while it is in cache): a following per-channel map (an inference
/// BatchNorm's affine and an activation) without a pass of its own over the output.
pub fn conv_forward_then<T, E>(s: &ConvShape, x: &[T], w: &[T], bias: Option<&[T]>, y: &mut [T], epilogue: &E)
where
    T: GemmElement + ConvScratch + std::ops::AddAssign + std::ops::Mul<Output = T>,
    E: Fn(usize, &mut [T]) + Sync + Send,
{
    let (xin, yout, bi) = (s.image_in(), s.image_out(), s.batch_images());
    if s.n == 0 || yout == 0 {
        return;
    }
    if is_depthwise(s) {
        return depthwise_forward(s, x, w, bias, y, epilogue);
    }
    let w_kc = channels_last::applies(s).then(|| channels_last::weight_to_kc(s, w));
    let mut batches: Vec<(usize, &mut [T])> = y.chunks_mut(bi * yout).enumerate().collect();
    s.run_batches(&mut batches, |(b, ys)| {
        let images = ys.len() / yout;
        forward_batch(s, &x[*b * bi * xin..][..images * xin], (w, w_kc.as_deref()), bias, ys, images, epilogue)
    });
}

/// One batch of [`conv_forward_then`]: `images` consecutive images `xs` → `ys`. `w_kc` is the
/// weight reordered for the channels-last columns, when they apply.
fn forward_batch<T: GemmElement + ConvScratch + std::ops::AddAssign, E: Fn(usize, &mut [T]) + Sync + Send>(
    s: &ConvShape,
    xs: &[T],
    (w, w_kc): (&[T], Option<&[T]>),
    bias: Option<&[T]>,
    ys: &mut [T],
    images: usize,
    epilogue: &E,
) {
    let (p, ck, fg) = (s.g.out_plane(), s.cg_k(), s.fg());
    let ld = images * p;
    T::with_scratch(|cols, ybuf| {
        if w_kc.is_none() && gathered::applies(s, images) {
            return batched_output(s, images, ybuf, ys, |target| {
                gathered::forward_product(s, xs, images, w, cols, target)
            });
        }
        let cols_ref: &[T] = if w_kc.is_some() {
            let cols_t = grown(cols, ld * ck);
            channels_last::fill_cols_t(s, xs, images, &mut Vec::new(), cols_t);
            cols_t
        } else if s.g.trivial() && images == 1 {
            xs
        } else {
            let cols = grown(cols, s.rows() * ld);
            fill_cols(s, xs, images, cols);
            cols
        };
        let product = |target: &mut [T]| match w_kc {
            // Transposed columns (ld × K·C) against the reordered weight (F × K·C).
            Some(wk) => gemm(s.f, ld, ck, wk, (0, ck as isize, 1), cols_ref, (0, 1, ck as isize), target, false),
            None => for_groups(target, s.groups, fg * ck * ld, |gi, out| {
                gemm(
                    fg,
                    ld,
                    ck,
                    w,
                    (gi * fg * ck, ck as isize, 1),
                    cols_ref,
                    (gi * ck * ld, ld as isize, 1),
                    out,
                    false,
                )
            }),
        };
        batched_output(s, images, ybuf, ys, product);
    });
    for_plane_chunks(ys, p, p, Cost::Light, |first, planes| {
        for (i, row) in planes.chunks_mut(p).enumerate() {
            let f = (first + i) % s.f;
            if let Some(b) = bias {
                let bv = b[f];
                row.iter_mut().for_each(|v| *v += bv);
            }
            epilogue(f, row);
        }
    });
}

/// Runs `product` (the batch's `F × images·p` output) into `ys`: in place for one image, whose
/// output already has that layout, else into the batched scratch `ybuf`, then scattered.
fn batched_output<T: Element>(
    s: &ConvShape,
    images: usize,
    ybuf: &mut Vec<T>,
    ys: &mut [T],
    product: impl FnOnce(&mut [T]),
) {
    let p = s.g.out_plane();
    if images == 1 {
        product(ys);
    } else {
        let batched = grown(ybuf, s.f * images * p);
        product(batched);
        scatter_batch(batched, s.f, p, images, ys);
    }
}

/// One batch's share of a backward pass: its index, its data-gradient images, its weight-gradient
/// partial (the first batch writes the caller's `dw` directly).
type BackwardBatch<'a, T> = (usize, Option<&'a mut [T]>, Option<&'a mut [T]>);

/// Backward of [`conv_forward`]: `dx` (overwritten) from `dy` and `w`; `dw` and `db`
/// (overwritten) from `dy` and `x` (`dw` is zero when `x` is not given).
///
/// The weight gradient is the sum of one partial per batch, added in batch order whether the
/// batches ran in parallel or one after another.
#[allow(clippy::too_many_arguments)]
pub fn conv_backward<T: GemmElement + ConvScratch + std::ops::AddAssign + std::ops::Mul<Output = T>>(
    s: &ConvShape,
    dy: &[T],
    x: Option<&[T]>,
    w: &[T],
    dx: Option<&mut [T]>,
    dw: Option<&mut [T]>,
    db: Option<&mut [T]>,
) {
    let (xin, yout, bi) = (s.image_in(), s.image_out(), s.batch_images());
    if let Some(db) = db {
        bias_grad(s, dy, db);
    }
    let x = if dw.is_some() { x } else { None };
    let dw = match (dw, x) {
        (Some(d), None) => {
            d.fill(T::zero());
            None
        }
        (d, _) => d,
    };
    if s.n == 0 || yout == 0 || xin == 0 {
        for d in [dx, dw].into_iter().flatten() {
            d.fill(T::zero());
        }
        return;
    }
    if is_depthwise(s) {
        return depthwise_backward(s, dy, x, w, dx, dw);
    }
    let n_batches = s.n.div_ceil(bi);
    let wlen = s.f * s.cg_k();
    let w_kc = channels_last::applies(s).then(|| channels_last::weight_to_kc(s, w));
    let mut dx_parts: Vec<Option<&mut [T]>> = match dx {
        Some(d) => d.chunks_mut(bi * xin).map(Some).collect(),
        None => (0..n_batches).map(|_| None).collect(),
    };
    dx_parts.resize_with(n_batches, || None);
    let parallel = s.parallel_batches();
    // Partials of batches 1.. : all at once when the batches run in parallel, else one reused.
    let partials = match (dw.is_some(), parallel) {
        (false, _) => 0,
        (true, true) => n_batches - 1,
        (true, false) => usize::from(n_batches > 1),
    };
    // Every partial is overwritten by its batch before it is read: stale scratch is fine.
    T::with_partials(|buf| {
        let extra = grown(buf, wlen * partials);
        if parallel || n_batches == 1 {
            let mut partials: Vec<Option<&mut [T]>> = match dw {
                Some(d) => std::iter::once(d).chain(extra.chunks_mut(wlen.max(1))).map(Some).collect(),
                None => (0..n_batches).map(|_| None).collect(),
            };
            partials.resize_with(n_batches, || None);
            let mut batches: Vec<BackwardBatch<'_, T>> =
                dx_parts.into_iter().zip(partials).enumerate().map(|(b, (d, p))| (b, d, p)).collect();
            s.run_batches(&mut batches, |(b, dxs, dws)| {
                backward_batch(s, dy, x, (w, w_kc.as_deref()), *b, dxs.as_deref_mut(), dws.as_deref_mut())
            });
            let mut parts = batches.into_iter().map(|(_, _, p)| p);
            if let Some(Some(dw)) = parts.next() {
                for p in parts.flatten() {
                    dw.iter_mut().zip(p.iter()).for_each(|(d, &v)| *d += v);
                }
            }
        } else {
            let mut dw = dw;
            for (b, dxs) in dx_parts.into_iter().enumerate() {
                let part = if b == 0 { dw.as_deref_mut() } else { dw.as_ref().map(|_| &mut extra[..]) };
                backward_batch(s, dy, x, (w, w_kc.as_deref()), b, dxs, part);
                if let (Some(dw), true) = (dw.as_deref_mut(), b > 0) {
                    dw.iter_mut().zip(extra.iter()).for_each(|(d, &v)| *d += v);
                }
            }
        }
    })
}

/// One batch of [`conv_backward`]: its data gradient `dxs` (overwritten) and its weight-gradient
/// partial `dws` (overwritten). The batched `dy` and the columns live in the thread's scratch
/// (as the forward's do): every element used is written before it is read. `w_kc` as in
/// [`forward_batch`].
fn backward_batch<T: GemmElement + ConvScratch + std::ops::AddAssign>(
    s: &ConvShape,
    dy: &[T],
    x: Option<&[T]>,
    (w, w_kc): (&[T], Option<&[T]>),
    b: usize,
    dxs: Option<&mut [T]>,
    dws: Option<&mut [T]>,
) {
    let (xin, yout, p, ck, fg) = (s.image_in(), s.image_out(), s.g.out_plane(), s.cg_k(), s.fg());
    let start = b * s.batch_images();
    let images = s.batch_images().min(s.n - start);
    let ld = images * p;
    let dys = &dy[start * yout..(start + images) * yout];
    T::with_scratch(|cols, dybuf| {
        let dyb: &[T] = if images == 1 {
            dys
        } else {
            let batched = grown(dybuf, s.f * ld);
            gather_batch(dys, s.f, p, images, batched);
            batched
        };
        if let Some(w_kc) = w_kc {
            let cols_t = grown(cols, ld * ck);
            if let Some(dxs) = dxs {
                // dcolsᵀ (ld × K·C) = dyᵀ · W, scattered back into dx.
                gemm(ld, ck, s.f, dyb, (0, 1, ld as isize), w_kc, (0, ck as isize, 1), cols_t, false);
                channels_last::scatter_cols_t(s, cols_t, images, &mut Vec::new(), dxs);
            }
            if let (Some(dws), Some(x)) = (dws, x) {
                let xs = &x[start * xin..(start + images) * xin];
                channels_last::fill_cols_t(s, xs, images, &mut Vec::new(), cols_t);
                // dW (F × K·C) = dy · colsᵀᵀ, then back to (F, C, K).
                let mut dw_kc = vec![T::zero(); s.f * ck];
                gemm(s.f, ck, ld, dyb, (0, ld as isize, 1), cols_t, (0, ck as isize, 1), &mut dw_kc, false);
                channels_last::weight_from_kc(s, &dw_kc, dws);
            }
            return;
        }
        if let Some(dxs) = dxs {
            // dcols = Wᵀ·dy per group, then scattered into dx (a 1x1 kernel's single image is dx).
            let direct = s.g.trivial() && images == 1;
            let target: &mut [T] = if direct { &mut *dxs } else { grown(cols, s.rows() * ld) };
            for_groups(target, s.groups, fg * ck * ld, |gi, out| {
                gemm(ck, ld, fg, w, (gi * fg * ck, 1, ck as isize), dyb, (gi * fg * ld, ld as isize, 1), out, false)
            });
            if !direct {
                scatter_cols(s, &cols[..s.rows() * ld], images, dxs);
            }
        }
        if let (Some(dws), Some(x)) = (dws, x) {
            let xs = &x[start * xin..(start + images) * xin];
            if gathered::applies(s, images) {
                return gathered::weight_grad_product(s, xs, images, dyb, cols, dws);
            }
            let cols_ref: &[T] = if s.g.trivial() && images == 1 {
                xs
            } else {
                let cols = grown(cols, s.rows() * ld);
                fill_cols(s, xs, images, cols);
                cols
            };
            // dW = dy·colsᵀ per group, over every position of every image in the batch.
            for_groups(dws, s.groups, fg * ck * ld, |gi, out| {
                gemm(
                    fg,
                    ck,
                    ld,
                    dyb,
                    (gi * fg * ld, ld as isize, 1),
                    cols_ref,
                    (gi * ck * ld, 1, ld as isize),
                    out,
                    false,
                )
            });
        }
    })
}

/// `db[f] = Σ dy[:, f, ...]`, accumulated in f64 per filter in image order.
fn bias_grad<T: Element>(s: &ConvShape, dy: &[T], db: &mut [T]) {
    let (p, yout) = (s.g.out_plane(), s.image_out());
    let sums = par::map_tasks(s.f, dy.len(), Cost::Read, |f| {
        (0..s.n).map(|i| dy[i * yout + f * p..][..p].iter().map(|v| v.to_f64()).sum::<f64>()).sum::<f64>()
    });
    for (d, v) in db.iter_mut().zip(sums) {
        *d = T::from_f64(v);
    }
}
