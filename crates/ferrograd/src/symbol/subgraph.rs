//! Cutting a control-flow body out of the graph it was built in (MXNet's `CutSubgraph`).
//!
//! `sym.contrib.foreach` and friends build the body while an attribute scope marks every new
//! node with `__subgraph_name__`. Nodes without that mark come from the enclosing graph: the
//! body reads them as inputs instead of recomputing them, so each is replaced by a variable
//! named after the value (`_mulscalar0_output`) and the value becomes an input of the
//! control-flow node. Variables stay as they are (the body reads the same argument).

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::RwLock;

use super::{key, NodeOut, SymNode, Symbol};

/// The body graph after the cut, and per body input (in `list_inputs()` order) its name and the
/// value of the enclosing graph that feeds it (the variable itself for a variable).
pub struct Cut {
    pub graph: Symbol,
    pub feeds: Vec<(String, Symbol)>,
}

/// Cuts the nodes not marked `__subgraph_name__ = scope` out of `sym` (see the module docs).
pub fn cut_subgraph(sym: &Symbol, scope: &str) -> Cut {
    let inside = |n: &SymNode| n.is_variable() || n.attr("__subgraph_name__").as_deref() == Some(scope);
    let mut memo: HashMap<usize, Arc<SymNode>> = HashMap::new();
    // (outside node key, output index) → the variable standing for it.
    let mut cut_vars: HashMap<(usize, usize), Arc<SymNode>> = HashMap::new();
    let mut cut_source: HashMap<usize, NodeOut> = HashMap::new();
    let mut reroute = |o: &NodeOut, memo: &HashMap<usize, Arc<SymNode>>| -> NodeOut {
        if let Some(n) = memo.get(&key(&o.node)) {
            return NodeOut { node: n.clone(), index: o.index };
        }
        let var = cut_vars.entry((key(&o.node), o.index)).or_insert_with(|| {
            let name = o.node.output_name(o.index);
            let v = Arc::new(SymNode { op: None, name, attrs: RwLock::new(Vec::new()), inputs: Vec::new() });
            cut_source.insert(key(&v), o.clone());
            v
        });
        NodeOut { node: var.clone(), index: 0 }
    };
    for n in sym.topo_nodes() {
        if !inside(&n) {
            continue;
        }
        if n.is_variable() {
            memo.insert(key(&n), n.clone());
            continue;
        }
        let inputs = n.inputs.iter().map(|i| reroute(i, &memo)).collect();
        let copy = SymNode { op: n.op.clone(), name: n.name.clone(), attrs: RwLock::new(n.attrs()), inputs };
        memo.insert(key(&n), Arc::new(copy));
    }
    let outputs = sym.outputs.iter().map(|o| reroute(o, &memo)).collect();
    let graph = Symbol { outputs };
    let feeds = graph
        .topo_nodes()
        .into_iter()
        .filter(|n| n.is_variable())
        .map(|v| {
            let source = cut_source.get(&key(&v)).cloned().unwrap_or(NodeOut { node: v.clone(), index: 0 });
            (v.name.clone(), Symbol { outputs: vec![source] })
        })
        .collect();
    Cut { graph, feeds }
}
