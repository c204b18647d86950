//! `Crop`, MXNet's legacy crop of the two spatial axes of 4-D NCHW data (deprecated there in
//! favour of `slice`).
//!
//! With one input the crop size is `h_w`; with two (`num_args=2`) it is the second input's axes 2
//! and 3 (`h_w` is then ignored, as in MXNet 1.9.1) and that input gets no gradient. The window
//! starts at `offset` (y, x), or is centred (`center_crop`: `((H-h)/2, (W-w)/2)`, rounded down).
//! The forward is a strided view; the gradient writes the head gradient into zeros through the
//! same slice (n-times differentiable). MXNet runs float32 only; any dtype works here.

use std::sync::Arc;

use super::attrs::fmt_tuple;
use super::params::{OpDef, OpParams};
use super::slice::{BasicIndex, BasicIndexGrad};
use super::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray, SliceArg};

/// `Crop`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct CropParams {
    /// Number of inputs: 1 (crop to h_w) or 2 (crop to the second input's height and width).
    #[param(default = None)]
    pub num_args: Option<i64>,
    /// Top-left corner (y, x) of the crop window.
    #[param(default = vec![0, 0])]
    pub offset: Vec<i64>,
    /// Crop height and width (h, w), used with one input.
    #[param(default = vec![0, 0])]
    pub h_w: Vec<i64>,
    /// Centre the window instead of starting it at offset.
    #[param(default = false)]
    pub center_crop: bool,
}

/// `Crop(data, crop_like?, num_args, offset, h_w, center_crop)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Crop {
    pub num_args: Option<usize>,
    pub offset: [usize; 2],
    pub h_w: [usize; 2],
    pub center_crop: bool,
}

impl Crop {
    /// The slice of `data` the crop keeps, for the given input shapes.
    fn index(&self, shapes: &[&[usize]]) -> Result<(BasicIndex, Vec<usize>)> {
        let n = shapes.len();
        if let Some(k) = self.num_args.filter(|&k| k != n) {
            return Err(Error::Value(format!("Crop: num_args={k} but {n} input(s) were given")));
        }
        if !(1..=2).contains(&n) {
            return Err(Error::Value(format!("Crop: takes 1 or 2 inputs (data, crop_like), got {n}")));
        }
        let data = shapes[0];
        let [b, c, hh, ww] = *data else {
            return Err(Error::Shape(format!(
                "Crop: data must be 4-D (batch, channel, height, width), got shape {}",
                fmt_shape(data)
            )));
        };
        let (h, w) = if n == 2 {
            let like = shapes[1];
            if like.len() != 4 {
                return Err(Error::Shape(format!(
                    "Crop: crop_like (the second input) must be 4-D, its axes 2 and 3 giving the crop size; got \
                     shape {} (data {})",
                    fmt_shape(like),
                    fmt_shape(data)
                )));
            }
            (like[2], like[3])
        } else {
            if self.h_w.contains(&0) {
                return Err(Error::Value(format!(
                    "Crop: with one input h_w must give the crop size, both >= 1; got h_w={} for data {}",
                    fmt_tuple(&self.h_w.map(|v| v as i64)),
                    fmt_shape(data)
                )));
            }
            (self.h_w[0], self.h_w[1])
        };
        if h > hh || w > ww {
            return Err(Error::Shape(format!(
                "Crop: the crop size ({h}, {w}) is larger than data {}'s height and width ({hh}, {ww})",
                fmt_shape(data)
            )));
        }
        let (oy, ox) = if self.center_crop {
            ((hh - h) / 2, (ww - w) / 2)
        } else {
            let [oy, ox] = self.offset;
            if oy > hh - h || ox > ww - w {
                return Err(Error::Shape(format!(
                    "Crop: offset ({oy}, {ox}) leaves no room for a ({h}, {w}) crop of data {} (at most ({}, {}))",
                    fmt_shape(data),
                    hh - h,
                    ww - w
                )));
            }
            (oy, ox)
        };
        let all = SliceArg::Range { start: None, stop: None, step: 1 };
        let span =
            |o: usize, len: usize| SliceArg::Range { start: Some(o as i64), stop: Some((o + len) as i64), step: 1 };
        Ok((BasicIndex { args: vec![all, all, span(oy, h), span(ox, w)] }, vec![b, c, h, w]))
    }
}

impl Op for Crop {
    fn name(&self) -> &'static str {
        "Crop"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["*data"]
    }
    fn variadic(&self) -> bool {
        true
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let p = CropParams {
            num_args: self.num_args.map(|n| n as i64),
            offset: self.offset.iter().map(|&v| v as i64).collect(),
            h_w: self.h_w.iter().map(|&v| v as i64).collect(),
            center_crop: self.center_crop,
        };
        p.to_attrs()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let shapes: Vec<&[usize]> = inputs.iter().map(|m| m.shape.as_slice()).collect();
        let (_, out) = self.index(&shapes)?;
        Ok(vec![Meta::new(&out, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let shapes: Vec<&[usize]> = inputs.iter().map(|x| x.shape()).collect();
        let (idx, _) = self.index(&shapes)?;
        outputs[0].write_from(&inputs[0].slice(&idx.args)?)
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let shapes: Vec<Vec<usize>> = inputs.iter().map(|&v| g.shape(v)).collect();
        let refs: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
        let (idx, _) = self.index(&refs)?;
        let back = BasicIndexGrad { args: idx.args, shape: shapes[0].clone() };
        let mut grads = vec![Some(g.apply1(back, &[og[0]])?)];
        // crop_like only lends its shape.
        grads.extend(std::iter::repeat_n(None, inputs.len() - 1));
        Ok(grads)
    }
}

/// A pair parameter (`offset`, `h_w`) as two non-negative sizes.
fn pair(name: &str, v: &[i64]) -> Result<[usize; 2]> {
    match *v {
        [a, b] if a >= 0 && b >= 0 => Ok([a as usize, b as usize]),
        _ => Err(Error::Value(format!(
            "Crop: {name} must be two non-negative integers ({}), got {}",
            if name == "offset" { "y, x" } else { "h, w" },
            fmt_tuple(v)
        ))),
    }
}

fn build_crop(a: &Attrs) -> Result<OpRef> {
    let p = CropParams::parse(a)?;
    let num_args = match p.num_args {
        None => None,
        Some(n @ 1..=2) => Some(n as usize),
        Some(n) => return Err(Error::Value(format!("Crop: num_args must be 1 or 2, got {n}"))),
    };
    Ok(Arc::new(Crop {
        num_args,
        offset: pair("offset", &p.offset)?,
        h_w: pair("h_w", &p.h_w)?,
        center_crop: p.center_crop,
    }))
}

/// `Crop`'s declaration.
pub const DEFS: &[OpDef] = &[OpDef {
    name: "Crop",
    aliases: &[],
    args: &["*data"],
    doc: "Crops the height and width (axes 2, 3) of 4-D data to h_w, or to the second input's height and \
          width, starting at offset or centred (center_crop). Legacy: prefer slice.",
    params: CropParams::schema,
    build: build_crop,
}];
