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

use super::elementwise_extra::{clip_op, smooth_l1_op, where_op};
use super::indexing::{gather_nd_op, scatter_nd_op, take_grad_op, take_op};
use super::ordering::{argsort_op, sort_op, topk_op};
use super::params::{OpDef, ParamDef};
use super::sampling::{random_normal_op, random_randint_op, random_uniform_op, sample_normal_op, sample_uniform_op};
use super::shape_bcast::{broadcast_axis_op, broadcast_like_op, slice_like_op};
use super::shape_index::{batch_take_op, diag_op, one_hot_op, pad_op, pick_op};
use super::shape_more::{add_n_op, concat_op, repeat_op, reverse_op, split_op, stack_op, swapaxis_op, tile_op};
use super::{Attrs, OpRef};
use crate::error::{Error, Result};

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
    "clip" [] ("a_min", "a_max") => clip_op, "Limit values to [a_min, a_max]; gradient passes inside (bounds included).";
    "where" [] () => where_op, "x where condition is nonzero, else y (condition may be 1-D, one entry per row).";
    "smooth_l1" [] ("scalar") => smooth_l1_op, "0.5(σx)² where |x| < 1/σ², else |x| - 0.5/σ² (scalar = σ).";
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
}

/// Every op module's declarations, in documentation order.
const MODULES: &[&[OpDef]] = &[
    super::unary::DEFS,
    super::binary::DEFS,
    super::reduce::DEFS,
    super::matmul::DEFS,
    super::shape::DEFS,
    super::shape_extra::DEFS,
    super::nn::activation::DEFS,
    super::nn::softmax::DEFS,
    super::nn::loss::DEFS,
    super::nn::dense::DEFS,
    super::nn::dropout::DEFS,
    super::conv::convolution::DEFS,
    super::conv::pooling::DEFS,
    super::conv::norm::DEFS,
    super::conv::upsampling::DEFS,
    super::conv::l2norm::DEFS,
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
