//! The one name table: MXNet op name (and aliases) → constructor from [`Attrs`].
//!
//! `nd.<op>` and `sym.<op>` wrappers and the symbol JSON loader all resolve names here. Adding an
//! op means one entry in [`ENTRIES`] (plus the op itself and its tests).

use std::sync::Arc;

use super::binary::{Binary, BinaryKind, Scalar};
use super::indexing::{gather_nd_op, scatter_nd_op, take_grad_op, take_op};
use super::matmul::Dot;
use super::nn::activation::{activation_op, leaky_relu_op};
use super::nn::dense::{embedding_op, fully_connected_op, linalg_gemm2_op};
use super::nn::dropout::dropout_op;
use super::nn::loss::{
    block_grad_op, make_loss_op, regression_output_op, softmax_cross_entropy_op, softmax_output_grad_op,
    softmax_output_op,
};
use super::nn::softmax::{softmax_activation_op, softmax_grad_op, softmax_op};
use super::reduce::{ArgReduce, Reduce, ReduceKind};
use super::shape::{BasicIndex, BroadcastTo, Cast, Fill, Identity, Reshape, Transpose};
use super::unary::{Unary, UnaryKind};
use super::{Attrs, OpRef};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::SliceArg;

/// Builds an op from its parameters.
pub type Builder = fn(&Attrs) -> Result<OpRef>;

/// One registered op.
#[derive(Clone, Copy)]
pub struct Entry {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    /// Parameter names accepted (others are rejected with a clear error).
    pub params: &'static [&'static str],
    pub build: Builder,
    /// Input argument names, in order.
    pub args: &'static [&'static str],
    /// One-line description for docstrings.
    pub doc: &'static str,
}

fn unary(a: &Attrs) -> Result<OpRef> {
    let kind = UnaryKind::from_name(&a.op).ok_or_else(|| Error::Value(format!("unknown unary op {}", a.op)))?;
    Ok(Arc::new(Unary { kind }))
}

fn binary_kind(name: &str) -> Option<(BinaryKind, bool)> {
    BinaryKind::ALL.iter().find_map(|&k| {
        let (b, e, _, _) = k.names();
        if name == b {
            Some((k, true))
        } else if name == e {
            Some((k, false))
        } else {
            None
        }
    })
}

fn binary(a: &Attrs) -> Result<OpRef> {
    let (kind, broadcast) = binary_kind(&a.op).ok_or_else(|| Error::Value(format!("unknown binary op {}", a.op)))?;
    Ok(Arc::new(Binary { kind, broadcast }))
}

fn scalar(a: &Attrs) -> Result<OpRef> {
    let s = a.f64_req("scalar")?;
    // Reversed-comparison names are plain comparisons with the roles swapped (2 > x is x < 2).
    for &kind in BinaryKind::ALL {
        let (_, _, fwd, rev) = kind.names();
        if a.op == fwd {
            return Ok(Arc::new(Scalar { kind, scalar: s, reverse: false }));
        }
        if a.op == rev && !kind.is_predicate() {
            return Ok(Arc::new(Scalar { kind, scalar: s, reverse: true }));
        }
    }
    Err(Error::Value(format!("unknown scalar op {}", a.op)))
}

fn reduce(a: &Attrs) -> Result<OpRef> {
    let kind = match a.op.as_str() {
        "sum" | "sum_axis" => ReduceKind::Sum,
        "mean" => ReduceKind::Mean,
        "prod" => ReduceKind::Prod,
        "max" | "max_axis" => ReduceKind::Max,
        "min" | "min_axis" => ReduceKind::Min,
        "nansum" => ReduceKind::NanSum,
        "nanprod" => ReduceKind::NanProd,
        "norm" => match a.int_or("ord", 2)? {
            1 => ReduceKind::Norm1,
            2 => ReduceKind::Norm2,
            o => return Err(Error::Value(format!("norm: ord must be 1 or 2, got {o}"))),
        },
        other => return Err(Error::Value(format!("unknown reduction {other}"))),
    };
    Ok(Arc::new(Reduce {
        kind,
        axis: a.tuple("axis")?,
        keepdims: a.bool_or("keepdims", false)?,
        exclude: a.bool_or("exclude", false)?,
    }))
}

fn arg_reduce(a: &Attrs) -> Result<OpRef> {
    let axis = a.tuple("axis")?.map(|t| t.first().copied().unwrap_or(0));
    Ok(Arc::new(ArgReduce { max: a.op == "argmax", axis, keepdims: a.bool_or("keepdims", false)? }))
}

fn dot(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(Dot {
        transpose_a: a.bool_or("transpose_a", false)?,
        transpose_b: a.bool_or("transpose_b", false)?,
        batch: a.op == "batch_dot",
    }))
}

fn reshape(a: &Attrs) -> Result<OpRef> {
    let spec =
        a.tuple("shape")?.ok_or_else(|| Error::Value("Reshape: required parameter 'shape' is missing".into()))?;
    Ok(Arc::new(Reshape { spec, reverse: a.bool_or("reverse", false)? }))
}

fn flatten(_a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(Reshape { spec: vec![0, -1], reverse: false }))
}

fn transpose(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(Transpose { axes: a.tuple("axes")?.unwrap_or_default() }))
}

fn broadcast_to(a: &Attrs) -> Result<OpRef> {
    let shape =
        a.tuple("shape")?.ok_or_else(|| Error::Value("broadcast_to: required parameter 'shape' is missing".into()))?;
    if shape.iter().any(|&d| d < 0) {
        return Err(Error::Value(format!("broadcast_to: negative size in shape {shape:?}")));
    }
    Ok(Arc::new(BroadcastTo { shape: shape.into_iter().map(|d| d as usize).collect() }))
}

fn cast(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(Cast { dtype: DType::from_name(a.str_or("dtype", "float32")?)? }))
}

fn fill(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(Fill { value: if a.op == "ones_like" { 1.0 } else { 0.0 } }))
}

fn identity(_a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(Identity))
}

fn expand_dims(a: &Attrs) -> Result<OpRef> {
    let axis = a.int_or("axis", i64::MIN)?;
    if axis == i64::MIN {
        return Err(Error::Value("expand_dims: required parameter 'axis' is missing".into()));
    }
    Ok(Arc::new(super::shape_extra::ExpandDims { axis }))
}

fn squeeze(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(super::shape_extra::Squeeze { axis: a.tuple("axis")? }))
}

fn opt_tuple(a: &Attrs, key: &str) -> Result<Vec<Option<i64>>> {
    // MXNet writes open ends as None inside the tuple: "(1, None)"; parse leniently.
    Ok(match a.tuple(key) {
        Ok(Some(t)) => t.into_iter().map(Some).collect(),
        Ok(None) => vec![],
        Err(_) => {
            let raw = a.str_or(key, "")?;
            raw.trim_matches(|c| c == '(' || c == ')' || c == '[' || c == ']')
                .split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(|p| {
                    if p == "None" {
                        Ok(None)
                    } else {
                        p.parse().map(Some).map_err(|_| Error::Value(format!("slice: bad {key} value '{p}'")))
                    }
                })
                .collect::<Result<_>>()?
        }
    })
}

fn slice(a: &Attrs) -> Result<OpRef> {
    let (b, e, s) = (opt_tuple(a, "begin")?, opt_tuple(a, "end")?, opt_tuple(a, "step")?);
    if b.len() != e.len() || (!s.is_empty() && s.len() != b.len()) {
        return Err(Error::Value(format!("slice: begin {b:?}, end {e:?} and step {s:?} must have equal lengths")));
    }
    let args = b
        .iter()
        .zip(&e)
        .enumerate()
        .map(|(i, (&start, &stop))| {
            let step = s.get(i).copied().flatten().unwrap_or(1);
            if step == 0 {
                return Err(Error::Value("slice: step cannot be 0".into()));
            }
            Ok(SliceArg::Range { start, stop, step })
        })
        .collect::<Result<_>>()?;
    Ok(Arc::new(BasicIndex { args }))
}

fn slice_axis(a: &Attrs) -> Result<OpRef> {
    let end = match a.str_or("end", "") {
        Ok("None") => None,
        _ => a.tuple("end")?.and_then(|t| t.first().copied()),
    };
    Ok(Arc::new(super::shape_extra::SliceAxis { axis: a.int_or("axis", 0)?, begin: a.int_or("begin", 0)?, end }))
}

macro_rules! args_of {
    (binary) => {
        &["lhs", "rhs"]
    };
    (dot) => {
        &["lhs", "rhs"]
    };
    (take_op) => {
        &["a", "indices"]
    };
    (take_grad_op) => {
        &["ograd", "indices"]
    };
    (gather_nd_op) => {
        &["data", "indices"]
    };
    (scatter_nd_op) => {
        &["data", "indices"]
    };
    (fully_connected_op) => {
        &["data", "weight", "bias?"]
    };
    (leaky_relu_op) => {
        &["data", "gamma?"]
    };
    (linalg_gemm2_op) => {
        &["A", "B"]
    };
    (embedding_op) => {
        &["data", "weight"]
    };
    (softmax_grad_op) => {
        &["ograd", "output"]
    };
    (softmax_output_op) => {
        &["data", "label"]
    };
    (softmax_output_grad_op) => {
        &["output", "label"]
    };
    (softmax_cross_entropy_op) => {
        &["data", "label"]
    };
    (regression_output_op) => {
        &["data", "label"]
    };
    ($other:ident) => {
        &["data"]
    };
}

macro_rules! entries {
    ($($name:literal [$($alias:literal),*] ($($p:literal),*) => $build:ident, $doc:literal;)*) => {
        /// Every registered op.
        pub static ENTRIES: &[Entry] = &[
            $(Entry { name: $name, aliases: &[$($alias),*], params: &[$($p),*], build: $build, args: args_of!($build), doc: $doc }),*
        ];
    };
}

entries! {
    "negative" [] () => unary, "Numerical negative, elementwise.";
    "abs" [] () => unary, "Absolute value, elementwise.";
    "sign" [] () => unary, "Sign (-1, 0, 1), elementwise; gradient 0.";
    "square" [] () => unary, "x², elementwise.";
    "sqrt" [] () => unary, "Square root, elementwise.";
    "rsqrt" [] () => unary, "1/√x, elementwise.";
    "cbrt" [] () => unary, "Cube root, elementwise.";
    "reciprocal" [] () => unary, "1/x, elementwise.";
    "exp" [] () => unary, "e^x, elementwise.";
    "expm1" [] () => unary, "e^x - 1, elementwise (accurate near 0).";
    "log" [] () => unary, "Natural logarithm, elementwise.";
    "log2" [] () => unary, "Base-2 logarithm, elementwise.";
    "log10" [] () => unary, "Base-10 logarithm, elementwise.";
    "log1p" [] () => unary, "log(1 + x), elementwise (accurate near 0).";
    "sin" [] () => unary, "Sine, elementwise.";
    "cos" [] () => unary, "Cosine, elementwise.";
    "tan" [] () => unary, "Tangent, elementwise.";
    "arcsin" [] () => unary, "Inverse sine, elementwise.";
    "arccos" [] () => unary, "Inverse cosine, elementwise.";
    "arctan" [] () => unary, "Inverse tangent, elementwise.";
    "sinh" [] () => unary, "Hyperbolic sine, elementwise.";
    "cosh" [] () => unary, "Hyperbolic cosine, elementwise.";
    "tanh" [] () => unary, "Hyperbolic tangent, elementwise.";
    "arcsinh" [] () => unary, "Inverse hyperbolic sine, elementwise.";
    "arccosh" [] () => unary, "Inverse hyperbolic cosine, elementwise.";
    "arctanh" [] () => unary, "Inverse hyperbolic tangent, elementwise.";
    "sigmoid" [] () => unary, "Logistic sigmoid 1/(1+e^-x), elementwise.";
    "relu" [] () => unary, "max(x, 0), elementwise; gradient 0 at 0.";
    "softsign" [] () => unary, "x/(1+|x|), elementwise.";
    "floor" [] () => unary, "Floor, elementwise; gradient 0.";
    "ceil" [] () => unary, "Ceiling, elementwise; gradient 0.";
    "round" [] () => unary, "Round half away from zero, elementwise; gradient 0.";
    "rint" [] () => unary, "Round half to even, elementwise; gradient 0.";
    "fix" [] () => unary, "Round toward zero, elementwise; gradient 0.";
    "trunc" [] () => unary, "Truncate toward zero, elementwise; gradient 0.";
    "degrees" [] () => unary, "Radians to degrees, elementwise.";
    "radians" [] () => unary, "Degrees to radians, elementwise.";
    "logical_not" [] () => unary, "1 where x == 0 else 0, elementwise.";
    "_reciprocal_nonzero" [] () => unary, "1/x where x != 0, else 0 (gradient helper).";
    "broadcast_add" ["broadcast_plus"] () => binary, "lhs + rhs with broadcasting.";
    "broadcast_sub" ["broadcast_minus"] () => binary, "lhs - rhs with broadcasting.";
    "broadcast_mul" [] () => binary, "lhs * rhs with broadcasting.";
    "broadcast_div" [] () => binary, "lhs / rhs with broadcasting.";
    "broadcast_mod" [] () => binary, "lhs % rhs with broadcasting (sign of rhs).";
    "broadcast_power" [] () => binary, "lhs ** rhs with broadcasting.";
    "broadcast_floor_divide" [] () => binary, "floor(lhs / rhs) with broadcasting.";
    "broadcast_maximum" [] () => binary, "max(lhs, rhs) with broadcasting.";
    "broadcast_minimum" [] () => binary, "min(lhs, rhs) with broadcasting.";
    "broadcast_hypot" [] () => binary, "sqrt(lhs² + rhs²) with broadcasting.";
    "broadcast_equal" [] () => binary, "lhs == rhs (0/1) with broadcasting.";
    "broadcast_not_equal" [] () => binary, "lhs != rhs (0/1) with broadcasting.";
    "broadcast_greater" [] () => binary, "lhs > rhs (0/1) with broadcasting.";
    "broadcast_greater_equal" [] () => binary, "lhs >= rhs (0/1) with broadcasting.";
    "broadcast_lesser" [] () => binary, "lhs < rhs (0/1) with broadcasting.";
    "broadcast_lesser_equal" [] () => binary, "lhs <= rhs (0/1) with broadcasting.";
    "broadcast_logical_and" [] () => binary, "lhs and rhs (0/1) with broadcasting.";
    "broadcast_logical_or" [] () => binary, "lhs or rhs (0/1) with broadcasting.";
    "broadcast_logical_xor" [] () => binary, "lhs xor rhs (0/1) with broadcasting.";
    "elemwise_add" ["_add", "_plus", "_Plus"] () => binary, "lhs + rhs, equal shapes.";
    "elemwise_sub" ["_sub", "_minus", "_Minus"] () => binary, "lhs - rhs, equal shapes.";
    "elemwise_mul" ["_mul", "_Mul"] () => binary, "lhs * rhs, equal shapes.";
    "elemwise_div" ["_div", "_Div"] () => binary, "lhs / rhs, equal shapes.";
    "_mod" [] () => binary, "lhs % rhs, equal shapes.";
    "_power" ["_Power"] () => binary, "lhs ** rhs, equal shapes.";
    "_floor_divide" [] () => binary, "floor(lhs / rhs), equal shapes.";
    "_maximum" ["_Maximum"] () => binary, "max(lhs, rhs), equal shapes.";
    "_minimum" ["_Minimum"] () => binary, "min(lhs, rhs), equal shapes.";
    "_hypot" [] () => binary, "sqrt(lhs² + rhs²), equal shapes.";
    "_equal" [] () => binary, "lhs == rhs (0/1), equal shapes.";
    "_not_equal" [] () => binary, "lhs != rhs (0/1), equal shapes.";
    "_greater" [] () => binary, "lhs > rhs (0/1), equal shapes.";
    "_greater_equal" [] () => binary, "lhs >= rhs (0/1), equal shapes.";
    "_lesser" [] () => binary, "lhs < rhs (0/1), equal shapes.";
    "_lesser_equal" [] () => binary, "lhs <= rhs (0/1), equal shapes.";
    "_logical_and" [] () => binary, "lhs and rhs (0/1), equal shapes.";
    "_logical_or" [] () => binary, "lhs or rhs (0/1), equal shapes.";
    "_logical_xor" [] () => binary, "lhs xor rhs (0/1), equal shapes.";
    "_plus_scalar" ["_PlusScalar"] ("scalar") => scalar, "x + scalar.";
    "_minus_scalar" ["_MinusScalar"] ("scalar") => scalar, "x - scalar.";
    "_rminus_scalar" ["_RMinusScalar"] ("scalar") => scalar, "scalar - x.";
    "_mul_scalar" ["_MulScalar"] ("scalar") => scalar, "x * scalar.";
    "_div_scalar" ["_DivScalar"] ("scalar") => scalar, "x / scalar.";
    "_rdiv_scalar" ["_RDivScalar"] ("scalar") => scalar, "scalar / x.";
    "_mod_scalar" [] ("scalar") => scalar, "x % scalar.";
    "_rmod_scalar" [] ("scalar") => scalar, "scalar % x.";
    "_power_scalar" ["_PowerScalar"] ("scalar") => scalar, "x ** scalar.";
    "_rpower_scalar" ["_RPowerScalar"] ("scalar") => scalar, "scalar ** x.";
    "_floor_divide_scalar" [] ("scalar") => scalar, "floor(x / scalar).";
    "_rfloor_divide_scalar" [] ("scalar") => scalar, "floor(scalar / x).";
    "_maximum_scalar" ["_MaximumScalar"] ("scalar") => scalar, "max(x, scalar).";
    "_minimum_scalar" ["_MinimumScalar"] ("scalar") => scalar, "min(x, scalar).";
    "_hypot_scalar" [] ("scalar") => scalar, "sqrt(x² + scalar²).";
    "_equal_scalar" [] ("scalar") => scalar, "x == scalar (0/1).";
    "_not_equal_scalar" [] ("scalar") => scalar, "x != scalar (0/1).";
    "_greater_scalar" [] ("scalar") => scalar, "x > scalar (0/1).";
    "_greater_equal_scalar" [] ("scalar") => scalar, "x >= scalar (0/1).";
    "_lesser_scalar" [] ("scalar") => scalar, "x < scalar (0/1).";
    "_lesser_equal_scalar" [] ("scalar") => scalar, "x <= scalar (0/1).";
    "_logical_and_scalar" [] ("scalar") => scalar, "x and scalar (0/1).";
    "_logical_or_scalar" [] ("scalar") => scalar, "x or scalar (0/1).";
    "_logical_xor_scalar" [] ("scalar") => scalar, "x xor scalar (0/1).";
    "sum" ["sum_axis"] ("axis", "keepdims", "exclude") => reduce, "Sum over axes.";
    "mean" [] ("axis", "keepdims", "exclude") => reduce, "Mean over axes.";
    "prod" [] ("axis", "keepdims", "exclude") => reduce, "Product over axes.";
    "max" ["max_axis"] ("axis", "keepdims", "exclude") => reduce, "Maximum over axes.";
    "min" ["min_axis"] ("axis", "keepdims", "exclude") => reduce, "Minimum over axes.";
    "nansum" [] ("axis", "keepdims", "exclude") => reduce, "Sum over axes, NaN counted as 0.";
    "nanprod" [] ("axis", "keepdims", "exclude") => reduce, "Product over axes, NaN counted as 1.";
    "norm" [] ("ord", "axis", "keepdims") => reduce, "L1 or L2 norm over axes (flattened when axis is None).";
    "argmax" [] ("axis", "keepdims") => arg_reduce, "Index of the maximum along an axis (float32).";
    "argmin" [] ("axis", "keepdims") => arg_reduce, "Index of the minimum along an axis (float32).";
    "dot" [] ("transpose_a", "transpose_b", "forward_stype") => dot, "Matrix product of lhs and rhs.";
    "batch_dot" [] ("transpose_a", "transpose_b", "forward_stype") => dot, "Batched matrix product (B,M,K)·(B,K,N).";
    "Reshape" ["reshape"] ("shape", "reverse") => reshape, "Reshape with MXNet's codes 0, -1, -2, -3, -4.";
    "Flatten" ["flatten"] () => flatten, "Collapse all axes but the first.";
    "transpose" [] ("axes") => transpose, "Permute axes (reverse when axes is empty).";
    "broadcast_to" [] ("shape") => broadcast_to, "Broadcast to a shape (0 keeps the input size).";
    "Cast" ["cast"] ("dtype") => cast, "Convert to another dtype.";
    "zeros_like" [] () => fill, "Zeros with the input's shape and dtype.";
    "ones_like" [] () => fill, "Ones with the input's shape and dtype.";
    "_copy" ["identity"] () => identity, "A copy of the input.";
    "expand_dims" [] ("axis") => expand_dims, "Insert a size-1 axis.";
    "squeeze" [] ("axis") => squeeze, "Remove size-1 axes.";
    "slice" ["crop"] ("begin", "end", "step") => slice, "Basic slice with begin/end/step per axis.";
    "slice_axis" [] ("axis", "begin", "end") => slice_axis, "Slice along one axis.";
    "take" [] ("axis", "mode") => take_op, "Slices of a along axis at the given indices (mode clip, wrap or raise).";
    "_backward_take" [] ("axis", "mode", "shape") => take_grad_op, "Gradient of take: scatter-add into zeros of shape.";
    "gather_nd" [] () => gather_nd_op, "Elements or slices of data at index tuples indices[:, i] (shape (M, ...)).";
    "scatter_nd" [] ("shape") => scatter_nd_op, "Zeros of shape with data written at index tuples indices[:, i].";
    "_backward_gather_nd" [] ("shape") => scatter_nd_op, "Zeros of shape with data added at index tuples (gather_nd gradient).";
    "FullyConnected" [] ("num_hidden", "no_bias", "flatten") => fully_connected_op, "data·weightᵀ + bias; weight (num_hidden, in), data flattened to 2-D unless flatten=False.";
    "linalg_gemm2" ["_linalg_gemm2"] ("transpose_a", "transpose_b", "alpha", "axis") => linalg_gemm2_op, "alpha·op(A)·op(B) over the last two axes, batched over the leading ones.";
    "Embedding" [] ("input_dim", "output_dim", "dtype", "sparse_grad") => embedding_op, "Rows of weight (input_dim, output_dim) at the indices in data; out-of-range indices are clipped.";
    "Activation" [] ("act_type") => activation_op, "Elementwise activation: relu, sigmoid, softrelu, softsign or tanh.";
    "LeakyReLU" [] ("act_type", "slope", "lower_bound", "upper_bound") => leaky_relu_op, "Leaky ReLU family: leaky, elu, selu, gelu (tanh form), prelu (learned gamma per channel, axis 1).";
    "softmax" [] ("axis", "temperature", "dtype", "use_length") => softmax_op, "exp(x/t) normalised along axis (numerically stable).";
    "log_softmax" [] ("axis", "temperature", "dtype", "use_length") => softmax_op, "log of softmax(x/t) along axis (numerically stable).";
    "softmin" [] ("axis", "temperature", "dtype", "use_length") => softmax_op, "softmax(-x/t) along axis.";
    "_backward_softmax" [] ("axis", "temperature") => softmax_grad_op, "Softmax gradient s·y·(g - Σg·y) from ograd g and output y.";
    "_backward_log_softmax" [] ("axis", "temperature") => softmax_grad_op, "log_softmax gradient s·(g - exp(y)·Σg) from ograd g and output y.";
    "_backward_softmin" [] ("axis", "temperature") => softmax_grad_op, "softmin gradient -s·y·(g - Σg·y) from ograd g and output y.";
    "SoftmaxActivation" [] ("mode") => softmax_activation_op, "Softmax over all axes but the first (mode=instance) or over axis 1 (mode=channel).";
    "SoftmaxOutput" ["Softmax"] ("grad_scale", "ignore_label", "multi_output", "use_ignore", "preserve_shape", "normalization", "out_grad", "smooth_alpha") => softmax_output_op, "Softmax forward; backward is the cross-entropy loss gradient p - onehot(label) (MXNet semantics, head gradient ignored).";
    "_backward_SoftmaxOutput" [] ("grad_scale", "ignore_label", "multi_output", "use_ignore", "preserve_shape", "normalization", "out_grad", "smooth_alpha") => softmax_output_grad_op, "SoftmaxOutput's loss gradient from its output and label.";
    "softmax_cross_entropy" [] () => softmax_cross_entropy_op, "Sum over the batch of -log softmax(data)[label], shape (1,).";
    "LinearRegressionOutput" [] ("grad_scale") => regression_output_op, "Identity; backward is grad_scale·(data - label)/num_output (head gradient ignored).";
    "LogisticRegressionOutput" [] ("grad_scale") => regression_output_op, "sigmoid(data); backward is grad_scale·(sigmoid(data) - label)/num_output (head gradient ignored).";
    "MAERegressionOutput" [] ("grad_scale") => regression_output_op, "Identity; backward is grad_scale·sign(data - label)/num_output, sign(0) = -1 (head gradient ignored).";
    "MakeLoss" [] ("grad_scale", "valid_thresh", "normalization") => make_loss_op, "Identity; backward is the constant grad_scale (normalised by batch or valid count).";
    "make_loss" [] () => make_loss_op, "Identity; backward is ones (head gradient ignored).";
    "BlockGrad" ["stop_gradient"] () => block_grad_op, "Identity with zero gradient.";
    "Dropout" [] ("p", "mode", "axes", "cudnn_off") => dropout_op, "Drops elements with probability p in training (or mode=always), scaling the rest by 1/(1-p).";
}

/// Looks an op up by name or alias.
pub fn lookup(name: &str) -> Option<&'static Entry> {
    ENTRIES.iter().find(|e| e.name == name || e.aliases.contains(&name))
}

/// Builds an op by name from parameters.
pub fn create(name: &str, attrs: &Attrs) -> Result<OpRef> {
    let e = lookup(name)
        .ok_or_else(|| Error::Value(format!("Cannot find operator '{name}' in the ferrograd op registry")))?;
    attrs.check_known(e.params)?;
    let mut a = attrs.clone();
    a.op = e.name.to_string();
    (e.build)(&a)
}
