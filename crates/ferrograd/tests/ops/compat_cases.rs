//! The graph helper ops (`argmax_channel`, `shape_array`, `size_array`, `reshape_like`,
//! `_identity_with_attr_like_rhs`, `_sample_unique_zipfian`) and the densities
//! `_random_pdf_<dist>`: forward values against SciPy's (computed once, written here) and
//! gradients by finite differences.

use std::collections::HashSet;

use ferrograd::DType::{F32, F64, I64};
use ferrograd::NDArray;

use crate::common::*;
use crate::gradcheck::{build, check};

pub fn graph_ops(name: &'static str) {
    match name {
        "argmax_channel" => {
            // (2, 3, 2): the maximum along axis 1 of each (row, column) pair.
            let x = f64s(&[1.0, 9.0, 5.0, 2.0, 3.0, 4.0, 0.0, 1.0, 7.0, 0.0, 2.0, 8.0], &[2, 3, 2]);
            let y = call1(name, &[x], &[]);
            check_arr(name, &y, &[2, 2], F64, &[1.0, 0.0, 1.0, 2.0], 0.0, 0.0); // the data's dtype
            assert!(ferrograd::call(name, &[f64s(&[1.0, 2.0], &[2])], &[]).is_err(), "1-D data has no axis 1");
        }
        "shape_array" | "size_array" => {
            let y = call1(name, &[NDArray::zeros(&[2, 3, 4], F32)], &[]);
            let want: &[f64] = if name == "shape_array" { &[2.0, 3.0, 4.0] } else { &[24.0] };
            check_arr(name, &y, &[want.len()], I64, want, 0.0, 0.0);
        }
        "reshape_like" => {
            let x = f64s(&(0..24).map(f64::from).collect::<Vec<_>>(), &[2, 3, 4]);
            let r = NDArray::zeros(&[6, 4], F32);
            let y = call1(name, &[x.clone(), r.clone()], &[]);
            check_arr(name, &y, &[6, 4], F64, &x.to_f64_vec(), 0.0, 0.0);
            // Replace lhs axes 0..2 (2, 3) by rhs axis 0 (6).
            let p = [("lhs_begin", int(0)), ("lhs_end", int(2)), ("rhs_begin", int(0)), ("rhs_end", int(1))];
            let y = call1(name, &[x.clone(), r], &p);
            assert_eq!(y.shape(), &[6, 4]);
            let bad = ferrograd::call(name, &[x, NDArray::zeros(&[5], F32)], &[]);
            assert!(matches!(bad, Err(ferrograd::Error::Shape(m)) if m.contains("reshape_like")));
        }
        "_identity_with_attr_like_rhs" => {
            let x = f64s(&[1.0, -2.0, 3.0], &[3]);
            let y = call1(name, &[x, NDArray::zeros(&[3], F64)], &[]);
            check_arr(name, &y, &[3], F64, &[1.0, -2.0, 3.0], 0.0, 0.0);
            let bad = ferrograd::call(name, &[f64s(&[1.0], &[1]), NDArray::zeros(&[3], F64)], &[]);
            assert!(bad.is_err(), "a shape different from rhs's is an error");
        }
        "_sample_unique_zipfian" => {
            let p = [("range_max", int(50)), ("shape", tuple(&[3, 40]))];
            let outs = ferrograd::call::<NDArray>(name, &[], &p).unwrap();
            let (classes, tries) = (outs[0].to_f64_vec(), outs[1].to_f64_vec());
            assert_eq!((outs[0].shape(), outs[0].dtype(), outs[1].shape()), (&[3usize, 40][..], I64, &[3usize][..]));
            for (row, &n) in classes.chunks(40).zip(&tries) {
                let distinct: HashSet<i64> = row.iter().map(|&c| c as i64).collect();
                assert_eq!(distinct.len(), 40, "classes in a row are distinct");
                assert!(row.iter().all(|&c| (0.0..50.0).contains(&c)));
                assert!(n >= 40.0, "at least one draw per class, got {n}");
            }
            // Small classes are the likely ones: P(0) = log 2 / log 51 ≈ 0.18, P(49) ≈ 0.005.
            let outs = ferrograd::call::<NDArray>(name, &[], &[("range_max", int(1000)), ("shape", tuple(&[400, 1]))])
                .unwrap();
            let first = outs[0].to_f64_vec();
            let zeros = first.iter().filter(|&&c| c == 0.0).count() as f64 / 400.0;
            let want = 2f64.ln() / 1001f64.ln();
            assert!((zeros - want).abs() < 0.06, "share of class 0: {zeros}, want {want}");
            let bad = ferrograd::call::<NDArray>(name, &[], &[("range_max", int(5)), ("shape", tuple(&[1, 6]))]);
            assert!(bad.is_err(), "6 distinct classes out of 5 is an error");
        }
        "_zeros" | "_ones" | "_full" => {
            let mut p = vec![("shape", tuple(&[2, 3])), ("dtype", string("int32"))];
            if name == "_full" {
                p.push(("value", float(7.0)));
            }
            let want = match name {
                "_zeros" => 0.0,
                "_ones" => 1.0,
                _ => 7.0,
            };
            check_arr(name, &call1(name, &[], &p), &[2, 3], ferrograd::DType::I32, &[want; 6], 0.0, 0.0);
            p.remove(1);
            assert_eq!(call1(name, &[], &p).dtype(), F32, "float32 by default");
        }
        other => panic!("no forward case for {other}"),
    }
}

pub fn graph_ops_grad(name: &'static str) {
    let mut rng = Rng::new(14);
    match name {
        "reshape_like" => {
            let op = build(name, &[]);
            check(name, &op, &[f64s(&rng.vec(6, -1.0, 1.0), &[2, 3]), f64s(&[0.0; 6], &[3, 2])], &mut rng, true);
        }
        "_identity_with_attr_like_rhs" => {
            let op = build(name, &[]);
            check(name, &op, &[f64s(&rng.vec(4, -1.0, 1.0), &[2, 2]), f64s(&[0.0; 4], &[2, 2])], &mut rng, true);
        }
        other => panic!("no gradient case for {other}"),
    }
}

/// (sample (2, 2), parameters (2,) each) at which the density table below was computed.
fn scalar_inputs(name: &str) -> Vec<NDArray> {
    let x = f64s(&[0.3, 1.7, 2.5, 0.9], &[2, 2]);
    let counts = f64s(&[0.0, 3.0, 5.0, 1.0], &[2, 2]);
    let pair = |a: [f64; 2], b: [f64; 2]| vec![f64s(&a, &[2]), f64s(&b, &[2])];
    let mut v = match name {
        "_random_pdf_poisson" | "_random_pdf_negative_binomial" | "_random_pdf_generalized_negative_binomial" => {
            vec![counts]
        }
        _ => vec![x],
    };
    v.extend(match name {
        "_random_pdf_exponential" | "_random_pdf_poisson" => vec![f64s(&[1.5, 3.0], &[2])],
        "_random_pdf_negative_binomial" => pair([2.0, 4.5], [0.3, 0.6]),
        "_random_pdf_generalized_negative_binomial" => pair([1.5, 4.0], [0.5, 0.2]),
        _ => pair([0.5, 2.0], [1.5, 3.0]),
    });
    v
}

/// scipy.stats' values at `scalar_inputs` (uniform(loc=low, scale=high-low), norm, gamma with
/// scale 1/beta, expon with scale 1/lam, poisson, nbinom(k, p), nbinom(1/alpha, 1/(mu alpha + 1))).
fn scipy_values(name: &str) -> &'static [f64] {
    match name {
        "_random_pdf_uniform" => &[0.0, 0.0, 1.0, 0.0],
        "_random_pdf_normal" => {
            &[0.263_607_893_923_878_5, 0.193_127_701_840_988_6, 0.131_146_572_033_98, 0.124_335_335_602_442_9]
        }
        "_random_pdf_gamma" => {
            &[0.804_410_163_156_248_9, 0.041_380_459_000_390_13, 0.012_444_398_328_326_26, 0.544_364_653_191_973_1]
        }
        "_random_pdf_exponential" => {
            &[0.956_442_227_432_659_8, 0.117_122_499_001_729_7, 0.001_659_253_110_443_501, 0.201_616_538_219_249_2]
        }
        "_random_pdf_poisson" => {
            &[0.223_130_160_148_429_8, 0.125_510_715_083_491_8, 0.100_818_813_444_924_6, 0.149_361_205_103_591_8]
        }
        "_random_pdf_negative_binomial" => &[0.09, 0.12348, 0.087_855_324_328_517_59, 0.180_697_911_000_653_2],
        "_random_pdf_generalized_negative_binomial" => {
            &[0.326_530_612_244_897_9, 0.102_814_303_563_991_2, 0.115_636_630_668_751_2, 0.117_604_776_447_432_6]
        }
        other => panic!("no reference for {other}"),
    }
}

pub fn pdf(name: &'static str) {
    if name == "_random_pdf_dirichlet" {
        let x = f64s(&[0.2, 0.3, 0.5, 0.6, 0.1, 0.3], &[1, 2, 3]);
        let alpha = f64s(&[1.5, 2.0, 0.7], &[1, 3]);
        let want = [1.113_739_221_053_009_3, 0.749_510_137_748_894_2];
        let y = call1(name, &[x.clone(), alpha.clone()], &[]);
        check_arr(name, &y, &[1, 2], F64, &want, 1e-10, 0.0);
        let y = call1(name, &[x, alpha], &[("is_log", boolean(true))]);
        check_arr(name, &y, &[1, 2], F64, &want.map(f64::ln), 1e-10, 0.0);
        let bad = ferrograd::call(name, &[f64s(&[0.5, 0.5], &[1, 2]), f64s(&[1.0; 3], &[1, 3])], &[]);
        assert!(matches!(bad, Err(ferrograd::Error::Shape(m)) if m.contains(name)));
        return;
    }
    let inputs = scalar_inputs(name);
    let want = scipy_values(name);
    let y = call1(name, &inputs, &[]);
    check_arr(name, &y, &[2, 2], F64, want, 1e-10, 1e-15);
    let y = call1(name, &inputs, &[("is_log", boolean(true))]);
    let logs: Vec<f64> = want.iter().map(|v| v.ln()).collect();
    check_arr(&format!("{name} is_log"), &y, &[2, 2], F64, &logs, 1e-10, 1e-12);
    // float32 samples give float32 densities; parameters must share the sample's dtype.
    let f32s: Vec<NDArray> = inputs.iter().map(|x| x.astype(F32)).collect();
    assert_eq!(call1(name, &f32s, &[]).dtype(), F32);
    let mut mixed = f32s.clone();
    mixed[0] = inputs[0].clone();
    assert!(matches!(ferrograd::call(name, &mixed, &[]), Err(ferrograd::Error::DType(_))));
    // The parameters' shape must lead the sample's.
    let mut bad = inputs.clone();
    bad[0] = f64s(&[1.0, 2.0, 3.0], &[3]);
    assert!(matches!(ferrograd::call(name, &bad, &[]), Err(ferrograd::Error::Shape(m)) if m.contains(name)));
}

pub fn pdf_grad(name: &'static str) {
    let mut rng = Rng::new(41);
    let mut inputs = if name == "_random_pdf_dirichlet" {
        vec![f64s(&[0.2, 0.3, 0.5, 0.6, 0.1, 0.3], &[1, 2, 3]), f64s(&[1.5, 2.0, 0.7], &[1, 3])]
    } else {
        scalar_inputs(name)
    };
    if name == "_random_pdf_uniform" {
        inputs[0] = f64s(&[0.7, 1.2, 2.5, 2.1], &[2, 2]); // inside the supports
    }
    for is_log in [false, true] {
        let op = build(name, &[("is_log", boolean(is_log))]);
        check(&format!("{name} is_log={is_log}"), &op, &inputs, &mut rng, false);
    }
}

/// `_linalg_gelqf`: A = L Q with orthonormal rows in Q and lower-triangular L, the signs of
/// LAPACK's Householder reflections (MXNet's values for this A), batched over leading axes.
pub fn gelqf(name: &'static str) {
    let a = f64s(&[1.0, 2.0, 3.0, 4.0, 5.0, -6.0], &[2, 3]);
    let outs = ferrograd::call(name, &[a], &[]).unwrap();
    let q_want = [-0.267_261_24, -0.534_522_48, -0.801_783_73, -0.492_067_83, -0.639_688_18, 0.590_481_4];
    check_arr("gelqf Q", &outs[0], &[2, 3], F64, &q_want, 1e-7, 1e-8);
    check_arr("gelqf L", &outs[1], &[2, 2], F64, &[-3.741_657_39, 0.0, 1.069_044_97, -8.709_600_61], 1e-7, 1e-8);
    let mut rng = Rng::new(7);
    let batch = f64s(&rng.vec(2 * 3 * 5, -1.0, 1.0), &[2, 3, 5]);
    let outs = ferrograd::call(name, std::slice::from_ref(&batch), &[]).unwrap();
    let (q, l, a) = (outs[0].to_f64_vec(), outs[1].to_f64_vec(), batch.to_f64_vec());
    for k in 0..2 {
        for r in 0..3 {
            for c in 0..5 {
                let lq: f64 = (0..3).map(|t| l[k * 9 + r * 3 + t] * q[k * 15 + t * 5 + c]).sum();
                assert!((lq - a[k * 15 + r * 5 + c]).abs() < 1e-12, "L Q = A");
            }
            for s in 0..3 {
                let qq: f64 = (0..5).map(|t| q[k * 15 + r * 5 + t] * q[k * 15 + s * 5 + t]).sum();
                assert!((qq - f64::from(u8::from(r == s))).abs() < 1e-12, "Q Qᵀ = I");
            }
            assert!((r + 1..3).all(|c| l[k * 9 + r * 3 + c] == 0.0), "L is lower triangular");
        }
    }
    let bad = ferrograd::call(name, &[f64s(&[1.0; 6], &[3, 2])], &[]);
    assert!(matches!(bad, Err(ferrograd::Error::Shape(m)) if m.contains(name)));
}

pub fn gelqf_grad(name: &'static str) {
    let mut rng = Rng::new(8);
    let op = build(name, &[]);
    check(name, &op, &[f64s(&rng.vec(2 * 2 * 4, -1.0, 1.0), &[2, 2, 4])], &mut rng, false);
}
