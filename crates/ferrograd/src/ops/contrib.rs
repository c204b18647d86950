//! Small `contrib` operators of MXNet 1.x: `quadratic`, `div_sqrt_dim`, `arange_like`,
//! `index_array`, `index_copy`, `gradientmultiplier`, the straight-through estimators
//! `round_ste`/`sign_ste`, `allclose` and the graph-only `boolean_mask` node (registered as
//! `_contrib_<name>`, shown as `nd.contrib.<name>`).

use std::sync::Arc;

use ferrograd_kernels::par::{self, Cost};
use ferrograd_kernels::unary_binary::unary;
use ferrograd_kernels::Element;

use super::common::{dense, split3};
use super::indexing::{index_values, Take, TakeMode};
use super::params::{parsed_op, NoParams, OpDef, OpParams};
use super::{Ctx, Grad, Op, Saves, Val};
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::view::normalize_axis;
use crate::ndarray::{Meta, NDArray};
use crate::with_dtype;

/// `quadratic(data, a, b, c)`: `a·x² + b·x + c` elementwise (evaluated in double precision, then
/// rounded to the data's dtype, as MXNet does for integer data).
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct Quadratic {
    /// Coefficient of the quadratic term.
    #[param(default = 0.0)]
    pub a: f64,
    /// Coefficient of the linear term.
    #[param(default = 0.0)]
    pub b: f64,
    /// Constant term.
    #[param(default = 0.0)]
    pub c: f64,
}

impl Op for Quadratic {
    fn name(&self) -> &'static str {
        "_contrib_quadratic"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.to_attrs()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        Ok(vec![inputs[0].clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let x = &inputs[0];
        let src = x.snapshot();
        let (a, b, c) = (self.a, self.b, self.c);
        with_dtype!(x.dtype(), T => {
            let s = src.typed::<T>()?;
            outputs[0].write_out::<T, _>(|o| {
                unary(s, x.layout(), o, Cost::Light, move |v: T| {
                    let v = v.to_f64();
                    T::from_f64(a * v * v + b * v + c)
                })
            })
        })
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        // d/dx = 2a·x + b, built from registered ops so it differentiates again.
        let slope = g.mul_scalar(inputs[0], 2.0 * self.a)?;
        let slope = g.add_scalar(slope, self.b)?;
        Ok(vec![Some(g.mul(og[0], slope)?)])
    }
}

/// `div_sqrt_dim(data)`: `data / sqrt(data.shape[-1])` (the attention-score scaling). The divisor is
/// rounded to the data's dtype first, as in MXNet (so integer data is divided by a whole number).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DivSqrtDim;

impl DivSqrtDim {
    fn last_dim(shape: &[usize]) -> Result<usize> {
        shape.last().copied().ok_or_else(|| {
            Error::Shape("_contrib_div_sqrt_dim: data must have at least one dimension, got shape ()".into())
        })
    }
}

impl Op for DivSqrtDim {
    fn name(&self) -> &'static str {
        "_contrib_div_sqrt_dim"
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        Self::last_dim(&inputs[0].shape)?;
        Ok(vec![inputs[0].clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let x = &inputs[0];
        let root = (Self::last_dim(x.shape())? as f64).sqrt();
        let src = x.snapshot();
        with_dtype!(x.dtype(), T => {
            let s = src.typed::<T>()?;
            let d = T::from_f64(root).to_f64();
            outputs[0].write_out::<T, _>(|o| {
                unary(s, x.layout(), o, Cost::Light, move |v: T| T::from_f64(v.to_f64() / d))
            })
        })
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, _i: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        // Linear, and the gradient has the data's last dimension: the same scaling again.
        Ok(vec![Some(g.apply1(DivSqrtDim, &[og[0]])?)])
    }
}

/// `arange_like(data, start, step, repeat, axis)`: evenly spaced values shaped like `data` (or,
/// with `axis`, a vector as long as that axis), each value repeated `repeat` times. Values are
/// computed in the data's dtype (`start` and `step` rounded to it first, as in MXNet).
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct ArangeLike {
    /// Start of the interval (included).
    #[param(default = 0.0)]
    pub start: f64,
    /// Spacing between values.
    #[param(default = 1.0)]
    pub step: f64,
    /// How many times each value is repeated.
    #[param(default = 1)]
    pub repeat: i64,
    /// Context of the output (accepted; ferrograd runs on the CPU).
    #[param(default = String::new())]
    pub ctx: String,
    /// Arange along the size of this axis of data (a 1-D output); all of data's shape if None.
    #[param(default = None)]
    pub axis: Option<i64>,
}

impl Op for ArangeLike {
    fn name(&self) -> &'static str {
        "_contrib_arange_like"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.to_attrs()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        if self.repeat < 1 {
            return Err(Error::Value(format!("_contrib_arange_like: repeat must be >= 1, got {}", self.repeat)));
        }
        let s = &inputs[0].shape;
        let shape = match self.axis {
            Some(axis) => vec![s[normalize_axis(self.name(), axis, s.len())?]],
            None => s.to_vec(),
        };
        Ok(vec![Meta::new(&shape, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, _inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let repeat = self.repeat as usize;
        with_dtype!(outputs[0].dtype(), T => {
            let (start, step) = (T::from_f64(self.start).to_f64(), T::from_f64(self.step).to_f64());
            outputs[0].write_out::<T, _>(|o| {
                par::for_each_chunk(o, Cost::Light, |first, chunk| {
                    for (i, v) in chunk.iter_mut().enumerate() {
                        let k = T::from_f64(((first + i) / repeat) as f64).to_f64();
                        *v = T::from_f64(start + k * step);
                    }
                })
            })
        })
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![None]) // the values do not depend on data's values: a zero gradient, as in MXNet
    }
}

/// `index_array(data, axes)`: int64 array of shape `data.shape + (m,)` holding each element's
/// coordinates (all of them, or those of `axes` in that order).
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct IndexArray {
    /// The axes whose coordinates are listed (negative values count from the end); all if None.
    #[param(default = None)]
    pub axes: Option<Vec<i64>>,
}

impl IndexArray {
    fn axes(&self, ndim: usize) -> Result<Vec<usize>> {
        match &self.axes {
            None => Ok((0..ndim).collect()),
            Some(a) => a.iter().map(|&x| normalize_axis("_contrib_index_array", x, ndim)).collect(),
        }
    }
}

impl Op for IndexArray {
    fn name(&self) -> &'static str {
        "_contrib_index_array"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.to_attrs()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let s = &inputs[0].shape;
        let mut shape = s.to_vec();
        shape.push(self.axes(s.len())?.len());
        Ok(vec![Meta::new(&shape, DType::I64)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let shape = inputs[0].shape().to_vec();
        let axes = self.axes(shape.len())?;
        let m = axes.len();
        // Stride of each axis in the data's row-major order.
        let mut strides = vec![1usize; shape.len()];
        for d in (0..shape.len().saturating_sub(1)).rev() {
            strides[d] = strides[d + 1] * shape[d + 1];
        }
        outputs[0].write_out::<i64, _>(|o| {
            if m == 0 {
                return;
            }
            par::for_each_chunk(o, Cost::Light, |first, chunk| {
                for (j, v) in chunk.iter_mut().enumerate() {
                    let (elem, k) = ((first + j) / m, (first + j) % m);
                    let d = axes[k];
                    *v = ((elem / strides[d]) % shape[d]) as i64;
                }
            })
        })
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![None]) // coordinates do not depend on data's values
    }
}

/// `index_copy(old_tensor, index_vector, new_tensor)`: a copy of `old_tensor` whose row
/// `index_vector[i]` is row `i` of `new_tensor`. Indices must lie in `[0, old.shape[0])` (MXNet
/// skips larger ones silently; ferrograd raises).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexCopy;

impl IndexCopy {
    const OP: &'static str = "_contrib_index_copy";

    fn check(old: &Meta, index: &Meta, new: &Meta) -> Result<()> {
        let shapes = || {
            format!(
                "old_tensor {}, index_vector {}, new_tensor {}",
                fmt_shape(&old.shape),
                fmt_shape(&index.shape),
                fmt_shape(&new.shape)
            )
        };
        if old.shape.is_empty() || index.shape.len() != 1 || new.shape.is_empty() {
            return Err(Error::Shape(format!(
                "{}: index_vector must be 1-D and the tensors at least 1-D, got {}",
                Self::OP,
                shapes()
            )));
        }
        if index.shape[0] != new.shape[0] || old.shape[1..] != new.shape[1..] || new.shape[0] > old.shape[0] {
            return Err(Error::Shape(format!(
                "{}: index_vector needs one entry per row of new_tensor, whose rows must have old_tensor's \
                 row shape (and be no more than its rows), got {}",
                Self::OP,
                shapes()
            )));
        }
        if old.dtype != new.dtype {
            return Err(Error::DType(format!(
                "{}: old_tensor ({}) and new_tensor ({}) must have one dtype",
                Self::OP,
                old.dtype,
                new.dtype
            )));
        }
        Ok(())
    }
}

impl Op for IndexCopy {
    fn name(&self) -> &'static str {
        Self::OP
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["old_tensor", "index_vector", "new_tensor"]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        Self::check(&inputs[0], &inputs[1], &inputs[2])?;
        Ok(vec![inputs[0].clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (old, new) = (&inputs[0], &inputs[2]);
        let (_, rows, inner) = split3(old.shape(), 0);
        let idx = index_values(&inputs[1])?;
        let dst = idx
            .iter()
            .map(|&i| {
                usize::try_from(i).ok().filter(|&r| r < rows).ok_or_else(|| {
                    Error::Index(format!("{}: index {i} is out of range for old_tensor with {rows} rows", Self::OP))
                })
            })
            .collect::<Result<Vec<usize>>>()?;
        let ((ob, or), (nb, nr)) = (dense(old), dense(new));
        with_dtype!(old.dtype(), T => {
            let (o_src, n_src) = (&ob.typed::<T>()?[or], &nb.typed::<T>()?[nr]);
            outputs[0].write_out::<T, _>(|o| {
                o.copy_from_slice(o_src);
                for (r, &d) in dst.iter().enumerate() {
                    o[d * inner..(d + 1) * inner].copy_from_slice(&n_src[r * inner..(r + 1) * inner]);
                }
            })
        })
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        // Rows that were overwritten get no gradient on the old tensor; the new rows take theirs.
        let zeros = g.zeros_like(inputs[2])?;
        let old = g.apply1(IndexCopy, &[og[0], inputs[1], zeros])?;
        let new = g.apply1(Take { axis: 0, mode: TakeMode::Raise }, &[og[0], inputs[1]])?;
        Ok(vec![Some(old), None, Some(new)])
    }
}

/// `gradientmultiplier(data, scalar)`: the identity forward; backward multiplies the gradient by
/// `scalar` (gradient reversal with a negative one).
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct GradientMultiplier {
    /// The factor applied to the gradient.
    #[param(default = 1.0)]
    pub scalar: f64,
    /// Whether scalar was given as an integer (accepted; MXNet's scalar-op convention).
    #[param(default = true)]
    pub is_int: bool,
}

impl Op for GradientMultiplier {
    fn name(&self) -> &'static str {
        "_contrib_gradientmultiplier"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.to_attrs()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        Ok(vec![inputs[0].clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        outputs[0].write_from(&inputs[0])
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, _i: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![Some(g.mul_scalar(og[0], self.scalar)?)])
    }
}

/// A straight-through estimator: `round` or `sign` forward, the identity's gradient backward.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StraightThrough {
    pub sign: bool,
}

impl Op for StraightThrough {
    fn name(&self) -> &'static str {
        if self.sign {
            "_contrib_sign_ste"
        } else {
            "_contrib_round_ste"
        }
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        Ok(vec![inputs[0].clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let x = &inputs[0];
        let src = x.snapshot();
        let sign = self.sign;
        with_dtype!(x.dtype(), T => {
            let s = src.typed::<T>()?;
            outputs[0].write_out::<T, _>(|o| {
                unary(s, x.layout(), o, Cost::Light, move |v: T| {
                    let v = v.to_f64();
                    // round: halves away from zero; sign: 0 for zero and NaN, as MXNet's.
                    let r = if !sign { v.round() } else if v > 0.0 { 1.0 } else if v < 0.0 { -1.0 } else { 0.0 };
                    T::from_f64(r)
                })
            })
        })
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![Some(og[0])])
    }
}

/// `allclose(a, b, rtol, atol, equal_nan)`: a 0-d uint8, 1 when `|a - b| <= atol + rtol·|b|`
/// everywhere (NaNs equal to NaNs with `equal_nan`).
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct AllClose {
    /// Relative tolerance.
    #[param(default = 1e-5)]
    pub rtol: f64,
    /// Absolute tolerance.
    #[param(default = 1e-8)]
    pub atol: f64,
    /// Whether NaNs in a equal NaNs in b.
    #[param(default = true)]
    pub equal_nan: bool,
}

impl Op for AllClose {
    fn name(&self) -> &'static str {
        "_contrib_allclose"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["a", "b"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.to_attrs()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        if inputs[0].shape != inputs[1].shape {
            return Err(Error::Shape(format!(
                "_contrib_allclose: a and b must have one shape, got {} and {}",
                fmt_shape(&inputs[0].shape),
                fmt_shape(&inputs[1].shape)
            )));
        }
        Ok(vec![Meta::new(&[], DType::U8)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (a, b) = (inputs[0].to_f64_vec(), inputs[1].to_f64_vec());
        let close = a.iter().zip(&b).all(|(&x, &y)| {
            if x.is_nan() || y.is_nan() {
                self.equal_nan && x.is_nan() && y.is_nan()
            } else {
                x == y || (x - y).abs() <= self.atol + self.rtol * y.abs()
            }
        });
        outputs[0].write_out::<u8, _>(|o| o[0] = u8::from(close))
    }
    fn differentiable(&self) -> bool {
        false
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![None, None])
    }
}

/// `boolean_mask(data, index, axis=0)` as a graph node. Its output length along `axis` is the
/// number of nonzero entries of `index`, a value that static shape planning cannot know, so the
/// node exists to build and load graphs that mention it: inferring its shapes (and so binding,
/// running or hybridizing it) fails saying so. `nd.contrib.boolean_mask` runs it imperatively.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct BooleanMask {
    /// Axis of data that the 1-D index selects along.
    #[param(default = 0)]
    pub axis: i64,
}

impl BooleanMask {
    fn data_dependent(&self, inputs: &[String]) -> Error {
        Error::Shape(format!(
            "_contrib_boolean_mask (contrib.boolean_mask): the output shape depends on the values of index, \
             so it cannot be inferred in a symbol graph, an executor or a hybridized block (data {}, index {}, \
             axis={}); run mx.nd.contrib.boolean_mask imperatively instead (outside hybridize)",
            inputs.first().map_or("?", String::as_str),
            inputs.get(1).map_or("?", String::as_str),
            self.axis
        ))
    }
}

impl Op for BooleanMask {
    fn name(&self) -> &'static str {
        "_contrib_boolean_mask"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["data", "index"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.to_attrs()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let shapes: Vec<String> = inputs.iter().map(|m| format!("shape {}", fmt_shape(&m.shape))).collect();
        Err(self.data_dependent(&shapes))
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], _outputs: &mut [NDArray]) -> Result<()> {
        let shapes: Vec<String> = inputs.iter().map(|x| format!("shape {}", fmt_shape(x.shape()))).collect();
        Err(self.data_dependent(&shapes))
    }
    fn differentiable(&self) -> bool {
        false
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![None; i.len()])
    }
}

/// The `contrib` ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "_contrib_quadratic",
        aliases: &[],
        args: &["data"],
        doc: "a·x² + b·x + c, elementwise.",
        params: Quadratic::schema,
        build: parsed_op::<Quadratic>,
    },
    OpDef {
        name: "_contrib_div_sqrt_dim",
        aliases: &[],
        args: &["data"],
        doc: "data / sqrt(data.shape[-1]): the attention-score scaling.",
        params: NoParams::schema,
        build: |a| {
            NoParams::parse(a)?;
            Ok(Arc::new(DivSqrtDim))
        },
    },
    OpDef {
        name: "_contrib_arange_like",
        aliases: &[],
        args: &["data"],
        doc: "Evenly spaced values shaped like data (or as long as one of its axes).",
        params: ArangeLike::schema,
        build: parsed_op::<ArangeLike>,
    },
    OpDef {
        name: "_contrib_index_array",
        aliases: &[],
        args: &["data"],
        doc: "The coordinates of every element of data (int64, one more axis).",
        params: IndexArray::schema,
        build: parsed_op::<IndexArray>,
    },
    OpDef {
        name: "_contrib_index_copy",
        aliases: &[],
        args: &["old_tensor", "index_vector", "new_tensor"],
        doc: "old_tensor with row index_vector[i] replaced by row i of new_tensor.",
        params: NoParams::schema,
        build: |a| {
            NoParams::parse(a)?;
            Ok(Arc::new(IndexCopy))
        },
    },
    OpDef {
        name: "_contrib_gradientmultiplier",
        aliases: &[],
        args: &["data"],
        doc: "Identity forward; the gradient is multiplied by scalar.",
        params: GradientMultiplier::schema,
        build: parsed_op::<GradientMultiplier>,
    },
    OpDef {
        name: "_contrib_round_ste",
        aliases: &[],
        args: &["data"],
        doc: "round forward, identity gradient (straight-through estimator).",
        params: NoParams::schema,
        build: |a| {
            NoParams::parse(a)?;
            Ok(Arc::new(StraightThrough { sign: false }))
        },
    },
    OpDef {
        name: "_contrib_sign_ste",
        aliases: &[],
        args: &["data"],
        doc: "sign forward, identity gradient (straight-through estimator).",
        params: NoParams::schema,
        build: |a| {
            NoParams::parse(a)?;
            Ok(Arc::new(StraightThrough { sign: true }))
        },
    },
    OpDef {
        name: "_contrib_allclose",
        aliases: &[],
        args: &["a", "b"],
        doc: "1 (a 0-d uint8) when |a - b| <= atol + rtol·|b| everywhere, else 0.",
        params: AllClose::schema,
        build: parsed_op::<AllClose>,
    },
    OpDef {
        name: "_contrib_boolean_mask",
        aliases: &[],
        args: &["data", "index"],
        doc: "The slices of data along axis where index is nonzero; the output shape depends on index's values, \
              so only nd.contrib.boolean_mask runs it (graphs fail at shape inference).",
        params: BooleanMask::schema,
        build: parsed_op::<BooleanMask>,
    },
];
