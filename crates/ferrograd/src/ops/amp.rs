//! Mixed-precision casts: `amp_cast` (a float input to `dtype`; other inputs pass through, as in
//! MXNet) and `amp_multicast` (every float input to the widest — or with `cast_narrow` the
//! narrowest — float dtype among them). Gradients are cast back to each input's dtype.

use std::sync::Arc;

use super::params::{OpDef, OpParams};
use super::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::{Meta, NDArray};

/// Writes `src` into `dst` (converting its dtype).
fn copy_cast(dst: &mut NDArray, src: &NDArray) -> Result<()> {
    dst.write_from(src)
}

/// Back to each input's dtype (float inputs only get a gradient).
fn grads_back(g: &mut Grad<'_>, inputs: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
    inputs
        .iter()
        .zip(og)
        .map(|(&x, &d)| {
            let dt = g.meta(x).dtype;
            if dt.is_float() {
                Ok(Some(g.cast(d, dt)?))
            } else {
                Ok(None)
            }
        })
        .collect()
}

/// `amp_cast(data, dtype)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AmpCast {
    pub dtype: DType,
}

impl AmpCast {
    fn out_dtype(&self, input: DType) -> DType {
        if input.is_float() {
            self.dtype
        } else {
            input
        }
    }
}

impl Op for AmpCast {
    fn name(&self) -> &'static str {
        "amp_cast"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("dtype", self.dtype.name().to_string())]
    }
    fn infer_partial(
        &self,
        inputs: &mut [super::partial::PartialShape],
        outputs: &mut [super::partial::PartialShape],
    ) -> Result<()> {
        super::partial::same_shape(inputs, outputs)
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        Ok(vec![Meta::new(&inputs[0].shape, self.out_dtype(inputs[0].dtype))])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        copy_cast(&mut outputs[0], &inputs[0])
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        grads_back(g, inputs, og)
    }
}

/// `amp_multicast(*data, num_outputs, cast_narrow=False)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AmpMulticast {
    pub num_outputs: usize,
    pub cast_narrow: bool,
}

impl AmpMulticast {
    /// The common float dtype (`None` when no input is a float).
    fn target(&self, dtypes: impl Iterator<Item = DType>) -> Option<DType> {
        let floats = dtypes.filter(|d| d.is_float());
        if self.cast_narrow {
            floats.min_by_key(|d| d.size())
        } else {
            floats.max_by_key(|d| d.size())
        }
    }
}

impl Op for AmpMulticast {
    fn name(&self) -> &'static str {
        "amp_multicast"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["*data"]
    }
    fn variadic(&self) -> bool {
        true
    }
    fn num_outputs(&self) -> usize {
        self.num_outputs
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = vec![("num_outputs", self.num_outputs.to_string())];
        if self.cast_narrow {
            v.push(("cast_narrow", "True".into()));
        }
        v
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        if inputs.len() != self.num_outputs {
            return Err(Error::Value(format!(
                "amp_multicast: num_outputs={} but {} array(s) were given",
                self.num_outputs,
                inputs.len()
            )));
        }
        let target = self.target(inputs.iter().map(|m| m.dtype));
        Ok(inputs
            .iter()
            .map(|m| Meta::new(&m.shape, if m.dtype.is_float() { target.unwrap_or(m.dtype) } else { m.dtype }))
            .collect())
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        for (dst, src) in outputs.iter_mut().zip(inputs) {
            copy_cast(dst, src)?;
        }
        Ok(())
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        grads_back(g, inputs, og)
    }
}

/// `amp_cast`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct AmpCastParams {
    /// Output dtype for float inputs (other inputs pass through unchanged).
    pub dtype: DType,
}

/// `amp_multicast`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct AmpMulticastParams {
    /// Number of input/output pairs (must equal the number of inputs).
    pub num_outputs: i64,
    /// Cast to the narrowest float dtype instead of the widest.
    #[param(default = false)]
    pub cast_narrow: bool,
}

fn amp_cast_op(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(AmpCast { dtype: AmpCastParams::parse(a)?.dtype }))
}

fn amp_multicast_op(a: &Attrs) -> Result<OpRef> {
    let p = AmpMulticastParams::parse(a)?;
    let n = usize::try_from(p.num_outputs)
        .ok()
        .filter(|&n| n >= 1)
        .ok_or_else(|| Error::Value(format!("amp_multicast: num_outputs must be at least 1, got {}", p.num_outputs)))?;
    Ok(Arc::new(AmpMulticast { num_outputs: n, cast_narrow: p.cast_narrow }))
}

/// The mixed-precision casts' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "amp_cast",
        aliases: &[],
        args: &["data"],
        doc: "Casts a float input to `dtype` (other dtypes pass through); the gradient is cast back.",
        params: AmpCastParams::schema,
        build: amp_cast_op,
    },
    OpDef {
        name: "amp_multicast",
        aliases: &[],
        args: &["*data"],
        doc: "Casts every float input to the widest (or, with cast_narrow, narrowest) float dtype among them.",
        params: AmpMulticastParams::schema,
        build: amp_multicast_op,
    },
];
