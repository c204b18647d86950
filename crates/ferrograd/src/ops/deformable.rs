//! Deformable convolution: `_contrib_DeformableConvolution` (DCNv1) and
//! `_contrib_ModulatedDeformableConvolution` (DCNv2, with a per-tap `mask`).
//!
//! Each kernel tap (i, j) of output position (ho, wo) reads the input at the regular position
//! plus a learnt (dy, dx) from `offset`, by bilinear interpolation, zero outside the image with
//! MXNet's two border rules (see [`corners`]). The sampled values
//! form the columns of an im2col matrix (rows channel-major, then tap), and the output is the
//! grouped GEMM `weight · columns` per image. Images are independent, so large batches are split
//! over the pool by image; the weight gradient is the sum of per-image products in image order,
//! so results do not depend on the thread count. Where the gradient may be differentiated again
//! (a `create_graph` backward) it is built from the sampling ops of `deformable_grad` and
//! batched products, differentiable to any order; elsewhere it is the fused backward op
//! `_backward_X` (MXNet's, first order only), about twice as fast.

use std::sync::Arc;

use ferrograd_kernels::element::Element;
use ferrograd_kernels::matmul::{gemm, GemmElement};
use ferrograd_kernels::par::{map_tasks, Cost};

use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::conv::{check_float, fmt_us, Contig, Window};
use crate::ops::params::{OpDef, OpParams, ParamEnum};
use crate::ops::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};

/// MXNet's `layout` values for the deformable convolutions (only NCHW runs: the ops are 2-D).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ParamEnum)]
pub enum DcnLayout {
    #[param(name = "NCDHW")]
    Ncdhw,
    #[param(name = "NCHW")]
    Nchw,
    #[param(name = "NCW")]
    Ncw,
}

/// `_contrib_DeformableConvolution`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct DeformableConvolutionParams {
    /// Kernel size (h, w).
    pub kernel: Vec<i64>,
    /// Step (h, w) (empty: 1).
    #[param(default = Vec::new())]
    pub stride: Vec<i64>,
    /// Kernel dilation (h, w) (empty: 1).
    #[param(default = Vec::new())]
    pub dilate: Vec<i64>,
    /// Zero padding (h, w) on both sides (empty: none).
    #[param(default = Vec::new())]
    pub pad: Vec<i64>,
    /// Number of output channels.
    pub num_filter: i64,
    /// Number of channel groups convolved separately.
    #[param(default = 1)]
    pub num_group: i64,
    /// Number of channel groups with their own offsets.
    #[param(default = 1)]
    pub num_deformable_group: i64,
    /// Scratch memory limit in MB (accepted and ignored).
    #[param(default = 1024)]
    pub workspace: i64,
    /// Leave out the bias input.
    #[param(default = false)]
    pub no_bias: bool,
    /// Data layout (only NCHW is supported).
    #[param(default = None)]
    pub layout: Option<DcnLayout>,
}

/// `_contrib_ModulatedDeformableConvolution`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct ModulatedDeformableConvolutionParams {
    /// Kernel size (h, w).
    pub kernel: Vec<i64>,
    /// Step (h, w) (empty: 1).
    #[param(default = Vec::new())]
    pub stride: Vec<i64>,
    /// Kernel dilation (h, w) (empty: 1).
    #[param(default = Vec::new())]
    pub dilate: Vec<i64>,
    /// Zero padding (h, w) on both sides (empty: none).
    #[param(default = Vec::new())]
    pub pad: Vec<i64>,
    /// Number of output channels.
    pub num_filter: i64,
    /// Number of channel groups convolved separately.
    #[param(default = 1)]
    pub num_group: i64,
    /// Number of channel groups with their own offsets and masks.
    #[param(default = 1)]
    pub num_deformable_group: i64,
    /// Scratch memory limit in MB (accepted and ignored).
    #[param(default = 1024)]
    pub workspace: i64,
    /// Leave out the bias input.
    #[param(default = false)]
    pub no_bias: bool,
    /// Images per im2col step in MXNet (accepted; results do not depend on it).
    #[param(default = 64)]
    pub im2col_step: i64,
    /// Data layout (only NCHW is supported).
    #[param(default = None)]
    pub layout: Option<DcnLayout>,
}

/// The checked parameters of either op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dcn {
    /// DCNv2: a `mask` input after `offset`.
    pub(crate) modulated: bool,
    pub(crate) win: Window,
    pub(crate) num_filter: usize,
    pub(crate) num_group: usize,
    pub(crate) deform_groups: usize,
    pub(crate) no_bias: bool,
    im2col_step: i64,
    layout: Option<&'static str>,
}

/// Sizes of one problem.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Dims {
    pub(crate) n: usize,
    pub(crate) c: usize,
    pub(crate) h: usize,
    pub(crate) w: usize,
    f: usize,
    groups: usize,
    pub(crate) dg: usize,
    kh: usize,
    kw: usize,
    pub(crate) ho: usize,
    pub(crate) wo: usize,
    stride: [usize; 2],
    pad: [usize; 2],
    dilate: [usize; 2],
}

impl Dims {
    pub(crate) fn taps(&self) -> usize {
        self.kh * self.kw
    }
    pub(crate) fn positions(&self) -> usize {
        self.ho * self.wo
    }
    /// Rows of one image's column matrix.
    fn rows(&self) -> usize {
        self.c * self.taps()
    }
}

fn count(op: &str, key: &str, v: i64) -> Result<usize> {
    match usize::try_from(v) {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(Error::Value(format!("{op}: parameter '{key}' must be a positive integer, got {v}"))),
    }
}

impl Dcn {
    #[allow(clippy::too_many_arguments)]
    fn new(
        op: &str,
        modulated: bool,
        kernel: &[i64],
        stride: &[i64],
        dilate: &[i64],
        pad: &[i64],
        num_filter: i64,
        num_group: i64,
        num_deformable_group: i64,
        no_bias: bool,
        im2col_step: i64,
        layout: Option<DcnLayout>,
    ) -> Result<Dcn> {
        let win = Window::new(op, kernel, stride, dilate, pad)?;
        if win.nd() != 2 {
            return Err(Error::Value(format!(
                "{op}: only 2-D kernels (h, w) are supported, got kernel {}",
                fmt_us(&win.kernel)
            )));
        }
        let layout = layout.map(|l| l.name());
        if layout.is_some_and(|l| l != "NCHW") {
            return Err(Error::Value(format!("{op}: layout must be NCHW (2-D), got {}", layout.unwrap_or(""))));
        }
        Ok(Dcn {
            modulated,
            win,
            num_filter: count(op, "num_filter", num_filter)?,
            num_group: count(op, "num_group", num_group)?,
            deform_groups: count(op, "num_deformable_group", num_deformable_group)?,
            no_bias,
            im2col_step,
            layout,
        })
    }

    fn name(&self) -> &'static str {
        if self.modulated {
            "_contrib_ModulatedDeformableConvolution"
        } else {
            "_contrib_DeformableConvolution"
        }
    }

    fn backward_name(&self) -> &'static str {
        if self.modulated {
            "_backward_ModulatedDeformableConvolution"
        } else {
            "_backward_DeformableConvolution"
        }
    }

    fn arg_names(&self) -> &'static [&'static str] {
        match (self.modulated, self.no_bias) {
            (false, false) => &["data", "offset", "weight", "bias"],
            (false, true) => &["data", "offset", "weight"],
            (true, false) => &["data", "offset", "mask", "weight", "bias"],
            (true, true) => &["data", "offset", "mask", "weight"],
        }
    }

    /// Index of `weight` in the inputs (after data, offset[, mask]).
    fn weight_at(&self) -> usize {
        if self.modulated {
            3
        } else {
            2
        }
    }

    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = Vec::new();
        self.win.attrs(&mut v, true);
        v.push(("num_filter", self.num_filter.to_string()));
        v.push(("num_group", self.num_group.to_string()));
        v.push(("num_deformable_group", self.deform_groups.to_string()));
        v.push(("no_bias", if self.no_bias { "True" } else { "False" }.into()));
        if self.modulated {
            v.push(("im2col_step", self.im2col_step.to_string()));
        }
        if let Some(l) = self.layout {
            v.push(("layout", l.to_string()));
        }
        v
    }

    /// The output spatial size for `data`, checking the data and the groups.
    pub(crate) fn out_size(&self, op: &str, data: &[usize]) -> Result<[usize; 2]> {
        if data.len() != 4 {
            return Err(Error::Shape(format!("{op}: data must be 4-D (N, C, H, W), got shape {}", fmt_shape(data))));
        }
        let (c, f) = (data[1], self.num_filter);
        if !c.is_multiple_of(self.num_group) || !f.is_multiple_of(self.num_group) {
            return Err(Error::Shape(format!(
                "{op}: data of shape {} has {c} channels and num_filter is {f}; both must be divisible by num_group {}",
                fmt_shape(data),
                self.num_group
            )));
        }
        if !c.is_multiple_of(self.deform_groups) {
            return Err(Error::Shape(format!(
                "{op}: data of shape {} has {c} channels, not divisible by num_deformable_group {}",
                fmt_shape(data),
                self.deform_groups
            )));
        }
        let o = self.win.conv_out(op, data)?;
        Ok([o[0], o[1]])
    }

    /// The expected shapes of (offset, mask, weight, bias) for `data`.
    pub(crate) fn arg_shapes(&self, data: &[usize], out: [usize; 2]) -> [Vec<usize>; 4] {
        let taps = self.win.kernel[0] * self.win.kernel[1];
        let dg = self.deform_groups;
        let mut w = vec![self.num_filter, data[1] / self.num_group];
        w.extend(&self.win.kernel);
        [
            vec![data[0], 2 * dg * taps, out[0], out[1]],
            vec![data[0], dg * taps, out[0], out[1]],
            w,
            vec![self.num_filter],
        ]
    }

    /// Checks every input's shape (`inputs` in op order, without ograd) and gives the sizes.
    pub(crate) fn dims(&self, op: &str, inputs: &[&[usize]]) -> Result<Dims> {
        let data = inputs[0];
        let out = self.out_size(op, data)?;
        let want = self.arg_shapes(data, out);
        let k = fmt_us(&self.win.kernel);
        let check = |name: &str, got: &[usize], want: &[usize], why: String| -> Result<()> {
            if got != want {
                return Err(Error::Shape(format!(
                    "{op}: {name} has shape {}, expected {} for data of shape {} ({why})",
                    fmt_shape(got),
                    fmt_shape(want),
                    fmt_shape(data)
                )));
            }
            Ok(())
        };
        let dg = self.deform_groups;
        check(
            "offset",
            inputs[1],
            &want[0],
            format!("2·kh·kw·num_deformable_group channels, kernel {k}, {dg} groups"),
        )?;
        if self.modulated {
            check(
                "mask",
                inputs[2],
                &want[1],
                format!("kh·kw·num_deformable_group channels, kernel {k}, {dg} groups"),
            )?;
        }
        let wi = self.weight_at();
        let why = format!("num_filter={}, num_group={}, kernel {k}", self.num_filter, self.num_group);
        check("weight", inputs[wi], &want[2], why.clone())?;
        if let Some(b) = inputs.get(wi + 1) {
            check("bias", b, &want[3], why)?;
        }
        let [s, p, d] = [&self.win.stride, &self.win.pad, &self.win.dilate];
        Ok(Dims {
            n: data[0],
            c: data[1],
            h: data[2],
            w: data[3],
            f: self.num_filter,
            groups: self.num_group,
            dg,
            kh: self.win.kernel[0],
            kw: self.win.kernel[1],
            ho: out[0],
            wo: out[1],
            stride: [s[0], s[1]],
            pad: [p[0], p[1]],
            dilate: [d[0], d[1]],
        })
    }
}

/// One bilinear corner: flat index in the plane, value weight, and the weight's derivatives
/// along y and x.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Corner {
    pub(crate) at: usize,
    pub(crate) wt: f64,
    pub(crate) dy: f64,
    pub(crate) dx: f64,
    /// The weight's mixed derivative along y and x.
    pub(crate) dyx: f64,
}

/// The in-image corners of a bilinear sample at (y, x) of an (h, w) plane.
///
/// DCNv2 (`clamp` false): a point outside (-1, h) × (-1, w) reads 0, and so does each corner
/// outside the image. DCNv1 (`clamp` true, MXNet's DeformableConvolution): a point outside
/// [0, h) × [0, w) reads 0, and in the last row (column) the sample does not fade but repeats
/// it (both corners on that row, the second with weight 0, so the y derivative there is 0).
fn corners(y: f64, x: f64, h: usize, w: usize, clamp: bool, out: &mut Vec<Corner>) {
    out.clear();
    let lo = if clamp { 0.0 } else { -1.0 };
    let inside = if clamp { y >= lo && x >= lo } else { y > lo && x > lo };
    if !(inside && y < h as f64 && x < w as f64) {
        return;
    }
    let axis = |v: f64, n: usize| -> (isize, isize, f64) {
        let v0 = v.floor();
        if clamp && v0 >= (n - 1) as f64 {
            ((n - 1) as isize, (n - 1) as isize, 0.0)
        } else {
            (v0 as isize, v0 as isize + 1, v - v0)
        }
    };
    let ((y0, y1, ly), (x0, x1, lx)) = (axis(y, h), axis(x, w));
    for (cy, wy, dwy) in [(y0, 1.0 - ly, -1.0), (y1, ly, 1.0)] {
        if cy < 0 || cy >= h as isize {
            continue;
        }
        for (cx, wx, dwx) in [(x0, 1.0 - lx, -1.0), (x1, lx, 1.0)] {
            if cx < 0 || cx >= w as isize {
                continue;
            }
            let at = cy as usize * w + cx as usize;
            out.push(Corner { at, wt: wy * wx, dy: dwy * wx, dx: wy * dwx, dyx: dwy * dwx });
        }
    }
}

/// Read access to one image's data, offsets and mask (DCNv2; `None` samples as DCNv1).
pub(crate) struct Image<'a, T> {
    pub(crate) x: &'a [T],
    pub(crate) off: &'a [T],
    pub(crate) mask: Option<&'a [T]>,
}

impl<T: GemmElement> Image<'_, T> {
    /// Calls `f(row, position, mask, corners)` for every column element, with the sampling
    /// point's corners in the row's data plane (`row / taps` is the channel).
    fn visit(&self, d: &Dims, f: impl FnMut(usize, usize, f64, &[Corner], (usize, usize))) {
        self.visit_with(d, self.mask.is_none(), f);
    }

    /// [`Self::visit`] with the border rule given (`clamp`: DCNv1's).
    pub(crate) fn visit_with(
        &self,
        d: &Dims,
        clamp: bool,
        mut f: impl FnMut(usize, usize, f64, &[Corner], (usize, usize)),
    ) {
        let (taps, l, cg) = (d.taps(), d.positions(), d.c / d.dg);
        let mut buf = Vec::with_capacity(4);
        for c in 0..d.c {
            let g = c / cg;
            for t in 0..taps {
                let (i, j) = (t / d.kw, t % d.kw);
                // Channels of this tap's (dy, dx) offsets and its mask.
                let (oy, ox) = ((g * taps + t) * 2 * l, ((g * taps + t) * 2 + 1) * l);
                let mi = (g * taps + t) * l;
                for p in 0..l {
                    let (ho, wo) = (p / d.wo, p % d.wo);
                    let base_y = (ho * d.stride[0] + i * d.dilate[0]) as f64 - d.pad[0] as f64;
                    let base_x = (wo * d.stride[1] + j * d.dilate[1]) as f64 - d.pad[1] as f64;
                    let y = base_y + self.off[oy + p].to_f64();
                    let x = base_x + self.off[ox + p].to_f64();
                    corners(y, x, d.h, d.w, clamp, &mut buf);
                    let m = self.mask.map_or(1.0, |m| m[mi + p].to_f64());
                    f(c * taps + t, p, m, &buf, (oy + p, mi + p));
                }
            }
        }
    }

    /// The image's column matrix (rows × positions).
    fn columns(&self, d: &Dims) -> Vec<T> {
        let (l, hw) = (d.positions(), d.h * d.w);
        let mut col = vec![T::zero(); d.rows() * l];
        self.visit(d, |r, p, m, cs, _| {
            let plane = &self.x[(r / d.taps()) * hw..][..hw];
            let v: f64 = cs.iter().map(|c| c.wt * plane[c.at].to_f64()).sum();
            col[r * l + p] = T::from_f64(m * v);
        });
        col
    }
}

/// `y[n] = weight · columns(n) (+ bias)`, group by group.
fn forward<T: GemmElement>(d: &Dims, img: &Image<'_, T>, weight: &[T], bias: Option<&[T]>, y: &mut [T]) {
    let col = img.columns(d);
    let l = d.positions();
    let (fg, kg) = (d.f / d.groups, d.c / d.groups * d.taps());
    for g in 0..d.groups {
        let out = &mut y[g * fg * l..][..fg * l];
        gemm(fg, l, kg, weight, (g * fg * kg, kg as isize, 1), &col, (g * kg * l, l as isize, 1), out, false);
    }
    if let Some(b) = bias {
        for (row, bv) in y.chunks_mut(l.max(1)).zip(b) {
            row.iter_mut().for_each(|e| *e = T::from_f64(e.to_f64() + bv.to_f64()));
        }
    }
}

/// One image's gradients: data, offset, mask (modulated) and its weight-gradient term.
struct ImageGrads<T> {
    dx: Vec<T>,
    doff: Vec<T>,
    dmask: Vec<T>,
    dw: Vec<T>,
}

fn backward<T: GemmElement>(d: &Dims, img: &Image<'_, T>, gy: &[T], weight: &[T]) -> ImageGrads<T> {
    let (l, hw, taps) = (d.positions(), d.h * d.w, d.taps());
    let (fg, kg) = (d.f / d.groups, d.c / d.groups * taps);
    // Column gradient weightᵀ · gy, group by group.
    let mut dcol = vec![T::zero(); d.rows() * l];
    for g in 0..d.groups {
        let out = &mut dcol[g * kg * l..][..kg * l];
        gemm(kg, l, fg, weight, (g * fg * kg, 1, kg as isize), gy, (g * fg * l, l as isize, 1), out, false);
    }
    let (mut dx, mut doff) = (vec![0.0f64; d.c * hw], vec![0.0f64; img.off.len()]);
    let mut dmask = vec![0.0f64; img.mask.map_or(0, |m| m.len())];
    img.visit(d, |r, p, m, cs, (oy, mi)| {
        let gc = dcol[r * l + p].to_f64();
        if gc == 0.0 || cs.is_empty() {
            return;
        }
        let ch = r / taps;
        let plane = &img.x[ch * hw..][..hw];
        let (mut v, mut vy, mut vx) = (0.0, 0.0, 0.0);
        for c in cs {
            let xv = plane[c.at].to_f64();
            v += c.wt * xv;
            vy += c.dy * xv;
            vx += c.dx * xv;
            dx[ch * hw + c.at] += gc * m * c.wt;
        }
        doff[oy] += gc * m * vy;
        doff[oy + l] += gc * m * vx;
        if !dmask.is_empty() {
            dmask[mi] += gc * v;
        }
    });
    let col = img.columns(d);
    let mut dw = vec![T::zero(); d.f * kg];
    for g in 0..d.groups {
        let out = &mut dw[g * fg * kg..][..fg * kg];
        gemm(fg, kg, l, gy, (g * fg * l, l as isize, 1), &col, (g * kg * l, 1, l as isize), out, false);
    }
    let cast = |v: Vec<f64>| v.into_iter().map(T::from_f64).collect();
    ImageGrads { dx: cast(dx), doff: cast(doff), dmask: cast(dmask), dw }
}

/// The inputs as contiguous snapshots: data, offset, mask?, weight, bias?.
struct Inputs {
    x: Contig,
    off: Contig,
    mask: Option<Contig>,
    w: Contig,
    b: Option<Contig>,
}

impl Inputs {
    fn new(p: &Dcn, inputs: &[NDArray]) -> Inputs {
        let wi = p.weight_at();
        Inputs {
            x: Contig::new(&inputs[0]),
            off: Contig::new(&inputs[1]),
            mask: p.modulated.then(|| Contig::new(&inputs[2])),
            w: Contig::new(&inputs[wi]),
            b: inputs.get(wi + 1).map(Contig::new),
        }
    }

    fn image<'a, T: GemmElement + crate::dtype::DTypeElem>(&'a self, d: &Dims, n: usize) -> Image<'a, T> {
        let (taps, l) = (d.taps(), d.positions());
        let mo = d.dg * taps * l;
        Image {
            x: &self.x.get::<T>()[n * d.c * d.h * d.w..][..d.c * d.h * d.w],
            off: &self.off.get::<T>()[n * 2 * mo..][..2 * mo],
            mask: self.mask.as_ref().map(|m| &m.get::<T>()[n * mo..][..mo]),
        }
    }
}

/// Per-image work in multiply-adds, for the parallel policy.
fn work(d: &Dims) -> usize {
    d.n * d.rows() * d.positions() * (d.f / d.groups + 4)
}

/// `_contrib_DeformableConvolution` / `_contrib_ModulatedDeformableConvolution`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeformableConvolution {
    pub p: Dcn,
}

impl Op for DeformableConvolution {
    fn name(&self) -> &'static str {
        self.p.name()
    }
    fn arg_names(&self) -> &'static [&'static str] {
        self.p.arg_names()
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.p.attrs()
    }
    fn infer_missing(&self, inputs: &[Option<Meta>]) -> Vec<Option<Meta>> {
        let Some(d) = inputs.first().cloned().flatten() else { return Vec::new() };
        let Ok(out) = self.p.out_size(self.name(), &d.shape) else { return Vec::new() };
        let [off, mask, w, b] = self.p.arg_shapes(&d.shape, out);
        let mut v = vec![None, Some(Meta::new(&off, d.dtype))];
        if self.p.modulated {
            v.push(Some(Meta::new(&mask, d.dtype)));
        }
        v.push(Some(Meta::new(&w, d.dtype)));
        if !self.p.no_bias {
            v.push(Some(Meta::new(&b, d.dtype)));
        }
        v
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let dt = check_float(self.name(), self.arg_names(), inputs)?;
        let shapes: Vec<&[usize]> = inputs.iter().map(|m| &m.shape[..]).collect();
        let d = self.p.dims(self.name(), &shapes)?;
        Ok(vec![Meta::new(&[d.n, d.f, d.ho, d.wo], dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let shapes: Vec<&[usize]> = inputs.iter().map(|a| a.shape()).collect();
        let d = self.p.dims(self.name(), &shapes)?;
        let ins = Inputs::new(&self.p, inputs);
        let per = d.f * d.positions();
        float_kernel!(self.name(), inputs[0].dtype(), T => {
            let (w, b) = (ins.w.get::<T>(), ins.b.as_ref().map(|b| b.get::<T>()));
            let ys = map_tasks(d.n, work(&d), Cost::Heavy, |n| {
                let mut y = vec![T::zero(); per];
                forward(&d, &ins.image::<T>(&d, n), w, b, &mut y);
                y
            });
            outputs[0].write_out::<T, _>(|out| {
                for (o, y) in out.chunks_mut(per.max(1)).zip(&ys) {
                    o.copy_from_slice(y);
                }
            })
        })
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        if g.differentiable() {
            return super::deformable_grad::grad(g, &self.p, inputs, out_grads[0]);
        }
        // First order only (an executor, or a backward without create_graph): the fused op,
        // about twice as fast as the differentiable composition.
        let wi = self.p.weight_at();
        let mut args = vec![out_grads[0]];
        args.extend_from_slice(&inputs[..=wi]);
        let outs = g.apply(Arc::new(DeformableBackward { p: self.p.clone() }), &args)?;
        Ok(outs.into_iter().map(Some).collect())
    }
}

/// `_backward_(Modulated)DeformableConvolution(ograd, data, offset[, mask], weight)` →
/// `(data_grad, offset_grad[, mask_grad], weight_grad[, bias_grad])`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeformableBackward {
    pub p: Dcn,
}

impl Op for DeformableBackward {
    fn name(&self) -> &'static str {
        self.p.backward_name()
    }
    fn arg_names(&self) -> &'static [&'static str] {
        if self.p.modulated {
            &["ograd", "data", "offset", "mask", "weight"]
        } else {
            &["ograd", "data", "offset", "weight"]
        }
    }
    fn num_outputs(&self) -> usize {
        self.p.weight_at() + 1 + usize::from(!self.p.no_bias)
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.p.attrs()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let dt = check_float(self.name(), self.arg_names(), inputs)?;
        let shapes: Vec<&[usize]> = inputs[1..].iter().map(|m| &m.shape[..]).collect();
        let d = self.p.dims(self.name(), &shapes)?;
        let want = [d.n, d.f, d.ho, d.wo];
        if inputs[0].shape[..] != want[..] {
            return Err(Error::Shape(format!(
                "{}: ograd has shape {}, expected {}",
                self.name(),
                fmt_shape(&inputs[0].shape),
                fmt_shape(&want)
            )));
        }
        let mut v: Vec<Meta> = inputs[1..].iter().map(|m| Meta::new(&m.shape, dt)).collect();
        if !self.p.no_bias {
            v.push(Meta::new(&[d.f], dt));
        }
        Ok(v)
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let shapes: Vec<&[usize]> = inputs[1..].iter().map(|a| a.shape()).collect();
        let d = self.p.dims(self.name(), &shapes)?;
        let ins = Inputs::new(&self.p, &inputs[1..]);
        let gy = Contig::new(&inputs[0]);
        let per = d.f * d.positions();
        let wi = self.p.weight_at();
        float_kernel!(self.name(), inputs[0].dtype(), T => {
            let (gyv, w) = (gy.get::<T>(), ins.w.get::<T>());
            let parts = map_tasks(d.n, 2 * work(&d), Cost::Heavy, |n| {
                backward(&d, &ins.image::<T>(&d, n), &gyv[n * per..][..per], w)
            });
            let cat = |f: &dyn Fn(&ImageGrads<T>) -> &[T]| -> Vec<T> {
                parts.iter().flat_map(|p| f(p).iter().copied()).collect()
            };
            let mut grads = vec![cat(&|p| &p.dx), cat(&|p| &p.doff)];
            if self.p.modulated {
                grads.push(cat(&|p| &p.dmask));
            }
            // The weight gradient sums the images in order, whatever the thread count.
            let mut dw = vec![T::zero(); w.len()];
            for p in &parts {
                dw.iter_mut().zip(&p.dw).for_each(|(a, b)| *a = T::from_f64(a.to_f64() + b.to_f64()));
            }
            grads.push(dw);
            if !self.p.no_bias {
                let l = d.positions().max(1);
                let mut db = vec![0.0f64; d.f];
                for (r, row) in gyv.chunks(l).enumerate() {
                    db[r % d.f] += row.iter().map(|v| v.to_f64()).sum::<f64>();
                }
                grads.push(db.into_iter().map(T::from_f64).collect());
            }
            debug_assert_eq!(grads.len(), wi + 1 + usize::from(!self.p.no_bias));
            for (o, gv) in outputs.iter_mut().zip(&grads) {
                o.write_out::<T, _>(|out| out.copy_from_slice(gv))?;
            }
            Ok(())
        })
    }
    fn differentiable(&self) -> bool {
        false
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(
        &self,
        _g: &mut Grad<'_>,
        _inputs: &[Val],
        _outputs: &[Val],
        _out_grads: &[Val],
    ) -> Result<Vec<Option<Val>>> {
        Err(Error::Value(format!("{} has no gradient (second order is not supported)", self.name())))
    }
}

fn dcn_v1(a: &Attrs) -> Result<Dcn> {
    let p = DeformableConvolutionParams::parse(a)?;
    Dcn::new(
        &a.op,
        false,
        &p.kernel,
        &p.stride,
        &p.dilate,
        &p.pad,
        p.num_filter,
        p.num_group,
        p.num_deformable_group,
        p.no_bias,
        0,
        p.layout,
    )
}

fn dcn_v2(a: &Attrs) -> Result<Dcn> {
    let p = ModulatedDeformableConvolutionParams::parse(a)?;
    Dcn::new(
        &a.op,
        true,
        &p.kernel,
        &p.stride,
        &p.dilate,
        &p.pad,
        p.num_filter,
        p.num_group,
        p.num_deformable_group,
        p.no_bias,
        p.im2col_step,
        p.layout,
    )
}

fn build_v1(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(DeformableConvolution { p: dcn_v1(a)? }))
}

fn build_v1_backward(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(DeformableBackward { p: dcn_v1(a)? }))
}

fn build_v2(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(DeformableConvolution { p: dcn_v2(a)? }))
}

fn build_v2_backward(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(DeformableBackward { p: dcn_v2(a)? }))
}

/// The deformable convolutions' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "_contrib_DeformableConvolution",
        aliases: &[],
        args: &["data", "offset", "weight", "bias?"],
        doc:
            "Deformable convolution (DCNv1) of (N, C, H, W) data: every kernel tap samples the data bilinearly at its \
              position plus an offset (N, 2·kh·kw·num_deformable_group, Ho, Wo); weight (num_filter, C/num_group, \
              kh, kw).",
        params: DeformableConvolutionParams::schema,
        build: build_v1,
    },
    OpDef {
        name: "_backward_DeformableConvolution",
        aliases: &[],
        args: &["ograd", "data", "offset", "weight"],
        doc: "DeformableConvolution gradient: (data_grad, offset_grad, weight_grad[, bias_grad]).",
        params: DeformableConvolutionParams::schema,
        build: build_v1_backward,
    },
    OpDef {
        name: "_contrib_ModulatedDeformableConvolution",
        aliases: &[],
        args: &["data", "offset", "mask", "weight", "bias?"],
        doc: "Modulated deformable convolution (DCNv2): DeformableConvolution whose every sample is scaled by a mask \
              (N, kh·kw·num_deformable_group, Ho, Wo).",
        params: ModulatedDeformableConvolutionParams::schema,
        build: build_v2,
    },
    OpDef {
        name: "_backward_ModulatedDeformableConvolution",
        aliases: &[],
        args: &["ograd", "data", "offset", "mask", "weight"],
        doc: "ModulatedDeformableConvolution gradient: (data_grad, offset_grad, mask_grad, weight_grad[, bias_grad]).",
        params: ModulatedDeformableConvolutionParams::schema,
        build: build_v2_backward,
    },
];
