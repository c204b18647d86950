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

use std::sync::Arc;

use ferrograd_kernels::Element;

use super::softmax::{softmax_into, SmKind, Softmax, SoftmaxActivation};
use super::{choice, float_only};
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::attrs::fmt_float;
use crate::ops::binary::BinaryKind;
use crate::ops::unary::{Unary, UnaryKind};
use crate::ops::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::with_float_dtype;

/// `normalization` of `SoftmaxOutput` and `MakeLoss`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Norm {
    Null,
    Batch,
    Valid,
}

impl Norm {
    fn parse(op: &str, s: &str) -> Result<Norm> {
        Ok(match choice(op, "normalization", s, &["null", "batch", "valid"])? {
            "null" => Norm::Null,
            "batch" => Norm::Batch,
            _ => Norm::Valid,
        })
    }
    fn name(self) -> &'static str {
        match self {
            Norm::Null => "null",
            Norm::Batch => "batch",
            Norm::Valid => "valid",
        }
    }
}

/// Parameters of `SoftmaxOutput` (shared with its backward op).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SmOutCfg {
    pub grad_scale: f64,
    pub ignore_label: f64,
    pub multi_output: bool,
    pub use_ignore: bool,
    pub preserve_shape: bool,
    pub normalization: Norm,
    pub out_grad: bool,
    pub smooth_alpha: f64,
}

impl Default for SmOutCfg {
    fn default() -> Self {
        SmOutCfg {
            grad_scale: 1.0,
            ignore_label: -1.0,
            multi_output: false,
            use_ignore: false,
            preserve_shape: false,
            normalization: Norm::Null,
            out_grad: false,
            smooth_alpha: 0.0,
        }
    }
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
        let d = SmOutCfg::default();
        let mut v = Vec::new();
        if self.grad_scale != d.grad_scale {
            v.push(("grad_scale", fmt_float(self.grad_scale)));
        }
        if self.ignore_label != d.ignore_label {
            v.push(("ignore_label", fmt_float(self.ignore_label)));
        }
        for (k, on) in [
            ("multi_output", self.multi_output),
            ("use_ignore", self.use_ignore),
            ("preserve_shape", self.preserve_shape),
            ("out_grad", self.out_grad),
        ] {
            if on {
                v.push((k, "True".into()));
            }
        }
        if self.normalization != Norm::Null {
            v.push(("normalization", self.normalization.name().into()));
        }
        if self.smooth_alpha != 0.0 {
            v.push(("smooth_alpha", fmt_float(self.smooth_alpha)));
        }
        v
    }

    fn parse(a: &Attrs) -> Result<SmOutCfg> {
        Ok(SmOutCfg {
            grad_scale: a.f64_or("grad_scale", 1.0)?,
            ignore_label: a.f64_or("ignore_label", -1.0)?,
            multi_output: a.bool_or("multi_output", false)?,
            use_ignore: a.bool_or("use_ignore", false)?,
            preserve_shape: a.bool_or("preserve_shape", false)?,
            normalization: Norm::parse(&a.op, a.str_or("normalization", "null")?)?,
            out_grad: a.bool_or("out_grad", false)?,
            smooth_alpha: a.f64_or("smooth_alpha", 0.0)?,
        })
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
        let pv = p.to_contiguous().to_f64_vec();
        let lv = l.to_contiguous().to_f64_vec();
        let mut out = vec![0.0; pv.len()];
        self.cfg.loss_grad(&geo, &pv, &lv, p.shape()[0], &mut out);
        with_float_dtype!(p.dtype(), T => {
            outputs[0].write_out::<T, _>(|o| o.iter_mut().zip(&out).for_each(|(o, &v)| *o = T::from_f64(v)))
        }, else Err(Error::DType(format!("{}: output must be a float array", self.name()))))
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
        let d = g.apply1(SoftmaxOutputGrad { cfg: SmOutCfg::default() }, &[p, inputs[1]])?;
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
        if self.grad_scale != 1.0 {
            vec![("grad_scale", fmt_float(self.grad_scale))]
        } else {
            vec![]
        }
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
        outputs[0] = inputs[0].copy();
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
        let mut v = Vec::new();
        if self.grad_scale != 1.0 {
            v.push(("grad_scale", fmt_float(self.grad_scale)));
        }
        if self.valid_thresh != 0.0 {
            v.push(("valid_thresh", fmt_float(self.valid_thresh)));
        }
        if self.normalization != Norm::Null {
            v.push(("normalization", self.normalization.name().into()));
        }
        v
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        float_only(self.name(), "data", inputs[0].dtype)?;
        Ok(vec![inputs[0].clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        outputs[0] = inputs[0].copy();
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
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        Ok(vec![inputs[0].clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        outputs[0] = inputs[0].copy();
        Ok(())
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![None])
    }
}

/// Registry builder for `SoftmaxOutput`.
pub fn softmax_output_op(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(SoftmaxOutput { cfg: SmOutCfg::parse(a)? }))
}

/// Registry builder for `_backward_SoftmaxOutput`.
pub fn softmax_output_grad_op(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(SoftmaxOutputGrad { cfg: SmOutCfg::parse(a)? }))
}

/// Registry builder for `softmax_cross_entropy`.
pub fn softmax_cross_entropy_op(_a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(SoftmaxCrossEntropy))
}

/// Registry builder for the regression outputs.
pub fn regression_output_op(a: &Attrs) -> Result<OpRef> {
    let kind = match a.op.as_str() {
        "LinearRegressionOutput" => RegKind::Linear,
        "LogisticRegressionOutput" => RegKind::Logistic,
        _ => RegKind::Mae,
    };
    Ok(Arc::new(RegressionOutput { kind, grad_scale: a.f64_or("grad_scale", 1.0)? }))
}

/// Registry builder for `MakeLoss` and `make_loss`.
pub fn make_loss_op(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(MakeLoss {
        grad_scale: a.f64_or("grad_scale", 1.0)?,
        valid_thresh: a.f64_or("valid_thresh", 0.0)?,
        normalization: Norm::parse(&a.op, a.str_or("normalization", "null")?)?,
        plain: a.op == "make_loss",
    }))
}

/// Registry builder for `BlockGrad`.
pub fn block_grad_op(_a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(BlockGrad))
}
