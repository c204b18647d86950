//! `_contrib_BilinearResize2D` and `_contrib_AdaptiveAvgPooling2D`: resampling of the last two
//! axes of (N, C, H, W) data, with their gradient ops.
//!
//! Both are linear in the data: the gradient is a dedicated adjoint op (`_backward_contrib_X`,
//! inputs `(ograd, data)`, the data only for its shape), and the adjoint's own gradient is the
//! forward op again, so gradients of any order flow. Planes (one per (n, c)) are independent, so
//! large inputs are split by planes over the pool: results do not depend on the thread count.

use std::sync::Arc;

use ferrograd_kernels::element::Element;
use ferrograd_kernels::par::{for_each_chunk_weighted, Cost};

use super::{check_float, Contig};
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::params::{OpDef, OpParams, ParamEnum};
use crate::ops::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};

/// One axis of a separable resampling: output position `o` reads input positions `i0[o]` and
/// `i1[o]` with weights `w0[o]` and `w1[o]` (bilinear), or averages `lo[o]..hi[o]` (adaptive).
#[derive(Clone, Debug)]
struct LinearAxis {
    i0: Vec<usize>,
    i1: Vec<usize>,
    w0: Vec<f64>,
    w1: Vec<f64>,
}

impl LinearAxis {
    /// MXNet's bilinear source positions: with `align_corners` the corners of input and output
    /// coincide (step (in-1)/(out-1)); without, pixel centres do (step in/out, clamped at 0). An
    /// output of size 1 reads position 0.
    fn bilinear(inp: usize, out: usize, align_corners: bool) -> LinearAxis {
        let step = match (out > 1, align_corners) {
            (false, _) => 0.0,
            (true, true) => (inp as f64 - 1.0) / (out as f64 - 1.0),
            (true, false) => inp as f64 / out as f64,
        };
        let mut ax = LinearAxis { i0: vec![], i1: vec![], w0: vec![], w1: vec![] };
        for o in 0..out {
            let r = if align_corners { step * o as f64 } else { (step * (o as f64 + 0.5) - 0.5).max(0.0) };
            let i0 = (r.floor() as usize).min(inp - 1);
            let i1 = if i0 + 1 < inp { i0 + 1 } else { i0 };
            let l1 = r - i0 as f64;
            ax.i0.push(i0);
            ax.i1.push(i1);
            ax.w0.push(1.0 - l1);
            ax.w1.push(l1);
        }
        ax
    }
}

/// Adaptive average pooling's window along one axis: `floor(o·in/out) .. ceil((o+1)·in/out)`.
fn adaptive_window(o: usize, inp: usize, out: usize) -> (usize, usize) {
    (o * inp / out, ((o + 1) * inp).div_ceil(out))
}

/// How the resampling maps one plane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Resample {
    Bilinear { align_corners: bool },
    AdaptiveAvg,
}

/// One (in_h, in_w) → (out_h, out_w) plane mapping, applied to every plane.
struct PlaneMap {
    kind: Resample,
    inp: [usize; 2],
    out: [usize; 2],
}

impl PlaneMap {
    /// y = A x per plane.
    fn forward<T: Element>(&self, x: &[T], y: &mut [T]) {
        let (ih, iw, oh, ow) = (self.inp[0], self.inp[1], self.out[0], self.out[1]);
        let (isz, osz) = (ih * iw, oh * ow);
        if osz == 0 {
            return;
        }
        let mut planes: Vec<&mut [T]> = y.chunks_mut(osz).collect();
        let work = osz * 4;
        match self.kind {
            Resample::Bilinear { align_corners } => {
                let (ah, aw) =
                    (LinearAxis::bilinear(ih, oh, align_corners), LinearAxis::bilinear(iw, ow, align_corners));
                for_each_chunk_weighted(&mut planes, work, Cost::Light, |start, ps| {
                    for (k, p) in ps.iter_mut().enumerate() {
                        let xp = &x[(start + k) * isz..][..isz];
                        for oy in 0..oh {
                            let (r0, r1) = (&xp[ah.i0[oy] * iw..][..iw], &xp[ah.i1[oy] * iw..][..iw]);
                            for ox in 0..ow {
                                let (a, b) = (aw.i0[ox], aw.i1[ox]);
                                let top = aw.w0[ox] * r0[a].to_f64() + aw.w1[ox] * r0[b].to_f64();
                                let bot = aw.w0[ox] * r1[a].to_f64() + aw.w1[ox] * r1[b].to_f64();
                                p[oy * ow + ox] = T::from_f64(ah.w0[oy] * top + ah.w1[oy] * bot);
                            }
                        }
                    }
                });
            }
            Resample::AdaptiveAvg => {
                for_each_chunk_weighted(&mut planes, isz.max(osz), Cost::Light, |start, ps| {
                    for (k, p) in ps.iter_mut().enumerate() {
                        let xp = &x[(start + k) * isz..][..isz];
                        for oy in 0..oh {
                            let (h0, h1) = adaptive_window(oy, ih, oh);
                            for ox in 0..ow {
                                let (w0, w1) = adaptive_window(ox, iw, ow);
                                let mut s = 0.0;
                                for row in xp[h0 * iw..h1 * iw].chunks(iw) {
                                    s += row[w0..w1].iter().map(|v| v.to_f64()).sum::<f64>();
                                }
                                p[oy * ow + ox] = T::from_f64(s / ((h1 - h0) * (w1 - w0)) as f64);
                            }
                        }
                    }
                });
            }
        }
    }

    /// dx = Aᵀ gy per plane.
    fn adjoint<T: Element>(&self, gy: &[T], dx: &mut [T]) {
        let (ih, iw, oh, ow) = (self.inp[0], self.inp[1], self.out[0], self.out[1]);
        let (isz, osz) = (ih * iw, oh * ow);
        if isz == 0 {
            return;
        }
        let mut planes: Vec<&mut [T]> = dx.chunks_mut(isz).collect();
        let axes = match self.kind {
            Resample::Bilinear { align_corners } => {
                Some((LinearAxis::bilinear(ih, oh, align_corners), LinearAxis::bilinear(iw, ow, align_corners)))
            }
            Resample::AdaptiveAvg => None,
        };
        for_each_chunk_weighted(&mut planes, isz.max(osz) * 4, Cost::Light, |start, ps| {
            let mut acc = vec![0.0f64; isz];
            for (k, p) in ps.iter_mut().enumerate() {
                acc.iter_mut().for_each(|a| *a = 0.0);
                let gp = &gy[(start + k) * osz..][..osz];
                for oy in 0..oh {
                    for ox in 0..ow {
                        let g = gp[oy * ow + ox].to_f64();
                        match &axes {
                            Some((ah, aw)) => {
                                let (r0, r1) = (ah.i0[oy] * iw, ah.i1[oy] * iw);
                                let (a, b) = (aw.i0[ox], aw.i1[ox]);
                                acc[r0 + a] += g * ah.w0[oy] * aw.w0[ox];
                                acc[r0 + b] += g * ah.w0[oy] * aw.w1[ox];
                                acc[r1 + a] += g * ah.w1[oy] * aw.w0[ox];
                                acc[r1 + b] += g * ah.w1[oy] * aw.w1[ox];
                            }
                            None => {
                                let ((h0, h1), (w0, w1)) = (adaptive_window(oy, ih, oh), adaptive_window(ox, iw, ow));
                                let share = g / ((h1 - h0) * (w1 - w0)) as f64;
                                for r in h0..h1 {
                                    acc[r * iw + w0..r * iw + w1].iter_mut().for_each(|a| *a += share);
                                }
                            }
                        }
                    }
                }
                for (d, a) in p.iter_mut().zip(&acc) {
                    *d = T::from_f64(*a);
                }
            }
        });
    }

    fn run_forward(&self, op: &str, x: &NDArray, y: &mut NDArray) -> Result<()> {
        let xc = Contig::new(x);
        float_kernel!(op, x.dtype(), T => y.write_out::<T, _>(|out| self.forward(xc.get::<T>(), out)))
    }

    fn run_adjoint(&self, op: &str, gy: &NDArray, dx: &mut NDArray) -> Result<()> {
        let gc = Contig::new(gy);
        float_kernel!(op, gy.dtype(), T => dx.write_out::<T, _>(|out| self.adjoint(gc.get::<T>(), out)))
    }
}

fn check_4d(op: &str, arg: &str, s: &[usize]) -> Result<()> {
    if s.len() != 4 {
        return Err(Error::Shape(format!("{op}: {arg} must be 4-D (N, C, H, W), got shape {}", fmt_shape(s))));
    }
    Ok(())
}

/// Checks that a non-empty output has a non-empty input plane to read from.
fn check_source(op: &str, data: &[usize], out: [usize; 2]) -> Result<()> {
    if out[0] * out[1] > 0 && data[2] * data[3] == 0 {
        return Err(Error::Shape(format!(
            "{op}: cannot resize data of shape {} (empty H or W) to ({}, {})",
            fmt_shape(data),
            out[0],
            out[1]
        )));
    }
    Ok(())
}

/// The shared adjoint op `(ograd, data) → dx` of a resampling whose output has ograd's shape.
#[derive(Clone, Debug, PartialEq)]
pub struct ResampleBackward {
    name: &'static str,
    kind_bilinear: Option<bool>,
    attrs: Vec<(&'static str, String)>,
}

impl ResampleBackward {
    fn map(&self, gy: &[usize], x: &[usize]) -> Result<PlaneMap> {
        check_4d(self.name, "ograd", gy)?;
        check_4d(self.name, "data", x)?;
        if gy[..2] != x[..2] {
            return Err(Error::Shape(format!(
                "{}: ograd of shape {} does not match data of shape {} in (N, C)",
                self.name,
                fmt_shape(gy),
                fmt_shape(x)
            )));
        }
        check_source(self.name, x, [gy[2], gy[3]])?;
        let kind = match self.kind_bilinear {
            Some(align_corners) => Resample::Bilinear { align_corners },
            None => Resample::AdaptiveAvg,
        };
        Ok(PlaneMap { kind, inp: [x[2], x[3]], out: [gy[2], gy[3]] })
    }

    /// The forward op whose adjoint this is, producing outputs of `out` size.
    fn forward_op(&self, out: [usize; 2]) -> FixedResample {
        FixedResample { name: self.name, kind_bilinear: self.kind_bilinear, out }
    }
}

impl Op for ResampleBackward {
    fn name(&self) -> &'static str {
        self.name
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["ograd", "data"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.attrs.clone()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let dt = check_float(self.name, self.arg_names(), inputs)?;
        self.map(&inputs[0].shape, &inputs[1].shape)?;
        Ok(vec![Meta::new(&inputs[1].shape, dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        self.map(inputs[0].shape(), inputs[1].shape())?.run_adjoint(self.name, &inputs[0], &mut outputs[0])
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        let gy = g.shape(inputs[0]);
        let h = g.apply1(self.forward_op([gy[2], gy[3]]), &[out_grads[0]])?;
        Ok(vec![Some(h), None])
    }
}

/// The forward resampling to a fixed output size (the adjoint's gradient; not registered).
#[derive(Clone, Debug, PartialEq)]
struct FixedResample {
    name: &'static str,
    kind_bilinear: Option<bool>,
    out: [usize; 2],
}

impl FixedResample {
    fn map(&self, x: &[usize]) -> Result<PlaneMap> {
        check_4d(self.name, "data", x)?;
        check_source(self.name, x, self.out)?;
        let kind = match self.kind_bilinear {
            Some(align_corners) => Resample::Bilinear { align_corners },
            None => Resample::AdaptiveAvg,
        };
        Ok(PlaneMap { kind, inp: [x[2], x[3]], out: self.out })
    }
    fn backward_op(&self, attrs: Vec<(&'static str, String)>) -> ResampleBackward {
        let name = if self.kind_bilinear.is_some() { BACKWARD_RESIZE } else { BACKWARD_ADAPTIVE };
        ResampleBackward { name, kind_bilinear: self.kind_bilinear, attrs }
    }
}

impl Op for FixedResample {
    fn name(&self) -> &'static str {
        self.name
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        match self.kind_bilinear {
            Some(ac) => vec![
                ("height", self.out[0].to_string()),
                ("width", self.out[1].to_string()),
                ("align_corners", if ac { "True" } else { "False" }.into()),
            ],
            None => vec![("output_size", format!("({}, {})", self.out[0], self.out[1]))],
        }
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let dt = check_float(self.name, &["data"], inputs)?;
        let m = self.map(&inputs[0].shape)?;
        let s = &inputs[0].shape;
        Ok(vec![Meta::new(&[s[0], s[1], m.out[0], m.out[1]], dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        self.map(inputs[0].shape())?.run_forward(self.name, &inputs[0], &mut outputs[0])
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        let back = self.backward_op(self.attrs());
        Ok(vec![Some(g.apply1(back, &[out_grads[0], inputs[0]])?)])
    }
}

const RESIZE: &str = "_contrib_BilinearResize2D";
const BACKWARD_RESIZE: &str = "_backward_contrib_BilinearResize2D";
const ADAPTIVE: &str = "_contrib_AdaptiveAvgPooling2D";
const BACKWARD_ADAPTIVE: &str = "_backward_contrib_AdaptiveAvgPooling2D";

/// `BilinearResize2D`'s `mode`: how the output size is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ParamEnum)]
pub enum ResizeMode {
    Like,
    #[param(name = "odd_scale")]
    OddScale,
    Size,
    #[param(name = "to_even_down")]
    ToEvenDown,
    #[param(name = "to_even_up")]
    ToEvenUp,
    #[param(name = "to_odd_down")]
    ToOddDown,
    #[param(name = "to_odd_up")]
    ToOddUp,
}

/// `_contrib_BilinearResize2D`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct BilinearResizeParams {
    /// Output height (mode 'size' without scale_height).
    #[param(default = 1)]
    pub height: i64,
    /// Output width (mode 'size' without scale_width).
    #[param(default = 1)]
    pub width: i64,
    /// Height scale (modes 'size' and 'odd_scale').
    #[param(default = None)]
    pub scale_height: Option<f64>,
    /// Width scale (modes 'size' and 'odd_scale').
    #[param(default = None)]
    pub scale_width: Option<f64>,
    /// How the output size is chosen: size, odd_scale, like, to_even_down/up, to_odd_down/up.
    #[param(default = ResizeMode::Size)]
    pub mode: ResizeMode,
    /// Map the corner pixels onto each other (True) or the pixel centres (False).
    #[param(default = true)]
    pub align_corners: bool,
}

/// MXNet `_contrib_BilinearResize2D(data, like?)`.
#[derive(Clone, Debug, PartialEq)]
pub struct BilinearResize {
    p: BilinearResizeParams,
}

impl BilinearResize {
    fn out_size(&self, data: &[usize], like: Option<&[usize]>) -> Result<[usize; 2]> {
        let op = RESIZE;
        check_4d(op, "data", data)?;
        let (h, w) = (data[2] as i64, data[3] as i64);
        // MXNet truncates `scale · size` in single precision.
        let scaled = |s: f64, n: i64| (s as f32 * n as f32) as i64;
        let need = |v: Option<f64>, key: &str| {
            v.ok_or_else(|| Error::Value(format!("{op}: mode '{}' needs parameter '{key}'", self.p.mode.name())))
        };
        let odd_scaled = |s: f64, n: i64| if n % 2 == 0 { scaled(s, n) } else { scaled(s, n - 1) + 1 };
        let (oh, ow) = match self.p.mode {
            ResizeMode::Size => (
                self.p.scale_height.map_or(self.p.height, |s| scaled(s, h)),
                self.p.scale_width.map_or(self.p.width, |s| scaled(s, w)),
            ),
            ResizeMode::OddScale => (
                odd_scaled(need(self.p.scale_height, "scale_height")?, h),
                odd_scaled(need(self.p.scale_width, "scale_width")?, w),
            ),
            ResizeMode::Like => {
                let l = like.ok_or_else(|| Error::Value(format!("{op}: mode 'like' needs the input 'like'")))?;
                check_4d(op, "like", l)?;
                (l[2] as i64, l[3] as i64)
            }
            ResizeMode::ToEvenDown => (h - h % 2, w - w % 2),
            ResizeMode::ToEvenUp => (h + h % 2, w + w % 2),
            ResizeMode::ToOddDown => (h - 1 + h % 2, w - 1 + w % 2),
            ResizeMode::ToOddUp => (h + 1 - h % 2, w + 1 - w % 2),
        };
        if oh < 0 || ow < 0 {
            return Err(Error::Value(format!(
                "{op}: output size ({oh}, {ow}) for data of shape {} is negative",
                fmt_shape(data)
            )));
        }
        let out = [oh as usize, ow as usize];
        check_source(op, data, out)?;
        Ok(out)
    }

    fn fixed(&self, out: [usize; 2]) -> FixedResample {
        FixedResample { name: RESIZE, kind_bilinear: Some(self.p.align_corners), out }
    }
}

impl Op for BilinearResize {
    fn name(&self) -> &'static str {
        RESIZE
    }
    fn arg_names(&self) -> &'static [&'static str] {
        if self.p.mode == ResizeMode::Like {
            &["data", "like"]
        } else {
            &["data"]
        }
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let p = &self.p;
        let mut v = vec![("height", p.height.to_string()), ("width", p.width.to_string())];
        if let Some(s) = p.scale_height {
            v.push(("scale_height", s.to_string()));
        }
        if let Some(s) = p.scale_width {
            v.push(("scale_width", s.to_string()));
        }
        v.push(("mode", p.mode.name().into()));
        v.push(("align_corners", if p.align_corners { "True" } else { "False" }.into()));
        v
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let names = self.arg_names();
        if inputs.len() != names.len() {
            return Err(Error::Value(format!(
                "{RESIZE}: mode '{}' takes {} input(s) ({}), got {}",
                self.p.mode.name(),
                names.len(),
                names.join(", "),
                inputs.len()
            )));
        }
        let dt = check_float(RESIZE, &["data"], &inputs[..1])?;
        let s = &inputs[0].shape;
        let out = self.out_size(s, inputs.get(1).map(|m| &m.shape[..]))?;
        Ok(vec![Meta::new(&[s[0], s[1], out[0], out[1]], dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let out = self.out_size(inputs[0].shape(), inputs.get(1).map(|l| l.shape()))?;
        self.fixed(out).map(inputs[0].shape())?.run_forward(RESIZE, &inputs[0], &mut outputs[0])
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        let back = self.fixed([0, 0]).backward_op(self.attrs());
        let dx = g.apply1(back, &[out_grads[0], inputs[0]])?;
        let mut v = vec![Some(dx)];
        v.extend(inputs[1..].iter().map(|_| None));
        Ok(v)
    }
}

/// `_contrib_AdaptiveAvgPooling2D`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct AdaptivePoolParams {
    /// Output (height, width); one value for a square output; empty for (1, 1).
    #[param(default = Vec::new())]
    pub output_size: Vec<i64>,
}

fn adaptive_out(p: &AdaptivePoolParams) -> Result<[usize; 2]> {
    let s = &p.output_size;
    let (h, w) = match s.len() {
        0 => (1, 1),
        1 => (s[0], s[0]),
        2 => (s[0], s[1]),
        _ => {
            return Err(Error::Value(format!(
                "{ADAPTIVE}: parameter 'output_size' must have 1 or 2 entries, got {}",
                crate::ops::attrs::fmt_tuple(s)
            )))
        }
    };
    if h < 0 || w < 0 {
        return Err(Error::Value(format!(
            "{ADAPTIVE}: parameter 'output_size' must be non-negative, got {}",
            crate::ops::attrs::fmt_tuple(s)
        )));
    }
    Ok([h as usize, w as usize])
}

fn build_resize(a: &Attrs) -> Result<OpRef> {
    let p = BilinearResizeParams::parse(a)?;
    for (key, v) in [("height", p.height), ("width", p.width)] {
        if v < 1 {
            return Err(Error::Value(format!("{RESIZE}: parameter '{key}' must be >= 1, got {v}")));
        }
    }
    for (key, v) in [("scale_height", p.scale_height), ("scale_width", p.scale_width)] {
        if v.is_some_and(|s| !(s.is_finite() && s > 0.0)) {
            return Err(Error::Value(format!("{RESIZE}: parameter '{key}' must be a positive number, got {v:?}")));
        }
    }
    Ok(Arc::new(BilinearResize { p }))
}

fn build_resize_backward(a: &Attrs) -> Result<OpRef> {
    let p = BilinearResizeParams::parse(a)?;
    let fwd = BilinearResize { p };
    Ok(Arc::new(fwd.fixed([0, 0]).backward_op(fwd.attrs())))
}

fn build_adaptive(a: &Attrs) -> Result<OpRef> {
    let out = adaptive_out(&AdaptivePoolParams::parse(a)?)?;
    Ok(Arc::new(FixedResample { name: ADAPTIVE, kind_bilinear: None, out }))
}

fn build_adaptive_backward(a: &Attrs) -> Result<OpRef> {
    let out = adaptive_out(&AdaptivePoolParams::parse(a)?)?;
    let fwd = FixedResample { name: ADAPTIVE, kind_bilinear: None, out };
    Ok(Arc::new(fwd.backward_op(fwd.attrs())))
}

/// The resizing ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: RESIZE,
        aliases: &[],
        args: &["data", "like?"],
        doc: "Bilinear resizing of (N, C, H, W) data to a size given by height/width, scales, \
              the shape of 'like', or the nearest even/odd size (mode); align_corners chooses the grid.",
        params: BilinearResizeParams::schema,
        build: build_resize,
    },
    OpDef {
        name: BACKWARD_RESIZE,
        aliases: &[],
        args: &["ograd", "data"],
        doc: "Data gradient of BilinearResize2D from (ograd, data): the output size is ograd's.",
        params: BilinearResizeParams::schema,
        build: build_resize_backward,
    },
    OpDef {
        name: ADAPTIVE,
        aliases: &[],
        args: &["data"],
        doc: "Average pooling of (N, C, H, W) data to output_size, windows floor(o·H/oh) .. ceil((o+1)·H/oh).",
        params: AdaptivePoolParams::schema,
        build: build_adaptive,
    },
    OpDef {
        name: BACKWARD_ADAPTIVE,
        aliases: &[],
        args: &["ograd", "data"],
        doc: "Data gradient of AdaptiveAvgPooling2D from (ograd, data): the output size is ograd's.",
        params: AdaptivePoolParams::schema,
        build: build_adaptive_backward,
    },
];
