//! Op registry tests: forward results, gradient rules (first and second order, by finite
//! differences), registry completeness and error reporting. One test binary; the table in
//! `table.rs`, keyed by registry name, drives the per-family tests below.

mod backward_grad_cases;
#[path = "../common/mod.rs"]
mod common;
mod compat_cases;
mod contrib_cases;
mod conv_cases;
mod detect2_cases;
mod detect_cases;
mod elem_extra_cases;
mod errors;
mod forward_elem;
mod forward_indexing;
mod forward_reduce;
mod forward_shape;
mod grad;
mod gradcheck;
mod image_cases;
mod input_delta;
mod linalg20_cases;
mod missing_ops_cases;
mod nn_cases;
mod nn_loss_cases;
mod norm_cases;
mod ops20_cases;
mod optim_cases;
mod ordering_cases;
mod pool_cases;
mod registry;
mod rnn_cases;
mod sampling_dists_cases;
mod shape_more_cases;
mod sparse_dot_cases;
mod spatial20_cases;
mod table;

macro_rules! family_tests {
    ($($fwd:ident, $grad:ident => $family:literal;)*) => {
        $(
            #[test]
            fn $fwd() {
                table::run_family($family, false);
            }
            #[test]
            fn $grad() {
                table::run_family($family, true);
            }
        )*
    };
}

family_tests! {
    forward_unary, grad_unary => "unary";
    forward_binary, grad_binary => "binary";
    forward_scalar, grad_scalar => "scalar";
    forward_reduce, grad_reduce => "reduce";
    forward_matmul, grad_matmul => "matmul";
    forward_shape, grad_shape => "shape";
    forward_indexing, grad_indexing => "indexing";
    forward_shape_more, grad_shape_more => "shape_more";
    forward_elem_extra, grad_elem_extra => "elem_extra";
    forward_ordering, grad_ordering => "ordering";
    forward_conv, grad_conv => "conv";
    forward_nn, grad_nn => "nn";
    forward_loss, grad_loss => "loss";
    forward_contrib, grad_contrib => "contrib";
}

/// The optimizer update ops write their state inputs and are not differentiable: forward only.
#[test]
fn forward_optim() {
    table::run_family("optim", false);
}

#[test]
fn every_family_has_tests() {
    // The macro above instantiates exactly these families.
    let tested = [
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
    assert_eq!(table::FAMILIES, tested);
}
