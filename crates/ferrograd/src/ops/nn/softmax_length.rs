//! `softmax(data, length, use_length=True)`: softmax over the first `length` entries of each row
//! along `axis`, zeros after them (MXNet 1.9's masked softmax, used by attention). `length` has
//! the data's shape without `axis` and an integer dtype; a length of 0 gives a row of zeros.
//! MXNet read past the row for a length above the axis size (heap corruption) and gave zeros for
//! a negative one; both are an `IndexError` here.
//!
//! The gradient is the plain softmax gradient `s·y·(g - Σ g·y)`: `y` is 0 at the masked entries,
//! so they get no gradient and the sums run over the kept entries only. `length` gets none.

use super::float_only;
use super::softmax::{SmKind, SoftmaxGrad};
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::view::normalize_axis;
use crate::ndarray::{Meta, NDArray};
use crate::ops::attrs::fmt_float;
use crate::ops::common::split3;
use crate::ops::{Ctx, Grad, Op, Saves, Val};

/// `softmax` with a length input.
#[derive(Clone, Debug, PartialEq)]
pub struct SoftmaxLength {
    pub axis: i64,
    pub temperature: Option<f64>,
    pub dtype: Option<DType>,
}

impl Op for SoftmaxLength {
    fn name(&self) -> &'static str {
        "softmax"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["data", "length"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = Vec::new();
        if self.axis != -1 {
            v.push(("axis", self.axis.to_string()));
        }
        if let Some(t) = self.temperature {
            v.push(("temperature", fmt_float(t)));
        }
        if let Some(d) = self.dtype {
            v.push(("dtype", d.name().to_string()));
        }
        v.push(("use_length", "True".into()));
        v
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let (x, len) = (&inputs[0], &inputs[1]);
        float_only("softmax", "data", x.dtype)?;
        let axis = normalize_axis("softmax", self.axis, x.shape.len())?;
        if len.dtype.is_float() || len.dtype == DType::Bool {
            return Err(Error::DType(format!(
                "softmax: length must have an integer dtype with use_length=True, got {}",
                len.dtype
            )));
        }
        let mut want = x.shape.to_vec();
        want.remove(axis);
        if len.shape[..] != want[..] {
            return Err(Error::Shape(format!(
                "softmax: length has shape {}, expected {} (data shape {} without axis {})",
                fmt_shape(&len.shape),
                fmt_shape(&want),
                fmt_shape(&x.shape),
                self.axis
            )));
        }
        let dt = self.dtype.unwrap_or(x.dtype);
        float_only("softmax", "dtype", dt)?;
        Ok(vec![Meta::new(&x.shape, dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let x = &inputs[0];
        let axis = normalize_axis("softmax", self.axis, x.ndim())?;
        let (outer, n, inner) = split3(x.shape(), axis);
        let xs = x.to_f64_vec();
        let lens = inputs[1].to_f64_vec();
        let s = SmKind::Softmax.scale(self.temperature);
        let mut y = vec![0.0f64; xs.len()];
        for (row, &l) in lens.iter().enumerate() {
            if !(0.0..=n as f64).contains(&l) {
                return Err(Error::Index(format!(
                    "softmax: length {l} at entry {row} is outside [0, {n}] (the size of axis {})",
                    self.axis
                )));
            }
            let (o, i) = (row / inner, row % inner);
            let at = |k: usize| (o * n + k) * inner + i;
            let l = l as usize;
            let m = (0..l).map(|k| s * xs[at(k)]).fold(f64::NEG_INFINITY, f64::max);
            let mut total = 0.0;
            for k in 0..l {
                let e = (s * xs[at(k)] - m).exp();
                y[at(k)] = e;
                total += e;
            }
            for k in 0..l {
                y[at(k)] /= total;
            }
        }
        debug_assert_eq!(outer * n * inner, y.len());
        let out = NDArray::from_vec(y, x.shape())?;
        outputs[0].write_from(&out)
    }
    fn saves(&self) -> Saves {
        Saves::Outputs
    }
    fn grad(&self, g: &mut Grad<'_>, _inputs: &[Val], outputs: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let back = SoftmaxGrad { kind: SmKind::Softmax, axis: self.axis, temperature: self.temperature };
        Ok(vec![Some(g.apply1(back, &[og[0], outputs[0]])?), None])
    }
}
