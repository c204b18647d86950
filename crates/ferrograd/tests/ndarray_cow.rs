//! NDArray aliasing semantics: copy-on-write snapshots, views (writes reach the base), lazy
//! copies (transpose, broadcast, strided slice: isolated both ways), in-place writes when the
//! buffer is unshared, and materialisation of broadcast views on write.

mod common;

use common::{arr, f64s};
use ferrograd::{DType, Error, NDArray, SliceArg};

/// Builds a view or copy of an array.
type MakeView = fn(&NDArray) -> NDArray;

fn r(start: Option<i64>, stop: Option<i64>, step: i64) -> SliceArg {
    SliceArg::Range { start, stop, step }
}

fn base() -> NDArray {
    f64s(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])
}

fn vals(b: &ferrograd::Buffer) -> Vec<f64> {
    b.slice::<f64>().unwrap().to_vec()
}

fn ptr(x: &NDArray) -> *const u8 {
    // The temporary snapshot is dropped at the end of this call, so it never pins the buffer.
    x.snapshot().data_ptr()
}

#[test]
fn snapshot_survives_every_kind_of_write() {
    let orig = vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    // assign_from
    let mut x = base();
    let s = x.snapshot();
    x.assign_from(&f64s(&[9.0], &[1])).unwrap();
    assert_eq!(vals(&s), orig);
    assert_eq!(x.to_f64_vec(), vec![9.0; 6]);
    // fill_scalar
    let mut x = base();
    let s = x.snapshot();
    x.fill_scalar(-1.0);
    assert_eq!(vals(&s), orig);
    assert_eq!(x.to_f64_vec(), vec![-1.0; 6]);
    // assign_index
    let mut x = base();
    let s = x.snapshot();
    x.assign_index(&[SliceArg::Index(1)], &f64s(&[7.0, 8.0, 9.0], &[3])).unwrap();
    assert_eq!(vals(&s), orig);
    assert_eq!(x.to_f64_vec(), vec![1.0, 2.0, 3.0, 7.0, 8.0, 9.0]);
    // Writes through views of the array.
    let x = base();
    let s = x.snapshot();
    let mut v = x.reshape(&[6]).unwrap();
    v.fill_scalar(0.5);
    let mut row = x.slice(&[SliceArg::Index(0)]).unwrap();
    row.assign_from(&f64s(&[3.0], &[])).unwrap();
    assert_eq!(vals(&s), orig);
    assert_eq!(x.to_f64_vec(), vec![3.0, 3.0, 3.0, 0.5, 0.5, 0.5]);
}

#[test]
fn writes_through_views_reach_the_base() {
    let views: Vec<(&str, MakeView)> = vec![
        ("reshape", |x| x.reshape(&[3, 2]).unwrap()),
        ("first-axis slice", |x| x.slice(&[r(Some(1), None, 1)]).unwrap()),
        ("integer index", |x| x.slice(&[SliceArg::Index(1)]).unwrap()),
        ("expand_dims", |x| x.expand_dims(0).unwrap()),
        ("squeeze", |x| x.expand_dims(1).unwrap().squeeze(None).unwrap()),
        ("contiguous inner slice", |x| x.slice(&[SliceArg::Index(1), r(Some(1), Some(3), 1)]).unwrap()),
    ];
    for (name, make) in views {
        let x = base();
        let mut v = make(&x);
        assert!(v.shares_storage(&x), "{name} must be a view");
        let n = v.size();
        v.fill_scalar(0.0);
        let zeros = x.to_f64_vec().iter().filter(|&&e| e == 0.0).count();
        assert_eq!(zeros, n, "{name}: the write must reach exactly the viewed elements");
        // And writes to the base are seen through the view.
        let mut x2 = x.clone();
        x2.fill_scalar(4.0);
        assert_eq!(v.to_f64_vec(), vec![4.0; n], "{name}");
    }
}

#[test]
fn lazy_copies_are_isolated_both_ways() {
    let copies: Vec<(&str, MakeView)> = vec![
        ("transpose", |x| x.transpose(&[]).unwrap()),
        ("broadcast_to", |x| x.broadcast_to(&[2, 2, 3]).unwrap()),
        ("strided slice", |x| x.slice(&[r(None, None, 1), r(None, None, 2)]).unwrap()),
        ("reversed slice", |x| x.slice(&[r(None, None, -1)]).unwrap()),
    ];
    for (name, make) in copies {
        // Writes to the base do not reach the copy.
        let mut x = base();
        let c = make(&x);
        assert!(!c.shares_storage(&x), "{name} must be a lazy copy");
        let before = c.to_f64_vec();
        x.fill_scalar(-5.0);
        assert_eq!(c.to_f64_vec(), before, "{name}: a write to the base leaked into the copy");
        // Writes to the copy do not reach the base.
        let x = base();
        let mut c = make(&x);
        c.fill_scalar(8.0);
        assert_eq!(c.to_f64_vec(), vec![8.0; c.size()], "{name}");
        assert_eq!(x.to_f64_vec(), base().to_f64_vec(), "{name}: a write to the copy leaked into the base");
    }
}

#[test]
fn unshared_buffers_are_written_in_place() {
    let mut x = base();
    let p = ptr(&x);
    x.fill_scalar(2.0);
    x.assign_from(&f64s(&[1.0, 2.0, 3.0], &[3])).unwrap();
    x.assign_index(&[SliceArg::Index(0)], &f64s(&[0.0], &[])).unwrap();
    assert_eq!(ptr(&x), p, "no snapshot held: writes must not copy");
    // Through a view: still the same buffer.
    let mut v = x.reshape(&[6]).unwrap();
    v.fill_scalar(3.0);
    assert_eq!(ptr(&x), p);
    // A held snapshot forces exactly one copy; the snapshot keeps the old address and values.
    let s = x.snapshot();
    x.fill_scalar(4.0);
    let p2 = ptr(&x);
    assert_ne!(p2, p);
    assert_eq!(s.data_ptr(), p);
    assert_eq!(vals(&s), vec![3.0; 6]);
    // The view followed the copy (it shares the cell), and later writes are in place again.
    assert_eq!(v.to_f64_vec(), vec![4.0; 6]);
    drop(s);
    x.fill_scalar(5.0);
    assert_eq!(ptr(&x), p2);
    // A live lazy copy pins the buffer like a snapshot; once dropped, writes are in place.
    let t = x.transpose(&[]).unwrap();
    x.fill_scalar(6.0);
    let p3 = ptr(&x);
    assert_ne!(p3, p2);
    assert_eq!(t.to_f64_vec(), vec![5.0; 6]);
    drop(t);
    x.fill_scalar(7.0);
    assert_eq!(ptr(&x), p3);
}

#[test]
fn broadcast_views_are_materialised_on_write() {
    let x = f64s(&[1.0, 2.0, 3.0], &[3]);
    let mut b = x.broadcast_to(&[2, 3]).unwrap();
    assert_eq!(b.layout().strides[0], 0);
    b.fill_scalar(0.0);
    assert!(b.layout().is_contiguous(), "the written broadcast view must own a dense buffer");
    assert_eq!(b.to_f64_vec(), vec![0.0; 6]);
    assert_eq!(x.to_f64_vec(), vec![1.0, 2.0, 3.0]);
    // Writing one row of a broadcast array must not change the other rows (which share memory
    // before materialisation).
    let mut b = x.broadcast_to(&[2, 3]).unwrap();
    b.assign_index(&[SliceArg::Index(0)], &f64s(&[9.0], &[])).unwrap();
    assert_eq!(b.to_f64_vec(), vec![9.0, 9.0, 9.0, 1.0, 2.0, 3.0]);
    assert_eq!(x.to_f64_vec(), vec![1.0, 2.0, 3.0]);
    // Element-wise assignment into a broadcast array with a full-shape source.
    let mut b = x.broadcast_to(&[2, 3]).unwrap();
    b.assign_from(&f64s(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])).unwrap();
    assert_eq!(b.to_f64_vec(), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
}

#[test]
fn assignment_reads_sources_that_alias_the_target() {
    // x[1:] = x[:-1] on one buffer: the source is read before any element is overwritten.
    let mut x = f64s(&[1.0, 2.0, 3.0, 4.0], &[4]);
    let src = x.slice(&[r(None, Some(-1), 1)]).unwrap();
    x.assign_index(&[r(Some(1), None, 1)], &src).unwrap();
    assert_eq!(x.to_f64_vec(), vec![1.0, 1.0, 2.0, 3.0]);
    // x = x.T
    let mut x = f64s(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let t = x.transpose(&[]).unwrap();
    x.assign_from(&t).unwrap();
    assert_eq!(x.to_f64_vec(), vec![1.0, 3.0, 2.0, 4.0]);
    // Assignment converts dtypes and broadcasts.
    let mut y = arr(&[0.0; 6], &[2, 3], DType::I32);
    y.assign_from(&f64s(&[1.7, -2.2, 3.9], &[3])).unwrap();
    assert_eq!(y.to_vec::<i32>().unwrap(), vec![1, -2, 3, 1, -2, 3]);
}

#[test]
fn assignment_errors() {
    let mut x = base();
    let e = x.assign_from(&f64s(&[1.0, 2.0], &[2]));
    assert!(matches!(e, Err(Error::Shape(ref m)) if m.contains("(2,)") && m.contains("(2, 3)")), "{e:?}");
    let e = x.assign_index(&[SliceArg::Index(2)], &f64s(&[1.0], &[]));
    assert!(matches!(e, Err(Error::Index(ref m)) if m.contains("index 2") && m.contains("(2, 3)")), "{e:?}");
    let e = x.to_vec::<f32>();
    assert!(matches!(e, Err(Error::DType(ref m)) if m.contains("float64") && m.contains("float32")), "{e:?}");
    // A failed assignment leaves the array untouched.
    assert_eq!(x.to_f64_vec(), base().to_f64_vec());
}

#[test]
fn copies_never_alias() {
    let x = base();
    for (name, c) in
        [("copy", x.copy()), ("astype", x.astype(DType::F64)), ("to_contiguous_copy", x.to_contiguous_copy())]
    {
        assert!(!c.shares_storage(&x), "{name}");
        assert_ne!(ptr(&c), ptr(&x), "{name} must own its buffer");
    }
    // to_contiguous of a contiguous array is the array itself (a view, no copy).
    assert!(x.to_contiguous().shares_storage(&x));
}

#[test]
fn storage_version_changes_with_every_write_and_only_then() {
    let mut x = base();
    let v0 = x.storage_version().unwrap();
    // Reads, snapshots and lazy copies do not count as writes.
    let _ = x.snapshot();
    let _ = x.to_f64_vec();
    let _ = x.transpose(&[1, 0]).unwrap();
    assert_eq!(x.storage_version(), Some(v0));
    x.fill_scalar(2.0);
    let v1 = x.storage_version().unwrap();
    assert!(v1 > v0);
    // A write through a view is a write of the storage.
    let mut row = x.slice(&[SliceArg::Index(0)]).unwrap();
    row.fill_scalar(3.0);
    assert!(x.storage_version().unwrap() > v1);
    // Taking another array's buffer by handle counts too.
    let v2 = x.storage_version().unwrap();
    x.assign_shared(&base()).unwrap();
    assert!(x.storage_version().unwrap() > v2);
    // Memory handed out for writing outside ferrograd: the version cannot be known.
    let _ = x.export_buffer();
    assert_eq!(x.storage_version(), None);
}
