//! `SequenceMask`, `SequenceLast` and `SequenceReverse`: per-sequence ops over a
//! (time, batch, ...) array (or (batch, time, ...) with `axis=1`), with an optional
//! `sequence_length` input giving each batch entry's valid length (truncated toward zero, as MXNet
//! casts it to an integer). Each forward is an index map built from the lengths and applied with
//! `gather`; the gradients are the same maps run the other way, so they are ops again.

use std::sync::Arc;

use super::attrs::{fmt_float, fmt_tuple};
use super::common::{gather, scatter_add, to_i64, NONE};
use super::params::{OpDef, OpParams};
use super::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};

/// Geometry shared by the three ops: the sequence axis, and the sizes around it.
#[derive(Clone, Copy, Debug)]
struct Seq {
    axis: usize,
    steps: usize,
    batch: usize,
    inner: usize,
}

impl Seq {
    /// Checks the data rank and axis (`max_axis` is 1 for Mask/Last, 0 for Reverse).
    fn new(op: &str, data: &[usize], axis: i64, max_axis: i64) -> Result<Seq> {
        if data.len() < 2 {
            return Err(Error::Shape(format!(
                "{op}: data must have rank 2 or more (sequence and batch axes), got shape {}",
                fmt_shape(data)
            )));
        }
        if !(0..=max_axis).contains(&axis) {
            let allowed = if max_axis == 0 { "0" } else { "0 or 1" };
            return Err(Error::Value(format!("{op}: axis must be {allowed}, got {axis}")));
        }
        let axis = axis as usize;
        Ok(Seq { axis, steps: data[axis], batch: data[1 - axis], inner: data[2..].iter().product() })
    }

    /// Row-major offset of element `i` of step `t` of batch entry `b`.
    fn offset(&self, t: usize, b: usize, i: usize) -> usize {
        let row = if self.axis == 0 { t * self.batch + b } else { b * self.steps + t };
        row * self.inner + i
    }

    /// The `sequence_length` input must be a vector of one length per batch entry.
    fn check_lengths(&self, op: &str, data: &[usize], lengths: &[usize]) -> Result<()> {
        if lengths != [self.batch] {
            return Err(Error::Shape(format!(
                "{op}: sequence_length must have shape ({},) (the batch size of data {} along axis {}), got {}",
                self.batch,
                fmt_shape(data),
                1 - self.axis,
                fmt_shape(lengths)
            )));
        }
        Ok(())
    }

    /// Each batch entry's length, truncated toward zero; all `steps` when there is no input.
    /// `range` bounds the allowed lengths (`None`: any, as for `SequenceMask`).
    fn lengths(&self, op: &str, input: Option<&NDArray>, range: Option<(i64, i64)>) -> Result<Vec<i64>> {
        let Some(x) = input else { return Ok(vec![self.steps as i64; self.batch]) };
        x.to_f64_vec()
            .into_iter()
            .enumerate()
            .map(|(b, v)| {
                if v.is_nan() {
                    return Err(Error::Value(format!("{op}: sequence_length[{b}] is NaN")));
                }
                let n = v.trunc().clamp(i64::MIN as f64, i64::MAX as f64) as i64;
                match range {
                    Some((lo, hi)) if !(lo..=hi).contains(&n) => Err(Error::Index(format!(
                        "{op}: sequence_length[{b}] = {v} is outside [{lo}, {hi}] (data has {} steps along axis {})",
                        self.steps, self.axis
                    ))),
                    _ => Ok(n),
                }
            })
            .collect()
    }
}

fn seq_attrs(use_len: bool, axis: i64) -> Vec<(&'static str, String)> {
    let mut v = vec![("axis", axis.to_string())];
    if use_len {
        v.push(("use_sequence_length", "True".into()));
    }
    v
}

fn seq_args(use_len: bool) -> &'static [&'static str] {
    if use_len {
        &["data", "sequence_length"]
    } else {
        &["data"]
    }
}

/// `sequence_length`'s shape from the data's, for symbolic inference.
fn missing_lengths(inputs: &[Option<Meta>], use_len: bool, axis: i64) -> Vec<Option<Meta>> {
    match inputs.first() {
        Some(Some(d)) if use_len && d.shape.len() >= 2 && (axis == 0 || axis == 1) => {
            vec![None, Some(Meta::new(&[d.shape[1 - axis as usize]], d.dtype))]
        }
        _ => Vec::new(),
    }
}

/// `SequenceMask(data, sequence_length?, use_sequence_length=False, value=0, axis=0)`: steps at
/// or past each entry's length are set to `value`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SequenceMask {
    pub use_len: bool,
    pub value: f64,
    pub axis: i64,
}

impl Op for SequenceMask {
    fn name(&self) -> &'static str {
        "SequenceMask"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        seq_args(self.use_len)
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = seq_attrs(self.use_len, self.axis);
        v.push(("value", fmt_float(self.value)));
        v
    }
    fn infer_missing(&self, inputs: &[Option<Meta>]) -> Vec<Option<Meta>> {
        missing_lengths(inputs, self.use_len, self.axis)
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let s = Seq::new("SequenceMask", &inputs[0].shape, self.axis, 1)?;
        if self.use_len {
            s.check_lengths("SequenceMask", &inputs[0].shape, &inputs[1].shape)?;
        }
        Ok(vec![inputs[0].clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let x = &inputs[0];
        let s = Seq::new("SequenceMask", x.shape(), self.axis, 1)?;
        let lens = s.lengths("SequenceMask", inputs.get(1), None)?;
        let mut map: Vec<usize> = (0..x.size()).collect();
        for (b, &n) in lens.iter().enumerate() {
            for t in (0..s.steps).filter(|&t| (t as i64) >= n) {
                for i in 0..s.inner {
                    map[s.offset(t, b, i)] = NONE;
                }
            }
        }
        gather(x, &map, self.value, &mut outputs[0])
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let mask = SequenceMask { value: 0.0, ..*self };
        let mut ins = vec![og[0]];
        ins.extend_from_slice(&inputs[1..]);
        let gx = g.apply1(mask, &ins)?;
        Ok(std::iter::once(Some(gx)).chain(inputs[1..].iter().map(|_| None)).collect())
    }
}

/// `SequenceReverse(data, sequence_length?, use_sequence_length=False, axis=0)`: each entry's
/// first `length` steps in reverse order; the steps after them stay in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SequenceReverse {
    pub use_len: bool,
    pub axis: i64,
}

impl Op for SequenceReverse {
    fn name(&self) -> &'static str {
        "SequenceReverse"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        seq_args(self.use_len)
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        seq_attrs(self.use_len, self.axis)
    }
    fn infer_missing(&self, inputs: &[Option<Meta>]) -> Vec<Option<Meta>> {
        missing_lengths(inputs, self.use_len, self.axis)
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let s = Seq::new("SequenceReverse", &inputs[0].shape, self.axis, 0)?;
        if self.use_len {
            s.check_lengths("SequenceReverse", &inputs[0].shape, &inputs[1].shape)?;
        }
        Ok(vec![inputs[0].clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let x = &inputs[0];
        let s = Seq::new("SequenceReverse", x.shape(), self.axis, 0)?;
        let lens = s.lengths("SequenceReverse", inputs.get(1), Some((0, s.steps as i64)))?;
        let mut map: Vec<usize> = (0..x.size()).collect();
        for (b, &n) in lens.iter().enumerate() {
            let n = n as usize;
            for t in 0..n {
                for i in 0..s.inner {
                    map[s.offset(t, b, i)] = s.offset(n - 1 - t, b, i);
                }
            }
        }
        gather(x, &map, 0.0, &mut outputs[0])
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        // The map is a permutation that is its own inverse.
        let mut ins = vec![og[0]];
        ins.extend_from_slice(&inputs[1..]);
        let gx = g.apply1(*self, &ins)?;
        Ok(std::iter::once(Some(gx)).chain(inputs[1..].iter().map(|_| None)).collect())
    }
}

/// Source offsets of `SequenceLast`'s output: each entry's step `length - 1`.
fn last_map(s: &Seq, lens: &[i64]) -> Vec<usize> {
    let mut map = Vec::with_capacity(s.batch * s.inner);
    for (b, &n) in lens.iter().enumerate() {
        for i in 0..s.inner {
            map.push(s.offset(n as usize - 1, b, i));
        }
    }
    map
}

fn last_shape(data: &[usize], axis: usize) -> Vec<usize> {
    let mut out = data.to_vec();
    out.remove(axis);
    out
}

/// `SequenceLast(data, sequence_length?, use_sequence_length=False, axis=0)`: each entry's last
/// valid step; the output drops the sequence axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SequenceLast {
    pub use_len: bool,
    pub axis: i64,
}

impl Op for SequenceLast {
    fn name(&self) -> &'static str {
        "SequenceLast"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        seq_args(self.use_len)
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        seq_attrs(self.use_len, self.axis)
    }
    fn infer_missing(&self, inputs: &[Option<Meta>]) -> Vec<Option<Meta>> {
        missing_lengths(inputs, self.use_len, self.axis)
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let s = Seq::new("SequenceLast", &inputs[0].shape, self.axis, 1)?;
        if self.use_len {
            s.check_lengths("SequenceLast", &inputs[0].shape, &inputs[1].shape)?;
        }
        Ok(vec![Meta::new(&last_shape(&inputs[0].shape, s.axis), inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let x = &inputs[0];
        let s = Seq::new("SequenceLast", x.shape(), self.axis, 1)?;
        if s.steps == 0 && s.batch * s.inner > 0 {
            return Err(Error::Index(format!("SequenceLast: data {} has no steps to take", fmt_shape(x.shape()))));
        }
        let lens = s.lengths("SequenceLast", inputs.get(1), Some((1, s.steps as i64)))?;
        gather(x, &last_map(&s, &lens), 0.0, &mut outputs[0])
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let back = SequenceLastGrad { last: *self, shape: g.shape(inputs[0]) };
        let mut ins = vec![og[0]];
        ins.extend_from_slice(&inputs[1..]);
        let gx = g.apply1(back, &ins)?;
        Ok(std::iter::once(Some(gx)).chain(inputs[1..].iter().map(|_| None)).collect())
    }
}

/// `_backward_SequenceLast`: zeros of the data's `shape` with the gradient written at each
/// entry's last step. Its gradient is `SequenceLast` again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SequenceLastGrad {
    pub last: SequenceLast,
    pub shape: Vec<usize>,
}

impl Op for SequenceLastGrad {
    fn name(&self) -> &'static str {
        "_backward_SequenceLast"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        seq_args(self.last.use_len)
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = self.last.attrs();
        v.push(("shape", fmt_tuple(&to_i64(&self.shape))));
        v
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let s = Seq::new("_backward_SequenceLast", &self.shape, self.last.axis, 1)?;
        let want = last_shape(&self.shape, s.axis);
        if inputs[0].shape.as_slice() != want.as_slice() {
            return Err(Error::Shape(format!(
                "_backward_SequenceLast: gradient of shape {} does not match the output shape {}",
                fmt_shape(&inputs[0].shape),
                fmt_shape(&want)
            )));
        }
        Ok(vec![Meta::new(&self.shape, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let s = Seq::new("_backward_SequenceLast", &self.shape, self.last.axis, 1)?;
        let lens = s.lengths("_backward_SequenceLast", inputs.get(1), Some((1, s.steps as i64)))?;
        scatter_add(&inputs[0], &last_map(&s, &lens), &mut outputs[0])
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let mut ins = vec![og[0]];
        ins.extend_from_slice(&inputs[1..]);
        let gx = g.apply1(self.last, &ins)?;
        Ok(std::iter::once(Some(gx)).chain(inputs[1..].iter().map(|_| None)).collect())
    }
}

/// `SequenceMask`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct SequenceMaskParams {
    /// If true, a second input `sequence_length` (one length per batch entry) is taken.
    #[param(default = false)]
    pub use_sequence_length: bool,
    /// The value written at masked steps.
    #[param(default = 0.0)]
    pub value: f64,
    /// The sequence axis: 0 (time, batch, ...) or 1 (batch, time, ...).
    #[param(default = 0)]
    pub axis: i64,
}

/// `SequenceLast`'s and `SequenceReverse`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct SequenceParams {
    /// If true, a second input `sequence_length` (one length per batch entry) is taken.
    #[param(default = false)]
    pub use_sequence_length: bool,
    /// The sequence axis (0 or 1 for SequenceLast; SequenceReverse supports only 0).
    #[param(default = 0)]
    pub axis: i64,
}

fn mask_op(a: &Attrs) -> Result<OpRef> {
    let p = SequenceMaskParams::parse(a)?;
    Seq::new("SequenceMask", &[0, 0], p.axis, 1)?;
    Ok(Arc::new(SequenceMask { use_len: p.use_sequence_length, value: p.value, axis: p.axis }))
}

fn last_op(a: &Attrs) -> Result<OpRef> {
    let p = SequenceParams::parse(a)?;
    Seq::new("SequenceLast", &[0, 0], p.axis, 1)?;
    Ok(Arc::new(SequenceLast { use_len: p.use_sequence_length, axis: p.axis }))
}

fn reverse_op(a: &Attrs) -> Result<OpRef> {
    let p = SequenceParams::parse(a)?;
    Seq::new("SequenceReverse", &[0, 0], p.axis, 0)?;
    Ok(Arc::new(SequenceReverse { use_len: p.use_sequence_length, axis: p.axis }))
}

/// The sequence ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "SequenceMask",
        aliases: &[],
        args: &["data", "sequence_length?"],
        doc: "Sets the steps at or past each sequence's length to `value`.\n\nData is (time, batch, ...) \
              (or (batch, time, ...) with axis=1); without `use_sequence_length` every sequence is \
              full length and the data passes unchanged. Lengths are truncated toward zero.",
        params: SequenceMaskParams::schema,
        build: mask_op,
    },
    OpDef {
        name: "SequenceLast",
        aliases: &[],
        args: &["data", "sequence_length?"],
        doc: "Each sequence's last valid step (the sequence axis is dropped).\n\nData is (time, batch, \
              ...) (or (batch, time, ...) with axis=1); lengths must lie in [1, time].",
        params: SequenceParams::schema,
        build: last_op,
    },
    OpDef {
        name: "SequenceReverse",
        aliases: &[],
        args: &["data", "sequence_length?"],
        doc: "Reverses each sequence's first `length` steps; later steps stay in place.\n\nData is \
              (time, batch, ...); lengths must lie in [0, time].",
        params: SequenceParams::schema,
        build: reverse_op,
    },
];
