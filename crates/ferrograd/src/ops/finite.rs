//! `all_finite` and `multi_all_finite`: a float32 flag of shape (1,), 1 when every element of the
//! input(s) is finite and 0 otherwise (mixed-precision training checks gradients with them).
//!
//! MXNet's `init_output=False` leaves the flag uninitialised when everything is finite (it is
//! meant for accumulating into an existing `out=`); ferrograd computes a fresh flag either way.
//! The scan splits large arrays into fixed chunks checked in parallel.

use std::sync::Arc;

use ferrograd_kernels::par::{self, Cost};
use ferrograd_kernels::Element;

use super::common::dense;
use super::params::{OpDef, OpParams};
use super::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::with_dtype;

/// Whether every element of `x` is finite.
fn is_all_finite(x: &NDArray) -> Result<bool> {
    let (buf, range) = dense(x);
    let n = range.len();
    with_dtype!(x.dtype(), T => {
        let s = &buf.typed::<T>()?[range];
        let chunk = par::chunk_len(n, Cost::Light);
        let parts = par::map_tasks(n.div_ceil(chunk), n, Cost::Light, |k| {
            s[k * chunk..((k + 1) * chunk).min(n)].iter().all(|v| v.to_f64().is_finite())
        });
        Ok(parts.into_iter().all(|ok| ok))
    })
}

fn check_float(op: &str, i: usize, m: &Meta) -> Result<()> {
    if m.dtype.is_float() {
        Ok(())
    } else {
        Err(Error::DType(format!(
            "{op}: input {i} must have a float dtype (float16, float32, float64), got {}",
            m.dtype
        )))
    }
}

/// `all_finite(data, init_output=True)` / `multi_all_finite(*data, num_arrays=1, init_output=True)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllFinite {
    /// `Some(n)` for `multi_all_finite` with `num_arrays=n`.
    pub num_arrays: Option<usize>,
    pub init_output: bool,
}

impl AllFinite {
    fn op_name(&self) -> &'static str {
        if self.num_arrays.is_some() {
            "multi_all_finite"
        } else {
            "all_finite"
        }
    }
}

impl Op for AllFinite {
    fn name(&self) -> &'static str {
        self.op_name()
    }
    fn arg_names(&self) -> &'static [&'static str] {
        if self.num_arrays.is_some() {
            &["*data"]
        } else {
            &["data"]
        }
    }
    fn variadic(&self) -> bool {
        self.num_arrays.is_some()
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = Vec::new();
        if let Some(n) = self.num_arrays {
            v.push(("num_arrays", n.to_string()));
        }
        if !self.init_output {
            v.push(("init_output", "False".into()));
        }
        v
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let op = self.op_name();
        if let Some(n) = self.num_arrays {
            if n != inputs.len() {
                return Err(Error::Value(format!("{op}: num_arrays={n} but {} array(s) were given", inputs.len())));
            }
        }
        for (i, m) in inputs.iter().enumerate() {
            check_float(op, i, m)?;
        }
        Ok(vec![Meta::new(&[1], DType::F32)])
    }
    fn fixed_dtype(&self) -> Option<DType> {
        Some(DType::F32)
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let mut ok = true;
        for x in inputs {
            ok = ok && is_all_finite(x)?;
        }
        outputs[0].write_out::<f32, _>(|o| o[0] = if ok { 1.0 } else { 0.0 })
    }
    fn differentiable(&self) -> bool {
        false
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Err(Error::Value(format!("{} is not differentiable", self.op_name())))
    }
}

/// `all_finite`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct AllFiniteParams {
    /// Accepted for MXNet compatibility: the flag is always computed afresh.
    #[param(default = true)]
    pub init_output: bool,
}

/// `multi_all_finite`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct MultiAllFiniteParams {
    /// Number of arrays (must equal the number of inputs).
    #[param(default = 1)]
    pub num_arrays: i64,
    /// Accepted for MXNet compatibility: the flag is always computed afresh.
    #[param(default = true)]
    pub init_output: bool,
}

fn all_finite_op(a: &Attrs) -> Result<OpRef> {
    let p = AllFiniteParams::parse(a)?;
    Ok(Arc::new(AllFinite { num_arrays: None, init_output: p.init_output }))
}

fn multi_all_finite_op(a: &Attrs) -> Result<OpRef> {
    let p = MultiAllFiniteParams::parse(a)?;
    let n = usize::try_from(p.num_arrays).ok().filter(|&n| n >= 1).ok_or_else(|| {
        Error::Value(format!("multi_all_finite: num_arrays must be at least 1, got {}", p.num_arrays))
    })?;
    Ok(Arc::new(AllFinite { num_arrays: Some(n), init_output: p.init_output }))
}

/// The finiteness checks' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "all_finite",
        aliases: &[],
        args: &["data"],
        doc: "1 (float32, shape (1,)) when every element of data is finite, else 0.",
        params: AllFiniteParams::schema,
        build: all_finite_op,
    },
    OpDef {
        name: "multi_all_finite",
        aliases: &[],
        args: &["*data"],
        doc: "1 (float32, shape (1,)) when every element of every array is finite, else 0.",
        params: MultiAllFiniteParams::schema,
        build: multi_all_finite_op,
    },
];
