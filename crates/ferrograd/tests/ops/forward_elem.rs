//! Forward tests of the elementwise families (unary, binary, scalar) against f64 references.

use ferrograd::ops::binary::BinaryKind;
use ferrograd::ops::unary::UnaryKind;
use ferrograd::DType::{self, F16, F32, F64, I32};

use crate::common::*;

/// Sample range of a unary op's forward test (inside its domain; rounding ops get half-integers
/// through the special values).
fn unary_range(name: &str) -> (f64, f64) {
    match name {
        "sqrt" | "rsqrt" | "log" | "log2" | "log10" => (0.05, 5.0),
        "log1p" => (-0.9, 5.0),
        "arcsin" | "arccos" | "arctanh" => (-0.99, 0.99),
        "arccosh" => (1.0, 5.0),
        "negative"
        | "abs"
        | "sign"
        | "square"
        | "cbrt"
        | "reciprocal"
        | "_reciprocal_nonzero"
        | "exp"
        | "expm1"
        | "sin"
        | "cos"
        | "tan"
        | "arctan"
        | "sinh"
        | "cosh"
        | "tanh"
        | "arcsinh"
        | "sigmoid"
        | "relu"
        | "softsign"
        | "floor"
        | "ceil"
        | "round"
        | "rint"
        | "fix"
        | "trunc"
        | "degrees"
        | "radians"
        | "logical_not" => (-4.0, 4.0),
        other => panic!("unary op {other} has no forward sample range in the test table"),
    }
}

const SHAPES: &[&[usize]] = &[&[], &[0], &[7], &[2, 3], &[3, 0, 2], &[3, 4, 5]];

/// Edge values every unary op must handle without panicking, checked against the f64 definition.
const SPECIALS: &[f64] = &[
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    -0.5,
    1.5,
    2.5,
    -2.5,
    3.5,
    1e-8,
    -1e-8,
    100.0,
    -100.0,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
];

pub fn unary(name: &'static str) {
    let kind = UnaryKind::from_name(name).unwrap();
    let (lo, hi) = unary_range(name);
    let mut rng = Rng::new(name.len() as u64 * 7919 + 1);
    for &shape in SHAPES {
        for dt in [F32, F64, F16] {
            let x = arr(&rng.vec(numel(shape), lo, hi), shape, dt);
            let want: Vec<f64> = x.to_f64_vec().iter().map(|&v| round_to(kind.eval_f64(v), dt)).collect();
            let (rtol, atol) = tol(dt);
            for (vname, xi) in variants(&x) {
                let y = call1(name, &[xi], &[]);
                check_arr(&format!("{name} {dt} {shape:?} {vname}"), &y, shape, dt, &want, rtol, atol);
            }
        }
        // Integers compute in f64 and cast back (MXNet's legacy rule): never a panic, NaN → 0.
        let data: Vec<f64> = (0..numel(shape)).map(|_| rng.int(-5, 5) as f64).collect();
        let x = arr(&data, shape, I32);
        let want: Vec<f64> = data.iter().map(|&v| round_to(kind.eval_f64(v), I32)).collect();
        for (vname, xi) in variants(&x) {
            let y = call1(name, &[xi], &[]);
            check_arr(&format!("{name} int32 {shape:?} {vname}"), &y, shape, I32, &want, 0.0, 0.0);
        }
    }
    for dt in [F32, F64] {
        let x = arr(SPECIALS, &[SPECIALS.len()], dt);
        let want: Vec<f64> = x.to_f64_vec().iter().map(|&v| round_to(kind.eval_f64(v), dt)).collect();
        let y = call1(name, &[x], &[]);
        // Vectorised f32 kernels may flush results below f32's normal range to zero.
        check_arr(&format!("{name} {dt} special values"), &y, &[SPECIALS.len()], dt, &want, tol(dt).0, 1e-37);
    }
}

/// (kind, broadcasting) of a binary op name.
pub fn binary_kind(name: &str) -> (BinaryKind, bool) {
    for &k in BinaryKind::ALL {
        let (b, e, _, _) = k.names();
        if name == b {
            return (k, true);
        }
        if name == e {
            return (k, false);
        }
    }
    panic!("{name} is not a binary op")
}

/// (kind, reversed) of a scalar op name; reversed comparisons are the mirrored comparison.
pub fn scalar_kind(name: &str) -> (BinaryKind, bool) {
    if let Some(&k) = BinaryKind::ALL.iter().find(|k| k.names().2 == name) {
        return (k, false);
    }
    if let Some(&k) = BinaryKind::ALL.iter().find(|k| k.names().3 == name) {
        return (k, true);
    }
    panic!("{name} is not a scalar op")
}

/// Hand-written integer semantics: truncating division, floor division and Python modulo, with
/// division or modulo by zero giving 0; everything else as the f64 result cast back.
fn int_ref(kind: BinaryKind, a: f64, b: f64, dt: DType) -> f64 {
    match kind {
        BinaryKind::Div if b == 0.0 => 0.0,
        BinaryKind::Div => (a / b).trunc(),
        BinaryKind::FloorDiv if b == 0.0 => 0.0,
        BinaryKind::FloorDiv => (a / b).floor(),
        BinaryKind::Mod if b == 0.0 => 0.0,
        BinaryKind::Mod => a - b * (a / b).floor(),
        k => round_to(k.eval_f64(a, b), dt),
    }
}

fn elem_ref(kind: BinaryKind, a: f64, b: f64, dt: DType) -> f64 {
    if dt.is_float() {
        round_to(kind.eval_f64(a, b), dt)
    } else {
        int_ref(kind, a, b, dt)
    }
}

/// Sample values for one operand of `kind`.
fn operand(rng: &mut Rng, kind: BinaryKind, lhs: bool, n: usize, dt: DType) -> Vec<f64> {
    use BinaryKind::*;
    if !dt.is_float() {
        let (lo, hi) = if kind == Pow && !lhs { (0, 3) } else { (-4, 4) };
        return (0..n).map(|_| rng.int(lo, hi) as f64).collect();
    }
    match (kind, lhs) {
        (Pow, true) => rng.vec(n, 0.1, 3.0),
        (Pow, false) => rng.vec(n, -2.0, 2.0),
        (Div | Mod | FloorDiv, false) => rng.signed(n, 0.25, 3.0),
        // Small integers make equalities and logical zeros frequent.
        (Eq | Ne | Ge | Le | Gt | Lt | And | Or | Xor | Maximum | Minimum, _) => {
            (0..n).map(|_| rng.int(-2, 2) as f64).collect()
        }
        _ => rng.vec(n, -3.0, 3.0),
    }
}

const BCAST_PAIRS: &[(&[usize], &[usize])] = &[
    (&[2, 3], &[3]),
    (&[3], &[2, 3]),
    (&[2, 1, 3], &[4, 1]),
    (&[0, 1, 3], &[0, 10, 3]),
    (&[], &[2, 2]),
    (&[3], &[]),
    (&[4, 5], &[4, 5]),
    (&[1], &[3, 1]),
    (&[0], &[1]),
    (&[3, 4], &[3, 4]),
];
const EQUAL_PAIRS: &[(&[usize], &[usize])] =
    &[(&[2, 3], &[2, 3]), (&[0, 4], &[0, 4]), (&[], &[]), (&[5], &[5]), (&[3, 4], &[3, 4])];

pub fn binary(name: &'static str) {
    let (kind, bcast) = binary_kind(name);
    let mut rng = Rng::new(name.len() as u64 * 31 + 7);
    let pairs = if bcast { BCAST_PAIRS } else { EQUAL_PAIRS };
    // (lhs dtype, rhs dtype): same types and promotions (int with float gives the float).
    let dtypes = [(F32, F32), (F64, F64), (I32, I32), (I32, F32), (F32, F64), (F16, F16)];
    for &(sa, sb) in pairs {
        let out_shape: Vec<usize> = ferrograd::ndarray::view::broadcast_pair(name, sa, sb).unwrap().to_vec();
        for (da, db) in dtypes {
            let dt = DType::promote(da, db);
            let a = arr(&operand(&mut rng, kind, true, numel(sa), da), sa, da);
            let b = arr(&operand(&mut rng, kind, false, numel(sb), db), sb, db);
            let (av, bv) = (a.to_f64_vec(), b.to_f64_vec());
            let want: Vec<f64> = (0..numel(&out_shape))
                .map(|i| {
                    let idx = unravel(i, &out_shape);
                    elem_ref(kind, av[bcast_src(&idx, sa)], bv[bcast_src(&idx, sb)], dt)
                })
                .collect();
            let (rtol, atol) = tol(dt);
            for (na, ai) in variants(&a) {
                for (nb, bi) in variants(&b) {
                    let y = call1(name, &[ai.clone(), bi], &[]);
                    let what = format!("{name} {da}{sa:?} {na} x {db}{sb:?} {nb}");
                    check_arr(&what, &y, &out_shape, dt, &want, rtol, atol);
                }
            }
        }
    }
    // Integer division and modulo by zero give 0, never a panic; floats follow IEEE.
    let a = arr(&[7.0, -7.0, 0.0, 5.0], &[4], I32);
    let z = arr(&[0.0; 4], &[4], I32);
    let y = call1(name, &[a.clone(), z.clone()], &[]);
    let want: Vec<f64> = a.to_f64_vec().iter().map(|&v| int_ref(kind, v, 0.0, I32)).collect();
    check_arr(&format!("{name} int32 by zero"), &y, &[4], I32, &want, 0.0, 0.0);
}

const SCALARS: &[f64] = &[2.5, -1.5, 0.0, 3.0, 0.1];

pub fn scalar(name: &'static str) {
    let (kind, rev) = scalar_kind(name);
    let mut rng = Rng::new(name.len() as u64 * 131 + 3);
    for &s in SCALARS {
        for &shape in SHAPES {
            for dt in [F32, F64, I32] {
                let data = if dt.is_float() {
                    if kind == BinaryKind::Pow && !rev {
                        rng.vec(numel(shape), 0.1, 3.0)
                    } else {
                        // Include the scalar itself so equality tests hit both outcomes.
                        (0..numel(shape)).map(|i| if i % 3 == 0 { s } else { rng.uniform(-3.0, 3.0) }).collect()
                    }
                } else {
                    (0..numel(shape)).map(|_| rng.int(-4, 4) as f64).collect()
                };
                let x = arr(&data, shape, dt);
                // The scalar is converted to the array's dtype first (MXNet: `DType(scalar)`).
                let c = round_to(s, dt);
                let want: Vec<f64> = x
                    .to_f64_vec()
                    .iter()
                    .map(|&v| if rev { elem_ref(kind, c, v, dt) } else { elem_ref(kind, v, c, dt) })
                    .collect();
                let (rtol, atol) = tol(dt);
                for (vname, xi) in variants(&x) {
                    let y = call1(name, &[xi], &[("scalar", float(s))]);
                    check_arr(&format!("{name} scalar={s} {dt} {shape:?} {vname}"), &y, shape, dt, &want, rtol, atol);
                }
            }
        }
    }
}

/// The f64 definitions themselves, pinned by hand-derived values.
#[test]
fn f64_definitions_match_hand_values() {
    use BinaryKind::*;
    let cases: &[(BinaryKind, f64, f64, f64)] = &[
        (Mod, 7.0, 3.0, 1.0),
        (Mod, -7.0, 3.0, 2.0),
        (Mod, 7.0, -3.0, -2.0),
        (Mod, 5.5, 0.0, 0.0),
        (Mod, 5.5, 2.0, 1.5),
        (FloorDiv, -7.0, 2.0, -4.0),
        (FloorDiv, 7.0, 2.0, 3.0),
        (Pow, 2.0, -1.0, 0.5),
        (Hypot, 3.0, 4.0, 5.0),
        (Xor, 2.0, 0.0, 1.0),
        (Xor, 2.0, -1.0, 0.0),
        (And, 0.5, -1.0, 1.0),
    ];
    for &(k, a, b, want) in cases {
        assert_eq!(k.eval_f64(a, b), want, "{k:?}({a}, {b})");
    }
    assert!(Maximum.eval_f64(f64::NAN, 1.0).is_nan() && Maximum.eval_f64(1.0, f64::NAN).is_nan());
    assert!(Minimum.eval_f64(f64::NAN, 1.0).is_nan() && Minimum.eval_f64(1.0, f64::NAN).is_nan());
    use UnaryKind as U;
    let unary: &[(UnaryKind, f64, f64)] = &[
        // MXNet's rint sends halves down.
        (U::Rint, 2.5, 2.0),
        (U::Rint, 3.5, 3.0),
        (U::Rint, -2.5, -3.0),
        (U::Rint, 2.6, 3.0),
        (U::Round, 2.5, 3.0),
        (U::Round, -2.5, -3.0),
        (U::Fix, -2.7, -2.0),
        (U::Sign, -3.0, -1.0),
        (U::Sign, 0.0, 0.0),
        (U::Relu, -1.0, 0.0),
        (U::Softsign, 1.0, 0.5),
        (U::Degrees, std::f64::consts::PI, 180.0),
        (U::LogicalNot, 0.0, 1.0),
        (U::LogicalNot, -2.0, 0.0),
        (U::RecipNonzero, 0.0, 0.0),
        (U::RecipNonzero, 4.0, 0.25),
    ];
    for &(k, x, want) in unary {
        assert_eq!(k.eval_f64(x), want, "{k:?}({x})");
    }
    assert!(U::Relu.eval_f64(f64::NAN).is_nan());
}

/// `x == 0.1` on float32 compares at float32 (the scalar is converted to the array's dtype), and
/// integer arrays see the scalar truncated (`int32 [2] == 2.5` is true, as in MXNet).
#[test]
fn scalar_is_converted_to_array_dtype() {
    let x = arr(&[0.1, 0.2, 0.3], &[3], F32);
    let y = call1("_equal_scalar", std::slice::from_ref(&x), &[("scalar", float(0.1))]);
    assert_eq!(y.to_f64_vec(), vec![1.0, 0.0, 0.0]);
    let y = call1("_greater_scalar", std::slice::from_ref(&x), &[("scalar", float(0.1))]);
    assert_eq!(y.to_f64_vec(), vec![0.0, 1.0, 1.0]);
    let y = call1("_lesser_equal_scalar", &[x], &[("scalar", float(0.3))]);
    assert_eq!(y.to_f64_vec(), vec![1.0, 1.0, 1.0]);
    let xi = arr(&[2.0, 3.0, 7.0], &[3], I32);
    assert_eq!(
        call1("_equal_scalar", std::slice::from_ref(&xi), &[("scalar", float(2.5))]).to_f64_vec(),
        vec![1.0, 0.0, 0.0]
    );
    assert_eq!(
        call1("_div_scalar", std::slice::from_ref(&xi), &[("scalar", float(2.5))]).to_f64_vec(),
        vec![1.0, 1.0, 3.0]
    );
    assert_eq!(
        call1("_plus_scalar", std::slice::from_ref(&xi), &[("scalar", float(2.5))]).to_f64_vec(),
        vec![4.0, 5.0, 9.0]
    );
    assert_eq!(call1("_rdiv_scalar", &[xi], &[("scalar", float(7.0))]).to_f64_vec(), vec![3.0, 2.0, 1.0]);
}

/// MXNet's documented integer rules: `[1, 2] int32 / 2 → [0, 1]`, comparisons give 0/1 in the
/// promoted dtype, and int32 with float32 gives float32.
#[test]
fn integer_rules() {
    let a = arr(&[1.0, 2.0, -3.0], &[3], I32);
    let two = arr(&[2.0, 2.0, 2.0], &[3], I32);
    let y = call1("elemwise_div", &[a.clone(), two.clone()], &[]);
    check_arr("int div", &y, &[3], I32, &[0.0, 1.0, -1.0], 0.0, 0.0);
    let y = call1("broadcast_floor_divide", &[a.clone(), two.clone()], &[]);
    check_arr("int floor div", &y, &[3], I32, &[0.0, 1.0, -2.0], 0.0, 0.0);
    let y = call1("broadcast_mod", &[a.clone(), two], &[]);
    check_arr("int mod", &y, &[3], I32, &[1.0, 0.0, 1.0], 0.0, 0.0);
    let f = arr(&[0.5, 2.0, -3.0], &[3], F32);
    let y = call1("broadcast_greater_equal", &[a, f], &[]);
    check_arr("int >= float", &y, &[3], F32, &[1.0, 1.0, 1.0], 0.0, 0.0);
}
