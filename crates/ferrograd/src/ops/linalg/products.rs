//! Matrix products over a stack of matrices: `_linalg_gemm` (`alpha·op(A)·op(B) + beta·C`) and
//! `_linalg_syrk` (`alpha·A·Aᵀ` or `alpha·Aᵀ·A`). Both run the GEMM kernel through
//! `linalg_gemm2`, whose gradient rule they reuse.

use std::sync::Arc;

use ferrograd_kernels::Element;

use super::common::matrices;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::attrs::fmt_float;
use crate::ops::common::dense;
use crate::ops::nn::dense::LinalgGemm2;
use crate::ops::params::{OpDef, OpParams};
use crate::ops::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};

/// `_linalg_gemm(A, B, C)`: `alpha·op(A)·op(B) + beta·C` over the last two axes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gemm {
    pub transpose_a: bool,
    pub transpose_b: bool,
    pub alpha: f64,
    pub beta: f64,
}

impl Gemm {
    fn product(&self) -> LinalgGemm2 {
        LinalgGemm2 { transpose_a: self.transpose_a, transpose_b: self.transpose_b, alpha: self.alpha }
    }
}

impl Op for Gemm {
    fn name(&self) -> &'static str {
        "_linalg_gemm"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["A", "B", "C"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = self.product().attrs();
        if self.beta != 1.0 {
            v.push(("beta", fmt_float(self.beta)));
        }
        v
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        for (m, arg) in inputs.iter().zip(["A", "B", "C"]) {
            matrices(self.name(), arg, m)?;
        }
        let out = self.product().infer(&inputs[..2]).map_err(|e| match e {
            Error::Shape(m) => Error::Shape(m.replacen("linalg_gemm2", "_linalg_gemm", 1)),
            other => other,
        })?;
        if inputs[2].shape != out[0].shape || inputs[2].dtype != out[0].dtype {
            return Err(Error::Shape(format!(
                "_linalg_gemm: C must have the product's shape {} and dtype {}, got {} {} (A {}, B {})",
                fmt_shape(&out[0].shape),
                out[0].dtype,
                fmt_shape(&inputs[2].shape),
                inputs[2].dtype,
                fmt_shape(&inputs[0].shape),
                fmt_shape(&inputs[1].shape)
            )));
        }
        Ok(out)
    }
    fn forward(&self, ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        self.product().forward(ctx, &inputs[..2], outputs)?;
        if self.beta == 0.0 {
            return Ok(()); // BLAS semantics: C is not read
        }
        let (bc, rc) = dense(&inputs[2]);
        let beta = self.beta;
        float_kernel!(self.name(), inputs[0].dtype(), T => {
            let c = &bc.typed::<T>()?[rc];
            let b = T::from_f64(beta);
            outputs[0].write_out::<T, _>(|o| o.iter_mut().zip(c).for_each(|(o, &c)| *o += b * c))
        })
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let mut grads = self.product().grad(g, &inputs[..2], &[], og)?;
        grads.push(Some(g.mul_scalar(og[0], self.beta)?));
        Ok(grads)
    }
}

/// `_linalg_syrk(A)`: `alpha·A·Aᵀ`, or `alpha·Aᵀ·A` with `transpose`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Syrk {
    pub transpose: bool,
    pub alpha: f64,
}

impl Syrk {
    fn product(&self) -> LinalgGemm2 {
        LinalgGemm2 { transpose_a: self.transpose, transpose_b: !self.transpose, alpha: self.alpha }
    }
}

impl Op for Syrk {
    fn name(&self) -> &'static str {
        "_linalg_syrk"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["A"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = Vec::new();
        if self.transpose {
            v.push(("transpose", "True".into()));
        }
        if self.alpha != 1.0 {
            v.push(("alpha", fmt_float(self.alpha)));
        }
        v
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        matrices(self.name(), "A", &inputs[0])?;
        self.product().infer(&[inputs[0].clone(), inputs[0].clone()])
    }
    fn forward(&self, ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        self.product().forward(ctx, &[inputs[0].clone(), inputs[0].clone()], outputs)
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        // A appears twice in the product: the gradient is the sum of both operands' gradients.
        let grads = self.product().grad(g, &[inputs[0], inputs[0]], &[], og)?;
        let (Some(ga), Some(gb)) = (grads[0], grads[1]) else {
            return Err(Error::Runtime("_linalg_syrk: linalg_gemm2 gave no gradient".into()));
        };
        Ok(vec![Some(g.add(ga, gb)?)])
    }
}

/// `gemm`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct GemmParams {
    /// Use the transpose of A.
    #[param(default = false)]
    pub transpose_a: bool,
    /// Use the transpose of B.
    #[param(default = false)]
    pub transpose_b: bool,
    /// Factor applied to the product.
    #[param(default = 1.0)]
    pub alpha: f64,
    /// Factor applied to C.
    #[param(default = 1.0)]
    pub beta: f64,
    /// Axis of the matrix rows (only -2 is supported).
    #[param(default = -2)]
    pub axis: i64,
}

/// `syrk`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct SyrkParams {
    /// Compute Aᵀ·A instead of A·Aᵀ.
    #[param(default = false)]
    pub transpose: bool,
    /// Factor applied to the product.
    #[param(default = 1.0)]
    pub alpha: f64,
}

fn build_gemm(a: &Attrs) -> Result<OpRef> {
    let p = GemmParams::parse(a)?;
    if p.axis != -2 {
        return Err(Error::Value(format!(
            "_linalg_gemm: only axis=-2 (matrices on the last two axes) is supported, got axis={}",
            p.axis
        )));
    }
    Ok(Arc::new(Gemm { transpose_a: p.transpose_a, transpose_b: p.transpose_b, alpha: p.alpha, beta: p.beta }))
}

/// The products' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "_linalg_gemm",
        aliases: &["linalg_gemm"],
        args: &["A", "B", "C"],
        doc: "alpha·op(A)·op(B) + beta·C over the last two axes, batched over the leading ones.",
        params: GemmParams::schema,
        build: build_gemm,
    },
    OpDef {
        name: "_linalg_syrk",
        aliases: &["linalg_syrk"],
        args: &["A"],
        doc: "alpha·A·Aᵀ (or alpha·Aᵀ·A with transpose) over the last two axes.",
        params: SyrkParams::schema,
        build: |a| {
            let p = SyrkParams::parse(a)?;
            Ok(Arc::new(Syrk { transpose: p.transpose, alpha: p.alpha }))
        },
    },
];
