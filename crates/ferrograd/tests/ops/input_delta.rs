//! `Op::add_input_delta` (the finite differences' shortcut for linear ops) against recomputing
//! the forward with the element moved, for every element of every input.

use ferrograd::ops::matmul::Dot;
use ferrograd::ops::nn::dense::FullyConnected;
use ferrograd::ops::{run1, Ctx, Op};
use ferrograd::NDArray;

fn arange(shape: &[usize], scale: f64) -> NDArray {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n).map(|i| ((i * 7 % 11) as f64 - 5.0) * scale).collect();
    NDArray::from_vec(v, shape).expect("shape fits")
}

fn check_every_element(op: &dyn Op, inputs: &[NDArray]) {
    let ctx = Ctx::default();
    let base = run1(op, &ctx, inputs).expect("forward");
    let delta = 0.375;
    for which in 0..inputs.len() {
        for index in 0..inputs[which].size() {
            let mut moved: Vec<NDArray> = inputs.iter().map(NDArray::copy).collect();
            let x = moved[which].to_f64_vec()[index];
            moved[which].set_flat_f64(index, x + delta).expect("set");
            let want = run1(op, &ctx, &moved).expect("forward").to_f64_vec();
            let mut got = base.copy();
            let used = op.add_input_delta(inputs, which, index, delta, &mut got).expect("delta");
            assert!(used, "{}: input {which} has no delta rule", op.name());
            for (g, w) in got.to_f64_vec().iter().zip(&want) {
                assert!(
                    (g - w).abs() <= 1e-12 * (1.0 + w.abs()),
                    "{}: input {which}, element {index}: {g} vs {w}",
                    op.name()
                );
            }
        }
    }
}

#[test]
fn dot_delta_matches_recomputing_for_every_flag() {
    for (ta, tb, sa, sb) in [
        (false, false, vec![3, 4], vec![4, 5]),
        (true, false, vec![4, 3], vec![4, 5]),
        (false, true, vec![3, 4], vec![5, 4]),
        (true, true, vec![4, 3], vec![5, 4]),
        (false, false, vec![3, 4], vec![4]),
        (false, false, vec![2, 3, 4], vec![4, 2]),
    ] {
        let op = Dot { transpose_a: ta, transpose_b: tb, batch: false };
        check_every_element(&op, &[arange(&sa, 0.5), arange(&sb, 0.25)]);
    }
    let bd = Dot { transpose_a: false, transpose_b: true, batch: true };
    check_every_element(&bd, &[arange(&[2, 3, 4], 0.5), arange(&[2, 5, 4], 0.25)]);
}

#[test]
fn fully_connected_delta_matches_recomputing() {
    let op = FullyConnected { num_hidden: 3, no_bias: false, flatten: true };
    check_every_element(&op, &[arange(&[2, 2, 2], 0.5), arange(&[3, 4], 0.25), arange(&[3], 1.0)]);
    let nb = FullyConnected { num_hidden: 3, no_bias: true, flatten: false };
    check_every_element(&nb, &[arange(&[2, 2, 4], 0.5), arange(&[3, 4], 0.25)]);
}

#[test]
fn ops_without_a_delta_rule_say_so() {
    use ferrograd::ops::unary::{Unary, UnaryKind};
    let x = arange(&[3], 1.0);
    let mut out = x.copy();
    let used = Unary { kind: UnaryKind::Tanh }.add_input_delta(&[x.copy()], 0, 0, 1.0, &mut out).expect("ok");
    assert!(!used);
    assert_eq!(out.to_f64_vec(), x.to_f64_vec(), "the output is left alone");
}
