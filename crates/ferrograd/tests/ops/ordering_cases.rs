//! Ordering ops (`topk`, `sort`, `argsort`) against a naive stable sort per lane, their value
//! gradients (first and second order), and the random samplers (`_random_*`, `_sample_*`):
//! ranges, moments, reproducibility under `seed`, parameter errors.

use ferrograd::call;
use ferrograd::ops::AttrValue;
use ferrograd::DType::{F32, F64, I32, I64};
use ferrograd::{Error, NDArray};

use crate::common::*;
use crate::gradcheck::{build, check};

/// Naive stable ordering of every lane: (values, indices) shaped like `x` with `axis` cut to `k`.
fn order_ref(x: &NDArray, axis: usize, k: usize, asc: bool) -> (Vec<usize>, Vec<f64>, Vec<f64>) {
    let s = x.shape();
    let v = x.to_f64_vec();
    let mut os = s.to_vec();
    os[axis] = k;
    let (mut vals, mut idx) = (Vec::new(), Vec::new());
    for o in 0..numel(&os) {
        let oi = unravel(o, &os);
        let mut lane: Vec<(f64, usize)> = (0..s[axis])
            .map(|i| {
                let mut si = oi.clone();
                si[axis] = i;
                (v[ravel(&si, s)], i)
            })
            .collect();
        lane.sort_by(|a, b| if asc { a.0.total_cmp(&b.0) } else { b.0.total_cmp(&a.0) });
        let (val, i) = lane[oi[axis]];
        vals.push(val);
        idx.push(i as f64);
    }
    (os, vals, idx)
}

fn distinct(rng: &mut Rng, shape: &[usize]) -> NDArray {
    let n = numel(shape);
    let p = rng.perm(n);
    f64s(&p.iter().map(|&i| i as f64 * 0.37 - 3.0).collect::<Vec<_>>(), shape)
}

pub fn topk(name: &'static str) {
    let mut rng = Rng::new(51);
    for (shape, axis) in [(&[3usize, 5][..], -1i64), (&[3, 5], 0), (&[2, 3, 4], 1), (&[0, 4], 1), (&[6], 0)] {
        let x = distinct(&mut rng, shape);
        let nd = shape.len() as i64;
        let ax = ((axis + nd) % nd) as usize;
        for k in [1i64, 2, 0] {
            let kk = if k < 1 { shape[ax] } else { k as usize };
            if kk > shape[ax] {
                continue;
            }
            for asc in [false, true] {
                for dt in [F64, F32, I32] {
                    let xd = x.astype(dt);
                    let (os, vals, idx) = order_ref(&xd, ax, kk, asc);
                    for (vn, xv) in variants(&xd) {
                        let base = [("axis", int(axis)), ("k", int(k)), ("is_ascend", boolean(asc))];
                        let what = format!("topk {shape:?} axis={axis} k={k} asc={asc} {dt} {vn}");
                        let mut p: Vec<(&str, AttrValue)> = base.to_vec();
                        p.push(("ret_typ", string("value")));
                        let want_vals: Vec<f64> = vals.iter().map(|&v| round_to(v, dt)).collect();
                        let ys = call(name, std::slice::from_ref(&xv), &p).unwrap();
                        assert_eq!(ys.len(), 1, "{what}: call returns only the visible values");
                        let all = ferrograd::ops::run(
                            build(name, &p).as_ref(),
                            &Default::default(),
                            std::slice::from_ref(&xv),
                        );
                        assert_eq!(all.unwrap().len(), 2, "{what}: values plus the hidden indices");
                        check_arr(&what, &ys[0], &os, dt, &want_vals, 0.0, 0.0);
                        let mut p = base.to_vec();
                        p.push(("ret_typ", string("indices")));
                        p.push(("dtype", string("int64")));
                        check_arr(
                            &format!("{what} indices"),
                            &call1(name, std::slice::from_ref(&xv), &p),
                            &os,
                            I64,
                            &idx,
                            0.0,
                            0.0,
                        );
                        let mut p = base.to_vec();
                        p.push(("ret_typ", string("both")));
                        let ys = call(name, std::slice::from_ref(&xv), &p).unwrap();
                        check_arr(&format!("{what} both/values"), &ys[0], &os, dt, &want_vals, 0.0, 0.0);
                        check_arr(&format!("{what} both/indices"), &ys[1], &os, F32, &idx, 0.0, 0.0);
                        let mut p = base.to_vec();
                        p.push(("ret_typ", string("mask")));
                        let mut mask = vec![0.0; numel(shape)];
                        for (o, &i) in idx.iter().enumerate() {
                            let mut si = unravel(o, &os);
                            si[ax] = i as usize;
                            mask[ravel(&si, shape)] = 1.0;
                        }
                        check_arr(&format!("{what} mask"), &call1(name, &[xv], &p), shape, dt, &mask, 0.0, 0.0);
                    }
                }
            }
        }
    }
    // Default: k=1 indices of the largest along the last axis, float32; ties keep their order.
    let x = f64s(&[1.0, 3.0, 3.0, 2.0], &[4]);
    check_arr("topk default", &call1(name, std::slice::from_ref(&x), &[]), &[1], F32, &[1.0], 0.0, 0.0);
    let y = call1(name, &[x], &[("k", int(3))]);
    check_arr("topk ties", &y, &[3], F32, &[1.0, 2.0, 3.0], 0.0, 0.0);
    // axis=None (as symbol JSON writes it) works on the flattened array.
    let x = f64s(&[5.0, 1.0, 9.0, 7.0, 3.0, 8.0], &[2, 3]);
    let y =
        call1(name, std::slice::from_ref(&x), &[("axis", string("None")), ("k", int(2)), ("ret_typ", string("value"))]);
    check_arr("topk axis=None", &y, &[2], F64, &[9.0, 8.0], 0.0, 0.0);
    // Python's axis=None arrives as an explicit None: the same flattening.
    let y = call1(name, &[x], &[("axis", AttrValue::None), ("k", int(2)), ("ret_typ", string("value"))]);
    check_arr("topk axis=None (Python None)", &y, &[2], F64, &[9.0, 8.0], 0.0, 0.0);
}

pub fn topk_grad(name: &'static str) {
    let mut rng = Rng::new(52);
    for ret in ["value", "both"] {
        let op = build(name, &[("k", int(2)), ("ret_typ", string(ret)), ("axis", int(0))]);
        check(&format!("topk {ret}"), &op, &[distinct(&mut rng, &[4, 3])], &mut rng, true);
    }
    let op = build(
        name,
        &[("k", int(3)), ("ret_typ", string("value")), ("axis", string("None")), ("is_ascend", boolean(true))],
    );
    check("topk flat", &op, &[distinct(&mut rng, &[2, 3])], &mut rng, true);
}

pub fn sort(name: &'static str) {
    let mut rng = Rng::new(53);
    for (shape, axis) in [(&[3usize, 5][..], -1i64), (&[3, 5], 0), (&[2, 3, 4], 1), (&[0, 4], 1), (&[4, 0], 1)] {
        let x = distinct(&mut rng, shape);
        let ax = ((axis + shape.len() as i64) % shape.len() as i64) as usize;
        for asc in [true, false] {
            let (os, vals, idx) = order_ref(&x, ax, shape[ax], asc);
            for (vn, xv) in variants(&x) {
                let p = [("axis", int(axis)), ("is_ascend", boolean(asc))];
                if name == "sort" {
                    let y = call1(name, &[xv], &p);
                    check_arr(&format!("sort {shape:?} {axis} {asc} {vn}"), &y, &os, F64, &vals, 0.0, 0.0);
                } else {
                    let y = call1(name, std::slice::from_ref(&xv), &p);
                    check_arr(&format!("argsort {shape:?} {axis} {asc} {vn}"), &y, &os, F32, &idx, 0.0, 0.0);
                    let y = call1(name, &[xv], &[p[0].clone(), p[1].clone(), ("dtype", string("int32"))]);
                    check_arr(&format!("argsort int32 {shape:?}"), &y, &os, I32, &idx, 0.0, 0.0);
                }
            }
        }
    }
    // Stability and NaN placement (NaN sorts above +inf).
    let x = f64s(&[2.0, f64::NAN, -1.0, 2.0, f64::INFINITY], &[5]);
    if name == "sort" {
        let y = call1(name, &[x], &[]).to_f64_vec();
        assert_eq!(&y[..4], &[-1.0, 2.0, 2.0, f64::INFINITY]);
        assert!(y[4].is_nan());
    } else {
        let y = call1(name, &[x], &[("is_ascend", boolean(false))]);
        check_arr("argsort descending stable", &y, &[5], F32, &[1.0, 4.0, 0.0, 3.0, 2.0], 0.0, 0.0);
    }
}

pub fn sort_grad(name: &'static str) {
    let mut rng = Rng::new(54);
    check("sort", &build(name, &[]), &[distinct(&mut rng, &[2, 4])], &mut rng, true);
    check(
        "sort axis 0 desc",
        &build(name, &[("axis", int(0)), ("is_ascend", boolean(false))]),
        &[distinct(&mut rng, &[3, 2])],
        &mut rng,
        true,
    );
}

fn mean_std(v: &[f64]) -> (f64, f64) {
    let m = v.iter().sum::<f64>() / v.len() as f64;
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len() as f64;
    (m, var.sqrt())
}

pub fn random(name: &'static str) {
    let n = 20000usize;
    let shape = tuple(&[100, 200]);
    match name {
        "_random_uniform" => {
            for dt in [F32, F64] {
                let y = call1(
                    name,
                    &[],
                    &[
                        ("low", float(2.0)),
                        ("high", float(5.0)),
                        ("shape", shape.clone()),
                        ("dtype", string(dt.name())),
                    ],
                );
                assert_eq!((y.shape(), y.dtype()), (&[100usize, 200][..], dt));
                let v = y.to_f64_vec();
                assert!(v.iter().all(|&x| (2.0..5.0).contains(&x)), "uniform range");
                let (m, s) = mean_std(&v);
                assert!((m - 3.5).abs() < 0.05 && (s - 3.0 / 12f64.sqrt()).abs() < 0.03, "uniform moments {m} {s}");
            }
            let y = call1(name, &[], &[]);
            assert_eq!((y.shape(), y.dtype()), (&[][..], F32));
        }
        "_random_normal" => {
            let y = call1(name, &[], &[("loc", float(1.0)), ("scale", float(2.0)), ("shape", shape)]);
            assert_eq!((y.shape(), y.dtype()), (&[100usize, 200][..], F32));
            let (m, s) = mean_std(&y.to_f64_vec());
            assert!((m - 1.0).abs() < 0.06 && (s - 2.0).abs() < 0.06, "normal moments {m} {s}");
        }
        "_random_randint" => {
            for dt in [I32, I64] {
                let y = call1(
                    name,
                    &[],
                    &[("low", int(-3)), ("high", int(4)), ("shape", tuple(&[n as i64])), ("dtype", string(dt.name()))],
                );
                assert_eq!(y.dtype(), dt);
                let v = y.to_f64_vec();
                assert!(v.iter().all(|&x| x.fract() == 0.0 && (-3.0..4.0).contains(&x)));
                for k in -3..4 {
                    let c = v.iter().filter(|&&x| x == k as f64).count();
                    assert!((c as f64 - n as f64 / 7.0).abs() < 0.1 * n as f64 / 7.0, "randint frequency of {k}: {c}");
                }
            }
            assert_eq!(call1(name, &[], &[("low", int(0)), ("high", int(5))]).dtype(), I32);
        }
        "_sample_uniform" => {
            let (low, high) = (f64s(&[0.0, 10.0], &[2]), f64s(&[1.0, 20.0], &[2]));
            let y = call1(name, &[low, high], &[("shape", tuple(&[5000]))]);
            assert_eq!((y.shape(), y.dtype()), (&[2usize, 5000][..], F64));
            let v = y.to_f64_vec();
            assert!(v[..5000].iter().all(|&x| (0.0..1.0).contains(&x)));
            assert!(v[5000..].iter().all(|&x| (10.0..20.0).contains(&x)));
            let (m, _) = mean_std(&v[5000..]);
            assert!((m - 15.0).abs() < 0.15, "sample_uniform mean {m}");
            // Integer parameters give float32; a parameter-shaped output when shape is ().
            let y = call1(name, &[arr(&[0.0, 1.0, 2.0], &[3], I32), arr(&[1.0, 2.0, 3.0], &[3], I32)], &[]);
            assert_eq!((y.shape(), y.dtype()), (&[3usize][..], F32));
        }
        _ => {
            let (mu, sigma) = (arr(&[0.0, 100.0], &[2, 1], F32), arr(&[1.0, 0.0], &[2, 1], F32));
            let y = call1(name, &[mu, sigma], &[("shape", tuple(&[4000]))]);
            assert_eq!((y.shape(), y.dtype()), (&[2usize, 1, 4000][..], F32));
            let v = y.to_f64_vec();
            assert!(v[4000..].iter().all(|&x| x == 100.0), "sigma 0 gives mu exactly");
            let (m, s) = mean_std(&v[..4000]);
            assert!(m.abs() < 0.08 && (s - 1.0).abs() < 0.06, "sample_normal moments {m} {s}");
        }
    }
}

#[test]
fn random_ops_follow_the_seed() {
    let draw = || call1("_random_uniform", &[], &[("shape", tuple(&[64]))]).to_f64_vec();
    // Another test thread may draw between a seed and ours, so allow a few attempts.
    let same = (0..5).any(|_| {
        ferrograd::random::seed(123);
        let (a, a2) = (draw(), draw());
        ferrograd::random::seed(123);
        a != a2 && draw() == a
    });
    assert!(same, "equal seeds give equal draws, successive draws differ");
    assert_eq!(call1("random_uniform", &[], &[("shape", tuple(&[3]))]).shape(), &[3]);
}

#[test]
fn ordering_and_random_errors() {
    let x = NDArray::zeros(&[2, 3], F32);
    let r = call("topk", std::slice::from_ref(&x), &[("k", int(4))]);
    assert!(
        matches!(&r, Err(Error::Value(m)) if m.contains("topk") && m.contains("k=4") && m.contains("(2, 3)")),
        "{r:?}"
    );
    let r = call("topk", std::slice::from_ref(&x), &[("ret_typ", string("values"))]);
    assert!(matches!(&r, Err(Error::Value(m)) if m.contains("ret_typ")), "{r:?}");
    let r = call("sort", std::slice::from_ref(&x), &[("axis", int(2))]);
    assert!(matches!(&r, Err(Error::Index(m)) if m.contains("sort") && m.contains("axis 2")), "{r:?}");
    let r = call("argsort", &[NDArray::zeros(&[], F32)], &[]);
    assert!(matches!(&r, Err(Error::Shape(m)) if m.contains("argsort")), "{r:?}");
    let r = call::<NDArray>("_random_uniform", &[], &[("low", float(2.0)), ("high", float(1.0))]);
    assert!(matches!(&r, Err(Error::Value(m)) if m.contains("_random_uniform")), "{r:?}");
    let r = call::<NDArray>("_random_uniform", &[], &[("dtype", string("int32"))]);
    assert!(matches!(&r, Err(Error::DType(_))), "{r:?}");
    let r = call::<NDArray>("_random_normal", &[], &[("scale", float(-1.0))]);
    assert!(matches!(&r, Err(Error::Value(m)) if m.contains("_random_normal")), "{r:?}");
    let r = call::<NDArray>("_random_randint", &[], &[("low", int(3)), ("high", int(3))]);
    assert!(matches!(&r, Err(Error::Value(m)) if m.contains("_random_randint")), "{r:?}");
    let r = call::<NDArray>("_random_randint", &[], &[]);
    assert!(matches!(&r, Err(Error::Value(m)) if m.contains("low")), "{r:?}");
    let r = call::<NDArray>("_random_uniform", &[], &[("shape", string("(2, -3)"))]);
    assert!(matches!(&r, Err(Error::Value(m)) if m.contains("shape")), "{r:?}");
    let r = call("_random_uniform", std::slice::from_ref(&x), &[]);
    assert!(matches!(&r, Err(Error::Value(m)) if m.contains("expected 0 input")), "{r:?}");
    let (a, b) = (NDArray::zeros(&[2], F32), NDArray::zeros(&[3], F32));
    let r = call("_sample_uniform", &[a.clone(), b], &[]);
    assert!(
        matches!(&r, Err(Error::Shape(m)) if m.contains("_sample_uniform") && m.contains("(2,)") && m.contains("(3,)")),
        "{r:?}"
    );
    let r = call("sample_normal", &[a.clone(), arr(&[1.0, -1.0], &[2], F32)], &[]);
    assert!(matches!(&r, Err(Error::Value(m)) if m.contains("sigma=-1")), "{r:?}");
    let r = call("sample_uniform", &[arr(&[1.0], &[1], F32), arr(&[0.0], &[1], F32)], &[]);
    assert!(matches!(&r, Err(Error::Value(m)) if m.contains("low=1")), "{r:?}");
}
