//! The one name table: MXNet op name (and aliases) → the op's [`OpDef`].
//!
//! Each op module declares its ops next to their code (`pub const DEFS: &[OpDef]`); this file
//! lists the modules. `nd.<op>` and `sym.<op>`, the symbol JSON loader and Rust's `ops::call` all
//! resolve names here, in O(1). Adding an op: its declaration in its op file, one line in the
//! module's `DEFS`, one row in the test table (`tests/ops/table.rs`).
//!
//! `LEGACY` holds the ops not yet moved to declared parameters: their parameters are names only
//! (untyped, no defaults shown). Declared ops take precedence over a legacy row of the same name.

use std::collections::HashMap;
use std::sync::LazyLock;

use super::conv::convolution::{conv_backward_op, convolution_op, deconvolution_op};
use super::conv::l2norm::l2_normalization_op;
use super::conv::norm::{batch_norm_backward_op, batch_norm_op, instance_norm_op, layer_norm_op};
use super::conv::pooling::{pool_backward_op, pool_max_gather_op, pooling_op};
use super::conv::upsampling::upsampling_op;
use super::nn::dense::{embedding_op, fully_connected_op, linalg_gemm2_op};
use super::nn::dropout::dropout_op;
use super::nn::loss::{
    block_grad_op, make_loss_op, regression_output_op, softmax_cross_entropy_op, softmax_output_grad_op,
    softmax_output_op,
};
use super::nn::softmax::{softmax_activation_op, softmax_grad_op, softmax_op};
use super::params::{OpDef, ParamDef};
use super::{Attrs, OpRef};
use crate::error::{Error, Result};

macro_rules! args_of {
    (binary) => {
        &["lhs", "rhs"]
    };
    (dot) => {
        &["lhs", "rhs"]
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

/// A parameter known by name only (an op not yet moved to declared parameters).
fn untyped(names: &[&'static str]) -> Vec<ParamDef> {
    names
        .iter()
        .map(|&name| ParamDef {
            name,
            doc: "",
            py_type: "Any".into(),
            choices: &[],
            default: Some(super::AttrValue::None),
        })
        .collect()
}

macro_rules! entries {
    ($($name:literal [$($alias:literal),*] ($($p:literal),*) => $build:ident, $doc:literal;)*) => {
        /// Ops not yet declared in their module (see the module doc).
        const LEGACY: &[OpDef] = &[
            $(OpDef {
                name: $name,
                aliases: &[$($alias),*],
                args: args_of!($build),
                doc: $doc,
                params: || untyped(&[$($p),*]),
                build: |a| {
                    a.check_declared(&[$($p),*])?;
                    $build(a)
                },
            }),*
        ];
    };
}

entries! {
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

/// Every op module's declarations, in documentation order.
const MODULES: &[&[OpDef]] = &[
    super::unary::DEFS,
    super::binary::DEFS,
    super::reduce::DEFS,
    super::matmul::DEFS,
    super::shape::DEFS,
    super::shape_extra::DEFS,
    super::shape_more::DEFS,
    super::shape_bcast::DEFS,
    super::shape_index::DEFS,
    super::indexing::DEFS,
    super::ordering::DEFS,
    super::elementwise_extra::DEFS,
    super::sampling::DEFS,
    super::nn::activation::DEFS,
    LEGACY,
];

/// Every registered op, each once (declared ops first, then legacy rows not declared).
static ALL: LazyLock<Vec<OpDef>> = LazyLock::new(|| {
    let mut seen = std::collections::HashSet::new();
    MODULES.iter().flat_map(|m| m.iter()).filter(|d| seen.insert(d.name)).copied().collect()
});

/// Name or alias → entry.
static BY_NAME: LazyLock<HashMap<&'static str, &'static OpDef>> = LazyLock::new(|| {
    let mut map = HashMap::new();
    for d in ALL.iter() {
        for n in std::iter::once(&d.name).chain(d.aliases) {
            map.entry(*n).or_insert(d);
        }
    }
    map
});

/// Every registered op.
pub fn entries() -> &'static [OpDef] {
    &ALL
}

/// Looks an op up by name or alias.
pub fn lookup(name: &str) -> Option<&'static OpDef> {
    BY_NAME.get(name).copied()
}

/// Builds an op by name from parameters (validated against its declaration).
pub fn create(name: &str, attrs: &Attrs) -> Result<OpRef> {
    let d = lookup(name)
        .ok_or_else(|| Error::Value(format!("Cannot find operator '{name}' in the ferrograd op registry")))?;
    build(d, attrs)
}

/// Builds the op of entry `d` (the op name in errors is the entry's, not the alias used).
pub fn build(d: &OpDef, attrs: &Attrs) -> Result<OpRef> {
    if attrs.op == d.name {
        return (d.build)(attrs);
    }
    let mut a = attrs.clone();
    a.op = d.name.to_string();
    (d.build)(&a)
}
