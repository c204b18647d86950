//! Sampling grids and bilinear sampling: `GridGenerator`, `BilinearSampler`, `SpatialTransformer`.
//!
//! MXNet's conventions: a grid holds (x, y) source positions normalised to [-1, 1] over the
//! input's width and height (x = -1 is column 0, x = 1 is column W-1), and sampling reads the four
//! neighbours of a position, each outside the input counting as 0.
//!
//! Gradient rules: `GridGenerator` is affine in its input, so its gradient is the adjoint op
//! `_backward_GridGenerator`, whose own gradient is `GridGenerator` again (affine) or itself
//! (warp: a per-channel scale). `BilinearSampler`'s gradient is `_backward_BilinearSampler`,
//! which gives both the data and the grid gradient; its own gradient is built from samplers whose
//! weights are derivatives of the bilinear weights in the grid (`spatial_grad`), differentiable
//! to any order.
//! `SpatialTransformer` is `BilinearSampler(data, GridGenerator(loc))` and differentiates as such.

use std::sync::Arc;

use ferrograd_kernels::element::Element;
use ferrograd_kernels::par::{for_each_chunk_weighted, Cost};

use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::conv::{check_float, Contig};
use crate::ops::params::{OpDef, OpParams, ParamEnum};
use crate::ops::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};

/// Half the span of `n` positions in normalised units: position `i` is `i / half(n) - 1`. A
/// size-1 axis maps its only position to -1 (MXNet divides by zero there and returns NaN).
fn half(n: usize) -> f64 {
    (n.max(2) - 1) as f64 / 2.0
}

/// `GridGenerator`'s `transform_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ParamEnum)]
pub enum TransformType {
    Affine,
    Warp,
}

/// `GridGenerator`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct GridGeneratorParams {
    /// affine: data is (N, 6) affine matrices; warp: data is an (N, 2, H, W) optical flow.
    pub transform_type: TransformType,
    /// Output (H, W) for affine (ignored by warp).
    #[param(default = vec![0, 0])]
    pub target_shape: Vec<i64>,
}

fn target_hw(op: &str, t: &[i64]) -> Result<[usize; 2]> {
    match t {
        [h, w] if *h > 0 && *w > 0 => Ok([*h as usize, *w as usize]),
        _ => Err(Error::Value(format!(
            "{op}: parameter 'target_shape' must be two positive integers (H, W), got {}",
            crate::ops::attrs::fmt_tuple(t)
        ))),
    }
}

/// `GridGenerator(data)`.
#[derive(Clone, Debug, PartialEq)]
pub struct GridGenerator {
    kind: TransformType,
    /// Output (H, W) of the affine grid.
    target: [usize; 2],
}

impl GridGenerator {
    fn out_shape(&self, x: &[usize]) -> Result<Vec<usize>> {
        match self.kind {
            TransformType::Affine if x.len() == 2 && x[1] == 6 => Ok(vec![x[0], 2, self.target[0], self.target[1]]),
            TransformType::Affine => Err(Error::Shape(format!(
                "GridGenerator: affine data must be (N, 6) affine matrices, got shape {}",
                fmt_shape(x)
            ))),
            TransformType::Warp if x.len() == 4 && x[1] == 2 => Ok(x.to_vec()),
            TransformType::Warp => Err(Error::Shape(format!(
                "GridGenerator: warp data must be an (N, 2, H, W) flow, got shape {}",
                fmt_shape(x)
            ))),
        }
    }
}

/// Normalised position of every (i, j) of an (h, w) target: ([x...], [y...]) row-major.
fn target_positions(h: usize, w: usize) -> (Vec<f64>, Vec<f64>) {
    let (hh, hw) = (half(h), half(w));
    let xs = (0..h * w).map(|p| (p % w) as f64 / hw - 1.0).collect();
    let ys = (0..h * w).map(|p| (p / w) as f64 / hh - 1.0).collect();
    (xs, ys)
}

fn grid_forward<T: Element>(kind: TransformType, xs: &[usize], os: &[usize], x: &[T], y: &mut [T]) {
    let (n, h, w) = (os[0], os[2], os[3]);
    let hw = h * w;
    match kind {
        TransformType::Affine => {
            let (px, py) = target_positions(h, w);
            for b in 0..n {
                let t: Vec<f64> = x[b * 6..b * 6 + 6].iter().map(|v| v.to_f64()).collect();
                for p in 0..hw {
                    y[(b * 2) * hw + p] = T::from_f64(t[0] * px[p] + t[1] * py[p] + t[2]);
                    y[(b * 2 + 1) * hw + p] = T::from_f64(t[3] * px[p] + t[4] * py[p] + t[5]);
                }
            }
        }
        TransformType::Warp => {
            let (hh, hww) = (half(xs[2]), half(xs[3]));
            for b in 0..n {
                for p in 0..hw {
                    let (i, j) = ((p / w) as f64, (p % w) as f64);
                    let (fx, fy) = (x[(b * 2) * hw + p].to_f64(), x[(b * 2 + 1) * hw + p].to_f64());
                    y[(b * 2) * hw + p] = T::from_f64((fx + j) / hww - 1.0);
                    y[(b * 2 + 1) * hw + p] = T::from_f64((fy + i) / hh - 1.0);
                }
            }
        }
    }
}

/// The adjoint of the grid's linear part: ograd (N, 2, H, W) → (N, 6) or (N, 2, H, W).
fn grid_adjoint<T: Element>(kind: TransformType, gs: &[usize], g: &[T], dx: &mut [T]) {
    let (n, h, w) = (gs[0], gs[2], gs[3]);
    let hw = h * w;
    match kind {
        TransformType::Affine => {
            let (px, py) = target_positions(h, w);
            for b in 0..n {
                for r in 0..2 {
                    let gr = &g[(b * 2 + r) * hw..][..hw];
                    let mut acc = [0.0f64; 3];
                    for p in 0..hw {
                        let v = gr[p].to_f64();
                        acc[0] += v * px[p];
                        acc[1] += v * py[p];
                        acc[2] += v;
                    }
                    for k in 0..3 {
                        dx[b * 6 + r * 3 + k] = T::from_f64(acc[k]);
                    }
                }
            }
        }
        TransformType::Warp => {
            let scale = [1.0 / half(w), 1.0 / half(h)];
            for (q, (d, v)) in dx.iter_mut().zip(g).enumerate() {
                *d = T::from_f64(v.to_f64() * scale[(q / hw) % 2]);
            }
        }
    }
}

impl Op for GridGenerator {
    fn name(&self) -> &'static str {
        "GridGenerator"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let t = format!("({}, {})", self.target[0], self.target[1]);
        vec![("transform_type", self.kind.name().into()), ("target_shape", t)]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let dt = check_float(self.name(), &["data"], inputs)?;
        Ok(vec![Meta::new(&self.out_shape(&inputs[0].shape)?, dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let xs = inputs[0].shape().to_vec();
        let os = self.out_shape(&xs)?;
        let x = Contig::new(&inputs[0]);
        float_kernel!(self.name(), inputs[0].dtype(), T => outputs[0].write_out::<T, _>(|y| grid_forward(self.kind, &xs, &os, x.get::<T>(), y)))
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, _inputs: &[Val], _outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![Some(g.apply1(GridGeneratorBackward { kind: self.kind }, &[out_grads[0]])?)])
    }
}

/// `_backward_GridGenerator(ograd)`: the adjoint of the grid's linear part.
#[derive(Clone, Debug, PartialEq)]
pub struct GridGeneratorBackward {
    kind: TransformType,
}

impl GridGeneratorBackward {
    fn out_shape(&self, g: &[usize]) -> Result<Vec<usize>> {
        if g.len() != 4 || g[1] != 2 {
            return Err(Error::Shape(format!(
                "_backward_GridGenerator: ograd must be an (N, 2, H, W) grid, got shape {}",
                fmt_shape(g)
            )));
        }
        Ok(match self.kind {
            TransformType::Affine => vec![g[0], 6],
            TransformType::Warp => g.to_vec(),
        })
    }
}

impl Op for GridGeneratorBackward {
    fn name(&self) -> &'static str {
        "_backward_GridGenerator"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["ograd"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("transform_type", self.kind.name().into())]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let dt = check_float(self.name(), &["ograd"], inputs)?;
        Ok(vec![Meta::new(&self.out_shape(&inputs[0].shape)?, dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let gs = inputs[0].shape().to_vec();
        self.out_shape(&gs)?;
        let g = Contig::new(&inputs[0]);
        float_kernel!(self.name(), inputs[0].dtype(), T => outputs[0].write_out::<T, _>(|dx| grid_adjoint(self.kind, &gs, g.get::<T>(), dx)))
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        let h = match self.kind {
            TransformType::Affine => {
                let s = g.shape(inputs[0]);
                g.apply1(GridGenerator { kind: TransformType::Affine, target: [s[2], s[3]] }, &[out_grads[0]])?
            }
            // A per-channel scale is its own adjoint.
            TransformType::Warp => g.apply1(self.clone(), &[out_grads[0]])?,
        };
        Ok(vec![Some(h)])
    }
}

/// Which derivatives of the bilinear weights a sampler uses: (d/d grid x, d/d grid y). The
/// weights are linear in each coordinate within a cell, so a second derivative along one axis
/// is 0 and these four cover every order. `[false, false]` is plain sampling.
pub(crate) type Order = [bool; 2];

/// The four neighbours of a source position with their bilinear weights; `None` outside.
struct Taps {
    idx: [Option<usize>; 4],
    /// Weights of top-left, top-right, bottom-left, bottom-right.
    w: [f64; 4],
    /// Fractional offsets (fx, fy) of the position from the top-left neighbour.
    frac: [f64; 2],
}

/// The taps of grid position (gx, gy) over an (h, w) input, with weights differentiated in the
/// grid coordinates as `order` says.
fn taps(gx: f64, gy: f64, h: usize, w: usize, order: Order) -> Taps {
    let (sx, sy) = ((w as f64 - 1.0) / 2.0, (h as f64 - 1.0) / 2.0);
    let (xr, yr) = ((gx + 1.0) * sx, (gy + 1.0) * sy);
    let (x0, y0) = (xr.floor(), yr.floor());
    let (fx, fy) = (xr - x0, yr - y0);
    let at = |dy: f64, dx: f64| {
        let (yy, xx) = (y0 + dy, x0 + dx);
        (yy >= 0.0 && xx >= 0.0 && yy < h as f64 && xx < w as f64).then(|| yy as usize * w + xx as usize)
    };
    let axis = |deriv: bool, f: f64, s: f64| if deriv { [-s, s] } else { [1.0 - f, f] };
    let (ax, ay) = (axis(order[0], fx, sx), axis(order[1], fy, sy));
    Taps {
        idx: [at(0.0, 0.0), at(0.0, 1.0), at(1.0, 0.0), at(1.0, 1.0)],
        w: [ax[0] * ay[0], ax[1] * ay[0], ax[0] * ay[1], ax[1] * ay[1]],
        frac: [fx, fy],
    }
}

/// Sampler sizes: data (N, C, H, W), grid (N, 2, OH, OW).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SamplerDims {
    n: usize,
    c: usize,
    h: usize,
    w: usize,
    oh: usize,
    ow: usize,
}

impl SamplerDims {
    pub(crate) fn new(op: &str, data: &[usize], grid: &[usize]) -> Result<SamplerDims> {
        if data.len() != 4 {
            return Err(Error::Shape(format!("{op}: data must be 4-D (N, C, H, W), got shape {}", fmt_shape(data))));
        }
        if grid.len() != 4 || grid[1] != 2 || grid[0] != data[0] {
            return Err(Error::Shape(format!(
                "{op}: grid must be (N, 2, H', W') with N = {} like data {}, got shape {}",
                data[0],
                fmt_shape(data),
                fmt_shape(grid)
            )));
        }
        Ok(SamplerDims { n: data[0], c: data[1], h: data[2], w: data[3], oh: grid[2], ow: grid[3] })
    }

    pub(crate) fn out(&self) -> Vec<usize> {
        vec![self.n, self.c, self.oh, self.ow]
    }

    fn grid_taps<T: Element>(&self, grid: &[T], b: usize, order: Order) -> Vec<Taps> {
        let ohw = self.oh * self.ow;
        let (gx, gy) = (&grid[b * 2 * ohw..][..ohw], &grid[(b * 2 + 1) * ohw..][..ohw]);
        gx.iter().zip(gy).map(|(x, y)| taps(x.to_f64(), y.to_f64(), self.h, self.w, order)).collect()
    }

    /// Sampling of `data` at the grid (weights differentiated as `order` says).
    pub(crate) fn forward<T: Element>(&self, order: Order, data: &[T], grid: &[T], out: &mut [T]) {
        let (ihw, ohw) = (self.h * self.w, self.oh * self.ow);
        if ohw == 0 {
            return;
        }
        let mut planes: Vec<&mut [T]> = out.chunks_mut(ohw).collect();
        for_each_chunk_weighted(&mut planes, ohw * 8, Cost::Light, |start, ps| {
            let mut cached: Option<(usize, Vec<Taps>)> = None;
            for (k, p) in ps.iter_mut().enumerate() {
                let plane = start + k;
                let b = plane / self.c;
                if cached.as_ref().is_none_or(|(cb, _)| *cb != b) {
                    cached = Some((b, self.grid_taps(grid, b, order)));
                }
                let ts = &cached.as_ref().map(|(_, t)| t).expect("set above");
                let x = &data[plane * ihw..][..ihw];
                for (o, t) in p.iter_mut().zip(ts.iter()) {
                    let s: f64 = (0..4).filter_map(|q| t.idx[q].map(|i| t.w[q] * x[i].to_f64())).sum();
                    *o = T::from_f64(s);
                }
            }
        });
    }

    /// The adjoint of [`Self::forward`] in the data: `g` (N, C, OH, OW) scattered to `ddata`.
    pub(crate) fn adjoint<T: Element>(&self, order: Order, g: &[T], grid: &[T], ddata: &mut [T]) {
        let (ihw, ohw) = (self.h * self.w, self.oh * self.ow);
        if ihw > 0 {
            let mut planes: Vec<&mut [T]> = ddata.chunks_mut(ihw).collect();
            for_each_chunk_weighted(&mut planes, ohw * 8, Cost::Light, |start, ps| {
                let mut acc = vec![0.0f64; ihw];
                for (k, p) in ps.iter_mut().enumerate() {
                    let plane = start + k;
                    acc.iter_mut().for_each(|a| *a = 0.0);
                    let ts = self.grid_taps(grid, plane / self.c, order);
                    for (t, gv) in ts.iter().zip(&g[plane * ohw..][..ohw]) {
                        for q in 0..4 {
                            if let Some(i) = t.idx[q] {
                                acc[i] += t.w[q] * gv.to_f64();
                            }
                        }
                    }
                    for (d, a) in p.iter_mut().zip(&acc) {
                        *d = T::from_f64(*a);
                    }
                }
            });
        }
    }

    /// (ddata, dgrid) for head gradient `g`.
    fn backward<T: Element>(&self, g: &[T], data: &[T], grid: &[T], ddata: &mut [T], dgrid: &mut [T]) {
        self.adjoint([false, false], g, grid, ddata);
        let (ihw, ohw) = (self.h * self.w, self.oh * self.ow);
        if ohw == 0 {
            return;
        }
        let (sx, sy) = ((self.w as f64 - 1.0) / 2.0, (self.h as f64 - 1.0) / 2.0);
        let mut per_batch: Vec<&mut [T]> = dgrid.chunks_mut(2 * ohw).collect();
        for_each_chunk_weighted(&mut per_batch, self.c * ohw * 8, Cost::Light, |start, bs| {
            for (k, dg) in bs.iter_mut().enumerate() {
                let b = start + k;
                let ts = self.grid_taps(grid, b, [false, false]);
                for (p, t) in ts.iter().enumerate() {
                    let [fx, fy] = t.frac;
                    let (mut dx, mut dy) = (0.0, 0.0);
                    for ch in 0..self.c {
                        let plane = b * self.c + ch;
                        let x = &data[plane * ihw..][..ihw];
                        let v = |q: usize| t.idx[q].map_or(0.0, |i| x[i].to_f64());
                        let (tl, tr, bl, br) = (v(0), v(1), v(2), v(3));
                        let gv = g[plane * ohw + p].to_f64();
                        dx += gv * ((tr - tl) * (1.0 - fy) + (br - bl) * fy);
                        dy += gv * ((bl - tl) * (1.0 - fx) + (br - tr) * fx);
                    }
                    dg[p] = T::from_f64(dx * sx);
                    dg[ohw + p] = T::from_f64(dy * sy);
                }
            }
        });
    }
}

fn sample(op: &str, data: &NDArray, grid: &NDArray, out: &mut NDArray) -> Result<()> {
    let d = SamplerDims::new(op, data.shape(), grid.shape())?;
    let (x, gr) = (Contig::new(data), Contig::new(grid));
    float_kernel!(op, data.dtype(), T => out.write_out::<T, _>(|y| d.forward([false, false], x.get::<T>(), gr.get::<T>(), y)))
}

/// `BilinearSampler(data, grid)`.
#[derive(Clone, Debug, PartialEq)]
pub struct BilinearSampler;

impl Op for BilinearSampler {
    fn name(&self) -> &'static str {
        "BilinearSampler"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["data", "grid"]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let dt = check_float(self.name(), self.arg_names(), inputs)?;
        Ok(vec![Meta::new(&SamplerDims::new(self.name(), &inputs[0].shape, &inputs[1].shape)?.out(), dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        sample(self.name(), &inputs[0], &inputs[1], &mut outputs[0])
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        let r = g.apply(Arc::new(BilinearSamplerBackward), &[out_grads[0], inputs[0], inputs[1]])?;
        Ok(vec![Some(r[0]), Some(r[1])])
    }
}

/// `_backward_BilinearSampler(ograd, data, grid)` → (data gradient, grid gradient).
#[derive(Clone, Debug, PartialEq)]
pub struct BilinearSamplerBackward;

impl Op for BilinearSamplerBackward {
    fn name(&self) -> &'static str {
        "_backward_BilinearSampler"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["ograd", "data", "grid"]
    }
    fn num_outputs(&self) -> usize {
        2
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let dt = check_float(self.name(), self.arg_names(), inputs)?;
        let d = SamplerDims::new(self.name(), &inputs[1].shape, &inputs[2].shape)?;
        if inputs[0].shape[..] != d.out()[..] {
            return Err(Error::Shape(format!(
                "{}: ograd has shape {}, expected {}",
                self.name(),
                fmt_shape(&inputs[0].shape),
                fmt_shape(&d.out())
            )));
        }
        Ok(vec![Meta::new(&inputs[1].shape, dt), Meta::new(&inputs[2].shape, dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let d = SamplerDims::new(self.name(), inputs[1].shape(), inputs[2].shape())?;
        let (g, x, gr) = (Contig::new(&inputs[0]), Contig::new(&inputs[1]), Contig::new(&inputs[2]));
        let (first, rest) = outputs.split_at_mut(1);
        float_kernel!(self.name(), inputs[1].dtype(), T => {
            let mut dgrid = vec![T::zero(); inputs[2].size()];
            first[0].write_out::<T, _>(|dd| d.backward(g.get::<T>(), x.get::<T>(), gr.get::<T>(), dd, &mut dgrid))?;
            rest[0].write_out::<T, _>(|dg| dg.copy_from_slice(&dgrid))
        })
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        super::spatial_grad::sampler_backward_grad(g, inputs, out_grads)
    }
}

/// `SpatialTransformer(data, loc)`: bilinear sampling of data on the affine grid of loc.
#[derive(Clone, Debug, PartialEq)]
pub struct SpatialTransformer {
    target: [usize; 2],
}

impl SpatialTransformer {
    fn grid_op(&self) -> GridGenerator {
        GridGenerator { kind: TransformType::Affine, target: self.target }
    }
    fn check(&self, data: &[usize], loc: &[usize]) -> Result<Vec<usize>> {
        if data.len() != 4 {
            return Err(Error::Shape(format!(
                "SpatialTransformer: data must be 4-D (N, C, H, W), got shape {}",
                fmt_shape(data)
            )));
        }
        if loc.len() != 2 || loc[1] != 6 || loc[0] != data[0] {
            return Err(Error::Shape(format!(
                "SpatialTransformer: loc must be ({}, 6) affine matrices for data of shape {}, got shape {}",
                data[0],
                fmt_shape(data),
                fmt_shape(loc)
            )));
        }
        Ok(vec![data[0], data[1], self.target[0], self.target[1]])
    }
}

impl Op for SpatialTransformer {
    fn name(&self) -> &'static str {
        "SpatialTransformer"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["data", "loc"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("target_shape", format!("({}, {})", self.target[0], self.target[1])),
            ("transform_type", "affine".into()),
            ("sampler_type", "bilinear".into()),
        ]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let dt = check_float(self.name(), self.arg_names(), inputs)?;
        Ok(vec![Meta::new(&self.check(&inputs[0].shape, &inputs[1].shape)?, dt)])
    }
    fn forward(&self, ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        self.check(inputs[0].shape(), inputs[1].shape())?;
        let grid = crate::ops::run(&self.grid_op(), ctx, &inputs[1..2])?;
        sample(self.name(), &inputs[0], &grid[0], &mut outputs[0])
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        let grid = g.apply1(self.grid_op(), &[inputs[1]])?;
        let r = g.apply(Arc::new(BilinearSamplerBackward), &[out_grads[0], inputs[0], grid])?;
        let dloc = g.apply1(GridGeneratorBackward { kind: TransformType::Affine }, &[r[1]])?;
        Ok(vec![Some(r[0]), Some(dloc)])
    }
}

/// `BilinearSampler`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct BilinearSamplerParams {
    /// Turn cuDNN off (accepted and ignored).
    #[param(default = None)]
    pub cudnn_off: Option<bool>,
}

/// `SpatialTransformer`'s `transform_type` (only affine).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ParamEnum)]
pub enum StTransform {
    Affine,
}

/// `SpatialTransformer`'s `sampler_type` (only bilinear).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ParamEnum)]
pub enum StSampler {
    Bilinear,
}

/// `SpatialTransformer`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct SpatialTransformerParams {
    /// Output (H, W).
    #[param(default = vec![0, 0])]
    pub target_shape: Vec<i64>,
    /// Transformation type (affine).
    pub transform_type: StTransform,
    /// Sampling type (bilinear).
    pub sampler_type: StSampler,
    /// Turn cuDNN off (accepted and ignored).
    #[param(default = None)]
    pub cudnn_off: Option<bool>,
}

/// `_backward_GridGenerator`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct GridBackwardParams {
    /// The forward's transform type.
    pub transform_type: TransformType,
    /// The forward's target shape (accepted; ograd's shape is used).
    #[param(default = vec![0, 0])]
    pub target_shape: Vec<i64>,
}

fn build_grid(a: &Attrs) -> Result<OpRef> {
    let p = GridGeneratorParams::parse(a)?;
    let target = match p.transform_type {
        TransformType::Affine => target_hw("GridGenerator", &p.target_shape)?,
        TransformType::Warp => [0, 0],
    };
    Ok(Arc::new(GridGenerator { kind: p.transform_type, target }))
}

fn build_grid_backward(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(GridGeneratorBackward { kind: GridBackwardParams::parse(a)?.transform_type }))
}

fn build_sampler(a: &Attrs) -> Result<OpRef> {
    BilinearSamplerParams::parse(a)?;
    Ok(Arc::new(BilinearSampler))
}

fn build_sampler_backward(a: &Attrs) -> Result<OpRef> {
    BilinearSamplerParams::parse(a)?;
    Ok(Arc::new(BilinearSamplerBackward))
}

fn build_transformer(a: &Attrs) -> Result<OpRef> {
    let p = SpatialTransformerParams::parse(a)?;
    Ok(Arc::new(SpatialTransformer { target: target_hw("SpatialTransformer", &p.target_shape)? }))
}

/// The sampling ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "GridGenerator",
        aliases: &[],
        args: &["data"],
        doc: "Sampling grid (N, 2, H, W) of normalised (x, y) source positions from (N, 6) affine \
              matrices (target_shape) or an (N, 2, H, W) optical flow (warp).",
        params: GridGeneratorParams::schema,
        build: build_grid,
    },
    OpDef {
        name: "_backward_GridGenerator",
        aliases: &[],
        args: &["ograd"],
        doc: "Gradient of GridGenerator from its output gradient (the adjoint of its linear part).",
        params: GridBackwardParams::schema,
        build: build_grid_backward,
    },
    OpDef {
        name: "BilinearSampler",
        aliases: &[],
        args: &["data", "grid"],
        doc: "Bilinear sampling of (N, C, H, W) data at the normalised (x, y) positions of an (N, 2, H', W') \
              grid; positions outside read 0.",
        params: BilinearSamplerParams::schema,
        build: build_sampler,
    },
    OpDef {
        name: "_backward_BilinearSampler",
        aliases: &[],
        args: &["ograd", "data", "grid"],
        doc: "Data and grid gradients of BilinearSampler from (ograd, data, grid).",
        params: BilinearSamplerParams::schema,
        build: build_sampler_backward,
    },
    OpDef {
        name: "SpatialTransformer",
        aliases: &[],
        args: &["data", "loc"],
        doc: "Bilinear sampling of (N, C, H, W) data on the affine grid of loc (N, 6), output (N, C, target_shape).",
        params: SpatialTransformerParams::schema,
        build: build_transformer,
    },
];
