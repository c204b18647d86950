//! The dynamic tape (MXNet `autograd`).
//!
//! The graph lives with the tracked arrays: a recorded output ([`Tracked`]) holds an [`Entry`]
//! pointing at its [`Node`], a node holds its inputs' entries and the snapshots its gradient rule
//! needs. Dropping the outputs frees the graph; `backward` frees it unless `retain_graph`.
//! Recording and training flags are thread-local, as in MXNet. [`invoke`] is the single entry point
//! that runs an op and, when recording, records it; [`call`] does the same by op name.

mod backward;
mod custom;
mod history;
mod rows;
mod scope;
mod state;
mod tracked;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use parking_lot::Mutex;
use smallvec::SmallVec;

pub use backward::{backward, grad, grad_values, set_grad_ready_hook, BackwardArgs, GradReadyHook};
pub use custom::CustomBackward;
pub use history::{history_json, history_symbol};
pub use rows::{GradValue, RowGrad};
pub use scope::{pause, predict_mode, record, record_with, train_mode, RecordGuard};
pub use state::{is_recording, is_training, set_recording, set_training};
pub use tracked::Tracked;

use crate::error::{Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::{self, AttrValue, Ctx, OpRef, Saves};

pub use crate::ops::backprop::GradReq;

/// A leaf marked by `attach_grad` / `mark_variables`.
pub struct Variable {
    /// The dense gradient buffer; `None` for a row-sparse variable.
    pub(crate) grad: Mutex<Option<NDArray>>,
    /// The gradient of a variable marked row-sparse (`attach_grad(stype='row_sparse')`).
    pub(crate) rows: Option<rows::RowSparse>,
    pub(crate) req: GradReq,
    /// Set when a backward wrote the gradient (MXNet `_fresh_grad`).
    pub(crate) fresh: AtomicBool,
}

/// Up to two inline items without a heap allocation (most ops are unary or binary): recording
/// an op allocates only its node.
pub(crate) type Few<T> = SmallVec<[T; 2]>;

/// One recorded op application. The op is the last field, so a node and its op are a single
/// allocation (`Arc<Node<Scalar>>` coerces to `Arc<Node>`).
pub struct Node<O: ?Sized + ops::Op = dyn ops::Op> {
    pub(crate) inputs: Few<Option<Entry>>,
    pub(crate) in_metas: Few<Meta>,
    /// Snapshots for the gradient rule; `None` once freed by a backward without `retain_graph`.
    pub(crate) saved: Mutex<Option<Saved>>,
    pub(crate) op: O,
}

/// Dropping a long chain of nodes one by one would recurse once per node (and overflow the stack
/// for a graph of ~100k ops); instead a node hands the input nodes it owns alone to a work list.
impl<O: ?Sized + ops::Op> Drop for Node<O> {
    fn drop(&mut self) {
        let mut stack: Vec<Arc<Node>> = Vec::new();
        release_inputs(&mut self.inputs, self.saved.get_mut().take(), &mut stack);
        while let Some(mut n) = stack.pop() {
            if let Some(node) = Arc::get_mut(&mut n) {
                let saved = node.saved.get_mut().take();
                release_inputs(&mut node.inputs, saved, &mut stack);
            }
        }
    }
}

/// Moves the node handles this node holds the last reference to onto `stack`; others are simply
/// released (someone else still owns them, so no recursion happens).
fn release_inputs(inputs: &mut Few<Option<Entry>>, saved: Option<Saved>, stack: &mut Vec<Arc<Node>>) {
    let mut push = |e: Option<Entry>| {
        if let Some(Entry::Out(n, _)) = e {
            if Arc::strong_count(&n) == 1 {
                stack.push(n);
            }
        }
    };
    for e in inputs.drain(..) {
        push(e);
    }
    if let Some(saved) = saved {
        for mut x in saved.inputs {
            push(x.set_entry(None));
        }
    }
}

/// What a node's gradient rule reads. Each list is empty when the op does not need it (the rule
/// then gets placeholders), so a node that saves nothing allocates nothing for it.
#[derive(Default)]
pub(crate) struct Saved {
    /// Saved inputs keep their entries: higher-order gradients flow through them.
    pub(crate) inputs: Vec<Tracked>,
    pub(crate) outputs: Vec<NDArray>,
    /// Live handles (sharing storage, not snapshots) to the inputs the op updates when its
    /// gradient is taken ([`ops::Op::updated_by_backward`]).
    pub(crate) updated: Vec<NDArray>,
    /// The graph a custom node ran, for `get_symbol` (a hybridized block's cached graph).
    pub(crate) graph: Option<Arc<RecordedGraph>>,
}

/// The graph behind a custom node (a hybridized block's call, recorded as one node), so that
/// `get_symbol` can show what ran instead of an opaque function.
pub struct RecordedGraph {
    pub symbol: crate::symbol::Symbol,
    /// The symbol's argument name for each recorded input, in input order.
    pub input_names: Vec<String>,
    /// Show the graph's own ops (`true`), or one `_CachedOp` node reading the inputs (MXNet's
    /// `inline_limit`: small graphs are inlined).
    pub inline: bool,
}

/// An array's place in the graph: a marked variable or output `i` of a node.
#[derive(Clone)]
pub enum Entry {
    Var(Arc<Variable>),
    Out(Arc<Node>, usize),
}

impl Entry {
    /// Marks a new leaf with a gradient buffer (`attach_grad`, `mark_variables`).
    pub fn variable(grad: NDArray, req: GradReq) -> Entry {
        Entry::Var(Arc::new(Variable { grad: Mutex::new(Some(grad)), rows: None, req, fresh: AtomicBool::new(false) }))
    }

    /// Marks a new leaf of `shape` and `dtype` whose gradient is row-sparse: it holds only the
    /// rows a backward reaches (none yet), never a buffer of the whole shape.
    pub fn row_sparse_variable(shape: &[usize], dtype: crate::DType, req: GradReq) -> Result<Entry> {
        let rows = rows::RowSparse::new(shape, dtype)?;
        Ok(Entry::Var(Arc::new(Variable {
            grad: Mutex::new(None),
            rows: Some(rows),
            req,
            fresh: AtomicBool::new(false),
        })))
    }

    /// Whether this is a variable whose gradient is computed (`grad_req` other than `null`).
    pub fn requires_grad(&self) -> bool {
        matches!(self, Entry::Var(v) if v.req != GradReq::Null)
    }

    /// Whether this is a variable marked row-sparse.
    pub fn is_row_sparse(&self) -> bool {
        matches!(self, Entry::Var(v) if v.rows.is_some())
    }

    /// The gradient of a variable with `grad_req` other than `null`: its dense buffer, or for a
    /// row-sparse variable its rows (or the dense gradient a non-lookup contribution made).
    pub fn grad_value(&self) -> Option<GradValue> {
        match self {
            Entry::Var(v) if v.req != GradReq::Null => match &v.rows {
                Some(rs) => Some(rs.state.lock().clone().into_value()),
                None => v.grad.lock().clone().map(|g| GradValue::Dense(Tracked::new(g))),
            },
            _ => None,
        }
    }

    /// Drops the stored rows of a row-sparse variable (`zero_grad`); false for anything else.
    pub fn clear_rows(&self) -> bool {
        match self {
            Entry::Var(v) => match &v.rows {
                Some(rs) => {
                    rs.clear();
                    true
                }
                None => false,
            },
            Entry::Out(..) => false,
        }
    }

    /// The gradient buffer of a variable with `grad_req` other than `null`.
    /// A stable id of a marked variable (while it lives), as passed to a
    /// [`GradReadyHook`]; None for a recorded result.
    pub fn variable_id(&self) -> Option<usize> {
        match self {
            Entry::Var(v) => Some(Arc::as_ptr(v) as usize),
            Entry::Out(..) => None,
        }
    }

    pub fn grad_buffer(&self) -> Option<NDArray> {
        match self {
            Entry::Var(v) if v.req != GradReq::Null => v.grad.lock().clone(),
            _ => None,
        }
    }

    /// False for the output of a node whose history a backward freed (`retain_graph=False`).
    pub fn is_live(&self) -> bool {
        match self {
            Entry::Var(_) => true,
            Entry::Out(n, _) => n.saved.lock().is_some(),
        }
    }

    pub fn is_variable(&self) -> bool {
        matches!(self, Entry::Var(_))
    }

    pub fn fresh_grad(&self) -> bool {
        match self {
            Entry::Var(v) => v.fresh.load(std::sync::atomic::Ordering::Relaxed),
            _ => false,
        }
    }

    pub fn set_fresh_grad(&self, on: bool) {
        if let Entry::Var(v) = self {
            v.fresh.store(on, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// The name of the op that produced this entry; `None` for variables.
    pub fn op_name(&self) -> Option<&'static str> {
        match self {
            Entry::Out(n, _) => Some(n.op.name()),
            Entry::Var(_) => None,
        }
    }
}

const ASSIGN_IN_GRAPH: &str = "Assigning to NDArrays that are already in a computational graph will cause \
undefined behavior when evaluating gradients. Please call backward first to clear the graph or do this out side of \
a record section. Also note that you cannot use inplace operations like +=, *=, relu(x, out=x), y[idx]=x, etc \
inside a record section.";

/// An op call's inputs taken apart: the storage handles the forward reads (a slice, as
/// `Op::forward` takes them) and each one's place in the graph. Built by moving the tracked
/// inputs apart, so a call costs no reference count changes beyond the caller's own handles.
struct Inputs {
    arrays: SmallVec<[NDArray; 4]>,
    entries: SmallVec<[Option<Entry>; 4]>,
}

impl Inputs {
    fn take(inputs: impl IntoIterator<Item = Tracked>) -> Inputs {
        let (mut arrays, mut entries) = (SmallVec::new(), SmallVec::new());
        for x in inputs {
            let (a, e) = x.into_parts();
            arrays.push(a);
            entries.push(e);
        }
        Inputs { arrays, entries }
    }

    fn any_tracked(&self) -> bool {
        self.entries.iter().any(Option::is_some)
    }
}

/// Runs `op` and, when recording and some input is in the graph, records it. This is the one
/// entry point through which every tracked op call (Rust or Python) runs. The inputs are taken
/// by value (pass `xs.iter().cloned()` to keep them).
pub fn invoke(op: &OpRef, inputs: impl IntoIterator<Item = Tracked>) -> Result<Vec<Tracked>> {
    let inputs = Inputs::take(inputs);
    let mut outs = run_ctx(op.as_ref(), &inputs)?;
    if should_record(op.as_ref(), &inputs) {
        record_node(op.clone(), &inputs, &mut outs);
    }
    Ok(outs)
}

/// [`invoke`] for an op built for this call: when recorded, it moves into the node.
pub fn invoke_owned<O: ops::Op + 'static>(op: O, inputs: impl IntoIterator<Item = Tracked>) -> Result<Vec<Tracked>> {
    let inputs = Inputs::take(inputs);
    let mut outs = run_ctx(&op, &inputs)?;
    if should_record(&op, &inputs) {
        record_node(op, &inputs, &mut outs);
    }
    Ok(outs)
}

/// [`invoke`] for single-output ops.
pub fn invoke1(op: &OpRef, inputs: impl IntoIterator<Item = Tracked>) -> Result<Tracked> {
    Ok(invoke(op, inputs)?.swap_remove(0))
}

/// Builds the registered op `name` from `(key, value)` parameters and runs it through [`invoke`],
/// exactly as Python's `nd.<op>` does: the forward sees [`is_training`], the call is recorded when
/// [`is_recording`] and some input is tracked, and only the visible outputs are returned (Dropout's
/// mask stays hidden).
pub fn call(name: &str, inputs: &[Tracked], params: &[(&str, AttrValue)]) -> Result<Vec<Tracked>> {
    let op = ops::build(name, params, inputs.len())?;
    let mut outs = invoke(&op, inputs.iter().cloned())?;
    outs.truncate(op.num_visible_outputs());
    Ok(outs)
}

fn should_record(op: &dyn ops::Op, inputs: &Inputs) -> bool {
    is_recording() && (op.differentiable() || op.zero_gradient()) && inputs.any_tracked()
}

fn run_ctx(op: &dyn ops::Op, inputs: &Inputs) -> Result<Vec<Tracked>> {
    ops::run_as(op, &Ctx { is_train: is_training() }, &inputs.arrays)
}

/// Checks an in-place write of `value` (if any) into `target` before it happens. Inside `record()`
/// an array that is part of a graph may not be overwritten (MXNet's error: its recorded history
/// would no longer match its value), and a recorded value may not be written into another array
/// (the write is not an op, so its gradient would be lost silently).
pub fn check_inplace(target: &Tracked, value: Option<&Tracked>) -> Result<()> {
    if !is_recording() {
        return Ok(());
    }
    // An output whose graph a backward already freed is a constant again (MXNet clears it).
    if target.entry().is_some_and(Entry::is_live) {
        return Err(Error::Runtime(ASSIGN_IN_GRAPH.into()));
    }
    if value.is_some_and(Tracked::has_entry) {
        return Err(Error::Runtime(
            "Inplace operations (+=, -=, x[:]=, etc) are not supported when recording with autograd: \
the value assigned inside record() is part of a computational graph, and writing it \
into another array would drop its gradient. Build the result with operators instead (e.g. concat, stack, \
where), or assign value.detach() if no gradient should flow."
                .into(),
        ));
    }
    Ok(())
}

/// Records outputs computed elsewhere (a Python `autograd.Function`, a hybridized block's call)
/// as one node connecting every input to every output, whose gradient is `backward`'s. No tensor
/// is saved. `graph` is what the node ran, when it is a graph, for `get_symbol`.
pub fn record_custom(
    backward: Arc<dyn CustomBackward>,
    inputs: &[Tracked],
    outs: &mut [Tracked],
    graph: Option<RecordedGraph>,
) {
    let inputs = Inputs::take(inputs.iter().cloned());
    if inputs.any_tracked() {
        let op = custom::CustomOp {
            backward,
            in_metas: inputs.arrays.iter().map(NDArray::meta).collect(),
            out_metas: outs.iter().map(|y| y.meta()).collect(),
        };
        attach_node(op, &inputs, outs, Saved { graph: graph.map(Arc::new), ..Saved::default() });
    }
}

fn record_node<O: ops::Op + 'static>(op: O, inputs: &Inputs, outs: &mut [Tracked]) {
    let saves = op.saves();
    let keep_in = matches!(saves, Saves::Inputs | Saves::InputsAndOutputs);
    let keep_out = matches!(saves, Saves::Outputs | Saves::InputsAndOutputs);
    // Saved inputs keep their entries (higher-order gradients flow through them); saved outputs
    // carry none (it would point back at this node): backward gives it back.
    let saved_input = |(x, e): (&NDArray, &Option<Entry>)| Tracked::with_entry(x.saved_copy(), e.clone());
    let saved = Saved {
        inputs: if keep_in { inputs.arrays.iter().zip(&inputs.entries).map(saved_input).collect() } else { Vec::new() },
        outputs: if keep_out { outs.iter().map(|y| y.array().saved_copy()).collect() } else { Vec::new() },
        updated: op.updated_by_backward().iter().filter_map(|&i| inputs.arrays.get(i)).cloned().collect(),
        graph: None,
    };
    attach_node(op, inputs, outs, saved);
}

/// Makes `outs` the outputs of a new node reading `inputs`.
fn attach_node<O: ops::Op + 'static>(op: O, inputs: &Inputs, outs: &mut [Tracked], saved: Saved) {
    let node: Arc<Node> = Arc::new(Node {
        inputs: inputs.entries.iter().cloned().collect(),
        in_metas: inputs.arrays.iter().map(NDArray::meta).collect(),
        saved: Mutex::new(Some(saved)),
        op,
    });
    // The last output takes the node handle itself (one atomic increment fewer per op).
    let mut node = Some(node);
    let last = outs.len().saturating_sub(1);
    for (i, y) in outs.iter_mut().enumerate() {
        let n = if i == last { node.take() } else { node.clone() };
        y.set_entry(n.map(|n| Entry::Out(n, i)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::binary::{BinaryKind, Scalar};

    #[test]
    fn dropping_a_long_chain_does_not_overflow_the_stack() {
        // Runs in a thread with a small stack: a recursive drop of 200k nodes would overflow it.
        let t = std::thread::Builder::new().stack_size(256 * 1024).spawn(|| {
            let mut x = Tracked::new(NDArray::ones(&[2], crate::DType::F32));
            x.set_entry(Some(Entry::variable(NDArray::zeros(&[2], crate::DType::F32), GradReq::Write)));
            let prev = set_recording(true);
            let mut y = x.clone();
            for _ in 0..200_000 {
                let op = Scalar { kind: BinaryKind::Mul, scalar: 1.0, reverse: false };
                y = invoke_owned(op, [y]).expect("mul").swap_remove(0);
            }
            set_recording(prev);
            drop(y);
        });
        t.expect("spawn").join().expect("no stack overflow");
    }
}
