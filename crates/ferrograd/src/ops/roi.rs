//! Region-of-interest pooling: `ROIPooling` (max over integer bins), `_contrib_ROIAlign`
//! (average of bilinear samples, optionally position-sensitive and half-pixel aligned) and
//! `_contrib_PSROIPooling` (position-sensitive average over integer bins).
//!
//! `rois` is (R, 5): `[batch_index, x1, y1, x2, y2]` in input-image coordinates, scaled by
//! `spatial_scale`. The output is (R, C, ph, pw) (position-sensitive: (R, C/(ph·pw), ph, pw)).
//! The gradient goes to the data only (MXNet gives rois a zero gradient), through a dedicated
//! `_backward_X(ograd, data, rois)` op. That op is linear in `ograd` and constant in `data`
//! (ROIAlign and PSROIPooling are linear in the data; ROIPooling's max is piecewise linear), so
//! its gradient is the forward applied to the head gradient, with ROIPooling's bins taking their
//! maxima from `data` ([`RoiAt`]), and the pair is differentiable to any order. Output planes (one per
//! (roi, channel)) and gradient planes (one per (image, channel)) are independent, so large
//! problems are split over the pool by planes, with results independent of the thread count.

use std::sync::Arc;

use ferrograd_kernels::element::Element;
use ferrograd_kernels::par::{for_each_chunk_weighted, Cost};

use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::conv::{check_float, Contig};
use crate::ops::params::{OpDef, OpParams};
use crate::ops::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};

/// Sizes of one problem: data (N, C, H, W), R rois, pooled (ph, pw), output channels.
#[derive(Clone, Copy, Debug)]
struct RoiDims {
    n: usize,
    c: usize,
    h: usize,
    w: usize,
    r: usize,
    ph: usize,
    pw: usize,
    out_c: usize,
}

/// One output bin's contribution: (flat index in the data plane, weight) pairs.
type BinTaps = Vec<(usize, f64)>;

/// A roi's image and its row `[batch_index, x1, y1, x2, y2]`; `None`: skipped.
type RoiRow = Option<(usize, [f64; 5])>;

/// What the two ops share: the sizes checks and the plane-parallel drivers.
trait RoiKind: Clone + std::fmt::Debug + Send + Sync + 'static {
    const NAME: &'static str;
    const BACKWARD: &'static str;
    /// The name of [`RoiAt`] for this kind.
    const AT: &'static str;
    fn pooled(&self) -> [usize; 2];
    /// Output channels for `c` data channels (or an error).
    fn out_channels(&self, c: usize) -> Result<usize>;
    /// Data channel read by output channel `oc` at bin (i, j).
    fn in_channel(&self, oc: usize, i: usize, j: usize) -> usize;
    /// The output channel and bins (row-major) that read data channel `ic`.
    fn readers(&self, ic: usize) -> (usize, Vec<usize>) {
        (ic, (0..self.pooled()[0] * self.pooled()[1]).collect())
    }
    /// How roi batch indices are checked (see [`read_rois`]).
    fn batch_check(&self) -> BatchCheck {
        BatchCheck::PastEndIsError
    }
    /// The same op for data of single (float32) or double precision.
    fn for_precision(&self, _single: bool) -> Self {
        self.clone()
    }
    /// The taps of bin (i, j) of roi `roi` over an (h, w) plane whose values are `x` (ROIPooling's
    /// max needs them). Empty: the bin reads nothing.
    fn bin_taps(&self, roi: &[f64], i: usize, j: usize, h: usize, w: usize, x: &dyn Fn(usize) -> f64) -> BinTaps;
    /// Whether the taps are independent of the data (the op is linear in it).
    fn linear(&self) -> bool {
        true
    }
    fn attrs(&self) -> Vec<(&'static str, String)>;
}

fn dims<K: RoiKind>(k: &K, op: &str, data: &[usize], rois: &[usize]) -> Result<RoiDims> {
    if data.len() != 4 {
        return Err(Error::Shape(format!("{op}: data must be 4-D (N, C, H, W), got shape {}", fmt_shape(data))));
    }
    if rois.len() != 2 || rois[1] != 5 {
        return Err(Error::Shape(format!(
            "{op}: rois must be (R, 5) rows [batch_index, x1, y1, x2, y2], got shape {}",
            fmt_shape(rois)
        )));
    }
    let [ph, pw] = k.pooled();
    Ok(RoiDims { n: data[0], c: data[1], h: data[2], w: data[3], r: rois[0], ph, pw, out_c: k.out_channels(data[1])? })
}

/// What a roi's batch index may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BatchCheck {
    /// Negative: skipped; past the batch: skipped (ROIPooling).
    PastEndSkips,
    /// Negative: skipped; past the batch: an error (ROIAlign).
    PastEndIsError,
    /// Truncated to an integer, which must index the batch (PSROIPooling, where MXNet has no
    /// check and reads outside the data).
    MustIndex,
}

/// The rois as f64 rows, with each batch index checked: `None` for a skipped roi (its output
/// and gradient are 0), or an error, as `check` says.
fn read_rois<T: Element>(op: &str, rois: &[T], n: usize, check: BatchCheck) -> Result<Vec<RoiRow>> {
    rois.chunks(5)
        .enumerate()
        .map(|(i, r)| {
            let row = [r[0].to_f64(), r[1].to_f64(), r[2].to_f64(), r[3].to_f64(), r[4].to_f64()];
            let b = row[0];
            if row[1..].iter().any(|v| !v.is_finite()) {
                return Err(Error::Value(format!("{op}: roi {i} has a coordinate that is not finite: {row:?}")));
            }
            if check == BatchCheck::MustIndex {
                let t = b.trunc();
                if !(t >= 0.0 && t < n as f64) {
                    return Err(Error::Index(format!(
                        "{op}: roi {i} has batch_index {b}, but data has a batch of {n} (indices 0..{n})"
                    )));
                }
                return Ok(Some((t as usize, row)));
            }
            if b < 0.0 {
                return Ok(None);
            }
            if b as usize >= n || !b.is_finite() {
                if check == BatchCheck::PastEndIsError {
                    return Err(Error::Index(format!(
                        "{op}: roi {i} has batch_index {b}, but data has a batch of {n}"
                    )));
                }
                return Ok(None);
            }
            Ok(Some((b as usize, row)))
        })
        .collect()
}

/// The forward pooling of `v`, with the taps chosen on `x` (the same array but in [`RoiAt`]).
fn forward<K: RoiKind, T: Element>(k: &K, d: &RoiDims, x: &[T], v: &[T], rois: &[RoiRow], y: &mut [T]) {
    let (hw, bins) = (d.h * d.w, d.ph * d.pw);
    if bins == 0 {
        return;
    }
    let mut planes: Vec<&mut [T]> = y.chunks_mut(bins).collect();
    for_each_chunk_weighted(&mut planes, bins * 16, Cost::Light, |start, ps| {
        for (q, p) in ps.iter_mut().enumerate() {
            let (ri, oc) = ((start + q) / d.out_c, (start + q) % d.out_c);
            for (bin, o) in p.iter_mut().enumerate() {
                let (i, j) = (bin / d.pw, bin % d.pw);
                *o = match rois[ri] {
                    None => T::zero(),
                    Some((b, row)) => {
                        let at = (b * d.c + k.in_channel(oc, i, j)) * hw;
                        let (plane, vals) = (&x[at..][..hw], &v[at..][..hw]);
                        let taps = k.bin_taps(&row, i, j, d.h, d.w, &|t| plane[t].to_f64());
                        T::from_f64(taps.iter().map(|&(t, wt)| wt * vals[t].to_f64()).sum())
                    }
                };
            }
        }
    });
}

fn backward<K: RoiKind, T: Element>(k: &K, d: &RoiDims, g: &[T], x: &[T], rois: &[RoiRow], dx: &mut [T]) {
    let (hw, bins) = (d.h * d.w, d.ph * d.pw);
    if hw == 0 {
        return;
    }
    let mut planes: Vec<&mut [T]> = dx.chunks_mut(hw).collect();
    for_each_chunk_weighted(&mut planes, (d.r * bins * 16).max(hw), Cost::Light, |start, ps| {
        let mut acc = vec![0.0f64; hw];
        for (q, p) in ps.iter_mut().enumerate() {
            let (b, ic) = ((start + q) / d.c, (start + q) % d.c);
            acc.iter_mut().for_each(|a| *a = 0.0);
            let plane = &x[(b * d.c + ic) * hw..][..hw];
            for (ri, roi) in rois.iter().enumerate() {
                let Some((rb, row)) = roi else { continue };
                if *rb != b {
                    continue;
                }
                let (oc, readers) = k.readers(ic);
                for bin in &readers {
                    let gv = g[(ri * d.out_c + oc) * bins + bin].to_f64();
                    for (t, wt) in k.bin_taps(row, *bin / d.pw, *bin % d.pw, d.h, d.w, &|t| plane[t].to_f64()) {
                        acc[t] += wt * gv;
                    }
                }
            }
            for (o, a) in p.iter_mut().zip(&acc) {
                *o = T::from_f64(*a);
            }
        }
    });
}

/// `ROIPooling(data, rois)` or `_contrib_ROIAlign(data, rois)`.
#[derive(Clone, Debug, PartialEq)]
pub struct RoiOp<K> {
    k: K,
}

impl<K: RoiKind + PartialEq> Op for RoiOp<K> {
    fn name(&self) -> &'static str {
        K::NAME
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["data", "rois"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.k.attrs()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let dt = check_float(K::NAME, self.arg_names(), inputs)?;
        let d = dims(&self.k, K::NAME, &inputs[0].shape, &inputs[1].shape)?;
        Ok(vec![Meta::new(&[d.r, d.out_c, d.ph, d.pw], dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let d = dims(&self.k, K::NAME, inputs[0].shape(), inputs[1].shape())?;
        let (x, r) = (Contig::new(&inputs[0]), Contig::new(&inputs[1]));
        float_kernel!(K::NAME, inputs[0].dtype(), T => {
            let rois = read_rois(K::NAME, r.get::<T>(), d.n, self.k.batch_check())?;
            let k = self.k.for_precision(T::NAME == "float32");
            outputs[0].write_out::<T, _>(|y| forward(&k, &d, x.get::<T>(), x.get::<T>(), &rois, y))
        })
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        let dx = g.apply1(RoiBackward { k: self.k.clone() }, &[out_grads[0], inputs[0], inputs[1]])?;
        Ok(vec![Some(dx), None])
    }
}

/// `RoiAt(values, data, rois)`: the forward pooling of `values` with the bins' taps chosen on
/// `data` (ROIPooling's maxima), the gradient of `_backward_ROIPooling` with respect to its
/// `ograd`. Linear in `values`, constant in `data` and `rois`. Not registered: it appears only in
/// gradient graphs.
#[derive(Clone, Debug, PartialEq)]
pub struct RoiAt<K> {
    k: K,
}

impl<K: RoiKind + PartialEq> Op for RoiAt<K> {
    fn name(&self) -> &'static str {
        K::AT
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["values", "data", "rois"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.k.attrs()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let dt = check_float(K::AT, self.arg_names(), inputs)?;
        if inputs[0].shape != inputs[1].shape {
            return Err(Error::Shape(format!(
                "{}: values of shape {} must be shaped like data {}",
                K::AT,
                fmt_shape(&inputs[0].shape),
                fmt_shape(&inputs[1].shape)
            )));
        }
        let d = dims(&self.k, K::AT, &inputs[1].shape, &inputs[2].shape)?;
        Ok(vec![Meta::new(&[d.r, d.out_c, d.ph, d.pw], dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        self.infer(&[inputs[0].meta(), inputs[1].meta(), inputs[2].meta()])?;
        let d = dims(&self.k, K::AT, inputs[1].shape(), inputs[2].shape())?;
        let (v, x, r) = (Contig::new(&inputs[0]), Contig::new(&inputs[1]), Contig::new(&inputs[2]));
        float_kernel!(K::AT, inputs[1].dtype(), T => {
            let rois = read_rois(K::AT, r.get::<T>(), d.n, self.k.batch_check())?;
            let k = self.k.for_precision(T::NAME == "float32");
            outputs[0].write_out::<T, _>(|y| forward(&k, &d, x.get::<T>(), v.get::<T>(), &rois, y))
        })
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        let dv = g.apply1(RoiBackward { k: self.k.clone() }, &[out_grads[0], inputs[1], inputs[2]])?;
        Ok(vec![Some(dv), None, None])
    }
}

/// `_backward_ROIPooling` / `_backward_ROIAlign` `(ograd, data, rois)` → data gradient.
#[derive(Clone, Debug, PartialEq)]
pub struct RoiBackward<K> {
    k: K,
}

impl<K: RoiKind + PartialEq> Op for RoiBackward<K> {
    fn name(&self) -> &'static str {
        K::BACKWARD
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["ograd", "data", "rois"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.k.attrs()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let dt = check_float(K::BACKWARD, self.arg_names(), inputs)?;
        let d = dims(&self.k, K::BACKWARD, &inputs[1].shape, &inputs[2].shape)?;
        let want = [d.r, d.out_c, d.ph, d.pw];
        if inputs[0].shape[..] != want[..] {
            return Err(Error::Shape(format!(
                "{}: ograd has shape {}, expected {}",
                K::BACKWARD,
                fmt_shape(&inputs[0].shape),
                fmt_shape(&want)
            )));
        }
        Ok(vec![Meta::new(&inputs[1].shape, dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let d = dims(&self.k, K::BACKWARD, inputs[1].shape(), inputs[2].shape())?;
        let (g, x, r) = (Contig::new(&inputs[0]), Contig::new(&inputs[1]), Contig::new(&inputs[2]));
        float_kernel!(K::BACKWARD, inputs[1].dtype(), T => {
            let rois = read_rois(K::BACKWARD, r.get::<T>(), d.n, self.k.batch_check())?;
            let k = self.k.for_precision(T::NAME == "float32");
            outputs[0].write_out::<T, _>(|dx| backward(&k, &d, g.get::<T>(), x.get::<T>(), &rois, dx))
        })
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        // Linear in ograd; the data only selects the taps (ROIPooling) or is not read at all.
        let k = self.k.clone();
        let dg = if self.k.linear() {
            g.apply1(RoiOp { k }, &[out_grads[0], inputs[2]])?
        } else {
            g.apply1(RoiAt { k }, &[out_grads[0], inputs[1], inputs[2]])?
        };
        Ok(vec![Some(dg), None, None])
    }
}

fn pooled_hw(op: &str, p: &[i64]) -> Result<[usize; 2]> {
    match p {
        [h, w] if *h > 0 && *w > 0 => Ok([*h as usize, *w as usize]),
        _ => Err(Error::Value(format!(
            "{op}: parameter 'pooled_size' must be two positive integers (h, w), got {}",
            crate::ops::attrs::fmt_tuple(p)
        ))),
    }
}

fn check_scale(op: &str, s: f64) -> Result<()> {
    if !(s.is_finite() && s > 0.0) {
        return Err(Error::Value(format!("{op}: parameter 'spatial_scale' must be a positive number, got {s}")));
    }
    Ok(())
}

/// Rounds to the data's precision: MXNet does the bin arithmetic in the data type, where a
/// product such as 7·(3/7) can land just above an integer and move a bin edge.
fn in_f32(v: f64, single: bool) -> f64 {
    if single {
        v as f32 as f64
    } else {
        v
    }
}

/// `ROIPooling`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct RoiPoolingParams {
    /// Output (h, w) of each roi.
    pub pooled_size: Vec<i64>,
    /// Ratio of the feature map to the image the rois are given in.
    pub spatial_scale: f64,
}

/// ROIPooling: max over bins with integer edges (MXNet rounds the scaled roi corners half away
/// from zero, makes the roi at least 1×1, and an empty bin gives 0).
#[derive(Clone, Debug, PartialEq)]
pub struct MaxBins {
    pooled: [usize; 2],
    scale: f64,
    /// Arithmetic in single precision (float32 data).
    single: bool,
}

impl RoiKind for MaxBins {
    const NAME: &'static str = "ROIPooling";
    const BACKWARD: &'static str = "_backward_ROIPooling";
    const AT: &'static str = "_ROIPooling_at_data";
    fn pooled(&self) -> [usize; 2] {
        self.pooled
    }
    fn out_channels(&self, c: usize) -> Result<usize> {
        Ok(c)
    }
    fn in_channel(&self, oc: usize, _i: usize, _j: usize) -> usize {
        oc
    }
    fn for_precision(&self, single: bool) -> Self {
        MaxBins { single, ..self.clone() }
    }
    fn batch_check(&self) -> BatchCheck {
        BatchCheck::PastEndSkips
    }
    fn linear(&self) -> bool {
        false
    }
    fn bin_taps(&self, roi: &[f64], i: usize, j: usize, h: usize, w: usize, x: &dyn Fn(usize) -> f64) -> BinTaps {
        let s = |v: f64| in_f32(v, self.single);
        let scale = s(self.scale);
        let corner = |v: f64| s(v * scale).round() as i64;
        let (x1, y1, x2, y2) = (corner(roi[1]), corner(roi[2]), corner(roi[3]), corner(roi[4]));
        let (rh, rw) = ((y2 - y1 + 1).max(1), (x2 - x1 + 1).max(1));
        let (bh, bw) = (s(rh as f64 / self.pooled[0] as f64), s(rw as f64 / self.pooled[1] as f64));
        let edge = |k: usize, bin: f64, start: i64, size: usize| {
            let lo = (s(k as f64 * bin).floor() as i64 + start).clamp(0, size as i64) as usize;
            let hi = (s((k + 1) as f64 * bin).ceil() as i64 + start).clamp(0, size as i64) as usize;
            (lo, hi)
        };
        let ((h0, h1), (w0, w1)) = (edge(i, bh, y1, h), edge(j, bw, x1, w));
        let mut best: Option<(usize, f64)> = None;
        for r in h0..h1 {
            for c in w0..w1 {
                let v = x(r * w + c);
                if best.is_none_or(|(_, bv)| v > bv) {
                    best = Some((r * w + c, v));
                }
            }
        }
        best.map(|(t, _)| vec![(t, 1.0)]).unwrap_or_default()
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("pooled_size", format!("({}, {})", self.pooled[0], self.pooled[1])),
            ("spatial_scale", self.scale.to_string()),
        ]
    }
}

/// `_contrib_ROIAlign`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct RoiAlignParams {
    /// Output (h, w) of each roi.
    pub pooled_size: Vec<i64>,
    /// Ratio of the feature map to the image the rois are given in.
    pub spatial_scale: f64,
    /// Samples per bin along each axis (<= 0: ceil(roi size / pooled size)).
    #[param(default = -1)]
    pub sample_ratio: i64,
    /// Position-sensitive pooling: bin (i, j) of output channel c reads channel (c·ph + i)·pw + j.
    #[param(default = false)]
    pub position_sensitive: bool,
    /// Half-pixel offset of the roi corners (Detectron2), without the minimum roi size of 1.
    #[param(default = false)]
    pub aligned: bool,
}

/// ROIAlign: the average of `grid_h × grid_w` bilinear samples per bin.
#[derive(Clone, Debug, PartialEq)]
pub struct AlignBins {
    pooled: [usize; 2],
    scale: f64,
    sample_ratio: i64,
    position_sensitive: bool,
    aligned: bool,
}

impl AlignBins {
    /// Bilinear taps at (y, x) of an (h, w) plane, scaled by `wt` (MXNet/Detectron: a point
    /// beyond one pixel outside reads 0, negative coordinates clamp to 0, the last row/column
    /// repeats).
    fn sample(y: f64, x: f64, h: usize, w: usize, wt: f64, out: &mut BinTaps) {
        if y < -1.0 || y > h as f64 || x < -1.0 || x > w as f64 || h == 0 || w == 0 {
            return;
        }
        let axis = |v: f64, n: usize| {
            let v = v.max(0.0);
            let lo = v.floor() as usize;
            if lo >= n - 1 {
                (n - 1, n - 1, 0.0)
            } else {
                (lo, lo + 1, v - lo as f64)
            }
        };
        let ((y0, y1, ly), (x0, x1, lx)) = (axis(y, h), axis(x, w));
        let (hy, hx) = (1.0 - ly, 1.0 - lx);
        out.extend([
            (y0 * w + x0, wt * hy * hx),
            (y0 * w + x1, wt * hy * lx),
            (y1 * w + x0, wt * ly * hx),
            (y1 * w + x1, wt * ly * lx),
        ]);
    }
}

impl RoiKind for AlignBins {
    const NAME: &'static str = "_contrib_ROIAlign";
    const BACKWARD: &'static str = "_backward_ROIAlign";
    const AT: &'static str = "_ROIAlign_at_data";
    fn pooled(&self) -> [usize; 2] {
        self.pooled
    }
    fn out_channels(&self, c: usize) -> Result<usize> {
        let bins = self.pooled[0] * self.pooled[1];
        if !self.position_sensitive {
            return Ok(c);
        }
        if !c.is_multiple_of(bins) {
            return Err(Error::Shape(format!(
                "{}: with position_sensitive, the data's {c} channels must be a multiple of pooled h·w = {bins}",
                Self::NAME
            )));
        }
        Ok(c / bins)
    }
    fn in_channel(&self, oc: usize, i: usize, j: usize) -> usize {
        if self.position_sensitive {
            (oc * self.pooled[0] + i) * self.pooled[1] + j
        } else {
            oc
        }
    }
    fn readers(&self, ic: usize) -> (usize, Vec<usize>) {
        let bins = self.pooled[0] * self.pooled[1];
        if self.position_sensitive {
            (ic / bins, vec![ic % bins])
        } else {
            (ic, (0..bins).collect())
        }
    }
    fn bin_taps(&self, roi: &[f64], i: usize, j: usize, h: usize, w: usize, _x: &dyn Fn(usize) -> f64) -> BinTaps {
        let off = if self.aligned { 0.5 } else { 0.0 };
        let (x1, y1) = (roi[1] * self.scale - off, roi[2] * self.scale - off);
        let (mut rw, mut rh) = (roi[3] * self.scale - off - x1, roi[4] * self.scale - off - y1);
        if !self.aligned {
            rw = rw.max(1.0);
            rh = rh.max(1.0);
        }
        let (bh, bw) = (rh / self.pooled[0] as f64, rw / self.pooled[1] as f64);
        let grid =
            |size: f64| if self.sample_ratio > 0 { self.sample_ratio as usize } else { size.ceil().max(0.0) as usize };
        let (gh, gw) = (grid(bh), grid(bw));
        let wt = 1.0 / (gh * gw).max(1) as f64;
        let mut taps = Vec::with_capacity(gh * gw * 4);
        for iy in 0..gh {
            let y = y1 + i as f64 * bh + (iy as f64 + 0.5) * bh / gh as f64;
            for ix in 0..gw {
                let x = x1 + j as f64 * bw + (ix as f64 + 0.5) * bw / gw as f64;
                Self::sample(y, x, h, w, wt, &mut taps);
            }
        }
        taps
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let b = |v: bool| if v { "True" } else { "False" }.to_string();
        vec![
            ("pooled_size", format!("({}, {})", self.pooled[0], self.pooled[1])),
            ("spatial_scale", self.scale.to_string()),
            ("sample_ratio", self.sample_ratio.to_string()),
            ("position_sensitive", b(self.position_sensitive)),
            ("aligned", b(self.aligned)),
        ]
    }
}

/// `_contrib_PSROIPooling`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct PsRoiPoolingParams {
    /// Ratio of the feature map to the image the rois are given in (0 to 1).
    pub spatial_scale: f64,
    /// Output channels; the data must have output_dim·group_size² channels.
    pub output_dim: i64,
    /// Output h = w of each roi.
    pub pooled_size: i64,
    /// Side of the grid of position-sensitive channel groups (0: pooled_size).
    #[param(default = 0)]
    pub group_size: i64,
}

/// PSROIPooling (R-FCN): the average over integer bins of a roi (corners rounded, the end
/// corner inclusive, at least 0.1 wide), bin (i, j) of output channel c reading channel
/// (c·g + gi)·g + gj for the group cell (gi, gj) = ⌊(i, j)·g / pooled_size⌋.
#[derive(Clone, Debug, PartialEq)]
pub struct PsAvgBins {
    pooled: usize,
    output_dim: usize,
    group: usize,
    scale: f64,
    /// Arithmetic in single precision (float32 data).
    single: bool,
}

impl PsAvgBins {
    fn group_cell(&self, i: usize) -> usize {
        (i * self.group / self.pooled).min(self.group - 1)
    }
}

impl RoiKind for PsAvgBins {
    const NAME: &'static str = "_contrib_PSROIPooling";
    const BACKWARD: &'static str = "_backward_PSROIPooling";
    const AT: &'static str = "_PSROIPooling_at_data";
    fn pooled(&self) -> [usize; 2] {
        [self.pooled, self.pooled]
    }
    fn out_channels(&self, c: usize) -> Result<usize> {
        let want = self.output_dim * self.group * self.group;
        if c != want {
            // MXNet does not check, and reads past the data when there are fewer channels.
            return Err(Error::Shape(format!(
                "{}: data has {c} channels, but output_dim·group_size² = {}·{}² = {want}",
                Self::NAME,
                self.output_dim,
                self.group
            )));
        }
        Ok(self.output_dim)
    }
    fn in_channel(&self, oc: usize, i: usize, j: usize) -> usize {
        (oc * self.group + self.group_cell(i)) * self.group + self.group_cell(j)
    }
    fn readers(&self, ic: usize) -> (usize, Vec<usize>) {
        let g = self.group;
        let (oc, gi, gj) = (ic / (g * g), ic / g % g, ic % g);
        let p = self.pooled;
        let bins = (0..p * p).filter(|b| self.group_cell(b / p) == gi && self.group_cell(b % p) == gj).collect();
        (oc, bins)
    }
    fn for_precision(&self, single: bool) -> Self {
        PsAvgBins { single, ..self.clone() }
    }
    fn batch_check(&self) -> BatchCheck {
        BatchCheck::MustIndex
    }
    fn bin_taps(&self, roi: &[f64], i: usize, j: usize, h: usize, w: usize, _x: &dyn Fn(usize) -> f64) -> BinTaps {
        let s = |v: f64| in_f32(v, self.single);
        // MXNet's spatial_scale is a float32 parameter, widened for float64 data.
        let scale = self.scale as f32 as f64;
        let (x1, y1) = (s(s(roi[1]).round() * scale), s(s(roi[2]).round() * scale));
        let (x2, y2) = (s((s(roi[3]).round() + 1.0) * scale), s((s(roi[4]).round() + 1.0) * scale));
        let min_side = s(0.1);
        let (rw, rh) = (s(x2 - x1).max(min_side), s(y2 - y1).max(min_side));
        let p = self.pooled as f64;
        let (bh, bw) = (s(rh / p), s(rw / p));
        let edge = |k: usize, bin: f64, start: f64, size: usize| {
            let lo = s(s(k as f64 * bin) + start).floor().clamp(0.0, size as f64) as usize;
            let hi = s(s((k + 1) as f64 * bin) + start).ceil().clamp(0.0, size as f64) as usize;
            (lo, hi)
        };
        let ((h0, h1), (w0, w1)) = (edge(i, bh, y1, h), edge(j, bw, x1, w));
        if h1 <= h0 || w1 <= w0 {
            return Vec::new();
        }
        let wt = 1.0 / ((h1 - h0) * (w1 - w0)) as f64;
        (h0..h1).flat_map(|r| (w0..w1).map(move |c| (r * w + c, wt))).collect()
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("spatial_scale", self.scale.to_string()),
            ("output_dim", self.output_dim.to_string()),
            ("pooled_size", self.pooled.to_string()),
            ("group_size", self.group.to_string()),
        ]
    }
}

fn ps_avg_bins(a: &Attrs) -> Result<PsAvgBins> {
    let p = PsRoiPoolingParams::parse(a)?;
    let op = &a.op;
    if !(0.0..=1.0).contains(&p.spatial_scale) {
        return Err(Error::Value(format!(
            "{op}: parameter 'spatial_scale' must be in [0, 1], got {}",
            p.spatial_scale
        )));
    }
    let positive = |name: &str, v: i64| -> Result<usize> {
        if v > 0 {
            Ok(v as usize)
        } else {
            Err(Error::Value(format!("{op}: parameter '{name}' must be a positive integer, got {v}")))
        }
    };
    let pooled = positive("pooled_size", p.pooled_size)?;
    let group = if p.group_size == 0 { pooled } else { positive("group_size", p.group_size)? };
    Ok(PsAvgBins {
        pooled,
        output_dim: positive("output_dim", p.output_dim)?,
        group,
        scale: p.spatial_scale,
        single: false,
    })
}

fn build_psroi_pooling(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(RoiOp { k: ps_avg_bins(a)? }))
}

fn build_psroi_pooling_backward(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(RoiBackward { k: ps_avg_bins(a)? }))
}

fn max_bins(a: &Attrs) -> Result<MaxBins> {
    let p = RoiPoolingParams::parse(a)?;
    check_scale(&a.op, p.spatial_scale)?;
    Ok(MaxBins { pooled: pooled_hw(&a.op, &p.pooled_size)?, scale: p.spatial_scale, single: false })
}

fn align_bins(a: &Attrs) -> Result<AlignBins> {
    let p = RoiAlignParams::parse(a)?;
    check_scale(&a.op, p.spatial_scale)?;
    Ok(AlignBins {
        pooled: pooled_hw(&a.op, &p.pooled_size)?,
        scale: p.spatial_scale,
        sample_ratio: p.sample_ratio,
        position_sensitive: p.position_sensitive,
        aligned: p.aligned,
    })
}

fn build_roi_pooling(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(RoiOp { k: max_bins(a)? }))
}

fn build_roi_pooling_backward(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(RoiBackward { k: max_bins(a)? }))
}

fn build_roi_align(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(RoiOp { k: align_bins(a)? }))
}

fn build_roi_align_backward(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(RoiBackward { k: align_bins(a)? }))
}

/// The ROI ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "ROIPooling",
        aliases: &[],
        args: &["data", "rois"],
        doc: "Max pooling of each roi [batch_index, x1, y1, x2, y2] (scaled by spatial_scale) of (N, C, H, W) \
              data into pooled_size bins: (R, C, ph, pw).",
        params: RoiPoolingParams::schema,
        build: build_roi_pooling,
    },
    OpDef {
        name: "_backward_ROIPooling",
        aliases: &[],
        args: &["ograd", "data", "rois"],
        doc: "Data gradient of ROIPooling from (ograd, data, rois).",
        params: RoiPoolingParams::schema,
        build: build_roi_pooling_backward,
    },
    OpDef {
        name: "_contrib_ROIAlign",
        aliases: &[],
        args: &["data", "rois"],
        doc: "ROIAlign (Mask R-CNN): each bin of each roi averages bilinear samples of (N, C, H, W) data \
              (sample_ratio, position_sensitive, aligned).",
        params: RoiAlignParams::schema,
        build: build_roi_align,
    },
    OpDef {
        name: "_backward_ROIAlign",
        aliases: &[],
        args: &["ograd", "data", "rois"],
        doc: "Data gradient of ROIAlign from (ograd, data, rois).",
        params: RoiAlignParams::schema,
        build: build_roi_align_backward,
    },
    OpDef {
        name: "_contrib_PSROIPooling",
        aliases: &[],
        args: &["data", "rois"],
        doc: "Position-sensitive roi pooling (R-FCN): each bin of each roi [batch_index, x1, y1, x2, y2] averages \
              its own channel group of (N, output_dim·group_size², H, W) data: (R, output_dim, pooled_size, \
              pooled_size).",
        params: PsRoiPoolingParams::schema,
        build: build_psroi_pooling,
    },
    OpDef {
        name: "_backward_PSROIPooling",
        aliases: &[],
        args: &["ograd", "data", "rois"],
        doc: "Data gradient of PSROIPooling from (ograd, data, rois).",
        params: PsRoiPoolingParams::schema,
        build: build_psroi_pooling_backward,
    },
];
