//! `_while_loop`: runs `func` while `cond` holds, at most `max_iterations` times.
//!
//! Node inputs: the union of both subgraphs' inputs (the loop variables among them). Outputs:
//! `func`'s step outputs stacked on a new axis 0 and padded with zeros to `max_iterations` rows
//! (MXNet leaves the padding uninitialised), then the final loop variables.

use std::sync::Arc;

use super::{add_into, input_metas, list_attr, merge_learnt, ready, truth, zeros, Params, Runner, Subgraph};
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray, SliceArg};
use crate::ops::{Ctx, Grad, Op, Val};
use crate::symbol::Symbol;

/// What [`WhileLoop::run_loop`] calls after each step: (step, node inputs of the step, `func`'s
/// outputs).
type StepHook<'a> = dyn FnMut(usize, &[NDArray], &[NDArray]) -> Result<()> + 'a;

#[derive(Debug, Clone)]
pub struct WhileLoop {
    cond: Subgraph,
    func: Subgraph,
    n_inputs: usize,
    num_out_data: usize,
    max_iterations: usize,
    /// Per loop variable: its position among `func`'s inputs (MXNet's `func_var_locs`).
    func_var_locs: Vec<usize>,
    /// Per loop variable: the node input holding it.
    var_inputs: Vec<usize>,
}

impl WhileLoop {
    pub(super) fn new(p: &Params<'_>, subgraphs: Vec<Symbol>, n_inputs: usize) -> Result<WhileLoop> {
        let [cond, func]: [Symbol; 2] = subgraphs.try_into().map_err(|s: Vec<Symbol>| {
            Error::Value(format!("_while_loop: expected two subgraphs (cond, func), got {}", s.len()))
        })?;
        let cond_locs = p.indices("cond_input_locs", n_inputs, "node inputs")?;
        let func_locs = p.indices("func_input_locs", n_inputs, "node inputs")?;
        let func_var_locs = p.indices("func_var_locs", func_locs.len(), "func inputs")?;
        let max_iterations = p.count("max_iterations")?;
        let num_out_data = p.count("num_out_data")?;
        let num_outputs = p.count("num_outputs")?;
        let cond = Subgraph::new("_while_loop cond".into(), cond, cond_locs, n_inputs)?;
        let func = Subgraph::new("_while_loop func".into(), func, func_locs, n_inputs)?;
        if cond.num_outputs() != 1 {
            return Err(Error::Value(format!("_while_loop: cond must give one output, got {}", cond.num_outputs())));
        }
        if func_var_locs.is_empty() {
            return Err(Error::Value("_while_loop: loop_vars should contain at least one element".into()));
        }
        if num_outputs != num_out_data + func_var_locs.len() || func.num_outputs() != num_outputs {
            return Err(Error::Value(format!(
                "_while_loop: func gives {} outputs; expected num_outputs = {num_outputs} = num_out_data \
                 ({num_out_data}) + the number of loop variables ({})",
                func.num_outputs(),
                func_var_locs.len()
            )));
        }
        let var_inputs = func_var_locs.iter().map(|&l| func.feeds[l]).collect();
        Ok(WhileLoop { cond, func, n_inputs, num_out_data, max_iterations, func_var_locs, var_inputs })
    }

    fn changing(&self, sub: &Subgraph) -> Vec<bool> {
        sub.feeds.iter().map(|f| self.var_inputs.contains(f)).collect()
    }

    /// Runs the loop from the node inputs; `each_step(t, node inputs of step t, outputs)` sees
    /// every step. Returns the node inputs after the last step (the final loop variables).
    fn run_loop(&self, ctx: &Ctx, inputs: &[NDArray], each_step: &mut StepHook<'_>) -> Result<Vec<NDArray>> {
        let mut cur = inputs.to_vec();
        let (mut cond_r, mut func_r): (Option<Runner>, Option<Runner>) = (None, None);
        for t in 0..self.max_iterations {
            let c_in = self.cond.pick(&cur);
            let c = ready(&mut cond_r, || self.cond.runner(&c_in, &self.changing(&self.cond), false))?;
            if !truth("_while_loop: cond", &c.forward(ctx, &c_in)?[0])? {
                break;
            }
            let f_in = self.func.pick(&cur);
            let f = ready(&mut func_r, || self.func.runner(&f_in, &self.changing(&self.func), false))?;
            let outs = f.forward(ctx, &f_in)?;
            each_step(t, &cur, &outs)?;
            for (k, &node_in) in self.var_inputs.iter().enumerate() {
                cur[node_in] = outs[self.num_out_data + k].clone();
            }
        }
        Ok(cur)
    }
}

impl Op for WhileLoop {
    fn name(&self) -> &'static str {
        "_while_loop"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &[]
    }
    fn variadic(&self) -> bool {
        true
    }
    fn num_outputs(&self) -> usize {
        self.num_out_data + self.var_inputs.len()
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("cond_input_locs", list_attr(&self.cond.feeds)),
            ("func_input_locs", list_attr(&self.func.feeds)),
            ("func_var_locs", list_attr(&self.func_var_locs)),
            ("max_iterations", self.max_iterations.to_string()),
            ("num_args", (self.n_inputs + 2).to_string()),
            ("num_out_data", self.num_out_data.to_string()),
            ("num_outputs", self.num_outputs().to_string()),
        ]
    }
    fn subgraphs(&self) -> Vec<Symbol> {
        vec![self.cond.sym.clone(), self.func.sym.clone()]
    }
    fn saves(&self) -> crate::ops::Saves {
        crate::ops::Saves::Inputs
    }

    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let c = self.cond.infer(&self.cond.pick(inputs))?;
        if c[0].shape.iter().product::<usize>() != 1 {
            return Err(Error::Shape(format!(
                "_while_loop: cond must give one element, got shape {}",
                fmt_shape(&c[0].shape)
            )));
        }
        let outs = self.func.infer(&self.func.pick(inputs))?;
        for (k, &node_in) in self.var_inputs.iter().enumerate() {
            let (given, got) = (&inputs[node_in], &outs[self.num_out_data + k]);
            if given.shape != got.shape {
                return Err(Error::Shape(format!(
                    "_while_loop: func turns loop variable {k} of shape {} into shape {}; a loop variable must \
                     keep its shape",
                    fmt_shape(&given.shape),
                    fmt_shape(&got.shape)
                )));
            }
        }
        let mut metas = Vec::with_capacity(outs.len());
        for (j, m) in outs.into_iter().enumerate() {
            metas.push(if j < self.num_out_data {
                let mut shape = vec![self.max_iterations];
                shape.extend_from_slice(&m.shape);
                Meta::new(&shape, m.dtype)
            } else {
                m
            });
        }
        Ok(metas)
    }

    fn infer_missing(&self, inputs: &[Option<Meta>]) -> Vec<Option<Meta>> {
        let mut out = vec![None; inputs.len()];
        for sub in [&self.func, &self.cond] {
            merge_learnt(sub, sub.infer_inputs(&sub.pick(inputs)), &mut out);
        }
        out
    }

    fn forward(&self, ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        for o in outputs[..self.num_out_data].iter_mut() {
            o.fill_scalar(0.0);
        }
        let n_out = self.num_out_data;
        let (stacked, finals) = outputs.split_at_mut(n_out);
        let last = self.run_loop(ctx, inputs, &mut |t, _, outs| {
            for (j, o) in outs[..n_out].iter().enumerate() {
                stacked[j].slice(&[SliceArg::Index(t as i64)])?.assign_from(o)?;
            }
            Ok(())
        })?;
        for (k, &node_in) in self.var_inputs.iter().enumerate() {
            finals[k].assign_from(&last[node_in])?;
        }
        Ok(())
    }

    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        let backward = WhileLoopBackward { fwd: Arc::new(self.clone()) };
        let all: Vec<Val> = inputs.iter().chain(out_grads).copied().collect();
        Ok(g.apply(Arc::new(backward), &all)?.into_iter().map(Some).collect())
    }
}

/// The gradient of `_while_loop` (inputs: the forward's inputs, then one gradient per output;
/// outputs: one gradient per input). It reruns the loop to learn each step's loop variables,
/// then runs `func`'s backward from the last step taken to the first; the padding rows get no
/// gradient.
#[derive(Debug)]
struct WhileLoopBackward {
    fwd: Arc<WhileLoop>,
}

impl Op for WhileLoopBackward {
    fn name(&self) -> &'static str {
        "_backward_while_loop"
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
        let w = &self.fwd;
        let (inputs, ogs) = all.split_at(w.n_inputs);
        let mut hist: Vec<Vec<NDArray>> = Vec::new();
        w.run_loop(ctx, inputs, &mut |_, cur, _| {
            hist.push(w.func.pick(cur));
            Ok(())
        })?;
        let metas: Vec<Meta> = inputs.iter().map(NDArray::meta).collect();
        let mut d_inputs = zeros(&metas);
        let mut d_vars: Vec<NDArray> = ogs[w.num_out_data..].iter().map(NDArray::copy).collect();
        let mut runner: Option<Runner> = None;
        for (t, f_in) in hist.iter().enumerate().rev() {
            let mut heads = Vec::with_capacity(ogs.len());
            for og in &ogs[..w.num_out_data] {
                heads.push(og.slice(&[SliceArg::Index(t as i64)])?);
            }
            heads.extend(d_vars.iter().cloned());
            let r = ready(&mut runner, || w.func.runner(f_in, &w.changing(&w.func), true))?;
            let grads = r.vjp(ctx, f_in, &heads)?;
            for (s, gr) in grads.iter().enumerate() {
                match w.func_var_locs.iter().position(|&l| l == s) {
                    Some(k) => d_vars[k] = gr.clone(),
                    None => add_into(&mut d_inputs[w.func.feeds[s]], gr)?,
                }
            }
        }
        for (k, &node_in) in w.var_inputs.iter().enumerate() {
            add_into(&mut d_inputs[node_in], &d_vars[k])?;
        }
        for (o, d) in outputs.iter_mut().zip(&d_inputs) {
            o.assign_from(d)?;
        }
        Ok(())
    }

    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Err(Error::Runtime("_while_loop: gradients of the gradient are not supported".into()))
    }
}
