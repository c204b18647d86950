//! `cumsum` (MXNet 1.9.1 registers it as `_np_cumsum`, exposed as `nd.cumsum`, `sym.cumsum` and
//! `np.cumsum`): running sums along `axis`, or over the flattened array when `axis` is None.
//!
//! As in MXNet, the input is first converted to the output dtype (`dtype`, else the input's, bool
//! becoming int64) and the sums accumulate in that dtype (float16 saturates, integers wrap).
//! Negative axes count from the end (MXNet 1.9.1 rejects them with an internal index error).
//! Gradient: the reversed running sum of the head gradient, `flip(cumsum(flip(h)))`, cast back to
//! the input's dtype; it is built from `reverse` and `cumsum`, so it differentiates again.

use std::sync::Arc;

use ferrograd_kernels::par::{self, Cost};

use super::binary::Num;
use super::common::split3;
use super::layout::Reverse;
use super::params::{OpDef, OpParams};
use super::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::view::normalize_axis;
use crate::ndarray::{Meta, NDArray};
use crate::with_dtype;

/// The output dtypes `cumsum` accepts (MXNet 1.9.1's list).
const DTYPES: [DType; 6] = [DType::F16, DType::F32, DType::F64, DType::I32, DType::I64, DType::I8];

/// `cumsum`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct CumsumParams {
    /// Axis to sum along (negative counts from the end); None sums over the flattened array.
    #[param(default = None)]
    pub axis: Option<i64>,
    /// Dtype of the result and of the running sum (float16, float32, float64, int32, int64, int8); None keeps the input's (bool gives int64).
    #[param(default = None)]
    pub dtype: Option<DType>,
}

/// `cumsum(a, axis, dtype)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cumsum {
    pub axis: Option<i64>,
    pub dtype: Option<DType>,
}

impl Cumsum {
    fn out_dtype(&self, input: DType) -> DType {
        self.dtype.unwrap_or(if input == DType::Bool { DType::I64 } else { input })
    }
    /// `(output shape, (outer, n, inner))` for input `shape`.
    fn plan(&self, shape: &[usize]) -> Result<(Vec<usize>, (usize, usize, usize))> {
        match self.axis {
            None => {
                let n = shape.iter().product();
                Ok((vec![n], (1, n, 1)))
            }
            Some(a) => {
                let ax = normalize_axis("cumsum", a, shape.len()).map_err(|_| {
                    Error::Index(format!(
                        "cumsum: axis {a} is out of range for an array of shape {} ({} axes)",
                        fmt_shape(shape),
                        shape.len()
                    ))
                })?;
                Ok((shape.to_vec(), split3(shape, ax)))
            }
        }
    }
}

/// Running sums along the middle axis of a contiguous `(outer, n, inner)` array, in place; each
/// outer block is independent (parallel over blocks).
fn scan<T: Num>(data: &mut [T], n: usize, inner: usize) {
    let block = n * inner;
    if block == 0 || n < 2 {
        return;
    }
    let mut blocks: Vec<&mut [T]> = data.chunks_mut(block).collect();
    par::for_each_chunk_weighted(&mut blocks, block, Cost::Light, |_, bs| {
        for b in bs.iter_mut() {
            for i in 1..n {
                let (done, rest) = b.split_at_mut(i * inner);
                let prev = &done[(i - 1) * inner..];
                for (r, &p) in rest[..inner].iter_mut().zip(prev) {
                    *r = T::add(p, *r);
                }
            }
        }
    });
}

impl Op for Cumsum {
    fn name(&self) -> &'static str {
        "_np_cumsum"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["a"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        CumsumParams { axis: self.axis, dtype: self.dtype }.to_attrs()
    }
    fn fixed_dtype(&self) -> Option<DType> {
        // A given dtype is known without shapes (symbolic type inference).
        self.dtype
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let (shape, _) = self.plan(&inputs[0].shape)?;
        Ok(vec![Meta::new(&shape, self.out_dtype(inputs[0].dtype))])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let x = &inputs[0];
        let (_, (_, n, inner)) = self.plan(x.shape())?;
        let dt = self.out_dtype(x.dtype());
        // Convert first, then accumulate in the output dtype (MXNet's order).
        let converted = if x.dtype() == dt { x.clone() } else { x.astype(dt) };
        outputs[0].write_from(&converted.reshape(outputs[0].shape())?)?;
        with_dtype!(dt, T => outputs[0].write_out::<T, _>(|o| scan(o, n, inner)))
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let meta = g.meta(inputs[0]);
        if !meta.dtype.is_float() {
            return Ok(vec![None]);
        }
        let axis = self.axis.unwrap_or(0);
        let flip = Reverse { axis: vec![axis] };
        let r = g.apply1(flip.clone(), &[og[0]])?;
        let s = g.apply1(Cumsum { axis: Some(axis), dtype: None }, &[r])?;
        let back = g.apply1(flip, &[s])?;
        let back = g.reshape(back, &meta.shape)?;
        Ok(vec![Some(g.cast(back, meta.dtype)?)])
    }
}

fn build(a: &Attrs) -> Result<OpRef> {
    let p = CumsumParams::parse(a)?;
    if let Some(dt) = p.dtype.filter(|d| !DTYPES.contains(d)) {
        return Err(Error::Value(format!(
            "cumsum: dtype must be None or one of float16, float32, float64, int32, int64, int8; got {dt}"
        )));
    }
    Ok(Arc::new(Cumsum { axis: p.axis, dtype: p.dtype }))
}

/// `cumsum`'s declaration.
pub const DEFS: &[OpDef] = &[OpDef {
    name: "_np_cumsum",
    aliases: &["cumsum"],
    args: &["a"],
    doc: "Cumulative sum along axis (over the flattened array when axis is None), accumulated in dtype \
          (default: the input's; bool gives int64).",
    params: CumsumParams::schema,
    build,
}];
