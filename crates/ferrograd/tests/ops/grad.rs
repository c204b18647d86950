//! Gradient-rule cases per op family (finite differences in float64; see `gradcheck`), plus the
//! documented values at kinks.

use ferrograd::ops::grad::eval_grad;
use ferrograd::ops::AttrValue;
use ferrograd::DType::{F32, F64};
use ferrograd::NDArray;

use crate::common::*;
use crate::forward_elem::{binary_kind, scalar_kind};
use crate::gradcheck::{build, check};
use ferrograd::ops::binary::BinaryKind;

/// Sample points for a unary op's gradient check: inside the domain, away from kinks,
/// singularities and jumps.
fn unary_points(name: &str, rng: &mut Rng, n: usize) -> Vec<f64> {
    match name {
        "sqrt" | "rsqrt" | "log" | "log2" | "log10" => rng.vec(n, 0.2, 3.0),
        "log1p" => rng.vec(n, -0.5, 3.0),
        "arcsin" | "arccos" | "arctanh" => rng.vec(n, -0.9, 0.9),
        "arccosh" => rng.vec(n, 1.2, 3.0),
        "tan" => rng.vec(n, -1.2, 1.2),
        "abs" | "sign" | "relu" | "cbrt" | "reciprocal" | "_reciprocal_nonzero" | "softsign" => rng.signed(n, 0.2, 2.0),
        // Away from integers and half-integers, where the rounding functions jump.
        "floor" | "ceil" | "round" | "rint" | "fix" | "trunc" => {
            (0..n).map(|_| rng.int(-3, 3) as f64 + if rng.int(0, 1) == 0 { 0.25 } else { 0.75 }).collect()
        }
        "negative" | "square" | "exp" | "expm1" | "sin" | "cos" | "arctan" | "sinh" | "cosh" | "tanh" | "arcsinh"
        | "sigmoid" | "degrees" | "radians" => rng.vec(n, -2.0, 2.0),
        other => panic!("unary op {other} has no gradient sample points in the test table"),
    }
}

pub fn unary(name: &'static str) {
    let op = build(name, &[]);
    let mut rng = Rng::new(name.len() as u64 * 13 + 5);
    for shape in [&[][..], &[5], &[2, 3]] {
        let x = f64s(&unary_points(name, &mut rng, numel(shape)), shape);
        check(&format!("{name} {shape:?}"), &op, &[x], &mut rng, true);
    }
}

/// One operand pair of `kind` whose broadcast pairs all keep away from the op's kinks.
fn binary_operands(kind: BinaryKind, sa: &[usize], sb: &[usize], rng: &mut Rng) -> (NDArray, NDArray) {
    use BinaryKind::*;
    let out: Vec<usize> = ferrograd::ndarray::view::broadcast_pair("test", sa, sb).unwrap().to_vec();
    for _ in 0..1000 {
        let (a, b) = match kind {
            Pow => (rng.vec(numel(sa), 0.3, 2.0), rng.vec(numel(sb), -2.0, 2.0)),
            Div => (rng.vec(numel(sa), -2.0, 2.0), rng.signed(numel(sb), 0.3, 2.0)),
            Mod => (rng.vec(numel(sa), -3.0, 3.0), rng.signed(numel(sb), 0.5, 1.5)),
            Hypot => (rng.signed(numel(sa), 0.2, 2.0), rng.signed(numel(sb), 0.2, 2.0)),
            _ => (rng.vec(numel(sa), -2.0, 2.0), rng.vec(numel(sb), -2.0, 2.0)),
        };
        let ok = (0..numel(&out)).all(|o| {
            let idx = unravel(o, &out);
            let (x, y) = (a[bcast_src(&idx, sa)], b[bcast_src(&idx, sb)]);
            match kind {
                Maximum | Minimum => (x - y).abs() > 0.1,
                Mod => {
                    let q = x / y;
                    (q - q.floor()) > 0.1 && (q - q.floor()) < 0.9
                }
                _ => true,
            }
        });
        if ok {
            return (f64s(&a, sa), f64s(&b, sb));
        }
    }
    panic!("no sample away from kinks for {kind:?}")
}

pub fn binary(name: &'static str) {
    let (kind, bcast) = binary_kind(name);
    let op = build(name, &[]);
    let mut rng = Rng::new(name.len() as u64 * 17 + 1);
    let pairs: &[(&[usize], &[usize])] = if bcast {
        &[
            (&[2, 3], &[3]),
            (&[2, 1, 3], &[4, 1]),
            (&[], &[2, 2]),
            (&[3, 2], &[3, 2]),
            (&[1, 3], &[2, 1]),
            (&[0, 3], &[1, 3]),
        ]
    } else {
        &[(&[2, 3], &[2, 3]), (&[], &[])]
    };
    for &(sa, sb) in pairs {
        let (a, b) = binary_operands(kind, sa, sb, &mut rng);
        check(&format!("{name} {sa:?}x{sb:?}"), &op, &[a, b], &mut rng, true);
    }
}

pub fn scalar(name: &'static str) {
    use BinaryKind::*;
    let (kind, rev) = scalar_kind(name);
    let mut rng = Rng::new(name.len() as u64 * 19 + 3);
    for s in [1.7f64, -0.8, 2.5] {
        if (kind == Pow && rev && s <= 0.0) || (kind == Mod && s.abs() < 0.5) {
            continue;
        }
        let op = build(name, &[("scalar", AttrValue::Float(s))]);
        let n = 6;
        let x: Vec<f64> = loop {
            let x = match (kind, rev) {
                (Pow, false) => rng.vec(n, 0.3, 2.0),
                (Div, true) | (Mod, true) => rng.signed(n, 0.4, 1.5),
                _ => rng.vec(n, -2.0, 2.0),
            };
            let ok = x.iter().all(|&v| match (kind, rev) {
                (Maximum | Minimum, _) => (v - s).abs() > 0.1,
                (Mod, false) | (Mod, true) => {
                    let q = if rev { s / v } else { v / s };
                    (q - q.floor()) > 0.1 && (q - q.floor()) < 0.9
                }
                (Hypot, _) => v.abs() > 0.1,
                _ => true,
            });
            if ok {
                break x;
            }
        };
        check(&format!("{name} scalar={s}"), &op, &[f64s(&x, &[2, 3])], &mut rng, true);
    }
}

pub fn reduce(name: &'static str) {
    let mut rng = Rng::new(name.len() as u64 * 23 + 11);
    let shape = [2usize, 3, 4];
    let mut param_sets: Vec<Params> = vec![
        vec![],
        vec![("axis", tuple(&[1]))],
        vec![("axis", tuple(&[0, 2])), ("keepdims", boolean(true))],
        vec![("axis", tuple(&[-1]))],
        vec![("axis", tuple(&[]))],
    ];
    if name != "norm" {
        param_sets.push(vec![("axis", tuple(&[1])), ("exclude", boolean(true))]);
    }
    let ords: &[i64] = if name == "norm" { &[1, 2] } else { &[0] };
    for &ord in ords {
        for p in &param_sets {
            let mut p = p.clone();
            if name == "norm" {
                p.push(("ord", int(ord)));
            }
            let op = build(name, &p);
            let data: Vec<f64> = match name {
                "prod" | "nanprod" => rng.signed(24, 0.5, 1.5),
                // Distinct values with gaps: max/min are differentiable there.
                "max" | "min" => rng.perm(24).iter().map(|&i| i as f64 * 0.25 - 3.0).collect(),
                "norm" => rng.signed(24, 0.3, 2.0),
                _ => rng.vec(24, -2.0, 2.0),
            };
            check(&format!("{name} {p:?}"), &op, &[f64s(&data, &shape)], &mut rng, true);
        }
    }
    // 0-d and 1-d inputs.
    let op = build(name, &[]);
    check(&format!("{name} 0-d"), &op, &[f64s(&[1.3], &[])], &mut rng, true);
    check(&format!("{name} 1-d"), &op, &[f64s(&[1.3, -0.7, 0.9], &[3])], &mut rng, true);
}

pub fn dot(name: &'static str) {
    let mut rng = Rng::new(29);
    let batch = name == "batch_dot";
    let cases: &[(&[usize], usize, &[usize])] = if batch {
        &[(&[3], 4, &[2])]
    } else {
        &[(&[3], 4, &[2]), (&[2, 3], 2, &[2]), (&[3], 2, &[2, 2]), (&[], 3, &[]), (&[], 3, &[2])]
    };
    for &(lead_a, k, lead_b) in cases {
        for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
            let (mut sa, mut sb): (Vec<usize>, Vec<usize>) =
                if ta { ([&[k][..], lead_a].concat(), vec![]) } else { ([lead_a, &[k]].concat(), vec![]) };
            sb.extend(if tb { [lead_b, &[k]].concat() } else { [&[k][..], lead_b].concat() });
            if batch {
                sa.insert(0, 2);
                sb.insert(0, 2);
            }
            let op = build(name, &[("transpose_a", boolean(ta)), ("transpose_b", boolean(tb))]);
            let a = f64s(&rng.vec(numel(&sa), -1.5, 1.5), &sa);
            let b = f64s(&rng.vec(numel(&sb), -1.5, 1.5), &sb);
            check(&format!("{name} {sa:?}x{sb:?} ta={ta} tb={tb}"), &op, &[a, b], &mut rng, true);
        }
    }
}

/// Layout ops, casts, fills, copies: `(params, input shape)` per op.
pub fn shape_op(name: &'static str) {
    let cases: Vec<(Params, &[usize])> = match name {
        "Reshape" => vec![
            (vec![("shape", tuple(&[-1]))], &[2, 3, 2]),
            (vec![("shape", tuple(&[0, -3]))], &[2, 3, 2]),
            (vec![("shape", tuple(&[-4, 1, 2, -2]))], &[2, 3]),
            (vec![("shape", tuple(&[-1, 0])), ("reverse", boolean(true))], &[3, 2, 2]),
        ],
        "Flatten" => vec![(vec![], &[2, 3, 2])],
        "transpose" => vec![
            (vec![], &[2, 3, 2]),
            (vec![("axes", tuple(&[1, 2, 0]))], &[2, 3, 2]),
            (vec![("axes", tuple(&[-1, 0]))], &[2, 3]),
        ],
        "broadcast_to" => vec![
            (vec![("shape", tuple(&[2, 3]))], &[3]),
            (vec![("shape", tuple(&[2, 4, 3]))], &[2, 1, 3]),
            (vec![("shape", tuple(&[2, 0]))], &[1, 3]),
            (vec![("shape", tuple(&[2, 2]))], &[]),
        ],
        "Cast" => vec![(vec![("dtype", string("float64"))], &[2, 3])],
        "zeros_like" | "ones_like" | "_copy" => vec![(vec![], &[2, 3]), (vec![], &[])],
        "expand_dims" => vec![(vec![("axis", int(1))], &[2, 3]), (vec![("axis", int(-1))], &[3])],
        "squeeze" => vec![(vec![], &[1, 3, 1]), (vec![("axis", tuple(&[0]))], &[1, 3])],
        "slice" => vec![
            (vec![("begin", tuple(&[1, 0])), ("end", tuple(&[3, 4])), ("step", tuple(&[1, 2]))], &[4, 5]),
            (
                vec![("begin", string("(None, -1)")), ("end", string("(None, 0)")), ("step", string("(None, -2)"))],
                &[3, 5],
            ),
        ],
        "slice_axis" => vec![
            (vec![("axis", int(1)), ("begin", int(1)), ("end", int(3))], &[2, 4]),
            (vec![("axis", int(0)), ("begin", int(-2)), ("end", AttrValue::None)], &[3, 2]),
        ],
        other => panic!("shape op {other} has no gradient case in the test table"),
    };
    let mut rng = Rng::new(name.len() as u64 * 31 + 2);
    for (p, shape) in cases {
        let op = build(name, &p);
        let x = f64s(&rng.vec(numel(shape), -2.0, 2.0), shape);
        check(&format!("{name} {p:?} {shape:?}"), &op, &[x], &mut rng, true);
    }
    if name == "Cast" {
        // float32 → float64: the gradient comes back as float32, equal to the head gradient.
        let op = build(name, &[("dtype", string("float64"))]);
        let x = arr(&[1.0, 2.0], &[2], F32);
        let g = eval_grad(op.as_ref(), &[x], &[f64s(&[0.25, -3.0], &[2])]).unwrap();
        let g = g[0].as_ref().unwrap();
        check_arr("Cast grad", g, &[2], F32, &[0.25, -3.0], 0.0, 0.0);
    }
}

fn grad1(name: &str, params: &[(&'static str, AttrValue)], x: NDArray, head: NDArray) -> Option<Vec<f64>> {
    let op = build(name, params);
    eval_grad(op.as_ref(), &[x], &[head]).unwrap()[0].as_ref().map(NDArray::to_f64_vec)
}

/// Documented values at points where the function is not differentiable.
#[test]
fn kink_values() {
    let h = f64s(&[1.5, -2.0, 3.0], &[3]);
    // relu'(0) = 0 and abs'(0) = 0 (the minimum-norm subgradient), with any head gradient.
    let x = f64s(&[0.0, -0.0, 2.0], &[3]);
    assert_eq!(grad1("relu", &[], x.clone(), h.clone()), Some(vec![0.0, 0.0, 3.0]));
    assert_eq!(grad1("abs", &[], x.clone(), h.clone()), Some(vec![0.0, 0.0, 3.0]));
    // sqrt'(0) = +inf (times a positive head gradient).
    let g = grad1("sqrt", &[], f64s(&[0.0, 4.0], &[2]), f64s(&[1.0, 2.0], &[2])).unwrap();
    assert_eq!(g, vec![f64::INFINITY, 0.5]);
    // The L2 norm at the zero vector has gradient 0, not NaN; likewise per reduced row.
    let g = grad1("norm", &[], f64s(&[0.0; 3], &[3]), f64s(&[2.0], &[1])).unwrap();
    assert_eq!(g, vec![0.0; 3]);
    let g = grad1("norm", &[("axis", tuple(&[1]))], f64s(&[0.0, 0.0, 3.0, 4.0], &[2, 2]), f64s(&[1.0, 10.0], &[2]))
        .unwrap();
    assert_close("norm rows", &g, &[0.0, 0.0, 6.0, 8.0], 1e-15, 0.0);
    // The L1 norm at 0: sign(0) = 0.
    let g = grad1("norm", &[("ord", int(1))], f64s(&[0.0, -2.0], &[2]), f64s(&[3.0], &[1])).unwrap();
    assert_eq!(g, vec![0.0, -3.0]);
    // prod with zeros: the product of the other elements, exactly (no 0/0).
    let g = grad1("prod", &[], f64s(&[2.0, 0.0, 3.0], &[3]), f64s(&[1.5], &[1])).unwrap();
    assert_eq!(g, vec![0.0, 9.0, 0.0]);
    let g = grad1("prod", &[], f64s(&[0.0, 2.0, 0.0], &[3]), f64s(&[1.5], &[1])).unwrap();
    assert_eq!(g, vec![0.0, 0.0, 0.0]);
    let g = grad1("prod", &[("axis", int(1))], f64s(&[0.0, 2.0, 5.0, 4.0], &[2, 2]), f64s(&[1.0, -1.0], &[2])).unwrap();
    assert_eq!(g, vec![2.0, 0.0, -4.0, -5.0]);
    // max/min ties: every maximal element receives the full head gradient (MXNet's rule).
    let g = grad1("max", &[], f64s(&[1.0, 3.0, 3.0], &[3]), f64s(&[2.0], &[1])).unwrap();
    assert_eq!(g, vec![0.0, 2.0, 2.0]);
    // maximum/minimum ties: the gradient goes to the lhs.
    let op = build("broadcast_maximum", &[]);
    let g = eval_grad(op.as_ref(), &[f64s(&[1.0], &[1]), f64s(&[1.0], &[1])], &[f64s(&[2.0], &[1])]).unwrap();
    assert_eq!(g[0].as_ref().unwrap().to_f64_vec(), vec![2.0]);
    assert_eq!(g[1].as_ref().unwrap().to_f64_vec(), vec![0.0]);
    // Rounding functions: zero gradient everywhere (reported as "no gradient").
    for name in ["sign", "floor", "ceil", "round", "rint", "fix", "trunc"] {
        let g = grad1(name, &[], x.clone(), h.clone());
        assert!(g.is_none_or(|g| g.iter().all(|&v| v == 0.0)), "{name}");
    }
}

/// nansum / nanprod: NaN entries get gradient 0 and count as 0 / 1 for the others.
#[test]
fn nan_reduction_gradients() {
    let x = f64s(&[2.0, f64::NAN, 3.0], &[3]);
    let g = grad1("nansum", &[], x.clone(), f64s(&[1.5], &[1])).unwrap();
    assert_eq!(g, vec![1.5, 0.0, 1.5]);
    let g = grad1("nanprod", &[], x, f64s(&[1.5], &[1])).unwrap();
    assert_eq!(g, vec![4.5, 0.0, 3.0]);
}

/// Gradients of float32 inputs stay float32 and broadcast gradients are unbroadcast.
#[test]
fn float32_gradients_and_unbroadcast() {
    let op = build("broadcast_mul", &[]);
    let a = arr(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3], F32);
    let b = arr(&[0.5, -1.0, 2.0], &[3], F32);
    let h = arr(&[1.0; 6], &[2, 3], F32);
    let g = eval_grad(op.as_ref(), &[a, b], &[h]).unwrap();
    check_arr("d lhs", g[0].as_ref().unwrap(), &[2, 3], F32, &[0.5, -1.0, 2.0, 0.5, -1.0, 2.0], 0.0, 0.0);
    check_arr("d rhs", g[1].as_ref().unwrap(), &[3], F32, &[5.0, 7.0, 9.0], 0.0, 0.0);
}

/// Every differentiable op, on empty inputs: gradients come back with the inputs' shapes (MXNet's
/// 0 = "copy/keep" codes must not leak into the shapes gradient rules build).
#[test]
fn gradients_of_empty_inputs_have_input_shapes() {
    use ferrograd::DType::I64;
    let mut checked = 0;
    for c in crate::table::cases() {
        if c.grad.is_none() {
            continue;
        }
        let op = build(c.name, &(c.params)());
        let e = ferrograd::ops::registry::lookup(c.name).unwrap();
        for shape in [&[0usize, 3][..], &[3, 0], &[0]] {
            // Index arguments are int64; everything else float64.
            let inputs: Vec<NDArray> = e
                .args
                .iter()
                .map(|a| if *a == "indices" { NDArray::zeros(&[1, 0], I64) } else { NDArray::zeros(shape, F64) })
                .collect();
            let Ok(outs) = ferrograd::ops::run(op.as_ref(), &Default::default(), &inputs) else { continue };
            let heads: Vec<NDArray> = outs.iter().map(|o| NDArray::zeros(o.shape(), o.dtype())).collect();
            let gs =
                eval_grad(op.as_ref(), &inputs, &heads).unwrap_or_else(|err| panic!("{} on {shape:?}: {err}", c.name));
            for (g, x) in gs.iter().zip(&inputs) {
                if let Some(g) = g {
                    assert_eq!(g.shape(), x.shape(), "{} on {shape:?}", c.name);
                }
            }
            checked += 1;
        }
    }
    assert!(checked > 50, "only {checked} empty-input gradient cases ran");
}
