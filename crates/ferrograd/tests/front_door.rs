//! The Rust front door behaves like Python's: `call` on tracked arrays records, on plain arrays
//! it does not, and both honour the training flag; the typed methods and operators compute the
//! hand-derived values, errors are errors (not panics), and the example's training run learns.

use ferrograd::autograd::{self, BackwardArgs, RecordGuard};
use ferrograd::ops::AttrValue;
use ferrograd::{DType, Error, NDArray, Result, Tracked};

#[allow(dead_code)]
#[path = "../examples/train_mlp.rs"]
mod train_mlp;

fn arr(v: &[f64], shape: &[usize]) -> NDArray {
    NDArray::from_vec(v.to_vec(), shape).expect("array")
}

fn tracked(v: &[f64], shape: &[usize]) -> Tracked {
    Tracked::new(arr(v, shape))
}

fn close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "{got:?} vs {want:?}");
    }
}

#[test]
fn ops_call_records_on_the_tape() -> Result<()> {
    let xs = [-1.5, 0.0, 0.5, 2.0];
    let mut x = tracked(&xs, &[4]);
    x.attach_grad();
    let y = autograd::record(|| -> Result<Tracked> {
        let e = ferrograd::call("exp", std::slice::from_ref(&x), &[])?;
        let p = ferrograd::call("broadcast_mul", &[e[0].clone(), x.clone()], &[])?;
        Ok(p[0].clone())
    })?;
    assert!(y.has_entry(), "call on tracked arrays inside record() must record");
    y.backward()?;
    // d/dx (e^x · x) = e^x (1 + x)
    let want: Vec<f64> = xs.iter().map(|v: &f64| v.exp() * (1.0 + v)).collect();
    close(&x.grad().expect("gradient").to_f64_vec(), &want, 1e-12);

    // Outside record() nothing is recorded.
    let z = ferrograd::call("exp", std::slice::from_ref(&x), &[])?;
    assert!(!z[0].has_entry());

    // The storage handle is never tracked: the same call on it inside record() is a constant,
    // with the same value.
    let plain = autograd::record(|| ferrograd::call("exp", std::slice::from_ref(x.array()), &[]))?;
    assert_eq!(plain[0].to_f64_vec(), z[0].to_f64_vec());
    let w = autograd::record(|| ferrograd::call1("broadcast_mul", &[Tracked::new(plain[0].clone()), x.clone()], &[]))?;
    w.backward()?;
    // Only x is a variable: d/dx (c · x) = c = e^x with c held constant.
    close(&x.grad().expect("gradient").to_f64_vec(), &z[0].to_f64_vec(), 1e-12);
    Ok(())
}

#[test]
fn ops_call_returns_only_visible_outputs() -> Result<()> {
    let x = NDArray::ones(&[4, 4], DType::F32);
    let outs = ferrograd::call("Dropout", &[x], &[("p", AttrValue::Float(0.5))])?;
    assert_eq!(outs.len(), 1, "Dropout's mask is hidden");
    Ok(())
}

#[test]
fn ops_call_honours_the_training_flag() -> Result<()> {
    let x = NDArray::ones(&[64, 64], DType::F32);
    let p = [("p", AttrValue::Float(0.5))];
    let dropout = |x: &NDArray| ferrograd::call("Dropout", std::slice::from_ref(x), &p).map(|o| o[0].to_f64_vec());

    // Not training (the default, and record in predict mode): the identity.
    assert!(dropout(&x)?.iter().all(|&v| v == 1.0));
    let pred = autograd::record_with(false, || dropout(&x))?;
    assert!(pred.iter().all(|&v| v == 1.0));

    // Training: some elements zeroed, the others scaled by 1 / (1 - p).
    let train = autograd::record(|| dropout(&x))?;
    let zeros = train.iter().filter(|&&v| v == 0.0).count();
    assert!(zeros > 0 && zeros < train.len(), "{zeros} of {} zeroed", train.len());
    assert!(train.iter().all(|&v| v == 0.0 || v == 2.0));
    let guarded = {
        let _g = RecordGuard::new(None, Some(true));
        dropout(&x)?
    };
    assert!(guarded.contains(&0.0));
    assert!(!autograd::is_training() && !autograd::is_recording());
    Ok(())
}

#[test]
fn dropout_gradient_uses_the_same_mask() -> Result<()> {
    let mut x = Tracked::new(NDArray::ones(&[8, 8], DType::F64));
    x.attach_grad();
    let y = autograd::record(|| {
        ferrograd::call("Dropout", std::slice::from_ref(&x), &[("p", AttrValue::Float(0.5))]).map(|o| o[0].clone())
    })?;
    y.backward()?;
    assert_eq!(x.grad().expect("gradient").to_f64_vec(), y.to_f64_vec());
    Ok(())
}

#[test]
fn operators_match_hand_computed_values() -> Result<()> {
    let a = arr(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let b = arr(&[0.5, -1.0, 2.0, 8.0], &[2, 2]);
    let row = arr(&[10.0, 100.0], &[2]);
    assert_eq!((&a + &b)?.to_f64_vec(), vec![1.5, 1.0, 5.0, 12.0]);
    assert_eq!((&a - &b)?.to_f64_vec(), vec![0.5, 3.0, 1.0, -4.0]);
    assert_eq!((&a * &b)?.to_f64_vec(), vec![0.5, -2.0, 6.0, 32.0]);
    assert_eq!((&a / &b)?.to_f64_vec(), vec![2.0, -2.0, 1.5, 0.5]);
    assert_eq!((-&a)?.to_f64_vec(), vec![-1.0, -2.0, -3.0, -4.0]);
    assert_eq!((&a + &row)?.to_f64_vec(), vec![11.0, 102.0, 13.0, 104.0]);
    assert_eq!((&a * 2.0)?.to_f64_vec(), vec![2.0, 4.0, 6.0, 8.0]);
    assert_eq!((&a + 0.5)?.to_f64_vec(), vec![1.5, 2.5, 3.5, 4.5]);
    assert_eq!((&a - 1.0)?.to_f64_vec(), vec![0.0, 1.0, 2.0, 3.0]);
    assert_eq!((&a / 4.0)?.to_f64_vec(), vec![0.25, 0.5, 0.75, 1.0]);
    assert_eq!((10.0 - &a)?.to_f64_vec(), vec![9.0, 8.0, 7.0, 6.0]);
    assert_eq!((12.0 / &a)?.to_f64_vec(), vec![12.0, 6.0, 4.0, 3.0]);
    assert_eq!((3.0 * &a)?.to_f64_vec(), vec![3.0, 6.0, 9.0, 12.0]);
    // Owned operands and chains.
    let c = ((a.clone() + b.clone())? * 2.0)?;
    assert_eq!(c.to_f64_vec(), vec![3.0, 2.0, 10.0, 24.0]);
    // f32 stays f32 with an f64 scalar.
    let f = NDArray::from_vec(vec![1.0f32, 2.0], &[2])?;
    assert_eq!((&f * 0.5)?.dtype(), DType::F32);
    // Methods.
    assert_eq!(a.dot(&b)?.to_f64_vec(), vec![4.5, 15.0, 9.5, 29.0]);
    assert_eq!(a.sum()?.to_f64_vec(), vec![10.0]);
    assert_eq!(a.mean_axis(1)?.to_f64_vec(), vec![1.5, 3.5]);
    assert_eq!(a.sum_axes(&[0], true)?.shape(), &[1, 2]);
    assert_eq!(b.abs()?.max()?.to_f64_vec(), vec![8.0]);
    assert_eq!(b.min_axis(0)?.to_f64_vec(), vec![0.5, -1.0]);
    assert_eq!(a.square()?.sqrt()?.to_f64_vec(), a.to_f64_vec());
    assert_eq!(b.relu()?.to_f64_vec(), vec![0.5, 0.0, 2.0, 8.0]);
    close(&a.exp()?.log()?.to_f64_vec(), &a.to_f64_vec(), 1e-12);
    close(&arr(&[0.0], &[1]).sigmoid()?.to_f64_vec(), &[0.5], 0.0);
    assert_eq!(a.transposed()?.to_f64_vec(), vec![1.0, 3.0, 2.0, 4.0]);
    assert_eq!(a.reshaped(&[-1])?.shape(), &[4]);
    Ok(())
}

#[test]
fn operator_gradients_through_the_tape() -> Result<()> {
    // f(a, b) = sum((a - b) / b · 3); df/da = 3 / b, df/db = -3 a / b².
    let mut a = tracked(&[1.0, 2.0], &[2]);
    let mut b = tracked(&[4.0, -2.0], &[2]);
    a.attach_grad();
    b.attach_grad();
    let f = autograd::record(|| ((&(&a - &b)? / &b)? * 3.0)?.sum())?;
    f.backward()?;
    close(&a.grad().expect("grad a").to_f64_vec(), &[0.75, -1.5], 1e-12);
    close(&b.grad().expect("grad b").to_f64_vec(), &[-0.1875, -1.5], 1e-12);
    // The variables are leaves: a second record/backward overwrites (grad_req write).
    let g = autograd::record(|| (&a * &a)?.sum())?;
    g.backward()?;
    close(&a.grad().expect("grad a").to_f64_vec(), &[2.0, 4.0], 1e-12);
    Ok(())
}

#[test]
fn second_order_gradient_through_tracked_results() -> Result<()> {
    // y = x³: dy/dx = 3x² stays on the tape under create_graph, and its backward gives 6x.
    let mut x = tracked(&[1.0, -2.0], &[2]);
    x.attach_grad();
    let args = BackwardArgs { retain_graph: true, create_graph: true, train_mode: true };
    let dx = autograd::record(|| -> Result<Tracked> {
        let y = (&(&x * &x)? * &x)?;
        Ok(autograd::grad(&[y], &[None], std::slice::from_ref(&x), args)?.swap_remove(0))
    })?;
    assert!(dx.has_entry(), "a create_graph gradient is itself recorded");
    close(&dx.to_f64_vec(), &[3.0, 12.0], 1e-12);
    dx.backward()?;
    close(&x.grad().expect("gradient").to_f64_vec(), &[6.0, -12.0], 1e-12);
    Ok(())
}

#[test]
fn shape_errors_name_the_op_and_shapes() {
    let a = NDArray::zeros(&[2, 3], DType::F32);
    let b = NDArray::zeros(&[4], DType::F32);
    for (res, op) in
        [(&a + &b, "broadcast_add"), (&a - &b, "broadcast_sub"), (&a * &b, "broadcast_mul"), (&a / &b, "broadcast_div")]
    {
        let msg = match res {
            Err(e @ Error::Shape(_)) => e.to_string(),
            other => panic!("{op}: expected a shape error, got {other:?}"),
        };
        assert!(msg.contains(op) && msg.contains("(2, 3)") && msg.contains("(4,)"), "{msg}");
    }
    let msg = a.dot(&b).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(msg.contains("dot"), "{msg}");
    assert!(a.reshaped(&[5]).is_err());
    assert!(a.softmax(3).is_err());
    assert!(ferrograd::call::<NDArray>("exp", &[], &[]).is_err());
    assert!(ferrograd::call("no_such_op", std::slice::from_ref(&a), &[]).is_err());
}

#[test]
fn backward_without_record_is_an_error() {
    let mut x = tracked(&[1.0], &[1]);
    x.attach_grad();
    let y = x.exp().expect("exp");
    assert!(y.backward().is_err());
    assert!(tracked(&[1.0], &[1]).grad().is_none());
}

#[test]
fn example_training_reduces_the_loss() -> Result<()> {
    let report = train_mlp::train(300, 0)?;
    let (first, last) = (report.losses[0], report.losses[report.losses.len() - 1]);
    assert!(last < 0.8 * first, "loss {first} -> {last}");
    assert!(report.accuracy > 0.7, "accuracy {}", report.accuracy);
    Ok(())
}

#[test]
fn symbol_built_and_bound_from_rust() -> Result<()> {
    use ferrograd::autograd::GradReq;
    use ferrograd::executor::Executor;
    use ferrograd::symbol::Symbol;

    // loss = sum(relu(FullyConnected(data, num_hidden=2)) · 2), bound by shape.
    let data = Symbol::var("data");
    let fc = Symbol::op("FullyConnected", "fc1", &[data], &[("num_hidden", AttrValue::Int(2))])?;
    let act = Symbol::op("relu", "r", &[fc], &[])?;
    assert_eq!(act.list_arguments(), vec!["data", "fc1_weight", "fc1_bias"]);
    let mut exe = Executor::simple_bind(&act, &[("data", &[2, 3])], GradReq::Write)?;
    assert_eq!(exe.arg("fc1_weight")?.shape(), &[2, 3]);
    exe.set_arg("data", &arr(&[1.0, 2.0, 3.0, -1.0, 0.0, 1.0], &[2, 3]))?;
    exe.set_arg("fc1_weight", &arr(&[1.0, 1.0, 1.0, -1.0, 0.0, 0.0], &[2, 3]))?;
    exe.forward(true, &mut |_, _| {})?;
    // Row 0: [6, -1] → relu [6, 0]; row 1: [0, 1] → [0, 1].
    assert_eq!(exe.outputs[0].to_f64_vec(), vec![6.0, 0.0, 0.0, 1.0]);
    exe.backward(&[Some(NDArray::full(&[2, 2], DType::F32, 2.0))], true)?;
    // dW[j] = Σ_i 2·[out_ij > 0]·data_i: unit 0 sees row 0 only, unit 1 row 1 only.
    assert_eq!(exe.grad_of("fc1_weight").map(|g| g.to_f64_vec()), Some(vec![2.0, 4.0, 6.0, -2.0, 0.0, 2.0]));
    assert_eq!(exe.grad_of("fc1_bias").map(|g| g.to_f64_vec()), Some(vec![2.0, 2.0]));

    // Errors: unknown names, shapes that cannot be inferred, parameters the op rejects.
    assert!(exe.set_arg("nope", &arr(&[1.0], &[1])).is_err());
    assert!(exe.grad_of("nope").is_none());
    let two = Symbol::op("broadcast_add", "add", &[Symbol::var("a"), Symbol::var("b")], &[])?;
    let msg = Executor::simple_bind(&two, &[("a", &[2])], GradReq::Write).err().map(|e| e.to_string());
    assert!(msg.as_deref().is_some_and(|m| m.contains("'b'")), "{msg:?}");
    assert!(Symbol::op("FullyConnected", "fc", &[Symbol::var("x")], &[("num_hiden", AttrValue::Int(2))]).is_err());
    Ok(())
}

/// `get_symbol` of a long recording walks it iteratively (no stack overflow) and names nodes as
/// MXNet does; the symbol's one JSON writer serialises it.
#[test]
fn history_symbol_of_a_long_recording() -> Result<()> {
    let mut x = tracked(&[1.0, 2.0], &[2]);
    x.attach_grad();
    let y = autograd::record(|| {
        let mut y = (&x * 1.0)?;
        for _ in 0..30_000 {
            y = (&y + 1.0)?;
        }
        Ok::<_, Error>(y)
    })?;
    let sym = autograd::history_symbol(&y)?;
    assert_eq!(sym.list_arguments(), vec!["var0".to_string()]);
    assert_eq!(sym.list_outputs(), vec!["node_30000_output".to_string()]);
    let json = ferrograd::symbol::json::to_json(&sym);
    let again = ferrograd::symbol::json::from_json(&json)?;
    assert_eq!(again.topo_nodes().len(), 30_002);
    // A constant the recording read becomes a variable of its own.
    let z = autograd::record(|| &x * &tracked(&[3.0, 4.0], &[2]))?;
    assert_eq!(autograd::history_symbol(&z)?.list_arguments(), vec!["var0".to_string(), "var1".to_string()]);
    Ok(())
}
