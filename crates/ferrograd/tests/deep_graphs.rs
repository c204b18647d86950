//! Graphs of depth 10⁶ (issue 19): every walk over a symbol (serialising, loading, composing,
//! inferring, binding, recording's `get_symbol`) and every drop is iterative, so a long chain
//! never overflows the stack. The test threads have Rust's default 2 MB stack, far less than a
//! recursive walk of a million nodes needs.

use ferrograd::autograd::{self, GradReq};
use ferrograd::executor::Executor;
use ferrograd::ops::AttrValue;
use ferrograd::symbol::infer::{infer, Known};
use ferrograd::symbol::{json, Symbol};
use ferrograd::{DType, NDArray, Result, Tracked};

const DEPTH: usize = 1_000_000;

/// `x + 1 + 1 + ... ` (`depth` additions), as `s = s + 1` builds it in Python.
fn chain(depth: usize) -> Result<Symbol> {
    let mut s = Symbol::var("x");
    for i in 0..depth {
        s = Symbol::op("_plus_scalar", &format!("plus{i}"), &[s], &[("scalar", AttrValue::Float(1.0))])?;
    }
    Ok(s)
}

#[test]
fn a_million_deep_symbol_round_trips_infers_binds_and_drops() -> Result<()> {
    let s = chain(DEPTH)?;
    assert_eq!(s.topo_nodes().len(), DEPTH + 1);
    assert_eq!(s.list_arguments(), vec!["x"]);

    let text = json::to_json(&s);
    let loaded = json::from_json(&text)?;
    assert_eq!(loaded.topo_nodes().len(), DEPTH + 1);
    drop(loaded);

    let known = Known { shapes: [("x".to_string(), vec![3])].into(), ..Known::default() };
    let inferred = infer(&s, &known)?;
    assert_eq!(inferred.outputs[0].as_ref().map(|m| m.shape.to_vec()), Some(vec![3]));

    // Composing x := y, a deep copy and CSE each rebuild the whole chain.
    let composed = s.compose(&[], &[("x".to_string(), Symbol::var("y"))], None)?;
    assert_eq!(composed.list_arguments(), vec!["y"]);
    drop(composed);
    drop(s.deep_copy());
    drop(s.eliminate_common_exprs());

    let mut exe = Executor::simple_bind(&s, &[("x", &[3])], GradReq::Write)?;
    exe.set_arg("x", &NDArray::from_vec(vec![0.5, -2.0, 4.0], &[3])?)?;
    exe.forward(true, &mut |_, _| {})?;
    let want: Vec<f64> = [0.5, -2.0, 4.0].iter().map(|v| v + DEPTH as f64).collect();
    assert_eq!(exe.outputs[0].to_f64_vec(), want);
    exe.backward(&[Some(NDArray::full(&[3], DType::F32, 2.0))], true)?;
    assert_eq!(exe.grad_of("x").map(|g| g.to_f64_vec()), Some(vec![2.0, 2.0, 2.0]));
    drop(exe);
    drop(s); // the last owner of a million-node chain
    Ok(())
}

#[test]
fn a_million_deep_recording_gives_its_symbol_and_gradient() -> Result<()> {
    let mut x = Tracked::new(NDArray::from_vec(vec![1.0, 2.0], &[2])?);
    x.attach_grad();
    let y = autograd::record(|| -> Result<Tracked> {
        let mut y = x.clone();
        for _ in 0..DEPTH {
            y = ferrograd::call("_plus_scalar", std::slice::from_ref(&y), &[("scalar", AttrValue::Float(1.0))])?
                .swap_remove(0);
        }
        Ok(y)
    })?;
    let sym = autograd::history_symbol(&y)?;
    assert_eq!(sym.topo_nodes().len(), DEPTH + 1);
    drop(sym);
    y.backward()?;
    assert_eq!(x.grad().map(|g| g.to_f64_vec()), Some(vec![1.0, 1.0]));
    Ok(())
}
