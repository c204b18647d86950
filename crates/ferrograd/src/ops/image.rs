//! `nd.image` / `sym.image`: the per-image operators behind Gluon's `vision.transforms` —
//! `to_tensor` (HWC/NHWC values in [0, 255] to CHW/NCHW float32 in [0, 1]), `normalize` (per
//! channel `(x − mean[c]) / std[c]` of a CHW/NCHW tensor) and the left-right / top-bottom flips of
//! HWC/NHWC images. Each is one pass over the image, so a DataLoader worker's per-sample
//! transforms cost one op call each.

use std::sync::Arc;

use ferrograd_kernels::par::{for_each_chunk, Cost};

use super::layout::Reverse;
use super::params::{OpDef, OpParams};
use super::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::conv::Contig;

/// An HWC or NHWC image's `(images, height, width, channels)`.
fn hwc(op: &str, shape: &[usize]) -> Result<(usize, usize, usize, usize)> {
    match *shape {
        [h, w, c] => Ok((1, h, w, c)),
        [n, h, w, c] => Ok((n, h, w, c)),
        _ => Err(Error::Shape(format!(
            "{op}: data must be an image of shape (height, width, channels) or (N, height, width, channels), got {}",
            fmt_shape(shape)
        ))),
    }
}

/// Splits `chunk` (the output elements from flat index `start` on) at the boundaries of
/// `plane`-sized planes and calls `f(flat_start, run)` on each piece, so that the per-element
/// loops have no index arithmetic and vectorise.
fn for_plane_runs<T>(start: usize, chunk: &mut [T], plane: usize, mut f: impl FnMut(usize, &mut [T])) {
    let (mut at, mut rest) = (start, chunk);
    while !rest.is_empty() {
        let len = (plane - at % plane).min(rest.len());
        let (run, tail) = rest.split_at_mut(len);
        f(at, run);
        at += len;
        rest = tail;
    }
}

/// `_image_to_tensor`: HWC (NHWC) of any dtype to CHW (NCHW) float32 divided by 255.
#[derive(Clone, Debug, Default, PartialEq, OpParams)]
pub struct ToTensor {}

impl Op for ToTensor {
    fn name(&self) -> &'static str {
        "_image_to_tensor"
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let shape = &inputs[0].shape;
        let (n, h, w, c) = hwc(self.name(), shape)?;
        let out = if shape.len() == 3 { vec![c, h, w] } else { vec![n, c, h, w] };
        Ok(vec![Meta::new(&out, DType::F32)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (_, h, w, c) = hwc(self.name(), inputs[0].shape())?;
        // Other dtypes are converted once; float32 is read in place.
        let x = &inputs[0];
        let src = if x.dtype() == DType::F32 { Contig::new(x) } else { Contig::new(&x.astype(DType::F32)) };
        let src = src.get::<f32>();
        let plane = h * w;
        outputs[0].write_out::<f32, _>(|out| {
            // Output element `o` of image `i`, channel `ch`, position `p` reads input `(i, p, ch)`:
            // within one output plane the input is read at stride `c`.
            for_each_chunk(out, Cost::Light, |start, chunk| {
                for_plane_runs(start, chunk, plane, |at, run| {
                    let (img, ch) = (at / plane / c, at / plane % c);
                    let p0 = at % plane;
                    let from = &src[(img * plane + p0) * c + ch..];
                    for (o, &v) in run.iter_mut().zip(from.iter().step_by(c)) {
                        *o = v / 255.0;
                    }
                });
            });
        })
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let input = g.meta(inputs[0]);
        if !input.dtype.is_float() {
            return Ok(vec![None]);
        }
        let axes = if input.shape.len() == 3 { vec![1, 2, 0] } else { vec![0, 2, 3, 1] };
        let back = g.transpose(og[0], axes)?;
        let back = g.mul_scalar(back, 1.0 / 255.0)?;
        Ok(vec![Some(g.cast(back, input.dtype)?)])
    }
}

/// `_image_normalize`'s parameters. MXNet's defaults are four zeros and four ones, which its
/// own channel check then rejects for a 3-channel image; here a default of equal values stands
/// for one value for every channel.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct Normalize {
    /// Per-channel means (one value: every channel).
    #[param(default = vec![0.0, 0.0, 0.0, 0.0])]
    pub mean: Vec<f64>,
    /// Per-channel standard deviations (one value: every channel).
    #[param(default = vec![1.0, 1.0, 1.0, 1.0])]
    pub std: Vec<f64>,
}

impl Normalize {
    /// `mean` or `std` spread over `channels`; MXNet's four-value default counts as one value.
    fn per_channel(&self, what: &str, v: &[f64], channels: usize, shape: &[usize]) -> Result<Vec<f64>> {
        let default: &[f64] = if what == "mean" { &[0.0; 4] } else { &[1.0; 4] };
        match v.len() {
            1 => Ok(vec![v[0]; channels]),
            l if l == channels => Ok(v.to_vec()),
            _ if v == default => Ok(vec![v[0]; channels]),
            l => Err(Error::Shape(format!(
                "{}: {what} has {l} values; it needs 1 or one per channel ({channels}) for data of shape {}",
                self.name(),
                fmt_shape(shape)
            ))),
        }
    }

    /// `(mean, 1/std, plane, channels)` for data of `shape` (CHW or NCHW).
    fn plan(&self, shape: &[usize]) -> Result<(Vec<f64>, Vec<f64>, usize, usize)> {
        let (c, plane) = match *shape {
            [c, h, w] | [_, c, h, w] => (c, h * w),
            _ => {
                return Err(Error::Shape(format!(
                "{}: data must be a tensor of shape (channels, height, width) or (N, channels, height, width), got {}",
                self.name(),
                fmt_shape(shape)
            )))
            }
        };
        let mean = self.per_channel("mean", &self.mean, c, shape)?;
        let std = self.per_channel("std", &self.std, c, shape)?;
        if let Some(s) = std.iter().find(|s| **s == 0.0) {
            return Err(Error::Value(format!("{}: std must not contain zero, got {s} in {:?}", self.name(), self.std)));
        }
        Ok((mean, std.iter().map(|s| 1.0 / s).collect(), plane, c))
    }
}

impl Op for Normalize {
    fn name(&self) -> &'static str {
        "_image_normalize"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.to_attrs()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        self.plan(&inputs[0].shape)?;
        if !inputs[0].dtype.is_float() {
            return Err(Error::DType(format!(
                "{}: data must be a float tensor (apply to_tensor first), got dtype {}",
                self.name(),
                inputs[0].dtype
            )));
        }
        Ok(vec![inputs[0].clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (mean, inv_std, plane, c) = self.plan(inputs[0].shape())?;
        let src = Contig::new(&inputs[0]);
        float_kernel!(self.name(), inputs[0].dtype(), T => {
            let x = src.get::<T>();
            let (mean, inv): (Vec<T>, Vec<T>) =
                (mean.iter().map(|&m| m as T).collect(), inv_std.iter().map(|&s| s as T).collect());
            outputs[0].write_out::<T, _>(|out| {
                for_each_chunk(out, Cost::Light, |start, chunk| {
                    for_plane_runs(start, chunk, plane, |at, run| {
                        let ch = at / plane % c;
                        let (m, s) = (mean[ch], inv[ch]);
                        let src = &x[at..at + run.len()];
                        for (o, &v) in run.iter_mut().zip(src) {
                            *o = (v - m) * s;
                        }
                    });
                });
            })
        })
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        // d/dx = 1/std[c]: normalize the output gradient with zero means.
        let scale = Normalize { mean: vec![0.0], std: self.std.clone() };
        let shape = g.shape(inputs[0]);
        scale.plan(&shape)?;
        Ok(vec![Some(g.apply1(scale, &[og[0]])?)])
    }
}

/// `_image_flip_left_right` / `_image_flip_top_bottom`: an HWC/NHWC image reversed along its
/// width or height (the gradient is the same flip of the output gradient).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flip {
    pub left_right: bool,
}

impl Flip {
    fn reverse(&self) -> Reverse {
        Reverse { axis: vec![if self.left_right { -2 } else { -3 }] }
    }
}

impl Op for Flip {
    fn name(&self) -> &'static str {
        if self.left_right {
            "_image_flip_left_right"
        } else {
            "_image_flip_top_bottom"
        }
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        hwc(self.name(), &inputs[0].shape)?;
        Ok(vec![inputs[0].clone()])
    }
    fn forward(&self, ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        self.reverse().forward(ctx, inputs, outputs)
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, _i: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![Some(g.apply1(self.clone(), &[og[0]])?)])
    }
}

fn build_flip(a: &Attrs, left_right: bool) -> Result<OpRef> {
    super::params::NoParams::parse(a)?;
    Ok(Arc::new(Flip { left_right }))
}

/// The image operators' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "_image_to_tensor",
        aliases: &[],
        args: &["data"],
        doc: "An HWC (or NHWC) image with values in [0, 255] as a CHW (NCHW) float32 tensor in [0, 1].",
        params: ToTensor::schema,
        build: super::params::parsed_op::<ToTensor>,
    },
    OpDef {
        name: "_image_normalize",
        aliases: &[],
        args: &["data"],
        doc: "(data - mean[c]) / std[c] for each channel c of a CHW (or NCHW) tensor.",
        params: Normalize::schema,
        build: super::params::parsed_op::<Normalize>,
    },
    OpDef {
        name: "_image_flip_left_right",
        aliases: &[],
        args: &["data"],
        doc: "An HWC (or NHWC) image mirrored along its width.",
        params: super::params::NoParams::schema,
        build: |a| build_flip(a, true),
    },
    OpDef {
        name: "_image_flip_top_bottom",
        aliases: &[],
        args: &["data"],
        doc: "An HWC (or NHWC) image mirrored along its height.",
        params: super::params::NoParams::schema,
        build: |a| build_flip(a, false),
    },
];
