//! Elementwise kernels: unary maps, broadcasting binary maps, strided assignment.
//!
//! Inputs arrive as `(buffer, layout)` with layouts already broadcast to the output shape; the
//! output is a contiguous slice. Each kernel classifies the layouts once: contiguous inputs take a
//! flat vectorised loop, anything else walks rows of the coalesced shape.

use crate::element::Element;
use crate::layout::{coalesce, for_each_row, Layout};
use crate::par::{self, Cost};
use crate::simd_dispatch;

simd_dispatch! {
    /// `out[i] = f(src[i])` over two equal-length slices.
    pub fn map_slice<T, U, F>(src: &[T], out: &mut [U], f: F)
    where { T: Element, U: Element, F: Fn(T) -> U }
    {
        for (o, &x) in out.iter_mut().zip(src) {
            *o = f(x);
        }
    }
}

simd_dispatch! {
    /// `out[i] = f(a[i], b[i])` over equal-length slices.
    pub fn zip_slices<A, B, C, F>(a: &[A], b: &[B], out: &mut [C], f: F)
    where { A: Element, B: Element, C: Element, F: Fn(A, B) -> C }
    {
        for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
            *o = f(x, y);
        }
    }
}

simd_dispatch! {
    /// `out[i] = f(out[i], b[i])`, in place.
    pub fn update_slice<T, B, F>(out: &mut [T], b: &[B], f: F)
    where { T: Element, B: Element, F: Fn(T, B) -> T }
    {
        for (o, &y) in out.iter_mut().zip(b) {
            *o = f(*o, y);
        }
    }
}

/// `out = f(src)` elementwise; `src` is viewed through `layout` (whose shape is the output's).
pub fn unary<T: Element, U: Element>(
    src: &[T],
    layout: &Layout,
    out: &mut [U],
    cost: Cost,
    f: impl Fn(T) -> U + Copy + Send + Sync,
) {
    debug_assert_eq!(layout.numel(), out.len());
    if out.is_empty() {
        // A size-0 view may still look like a scalar broadcast over an empty buffer.
        return;
    }
    if let Some(r) = layout.contiguous_range() {
        let src = &src[r];
        par::for_each_chunk(out, cost, |start, o| map_slice(&src[start..start + o.len()], o, f));
        return;
    }
    if layout.is_scalar_broadcast() {
        let v = f(src[layout.offset]);
        par::for_each_chunk(out, Cost::Light, |_, o| o.fill(v));
        return;
    }
    let (shape, strides) = coalesce(&[layout]);
    let strides = [strides[0].clone()];
    let inner = *strides[0].last().unwrap_or(&0);
    par::for_each_chunk(out, cost, |start, o| {
        for_each_row(&shape, &strides, [layout.offset], start, o.len(), |pos, n, [b]| {
            let dst = &mut o[pos - start..pos - start + n];
            let b = b as usize;
            match inner {
                1 => map_slice(&src[b..b + n], dst, f),
                0 => dst.fill(f(src[b])),
                s => {
                    for (j, d) in dst.iter_mut().enumerate() {
                        *d = f(src[(b as isize + j as isize * s) as usize]);
                    }
                }
            }
        })
    });
}

/// `out = f(a, b)` elementwise with both layouts already broadcast to the output shape.
pub fn binary<A: Element, B: Element, C: Element>(
    a: &[A],
    la: &Layout,
    b: &[B],
    lb: &Layout,
    out: &mut [C],
    cost: Cost,
    f: impl Fn(A, B) -> C + Copy + Send + Sync,
) {
    debug_assert_eq!(la.numel(), out.len());
    debug_assert_eq!(lb.numel(), out.len());
    if out.is_empty() {
        return;
    }
    let (ra, rb) = (la.contiguous_range(), lb.contiguous_range());
    if let (Some(ra), Some(rb)) = (&ra, &rb) {
        let (a, b) = (&a[ra.clone()], &b[rb.clone()]);
        par::for_each_chunk(out, cost, |s, o| zip_slices(&a[s..s + o.len()], &b[s..s + o.len()], o, f));
        return;
    }
    if let (Some(ra), true) = (&ra, lb.is_scalar_broadcast()) {
        let (a, y) = (&a[ra.clone()], b[lb.offset]);
        par::for_each_chunk(out, cost, |s, o| map_slice(&a[s..s + o.len()], o, |x| f(x, y)));
        return;
    }
    if let (true, Some(rb)) = (la.is_scalar_broadcast(), &rb) {
        let (x, b) = (a[la.offset], &b[rb.clone()]);
        par::for_each_chunk(out, cost, |s, o| map_slice(&b[s..s + o.len()], o, |y| f(x, y)));
        return;
    }
    let (shape, strides) = coalesce(&[la, lb]);
    let strides = [strides[0].clone(), strides[1].clone()];
    let (sa, sb) = (*strides[0].last().unwrap_or(&0), *strides[1].last().unwrap_or(&0));
    par::for_each_chunk(out, cost, |start, o| {
        for_each_row(&shape, &strides, [la.offset, lb.offset], start, o.len(), |pos, n, [pa, pb]| {
            let dst = &mut o[pos - start..pos - start + n];
            let (pa, pb) = (pa as usize, pb as usize);
            match (sa, sb) {
                (1, 1) => zip_slices(&a[pa..pa + n], &b[pb..pb + n], dst, f),
                (1, 0) => {
                    let y = b[pb];
                    map_slice(&a[pa..pa + n], dst, |x| f(x, y))
                }
                (0, 1) => {
                    let x = a[pa];
                    map_slice(&b[pb..pb + n], dst, |y| f(x, y))
                }
                _ => {
                    for (j, d) in dst.iter_mut().enumerate() {
                        let ia = (pa as isize + j as isize * sa) as usize;
                        let ib = (pb as isize + j as isize * sb) as usize;
                        *d = f(a[ia], b[ib]);
                    }
                }
            }
        })
    });
}

/// `dst[view] = f(dst[view], src)` where `dst_layout` selects the written elements of `dst`
/// (it must not contain the same position twice) and `src_layout` is broadcast to its shape.
/// Used for slice assignment (`f = |_, s| s`) and in-place arithmetic.
pub fn assign<T: Element, S: Element>(
    dst: &mut [T],
    dst_layout: &Layout,
    src: &[S],
    src_layout: &Layout,
    f: impl Fn(T, S) -> T + Copy + Send + Sync,
) {
    if dst_layout.numel() == 0 {
        return;
    }
    if let Some(r) = dst_layout.contiguous_range() {
        let d = &mut dst[r];
        if let Some(rs) = src_layout.contiguous_range() {
            let s = &src[rs];
            par::for_each_chunk(d, Cost::Light, |st, o| update_slice(o, &s[st..st + o.len()], f));
        } else if src_layout.is_scalar_broadcast() {
            let y = src[src_layout.offset];
            par::for_each_chunk(d, Cost::Light, |_, o| {
                for v in o.iter_mut() {
                    *v = f(*v, y);
                }
            });
        } else {
            let (shape, strides) = coalesce(&[src_layout]);
            let strides = [strides[0].clone()];
            let si = *strides[0].last().unwrap_or(&0);
            par::for_each_chunk(d, Cost::Light, |start, o| {
                for_each_row(&shape, &strides, [src_layout.offset], start, o.len(), |pos, n, [ps]| {
                    for (j, v) in o[pos - start..pos - start + n].iter_mut().enumerate() {
                        *v = f(*v, src[(ps + j as isize * si) as usize]);
                    }
                });
            });
        }
        return;
    }
    let (shape, strides) = coalesce(&[dst_layout, src_layout]);
    let strides = [strides[0].clone(), strides[1].clone()];
    let (sd, ss) = (*strides[0].last().unwrap_or(&0), *strides[1].last().unwrap_or(&0));
    let n = dst_layout.numel();
    for_each_row(&shape, &strides, [dst_layout.offset, src_layout.offset], 0, n, |_, n, [pd, ps]| {
        for j in 0..n as isize {
            let id = (pd + j * sd) as usize;
            dst[id] = f(dst[id], src[(ps + j * ss) as usize]);
        }
    });
}
