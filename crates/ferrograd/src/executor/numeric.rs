//! Finite differences on a bound graph (MXNet's `numeric_grad`), run natively and in parallel.
//!
//! Each worker binds its own copy of the graph (fresh argument and aux arrays, no gradients), so
//! the caller's arrays are never perturbed and workers share nothing mutable.
//!
//! A perturbation of argument `t` re-runs only the steps that `t` reaches; the others keep their
//! values from one forward at the unperturbed point (each forward value has its own buffer in a
//! worker's copy, so nothing overwrites them). A step that reads `t` directly and is linear in it
//! (`dot`, `FullyConnected`) updates its unperturbed output by the perturbation's contribution
//! ([`Op::add_input_delta`]) instead of recomputing the product. Graphs with random ops re-run
//! everything.

use ferrograd_kernels::par::{self, Cost};
use ferrograd_kernels::Element;

use super::{Bindings, Executor};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::ops::backprop::GradReq;
use crate::ops::{Ctx, Op};
use crate::with_dtype;

/// What one target's perturbations re-run.
struct Sweep {
    /// Per forward step: whether the target reaches it.
    dirty: Vec<bool>,
    /// Per forward step reading the target directly and linearly: the target's input position and
    /// the step's unperturbed output.
    delta: Vec<Option<(usize, NDArray)>>,
}

impl Executor {
    /// A copy bound to contiguous copies of the arguments in `targets` (the ones it perturbs; the
    /// others are shared, read only) and of the aux states, computing no gradients, with a private
    /// buffer for every forward value.
    fn fork(&self, targets: &[usize]) -> Result<Executor> {
        let n = self.args.len();
        let b = Bindings {
            args: self
                .args
                .iter()
                .enumerate()
                .map(|(i, a)| if targets.contains(&i) { a.copy() } else { a.clone() })
                .collect(),
            grads: vec![None; n],
            reqs: vec![GradReq::Null; n],
            aux: self.aux.iter().map(NDArray::copy).collect(),
        };
        let mut exe = Executor::bind(&self.symbol, b)?;
        let forward_values: Vec<usize> =
            exe.steps[..exe.n_forward].iter().flat_map(|st| st.io.outputs.iter().map(|&o| o as usize)).collect();
        for o in forward_values {
            if exe.storage[o].is_some() {
                exe.storage[o] =
                    Some(NDArray::try_uninit("numeric gradient", &exe.metas[o].shape, exe.metas[o].dtype)?);
            }
        }
        for (h, &v) in exe.head_vals.iter().enumerate() {
            if let Some(s) = &exe.storage[v as usize] {
                exe.outputs[h] = s.clone();
            }
        }
        Ok(exe)
    }

    /// The steps argument `t` reaches and the linear ones among them; the values are those of the
    /// forward just run (at the unperturbed point).
    fn sweep(&self, t: usize) -> Sweep {
        let fwd = &self.steps[..self.n_forward];
        if fwd.iter().any(|s| s.op.is_random()) {
            return Sweep { dirty: vec![true; fwd.len()], delta: vec![None; fwd.len()] };
        }
        let mut reached = vec![false; self.metas.len()];
        reached[t] = true;
        let mut dirty = Vec::with_capacity(fwd.len());
        let mut delta = Vec::with_capacity(fwd.len());
        for st in fwd {
            let d = st.io.inputs.iter().any(|&v| reached[v as usize]);
            let direct = st.io.inputs.iter().filter(|&&v| v as usize == t).count() == 1
                && st.io.inputs.iter().all(|&v| v as usize == t || !reached[v as usize])
                && st.io.outputs.len() == 1;
            delta.push(match (d && direct, self.vals[st.io.outputs[0] as usize].as_ref()) {
                (true, Some(out)) => st.io.inputs.iter().position(|&v| v as usize == t).map(|p| (p, out.copy())),
                _ => None,
            });
            if d {
                st.io.outputs.iter().for_each(|&o| reached[o as usize] = true);
            }
            dirty.push(d);
        }
        Sweep { dirty, delta }
    }

    /// Central differences of `sum(outputs[0])` with respect to the arguments `targets`: for each
    /// element, `sum(f(x + eps/2) - f(x - eps/2)) / eps` where `f` is the whole, unsummed first
    /// output (differencing before summing keeps the result free of the rounding of a large
    /// float32 sum, which would quantise it to steps of `ulp(sum) / eps`), the aux states reset
    /// before every forward
    /// (training-mode BatchNorm would otherwise drift). Returns one flat `f64` vector per target.
    pub fn numeric_grad(&self, targets: &[usize], eps: f64, is_train: bool) -> Result<Vec<Vec<f64>>> {
        if !(eps > 0.0 && eps.is_finite()) {
            return Err(Error::Value(format!("numeric_grad: eps must be positive and finite, got {eps}")));
        }
        for &t in targets {
            let a = self.args.get(t).ok_or_else(|| {
                Error::Index(format!("numeric_grad: argument index {t} out of range ({} arguments)", self.args.len()))
            })?;
            if !a.dtype().is_float() {
                return Err(Error::DType(format!(
                    "numeric_grad: argument {t} has dtype {}; finite differences need a float array",
                    a.dtype()
                )));
            }
        }
        if self.outputs.is_empty() {
            return Err(Error::Value("numeric_grad: the graph has no outputs".into()));
        }
        let jobs: Vec<(usize, usize)> =
            targets.iter().enumerate().flat_map(|(k, &t)| (0..self.args[t].size()).map(move |i| (k, i))).collect();
        let bases: Vec<Vec<f64>> = targets.iter().map(|&t| self.args[t].to_f64_vec()).collect();
        let n_tasks = par::num_threads().clamp(1, jobs.len().max(1));
        let per = jobs.len().div_ceil(n_tasks).max(1);
        // Each job is two forward passes over the whole graph.
        let work = jobs.len() * (self.naive_bytes / 4 + self.outputs[0].size() + 1);
        let np_shape = crate::np_shape(); // the tasks may run on other threads
        let parts = par::map_tasks(n_tasks, work, Cost::Light, |task| -> Result<Vec<f64>> {
            let _np_shape = crate::NpShapeScope::enter(np_shape);
            let chunk = &jobs[(task * per).min(jobs.len())..((task + 1) * per).min(jobs.len())];
            let mut exe = self.fork(targets)?;
            let aux0: Vec<NDArray> = exe.aux.iter().map(NDArray::copy).collect();
            let mut out = Vec::with_capacity(chunk.len());
            let mut current: Option<(usize, Sweep)> = None;
            for &(k, i) in chunk {
                let t = targets[k];
                if current.as_ref().is_none_or(|(ck, _)| *ck != k) {
                    // Unperturbed values for this target's sweep.
                    exe.reset_aux(&aux0)?;
                    exe.forward(is_train, &mut |_, _| {})?;
                    current = Some((k, exe.sweep(t)));
                }
                let Some((_, sw)) = current.as_mut() else { continue };
                let x = bases[k][i];
                // The next forward writes the head's buffer: keep a private copy of f(x + h).
                let plus = exe.objective_at(t, i, x, eps / 2.0, &aux0, is_train, sw)?.copy();
                let minus = exe.objective_at(t, i, x, -eps / 2.0, &aux0, is_train, sw)?;
                let diff = sum_of_differences(&plus, &minus)?;
                exe.args[t].set_flat_f64(i, x)?;
                out.push(diff / eps);
            }
            Ok(out)
        });
        let mut flat = Vec::with_capacity(jobs.len());
        for p in parts {
            flat.extend(p?);
        }
        let mut res = Vec::with_capacity(targets.len());
        let mut rest = flat.as_slice();
        for &t in targets {
            let (head, tail) = rest.split_at(self.args[t].size());
            res.push(head.to_vec());
            rest = tail;
        }
        Ok(res)
    }

    fn reset_aux(&mut self, aux0: &[NDArray]) -> Result<()> {
        for (a, a0) in self.aux.iter_mut().zip(aux0) {
            a.assign_from(a0)?;
        }
        Ok(())
    }

    /// The first output (the head value where it lives, not copied into the stable output array)
    /// with element `i` of argument `t` moved from `x` to `x + h`, re-running the steps of `sw` (a
    /// step whose op turns out to have no delta rule is re-run from then on).
    #[allow(clippy::too_many_arguments)]
    fn objective_at(
        &mut self,
        t: usize,
        i: usize,
        x: f64,
        h: f64,
        aux0: &[NDArray],
        is_train: bool,
        sw: &mut Sweep,
    ) -> Result<NDArray> {
        self.args[t].set_flat_f64(i, x + h)?;
        self.reset_aux(aux0)?;
        let ctx = Ctx { is_train };
        for s in 0..self.n_forward {
            if !sw.dirty[s] {
                continue;
            }
            if let Some((pos, base)) = &sw.delta[s] {
                let o = self.steps[s].io.outputs[0] as usize;
                if let Some(mut y) = self.storage[o].clone() {
                    y.assign_from(base)?;
                    let inputs: Vec<NDArray> =
                        self.steps[s].io.inputs.iter().filter_map(|&v| self.vals[v as usize].clone()).collect();
                    if inputs.len() == self.steps[s].io.inputs.len()
                        && self.steps[s].op.add_input_delta(&inputs, *pos, i, h, &mut y)?
                    {
                        self.vals[o] = Some(y);
                        continue;
                    }
                }
                // No rule for this op, dtype or layout: it will not have one next time either.
                sw.delta[s] = None;
            }
            self.run(s..s + 1, &ctx, &mut |_, _| {})?;
        }
        self.vals[self.head_vals[0] as usize]
            .clone()
            .ok_or_else(|| Error::Runtime("numeric_grad: the first output was not computed".into()))
    }
}

/// `sum(plus - minus)` over two arrays of one shape and dtype, each difference taken in f64
/// (exact for float16/32 values): the sum of the small differences is accurate where the
/// difference of two large float32 sums is not.
fn sum_of_differences(plus: &NDArray, minus: &NDArray) -> Result<f64> {
    let fused = with_dtype!(plus.dtype(), T => plus.read::<T, _>(|p, lp| {
        minus.read::<T, _>(|m, lm| match (lp.contiguous_range(), lm.contiguous_range()) {
            (Some(rp), Some(rm)) => {
                Some(p[rp].iter().zip(&m[rm]).map(|(a, b)| a.to_f64() - b.to_f64()).sum::<f64>())
            }
            _ => None,
        })
    })??);
    Ok(fused.unwrap_or_else(|| plus.to_f64_vec().iter().zip(minus.to_f64_vec()).map(|(a, b)| a - b).sum()))
}
