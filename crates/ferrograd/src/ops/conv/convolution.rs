//! `Convolution` (1-D/2-D/3-D, grouped, dilated), its fused backward `_backward_Convolution`,
//! and `Deconvolution` (the transposed convolution).
//!
//! Forward is im2col + GEMM with the columns of several images side by side (see
//! `ferrograd_kernels::conv`). The backward computes the data gradient (GEMM + col2im), the
//! weight gradient (im2col + GEMM, accumulated over the batch) and the bias gradient (a sum). Every rule is written with these same ops, so gradients of
//! any order exist: `_backward_Convolution` is linear in the head gradient and bilinear in
//! (data, head) and (weight, head), so its own rule is two convolutions and one more
//! `_backward_Convolution`.

use std::sync::Arc;

use ferrograd_kernels::conv::{conv_backward, conv_forward, ConvShape};

use super::{check_float, check_layout, fmt_us, Contig, ConvLayout, CudnnTune, Window};
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::params::{fmt_tuple, OpDef, OpParams};
use crate::ops::{AttrValue, Attrs, Ctx, Grad, Op, OpRef, Saves, Val};

/// `Convolution`'s (and `_backward_Convolution`'s) parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct ConvolutionParams {
    /// Kernel size per spatial axis: (w,), (h, w) or (d, h, w).
    pub kernel: Vec<i64>,
    /// Step per spatial axis (empty: 1 on every axis).
    #[param(default = Vec::new())]
    pub stride: Vec<i64>,
    /// Kernel dilation per spatial axis (empty: 1 on every axis).
    #[param(default = Vec::new())]
    pub dilate: Vec<i64>,
    /// Zero padding on both sides per spatial axis (empty: none).
    #[param(default = Vec::new())]
    pub pad: Vec<i64>,
    /// Number of output channels.
    pub num_filter: i64,
    /// Number of channel groups convolved separately.
    #[param(default = 1)]
    pub num_group: i64,
    /// Scratch memory limit in MB (accepted and ignored).
    #[param(default = 1024)]
    pub workspace: i64,
    /// Leave out the bias input.
    #[param(default = false)]
    pub no_bias: bool,
    /// cuDNN algorithm selection (accepted and ignored).
    #[param(default = None)]
    pub cudnn_tune: Option<CudnnTune>,
    /// Disable cuDNN (accepted and ignored).
    #[param(default = false)]
    pub cudnn_off: bool,
    /// Data layout (only the channel-first NCW, NCHW, NCDHW are supported).
    #[param(default = None)]
    pub layout: Option<ConvLayout>,
}

/// `Deconvolution`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct DeconvolutionParams {
    /// Kernel size per spatial axis: (w,), (h, w) or (d, h, w).
    pub kernel: Vec<i64>,
    /// Stride of the matching convolution per spatial axis (empty: 1 on every axis).
    #[param(default = Vec::new())]
    pub stride: Vec<i64>,
    /// Kernel dilation per spatial axis (empty: 1 on every axis).
    #[param(default = Vec::new())]
    pub dilate: Vec<i64>,
    /// Padding of the matching convolution per spatial axis (empty: none; ignored with target_shape).
    #[param(default = Vec::new())]
    pub pad: Vec<i64>,
    /// Extra output size at the end of each spatial axis, below stride (ignored with target_shape).
    #[param(default = Vec::new())]
    pub adj: Vec<i64>,
    /// Output spatial shape; pad and adj are then derived from it.
    #[param(default = Vec::new())]
    pub target_shape: Vec<i64>,
    /// Number of output channels.
    pub num_filter: i64,
    /// Number of channel groups handled separately.
    #[param(default = 1)]
    pub num_group: i64,
    /// Scratch memory limit in MB (accepted and ignored).
    #[param(default = 512)]
    pub workspace: i64,
    /// Leave out the bias input.
    #[param(default = true)]
    pub no_bias: bool,
    /// cuDNN algorithm selection (accepted and ignored).
    #[param(default = None)]
    pub cudnn_tune: Option<CudnnTune>,
    /// Disable cuDNN (accepted and ignored).
    #[param(default = false)]
    pub cudnn_off: bool,
    /// Data layout (only the channel-first NCW, NCHW, NCDHW are supported).
    #[param(default = None)]
    pub layout: Option<ConvLayout>,
}

/// The checked geometry of Convolution and Deconvolution (`adj`/`target_shape` are
/// Deconvolution's, empty for a convolution).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvParams {
    pub win: Window,
    pub num_filter: usize,
    pub num_group: usize,
    pub no_bias: bool,
    pub layout: Option<String>,
    pub adj: Vec<usize>,
    pub target_shape: Vec<usize>,
}

/// `num_filter`/`num_group` must be positive.
fn positive_count(op: &str, key: &str, v: i64) -> Result<usize> {
    match usize::try_from(v) {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(Error::Value(format!("{op}: parameter '{key}' must be a positive integer, got {v}"))),
    }
}

impl ConvParams {
    /// A convolution's geometry from its declared parameters.
    pub fn from_conv(op: &str, p: &ConvolutionParams) -> Result<ConvParams> {
        let win = Window::new(op, &p.kernel, &p.stride, &p.dilate, &p.pad)?;
        let layout = p.layout.map(|l| l.name().to_string());
        check_layout(op, layout.as_deref(), win.nd())?;
        Ok(ConvParams {
            win,
            num_filter: positive_count(op, "num_filter", p.num_filter)?,
            num_group: positive_count(op, "num_group", p.num_group)?,
            no_bias: p.no_bias,
            layout,
            adj: Vec::new(),
            target_shape: Vec::new(),
        })
    }

    /// A deconvolution's geometry from its declared parameters.
    pub fn from_deconv(op: &str, p: &DeconvolutionParams) -> Result<ConvParams> {
        let win = Window::new(op, &p.kernel, &p.stride, &p.dilate, &p.pad)?;
        let layout = p.layout.map(|l| l.name().to_string());
        check_layout(op, layout.as_deref(), win.nd())?;
        let nd = win.nd();
        let list = |key: &str, t: &[i64]| -> Result<Vec<usize>> {
            if t.iter().all(|&v| v == 0) {
                Ok(Vec::new())
            } else if t.len() == nd && t.iter().all(|&v| v >= 0) {
                Ok(t.iter().map(|&v| v as usize).collect())
            } else {
                Err(Error::Value(format!(
                    "{op}: parameter '{key}' {} must have {nd} non-negative entries like kernel",
                    fmt_tuple(t)
                )))
            }
        };
        let (adj, target_shape) = (list("adj", &p.adj)?, list("target_shape", &p.target_shape)?);
        for (i, &a) in adj.iter().enumerate() {
            if a >= win.stride[i] {
                return Err(Error::Value(format!(
                    "{op}: adj {} must be smaller than stride {}",
                    fmt_us(&adj),
                    fmt_us(&win.stride)
                )));
            }
        }
        Ok(ConvParams {
            win,
            num_filter: positive_count(op, "num_filter", p.num_filter)?,
            num_group: positive_count(op, "num_group", p.num_group)?,
            no_bias: p.no_bias,
            layout,
            adj,
            target_shape,
        })
    }

    /// MXNet string attributes; `no_bias` is written when it differs from the op's default.
    fn attrs(&self, no_bias_default: bool) -> Vec<(&'static str, String)> {
        let mut v = Vec::new();
        self.win.attrs(&mut v, true);
        let t = |v: &[usize]| AttrValue::Tuple(v.iter().map(|&x| x as i64).collect()).to_mx_string();
        if !self.adj.is_empty() {
            v.push(("adj", t(&self.adj)));
        }
        if !self.target_shape.is_empty() {
            v.push(("target_shape", t(&self.target_shape)));
        }
        v.push(("num_filter", self.num_filter.to_string()));
        if self.num_group != 1 {
            v.push(("num_group", self.num_group.to_string()));
        }
        if self.no_bias != no_bias_default {
            v.push(("no_bias", if self.no_bias { "True" } else { "False" }.into()));
        }
        if let Some(l) = &self.layout {
            v.push(("layout", l.clone()));
        }
        v
    }

    fn check_data(&self, op: &str, data: &[usize]) -> Result<()> {
        let nd = self.win.nd();
        if data.len() != nd + 2 {
            return Err(Error::Shape(format!(
                "{op}: data must be {}-D ({}) for a {nd}-D kernel {}, got shape {}",
                nd + 2,
                ["N, C, W", "N, C, H, W", "N, C, D, H, W"][nd - 1],
                fmt_us(&self.win.kernel),
                fmt_shape(data)
            )));
        }
        if !data[1].is_multiple_of(self.num_group) || !self.num_filter.is_multiple_of(self.num_group) {
            return Err(Error::Shape(format!(
                "{op}: data of shape {} has {} channels and num_filter is {}; both must be divisible by num_group {}",
                fmt_shape(data),
                data[1],
                self.num_filter,
                self.num_group
            )));
        }
        Ok(())
    }

    fn check_arg(op: &str, name: &str, got: &[usize], want: &[usize], data: &[usize], extra: &str) -> Result<()> {
        if got != want {
            return Err(Error::Shape(format!(
                "{op}: {name} has shape {}, expected {} for data of shape {}{extra}",
                fmt_shape(got),
                fmt_shape(want),
                fmt_shape(data)
            )));
        }
        Ok(())
    }

    /// Convolution geometry and output shape for `data` and `weight` (and `bias`).
    pub(super) fn conv(
        &self,
        op: &str,
        data: &[usize],
        weight: &[usize],
        bias: Option<&[usize]>,
    ) -> Result<(ConvShape, Vec<usize>)> {
        self.check_data(op, data)?;
        let (n, c, f, g) = (data[0], data[1], self.num_filter, self.num_group);
        let mut w_want = vec![f, c / g];
        w_want.extend(&self.win.kernel);
        let extra = format!(" (num_filter={f}, num_group={g}, kernel={})", fmt_us(&self.win.kernel));
        Self::check_arg(op, "weight", weight, &w_want, data, &extra)?;
        if let Some(b) = bias {
            Self::check_arg(op, "bias", b, &[f], data, &extra)?;
        }
        let out_sp = self.win.conv_out(op, data)?;
        let mut out = vec![n, f];
        out.extend(&out_sp);
        Ok((ConvShape { n, f, groups: g, g: self.win.geom(c, &data[2..], &out_sp) }, out))
    }

    /// Deconvolution: (equivalent convolution geometry, effective pad, output shape).
    fn deconv(
        &self,
        op: &str,
        data: &[usize],
        weight: &[usize],
        bias: Option<&[usize]>,
    ) -> Result<(ConvShape, Vec<usize>, Vec<usize>)> {
        self.check_data(op, data)?;
        let (n, c, f, g) = (data[0], data[1], self.num_filter, self.num_group);
        let mut w_want = vec![c, f / g];
        w_want.extend(&self.win.kernel);
        let extra = format!(" (num_filter={f}, num_group={g}, kernel={})", fmt_us(&self.win.kernel));
        Self::check_arg(op, "weight", weight, &w_want, data, &extra)?;
        if let Some(b) = bias {
            Self::check_arg(op, "bias", b, &[f], data, &extra)?;
        }
        let nd = self.win.nd();
        let (mut pad, mut out_sp) = (Vec::new(), Vec::new());
        for i in 0..nd {
            let full = self.win.stride[i] * data[2 + i].saturating_sub(1) + self.win.extent(i);
            let (p, adj) = if self.target_shape.is_empty() {
                (self.win.pad[i], self.adj.get(i).copied().unwrap_or(0))
            } else {
                let t = self.target_shape[i];
                if t == 0 || t > full || (full - t) % 2 >= self.win.stride[i] {
                    return Err(Error::Shape(format!(
                        "{op}: target_shape {} cannot be reached from data of shape {}",
                        fmt_us(&self.target_shape),
                        fmt_shape(data)
                    )));
                }
                let total = full - t;
                (total.div_ceil(2), total % 2)
            };
            if 2 * p >= full + adj || data[2 + i] == 0 {
                return Err(Error::Shape(format!(
                    "{op}: pad {} is too large for kernel {} and data of shape {}",
                    fmt_us(&self.win.pad),
                    fmt_us(&self.win.kernel),
                    fmt_shape(data)
                )));
            }
            pad.push(p);
            out_sp.push(full + adj - 2 * p);
        }
        let mut win = self.win.clone();
        win.pad.clone_from(&pad);
        let mut out = vec![n, f];
        out.extend(&out_sp);
        Ok((ConvShape { n, f: c, groups: g, g: win.geom(f, &out_sp, &data[2..]) }, pad, out))
    }

    /// The plain convolution (no bias) that is this deconvolution's adjoint.
    fn adjoint_conv(&self, in_channels: usize, pad: Vec<usize>) -> ConvParams {
        let mut win = self.win.clone();
        win.pad = pad;
        ConvParams {
            win,
            num_filter: in_channels,
            num_group: self.num_group,
            no_bias: true,
            layout: self.layout.clone(),
            adj: Vec::new(),
            target_shape: Vec::new(),
        }
    }

    fn without_bias(&self) -> ConvParams {
        ConvParams { no_bias: true, ..self.clone() }
    }
}

const ARGS_BIAS: &[&str] = &["data", "weight", "bias"];
const ARGS_NO_BIAS: &[&str] = &["data", "weight"];

/// MXNet `Convolution`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Convolution {
    pub p: ConvParams,
}

impl Op for Convolution {
    fn name(&self) -> &'static str {
        "Convolution"
    }
    fn infer_missing(&self, inputs: &[Option<Meta>]) -> Vec<Option<Meta>> {
        let Some(d) = inputs.first().cloned().flatten() else { return Vec::new() };
        let Some(&c) = d.shape.get(1) else { return Vec::new() };
        let (g, nf) = (self.p.num_group.max(1), self.p.num_filter);
        let mut w = vec![nf, c / g];
        w.extend_from_slice(&self.p.win.kernel);
        vec![None, Some(Meta::new(&w, d.dtype)), Some(Meta::new(&[nf], d.dtype))]
    }
    fn arg_names(&self) -> &'static [&'static str] {
        if self.p.no_bias {
            ARGS_NO_BIAS
        } else {
            ARGS_BIAS
        }
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.p.attrs(false)
    }
    fn infer_partial(
        &self,
        ins: &mut [crate::ops::partial::PartialShape],
        outs: &mut [crate::ops::partial::PartialShape],
    ) -> Result<()> {
        let w = &self.p.win;
        let g = crate::ops::partial::ConvGeometry {
            kernel: &w.kernel,
            stride: &w.stride,
            dilate: &w.dilate,
            pad: &w.pad,
            num_filter: self.p.num_filter,
            num_group: self.p.num_group,
        };
        crate::ops::partial::convolution(&g, ins, outs)
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let dt = check_float(self.name(), self.arg_names(), inputs)?;
        let bias = inputs.get(2).map(|m| &m.shape[..]);
        let (_, out) = self.p.conv(self.name(), &inputs[0].shape, &inputs[1].shape, bias)?;
        Ok(vec![Meta::new(&out, dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let bias_shape = inputs.get(2).map(|b| b.shape().to_vec());
        let (s, _) = self.p.conv(self.name(), inputs[0].shape(), inputs[1].shape(), bias_shape.as_deref())?;
        let (x, w, b) = (Contig::new(&inputs[0]), Contig::new(&inputs[1]), inputs.get(2).map(Contig::new));
        float_kernel!(self.name(), inputs[0].dtype(), T => outputs[0]
            .write_out::<T, _>(|y| conv_forward::<T>(&s, x.get(), w.get(), b.as_ref().map(|b| b.get()), y)))
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        let outs = g.apply(Arc::new(ConvBackward { p: self.p.clone() }), &[out_grads[0], inputs[0], inputs[1]])?;
        Ok(outs.into_iter().map(Some).collect())
    }
}

/// `_backward_Convolution(ograd, data, weight)` → `(data_grad, weight_grad[, bias_grad])`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvBackward {
    pub p: ConvParams,
}

impl ConvBackward {
    fn shapes(&self, gy: &[usize], x: &[usize], w: &[usize]) -> Result<ConvShape> {
        let (s, out) = self.p.conv(self.name(), x, w, None)?;
        if gy != out.as_slice() {
            return Err(Error::Shape(format!(
                "{}: ograd has shape {}, expected {} (the Convolution output for data {})",
                self.name(),
                fmt_shape(gy),
                fmt_shape(&out),
                fmt_shape(x)
            )));
        }
        Ok(s)
    }
}

impl Op for ConvBackward {
    fn name(&self) -> &'static str {
        "_backward_Convolution"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["ograd", "data", "weight"]
    }
    fn num_outputs(&self) -> usize {
        if self.p.no_bias {
            2
        } else {
            3
        }
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.p.attrs(false)
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let dt = check_float(self.name(), self.arg_names(), inputs)?;
        self.shapes(&inputs[0].shape, &inputs[1].shape, &inputs[2].shape)?;
        let mut v = vec![Meta::new(&inputs[1].shape, dt), Meta::new(&inputs[2].shape, dt)];
        if !self.p.no_bias {
            v.push(Meta::new(&[self.p.num_filter], dt));
        }
        Ok(v)
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let s = self.shapes(inputs[0].shape(), inputs[1].shape(), inputs[2].shape())?;
        let (gy, x, w) = (Contig::new(&inputs[0]), Contig::new(&inputs[1]), Contig::new(&inputs[2]));
        let (o0, rest) = outputs.split_at_mut(1);
        let (o1, o2) = rest.split_at_mut(1);
        float_kernel!(self.name(), inputs[0].dtype(), T => {
            let run = |dx: &mut [T], dw: &mut [T], db: Option<&mut [T]>| {
                conv_backward::<T>(&s, gy.get(), Some(x.get()), w.get(), Some(dx), Some(dw), db)
            };
            o0[0].write_out::<T, _>(|dx| {
                o1[0].write_out::<T, _>(|dw| match o2.first_mut() {
                    Some(b) => b.write_out::<T, _>(|db| run(dx, dw, Some(db))),
                    None => {
                        run(dx, dw, None);
                        Ok(())
                    }
                })
            })???;
            Ok(())
        })
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        let (gy, x, w) = (inputs[0], inputs[1], inputs[2]);
        let (hx, hw) = (out_grads[0], out_grads[1]);
        let nb = self.p.without_bias();
        // data_grad = Wᵀ⋆gy and weight_grad = x⋆gy, so:
        // d/d gy = conv(hx, W) + conv(x, hw) (+ hb broadcast), d/dx = dX(gy, hw), d/dW = dW(hx, gy).
        let a = g.apply1(Convolution { p: nb.clone() }, &[hx, w])?;
        let b = g.apply1(Convolution { p: nb.clone() }, &[x, hw])?;
        let mut ggy = g.add(a, b)?;
        if !self.p.no_bias {
            let mut shape = vec![1; self.p.win.nd() + 2];
            shape[1] = self.p.num_filter;
            let hb = g.reshape(out_grads[2], &shape)?;
            ggy = g.add(ggy, hb)?;
        }
        let second = g.apply(Arc::new(ConvBackward { p: nb }), &[gy, hx, hw])?;
        Ok(vec![Some(ggy), Some(second[0]), Some(second[1])])
    }
}

/// MXNet `Deconvolution` (transposed convolution; weight is `(C_in, num_filter/num_group, k...)`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deconvolution {
    pub p: ConvParams,
}

impl Op for Deconvolution {
    fn name(&self) -> &'static str {
        "Deconvolution"
    }
    fn infer_missing(&self, inputs: &[Option<Meta>]) -> Vec<Option<Meta>> {
        let Some(d) = inputs.first().cloned().flatten() else { return Vec::new() };
        let Some(&c) = d.shape.get(1) else { return Vec::new() };
        let (g, nf) = (self.p.num_group.max(1), self.p.num_filter);
        let mut w = vec![c, nf / g];
        w.extend_from_slice(&self.p.win.kernel);
        vec![None, Some(Meta::new(&w, d.dtype)), Some(Meta::new(&[nf], d.dtype))]
    }
    fn arg_names(&self) -> &'static [&'static str] {
        if self.p.no_bias {
            ARGS_NO_BIAS
        } else {
            ARGS_BIAS
        }
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.p.attrs(true)
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let dt = check_float(self.name(), self.arg_names(), inputs)?;
        let bias = inputs.get(2).map(|m| &m.shape[..]);
        let (_, _, out) = self.p.deconv(self.name(), &inputs[0].shape, &inputs[1].shape, bias)?;
        Ok(vec![Meta::new(&out, dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let bias_shape = inputs.get(2).map(|b| b.shape().to_vec());
        let (s, _, out) = self.p.deconv(self.name(), inputs[0].shape(), inputs[1].shape(), bias_shape.as_deref())?;
        let (x, w, b) = (Contig::new(&inputs[0]), Contig::new(&inputs[1]), inputs.get(2).map(Contig::new));
        let plane: usize = out[2..].iter().product();
        float_kernel!(self.name(), inputs[0].dtype(), T => outputs[0].write_out::<T, _>(|y| {
            conv_backward::<T>(&s, x.get(), None, w.get(), Some(&mut *y), None, None);
            if let Some(b) = &b {
                let bv = b.get::<T>();
                for (i, row) in y.chunks_mut(plane.max(1)).enumerate() {
                    let v = bv[i % bv.len().max(1)];
                    row.iter_mut().for_each(|e| *e += v);
                }
            }
        }))
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        let (x, w, gy) = (inputs[0], inputs[1], out_grads[0]);
        let (xs, ws) = (g.shape(x), g.shape(w));
        let (_, pad, _) = self.p.deconv(self.name(), &xs, &ws, None)?;
        let cp = self.p.adjoint_conv(xs[1], pad);
        // y = Wᵀ⋆x: dx = conv(gy, W); dW = the convolution weight gradient with data gy, ograd x.
        let dx = g.apply1(Convolution { p: cp.clone() }, &[gy, w])?;
        let bw = g.apply(Arc::new(ConvBackward { p: cp }), &[x, gy, w])?;
        let mut v = vec![Some(dx), Some(bw[1])];
        if !self.p.no_bias {
            let axes: Vec<i64> = (0..xs.len() as i64).filter(|&d| d != 1).collect();
            v.push(Some(g.sum_axes(gy, axes, false)?));
        }
        Ok(v)
    }
}

fn build_convolution(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(Convolution { p: ConvParams::from_conv(&a.op, &ConvolutionParams::parse(a)?)? }))
}

fn build_conv_backward(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(ConvBackward { p: ConvParams::from_conv(&a.op, &ConvolutionParams::parse(a)?)? }))
}

fn build_deconvolution(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(Deconvolution { p: ConvParams::from_deconv(&a.op, &DeconvolutionParams::parse(a)?)? }))
}

/// The convolution ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "Convolution",
        aliases: &[],
        args: &["data", "weight", "bias?"],
        doc: "1-D/2-D/3-D convolution (NCW/NCHW/NCDHW) with stride, dilate, pad, num_group; weight (num_filter, C/num_group, kernel...).",
        params: ConvolutionParams::schema,
        build: build_convolution,
    },
    OpDef {
        name: "_backward_Convolution",
        aliases: &[],
        args: &["ograd", "data", "weight"],
        doc: "Fused Convolution gradient: (data_grad, weight_grad[, bias_grad]) from (ograd, data, weight).",
        params: ConvolutionParams::schema,
        build: build_conv_backward,
    },
    OpDef {
        name: "Deconvolution",
        aliases: &[],
        args: &["data", "weight", "bias?"],
        doc: "Transposed convolution; weight (C, num_filter/num_group, kernel...); output s*(in-1)+d*(k-1)+1-2*pad+adj, or target_shape.",
        params: DeconvolutionParams::schema,
        build: build_deconvolution,
    },
];
