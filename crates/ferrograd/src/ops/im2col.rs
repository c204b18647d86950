//! `im2col` and `col2im`: sliding blocks of an (N, C, spatial...) image as columns of an
//! (N, C·∏kernel, L) array (rows ordered channel-major, then kernel position; L output
//! positions), and the sum of such columns back into an image. Both run through one index map
//! (padding positions map to nothing): `im2col` gathers, `col2im` scatter-adds, and each one's
//! gradient is the other. 1-, 2- and 3-D kernels.

use std::sync::Arc;

use super::attrs::fmt_tuple;
use super::common::{gather, scatter_add, to_i64, NONE};
use super::nn::float_only;
use super::params::{OpDef, OpParams};
use super::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};

/// Sliding-block geometry (kernel, stride, dilation, padding per spatial axis).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blocks {
    pub kernel: Vec<usize>,
    pub stride: Vec<usize>,
    pub dilate: Vec<usize>,
    pub pad: Vec<usize>,
}

impl Blocks {
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("kernel", fmt_tuple(&to_i64(&self.kernel))),
            ("stride", fmt_tuple(&to_i64(&self.stride))),
            ("dilate", fmt_tuple(&to_i64(&self.dilate))),
            ("pad", fmt_tuple(&to_i64(&self.pad))),
        ]
    }

    /// Output positions per spatial axis for an image of spatial size `image`.
    fn out_positions(&self, op: &str, image: &[usize]) -> Result<Vec<usize>> {
        (0..self.kernel.len())
            .map(|d| {
                let span = self.dilate[d] * (self.kernel[d] - 1) + 1;
                let padded = image[d] + 2 * self.pad[d];
                if span > padded {
                    return Err(Error::Shape(format!(
                        "{op}: the dilated kernel ({span}) on spatial axis {d} is larger than the padded image ({padded}) \
                         of spatial size {}",
                        fmt_shape(image)
                    )));
                }
                Ok((padded - span) / self.stride[d] + 1)
            })
            .collect()
    }

    /// For one image of `channels` × `image`: the source offset of every column element
    /// (row-major over (C·K, L)), `NONE` for padding.
    fn map(&self, channels: usize, image: &[usize], out: &[usize]) -> Vec<usize> {
        let nd = self.kernel.len();
        let (k, l): (usize, usize) = (self.kernel.iter().product(), out.iter().product());
        let plane: usize = image.iter().product();
        let mut map = Vec::with_capacity(channels * k * l);
        let (mut kidx, mut oidx) = (vec![0usize; nd], vec![0usize; nd]);
        for c in 0..channels {
            for kk in 0..k {
                unravel(kk, &self.kernel, &mut kidx);
                for o in 0..l {
                    unravel(o, out, &mut oidx);
                    let mut pos = 0usize;
                    let mut inside = true;
                    for (d, &size) in image.iter().enumerate().take(nd) {
                        let at = (oidx[d] * self.stride[d] + kidx[d] * self.dilate[d]) as isize - self.pad[d] as isize;
                        if at < 0 || at as usize >= size {
                            inside = false;
                            break;
                        }
                        pos = pos * size + at as usize;
                    }
                    map.push(if inside { c * plane + pos } else { NONE });
                }
            }
        }
        map
    }
}

fn unravel(mut i: usize, shape: &[usize], idx: &mut [usize]) {
    for d in (0..shape.len()).rev() {
        idx[d] = i % shape[d];
        i /= shape[d];
    }
}

/// The map for every image of a batch of `n`, offsets into the whole image array.
fn batch_map(one: &[usize], n: usize, image_size: usize) -> Vec<usize> {
    let mut map = Vec::with_capacity(one.len() * n);
    for b in 0..n {
        map.extend(one.iter().map(|&m| if m == NONE { NONE } else { b * image_size + m }));
    }
    map
}

/// `im2col` (`to_cols`) or `col2im` (with the image's spatial `output_size`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Im2Col {
    pub blocks: Blocks,
    /// `None`: im2col; `Some(spatial size)`: col2im.
    pub output_size: Option<Vec<usize>>,
}

impl Im2Col {
    fn op_name(&self) -> &'static str {
        if self.output_size.is_none() {
            "im2col"
        } else {
            "col2im"
        }
    }

    /// (image shape, column shape) for the op's input of shape `input`.
    fn shapes(&self, input: &[usize]) -> Result<(Vec<usize>, Vec<usize>)> {
        let op = self.op_name();
        let nd = self.blocks.kernel.len();
        let k: usize = self.blocks.kernel.iter().product();
        match &self.output_size {
            None => {
                if input.len() != nd + 2 {
                    return Err(Error::Shape(format!(
                        "{op}: data must have {} axes (N, C and {nd} spatial axes for kernel {}), got shape {}",
                        nd + 2,
                        fmt_tuple(&to_i64(&self.blocks.kernel)),
                        fmt_shape(input)
                    )));
                }
                let out = self.blocks.out_positions(op, &input[2..])?;
                Ok((input.to_vec(), vec![input[0], input[1] * k, out.iter().product()]))
            }
            Some(size) => {
                let out = self.blocks.out_positions(op, size)?;
                let l: usize = out.iter().product();
                if input.len() != 3 || !input[1].is_multiple_of(k) || input[2] != l {
                    return Err(Error::Shape(format!(
                        "{op}: data must have shape (N, C·{k}, {l}) for kernel {} and output_size {}, got {}",
                        fmt_tuple(&to_i64(&self.blocks.kernel)),
                        fmt_tuple(&to_i64(size)),
                        fmt_shape(input)
                    )));
                }
                let mut image = vec![input[0], input[1] / k];
                image.extend_from_slice(size);
                Ok((image, input.to_vec()))
            }
        }
    }

    fn full_map(&self, image: &[usize]) -> Result<Vec<usize>> {
        let out = self.blocks.out_positions(self.op_name(), &image[2..])?;
        let one = self.blocks.map(image[1], &image[2..], &out);
        Ok(batch_map(&one, image[0], image[1..].iter().product()))
    }
}

impl Op for Im2Col {
    fn name(&self) -> &'static str {
        self.op_name()
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = self.blocks.attrs();
        if let Some(s) = &self.output_size {
            v.push(("output_size", fmt_tuple(&to_i64(s))));
        }
        v
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        float_only(self.op_name(), "data", inputs[0].dtype)?;
        let (image, cols) = self.shapes(&inputs[0].shape)?;
        let out = if self.output_size.is_none() { cols } else { image };
        Ok(vec![Meta::new(&out, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (image, _) = self.shapes(inputs[0].shape())?;
        let map = self.full_map(&image)?;
        if self.output_size.is_none() {
            gather(&inputs[0], &map, 0.0, &mut outputs[0])
        } else {
            scatter_add(&inputs[0], &map, &mut outputs[0])
        }
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let (image, _) = self.shapes(&g.shape(inputs[0]))?;
        let other = Im2Col {
            blocks: self.blocks.clone(),
            output_size: if self.output_size.is_some() { None } else { Some(image[2..].to_vec()) },
        };
        Ok(vec![Some(g.apply1(other, &[og[0]])?)])
    }
}

/// `im2col`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct Im2ColParams {
    /// Sliding kernel size: (w,), (h, w) or (d, h, w).
    pub kernel: Vec<i64>,
    /// Step between adjacent blocks per spatial axis (default 1).
    #[param(default = Vec::new())]
    pub stride: Vec<i64>,
    /// Spacing between kernel points per spatial axis (default 1).
    #[param(default = Vec::new())]
    pub dilate: Vec<i64>,
    /// Zero padding on both sides per spatial axis (default 0).
    #[param(default = Vec::new())]
    pub pad: Vec<i64>,
}

/// `col2im`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct Col2ImParams {
    /// Spatial size of the image: (w,), (h, w) or (d, h, w).
    pub output_size: Vec<i64>,
    /// Sliding kernel size: (w,), (h, w) or (d, h, w).
    pub kernel: Vec<i64>,
    /// Step between adjacent blocks per spatial axis (default 1).
    #[param(default = Vec::new())]
    pub stride: Vec<i64>,
    /// Spacing between kernel points per spatial axis (default 1).
    #[param(default = Vec::new())]
    pub dilate: Vec<i64>,
    /// Zero padding on both sides per spatial axis (default 0).
    #[param(default = Vec::new())]
    pub pad: Vec<i64>,
}

/// One geometry parameter: `nd` values, `fill` when empty, each at least `min`.
fn geom_param(op: &str, key: &str, v: &[i64], nd: usize, fill: usize, min: i64) -> Result<Vec<usize>> {
    if v.is_empty() {
        return Ok(vec![fill; nd]);
    }
    if v.len() != nd || v.iter().any(|&x| x < min) {
        return Err(Error::Value(format!(
            "{op}: {key}={} must have {nd} value(s) (one per kernel axis), each at least {min}",
            fmt_tuple(v)
        )));
    }
    Ok(v.iter().map(|&x| x as usize).collect())
}

fn blocks(op: &str, kernel: &[i64], stride: &[i64], dilate: &[i64], pad: &[i64]) -> Result<Blocks> {
    if !(1..=3).contains(&kernel.len()) || kernel.iter().any(|&k| k < 1) {
        return Err(Error::Value(format!("{op}: kernel={} must have 1 to 3 positive values", fmt_tuple(kernel))));
    }
    let nd = kernel.len();
    Ok(Blocks {
        kernel: kernel.iter().map(|&k| k as usize).collect(),
        stride: geom_param(op, "stride", stride, nd, 1, 1)?,
        dilate: geom_param(op, "dilate", dilate, nd, 1, 1)?,
        pad: geom_param(op, "pad", pad, nd, 0, 0)?,
    })
}

fn im2col_op(a: &Attrs) -> Result<OpRef> {
    let p = Im2ColParams::parse(a)?;
    Ok(Arc::new(Im2Col { blocks: blocks("im2col", &p.kernel, &p.stride, &p.dilate, &p.pad)?, output_size: None }))
}

fn col2im_op(a: &Attrs) -> Result<OpRef> {
    let p = Col2ImParams::parse(a)?;
    let b = blocks("col2im", &p.kernel, &p.stride, &p.dilate, &p.pad)?;
    let size = geom_param("col2im", "output_size", &p.output_size, b.kernel.len(), 0, 1)?;
    if p.output_size.is_empty() {
        return Err(Error::Value("col2im: output_size must not be empty".into()));
    }
    Ok(Arc::new(Im2Col { blocks: b, output_size: Some(size) }))
}

/// The sliding-block ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "im2col",
        aliases: &[],
        args: &["data"],
        doc: "Sliding blocks of an (N, C, spatial...) image as the columns of an (N, C·∏kernel, L) array.",
        params: Im2ColParams::schema,
        build: im2col_op,
    },
    OpDef {
        name: "col2im",
        aliases: &[],
        args: &["data"],
        doc: "Sums (N, C·∏kernel, L) columns of sliding blocks back into an (N, C, output_size...) image.",
        params: Col2ImParams::schema,
        build: col2im_op,
    },
];
