//! The one name table: MXNet op name (and aliases) → the op's [`OpDef`].
//!
//! Each op module declares its ops next to their code (`pub const DEFS: &[OpDef]`); this file
//! lists the modules. `nd.<op>` and `sym.<op>`, the symbol JSON loader and Rust's
//! `ferrograd::call` all resolve names here, in O(1). Adding an op: its declaration in its op file, one line in the
//! module's `DEFS`, one row in the test table (`tests/ops/table.rs`).

use std::collections::HashMap;
use std::sync::LazyLock;

use super::params::OpDef;
use super::{Attrs, OpRef};
use crate::error::{Error, Result};

/// Every op module's declarations, in documentation order.
const MODULES: &[&[OpDef]] = &[
    super::unary::DEFS,
    super::binary::DEFS,
    super::reduce::DEFS,
    super::matmul::DEFS,
    super::layout::DEFS,
    super::broadcast::DEFS,
    super::slice::DEFS,
    super::join::DEFS,
    super::repeat::DEFS,
    super::convert::DEFS,
    super::fill::DEFS,
    super::pick::DEFS,
    super::pad::DEFS,
    super::diag::DEFS,
    super::indexing::DEFS,
    super::ordering::DEFS,
    super::select::DEFS,
    super::sampling::DEFS,
    super::sampling_dists::DEFS,
    super::pdf::DEFS,
    super::linalg::DEFS,
    super::sparse_dot::DEFS,
    super::nn::activation::DEFS,
    super::nn::act_grad::DEFS,
    super::nn::softmax::DEFS,
    super::nn::loss::DEFS,
    super::nn::dense::DEFS,
    super::nn::dropout::DEFS,
    super::nn::ctc::DEFS,
    super::conv::convolution::DEFS,
    super::conv::pooling::DEFS,
    super::conv::norm::DEFS,
    super::conv::upsampling::DEFS,
    super::conv::l2norm::DEFS,
    super::conv::lrn::DEFS,
    super::optim::DEFS,
    super::rnn::DEFS,
    super::contrib::DEFS,
    super::boxes::DEFS,
    super::attention::DEFS,
    super::linalg::products::DEFS,
    super::linalg::triangular::DEFS,
    super::linalg::diagonal::DEFS,
    super::linalg::factor::DEFS,
    super::linalg::eigen::DEFS,
    super::sequence::DEFS,
    super::nn::hard_sigmoid::DEFS,
    super::finite::DEFS,
    super::space_depth::DEFS,
    super::moments::DEFS,
    super::conv::group_norm::DEFS,
    super::nn::svm::DEFS,
    super::amp::DEFS,
    super::ravel::DEFS,
    super::im2col::DEFS,
    super::histogram::DEFS,
    super::conv::resize::DEFS,
    super::spatial::DEFS,
    super::roi::DEFS,
    super::deformable::DEFS,
    super::proposal::DEFS,
    super::correlation::DEFS,
    super::box_codec::DEFS,
    super::image::DEFS,
    super::multibox::DEFS,
    super::multibox_target::DEFS,
    super::crop::DEFS,
    super::krprod::DEFS,
    super::cumsum::DEFS,
];

/// Every registered op, each once.
static ALL: LazyLock<Vec<OpDef>> = LazyLock::new(|| MODULES.iter().flat_map(|m| m.iter()).copied().collect());

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
