//! Loss ops with MXNet's backward semantics (spec §3.4): `SoftmaxOutput` (+ its fused
//! `_backward_SoftmaxOutput`), `softmax_cross_entropy`, `LinearRegressionOutput`,
//! `LogisticRegressionOutput`, `MAERegressionOutput`, `MakeLoss`, `make_loss`, and
//! `BlockGrad`/`stop_gradient`.
//!
//! `SoftmaxOutput`, the regression outputs and `MakeLoss` are *loss heads*: their rule returns the
//! loss gradient and ignores the head gradient (except `SoftmaxOutput(out_grad=True)`, which
//! multiplies by it, as the spec asks). Labels never get a gradient. The rules recompute what
//! they need from the inputs (e.g. `softmax(data)`), so differentiating a rule again gives the
//! derivative of the loss gradient. `softmax_cross_entropy` is an ordinary op (its gradient uses
//! the head gradient).
//!
//! Label values are truncated toward zero (1.7 → class 1). For `SoftmaxOutput`, a label outside
//! `[0, k)` (e.g. -1 without `use_ignore`) subtracts no one-hot (gradient `p`), as in MXNet;
//! `softmax_cross_entropy` rejects out-of-range labels with an Index error.

use std::cell::RefCell;
use std::sync::Arc;

use ferrograd_kernels::Element;

use super::float_only;
use super::softmax::{softmax_into, SmKind, Softmax, SoftmaxActivation};
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::binary::BinaryKind;
use crate::ops::params::{NoParams, OpDef, OpParams, ParamEnum};
use crate::ops::unary::{Unary, UnaryKind};
use crate::ops::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::with_float_dtype;

/// `normalization` of `SoftmaxOutput` and `MakeLoss`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, ParamEnum)]
pub enum Norm {
    Batch,
    Null,
    Valid,
}

/// Parameters of `SoftmaxOutput` (shared with its backward op).
#[derive(Clone, Copy, Debug, PartialEq, OpParams)]
pub struct SmOutCfg {
    /// Factor applied to the loss gradient.
    #[param(default = 1.0)]
    pub grad_scale: f64,
    /// Label value whose entries get no gradient when use_ignore is set.
    #[param(default = -1.0)]
    pub ignore_label: f64,
    /// Softmax over axis 1 (labels have the data's shape without that axis).
    #[param(default = false)]
    pub multi_output: bool,
    /// Give entries labelled ignore_label a zero gradient.
    #[param(default = false)]
    pub use_ignore: bool,
    /// Softmax over the last axis, keeping the data's shape.
    #[param(default = false)]
    pub preserve_shape: bool,
    /// Divide the gradient by nothing (null), the batch size (batch) or the count of non-ignored labels (valid).
    #[param(default = Norm::Null)]
    pub normalization: Norm,
    /// Multiply the loss gradient by the head gradient.
    #[param(default = false)]
    pub out_grad: bool,
    /// Label smoothing: this much of the target mass is spread over the other classes.
    #[param(default = 0.0)]
    pub smooth_alpha: f64,
}

/// How data and label line up.
struct Geometry {
    /// `(outer, classes, inner)`: softmax runs over the middle axis.
    dims: (usize, usize, usize),
    /// Label shape equals data shape: labels are probabilities.
    prob: bool,
}

impl SmOutCfg {
    fn attrs(&self) -> Vec<(&'static str, String)> {
        // The order attributes have always been written in (out_grad before normalization).
        const ORDER: &[&str] = &[
            "grad_scale",
            "ignore_label",
            "multi_output",
            "use_ignore",
            "preserve_shape",
            "out_grad",
            "normalization",
            "smooth_alpha",
        ];
        let mut v = self.to_attrs();
        v.sort_by_key(|(k, _)| ORDER.iter().position(|o| o == k));
        v
    }

    /// The softmax geometry for `data` and `label` shapes, or a Shape error naming both.
    fn geometry(&self, op: &str, data: &[usize], label: &[usize]) -> Result<Geometry> {
        let bad = |why: String| {
            Error::Shape(format!(
                "{op}: label shape {} does not match data shape {}: {why}",
                fmt_shape(label),
                fmt_shape(data)
            ))
        };
        if data.is_empty() {
            return Err(Error::Shape(format!("{op}: data must have at least one dimension, got shape ()")));
        }
        let dims = if self.multi_output {
            if data.len() < 2 {
                return Err(Error::Shape(format!(
                    "{op}: multi_output needs data of shape (n, k, ...), got {}",
                    fmt_shape(data)
                )));
            }
            super::split3(data, 1)
        } else if self.preserve_shape {
            super::split3(data, data.len() - 1)
        } else {
            (data[0], data[1..].iter().product(), 1)
        };
        let prob = label == data;
        if !prob {
            let (outer, _, inner) = dims;
            let want = outer * inner;
            let n: usize = label.iter().product();
            if n != want {
                return Err(bad(format!("expected {want} labels (or probability labels of the data's shape)")));
            }
            if self.multi_output && label.first() != Some(&data[0]) {
                return Err(bad("multi_output labels must have shape (n, ...) with n = data.shape[0]".into()));
            }
        }
        Ok(Geometry { dims, prob })
    }

    /// The softmax op this configuration applies to `data`.
    fn softmax_op(&self) -> OpRef {
        if self.multi_output {
            Arc::new(Softmax { kind: SmKind::Softmax, axis: 1, temperature: None, dtype: None })
        } else if self.preserve_shape {
            Arc::new(Softmax { kind: SmKind::Softmax, axis: -1, temperature: None, dtype: None })
        } else {
            Arc::new(SoftmaxActivation { channel: false })
        }
    }

    /// `grad_scale · (p - target)` over `(outer, k, inner)`, normalised, written as f64.
    fn loss_grad(&self, geo: &Geometry, p: &[f64], label: &[f64], data0: usize, out: &mut [f64]) {
        let (outer, k, inner) = geo.dims;
        if geo.prob {
            let div = if self.normalization == Norm::Batch { data0.max(1) as f64 } else { 1.0 };
            let c = self.grad_scale / div;
            for ((o, &pv), &l) in out.iter_mut().zip(p).zip(label) {
                *o = c * (pv - l);
            }
            return;
        }
        let ignore = self.ignore_label.trunc() as i64;
        let labels: Vec<i64> = label.iter().map(|&l| l.trunc() as i64).collect();
        let div = match self.normalization {
            Norm::Null if self.multi_output => inner as f64,
            Norm::Null => 1.0,
            Norm::Batch => (outer * inner) as f64,
            Norm::Valid => labels.iter().filter(|&&l| l != ignore).count().max(1) as f64,
        };
        let c = self.grad_scale / div.max(1.0);
        let a = self.smooth_alpha;
        let off = if a != 0.0 && k > 1 { a / (k - 1) as f64 } else { 0.0 };
        for o in 0..outer {
            for j in 0..inner {
                let l = labels[o * inner + j];
                let skip = self.use_ignore && l == ignore;
                for cls in 0..k {
                    let i = (o * k + cls) * inner + j;
                    out[i] = if skip {
                        0.0
                    } else {
                        let t = if cls as i64 == l { 1.0 - a } else { off };
                        c * (p[i] - t)
                    };
                }
            }
        }
    }
}

/// `SoftmaxOutput(data, label, ...)` (alias `Softmax`): the softmax of `data`; its gradient is
/// MXNet's loss gradient (spec §3.4).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SoftmaxOutput {
    pub cfg: SmOutCfg,
}

impl Op for SoftmaxOutput {
    fn name(&self) -> &'static str {
        "SoftmaxOutput"
    }
    fn is_loss(&self) -> bool {
        true
    }
    /// The label: `data.shape` without axis 1 for `multi_output`, else without the last axis.
    fn infer_missing(&self, inputs: &[Option<Meta>]) -> Vec<Option<Meta>> {
        let Some(d) = inputs.first().cloned().flatten() else { return Vec::new() };
        let mut s = d.shape.to_vec();
        match s.len() {
            0 => return Vec::new(),
            n if self.cfg.multi_output && n >= 2 => {
                s.remove(1);
            }
            _ => {
                s.pop();
            }
        }
        vec![None, Some(Meta::new(&s, d.dtype))]
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["data", "label"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.cfg.attrs()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        float_only("SoftmaxOutput", "data", inputs[0].dtype)?;
        self.cfg.geometry("SoftmaxOutput", &inputs[0].shape, &inputs[1].shape)?;
        Ok(vec![inputs[0].clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let geo = self.cfg.geometry("SoftmaxOutput", inputs[0].shape(), inputs[1].shape())?;
        softmax_into(&inputs[0], &mut outputs[0], geo.dims, 1.0, false)
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let p = g.apply(self.cfg.softmax_op(), &[inputs[0]])?[0];
        let gx = g.apply1(SoftmaxOutputGrad { cfg: self.cfg }, &[p, inputs[1]])?;
        let gx = if self.cfg.out_grad { g.mul(gx, og[0])? } else { gx };
        Ok(vec![Some(gx), None])
    }
}

/// `_backward_SoftmaxOutput(output, label)`: the loss gradient `grad_scale·(p - target)/norm`
/// from the softmax output `p`. Linear in `p`, so its own gradient is `f(h) - f(0)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SoftmaxOutputGrad {
    pub cfg: SmOutCfg,
}

thread_local! {
    /// The SoftmaxOutput gradient's f64 staging (probabilities, labels, result), reused across
    /// calls so a training step allocates nothing here once warm.
    static STAGING: RefCell<[Vec<f64>; 3]> = RefCell::new(Default::default());
}

impl Op for SoftmaxOutputGrad {
    fn name(&self) -> &'static str {
        "_backward_SoftmaxOutput"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["output", "label"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.cfg.attrs()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        float_only(self.name(), "output", inputs[0].dtype)?;
        self.cfg.geometry(self.name(), &inputs[0].shape, &inputs[1].shape)?;
        Ok(vec![inputs[0].clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (p, l) = (&inputs[0], &inputs[1]);
        let geo = self.cfg.geometry(self.name(), p.shape(), l.shape())?;
        STAGING.with(|staging| {
            let mut staging = staging.borrow_mut();
            let [pv, lv, out] = &mut *staging;
            p.read_f64_into(pv);
            l.read_f64_into(lv);
            out.clear();
            out.resize(pv.len(), 0.0);
            self.cfg.loss_grad(&geo, pv, lv, p.shape()[0], out);
            with_float_dtype!(p.dtype(), T => {
                outputs[0].write_out::<T, _>(|o| o.iter_mut().zip(out.iter()).for_each(|(o, &v)| *o = T::from_f64(v)))
            }, else Err(Error::DType(format!("{}: output must be a float array", self.name()))))
        })
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let fh = g.apply1(*self, &[og[0], inputs[1]])?;
        let z = g.zeros_like(og[0])?;
        let f0 = g.apply1(*self, &[z, inputs[1]])?;
        Ok(vec![Some(g.sub(fh, f0)?), None])
    }
}

/// `softmax_cross_entropy(data, label)`: `Σ_i -log softmax(data_i)[label_i]`, shape `(1,)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SoftmaxCrossEntropy;

impl SoftmaxCrossEntropy {
    fn check(data: &[usize], label: &[usize]) -> Result<()> {
        if data.len() != 2 || label.len() != 1 || label[0] != data[0] {
            return Err(Error::Shape(format!(
                "softmax_cross_entropy: data must have shape (n, k) and label shape (n,), got data {} and label {}",
                fmt_shape(data),
                fmt_shape(label)
            )));
        }
        Ok(())
    }
}

impl Op for SoftmaxCrossEntropy {
    fn name(&self) -> &'static str {
        "softmax_cross_entropy"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["data", "label"]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        float_only(self.name(), "data", inputs[0].dtype)?;
        Self::check(&inputs[0].shape, &inputs[1].shape)?;
        Ok(vec![Meta::new(&[1], inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (x, l) = (&inputs[0], &inputs[1]);
        let (n, k) = (x.shape()[0], x.shape()[1]);
        let calc = if x.dtype() == DType::F16 { DType::F32 } else { x.dtype() };
        let mut ls = NDArray::uninit(x.shape(), calc);
        softmax_into(x, &mut ls, (n, k, 1), 1.0, true)?;
        let lsv = ls.to_f64_vec();
        let labels = l.to_contiguous().to_f64_vec();
        let mut total = 0.0;
        for (i, &lab) in labels.iter().enumerate() {
            let c = lab.trunc();
            if !(c >= 0.0 && c < k as f64) {
                return Err(Error::Index(format!(
                    "softmax_cross_entropy: label {lab} at position {i} is out of range for {k} classes (data {})",
                    fmt_shape(x.shape())
                )));
            }
            total -= lsv[i * k + c as usize];
        }
        with_float_dtype!(x.dtype(), T => {
            outputs[0].write_out::<T, _>(|o| o[0] = T::from_f64(total))
        }, else Err(Error::DType("softmax_cross_entropy: data must be a float array".into())))
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let sm = Softmax { kind: SmKind::Softmax, axis: -1, temperature: None, dtype: None };
        let p = g.apply1(sm, &[inputs[0]])?;
        let d = g.apply1(SoftmaxOutputGrad { cfg: SmOutCfg::parse(&Attrs::new("SoftmaxOutput"))? }, &[p, inputs[1]])?;
        Ok(vec![Some(g.mul(d, og[0])?), None])
    }
}

/// Which regression output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RegKind {
    Linear,
    Logistic,
    Mae,
}

/// `LinearRegressionOutput` / `LogisticRegressionOutput` / `MAERegressionOutput(data, label,
/// grad_scale)`: forward identity (sigmoid for logistic); gradient
/// `grad_scale·(out - label)/num_output` (`sign(out - label)` for MAE, with sign(0) = -1), where
/// `num_output = label.size / label.shape[0]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RegressionOutput {
    pub kind: RegKind,
    pub grad_scale: f64,
}

impl Op for RegressionOutput {
    fn name(&self) -> &'static str {
        match self.kind {
            RegKind::Linear => "LinearRegressionOutput",
            RegKind::Logistic => "LogisticRegressionOutput",
            RegKind::Mae => "MAERegressionOutput",
        }
    }
    fn is_loss(&self) -> bool {
        true
    }
    fn infer_missing(&self, inputs: &[Option<Meta>]) -> Vec<Option<Meta>> {
        vec![None, inputs.first().cloned().flatten()]
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["data", "label"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        RegressionParams { grad_scale: self.grad_scale }.to_attrs()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let (d, l) = (&inputs[0], &inputs[1]);
        float_only(self.name(), "data", d.dtype)?;
        let (nd, nl): (usize, usize) = (d.shape.iter().product(), l.shape.iter().product());
        if nd != nl || (!l.shape.is_empty() && !d.shape.is_empty() && l.shape[0] != d.shape[0]) {
            return Err(Error::Shape(format!(
                "{}: label shape {} does not match data shape {}",
                self.name(),
                fmt_shape(&l.shape),
                fmt_shape(&d.shape)
            )));
        }
        Ok(vec![d.clone()])
    }
    fn forward(&self, ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        if self.kind == RegKind::Logistic {
            return Unary { kind: UnaryKind::Sigmoid }.forward(ctx, &inputs[..1], outputs);
        }
        outputs[0].write_from(&inputs[0])?;
        Ok(())
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        let (x, l) = (inputs[0], inputs[1]);
        let ls = g.shape(l);
        let num_output = match ls.first() {
            Some(&b) if b > 0 => ls.iter().product::<usize>() / b,
            _ => 1,
        };
        let c = self.grad_scale / num_output.max(1) as f64;
        let xs = g.shape(x);
        let l = g.reshape(l, &xs)?;
        let l = g.cast(l, g.meta(x).dtype)?;
        let y = if self.kind == RegKind::Logistic { g.unary(UnaryKind::Sigmoid, x)? } else { x };
        let d = g.sub(y, l)?;
        let d = if self.kind == RegKind::Mae {
            // sign with sign(0) = -1: 2·[d > 0] - 1.
            let m = g.scalar(BinaryKind::Gt, d, 0.0, false)?;
            let m = g.mul_scalar(m, 2.0)?;
            g.add_scalar(m, -1.0)?
        } else {
            d
        };
        Ok(vec![Some(g.mul_scalar(d, c)?), None])
    }
}

/// `MakeLoss(data, grad_scale, valid_thresh, normalization)` and `make_loss(data)`: forward
/// identity; the gradient is the constant `grad_scale` (divided by `size / shape[-1]` for
/// 'batch', by `max(1, count(data > valid_thresh))` for 'valid'), whatever the head gradient.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MakeLoss {
    pub grad_scale: f64,
    pub valid_thresh: f64,
    pub normalization: Norm,
    /// `make_loss`: the parameterless variant.
    pub plain: bool,
}

impl Op for MakeLoss {
    fn is_loss(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        if self.plain {
            "make_loss"
        } else {
            "MakeLoss"
        }
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        MakeLossParams {
            grad_scale: self.grad_scale,
            valid_thresh: self.valid_thresh,
            normalization: self.normalization,
        }
        .to_attrs()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        float_only(self.name(), "data", inputs[0].dtype)?;
        Ok(vec![inputs[0].clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        outputs[0].write_from(&inputs[0])?;
        Ok(())
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        let x = inputs[0];
        let shape = g.shape(x);
        let ones = g.ones_like(x)?;
        let gx = match self.normalization {
            Norm::Null => g.mul_scalar(ones, self.grad_scale)?,
            Norm::Batch => {
                let n: usize = shape.iter().product();
                let rows = match shape.last() {
                    Some(&last) if last > 0 => n / last,
                    _ => 1,
                };
                g.mul_scalar(ones, self.grad_scale / rows.max(1) as f64)?
            }
            Norm::Valid => {
                let m = g.scalar(BinaryKind::Gt, x, self.valid_thresh, false)?;
                let cnt = if shape.is_empty() { m } else { g.sum_axes(m, (0..shape.len() as i64).collect(), true)? };
                let cnt = g.scalar(BinaryKind::Maximum, cnt, 1.0, false)?;
                let s = g.mul_scalar(ones, self.grad_scale)?;
                g.div(s, cnt)?
            }
        };
        Ok(vec![Some(gx)])
    }
}

/// `BlockGrad(data)` / `stop_gradient`: the identity whose gradient is zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockGrad;

impl Op for BlockGrad {
    fn is_loss(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        "BlockGrad"
    }
    fn infer_partial(
        &self,
        ins: &mut [crate::ops::partial::PartialShape],
        outs: &mut [crate::ops::partial::PartialShape],
    ) -> Result<()> {
        crate::ops::partial::same_shape(ins, outs)
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        Ok(vec![inputs[0].clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        outputs[0].write_from(&inputs[0])?;
        Ok(())
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![None])
    }
}

/// Parameters of the regression outputs.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct RegressionParams {
    /// Factor applied to the loss gradient.
    #[param(default = 1.0)]
    pub grad_scale: f64,
}

/// `MakeLoss`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct MakeLossParams {
    /// The constant gradient (before normalisation).
    #[param(default = 1.0)]
    pub grad_scale: f64,
    /// With normalization=valid, elements not above this do not count.
    #[param(default = 0.0)]
    pub valid_thresh: f64,
    /// Divide the gradient by nothing (null), the batch size (batch) or the count of valid elements (valid).
    #[param(default = Norm::Null)]
    pub normalization: Norm,
}

fn build_softmax_output(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(SoftmaxOutput { cfg: SmOutCfg::parse(a)? }))
}

fn build_softmax_output_grad(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(SoftmaxOutputGrad { cfg: SmOutCfg::parse(a)? }))
}

fn build_softmax_cross_entropy(a: &Attrs) -> Result<OpRef> {
    NoParams::parse(a)?;
    Ok(Arc::new(SoftmaxCrossEntropy))
}

fn build_regression_output(a: &Attrs) -> Result<OpRef> {
    let kind = match a.op.as_str() {
        "LinearRegressionOutput" => RegKind::Linear,
        "LogisticRegressionOutput" => RegKind::Logistic,
        _ => RegKind::Mae,
    };
    Ok(Arc::new(RegressionOutput { kind, grad_scale: RegressionParams::parse(a)?.grad_scale }))
}

fn build_make_loss(a: &Attrs) -> Result<OpRef> {
    let p = MakeLossParams::parse(a)?;
    Ok(Arc::new(MakeLoss {
        grad_scale: p.grad_scale,
        valid_thresh: p.valid_thresh,
        normalization: p.normalization,
        plain: false,
    }))
}

fn build_plain_make_loss(a: &Attrs) -> Result<OpRef> {
    NoParams::parse(a)?;
    let p = MakeLossParams::parse(&Attrs::new("make_loss"))?;
    Ok(Arc::new(MakeLoss {
        grad_scale: p.grad_scale,
        valid_thresh: p.valid_thresh,
        normalization: p.normalization,
        plain: true,
    }))
}

fn build_block_grad(a: &Attrs) -> Result<OpRef> {
    NoParams::parse(a)?;
    Ok(Arc::new(BlockGrad))
}

const fn regression(name: &'static str, doc: &'static str) -> OpDef {
    OpDef {
        name,
        aliases: &[],
        args: &["data", "label"],
        doc,
        params: RegressionParams::schema,
        build: build_regression_output,
    }
}

/// The loss ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "SoftmaxOutput",
        aliases: &["Softmax"],
        args: &["data", "label"],
        doc: "Softmax forward; backward is the cross-entropy loss gradient p - onehot(label) (MXNet semantics, head gradient ignored).",
        params: SmOutCfg::schema,
        build: build_softmax_output,
    },
    OpDef {
        name: "_backward_SoftmaxOutput",
        aliases: &[],
        args: &["output", "label"],
        doc: "SoftmaxOutput's loss gradient from its output and label.",
        params: SmOutCfg::schema,
        build: build_softmax_output_grad,
    },
    OpDef {
        name: "softmax_cross_entropy",
        aliases: &[],
        args: &["data", "label"],
        doc: "Sum over the batch of -log softmax(data)[label], shape (1,).",
        params: NoParams::schema,
        build: build_softmax_cross_entropy,
    },
    regression(
        "LinearRegressionOutput",
        "Identity; backward is grad_scale·(data - label)/num_output (head gradient ignored).",
    ),
    regression(
        "LogisticRegressionOutput",
        "sigmoid(data); backward is grad_scale·(sigmoid(data) - label)/num_output (head gradient ignored).",
    ),
    regression(
        "MAERegressionOutput",
        "Identity; backward is grad_scale·sign(data - label)/num_output, sign(0) = -1 (head gradient ignored).",
    ),
    OpDef {
        name: "MakeLoss",
        aliases: &[],
        args: &["data"],
        doc: "Identity; backward is the constant grad_scale (normalised by batch or valid count).",
        params: MakeLossParams::schema,
        build: build_make_loss,
    },
    OpDef {
        name: "make_loss",
        aliases: &[],
        args: &["data"],
        doc: "Identity; backward is ones (head gradient ignored).",
        params: NoParams::schema,
        build: build_plain_make_loss,
    },
    OpDef {
        name: "BlockGrad",
        aliases: &["stop_gradient"],
        args: &["data"],
        doc: "Identity with zero gradient.",
        params: NoParams::schema,
        build: build_block_grad,
    },
];
