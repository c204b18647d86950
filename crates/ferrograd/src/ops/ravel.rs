//! `ravel_multi_index` and `unravel_index`: between multi-indices (one row per axis of `shape`)
//! and flat row-major indices, in the input's dtype. Values are truncated toward zero; an index
//! outside `shape` is an error (MXNet computed a wrong flat index from it). Not differentiable.

use std::sync::Arc;

use super::attrs::fmt_tuple;
use super::common::sizes;
use super::params::{OpDef, OpParams};
use super::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::with_dtype;
use ferrograd_kernels::Element;

/// `ravel_multi_index(data, shape)` (`ravel`) or `unravel_index(data, shape)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ravel {
    pub ravel: bool,
    pub shape: Vec<usize>,
}

impl Ravel {
    fn op_name(&self) -> &'static str {
        if self.ravel {
            "ravel_multi_index"
        } else {
            "unravel_index"
        }
    }

    fn out_shape(&self, data: &[usize]) -> Result<Vec<usize>> {
        let nd = self.shape.len();
        if self.ravel {
            if data.len() != 2 || data[0] != nd {
                return Err(Error::Shape(format!(
                    "ravel_multi_index: data must be 2-D with one row per axis of shape={} ({nd} rows), got shape {}",
                    fmt_tuple(&super::common::to_i64(&self.shape)),
                    fmt_shape(data)
                )));
            }
            Ok(vec![data[1]])
        } else {
            let mut out = vec![nd];
            out.extend_from_slice(data);
            Ok(out)
        }
    }

    fn index_error(&self, what: String) -> Error {
        Error::Index(format!(
            "{}: {what} is out of bounds for shape {}",
            self.op_name(),
            fmt_tuple(&super::common::to_i64(&self.shape))
        ))
    }
}

impl Op for Ravel {
    /// The registered names (MXNet's; the unprefixed ones are aliases).
    fn name(&self) -> &'static str {
        if self.ravel {
            "_ravel_multi_index"
        } else {
            "_unravel_index"
        }
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("shape", fmt_tuple(&super::common::to_i64(&self.shape)))]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        Ok(vec![Meta::new(&self.out_shape(&inputs[0].shape)?, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let vals: Vec<f64> = inputs[0].to_f64_vec();
        let nd = self.shape.len();
        let mut out = Vec::with_capacity(outputs[0].size());
        if self.ravel {
            let n = vals.len() / nd.max(1);
            for j in 0..n {
                let mut flat = 0usize;
                for (d, &size) in self.shape.iter().enumerate() {
                    let v = vals[d * n + j].trunc();
                    if !(0.0..size as f64).contains(&v) {
                        return Err(self.index_error(format!("index {} on axis {d} (column {j})", vals[d * n + j])));
                    }
                    flat = flat * size + v as usize;
                }
                out.push(flat as f64);
            }
        } else {
            let total: usize = self.shape.iter().product();
            let mut rows = vec![Vec::with_capacity(vals.len()); nd];
            for (j, &raw) in vals.iter().enumerate() {
                let v = raw.trunc();
                if !(0.0..total as f64).contains(&v) {
                    return Err(self.index_error(format!("flat index {raw} (element {j})")));
                }
                let mut rest = v as usize;
                for d in (0..nd).rev() {
                    rows[d].push((rest % self.shape[d]) as f64);
                    rest /= self.shape[d];
                }
            }
            rows.into_iter().for_each(|r| out.extend(r));
        }
        with_dtype!(outputs[0].dtype(), T => {
            outputs[0].write_out::<T, _>(|o| o.iter_mut().zip(&out).for_each(|(d, &v)| *d = T::from_f64(v)))
        })
    }
    fn differentiable(&self) -> bool {
        false
    }
    fn zero_gradient(&self) -> bool {
        true
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![None])
    }
}

/// `ravel_multi_index`'s and `unravel_index`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct RavelParams {
    /// Shape of the array the indices address (required, non-empty).
    #[param(default = None)]
    pub shape: Option<Vec<i64>>,
}

fn build(a: &Attrs, ravel: bool) -> Result<OpRef> {
    let p = RavelParams::parse(a)?;
    let op = if ravel { "ravel_multi_index" } else { "unravel_index" };
    let shape = p
        .shape
        .filter(|s| !s.is_empty())
        .ok_or_else(|| Error::Value(format!("{op}: the shape parameter is required and must not be empty")))?;
    let shape = sizes(op, "shape", &shape)?;
    if shape.contains(&0) {
        return Err(Error::Value(format!(
            "{op}: shape={} has an empty axis",
            fmt_tuple(&super::common::to_i64(&shape))
        )));
    }
    Ok(Arc::new(Ravel { ravel, shape }))
}

/// The index conversions' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "_ravel_multi_index",
        aliases: &["ravel_multi_index"],
        args: &["data"],
        doc: "Flat row-major indices from multi-indices (data has one row per axis of `shape`).",
        params: RavelParams::schema,
        build: |a| build(a, true),
    },
    OpDef {
        name: "_unravel_index",
        aliases: &["unravel_index"],
        args: &["data"],
        doc: "Multi-indices (one row per axis of `shape`) from flat row-major indices.",
        params: RavelParams::schema,
        build: |a| build(a, false),
    },
];
