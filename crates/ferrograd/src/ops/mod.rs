//! The operator registry: every op is one declarative definition.
//!
//! An op states its MXNet name, parameters (parsed from keyword arguments and from MXNet's string
//! attributes alike, see [`Attrs`]), argument names, shape/dtype inference, a forward that writes
//! into preallocated outputs, and a gradient rule written in ferrograd ops against the [`Grad`]
//! builder. The builder is implemented eagerly (NDArrays, recorded under `create_graph`) and, later,
//! symbolically, so the same rule serves the tape and the executor. Ops never import either.

/// Runs `$body` with the type alias `$T` = `f32` or `f64` chosen by `$dt`; any other dtype is a
/// DType error naming the op (for kernels written only for floats). Defined before the op modules
/// so that all of them see it.
macro_rules! float_kernel {
    ($op:expr, $dt:expr, $T:ident => $body:expr) => {
        match $dt {
            $crate::dtype::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::dtype::DType::F64 => {
                type $T = f64;
                $body
            }
            other => Err($crate::error::Error::DType(format!("{}: unsupported dtype {other}", $op))),
        }
    };
}

pub mod amp;
pub mod attention;
pub mod attrs;
pub mod backprop;
pub mod binary;
pub mod box_codec;
pub mod boxes;
pub mod broadcast;
pub mod common;
pub mod contrib;
pub mod control_flow;
pub mod conv;
pub mod convert;
pub mod correlation;
pub mod crop;
pub mod cumsum;
pub mod deformable;
pub mod deformable_grad;
pub mod diag;
pub mod fill;
pub mod finite;
pub mod grad;
pub mod histogram;
pub mod im2col;
pub mod image;
pub mod indexing;
pub mod join;
pub mod krprod;
pub mod layout;
pub mod linalg;
pub mod matmul;
pub mod moments;
pub mod multibox;
pub mod multibox_target;
pub mod nn;
pub mod optim;
pub mod ordering;
pub mod pad;
pub mod params;
pub mod partial;
pub mod pdf;
pub mod pick;
pub mod proposal;
pub mod ravel;
pub mod reduce;
pub mod registry;
pub mod repeat;
pub mod rnn;
pub mod rnn_grad;
pub mod roi;
pub mod sampling;
pub mod sampling_dists;
pub mod select;
pub mod sequence;
pub mod slice;
pub mod space_depth;
pub mod sparse_dot;
pub mod spatial;
pub mod spatial_grad;
pub mod unary;
pub mod widen;

use std::sync::Arc;

pub use attrs::{AttrValue, Attrs};
pub use grad::{fit_to_input, unbroadcast, EagerGraph, Grad, GradGraph, Val};

use crate::error::Result;
use crate::ndarray::{Meta, NDArray};

/// Per-call context: what the forward may depend on besides its inputs.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ctx {
    /// Training mode (Dropout, BatchNorm).
    pub is_train: bool,
}

/// Which forward tensors the gradient rule reads (the tape saves only those).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Saves {
    None,
    Inputs,
    Outputs,
    InputsAndOutputs,
}

/// One operator with its parameters bound.
pub trait Op: Send + Sync + std::fmt::Debug {
    /// MXNet op name, used in symbol JSON and error messages.
    fn name(&self) -> &'static str;
    /// Argument names (`data`, `lhs`/`rhs`, ...), in input order.
    fn arg_names(&self) -> &'static [&'static str] {
        &["data"]
    }
    /// Auxiliary state inputs (BatchNorm's `moving_mean`, `moving_var`), after the arguments. The
    /// forward may update them in place (they share storage with the caller's arrays); they get
    /// no gradient.
    fn aux_names(&self) -> &'static [&'static str] {
        &[]
    }
    /// True for ops taking any number (>= 1) of inputs (`Concat`, `add_n`, `stack`).
    fn variadic(&self) -> bool {
        false
    }
    fn num_outputs(&self) -> usize {
        1
    }
    /// Outputs returned to the user; the rest (e.g. Dropout's mask) exist for the gradient rule.
    fn num_visible_outputs(&self) -> usize {
        self.num_outputs()
    }
    /// Output name suffixes when they are not `output`/`output<i>` (BatchNorm with
    /// `output_mean_var`: `output`, `mean`, `var`).
    fn output_names(&self) -> Option<&'static [&'static str]> {
        None
    }
    /// Explicitly set parameters as MXNet string attributes.
    fn attrs(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
    /// The graphs a control-flow node runs (`_foreach`'s body, ...); symbol JSON stores them in
    /// the node's `subgraphs` field. Empty for every other op.
    fn subgraphs(&self) -> Vec<crate::symbol::Symbol> {
        Vec::new()
    }
    /// Loss ops (`SoftmaxOutput`, `MakeLoss`, ...) and `BlockGrad` supply their own head
    /// gradient: an executor may run backward from them without `out_grads`.
    fn is_loss(&self) -> bool {
        false
    }
    /// Symbolic shape inference in the other direction: metas for inputs not given (a
    /// `FullyConnected` weight from its data), indexed like `inputs`. Only the op knows how its
    /// parameters shape them; the default infers nothing.
    fn infer_missing(&self, _inputs: &[Option<Meta>]) -> Vec<Option<Meta>> {
        Vec::new()
    }
    /// For an op without inputs whose parameters leave its output shape open (a sampler of
    /// `shape=()` or with 0 dimensions in a symbol, MXNet's "unknown"): the partial output shapes,
    /// which symbolic inference completes from the consumers. `None`: `infer` decides. Run
    /// imperatively, the op produces what `infer` says.
    fn open_outputs(&self) -> Option<Vec<partial::PartialShape>> {
        None
    }
    /// Partial shape inference (unknown dimensions, see [`partial`]): refines the input and
    /// output shapes from each other, forward and backward, for graphs whose shapes are only
    /// partly known. Called only while some input is incomplete (`infer` covers the rest). The
    /// default learns nothing; elementwise ops use `partial::same_shape`.
    fn infer_partial(
        &self,
        _inputs: &mut [partial::PartialShape],
        _outputs: &mut [partial::PartialShape],
    ) -> Result<()> {
        Ok(())
    }
    /// The output dtype when a parameter fixes it (`Cast`), for dtype inference without shapes;
    /// `None` = outputs take the inputs' dtype.
    fn fixed_dtype(&self) -> Option<crate::dtype::DType> {
        None
    }
    /// Output shapes and dtypes from input shapes and dtypes (no data needed).
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>>;
    /// Computes the outputs, which arrive allocated (contiguous) with the inferred metas.
    fn forward(&self, ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()>;
    /// For layout-only ops: the output as a view or lazy copy of the input, instead of `forward`.
    fn view(&self, _inputs: &[NDArray]) -> Option<Result<NDArray>> {
        None
    }
    /// Whether the op has a gradient rule (integer-valued ops such as comparisons do not).
    fn differentiable(&self) -> bool {
        true
    }
    /// For an op without a gradient rule: whether MXNet still records it with a zero gradient
    /// (comparisons, `argmax`, `one_hot`, `zeros_like`, ...), so that a backward from its output
    /// gives zero input gradients instead of failing with "not in a computational graph".
    fn zero_gradient(&self) -> bool {
        false
    }
    fn saves(&self) -> Saves {
        Saves::InputsAndOutputs
    }
    /// Inputs the op updates in place when its gradient is taken rather than in its forward
    /// (MXNet's `BatchNorm` folds the batch statistics into its moving averages in the backward
    /// pass). Both reverse sweeps keep live handles to these inputs and call
    /// [`Op::update_on_backward`] once per backward pass through the op. Empty for almost every op.
    fn updated_by_backward(&self) -> &'static [usize] {
        &[]
    }
    /// The update announced by [`Op::updated_by_backward`]: `targets` are live handles to those
    /// inputs (in that order), `outputs` the forward's outputs.
    fn update_on_backward(&self, _targets: &mut [NDArray], _outputs: &[NDArray]) -> Result<()> {
        Ok(())
    }
    /// Whether the op draws random numbers (two runs on equal inputs may differ).
    fn is_random(&self) -> bool {
        false
    }
    /// For an op linear in input `which`: adds to `out` (holding the output for `inputs`) the
    /// change caused by adding `delta` to element `index` (row-major) of that input, and returns
    /// true. Finite differences use it to update a layer in O(one output row or column) instead of
    /// recomputing the whole product. The default returns false: "recompute the forward".
    fn add_input_delta(
        &self,
        _inputs: &[NDArray],
        _which: usize,
        _index: usize,
        _delta: f64,
        _out: &mut NDArray,
    ) -> Result<bool> {
        Ok(false)
    }
    /// For an op reading whole rows of a table (`Embedding` with `sparse_grad`, `take` along
    /// axis 0) whose gradient goes to the table alone: where the table and the row numbers
    /// are. The tape keeps the gradient of a row-sparse variable read this way as (row numbers,
    /// output-gradient rows) instead of running [`Op::grad`]. `None` for every other op.
    fn row_lookup(&self) -> Option<indexing::RowLookup> {
        None
    }
    /// For a fused op: the values of the separate ops it computes without storing them,
    /// recomputed from its inputs and outputs for a monitor (`_fused_BatchNorm_relu`: BatchNorm's
    /// output). Empty for every other op.
    fn unstored_values(&self, _inputs: &[NDArray], _outputs: &[NDArray]) -> Result<Vec<NDArray>> {
        Ok(Vec::new())
    }
    /// Vector-Jacobian product: gradients w.r.t. each input (`None` = zero), possibly in a
    /// broadcast shape (the caller unbroadcasts). `out_grads` has one entry per output.
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>>;
}

/// A shared, parameter-bound op.
pub type OpRef = Arc<dyn Op>;

/// A shared op is itself an op (the tape stores shared ops by handle).
impl Op for OpRef {
    fn name(&self) -> &'static str {
        (**self).name()
    }
    fn arg_names(&self) -> &'static [&'static str] {
        (**self).arg_names()
    }
    fn aux_names(&self) -> &'static [&'static str] {
        (**self).aux_names()
    }
    fn variadic(&self) -> bool {
        (**self).variadic()
    }
    fn num_outputs(&self) -> usize {
        (**self).num_outputs()
    }
    fn num_visible_outputs(&self) -> usize {
        (**self).num_visible_outputs()
    }
    fn output_names(&self) -> Option<&'static [&'static str]> {
        (**self).output_names()
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        (**self).attrs()
    }
    fn subgraphs(&self) -> Vec<crate::symbol::Symbol> {
        (**self).subgraphs()
    }
    fn is_loss(&self) -> bool {
        (**self).is_loss()
    }
    fn infer_missing(&self, inputs: &[Option<Meta>]) -> Vec<Option<Meta>> {
        (**self).infer_missing(inputs)
    }
    fn infer_partial(&self, inputs: &mut [partial::PartialShape], outputs: &mut [partial::PartialShape]) -> Result<()> {
        (**self).infer_partial(inputs, outputs)
    }
    fn open_outputs(&self) -> Option<Vec<partial::PartialShape>> {
        (**self).open_outputs()
    }
    fn fixed_dtype(&self) -> Option<crate::dtype::DType> {
        (**self).fixed_dtype()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        (**self).infer(inputs)
    }
    fn forward(&self, ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        (**self).forward(ctx, inputs, outputs)
    }
    fn view(&self, inputs: &[NDArray]) -> Option<Result<NDArray>> {
        (**self).view(inputs)
    }
    fn differentiable(&self) -> bool {
        (**self).differentiable()
    }
    fn zero_gradient(&self) -> bool {
        (**self).zero_gradient()
    }
    fn saves(&self) -> Saves {
        (**self).saves()
    }
    fn updated_by_backward(&self) -> &'static [usize] {
        (**self).updated_by_backward()
    }
    fn update_on_backward(&self, targets: &mut [NDArray], outputs: &[NDArray]) -> Result<()> {
        (**self).update_on_backward(targets, outputs)
    }
    fn is_random(&self) -> bool {
        (**self).is_random()
    }
    fn add_input_delta(
        &self,
        inputs: &[NDArray],
        which: usize,
        index: usize,
        delta: f64,
        out: &mut NDArray,
    ) -> Result<bool> {
        (**self).add_input_delta(inputs, which, index, delta, out)
    }
    fn row_lookup(&self) -> Option<indexing::RowLookup> {
        (**self).row_lookup()
    }
    fn unstored_values(&self, inputs: &[NDArray], outputs: &[NDArray]) -> Result<Vec<NDArray>> {
        (**self).unstored_values(inputs, outputs)
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        (**self).grad(g, inputs, outputs, out_grads)
    }
}

/// Runs an op imperatively: views for layout ops, otherwise infer, allocate, forward.
pub fn run(op: &dyn Op, ctx: &Ctx, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
    run_as(op, ctx, inputs)
}

/// [`run`] returning the outputs wrapped as `T` (the autograd layer's tracked arrays) in the one
/// output list, so a wrapping caller allocates no second list per op.
pub fn run_as<T: From<NDArray>>(op: &dyn Op, ctx: &Ctx, inputs: &[NDArray]) -> Result<Vec<T>> {
    if let Some(v) = op.view(inputs) {
        let v = v?;
        // A broadcast view has no storage of its size, but its element count must still exist.
        crate::ndarray::checked_numel(op.name(), v.shape())?;
        return Ok(vec![T::from(v)]);
    }
    let metas: smallvec::SmallVec<[Meta; 3]> = inputs.iter().map(NDArray::meta).collect();
    let out_metas = op.infer(&metas)?;
    let mut outputs: smallvec::SmallVec<[NDArray; 2]> = smallvec::SmallVec::with_capacity(out_metas.len());
    for m in &out_metas {
        outputs.push(NDArray::try_uninit(op.name(), &m.shape, m.dtype)?);
    }
    crate::profiler::time_op(op.name(), || op.forward(ctx, inputs, &mut outputs))?;
    Ok(outputs.into_iter().map(T::from).collect())
}

/// [`run`] for single-output ops.
pub fn run1(op: &dyn Op, ctx: &Ctx, inputs: &[NDArray]) -> Result<NDArray> {
    let mut outs = run(op, ctx, inputs)?;
    Ok(outs.swap_remove(0))
}

/// Builds the registered op `name` from `(key, value)` parameters, as Python's keyword call does,
/// and checks that `n_inputs` inputs fit it. Running it is the caller's: [`run`] untracked, or the
/// autograd layer's `invoke`, which also records it.
pub fn build(name: &str, params: &[(&str, AttrValue)], n_inputs: usize) -> Result<OpRef> {
    let mut attrs = Attrs::new(name);
    for (k, v) in params {
        attrs.items.push((k.to_string(), v.clone()));
    }
    let op = registry::create(name, &attrs)?;
    check_arity(op.as_ref(), n_inputs)?;
    Ok(op)
}

/// Fails unless `n` inputs fit the op: its arguments then its auxiliary states, or at least one
/// input for a variadic op.
pub fn check_arity(op: &dyn Op, n: usize) -> Result<()> {
    if op.variadic() {
        if n == 0 {
            return Err(crate::Error::Value(format!("{}: expected at least one input, got none", op.name())));
        }
        return Ok(());
    }
    let names: Vec<&str> = op.arg_names().iter().chain(op.aux_names()).copied().collect();
    if n != names.len() {
        return Err(crate::Error::Value(format!(
            "{}: expected {} input(s) ({}), got {n}",
            op.name(),
            names.len(),
            names.join(", ")
        )));
    }
    Ok(())
}
