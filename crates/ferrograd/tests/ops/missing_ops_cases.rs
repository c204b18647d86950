//! Issue 20's operator-breadth ops against naive float64 loops written here: `LRN`, `Crop`,
//! `khatri_rao`, `cumsum` (`_np_cumsum`) and `_split_v2`; gradients to second order by finite differences;
//! bad inputs. (`LeakyReLU(act_type='rrelu')` is covered from Python, train mode included.)

use ferrograd::DType::{F32, F64, I32, I8};
use ferrograd::{call, Error, NDArray};

use crate::common::*;
use crate::gradcheck::{build, check};

fn rand(rng: &mut Rng, shape: &[usize]) -> NDArray {
    f64s(&rng.vec(numel(shape), -2.0, 2.0), shape)
}

/// LRN by the definition, in f64 (MXNet's float32 parameters).
fn lrn_ref(x: &[f64], shape: &[usize], nsize: usize, alpha: f64, beta: f64, k: f64) -> Vec<f64> {
    let (c, inner) = (shape[1], shape[2] * shape[3]);
    let a = (alpha as f32 / nsize as f32) as f64;
    let (b, k) = (beta as f32 as f64, k as f32 as f64);
    (0..x.len())
        .map(|i| {
            let ch = (i / inner) % c;
            let base = i - ch * inner;
            let lo = ch.saturating_sub(nsize / 2);
            let hi = (ch + nsize / 2).min(c - 1);
            let s: f64 = (lo..=hi).map(|j| x[base + j * inner].powi(2)).sum();
            x[i] * (k + a * s).powf(-b)
        })
        .collect()
}

pub fn lrn_p() -> Params {
    vec![("nsize", int(3))]
}

pub fn lrn(name: &'static str) {
    let mut rng = Rng::new(2020);
    for (shape, nsize, alpha, beta, k) in
        [([2, 5, 3, 2], 3, 0.5, 0.75, 2.0), ([1, 4, 2, 3], 1, 1e-4, 0.75, 2.0), ([1, 3, 1, 4], 3, 2.0, 1.3, 0.7)]
    {
        let x = rand(&mut rng, &shape);
        let want = lrn_ref(&x.to_f64_vec(), &shape, nsize, alpha, beta, k);
        for dt in [F64, F32] {
            let xv = x.astype(dt);
            let p = [("nsize", int(nsize as i64)), ("alpha", float(alpha)), ("beta", float(beta)), ("knorm", float(k))];
            let y = call1(name, std::slice::from_ref(&xv), &p);
            let w: Vec<f64> =
                if dt == F64 { want.clone() } else { lrn_ref(&xv.to_f64_vec(), &shape, nsize, alpha, beta, k) };
            let (rt, at) = tol(dt);
            check_arr(&format!("{name} {shape:?} n={nsize} {dt}"), &y, &shape, dt, &w, rt, at);
        }
    }
    for (params, kind) in [(vec![("nsize", int(4))], "value"), (vec![("nsize", int(0))], "value")] {
        let r = call(name, &[NDArray::zeros(&[1, 4, 2, 2], F32)], &params);
        assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("LRN") && m.contains("nsize")), "{kind}: {r:?}");
    }
    let r = call(name, &[NDArray::zeros(&[1, 2, 2, 2], F32)], &[("nsize", int(3))]);
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("nsize=3") && m.contains("(1, 2, 2, 2)")), "{r:?}");
    let r = call(name, &[NDArray::zeros(&[4, 2], F32)], &[("nsize", int(1))]);
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("4-D")), "{r:?}");
}

pub fn lrn_grad(name: &'static str) {
    let mut rng = Rng::new(2021);
    let x = rand(&mut rng, &[2, 4, 2, 2]);
    for (nsize, alpha) in [(3, 0.8), (1, 0.3)] {
        let op = build(name, &[("nsize", int(nsize)), ("alpha", float(alpha)), ("beta", float(0.6))]);
        check(&format!("{name} n={nsize}"), &op, std::slice::from_ref(&x), &mut rng, true);
    }
}

pub fn crop_p() -> Params {
    vec![("h_w", tuple(&[2, 3]))]
}

pub fn crop(name: &'static str) {
    let shape = [2, 3, 5, 6];
    let x = f64s(&(0..numel(&shape)).map(|v| v as f64).collect::<Vec<_>>(), &shape);
    let at = |n: usize, c: usize, y: usize, xx: usize| (((n * 3 + c) * 5 + y) * 6 + xx) as f64;
    let want = |h: usize, w: usize, oy: usize, ox: usize| {
        let mut v = Vec::new();
        for n in 0..2 {
            for c in 0..3 {
                for y in 0..h {
                    for xx in 0..w {
                        v.push(at(n, c, oy + y, ox + xx));
                    }
                }
            }
        }
        v
    };
    let y = call1(name, std::slice::from_ref(&x), &[("h_w", tuple(&[2, 3])), ("offset", tuple(&[1, 2]))]);
    check_arr("Crop h_w offset", &y, &[2, 3, 2, 3], F64, &want(2, 3, 1, 2), 0.0, 0.0);
    let y = call1(name, std::slice::from_ref(&x), &[("h_w", tuple(&[3, 4])), ("center_crop", boolean(true))]);
    check_arr("Crop center", &y, &[2, 3, 3, 4], F64, &want(3, 4, 1, 1), 0.0, 0.0);
    let like = NDArray::zeros(&[1, 1, 3, 2], F32);
    let y = call1(name, &[x.clone(), like.clone()], &[("num_args", int(2)), ("h_w", tuple(&[1, 1]))]);
    check_arr("Crop like", &y, &[2, 3, 3, 2], F64, &want(3, 2, 0, 0), 0.0, 0.0);
    let y = call1(name, &[x.astype(I32), like], &[("center_crop", boolean(true))]);
    check_arr("Crop like center int32", &y, &[2, 3, 3, 2], I32, &want(3, 2, 1, 2), 0.0, 0.0);
    let bad: [(Vec<NDArray>, Params, &str); 4] = [
        (vec![x.clone()], vec![("h_w", tuple(&[6, 3]))], "larger"),
        (vec![x.clone()], vec![("h_w", tuple(&[2, 3])), ("offset", tuple(&[4, 0]))], "offset"),
        (vec![x.clone()], vec![], "h_w"),
        (vec![NDArray::zeros(&[3, 5, 6], F32)], vec![("h_w", tuple(&[2, 2]))], "4-D"),
    ];
    for (ins, p, word) in bad {
        let r = call(name, &ins, &p);
        assert!(
            matches!(r, Err(ref e) if e.to_string().contains("Crop") && e.to_string().contains(word)),
            "{word}: {r:?}"
        );
    }
}

pub fn crop_grad(name: &'static str) {
    let mut rng = Rng::new(2022);
    let x = rand(&mut rng, &[1, 2, 4, 5]);
    let op = build(name, &[("h_w", tuple(&[2, 3])), ("offset", tuple(&[1, 1]))]);
    check("Crop offset", &op, std::slice::from_ref(&x), &mut rng, true);
    let op = build(name, &[("num_args", int(2)), ("center_crop", boolean(true))]);
    check("Crop like", &op, &[x, rand(&mut rng, &[1, 1, 3, 2])], &mut rng, true);
}

pub fn khatri_rao(name: &'static str) {
    let a = f64s(&[1.0, -1.0, 2.0, -3.0], &[2, 2]);
    let b = f64s(&[1.0, 4.0, 2.0, 5.0, 3.0, 6.0], &[3, 2]);
    let want = [1.0, -4.0, 2.0, -5.0, 3.0, -6.0, 2.0, -12.0, 4.0, -15.0, 6.0, -18.0];
    for dt in [F64, F32, I32, I8] {
        let y = call1(name, &[a.astype(dt), b.astype(dt)], &[]);
        check_arr(&format!("khatri_rao {dt}"), &y, &[6, 2], dt, &want, 0.0, 0.0);
    }
    let y = call1(name, &[a.clone(), b.clone(), a.clone()], &[]);
    let mut w3 = Vec::new();
    for r in 0..6 {
        for i in 0..2 {
            for k in 0..2 {
                w3.push(want[r * 2 + k] * [1.0, -1.0, 2.0, -3.0][i * 2 + k]);
            }
        }
    }
    check_arr("khatri_rao 3", &y, &[12, 2], F64, &w3, 0.0, 0.0);
    let r = call(name, &[a.clone(), NDArray::zeros(&[3, 3], F64)], &[]);
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("khatri_rao") && m.contains("(3, 3)")), "{r:?}");
    let r = call(name, &[a, b.astype(F32)], &[]);
    assert!(matches!(r, Err(Error::DType(ref m)) if m.contains("khatri_rao")), "{r:?}");
}

pub fn khatri_rao_grad(name: &'static str) {
    let mut rng = Rng::new(2023);
    let op = build(name, &[]);
    check("khatri_rao 2", &op, &[rand(&mut rng, &[2, 3]), rand(&mut rng, &[3, 3])], &mut rng, true);
    let ins = [rand(&mut rng, &[2, 2]), rand(&mut rng, &[1, 2]), rand(&mut rng, &[3, 2])];
    check("khatri_rao 3", &op, &ins, &mut rng, true);
}

pub fn cumsum(name: &'static str) {
    let x = f64s(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let y = call1(name, std::slice::from_ref(&x), &[]);
    check_arr("cumsum flat", &y, &[6], F64, &[1.0, 3.0, 6.0, 10.0, 15.0, 21.0], 0.0, 0.0);
    let y = call1(name, std::slice::from_ref(&x), &[("axis", int(0))]);
    check_arr("cumsum 0", &y, &[2, 3], F64, &[1.0, 2.0, 3.0, 5.0, 7.0, 9.0], 0.0, 0.0);
    let y = call1(name, std::slice::from_ref(&x), &[("axis", int(-1)), ("dtype", string("int32"))]);
    check_arr("cumsum -1 int32", &y, &[2, 3], I32, &[1.0, 3.0, 6.0, 4.0, 9.0, 15.0], 0.0, 0.0);
    // int8 wraps, as MXNet's accumulator does.
    let y = call1(name, &[arr(&[100.0, 100.0, 100.0], &[3], I8)], &[]);
    check_arr("cumsum int8", &y, &[3], I8, &[100.0, -56.0, 44.0], 0.0, 0.0);
    let r = call(name, std::slice::from_ref(&x), &[("axis", int(2))]);
    assert!(matches!(r, Err(Error::Index(ref m)) if m.contains("cumsum") && m.contains("(2, 3)")), "{r:?}");
    let r = call(name, std::slice::from_ref(&x), &[("dtype", string("uint8"))]);
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("cumsum") && m.contains("dtype")), "{r:?}");
}

pub fn cumsum_grad(name: &'static str) {
    let mut rng = Rng::new(2024);
    let x = rand(&mut rng, &[2, 3, 2]);
    for axis in [None, Some(1), Some(-1)] {
        let p: Params = axis.map(|a| vec![("axis", int(a))]).unwrap_or_default();
        let op = build(name, &p);
        check(&format!("cumsum axis={axis:?}"), &op, std::slice::from_ref(&x), &mut rng, true);
    }
}

pub fn split_v2_p() -> Params {
    vec![("indices", tuple(&[0, 1]))]
}

/// `_split_v2` parts against slices taken by hand: (data shape, indices, sections, axis, squeeze)
/// and the expected (begin, end) of each part along the axis.
pub fn split_v2(name: &'static str) {
    type Row = (&'static [usize], &'static [i64], i64, i64, bool, &'static [(usize, usize)]);
    let rows: [Row; 7] = [
        (&[2, 6, 3], &[], 3, 1, false, &[(0, 2), (2, 4), (4, 6)]),
        (&[2, 6, 3], &[], 4, 1, false, &[(0, 2), (2, 4), (4, 5), (5, 6)]),
        (&[2, 5], &[0, 1, 3], 0, -1, false, &[(0, 1), (1, 3), (3, 5)]),
        (&[4, 2], &[0, 2, 2], 0, 0, false, &[(0, 2), (2, 2), (2, 4)]),
        (&[3, 2], &[0, 1, 2], 0, 0, true, &[(0, 1), (1, 2), (2, 3)]),
        (&[2, 3], &[], 3, -1, true, &[(0, 1), (1, 2), (2, 3)]),
        (&[2, 2], &[], 3, 1, false, &[(0, 1), (1, 2), (2, 2)]),
    ];
    for &(shape, indices, sections, axis, squeeze, parts) in &rows {
        let x = f64s(&(0..numel(shape)).map(|i| i as f64).collect::<Vec<_>>(), shape);
        let ax = ((axis + shape.len() as i64) % shape.len() as i64) as usize;
        let p = [
            ("indices", tuple(indices)),
            ("sections", int(sections)),
            ("axis", int(axis)),
            ("squeeze_axis", boolean(squeeze)),
        ];
        for (vn, xv) in variants(&x) {
            let ys = call(name, &[xv], &p).unwrap();
            assert_eq!(ys.len(), parts.len());
            for (k, (y, &(b, e))) in ys.iter().zip(parts).enumerate() {
                let mut ps = shape.to_vec();
                ps[ax] = e - b;
                let want: Vec<f64> = (0..numel(&ps))
                    .map(|o| {
                        let mut idx = unravel(o, &ps);
                        idx[ax] += b;
                        x.to_f64_vec()[ravel(&idx, shape)]
                    })
                    .collect();
                if squeeze {
                    ps.remove(ax);
                }
                let what = format!("_split_v2 {shape:?} {indices:?}/{sections} axis={axis} part {k} {vn}");
                check_arr(&what, y, &ps, F64, &want, 0.0, 0.0);
            }
        }
    }
    let x = NDArray::zeros(&[2, 6, 4], F32);
    let bad =
        |p: &[(&str, ferrograd::ops::AttrValue)]| call(name, std::slice::from_ref(&x), p).unwrap_err().to_string();
    let m = bad(&[("indices", tuple(&[0, 3, 1])), ("axis", int(1))]);
    assert!(m.contains("_split_v2") && m.contains("indices") && m.contains("decrease"), "{m}");
    let m = bad(&[("indices", tuple(&[0, 1, 9])), ("axis", int(1))]);
    assert!(m.contains("_split_v2") && m.contains("indices[2] = 9") && m.contains("(2, 6, 4)"), "{m}");
    let m = bad(&[("indices", tuple(&[2, 4])), ("axis", int(1))]);
    assert!(m.contains("start with 0"), "{m}");
    let m = bad(&[("indices", tuple(&[])), ("sections", int(3)), ("axis", int(1)), ("squeeze_axis", boolean(true))]);
    assert!(m.contains("squeeze_axis") && m.contains("size 2") && m.contains("(2, 6, 4)"), "{m}");
    let m = bad(&[("indices", tuple(&[])), ("sections", int(2)), ("axis", int(3))]);
    assert!(m.contains("_split_v2") && m.contains("axis 3"), "{m}");
    let m = bad(&[("indices", tuple(&[]))]);
    assert!(m.contains("sections"), "{m}");
    let m = bad(&[("indices", tuple(&[])), ("sections", int(-1))]);
    assert!(m.contains("sections"), "{m}");
    assert!(bad(&[]).contains("indices"));
}

pub fn split_v2_grad(name: &'static str) {
    let mut rng = Rng::new(2026);
    let op = build(name, &[("indices", tuple(&[0, 1, 3])), ("axis", int(1))]);
    check("_split_v2 indices", &op, &[rand(&mut rng, &[2, 4, 2])], &mut rng, true);
    let op = build(
        name,
        &[("indices", tuple(&[])), ("sections", int(3)), ("axis", int(-1)), ("squeeze_axis", boolean(true))],
    );
    check("_split_v2 squeeze", &op, &[rand(&mut rng, &[2, 3])], &mut rng, true);
    let op = build(name, &[("indices", tuple(&[0, 0, 2])), ("axis", int(0))]);
    check("_split_v2 empty part", &op, &[rand(&mut rng, &[3, 2])], &mut rng, true);
}

/// The `_contrib_boolean_mask` node builds, but its shapes cannot be inferred (they depend on the
/// index's values), and the error says what to do instead.
pub fn boolean_mask_node(name: &'static str) {
    let r = call(name, &[NDArray::zeros(&[3, 4], F32), NDArray::zeros(&[3], F32)], &[("axis", int(0))]);
    assert!(
        matches!(r, Err(Error::Shape(ref m)) if m.contains("_contrib_boolean_mask") && m.contains("values of index")
            && m.contains("nd.contrib.boolean_mask") && m.contains("(3, 4)")),
        "{r:?}"
    );
}
