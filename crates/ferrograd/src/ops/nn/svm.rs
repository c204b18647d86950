//! `SVMOutput`: a loss layer whose forward is the identity on the class scores and whose backward
//! is the (L2 or L1) one-vs-rest hinge-loss gradient, ignoring the head gradient (like
//! `SoftmaxOutput`). Classes lie on the last axis; the label holds one class per row (shape
//! `data.shape[:-1]`, truncated toward zero).
//!
//! With `s = -1` at the label's class and `+1` elsewhere and `z = s·x + margin`, the gradient is
//! `reg·2·s·max(z, 0)` (L2) or `reg·s·[z > 0]` (L1, `use_linear`), written in ops (`one_hot`
//! gives `s`) so that it can be differentiated again.

use std::sync::Arc;

use super::float_only;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::attrs::AttrValue;
use crate::ops::binary::BinaryKind;
use crate::ops::params::{OpDef, OpParams};
use crate::ops::pick::OneHot;
use crate::ops::unary::UnaryKind;
use crate::ops::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};

/// `SVMOutput(data, label, margin=1, regularization_coefficient=1, use_linear=False)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SvmOutput {
    pub margin: f64,
    pub reg: f64,
    pub use_linear: bool,
}

fn check_shapes(data: &[usize], label: &[usize]) -> Result<()> {
    if data.is_empty() || label != &data[..data.len() - 1] {
        return Err(Error::Shape(format!(
            "SVMOutput: label of shape {} does not match data of shape {} (expected data.shape[:-1], one class \
             per row)",
            fmt_shape(label),
            fmt_shape(data)
        )));
    }
    Ok(())
}

impl Op for SvmOutput {
    fn name(&self) -> &'static str {
        "SVMOutput"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["data", "label"]
    }
    fn is_loss(&self) -> bool {
        true
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = vec![
            ("margin", AttrValue::Float(self.margin).to_mx_string()),
            ("regularization_coefficient", AttrValue::Float(self.reg).to_mx_string()),
        ];
        if self.use_linear {
            v.push(("use_linear", "True".into()));
        }
        v
    }
    fn infer_missing(&self, inputs: &[Option<Meta>]) -> Vec<Option<Meta>> {
        match inputs.first() {
            Some(Some(d)) if !d.shape.is_empty() => {
                vec![None, Some(Meta::new(&d.shape[..d.shape.len() - 1], d.dtype))]
            }
            _ => Vec::new(),
        }
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        float_only("SVMOutput", "data", inputs[0].dtype)?;
        check_shapes(&inputs[0].shape, &inputs[1].shape)?;
        Ok(vec![inputs[0].clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let classes = *inputs[0].shape().last().unwrap_or(&0);
        for (i, v) in inputs[1].to_f64_vec().into_iter().enumerate() {
            let k = v.trunc();
            if !(0.0..classes as f64).contains(&k) {
                return Err(Error::Index(format!(
                    "SVMOutput: label[{i}] = {v} is not a class index in [0, {classes})"
                )));
            }
        }
        outputs[0].write_from(&inputs[0])
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        let (x, label) = (inputs[0], inputs[1]);
        let meta = g.meta(x);
        let classes = *meta.shape.last().unwrap_or(&0);
        let s = g.apply1(OneHot { depth: classes, on_value: -1.0, off_value: 1.0, dtype: meta.dtype }, &[label])?;
        let sx = g.mul(s, x)?;
        let z = g.add_scalar(sx, self.margin)?;
        let gx = if self.use_linear {
            let active = g.scalar(BinaryKind::Gt, z, 0.0, false)?;
            let d = g.mul(s, active)?;
            g.mul_scalar(d, self.reg)?
        } else {
            let hinge = g.unary(UnaryKind::Relu, z)?;
            let d = g.mul(s, hinge)?;
            g.mul_scalar(d, 2.0 * self.reg)?
        };
        Ok(vec![Some(gx), None])
    }
}

/// `SVMOutput`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct SvmOutputParams {
    /// Scores inside this margin of the decision boundary are penalised.
    #[param(default = 1.0)]
    pub margin: f64,
    /// Factor applied to the loss gradient.
    #[param(default = 1.0)]
    pub regularization_coefficient: f64,
    /// Use the L1 hinge loss instead of the squared (L2) one.
    #[param(default = false)]
    pub use_linear: bool,
}

fn build_svm_output(a: &Attrs) -> Result<OpRef> {
    let p = SvmOutputParams::parse(a)?;
    Ok(Arc::new(SvmOutput { margin: p.margin, reg: p.regularization_coefficient, use_linear: p.use_linear }))
}

/// `SVMOutput`'s declaration.
pub const DEFS: &[OpDef] = &[OpDef {
    name: "SVMOutput",
    aliases: &[],
    args: &["data", "label"],
    doc: "Identity on class scores whose backward is the one-vs-rest hinge-loss gradient (head gradient \
          ignored).",
    params: SvmOutputParams::schema,
    build: build_svm_output,
}];
