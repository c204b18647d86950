//! Bad inputs give the right `Error` variant with a message naming the op and the shapes.

use ferrograd::call;
use ferrograd::ops::AttrValue;
use ferrograd::DType::{F32, F64};
use ferrograd::{Error, NDArray};

use crate::common::*;

fn x(shape: &[usize]) -> NDArray {
    NDArray::zeros(shape, F32)
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Shape,
    DType,
    Index,
    Value,
    Type,
}

#[track_caller]
fn expect(kind: Kind, name: &str, inputs: &[NDArray], params: &[(&str, AttrValue)], needles: &[&str]) {
    let r = call(name, inputs, params);
    let msg = match (&r, kind) {
        (Err(Error::Shape(m)), Kind::Shape)
        | (Err(Error::DType(m)), Kind::DType)
        | (Err(Error::Index(m)), Kind::Index)
        | (Err(Error::Value(m)), Kind::Value)
        | (Err(Error::Type(m)), Kind::Type) => m.clone(),
        _ => panic!("{name}{params:?}: expected a {kind:?} error, got {r:?}"),
    };
    for n in needles {
        assert!(msg.contains(n), "{name}: message {msg:?} does not mention {n:?}");
    }
}

#[test]
fn broadcasting_and_equal_shape_errors() {
    expect(Kind::Shape, "broadcast_add", &[x(&[2, 3]), x(&[3, 2])], &[], &["broadcast_add", "(2, 3)", "(3, 2)"]);
    expect(Kind::Shape, "broadcast_mul", &[x(&[0, 3]), x(&[2, 3])], &[], &["broadcast_mul", "(0, 3)", "(2, 3)"]);
    expect(Kind::Shape, "elemwise_add", &[x(&[2, 3]), x(&[3])], &[], &["elemwise_add", "(2, 3)", "(3,)"]);
    expect(Kind::Shape, "_add", &[x(&[2, 3]), x(&[1, 3])], &[], &["elemwise_add", "(2, 3)", "(1, 3)"]);
    expect(Kind::Shape, "_power", &[x(&[4]), x(&[])], &[], &["_power", "(4,)", "()"]);
    expect(
        Kind::Shape,
        "broadcast_to",
        &[x(&[2, 3])],
        &[("shape", tuple(&[3, 3]))],
        &["broadcast_to", "(2, 3)", "(3, 3)"],
    );
    expect(Kind::Shape, "broadcast_to", &[x(&[2, 3])], &[("shape", tuple(&[3]))], &["broadcast_to", "(2, 3)"]);
    expect(Kind::Value, "broadcast_to", &[x(&[1])], &[("shape", tuple(&[-2, 3]))], &["broadcast_to"]);
}

#[test]
fn reshape_errors() {
    expect(Kind::Shape, "Reshape", &[x(&[2, 3])], &[("shape", tuple(&[4]))], &["Reshape", "(2, 3)", "(4,)"]);
    expect(
        Kind::Shape,
        "reshape",
        &[x(&[2, 3])],
        &[("shape", tuple(&[-1, -1]))],
        &["Reshape", "(2, 3)", "more than one -1"],
    );
    expect(Kind::Shape, "Reshape", &[x(&[2, 3])], &[("shape", tuple(&[-1, 4]))], &["Reshape", "(2, 3)"]);
    expect(Kind::Shape, "Reshape", &[x(&[2, 3])], &[("shape", tuple(&[0, 0, 0]))], &["Reshape", "code 0"]);
    expect(Kind::Shape, "Reshape", &[x(&[2, 3])], &[("shape", tuple(&[-4, 4, -1, 3]))], &["Reshape", "-4"]);
    expect(Kind::Shape, "Reshape", &[x(&[2, 3])], &[("shape", tuple(&[-5]))], &["Reshape", "invalid code"]);
    expect(Kind::Shape, "Reshape", &[x(&[2, 3])], &[("shape", tuple(&[-3, -3]))], &["Reshape", "-3"]);
    expect(Kind::Value, "Reshape", &[x(&[2, 3])], &[], &["Reshape", "shape"]);
    expect(Kind::Shape, "Flatten", &[x(&[])], &[], &["Reshape", "()"]);
    expect(Kind::Shape, "squeeze", &[x(&[2, 1])], &[("axis", tuple(&[0]))], &["squeeze", "(2, 1)"]);
}

#[test]
fn axis_errors() {
    expect(Kind::Index, "sum", &[x(&[2, 3, 4])], &[("axis", int(3))], &["sum", "axis 3", "3 dimensions"]);
    expect(Kind::Index, "mean", &[x(&[2, 3, 4])], &[("axis", tuple(&[-4]))], &["mean", "axis -4"]);
    expect(Kind::Value, "sum", &[x(&[2, 3, 4])], &[("axis", tuple(&[0, 0]))], &["sum", "duplicate"]);
    expect(Kind::Value, "max", &[x(&[2, 3, 4])], &[("axis", tuple(&[1, -2]))], &["max", "duplicate"]);
    expect(Kind::Index, "sum", &[x(&[])], &[("axis", int(0))], &["sum", "axis 0", "0 dimensions"]);
    expect(Kind::Index, "prod", &[x(&[])], &[("axis", int(-1))], &["prod", "axis -1"]);
    expect(Kind::Index, "argmax", &[x(&[2, 3])], &[("axis", int(2))], &["argmax", "axis 2"]);
    expect(Kind::Index, "argmin", &[x(&[])], &[("axis", int(0))], &["argmin", "axis 0"]);
    expect(Kind::Index, "norm", &[x(&[2])], &[("axis", int(1))], &["norm", "axis 1"]);
    expect(Kind::Value, "transpose", &[x(&[2, 3])], &[("axes", tuple(&[0, 0]))], &["transpose", "repeated"]);
    expect(Kind::Value, "transpose", &[x(&[2, 3])], &[("axes", tuple(&[0]))], &["transpose", "(2, 3)"]);
    expect(Kind::Index, "transpose", &[x(&[2, 3])], &[("axes", tuple(&[0, 2]))], &["transpose", "axis 2"]);
    expect(Kind::Index, "expand_dims", &[x(&[2, 3])], &[("axis", int(3))], &["expand_dims", "axis 3"]);
    expect(Kind::Index, "expand_dims", &[x(&[2, 3])], &[("axis", int(-4))], &["expand_dims", "axis -4"]);
    expect(Kind::Index, "squeeze", &[x(&[1, 3])], &[("axis", int(2))], &["squeeze", "axis 2"]);
    expect(Kind::Index, "slice_axis", &[x(&[2, 3])], &[("axis", int(2)), ("begin", int(0))], &["slice_axis", "axis 2"]);
    expect(
        Kind::Value,
        "slice",
        &[x(&[4])],
        &[("begin", tuple(&[0])), ("end", tuple(&[2])), ("step", tuple(&[0]))],
        &["slice", "step"],
    );
    expect(Kind::Value, "slice", &[x(&[4])], &[("begin", tuple(&[0, 1])), ("end", tuple(&[2]))], &["slice"]);
    expect(
        Kind::Index,
        "slice",
        &[x(&[4])],
        &[("begin", tuple(&[0, 0])), ("end", tuple(&[1, 1]))],
        &["too many indices", "(4,)"],
    );
}

#[test]
fn dot_errors() {
    expect(Kind::Shape, "dot", &[x(&[2, 3]), x(&[4, 5])], &[], &["dot", "(2, 3)", "(4, 5)"]);
    expect(
        Kind::Shape,
        "dot",
        &[x(&[2, 3]), x(&[2, 5])],
        &[("transpose_b", boolean(true))],
        &["dot", "(2, 3)", "(2, 5)", "transpose_b=true"],
    );
    expect(Kind::Shape, "dot", &[x(&[]), x(&[3])], &[], &["dot", "()", "(3,)"]);
    expect(Kind::Shape, "batch_dot", &[x(&[2, 3, 4]), x(&[3, 4, 5])], &[], &["batch_dot", "(2, 3, 4)", "(3, 4, 5)"]);
    expect(Kind::Shape, "batch_dot", &[x(&[3, 4]), x(&[4, 5])], &[], &["batch_dot", "(3, 4)", "(4, 5)"]);
    expect(Kind::Shape, "batch_dot", &[x(&[2, 3, 4]), x(&[2, 5, 4])], &[], &["batch_dot", "(2, 5, 4)"]);
    expect(Kind::DType, "dot", &[x(&[2, 2]), NDArray::zeros(&[2, 2], F64)], &[], &["dot", "float32", "float64"]);
}

#[test]
fn name_parameter_and_arity_errors() {
    expect(Kind::Value, "no_such_op", &[x(&[2])], &[], &["no_such_op"]);
    // An unknown parameter is a Type error (Python: a TypeError, like any unknown keyword).
    expect(Kind::Type, "sum", &[x(&[2])], &[("axsi", int(0))], &["sum", "axsi", "axis"]);
    expect(Kind::Value, "sum", &[x(&[2])], &[("axis", string("zero"))], &["sum", "axis", "zero"]);
    expect(Kind::Value, "sum", &[x(&[2])], &[("keepdims", string("maybe"))], &["sum", "keepdims"]);
    expect(Kind::Value, "norm", &[x(&[2])], &[("ord", int(3))], &["norm", "ord"]);
    expect(Kind::DType, "Cast", &[x(&[2])], &[("dtype", string("float8"))], &["float8"]);
    expect(Kind::Value, "_plus_scalar", &[x(&[2])], &[], &["_plus_scalar", "scalar"]);
    expect(Kind::Value, "_mul_scalar", &[x(&[2])], &[("scalar", string("two"))], &["_mul_scalar", "scalar"]);
    expect(Kind::Value, "expand_dims", &[x(&[2])], &[], &["expand_dims", "axis"]);
    expect(Kind::Value, "broadcast_to", &[x(&[2])], &[], &["broadcast_to", "shape"]);
    expect(Kind::Value, "exp", &[x(&[2]), x(&[2])], &[], &["exp", "expected 1", "got 2"]);
    expect(Kind::Value, "exp", &[], &[], &["exp", "expected 1", "got 0"]);
    expect(Kind::Value, "broadcast_add", &[x(&[2])], &[], &["broadcast_add", "lhs, rhs", "got 1"]);
    expect(Kind::Value, "dot", &[x(&[2]), x(&[2]), x(&[2])], &[], &["dot", "got 3"]);
    expect(Kind::Value, "expand_dims", &[x(&[2])], &[("axis", float(0.5))], &["expand_dims", "axis"]);
}

/// Empty or 0-d inputs never panic in any op (every failure is an `Error`).
#[test]
fn degenerate_inputs_never_panic() {
    let table = crate::table::cases();
    for c in &table {
        let params = (c.params)();
        let e = ferrograd::ops::registry::lookup(c.name).unwrap();
        for shape in [&[][..], &[0], &[0, 3], &[3, 0], &[1]] {
            let inputs: Vec<NDArray> = e.args.iter().map(|_| x(shape)).collect();
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| call(c.name, &inputs, &params)));
            assert!(r.is_ok(), "{} panicked on inputs of shape {shape:?}", c.name);
        }
    }
}
