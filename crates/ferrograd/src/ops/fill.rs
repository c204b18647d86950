//! Ops whose values come from shapes and parameters only: `zeros_like`, `ones_like`, the input-less
//! constants `_zeros`, `_ones`, `_full` (behind `sym.zeros`/`ones`/`full`) and `shape_array`,
//! `size_array`. None is differentiable in its input's values.

use std::sync::Arc;

use super::common::sizes;
use super::params::{NoParams, OpDef, OpParams};
use super::{AttrValue, Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::dtype::DType;
use crate::error::Result;
use crate::ndarray::{Meta, NDArray};

/// An array shaped like the input filled with `value` (`zeros_like`, `ones_like`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fill {
    pub value: f64,
}

impl Op for Fill {
    fn name(&self) -> &'static str {
        if self.value == 0.0 {
            "zeros_like"
        } else if self.value == 1.0 {
            "ones_like"
        } else {
            "_full_like"
        }
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        if self.value == 0.0 || self.value == 1.0 {
            vec![]
        } else {
            vec![("fill_value", AttrValue::Float(self.value).to_mx_string())]
        }
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        Ok(vec![inputs[0].clone()])
    }
    fn forward(&self, _ctx: &Ctx, _inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        outputs[0].fill_scalar(self.value);
        Ok(())
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![None])
    }
}

/// `_zeros` / `_ones` / `_full(value)`: a constant array of `shape` and `dtype`, no inputs.
#[derive(Clone, Debug, PartialEq)]
pub struct Constant {
    /// `_full` (else `_ones` for 1, `_zeros` for 0).
    pub full: bool,
    pub value: f64,
    pub shape: Vec<usize>,
    pub dtype: DType,
}

impl Op for Constant {
    fn name(&self) -> &'static str {
        if self.full {
            "_full"
        } else if self.value == 1.0 {
            "_ones"
        } else {
            "_zeros"
        }
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &[]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let shape: Vec<i64> = self.shape.iter().map(|&d| d as i64).collect();
        let mut v = vec![("shape", super::attrs::fmt_tuple(&shape)), ("dtype", self.dtype.name().into())];
        if self.full {
            v.push(("value", super::AttrValue::Float(self.value).to_mx_string()));
        }
        v
    }
    fn fixed_dtype(&self) -> Option<DType> {
        Some(self.dtype)
    }
    fn infer(&self, _inputs: &[Meta]) -> Result<Vec<Meta>> {
        crate::ndarray::checked_numel(self.name(), &self.shape)?;
        Ok(vec![Meta::new(&self.shape, self.dtype)])
    }
    fn forward(&self, _ctx: &Ctx, _inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        outputs[0].fill_scalar(self.value);
        Ok(())
    }
    fn differentiable(&self) -> bool {
        false
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![])
    }
}

/// `shape_array(data)` (the shape as int64, `(ndim,)`) and `size_array(data)` (the element
/// count as int64, `(1,)`); neither reads the data nor is differentiable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShapeInfo {
    pub size: bool,
}

impl ShapeInfo {
    fn values(&self, shape: &[usize]) -> Vec<i64> {
        if self.size {
            vec![shape.iter().product::<usize>() as i64]
        } else {
            shape.iter().map(|&d| d as i64).collect()
        }
    }
}

impl Op for ShapeInfo {
    fn name(&self) -> &'static str {
        if self.size {
            "size_array"
        } else {
            "shape_array"
        }
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let n = if self.size { 1 } else { inputs[0].shape.len() };
        Ok(vec![Meta::new(&[n], DType::I64)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let v = self.values(inputs[0].shape());
        outputs[0].write_out::<i64, _>(|o| o.copy_from_slice(&v))
    }
    fn differentiable(&self) -> bool {
        false
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![None])
    }
}

/// `_zeros`'s and `_ones`' parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct ConstantParams {
    /// The output shape (None: an empty tuple).
    #[param(default = None)]
    pub shape: Option<Vec<i64>>,
    /// Device of the output (accepted and ignored: ferrograd computes on the CPU).
    #[param(default = String::new())]
    pub ctx: String,
    /// The output dtype.
    #[param(default = DType::F32)]
    pub dtype: DType,
}

/// `_full`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct FullParams {
    /// The output shape (None: an empty tuple).
    #[param(default = None)]
    pub shape: Option<Vec<i64>>,
    /// Device of the output (accepted and ignored: ferrograd computes on the CPU).
    #[param(default = String::new())]
    pub ctx: String,
    /// The output dtype.
    #[param(default = DType::F32)]
    pub dtype: DType,
    /// The value every element takes.
    pub value: f64,
}

fn build_fill(a: &Attrs) -> Result<OpRef> {
    NoParams::parse(a)?;
    Ok(Arc::new(Fill { value: if a.op == "ones_like" { 1.0 } else { 0.0 } }))
}

fn constant_op(a: &super::Attrs) -> Result<OpRef> {
    let (shape, dtype, value) = if a.op == "_full" {
        let p = FullParams::parse(a)?;
        (p.shape, p.dtype, p.value)
    } else {
        let p = ConstantParams::parse(a)?;
        (p.shape, p.dtype, if a.op == "_ones" { 1.0 } else { 0.0 })
    };
    let shape = sizes(&a.op, "shape", &shape.unwrap_or_default())?;
    Ok(Arc::new(Constant { full: a.op == "_full", value, shape, dtype }))
}
/// The fill ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "zeros_like",
        aliases: &[],
        args: &["data"],
        doc: "Zeros with the input's shape and dtype.",
        params: NoParams::schema,
        build: build_fill,
    },
    OpDef {
        name: "ones_like",
        aliases: &[],
        args: &["data"],
        doc: "Ones with the input's shape and dtype.",
        params: NoParams::schema,
        build: build_fill,
    },
    OpDef {
        name: "_zeros",
        aliases: &[],
        args: &[],
        doc: "An array of zeros of the given shape and dtype (no inputs).",
        params: ConstantParams::schema,
        build: constant_op,
    },
    OpDef {
        name: "_ones",
        aliases: &[],
        args: &[],
        doc: "An array of ones of the given shape and dtype (no inputs).",
        params: ConstantParams::schema,
        build: constant_op,
    },
    OpDef {
        name: "_full",
        aliases: &[],
        args: &[],
        doc: "An array of the given shape and dtype filled with value (no inputs).",
        params: FullParams::schema,
        build: constant_op,
    },
    OpDef {
        name: "shape_array",
        aliases: &[],
        args: &["data"],
        doc: "The shape of data as a 1-D int64 array (not differentiable).",
        params: NoParams::schema,
        build: |a| {
            NoParams::parse(a)?;
            Ok(Arc::new(ShapeInfo { size: false }))
        },
    },
    OpDef {
        name: "size_array",
        aliases: &[],
        args: &["data"],
        doc: "The number of elements of data as a 1-element int64 array (not differentiable).",
        params: NoParams::schema,
        build: |a| {
            NoParams::parse(a)?;
            Ok(Arc::new(ShapeInfo { size: true }))
        },
    },
];
