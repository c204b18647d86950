//! `get_symbol`: the recorded history of an array as a [`Symbol`].
//!
//! Variables are named `var<N>` and op nodes `node_<N>` (MXNet's naming for recorded graphs);
//! constants the recording read (arrays without an entry) become variables too, so the symbol
//! lists every input the computation needs. A hybridized block's call (one custom node carrying
//! its cached graph) shows as the graph's own ops when small enough to inline, else as one
//! `_CachedOp` node, as in MXNet. The walk is iterative (a recording of any length),
//! and the symbol's one JSON writer serialises it.

use std::collections::HashMap;
use std::sync::Arc;

use super::{Entry, Node, RecordedGraph, Tracked};
use crate::error::{Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::{self, registry, AttrValue, Attrs, Ctx, Grad, Saves, Val};
use crate::symbol::Symbol;

/// The op of a recorded node as a registry op (recorded ops are parameter-bound instances; the
/// symbol needs a shared one, rebuilt from the op's name and string attributes).
fn shared_op(n: &Node) -> Result<crate::ops::OpRef> {
    let name = n.op.name();
    let mut a = Attrs::new(name);
    for (k, v) in n.op.attrs() {
        a.items.push((k.to_string(), AttrValue::Str(v)));
    }
    registry::create(name, &a)
        .map_err(|e| Error::Runtime(format!("get_symbol: the recorded op '{name}' cannot be part of a symbol ({e})")))
}

/// The graph of a custom node with its arguments replaced by the symbols of the node's inputs.
fn inline_graph(g: &RecordedGraph, inputs: &[Symbol]) -> Result<Symbol> {
    if g.input_names.len() != inputs.len() {
        return Err(Error::Runtime(format!(
            "get_symbol: a recorded graph names {} inputs but its node has {}",
            g.input_names.len(),
            inputs.len()
        )));
    }
    let named: Vec<(String, Symbol)> = g.input_names.iter().cloned().zip(inputs.iter().cloned()).collect();
    g.symbol.compose(&[], &named, None)
}

/// A hybridized block's call in a history symbol (MXNet's `_CachedOp` node): it reads the call's
/// inputs and has the graph's outputs. It describes the recording; it does not run.
#[derive(Debug)]
struct CachedOpNode {
    outputs: usize,
}

const NOT_RUNNABLE: &str = "_CachedOp: a hybridized call in a recorded history cannot run on its own; \
hybridize with a larger inline_limit to see (and run) its operators";

impl ops::Op for CachedOpNode {
    fn name(&self) -> &'static str {
        "_CachedOp"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &[]
    }
    fn variadic(&self) -> bool {
        true
    }
    fn num_outputs(&self) -> usize {
        self.outputs
    }
    fn infer(&self, _inputs: &[Meta]) -> Result<Vec<Meta>> {
        Err(Error::Runtime(NOT_RUNNABLE.into()))
    }
    fn forward(&self, _ctx: &Ctx, _inputs: &[NDArray], _outputs: &mut [NDArray]) -> Result<()> {
        Err(Error::Runtime(NOT_RUNNABLE.into()))
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Err(Error::Runtime(NOT_RUNNABLE.into()))
    }
}

fn node_key(n: &Arc<Node>) -> usize {
    Arc::as_ptr(n) as *const () as usize
}

/// The recorded computation that produced `x`, with `x` as the only output.
pub fn history_symbol(x: &Tracked) -> Result<Symbol> {
    let entry = x.entry().cloned().ok_or_else(|| {
        Error::Runtime(
            "get_symbol: the array has no recorded history (compute it inside autograd.record() \
from arrays with attach_grad())"
                .into(),
        )
    })?;
    let (mut vars, mut ops) = (0usize, 0usize);
    let mut variable = || {
        let s = Symbol::variable(&format!("var{vars}"), Vec::new());
        vars += 1;
        s
    };
    let mut leaves: HashMap<usize, Symbol> = HashMap::new();
    let mut built: HashMap<usize, Symbol> = HashMap::new();
    // Iterative post-order over op nodes: (node, inputs already scheduled).
    let mut stack: Vec<(Arc<Node>, bool)> = Vec::new();
    let head = match &entry {
        Entry::Var(_) => return Ok(variable()),
        Entry::Out(n, i) => {
            stack.push((n.clone(), false));
            (node_key(n), *i)
        }
    };
    while let Some((n, expanded)) = stack.pop() {
        let key = node_key(&n);
        if built.contains_key(&key) {
            continue;
        }
        if !expanded {
            stack.push((n.clone(), true));
            for e in n.inputs.iter().rev().flatten() {
                if let Entry::Out(m, _) = e {
                    if !built.contains_key(&node_key(m)) {
                        stack.push((m.clone(), false));
                    }
                }
            }
            continue;
        }
        let mut inputs = Vec::with_capacity(n.inputs.len());
        for e in n.inputs.iter() {
            let s = match e {
                None => variable(),
                Some(Entry::Var(v)) => {
                    let k = Arc::as_ptr(v) as usize;
                    leaves.entry(k).or_insert_with(&mut variable).clone()
                }
                Some(Entry::Out(m, i)) => {
                    let s = built.get(&node_key(m)).ok_or_else(|| Error::Runtime("get_symbol: bad order".into()))?;
                    s.output(*i).ok_or_else(|| Error::Runtime("get_symbol: bad output index".into()))?
                }
            };
            inputs.push(s);
        }
        let graph = n.saved.lock().as_ref().and_then(|s| s.graph.clone());
        let sym = match graph {
            Some(g) if g.inline => inline_graph(&g, &inputs)?,
            Some(g) => {
                let op = Arc::new(CachedOpNode { outputs: g.symbol.list_outputs().len() });
                Symbol::create(op, &format!("node_{ops}"), &inputs, Vec::new())?
            }
            None => {
                let op = shared_op(&n)?;
                let attrs = op.attrs().into_iter().map(|(k, v)| (k.to_string(), v)).collect();
                Symbol::create(op, &format!("node_{ops}"), &inputs, attrs)?
            }
        };
        ops += 1;
        built.insert(key, sym);
    }
    let out = built.get(&head.0).and_then(|s| s.output(head.1));
    out.ok_or_else(|| Error::Runtime("get_symbol: the head was not built".into()))
}

/// [`history_symbol`] as MXNet symbol JSON.
pub fn history_json(x: &Tracked) -> Result<String> {
    Ok(crate::symbol::json::to_json(&history_symbol(x)?))
}
