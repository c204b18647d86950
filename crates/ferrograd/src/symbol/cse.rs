//! Common-subexpression elimination, the graph pass MXNet runs when binding (unless
//! `MXNET_ELIMINATE_COMMON_EXPR=0`): op nodes with the same op, the same attributes and the
//! same inputs compute the same values, so all but the first are dropped and their users read
//! the first. Random ops (their draws differ), ops that update auxiliary states in place
//! (merging would change how often the state is updated) and control-flow nodes (their bodies
//! are not part of the signature) are never merged. When two outputs of
//! the symbol end up on the same value, each repeat gets a `_copy`, so that every output keeps
//! its own array.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use parking_lot::RwLock;

use super::{key, NodeOut, SymNode, Symbol};
use crate::ops::convert::Identity;
use crate::ops::OpRef;

/// What makes two op nodes interchangeable: op name, attributes, inputs (node key and slot,
/// after earlier merges).
type Signature = (&'static str, Vec<(String, String)>, Vec<(usize, usize)>);

fn mergeable(op: &OpRef) -> bool {
    // Control-flow nodes differ by their subgraphs, which the signature does not hold.
    !op.is_random() && op.aux_names().is_empty() && op.subgraphs().is_empty()
}

impl Symbol {
    /// The graph with common subexpressions merged (see the module docs). Variables are shared
    /// with `self`, so arguments keep their order and identity.
    pub fn eliminate_common_exprs(&self) -> Symbol {
        let mut memo: HashMap<usize, Arc<SymNode>> = HashMap::new();
        let mut seen: HashMap<Signature, Arc<SymNode>> = HashMap::new();
        for n in self.topo_nodes() {
            let k = key(&n);
            let Some(op) = &n.op else {
                memo.insert(k, n.clone());
                continue;
            };
            let inputs: Vec<NodeOut> =
                n.inputs.iter().map(|i| NodeOut { node: memo[&key(&i.node)].clone(), index: i.index }).collect();
            let sig: Signature = (op.name(), n.attrs(), inputs.iter().map(|i| (key(&i.node), i.index)).collect());
            if mergeable(op) {
                if let Some(first) = seen.get(&sig) {
                    memo.insert(k, first.clone());
                    continue;
                }
            }
            let copy =
                Arc::new(SymNode { op: Some(op.clone()), name: n.name.clone(), attrs: RwLock::new(n.attrs()), inputs });
            if mergeable(op) {
                seen.insert(sig, copy.clone());
            }
            memo.insert(k, copy);
        }
        let mut used: HashSet<(usize, usize)> = HashSet::new();
        let mut outputs = Vec::with_capacity(self.outputs.len());
        for o in &self.outputs {
            let out = NodeOut { node: memo[&key(&o.node)].clone(), index: o.index };
            if used.insert((key(&out.node), out.index)) {
                outputs.push(out);
                continue;
            }
            let name = format!("{}_copy{}", out.node.name, outputs.len());
            let copy = SymNode {
                op: Some(Arc::new(Identity) as OpRef),
                name,
                attrs: RwLock::new(Vec::new()),
                inputs: vec![out],
            };
            outputs.push(NodeOut { node: Arc::new(copy), index: 0 });
        }
        Symbol { outputs }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::{registry, Attrs};

    fn op(name: &str, inputs: &[&Symbol], params: &[(&str, &str)]) -> Symbol {
        let mut a = Attrs::new(name);
        for (k, v) in params {
            a.items.push((k.to_string(), crate::ops::AttrValue::Str(v.to_string())));
        }
        let ins: Vec<Symbol> = inputs.iter().map(|s| (*s).clone()).collect();
        let attrs = params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Symbol::create(registry::create(name, &a).unwrap(), name, &ins, attrs).unwrap()
    }

    fn count_nodes(s: &Symbol) -> usize {
        s.topo_nodes().len()
    }

    #[test]
    fn merges_equal_subtrees_but_not_different_attributes() {
        let (a, b) = (Symbol::variable("a", vec![]), Symbol::variable("b", vec![]));
        let s1 = op("elemwise_add", &[&a, &b], &[]);
        let s2 = op("elemwise_add", &[&a, &b], &[]);
        let both = op("elemwise_add", &[&s1, &s2], &[]);
        let cse = both.eliminate_common_exprs();
        assert_eq!((count_nodes(&both), count_nodes(&cse)), (5, 4));
        assert_eq!(cse.list_arguments(), vec!["a", "b"]);

        let p1 = op("_plus_scalar", &[&a], &[("scalar", "1")]);
        let p2 = op("_plus_scalar", &[&a], &[("scalar", "2")]);
        let sum = op("elemwise_add", &[&p1, &p2], &[]);
        assert_eq!(count_nodes(&sum.eliminate_common_exprs()), count_nodes(&sum));
    }

    #[test]
    fn repeated_outputs_get_copies_and_random_ops_stay() {
        let a = Symbol::variable("a", vec![]);
        let m1 = op("elemwise_mul", &[&a, &a], &[]);
        let m2 = op("elemwise_mul", &[&a, &a], &[]);
        let cse = Symbol::group(&[m1, m2]).eliminate_common_exprs();
        let names: Vec<&str> = cse.topo_nodes().iter().map(|n| n.op_name()).collect();
        assert_eq!(names, vec!["null", "elemwise_mul", "_copy"]);

        let d1 = op("Dropout", &[&a], &[]);
        let d2 = op("Dropout", &[&a], &[]);
        let sum = op("elemwise_add", &[&d1, &d2], &[]);
        assert_eq!(count_nodes(&sum.eliminate_common_exprs()), 4);
    }
}
