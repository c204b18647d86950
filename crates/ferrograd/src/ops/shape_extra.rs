//! Axis insertion/removal and single-axis slicing (views), with reshape/index gradients.

use super::params::{OpDef, OpParams};
use super::shape::BasicIndex;
use super::{Ctx, Grad, Op, Saves, Val};
use crate::error::Result;
use crate::ndarray::view::normalize_axis;
use crate::ndarray::{Meta, NDArray, SliceArg};

/// `expand_dims(axis)` (view).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExpandDims {
    pub axis: i64,
}

impl Op for ExpandDims {
    fn name(&self) -> &'static str {
        "expand_dims"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("axis", self.axis.to_string())]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let mut s = inputs[0].shape.to_vec();
        s.insert(normalize_axis("expand_dims", self.axis, s.len() + 1)?, 1);
        Ok(vec![Meta::new(&s, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let v = inputs[0].expand_dims(self.axis)?;
        outputs[0].write_from(&v)?;
        Ok(())
    }
    fn view(&self, inputs: &[NDArray]) -> Option<Result<NDArray>> {
        Some(inputs[0].expand_dims(self.axis))
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let s = g.shape(inputs[0]);
        Ok(vec![Some(g.reshape(og[0], &s)?)])
    }
}

/// `squeeze(axis)` (view); all size-1 axes when `axis` is `None`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Squeeze {
    pub axis: Option<Vec<i64>>,
}

impl Op for Squeeze {
    fn name(&self) -> &'static str {
        "squeeze"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.axis.as_ref().map(|a| vec![("axis", super::attrs::fmt_tuple(a))]).unwrap_or_default()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let probe = NDArray::zeros(&[], inputs[0].dtype).broadcast_to(&inputs[0].shape)?;
        let mut s = probe.squeeze(self.axis.as_deref())?.shape().to_vec();
        if s.is_empty() && !inputs[0].shape.is_empty() && !crate::np_shape() {
            s = vec![1];
        }
        Ok(vec![Meta::new(&s, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let v = inputs[0].reshape(outputs[0].shape())?;
        outputs[0].write_from(&v)?;
        Ok(())
    }
    fn view(&self, inputs: &[NDArray]) -> Option<Result<NDArray>> {
        Some(self.infer(&[inputs[0].meta()]).and_then(|m| inputs[0].reshape(&m[0].shape)))
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let s = g.shape(inputs[0]);
        Ok(vec![Some(g.reshape(og[0], &s)?)])
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

/// `expand_dims`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct ExpandDimsParams {
    /// Where the new size-1 axis goes (negative counts from the end of the output).
    pub axis: i64,
}

/// `squeeze`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct SqueezeParams {
    /// The size-1 axes to remove; None removes all of them.
    #[param(default = None)]
    pub axis: Option<Vec<i64>>,
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

/// The axis ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "expand_dims",
        aliases: &[],
        args: &["data"],
        doc: "Insert a size-1 axis.",
        params: ExpandDimsParams::schema,
        build: |a| Ok(std::sync::Arc::new(ExpandDims { axis: ExpandDimsParams::parse(a)?.axis })),
    },
    OpDef {
        name: "squeeze",
        aliases: &[],
        args: &["data"],
        doc: "Remove size-1 axes.",
        params: SqueezeParams::schema,
        build: |a| Ok(std::sync::Arc::new(Squeeze { axis: SqueezeParams::parse(a)?.axis })),
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
];
