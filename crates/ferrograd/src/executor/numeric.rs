//! Finite differences on a bound graph (MXNet's `numeric_grad`), run natively and in parallel.
//!
//! Each worker binds its own copy of the graph (fresh argument and aux arrays, no gradients), so
//! the caller's arrays are never perturbed and workers share nothing mutable.

use ferrograd_kernels::par::{self, Cost};

use super::{Bindings, Executor};
use crate::autograd::GradReq;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;

impl Executor {
    /// A copy bound to contiguous copies of this executor's arguments and aux states, computing
    /// no gradients.
    fn fork(&self) -> Result<Executor> {
        let n = self.args.len();
        let b = Bindings {
            args: self.args.iter().map(NDArray::copy).collect(),
            grads: vec![None; n],
            reqs: vec![GradReq::Null; n],
            aux: self.aux.iter().map(NDArray::copy).collect(),
        };
        Executor::bind(&self.symbol, b)
    }

    /// Central differences of `sum(outputs[0])` with respect to the arguments `targets`: for each
    /// element, `(f(x + eps/2) - f(x - eps/2)) / eps`, the aux states reset before every forward
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
        let parts = par::map_tasks(n_tasks, work, Cost::Light, |task| -> Result<Vec<f64>> {
            let chunk = &jobs[(task * per).min(jobs.len())..((task + 1) * per).min(jobs.len())];
            let mut exe = self.fork()?;
            let aux0: Vec<NDArray> = exe.aux.iter().map(NDArray::copy).collect();
            let mut out = Vec::with_capacity(chunk.len());
            for &(k, i) in chunk {
                let (t, x) = (targets[k], bases[k][i]);
                let plus = exe.objective_at(t, i, x + eps / 2.0, &aux0, is_train)?;
                let minus = exe.objective_at(t, i, x - eps / 2.0, &aux0, is_train)?;
                exe.args[t].set_flat_f64(i, x)?;
                out.push((plus - minus) / eps);
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

    /// `sum(outputs[0])` with element `i` of argument `t` set to `value`.
    fn objective_at(&mut self, t: usize, i: usize, value: f64, aux0: &[NDArray], is_train: bool) -> Result<f64> {
        self.args[t].set_flat_f64(i, value)?;
        for (a, a0) in self.aux.iter_mut().zip(aux0) {
            a.assign_from(a0)?;
        }
        self.forward(is_train, &mut |_, _| {})?;
        Ok(self.outputs[0].to_f64_vec().iter().sum())
    }
}
