//! Slicing ops: basic indexing (`slice`, `x[1:3, ::2]`), `slice_axis` and `slice_like` (views or
//! lazy copies); each gradient writes the output gradient into zeros through the same slice.

use std::sync::Arc;

use ferrograd_kernels::unary_binary::assign;

use super::attrs::fmt_tuple;
use super::params::{OpDef, OpParams};
use super::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::view::normalize_axis;
use crate::ndarray::{Meta, NDArray, SliceArg};
use crate::{match_buffer, with_dtype};

/// Basic indexing (`x[1:3, ::2, None, 0]`): a view when contiguous, else a lazy copy. MXNet's
/// `slice`, `slice_axis` and integer indexing are expressed with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BasicIndex {
    pub args: Vec<SliceArg>,
}

fn args_attr(args: &[SliceArg]) -> String {
    let parts: Vec<String> = args
        .iter()
        .map(|a| match *a {
            SliceArg::Index(i) => i.to_string(),
            SliceArg::NewAxis => "None".into(),
            SliceArg::Range { start, stop, step } => {
                let f = |v: Option<i64>| v.map_or(String::new(), |x| x.to_string());
                format!("{}:{}:{}", f(start), f(stop), step)
            }
        })
        .collect();
    format!("[{}]", parts.join(", "))
}

impl Op for BasicIndex {
    fn name(&self) -> &'static str {
        "_basic_index"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("key", args_attr(&self.args))]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        // Shape inference by slicing an empty-strided probe: layout math only, no data.
        let probe = NDArray::zeros(&[], inputs[0].dtype).broadcast_to(&inputs[0].shape)?;
        let v = probe.slice(&self.args)?;
        Ok(vec![Meta::new(v.shape(), inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let v = inputs[0].slice(&self.args)?;
        outputs[0].write_from(&v)?;
        Ok(())
    }
    fn view(&self, inputs: &[NDArray]) -> Option<Result<NDArray>> {
        Some(inputs[0].slice(&self.args))
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let shape = g.shape(inputs[0]);
        Ok(vec![Some(g.apply1(BasicIndexGrad { args: self.args.clone(), shape }, &[og[0]])?)])
    }
}

/// The gradient of [`BasicIndex`]: zeros of the source shape with the indexed region set to the
/// incoming gradient. Its own gradient is the indexing again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BasicIndexGrad {
    pub args: Vec<SliceArg>,
    pub shape: Vec<usize>,
}

impl Op for BasicIndexGrad {
    fn name(&self) -> &'static str {
        "_backward_basic_index"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("key", args_attr(&self.args)),
            ("shape", fmt_tuple(&self.shape.iter().map(|&d| d as i64).collect::<Vec<_>>())),
        ]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        Ok(vec![Meta::new(&self.shape, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let out = &mut outputs[0];
        out.fill_scalar(0.0);
        // Only the layout: a sliced view would hold the buffer and force a copy on the write.
        let dl = out.slice_layout(&self.args)?;
        let src = inputs[0].snapshot();
        let sl = inputs[0].layout().clone();
        out.write(|buf, _| {
            match_buffer!(buf, m => {
                let d = m.as_mut_slice();
                with_dtype!(inputs[0].dtype(), S => {
                    let s = src.typed::<S>()?;
                    assign(d, &dl, s, &sl, |_, v| ferrograd_kernels::Element::from_f64(ferrograd_kernels::Element::to_f64(v)));
                    Ok::<(), crate::Error>(())
                })
            })
        })?;
        Ok(())
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, _i: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![Some(g.apply1(BasicIndex { args: self.args.clone() }, &[og[0]])?)])
    }
}

/// `slice_axis(axis, begin, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SliceAxis {
    pub axis: i64,
    pub begin: i64,
    pub end: Option<i64>,
}

impl SliceAxis {
    fn index(&self, ndim: usize) -> Result<BasicIndex> {
        let axis = normalize_axis("slice_axis", self.axis, ndim)?;
        let mut args = vec![SliceArg::Range { start: None, stop: None, step: 1 }; axis];
        args.push(SliceArg::Range { start: Some(self.begin), stop: self.end, step: 1 });
        Ok(BasicIndex { args })
    }
}

impl Op for SliceAxis {
    fn name(&self) -> &'static str {
        "slice_axis"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("axis", self.axis.to_string()),
            ("begin", self.begin.to_string()),
            ("end", self.end.map_or("None".into(), |e| e.to_string())),
        ]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        self.index(inputs[0].shape.len())?.infer(inputs)
    }
    fn forward(&self, ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        self.index(inputs[0].ndim())?.forward(ctx, inputs, outputs)
    }
    fn view(&self, inputs: &[NDArray]) -> Option<Result<NDArray>> {
        Some(self.index(inputs[0].ndim()).and_then(|op| inputs[0].slice(&op.args)))
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], outputs: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let nd = g.shape(inputs[0]).len();
        self.index(nd)?.grad(g, inputs, outputs, og)
    }
}

/// `slice_like(data, shape_like, axes=())`: the leading corner of data with shape_like's sizes on
/// the given axes (all axes when empty; then both must have the same rank).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SliceLike {
    pub axes: Vec<i64>,
}

impl SliceLike {
    fn index(&self, data: &[usize], like: &[usize]) -> Result<BasicIndex> {
        let bad = |why: String| {
            Error::Shape(format!(
                "slice_like: cannot slice data of shape {} like shape_like {}: {why}",
                fmt_shape(data),
                fmt_shape(like)
            ))
        };
        let mut args = vec![SliceArg::Range { start: None, stop: None, step: 1 }; data.len()];
        let axes: Vec<usize> = if self.axes.is_empty() {
            if data.len() != like.len() {
                return Err(bad("with axes=() both must have the same number of dimensions".into()));
            }
            (0..data.len()).collect()
        } else {
            self.axes.iter().map(|&a| normalize_axis("slice_like", a, data.len())).collect::<Result<_>>()?
        };
        for a in axes {
            let n = *like.get(a).ok_or_else(|| bad(format!("shape_like has no axis {a}")))?;
            if n > data[a] {
                return Err(bad(format!("axis {a} of shape_like ({n}) is larger than data's ({})", data[a])));
            }
            args[a] = SliceArg::Range { start: Some(0), stop: Some(n as i64), step: 1 };
        }
        Ok(BasicIndex { args })
    }
}

impl Op for SliceLike {
    fn name(&self) -> &'static str {
        "slice_like"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["data", "shape_like"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("axes", fmt_tuple(&self.axes))]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        self.index(&inputs[0].shape, &inputs[1].shape)?.infer(&inputs[..1])
    }
    fn forward(&self, ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        self.index(inputs[0].shape(), inputs[1].shape())?.forward(ctx, &inputs[..1], outputs)
    }
    fn view(&self, inputs: &[NDArray]) -> Option<Result<NDArray>> {
        Some(self.index(inputs[0].shape(), inputs[1].shape()).and_then(|op| inputs[0].slice(&op.args)))
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], outputs: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let op = self.index(&g.shape(inputs[0]), &g.shape(inputs[1]))?;
        let mut gx = op.grad(g, &inputs[..1], outputs, og)?;
        gx.push(None);
        Ok(gx)
    }
}

/// `slice`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct SliceParams {
    /// Start index per axis (None: from the start).
    pub begin: Vec<Option<i64>>,
    /// Stop index per axis, exclusive (None: to the end).
    pub end: Vec<Option<i64>>,
    /// Step per axis (None or absent: 1).
    #[param(default = Vec::new())]
    pub step: Vec<Option<i64>>,
}

/// `slice_axis`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct SliceAxisParams {
    /// The axis to slice.
    pub axis: i64,
    /// Start index (negative counts from the end).
    pub begin: i64,
    /// Stop index, exclusive (None: to the end; MXNet requires it, ferrograd defaults to None).
    #[param(default = None)]
    pub end: Option<i64>,
}

/// `slice_like`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct SliceLikeParams {
    /// Axes cut to shape_like's sizes (empty: every axis; negatives count from the end).
    #[param(default = Vec::new())]
    pub axes: Vec<i64>,
}

fn build_slice(a: &Attrs) -> Result<OpRef> {
    let SliceParams { begin: b, end: e, step: s } = SliceParams::parse(a)?;
    if b.len() != e.len() || (!s.is_empty() && s.len() != b.len()) {
        return Err(Error::Value(format!("slice: begin {b:?}, end {e:?} and step {s:?} must have equal lengths")));
    }
    let args = b
        .iter()
        .zip(&e)
        .enumerate()
        .map(|(i, (&start, &stop))| {
            let step = s.get(i).copied().flatten().unwrap_or(1);
            if step == 0 {
                return Err(Error::Value("slice: step cannot be 0".into()));
            }
            Ok(SliceArg::Range { start, stop, step })
        })
        .collect::<Result<_>>()?;
    Ok(Arc::new(BasicIndex { args }))
}

pub fn slice_like_op(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(SliceLike { axes: SliceLikeParams::parse(a)?.axes }))
}
/// The slicing ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "slice",
        aliases: &["crop"],
        args: &["data"],
        doc: "Basic slice with begin/end/step per axis.",
        params: SliceParams::schema,
        build: build_slice,
    },
    OpDef {
        name: "slice_axis",
        aliases: &[],
        args: &["data"],
        doc: "Slice along one axis.",
        params: SliceAxisParams::schema,
        build: |a| {
            let p = SliceAxisParams::parse(a)?;
            Ok(std::sync::Arc::new(SliceAxis { axis: p.axis, begin: p.begin, end: p.end }))
        },
    },
    OpDef {
        name: "slice_like",
        aliases: &[],
        args: &["data", "shape_like"],
        doc: "Slice data to the shape of shape_like on the given axes (all when empty).",
        params: SliceLikeParams::schema,
        build: slice_like_op,
    },
];
