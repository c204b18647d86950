//! Fused optimizer update ops (`sgd_update`, `adam_update`, `multi_sgd_mom_update`, ...), as
//! MXNet 1.9.1 has them.
//!
//! Each op reads a weight, its gradient and its optimizer states, and in one pass over memory
//! updates the states **in place** (they share storage with the caller's arrays, as MXNet's
//! mutated inputs do) and writes the new weight to its output; `out=weight` makes the whole
//! update in place. The multi-precision ops (`mp_*`) keep a float32 master copy (`weight32`,
//! updated in place) and write the new low-precision weight from it. The ops are not
//! differentiable. [`update_in_place`] runs the same rules writing the weight itself, for the
//! optimizers (no output array, no extra copy).
//!
//! Large parameters are split into fixed chunks run on rayon (the kernels crate's policy), and
//! every element is updated independently, so results are bitwise identical for any thread count.

pub mod params;
pub mod rules;

use std::sync::Arc;

use ferrograd_kernels::par::{self, Cost};

use self::params::{MultiSgdMomParams, MultiSgdParams};
use self::rules::{GradPrep, Real, Rule};
use crate::dtype::{DType, DTypeElem};
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::params::{OpDef, OpParams};
use crate::ops::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};

/// Where an op finds its arrays: `weight` is input 0, `grad` input 1.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Slots {
    /// Mutated optimizer states, in the rule's lane order (after lane 0).
    states: &'static [usize],
    /// The float32 master weight of the multi-precision ops (lane 0 when present).
    weight32: Option<usize>,
    /// Inputs read as scalars: `_adamw_update`'s `rescale_grad`, LAMB's `r1` and `r2`.
    scalars: &'static [usize],
}

const fn slots(states: &'static [usize], weight32: Option<usize>, scalars: &'static [usize]) -> Slots {
    Slots { states, weight32, scalars }
}

/// The single-weight ops: (name, input names, slots).
const SINGLE: &[(&str, &[&str], Slots)] = &[
    ("sgd_update", &["weight", "grad"], slots(&[], None, &[])),
    ("sgd_mom_update", &["weight", "grad", "mom"], slots(&[2], None, &[])),
    ("mp_sgd_update", &["weight", "grad", "weight32"], slots(&[], Some(2), &[])),
    ("mp_sgd_mom_update", &["weight", "grad", "mom", "weight32"], slots(&[2], Some(3), &[])),
    ("signsgd_update", &["weight", "grad"], slots(&[], None, &[])),
    ("signum_update", &["weight", "grad", "mom"], slots(&[2], None, &[])),
    ("nag_mom_update", &["weight", "grad", "mom"], slots(&[2], None, &[])),
    ("mp_nag_mom_update", &["weight", "grad", "mom", "weight32"], slots(&[2], Some(3), &[])),
    ("adam_update", &["weight", "grad", "mean", "var"], slots(&[2, 3], None, &[])),
    ("_adamw_update", &["weight", "grad", "mean", "var", "rescale_grad"], slots(&[2, 3], None, &[4])),
    ("_mp_adamw_update", &["weight", "grad", "mean", "var", "weight32", "rescale_grad"], slots(&[2, 3], Some(4), &[5])),
    ("rmsprop_update", &["weight", "grad", "n"], slots(&[2], None, &[])),
    ("rmspropalex_update", &["weight", "grad", "n", "g", "delta"], slots(&[2, 3, 4], None, &[])),
    ("ftrl_update", &["weight", "grad", "z", "n"], slots(&[2, 3], None, &[])),
    ("ftml_update", &["weight", "grad", "d", "v", "z"], slots(&[2, 3, 4], None, &[])),
    ("lamb_update_phase1", &["weight", "grad", "mean", "var"], slots(&[2, 3], None, &[])),
    ("lamb_update_phase2", &["weight", "g", "r1", "r2"], slots(&[], None, &[2, 3])),
];

/// Whether `name` is one of the single-parameter fused updates (`sgd_update`, `adam_update`, ...),
/// which [`update_in_place`] can run writing the weight itself.
pub fn is_single_update(name: &str) -> bool {
    single_spec(name).is_some()
}

fn single_spec(name: &str) -> Option<(&'static str, &'static [&'static str], Slots)> {
    SINGLE.iter().find(|(n, _, _)| *n == name).copied()
}

/// MXNet's string attributes of the explicitly given parameters (symbol JSON).
fn given_attrs(name: &str, a: &Attrs) -> Vec<(&'static str, String)> {
    let names = crate::ops::registry::lookup(name).map(|d| d.param_names()).unwrap_or_default();
    a.items
        .iter()
        .filter_map(|(k, v)| names.iter().find(|n| **n == k.as_str()).map(|n| (*n, v.to_mx_string())))
        .collect()
}

/// A single-weight fused update.
#[derive(Debug)]
pub struct FusedUpdate {
    name: &'static str,
    args: &'static [&'static str],
    slots: Slots,
    rule: Rule,
    /// LAMB phase 2's learning rate and bounds on the weight norm.
    phase2: (f64, f64, f64),
    attrs: Vec<(&'static str, String)>,
}

impl FusedUpdate {
    fn build(a: &Attrs) -> Result<FusedUpdate> {
        let (name, args, slots) =
            single_spec(&a.op).ok_or_else(|| Error::Value(format!("{}: not a fused update op", a.op)))?;
        let rule = params::rule_of(name, a)?;
        let phase2 = if name == "lamb_update_phase2" {
            let p = params::LambPhase2Params::parse(a)?;
            (p.lr, p.lower_bound, p.upper_bound)
        } else {
            (0.0, -1.0, -1.0)
        };
        Ok(FusedUpdate { name, args, slots, rule, phase2, attrs: given_attrs(name, a) })
    }

    /// The rule with this call's scalar inputs applied; `None` = skip the update (AdamW with a
    /// non-finite or zero `rescale_grad`, as MXNet does).
    fn bind(&self, inputs: &[NDArray]) -> Result<Option<Rule>> {
        let scalar = |i: usize| -> Result<f64> {
            let v = inputs[i].to_f64_vec();
            match v.as_slice() {
                [x] => Ok(*x),
                _ => Err(Error::Shape(format!(
                    "{}: {} must hold one value, got shape {}",
                    self.name,
                    self.args[i],
                    fmt_shape(inputs[i].shape())
                ))),
            }
        };
        Ok(match self.rule {
            Rule::AdamW { lr, eta, beta1, beta2, epsilon, wd, prep } => {
                let r = scalar(self.slots.scalars[0])?;
                (r.is_finite() && r != 0.0).then_some(Rule::AdamW {
                    lr,
                    eta,
                    beta1,
                    beta2,
                    epsilon,
                    wd,
                    prep: GradPrep { rescale: r, ..prep },
                })
            }
            Rule::LambPhase2 { .. } => {
                let (mut r1, r2) = (scalar(2)?, scalar(3)?);
                let (lr, lower, upper) = self.phase2;
                if lower > 0.0 {
                    r1 = r1.max(lower);
                }
                if upper > 0.0 {
                    r1 = r1.min(upper);
                }
                let ratio = if r1 == 0.0 || r2 == 0.0 { 1.0 } else { r1 / r2 };
                Some(Rule::LambPhase2 { scale: lr * ratio })
            }
            r => Some(r),
        })
    }
}

/// Checks the arrays of one weight's update: shapes equal to the weight's, float dtypes, the
/// gradient of the weight's dtype and (multi-precision) float32 states and master weight.
fn check_group(op: &str, names: &[&str], slots: &Slots, metas: &[Meta]) -> Result<Meta> {
    let w = &metas[0];
    if !w.dtype.is_float() {
        return Err(Error::DType(format!(
            "{op}: this operation only supports floating point types, not {} (weight)",
            w.dtype
        )));
    }
    for (i, m) in metas.iter().enumerate().skip(1) {
        if slots.scalars.contains(&i) {
            continue;
        }
        if m.shape != w.shape {
            return Err(Error::Shape(format!(
                "{op}: {} has shape {} but weight has shape {}",
                names[i],
                fmt_shape(&m.shape),
                fmt_shape(&w.shape)
            )));
        }
        let want = if slots.weight32.is_some() && i != 1 { DType::F32 } else { w.dtype };
        if m.dtype != want {
            return Err(Error::DType(format!("{op}: {} has dtype {} but must be {want}", names[i], m.dtype)));
        }
    }
    Ok(w.clone())
}

/// Runs one weight's update. With `out`, the new weight is written there and the weight input
/// is left alone; without, the weight itself is updated in place. States always update in place.
fn update_group(
    op: &str,
    slots: &Slots,
    rule: Option<Rule>,
    inputs: &[NDArray],
    out: Option<&mut NDArray>,
) -> Result<()> {
    let states = slots.states.iter().map(|&i| inputs[i].clone());
    match (slots.weight32, out) {
        (None, Some(out)) => {
            out.write_from(&inputs[0])?;
            if let Some(rule) = rule {
                let mut lanes: Vec<NDArray> = std::iter::once(out.clone()).chain(states).collect();
                apply(op, &rule, &mut lanes, &inputs[1])?;
            }
        }
        (None, None) => {
            if let Some(rule) = rule {
                let mut lanes: Vec<NDArray> = std::iter::once(inputs[0].clone()).chain(states).collect();
                apply(op, &rule, &mut lanes, &inputs[1])?;
            }
        }
        (Some(w32), out) => {
            let mut lanes: Vec<NDArray> = std::iter::once(inputs[w32].clone()).chain(states).collect();
            if let Some(rule) = rule {
                apply(op, &rule, &mut lanes, &inputs[1].astype(DType::F32))?;
            }
            match out {
                Some(out) => out.write_from(&lanes[0])?,
                None => inputs[0].clone().assign_from(&lanes[0])?,
            }
        }
    }
    Ok(())
}

/// Applies `rule` to `lanes` (lane 0 the array updated in place, then the states) with gradient
/// `g`, in one pass. float16 lanes run in float32 and are written back.
fn apply(op: &str, rule: &Rule, lanes: &mut [NDArray], g: &NDArray) -> Result<()> {
    debug_assert_eq!(lanes.len(), rule.lanes());
    let dt = lanes[0].dtype();
    if dt == DType::F16 {
        let mut wide: Vec<NDArray> = lanes.iter().map(|a| a.astype(DType::F32)).collect();
        apply(op, rule, &mut wide, &g.astype(DType::F32))?;
        for (lane, w) in lanes.iter_mut().zip(&wide) {
            lane.assign_from(w)?;
        }
        return Ok(());
    }
    for i in 0..lanes.len() {
        if lanes[i].layout().contiguous_range().is_none() {
            return Err(Error::Value(format!("{op}: the updated arrays must be contiguous")));
        }
        if lanes[..i].iter().any(|o| o.shares_storage(&lanes[i])) {
            return Err(Error::Value(format!(
                "{op}: the weight and the state arrays must be distinct arrays (two of them share memory)"
            )));
        }
    }
    let g = if g.dtype() == dt { g.to_contiguous() } else { g.astype(dt) };
    float_kernel!(op, dt, T => {
        g.read::<T, _>(|gs, gl| -> Result<()> {
            let r = gl.contiguous_range().ok_or_else(|| Error::Runtime(format!("{op}: internal: gradient not contiguous")))?;
            let gs = &gs[r];
            with_lanes::<T>(op, lanes, Vec::new(), &|l| run_chunks(rule, gs, l))
        })?
    })
}

/// Holds write access to every lane at once (nested, one array after another) and calls `f`
/// with their contiguous element slices.
fn with_lanes<T: DTypeElem>(
    op: &str,
    arrays: &mut [NDArray],
    acc: Vec<&mut [T]>,
    f: &dyn Fn(Vec<&mut [T]>),
) -> Result<()> {
    let Some((first, rest)) = arrays.split_first_mut() else {
        f(acc);
        return Ok(());
    };
    let dtype = first.dtype();
    first.write(|buf, layout| {
        let range =
            layout.contiguous_range().ok_or_else(|| Error::Value(format!("{op}: arrays must be contiguous")))?;
        let s = buf.slice_mut::<T>().ok_or_else(|| Error::DType(format!("{op}: unexpected dtype {dtype}")))?;
        let mut acc: Vec<&mut [T]> = acc;
        acc.push(&mut s[range]);
        with_lanes(op, rest, acc, f)
    })
}

/// Splits the lanes into fixed chunks (by size only) and updates them, in parallel when large.
fn run_chunks<T: Real + DTypeElem>(rule: &Rule, g: &[T], mut lanes: Vec<&mut [T]>) {
    let n = g.len();
    if !par::is_parallel(n, Cost::Light) {
        rule.apply(g, &mut lanes);
        return;
    }
    let chunk = par::chunk_len(n, Cost::Light);
    let mut tasks: Vec<Vec<&mut [T]>> = (0..n.div_ceil(chunk)).map(|_| Vec::with_capacity(lanes.len())).collect();
    for lane in lanes {
        for (t, c) in tasks.iter_mut().zip(lane.chunks_mut(chunk)) {
            t.push(c);
        }
    }
    par::for_each_chunk_weighted(&mut tasks, chunk, Cost::Light, |first, items| {
        for (i, lanes) in items.iter_mut().enumerate() {
            let start = (first + i) * chunk;
            rule.apply(&g[start..(start + chunk).min(n)], lanes);
        }
    });
}

impl Op for FusedUpdate {
    fn name(&self) -> &'static str {
        self.name
    }
    fn arg_names(&self) -> &'static [&'static str] {
        self.args
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.attrs.clone()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        Ok(vec![check_group(self.name, self.args, &self.slots, inputs)?])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let rule = self.bind(inputs)?;
        update_group(self.name, &self.slots, rule, inputs, Some(&mut outputs[0]))
    }
    fn differentiable(&self) -> bool {
        false
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![None; inputs.len()])
    }
}

/// `multi_sgd_update` and friends: one update per weight group in one call.
#[derive(Debug)]
pub struct MultiUpdate {
    name: &'static str,
    /// Arrays per weight: weight, grad, [mom], [weight32].
    group: usize,
    slots: Slots,
    rules: Vec<Rule>,
    attrs: Vec<(&'static str, String)>,
}

const MULTI: &[(&str, usize, Slots)] = &[
    ("multi_sgd_update", 2, slots(&[], None, &[])),
    ("multi_sgd_mom_update", 3, slots(&[2], None, &[])),
    ("multi_mp_sgd_update", 3, slots(&[], Some(2), &[])),
    ("multi_mp_sgd_mom_update", 4, slots(&[2], Some(3), &[])),
];

impl MultiUpdate {
    fn build(a: &Attrs) -> Result<MultiUpdate> {
        let &(name, group, slots) = MULTI
            .iter()
            .find(|(n, _, _)| *n == a.op)
            .ok_or_else(|| Error::Value(format!("{}: not a multi update op", a.op)))?;
        let (lrs, wds, momentum, prep, num) = if slots.states.is_empty() {
            let p = MultiSgdParams::parse(a)?;
            (p.lrs, p.wds, None, GradPrep { rescale: p.rescale_grad, clip: p.clip_gradient }, p.num_weights)
        } else {
            let p = MultiSgdMomParams::parse(a)?;
            (p.lrs, p.wds, Some(p.momentum), GradPrep { rescale: p.rescale_grad, clip: p.clip_gradient }, p.num_weights)
        };
        let n = usize::try_from(num)
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| Error::Value(format!("{name}: num_weights must be >= 1, got {num}")))?;
        if lrs.len() != n || wds.len() != n {
            return Err(Error::Value(format!(
                "{name}: lrs and wds need one entry per weight (num_weights={n}), got {} and {}",
                lrs.len(),
                wds.len()
            )));
        }
        let rules = lrs
            .iter()
            .zip(&wds)
            .map(|(&lr, &wd)| match momentum {
                None => Rule::Sgd { lr, wd, prep },
                Some(momentum) => Rule::SgdMom { lr, momentum, wd, prep },
            })
            .collect();
        Ok(MultiUpdate { name, group, slots, rules, attrs: given_attrs(name, a) })
    }

    fn check_count(&self, n: usize) -> Result<()> {
        if n != self.group * self.rules.len() {
            return Err(Error::Value(format!(
                "{}: expected {} arrays ({} per weight for num_weights={}), got {n}",
                self.name,
                self.group * self.rules.len(),
                self.group,
                self.rules.len()
            )));
        }
        Ok(())
    }
}

const MULTI_NAMES: [&[&str]; 5] =
    [&[], &[], &["weight", "grad"], &["weight", "grad", "mom"], &["weight", "grad", "mom", "weight32"]];

fn multi_names(group: usize, mp: bool) -> &'static [&'static str] {
    match (group, mp) {
        (3, true) => &["weight", "grad", "weight32"],
        _ => MULTI_NAMES[group],
    }
}

impl Op for MultiUpdate {
    fn name(&self) -> &'static str {
        self.name
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["*data"]
    }
    fn variadic(&self) -> bool {
        true
    }
    fn num_outputs(&self) -> usize {
        self.rules.len()
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.attrs.clone()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        self.check_count(inputs.len())?;
        let names = multi_names(self.group, self.slots.weight32.is_some());
        inputs.chunks(self.group).map(|g| check_group(self.name, names, &self.slots, g)).collect()
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        for ((g, rule), out) in inputs.chunks(self.group).zip(&self.rules).zip(outputs) {
            update_group(self.name, &self.slots, Some(*rule), g, Some(out))?;
        }
        Ok(())
    }
    fn differentiable(&self) -> bool {
        false
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![None; inputs.len()])
    }
}

/// Runs the fused update `name` writing the weight(s) themselves (as `out=weight` would, without
/// an output array): what the optimizers call. `before_write(i)` runs before weight `inputs[i]` is
/// written and may refuse the write (the autograd layer refuses a weight that is part of a recorded
/// graph, like any in-place write).
pub fn update_in_place(
    name: &str,
    attrs: &Attrs,
    inputs: &[NDArray],
    mut before_write: impl FnMut(usize) -> Result<()>,
) -> Result<()> {
    let mut a = attrs.clone();
    a.op = name.to_string();
    if single_spec(name).is_some() {
        let op = FusedUpdate::build(&a)?;
        crate::ops::check_arity(&op, inputs.len())?;
        let metas: Vec<Meta> = inputs.iter().map(NDArray::meta).collect();
        op.infer(&metas)?;
        before_write(0)?;
        let rule = op.bind(inputs)?;
        return update_group(op.name, &op.slots, rule, inputs, None);
    }
    let op = MultiUpdate::build(&a)?;
    let metas: Vec<Meta> = inputs.iter().map(NDArray::meta).collect();
    op.infer(&metas)?;
    for (i, (g, rule)) in inputs.chunks(op.group).zip(&op.rules).enumerate() {
        before_write(i * op.group)?;
        update_group(op.name, &op.slots, Some(*rule), g, None)?;
    }
    Ok(())
}

fn build_single(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(FusedUpdate::build(a)?))
}

fn build_multi(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(MultiUpdate::build(a)?))
}

macro_rules! single_def {
    ($name:literal, $aliases:expr, $args:expr, $params:ty, $doc:literal) => {
        OpDef { name: $name, aliases: $aliases, args: $args, doc: $doc, params: <$params>::schema, build: build_single }
    };
}

/// The fused update ops' declarations.
pub const DEFS: &[OpDef] = &[
    single_def!("sgd_update", &[], &["weight", "grad"], params::SgdParams,
        "SGD step: weight = (1 - lr*wd)*weight - lr*clip(rescale_grad*grad). Not differentiable; out=weight updates in place."),
    single_def!("sgd_mom_update", &[], &["weight", "grad", "mom"], params::SgdMomParams,
        "SGD with momentum: mom = momentum*mom - lr*(clip(rescale_grad*grad) + wd*weight); weight += mom. mom is updated in place."),
    single_def!("mp_sgd_update", &[], &["weight", "grad", "weight32"], params::SgdParams,
        "Multi-precision SGD: the float32 master weight32 takes the sgd_update step in place; the output is weight32 in weight's dtype."),
    single_def!("mp_sgd_mom_update", &[], &["weight", "grad", "mom", "weight32"], params::SgdMomParams,
        "Multi-precision SGD with momentum: mom and the float32 master weight32 are updated in place; the output is weight32 in weight's dtype."),
    single_def!("signsgd_update", &[], &["weight", "grad"], params::SignSgdParams,
        "signSGD step: weight = (1 - lr*wd)*weight - lr*sign(grad)."),
    single_def!("signum_update", &[], &["weight", "grad", "mom"], params::SignumParams,
        "Signum: mom = momentum*mom - (1-momentum)*(wd*weight + clip(rescale_grad*grad)); weight = (1 - lr*wd_lh)*weight + lr*sign(mom)."),
    single_def!("nag_mom_update", &[], &["weight", "grad", "mom"], params::NagMomParams,
        "Nesterov momentum: g = clip(rescale_grad*grad) + wd*weight; mom = momentum*mom - lr*g; weight += momentum*mom - lr*g."),
    single_def!("mp_nag_mom_update", &[], &["weight", "grad", "mom", "weight32"], params::NagMomParams,
        "Multi-precision Nesterov momentum on the float32 master weight32 (updated in place with mom)."),
    single_def!("adam_update", &[], &["weight", "grad", "mean", "var"], params::AdamParams,
        "Adam step (no bias correction; the optimizer folds it into lr): g = clip(rescale_grad*grad + wd*weight); mean, var updated in place; weight -= lr*mean/(sqrt(var) + epsilon)."),
    single_def!("_adamw_update", &["adamw_update"], &["weight", "grad", "mean", "var", "rescale_grad"], params::AdamWParams,
        "AdamW step with decoupled weight decay: weight -= eta*(lr*mean/(sqrt(var) + epsilon) + wd*weight); rescale_grad is a one-element array, and the update is skipped when it is NaN, infinite or 0."),
    single_def!("_mp_adamw_update", &["mp_adamw_update"], &["weight", "grad", "mean", "var", "weight32", "rescale_grad"], params::AdamWParams,
        "Multi-precision AdamW on the float32 master weight32."),
    single_def!("rmsprop_update", &[], &["weight", "grad", "n"], params::RmsPropParams,
        "RMSProp (Tieleman & Hinton): n = (1-gamma1)*g^2 + gamma1*n; weight -= lr*g/sqrt(n + epsilon), then clip_weights."),
    single_def!("rmspropalex_update", &[], &["weight", "grad", "n", "g", "delta"], params::RmsPropAlexParams,
        "Centered RMSProp (Graves): n, g and delta updated in place; weight += delta, delta = gamma2*delta - lr*grad/sqrt(n - g^2 + epsilon)."),
    single_def!("ftrl_update", &[], &["weight", "grad", "z", "n"], params::FtrlParams,
        "FTRL-proximal step; z and n are updated in place."),
    single_def!("ftml_update", &[], &["weight", "grad", "d", "v", "z"], params::FtmlParams,
        "FTML (Follow the Moving Leader) step at update number t; d, v and z are updated in place."),
    single_def!("lamb_update_phase1", &[], &["weight", "grad", "mean", "var"], params::LambPhase1Params,
        "LAMB phase 1: updates mean and var in place and returns the update direction mean_hat/(sqrt(var_hat) + epsilon) + wd*weight."),
    single_def!("lamb_update_phase2", &[], &["weight", "g", "r1", "r2"], params::LambPhase2Params,
        "LAMB phase 2: weight -= lr*(r1/r2)*g, with r1 = ||weight|| (bounded by lower_bound/upper_bound) and r2 = ||g|| as one-element arrays (ratio 1 when either is 0)."),
    OpDef { name: "multi_sgd_update", aliases: &[], args: &["*data"], params: MultiSgdParams::schema, build: build_multi,
        doc: "sgd_update over num_weights weights at once: data = weight0, grad0, weight1, grad1, ...; lrs and wds give each weight's rate and decay." },
    OpDef { name: "multi_sgd_mom_update", aliases: &[], args: &["*data"], params: MultiSgdMomParams::schema, build: build_multi,
        doc: "sgd_mom_update over num_weights weights at once: data = weight0, grad0, mom0, weight1, ...; each mom is updated in place." },
    OpDef { name: "multi_mp_sgd_update", aliases: &[], args: &["*data"], params: MultiSgdParams::schema, build: build_multi,
        doc: "mp_sgd_update over num_weights weights at once: data = weight0, grad0, weight32_0, weight1, ..." },
    OpDef { name: "multi_mp_sgd_mom_update", aliases: &[], args: &["*data"], params: MultiSgdMomParams::schema, build: build_multi,
        doc: "mp_sgd_mom_update over num_weights weights at once: data = weight0, grad0, mom0, weight32_0, weight1, ..." },
];
