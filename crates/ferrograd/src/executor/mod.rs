//! The executor: a symbol bound to arrays, run on a fixed schedule.
//!
//! Binding infers every shape once, lays the forward ops out in graph order, derives the backward
//! ops once from the same gradient rules the tape uses (applied symbolically), and plans memory
//! over the whole schedule ([`plan`]). `forward` and `backward` then only walk the schedule:
//! no inference, no graph building, and no allocation beyond what some kernels use internally.

mod fusion;
mod numeric;
pub mod plan;

use std::collections::HashMap;

use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::backprop::{accumulate, apply_grad_req, head_gradient, propagate, GradReq, GradSource};
use crate::ops::{Ctx, Grad, GradGraph, OpRef, Val};
use crate::symbol::infer::in_operator;
use crate::symbol::{key, output_name, Symbol};
use plan::StepIo;

const NOT_LOSS: &str = "Because the last operator is not Loss function, head_gradient is required when calling \
backward. If you are attempting to minimize the output as an objective, please modify your network and pass it \
through the make_loss symbol.";

/// A monitor callback: each watched value with its name (`fc1_output`).
type Monitor<'a> = dyn FnMut(&str, &NDArray) + 'a;

/// One op application of the schedule.
struct Step {
    op: OpRef,
    /// The node's name (error messages).
    name: String,
    /// Names of the visible outputs (monitor callbacks; empty for backward steps).
    labels: Vec<String>,
    /// Names of values a fused step computes without storing them (`Op::unstored_values`),
    /// shown to monitors while [`Executor::set_monitored`] is on.
    unstored_labels: Vec<String>,
    io: StepIo,
}

/// Arrays to bind, in `list_arguments()` / `list_auxiliary_states()` order.
pub struct Bindings {
    pub args: Vec<NDArray>,
    /// Where gradients go (`None`: not computed).
    pub grads: Vec<Option<NDArray>>,
    pub reqs: Vec<GradReq>,
    pub aux: Vec<NDArray>,
}

/// A bound symbol.
pub struct Executor {
    symbol: Symbol,
    steps: Vec<Step>,
    n_forward: usize,
    metas: Vec<Meta>,
    /// The current array of every value.
    vals: Vec<Option<NDArray>>,
    /// Planned storage per value.
    storage: Vec<Option<NDArray>>,
    pub args: Vec<NDArray>,
    pub grads: Vec<Option<NDArray>>,
    pub reqs: Vec<GradReq>,
    pub aux: Vec<NDArray>,
    /// Stable output arrays (the user keeps them across runs).
    pub outputs: Vec<NDArray>,
    output_names: Vec<String>,
    head_vals: Vec<u32>,
    /// Per head: the value that receives its head gradient (`None`: the head needs none).
    head_grad_vals: Vec<Option<u32>>,
    loss_heads: Vec<bool>,
    /// Per loss head: the ones used as its head gradient, made at the first backward.
    loss_ones: Vec<Option<NDArray>>,
    /// Per argument: the value holding its gradient (`None`: zero, or not requested).
    grad_vals: Vec<Option<u32>>,
    /// Forward steps whose op updates inputs when its gradient is taken (BatchNorm's moving
    /// statistics), in the order the reverse sweep reaches them; their outputs are kept.
    backward_updates: Vec<usize>,
    pub planned_bytes: usize,
    pub naive_bytes: usize,
    /// Input and output handles of the running step (kept to reuse their allocations).
    scratch: (Vec<NDArray>, Vec<NDArray>),
    /// `Convolution → BatchNorm [→ activation]` chains run as one step when not training.
    chains: Vec<fusion::Chain>,
    /// Whether inference forwards use `chains` (on unless `FERROGRAD_INFERENCE_FUSION=0`).
    fuse_inference: bool,
    /// Whether a monitor is watching: fused steps then also show the values they do not store.
    monitored: bool,
}

/// Builds backward steps by applying ops symbolically (shapes only).
struct SymGraph<'a> {
    steps: &'a mut Vec<Step>,
    metas: &'a mut Vec<Meta>,
    current: String,
    /// Per forward value: whether some requested gradient depends on it.
    needs: &'a [bool],
}

impl GradGraph for SymGraph<'_> {
    /// An executor's backward steps are run, never differentiated again.
    fn differentiable(&self) -> bool {
        false
    }

    fn apply(&mut self, op: OpRef, inputs: &[Val]) -> Result<Vec<Val>> {
        let ins: Vec<Meta> = inputs.iter().map(|v| self.metas[v.0 as usize].clone()).collect();
        let outs = op.infer(&ins)?;
        let first = self.metas.len() as u32;
        self.metas.extend(outs);
        let outputs: Vec<u32> = (first..self.metas.len() as u32).collect();
        let io = StepIo { inputs: inputs.iter().map(|v| v.0).collect(), outputs: outputs.clone() };
        let name = format!("_backward_{}", self.current);
        self.steps.push(Step { op, name, labels: Vec::new(), unstored_labels: Vec::new(), io });
        Ok(outputs.into_iter().map(Val).collect())
    }

    fn meta(&self, v: Val) -> Meta {
        self.metas[v.0 as usize].clone()
    }

    fn needs_grad(&self, v: Val) -> bool {
        self.needs.get(v.0 as usize).copied().unwrap_or(true)
    }
}

impl Executor {
    /// Binds `sym` to arrays. Shapes come from the arrays; a mismatch is reported with the node.
    pub fn bind(sym: &Symbol, b: Bindings) -> Result<Executor> {
        let (arg_nodes, aux_nodes) = sym.variables();
        if b.args.len() != arg_nodes.len() || b.grads.len() != arg_nodes.len() || b.reqs.len() != arg_nodes.len() {
            return Err(Error::Value(format!(
                "bind: expected {} arguments ({:?}), got {} arrays, {} gradient slots and {} grad_req entries",
                arg_nodes.len(),
                sym.list_arguments(),
                b.args.len(),
                b.grads.len(),
                b.reqs.len()
            )));
        }
        if b.aux.len() != aux_nodes.len() {
            return Err(Error::Value(format!(
                "bind: expected {} auxiliary states ({:?}), got {}",
                aux_nodes.len(),
                sym.list_auxiliary_states(),
                b.aux.len()
            )));
        }
        let mut metas: Vec<Meta> = Vec::new();
        let mut vals: Vec<Option<NDArray>> = Vec::new();
        let mut first_val: HashMap<usize, u32> = HashMap::new();
        for (n, x) in arg_nodes.iter().zip(&b.args).chain(aux_nodes.iter().zip(&b.aux)) {
            first_val.insert(key(n), metas.len() as u32);
            metas.push(x.meta());
            vals.push(Some(x.clone()));
        }
        let open = open_output_metas(sym, &arg_nodes, &b)?;
        let mut steps = Vec::new();
        for n in sym.topo_nodes() {
            let Some(op) = &n.op else { continue };
            let inputs: Vec<u32> = n.inputs.iter().map(|i| first_val[&key(&i.node)] + i.index as u32).collect();
            let in_metas: Vec<Meta> = inputs.iter().map(|&v| metas[v as usize].clone()).collect();
            let outs = match open.get(&key(&n)) {
                Some(m) => m.clone(),
                None => op.infer(&in_metas).map_err(|e| in_operator(&n.name, e))?,
            };
            let first = metas.len() as u32;
            first_val.insert(key(&n), first);
            metas.extend(outs);
            let outputs = (first..metas.len() as u32).collect();
            let labels = (0..op.num_visible_outputs()).map(|j| output_name(op, &n.name, j)).collect();
            let io = StepIo { inputs, outputs };
            steps.push(Step { op: op.clone(), name: n.name.clone(), labels, unstored_labels: Vec::new(), io });
        }
        let head_vals: Vec<u32> = sym.outputs.iter().map(|o| first_val[&key(&o.node)] + o.index as u32).collect();
        let loss_heads: Vec<bool> =
            sym.outputs.iter().map(|o| o.node.op.as_ref().is_some_and(|op| op.is_loss())).collect();
        let output_names = sym.list_outputs();

        // Which values depend on an argument whose gradient is wanted.
        let mut needs = vec![false; metas.len()];
        for (i, r) in b.reqs.iter().enumerate() {
            needs[i] = *r != GradReq::Null && b.grads[i].is_some();
        }
        for st in &steps {
            if st.op.differentiable() && st.io.inputs.iter().any(|&v| needs[v as usize]) {
                st.io.outputs.iter().for_each(|&o| needs[o as usize] = true);
            }
        }
        if fusion::training_fusion_enabled() {
            fusion::fuse_training(&mut steps, &mut metas, &mut needs, &head_vals);
        }
        let n_forward = steps.len();
        let mut head_grad_vals = vec![None; head_vals.len()];
        let mut grads: HashMap<u32, Val> = HashMap::new();
        let mut backward_updates = Vec::new();
        {
            let mut graph = SymGraph { steps: &mut steps, metas: &mut metas, current: String::new(), needs: &needs };
            for (h, &hv) in head_vals.iter().enumerate() {
                if !needs[hv as usize] {
                    continue;
                }
                let m = graph.metas[hv as usize].clone();
                graph.metas.push(m);
                let v = Val(graph.metas.len() as u32 - 1);
                head_grad_vals[h] = Some(v.0);
                accumulate(&mut Grad::new(&mut graph), &mut grads, hv, v)?;
            }
            for s in (0..n_forward).rev() {
                let (op, io, name) = {
                    let st = &graph.steps[s];
                    (st.op.clone(), st.io.clone(), st.name.clone())
                };
                if !op.differentiable() || !io.inputs.iter().any(|&v| needs[v as usize]) {
                    continue;
                }
                if io.outputs.iter().all(|o| !grads.contains_key(o)) {
                    continue;
                }
                graph.current.clone_from(&name);
                let mut g = Grad::new(&mut graph);
                let mut ogs = Vec::with_capacity(io.outputs.len());
                for o in &io.outputs {
                    ogs.push(match grads.get(o) {
                        Some(&v) => v,
                        None => g.zeros_like(Val(*o))?,
                    });
                }
                let xs: Vec<Val> = io.inputs.iter().map(|&v| Val(v)).collect();
                let ys: Vec<Val> = io.outputs.iter().map(|&v| Val(v)).collect();
                let keys = io.inputs.iter().map(|&x| needs[x as usize].then_some(x));
                propagate(&mut g, op.as_ref(), &xs, &ys, &ogs, keys, &mut grads).map_err(|e| in_operator(&name, e))?;
                if !op.updated_by_backward().is_empty() {
                    backward_updates.push(s);
                }
            }
        }
        let grad_vals: Vec<Option<u32>> =
            (0..b.args.len()).map(|i| if needs[i] { grads.get(&(i as u32)).map(|v| v.0) } else { None }).collect();
        prune_backward(&mut steps, n_forward, &grad_vals, metas.len());
        let mut external = vec![false; metas.len()];
        let mut backward_output = vec![false; metas.len()];
        for st in &steps[n_forward..] {
            st.io.outputs.iter().for_each(|&o| backward_output[o as usize] = true);
        }
        // A gradient written once, by an op, for one argument goes straight into the user's array.
        let mut storage_override: HashMap<u32, NDArray> = HashMap::new();
        for (i, gv) in grad_vals.iter().enumerate() {
            let (Some(gv), Some(dst)) = (gv, &b.grads[i]) else { continue };
            let unique = grad_vals.iter().filter(|g| *g == &Some(*gv)).count() == 1;
            let fits = dst.meta() == metas[*gv as usize] && dst.layout().is_contiguous();
            if b.reqs[i] == GradReq::Write && unique && backward_output[*gv as usize] && fits {
                external[*gv as usize] = true;
                storage_override.insert(*gv, dst.clone());
            }
        }
        let mut keep = vec![false; metas.len()];
        head_vals.iter().for_each(|&v| keep[v as usize] = true);
        grad_vals.iter().flatten().for_each(|&v| keep[v as usize] = true);
        for &s in &backward_updates {
            steps[s].io.outputs.iter().for_each(|&v| keep[v as usize] = true);
        }
        let mut readers = vec![0usize; metas.len()];
        steps.iter().flat_map(|st| &st.io.inputs).for_each(|&v| readers[v as usize] += 1);
        keep.iter().enumerate().filter(|(_, k)| **k).for_each(|(v, _)| readers[v] += 1);
        let mut chains = fusion::find_chains(&steps, n_forward, &readers);
        let ios = fusion::planned_reads(&steps, &chains);
        let p = plan::plan(&ios, &metas, &external, &keep)?;
        let mut storage = p.storage;
        for (v, arr) in storage_override {
            storage[v as usize] = Some(arr);
        }
        vals.resize(metas.len(), None);
        chains.retain(|c| fusion::writes_apart(c, &storage, &vals));
        let outputs = head_vals
            .iter()
            .map(|&v| match &storage[v as usize] {
                Some(s) => s.clone(),
                None => NDArray::zeros(&metas[v as usize].shape, metas[v as usize].dtype),
            })
            .collect();
        Ok(Executor {
            symbol: sym.clone(),
            steps,
            n_forward,
            metas,
            vals,
            storage,
            args: b.args,
            grads: b.grads,
            reqs: b.reqs,
            aux: b.aux,
            outputs,
            output_names,
            head_vals,
            head_grad_vals,
            loss_ones: vec![None; loss_heads.len()],
            loss_heads,
            grad_vals,
            backward_updates,
            planned_bytes: p.planned_bytes,
            naive_bytes: p.naive_bytes,
            scratch: (Vec::new(), Vec::new()),
            chains,
            fuse_inference: std::env::var_os("FERROGRAD_INFERENCE_FUSION").is_none_or(|v| v != "0"),
            monitored: false,
        })
    }

    /// The bound symbol.
    pub fn symbol(&self) -> &Symbol {
        &self.symbol
    }

    pub fn output_names(&self) -> &[String] {
        &self.output_names
    }

    /// Runs steps `range`; `monitor` sees each visible output with its name (`fc1_output`).
    fn run(&mut self, range: std::ops::Range<usize>, ctx: &Ctx, monitor: &mut dyn FnMut(&str, &NDArray)) -> Result<()> {
        // Reused across steps and runs: collecting into fresh inline vectors per step moved ~1 KB
        // of array handles around per op (a third of a tiny op's time).
        let (mut inputs, mut outs) = std::mem::take(&mut self.scratch);
        let r = self.run_steps(range, ctx, monitor, &mut inputs, &mut outs);
        inputs.clear();
        outs.clear();
        self.scratch = (inputs, outs);
        r
    }

    fn run_steps(
        &mut self,
        range: std::ops::Range<usize>,
        ctx: &Ctx,
        monitor: &mut dyn FnMut(&str, &NDArray),
        inputs: &mut Vec<NDArray>,
        outs: &mut Vec<NDArray>,
    ) -> Result<()> {
        let fused = !ctx.is_train && self.fuse_inference && range.start < self.n_forward;
        let mut chains = self.chains.iter().filter(|_| fused).peekable();
        let mut s = range.start;
        while s < range.end {
            // Chains lie inside the forward range and are sorted by their first step.
            while chains.peek().is_some_and(|c| c.first < s) {
                chains.next();
            }
            match chains.peek() {
                Some(c) if c.first == s && c.last < range.end => {
                    let c = chains.next().ok_or_else(|| missing("forward"))?;
                    let name = &self.steps[c.first].name;
                    let value = |v: &u32| self.vals[*v as usize].clone().ok_or_else(|| missing(name));
                    let conv_in = c.conv_inputs.iter().map(value).collect::<Result<Vec<_>>>()?;
                    let bn_params = c.bn_params.iter().map(value).collect::<Result<Vec<_>>>()?;
                    let mut out = self.storage[c.output as usize].clone().ok_or_else(|| missing(name))?;
                    crate::profiler::time_op("_fused_Convolution_BatchNorm", || {
                        c.op.forward(&conv_in, &bn_params, &mut out)
                    })
                    .map_err(|e| in_operator(name, e))?;
                    if let Some(label) = self.steps[c.last].labels.first() {
                        monitor(label, &out);
                    }
                    self.vals[c.output as usize] = Some(out);
                    s = c.last + 1;
                }
                _ => {
                    Self::run_step(
                        &self.steps[s],
                        (&self.storage, &self.metas),
                        &mut self.vals,
                        ctx,
                        (monitor, self.monitored),
                        inputs,
                        outs,
                    )?;
                    s += 1;
                }
            }
        }
        Ok(())
    }

    /// Runs one step: reads its inputs' current arrays, writes its planned outputs.
    #[allow(clippy::too_many_arguments)]
    /// `monitored`: also show the monitor the values a fused step does not store.
    fn run_step(
        st: &Step,
        (storage, metas): (&[Option<NDArray>], &[Meta]),
        vals: &mut [Option<NDArray>],
        ctx: &Ctx,
        (monitor, monitored): (&mut Monitor<'_>, bool),
        inputs: &mut Vec<NDArray>,
        outs: &mut Vec<NDArray>,
    ) -> Result<()> {
        inputs.clear();
        for &v in &st.io.inputs {
            inputs.push(vals[v as usize].clone().ok_or_else(|| missing(&st.name))?);
        }
        outs.clear();
        for &o in &st.io.outputs {
            outs.push(match &storage[o as usize] {
                Some(a) => a.clone(),
                None => NDArray::try_uninit(&st.name, &metas[o as usize].shape, metas[o as usize].dtype)?,
            });
        }
        crate::profiler::time_op(st.op.name(), || st.op.forward(ctx, inputs, outs))
            .map_err(|e| in_operator(&st.name, e))?;
        if monitored && !st.unstored_labels.is_empty() {
            let values = st.op.unstored_values(inputs, outs).map_err(|e| in_operator(&st.name, e))?;
            st.unstored_labels.iter().zip(&values).for_each(|(label, v)| monitor(label, v));
        }
        for (j, (&o, out)) in st.io.outputs.iter().zip(outs.drain(..)).enumerate() {
            // Forwards write into the outputs they are given (layout ops copy, their views
            // are for imperative calls only), so the value lives in the planned storage.
            debug_assert!(
                storage[o as usize].as_ref().is_none_or(|p| out.shares_storage(p)),
                "{}: forward replaced its output instead of writing into it",
                st.name
            );
            if let Some(label) = st.labels.get(j) {
                monitor(label, &out);
            }
            vals[o as usize] = Some(out);
        }
        Ok(())
    }

    /// Whether `forward(is_train=false)` runs `Convolution → BatchNorm [→ activation]` chains as
    /// one step (the results are the same; a monitor then sees only each chain's last output).
    pub fn set_inference_fusion(&mut self, on: bool) {
        self.fuse_inference = on;
    }

    /// Whether monitors watch the forwards: steps fused for training then also show the values
    /// they do not store (BatchNorm's output before its activation), recomputed; slower.
    pub fn set_monitored(&mut self, on: bool) {
        self.monitored = on;
    }

    /// Whether inference fusion is on (see [`Executor::set_inference_fusion`]).
    pub fn inference_fusion(&self) -> bool {
        self.fuse_inference
    }

    /// The number of chains an inference forward runs fused.
    pub fn num_fused_chains(&self) -> usize {
        if self.fuse_inference {
            self.chains.len()
        } else {
            0
        }
    }

    /// Runs the forward schedule; the results land in [`Executor::outputs`].
    pub fn forward(&mut self, is_train: bool, monitor: &mut dyn FnMut(&str, &NDArray)) -> Result<()> {
        let ctx = Ctx { is_train };
        self.run(0..self.n_forward, &ctx, monitor)?;
        self.collect_outputs()
    }

    /// Makes the forward write its results into `outputs` (one per head, with the head's shape
    /// and dtype) instead of arrays of its own: `Executor.reshape` gives a smaller executor
    /// views of its parent's outputs, so the two share memory as in MXNet.
    pub fn share_outputs(&mut self, outputs: Vec<NDArray>) -> Result<()> {
        if outputs.len() != self.outputs.len() {
            return Err(Error::Value(format!(
                "share_outputs: {} arrays given for {} outputs",
                outputs.len(),
                self.outputs.len()
            )));
        }
        for (h, (new, old)) in outputs.iter().zip(&self.outputs).enumerate() {
            if new.shape() != old.shape() || new.dtype() != old.dtype() {
                return Err(Error::Shape(format!(
                    "share_outputs: output {h} ({}) must be {} {}, got {} {}",
                    self.output_names[h],
                    fmt_shape(old.shape()),
                    old.dtype(),
                    fmt_shape(new.shape()),
                    new.dtype()
                )));
            }
        }
        self.outputs = outputs;
        Ok(())
    }

    /// Copies the head values into the stable output arrays (unless they are the same buffer).
    fn collect_outputs(&mut self) -> Result<()> {
        for (h, &v) in self.head_vals.iter().enumerate() {
            let val = self.vals[v as usize].clone().ok_or_else(|| missing("forward"))?;
            if !val.shares_storage(&self.outputs[h]) {
                self.outputs[h].assign_from(&val)?;
            }
        }
        Ok(())
    }

    /// Runs the backward schedule with one head gradient per output (`None`: the output is a loss
    /// op's, which supplies its own) and stores the gradients by each argument's `grad_req`.
    pub fn backward(&mut self, out_grads: &[Option<NDArray>], is_train: bool) -> Result<()> {
        self.backward_with(out_grads, is_train, None)
    }

    /// [`Executor::backward`] that calls `grad_ready(i, grad)` for each argument `i` whose
    /// gradient buffer was written, as soon as it is final (its last backward step has run),
    /// while the rest of backward is still to come: a distributed store starts reducing it then.
    pub fn backward_with(
        &mut self,
        out_grads: &[Option<NDArray>],
        is_train: bool,
        grad_ready: Option<GradReady<'_>>,
    ) -> Result<()> {
        if out_grads.len() != self.head_vals.len() {
            return Err(Error::Value(format!(
                "backward: {} head gradient(s) given for {} output(s) {:?}",
                out_grads.len(),
                self.head_vals.len(),
                self.output_names
            )));
        }
        if self.vals[self.head_vals.first().copied().unwrap_or(0) as usize].is_none() && self.n_forward > 0 {
            return Err(Error::Runtime("backward: call forward() before backward()".into()));
        }
        for (h, g) in out_grads.iter().enumerate() {
            let Some(slot) = self.head_grad_vals[h] else { continue };
            let meta = &self.metas[self.head_vals[h] as usize];
            let g = match head_gradient(g.as_ref(), meta, &format!("'{}'", self.output_names[h]))? {
                Some(g) => g,
                None if self.loss_heads[h] => {
                    self.loss_ones[h].get_or_insert_with(|| NDArray::ones(&meta.shape, meta.dtype)).clone()
                }
                None => return Err(Error::Runtime(NOT_LOSS.into())),
            };
            self.vals[slot as usize] = Some(g);
        }
        if is_train {
            self.update_on_backward()?;
        }
        let ctx = Ctx { is_train };
        let Some(hook) = grad_ready else {
            self.run(self.n_forward..self.steps.len(), &ctx, &mut |_, _| {})?;
            return (0..self.args.len()).try_for_each(|i| self.store_grad(i).map(|_| ()));
        };
        let mut start = self.n_forward;
        for (end, i) in self.grad_ready_order() {
            if end > start {
                self.run(start..end, &ctx, &mut |_, _| {})?;
                start = end;
            }
            if let Some(grad) = self.store_grad(i)? {
                hook(i, &grad)?;
            }
        }
        self.run(start..self.steps.len(), &ctx, &mut |_, _| {})
    }

    /// Stores argument `i`'s computed gradient by its `grad_req`; returns its buffer if written.
    fn store_grad(&mut self, i: usize) -> Result<Option<NDArray>> {
        let Some(dst) = &mut self.grads[i] else { return Ok(None) };
        let g = self.grad_vals[i].and_then(|v| self.vals[v as usize].as_ref());
        apply_grad_req(dst, self.reqs[i], g, GradSource::Reused)?;
        Ok((self.reqs[i] != GradReq::Null).then(|| dst.clone()))
    }

    /// `(end, i)` for every argument with a gradient buffer, in the order their gradients become
    /// final: `end` is one past the backward step that produces it (`n_forward` for one no step
    /// produces, e.g. a head gradient or none at all).
    fn grad_ready_order(&self) -> Vec<(usize, usize)> {
        // One pass over the backward steps: the step after which each value is final.
        let mut end_of: HashMap<u32, usize> = HashMap::new();
        for s in self.n_forward..self.steps.len() {
            for &v in &self.steps[s].io.outputs {
                end_of.insert(v, s + 1);
            }
        }
        let mut order: Vec<(usize, usize)> = (0..self.args.len())
            .filter(|&i| self.grads[i].is_some())
            .map(|i| (self.grad_vals[i].and_then(|v| end_of.get(&v).copied()).unwrap_or(self.n_forward), i))
            .collect();
        order.sort_unstable();
        order
    }

    /// Whether output `h` is a loss op's (it needs no head gradient).
    pub fn is_loss_head(&self, h: usize) -> bool {
        self.loss_heads.get(h).copied().unwrap_or(false)
    }

    /// Names of the forward and backward steps, in schedule order.
    pub fn schedule(&self) -> Vec<(String, &'static str)> {
        self.steps.iter().map(|s| (s.name.clone(), s.op.name())).collect()
    }

    pub fn num_forward_steps(&self) -> usize {
        self.n_forward
    }
}

/// A callback given each argument's index and gradient buffer as that gradient becomes final
/// ([`Executor::backward_with`]); an error stops the backward.
pub type GradReady<'a> = &'a mut dyn FnMut(usize, &NDArray) -> Result<()>;

/// Drops backward steps whose outputs no gradient needs: a rule computes every input's gradient
/// (FullyConnected's data gradient), but only those of arguments with a `grad_req` are kept.
fn prune_backward(steps: &mut Vec<Step>, n_forward: usize, grad_vals: &[Option<u32>], n_vals: usize) {
    let mut live = vec![false; n_vals];
    grad_vals.iter().flatten().for_each(|&v| live[v as usize] = true);
    let mut keep = vec![true; steps.len()];
    for s in (n_forward..steps.len()).rev() {
        let io = &steps[s].io;
        if io.outputs.iter().any(|&o| live[o as usize]) {
            io.inputs.iter().for_each(|&i| live[i as usize] = true);
        } else {
            keep[s] = false;
        }
    }
    let mut k = keep.into_iter();
    steps.retain(|_| k.next().unwrap_or(true));
}

impl Executor {
    /// The in-place updates ops make when their gradient is taken (see
    /// [`crate::ops::Op::updated_by_backward`]), from the last forward's values: the aux
    /// inputs are the bound arrays themselves, so the caller's `aux` see the update.
    fn update_on_backward(&mut self) -> Result<()> {
        for &s in &self.backward_updates {
            let st = &self.steps[s];
            let value = |v: u32| self.vals[v as usize].clone().ok_or_else(|| missing(&st.name));
            let mut targets = Vec::new();
            for &i in st.op.updated_by_backward() {
                targets.push(value(st.io.inputs[i])?);
            }
            let outputs = st.io.outputs.iter().map(|&o| value(o)).collect::<Result<Vec<_>>>()?;
            st.op.update_on_backward(&mut targets, &outputs).map_err(|e| in_operator(&st.name, e))?;
        }
        Ok(())
    }
}

fn missing(name: &str) -> Error {
    Error::Runtime(format!("{name}: an input has not been computed (call forward() first)"))
}

/// The output metas of the input-less nodes whose shape is open (a sampler of `shape=()` in a
/// symbol, see `Op::open_outputs`), by node key, as symbolic inference completes them from their
/// consumers and the bound arrays. A shape inference cannot decide is left to the op's `infer`.
fn open_output_metas(
    sym: &Symbol,
    arg_nodes: &[std::sync::Arc<crate::symbol::SymNode>],
    b: &Bindings,
) -> Result<HashMap<usize, Vec<Meta>>> {
    let open: Vec<usize> = sym
        .topo_nodes()
        .iter()
        .filter(|n| n.inputs.is_empty() && n.op.as_ref().is_some_and(|op| op.open_outputs().is_some()))
        .map(key)
        .collect();
    if open.is_empty() {
        return Ok(HashMap::new());
    }
    let (_, aux_nodes) = sym.variables();
    let mut known = crate::symbol::infer::Known::default();
    for (n, x) in arg_nodes.iter().zip(&b.args).chain(aux_nodes.iter().zip(&b.aux)) {
        known.shapes.insert(n.name.clone(), x.shape().to_vec());
        known.dtypes.insert(n.name.clone(), x.dtype());
    }
    let inferred = crate::symbol::infer::infer(sym, &known)?;
    Ok(open
        .into_iter()
        .filter_map(|k| {
            let metas: Option<Vec<Meta>> = inferred.nodes.get(&k)?.iter().cloned().collect();
            Some((k, metas?))
        })
        .collect())
}
