//! `_foreach`: runs the body over axis 0 of the data inputs, threading loop states through.
//!
//! Node inputs: the data arrays, the initial states, then the body's other inputs (free
//! variables and values cut from the enclosing graph). Outputs: the body's step outputs stacked
//! on a new axis 0, then the final states.

use std::sync::Arc;

use super::{add_into, input_metas, list_attr, merge_learnt, ready, zeros, Params, Subgraph};
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray, SliceArg};
use crate::ops::{Ctx, Grad, Op, Saves, Val};

#[derive(Debug)]
pub struct Foreach {
    body: Subgraph,
    n_data: usize,
    n_states: usize,
    n_inputs: usize,
    num_out_data: usize,
    /// MXNet's parameters: where the data, the states and the rest sit among the body's inputs.
    in_data_locs: Vec<usize>,
    in_state_locs: Vec<usize>,
    remain_locs: Vec<usize>,
}

fn row(x: &NDArray, t: usize) -> Result<NDArray> {
    x.slice(&[SliceArg::Index(t as i64)])
}

impl Foreach {
    pub(super) fn new(p: &Params<'_>, mut subgraphs: Vec<crate::symbol::Symbol>, n_inputs: usize) -> Result<Foreach> {
        if subgraphs.len() != 1 {
            return Err(Error::Value(format!("_foreach: expected one subgraph (the body), got {}", subgraphs.len())));
        }
        let body = subgraphs.remove(0);
        let n_sub = body.list_inputs().len();
        let in_data_locs = p.indices("in_data_locs", n_sub, "body inputs")?;
        let in_state_locs = p.indices("in_state_locs", n_sub, "body inputs")?;
        let remain_locs = p.indices("remain_locs", n_sub, "body inputs")?;
        let (n_data, n_states) = (in_data_locs.len(), in_state_locs.len());
        if n_data == 0 {
            return Err(Error::Value("_foreach: needs at least one data input".into()));
        }
        if n_data + n_states + remain_locs.len() != n_inputs || n_inputs != n_sub {
            return Err(Error::Value(format!(
                "_foreach: {n_data} data, {n_states} state and {} other locations for {n_inputs} node inputs \
                 and {n_sub} body inputs",
                remain_locs.len()
            )));
        }
        let mut feeds = vec![usize::MAX; n_sub];
        for (node_in, &loc) in in_data_locs.iter().chain(&in_state_locs).chain(&remain_locs).enumerate() {
            if feeds[loc] != usize::MAX {
                return Err(Error::Value(format!("_foreach: body input {loc} is given two locations")));
            }
            feeds[loc] = node_in;
        }
        let num_outputs = p.count("num_outputs")?;
        let num_out_data = p.count("num_out_data")?;
        let body = Subgraph::new("_foreach body".into(), body, feeds, n_inputs)?;
        if num_outputs != num_out_data + n_states || body.num_outputs() != num_outputs {
            return Err(Error::Value(format!(
                "_foreach: the body gives {} outputs; expected num_outputs = {num_outputs} = num_out_data \
                 ({num_out_data}) + the number of states ({n_states})",
                body.num_outputs()
            )));
        }
        Ok(Foreach { body, n_data, n_states, n_inputs, num_out_data, in_data_locs, in_state_locs, remain_locs })
    }

    /// The node inputs of step `t`: data rows, the given states, the rest as they are.
    fn step_inputs(&self, inputs: &[NDArray], states: &[NDArray], t: usize) -> Result<Vec<NDArray>> {
        let mut step = Vec::with_capacity(self.n_inputs);
        for x in &inputs[..self.n_data] {
            step.push(row(x, t)?);
        }
        step.extend(states.iter().cloned());
        step.extend(inputs[self.n_data + self.n_states..self.n_inputs].iter().cloned());
        Ok(self.body.pick(&step))
    }

    /// Which body inputs change from step to step (data and states).
    fn changing(&self) -> Vec<bool> {
        self.body.feeds.iter().map(|&f| f < self.n_data + self.n_states).collect()
    }

    fn steps(&self, inputs: &[Meta]) -> Result<usize> {
        let lens: Vec<Option<usize>> = inputs[..self.n_data].iter().map(|m| m.shape.first().copied()).collect();
        match lens[0] {
            Some(n) if lens.iter().all(|&l| l == Some(n)) => Ok(n),
            _ => Err(Error::Shape(format!(
                "_foreach: every data input needs the same length along axis 0, got shapes {}",
                inputs[..self.n_data].iter().map(|m| fmt_shape(&m.shape)).collect::<Vec<_>>().join(", ")
            ))),
        }
    }

    /// The states after each step but the last, from the first (`states[t]` enters step `t`).
    fn state_history(&self, ctx: &Ctx, inputs: &[NDArray], steps: usize) -> Result<Vec<Vec<NDArray>>> {
        let mut states = inputs[self.n_data..self.n_data + self.n_states].to_vec();
        let mut hist = Vec::with_capacity(steps);
        let mut runner = None;
        for t in 0..steps {
            let step = self.step_inputs(inputs, &states, t)?;
            hist.push(states);
            if t + 1 == steps {
                break;
            }
            let r = ready(&mut runner, || self.body.runner(&step, &self.changing(), false))?;
            let outs = r.forward(ctx, &step)?;
            states = outs[self.num_out_data..].to_vec();
        }
        Ok(hist)
    }
}

impl Op for Foreach {
    fn name(&self) -> &'static str {
        "_foreach"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &[]
    }
    fn variadic(&self) -> bool {
        true
    }
    fn num_outputs(&self) -> usize {
        self.num_out_data + self.n_states
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("in_data_locs", list_attr(&self.in_data_locs)),
            ("in_state_locs", list_attr(&self.in_state_locs)),
            ("num_args", (self.n_inputs + 1).to_string()),
            ("num_out_data", self.num_out_data.to_string()),
            ("num_outputs", self.num_outputs().to_string()),
            ("remain_locs", list_attr(&self.remain_locs)),
        ]
    }
    fn subgraphs(&self) -> Vec<crate::symbol::Symbol> {
        vec![self.body.sym.clone()]
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }

    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let steps = self.steps(inputs)?;
        let mut step: Vec<Meta> = inputs.to_vec();
        for m in &mut step[..self.n_data] {
            *m = Meta::new(&m.shape[1..], m.dtype);
        }
        let outs = self.body.infer(&self.body.pick(&step))?;
        for k in 0..self.n_states {
            let (given, got) = (&inputs[self.n_data + k], &outs[self.num_out_data + k]);
            if given.shape != got.shape {
                return Err(Error::Shape(format!(
                    "_foreach: the body turns state {k} of shape {} into shape {}; a loop state must keep its shape",
                    fmt_shape(&given.shape),
                    fmt_shape(&got.shape)
                )));
            }
        }
        let mut metas = Vec::with_capacity(outs.len());
        for (j, m) in outs.into_iter().enumerate() {
            metas.push(if j < self.num_out_data {
                let mut shape = vec![steps];
                shape.extend_from_slice(&m.shape);
                Meta::new(&shape, m.dtype)
            } else {
                m
            });
        }
        Ok(metas)
    }

    fn infer_missing(&self, inputs: &[Option<Meta>]) -> Vec<Option<Meta>> {
        let mut step: Vec<Option<Meta>> = inputs.to_vec();
        for m in step[..self.n_data].iter_mut().flatten() {
            *m = Meta::new(m.shape.get(1..).unwrap_or(&[]), m.dtype);
        }
        let learnt = self.body.infer_inputs(&self.body.pick(&step));
        let mut out = vec![None; inputs.len()];
        merge_learnt(&self.body, learnt, &mut out);
        // A data row's shape does not give the data's length.
        out[..self.n_data].iter_mut().for_each(|m| *m = None);
        out
    }

    fn forward(&self, ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let metas: Vec<Meta> = inputs.iter().map(NDArray::meta).collect();
        let steps = self.steps(&metas)?;
        let mut states = inputs[self.n_data..self.n_data + self.n_states].to_vec();
        let mut runner = None;
        for t in 0..steps {
            let step = self.step_inputs(inputs, &states, t)?;
            let r = ready(&mut runner, || self.body.runner(&step, &self.changing(), false))?;
            let outs = r.forward(ctx, &step)?;
            for (j, o) in outs[..self.num_out_data].iter().enumerate() {
                row(&outputs[j], t)?.assign_from(o)?;
            }
            states = outs[self.num_out_data..].to_vec();
        }
        for (k, s) in states.iter().enumerate() {
            outputs[self.num_out_data + k].assign_from(s)?;
        }
        Ok(())
    }

    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        let backward = ForeachBackward { fwd: self.clone_arc() };
        let all: Vec<Val> = inputs.iter().chain(out_grads).copied().collect();
        Ok(g.apply(Arc::new(backward), &all)?.into_iter().map(Some).collect())
    }
}

impl Foreach {
    fn clone_arc(&self) -> Arc<Foreach> {
        Arc::new(Foreach {
            body: self.body.clone(),
            n_data: self.n_data,
            n_states: self.n_states,
            n_inputs: self.n_inputs,
            num_out_data: self.num_out_data,
            in_data_locs: self.in_data_locs.clone(),
            in_state_locs: self.in_state_locs.clone(),
            remain_locs: self.remain_locs.clone(),
        })
    }
}

/// The gradient of `_foreach`: inputs are the forward's inputs then one gradient per forward
/// output; outputs one gradient per forward input. It recomputes the states each step saw, then
/// runs the body's backward from the last step to the first.
#[derive(Debug)]
struct ForeachBackward {
    fwd: Arc<Foreach>,
}

impl Op for ForeachBackward {
    fn name(&self) -> &'static str {
        "_backward_foreach"
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
        let f = &self.fwd;
        let (inputs, ogs) = all.split_at(f.n_inputs);
        let metas: Vec<Meta> = inputs.iter().map(NDArray::meta).collect();
        let steps = f.steps(&metas)?;
        let hist = f.state_history(ctx, inputs, steps)?;
        let fixed = f.n_data + f.n_states;
        let mut d_states: Vec<NDArray> = ogs[f.num_out_data..].iter().map(NDArray::copy).collect();
        let mut d_rest = zeros(&metas[fixed..]);
        for o in outputs[..f.n_data].iter_mut() {
            o.fill_scalar(0.0);
        }
        let mut runner = None;
        for t in (0..steps).rev() {
            let step = f.step_inputs(inputs, &hist[t], t)?;
            let mut heads = Vec::with_capacity(ogs.len());
            for og in &ogs[..f.num_out_data] {
                heads.push(row(og, t)?);
            }
            heads.extend(d_states.iter().cloned());
            let r = ready(&mut runner, || f.body.runner(&step, &f.changing(), true))?;
            let grads = r.vjp(ctx, &step, &heads)?;
            for (gr, &node_in) in grads.iter().zip(&f.body.feeds) {
                if node_in < f.n_data {
                    row(&outputs[node_in], t)?.assign_from(gr)?;
                } else if node_in < fixed {
                    d_states[node_in - f.n_data] = gr.clone();
                } else {
                    add_into(&mut d_rest[node_in - fixed], gr)?;
                }
            }
        }
        for (k, d) in d_states.iter().chain(&d_rest).enumerate() {
            outputs[f.n_data + k].assign_from(d)?;
        }
        Ok(())
    }

    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Err(Error::Runtime("_foreach: gradients of the gradient are not supported".into()))
    }
}
