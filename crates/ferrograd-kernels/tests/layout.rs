//! `Layout` view arithmetic, `coalesce` and `for_each_row` edge cases.

use ferrograd_kernels::layout::{broadcast_shapes, coalesce, contiguous_strides, for_each_row, Layout};
use ferrograd_kernels::reference::gather;

fn iota(n: usize) -> Vec<i64> {
    (0..n as i64).collect()
}

#[test]
fn contiguous_strides_treat_zero_and_one_sizes() {
    assert_eq!(contiguous_strides(&[2, 3, 4]).as_slice(), &[12, 4, 1]);
    assert_eq!(contiguous_strides(&[]).as_slice(), &[] as &[isize]);
    // Size-0 dims count as 1 so strides stay distinct and positive.
    assert_eq!(contiguous_strides(&[2, 0, 3]).as_slice(), &[3, 3, 1]);
    let l = Layout::contiguous(&[]);
    assert_eq!((l.ndim(), l.numel()), (0, 1));
    assert!(l.is_contiguous() && l.is_scalar_broadcast());
    assert_eq!(l.contiguous_range(), Some(0..1));
}

#[test]
fn broadcast_to_rules() {
    let l = Layout::contiguous(&[3, 1]);
    let b = l.broadcast_to(&[2, 3, 4]).unwrap();
    assert_eq!(b.shape.as_slice(), &[2, 3, 4]);
    assert_eq!(b.strides.as_slice(), &[0, 1, 0]);
    assert_eq!(gather(&iota(3), &b), [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2].repeat(2));
    assert!(l.broadcast_to(&[3, 2]).is_some());
    assert!(l.broadcast_to(&[2, 2]).is_none(), "3 vs 2");
    assert!(l.broadcast_to(&[3]).is_none(), "fewer dims");
    // Size 1 → 0 is allowed; size 0 → 1 is not.
    assert_eq!(Layout::contiguous(&[1]).broadcast_to(&[0]).unwrap().numel(), 0);
    assert!(Layout::contiguous(&[0]).broadcast_to(&[1]).is_none());
    let s = Layout::contiguous(&[]).broadcast_to(&[2, 2]).unwrap();
    assert!(s.is_scalar_broadcast() && !s.is_contiguous());
    assert_eq!(broadcast_shapes(&[0, 1, 3], &[0, 10, 3]).unwrap().as_slice(), &[0, 10, 3]);
    assert_eq!(broadcast_shapes(&[1], &[0]).unwrap().as_slice(), &[0]);
    assert!(broadcast_shapes(&[2], &[0]).is_none());
    assert_eq!(broadcast_shapes(&[], &[]).unwrap().as_slice(), &[] as &[usize]);
}

#[test]
fn permute_transposes() {
    let l = Layout::contiguous(&[2, 3, 4]);
    let p = l.permute(&[2, 0, 1]);
    assert_eq!(p.shape.as_slice(), &[4, 2, 3]);
    assert_eq!(p.strides.as_slice(), &[1, 12, 4]);
    assert!(!p.is_contiguous());
    let g = gather(&iota(24), &p);
    assert_eq!(&g[..7], &[0, 4, 8, 12, 16, 20, 1]);
    // Permuting back is the identity.
    assert_eq!(p.permute(&[1, 2, 0]), l);
}

#[test]
fn slice_axis_steps_and_offsets() {
    let l = Layout::contiguous(&[4, 5]);
    let s = l.slice_axis(1, 1, 2, 2); // columns 1, 3
    assert_eq!(gather(&iota(20), &s), [1, 3, 6, 8, 11, 13, 16, 18]);
    let r = l.slice_axis(0, 3, -1, 4); // rows reversed
    assert_eq!((r.offset, r.strides[0]), (15, -5));
    assert_eq!(&gather(&iota(20), &r)[..6], &[15, 16, 17, 18, 19, 10]);
    let r2 = l.slice_axis(1, 4, -2, 3); // columns 4, 2, 0
    assert_eq!(&gather(&iota(20), &r2)[..4], &[4, 2, 0, 9]);
    assert_eq!(r2.span(), (0, 20));
    // Empty slice: offset unchanged, no element.
    let e = l.slice_axis(0, 4, 1, 0);
    assert_eq!((e.offset, e.numel()), (0, 0));
    assert_eq!(e.span(), (0, 0));
    assert!(e.contiguous_range().is_some_and(|r| r.is_empty()));
    // Nested: a reversed view of a stepped view.
    let n = s.slice_axis(1, 1, -1, 2);
    assert_eq!(gather(&iota(20), &n), [3, 1, 8, 6, 13, 11, 18, 16]);
    // index_axis / insert_axis
    let row = l.index_axis(0, 2);
    assert_eq!(gather(&iota(20), &row), [10, 11, 12, 13, 14]);
    let col = l.index_axis(1, 4);
    assert_eq!(gather(&iota(20), &col), [4, 9, 14, 19]);
    let ins = row.insert_axis(0);
    assert_eq!(ins.shape.as_slice(), &[1, 5]);
    assert!(ins.is_contiguous());
}

#[test]
fn reshape_only_without_copy() {
    let l = Layout::contiguous(&[2, 6]);
    let r = l.reshape(&[3, 2, 2]).unwrap();
    assert_eq!(r.strides.as_slice(), &[4, 2, 1]);
    // Offset survives (a contiguous row of a bigger array).
    let row = Layout::contiguous(&[3, 6]).index_axis(0, 1);
    let r = row.reshape(&[2, 3]).unwrap();
    assert_eq!(gather(&iota(18), &r), [6, 7, 8, 9, 10, 11]);
    assert!(l.permute(&[1, 0]).reshape(&[12]).is_none());
    assert!(l.slice_axis(1, 0, 2, 3).reshape(&[6]).is_none());
    // Size-1 axes with odd strides do not break contiguity.
    let odd = Layout { shape: [1, 4].into_iter().collect(), strides: [99, 1].into_iter().collect(), offset: 2 };
    assert!(odd.is_contiguous());
    assert_eq!(odd.reshape(&[2, 2]).unwrap().offset, 2);
}

#[test]
fn coalesce_edge_cases() {
    // Size-1 axes vanish; 0-d and all-ones give an empty shape.
    let (s, st) = coalesce(&[&Layout::contiguous(&[1, 1])]);
    assert!(s.is_empty() && st[0].is_empty());
    let (s, _) = coalesce(&[&Layout::contiguous(&[])]);
    assert!(s.is_empty());
    // A broadcast axis merges with another broadcast axis but not with a real one.
    let b = Layout::contiguous(&[4]).broadcast_to(&[2, 3, 4]).unwrap();
    let (s, st) = coalesce(&[&b]);
    assert_eq!((s.as_slice(), st[0].as_slice()), (&[6, 4][..], &[0, 1][..]));
    // Two layouts merge only where both are mergeable.
    let c = Layout::contiguous(&[2, 3, 4]);
    let (s, st) = coalesce(&[&c, &b]);
    assert_eq!(s.as_slice(), &[6, 4]);
    assert_eq!((st[0].as_slice(), st[1].as_slice()), (&[4, 1][..], &[0, 1][..]));
    // Negative strides merge when consistent (a fully reversed contiguous array).
    let r = Layout::contiguous(&[3, 4]).slice_axis(0, 2, -1, 3).slice_axis(1, 3, -1, 4);
    let (s, st) = coalesce(&[&r]);
    assert_eq!((s.as_slice(), st[0].as_slice()), (&[12][..], &[-1][..]));
    // Stepped last axis keeps its stride but merges with the axis above if consistent.
    let st2 = Layout::contiguous(&[3, 8]).slice_axis(1, 0, 2, 4);
    let (s, st) = coalesce(&[&st2]);
    assert_eq!((s.as_slice(), st[0].as_slice()), (&[12][..], &[2][..]));
    // Size-0 axes are kept (the walk then visits nothing).
    let (s, _) = coalesce(&[&Layout::contiguous(&[2, 0, 3])]);
    assert_eq!(s.iter().product::<usize>(), 0);
}

/// Offsets visited by `for_each_row` over `[start, start+count)`, checking row bookkeeping.
fn walk(l: &Layout, start: usize, count: usize) -> Vec<i64> {
    let (shape, st) = coalesce(&[l]);
    let strides = [st[0].clone()];
    let inner = *strides[0].last().unwrap_or(&0);
    let mut seen = vec![];
    let mut next = start;
    for_each_row(&shape, &strides, [l.offset], start, count, |pos, n, [b]| {
        assert_eq!(pos, next, "rows arrive in order, contiguous in output index");
        assert!(n > 0);
        next += n;
        seen.extend((0..n as isize).map(|j| (b + j * inner) as i64));
    });
    assert_eq!(next - start, count);
    seen
}

#[test]
fn for_each_row_matches_gather_for_any_window() {
    let layouts = [
        Layout::contiguous(&[3, 4, 5]),
        Layout::contiguous(&[3, 4, 5]).permute(&[2, 0, 1]),
        Layout::contiguous(&[6, 4, 5]).slice_axis(0, 5, -2, 3).slice_axis(2, 1, 2, 2),
        Layout::contiguous(&[4, 1]).broadcast_to(&[2, 4, 3]).unwrap(),
        Layout::contiguous(&[7]),
        Layout::contiguous(&[]),
    ];
    for l in &layouts {
        let n = l.numel();
        let all: Vec<i64> = gather(&iota(200), l);
        for start in 0..n {
            for count in [0, 1, 2, n - start] {
                if start + count <= n {
                    assert_eq!(walk(l, start, count), all[start..start + count], "{l:?} [{start}, +{count})");
                }
            }
        }
    }
    // 0-d: exactly one call with the offset.
    let mut calls = vec![];
    for_each_row::<1>(&[], &[Default::default()], [9], 0, 1, |p, n, [b]| calls.push((p, n, b)));
    assert_eq!(calls, [(0, 1, 9)]);
    // count 0 never calls.
    for_each_row::<1>(&[3], &[[1].into_iter().collect()], [0], 1, 0, |_, _, _| panic!("called"));
}
