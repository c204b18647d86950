//! The forward contract: `Op::forward` receives its outputs allocated and writes the result into
//! them. A handle taken before the call must see the values, and the buffer itself must be the
//! one that was handed in (the executor plans those buffers), not a replacement.

use ferrograd::ops::nn::softmax::{SmKind, SoftmaxGrad};
use ferrograd::ops::reduce::ProdOthers;
use ferrograd::ops::{registry, AttrValue, Attrs, Ctx, Op, OpRef};
use ferrograd::{DType, NDArray};

fn arr(data: &[f64], shape: &[usize], dt: DType) -> NDArray {
    NDArray::from_vec(data.to_vec(), shape).expect("shape matches").astype(dt)
}

fn seq(shape: &[usize], dt: DType) -> NDArray {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n).map(|i| 0.25 + i as f64 * 0.5).collect();
    arr(&v, shape, dt)
}

fn op(name: &str, params: &[(&str, AttrValue)]) -> OpRef {
    let mut attrs = Attrs::new(name);
    for (k, v) in params {
        attrs.items.push((k.to_string(), v.clone()));
    }
    match registry::create(name, &attrs) {
        Ok(o) => o,
        Err(e) => panic!("{name}: {e}"),
    }
}

fn buf_addr(a: &NDArray) -> usize {
    a.snapshot().data_ptr() as usize
}

/// Runs `forward` on preallocated outputs and returns what the handles taken before saw.
fn forward_in_place(what: &str, op: &dyn Op, ctx: &Ctx, inputs: &[NDArray]) -> Vec<Vec<f64>> {
    let metas: Vec<_> = inputs.iter().map(NDArray::meta).collect();
    let out_metas = op.infer(&metas).unwrap_or_else(|e| panic!("{what}: infer: {e}"));
    let mut outs: Vec<NDArray> = out_metas.iter().map(|m| NDArray::zeros(&m.shape, m.dtype)).collect();
    let before: Vec<NDArray> = outs.clone();
    let addrs: Vec<usize> = outs.iter().map(buf_addr).collect();
    op.forward(ctx, inputs, &mut outs).unwrap_or_else(|e| panic!("{what}: forward: {e}"));
    for (i, (o, b)) in outs.iter().zip(&before).enumerate() {
        assert!(o.shares_storage(b), "{what}: output {i} was replaced by another array");
        assert_eq!(o.shape(), b.shape(), "{what}: output {i} changed shape");
        assert_eq!(o.dtype(), b.dtype(), "{what}: output {i} changed dtype");
        assert_eq!(buf_addr(o), addrs[i], "{what}: output {i} was not written in its own buffer");
    }
    before.iter().map(NDArray::to_f64_vec).collect()
}

/// Checks the in-place forward against the imperative result (`ops::run`, views included).
fn check(what: &str, op: &dyn Op, inputs: &[NDArray]) {
    let ctx = Ctx::default();
    let got = forward_in_place(what, op, &ctx, inputs);
    let want: Vec<Vec<f64>> = ferrograd::ops::run(op, &ctx, inputs)
        .unwrap_or_else(|e| panic!("{what}: run: {e}"))
        .iter()
        .map(NDArray::to_f64_vec)
        .collect();
    assert_eq!(got, want, "{what}");
}

fn int(v: i64) -> AttrValue {
    AttrValue::Int(v)
}
fn tuple(v: &[i64]) -> AttrValue {
    AttrValue::Tuple(v.to_vec())
}

#[test]
fn reductions_write_into_their_outputs() {
    let x = seq(&[2, 3, 4], DType::F32);
    let prod = ProdOthers { axis: Some(vec![1]), exclude: false, nan_as_one: false };
    check("_prod_others", &prod, std::slice::from_ref(&x));
    check("sum", &*op("sum", &[("axis", tuple(&[1]))]), &[x]);
}

#[test]
fn matmul_writes_into_its_output() {
    for dt in [DType::F32, DType::F16] {
        let (a, b) = (seq(&[3, 4], dt), seq(&[4, 2], dt));
        check(&format!("dot {dt}"), &*op("dot", &[]), &[a.clone(), b.clone()]);
        check(
            &format!("batch_dot {dt}"),
            &*op("batch_dot", &[]),
            &[a.reshape(&[1, 3, 4]).unwrap_or(a), b.reshape(&[1, 4, 2]).unwrap_or(b)],
        );
    }
}

#[test]
fn softmax_and_its_gradient_write_into_their_outputs() {
    for dt in [DType::F32, DType::F16] {
        let x = seq(&[2, 5], dt);
        check(&format!("softmax {dt}"), &*op("softmax", &[]), std::slice::from_ref(&x));
        let grad = SoftmaxGrad { kind: SmKind::Softmax, axis: -1, temperature: None };
        check(&format!("_backward_softmax {dt}"), &grad, &[x.clone(), x]);
    }
}

#[test]
fn samplers_write_into_their_outputs() {
    let ctx = Ctx::default();
    let u = op(
        "_random_uniform",
        &[("low", AttrValue::Float(1.0)), ("high", AttrValue::Float(2.0)), ("shape", tuple(&[3, 4]))],
    );
    let got = forward_in_place("_random_uniform", &*u, &ctx, &[]);
    assert!(got[0].iter().all(|&v| (1.0..2.0).contains(&v)), "{got:?}");
    let n = op(
        "_random_normal",
        &[("loc", AttrValue::Float(5.0)), ("scale", AttrValue::Float(0.0)), ("shape", tuple(&[4]))],
    );
    assert_eq!(forward_in_place("_random_normal", &*n, &ctx, &[]), vec![vec![5.0; 4]]);
    let r = op(
        "_random_randint",
        &[("low", int(3)), ("high", int(4)), ("shape", tuple(&[5])), ("dtype", AttrValue::Str("int32".into()))],
    );
    assert_eq!(forward_in_place("_random_randint", &*r, &ctx, &[]), vec![vec![3.0; 5]]);
    let s = op("_sample_uniform", &[("shape", tuple(&[2]))]);
    let (lo, hi) = (arr(&[1.0, 10.0], &[2], DType::F32), arr(&[2.0, 10.0], &[2], DType::F32));
    let got = forward_in_place("_sample_uniform", &*s, &ctx, &[lo, hi]);
    assert!(got[0][..2].iter().all(|&v| (1.0..2.0).contains(&v)), "{got:?}");
    assert_eq!(&got[0][2..], &[10.0, 10.0]);
}

#[test]
fn joins_write_into_their_outputs() {
    let (a, b) = (seq(&[2, 3], DType::F32), seq(&[2, 2], DType::F32));
    check("Concat", &*op("Concat", &[("num_args", int(2)), ("dim", int(1))]), &[a.clone(), b]);
    check("stack", &*op("stack", &[("num_args", int(2))]), &[a.clone(), a]);
}

#[test]
fn shape_ops_write_into_their_outputs() {
    let x = seq(&[2, 3], DType::F32);
    // A non-contiguous input of the same shape as `x`.
    let t = seq(&[3, 2], DType::F32).transpose(&[]).unwrap_or_else(|e| panic!("{e}"));
    for (name, params) in [
        ("tile", vec![("reps", tuple(&[2, 2]))]),
        ("repeat", vec![("repeats", int(2)), ("axis", int(1))]),
        ("reverse", vec![("axis", tuple(&[1]))]),
        ("SwapAxis", vec![("dim1", int(0)), ("dim2", int(1))]),
        ("Reshape", vec![("shape", tuple(&[3, 2]))]),
        ("transpose", vec![]),
        ("expand_dims", vec![("axis", int(1))]),
        ("broadcast_to", vec![("shape", tuple(&[2, 2, 3]))]),
        ("Flatten", vec![]),
        ("Cast", vec![("dtype", AttrValue::Str("float64".into()))]),
        ("zeros_like", vec![]),
        ("ones_like", vec![]),
        ("_copy", vec![]),
        ("slice", vec![("begin", tuple(&[0, 1])), ("end", tuple(&[2, 3]))]),
        ("Pad", vec![("mode", AttrValue::Str("constant".into())), ("pad_width", tuple(&[0, 0, 0, 0, 1, 1, 1, 1]))]),
        ("diag", vec![]),
        ("BlockGrad", vec![]),
        ("MakeLoss", vec![]),
        ("exp", vec![]),
    ] {
        let o = op(name, &params);
        let input = if name == "Pad" { x.reshape(&[1, 1, 2, 3]).unwrap_or_else(|e| panic!("{e}")) } else { x.clone() };
        check(name, &*o, std::slice::from_ref(&input));
        if name != "Pad" {
            check(&format!("{name} (transposed input)"), &*o, std::slice::from_ref(&t));
        }
        check(&format!("{name} f16"), &*o, &[input.astype(DType::F16)]);
    }
    let idx = arr(&[0.0, 2.0], &[2], DType::F32);
    check("pick", &*op("pick", &[("axis", int(1))]), &[x.clone(), idx.clone()]);
    check("batch_take", &*op("batch_take", &[]), &[x.clone(), idx]);
    check("squeeze", &*op("squeeze", &[]), &[x.reshape(&[2, 1, 3]).unwrap_or_else(|e| panic!("{e}"))]);
    let y = seq(&[1, 3], DType::F32);
    check("broadcast_like", &*op("broadcast_like", &[]), &[y.clone(), x.clone()]);
    check("broadcast_axis", &*op("broadcast_axis", &[("axis", int(0)), ("size", int(4))]), &[y]);
    check("LinearRegressionOutput", &*op("LinearRegressionOutput", &[]), &[x.clone(), x.clone()]);
    check("Dropout (predict)", &*op("Dropout", &[("p", AttrValue::Float(0.5))]), std::slice::from_ref(&x));
    let train = Ctx { is_train: true };
    let d = op("Dropout", &[("p", AttrValue::Float(0.5))]);
    let got = forward_in_place("Dropout (train)", &*d, &train, std::slice::from_ref(&x));
    let xs = x.to_f64_vec();
    for ((y, m), x) in got[0].iter().zip(&got[1]).zip(&xs) {
        assert!(*m == 0.0 || *m == 2.0, "mask {m}");
        assert_eq!(*y, x * m);
    }
}
