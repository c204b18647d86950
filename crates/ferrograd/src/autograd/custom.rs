//! Nodes whose gradient is computed outside the op registry: a Python `autograd.Function`, or a
//! hybridized block's call (whose backward is its executor's).
//!
//! The gradient gets the output gradients as tracked arrays and returns tracked arrays, so under
//! `create_graph` whatever ops it runs are recorded and the result is differentiable again.

use std::sync::Arc;

use super::backward::TapeGraph;
use super::Tracked;
use crate::error::{Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::{Ctx, Grad, Op, Saves, Val};

/// The gradient of a custom node: one gradient (or `None`) per input, from one per output.
pub trait CustomBackward: Send + Sync {
    fn backward(&self, out_grads: Vec<Tracked>) -> Result<Vec<Option<Tracked>>>;
}

/// The op recorded for a custom node. It cannot be replayed (its forward ran elsewhere).
pub(super) struct CustomOp {
    pub(super) backward: Arc<dyn CustomBackward>,
    pub(super) in_metas: Vec<Meta>,
    pub(super) out_metas: Vec<Meta>,
}

impl std::fmt::Debug for CustomOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Function({} inputs, {} outputs)", self.in_metas.len(), self.out_metas.len())
    }
}

impl Op for CustomOp {
    fn name(&self) -> &'static str {
        "_CustomFunction"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &[]
    }
    fn num_outputs(&self) -> usize {
        self.out_metas.len()
    }
    fn infer(&self, _inputs: &[Meta]) -> Result<Vec<Meta>> {
        Ok(self.out_metas.clone())
    }
    fn forward(&self, _ctx: &Ctx, _inputs: &[NDArray], _outputs: &mut [NDArray]) -> Result<()> {
        Err(Error::Runtime("an autograd.Function node cannot be replayed; call the Function again".into()))
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, _i: &[Val], _o: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        let no_symbolic = || Error::Runtime("autograd.Function has no symbolic gradient".into());
        let tape = g.graph_any().and_then(|a| a.downcast_mut::<TapeGraph>()).ok_or_else(no_symbolic)?;
        let gys = out_grads.iter().map(|&v| tape.array(v)).collect::<Result<Vec<_>>>()?;
        let grads = self.backward.backward(gys)?;
        if grads.len() != self.in_metas.len() {
            return Err(Error::Runtime(format!(
                "internal: a custom backward returned {} gradients for {} inputs",
                grads.len(),
                self.in_metas.len()
            )));
        }
        Ok(grads.into_iter().map(|x| x.map(|x| tape.push(x))).collect())
    }
}
