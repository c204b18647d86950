//! The one name table: MXNet op name (and aliases) → constructor from [`Attrs`].
//!
//! `nd.<op>` and `sym.<op>` wrappers and the symbol JSON loader all resolve names here. Adding an
//! op means one entry in [`ENTRIES`] (plus the op itself and its tests).

use std::sync::Arc;

use super::binary::{Binary, BinaryKind, Scalar};
use super::conv::convolution::{conv_backward_op, convolution_op, deconvolution_op};
use super::conv::l2norm::l2_normalization_op;
use super::conv::norm::{batch_norm_backward_op, batch_norm_op, instance_norm_op, layer_norm_op};
use super::conv::pooling::{pool_backward_op, pool_max_gather_op, pooling_op};
use super::conv::upsampling::upsampling_op;
use super::elementwise_extra::{clip_op, smooth_l1_op, where_op};
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
use super::ordering::{argsort_op, sort_op, topk_op};
use super::reduce::{ArgReduce, Reduce, ReduceKind};
use super::sampling::{random_normal_op, random_randint_op, random_uniform_op, sample_normal_op, sample_uniform_op};
use super::shape::{BasicIndex, BroadcastTo, Cast, Fill, Identity, Reshape, Transpose};
use super::shape_bcast::{broadcast_axis_op, broadcast_like_op, slice_like_op};
use super::shape_index::{batch_take_op, diag_op, one_hot_op, pad_op, pick_op};
use super::shape_more::{add_n_op, concat_op, repeat_op, reverse_op, split_op, stack_op, swapaxis_op, tile_op};
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
    (concat_op) => {
        &["*data"]
    };
    (stack_op) => {
        &["*data"]
    };
    (add_n_op) => {
        &["*args"]
    };
    (broadcast_like_op) => {
        &["lhs", "rhs"]
    };
    (slice_like_op) => {
        &["data", "shape_like"]
    };
    (pick_op) => {
        &["data", "index"]
    };
    (batch_take_op) => {
        &["a", "indices"]
    };
    (where_op) => {
        &["condition", "x", "y"]
    };
    (random_uniform_op) => {
        &[]
    };
    (random_normal_op) => {
        &[]
    };
    (random_randint_op) => {
        &[]
    };
    (sample_uniform_op) => {
        &["low", "high"]
    };
    (sample_normal_op) => {
        &["mu", "sigma"]
    };
    (one_hot_op) => {
        &["indices"]
    };
    (convolution_op) => {
        &["data", "weight", "bias?"]
    };
    (deconvolution_op) => {
        &["data", "weight", "bias?"]
    };
    (pool_backward_op) => {
        &["ograd", "data"]
    };
    (pool_max_gather_op) => {
        &["head", "data"]
    };
    (batch_norm_op) => {
        &["data", "gamma", "beta", "moving_mean", "moving_var"]
    };
    (batch_norm_backward_op) => {
        &["ograd", "data", "gamma", "mean", "var", "flag", "mean_ograd", "var_ograd"]
    };
    (layer_norm_op) => {
        &["data", "gamma", "beta"]
    };
    (instance_norm_op) => {
        &["data", "gamma", "beta"]
    };
    (conv_backward_op) => {
        &["ograd", "data", "weight"]
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
    "rcbrt" [] () => unary, "1/cbrt(x), elementwise.";
    "erf" [] () => unary, "Gauss error function, elementwise.";
    "erfinv" [] () => unary, "Inverse error function on [-1, 1], elementwise (±inf at ±1).";
    "gamma" [] () => unary, "Gamma function, elementwise (NaN at poles 0, -1, ...).";
    "gammaln" [] () => unary, "ln|Γ(x)|, elementwise (+inf at poles).";
    "clip" [] ("a_min", "a_max") => clip_op, "Limit values to [a_min, a_max]; gradient passes inside (bounds included).";
    "where" [] () => where_op, "x where condition is nonzero, else y (condition may be 1-D, one entry per row).";
    "smooth_l1" [] ("scalar") => smooth_l1_op, "0.5(σx)² where |x| < 1/σ², else |x| - 0.5/σ² (scalar = σ).";
    "broadcast_add" ["broadcast_plus"] () => binary, "lhs + rhs with broadcasting.";
    "broadcast_sub" ["broadcast_minus"] () => binary, "lhs - rhs with broadcasting.";
    "broadcast_mul" [] () => binary, "lhs * rhs with broadcasting.";
    "broadcast_div" [] () => binary, "lhs / rhs with broadcasting.";
    "broadcast_mod" [] () => binary, "lhs % rhs with broadcasting (sign of rhs).";
    "broadcast_power" ["power"] () => binary, "lhs ** rhs with broadcasting.";
    "broadcast_floor_divide" [] () => binary, "floor(lhs / rhs) with broadcasting.";
    "broadcast_maximum" ["maximum"] () => binary, "max(lhs, rhs) with broadcasting.";
    "broadcast_minimum" ["minimum"] () => binary, "min(lhs, rhs) with broadcasting.";
    "broadcast_hypot" ["hypot"] () => binary, "sqrt(lhs² + rhs²) with broadcasting.";
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
    "Concat" ["concat"] ("dim", "num_args") => concat_op, "Join arrays along an existing axis (dim).";
    "stack" [] ("axis", "num_args") => stack_op, "Join equally shaped arrays along a new axis.";
    "SliceChannel" ["split"] ("num_outputs", "axis", "squeeze_axis") => split_op, "Split into num_outputs equal parts along an axis (one output each).";
    "add_n" ["ElementWiseSum"] ("num_args") => add_n_op, "Elementwise sum of equally shaped arrays.";
    "SwapAxis" ["swapaxes"] ("dim1", "dim2") => swapaxis_op, "Interchange two axes.";
    "tile" [] ("reps") => tile_op, "Repeat the whole array reps times per axis (NumPy tile).";
    "repeat" [] ("repeats", "axis") => repeat_op, "Repeat each element along an axis (flattened when axis is None).";
    "reverse" ["flip"] ("axis") => reverse_op, "Reverse the order of elements along the given axes.";
    "broadcast_like" [] ("lhs_axes", "rhs_axes") => broadcast_like_op, "Broadcast lhs to the shape of rhs (or of rhs's rhs_axes on lhs_axes).";
    "broadcast_axis" ["broadcast_axes"] ("axis", "size") => broadcast_axis_op, "Broadcast size-1 axes to the given sizes.";
    "slice_like" [] ("axes") => slice_like_op, "Slice data to the shape of shape_like on the given axes (all when empty).";
    "pick" [] ("axis", "keepdims", "mode") => pick_op, "One element per lane along axis at the given index (mode clip or wrap).";
    "batch_take" [] () => batch_take_op, "out[i] = a[i, indices[i]] for a of shape (N, M) (indices clipped).";
    "one_hot" [] ("depth", "on_value", "off_value", "dtype") => one_hot_op, "One-hot rows of length depth (out-of-range indices give all off_value).";
    "Pad" ["pad"] ("mode", "pad_width", "constant_value") => pad_op, "Pad with a constant, the edge values or a reflection (pad_width: before/after per axis).";
    "topk" [] ("axis", "k", "ret_typ", "is_ascend", "dtype") => topk_op, "Top k elements along an axis: values, indices, a mask or both (axis=None flattens).";
    "sort" [] ("axis", "is_ascend") => sort_op, "Sorted values along an axis (stable; axis=None flattens).";
    "argsort" [] ("axis", "is_ascend", "dtype") => argsort_op, "Indices that sort an axis (stable; axis=None flattens).";
    "_random_uniform" ["random_uniform", "uniform"] ("low", "high", "shape", "dtype", "ctx") => random_uniform_op, "Samples uniform in [low, high) (not differentiable).";
    "_random_normal" ["random_normal", "normal"] ("loc", "scale", "shape", "dtype", "ctx") => random_normal_op, "Samples from N(loc, scale²) (not differentiable).";
    "_random_randint" ["random_randint"] ("low", "high", "shape", "dtype", "ctx") => random_randint_op, "Integers uniform in [low, high) (not differentiable).";
    "_sample_uniform" ["sample_uniform"] ("shape", "dtype") => sample_uniform_op, "shape samples per element of low/high, uniform in [low, high) (not differentiable).";
    "_sample_normal" ["sample_normal"] ("shape", "dtype") => sample_normal_op, "shape samples per element of mu/sigma from N(mu, sigma²) (not differentiable).";
    "diag" [] ("k", "axis1", "axis2") => diag_op, "Diagonal k of a matrix (or of axis1/axis2 planes), or a matrix from a 1-D diagonal.";
    "Convolution" [] ("kernel", "stride", "dilate", "pad", "num_filter", "num_group", "no_bias", "layout", "workspace", "cudnn_tune", "cudnn_off") => convolution_op, "1-D/2-D/3-D convolution (NCW/NCHW/NCDHW) with stride, dilate, pad, num_group; weight (num_filter, C/num_group, kernel...).";
    "_backward_Convolution" [] ("kernel", "stride", "dilate", "pad", "num_filter", "num_group", "no_bias", "layout", "workspace", "cudnn_tune", "cudnn_off") => conv_backward_op, "Fused Convolution gradient: (data_grad, weight_grad[, bias_grad]) from (ograd, data, weight).";
    "Pooling" [] ("kernel", "pool_type", "global_pool", "stride", "pad", "pooling_convention", "count_include_pad", "p_value", "layout", "cudnn_off") => pooling_op, "Max/avg/sum/lp pooling over 1-D/2-D/3-D windows (global_pool, pooling_convention valid/full, count_include_pad).";
    "_backward_Pooling" [] ("kernel", "pool_type", "global_pool", "stride", "pad", "pooling_convention", "count_include_pad", "p_value", "layout", "cudnn_off") => pool_backward_op, "Data gradient of max/avg/sum Pooling from (ograd, data).";
    "_pooling_max_gather" [] ("kernel", "pool_type", "global_pool", "stride", "pad", "pooling_convention", "count_include_pad", "p_value", "layout", "cudnn_off") => pool_max_gather_op, "For each max-pooling window of data, head at the window's first maximum (gradient helper).";
    "BatchNorm" [] ("eps", "momentum", "fix_gamma", "use_global_stats", "output_mean_var", "axis", "cudnn_off", "min_calib_range", "max_calib_range") => batch_norm_op, "Batch normalisation over all axes but `axis`; aux moving_mean/moving_var are updated in place in the forward when training (moving = moving*momentum + batch*(1-momentum)), read otherwise; fix_gamma=True (default) treats gamma as 1.";
    "_backward_BatchNorm" [] ("eps", "fix_gamma", "axis") => batch_norm_backward_op, "Fused BatchNorm gradient (data, gamma, beta) from (ograd, data, gamma, mean, var, flag, mean_ograd, var_ograd).";
    "LayerNorm" [] ("axis", "eps", "output_mean_var") => layer_norm_op, "Layer normalisation over `axis` (default -1) with gamma/beta of length shape[axis]; output_mean_var adds mean and std.";
    "InstanceNorm" [] ("eps") => instance_norm_op, "Instance normalisation: per sample and channel over the spatial axes; gamma/beta per channel.";
    "UpSampling" [] ("scale", "sample_type", "num_args", "num_filter", "multi_input_mode", "workspace") => upsampling_op, "Nearest-neighbour upsampling of (N, C, H, W) by an integer scale (sample_type='nearest', one input).";
    "L2Normalization" [] ("eps", "mode") => l2_normalization_op, "x / sqrt(sum(x^2) + eps) over all axes but the batch (instance), the channel axis (channel) or the spatial axes (spatial).";
    "Deconvolution" [] ("kernel", "stride", "dilate", "pad", "adj", "target_shape", "num_filter", "num_group", "no_bias", "layout", "workspace", "cudnn_tune", "cudnn_off") => deconvolution_op, "Transposed convolution; weight (C, num_filter/num_group, kernel...); output s*(in-1)+d*(k-1)+1-2*pad+adj, or target_shape.";
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
