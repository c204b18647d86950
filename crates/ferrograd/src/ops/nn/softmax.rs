//! `softmax`, `log_softmax`, `softmin` (axis, temperature), `SoftmaxActivation`, and their fused
//! backward ops `_backward_softmax`, `_backward_log_softmax`, `_backward_softmin`.
//!
//! The forward makes three passes over each row (max, exp-sum, write), numerically stable (the
//! row maximum is subtracted before `exp`), vectorised in 16 interleaved lanes and parallel over
//! rows through `ferrograd_kernels::par`. A non-last axis is handled as `(outer, n, inner)` slabs
//! whose inner dimension is the vector dimension. float16 computes in float32.
//!
//! With `s = 1/temperature` (`-1/temperature` for softmin), `softmax(x) = exp(s·x) / Σ exp(s·x)`
//! and `log_softmax(x) = s·x - log Σ exp(s·x)`. The backward ops compute
//! `s·y·(g - Σ g·y)` (softmax, softmin; `y` the output) and `s·(g - exp(y)·Σ g)` (log_softmax),
//! in two passes; their own gradients are composite, so every order is differentiable.

use ferrograd_kernels::par::{self, Cost};
use ferrograd_kernels::{simd_dispatch, vmath, Element};

use super::{dense, float_only};
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::view::normalize_axis;
use crate::ndarray::{Meta, NDArray};
use crate::ops::attrs::fmt_float;
use crate::ops::params::{Builder, OpDef, OpParams, ParamEnum};
use crate::ops::widen::forward_widened;
use crate::ops::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};

/// Float element types the softmax kernels run on natively.
pub trait Real:
    Element
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
{
    const NEG_INF: Self;
    fn exp_(self) -> Self;
    fn ln_(self) -> Self;
}

impl Real for f32 {
    const NEG_INF: f32 = f32::NEG_INFINITY;
    #[inline(always)]
    fn exp_(self) -> f32 {
        vmath::exp_f32(self)
    }
    #[inline(always)]
    fn ln_(self) -> f32 {
        vmath::ln_f32(self)
    }
}

impl Real for f64 {
    const NEG_INF: f64 = f64::NEG_INFINITY;
    #[inline(always)]
    fn exp_(self) -> f64 {
        vmath::exp_f64(self)
    }
    #[inline(always)]
    fn ln_(self) -> f64 {
        self.ln()
    }
}

const L: usize = 16;

#[inline(always)]
fn max_<T: Real>(a: T, b: T) -> T {
    if b > a {
        b
    } else {
        a
    }
}

/// Sums 16 lanes in a fixed tree.
#[inline(always)]
fn tree<T: Real>(mut lanes: [T; L], f: impl Fn(T, T) -> T) -> T {
    let mut w = L / 2;
    while w > 0 {
        for i in 0..w {
            lanes[i] = f(lanes[i], lanes[i + w]);
        }
        w /= 2;
    }
    lanes[0]
}

simd_dispatch! {
    /// Softmax (or log-softmax) of `s·x` over one contiguous row.
    pub fn softmax_row<T>(x: &[T], out: &mut [T], s: T, log: bool)
    where { T: Real }
    {
        let mut lanes = [T::NEG_INF; L];
        let xc = x.chunks_exact(L);
        let rem = xc.remainder();
        for c in xc {
            for i in 0..L {
                lanes[i] = max_(lanes[i], c[i] * s);
            }
        }
        let mut m = tree(lanes, max_);
        for &v in rem {
            m = max_(m, v * s);
        }
        let mut acc = [T::zero(); L];
        let n = x.len() - rem.len();
        if log {
            for c in x[..n].chunks_exact(L) {
                for i in 0..L {
                    acc[i] = acc[i] + (c[i] * s - m).exp_();
                }
            }
            let mut sum = tree(acc, |a, b| a + b);
            for &v in rem {
                sum = sum + (v * s - m).exp_();
            }
            let shift = m + sum.ln_();
            for (o, &v) in out.iter_mut().zip(x) {
                *o = v * s - shift;
            }
        } else {
            for (oc, c) in out[..n].chunks_exact_mut(L).zip(x[..n].chunks_exact(L)) {
                for i in 0..L {
                    let e = (c[i] * s - m).exp_();
                    oc[i] = e;
                    acc[i] = acc[i] + e;
                }
            }
            let mut sum = tree(acc, |a, b| a + b);
            for (o, &v) in out[n..].iter_mut().zip(rem) {
                let e = (v * s - m).exp_();
                *o = e;
                sum = sum + e;
            }
            let inv = T::one() / sum;
            for o in out.iter_mut() {
                *o = *o * inv;
            }
        }
    }
}

simd_dispatch! {
    /// Softmax over the rows of an `(n, inner)` slab (the reduced axis is the outer one), using
    /// `tmp` (length `inner`) for the running max and sum.
    pub fn softmax_slab<T>(x: &[T], out: &mut [T], inner: usize, s: T, log: bool, tmp: &mut [T], tmp2: &mut [T])
    where { T: Real }
    {
        tmp.fill(T::NEG_INF);
        for r in x.chunks_exact(inner) {
            for (m, &v) in tmp.iter_mut().zip(r) {
                *m = max_(*m, v * s);
            }
        }
        tmp2.fill(T::zero());
        for (o, r) in out.chunks_exact_mut(inner).zip(x.chunks_exact(inner)) {
            for ((o, &v), (&m, a)) in o.iter_mut().zip(r).zip(tmp.iter().zip(tmp2.iter_mut())) {
                let e = (v * s - m).exp_();
                *a = *a + e;
                *o = e;
            }
        }
        if log {
            for (m, &a) in tmp.iter_mut().zip(tmp2.iter()) {
                *m = *m + a.ln_();
            }
            for (o, r) in out.chunks_exact_mut(inner).zip(x.chunks_exact(inner)) {
                for ((o, &v), &sh) in o.iter_mut().zip(r).zip(tmp.iter()) {
                    *o = v * s - sh;
                }
            }
        } else {
            for a in tmp2.iter_mut() {
                *a = T::one() / *a;
            }
            for o in out.chunks_exact_mut(inner) {
                for (o, &inv) in o.iter_mut().zip(tmp2.iter()) {
                    *o = *o * inv;
                }
            }
        }
    }
}

simd_dispatch! {
    /// Backward over one contiguous row: `s·y·(g - Σ g·y)`, or `s·(g - exp(y)·Σ g)` when `log`.
    pub fn softmax_grad_row<T>(g: &[T], y: &[T], out: &mut [T], s: T, log: bool)
    where { T: Real }
    {
        let mut acc = [T::zero(); L];
        let n = g.len() - g.len() % L;
        for (gc, yc) in g[..n].chunks_exact(L).zip(y[..n].chunks_exact(L)) {
            for i in 0..L {
                acc[i] = acc[i] + if log { gc[i] } else { gc[i] * yc[i] };
            }
        }
        let mut d = tree(acc, |a, b| a + b);
        for (&gv, &yv) in g[n..].iter().zip(&y[n..]) {
            d = d + if log { gv } else { gv * yv };
        }
        if log {
            for ((o, &gv), &yv) in out.iter_mut().zip(g).zip(y) {
                *o = s * (gv - yv.exp_() * d);
            }
        } else {
            for ((o, &gv), &yv) in out.iter_mut().zip(g).zip(y) {
                *o = s * yv * (gv - d);
            }
        }
    }
}

simd_dispatch! {
    /// Backward over an `(n, inner)` slab (see [`softmax_slab`]).
    pub fn softmax_grad_slab<T>(g: &[T], y: &[T], out: &mut [T], inner: usize, s: T, log: bool, tmp: &mut [T])
    where { T: Real }
    {
        tmp.fill(T::zero());
        for (gr, yr) in g.chunks_exact(inner).zip(y.chunks_exact(inner)) {
            for ((d, &gv), &yv) in tmp.iter_mut().zip(gr).zip(yr) {
                *d = *d + if log { gv } else { gv * yv };
            }
        }
        for ((o, gr), yr) in out.chunks_exact_mut(inner).zip(g.chunks_exact(inner)).zip(y.chunks_exact(inner)) {
            for (((o, &gv), &yv), &d) in o.iter_mut().zip(gr).zip(yr).zip(tmp.iter()) {
                *o = if log { s * (gv - yv.exp_() * d) } else { s * yv * (gv - d) };
            }
        }
    }
}

/// Runs `f(block index, block)` over `out` split into `blocks` equal blocks of `len` elements,
/// parallel over blocks when the work is worth it.
fn for_blocks<T: Send>(out: &mut [T], len: usize, f: impl Fn(usize, &mut [T]) + Sync + Send) {
    if len == 0 || out.is_empty() {
        return;
    }
    let mut blocks: Vec<&mut [T]> = out.chunks_mut(len).collect();
    par::for_each_chunk_weighted(&mut blocks, len, Cost::Heavy, |start, bs| {
        for (i, b) in bs.iter_mut().enumerate() {
            f(start + i, b);
        }
    });
}

/// Softmax (or log-softmax) of `s·x` over the middle axis of `(outer, n, inner)`, into `out`.
pub fn softmax_kernel<T: Real>(x: &[T], out: &mut [T], (_outer, n, inner): (usize, usize, usize), s: T, log: bool) {
    let len = n * inner;
    if inner == 1 {
        for_blocks(out, len, |o, b| softmax_row(&x[o * len..(o + 1) * len], b, s, log));
    } else {
        for_blocks(out, len, |o, b| {
            let (mut t1, mut t2) = (vec![T::zero(); inner], vec![T::zero(); inner]);
            softmax_slab(&x[o * len..(o + 1) * len], b, inner, s, log, &mut t1, &mut t2)
        });
    }
}

/// The backward kernel: `g`, `y` and `out` share the `(outer, n, inner)` layout.
pub fn softmax_grad_kernel<T: Real>(
    g: &[T],
    y: &[T],
    out: &mut [T],
    (_outer, n, inner): (usize, usize, usize),
    s: T,
    log: bool,
) {
    let len = n * inner;
    if inner == 1 {
        for_blocks(out, len, |o, b| {
            softmax_grad_row(&g[o * len..(o + 1) * len], &y[o * len..(o + 1) * len], b, s, log)
        });
    } else {
        for_blocks(out, len, |o, b| {
            let mut t = vec![T::zero(); inner];
            softmax_grad_slab(&g[o * len..(o + 1) * len], &y[o * len..(o + 1) * len], b, inner, s, log, &mut t)
        });
    }
}

/// Writes the softmax of `s·x` (over the middle axis of `dims`) into `out` (same shape, float
/// dtype; `x` is converted to `out`'s dtype first).
pub fn softmax_into(x: &NDArray, out: &mut NDArray, dims: (usize, usize, usize), s: f64, log: bool) -> Result<()> {
    let dt = out.dtype();
    let x = if x.dtype() == dt { x.clone() } else { x.astype(dt) };
    match dt {
        DType::F32 => {
            let (buf, r) = dense(&x);
            let src = &buf.typed::<f32>()?[r];
            out.write_out::<f32, _>(|o| softmax_kernel(src, o, dims, s as f32, log))
        }
        DType::F64 => {
            let (buf, r) = dense(&x);
            let src = &buf.typed::<f64>()?[r];
            out.write_out::<f64, _>(|o| softmax_kernel(src, o, dims, s, log))
        }
        DType::F16 => {
            let mut tmp = NDArray::uninit(x.shape(), DType::F32);
            softmax_into(&x, &mut tmp, dims, s, log)?;
            out.write_from(&tmp)
        }
        other => Err(Error::DType(format!("softmax: data must have a float dtype, got {other}"))),
    }
}

/// Which member of the family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SmKind {
    Softmax,
    LogSoftmax,
    Softmin,
}

impl SmKind {
    fn name(self) -> &'static str {
        match self {
            SmKind::Softmax => "softmax",
            SmKind::LogSoftmax => "log_softmax",
            SmKind::Softmin => "softmin",
        }
    }
    fn grad_name(self) -> &'static str {
        match self {
            SmKind::Softmax => "_backward_softmax",
            SmKind::LogSoftmax => "_backward_log_softmax",
            SmKind::Softmin => "_backward_softmin",
        }
    }
    fn from_name(n: &str) -> Option<SmKind> {
        Some(match n {
            "softmax" | "_backward_softmax" => SmKind::Softmax,
            "log_softmax" | "_backward_log_softmax" => SmKind::LogSoftmax,
            "softmin" | "_backward_softmin" => SmKind::Softmin,
            _ => return None,
        })
    }
    /// The factor applied to `x` before exponentiating.
    pub(crate) fn scale(self, temperature: Option<f64>) -> f64 {
        let s = 1.0 / temperature.unwrap_or(1.0);
        if self == SmKind::Softmin {
            -s
        } else {
            s
        }
    }
}

/// `softmax` / `log_softmax` / `softmin` along `axis` with an optional temperature and output
/// dtype.
#[derive(Clone, Debug, PartialEq)]
pub struct Softmax {
    pub kind: SmKind,
    pub axis: i64,
    pub temperature: Option<f64>,
    pub dtype: Option<DType>,
}

fn temp_attrs(axis: i64, temperature: Option<f64>) -> Vec<(&'static str, String)> {
    let mut v = Vec::new();
    if axis != -1 {
        v.push(("axis", axis.to_string()));
    }
    if let Some(t) = temperature {
        v.push(("temperature", fmt_float(t)));
    }
    v
}

impl Op for Softmax {
    fn name(&self) -> &'static str {
        self.kind.name()
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = temp_attrs(self.axis, self.temperature);
        if let Some(d) = self.dtype {
            v.push(("dtype", d.name().to_string()));
        }
        v
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let x = &inputs[0];
        float_only(self.name(), "data", x.dtype)?;
        normalize_axis(self.name(), self.axis, x.shape.len())?;
        let dt = self.dtype.unwrap_or(x.dtype);
        float_only(self.name(), "dtype", dt)?;
        Ok(vec![Meta::new(&x.shape, dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let x = &inputs[0];
        let axis = normalize_axis(self.name(), self.axis, x.ndim())?;
        let dims = super::split3(x.shape(), axis);
        softmax_into(x, &mut outputs[0], dims, self.kind.scale(self.temperature), self.kind == SmKind::LogSoftmax)
    }
    fn saves(&self) -> Saves {
        Saves::Outputs
    }
    fn grad(&self, g: &mut Grad<'_>, _inputs: &[Val], outputs: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let back = SoftmaxGrad { kind: self.kind, axis: self.axis, temperature: self.temperature };
        Ok(vec![Some(g.apply1(back, &[og[0], outputs[0]])?)])
    }
}

/// `_backward_softmax` / `_backward_log_softmax` / `_backward_softmin`: inputs `(ograd, output)`.
#[derive(Clone, Debug, PartialEq)]
pub struct SoftmaxGrad {
    pub kind: SmKind,
    pub axis: i64,
    pub temperature: Option<f64>,
}

impl Op for SoftmaxGrad {
    fn name(&self) -> &'static str {
        self.kind.grad_name()
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["ograd", "output"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        temp_attrs(self.axis, self.temperature)
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let (g, y) = (&inputs[0], &inputs[1]);
        if g.shape != y.shape || g.dtype != y.dtype {
            return Err(Error::Shape(format!(
                "{}: ograd {} {} and output {} {} must have the same shape and dtype",
                self.name(),
                fmt_shape(&g.shape),
                g.dtype,
                fmt_shape(&y.shape),
                y.dtype
            )));
        }
        float_only(self.name(), "ograd", g.dtype)?;
        normalize_axis(self.name(), self.axis, g.shape.len())?;
        Ok(vec![g.clone()])
    }
    fn forward(&self, ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (g, y) = (&inputs[0], &inputs[1]);
        let axis = normalize_axis(self.name(), self.axis, g.ndim())?;
        let dims = super::split3(g.shape(), axis);
        let (s, log) = (self.kind.scale(self.temperature), self.kind == SmKind::LogSoftmax);
        match g.dtype() {
            DType::F32 => {
                let ((bg, rg), (by, ry)) = (dense(g), dense(y));
                let (gs, ys) = (&bg.typed::<f32>()?[rg], &by.typed::<f32>()?[ry]);
                outputs[0].write_out::<f32, _>(|o| softmax_grad_kernel(gs, ys, o, dims, s as f32, log))
            }
            DType::F64 => {
                let ((bg, rg), (by, ry)) = (dense(g), dense(y));
                let (gs, ys) = (&bg.typed::<f64>()?[rg], &by.typed::<f64>()?[ry]);
                outputs[0].write_out::<f64, _>(|o| softmax_grad_kernel(gs, ys, o, dims, s, log))
            }
            dt => forward_widened(self, ctx, inputs, outputs, dt, DType::F32),
        }
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let (gi, y, h) = (inputs[0], inputs[1], og[0]);
        let s = self.kind.scale(self.temperature);
        let ax = vec![self.axis];
        if self.kind == SmKind::LogSoftmax {
            // out = s·(g - p·Σg), p = exp(y).
            let p = g.unary(crate::ops::unary::UnaryKind::Exp, y)?;
            let hp = g.mul(h, p)?;
            let shp = g.sum_axes(hp, ax.clone(), true)?;
            let d = g.sub(h, shp)?;
            let gg = g.mul_scalar(d, s)?;
            let sg = g.sum_axes(gi, ax, true)?;
            let t = g.mul(hp, sg)?;
            let gy = g.mul_scalar(t, -s)?;
            return Ok(vec![Some(gg), Some(gy)]);
        }
        // out = s·y·(g - Σ g·y): d/dg = the same op on h; d/dy = s·(g·(h - Σh·y) - h·Σg·y).
        let gg = g.apply1(self.clone(), &[h, y])?;
        let hy = g.mul(h, y)?;
        let shy = g.sum_axes(hy, ax.clone(), true)?;
        let gy_ = g.mul(gi, y)?;
        let sgy = g.sum_axes(gy_, ax, true)?;
        let d = g.sub(h, shy)?;
        let t1 = g.mul(gi, d)?;
        let t2 = g.mul(h, sgy)?;
        let t = g.sub(t1, t2)?;
        let gy = g.mul_scalar(t, s)?;
        Ok(vec![Some(gg), Some(gy)])
    }
}

/// `SoftmaxActivation(data, mode)`: softmax over all axes but the first (`instance`, the default)
/// or over axis 1 (`channel`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SoftmaxActivation {
    pub channel: bool,
}

impl SoftmaxActivation {
    fn dims(&self, shape: &[usize]) -> Result<(usize, usize, usize)> {
        let need = if self.channel { 2 } else { 1 };
        if shape.len() < need {
            return Err(Error::Shape(format!(
                "SoftmaxActivation: data must have at least {need} dimension(s) in {} mode, got shape {}",
                if self.channel { "channel" } else { "instance" },
                fmt_shape(shape)
            )));
        }
        Ok(if self.channel { super::split3(shape, 1) } else { (shape[0], shape[1..].iter().product(), 1) })
    }
}

impl Op for SoftmaxActivation {
    fn name(&self) -> &'static str {
        "SoftmaxActivation"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        if self.channel {
            vec![("mode", "channel".into())]
        } else {
            vec![]
        }
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        float_only(self.name(), "data", inputs[0].dtype)?;
        self.dims(&inputs[0].shape)?;
        Ok(vec![inputs[0].clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let dims = self.dims(inputs[0].shape())?;
        softmax_into(&inputs[0], &mut outputs[0], dims, 1.0, false)
    }
    fn saves(&self) -> Saves {
        Saves::Outputs
    }
    fn grad(&self, g: &mut Grad<'_>, _inputs: &[Val], outputs: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let (y, h) = (outputs[0], og[0]);
        if self.channel {
            let back = SoftmaxGrad { kind: SmKind::Softmax, axis: 1, temperature: None };
            return Ok(vec![Some(g.apply1(back, &[h, y])?)]);
        }
        let shape = g.shape(y);
        let (n0, rest, _) = self.dims(&shape)?;
        let (h2, y2) = (g.reshape(h, &[n0, rest])?, g.reshape(y, &[n0, rest])?);
        let back = SoftmaxGrad { kind: SmKind::Softmax, axis: -1, temperature: None };
        let r = g.apply1(back, &[h2, y2])?;
        Ok(vec![Some(g.reshape(r, &shape)?)])
    }
}

/// Output dtypes the softmax family may be asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ParamEnum)]
#[param(dtype)]
pub enum SoftmaxDType {
    Float16,
    Float32,
    Float64,
}

/// Parameters of `softmax`, `log_softmax`, `softmin` (and their `_backward_*`).
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct SoftmaxParams {
    /// Axis to normalise along.
    #[param(default = -1)]
    pub axis: i64,
    /// Divide the input by this before exponentiating (None means 1).
    #[param(default = None)]
    pub temperature: Option<f64>,
    /// Output dtype (None keeps the input's).
    #[param(default = None)]
    pub dtype: Option<SoftmaxDType>,
    /// Softmax over the first `length` entries of each row (softmax only; needs the `length`
    /// input).
    #[param(default = Some(false))]
    pub use_length: Option<bool>,
}

impl SoftmaxParams {
    /// The temperature, checked finite and non-zero.
    fn temperature(&self, op: &str) -> Result<Option<f64>> {
        match self.temperature {
            Some(t) if t == 0.0 || !t.is_finite() => {
                Err(Error::Value(format!("{op}: temperature must be finite and non-zero, got {t}")))
            }
            t => Ok(t),
        }
    }
}

/// `SoftmaxActivation`'s `mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ParamEnum)]
pub enum SoftmaxActMode {
    Channel,
    Instance,
}

/// `SoftmaxActivation`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct SoftmaxActivationParams {
    /// Softmax over all axes but the first (instance) or over axis 1 at each position (channel).
    #[param(default = SoftmaxActMode::Instance)]
    pub mode: SoftmaxActMode,
}

fn kind_of(op: &str) -> Result<SmKind> {
    SmKind::from_name(op).ok_or_else(|| Error::Value(format!("unknown softmax op {op}")))
}

fn build_softmax(a: &Attrs) -> Result<OpRef> {
    let kind = kind_of(&a.op)?;
    let p = SoftmaxParams::parse(a)?;
    let dtype = match p.dtype {
        None => None,
        Some(d) => Some(DType::from_name(d.name())?),
    };
    let temperature = p.temperature(&a.op)?;
    if p.use_length == Some(true) {
        if kind != SmKind::Softmax {
            // MXNet's own front end passes no length to log_softmax / softmin either.
            return Err(Error::Value(format!("{}: use_length=True is supported by softmax only", a.op)));
        }
        return Ok(std::sync::Arc::new(super::softmax_length::SoftmaxLength { axis: p.axis, temperature, dtype }));
    }
    Ok(std::sync::Arc::new(Softmax { kind, axis: p.axis, temperature, dtype }))
}

fn build_softmax_grad(a: &Attrs) -> Result<OpRef> {
    let kind = kind_of(&a.op)?;
    let p = SoftmaxParams::parse(a)?;
    Ok(std::sync::Arc::new(SoftmaxGrad { kind, axis: p.axis, temperature: p.temperature(&a.op)? }))
}

fn build_softmax_activation(a: &Attrs) -> Result<OpRef> {
    let p = SoftmaxActivationParams::parse(a)?;
    Ok(std::sync::Arc::new(SoftmaxActivation { channel: p.mode == SoftmaxActMode::Channel }))
}

const fn family(name: &'static str, args: &'static [&'static str], doc: &'static str, build: Builder) -> OpDef {
    OpDef { name, aliases: &[], args, doc, params: SoftmaxParams::schema, build }
}

/// The softmax family's declarations.
pub const DEFS: &[OpDef] = &[
    family(
        "softmax",
        &["data", "length?"],
        "exp(x/t) normalised along axis (numerically stable); with use_length=True over the first length entries of each row, zeros after.",
        build_softmax,
    ),
    family("log_softmax", &["data"], "log of softmax(x/t) along axis (numerically stable).", build_softmax),
    family("softmin", &["data"], "softmax(-x/t) along axis.", build_softmax),
    family(
        "_backward_softmax",
        &["ograd", "output"],
        "Softmax gradient s·y·(g - Σg·y) from ograd g and output y.",
        build_softmax_grad,
    ),
    family(
        "_backward_log_softmax",
        &["ograd", "output"],
        "log_softmax gradient s·(g - exp(y)·Σg) from ograd g and output y.",
        build_softmax_grad,
    ),
    family(
        "_backward_softmin",
        &["ograd", "output"],
        "softmin gradient -s·y·(g - Σg·y) from ograd g and output y.",
        build_softmax_grad,
    ),
    OpDef {
        name: "SoftmaxActivation",
        aliases: &[],
        args: &["data"],
        doc: "Softmax over all axes but the first (mode=instance) or over axis 1 (mode=channel).",
        params: SoftmaxActivationParams::schema,
        build: build_softmax_activation,
    },
];
