//! Repetition: `tile` and `repeat`, each a broadcast of an interleaved reshape materialised into
//! the output; their gradients sum the copies back.

use std::sync::Arc;

use super::attrs::fmt_tuple;
use super::common::{sizes, to_i64};
use super::params::{OpDef, OpParams};
use super::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::error::{Error, Result};
use crate::ndarray::view::normalize_axis;
use crate::ndarray::{Meta, NDArray};

/// `tile(data, reps)`: NumPy's tile (reps padded with leading 1s, or the data shape with leading
/// 1s, to equal length).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tile {
    pub reps: Vec<usize>,
}

impl Tile {
    /// (padded data shape, interleaved (1, d0, 1, d1, ...), broadcast (r0, d0, r1, d1, ...), out).
    fn plan(&self, shape: &[usize]) -> (Vec<usize>, Vec<usize>, Vec<usize>, Vec<usize>) {
        let n = shape.len().max(self.reps.len());
        let pad =
            |v: &[usize]| -> Vec<usize> { std::iter::repeat_n(1, n - v.len()).chain(v.iter().copied()).collect() };
        let (s, r) = (pad(shape), pad(&self.reps));
        let inter = s.iter().flat_map(|&d| [1, d]).collect();
        let big = s.iter().zip(&r).flat_map(|(&d, &k)| [k, d]).collect();
        let out = s.iter().zip(&r).map(|(&d, &k)| d.saturating_mul(k)).collect();
        (s, inter, big, out)
    }
}

impl Op for Tile {
    fn name(&self) -> &'static str {
        "tile"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("reps", fmt_tuple(&to_i64(&self.reps)))]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let (_, _, _, out) = self.plan(&inputs[0].shape);
        crate::ndarray::checked_numel("tile", &out)?;
        Ok(vec![Meta::new(&out, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (_, inter, big, _) = self.plan(inputs[0].shape());
        let v = inputs[0].reshape(&inter)?.broadcast_to(&big)?;
        outputs[0].write_from(&v)?;
        Ok(())
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let x_shape = g.shape(inputs[0]);
        let (s, _, big, _) = self.plan(&x_shape);
        let t = g.reshape(og[0], &big)?;
        let axes: Vec<i64> = (0..s.len() as i64).map(|d| 2 * d).collect();
        let t = if axes.is_empty() { t } else { g.sum_axes(t, axes, false)? };
        Ok(vec![Some(g.reshape(t, &x_shape)?)])
    }
}

/// (source shape to expand, interleaved shape, broadcast shape, output shape).
type RepeatPlan = (Vec<usize>, Vec<usize>, Vec<usize>, Vec<usize>);

/// `repeat(data, repeats, axis=None)`: each element repeated along an axis (the flattened array
/// when axis is None).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repeat {
    pub repeats: usize,
    pub axis: Option<i64>,
}

impl Repeat {
    /// (source shape to expand, (.., d, 1, ..), (.., d, r, ..), output shape).
    fn plan(&self, shape: &[usize]) -> Result<RepeatPlan> {
        let (src, axis) = match self.axis {
            None => (vec![shape.iter().product()], 0),
            Some(a) => (shape.to_vec(), normalize_axis("repeat", a, shape.len())?),
        };
        let mut inter = src.clone();
        inter.insert(axis + 1, 1);
        let mut big = src.clone();
        big.insert(axis + 1, self.repeats);
        let mut out = src.clone();
        out[axis] = out[axis].saturating_mul(self.repeats);
        Ok((src, inter, big, out))
    }
}

impl Op for Repeat {
    fn name(&self) -> &'static str {
        "repeat"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = vec![("repeats", self.repeats.to_string())];
        if let Some(a) = self.axis {
            v.push(("axis", a.to_string()));
        }
        v
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let (_, _, _, out) = self.plan(&inputs[0].shape)?;
        crate::ndarray::checked_numel("repeat", &out)?;
        Ok(vec![Meta::new(&out, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (_, inter, big, _) = self.plan(inputs[0].shape())?;
        let v = inputs[0].reshape(&inter)?.broadcast_to(&big)?;
        outputs[0].write_from(&v)?;
        Ok(())
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let x_shape = g.shape(inputs[0]);
        let (src, _, big, _) = self.plan(&x_shape)?;
        let axis = match self.axis {
            None => 0,
            Some(a) => normalize_axis("repeat", a, x_shape.len())?,
        };
        let t = g.reshape(og[0], &big)?;
        let t = g.sum_axes(t, vec![axis as i64 + 1], false)?;
        let t = g.reshape(t, &src)?;
        Ok(vec![Some(g.reshape(t, &x_shape)?)])
    }
}

/// `tile`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct TileParams {
    /// Copies per axis, aligned to the trailing axes (either side gets leading 1s as needed).
    pub reps: Vec<i64>,
}

/// `repeat`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct RepeatParams {
    /// Copies of each element.
    pub repeats: i64,
    /// Axis to repeat along; None repeats the flattened array.
    #[param(default = None)]
    pub axis: Option<i64>,
}

pub fn tile_op(a: &Attrs) -> Result<OpRef> {
    let p = TileParams::parse(a)?;
    Ok(Arc::new(Tile { reps: sizes("tile", "reps", &p.reps)? }))
}

pub fn repeat_op(a: &Attrs) -> Result<OpRef> {
    let p = RepeatParams::parse(a)?;
    if p.repeats < 0 {
        return Err(Error::Value(format!("repeat: repeats must be >= 0, got {}", p.repeats)));
    }
    Ok(Arc::new(Repeat { repeats: p.repeats as usize, axis: p.axis }))
}
/// The repetition ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "tile",
        aliases: &[],
        args: &["data"],
        doc: "Repeat the whole array reps times per axis (NumPy tile).",
        params: TileParams::schema,
        build: tile_op,
    },
    OpDef {
        name: "repeat",
        aliases: &[],
        args: &["data"],
        doc: "Repeat each element along an axis (flattened when axis is None).",
        params: RepeatParams::schema,
        build: repeat_op,
    },
];
