//! Normalisation layers: `BatchNorm`, `LayerNorm`, `InstanceNorm`.
//!
//! Forward kernels compute the statistics in f64 (two passes) and write the normalised output in
//! one pass. The gradient rules are composite (broadcast arithmetic and sums), written with
//! registered ops, and include the gradient through the statistics outputs, so they are
//! differentiable again:
//! `dx = istd·(g - t·(mean(g) + x̂·mean(g·x̂))) + t·(g_mean + c·(x - mean))/m` with `g = gy·gamma`,
//! `t` = 1 when batch statistics were used, and `c` the derivative factor of the variance-like
//! output.

use std::sync::Arc;

use std::collections::HashMap;

use ferrograd_kernels::conv::{
    channel_affine2_masked, channel_affine_act, channel_dot, channel_dot_masked, norm_stats, Affine, AffineAct,
    GradAffine,
};

use super::fused::FusedAct;

use super::{check_float, Contig};
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::view::normalize_axis;
use crate::ndarray::{Meta, NDArray};
use crate::ops::attrs::fmt_float;
use crate::ops::params::{OpDef, OpParams};
use crate::ops::unary::UnaryKind;
use crate::ops::{unbroadcast, Attrs, Ctx, Grad, GradGraph, Op, OpRef, Saves, Val};

fn check_param(op: &str, name: &str, got: &[usize], n: usize, data: &[usize]) -> Result<()> {
    if got != [n] {
        return Err(Error::Shape(format!(
            "{op}: {name} has shape {}, expected ({n},) for data of shape {}",
            fmt_shape(got),
            fmt_shape(data)
        )));
    }
    Ok(())
}

fn write_vec<T: crate::dtype::DTypeElem + ferrograd_kernels::Element>(out: &mut NDArray, v: &[f64]) -> Result<()> {
    out.write_out::<T, _>(|o| o.iter_mut().zip(v).for_each(|(d, &s)| *d = T::from_f64(s)))
}

/// Inputs of a composite normalisation rule.
struct NormGrad {
    x: Val,
    gy: Val,
    gamma: Option<Val>,
    /// Statistics, broadcastable to x.
    mean: Val,
    istd: Val,
    /// 0/1 flag (broadcastable): whether the statistics depend on x.
    t: Option<Val>,
    /// Heads of the mean output and of the variance-like output, and the factor turning the
    /// latter into `d(stat)/dx = factor·(x - mean)/m`.
    g_mean: Val,
    g_stat: Val,
    /// `None` multiplies by 1.
    stat_factor: Option<Val>,
    stat_scale: f64,
    red: Vec<i64>,
    /// Axes summed for the gamma/beta gradients (`None`: the same as `red`).
    param_red: Option<Vec<i64>>,
    gamma_shape: Vec<usize>,
    m: f64,
}

/// Sum over `axes` (the identity when there are none: an empty axis list means "all" to `sum`).
fn sum_over(g: &mut Grad<'_>, v: Val, axes: Vec<i64>, keepdims: bool) -> Result<Val> {
    if axes.is_empty() {
        Ok(v)
    } else {
        g.sum_axes(v, axes, keepdims)
    }
}

/// (dx, dgamma, dbeta) of a normalisation (see the module doc).
fn norm_grad(g: &mut Grad<'_>, a: NormGrad) -> Result<(Val, Option<Val>, Val)> {
    let inv_m = 1.0 / a.m.max(1.0);
    let xc = g.sub(a.x, a.mean)?;
    let xhat = g.mul(xc, a.istd)?;
    let gg = match a.gamma {
        Some(gm) => {
            let gb = g.reshape(gm, &a.gamma_shape)?;
            g.mul(a.gy, gb)?
        }
        None => a.gy,
    };
    let s1 = sum_over(g, gg, a.red.clone(), true)?;
    let ggx = g.mul(gg, xhat)?;
    let s2 = sum_over(g, ggx, a.red.clone(), true)?;
    let t2 = g.mul(xhat, s2)?;
    let inner = g.add(s1, t2)?;
    let mut inner = g.mul_scalar(inner, inv_m)?;
    if let Some(t) = a.t {
        inner = g.mul(inner, t)?;
    }
    let d = g.sub(gg, inner)?;
    let dx0 = g.mul(d, a.istd)?;
    // Through the statistics outputs.
    let sv = match a.stat_factor {
        Some(f) => g.mul(a.g_stat, f)?,
        None => a.g_stat,
    };
    let sv = g.mul_scalar(sv, a.stat_scale)?;
    let sv = g.mul(sv, xc)?;
    let extra = g.add(sv, a.g_mean)?;
    let mut extra = g.mul_scalar(extra, inv_m)?;
    if let Some(t) = a.t {
        extra = g.mul(extra, t)?;
    }
    let dx = g.add(dx0, extra)?;
    let pred = a.param_red.unwrap_or(a.red);
    let dgamma = match a.gamma {
        Some(_) => {
            let p = g.mul(a.gy, xhat)?;
            Some(sum_over(g, p, pred.clone(), false)?)
        }
        None => None,
    };
    let dbeta = sum_over(g, a.gy, pred, false)?;
    Ok((dx, dgamma, dbeta))
}

/// MXNet `BatchNorm`.
///
/// Outputs: `out`, then the statistics used (`mean` and `1/sqrt(var + eps)`, MXNet's inverse
/// standard deviation, for the batch mean and biased batch variance in training, the moving
/// statistics otherwise; visible with `output_mean_var=True`), then two hidden ones: a 0/1 flag
/// telling the gradient rule which case ran, and `var` itself.
///
/// **Moving statistics** are updated in place, as in MXNet, by the *backward* pass through a
/// forward that ran in training (`autograd.is_training()` / `is_train=True`) with
/// `use_global_stats=False`: `moving = moving·momentum + batch·(1 - momentum)` (batch variance
/// biased, `momentum` rounded to float32 as MXNet stores it), once per backward (twice for two
/// backwards of a retained graph). A forward alone never changes them; in prediction, or with
/// `use_global_stats=True`, they are read only. With `fix_gamma=True` (the default) gamma is
/// treated as 1 and receives a zero gradient.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchNorm {
    pub eps: f64,
    pub momentum: f64,
    pub fix_gamma: bool,
    pub use_global_stats: bool,
    pub output_mean_var: bool,
    pub axis: i64,
}

impl BatchNorm {
    fn dims(&self, shape: &[usize]) -> Result<(usize, usize, usize, usize)> {
        if shape.is_empty() {
            return Err(Error::Shape(format!(
                "BatchNorm: data must have at least 1 axis, got shape {}",
                fmt_shape(shape)
            )));
        }
        let ax = normalize_axis("BatchNorm", self.axis, shape.len())?;
        Ok((ax, shape[..ax].iter().product(), shape[ax], shape[ax + 1..].iter().product()))
    }
}

impl BatchNorm {
    /// The forward with `act` applied to the normalised output in the same pass. A sixth output,
    /// when given, receives the per-channel scale the affine used (`gamma/sqrt(var + eps)` in the
    /// data's type), from which a fused backward recomputes the pre-activation exactly.
    pub(crate) fn forward_act(
        &self,
        ctx: &Ctx,
        inputs: &[NDArray],
        outputs: &mut [NDArray],
        act: FusedAct,
    ) -> Result<()> {
        let (_, outer, c, inner) = self.dims(inputs[0].shape())?;
        let train = ctx.is_train && !self.use_global_stats;
        let x = Contig::new(&inputs[0]);
        let dt = inputs[0].dtype();
        let (gamma, beta) = (inputs[1].to_f64_vec(), inputs[2].to_f64_vec());
        let stats: Vec<(f64, f64)> = if train {
            float_kernel!(self.name(), dt, T => Ok(norm_stats::<T>(x.get(), outer, c, inner, true)))?
        } else {
            inputs[3].to_f64_vec().into_iter().zip(inputs[4].to_f64_vec()).collect()
        };
        let a: Vec<f64> = stats
            .iter()
            .zip(&gamma)
            .map(|(&(_, v), &gm)| if self.fix_gamma { 1.0 } else { gm } / (v + self.eps).sqrt())
            .collect();
        let means: Vec<f64> = stats.iter().map(|s| s.0).collect();
        let vars: Vec<f64> = stats.iter().map(|s| s.1).collect();
        float_kernel!(self.name(), dt, T => {
            let cast = |v: &[f64]| -> Vec<T> { v.iter().map(|&e| e as T).collect() };
            let (mv, av, bv) = (cast(&means), cast(&a), cast(&beta));
            let f = Affine { mu: &mv, a: &av, b: &bv };
            outputs[0].write_out::<T, _>(|y| channel_affine_act(x.get(), inner, c, f, act.affine::<T>(), y))?;
            if let Some(scale) = outputs.get_mut(5) {
                scale.write_out::<T, _>(|o| o.copy_from_slice(&av))?;
            }
            write_vec::<T>(&mut outputs[1], &means)?;
            let inv_std: Vec<f64> = vars.iter().map(|&v| 1.0 / (v + self.eps).sqrt()).collect();
            write_vec::<T>(&mut outputs[2], &inv_std)?;
            write_vec::<T>(&mut outputs[3], &[if train { 1.0 } else { 0.0 }])?;
            write_vec::<T>(&mut outputs[4], &vars)?;
            Ok(())
        })
    }
}

impl Op for BatchNorm {
    fn name(&self) -> &'static str {
        "BatchNorm"
    }
    fn output_names(&self) -> Option<&'static [&'static str]> {
        self.output_mean_var.then_some(&["output", "mean", "var"][..])
    }
    /// gamma, beta and the moving statistics: one value per channel (`axis`).
    fn infer_missing(&self, inputs: &[Option<Meta>]) -> Vec<Option<Meta>> {
        let Some(d) = inputs.first().cloned().flatten() else { return Vec::new() };
        let Ok((_, _, c, _)) = self.dims(&d.shape) else { return Vec::new() };
        let p = Some(Meta::new(&[c], d.dtype));
        vec![None, p.clone(), p.clone(), p.clone(), p]
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["data", "gamma", "beta"]
    }
    fn aux_names(&self) -> &'static [&'static str] {
        &["moving_mean", "moving_var"]
    }
    fn num_outputs(&self) -> usize {
        5
    }
    fn num_visible_outputs(&self) -> usize {
        if self.output_mean_var {
            3
        } else {
            1
        }
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = vec![("eps", fmt_float(self.eps)), ("momentum", fmt_float(self.momentum))];
        v.push(("fix_gamma", if self.fix_gamma { "True" } else { "False" }.into()));
        if self.use_global_stats {
            v.push(("use_global_stats", "True".into()));
        }
        if self.output_mean_var {
            v.push(("output_mean_var", "True".into()));
        }
        if self.axis != 1 {
            v.push(("axis", self.axis.to_string()));
        }
        v
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let names = ["data", "gamma", "beta", "moving_mean", "moving_var"];
        let dt = check_float(self.name(), &names, inputs)?;
        let (_, _, c, _) = self.dims(&inputs[0].shape)?;
        for (m, n) in inputs.iter().zip(names).skip(1) {
            check_param(self.name(), n, &m.shape, c, &inputs[0].shape)?;
        }
        let stat = Meta::new(&[c], dt);
        Ok(vec![Meta::new(&inputs[0].shape, dt), stat.clone(), stat.clone(), Meta::new(&[1], dt), stat])
    }
    fn forward(&self, ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        self.forward_act(ctx, inputs, outputs, FusedAct::None)
    }
    fn saves(&self) -> Saves {
        Saves::InputsAndOutputs
    }
    fn updated_by_backward(&self) -> &'static [usize] {
        if self.use_global_stats {
            &[]
        } else {
            &[3, 4]
        }
    }
    /// `moving = moving·momentum + batch·(1 - momentum)` for the mean and the biased variance,
    /// when the forward computed batch statistics (the flag output is 1).
    fn update_on_backward(&self, targets: &mut [NDArray], outputs: &[NDArray]) -> Result<()> {
        let [mean, var] = targets else { return Ok(()) };
        let (Some(batch_mean), Some(batch_var), Some(flag)) = (outputs.get(1), outputs.get(4), outputs.get(3)) else {
            return Ok(());
        };
        if flag.to_f64_vec().first() != Some(&1.0) {
            return Ok(());
        }
        let mom = self.momentum as f32 as f64; // a float32 parameter in MXNet
        for (moving, batch) in [(mean, batch_mean), (var, batch_var)] {
            let batch = batch.to_f64_vec();
            float_kernel!(self.name(), moving.dtype(), T => {
                moving.write(|buf, l| {
                    let step = l.strides.first().copied().unwrap_or(0);
                    if let Some(s) = buf.slice_mut::<T>() {
                        for (i, &b) in batch.iter().enumerate() {
                            let pos = (l.offset as isize + i as isize * step) as usize;
                            if let Some(e) = s.get_mut(pos) {
                                *e = (ferrograd_kernels::Element::to_f64(*e) * mom + b * (1.0 - mom)) as T;
                            }
                        }
                    }
                });
                Ok(())
            })?;
        }
        Ok(())
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        let ins = self.backward_inputs(g, inputs, outputs, out_grads)?;
        let r = g.apply(Arc::new(self.backward_op()), &ins)?;
        Ok(self.input_grads(&r))
    }
}

impl BatchNorm {
    /// Its gradient op.
    pub(crate) fn backward_op(&self) -> BatchNormBackward {
        BatchNormBackward { eps: self.eps, fix_gamma: self.fix_gamma, axis: self.axis }
    }

    /// `_backward_BatchNorm`'s inputs (see [`BN_BW_ARGS`]) from the forward's values and head
    /// gradients.
    pub(crate) fn backward_inputs(
        &self,
        g: &mut Grad<'_>,
        inputs: &[Val],
        outputs: &[Val],
        out_grads: &[Val],
    ) -> Result<Vec<Val>> {
        // The visible third output is s = 1/sqrt(var + eps): its gradient reaches var as
        // -s³/2 times the head gradient.
        let s3 = g.mul(outputs[2], outputs[2])?;
        let s3 = g.mul(s3, outputs[2])?;
        let g_var = g.mul(out_grads[2], s3)?;
        let g_var = g.mul_scalar(g_var, -0.5)?;
        Ok(vec![out_grads[0], inputs[0], inputs[1], outputs[1], outputs[4], outputs[3], out_grads[1], g_var])
    }

    /// The forward inputs' gradients from the backward op's `(data, gamma, beta)` gradients.
    pub(crate) fn input_grads(&self, r: &[Val]) -> Vec<Option<Val>> {
        vec![Some(r[0]), (!self.fix_gamma).then_some(r[1]), Some(r[2]), None, None]
    }
}

/// The BatchNorm gradient as a composite of registered ops (the reference the fused
/// `_backward_BatchNorm` computes in two passes, and what its own rule differentiates).
fn bn_composite(g: &mut Grad<'_>, ins: &[Val], eps: f64, fix_gamma: bool, axis: i64) -> Result<Vec<Option<Val>>> {
    let shape = g.shape(ins[1]);
    let bn = BatchNorm { eps, momentum: 0.9, fix_gamma, use_global_stats: false, output_mean_var: false, axis };
    let (ax, outer, c, inner) = bn.dims(&shape)?;
    let mut bshape = vec![1; shape.len()];
    bshape[ax] = c;
    let red: Vec<i64> = (0..shape.len() as i64).filter(|&d| d != ax as i64).collect();
    let mean = g.reshape(ins[3], &bshape)?;
    let var = g.reshape(ins[4], &bshape)?;
    let ve = g.add_scalar(var, eps)?;
    let istd = g.unary(UnaryKind::Rsqrt, ve)?;
    let g_mean = g.reshape(ins[6], &bshape)?;
    let g_var = g.reshape(ins[7], &bshape)?;
    let (dx, dgamma, dbeta) = norm_grad(
        g,
        NormGrad {
            x: ins[1],
            gy: ins[0],
            gamma: (!fix_gamma).then_some(ins[2]),
            mean,
            istd,
            t: Some(ins[5]),
            g_mean,
            g_stat: g_var,
            stat_factor: None,
            stat_scale: 2.0,
            red,
            param_red: None,
            gamma_shape: bshape,
            m: (outer * inner) as f64,
        },
    )?;
    Ok(vec![Some(dx), dgamma, Some(dbeta)])
}

/// Records the ops a composite applies, so its vector-Jacobian product can be formed by
/// applying each recorded op's own rule in reverse.
struct Tap<'a, 'b> {
    inner: &'a mut Grad<'b>,
    nodes: Vec<(OpRef, Vec<Val>, Vec<Val>)>,
}

impl GradGraph for Tap<'_, '_> {
    fn apply(&mut self, op: OpRef, inputs: &[Val]) -> Result<Vec<Val>> {
        let outs = self.inner.apply(op.clone(), inputs)?;
        self.nodes.push((op, inputs.to_vec(), outs.clone()));
        Ok(outs)
    }
    fn meta(&self, v: Val) -> Meta {
        self.inner.meta(v)
    }
}

/// VJP of the composite `build(inputs)` with output heads `heads` (reverse accumulation over the
/// recorded ops, each differentiated by its own rule).
pub(crate) fn composite_vjp(
    g: &mut Grad<'_>,
    inputs: &[Val],
    heads: &[Val],
    build: impl FnOnce(&mut Grad<'_>, &[Val]) -> Result<Vec<Option<Val>>>,
) -> Result<Vec<Option<Val>>> {
    let (outs, nodes) = {
        let mut tap = Tap { inner: g, nodes: Vec::new() };
        let outs = build(&mut Grad::new(&mut tap), inputs)?;
        (outs, tap.nodes)
    };
    let mut adj: HashMap<Val, Val> = HashMap::new();
    let acc = |g: &mut Grad<'_>, adj: &mut HashMap<Val, Val>, k: Val, v: Val| -> Result<()> {
        let s = match adj.remove(&k) {
            Some(a) => g.add(a, v)?,
            None => v,
        };
        adj.insert(k, s);
        Ok(())
    };
    for (o, h) in outs.iter().zip(heads) {
        if let Some(o) = o {
            acc(g, &mut adj, *o, *h)?;
        }
    }
    for (op, ins, os) in nodes.iter().rev() {
        if !os.iter().any(|o| adj.contains_key(o)) || !op.differentiable() {
            continue;
        }
        let mut ogs = Vec::with_capacity(os.len());
        for o in os {
            ogs.push(match adj.get(o) {
                Some(v) => *v,
                None => g.zeros_like(*o)?,
            });
        }
        let gi = op.grad(g, ins, os, &ogs)?;
        for (i, gv) in ins.iter().zip(gi) {
            if let Some(gv) = gv {
                let shape = g.shape(*i);
                let gv = unbroadcast(g, gv, &shape)?;
                acc(g, &mut adj, *i, gv)?;
            }
        }
    }
    Ok(inputs.iter().map(|i| adj.get(i).copied()).collect())
}

/// `_backward_BatchNorm(ograd, data, gamma, mean, var, flag, mean_ograd, var_ograd)` →
/// `(data_grad, gamma_grad, beta_grad)`: BatchNorm's gradient in two passes over the data
/// (per-channel sums, then one elementwise pass). Its own rule differentiates the equivalent
/// composite, so gradients of any order exist.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchNormBackward {
    pub eps: f64,
    pub fix_gamma: bool,
    pub axis: i64,
}

const BN_BW_ARGS: &[&str] = &["ograd", "data", "gamma", "mean", "var", "flag", "mean_ograd", "var_ograd"];

impl BatchNormBackward {
    /// The forward op whose gradient this is (its axis and shape checks).
    fn batch_norm(&self) -> BatchNorm {
        BatchNorm {
            eps: self.eps,
            momentum: 0.9,
            fix_gamma: self.fix_gamma,
            use_global_stats: false,
            output_mean_var: false,
            axis: self.axis,
        }
    }

    /// The gradient through BatchNorm of `act(BatchNorm(x))` when `act` is not `None`: `ograd` is
    /// then the activation's head gradient, and inputs 8 and 9 are the forward's per-channel scale
    /// and beta, from which each pass recomputes the pre-activation (the same bits the forward
    /// made) for the activation's gradient mask.
    pub(crate) fn backward_act(&self, inputs: &[NDArray], outputs: &mut [NDArray], act: FusedAct) -> Result<()> {
        let bn = self.batch_norm();
        let (_, outer, c, inner) = bn.dims(inputs[1].shape())?;
        let (gy, x) = (Contig::new(&inputs[0]), Contig::new(&inputs[1]));
        let v = |k: usize| inputs[k].to_f64_vec();
        let (gamma, mean, var, gm, gv) = (v(2), v(3), v(4), v(6), v(7));
        let t = v(5).first().copied().unwrap_or(0.0);
        let m = (outer * inner).max(1) as f64;
        let dt = inputs[1].dtype();
        float_kernel!(self.name(), dt, T => {
            let mu: Vec<T> = mean.iter().map(|&v| v as T).collect();
            // The forward's affine, when an activation's mask is recomputed from it.
            let (scale, beta): (Vec<T>, Vec<T>) = match act {
                FusedAct::None => (Vec::new(), Vec::new()),
                _ => (Contig::new(&inputs[8]).get::<T>().to_vec(), Contig::new(&inputs[9]).get::<T>().to_vec()),
            };
            let fw = Affine { mu: &mu, a: &scale, b: &beta };
            let act = act.affine::<T>();
            // S1 = Σ gy and Σ gy·x per channel; Σ gy·x̂ = istd·(Σ gy·x - μ·S1).
            let sums = match act {
                AffineAct::Identity => channel_dot::<T>(gy.get(), x.get(), outer, c, inner),
                _ => channel_dot_masked::<T>(gy.get(), x.get(), (outer, c, inner), fw, act),
            };
            let (mut a, mut k, mut cc, mut dg, mut db) = (vec![], vec![], vec![], vec![], vec![]);
            for ch in 0..c {
                let istd = 1.0 / (var[ch] + self.eps).sqrt();
                let gmv = if self.fix_gamma { 1.0 } else { gamma[ch] };
                let (s1, sx) = sums[ch];
                let s2 = istd * (sx - mean[ch] * s1);
                let av = istd * gmv;
                let kv = -av * t * s2 * istd / m + 2.0 * t * gv[ch] / m;
                // dx = a·gy + k·(x - μ) + c: centred, see channel_affine2
                let cv = t * gm[ch] / m - av * t * s1 / m;
                a.push(av as T);
                k.push(kv as T);
                cc.push(cv as T);
                dg.push(if self.fix_gamma { 0.0 } else { s2 });
                db.push(s1);
            }
            let bw = GradAffine { a: &a, mu: &mu, k: &k, c: &cc };
            outputs[0].write_out::<T, _>(|dx| channel_affine2_masked(gy.get(), x.get(), (inner, c), fw, bw, act, dx))?;
            write_vec::<T>(&mut outputs[1], &dg)?;
            write_vec::<T>(&mut outputs[2], &db)?;
            Ok(())
        })
    }
}

impl Op for BatchNormBackward {
    fn name(&self) -> &'static str {
        "_backward_BatchNorm"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        BN_BW_ARGS
    }
    fn num_outputs(&self) -> usize {
        3
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = vec![("eps", fmt_float(self.eps))];
        v.push(("fix_gamma", if self.fix_gamma { "True" } else { "False" }.into()));
        if self.axis != 1 {
            v.push(("axis", self.axis.to_string()));
        }
        v
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let dt = check_float(self.name(), BN_BW_ARGS, inputs)?;
        let bn = self.batch_norm();
        let x = &inputs[1].shape;
        let (_, _, c, _) = bn.dims(x)?;
        if inputs[0].shape != *x {
            return Err(Error::Shape(format!(
                "{}: ograd has shape {}, expected the data shape {}",
                self.name(),
                fmt_shape(&inputs[0].shape),
                fmt_shape(x)
            )));
        }
        for (k, n) in [(2, "gamma"), (3, "mean"), (4, "var"), (6, "mean_ograd"), (7, "var_ograd")] {
            check_param(self.name(), n, &inputs[k].shape, c, x)?;
        }
        check_param(self.name(), "flag", &inputs[5].shape, 1, x)?;
        Ok(vec![Meta::new(x, dt), Meta::new(&[c], dt), Meta::new(&[c], dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        self.backward_act(inputs, outputs, FusedAct::None)
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        let (eps, fix_gamma, axis) = (self.eps, self.fix_gamma, self.axis);
        composite_vjp(g, inputs, out_grads, |g, ins| bn_composite(g, ins, eps, fix_gamma, axis))
    }
}

/// `LayerNorm` (statistics over `axis`, gamma/beta of length `shape[axis]`; outputs `out`,
/// `mean`, `std` with `axis` kept as size 1, the last two visible with `output_mean_var`) and
/// `InstanceNorm` (statistics per sample and channel over the spatial axes, gamma/beta per
/// channel; `mean`/`std` hidden).
#[derive(Clone, Debug, PartialEq)]
pub struct Norm {
    pub instance: bool,
    pub axis: i64,
    pub eps: f64,
    pub output_mean_var: bool,
}

impl Norm {
    /// (stat axis or first spatial axis, outer, mid, inner, param length, stats shape).
    fn dims(&self, shape: &[usize]) -> Result<(usize, usize, usize, usize, usize, Vec<usize>)> {
        if self.instance {
            if shape.len() < 3 {
                return Err(Error::Shape(format!(
                    "InstanceNorm: data must have at least 3 axes (N, C, spatial...), got shape {}",
                    fmt_shape(shape)
                )));
            }
            let mut st = shape.to_vec();
            st[2..].iter_mut().for_each(|d| *d = 1);
            return Ok((2, shape[0] * shape[1], shape[2..].iter().product(), 1, shape[1], st));
        }
        if shape.is_empty() {
            return Err(Error::Shape("LayerNorm: data must have at least 1 axis, got shape ()".into()));
        }
        let ax = normalize_axis("LayerNorm", self.axis, shape.len())?;
        let mut st = shape.to_vec();
        st[ax] = 1;
        Ok((ax, shape[..ax].iter().product(), shape[ax], shape[ax + 1..].iter().product(), shape[ax], st))
    }
}

impl Op for Norm {
    fn name(&self) -> &'static str {
        if self.instance {
            "InstanceNorm"
        } else {
            "LayerNorm"
        }
    }
    fn output_names(&self) -> Option<&'static [&'static str]> {
        (self.output_mean_var && !self.instance).then_some(&["output", "mean", "std"][..])
    }
    fn infer_missing(&self, inputs: &[Option<Meta>]) -> Vec<Option<Meta>> {
        let Some(d) = inputs.first().cloned().flatten() else { return Vec::new() };
        let Ok((.., p, _)) = self.dims(&d.shape) else { return Vec::new() };
        let m = Some(Meta::new(&[p], d.dtype));
        vec![None, m.clone(), m]
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["data", "gamma", "beta"]
    }
    fn num_outputs(&self) -> usize {
        3
    }
    fn num_visible_outputs(&self) -> usize {
        if self.output_mean_var && !self.instance {
            3
        } else {
            1
        }
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = vec![("eps", fmt_float(self.eps))];
        if !self.instance {
            v.push(("axis", self.axis.to_string()));
            if self.output_mean_var {
                v.push(("output_mean_var", "True".into()));
            }
        }
        v
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let dt = check_float(self.name(), self.arg_names(), inputs)?;
        let (_, _, _, _, p, st) = self.dims(&inputs[0].shape)?;
        check_param(self.name(), "gamma", &inputs[1].shape, p, &inputs[0].shape)?;
        check_param(self.name(), "beta", &inputs[2].shape, p, &inputs[0].shape)?;
        Ok(vec![Meta::new(&inputs[0].shape, dt), Meta::new(&st, dt), Meta::new(&st, dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (_, outer, mid, inner, p, _) = self.dims(inputs[0].shape())?;
        let x = Contig::new(&inputs[0]);
        let (gamma, beta) = (inputs[1].to_f64_vec(), inputs[2].to_f64_vec());
        let instance = self.instance;
        float_kernel!(self.name(), inputs[0].dtype(), T => {
            let xs = x.get::<T>();
            let stats = norm_stats::<T>(xs, outer, mid, inner, false);
            let istd: Vec<f64> = stats.iter().map(|s| 1.0 / (s.1 + self.eps).sqrt()).collect();
            outputs[0].write_out::<T, _>(|y| {
                for (r, (&(mu, _), &is)) in stats.iter().zip(&istd).enumerate() {
                    let (o, i) = (r / inner, r % inner);
                    for m in 0..mid {
                        let k = (o * mid + m) * inner + i;
                        let pi = if instance { o % p.max(1) } else { m };
                        y[k] = ((ferrograd_kernels::Element::to_f64(xs[k]) - mu) * is * gamma[pi] + beta[pi]) as T;
                    }
                }
            })?;
            let means: Vec<f64> = stats.iter().map(|s| s.0).collect();
            let stds: Vec<f64> = stats.iter().map(|s| (s.1 + self.eps).sqrt()).collect();
            write_vec::<T>(&mut outputs[1], &means)?;
            write_vec::<T>(&mut outputs[2], &stds)?;
            Ok(())
        })
    }
    fn saves(&self) -> Saves {
        Saves::InputsAndOutputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        let shape = g.shape(inputs[0]);
        let (ax, _, mid, _, p, _) = self.dims(&shape)?;
        let n = shape.len() as i64;
        let (red, param_axis) = if self.instance { ((2..n).collect::<Vec<_>>(), 1) } else { (vec![ax as i64], ax) };
        let mut gshape = vec![1; shape.len()];
        gshape[param_axis] = p;
        let param_red: Vec<i64> = (0..n).filter(|&d| d != param_axis as i64).collect();
        let istd = g.unary(UnaryKind::Reciprocal, outputs[2])?;
        let (dx, dgamma, dbeta) = norm_grad(
            g,
            NormGrad {
                x: inputs[0],
                gy: out_grads[0],
                gamma: Some(inputs[1]),
                mean: outputs[1],
                istd,
                t: None,
                g_mean: out_grads[1],
                g_stat: out_grads[2],
                stat_factor: Some(istd),
                stat_scale: 1.0,
                red,
                param_red: Some(param_red),
                gamma_shape: gshape,
                m: mid as f64,
            },
        )?;
        Ok(vec![Some(dx), dgamma, Some(dbeta)])
    }
}

/// `BatchNorm`'s parameters (also `_backward_BatchNorm`'s).
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct BatchNormParams {
    /// Added to the variance before the square root (MXNet's default is 1e-3 rounded to float32).
    #[param(default = 0.0010000000474974513)]
    pub eps: f64,
    /// Weight of the old value in the moving-average update.
    #[param(default = 0.9)]
    pub momentum: f64,
    /// Treat gamma as 1 (its gradient is zero).
    #[param(default = true)]
    pub fix_gamma: bool,
    /// Normalise with moving_mean and moving_var even when training.
    #[param(default = false)]
    pub use_global_stats: bool,
    /// Also output the batch mean and inverse standard deviation.
    #[param(default = false)]
    pub output_mean_var: bool,
    /// The channel axis (the one not normalised over).
    #[param(default = 1)]
    pub axis: i64,
    /// Disable cuDNN (accepted and ignored).
    #[param(default = false)]
    pub cudnn_off: bool,
    /// Quantisation calibration minimum (accepted and ignored).
    #[param(default = None)]
    pub min_calib_range: Option<f64>,
    /// Quantisation calibration maximum (accepted and ignored).
    #[param(default = None)]
    pub max_calib_range: Option<f64>,
}

/// `LayerNorm`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct LayerNormParams {
    /// The axis normalised over (negative counts from the end).
    #[param(default = -1)]
    pub axis: i64,
    /// Added to the variance before the square root.
    #[param(default = 1e-5)]
    pub eps: f64,
    /// Also output the mean and standard deviation.
    #[param(default = false)]
    pub output_mean_var: bool,
}

/// `InstanceNorm`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct InstanceNormParams {
    /// Added to the variance before the square root.
    #[param(default = 1e-3)]
    pub eps: f64,
}

fn positive_eps(op: &str, eps: f64) -> Result<f64> {
    if eps <= 0.0 {
        return Err(Error::Value(format!("{op}: parameter 'eps' must be positive, got {eps}")));
    }
    Ok(eps)
}

fn build_layer_norm(a: &Attrs) -> Result<OpRef> {
    let p = LayerNormParams::parse(a)?;
    Ok(Arc::new(Norm {
        instance: false,
        axis: p.axis,
        eps: positive_eps("LayerNorm", p.eps)?,
        output_mean_var: p.output_mean_var,
    }))
}

fn build_instance_norm(a: &Attrs) -> Result<OpRef> {
    let p = InstanceNormParams::parse(a)?;
    Ok(Arc::new(Norm { instance: true, axis: 1, eps: positive_eps("InstanceNorm", p.eps)?, output_mean_var: false }))
}

impl BatchNorm {
    /// The op that `attrs` (MXNet's BatchNorm parameters) describe.
    pub(crate) fn from_attrs(a: &Attrs) -> Result<BatchNorm> {
        let p = BatchNormParams::parse(a)?;
        Ok(BatchNorm {
            eps: positive_eps("BatchNorm", p.eps)?,
            momentum: p.momentum,
            fix_gamma: p.fix_gamma,
            use_global_stats: p.use_global_stats,
            output_mean_var: p.output_mean_var,
            axis: p.axis,
        })
    }
}

fn build_batch_norm(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(BatchNorm::from_attrs(a)?))
}

fn build_batch_norm_backward(a: &Attrs) -> Result<OpRef> {
    let p = BatchNormParams::parse(a)?;
    Ok(Arc::new(BatchNormBackward { eps: p.eps, fix_gamma: p.fix_gamma, axis: p.axis }))
}

/// The normalisation ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "BatchNorm",
        aliases: &[],
        args: &["data", "gamma", "beta", "moving_mean", "moving_var"],
        doc: "Batch normalisation over all axes but `axis`; aux moving_mean/moving_var are updated in place in the forward when training (moving = moving*momentum + batch*(1-momentum)), read otherwise; fix_gamma=True (default) treats gamma as 1.",
        params: BatchNormParams::schema,
        build: build_batch_norm,
    },
    OpDef {
        name: "_backward_BatchNorm",
        aliases: &[],
        args: BN_BW_ARGS,
        doc: "Fused BatchNorm gradient (data, gamma, beta) from (ograd, data, gamma, mean, var, flag, mean_ograd, var_ograd).",
        params: BatchNormParams::schema,
        build: build_batch_norm_backward,
    },
    OpDef {
        name: "LayerNorm",
        aliases: &[],
        args: &["data", "gamma", "beta"],
        doc: "Layer normalisation over `axis` (default -1) with gamma/beta of length shape[axis]; output_mean_var adds mean and std.",
        params: LayerNormParams::schema,
        build: build_layer_norm,
    },
    OpDef {
        name: "InstanceNorm",
        aliases: &[],
        args: &["data", "gamma", "beta"],
        doc: "Instance normalisation: per sample and channel over the spatial axes; gamma/beta per channel.",
        params: InstanceNormParams::schema,
        build: build_instance_norm,
    },
];
