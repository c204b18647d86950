//! Ordering ops: `topk`, `sort`, `argsort`.
//!
//! Each lane along the axis is sorted stably (ties keep their original order; NaN sorts above
//! +inf). Value outputs are differentiable: the gradient scatters the head gradient back to the
//! selected positions (`_scatter_along_axis`, whose own gradient gathers again). Index and mask
//! outputs are not differentiable. When only values are returned, the selected indices are a
//! hidden output kept for the gradient.

use std::sync::Arc;

use ferrograd_kernels::par::{self, Cost};
use ferrograd_kernels::Element;

use super::common::dense;
use super::indexing::TakeMode;
use super::params::{OpDef, OpParams, ParamEnum};
use super::pick::{IndexDType, ScatterAlong};
use super::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::view::normalize_axis;
use crate::ndarray::{Meta, NDArray};
use crate::with_dtype;

/// What `topk` returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ParamEnum)]
pub enum RetTyp {
    Both,
    Indices,
    Mask,
    Value,
}

/// Which op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OrderKind {
    TopK,
    Sort,
    ArgSort,
}

/// `topk(data, axis=-1, k=1, ret_typ='indices', is_ascend=False, dtype='float32')`,
/// `sort(data, axis=-1, is_ascend=True)`, `argsort(data, axis=-1, is_ascend=True, dtype='float32')`.
/// `axis=None` works on the flattened array; `k < 1` selects the whole axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ordering {
    pub kind: OrderKind,
    pub axis: Option<i64>,
    pub k: i64,
    pub ret: RetTyp,
    pub is_ascend: bool,
    pub dtype: DType,
}

/// Lane geometry: (shape worked on, axis, lane length n, selected count k).
struct Plan {
    shape: Vec<usize>,
    axis: usize,
    n: usize,
    k: usize,
}

impl Ordering {
    fn plan(&self, shape: &[usize]) -> Result<Plan> {
        let name = self.name();
        let (work, axis) = match self.axis {
            None => (vec![shape.iter().product()], 0),
            Some(a) => {
                if shape.is_empty() {
                    return Err(Error::Shape(format!("{name}: data must have at least one dimension, got shape ()")));
                }
                (shape.to_vec(), normalize_axis(name, a, shape.len())?)
            }
        };
        let n = work[axis];
        let k = if self.kind != OrderKind::TopK || self.k < 1 { n } else { self.k as usize };
        if k > n {
            return Err(Error::Value(format!(
                "{name}: k={k} is larger than the size {n} of axis {axis} of data with shape {}",
                fmt_shape(shape)
            )));
        }
        Ok(Plan { shape: work, axis, n, k })
    }

    /// Visible outputs first: values/indices/mask per `ret`, then a hidden index output.
    fn layout(&self) -> (Vec<OutKind>, usize) {
        use OutKind::*;
        match (self.kind, self.ret) {
            (OrderKind::Sort, _) => (vec![Values, HiddenIdx], 1),
            (OrderKind::ArgSort, _) => (vec![Indices], 1),
            (OrderKind::TopK, RetTyp::Value) => (vec![Values, HiddenIdx], 1),
            (OrderKind::TopK, RetTyp::Indices) => (vec![Indices], 1),
            (OrderKind::TopK, RetTyp::Mask) => (vec![Mask], 1),
            (OrderKind::TopK, RetTyp::Both) => (vec![Values, Indices], 2),
        }
    }

    /// Selected positions along the axis: `sel[(o·k + j)·inner + c]` for lane (o, c).
    fn select(&self, x: &NDArray, p: &Plan) -> Result<Vec<usize>> {
        let (outer, inner): (usize, usize) =
            (p.shape[..p.axis].iter().product(), p.shape[p.axis + 1..].iter().product());
        let (n, k, asc) = (p.n, p.k, self.is_ascend);
        let vals = x.astype(DType::F64).to_vec::<f64>()?;
        let mut sel = vec![0usize; outer * k * inner];
        if sel.is_empty() {
            return Ok(sel);
        }
        // One task per outer row (k·inner outputs each), in parallel when worth it.
        let rows = sel.chunks_mut(k * inner).collect::<Vec<_>>();
        let lane = |o: usize, c: usize, out: &mut [usize], pairs: &mut Vec<(u64, usize)>| {
            let base = o * n * inner + c;
            pairs.clear();
            // Keys whose integer order is f64::total_cmp's order (reversed for descending), with
            // the position as tie-break: the result of a stable sort, with unstable sorting and
            // partial selection on plain integers.
            pairs.extend((0..n).map(|i| {
                let b = vals[base + i * inner].to_bits();
                let key = if b >> 63 == 1 { !b } else { b | 1 << 63 };
                (if asc { key } else { !key }, i)
            }));
            if k < n && k > 0 {
                pairs.select_nth_unstable(k - 1);
                pairs.truncate(k);
            }
            pairs.sort_unstable();
            for (j, &(_, i)) in pairs.iter().take(k).enumerate() {
                out[j * inner + c] = i;
            }
        };
        let work = outer * inner * n.max(1) * (usize::BITS - n.leading_zeros()).max(1) as usize;
        let results = par::map_tasks(rows.len(), work, Cost::Heavy, |o| {
            let mut out = vec![0usize; k * inner];
            let mut pairs = Vec::with_capacity(n);
            for c in 0..inner {
                lane(o, c, &mut out, &mut pairs);
            }
            out
        });
        for (row, r) in rows.into_iter().zip(results) {
            row.copy_from_slice(&r);
        }
        Ok(sel)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OutKind {
    Values,
    Indices,
    HiddenIdx,
    Mask,
}

impl Op for Ordering {
    fn name(&self) -> &'static str {
        match self.kind {
            OrderKind::TopK => "topk",
            OrderKind::Sort => "sort",
            OrderKind::ArgSort => "argsort",
        }
    }
    fn num_outputs(&self) -> usize {
        self.layout().0.len()
    }
    fn num_visible_outputs(&self) -> usize {
        self.layout().1
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = vec![("axis", self.axis.map_or("None".into(), |a| a.to_string()))];
        v.push(("is_ascend", if self.is_ascend { "True" } else { "False" }.into()));
        if self.kind == OrderKind::TopK {
            v.push(("k", self.k.to_string()));
            v.push(("ret_typ", self.ret.name().into()));
        }
        if self.kind != OrderKind::Sort {
            v.push(("dtype", self.dtype.name().into()));
        }
        v
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let x = &inputs[0];
        let p = self.plan(&x.shape)?;
        let mut sel_shape = p.shape.clone();
        sel_shape[p.axis] = p.k;
        let metas = self
            .layout()
            .0
            .into_iter()
            .map(|o| match o {
                OutKind::Values => Meta::new(&sel_shape, x.dtype),
                OutKind::Indices => Meta::new(&sel_shape, self.dtype),
                OutKind::HiddenIdx => Meta::new(&sel_shape, DType::I64),
                OutKind::Mask => Meta::new(&x.shape, x.dtype),
            })
            .collect();
        Ok(metas)
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let x = &inputs[0];
        let p = self.plan(x.shape())?;
        let sel = self.select(x, &p)?;
        let inner: usize = p.shape[p.axis + 1..].iter().product();
        let (n, k) = (p.n, p.k);
        // Source position of each selected element in the (flattened-if-None) data.
        let src = |q: usize| {
            let (o, rem) = (q / (k * inner).max(1), q % (k * inner).max(1));
            (o * n + sel[q]) * inner + rem % inner.max(1)
        };
        for (out, kind) in outputs.iter_mut().zip(self.layout().0) {
            match kind {
                OutKind::Values => {
                    let (buf, range) = dense(x);
                    with_dtype!(x.dtype(), T => {
                        let s = &buf.typed::<T>()?[range];
                        out.write_out::<T, _>(|o| o.iter_mut().enumerate().for_each(|(q, v)| *v = s[src(q)]))?;
                    });
                }
                OutKind::Indices | OutKind::HiddenIdx => {
                    with_dtype!(out.dtype(), T => {
                        out.write_out::<T, _>(|o| o.iter_mut().zip(&sel).for_each(|(v, &i)| *v = T::from_f64(i as f64)))?;
                    });
                }
                OutKind::Mask => {
                    with_dtype!(out.dtype(), T => {
                        out.write_out::<T, _>(|o| {
                            o.fill(T::zero());
                            (0..sel.len()).for_each(|q| o[src(q)] = T::from_f64(1.0));
                        })?;
                    });
                }
            }
        }
        Ok(())
    }
    fn differentiable(&self) -> bool {
        self.layout().0.contains(&OutKind::Values)
    }
    fn zero_gradient(&self) -> bool {
        true
    }
    fn saves(&self) -> Saves {
        Saves::Outputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], outputs: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let kinds = self.layout().0;
        let (Some(vi), Some(ii)) = (
            kinds.iter().position(|&k| k == OutKind::Values),
            kinds.iter().position(|&k| k == OutKind::Indices || k == OutKind::HiddenIdx),
        ) else {
            return Ok(vec![None]);
        };
        let shape = g.shape(inputs[0]);
        let p = self.plan(&shape)?;
        let back = ScatterAlong { axis: p.axis as i64, mode: TakeMode::Clip, shape: p.shape.clone() };
        let gx = g.apply1(back, &[og[vi], outputs[ii]])?;
        Ok(vec![Some(g.reshape(gx, &shape)?)])
    }
}

// ---- registry builders ----

/// `topk`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct TopKParams {
    /// Axis to select along; None selects from the flattened array.
    #[param(default = Some(-1))]
    pub axis: Option<i64>,
    /// How many elements to select (k < 1 selects the whole axis).
    #[param(default = 1)]
    pub k: i64,
    /// Return the values, their indices, a 0/1 mask of the selected positions, or values and indices.
    #[param(default = RetTyp::Indices)]
    pub ret_typ: RetTyp,
    /// Select the k smallest instead of the k largest.
    #[param(default = false)]
    pub is_ascend: bool,
    /// Dtype of returned indices (ret_typ indices or both).
    #[param(default = IndexDType::Float32)]
    pub dtype: IndexDType,
}

/// `sort`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct SortParams {
    /// Axis to sort along; None sorts the flattened array.
    #[param(default = Some(-1))]
    pub axis: Option<i64>,
    /// Ascending order (False: descending).
    #[param(default = true)]
    pub is_ascend: bool,
}

/// `argsort`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct ArgSortParams {
    /// Axis to sort along; None sorts the flattened array.
    #[param(default = Some(-1))]
    pub axis: Option<i64>,
    /// Ascending order (False: descending).
    #[param(default = true)]
    pub is_ascend: bool,
    /// Dtype of the returned indices.
    #[param(default = IndexDType::Float32)]
    pub dtype: IndexDType,
}

pub fn topk_op(a: &Attrs) -> Result<OpRef> {
    let p = TopKParams::parse(a)?;
    Ok(Arc::new(Ordering {
        kind: OrderKind::TopK,
        axis: p.axis,
        k: p.k,
        ret: p.ret_typ,
        is_ascend: p.is_ascend,
        dtype: p.dtype.dtype(),
    }))
}

pub fn sort_op(a: &Attrs) -> Result<OpRef> {
    let p = SortParams::parse(a)?;
    Ok(Arc::new(Ordering {
        kind: OrderKind::Sort,
        axis: p.axis,
        k: 0,
        ret: RetTyp::Value,
        is_ascend: p.is_ascend,
        dtype: DType::I64,
    }))
}

pub fn argsort_op(a: &Attrs) -> Result<OpRef> {
    let p = ArgSortParams::parse(a)?;
    Ok(Arc::new(Ordering {
        kind: OrderKind::ArgSort,
        axis: p.axis,
        k: 0,
        ret: RetTyp::Indices,
        is_ascend: p.is_ascend,
        dtype: p.dtype.dtype(),
    }))
}

/// The ordering ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "topk",
        aliases: &[],
        args: &["data"],
        doc: "Top k elements along an axis: values, indices, a mask or both (axis=None flattens).",
        params: TopKParams::schema,
        build: topk_op,
    },
    OpDef {
        name: "sort",
        aliases: &[],
        args: &["data"],
        doc: "Sorted values along an axis (stable; axis=None flattens).",
        params: SortParams::schema,
        build: sort_op,
    },
    OpDef {
        name: "argsort",
        aliases: &[],
        args: &["data"],
        doc: "Indices that sort an axis (stable; axis=None flattens).",
        params: ArgSortParams::schema,
        build: argsort_op,
    },
];
