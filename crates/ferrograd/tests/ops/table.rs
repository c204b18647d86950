//! The op test table, keyed by registry name: every registered op has a forward case and, if
//! `Op::differentiable()`, a gradient case; ops whose gradient is undefined are listed with
//! `NONDIFF`, which must agree with the op's own `differentiable()`. Adding an op to the registry
//! without a line here fails `registry::every_op_has_test_cases`.

use crate::backward_grad_cases as bg;
use crate::common::*;
use crate::compat_cases as cg;
use crate::contrib_cases as ct;
use crate::detect2_cases::{self as d2, dcn_p, proposal_p, psroi_p};
use crate::detect_cases as dt;
use crate::elem_extra_cases as ee;
use crate::image_cases as im;
use crate::linalg20_cases as la;
use crate::missing_ops_cases as mo;
use crate::ops20_cases as o20;
use crate::optim_cases as op;
use crate::ordering_cases as oc;
use crate::rnn_cases as rc;
use crate::sampling_dists_cases as sd;
use crate::shape_more_cases as sm;
use crate::sparse_dot_cases as sdot;
use crate::{
    conv_cases as cc, forward_elem as fe, forward_indexing as fi, forward_reduce as fr, forward_shape as fs,
    grad as gr, norm_cases as nc, pool_cases as pc,
};
use crate::{nn_cases as nn, nn_loss_cases as nl};

use crate::spatial20_cases::{
    self as s20, adaptive_p, corr_p, grid_back_p, grid_p, resize_p, roi_align_p, roi_pool_p, st_p,
};

pub type CaseFn = fn(&'static str);

pub struct Case {
    pub name: &'static str,
    /// Test family (one `#[test]` per family runs its cases).
    pub family: &'static str,
    /// Sample parameters that build the op (for the registry checks).
    pub params: fn() -> Params,
    pub forward: CaseFn,
    /// `None`: the op is not differentiable (`Op::differentiable()` must say so).
    pub grad: Option<CaseFn>,
}

pub const NONDIFF: Option<CaseFn> = None;
pub const FAMILIES: &[&str] = &[
    "unary",
    "binary",
    "scalar",
    "reduce",
    "matmul",
    "shape",
    "indexing",
    "shape_more",
    "elem_extra",
    "ordering",
    "conv",
    "nn",
    "loss",
    "optim",
    "contrib",
];

fn none() -> Params {
    vec![]
}
fn scalar() -> Params {
    vec![("scalar", float(2.0))]
}
fn reshape_p() -> Params {
    vec![("shape", tuple(&[-1]))]
}
fn bto_p() -> Params {
    vec![("shape", tuple(&[2, 3]))]
}
fn cast_p() -> Params {
    vec![("dtype", string("float64"))]
}
fn axis_p() -> Params {
    vec![("axis", int(0))]
}
fn slice_p() -> Params {
    vec![("begin", tuple(&[0])), ("end", tuple(&[1]))]
}
fn take_grad_p() -> Params {
    vec![("shape", tuple(&[3, 2]))]
}
fn conv_p() -> Params {
    vec![("kernel", tuple(&[3, 3])), ("num_filter", int(2))]
}
fn rnn_p() -> Params {
    vec![("state_size", int(2)), ("num_layers", int(1)), ("mode", string("lstm"))]
}
fn pool_p() -> Params {
    vec![("kernel", tuple(&[2, 2])), ("pool_type", string("max"))]
}
fn upsampling_p() -> Params {
    vec![("scale", int(2)), ("sample_type", string("nearest"))]
}
fn slice_axis_p() -> Params {
    vec![("axis", int(0)), ("begin", int(0))]
}
fn scatter_p() -> Params {
    vec![("shape", tuple(&[3, 2]))]
}
fn fc_p() -> Params {
    vec![("num_hidden", int(3))]
}
fn emb_p() -> Params {
    vec![("input_dim", int(4)), ("output_dim", int(3))]
}
fn act_p() -> Params {
    vec![("act_type", string("relu"))]
}

fn split_p() -> Params {
    vec![("num_outputs", int(2))]
}
fn reps_p() -> Params {
    vec![("reps", tuple(&[2, 1]))]
}
fn repeats_p() -> Params {
    vec![("repeats", int(2)), ("axis", int(0))]
}
fn rev_p() -> Params {
    vec![("axis", tuple(&[0]))]
}
fn baxis_p() -> Params {
    vec![("axis", tuple(&[0])), ("size", tuple(&[3]))]
}
fn depth_p() -> Params {
    vec![("depth", int(3))]
}
fn pad_p() -> Params {
    vec![("mode", string("edge")), ("pad_width", tuple(&[1, 1, 0, 2]))]
}

fn topk_p() -> Params {
    vec![("k", int(2)), ("ret_typ", string("value"))]
}
fn randint_p() -> Params {
    vec![("low", int(0)), ("high", int(5))]
}
fn clip_p() -> Params {
    vec![("a_min", float(-1.0)), ("a_max", float(1.0))]
}
fn num_cols_p() -> Params {
    vec![("num_cols", int(3))]
}
fn full_p() -> Params {
    vec![("value", float(2.0))]
}
fn zipf_p() -> Params {
    vec![("range_max", int(10)), ("shape", tuple(&[1, 2]))]
}
fn smooth_p() -> Params {
    vec![("scalar", float(2.0))]
}

fn op_lr() -> Params {
    op::lr_p()
}
fn op_mom() -> Params {
    op::mom_p()
}
fn op_t() -> Params {
    op::t_p()
}
fn op_lamb1() -> Params {
    op::lamb1_p()
}
fn op_lamb2() -> Params {
    vec![("lr", float(0.1))]
}
fn op_adamw() -> Params {
    op::adamw_p()
}
fn op_multi() -> Params {
    op::multi_p()
}
fn bm_p() -> Params {
    vec![("threshold", float(0.1))]
}
fn heads_p() -> Params {
    vec![("heads", int(2))]
}
fn bnms_p() -> Params {
    vec![("shape", tuple(&[3, 2]))]
}

// ops20
fn o20_seq() -> Params {
    o20::sequence_p()
}
fn im_normalize() -> Params {
    im::normalize_p()
}
fn mo_lrn() -> Params {
    mo::lrn_p()
}
fn mo_crop() -> Params {
    mo::crop_p()
}
fn mo_split_v2() -> Params {
    mo::split_v2_p()
}
fn o20_block() -> Params {
    o20::space_depth_p()
}
fn o20_moments() -> Params {
    o20::moments_p()
}
fn o20_group_norm() -> Params {
    o20::group_norm_p()
}
fn o20_amp_cast() -> Params {
    vec![("dtype", string("float16"))]
}
fn o20_amp_multicast() -> Params {
    o20::amp_multicast_p()
}
fn o20_ravel() -> Params {
    o20::ravel_p()
}
fn o20_im2col() -> Params {
    o20::im2col_p()
}
fn o20_col2im() -> Params {
    o20::col2im_p()
}

macro_rules! table {
    ($($name:literal => $fam:ident, $params:ident, $fwd:path, $grad:expr;)*) => {
        pub fn cases() -> Vec<Case> {
            vec![$(Case { name: $name, family: stringify!($fam), params: $params, forward: $fwd, grad: $grad }),*]
        }
    };
}

table! {
    "negative" => unary, none, fe::unary, Some(gr::unary);
    "abs" => unary, none, fe::unary, Some(gr::unary);
    "sign" => unary, none, fe::unary, Some(gr::unary);
    "square" => unary, none, fe::unary, Some(gr::unary);
    "sqrt" => unary, none, fe::unary, Some(gr::unary);
    "rsqrt" => unary, none, fe::unary, Some(gr::unary);
    "cbrt" => unary, none, fe::unary, Some(gr::unary);
    "reciprocal" => unary, none, fe::unary, Some(gr::unary);
    "exp" => unary, none, fe::unary, Some(gr::unary);
    "expm1" => unary, none, fe::unary, Some(gr::unary);
    "log" => unary, none, fe::unary, Some(gr::unary);
    "log2" => unary, none, fe::unary, Some(gr::unary);
    "log10" => unary, none, fe::unary, Some(gr::unary);
    "log1p" => unary, none, fe::unary, Some(gr::unary);
    "sin" => unary, none, fe::unary, Some(gr::unary);
    "cos" => unary, none, fe::unary, Some(gr::unary);
    "tan" => unary, none, fe::unary, Some(gr::unary);
    "arcsin" => unary, none, fe::unary, Some(gr::unary);
    "arccos" => unary, none, fe::unary, Some(gr::unary);
    "arctan" => unary, none, fe::unary, Some(gr::unary);
    "sinh" => unary, none, fe::unary, Some(gr::unary);
    "cosh" => unary, none, fe::unary, Some(gr::unary);
    "tanh" => unary, none, fe::unary, Some(gr::unary);
    "arcsinh" => unary, none, fe::unary, Some(gr::unary);
    "arccosh" => unary, none, fe::unary, Some(gr::unary);
    "arctanh" => unary, none, fe::unary, Some(gr::unary);
    "sigmoid" => unary, none, fe::unary, Some(gr::unary);
    "relu" => unary, none, fe::unary, Some(gr::unary);
    "softsign" => unary, none, fe::unary, Some(gr::unary);
    "floor" => unary, none, fe::unary, Some(gr::unary);
    "ceil" => unary, none, fe::unary, Some(gr::unary);
    "round" => unary, none, fe::unary, Some(gr::unary);
    "rint" => unary, none, fe::unary, Some(gr::unary);
    "fix" => unary, none, fe::unary, Some(gr::unary);
    "trunc" => unary, none, fe::unary, Some(gr::unary);
    "degrees" => unary, none, fe::unary, Some(gr::unary);
    "radians" => unary, none, fe::unary, Some(gr::unary);
    "logical_not" => unary, none, fe::unary, NONDIFF;
    "_reciprocal_nonzero" => unary, none, fe::unary, Some(gr::unary);
    "broadcast_add" => binary, none, fe::binary, Some(gr::binary);
    "broadcast_sub" => binary, none, fe::binary, Some(gr::binary);
    "broadcast_mul" => binary, none, fe::binary, Some(gr::binary);
    "broadcast_div" => binary, none, fe::binary, Some(gr::binary);
    "broadcast_mod" => binary, none, fe::binary, Some(gr::binary);
    "broadcast_power" => binary, none, fe::binary, Some(gr::binary);
    "broadcast_floor_divide" => binary, none, fe::binary, NONDIFF;
    "broadcast_maximum" => binary, none, fe::binary, Some(gr::binary);
    "broadcast_minimum" => binary, none, fe::binary, Some(gr::binary);
    "broadcast_hypot" => binary, none, fe::binary, Some(gr::binary);
    "broadcast_equal" => binary, none, fe::binary, NONDIFF;
    "broadcast_not_equal" => binary, none, fe::binary, NONDIFF;
    "broadcast_greater" => binary, none, fe::binary, NONDIFF;
    "broadcast_greater_equal" => binary, none, fe::binary, NONDIFF;
    "broadcast_lesser" => binary, none, fe::binary, NONDIFF;
    "broadcast_lesser_equal" => binary, none, fe::binary, NONDIFF;
    "broadcast_logical_and" => binary, none, fe::binary, NONDIFF;
    "broadcast_logical_or" => binary, none, fe::binary, NONDIFF;
    "broadcast_logical_xor" => binary, none, fe::binary, NONDIFF;
    "elemwise_add" => binary, none, fe::binary, Some(gr::binary);
    "elemwise_sub" => binary, none, fe::binary, Some(gr::binary);
    "elemwise_mul" => binary, none, fe::binary, Some(gr::binary);
    "elemwise_div" => binary, none, fe::binary, Some(gr::binary);
    "_mod" => binary, none, fe::binary, Some(gr::binary);
    "_power" => binary, none, fe::binary, Some(gr::binary);
    "_floor_divide" => binary, none, fe::binary, NONDIFF;
    "_maximum" => binary, none, fe::binary, Some(gr::binary);
    "_minimum" => binary, none, fe::binary, Some(gr::binary);
    "_hypot" => binary, none, fe::binary, Some(gr::binary);
    "_equal" => binary, none, fe::binary, NONDIFF;
    "_not_equal" => binary, none, fe::binary, NONDIFF;
    "_greater" => binary, none, fe::binary, NONDIFF;
    "_greater_equal" => binary, none, fe::binary, NONDIFF;
    "_lesser" => binary, none, fe::binary, NONDIFF;
    "_lesser_equal" => binary, none, fe::binary, NONDIFF;
    "_logical_and" => binary, none, fe::binary, NONDIFF;
    "_logical_or" => binary, none, fe::binary, NONDIFF;
    "_logical_xor" => binary, none, fe::binary, NONDIFF;
    "_plus_scalar" => scalar, scalar, fe::scalar, Some(gr::scalar);
    "_minus_scalar" => scalar, scalar, fe::scalar, Some(gr::scalar);
    "_rminus_scalar" => scalar, scalar, fe::scalar, Some(gr::scalar);
    "_mul_scalar" => scalar, scalar, fe::scalar, Some(gr::scalar);
    "_div_scalar" => scalar, scalar, fe::scalar, Some(gr::scalar);
    "_rdiv_scalar" => scalar, scalar, fe::scalar, Some(gr::scalar);
    "_mod_scalar" => scalar, scalar, fe::scalar, Some(gr::scalar);
    "_rmod_scalar" => scalar, scalar, fe::scalar, Some(gr::scalar);
    "_power_scalar" => scalar, scalar, fe::scalar, Some(gr::scalar);
    "_rpower_scalar" => scalar, scalar, fe::scalar, Some(gr::scalar);
    "_floor_divide_scalar" => scalar, scalar, fe::scalar, NONDIFF;
    "_rfloor_divide_scalar" => scalar, scalar, fe::scalar, NONDIFF;
    "_maximum_scalar" => scalar, scalar, fe::scalar, Some(gr::scalar);
    "_minimum_scalar" => scalar, scalar, fe::scalar, Some(gr::scalar);
    "_hypot_scalar" => scalar, scalar, fe::scalar, Some(gr::scalar);
    "_equal_scalar" => scalar, scalar, fe::scalar, NONDIFF;
    "_not_equal_scalar" => scalar, scalar, fe::scalar, NONDIFF;
    "_greater_scalar" => scalar, scalar, fe::scalar, NONDIFF;
    "_greater_equal_scalar" => scalar, scalar, fe::scalar, NONDIFF;
    "_lesser_scalar" => scalar, scalar, fe::scalar, NONDIFF;
    "_lesser_equal_scalar" => scalar, scalar, fe::scalar, NONDIFF;
    "_logical_and_scalar" => scalar, scalar, fe::scalar, NONDIFF;
    "_logical_or_scalar" => scalar, scalar, fe::scalar, NONDIFF;
    "_logical_xor_scalar" => scalar, scalar, fe::scalar, NONDIFF;
    "sum" => reduce, none, fr::reduce, Some(gr::reduce);
    "mean" => reduce, none, fr::reduce, Some(gr::reduce);
    "prod" => reduce, none, fr::reduce, Some(gr::reduce);
    "max" => reduce, none, fr::reduce, Some(gr::reduce);
    "min" => reduce, none, fr::reduce, Some(gr::reduce);
    "nansum" => reduce, none, fr::reduce, Some(gr::reduce);
    "nanprod" => reduce, none, fr::reduce, Some(gr::reduce);
    "norm" => reduce, none, fr::reduce, Some(gr::reduce);
    "argmax" => reduce, none, fr::arg_reduce, NONDIFF;
    "argmin" => reduce, none, fr::arg_reduce, NONDIFF;
    "dot" => matmul, none, fr::dot, Some(gr::dot);
    "batch_dot" => matmul, none, fr::batch_dot, Some(gr::dot);
    "Reshape" => shape, reshape_p, fs::reshape, Some(gr::shape_op);
    "Flatten" => shape, none, fs::flatten, Some(gr::shape_op);
    "transpose" => shape, none, fs::transpose, Some(gr::shape_op);
    "broadcast_to" => shape, bto_p, fs::broadcast_to, Some(gr::shape_op);
    "Cast" => shape, cast_p, fs::cast, Some(gr::shape_op);
    "zeros_like" => shape, none, fs::fill_or_copy, Some(gr::shape_op);
    "ones_like" => shape, none, fs::fill_or_copy, Some(gr::shape_op);
    "_copy" => shape, none, fs::fill_or_copy, Some(gr::shape_op);
    "expand_dims" => shape, axis_p, fs::expand_dims, Some(gr::shape_op);
    "squeeze" => shape, none, fs::squeeze, Some(gr::shape_op);
    "slice" => shape, slice_p, fs::slice, Some(gr::shape_op);
    "slice_axis" => shape, slice_axis_p, fs::slice_axis, Some(gr::shape_op);
    "take" => indexing, none, fi::take, Some(fi::take_grad);
    "_backward_take" => indexing, take_grad_p, fi::backward_take, Some(fi::backward_take_grad);
    "gather_nd" => indexing, none, fi::gather_nd, Some(fi::gather_nd_grad);
    "scatter_nd" => indexing, scatter_p, fi::scatter_nd, Some(fi::scatter_nd_grad);
    "_backward_gather_nd" => indexing, scatter_p, fi::scatter_nd, Some(fi::scatter_nd_grad);
    "Concat" => shape_more, none, sm::concat, Some(sm::concat_grad);
    "stack" => shape_more, none, sm::stack, Some(sm::stack_grad);
    "SliceChannel" => shape_more, split_p, sm::split, Some(sm::split_grad);
    "_split_v2" => shape_more, mo_split_v2, mo::split_v2, Some(mo::split_v2_grad);
    "add_n" => shape_more, none, sm::add_n, Some(sm::add_n_grad);
    "SwapAxis" => shape_more, none, sm::swapaxis, Some(sm::swapaxis_grad);
    "tile" => shape_more, reps_p, sm::tile, Some(sm::tile_grad);
    "repeat" => shape_more, repeats_p, sm::repeat, Some(sm::repeat_grad);
    "reverse" => shape_more, rev_p, sm::reverse, Some(sm::reverse_grad);
    "broadcast_like" => shape_more, none, sm::broadcast_like, Some(sm::broadcast_like_grad);
    "broadcast_axis" => shape_more, baxis_p, sm::broadcast_axis, Some(sm::broadcast_axis_grad);
    "slice_like" => shape_more, none, sm::slice_like, Some(sm::slice_like_grad);
    "pick" => shape_more, none, sm::pick, Some(sm::pick_grad);
    "batch_take" => shape_more, none, sm::batch_take, Some(sm::batch_take_grad);
    "one_hot" => shape_more, depth_p, sm::one_hot, NONDIFF;
    "Pad" => shape_more, pad_p, sm::pad, Some(sm::pad_grad);
    "diag" => shape_more, none, sm::diag, Some(sm::diag_grad);
    "rcbrt" => elem_extra, none, ee::special, Some(ee::special_grad);
    "erf" => elem_extra, none, ee::special, Some(ee::special_grad);
    "erfinv" => elem_extra, none, ee::special, Some(ee::special_grad);
    "gamma" => elem_extra, none, ee::special, Some(ee::special_grad);
    "gammaln" => elem_extra, none, ee::special, Some(ee::special_grad);
    "clip" => elem_extra, clip_p, ee::clip, Some(ee::clip_grad);
    "_backward_relu" => elem_extra, none, ee::masked_grad, Some(ee::masked_grad_grad);
    "_backward_clip" => elem_extra, clip_p, ee::masked_grad, Some(ee::masked_grad_grad);
    "_backward_leaky_relu" => elem_extra, none, ee::masked_grad, Some(ee::masked_grad_grad);
    "where" => elem_extra, none, ee::where_, Some(ee::where_grad);
    "smooth_l1" => elem_extra, smooth_p, ee::smooth_l1, Some(ee::smooth_l1_grad);
    "topk" => ordering, topk_p, oc::topk, Some(oc::topk_grad);
    "sort" => ordering, none, oc::sort, Some(oc::sort_grad);
    "argsort" => ordering, none, oc::sort, NONDIFF;
    "_random_uniform" => ordering, none, oc::random, NONDIFF;
    "_random_normal" => ordering, none, oc::random, NONDIFF;
    "_random_randint" => ordering, randint_p, oc::random, NONDIFF;
    "_sample_uniform" => ordering, none, oc::random, NONDIFF;
    "_sample_normal" => ordering, none, oc::random, NONDIFF;
    "_random_gamma" => ordering, none, sd::dists, NONDIFF;
    "_random_exponential" => ordering, none, sd::dists, NONDIFF;
    "_random_poisson" => ordering, none, sd::dists, NONDIFF;
    "_random_negative_binomial" => ordering, none, sd::dists, NONDIFF;
    "_random_generalized_negative_binomial" => ordering, none, sd::dists, NONDIFF;
    "_sample_gamma" => ordering, none, sd::dists, NONDIFF;
    "_sample_exponential" => ordering, none, sd::dists, NONDIFF;
    "_sample_poisson" => ordering, none, sd::dists, NONDIFF;
    "_sample_negative_binomial" => ordering, none, sd::dists, NONDIFF;
    "_sample_generalized_negative_binomial" => ordering, none, sd::dists, NONDIFF;
    "_sample_multinomial" => ordering, none, sd::dists, NONDIFF;
    "_shuffle" => ordering, none, sd::dists, NONDIFF;
    "argmax_channel" => shape_more, none, cg::graph_ops, NONDIFF;
    "shape_array" => shape_more, none, cg::graph_ops, NONDIFF;
    "size_array" => shape_more, none, cg::graph_ops, NONDIFF;
    "reshape_like" => shape_more, none, cg::graph_ops, Some(cg::graph_ops_grad);
    "_identity_with_attr_like_rhs" => shape_more, none, cg::graph_ops, Some(cg::graph_ops_grad);
    "_sample_unique_zipfian" => ordering, zipf_p, cg::graph_ops, NONDIFF;
    "_zeros" => shape_more, none, cg::graph_ops, NONDIFF;
    "_ones" => shape_more, none, cg::graph_ops, NONDIFF;
    "_full" => shape_more, full_p, cg::graph_ops, NONDIFF;
    "_linalg_gelqf" => matmul, none, cg::gelqf, Some(cg::gelqf_grad);
    "_sparse_dot_csr" => matmul, num_cols_p, sdot::csr_dense, NONDIFF;
    "_sparse_dot_dense_csr" => matmul, num_cols_p, sdot::dense_csr, NONDIFF;
    "_random_pdf_uniform" => ordering, none, cg::pdf, Some(cg::pdf_grad);
    "_random_pdf_normal" => ordering, none, cg::pdf, Some(cg::pdf_grad);
    "_random_pdf_gamma" => ordering, none, cg::pdf, Some(cg::pdf_grad);
    "_random_pdf_exponential" => ordering, none, cg::pdf, Some(cg::pdf_grad);
    "_random_pdf_poisson" => ordering, none, cg::pdf, Some(cg::pdf_grad);
    "_random_pdf_negative_binomial" => ordering, none, cg::pdf, Some(cg::pdf_grad);
    "_random_pdf_generalized_negative_binomial" => ordering, none, cg::pdf, Some(cg::pdf_grad);
    "_random_pdf_dirichlet" => ordering, none, cg::pdf, Some(cg::pdf_grad);
    "Convolution" => conv, conv_p, cc::convolution, Some(cc::convolution_grad);
    "_backward_Convolution" => conv, conv_p, cc::conv_backward, Some(cc::conv_backward_grad);
    "Pooling" => conv, pool_p, pc::pooling, Some(pc::pooling_grad);
    "_backward_Pooling" => conv, pool_p, pc::pool_backward, Some(pc::pool_backward_grad);
    "_pooling_max_gather" => conv, pool_p, pc::max_gather, Some(pc::max_gather_grad);
    "BatchNorm" => conv, none, nc::batch_norm, Some(nc::batch_norm_grad);
    "_backward_BatchNorm" => conv, none, nc::batch_norm_backward, Some(nc::batch_norm_backward_grad);
    "LayerNorm" => conv, none, nc::layer_norm, Some(nc::layer_norm_grad);
    "InstanceNorm" => conv, none, nc::instance_norm, Some(nc::instance_norm_grad);
    "UpSampling" => conv, upsampling_p, pc::upsampling, Some(pc::upsampling_grad);
    "L2Normalization" => conv, none, nc::l2_normalization, Some(nc::l2_normalization_grad);
    "Deconvolution" => conv, conv_p, cc::deconvolution, Some(cc::deconvolution_grad);
    "RNN" => nn, rnn_p, rc::rnn, Some(rc::rnn_grad);
    "_backward_RNN" => nn, rnn_p, rc::rnn_backward, NONDIFF;
    "FullyConnected" => nn, fc_p, nn::fully_connected, Some(nn::fully_connected_grad);
    "linalg_gemm2" => nn, none, nn::linalg_gemm2, Some(nn::linalg_gemm2_grad);
    "Embedding" => nn, emb_p, nn::embedding, Some(nn::embedding_grad);
    "Activation" => nn, act_p, nn::activation, Some(nn::activation_grad);
    "LeakyReLU" => nn, none, nn::leaky_relu, Some(nn::leaky_relu_grad);
    "softmax" => nn, none, nn::softmax, Some(nn::softmax_grad);
    "log_softmax" => nn, none, nn::softmax, Some(nn::softmax_grad);
    "softmin" => nn, none, nn::softmax, Some(nn::softmax_grad);
    "_backward_softmax" => nn, none, nn::softmax_backward, Some(nn::softmax_backward_grad);
    "_backward_log_softmax" => nn, none, nn::softmax_backward, Some(nn::softmax_backward_grad);
    "_backward_softmin" => nn, none, nn::softmax_backward, Some(nn::softmax_backward_grad);
    "SoftmaxActivation" => nn, none, nn::softmax_activation, Some(nn::softmax_activation_grad);
    "SoftmaxOutput" => loss, none, nl::softmax_output, Some(nl::softmax_output_grad);
    "_backward_SoftmaxOutput" => loss, none, nl::softmax_output_backward, Some(nl::softmax_output_backward_grad);
    "softmax_cross_entropy" => loss, none, nl::softmax_cross_entropy, Some(nl::softmax_cross_entropy_grad);
    "CTCLoss" => loss, none, nl::ctc_loss, Some(nl::ctc_loss_grad);
    "LinearRegressionOutput" => loss, none, nl::regression_output, Some(nl::regression_output_grad);
    "LogisticRegressionOutput" => loss, none, nl::regression_output, Some(nl::regression_output_grad);
    "MAERegressionOutput" => loss, none, nl::regression_output, Some(nl::regression_output_grad);
    "MakeLoss" => loss, none, nl::make_loss, Some(nl::make_loss_grad);
    "make_loss" => loss, none, nl::make_loss, Some(nl::make_loss_grad);
    "BlockGrad" => loss, none, nl::block_grad, Some(nl::block_grad_grad);
    "Dropout" => loss, none, nl::dropout, Some(nl::dropout_grad);
    "sgd_update" => optim, op_lr, op::update, NONDIFF;
    "sgd_mom_update" => optim, op_mom, op::update, NONDIFF;
    "mp_sgd_update" => optim, op_lr, op::multi_single, NONDIFF;
    "mp_sgd_mom_update" => optim, op_mom, op::multi_single, NONDIFF;
    "signsgd_update" => optim, op_lr, op::update, NONDIFF;
    "signum_update" => optim, op_mom, op::update, NONDIFF;
    "nag_mom_update" => optim, op_mom, op::update, NONDIFF;
    "mp_nag_mom_update" => optim, op_mom, op::multi_single, NONDIFF;
    "adam_update" => optim, op_lr, op::update, NONDIFF;
    "_adamw_update" => optim, op_adamw, op::adamw, NONDIFF;
    "_mp_adamw_update" => optim, op_adamw, op::adamw, NONDIFF;
    "rmsprop_update" => optim, op_lr, op::update, NONDIFF;
    "rmspropalex_update" => optim, op_lr, op::update, NONDIFF;
    "ftrl_update" => optim, op_lr, op::update, NONDIFF;
    "ftml_update" => optim, op_t, op::update, NONDIFF;
    "lamb_update_phase1" => optim, op_lamb1, op::update, NONDIFF;
    "lamb_update_phase2" => optim, op_lamb2, op::lamb2, NONDIFF;
    "multi_sgd_update" => optim, op_multi, op::multi, NONDIFF;
    "multi_sgd_mom_update" => optim, op_multi, op::multi, NONDIFF;
    "multi_mp_sgd_update" => optim, op_multi, op::multi, NONDIFF;
    "multi_mp_sgd_mom_update" => optim, op_multi, op::multi, NONDIFF;
    // contrib (lead)
    "_contrib_quadratic" => contrib, none, ct::contrib, Some(ct::contrib_grad);
    "_contrib_div_sqrt_dim" => contrib, none, ct::contrib, Some(ct::contrib_grad);
    "_contrib_arange_like" => contrib, none, ct::contrib, Some(ct::contrib_grad);
    "_contrib_index_array" => contrib, none, ct::contrib, Some(ct::contrib_grad);
    "_contrib_index_copy" => contrib, none, ct::contrib, Some(ct::contrib_grad);
    "_contrib_box_iou" => contrib, none, ct::contrib, Some(ct::contrib_grad);
    "_contrib_box_nms" => contrib, none, ct::contrib, Some(ct::contrib_grad);
    "_backward_contrib_box_nms" => contrib, bnms_p, ct::contrib, Some(ct::contrib_grad);
    "_contrib_box_rows_gather" => contrib, none, ct::contrib, Some(ct::contrib_grad);
    "_contrib_bipartite_matching" => contrib, bm_p, ct::contrib, Some(ct::contrib_grad);
    "_contrib_gradientmultiplier" => contrib, none, ct::contrib, Some(ct::contrib_grad);
    "_contrib_round_ste" => contrib, none, ct::contrib, Some(ct::contrib_grad);
    "_contrib_sign_ste" => contrib, none, ct::contrib, Some(ct::contrib_grad);
    "_contrib_allclose" => contrib, none, ct::contrib, NONDIFF;
    "_contrib_boolean_mask" => contrib, none, mo::boolean_mask_node, NONDIFF;
    "_contrib_interleaved_matmul_selfatt_qk" => contrib, heads_p, ct::attention, Some(ct::attention_grad);
    "_contrib_interleaved_matmul_selfatt_valatt" => contrib, heads_p, ct::attention, Some(ct::attention_grad);
    "_contrib_interleaved_matmul_encdec_qk" => contrib, heads_p, ct::attention, Some(ct::attention_grad);
    "_contrib_interleaved_matmul_encdec_valatt" => contrib, heads_p, ct::attention, Some(ct::attention_grad);
    // linalg20
    "_linalg_gemm" => matmul, none, la::forward, Some(la::grad);
    "_linalg_syrk" => matmul, none, la::forward, Some(la::grad);
    "_linalg_trmm" => matmul, none, la::forward, Some(la::grad);
    "_linalg_trsm" => matmul, none, la::forward, Some(la::grad);
    "_linalg_extractdiag" => matmul, none, la::forward, Some(la::grad);
    "_linalg_makediag" => matmul, none, la::forward, Some(la::grad);
    "_linalg_extracttrian" => matmul, none, la::forward, Some(la::grad);
    "_linalg_maketrian" => matmul, none, la::forward, Some(la::grad);
    "_linalg_sumlogdiag" => matmul, none, la::forward, Some(la::grad);
    "_linalg_potrf" => matmul, none, la::forward, Some(la::grad);
    "_linalg_potri" => matmul, none, la::forward, Some(la::grad);
    "_linalg_inverse" => matmul, none, la::forward, Some(la::grad);
    "_linalg_det" => matmul, none, la::forward, Some(la::grad);
    "_linalg_slogdet" => matmul, none, la::forward, Some(la::grad);
    "_linalg_syevd" => matmul, none, la::forward, Some(la::grad);
    // nd.image
    "_image_to_tensor" => shape_more, none, im::forward, Some(im::grad);
    "_image_normalize" => shape_more, im_normalize, im::forward, Some(im::grad);
    "_image_flip_left_right" => shape_more, none, im::forward, Some(im::grad);
    "_image_flip_top_bottom" => shape_more, none, im::forward, Some(im::grad);
    // ops20
    "SequenceMask" => shape_more, o20_seq, o20::sequence, Some(o20::sequence_grad);
    "SequenceLast" => shape_more, o20_seq, o20::sequence, Some(o20::sequence_grad);
    "SequenceReverse" => shape_more, o20_seq, o20::sequence, Some(o20::sequence_grad);
    "hard_sigmoid" => elem_extra, none, o20::hard_sigmoid, Some(o20::hard_sigmoid_grad);
    "all_finite" => elem_extra, none, o20::all_finite, NONDIFF;
    "multi_all_finite" => elem_extra, none, o20::all_finite, NONDIFF;
    "depth_to_space" => shape_more, o20_block, o20::space_depth, Some(o20::space_depth_grad);
    "space_to_depth" => shape_more, o20_block, o20::space_depth, Some(o20::space_depth_grad);
    "moments" => reduce, o20_moments, o20::moments, Some(o20::moments_grad);
    "GroupNorm" => conv, o20_group_norm, o20::group_norm, Some(o20::group_norm_grad);
    "SVMOutput" => loss, none, o20::svm, Some(o20::svm_grad);
    "amp_cast" => elem_extra, o20_amp_cast, o20::amp_cast, Some(o20::amp_cast_grad);
    "amp_multicast" => elem_extra, o20_amp_multicast, o20::amp_multicast, Some(o20::amp_multicast_grad);
    "_ravel_multi_index" => indexing, o20_ravel, o20::ravel_index, NONDIFF;
    "_unravel_index" => indexing, o20_ravel, o20::ravel_index, NONDIFF;
    "im2col" => conv, o20_im2col, o20::im2col, Some(o20::im2col_grad);
    "col2im" => conv, o20_col2im, o20::im2col, Some(o20::im2col_grad);
    "_histogram" => reduce, none, o20::histogram, NONDIFF;
    // spatial20
    "_contrib_BilinearResize2D" => conv, resize_p, s20::resize, Some(s20::resize_grad);
    "_backward_contrib_BilinearResize2D" => conv, none, s20::resize_backward, Some(s20::resize_backward_grad);
    "_contrib_AdaptiveAvgPooling2D" => conv, adaptive_p, s20::adaptive, Some(s20::adaptive_grad);
    "_backward_contrib_AdaptiveAvgPooling2D" => conv, none, s20::adaptive_backward, Some(s20::adaptive_backward_grad);
    "GridGenerator" => conv, grid_p, s20::grid, Some(s20::grid_grad);
    "_backward_GridGenerator" => conv, grid_back_p, s20::grid_backward, Some(s20::grid_backward_grad);
    "BilinearSampler" => conv, none, s20::sampler, Some(s20::sampler_grad);
    "_backward_BilinearSampler" => conv, none, s20::sampler_backward, Some(bg::sampler_backward_grad);
    "SpatialTransformer" => conv, st_p, s20::transformer, Some(s20::transformer_grad);
    "ROIPooling" => conv, roi_pool_p, s20::roi_pooling, Some(s20::roi_pooling_grad);
    "_backward_ROIPooling" => conv, roi_pool_p, s20::roi_pooling_backward, Some(bg::roi_pooling_backward_grad);
    "_contrib_ROIAlign" => conv, roi_align_p, s20::roi_align, Some(s20::roi_align_grad);
    "_backward_ROIAlign" => conv, roi_align_p, s20::roi_align_backward, Some(bg::roi_align_backward_grad);
    "Correlation" => conv, corr_p, s20::correlation, Some(s20::correlation_grad);
    "_backward_Correlation" => conv, corr_p, s20::correlation_backward, Some(bg::correlation_backward_grad);
    // detect29
    "_contrib_box_encode" => contrib, none, dt::detect, Some(dt::detect_zero_grad);
    "_contrib_box_decode" => contrib, none, dt::detect, Some(dt::detect_zero_grad);
    "_contrib_MultiBoxPrior" => contrib, none, dt::detect, Some(dt::detect_zero_grad);
    "_contrib_MultiBoxDetection" => contrib, none, dt::detect, Some(dt::detect_zero_grad);
    "_contrib_MultiBoxTarget" => contrib, none, dt::detect, Some(dt::detect_zero_grad);
    // issue 20: detection operators
    "_contrib_PSROIPooling" => conv, psroi_p, d2::psroi_pooling, Some(d2::psroi_pooling_grad);
    "_backward_PSROIPooling" => conv, psroi_p, d2::psroi_pooling_backward, Some(bg::psroi_pooling_backward_grad);
    "_contrib_DeformableConvolution" => conv, dcn_p, d2::deformable, Some(d2::deformable_grad);
    "_backward_DeformableConvolution" => conv, dcn_p, d2::deformable_backward, NONDIFF;
    "_contrib_ModulatedDeformableConvolution" => conv, dcn_p, d2::deformable, Some(d2::deformable_grad);
    "_backward_ModulatedDeformableConvolution" => conv, dcn_p, d2::deformable_backward, NONDIFF;
    "_contrib_Proposal" => contrib, proposal_p, d2::proposal, Some(d2::proposal_zero_grad);
    "_contrib_MultiProposal" => contrib, proposal_p, d2::proposal, Some(d2::proposal_zero_grad);
    // issue 20: operator breadth
    "LRN" => conv, mo_lrn, mo::lrn, Some(mo::lrn_grad);
    "Crop" => shape_more, mo_crop, mo::crop, Some(mo::crop_grad);
    "khatri_rao" => matmul, none, mo::khatri_rao, Some(mo::khatri_rao_grad);
    "_np_cumsum" => reduce, none, mo::cumsum, Some(mo::cumsum_grad);
}

/// Runs one family's forward or gradient cases, collecting every failure before reporting.
pub fn run_family(family: &str, grad: bool) {
    let cases = cases();
    let mut failures = Vec::new();
    let mut ran = 0;
    for c in cases.iter().filter(|c| c.family == family) {
        let f = if grad {
            match c.grad {
                Some(g) => g,
                None => continue,
            }
        } else {
            c.forward
        };
        ran += 1;
        if let Err(e) = std::panic::catch_unwind(|| f(c.name)) {
            let msg = e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()));
            failures.push(format!("{}: {}", c.name, msg.unwrap_or_default()));
        }
    }
    assert!(ran > 0, "family {family} has no cases");
    assert!(failures.is_empty(), "{} of {ran} {family} cases failed:\n{}", failures.len(), failures.join("\n"));
}
