//! Conversions and copies: `Cast`, `_copy` and `_identity_with_attr_like_rhs` (a copy whose shape
//! constraint lets inference run backwards).

use std::sync::Arc;

use super::params::{NoParams, OpDef, OpParams};
use super::partial::{self, PartialShape};
use super::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};

/// `Cast(dtype)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cast {
    pub dtype: DType,
}

impl Op for Cast {
    fn name(&self) -> &'static str {
        "Cast"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("dtype", self.dtype.name().to_string())]
    }
    fn fixed_dtype(&self) -> Option<DType> {
        Some(self.dtype)
    }
    fn infer_partial(&self, inputs: &mut [PartialShape], outputs: &mut [PartialShape]) -> Result<()> {
        super::partial::same_shape(inputs, outputs)
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        Ok(vec![Meta::new(&inputs[0].shape, self.dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        outputs[0].write_from(&inputs[0])?;
        Ok(())
    }
    // Casting to an integer type still passes the gradient through to a float input (as in
    // MXNet, where `x.astype('int32')` is recorded and backward gives ones).
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let dt = g.meta(inputs[0]).dtype;
        if !dt.is_float() {
            return Ok(vec![None]);
        }
        Ok(vec![Some(g.cast(og[0], dt)?)])
    }
}

/// `_copy` / `identity`: a fresh copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity;

impl Op for Identity {
    fn name(&self) -> &'static str {
        "_copy"
    }
    fn infer_partial(
        &self,
        ins: &mut [super::partial::PartialShape],
        outs: &mut [super::partial::PartialShape],
    ) -> Result<()> {
        super::partial::same_shape(ins, outs)
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
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![Some(og[0])])
    }
}

/// `_identity_with_attr_like_rhs(lhs, rhs)`: `lhs` unchanged, constrained to `rhs`'s shape and
/// dtype; shape inference flows through it in both directions. `rhs` gets no gradient.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdentityLikeRhs;

impl Op for IdentityLikeRhs {
    fn name(&self) -> &'static str {
        "_identity_with_attr_like_rhs"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["lhs", "rhs"]
    }
    fn infer_partial(&self, ins: &mut [PartialShape], outs: &mut [PartialShape]) -> Result<()> {
        partial::same_shape(ins, outs)
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let (l, r) = (&inputs[0], &inputs[1]);
        if l.shape != r.shape || l.dtype != r.dtype {
            return Err(Error::Shape(format!(
                "_identity_with_attr_like_rhs: lhs {} {} must have rhs's shape and dtype, got rhs {} {}",
                fmt_shape(&l.shape),
                l.dtype,
                fmt_shape(&r.shape),
                r.dtype
            )));
        }
        Ok(vec![l.clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        outputs[0].write_from(&inputs[0])?;
        Ok(())
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![Some(og[0]), None])
    }
}

/// `Cast`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct CastParams {
    /// The output dtype.
    pub dtype: DType,
}

fn build_cast(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(Cast { dtype: CastParams::parse(a)?.dtype }))
}

fn build_identity(a: &Attrs) -> Result<OpRef> {
    NoParams::parse(a)?;
    Ok(Arc::new(Identity))
}
/// The conversion ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "Cast",
        aliases: &["cast"],
        args: &["data"],
        doc: "Convert to another dtype.",
        params: CastParams::schema,
        build: build_cast,
    },
    OpDef {
        name: "_copy",
        aliases: &["identity"],
        args: &["data"],
        doc: "A copy of the input.",
        params: NoParams::schema,
        build: build_identity,
    },
    OpDef {
        name: "_identity_with_attr_like_rhs",
        aliases: &[],
        args: &["lhs", "rhs"],
        doc: "lhs unchanged, constrained to rhs's shape and dtype (lets shape inference run backwards).",
        params: NoParams::schema,
        build: |a| {
            NoParams::parse(a)?;
            Ok(Arc::new(IdentityLikeRhs))
        },
    },
];
