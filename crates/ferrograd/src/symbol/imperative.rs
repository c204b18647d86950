//! Running a symbol op by op on NDArrays (MXNet's `CachedOp`): each node goes through the
//! autograd front door, so under `record()` the run lands on the tape like hand-written calls
//! and differentiates with the ops' own rules. No binding, no memory plan: shapes come from the
//! arrays of each call, so one symbol serves any input shape.

use std::collections::HashMap;

use super::{key, Symbol};
use crate::autograd::{self, Tracked};
use crate::error::{Error, Result};

impl Symbol {
    /// Evaluates the symbol with `inputs` bound to `list_inputs()` (arguments and auxiliary
    /// states in graph order), returning the visible outputs.
    pub fn eval_imperative(&self, inputs: &[Tracked]) -> Result<Vec<Tracked>> {
        let nodes = self.topo_nodes();
        let names = self.list_inputs();
        if inputs.len() != names.len() {
            return Err(Error::Value(format!(
                "CachedOp: {} inputs given, the symbol takes {} ({})",
                inputs.len(),
                names.len(),
                names.join(", ")
            )));
        }
        let mut values: HashMap<usize, Vec<Tracked>> = HashMap::new();
        let mut next_input = inputs.iter();
        for n in &nodes {
            let outs = match &n.op {
                // Variables come in `list_inputs()` order, which is this traversal's.
                None => {
                    vec![next_input.next().cloned().ok_or_else(|| Error::Value("CachedOp: too few inputs".into()))?]
                }
                Some(op) => {
                    let args: Vec<Tracked> = n.inputs.iter().map(|i| values[&key(&i.node)][i.index].clone()).collect();
                    autograd::invoke(op, args).map_err(|e| super::infer::in_operator(&n.name, e))?
                }
            };
            values.insert(key(n), outs);
        }
        Ok(self.outputs.iter().map(|o| values[&key(&o.node)][o.index].clone()).collect())
    }
}
