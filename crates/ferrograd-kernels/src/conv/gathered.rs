//! Convolution columns gathered from a zero-padded copy of a batch's images, never written out.
//!
//! With every image plane padded (`cols::padded_extent`), the im2col column matrix is a gather
//! with separable offsets: row `(c, kd, kh, kw)` starts at the channel's padded plane shifted by
//! the kernel tap, column `(image, zo, yo, xo)` adds the window's corner. The forward's
//! `W·cols` and the weight gradient's `dy·colsᵀ` then pack their GEMM blocks straight from the
//! padded images ([`crate::gemm::Gather`]): the padded copy is about the input's size, where the
//! column matrix is the kernel's size times it, written once and read back. The packed values
//! are the column matrix's own, so results are the same bits as with it.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};

use super::cols::{for_kernel_rows, interior, padded_extent};
use super::convolution::ConvShape;
use super::{for_plane_chunks, Geom};
use crate::element::Element;
use crate::gemm::{Gather, Isa};
use crate::matmul::{gemm_gathered, GemmElement};
use crate::par::Cost;

static ENABLED: AtomicBool = AtomicBool::new(true);

/// Turns the gathered columns on (the default) or off, for tests and benches that compare them
/// with the written-out column matrix (the results are the same bits either way).
#[doc(hidden)]
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// Whether batches of `images` images of `s` gather their columns: one group, columns that
/// are not the images themselves (a 1×1 kernel on one image), and a CPU with GEMM
/// micro-kernels (elsewhere the column matrix goes to the portable GEMM).
pub(super) fn applies(s: &ConvShape, images: usize) -> bool {
    ENABLED.load(Ordering::Relaxed) && s.groups == 1 && !(s.g.trivial() && images == 1) && Isa::detect().is_some()
}

thread_local! {
    /// The row and column offsets of the gather, reused across calls on this thread.
    static OFFSETS: RefCell<(Vec<usize>, Vec<usize>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// Runs `f(xpad, rows, cols)` with the batch's padded images in `xpad_buf` and the gather's
/// offsets: `rows[(c, kd, kh, kw)]`, `cols[(image, zo, yo, xo)]`.
fn with_gather<T: Element, R>(
    g: &Geom,
    xs: &[T],
    images: usize,
    xpad_buf: &mut Vec<T>,
    f: impl FnOnce(&[T], &[usize], &[usize]) -> R,
) -> R {
    let ext = padded_extent(g);
    let plane = ext.iter().product::<usize>();
    if xpad_buf.len() < images * g.c * plane {
        xpad_buf.resize(images * g.c * plane, T::zero());
    }
    let xpad = &mut xpad_buf[..images * g.c * plane];
    pad_images(g, ext, xs, xpad);
    let fill = |rows: &mut Vec<usize>, cols: &mut Vec<usize>| {
        rows.clear();
        for c in 0..g.c {
            for_kernel_rows(g, |_, kd, kh, kw| {
                rows.push(c * plane + (kd * g.d[0] * ext[1] + kh * g.d[1]) * ext[2] + kw * g.d[2]);
            });
        }
        cols.clear();
        let [od, oh, ow] = g.out;
        for image in 0..images {
            for zo in 0..od {
                for yo in 0..oh {
                    let row = image * g.c * plane + (zo * g.s[0] * ext[1] + yo * g.s[1]) * ext[2];
                    cols.extend((0..ow).map(|xo| row + xo * g.s[2]));
                }
            }
        }
    };
    OFFSETS.with(|cell| match cell.try_borrow_mut() {
        Ok(mut tables) => {
            let (rows, cols) = &mut *tables;
            fill(rows, cols);
            f(xpad, rows, cols)
        }
        // Re-entered on this thread (a rayon worker running another batch while it waits).
        Err(_) => {
            let (mut rows, mut cols) = (Vec::new(), Vec::new());
            fill(&mut rows, &mut cols);
            f(xpad, &rows, &cols)
        }
    })
}

/// Copies every `(image, channel)` plane of `xs` into the interior of its zero-padded plane.
fn pad_images<T: Element>(g: &Geom, ext: [usize; 3], xs: &[T], xpad: &mut [T]) {
    let plane = ext.iter().product::<usize>();
    let [id, ih, iw] = g.inp;
    for_plane_chunks(xpad, plane, plane, Cost::Light, |first, planes| {
        for (i, dst) in planes.chunks_mut(plane).enumerate() {
            dst.fill(T::zero());
            let src = &xs[(first + i) * g.in_plane()..][..g.in_plane()];
            for z in 0..id {
                for y in 0..ih {
                    let at = interior(g, ext, z, y);
                    dst[at..at + iw].copy_from_slice(&src[(z * ih + y) * iw..][..iw]);
                }
            }
        }
    });
}

/// The forward product of one batch: `target (F × images·p) = W (F × C·K) · cols`.
pub(super) fn forward_product<T: GemmElement>(
    s: &ConvShape,
    xs: &[T],
    images: usize,
    w: &[T],
    xpad_buf: &mut Vec<T>,
    target: &mut [T],
) {
    let ck = s.g.c * s.g.ksize();
    with_gather(&s.g, xs, images, xpad_buf, |xpad, rows, cols| match Gather::new(xpad, rows, cols) {
        Some(b) => gemm_gathered(s.f, w, (0, ck as isize, 1), &b, target),
        None => unreachable!("convolution gather offsets outside the padded images"),
    })
}

/// The weight gradient of one batch: `dw (F × C·K) = dy (F × images·p) · colsᵀ`.
pub(super) fn weight_grad_product<T: GemmElement>(
    s: &ConvShape,
    xs: &[T],
    images: usize,
    dy: &[T],
    xpad_buf: &mut Vec<T>,
    dw: &mut [T],
) {
    let ld = images * s.g.out_plane();
    with_gather(&s.g, xs, images, xpad_buf, |xpad, rows, cols| match Gather::new(xpad, cols, rows) {
        Some(b) => gemm_gathered(s.f, dy, (0, ld as isize, 1), &b, dw),
        None => unreachable!("convolution gather offsets outside the padded images"),
    })
}
