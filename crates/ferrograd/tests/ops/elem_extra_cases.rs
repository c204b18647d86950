//! Elementwise extras: special functions (`rcbrt`, `erf`, `erfinv`, `gamma`, `gammaln`) against
//! independent references (Simpson integration, factorials, reflection and recurrence identities),
//! `clip`, `where`, `smooth_l1` against naive loops; gradients to second order; kinks pinned.

use std::f64::consts::PI;

use ferrograd::call;
use ferrograd::ops::grad::eval_grad;
use ferrograd::ops::AttrValue;
use ferrograd::DType::{F16, F32, F64, I32, I64};
use ferrograd::{Error, NDArray};

use crate::common::*;
use crate::gradcheck::{build, check};

/// erf by composite Simpson integration of 2/√π e^{-t²} (4000 intervals).
pub fn erf_ref(x: f64) -> f64 {
    let n = 4000;
    let h = x / n as f64;
    let f = |t: f64| (-t * t).exp();
    let mut s = f(0.0) + f(x);
    for i in 1..n {
        s += f(i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
    }
    s * h / 3.0 * 2.0 / PI.sqrt()
}

fn ln_fact(n: u32) -> f64 {
    (1..=n).map(|k| (k as f64).ln()).sum()
}

fn un(name: &str, x: &[f64]) -> Vec<f64> {
    call1(name, &[f64s(x, &[x.len()])], &[]).to_f64_vec()
}

pub fn special(name: &'static str) {
    let mut rng = Rng::new(name.len() as u64 + 99);
    // Shapes, dtypes and layouts, against a reference evaluated in f64 and rounded.
    let (lo, hi) = match name {
        "erfinv" => (-0.95, 0.95),
        "gamma" | "gammaln" => (0.2, 6.0),
        _ => (-3.0, 3.0),
    };
    let reference = |v: f64| -> f64 {
        match name {
            "rcbrt" => 1.0 / v.cbrt(),
            "erf" => erf_ref(v),
            "erfinv" => call1("erfinv", &[f64s(&[v], &[])], &[]).to_f64_vec()[0], // checked below
            "gamma" => call1("gamma", &[f64s(&[v], &[])], &[]).to_f64_vec()[0],
            _ => call1("gammaln", &[f64s(&[v], &[])], &[]).to_f64_vec()[0],
        }
    };
    for shape in [&[2usize, 3][..], &[], &[0, 2], &[7]] {
        let data = rng.vec(numel(shape), lo, hi);
        let want: Vec<f64> = data.iter().map(|&v| reference(v)).collect();
        for dt in [F64, F32] {
            let x = arr(&data, shape, dt);
            let w: Vec<f64> = if dt == F64 {
                want.clone()
            } else {
                x.to_f64_vec().iter().map(|&v| round_to(reference(v), F32)).collect()
            };
            let (rtol, atol) = if dt == F64 { (1e-12, 1e-13) } else { (1e-6, 1e-6) };
            for (vn, xv) in variants(&x) {
                check_arr(&format!("{name} {shape:?} {dt} {vn}"), &call1(name, &[xv], &[]), shape, dt, &w, rtol, atol);
            }
        }
    }
    match name {
        "rcbrt" => {
            let got = un(name, &[8.0, -27.0, 0.0, f64::INFINITY]);
            assert_close("rcbrt values", &got, &[0.5, -1.0 / 3.0, f64::INFINITY, 0.0], 1e-15, 0.0);
        }
        "erf" => {
            let xs = [-5.0, -2.7, -1.0, -0.1, 1e-9, 0.3, 0.9, 1.7, 2.4, 2.6, 3.5, 4.5];
            let want: Vec<f64> = xs.iter().map(|&v| erf_ref(v)).collect();
            assert_close("erf vs Simpson", &un(name, &xs), &want, 1e-12, 1e-15);
            let got = un(name, &[f64::INFINITY, f64::NEG_INFINITY, 0.0, 7.0]);
            assert_eq!(got, vec![1.0, -1.0, 0.0, 1.0]);
            assert!(un(name, &[f64::NAN])[0].is_nan());
        }
        "erfinv" => {
            let ys = [-0.999_999, -0.9, -0.5, -1e-6, 0.1, 0.42, 0.77, 0.95, 0.999, 0.999_999_999];
            let x = un(name, &ys);
            let back: Vec<f64> = x.iter().map(|&v| erf_ref(v)).collect();
            assert_close("erf(erfinv(y)) (Simpson)", &back, &ys, 1e-11, 1e-15);
            let xs = [-3.0, -1.2, -0.01, 0.5, 2.0, 3.5];
            let y = un("erf", &xs);
            assert_close("erfinv(erf(x))", &un(name, &y), &xs, 1e-10, 0.0);
            let got = un(name, &[1.0, -1.0, 0.0]);
            assert_eq!(got, vec![f64::INFINITY, f64::NEG_INFINITY, 0.0]);
            assert!(un(name, &[1.5])[0].is_nan() && un(name, &[-1.0001])[0].is_nan());
        }
        "gamma" => {
            let ns: Vec<f64> = (1..=25).map(f64::from).collect();
            let want: Vec<f64> = (1..=25).map(|n| ln_fact(n - 1).exp()).collect();
            assert_close("gamma(n) = (n-1)!", &un(name, &ns), &want, 1e-13, 0.0);
            let sp = PI.sqrt();
            let got = un(name, &[0.5, 1.5, -0.5, -1.5, 1e-8]);
            assert_close(
                "gamma half-integers",
                &got,
                &[sp, sp / 2.0, -2.0 * sp, 4.0 * sp / 3.0, 1e8 - 0.5772156649],
                1e-13,
                0.0,
            );
            // Recurrence and reflection at random points.
            let xs = rng.vec(20, 0.05, 30.0);
            let xp: Vec<f64> = xs.iter().map(|v| v + 1.0).collect();
            let (g, gp) = (un(name, &xs), un(name, &xp));
            let want: Vec<f64> = xs.iter().zip(&g).map(|(x, g)| x * g).collect();
            assert_close("gamma(x+1) = x gamma(x)", &gp, &want, 1e-13, 0.0);
            let xs = rng.vec(20, 0.05, 0.95);
            let xm: Vec<f64> = xs.iter().map(|v| 1.0 - v).collect();
            let (g, gm) = (un(name, &xs), un(name, &xm));
            let prod: Vec<f64> = g.iter().zip(&gm).map(|(a, b)| a * b).collect();
            let want: Vec<f64> = xs.iter().map(|&x| PI / (PI * x).sin()).collect();
            assert_close("gamma reflection", &prod, &want, 1e-13, 0.0);
            // SciPy's values: ±inf at ±0, NaN at the negative integers.
            assert_eq!(un(name, &[0.0, -0.0])[..], [f64::INFINITY, f64::NEG_INFINITY]);
            assert!(un(name, &[-1.0, -7.0]).iter().all(|v| v.is_nan()), "negative-integer poles are NaN");
            assert_eq!(un(name, &[200.0]), vec![f64::INFINITY]);
        }
        _ => {
            let ns = [1.0, 2.0, 3.0, 10.0, 50.0, 171.0, 1000.0];
            let want: Vec<f64> = [1u32, 2, 3, 10, 50, 171, 1000].iter().map(|&n| ln_fact(n - 1)).collect();
            assert_close("gammaln(n) = ln (n-1)!", &un(name, &ns), &want, 1e-13, 1e-14);
            let sp = PI.sqrt();
            assert_close(
                "gammaln half",
                &un(name, &[0.5, -0.5, -2.5]),
                &[sp.ln(), (2.0 * sp).ln(), (8.0 * sp / 15.0).ln()],
                1e-13,
                0.0,
            );
            let xs = rng.vec(20, 0.05, 40.0);
            let xp: Vec<f64> = xs.iter().map(|v| v + 1.0).collect();
            let (g, gp) = (un(name, &xs), un(name, &xp));
            let want: Vec<f64> = xs.iter().zip(&g).map(|(x, g)| g + x.ln()).collect();
            assert_close("gammaln recurrence", &gp, &want, 1e-12, 1e-13);
            assert!(un(name, &[0.0, -3.0]).iter().all(|v| *v == f64::INFINITY), "poles are +inf");
        }
    }
}

pub fn special_grad(name: &'static str) {
    let op = build(name, &[]);
    let mut rng = Rng::new(name.len() as u64 + 5);
    let points: Vec<f64> = match name {
        "rcbrt" => rng.signed(5, 0.5, 2.0),
        "erf" => rng.vec(5, -2.0, 2.0),
        "erfinv" => rng.vec(5, -0.8, 0.8),
        "gamma" => vec![0.6, 1.3, 2.5, 3.7, -0.4, -1.6],
        _ => vec![0.4, 1.2, 2.7, 5.5, -0.3, -2.4],
    };
    check(name, &op, &[f64s(&points, &[points.len()])], &mut rng, true);
    check(&format!("{name} 0-d"), &op, &[f64s(&points[..1], &[])], &mut rng, true);
}

pub fn clip(name: &'static str) {
    let ps = [("a_min", float(-1.0)), ("a_max", float(2.0))];
    for shape in [&[2usize, 3][..], &[], &[0, 3], &[5]] {
        let data: Vec<f64> = (0..numel(shape)).map(|i| i as f64 * 0.9 - 2.0).collect();
        for dt in [F64, F32, I32] {
            let x = arr(&data, shape, dt);
            let want: Vec<f64> = x.to_f64_vec().iter().map(|v| v.clamp(-1.0, 2.0)).collect();
            for (vn, xv) in variants(&x) {
                check_arr(&format!("clip {shape:?} {dt} {vn}"), &call1(name, &[xv], &ps), shape, dt, &want, 0.0, 0.0);
            }
        }
    }
    assert!(call1(name, &[f64s(&[f64::NAN], &[1])], &ps).to_f64_vec()[0].is_nan());
    // String attributes as in symbol JSON.
    let y = call1(name, &[f64s(&[-3.0, 0.5, 3.0], &[3])], &[("a_min", string("-1")), ("a_max", string("1.5"))]);
    assert_eq!(y.to_f64_vec(), vec![-1.0, 0.5, 1.5]);
}

pub fn clip_grad(name: &'static str) {
    let op = build(name, &[("a_min", float(-1.0)), ("a_max", float(2.0))]);
    let mut rng = Rng::new(31);
    check("clip", &op, &[f64s(&[-1.7, -0.6, 0.3, 1.4, 2.5, 3.1], &[2, 3])], &mut rng, true);
    // Kinks pinned: the bounds pass the gradient (MXNet's inclusive rule), outside gives 0.
    let x = f64s(&[-1.0, 2.0, -1.0001, 2.0001, 0.0], &[5]);
    let g = eval_grad(op.as_ref(), &[x], &[f64s(&[3.0; 5], &[5])]).unwrap();
    assert_eq!(g[0].as_ref().unwrap().to_f64_vec(), vec![3.0, 3.0, 0.0, 0.0, 3.0]);
}

pub fn where_(name: &'static str) {
    let x = f64s(&(0..6).map(|i| i as f64).collect::<Vec<_>>(), &[2, 3]);
    let y = f64s(&(0..6).map(|i| -(i as f64) - 10.0).collect::<Vec<_>>(), &[2, 3]);
    let cond_full = [1.0, 0.0, 2.5, 0.0, -1.0, 0.0];
    for cdt in [F64, F32, I32, I64] {
        let c = arr(&cond_full, &[2, 3], cdt);
        let want: Vec<f64> = (0..6).map(|i| if cond_full[i] != 0.0 { i as f64 } else { -(i as f64) - 10.0 }).collect();
        for (vn, xv) in variants(&x) {
            for (wn, yv) in variants(&y) {
                let out = call1(name, &[c.clone(), xv.clone(), yv], &[]);
                check_arr(&format!("where {cdt} {vn}/{wn}"), &out, &[2, 3], F64, &want, 0.0, 0.0);
            }
        }
        // 1-D condition: one entry per row.
        let out = call1(name, &[arr(&[0.0, 3.0], &[2], cdt), x.clone(), y.clone()], &[]);
        let want: Vec<f64> = (0..6).map(|i| if i >= 3 { i as f64 } else { -(i as f64) - 10.0 }).collect();
        check_arr(&format!("where row condition {cdt}"), &out, &[2, 3], F64, &want, 0.0, 0.0);
    }
    let out =
        call1(name, &[NDArray::zeros(&[0, 2], F32), NDArray::zeros(&[0, 2], I32), NDArray::zeros(&[0, 2], I32)], &[]);
    check_arr("where empty", &out, &[0, 2], I32, &[], 0.0, 0.0);
    let out = call1(name, &[arr(&[1.0], &[], I32), f64s(&[4.0], &[]), f64s(&[5.0], &[])], &[]);
    check_arr("where 0-d", &out, &[], F64, &[4.0], 0.0, 0.0);
}

pub fn where_grad(name: &'static str) {
    let op = build(name, &[]);
    let mut rng = Rng::new(33);
    let c = arr(&[1.0, 0.0, 1.0, 0.0, 0.0, 1.0], &[2, 3], I32);
    let (x, y) = (f64s(&rng.vec(6, -2.0, 2.0), &[2, 3]), f64s(&rng.vec(6, -2.0, 2.0), &[2, 3]));
    check("where", &op, &[c, x.clone(), y.clone()], &mut rng, true);
    check("where rows", &op, &[arr(&[0.0, 1.0], &[2], I64), x, y], &mut rng, true);
}

fn smooth_ref(x: f64, s: f64) -> f64 {
    let s2 = s * s;
    if x.abs() < 1.0 / s2 {
        0.5 * s2 * x * x
    } else {
        x.abs() - 0.5 / s2
    }
}

pub fn smooth_l1(name: &'static str) {
    for sigma in [1.0, 2.0, 0.5] {
        for shape in [&[2usize, 3][..], &[], &[0]] {
            let data: Vec<f64> = (0..numel(shape)).map(|i| i as f64 * 0.7 - 1.9).collect();
            for dt in [F64, F32] {
                let x = arr(&data, shape, dt);
                let want: Vec<f64> = x.to_f64_vec().iter().map(|&v| round_to(smooth_ref(v, sigma), dt)).collect();
                for (vn, xv) in variants(&x) {
                    let y = call1(name, &[xv], &[("scalar", float(sigma))]);
                    check_arr(&format!("smooth_l1 σ={sigma} {dt} {vn}"), &y, shape, dt, &want, 1e-6, 1e-7);
                }
            }
        }
    }
}

pub fn smooth_l1_grad(name: &'static str) {
    let mut rng = Rng::new(35);
    for sigma in [1.0, 2.0] {
        let op = build(name, &[("scalar", float(sigma))]);
        let x = f64s(&[-2.0, -0.6, -0.1, 0.15, 0.4, 1.3], &[6]);
        check(&format!("smooth_l1 σ={sigma}"), &op, &[x], &mut rng, true);
    }
    // At the switch point |x| = 1/σ² the outer (L1) branch applies: gradient sign(x).
    let op = build(name, &[("scalar", float(1.0))]);
    let g = eval_grad(op.as_ref(), &[f64s(&[1.0, -1.0, 0.0], &[3])], &[f64s(&[1.0; 3], &[3])]).unwrap();
    assert_eq!(g[0].as_ref().unwrap().to_f64_vec(), vec![1.0, -1.0, 0.0]);
}

/// The un-prefixed binary aliases broadcast like MXNet's `mx.nd.power(a, b)`.
pub fn alias_check() {
    let a = f64s(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let b = f64s(&[2.0, 0.5, 3.0], &[3]);
    for (alias, f) in [
        ("power", (|x: f64, y: f64| x.powf(y)) as fn(f64, f64) -> f64),
        ("maximum", |x, y| x.max(y)),
        ("minimum", |x, y| x.min(y)),
        ("hypot", |x, y| x.hypot(y)),
    ] {
        let y = call1(alias, &[a.clone(), b.clone()], &[]);
        let want: Vec<f64> = (0..6).map(|i| f(a.to_f64_vec()[i], b.to_f64_vec()[i % 3])).collect();
        check_arr(alias, &y, &[2, 3], F64, &want, 1e-15, 0.0);
    }
}

#[test]
fn binary_aliases_broadcast() {
    alias_check();
}

#[test]
fn elem_extra_errors() {
    let z = NDArray::zeros(&[2, 3], F32);
    let r = call("clip", std::slice::from_ref(&z), &[("a_min", AttrValue::Float(0.0))]);
    assert!(matches!(&r, Err(Error::Value(m)) if m.contains("clip") && m.contains("a_max")), "{r:?}");
    let r = call("clip", std::slice::from_ref(&z), &[("a_min", string("low")), ("a_max", float(1.0))]);
    assert!(matches!(&r, Err(Error::Value(m)) if m.contains("clip") && m.contains("a_min")), "{r:?}");
    let r = call("where", &[z.clone(), z.clone(), NDArray::zeros(&[3, 2], F32)], &[]);
    assert!(
        matches!(&r, Err(Error::Shape(m)) if m.contains("where") && m.contains("(2, 3)") && m.contains("(3, 2)")),
        "{r:?}"
    );
    let r = call("where", &[NDArray::zeros(&[3], F32), z.clone(), z.clone()], &[]);
    assert!(matches!(&r, Err(Error::Shape(m)) if m.contains("condition") && m.contains("(3,)")), "{r:?}");
    let r = call("where", &[z.clone(), z.clone(), NDArray::zeros(&[2, 3], F64)], &[]);
    assert!(matches!(&r, Err(Error::DType(m)) if m.contains("where")), "{r:?}");
    let r = call("smooth_l1", std::slice::from_ref(&z), &[("scalar", float(-1.0))]);
    assert!(matches!(&r, Err(Error::Value(m)) if m.contains("smooth_l1")), "{r:?}");
}

/// The fused activation gradients: `gy · mask(saved)` against the mask written out here, in
/// every float dtype and layout, with the kinks and NaN pinned.
pub fn masked_grad(name: &'static str) {
    type Case = (Vec<(&'static str, AttrValue)>, fn(f64) -> f64);
    let (params, mask): Case = match name {
        "_backward_relu" => (vec![], |v| {
            if v > 0.0 {
                1.0
            } else if v.is_nan() {
                f64::NAN
            } else {
                0.0
            }
        }),
        "_backward_clip" => {
            (vec![("a_min", float(-1.0)), ("a_max", float(2.0))], |v| if (-1.0..=2.0).contains(&v) { 1.0 } else { 0.0 })
        }
        "_backward_leaky_relu" => (vec![("slope", float(0.25))], |v| if v > 0.0 { 1.0 } else { 0.25 }),
        other => panic!("no case for {other}"),
    };
    let saved = [-1.5, -1.0, 0.0, 0.5, 2.0, 2.5, f64::NAN, 3.0];
    let gy = [1.0, -2.0, 3.0, -4.0, 5.0, -6.0, 7.0, 0.5];
    for dt in [F64, F32, F16] {
        let (g, s) = (arr(&gy, &[2, 4], dt), arr(&saved, &[2, 4], dt));
        let want: Vec<f64> = gy.iter().zip(&saved).map(|(&a, &v)| a * mask(v)).collect();
        for (vn, gv) in variants(&g) {
            for (sn, sv) in variants(&s) {
                let out = call1(name, &[gv.clone(), sv], &params);
                let got = out.to_f64_vec();
                assert_eq!(out.dtype(), dt, "{name} {dt} {vn}/{sn}: dtype");
                for (i, (&a, &b)) in got.iter().zip(&want).enumerate() {
                    assert!(a == b || (a.is_nan() && b.is_nan()), "{name} {dt} {vn}/{sn}: [{i}] {a} != {b}");
                }
            }
        }
    }
    // Shapes and dtypes must agree; integer arrays have no gradient.
    let err = call(name, &[f64s(&[1.0; 3], &[3]), f64s(&[1.0; 4], &[4])], &params).unwrap_err().to_string();
    assert!(err.contains(name) && err.contains("(3,)") && err.contains("(4,)"), "{err}");
    let err = call(name, &[arr(&[1.0], &[1], I32), arr(&[1.0], &[1], I32)], &params).unwrap_err().to_string();
    assert!(err.contains(name) && err.contains("float"), "{err}");
}

/// Linear in the head gradient (its rule is itself), constant in the saved tensor away from kinks.
pub fn masked_grad_grad(name: &'static str) {
    let params: Vec<(&'static str, AttrValue)> = match name {
        "_backward_clip" => vec![("a_min", float(-1.0)), ("a_max", float(2.0))],
        "_backward_leaky_relu" => vec![("slope", float(0.25))],
        _ => vec![],
    };
    let op = build(name, &params);
    let mut rng = Rng::new(57);
    let g = f64s(&[0.3, -1.2, 2.2, 0.7, -0.4, 1.9], &[2, 3]);
    let s = f64s(&[-1.7, -0.6, 0.3, 1.4, 2.5, 3.1], &[2, 3]);
    check(name, &op, &[g, s], &mut rng, true);
}
