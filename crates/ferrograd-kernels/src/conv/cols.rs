//! im2col and col2im of one channel plane: the column matrix of a convolution (one row per kernel
//! offset, one column per output position) and its adjoint.
//!
//! Planes with short output rows (the 8×8 and 4×4 maps of small or deep networks) go through a
//! zero-padded copy of the plane: every window read is then in bounds, so each row of columns is
//! a plain copy, without the per-row range arithmetic and tiny `memcpy`/`memset` calls of the
//! general path (which cost more than the data there). Both paths move the same values, so the
//! results do not depend on the choice.

use super::Geom;
use crate::element::Element;

/// Output rows narrower than this go through the padded copy.
const PADDED_MAX_ROW: usize = 32;

/// Scratch for the padded copy of one plane, reused across the channels a task handles.
#[derive(Default)]
pub(super) struct Pad<T>(Vec<T>);

impl<T: Element> Pad<T> {
    /// The scratch as `len` zeros.
    fn zeroed(&mut self, len: usize) -> &mut Vec<T> {
        self.0.clear();
        self.0.resize(len, T::zero());
        &mut self.0
    }
}

/// Extent of the padded plane along each axis: the input at offset `p`, and every position a
/// window reaches.
pub(super) fn padded_extent(g: &Geom) -> [usize; 3] {
    std::array::from_fn(|i| (g.p[i] + g.inp[i]).max((g.out[i].max(1) - 1) * g.s[i] + (g.k[i] - 1) * g.d[i] + 1))
}

/// Calls `f(row_start, out_row_start)` for every output row of kernel offset `(kd, kh, kw)`:
/// where that row's first window starts in the padded plane, and where it lands in a column row.
#[inline]
fn for_window_rows(g: &Geom, ext: [usize; 3], (kd, kh, kw): (usize, usize, usize), mut f: impl FnMut(usize, usize)) {
    let [od, oh, ow] = g.out;
    for zo in 0..od {
        let z = zo * g.s[0] + kd * g.d[0];
        for yo in 0..oh {
            let y = yo * g.s[1] + kh * g.d[1];
            f((z * ext[1] + y) * ext[2] + kw * g.d[2], (zo * oh + yo) * ow);
        }
    }
}

/// Index of input row `(z, y)`'s first value in the padded plane.
#[inline]
pub(super) fn interior(g: &Geom, ext: [usize; 3], z: usize, y: usize) -> usize {
    ((z + g.p[0]) * ext[1] + y + g.p[1]) * ext[2] + g.p[2]
}

/// im2col of one channel plane `xc`: row `r` (kernel offset `kd, kh, kw`) of `out_plane` values
/// lands at `cols[r*ld..]`; `cols[(kd,kh,kw), (od,oh,ow)] = xc[od*s+kd*d-p, ...]`, zero outside.
pub(super) fn im2col_channel<T: Element>(xc: &[T], g: &Geom, cols: &mut [T], ld: usize, pad: &mut Pad<T>) {
    if g.out[2] >= PADDED_MAX_ROW {
        return im2col_general(xc, g, cols, ld);
    }
    let ext = padded_extent(g);
    let [id, ih, iw] = g.inp;
    let (ow, sw) = (g.out[2], g.s[2]);
    let buf = pad.zeroed(ext.iter().product());
    for z in 0..id {
        for y in 0..ih {
            let at = interior(g, ext, z, y);
            for (d, &v) in buf[at..at + iw].iter_mut().zip(&xc[(z * ih + y) * iw..][..iw]) {
                *d = v;
            }
        }
    }
    let buf = &pad.0;
    for_kernel_rows(g, |row, kd, kh, kw| {
        let dst = &mut cols[row * ld..row * ld + g.out_plane()];
        for_window_rows(g, ext, (kd, kh, kw), |src, at| {
            let seg = &mut dst[at..at + ow];
            if sw == 1 {
                for (d, &v) in seg.iter_mut().zip(&buf[src..src + ow]) {
                    *d = v;
                }
            } else {
                for (o, d) in seg.iter_mut().enumerate() {
                    *d = buf[src + o * sw];
                }
            }
        });
    });
}

/// The adjoint of [`im2col_channel`]: `xc[...] += cols[(k), o]` over every window position.
pub(super) fn col2im_channel<T: Element + std::ops::AddAssign>(
    cols: &[T],
    g: &Geom,
    ld: usize,
    xc: &mut [T],
    pad: &mut Pad<T>,
) {
    if g.out[2] >= PADDED_MAX_ROW {
        return col2im_general(cols, g, ld, xc);
    }
    let ext = padded_extent(g);
    let [id, ih, iw] = g.inp;
    let (ow, sw) = (g.out[2], g.s[2]);
    let buf = pad.zeroed(ext.iter().product());
    for_kernel_rows(g, |row, kd, kh, kw| {
        let src_row = &cols[row * ld..row * ld + g.out_plane()];
        for_window_rows(g, ext, (kd, kh, kw), |dst, at| {
            let seg = &src_row[at..at + ow];
            if sw == 1 {
                for (d, &v) in buf[dst..dst + ow].iter_mut().zip(seg) {
                    *d += v;
                }
            } else {
                for (o, &v) in seg.iter().enumerate() {
                    buf[dst + o * sw] += v;
                }
            }
        });
    });
    for z in 0..id {
        for y in 0..ih {
            let at = interior(g, ext, z, y);
            for (d, &v) in xc[(z * ih + y) * iw..][..iw].iter_mut().zip(&buf[at..at + iw]) {
                *d += v;
            }
        }
    }
}

/// Output positions `o` in `[lo, hi)` with `0 <= o*s + off < n_in`.
#[inline]
pub(crate) fn valid_range(n_out: usize, s: usize, off: isize, n_in: usize) -> (usize, usize) {
    let s = s as isize;
    let lo = if off >= 0 { 0 } else { ((-off) + s - 1) / s };
    let lim = n_in as isize - off;
    let hi = if lim <= 0 { 0 } else { (lim + s - 1) / s };
    let hi = (hi as usize).min(n_out);
    ((lo as usize).min(hi), hi)
}

/// Calls `f(row, kd, kh, kw)` for each kernel offset of one channel, in im2col row order.
#[inline]
pub(crate) fn for_kernel_rows(g: &Geom, mut f: impl FnMut(usize, usize, usize, usize)) {
    let mut row = 0;
    for kd in 0..g.k[0] {
        for kh in 0..g.k[1] {
            for kw in 0..g.k[2] {
                f(row, kd, kh, kw);
                row += 1;
            }
        }
    }
}

/// im2col of one channel plane `xc`: row `r` (kernel offset `kd, kh, kw`) of `out_plane` values
/// lands at `cols[r*ld..]`; `cols[(kd,kh,kw), (od,oh,ow)] = xc[od*s+kd*d-p, ...]`, zero outside.
fn im2col_general<T: Element>(xc: &[T], g: &Geom, cols: &mut [T], ld: usize) {
    let [id, ih, iw] = g.inp;
    let [od, oh, ow] = g.out;
    for_kernel_rows(g, |row, kd, kh, kw| {
        let dst = &mut cols[row * ld..row * ld + g.out_plane()];
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

/// The adjoint of [`im2col_channel`]: `xc[...] += cols[(k), o]` over every window position.
fn col2im_general<T: Element + std::ops::AddAssign>(cols: &[T], g: &Geom, ld: usize, xc: &mut [T]) {
    let [id, ih, iw] = g.inp;
    let [od, oh, ow] = g.out;
    for_kernel_rows(g, |row, kd, kh, kw| {
        let src_row = &cols[row * ld..row * ld + g.out_plane()];
        let off_w = (kw * g.d[2]) as isize - g.p[2] as isize;
        let (lo, hi) = valid_range(ow, g.s[2], off_w, iw);
        if lo >= hi {
            return;
        }
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
                let seg = &src_row[(zo * oh + yo) * ow..(zo * oh + yo + 1) * ow];
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
    });
}
