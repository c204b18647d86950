//! Reverse-mode sweep over the recorded graph.
//!
//! A topological walk from the heads visits every node on a path to the heads; gradient rules run
//! against a [`TapeGraph`] (which records them when `create_graph`, making the result
//! differentiable again); broadcasting is undone and gradients are accumulated here, in one place.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::rows::{self, GradValue, RowPart, RowState};
use super::{invoke, set_recording, set_training, Entry, GradReq, Node, Tracked, Variable};
use crate::error::{Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::backprop::{accumulate, apply_grad_req, head_gradient, propagate, GradSource};
use crate::ops::{Grad, GradGraph, OpRef, Val};

const NOT_IN_GRAPH: &str = "Cannot differentiate node because it is not in a computational graph. You need to set \
is_recording to true or use autograd.record() to save computational graphs for backward. If you want to differentiate \
the same graph twice, you need to pass retain_graph=True to backward.";

/// Options shared by `backward` and `grad`.
#[derive(Clone, Copy, Debug)]
pub struct BackwardArgs {
    pub retain_graph: bool,
    pub create_graph: bool,
    pub train_mode: bool,
}

/// Called by `backward` with a variable's gradient buffer and the variable's id
/// ([`Entry::variable_id`]) as soon as that gradient is final and written, while the rest of the
/// sweep is still to run (the hook point that lets distributed training start communicating a
/// gradient before backward ends). An error aborts the backward.
pub type GradReadyHook = Arc<dyn Fn(&NDArray, usize) -> Result<()> + Send + Sync>;

static GRAD_READY_HOOK: parking_lot::RwLock<Option<GradReadyHook>> = parking_lot::RwLock::new(None);

/// Installs (or, with `None`, removes) the process-wide [`GradReadyHook`]. Without a hook,
/// `backward` writes every gradient at the end of the sweep.
pub fn set_grad_ready_hook(hook: Option<GradReadyHook>) {
    *GRAD_READY_HOOK.write() = hook;
}

/// Early delivery of final variable gradients during a `backward` sweep: counts the uses of each
/// variable still to be swept and writes its gradient (then calls the hook) when none is left.
struct EarlyGrads {
    hook: GradReadyHook,
    remaining: PtrMap<usize, usize>,
    written: Vec<usize>,
}

impl EarlyGrads {
    fn new(hook: GradReadyHook, order: &[Arc<Node>]) -> Self {
        let mut remaining = PtrMap::default();
        for node in order {
            for e in node.inputs.iter().flatten() {
                // Row-sparse gradients are merged once, when the sweep ends.
                match e {
                    Entry::Var(v) if v.rows.is_none() => *remaining.entry(var_key(v)).or_insert(0) += 1,
                    _ => {}
                }
            }
        }
        EarlyGrads { hook, remaining, written: Vec::new() }
    }

    /// `node` has been swept: its variable inputs have one use fewer to wait for.
    fn node_done(&mut self, node: &Node, tape: &TapeGraph, grads: &PtrMap<GradKey, Val>) -> Result<()> {
        for e in node.inputs.iter().flatten() {
            let Entry::Var(v) = e else { continue };
            let key = var_key(v);
            let Some(left) = self.remaining.get_mut(&key) else { continue };
            *left -= 1;
            if *left > 0 {
                continue;
            }
            let Some(g) = grads.get(&GradKey::Var(key)).and_then(|&val| tape.value(val)) else { continue };
            self.written.push(key);
            if let Some(buf) = write_grad(v, Some(&g))? {
                (self.hook)(&buf, key)?;
            }
        }
        Ok(())
    }
}

/// A value of the backward pass: an array, or only the shape and dtype of a forward tensor that
/// the op did not save (its gradient rule may ask for the metadata, never for the values).
enum Slot {
    Array(Tracked),
    Unsaved(Meta),
}

/// Evaluates gradient rules on arrays, through `invoke` (so they are recorded when the
/// recording flag is on during a `create_graph` backward).
pub(super) struct TapeGraph {
    vals: Vec<Slot>,
    /// The op whose rule is running (named when a rule reads an unsaved tensor).
    current: &'static str,
    /// Inputs of the running rule that are not tracked (their gradient would be dropped).
    untracked: Vec<Val>,
}

impl TapeGraph {
    pub(super) fn push(&mut self, x: Tracked) -> Val {
        self.vals.push(Slot::Array(x));
        Val(self.vals.len() as u32 - 1)
    }

    fn push_unsaved(&mut self, m: &Meta) -> Val {
        self.vals.push(Slot::Unsaved(m.clone()));
        Val(self.vals.len() as u32 - 1)
    }

    pub(super) fn array(&self, v: Val) -> Result<Tracked> {
        match &self.vals[v.0 as usize] {
            Slot::Array(x) => Ok(x.clone()),
            Slot::Unsaved(_) => Err(Error::Runtime(format!(
                "internal: the gradient rule of `{}` read a tensor the op does not save (its `saves()` is wrong)",
                self.current
            ))),
        }
    }
}

impl GradGraph for TapeGraph {
    fn apply(&mut self, op: OpRef, inputs: &[Val]) -> Result<Vec<Val>> {
        let xs: Vec<Tracked> = inputs.iter().map(|&v| self.array(v)).collect::<Result<_>>()?;
        let outs = invoke(&op, xs)?;
        Ok(outs.into_iter().map(|o| self.push(o)).collect())
    }

    fn meta(&self, v: Val) -> Meta {
        match &self.vals[v.0 as usize] {
            Slot::Array(x) => x.meta(),
            Slot::Unsaved(m) => m.clone(),
        }
    }

    fn value(&self, v: Val) -> Option<NDArray> {
        self.array(v).ok().map(Tracked::into_array)
    }

    fn needs_grad(&self, v: Val) -> bool {
        !self.untracked.contains(&v)
    }
    /// Rules applied here are recorded (and so differentiable) under `create_graph` only.
    fn differentiable(&self) -> bool {
        super::state::is_recording()
    }
    fn as_any_mut(&mut self) -> Option<&mut dyn std::any::Any> {
        Some(self)
    }
}

/// A hasher for pointer-sized keys (node and variable addresses): one multiply instead of SipHash,
/// which dominated the per-node cost of small graphs.
#[derive(Default)]
struct PtrHasher(u64);

impl Hasher for PtrHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_usize(b as usize);
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = (self.0.rotate_left(5) ^ n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type PtrMap<K, V> = HashMap<K, V, BuildHasherDefault<PtrHasher>>;

fn node_key(n: &Arc<Node>) -> usize {
    Arc::as_ptr(n) as *const () as usize
}

fn var_key(v: &Arc<Variable>) -> usize {
    Arc::as_ptr(v) as usize
}

/// Where a gradient is collected: an output of a recorded node, or a variable.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum GradKey {
    Out(usize, usize),
    Var(usize),
}

fn grad_key(e: &Entry) -> GradKey {
    match e {
        Entry::Var(v) => GradKey::Var(var_key(v)),
        Entry::Out(n, i) => GradKey::Out(node_key(n), *i),
    }
}

/// Nodes reachable from the heads, in topological order (inputs before users), plus reachable
/// variables in discovery order. A node freed by an earlier backward is a constant (MXNet clears
/// its history), so the walk stops there.
fn topo(heads: &[Entry]) -> (Vec<Arc<Node>>, Vec<Arc<Variable>>) {
    let mut order = Vec::new();
    let mut vars = Vec::new();
    let mut seen: PtrMap<usize, ()> = PtrMap::default();
    // Iterative post-order DFS: (node, next input index).
    let mut stack: Vec<(Arc<Node>, usize)> = Vec::new();
    let mut visit = |e: &Entry, stack: &mut Vec<(Arc<Node>, usize)>, vars: &mut Vec<Arc<Variable>>| match e {
        Entry::Var(v) => {
            if seen.insert(var_key(v) | 1, ()).is_none() {
                vars.push(v.clone());
            }
        }
        Entry::Out(n, _) => {
            if seen.insert(node_key(n), ()).is_none() && n.saved.lock().is_some() {
                stack.push((n.clone(), 0));
            }
        }
    };
    for h in heads {
        visit(h, &mut stack, &mut vars);
        while let Some((n, i)) = stack.pop() {
            if i < n.inputs.len() {
                stack.push((n.clone(), i + 1));
                if let Some(e) = &n.inputs[i] {
                    visit(e, &mut stack, &mut vars);
                }
            } else {
                order.push(n);
            }
        }
    }
    (order, vars)
}

/// Restores the thread's flags when the sweep ends, however it ends.
struct FlagGuard(bool, bool);
impl Drop for FlagGuard {
    fn drop(&mut self) {
        set_recording(self.0);
        set_training(self.1);
    }
}

/// What a sweep found: the reachable variables, their gradients (by variable address), and the
/// gradients of the requested targets.
/// With a grad-ready hook, the variables whose gradient was already written come last.
struct Swept {
    vars: Vec<Arc<Variable>>,
    dense: PtrMap<usize, NDArray>,
    /// The gradients of row-sparse variables.
    rows: PtrMap<usize, RowState>,
    targets: Vec<Option<GradValue>>,
    written: Vec<usize>,
}

/// The core sweep: returns gradients for the requested entries (or every reachable variable).
fn sweep(
    heads: &[Tracked],
    head_grads: &[Option<Tracked>],
    targets: Option<&[Entry]>,
    args: BackwardArgs,
) -> Result<Swept> {
    if heads.len() != head_grads.len() {
        return Err(Error::Value("heads and head_grads must be lists of the same length".into()));
    }
    let mut head_entries = Vec::with_capacity(heads.len());
    for h in heads {
        let e = h.entry().cloned().ok_or_else(|| Error::Runtime(NOT_IN_GRAPH.into()))?;
        if let Entry::Out(n, _) = &e {
            if n.saved.lock().is_none() {
                return Err(Error::Runtime(NOT_IN_GRAPH.into()));
            }
        }
        head_entries.push(e);
    }
    let (order, vars) = topo(&head_entries);
    if targets.is_none() && !vars.iter().any(|v| v.req != GradReq::Null) {
        return Err(Error::Runtime("There are no inputs in computation graph that require gradients.".into()));
    }
    if let Some(ts) = targets {
        for (i, t) in ts.iter().enumerate() {
            let reachable = match t {
                Entry::Var(v) => vars.iter().any(|w| Arc::ptr_eq(v, w)),
                Entry::Out(n, _) => order.iter().any(|m| Arc::ptr_eq(n, m)),
            };
            if !reachable {
                return Err(Error::Runtime(format!(
                    "Cannot differentiate with respect to the {}-th variable because it is unreachable from the outputs.",
                    i + 1
                )));
            }
        }
    }

    let hook = if targets.is_none() { GRAD_READY_HOOK.read().clone() } else { None };
    let mut early = hook.map(|h| EarlyGrads::new(h, &order));
    let _guard = FlagGuard(set_recording(args.create_graph), set_training(args.train_mode));
    let mut tape = TapeGraph { vals: Vec::new(), current: "", untracked: Vec::new() };
    // Gradient accumulated per (node, output) and per variable.
    let mut grads: PtrMap<GradKey, Val> = PtrMap::default();
    // What row lookups sent to row-sparse variables, in sweep order (merged at the end).
    let mut row_parts: PtrMap<usize, Vec<RowPart>> = PtrMap::default();

    for (i, ((h, e), hg)) in heads.iter().zip(&head_entries).zip(head_grads).enumerate() {
        let g = match (head_gradient(hg.as_ref().map(Tracked::array), &h.meta(), &format!("head {i}"))?, hg) {
            // Given in the head's dtype: used as is, so under `create_graph` the result is
            // differentiable with respect to it too.
            (Some(g), Some(given)) if g.dtype() == given.dtype() => given.clone(),
            (Some(cast), _) => Tracked::new(cast),
            (None, _) => Tracked::new(NDArray::ones(h.shape(), h.dtype())),
        };
        let v = tape.push(g);
        accumulate(&mut Grad::new(&mut tape), &mut grads, grad_key(e), v)?;
    }

    for node in order.iter().rev() {
        let key = node_key(node);
        // Output shapes are not stored in the node (recording stays cheap); inference is exact.
        let out_metas = node.op.infer(&node.in_metas)?;
        let gys: Vec<Option<Val>> = (0..out_metas.len()).map(|i| grads.get(&GradKey::Out(key, i)).copied()).collect();
        if gys.iter().all(Option::is_none) {
            if let Some(early) = early.as_mut() {
                early.node_done(node, &tape, &grads)?;
            }
            continue;
        }
        // Clone the snapshots out of the lock: a gradient rule may run user code (Function).
        let (saved_in, saved_out, mut updated) = {
            let saved = node.saved.lock();
            let saved = saved.as_ref().ok_or_else(|| Error::Runtime(NOT_IN_GRAPH.into()))?;
            (saved.inputs.clone(), saved.outputs.clone(), saved.updated.clone())
        };
        let gys: Vec<Val> = gys
            .iter()
            .zip(&out_metas)
            .map(|(g, m)| g.unwrap_or_else(|| tape.push(Tracked::new(NDArray::zeros(&m.shape, m.dtype)))))
            .collect();
        let xs: Vec<Val> = (node.in_metas.iter().enumerate())
            .map(|(i, m)| match saved_in.get(i) {
                Some(x) => tape.push(x.clone()),
                None => tape.push_unsaved(m),
            })
            .collect();
        let ys: Vec<Val> = (out_metas.iter().enumerate())
            .map(|(i, m)| match saved_out.get(i) {
                Some(y) if args.create_graph => {
                    tape.push(Tracked::with_entry(y.clone(), Some(Entry::Out(node.clone(), i))))
                }
                Some(y) => tape.push(Tracked::new(y.clone())),
                None => tape.push_unsaved(m),
            })
            .collect();
        tape.current = node.op.name();
        tape.untracked.clear();
        tape.untracked.extend(xs.iter().zip(&node.inputs).filter(|(_, e)| e.is_none()).map(|(v, _)| *v));
        // A row lookup reading a row-sparse variable sends it rows instead of running its rule
        // (a dense scatter; the table is the only input such a rule gives a gradient).
        let row_table = if args.create_graph { None } else { row_part(node, &saved_in, &tape, gys[0]) };
        if let Some((key, part)) = row_table {
            row_parts.entry(key).or_default().push(part);
        } else {
            let keys = node.inputs.iter().map(|e| e.as_ref().map(grad_key));
            propagate(&mut Grad::new(&mut tape), &node.op, &xs, &ys, &gys, keys, &mut grads)?;
        }
        if !updated.is_empty() && args.train_mode {
            node.op.update_on_backward(&mut updated, &saved_out)?;
        }
        if let Some(early) = early.as_mut() {
            early.node_done(node, &tape, &grads)?;
        }
    }

    // Row-sparse variables: their rows merged once, with any dense contribution added in.
    let mut rows_by_var: PtrMap<usize, RowState> = PtrMap::default();
    for v in &vars {
        let (Some(rs), key) = (&v.rows, var_key(v)) else { continue };
        let parts = row_parts.remove(&key).unwrap_or_default();
        let dense = grads.get(&GradKey::Var(key)).and_then(|&g| tape.value(g));
        if let Some(state) = rows::finish(&rs.shape, rs.dtype, dense, &parts)? {
            rows_by_var.insert(key, state);
        }
    }
    // Requested gradients keep their entries: under `create_graph` they are differentiable.
    let target_grads = targets.map(|ts| {
        ts.iter()
            .map(|t| match t {
                Entry::Var(v) if v.rows.is_some() && !args.create_graph => {
                    rows_by_var.get(&var_key(v)).map(|s| s.clone().into_value())
                }
                _ => grads.get(&grad_key(t)).and_then(|&v| tape.array(v).ok()).map(GradValue::Dense),
            })
            .collect()
    });
    let by_var: PtrMap<usize, NDArray> = (grads.into_iter())
        .filter_map(|(k, v)| match k {
            GradKey::Var(k) if !rows_by_var.contains_key(&k) => Some((k, tape.value(v)?)),
            _ => None,
        })
        .collect();
    if !args.retain_graph {
        for n in &order {
            *n.saved.lock() = None;
        }
    }
    let written = early.map(|e| e.written).unwrap_or_default();
    Ok(Swept { vars, dense: by_var, rows: rows_by_var, targets: target_grads.unwrap_or_default(), written })
}

/// For a row lookup whose table is a row-sparse variable: that variable's key and the part it
/// receives (the saved row numbers and the output gradient `gy`). `None` for anything else, or
/// when the row numbers were not saved (the dense rule runs then).
fn row_part(node: &Node, saved_in: &[Tracked], tape: &TapeGraph, gy: Val) -> Option<(usize, RowPart)> {
    let lookup = node.op.row_lookup()?;
    let Some(Some(Entry::Var(v))) = node.inputs.get(lookup.table) else { return None };
    v.rows.as_ref()?;
    let indices = saved_in.get(lookup.indices)?.array().clone();
    let rows = tape.value(gy)?;
    Some((var_key(v), RowPart { indices, rows, lookup, op: node.op.name() }))
}

/// `autograd.backward`: writes gradients into every reachable variable per its `grad_req`.
pub fn backward(heads: &[Tracked], head_grads: &[Option<Tracked>], args: BackwardArgs) -> Result<()> {
    let mut swept = sweep(heads, head_grads, None, args)?;
    for v in swept.vars {
        let key = var_key(&v);
        if let Some(rs) = &v.rows {
            let Some(state) = swept.rows.remove(&key) else { continue };
            rs.store(v.req, state)?;
            v.fresh.store(v.req != GradReq::Null, Ordering::Relaxed);
            continue;
        }
        match swept.dense.get(&key) {
            Some(g) if !swept.written.contains(&key) => {
                write_grad(&v, Some(g))?;
            }
            Some(_) => {}
            // Reached only through ops without a gradient for it (comparisons, argmax, ...):
            // 'write' leaves zeros, as in MXNet, not the previous pass's gradient.
            None => {
                write_grad(&v, None)?;
            }
        }
    }
    Ok(())
}

/// Writes `g` (zeros when `None`) into `v`'s gradient buffer per its `grad_req`; returns the
/// buffer if written.
fn write_grad(v: &Variable, g: Option<&NDArray>) -> Result<Option<NDArray>> {
    let mut slot = v.grad.lock();
    let Some(buf) = slot.as_mut() else { return Ok(None) };
    if v.req == GradReq::Null {
        return Ok(None);
    }
    apply_grad_req(buf, v.req, g, GradSource::Fresh)?;
    v.fresh.store(true, Ordering::Relaxed);
    Ok(Some(buf.clone()))
}

/// `autograd.grad`: gradients of the heads w.r.t. `variables`, returned (never written into
/// `.grad`), tracked (differentiable again under `create_graph`); rows for a row-sparse
/// variable (unless `create_graph`). Each variable must be a marked array with `grad_req` other
/// than `null`.
pub fn grad_values(
    heads: &[Tracked],
    head_grads: &[Option<Tracked>],
    variables: &[Tracked],
    args: BackwardArgs,
) -> Result<Vec<GradValue>> {
    if variables.is_empty() {
        return Err(Error::Value("variables cannot be an empty list.".into()));
    }
    let mut targets = Vec::with_capacity(variables.len());
    for (i, x) in variables.iter().enumerate() {
        match x.entry().cloned() {
            Some(e @ Entry::Var(_)) if e.requires_grad() => targets.push(e),
            None => return Err(Error::Runtime(NOT_IN_GRAPH.into())),
            Some(Entry::Var(_)) => {
                return Err(Error::Runtime(format!(
                    "Cannot differentiate with respect to the {}-th variable because it does not require gradient.",
                    i + 1
                )))
            }
            Some(e) => targets.push(e),
        }
    }
    let swept = sweep(heads, head_grads, Some(&targets), args)?;
    Ok(swept.targets.into_iter().zip(variables).map(|(g, x)| g.unwrap_or_else(|| zero_grad_of(x))).collect())
}

/// The gradient of a variable no path reached: no rows for a row-sparse one, else zeros.
fn zero_grad_of(x: &Tracked) -> GradValue {
    if let Some(Entry::Var(v)) = x.entry() {
        if let Some(rs) = &v.rows {
            return GradValue::Rows(rows::empty_rows(&rs.shape, rs.dtype));
        }
    }
    GradValue::Dense(Tracked::new(NDArray::zeros(x.shape(), x.dtype())))
}

/// [`grad_values`] with every gradient dense (row-sparse ones expanded to their full shape).
pub fn grad(
    heads: &[Tracked],
    head_grads: &[Option<Tracked>],
    variables: &[Tracked],
    args: BackwardArgs,
) -> Result<Vec<Tracked>> {
    grad_values(heads, head_grads, variables, args)?
        .into_iter()
        .zip(variables)
        .map(|(g, x)| match g {
            GradValue::Dense(t) => Ok(t),
            GradValue::Rows(r) => Ok(Tracked::new(rows::densify(x.shape(), &r)?)),
        })
        .collect()
}
