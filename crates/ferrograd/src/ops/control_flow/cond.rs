//! `_cond`: the `then` subgraph's outputs if the `pred` subgraph gives a nonzero element, else
//! the `else` subgraph's. Node inputs: the union of the three subgraphs' inputs.

use std::sync::Arc;

use super::{add_into, input_metas, list_attr, merge_learnt, truth, zeros, Params, Subgraph};
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::{Ctx, Grad, Op, Val};
use crate::symbol::Symbol;

#[derive(Debug, Clone)]
pub struct Cond {
    pred: Subgraph,
    then: Subgraph,
    other: Subgraph,
    n_inputs: usize,
}

impl Cond {
    pub(super) fn new(p: &Params<'_>, subgraphs: Vec<Symbol>, n_inputs: usize) -> Result<Cond> {
        let [pred, then, other]: [Symbol; 3] = subgraphs.try_into().map_err(|s: Vec<Symbol>| {
            Error::Value(format!("_cond: expected three subgraphs (pred, then, else), got {}", s.len()))
        })?;
        let pred =
            Subgraph::new("_cond pred".into(), pred, p.indices("cond_input_locs", n_inputs, "node inputs")?, n_inputs)?;
        let then =
            Subgraph::new("_cond then".into(), then, p.indices("then_input_locs", n_inputs, "node inputs")?, n_inputs)?;
        let other = Subgraph::new(
            "_cond else".into(),
            other,
            p.indices("else_input_locs", n_inputs, "node inputs")?,
            n_inputs,
        )?;
        if pred.num_outputs() != 1 {
            return Err(Error::Value("_cond: pred should always be a single output".into()));
        }
        let num_outputs = p.count("num_outputs")?;
        if then.num_outputs() != other.num_outputs() || then.num_outputs() != num_outputs {
            return Err(Error::Value(format!(
                "_cond: Number of outputs differs between then-branch ({}) and else-branch ({}), or from \
                 num_outputs ({num_outputs})",
                then.num_outputs(),
                other.num_outputs()
            )));
        }
        Ok(Cond { pred, then, other, n_inputs })
    }

    /// The branch the inputs choose.
    fn branch(&self, ctx: &Ctx, inputs: &[NDArray]) -> Result<&Subgraph> {
        let p = self.pred.run(ctx, &self.pred.pick(inputs))?;
        Ok(if truth("_cond: pred", &p[0])? { &self.then } else { &self.other })
    }
}

impl Op for Cond {
    fn name(&self) -> &'static str {
        "_cond"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &[]
    }
    fn variadic(&self) -> bool {
        true
    }
    fn num_outputs(&self) -> usize {
        self.then.num_outputs()
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("cond_input_locs", list_attr(&self.pred.feeds)),
            ("else_input_locs", list_attr(&self.other.feeds)),
            ("num_args", (self.n_inputs + 3).to_string()),
            ("num_outputs", self.num_outputs().to_string()),
            ("then_input_locs", list_attr(&self.then.feeds)),
        ]
    }
    fn subgraphs(&self) -> Vec<Symbol> {
        vec![self.pred.sym.clone(), self.then.sym.clone(), self.other.sym.clone()]
    }
    fn saves(&self) -> crate::ops::Saves {
        crate::ops::Saves::Inputs
    }

    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let p = self.pred.infer(&self.pred.pick(inputs))?;
        if p[0].shape.iter().product::<usize>() != 1 {
            return Err(Error::Shape(format!(
                "_cond: pred must give one element, got shape {}",
                fmt_shape(&p[0].shape)
            )));
        }
        let then = self.then.infer(&self.then.pick(inputs))?;
        let other = self.other.infer(&self.other.pick(inputs))?;
        for (j, (a, b)) in then.iter().zip(&other).enumerate() {
            if a != b {
                return Err(Error::Shape(format!(
                    "_cond: output {j} is {} {} in the then-branch but {} {} in the else-branch; both branches \
                     must give the same shapes and dtypes",
                    fmt_shape(&a.shape),
                    a.dtype,
                    fmt_shape(&b.shape),
                    b.dtype
                )));
            }
        }
        Ok(then)
    }

    fn infer_missing(&self, inputs: &[Option<Meta>]) -> Vec<Option<Meta>> {
        let mut out = vec![None; inputs.len()];
        for sub in [&self.then, &self.other, &self.pred] {
            merge_learnt(sub, sub.infer_inputs(&sub.pick(inputs)), &mut out);
        }
        out
    }

    fn forward(&self, ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let branch = self.branch(ctx, inputs)?;
        for (o, v) in outputs.iter_mut().zip(branch.run(ctx, &branch.pick(inputs))?) {
            o.assign_from(&v)?;
        }
        Ok(())
    }

    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        let backward = CondBackward { fwd: Arc::new(self.clone()) };
        let all: Vec<Val> = inputs.iter().chain(out_grads).copied().collect();
        Ok(g.apply(Arc::new(backward), &all)?.into_iter().map(Some).collect())
    }
}

/// The gradient of `_cond`: the taken branch's backward, its input gradients added into the
/// node inputs that fed them (zeros for the rest).
#[derive(Debug)]
struct CondBackward {
    fwd: Arc<Cond>,
}

impl Op for CondBackward {
    fn name(&self) -> &'static str {
        "_backward_cond"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &[]
    }
    fn variadic(&self) -> bool {
        true
    }
    fn num_outputs(&self) -> usize {
        self.fwd.n_inputs
    }
    fn differentiable(&self) -> bool {
        false
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        Ok(input_metas(inputs, self.fwd.n_inputs))
    }

    fn forward(&self, ctx: &Ctx, all: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (inputs, ogs) = all.split_at(self.fwd.n_inputs);
        let branch = self.fwd.branch(ctx, inputs)?;
        let b_in = branch.pick(inputs);
        let grads = branch.runner(&b_in, &vec![false; b_in.len()], true)?.vjp(ctx, &b_in, ogs)?;
        let metas: Vec<Meta> = inputs.iter().map(NDArray::meta).collect();
        let mut d_inputs = zeros(&metas);
        for (gr, &node_in) in grads.iter().zip(&branch.feeds) {
            add_into(&mut d_inputs[node_in], gr)?;
        }
        for (o, d) in outputs.iter_mut().zip(&d_inputs) {
            o.assign_from(d)?;
        }
        Ok(())
    }

    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Err(Error::Runtime("_cond: gradients of the gradient are not supported".into()))
    }
}
