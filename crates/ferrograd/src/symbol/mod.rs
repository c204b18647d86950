//! The static graph: MXNet's `Symbol`.
//!
//! A symbol is a list of outputs, each an output slot of a node; nodes are shared (`Arc`) and
//! immutable apart from their string attributes (MXNet's `_set_attr` edits a node in place). A
//! node is a variable (`op == None`) or a registry op with its inputs. Naming rules
//! (`NameManager`, `Prefix`, auto-created `fc_weight` arguments) belong to the Python front end;
//! this module receives final names.

pub mod cse;
pub mod imperative;
pub mod infer;
pub mod json;
pub mod subgraph;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use parking_lot::RwLock;

use crate::error::{Error, Result};
use crate::ops::{check_arity, OpRef};

/// One node of the graph.
pub struct SymNode {
    /// `None` for a variable.
    pub op: Option<OpRef>,
    pub name: String,
    /// String attributes: the op's parameters as given, then user attributes (`__shape__`, ...).
    attrs: RwLock<Vec<(String, String)>>,
    pub inputs: Vec<NodeOut>,
}

/// Dropping a deep graph node by node would recurse once per node (a stack overflow for long
/// chains); instead a node hands the inputs it owns alone to a work list.
impl Drop for SymNode {
    fn drop(&mut self) {
        let mut stack: Vec<Arc<SymNode>> = Vec::new();
        let release = |inputs: &mut Vec<NodeOut>, stack: &mut Vec<Arc<SymNode>>| {
            for inp in inputs.drain(..) {
                if Arc::strong_count(&inp.node) == 1 {
                    stack.push(inp.node);
                }
            }
        };
        release(&mut self.inputs, &mut stack);
        while let Some(mut n) = stack.pop() {
            if let Some(node) = Arc::get_mut(&mut n) {
                release(&mut node.inputs, &mut stack);
            }
        }
    }
}

/// An output slot of a node.
#[derive(Clone)]
pub struct NodeOut {
    pub node: Arc<SymNode>,
    pub index: usize,
}

/// A (possibly multi-output) symbolic expression.
#[derive(Clone, Default)]
pub struct Symbol {
    pub outputs: Vec<NodeOut>,
}

/// Identity of a node (graphs are compared and memoised by allocation).
pub(crate) fn key(n: &Arc<SymNode>) -> usize {
    Arc::as_ptr(n) as usize
}

impl SymNode {
    pub fn is_variable(&self) -> bool {
        self.op.is_none()
    }

    /// The op's name, or `"null"` for a variable (as in MXNet JSON).
    pub fn op_name(&self) -> &'static str {
        self.op.as_ref().map_or("null", |o| o.name())
    }

    pub fn attrs(&self) -> Vec<(String, String)> {
        self.attrs.read().clone()
    }

    pub fn attr(&self, key: &str) -> Option<String> {
        self.attrs.read().iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
    }

    /// Sets (or replaces) an attribute in place.
    pub fn set_attr(&self, key: &str, value: &str) {
        let mut a = self.attrs.write();
        match a.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = value.to_string(),
            None => a.push((key.to_string(), value.to_string())),
        }
    }

    /// Number of outputs the node computes (hidden ones included).
    pub fn num_outputs(&self) -> usize {
        self.op.as_ref().map_or(1, |o| o.num_outputs())
    }

    /// Number of outputs a user sees.
    pub fn num_visible_outputs(&self) -> usize {
        self.op.as_ref().map_or(1, |o| o.num_visible_outputs())
    }

    /// MXNet's output name: the variable's name, `<name>_output`, or `<name>_output<i>`.
    pub fn output_name(&self, index: usize) -> String {
        match &self.op {
            None => self.name.clone(),
            Some(op) => output_name(op, &self.name, index),
        }
    }
}

/// The name of output `index` of an op node called `node`: `<node>_output`, `<node>_output<i>`,
/// or the op's own output names (`bn_mean`).
pub fn output_name(op: &OpRef, node: &str, index: usize) -> String {
    match op.output_names() {
        Some(names) => format!("{node}_{}", names.get(index).copied().unwrap_or("output")),
        None if op.num_visible_outputs() == 1 => format!("{node}_output"),
        None => format!("{node}_output{index}"),
    }
}

impl Symbol {
    /// A free variable with string attributes (`__shape__`, `__dtype__`, ...).
    pub fn variable(name: &str, attrs: Vec<(String, String)>) -> Symbol {
        let node = SymNode { op: None, name: name.to_string(), attrs: RwLock::new(attrs), inputs: Vec::new() };
        Symbol { outputs: vec![NodeOut { node: Arc::new(node), index: 0 }] }
    }

    /// Applies `op` to single-output symbols. `attrs` are the op's parameters as strings
    /// followed by user attributes; they are stored as given (JSON writes them back).
    pub fn create(op: OpRef, name: &str, inputs: &[Symbol], attrs: Vec<(String, String)>) -> Result<Symbol> {
        check_arity(op.as_ref(), inputs.len())?;
        let mut ins = Vec::with_capacity(inputs.len());
        for (i, s) in inputs.iter().enumerate() {
            if s.outputs.len() != 1 {
                let arg = op.arg_names().get(i).copied().unwrap_or("data");
                return Err(Error::Value(format!(
                    "{} ({name}): input '{arg}' must be a single-output symbol, got {} outputs",
                    op.name(),
                    s.outputs.len()
                )));
            }
            ins.push(s.outputs[0].clone());
        }
        let n = op.num_visible_outputs();
        // The output list is the one allocation sized by a parameter alone (`num_outputs`), so
        // it is fallible: a refused request is a MemoryError, not an abort.
        let mut outputs = Vec::new();
        outputs.try_reserve_exact(n).map_err(|_| {
            Error::Memory(format!(
                "{} ({name}): cannot allocate the list of its {n} outputs ({} bytes): out of memory",
                op.name(),
                n as u128 * std::mem::size_of::<NodeOut>() as u128
            ))
        })?;
        let node = Arc::new(SymNode { op: Some(op), name: name.to_string(), attrs: RwLock::new(attrs), inputs: ins });
        outputs.extend((0..n).map(|index| NodeOut { node: node.clone(), index }));
        Ok(Symbol { outputs })
    }

    /// The outputs of several symbols as one symbol (`Group`).
    pub fn group(symbols: &[Symbol]) -> Symbol {
        Symbol { outputs: symbols.iter().flat_map(|s| s.outputs.iter().cloned()).collect() }
    }

    /// The name of a single-output symbol's node (`None` for groups).
    pub fn name(&self) -> Option<String> {
        match self.outputs.as_slice() {
            [o] => Some(o.node.name.clone()),
            _ => None,
        }
    }

    /// Every node reachable from the outputs, inputs before users (depth-first, in input order,
    /// as MXNet lists them).
    pub fn topo_nodes(&self) -> Vec<Arc<SymNode>> {
        let mut order = Vec::new();
        let mut seen = HashSet::new();
        for o in &self.outputs {
            // Iterative post-order: (node, next input to visit).
            let mut stack: Vec<(Arc<SymNode>, usize)> = Vec::new();
            if seen.insert(key(&o.node)) {
                stack.push((o.node.clone(), 0));
            }
            while let Some((node, next)) = stack.pop() {
                if let Some(inp) = node.inputs.get(next) {
                    let child = inp.node.clone();
                    stack.push((node, next + 1));
                    if seen.insert(key(&child)) {
                        stack.push((child, 0));
                    }
                } else {
                    order.push(node);
                }
            }
        }
        order
    }

    /// Keys of the variables consumed as auxiliary states (BatchNorm's moving statistics).
    fn aux_keys(nodes: &[Arc<SymNode>]) -> HashSet<usize> {
        let mut aux = HashSet::new();
        for n in nodes {
            if let Some(op) = &n.op {
                if op.variadic() {
                    continue;
                }
                let n_args = op.arg_names().len();
                for inp in n.inputs.iter().skip(n_args) {
                    if inp.node.is_variable() {
                        aux.insert(key(&inp.node));
                    }
                }
            }
        }
        aux
    }

    /// Variable nodes in graph order, split into (arguments, auxiliary states).
    pub fn variables(&self) -> (Vec<Arc<SymNode>>, Vec<Arc<SymNode>>) {
        let nodes = self.topo_nodes();
        let aux = Symbol::aux_keys(&nodes);
        nodes.into_iter().filter(|n| n.is_variable()).partition(|n| !aux.contains(&key(n)))
    }

    pub fn list_arguments(&self) -> Vec<String> {
        self.variables().0.iter().map(|n| n.name.clone()).collect()
    }

    pub fn list_auxiliary_states(&self) -> Vec<String> {
        self.variables().1.iter().map(|n| n.name.clone()).collect()
    }

    /// Arguments and auxiliary states together, in graph order.
    pub fn list_inputs(&self) -> Vec<String> {
        self.topo_nodes().iter().filter(|n| n.is_variable()).map(|n| n.name.clone()).collect()
    }

    pub fn list_outputs(&self) -> Vec<String> {
        self.outputs.iter().map(|o| o.node.output_name(o.index)).collect()
    }

    /// Every visible output of every node, as one group.
    pub fn get_internals(&self) -> Symbol {
        let outputs = self
            .topo_nodes()
            .into_iter()
            .flat_map(|n| (0..n.num_visible_outputs()).map(move |index| NodeOut { node: n.clone(), index }))
            .collect();
        Symbol { outputs }
    }

    /// The inputs of the (single) head node, or `None` for a variable.
    pub fn get_children(&self) -> Option<Symbol> {
        let head = &self.outputs.first()?.node;
        if head.inputs.is_empty() {
            return None;
        }
        Some(Symbol { outputs: head.inputs.clone() })
    }

    /// Output `i` as a symbol.
    pub fn output(&self, i: usize) -> Option<Symbol> {
        self.outputs.get(i).map(|o| Symbol { outputs: vec![o.clone()] })
    }

    /// A deep copy of the graph (new nodes; attributes are copied, not shared).
    pub fn deep_copy(&self) -> Symbol {
        self.rebuild(&HashMap::new(), None)
    }

    /// Replaces free variables by other symbols: `positional` in `list_arguments()` order, or
    /// `named` by variable name. `rename` renames the head node. Returns a new graph.
    pub fn compose(&self, positional: &[Symbol], named: &[(String, Symbol)], rename: Option<&str>) -> Result<Symbol> {
        let (args, _) = self.variables();
        if positional.len() > args.len() {
            return Err(Error::Value(format!(
                "compose: {} positional inputs given, but the symbol has only {} arguments {:?}",
                positional.len(),
                args.len(),
                self.list_arguments()
            )));
        }
        let mut subst: HashMap<usize, NodeOut> = HashMap::new();
        let single = |s: &Symbol, what: &str| -> Result<NodeOut> {
            match s.outputs.as_slice() {
                [o] => Ok(o.clone()),
                _ => Err(Error::Value(format!("compose: input for '{what}' must have exactly one output"))),
            }
        };
        for (var, s) in args.iter().zip(positional) {
            subst.insert(key(var), single(s, &var.name)?);
        }
        for (name, s) in named {
            let hits: Vec<&Arc<SymNode>> = args.iter().filter(|v| &v.name == name).collect();
            if hits.is_empty() {
                return Err(Error::Value(format!(
                    "compose: the symbol has no argument named '{name}' (arguments: {:?})",
                    self.list_arguments()
                )));
            }
            for v in hits {
                subst.insert(key(v), single(s, name)?);
            }
        }
        Ok(self.rebuild(&subst, rename))
    }

    /// Copies the graph, replacing the variables in `subst` and renaming the head node.
    fn rebuild(&self, subst: &HashMap<usize, NodeOut>, rename: Option<&str>) -> Symbol {
        let mut memo: HashMap<usize, Arc<SymNode>> = HashMap::new();
        let head = (self.outputs.len() == 1).then(|| key(&self.outputs[0].node));
        for n in self.topo_nodes() {
            let k = key(&n);
            if let Some(rep) = subst.get(&k) {
                // The replacement's own graph is shared as is (MXNet shares composed inputs).
                memo.insert(k, rep.node.clone());
                continue;
            }
            let inputs = n
                .inputs
                .iter()
                .map(|i| match subst.get(&key(&i.node)) {
                    Some(rep) => rep.clone(),
                    None => NodeOut { node: memo[&key(&i.node)].clone(), index: i.index },
                })
                .collect();
            let name = match rename {
                Some(r) if Some(k) == head && !n.is_variable() => r.to_string(),
                _ => n.name.clone(),
            };
            let copy = SymNode { op: n.op.clone(), name, attrs: RwLock::new(n.attrs()), inputs };
            memo.insert(k, Arc::new(copy));
        }
        let outputs = self
            .outputs
            .iter()
            .map(|o| match subst.get(&key(&o.node)) {
                Some(rep) => rep.clone(),
                None => NodeOut { node: memo[&key(&o.node)].clone(), index: o.index },
            })
            .collect();
        Symbol { outputs }
    }

    /// `{node name: {key: value}}` for every node with attributes.
    pub fn attr_dict(&self) -> Vec<(String, Vec<(String, String)>)> {
        self.topo_nodes().iter().map(|n| (n.name.clone(), n.attrs())).filter(|(_, a)| !a.is_empty()).collect()
    }
}
