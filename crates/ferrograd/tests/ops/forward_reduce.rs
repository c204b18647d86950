//! Forward tests of reductions, arg-reductions, `dot` and `batch_dot` against naive f64 loops.

use ferrograd::ops::AttrValue;
use ferrograd::DType::{self, F16, F32, F64, I32};
use ferrograd::Error;

use crate::common::*;

/// Naive reduction of `x` (shape `shape`) over the flagged axes, in f64 (NaN propagates through
/// max/min as in NumPy), converted to `dt` as the op does. Returns (shape, values).
fn reduce_ref(
    kind: &str,
    x: &[f64],
    shape: &[usize],
    flags: &[bool],
    keepdims: bool,
    dt: DType,
) -> (Vec<usize>, Vec<f64>) {
    let mut out_shape: Vec<usize> = Vec::new();
    let mut kept_shape: Vec<usize> = Vec::new();
    for (d, &n) in shape.iter().enumerate() {
        if !flags[d] {
            out_shape.push(n);
            kept_shape.push(n);
        } else if keepdims {
            out_shape.push(1);
        }
    }
    let m = numel(&kept_shape);
    let mut groups: Vec<Vec<f64>> = vec![Vec::new(); m];
    for (i, &v) in x.iter().enumerate() {
        let idx = unravel(i, shape);
        let k: Vec<usize> = idx.iter().zip(flags).filter(|(_, &f)| !f).map(|(&i, _)| i).collect();
        groups[ravel(&k, &kept_shape)].push(v);
    }
    let vals = groups
        .iter()
        .map(|g| {
            let v = match kind {
                "sum" => g.iter().sum(),
                "nansum" => g.iter().filter(|v| !v.is_nan()).sum(),
                "prod" => g.iter().product(),
                "nanprod" => g.iter().filter(|v| !v.is_nan()).product(),
                "mean" => {
                    let m = g.iter().sum::<f64>() / g.len() as f64;
                    if dt.is_float() {
                        m
                    } else {
                        m.trunc()
                    }
                }
                "max" => {
                    g.iter().fold(f64::NEG_INFINITY, |a, &b| if a.is_nan() || b.is_nan() { f64::NAN } else { a.max(b) })
                }
                "min" => {
                    g.iter().fold(f64::INFINITY, |a, &b| if a.is_nan() || b.is_nan() { f64::NAN } else { a.min(b) })
                }
                "norm1" => g.iter().map(|v| v.abs()).sum(),
                "norm2" => g.iter().map(|v| v * v).sum::<f64>().sqrt(),
                other => panic!("no reference for {other}"),
            };
            round_to(v, dt)
        })
        .collect();
    if out_shape.is_empty() && !shape.is_empty() {
        out_shape.push(1); // MXNet's legacy shape for full reductions
    }
    (out_shape, vals)
}

fn reduce_data(rng: &mut Rng, kind: &str, n: usize, dt: DType) -> Vec<f64> {
    if !dt.is_float() {
        let r = if kind.contains("prod") { 2 } else { 5 };
        return (0..n).map(|_| rng.int(-r, r) as f64).collect();
    }
    let mut v = if kind.contains("prod") { rng.signed(n, 0.5, 1.5) } else { rng.vec(n, -3.0, 3.0) };
    if kind.starts_with("nan") {
        for x in v.iter_mut().step_by(5) {
            *x = f64::NAN;
        }
    }
    v
}

/// `sum`, `mean`, `prod`, `max`, `min`, `nansum`, `nanprod` and `norm` (ord 1 and 2): every axis
/// subset of a 3-d array, keepdims and exclude, non-contiguous inputs, empty axes, 0-d inputs.
pub fn reduce(name: &'static str) {
    let variants_of_kind: Vec<(&str, Params)> = if name == "norm" {
        vec![("norm1", vec![("ord", int(1))]), ("norm2", vec![("ord", int(2))])]
    } else {
        vec![(name, vec![])]
    };
    let mut rng = Rng::new(name.len() as u64 + 99);
    let shape = [2usize, 3, 4];
    for (kind, base) in &variants_of_kind {
        for dt in [F32, F64, I32] {
            let x = arr(&reduce_data(&mut rng, kind, numel(&shape), dt), &shape, dt);
            let xv = x.to_f64_vec();
            let (rtol, atol) = if dt == F32 { (1e-5, 1e-5) } else { tol(dt) };
            let mut axes_options: Vec<Option<Vec<i64>>> = subsets(3).into_iter().map(Some).collect();
            axes_options.push(None);
            axes_options.push(Some(vec![-1, 0])); // negative axes
            for axes in axes_options {
                let excludes: &[bool] = if name == "norm" { &[false] } else { &[false, true] };
                for &exclude in excludes {
                    for keepdims in [false, true] {
                        // axis=None and axis=() both reduce everything, whatever `exclude` says.
                        let flags: Vec<bool> = match &axes {
                            None => vec![true; 3],
                            Some(a) if a.is_empty() => vec![true; 3],
                            Some(a) => (0..3).map(|d| a.iter().any(|&b| (b + 3) % 3 == d as i64) != exclude).collect(),
                        };
                        let (want_shape, want) = reduce_ref(kind, &xv, &shape, &flags, keepdims, dt);
                        let mut p = base.clone();
                        if let Some(a) = &axes {
                            p.push(("axis", tuple(a)));
                        }
                        p.push(("keepdims", boolean(keepdims)));
                        if exclude {
                            p.push(("exclude", boolean(true)));
                        }
                        for (vname, xi) in variants(&x) {
                            let y = call1(name, &[xi], &p);
                            let what =
                                format!("{kind} {dt} axis={axes:?} exclude={exclude} keepdims={keepdims} {vname}");
                            check_arr(&what, &y, &want_shape, dt, &want, rtol, atol);
                        }
                    }
                }
            }
        }
        // Empty axes: sum → 0, prod → 1, mean → NaN, norm → 0; max/min over an empty axis fail.
        for (eshape, axis) in
            [(&[0usize, 3][..], Some(0i64)), (&[0, 3], Some(1)), (&[0, 3], None), (&[2, 0, 3], Some(1))]
        {
            let x = arr(&[], eshape, F64);
            let flags: Vec<bool> = (0..eshape.len()).map(|d| axis.is_none_or(|a| a as usize == d)).collect();
            let mut p = base.clone();
            if let Some(a) = axis {
                p.push(("axis", int(a)));
            }
            let empty_group = eshape.iter().zip(&flags).any(|(&n, &f)| f && n == 0);
            let res = ferrograd::call(name, &[x], &p);
            if (name == "max" || name == "min") && empty_group {
                assert!(
                    matches!(res, Err(Error::Value(ref m)) if m.contains(name) && m.contains("zero-size")),
                    "{res:?}"
                );
                continue;
            }
            let (want_shape, want) = reduce_ref(kind, &[], eshape, &flags, false, F64);
            check_arr(
                &format!("{kind} empty {eshape:?} axis={axis:?}"),
                &res.unwrap()[0],
                &want_shape,
                F64,
                &want,
                0.0,
                0.0,
            );
        }
        // A 0-d input reduces to a 0-d result holding the (finished) value.
        let x = arr(&[-2.5], &[], F64);
        let (_, want) = reduce_ref(kind, &[-2.5], &[], &[], false, F64);
        check_arr(&format!("{kind} 0-d"), &call1(name, &[x], base), &[], F64, &want, 0.0, 0.0);
    }
}

/// NaN propagation and the legacy `(1,)` shape of full reductions.
#[test]
fn reduce_nan_and_legacy_shape() {
    let x = f64s(&[1.0, f64::NAN, 3.0], &[3]);
    for name in ["sum", "prod", "max", "min", "mean", "norm"] {
        let y = call1(name, std::slice::from_ref(&x), &[]);
        assert_eq!(y.shape(), &[1], "{name}");
        assert!(y.to_f64_vec()[0].is_nan(), "{name} must propagate NaN");
    }
    assert_eq!(call1("nansum", std::slice::from_ref(&x), &[]).to_f64_vec(), vec![4.0]);
    assert_eq!(call1("nanprod", &[x], &[]).to_f64_vec(), vec![3.0]);
    // Booleans reduce as int64.
    let b = arr(&[1.0, 0.0, 1.0, 1.0], &[4], DType::Bool);
    let y = call1("sum", &[b], &[]);
    check_arr("bool sum", &y, &[1], DType::I64, &[3.0], 0.0, 0.0);
}

/// `argmax` / `argmin`: first occurrence wins, indices in the data's dtype, axis None flattens.
pub fn arg_reduce(name: &'static str) {
    let want_max = name == "argmax";
    let mut rng = Rng::new(17);
    let shape = [3usize, 4, 5];
    for dt in [F32, F64, I32] {
        // Few distinct values: many ties, so "first occurrence" is exercised.
        let x = arr(&(0..60).map(|_| rng.int(0, 3) as f64).collect::<Vec<_>>(), &shape, dt);
        let xv = x.to_f64_vec();
        let better = |a: f64, b: f64| if want_max { a > b } else { a < b };
        for axis in [None, Some(0i64), Some(1), Some(2), Some(-1)] {
            for keepdims in [false, true] {
                let (want_shape, want): (Vec<usize>, Vec<f64>) = match axis {
                    None => {
                        let mut best = 0;
                        for (i, &v) in xv.iter().enumerate() {
                            if better(v, xv[best]) {
                                best = i;
                            }
                        }
                        (if keepdims { vec![1, 1, 1] } else { vec![1] }, vec![best as f64])
                    }
                    Some(a) => {
                        let d = ((a + 3) % 3) as usize;
                        let mut os = shape.to_vec();
                        os[d] = 1;
                        let vals = (0..numel(&os))
                            .map(|o| {
                                let mut idx = unravel(o, &os);
                                let mut best = 0;
                                for j in 0..shape[d] {
                                    idx[d] = j;
                                    let v = xv[ravel(&idx, &shape)];
                                    idx[d] = best;
                                    if better(v, xv[ravel(&idx, &shape)]) {
                                        best = j;
                                    }
                                }
                                best as f64
                            })
                            .collect();
                        if !keepdims {
                            os.remove(d);
                        }
                        (os, vals)
                    }
                };
                let mut p: Params = vec![("keepdims", boolean(keepdims))];
                if let Some(a) = axis {
                    p.push(("axis", int(a)));
                }
                for (vname, xi) in variants(&x) {
                    let y = call1(name, &[xi], &p);
                    check_arr(
                        &format!("{name} {dt} axis={axis:?} keepdims={keepdims} {vname}"),
                        &y,
                        &want_shape,
                        dt,
                        &want,
                        0.0,
                        0.0,
                    );
                }
            }
        }
    }
    let e = ferrograd::call(name, &[arr(&[], &[0, 3], F32)], &[("axis", int(0))]);
    assert!(matches!(e, Err(Error::Value(_))), "{name} over an empty axis: {e:?}");
}

/// Naive `dot` with MXNet's flattening: lhs → (prod(shape[..-1]), shape[-1]) (or, transposed,
/// (shape[0], prod(shape[1..]))ᵀ), rhs → (shape[0], prod(shape[1..])) (or (prod(shape[..-1]),
/// shape[-1])ᵀ).
pub fn dot_ref(a: &[f64], sa: &[usize], b: &[f64], sb: &[usize], ta: bool, tb: bool) -> (Vec<usize>, Vec<f64>) {
    let (na, nb) = (sa.len(), sb.len());
    let (rows, k, a_keep) =
        if ta { (numel(&sa[1..]), sa[0], &sa[1..]) } else { (numel(&sa[..na - 1]), sa[na - 1], &sa[..na - 1]) };
    let (kb, cols, b_keep) =
        if tb { (sb[nb - 1], numel(&sb[..nb - 1]), &sb[..nb - 1]) } else { (sb[0], numel(&sb[1..]), &sb[1..]) };
    assert_eq!(k, kb);
    let at = |i: usize, p: usize| if ta { a[p * rows + i] } else { a[i * k + p] };
    let bt = |p: usize, j: usize| if tb { b[j * k + p] } else { b[p * cols + j] };
    let mut out = vec![0.0; rows * cols];
    for i in 0..rows {
        for j in 0..cols {
            out[i * cols + j] = (0..k).map(|p| at(i, p) * bt(p, j)).sum();
        }
    }
    let mut shape: Vec<usize> = a_keep.iter().chain(b_keep).copied().collect();
    if shape.is_empty() {
        shape.push(1);
    }
    (shape, out)
}

fn dot_tol(dt: DType) -> (f64, f64) {
    match dt {
        F16 => (4e-3, 4e-3),
        F32 => (1e-5, 1e-5),
        _ => tol(dt),
    }
}

fn dot_case(name: &str, sa: &[usize], sb: &[usize], ta: bool, tb: bool, dt: DType, rng: &mut Rng) {
    let a = arr(
        &rng.vec(numel(sa), -1.0, 1.0)
            .iter()
            .map(|v| if dt.is_float() { *v } else { (v * 4.0).round() })
            .collect::<Vec<_>>(),
        sa,
        dt,
    );
    let b = arr(
        &rng.vec(numel(sb), -1.0, 1.0)
            .iter()
            .map(|v| if dt.is_float() { *v } else { (v * 4.0).round() })
            .collect::<Vec<_>>(),
        sb,
        dt,
    );
    let batch = name == "batch_dot";
    let (av, bv) = (a.to_f64_vec(), b.to_f64_vec());
    let (want_shape, want) = if batch {
        let nb = sa[0];
        let (sa1, sb1) = (&sa[1..], &sb[1..]);
        let (pa, pb) = (numel(sa1), numel(sb1));
        let mut out = Vec::new();
        let mut inner = vec![];
        for i in 0..nb {
            let (s, v) = dot_ref(&av[i * pa..(i + 1) * pa], sa1, &bv[i * pb..(i + 1) * pb], sb1, ta, tb);
            inner = s;
            out.extend(v);
        }
        if nb == 0 {
            let m = if ta { sa[2] } else { sa[1] };
            let n = if tb { sb[1] } else { sb[2] };
            inner = vec![m, n];
        }
        (std::iter::once(nb).chain(inner).collect(), out)
    } else {
        dot_ref(&av, sa, &bv, sb, ta, tb)
    };
    let p: Params = vec![("transpose_a", boolean(ta)), ("transpose_b", boolean(tb))];
    let (rtol, atol) = dot_tol(dt);
    for (na, ai) in variants(&a) {
        for (nb, bi) in variants(&b) {
            let y = call1(name, &[ai.clone(), bi], &p);
            let what = format!("{name} {dt} {sa:?}x{sb:?} ta={ta} tb={tb} {na}/{nb}");
            check_arr(&what, &y, &want_shape, dt, &want, rtol, atol);
        }
    }
}

/// `dot`: every transpose flag on 2-d, 1-d and N-d operands, zero-size m/k/n, all dtypes.
pub fn dot(name: &'static str) {
    let mut rng = Rng::new(5);
    let cases: &[(&[usize], usize, &[usize])] = &[
        (&[3], 4, &[5]),
        (&[0], 4, &[5]),
        (&[3], 0, &[5]),
        (&[3], 4, &[0]),
        (&[], 4, &[]),
        (&[], 4, &[5]),
        (&[3], 4, &[]),
        (&[2, 3], 4, &[5]),
        (&[2, 3], 4, &[2, 5]),
        (&[3], 4, &[2, 5]),
        (&[1], 1, &[1]),
    ];
    for &(lead_a, k, lead_b) in cases {
        for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
            let sa: Vec<usize> = if ta { [&[k][..], lead_a].concat() } else { [lead_a, &[k]].concat() };
            let sb: Vec<usize> = if tb { [lead_b, &[k]].concat() } else { [&[k][..], lead_b].concat() };
            for dt in [F32, F64, I32, F16] {
                dot_case(name, &sa, &sb, ta, tb, dt, &mut rng);
            }
        }
    }
    // A larger product goes through the blocked GEMM path.
    dot_case(name, &[37, 70], &[41, 70], false, true, F64, &mut rng);
}

/// `batch_dot`: (B, M, K)·(B, K, N) with every transpose flag, including B = 0 and K = 0.
pub fn batch_dot(name: &'static str) {
    let mut rng = Rng::new(6);
    for (bsz, m, k, n) in [(2usize, 3usize, 4usize, 5usize), (0, 3, 4, 5), (2, 3, 0, 5), (2, 0, 4, 5), (1, 1, 1, 1)] {
        for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
            let sa = if ta { [bsz, k, m] } else { [bsz, m, k] };
            let sb = if tb { [bsz, n, k] } else { [bsz, k, n] };
            for dt in [F32, F64, I32, F16] {
                dot_case(name, &sa, &sb, ta, tb, dt, &mut rng);
            }
        }
    }
}

/// Parameters are accepted as MXNet strings too (`transpose_a='True'`).
#[test]
fn dot_string_params() {
    let a = f64s(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let y = call1("dot", &[a.clone(), a.clone()], &[("transpose_a", AttrValue::Str("True".into()))]);
    // aᵀ·a = [[1,3],[2,4]]·[[1,2],[3,4]]
    assert_eq!(y.to_f64_vec(), vec![10.0, 14.0, 14.0, 20.0]);
    let e = ferrograd::call("dot", &[a.clone(), a.astype(F32)], &[]);
    assert!(
        matches!(e, Err(Error::DType(ref m)) if m.contains("dot") && m.contains("float64") && m.contains("float32"))
    );
}
