//! Joining and splitting: `Concat`, `stack`, `SliceChannel` (split), `_split_v2` and `add_n`.
//!
//! Forwards copy through contiguous blocks (parallel over the output via `par`); every gradient is
//! built from slices, layout ops and sums, so each op is differentiable any number of times.

use std::sync::Arc;

use ferrograd_kernels::par::{self, Cost};

use super::binary::Num;
use super::common::dense;
use super::params::{OpDef, OpParams};
use super::slice::SliceAxis;
use super::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::view::normalize_axis;
use crate::ndarray::{Meta, NDArray, SliceArg};
use crate::with_dtype;

fn shapes_of(inputs: &[Meta]) -> String {
    inputs.iter().map(|m| fmt_shape(&m.shape)).collect::<Vec<_>>().join(", ")
}

fn check_num_args(op: &str, num_args: Option<usize>, n: usize) -> Result<()> {
    match num_args {
        Some(k) if k != n => Err(Error::Value(format!("{op}: num_args={k} but {n} input(s) were given"))),
        _ => Ok(()),
    }
}

/// Copies `parts` (contiguous, all of `out`'s rank, equal except along `axis`) side by side along
/// `axis` into `out`.
fn join_into(parts: &[NDArray], axis: usize, out: &mut NDArray) -> Result<()> {
    let shape = out.shape().to_vec();
    let inner: usize = shape[axis + 1..].iter().product();
    let total = shape[axis] * inner;
    let dense: Vec<_> = parts.iter().map(dense).collect();
    let mut offsets = Vec::with_capacity(parts.len() + 1);
    let mut acc = 0;
    for p in parts {
        offsets.push(acc);
        acc += p.shape()[axis] * inner;
    }
    offsets.push(acc);
    with_dtype!(out.dtype(), T => {
        let srcs: Vec<&[T]> =
            dense.iter().map(|(b, r)| b.typed::<T>().map(|s| &s[r.clone()])).collect::<Result<_>>()?;
        out.write_out::<T, _>(|o| {
            if total == 0 {
                return;
            }
            par::for_each_chunk(o, Cost::Light, |start, chunk| {
                let (mut pos, end) = (start, start + chunk.len());
                while pos < end {
                    let (row, col) = (pos / total, pos % total);
                    let k = offsets[..parts.len()].partition_point(|&x| x <= col) - 1;
                    let w = offsets[k + 1] - offsets[k];
                    let c = col - offsets[k];
                    let n = (w - c).min(end - pos);
                    let s = row * w + c;
                    chunk[pos - start..pos - start + n].copy_from_slice(&srcs[k][s..s + n]);
                    pos += n;
                }
            });
        })
    })
}

/// `Concat` / `concat(*data, dim=1, num_args)`: join along an existing axis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Concat {
    pub dim: i64,
    pub num_args: Option<usize>,
}

impl Op for Concat {
    fn name(&self) -> &'static str {
        "Concat"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["*data"]
    }
    fn variadic(&self) -> bool {
        true
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = vec![("dim", self.dim.to_string())];
        if let Some(n) = self.num_args {
            v.push(("num_args", n.to_string()));
        }
        v
    }
    fn infer_partial(
        &self,
        ins: &mut [super::partial::PartialShape],
        outs: &mut [super::partial::PartialShape],
    ) -> Result<()> {
        super::partial::concat(self.dim, ins, outs)
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        check_num_args("Concat", self.num_args, inputs.len())?;
        let first = inputs.first().ok_or_else(|| Error::Value("Concat: expected at least one input".into()))?;
        let axis = normalize_axis("Concat", self.dim, first.shape.len())?;
        let mut shape = first.shape.to_vec();
        shape[axis] = 0;
        for (i, m) in inputs.iter().enumerate() {
            let ok = m.shape.len() == shape.len()
                && m.shape.iter().zip(&first.shape).enumerate().all(|(d, (a, b))| d == axis || a == b);
            if !ok {
                return Err(Error::Shape(format!(
                    "Concat: input {i} (data{i}) has shape {}, which does not match input 0 of shape {} outside \
                     dimension {axis} (dim={}); input shapes: {}",
                    fmt_shape(&m.shape),
                    fmt_shape(&first.shape),
                    self.dim,
                    shapes_of(inputs)
                )));
            }
            if m.dtype != first.dtype {
                return Err(Error::DType(format!(
                    "Concat: input {i} has dtype {}, input 0 has {}; all inputs must share one dtype",
                    m.dtype, first.dtype
                )));
            }
            shape[axis] += m.shape[axis];
        }
        Ok(vec![Meta::new(&shape, first.dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let axis = normalize_axis("Concat", self.dim, inputs[0].ndim())?;
        join_into(inputs, axis, &mut outputs[0])
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let axis = self.dim;
        let mut begin = 0i64;
        let mut out = Vec::with_capacity(inputs.len());
        for &x in inputs {
            let s = g.shape(x);
            let n = s[normalize_axis("Concat", axis, s.len())?] as i64;
            out.push(Some(g.apply1(SliceAxis { axis, begin, end: Some(begin + n) }, &[og[0]])?));
            begin += n;
        }
        Ok(out)
    }
}

/// `stack(*data, axis=0, num_args)`: join along a new axis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stack {
    pub axis: i64,
    pub num_args: Option<usize>,
}

impl Op for Stack {
    fn name(&self) -> &'static str {
        "stack"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["*data"]
    }
    fn variadic(&self) -> bool {
        true
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = vec![("axis", self.axis.to_string())];
        if let Some(n) = self.num_args {
            v.push(("num_args", n.to_string()));
        }
        v
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        check_num_args("stack", self.num_args, inputs.len())?;
        let first = inputs.first().ok_or_else(|| Error::Value("stack: expected at least one input".into()))?;
        for (i, m) in inputs.iter().enumerate() {
            if m.shape != first.shape {
                return Err(Error::Shape(format!(
                    "stack: all inputs must have the same shape, but input {i} has shape {} and input 0 has {}; \
                     input shapes: {}",
                    fmt_shape(&m.shape),
                    fmt_shape(&first.shape),
                    shapes_of(inputs)
                )));
            }
            if m.dtype != first.dtype {
                return Err(Error::DType(format!(
                    "stack: input {i} has dtype {}, input 0 has {}; all inputs must share one dtype",
                    m.dtype, first.dtype
                )));
            }
        }
        let mut shape = first.shape.to_vec();
        shape.insert(normalize_axis("stack", self.axis, shape.len() + 1)?, inputs.len());
        Ok(vec![Meta::new(&shape, first.dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let axis = normalize_axis("stack", self.axis, inputs[0].ndim() + 1)?;
        let parts = inputs.iter().map(|x| x.expand_dims(axis as i64)).collect::<Result<Vec<_>>>()?;
        join_into(&parts, axis, &mut outputs[0])
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let mut out = Vec::with_capacity(inputs.len());
        for (i, &x) in inputs.iter().enumerate() {
            let s = g.shape(x);
            let i = i as i64;
            let part = g.apply1(SliceAxis { axis: self.axis, begin: i, end: Some(i + 1) }, &[og[0]])?;
            out.push(Some(g.reshape(part, &s)?));
        }
        Ok(out)
    }
}

/// `SliceChannel` / `split(data, num_outputs, axis=1, squeeze_axis=False)`: equal parts along an
/// axis, one output each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SliceChannel {
    pub num_outputs: usize,
    pub axis: i64,
    pub squeeze_axis: bool,
}

impl SliceChannel {
    /// (axis, part length, part shape before squeezing).
    fn parts(&self, shape: &[usize]) -> Result<(usize, usize, Vec<usize>)> {
        let axis = normalize_axis("SliceChannel", self.axis, shape.len())?;
        let n = self.num_outputs;
        if n == 0 || !shape[axis].is_multiple_of(n) {
            return Err(Error::Shape(format!(
                "SliceChannel: cannot split data of shape {} into num_outputs={n} equal parts along axis {axis} \
                 (size {})",
                fmt_shape(shape),
                shape[axis]
            )));
        }
        if shape[axis] == 0 && n > 1 << 16 {
            return Err(Error::Value(format!("SliceChannel: num_outputs={n} is too large")));
        }
        let len = shape[axis] / n;
        if self.squeeze_axis && len != 1 {
            return Err(Error::Shape(format!(
                "SliceChannel: squeeze_axis=True needs parts of size 1, but splitting data of shape {} into {n} \
                 parts along axis {axis} gives size {len}",
                fmt_shape(shape)
            )));
        }
        let mut part = shape.to_vec();
        part[axis] = len;
        Ok((axis, len, part))
    }

    fn out_shape(&self, part: &[usize], axis: usize) -> Vec<usize> {
        let mut s = part.to_vec();
        if self.squeeze_axis {
            s.remove(axis);
        }
        s
    }
}

impl Op for SliceChannel {
    fn name(&self) -> &'static str {
        "SliceChannel"
    }
    fn num_outputs(&self) -> usize {
        self.num_outputs
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = vec![("num_outputs", self.num_outputs.to_string()), ("axis", self.axis.to_string())];
        if self.squeeze_axis {
            v.push(("squeeze_axis", "True".into()));
        }
        v
    }
    fn infer_partial(
        &self,
        ins: &mut [super::partial::PartialShape],
        outs: &mut [super::partial::PartialShape],
    ) -> Result<()> {
        super::partial::slice_channel(self.num_outputs, self.axis, self.squeeze_axis, ins, outs)
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let (axis, _, part) = self.parts(&inputs[0].shape)?;
        let m = Meta::new(&self.out_shape(&part, axis), inputs[0].dtype);
        Ok(vec![m; self.num_outputs])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let x = &inputs[0];
        let (axis, len, _) = self.parts(x.shape())?;
        // Each part's row-major order is its output's (which drops the axis when squeezed).
        for (k, o) in outputs.iter_mut().enumerate() {
            let mut args = vec![SliceArg::Range { start: None, stop: None, step: 1 }; axis];
            let b = (k * len) as i64;
            args.push(SliceArg::Range { start: Some(b), stop: Some(b + len as i64), step: 1 });
            o.write_from(&x.slice(&args)?)?;
        }
        Ok(())
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let (axis, _, part) = self.parts(&g.shape(inputs[0]))?;
        let parts = og.iter().map(|&v| g.reshape(v, &part)).collect::<Result<Vec<_>>>()?;
        let op = Concat { dim: axis as i64, num_args: None };
        Ok(vec![Some(g.apply1(op, &parts)?)])
    }
}

/// `_split_v2(data, indices, axis=1, squeeze_axis=False, sections=0)`: parts of an axis, cut at
/// `indices` (starting at 0; the last part runs to the end) or, with `sections > 0`, into that many
/// parts whose sizes differ by at most one, the longer first (`numpy.array_split`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitV2 {
    pub indices: Vec<i64>,
    pub axis: i64,
    pub squeeze_axis: bool,
    /// 0: cut at `indices`.
    pub sections: usize,
}

impl SplitV2 {
    fn how(&self) -> String {
        if self.sections > 0 {
            format!("sections={}", self.sections)
        } else {
            format!("indices={}", super::params::fmt_tuple(&self.indices))
        }
    }

    /// The split axis and each part's `(begin, end)` along it, for data of `shape`.
    fn bounds(&self, shape: &[usize]) -> Result<(usize, Vec<(usize, usize)>)> {
        let axis = normalize_axis("_split_v2", self.axis, shape.len())?;
        let n = shape[axis];
        let mut parts = Vec::with_capacity(self.num_outputs());
        if let Some(base) = n.checked_div(self.sections) {
            let extra = n % self.sections;
            let mut begin = 0;
            for k in 0..self.sections {
                let len = base + usize::from(k < extra);
                parts.push((begin, begin + len));
                begin += len;
            }
        } else {
            let at = |k: usize| -> Result<usize> {
                let i = self.indices[k];
                usize::try_from(i).ok().filter(|&i| i <= n).ok_or_else(|| {
                    Error::Shape(format!(
                        "_split_v2: indices[{k}] = {i} is outside axis {axis} of size {n} (data shape {}, {})",
                        fmt_shape(shape),
                        self.how()
                    ))
                })
            };
            for k in 0..self.indices.len() {
                let begin = at(k)?;
                let end = if k + 1 < self.indices.len() { at(k + 1)? } else { n };
                if begin > end {
                    return Err(Error::Shape(format!(
                        "_split_v2: indices must not decrease, but indices[{}] = {end} follows {begin} (data shape \
                         {}, axis {axis}, {})",
                        k + 1,
                        fmt_shape(shape),
                        self.how()
                    )));
                }
                parts.push((begin, end));
            }
        }
        if self.squeeze_axis {
            if let Some((k, (b, e))) = parts.iter().enumerate().find(|(_, (b, e))| e - b != 1) {
                return Err(Error::Shape(format!(
                    "_split_v2: squeeze_axis=True needs parts of size 1, but part {k} of axis {axis} has size {} \
                     (data shape {}, {})",
                    e - b,
                    fmt_shape(shape),
                    self.how()
                )));
            }
        }
        Ok((axis, parts))
    }
}

impl Op for SplitV2 {
    fn name(&self) -> &'static str {
        "_split_v2"
    }
    fn num_outputs(&self) -> usize {
        if self.sections > 0 {
            self.sections
        } else {
            self.indices.len()
        }
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        // All four, as MXNet's front end writes them (indices as the list it passes).
        let idx = self.indices.iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
        let flag = if self.squeeze_axis { "True" } else { "False" };
        vec![
            ("axis", self.axis.to_string()),
            ("indices", format!("[{idx}]")),
            ("sections", self.sections.to_string()),
            ("squeeze_axis", flag.into()),
        ]
    }
    fn infer_partial(
        &self,
        ins: &mut [super::partial::PartialShape],
        outs: &mut [super::partial::PartialShape],
    ) -> Result<()> {
        super::partial::split_v2(&self.indices, self.sections, self.axis, self.squeeze_axis, ins, outs)
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let shape = &inputs[0].shape;
        let (axis, parts) = self.bounds(shape)?;
        Ok(parts
            .iter()
            .map(|&(b, e)| {
                let mut s = shape.to_vec();
                if self.squeeze_axis {
                    s.remove(axis);
                } else {
                    s[axis] = e - b;
                }
                Meta::new(&s, inputs[0].dtype)
            })
            .collect())
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let x = &inputs[0];
        let (axis, parts) = self.bounds(x.shape())?;
        for (o, &(b, e)) in outputs.iter_mut().zip(&parts) {
            let mut args = vec![SliceArg::Range { start: None, stop: None, step: 1 }; axis];
            args.push(SliceArg::Range { start: Some(b as i64), stop: Some(e as i64), step: 1 });
            o.write_from(&x.slice(&args)?)?;
        }
        Ok(())
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        // The head gradients side by side along the axis (squeezed axes put back); empty parts
        // add nothing.
        let shape = g.shape(inputs[0]);
        let (axis, parts) = self.bounds(&shape)?;
        let mut pieces = Vec::with_capacity(parts.len());
        for (&v, &(b, e)) in og.iter().zip(&parts) {
            if e > b {
                let mut s = shape.clone();
                s[axis] = e - b;
                pieces.push(if self.squeeze_axis { g.reshape(v, &s)? } else { v });
            }
        }
        let whole = match pieces.as_slice() {
            [] => g.reshape(og[0], &shape)?,
            [one] => *one,
            _ => g.apply1(Concat { dim: axis as i64, num_args: None }, &pieces)?,
        };
        Ok(vec![Some(whole)])
    }
}

/// `add_n` / `ElementWiseSum(*args)`: elementwise sum of equally shaped arrays.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddN {
    pub num_args: Option<usize>,
}

impl Op for AddN {
    fn name(&self) -> &'static str {
        "add_n"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["*args"]
    }
    fn variadic(&self) -> bool {
        true
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.num_args.map(|n| vec![("num_args", n.to_string())]).unwrap_or_default()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        check_num_args("add_n", self.num_args, inputs.len())?;
        let first = inputs.first().ok_or_else(|| Error::Value("add_n: expected at least one input".into()))?;
        for (i, m) in inputs.iter().enumerate() {
            if m.shape != first.shape {
                return Err(Error::Shape(format!(
                    "add_n: all inputs must have the same shape, but input {i} has shape {} and input 0 has {}",
                    fmt_shape(&m.shape),
                    fmt_shape(&first.shape)
                )));
            }
            if m.dtype != first.dtype {
                return Err(Error::DType(format!(
                    "add_n: input {i} has dtype {}, input 0 has {}; all inputs must share one dtype",
                    m.dtype, first.dtype
                )));
            }
        }
        Ok(vec![first.clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let dense: Vec<_> = inputs.iter().map(dense).collect();
        with_dtype!(outputs[0].dtype(), T => {
            let srcs: Vec<&[T]> =
                dense.iter().map(|(b, r)| b.typed::<T>().map(|s| &s[r.clone()])).collect::<Result<_>>()?;
            outputs[0].write_out::<T, _>(|o| {
                par::for_each_chunk(o, Cost::Light, |start, chunk| {
                    let end = start + chunk.len();
                    chunk.copy_from_slice(&srcs[0][start..end]);
                    for s in &srcs[1..] {
                        chunk.iter_mut().zip(&s[start..end]).for_each(|(a, &b)| *a = T::add(*a, b));
                    }
                });
            })
        })
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![Some(og[0]); inputs.len()])
    }
}

/// `Concat`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct ConcatParams {
    /// Axis to join along (negative counts from the end).
    #[param(default = 1)]
    pub dim: i64,
    /// Number of arrays joined (filled in from the arrays given; checked against them).
    #[param(default = None)]
    pub num_args: Option<i64>,
}

/// `stack`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct StackParams {
    /// Position of the new axis in the result.
    #[param(default = 0)]
    pub axis: i64,
    /// Number of arrays stacked (filled in from the arrays given; checked against them).
    #[param(default = None)]
    pub num_args: Option<i64>,
}

/// `add_n`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct AddNParams {
    /// Number of arrays summed (filled in from the arrays given; checked against them).
    #[param(default = None)]
    pub num_args: Option<i64>,
}

/// `SliceChannel`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct SplitParams {
    /// How many equal parts to cut the axis into (must divide its length).
    pub num_outputs: i64,
    /// Axis to split.
    #[param(default = 1)]
    pub axis: i64,
    /// Drop the split axis from each output (its parts must then have length 1).
    #[param(default = false)]
    pub squeeze_axis: bool,
}

/// `_split_v2`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct SplitV2Params {
    /// Where the parts begin along the axis (the first 0; the last part runs to the end).
    pub indices: Vec<i64>,
    /// Axis to split (negative counts from the end).
    #[param(default = 1)]
    pub axis: i64,
    /// Drop the split axis from each output (every part must then have size 1).
    #[param(default = false)]
    pub squeeze_axis: bool,
    /// Number of parts of (almost) equal size; 0 splits at `indices`.
    #[param(default = 0)]
    pub sections: i64,
}

fn num_args(op: &str, n: Option<i64>) -> Result<Option<usize>> {
    match n {
        None => Ok(None),
        Some(n) if n >= 1 => Ok(Some(n as usize)),
        Some(n) => Err(Error::Value(format!("{op}: num_args must be >= 1, got {n}"))),
    }
}

pub fn concat_op(a: &Attrs) -> Result<OpRef> {
    let p = ConcatParams::parse(a)?;
    Ok(Arc::new(Concat { dim: p.dim, num_args: num_args(&a.op, p.num_args)? }))
}

pub fn stack_op(a: &Attrs) -> Result<OpRef> {
    let p = StackParams::parse(a)?;
    Ok(Arc::new(Stack { axis: p.axis, num_args: num_args(&a.op, p.num_args)? }))
}

pub fn add_n_op(a: &Attrs) -> Result<OpRef> {
    let p = AddNParams::parse(a)?;
    Ok(Arc::new(AddN { num_args: num_args(&a.op, p.num_args)? }))
}

pub fn split_op(a: &Attrs) -> Result<OpRef> {
    let p = SplitParams::parse(a)?;
    let n = p.num_outputs;
    if n < 1 {
        return Err(Error::Value(format!("SliceChannel: num_outputs must be >= 1, got {n}")));
    }
    // MXNet's num_outputs is a C int; larger counts could not even be listed.
    if n > i64::from(i32::MAX) {
        return Err(Error::Value(format!("SliceChannel: num_outputs={n} is too large (at most {})", i32::MAX)));
    }
    Ok(Arc::new(SliceChannel { num_outputs: n as usize, axis: p.axis, squeeze_axis: p.squeeze_axis }))
}
pub fn split_v2_op(a: &Attrs) -> Result<OpRef> {
    let p = SplitV2Params::parse(a)?;
    let how = || format!("indices={}, sections={}", super::params::fmt_tuple(&p.indices), p.sections);
    if p.sections < 0 || p.sections > i64::from(i32::MAX) {
        return Err(Error::Value(format!(
            "_split_v2: sections must be between 0 and {}, got {}",
            i32::MAX,
            p.sections
        )));
    }
    if p.sections == 0 {
        if p.indices.is_empty() {
            return Err(Error::Value(format!(
                "_split_v2: give sections > 0 or at least one index (the first 0); {} make no outputs",
                how()
            )));
        }
        if p.indices.len() > i32::MAX as usize {
            return Err(Error::Value(format!("_split_v2: {} indices are too many", p.indices.len())));
        }
        if p.indices[0] != 0 {
            return Err(Error::Value(format!(
                "_split_v2: indices must start with 0 (where the first part begins), got {}",
                how()
            )));
        }
        if let Some(k) = (1..p.indices.len()).find(|&k| p.indices[k] < p.indices[k - 1]) {
            return Err(Error::Value(format!(
                "_split_v2: indices must not decrease, but indices[{k}] = {} follows {} ({})",
                p.indices[k],
                p.indices[k - 1],
                how()
            )));
        }
    }
    Ok(Arc::new(SplitV2 {
        indices: p.indices,
        axis: p.axis,
        squeeze_axis: p.squeeze_axis,
        sections: p.sections as usize,
    }))
}
/// The joining ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "Concat",
        aliases: &["concat"],
        args: &["*data"],
        doc: "Join arrays along an existing axis (dim).",
        params: ConcatParams::schema,
        build: concat_op,
    },
    OpDef {
        name: "stack",
        aliases: &[],
        args: &["*data"],
        doc: "Join equally shaped arrays along a new axis.",
        params: StackParams::schema,
        build: stack_op,
    },
    OpDef {
        name: "SliceChannel",
        aliases: &["split"],
        args: &["data"],
        doc: "Split into num_outputs equal parts along an axis (one output each).",
        params: SplitParams::schema,
        build: split_op,
    },
    OpDef {
        name: "_split_v2",
        aliases: &[],
        args: &["data"],
        doc: "Split along an axis at the given indices, or into sections parts of (almost) equal size \
              (one output each).",
        params: SplitV2Params::schema,
        build: split_v2_op,
    },
    OpDef {
        name: "add_n",
        aliases: &["ElementWiseSum"],
        args: &["*args"],
        doc: "Elementwise sum of equally shaped arrays.",
        params: AddNParams::schema,
        build: add_n_op,
    },
];
