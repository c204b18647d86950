//! Control-flow operators whose bodies are symbol graphs: MXNet's subgraph operators `_foreach`,
//! `_while_loop` and `_cond`.
//!
//! A node of one of these ops carries its subgraphs (each a [`Symbol`]) and, per subgraph input,
//! which node input feeds it. The forward runs a subgraph by binding it on an [`Executor`] (the
//! same executor a bound symbol uses), once per loop step; the gradient is one backward op per
//! kind that recomputes the forward steps and runs each step's backward in reverse. These ops are
//! not in the registry (they cannot be built from string parameters alone): `sym.contrib.*` and
//! the JSON loader build them with [`build`].

mod cond;
mod foreach;
mod while_loop;

use std::collections::HashSet;
use std::sync::Arc;

pub use cond::Cond;
pub use foreach::Foreach;
pub use while_loop::WhileLoop;

use super::backprop::GradReq;
use super::{Ctx, OpRef};
use crate::error::{Error, Result};
use crate::executor::{Bindings, Executor};
use crate::ndarray::{Meta, NDArray};
use crate::symbol::infer::{infer, Known};
use crate::symbol::Symbol;

/// The names of the control-flow ops (`true` for a name [`build`] accepts).
pub fn is_control_flow(op: &str) -> bool {
    matches!(op, "_foreach" | "_while_loop" | "_cond")
}

/// Builds a control-flow op from its MXNet string parameters and its subgraphs (in MXNet's
/// order: `_foreach` the body; `_while_loop` cond, func; `_cond` pred, then, else).
pub fn build(op: &str, params: &[(String, String)], subgraphs: Vec<Symbol>, n_inputs: usize) -> Result<OpRef> {
    let p = Params { op, items: params };
    let built: OpRef = match op {
        "_foreach" => Arc::new(Foreach::new(&p, subgraphs, n_inputs)?),
        "_while_loop" => Arc::new(WhileLoop::new(&p, subgraphs, n_inputs)?),
        "_cond" => Arc::new(Cond::new(&p, subgraphs, n_inputs)?),
        _ => return Err(Error::Value(format!("'{op}' is not a control-flow operator"))),
    };
    Ok(built)
}

/// String parameters of a control-flow node, read with errors naming the op.
struct Params<'a> {
    op: &'a str,
    items: &'a [(String, String)],
}

impl Params<'_> {
    fn get(&self, key: &str) -> Result<&str> {
        self.items
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .ok_or_else(|| Error::Type(format!("{}: missing required parameter '{key}'", self.op)))
    }

    fn int(&self, key: &str) -> Result<i64> {
        let v = self.get(key)?;
        v.trim()
            .parse::<i64>()
            .map_err(|_| Error::Value(format!("{}: parameter '{key}' must be an integer, got '{v}'", self.op)))
    }

    fn count(&self, key: &str) -> Result<usize> {
        let v = self.int(key)?;
        usize::try_from(v).map_err(|_| Error::Value(format!("{}: parameter '{key}' must be >= 0, got {v}", self.op)))
    }

    /// A list of integers written as MXNet writes tuples: `[3, 1]` or `(3, 1)`.
    fn ints(&self, key: &str) -> Result<Vec<i64>> {
        let v = self.get(key)?;
        v.trim_matches(|c: char| c == '[' || c == ']' || c == '(' || c == ')' || c.is_whitespace())
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| {
                s.parse::<i64>().map_err(|_| {
                    Error::Value(format!("{}: parameter '{key}' must be a list of integers, got '{v}'", self.op))
                })
            })
            .collect()
    }

    fn indices(&self, key: &str, bound: usize, what: &str) -> Result<Vec<usize>> {
        self.ints(key)?
            .into_iter()
            .map(|i| {
                usize::try_from(i)
                    .ok()
                    .filter(|&i| i < bound)
                    .ok_or_else(|| Error::Value(format!("{}: '{key}' holds {i}, outside the {bound} {what}", self.op)))
            })
            .collect()
    }
}

/// A list as MXNet writes a tuple parameter: `[3, 1]`.
fn list_attr(v: &[usize]) -> String {
    format!("[{}]", v.iter().map(usize::to_string).collect::<Vec<_>>().join(", "))
}

/// One subgraph of a control-flow node and, per subgraph input (in `list_inputs()` order), the
/// node input that feeds it.
#[derive(Clone)]
pub(crate) struct Subgraph {
    pub sym: Symbol,
    pub feeds: Vec<usize>,
    names: Vec<String>,
    /// `_foreach`'s body, `_while_loop`'s func, ... (error messages).
    what: String,
}

impl std::fmt::Debug for Subgraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}({} inputs, {} outputs)", self.what, self.names.len(), self.sym.outputs.len())
    }
}

impl Subgraph {
    pub(crate) fn new(what: String, sym: Symbol, feeds: Vec<usize>, n_inputs: usize) -> Result<Subgraph> {
        if !sym.list_auxiliary_states().is_empty() {
            return Err(Error::Value(format!(
                "{what}: subgraphs with auxiliary states ({:?}) are not supported",
                sym.list_auxiliary_states()
            )));
        }
        let names = sym.list_inputs();
        let mut seen = HashSet::new();
        if let Some(dup) = names.iter().find(|n| !seen.insert(n.as_str())) {
            return Err(Error::Value(format!(
                "{what}: the inputs of the subgraph don't have unique names: '{dup}' appears twice in {names:?}"
            )));
        }
        if feeds.len() != names.len() {
            return Err(Error::Value(format!(
                "{what}: {} input locations given for the {} subgraph inputs {names:?}",
                feeds.len(),
                names.len()
            )));
        }
        if let Some(&bad) = feeds.iter().find(|&&f| f >= n_inputs) {
            return Err(Error::Value(format!("{what}: input location {bad} is outside the node's {n_inputs} inputs")));
        }
        Ok(Subgraph { sym, feeds, names, what })
    }

    pub(crate) fn num_outputs(&self) -> usize {
        self.sym.outputs.len()
    }

    /// The subgraph's input values, picked from the node's.
    pub(crate) fn pick<T: Clone>(&self, node_inputs: &[T]) -> Vec<T> {
        self.feeds.iter().map(|&f| node_inputs[f].clone()).collect()
    }

    fn known(&self, inputs: &[Option<Meta>]) -> Known {
        let mut k = Known::default();
        for (name, m) in self.names.iter().zip(inputs) {
            if let Some(m) = m {
                k.shapes.insert(name.clone(), m.shape.to_vec());
                k.dtypes.insert(name.clone(), m.dtype);
            }
        }
        k
    }

    /// The output metas for these input metas (subgraph input order).
    pub(crate) fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let given: Vec<Option<Meta>> = inputs.iter().cloned().map(Some).collect();
        let res = infer(&self.sym, &self.known(&given)).map_err(|e| self.context(e))?;
        let names = self.sym.list_outputs();
        res.outputs
            .into_iter()
            .zip(names)
            .map(|(m, n)| {
                m.ok_or_else(|| Error::Shape(format!("{}: cannot infer the shape of output '{n}'", self.what)))
            })
            .collect()
    }

    /// What inference learns about the subgraph's inputs from those known (a `FullyConnected`
    /// weight the body creates, from the data); errors learn nothing.
    pub(crate) fn infer_inputs(&self, inputs: &[Option<Meta>]) -> Vec<Option<Meta>> {
        match infer(&self.sym, &self.known(inputs)) {
            Ok(res) => res.args,
            Err(_) => vec![None; inputs.len()],
        }
    }

    fn context(&self, e: Error) -> Error {
        let wrap = |m: String| format!("{}: {m}", self.what);
        match e {
            Error::Shape(m) => Error::Shape(wrap(m)),
            Error::DType(m) => Error::DType(wrap(m)),
            Error::Type(m) => Error::Type(wrap(m)),
            Error::Index(m) => Error::Index(wrap(m)),
            Error::Value(m) => Error::Value(wrap(m)),
            Error::Runtime(m) => Error::Runtime(wrap(m)),
            Error::Memory(m) => Error::Memory(wrap(m)),
        }
    }

    /// An executor for repeated runs: `changing` inputs are copied (each run overwrites them),
    /// the others are bound as given (they are the node's own inputs, read only).
    pub(crate) fn runner(&self, inputs: &[NDArray], changing: &[bool], with_grads: bool) -> Result<Runner> {
        let args: Vec<NDArray> =
            inputs.iter().zip(changing).map(|(x, &c)| if c { x.copy() } else { x.clone() }).collect();
        let n = args.len();
        let grads = if with_grads {
            args.iter().map(|a| Some(NDArray::zeros(a.shape(), a.dtype()))).collect()
        } else {
            vec![None; n]
        };
        let reqs = vec![if with_grads { GradReq::Write } else { GradReq::Null }; n];
        let exec =
            Executor::bind(&self.sym, Bindings { args, grads, reqs, aux: Vec::new() }).map_err(|e| self.context(e))?;
        Ok(Runner { exec, changing: changing.to_vec(), what: self.what.clone() })
    }

    /// One run: the outputs (copies) for these inputs.
    pub(crate) fn run(&self, ctx: &Ctx, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
        let mut r = self.runner(inputs, &vec![false; inputs.len()], false)?;
        r.forward(ctx, inputs)
    }
}

/// A subgraph bound once and run for many steps.
pub(crate) struct Runner {
    exec: Executor,
    changing: Vec<bool>,
    what: String,
}

impl Runner {
    fn load(&mut self, inputs: &[NDArray]) -> Result<()> {
        for (i, x) in inputs.iter().enumerate() {
            if self.changing[i] {
                self.exec.args[i].assign_from(x)?;
            } else if !x.shares_storage(&self.exec.args[i]) {
                return Err(Error::Runtime(format!("internal: {}: fixed input {i} changed between steps", self.what)));
            }
        }
        Ok(())
    }

    fn wrap(&self, e: Error) -> Error {
        Error::Runtime(format!("{}: {e}", self.what))
    }

    /// The outputs (copies) for these inputs.
    pub(crate) fn forward(&mut self, ctx: &Ctx, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
        self.load(inputs)?;
        self.exec.forward(ctx.is_train, &mut |_, _| {}).map_err(|e| self.wrap(e))?;
        Ok(self.exec.outputs.iter().map(NDArray::copy).collect())
    }

    /// The gradients (copies) of every input for these inputs and output gradients.
    pub(crate) fn vjp(&mut self, ctx: &Ctx, inputs: &[NDArray], out_grads: &[NDArray]) -> Result<Vec<NDArray>> {
        self.load(inputs)?;
        self.exec.forward(ctx.is_train, &mut |_, _| {}).map_err(|e| self.wrap(e))?;
        let heads: Vec<Option<NDArray>> = out_grads.iter().cloned().map(Some).collect();
        self.exec.backward(&heads, ctx.is_train).map_err(|e| self.wrap(e))?;
        self.exec
            .grads
            .iter()
            .map(|g| {
                g.as_ref()
                    .map(NDArray::copy)
                    .ok_or_else(|| Error::Runtime(format!("internal: {}: a gradient buffer is missing", self.what)))
            })
            .collect()
    }
}

/// The runner in `slot`, made by `make` on first use.
fn ready(slot: &mut Option<Runner>, make: impl FnOnce() -> Result<Runner>) -> Result<&mut Runner> {
    if slot.is_none() {
        *slot = Some(make()?);
    }
    slot.as_mut().ok_or_else(|| Error::Runtime("internal: a subgraph runner is missing".into()))
}

/// Whether a one-element array is nonzero (a loop or branch condition).
fn truth(what: &str, x: &NDArray) -> Result<bool> {
    if x.size() != 1 {
        return Err(Error::Shape(format!(
            "{what} must give one element, got shape {}",
            crate::error::fmt_shape(x.shape())
        )));
    }
    Ok(x.item_f64()? != 0.0)
}

/// Adds `g` into `acc` (a running gradient sum).
fn add_into(acc: &mut NDArray, g: &NDArray) -> Result<()> {
    let add = super::binary::Binary { kind: super::binary::BinaryKind::Add, broadcast: false };
    let sum = super::run1(&add, &Ctx::default(), &[acc.clone(), g.clone()])?;
    acc.assign_from(&sum)
}

/// Zeros shaped like each of `metas`.
fn zeros(metas: &[Meta]) -> Vec<NDArray> {
    metas.iter().map(|m| NDArray::zeros(&m.shape, m.dtype)).collect()
}

/// The metas of the node inputs, for the backward ops' outputs.
fn input_metas(inputs: &[Meta], n: usize) -> Vec<Meta> {
    inputs[..n].to_vec()
}

/// Maps node-input metas learnt by a subgraph back onto the node's inputs.
fn merge_learnt(sub: &Subgraph, learnt: Vec<Option<Meta>>, out: &mut [Option<Meta>]) {
    for (m, &f) in learnt.into_iter().zip(&sub.feeds) {
        if out[f].is_none() {
            out[f] = m;
        }
    }
}
