//! The `linalg` family (issue 20): gemm, syrk, trmm, trsm, the diagonal/triangle ops,
//! sumlogdiag, potrf, potri, inverse, det and slogdet. Forward values against references
//! computed here (and MXNet 1.9.1's numbers where the convention matters), gradients by finite
//! differences, first and second order.

use ferrograd::DType::{F32, F64};
use ferrograd::NDArray;

use crate::common::*;
use crate::gradcheck::{build, check, EPS, RTOL};

/// Row-major `a (m×k) · b (k×n)`.
fn mm(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
        }
    }
    c
}

fn tr(a: &[f64], r: usize, c: usize) -> Vec<f64> {
    (0..r * c).map(|x| a[(x % r) * c + x / r]).collect()
}

/// `a`'s lower (or upper) triangle, zeros elsewhere.
fn tri(a: &[f64], n: usize, lower: bool) -> Vec<f64> {
    (0..n * n).map(|x| if (lower && x % n <= x / n) || (!lower && x % n >= x / n) { a[x] } else { 0.0 }).collect()
}

/// A batch of well-conditioned matrices: `shift·I` plus uniform noise in [-1, 1).
fn conditioned(rng: &mut Rng, b: usize, n: usize, shift: f64) -> Vec<f64> {
    let mut v = rng.vec(b * n * n, -1.0, 1.0);
    for k in 0..b {
        (0..n).for_each(|i| v[k * n * n + i * n + i] += shift);
    }
    v
}

/// A batch of symmetric positive-definite matrices `X·Xᵀ + n·I`.
fn spd(rng: &mut Rng, b: usize, n: usize) -> Vec<f64> {
    let x = rng.vec(b * n * n, -1.0, 1.0);
    let mut out = Vec::new();
    for k in 0..b {
        let xk = &x[k * n * n..(k + 1) * n * n];
        let mut s = mm(xk, &tr(xk, n, n), n, n, n);
        (0..n).for_each(|i| s[i * n + i] += n as f64);
        out.extend(s);
    }
    out
}

fn err_names(name: &str, r: ferrograd::Result<Vec<NDArray>>) {
    match r {
        Err(e) => assert!(e.to_string().contains(name), "{name}: error should name the op: {e}"),
        Ok(_) => panic!("{name}: expected an error"),
    }
}

fn gemm_forward(name: &str) {
    let mut rng = Rng::new(1);
    for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
        let (m, k, n) = (3, 4, 2);
        let ashape = if ta { [2, k, m] } else { [2, m, k] };
        let bshape = if tb { [2, n, k] } else { [2, k, n] };
        let (a, b, c) = (rng.vec(2 * m * k, -1.0, 1.0), rng.vec(2 * k * n, -1.0, 1.0), rng.vec(2 * m * n, -1.0, 1.0));
        let mut want = Vec::new();
        for i in 0..2 {
            let ai = &a[i * m * k..(i + 1) * m * k];
            let bi = &b[i * k * n..(i + 1) * k * n];
            let ai = if ta { tr(ai, k, m) } else { ai.to_vec() };
            let bi = if tb { tr(bi, n, k) } else { bi.to_vec() };
            let p = mm(&ai, &bi, m, k, n);
            want.extend(p.iter().zip(&c[i * m * n..]).map(|(p, c)| 0.5 * p + 2.0 * c));
        }
        for dt in [F64, F32] {
            let p = [
                ("transpose_a", boolean(ta)),
                ("transpose_b", boolean(tb)),
                ("alpha", float(0.5)),
                ("beta", float(2.0)),
            ];
            let y = call1(name, &[arr(&a, &ashape, dt), arr(&b, &bshape, dt), arr(&c, &[2, m, n], dt)], &p);
            let (rt, at) = tol(dt);
            check_arr(name, &y, &[2, m, n], dt, &want, rt * 10.0, at * 10.0);
        }
    }
    err_names(
        name,
        ferrograd::call(name, &[f64s(&[1.0; 4], &[2, 2]), f64s(&[1.0; 6], &[3, 2]), f64s(&[1.0; 4], &[2, 2])], &[]),
    );
    err_names(
        name,
        ferrograd::call(name, &[f64s(&[1.0; 4], &[2, 2]), f64s(&[1.0; 4], &[2, 2]), f64s(&[1.0; 6], &[2, 3])], &[]),
    );
}

fn syrk_forward(name: &str) {
    let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    // MXNet 1.9.1: syrk([[1,2,3],[4,5,6]], alpha=2) = [[28, 64], [64, 154]].
    check_arr(
        name,
        &call1(name, &[f64s(&a, &[2, 3])], &[("alpha", float(2.0))]),
        &[2, 2],
        F64,
        &[28.0, 64.0, 64.0, 154.0],
        0.0,
        0.0,
    );
    let y = call1(name, &[f64s(&a, &[1, 2, 3])], &[("transpose", boolean(true))]);
    check_arr(name, &y, &[1, 3, 3], F64, &mm(&tr(&a, 2, 3), &a, 3, 2, 3), 0.0, 0.0);
}

/// trmm/trsm for every (transpose, rightside, lower), against the dense triangular matrix.
fn triangular_forward(name: &str) {
    let solve = name == "_linalg_trsm";
    let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0];
    if !solve {
        // MXNet 1.9.1's values for trmm(A, ones(3, 2)).
        let ones = f64s(&[1.0; 6], &[3, 2]);
        for (p, want) in [
            (vec![], [1.0, 1.0, 9.0, 9.0, 25.0, 25.0]),
            (vec![("lower", boolean(false))], [6.0, 6.0, 11.0, 11.0, 10.0, 10.0]),
            (vec![("lower", boolean(false)), ("transpose", boolean(true))], [1.0, 1.0, 7.0, 7.0, 19.0, 19.0]),
        ] {
            check_arr(name, &call1(name, &[f64s(&a, &[3, 3]), ones.clone()], &p), &[3, 2], F64, &want, 0.0, 0.0);
        }
    }
    let mut rng = Rng::new(2);
    let n = 3;
    let av = conditioned(&mut rng, 2, n, 3.0);
    for mask in 0..8 {
        let (t, right, lower) = (mask & 1 != 0, mask & 2 != 0, mask & 4 != 0);
        let (r, c) = if right { (2, n) } else { (n, 2) };
        let bv = rng.vec(2 * r * c, -1.0, 1.0);
        let p = [
            ("transpose", boolean(t)),
            ("rightside", boolean(right)),
            ("lower", boolean(lower)),
            ("alpha", float(1.5)),
        ];
        for dt in [F64, F32] {
            let y = call1(name, &[arr(&av, &[2, n, n], dt), arr(&bv, &[2, r, c], dt)], &p);
            assert_eq!(y.shape(), &[2, r, c]);
            let yv = y.to_f64_vec();
            for k in 0..2 {
                let tk = tri(&av[k * n * n..(k + 1) * n * n], n, lower);
                let tk = if t { tr(&tk, n, n) } else { tk };
                let (bk, yk) = (&bv[k * r * c..(k + 1) * r * c], &yv[k * r * c..(k + 1) * r * c]);
                // trmm: Y = 1.5·T·B (or B·T); trsm: T·Y (or Y·T) = 1.5·B.
                let (lhs, rhs): (Vec<f64>, Vec<f64>) = match (solve, right) {
                    (false, false) => (yk.to_vec(), mm(&tk, bk, n, n, c).iter().map(|v| 1.5 * v).collect()),
                    (false, true) => (yk.to_vec(), mm(bk, &tk, r, n, n).iter().map(|v| 1.5 * v).collect()),
                    (true, false) => (mm(&tk, yk, n, n, c), bk.iter().map(|v| 1.5 * v).collect()),
                    (true, true) => (mm(yk, &tk, r, n, n), bk.iter().map(|v| 1.5 * v).collect()),
                };
                let at = if dt == F64 { 1e-12 } else { 1e-5 };
                assert_close(&format!("{name} t={t} right={right} lower={lower} {dt}"), &lhs, &rhs, at, at);
            }
        }
    }
    err_names(name, ferrograd::call(name, &[f64s(&[1.0; 4], &[2, 2]), f64s(&[1.0; 6], &[3, 2])], &[]));
    if solve {
        err_names(name, ferrograd::call(name, &[f64s(&[0.0, 0.0, 1.0, 1.0], &[2, 2]), f64s(&[1.0; 4], &[2, 2])], &[]));
    }
}

fn diagonal_forward(name: &str) {
    let a3 = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0];
    let a4: Vec<f64> = (1..=16).map(f64::from).collect();
    let v6 = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let off = |o: i64| ("offset", int(o));
    let lower = |l: bool| ("lower", boolean(l));
    // MXNet 1.9.1's values.
    match name {
        "_linalg_extractdiag" => {
            check_arr(name, &call1(name, &[f64s(&a3, &[3, 3])], &[off(1)]), &[2], F64, &[2.0, 6.0], 0.0, 0.0);
            check_arr(
                name,
                &call1(name, &[f64s(&a4[..8], &[2, 2, 2])], &[]),
                &[2, 2],
                F64,
                &[1.0, 4.0, 5.0, 8.0],
                0.0,
                0.0,
            );
            err_names(name, ferrograd::call(name, &[f64s(&[1.0; 4], &[2, 2])], &[off(3)]));
            // Just past the edge: an empty diagonal (MXNet raises; the gradient of makediag needs it).
            assert_eq!(call1(name, &[f64s(&[1.0; 4], &[2, 2])], &[off(2)]).shape(), &[0]);
            err_names(name, ferrograd::call(name, &[f64s(&[1.0; 6], &[2, 3])], &[]));
        }
        "_linalg_makediag" => {
            let y = call1(name, &[f64s(&[1.0, 2.0], &[2])], &[off(-1)]);
            check_arr(name, &y, &[3, 3], F64, &[0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 2.0, 0.0], 0.0, 0.0);
            let y = call1(name, &[f64s(&[1.0, 2.0, 3.0, 4.0], &[2, 2])], &[off(1)]);
            assert_eq!(y.shape(), &[2, 3, 3]);
            assert_eq!(y.to_f64_vec()[9 + 5], 4.0);
        }
        "_linalg_extracttrian" => {
            let x3 = f64s(&a3, &[3, 3]);
            check_arr(
                name,
                &call1(name, std::slice::from_ref(&x3), &[]),
                &[6],
                F64,
                &[1.0, 4.0, 5.0, 7.0, 8.0, 10.0],
                0.0,
                0.0,
            );
            check_arr(
                name,
                &call1(name, &[x3], &[lower(false)]),
                &[6],
                F64,
                &[1.0, 2.0, 5.0, 3.0, 6.0, 10.0],
                0.0,
                0.0,
            );
            let x4 = f64s(&a4, &[4, 4]);
            check_arr(
                name,
                &call1(name, std::slice::from_ref(&x4), &[off(1)]),
                &[6],
                F64,
                &[2.0, 3.0, 7.0, 4.0, 8.0, 12.0],
                0.0,
                0.0,
            );
            check_arr(name, &call1(name, &[x4], &[off(-1)]), &[6], F64, &[5.0, 9.0, 10.0, 13.0, 14.0, 15.0], 0.0, 0.0);
            err_names(name, ferrograd::call(name, &[f64s(&[1.0; 4], &[2, 2])], &[off(-3)]));
        }
        "_linalg_maketrian" => {
            let v = f64s(&v6, &[6]);
            let lo = [1.0, 0.0, 0.0, 2.0, 3.0, 0.0, 4.0, 5.0, 6.0];
            check_arr(name, &call1(name, std::slice::from_ref(&v), &[]), &[3, 3], F64, &lo, 0.0, 0.0);
            check_arr(
                name,
                &call1(name, std::slice::from_ref(&v), &[lower(false)]),
                &[3, 3],
                F64,
                &tr(&lo, 3, 3),
                0.0,
                0.0,
            );
            let mut up = vec![0.0; 16];
            for (p, x) in [(1, 1.0), (2, 2.0), (6, 3.0), (3, 4.0), (7, 5.0), (11, 6.0)] {
                up[p] = x;
            }
            check_arr(name, &call1(name, std::slice::from_ref(&v), &[off(1)]), &[4, 4], F64, &up, 0.0, 0.0);
            check_arr(name, &call1(name, &[v], &[off(-1)]), &[4, 4], F64, &tr(&up, 4, 4), 0.0, 0.0);
            err_names(name, ferrograd::call(name, &[f64s(&[1.0; 4], &[4])], &[]));
        }
        _ => {
            // sumlogdiag: log(1·5·10), one value per matrix, shape (1,) for a single one.
            check_arr(name, &call1(name, &[f64s(&a3, &[3, 3])], &[]), &[1], F64, &[50f64.ln()], 1e-15, 0.0);
            let y = call1(name, &[arr(&[a3, a3].concat(), &[2, 3, 3], F32)], &[]);
            check_arr(name, &y, &[2], F32, &[50f64.ln(); 2], 1e-6, 0.0);
        }
    }
}

fn factor_forward(name: &str) {
    let mut rng = Rng::new(3);
    let n = 4;
    match name {
        "_linalg_potrf" => {
            let a = spd(&mut rng, 3, n);
            for dt in [F64, F32] {
                let l = call1(name, &[arr(&a, &[3, n, n], dt)], &[]).to_f64_vec();
                for k in 0..3 {
                    let lk = &l[k * 16..(k + 1) * 16];
                    assert_eq!(tri(lk, n, true), lk, "L is lower triangular");
                    let at = if dt == F64 { 1e-12 } else { 1e-5 };
                    assert_close("L·Lᵀ = A", &mm(lk, &tr(lk, n, n), n, n, n), &a[k * 16..(k + 1) * 16], at, at);
                }
            }
            // Only the lower triangle is read (as LAPACK's): this is positive definite there.
            let y = call1(name, &[f64s(&[4.0, 100.0, 2.0, 5.0], &[2, 2])], &[]);
            check_arr(name, &y, &[2, 2], F64, &[2.0, 0.0, 1.0, 2.0], 1e-15, 0.0);
            err_names(name, ferrograd::call(name, &[f64s(&[1.0, 2.0, 2.0, 1.0], &[2, 2])], &[]));
        }
        "_linalg_potri" => {
            // MXNet 1.9.1: potri reads the lower triangle of [[1,2,3],[4,5,6],[7,8,10]].
            let y = call1(name, &[f64s(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0], &[3, 3])], &[]);
            let want = [1.6436, -0.1504, -0.006, -0.1504, 0.0656, -0.016, -0.006, -0.016, 0.01];
            check_arr(name, &y, &[3, 3], F64, &want, 1e-12, 1e-15);
            err_names(name, ferrograd::call(name, &[f64s(&[0.0, 0.0, 1.0, 1.0], &[2, 2])], &[]));
        }
        "_linalg_inverse" => {
            let a = conditioned(&mut rng, 2, n, 2.0);
            for dt in [F64, F32] {
                let y = call1(name, &[arr(&a, &[2, n, n], dt)], &[]).to_f64_vec();
                let eye: Vec<f64> = (0..16).map(|x| f64::from(u8::from(x % 5 == 0))).collect();
                let at = if dt == F64 { 1e-12 } else { 1e-5 };
                for k in 0..2 {
                    assert_close("A·A⁻¹ = I", &mm(&a[k * 16..], &y[k * 16..(k + 1) * 16], n, n, n), &eye, at, at);
                }
            }
            err_names(name, ferrograd::call(name, &[f64s(&[1.0, 2.0, 2.0, 4.0], &[2, 2])], &[]));
            err_names(name, ferrograd::call(name, &[f64s(&[1.0; 6], &[2, 3])], &[]));
        }
        "_linalg_det" | "_linalg_slogdet" => {
            let x = f64s(&[1.0, 2.0, 3.0, 4.0, 1.0, 2.0, 2.0, 4.0, 0.0, 1.0, 1.0, 0.0], &[3, 2, 2]);
            let outs = ferrograd::call(name, &[x], &[]).unwrap();
            if name == "_linalg_det" {
                check_arr(name, &outs[0], &[3], F64, &[-2.0, 0.0, -1.0], 1e-15, 0.0);
            } else {
                check_arr(name, &outs[0], &[3], F64, &[-1.0, 0.0, -1.0], 0.0, 0.0);
                check_arr(name, &outs[1], &[3], F64, &[2f64.ln(), f64::NEG_INFINITY, 0.0], 1e-15, 0.0);
            }
            // A 3x3 against its cofactor expansion.
            let a = conditioned(&mut rng, 1, 3, 0.5);
            let det3 = a[0] * (a[4] * a[8] - a[5] * a[7]) - a[1] * (a[3] * a[8] - a[5] * a[6])
                + a[2] * (a[3] * a[7] - a[4] * a[6]);
            let outs = ferrograd::call(name, &[f64s(&a, &[3, 3])], &[]).unwrap();
            let got = if name == "_linalg_det" {
                outs[0].to_f64_vec()[0]
            } else {
                outs[0].to_f64_vec()[0] * outs[1].to_f64_vec()[0].exp()
            };
            assert!(close(got, det3, 1e-12, 1e-14), "{name}: {got} vs {det3}");
            assert_eq!(outs[0].shape(), &[1]);
        }
        _ => unreachable!("{name}"),
    }
}

pub fn forward(name: &'static str) {
    match name {
        "_linalg_gemm" => gemm_forward(name),
        "_linalg_syrk" => syrk_forward(name),
        "_linalg_trmm" | "_linalg_trsm" => triangular_forward(name),
        "_linalg_extractdiag"
        | "_linalg_makediag"
        | "_linalg_extracttrian"
        | "_linalg_maketrian"
        | "_linalg_sumlogdiag" => diagonal_forward(name),
        "_linalg_syevd" => syevd_forward(name),
        _ => factor_forward(name),
    }
}

/// potrf and syevd read one triangle of a matrix meant to be symmetric, and their gradient is
/// the symmetric one: check it against finite differences along symmetric perturbations.
fn symmetric_grad(name: &str) {
    let mut rng = Rng::new(11);
    let n = 3;
    let a = spd(&mut rng, 2, n);
    let op = build(name, &[]);
    let x = f64s(&a, &[2, n, n]);
    let ys = ferrograd::ops::run(op.as_ref(), &Default::default(), std::slice::from_ref(&x)).unwrap();
    let heads: Vec<NDArray> = ys.iter().map(|y| f64s(&rng.signed(y.size(), 0.5, 2.0), y.shape())).collect();
    let g = ferrograd::ops::grad::eval_grad(op.as_ref(), &[x], &heads).unwrap()[0].clone().unwrap().to_f64_vec();
    let f = |a: &[f64]| -> f64 {
        let ys = ferrograd::call(name, &[f64s(a, &[2, n, n])], &[]).unwrap();
        ys.iter()
            .zip(&heads)
            .map(|(y, h)| y.to_f64_vec().iter().zip(h.to_f64_vec()).map(|(y, v)| y * v).sum::<f64>())
            .sum()
    };
    for k in 0..2 {
        for i in 0..n {
            for j in 0..=i {
                let (p, q) = (k * 9 + i * n + j, k * 9 + j * n + i);
                let bump = |d: f64| {
                    let mut b = a.clone();
                    b[p] += d;
                    if p != q {
                        b[q] += d;
                    }
                    f(&b)
                };
                let fd = (bump(EPS) - bump(-EPS)) / (2.0 * EPS);
                let rule = if p == q { g[p] } else { g[p] + g[q] };
                assert!(close(rule, fd, RTOL, 1e-6), "{name}: d/dA[{k},{i},{j}] (symmetric): rule {rule} vs {fd}");
                assert!((g[p] - g[q]).abs() < 1e-12, "{name}: the gradient is symmetric");
            }
        }
    }
}

fn syevd_forward(name: &str) {
    // MXNet 1.9.1's example: U = [[0.894, -0.447], [0.447, 0.894]], L = [0, 5].
    let outs = ferrograd::call(name, &[f64s(&[1.0, 2.0, 2.0, 4.0], &[2, 2])], &[]).unwrap();
    let (s, t) = (0.894_427_190_999_915_9, 0.447_213_595_499_957_9);
    check_arr(name, &outs[0], &[2, 2], F64, &[s, -t, t, s], 1e-12, 1e-14);
    check_arr(name, &outs[1], &[2], F64, &[0.0, 5.0], 1e-12, 1e-14);
    let mut rng = Rng::new(12);
    let n = 5;
    let a = spd(&mut rng, 3, n);
    for dt in [F64, F32] {
        let outs = ferrograd::call(name, &[arr(&a, &[3, n, n], dt)], &[]).unwrap();
        assert_eq!(outs[1].shape(), &[3, n]);
        let (u, l) = (outs[0].to_f64_vec(), outs[1].to_f64_vec());
        let at = if dt == F64 { 1e-11 } else { 1e-4 };
        for k in 0..3 {
            let uk = &u[k * n * n..(k + 1) * n * n];
            let lk = &l[k * n..(k + 1) * n];
            assert!(lk.windows(2).all(|w| w[0] <= w[1]), "eigenvalues ascend");
            let dl: Vec<f64> = (0..n * n).map(|x| if x % (n + 1) == 0 { lk[x / n] } else { 0.0 }).collect();
            let back = mm(&tr(uk, n, n), &mm(&dl, uk, n, n, n), n, n, n);
            assert_close("Uᵀ·diag(L)·U = A", &back, &a[k * n * n..(k + 1) * n * n], at, at);
            let eye: Vec<f64> = (0..n * n).map(|x| f64::from(u8::from(x % (n + 1) == 0))).collect();
            assert_close("U·Uᵀ = I", &mm(uk, &tr(uk, n, n), n, n, n), &eye, at, at);
            for r in 0..n {
                let row = &uk[r * n..(r + 1) * n];
                let big = row.iter().copied().fold(0.0f64, |b, x| if x.abs() > b.abs() { x } else { b });
                assert!(big > 0.0, "the largest entry of each eigenvector is positive");
            }
        }
    }
    err_names(name, ferrograd::call(name, &[f64s(&[1.0; 6], &[2, 3])], &[]));
}

pub fn grad(name: &'static str) {
    let mut rng = Rng::new(5);
    let mut go = |params: &[(&'static str, ferrograd::ops::AttrValue)], inputs: Vec<NDArray>, second: bool| {
        check(&format!("{name}{params:?}"), &build(name, params), &inputs, &mut rng, second);
    };
    let r = |rng: &mut Rng, shape: &[usize]| f64s(&rng.vec(numel(shape), -1.0, 1.0), shape);
    let mut rs = Rng::new(6);
    match name {
        "_linalg_gemm" => {
            for (ta, tb) in [(false, false), (true, true)] {
                let a = r(&mut rs, &[2, 2, 3]);
                let b = r(&mut rs, &[2, 3, 2]);
                let (a, b) = (if ta { r(&mut rs, &[2, 3, 2]) } else { a }, if tb { r(&mut rs, &[2, 2, 3]) } else { b });
                let c = r(&mut rs, &[2, 2, 2]);
                let p = [
                    ("transpose_a", boolean(ta)),
                    ("transpose_b", boolean(tb)),
                    ("alpha", float(0.7)),
                    ("beta", float(-1.5)),
                ];
                go(&p, vec![a, b, c], true);
            }
        }
        "_linalg_syrk" => {
            go(&[("alpha", float(1.3))], vec![r(&mut rs, &[2, 2, 3])], true);
            go(&[("transpose", boolean(true))], vec![r(&mut rs, &[2, 3])], true);
        }
        "_linalg_trmm" | "_linalg_trsm" => {
            for mask in 0..8 {
                let (t, right, lower) = (mask & 1 != 0, mask & 2 != 0, mask & 4 != 0);
                let a = f64s(&conditioned(&mut rs, 2, 2, 2.5), &[2, 2, 2]);
                let b = r(&mut rs, if right { &[2, 3, 2] } else { &[2, 2, 3] });
                let p = [
                    ("transpose", boolean(t)),
                    ("rightside", boolean(right)),
                    ("lower", boolean(lower)),
                    ("alpha", float(0.8)),
                ];
                go(&p, vec![a, b], mask == 0 || mask == 7);
            }
        }
        "_linalg_extractdiag" | "_linalg_extracttrian" => {
            go(&[("offset", int(-1))], vec![r(&mut rs, &[2, 3, 3])], true);
            go(&[("offset", int(1))], vec![r(&mut rs, &[3, 3])], false);
            if name == "_linalg_extracttrian" {
                go(&[("lower", boolean(false))], vec![r(&mut rs, &[2, 3, 3])], false);
            }
        }
        "_linalg_makediag" => go(&[("offset", int(1))], vec![r(&mut rs, &[2, 2])], true),
        "_linalg_maketrian" => {
            go(&[("offset", int(-1))], vec![r(&mut rs, &[2, 3])], true);
            go(&[("lower", boolean(false))], vec![r(&mut rs, &[6])], false);
        }
        "_linalg_sumlogdiag" => {
            let mut a = rs.vec(18, -1.0, 1.0);
            [0, 4, 8, 9, 13, 17].iter().for_each(|&i| a[i] = 1.0 + a[i].abs());
            go(&[], vec![f64s(&a, &[2, 3, 3])], true);
        }
        "_linalg_potrf" | "_linalg_syevd" => symmetric_grad(name),
        "_linalg_potri" => {
            let mut l = rs.vec(18, -1.0, 1.0);
            [0, 4, 8, 9, 13, 17].iter().for_each(|&i| l[i] = 1.5 + l[i].abs());
            go(&[], vec![f64s(&l, &[2, 3, 3])], true);
        }
        _ => {
            // inverse, det, slogdet
            go(&[], vec![f64s(&conditioned(&mut rs, 2, 3, 2.0), &[2, 3, 3])], true);
            go(&[], vec![f64s(&conditioned(&mut rs, 1, 2, 2.0), &[2, 2])], false);
        }
    }
}
