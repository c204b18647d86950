//! SSD's operators of MXNet's `contrib`: `MultiBoxPrior` generates the prior (anchor) boxes of a
//! feature map, `MultiBoxDetection` turns class probabilities and box offsets into detections.
//! Their gradients are zero, as in MXNet.

use ferrograd_kernels::par::{self, Cost};
use ferrograd_kernels::Element;

use super::params::{parsed_op, OpDef, OpParams};
use super::{Ctx, Grad, Op, Saves, Val};
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::with_dtype;

/// `MultiBoxPrior(data, sizes, ratios, clip, steps, offsets)`: for every cell (y, x) of data's
/// last two axes (h, w), boxes centred at `((x + offset_x)·step_x, (y + offset_y)·step_y)` (steps
/// default to 1/w and 1/h): one per size with the first ratio, then one per further ratio with
/// the first size. A box of size s and ratio r has width `s·(h/w)·√r` and height `s/√r`. Output
/// `(1, h·w·(sizes + ratios − 1), 4)` corner boxes.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct MultiBoxPrior {
    /// Sizes of the boxes, as fractions of the image.
    #[param(default = vec![1.0])]
    pub sizes: Vec<f64>,
    /// Aspect ratios (width / height) of the boxes.
    #[param(default = vec![1.0])]
    pub ratios: Vec<f64>,
    /// Clip the boxes to [0, 1].
    #[param(default = false)]
    pub clip: bool,
    /// Distance between box centres along y and x; -1: 1 / the feature map's size.
    #[param(default = vec![-1.0, -1.0])]
    pub steps: Vec<f64>,
    /// Offset of the box centres within a cell along y and x.
    #[param(default = vec![0.5, 0.5])]
    pub offsets: Vec<f64>,
}

impl MultiBoxPrior {
    const OP: &'static str = "_contrib_MultiBoxPrior";

    fn check(&self, shape: &[usize]) -> Result<(usize, usize)> {
        let positive = |v: &[f64]| !v.is_empty() && v.iter().all(|&s| s > 0.0 && s.is_finite());
        if !positive(&self.sizes) || !positive(&self.ratios) {
            return Err(Error::Value(format!(
                "{}: 'sizes' and 'ratios' must be non-empty lists of positive numbers, got sizes={:?} ratios={:?}",
                Self::OP,
                self.sizes,
                self.ratios
            )));
        }
        if self.steps.len() != 2 || self.offsets.len() != 2 {
            return Err(Error::Value(format!(
                "{}: 'steps' and 'offsets' must each hold two numbers (y, x), got steps={:?} offsets={:?}",
                Self::OP,
                self.steps,
                self.offsets
            )));
        }
        if shape.len() < 4 {
            return Err(Error::Shape(format!(
                "{}: data must be at least 4-D (batch, channel, y, x), got shape {}",
                Self::OP,
                fmt_shape(shape)
            )));
        }
        Ok((shape[shape.len() - 2], shape[shape.len() - 1]))
    }

    fn per_cell(&self) -> usize {
        self.sizes.len() + self.ratios.len() - 1
    }

    /// Box `k` of the cell at (row, col).
    fn anchor(&self, h: usize, w: usize, row: usize, col: usize, k: usize) -> [f64; 4] {
        let step = |s: f64, n: usize| if s > 0.0 { s } else { 1.0 / n as f64 };
        let cy = (row as f64 + self.offsets[0]) * step(self.steps[0], h);
        let cx = (col as f64 + self.offsets[1]) * step(self.steps[1], w);
        let (size, ratio) = if k < self.sizes.len() {
            (self.sizes[k], self.ratios[0])
        } else {
            (self.sizes[0], self.ratios[k + 1 - self.sizes.len()])
        };
        let r = ratio.sqrt();
        let half_w = size * h as f64 / w as f64 * r / 2.0;
        let half_h = size / r / 2.0;
        let b = [cx - half_w, cy - half_h, cx + half_w, cy + half_h];
        if self.clip {
            b.map(|v| v.clamp(0.0, 1.0))
        } else {
            b
        }
    }
}

impl Op for MultiBoxPrior {
    fn name(&self) -> &'static str {
        Self::OP
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.to_attrs()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let (h, w) = self.check(&inputs[0].shape)?;
        if !inputs[0].dtype.is_float() {
            return Err(Error::DType(format!("{}: data must be floating point, got {}", Self::OP, inputs[0].dtype)));
        }
        Ok(vec![Meta::new(&[1, h * w * self.per_cell(), 4], inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (h, w) = self.check(inputs[0].shape())?;
        let a = self.per_cell();
        with_dtype!(outputs[0].dtype(), T => {
            outputs[0].write_out::<T, _>(|o| {
                par::for_each_chunk(o, Cost::Heavy, |first, chunk| {
                    for (j, b) in chunk.chunks_exact_mut(4).enumerate() {
                        let i = first / 4 + j;
                        let (cell, k) = (i / a, i % a);
                        let v = self.anchor(h, w, cell / w, cell % w, k);
                        for (d, s) in b.iter_mut().zip(v) {
                            *d = T::from_f64(s);
                        }
                    }
                })
            })
        })
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![None]) // the boxes depend on data's shape only: zero, as in MXNet
    }
}

// ---------------------------------------------------------------------------------------------

/// The corner box of offsets `loc` (scaled by `variances`) against the corner anchor `a`.
fn decode(a: &[f64], loc: &[f64], variances: &[f64], clip: bool) -> [f64; 4] {
    let (aw, ah) = (a[2] - a[0], a[3] - a[1]);
    let (ax, ay) = ((a[0] + a[2]) / 2.0, (a[1] + a[3]) / 2.0);
    let (ox, oy) = (loc[0] * variances[0] * aw + ax, loc[1] * variances[1] * ah + ay);
    let (hw, hh) = ((loc[2] * variances[2]).exp() * aw / 2.0, (loc[3] * variances[3]).exp() * ah / 2.0);
    let b = [ox - hw, oy - hh, ox + hw, oy + hh];
    if clip {
        b.map(|v| v.clamp(0.0, 1.0))
    } else {
        b
    }
}

/// `MultiBoxDetection(cls_prob, loc_pred, anchor, ...)`: per batch item, each anchor's best
/// non-background class (scores below `threshold` dropped) and its decoded box, as rows
/// `[class, score, xmin, ymin, xmax, ymax]`; class ids count the classes without the background.
/// With `0 < nms_threshold <= 1` the rows are sorted by descending score, rows past `nms_topk`
/// get class -1, and a row overlapping (IoU >= nms_threshold) a better kept row of its class (any
/// class with `force_suppress`) gets class -1. Rows past the detections are all -1.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct MultiBoxDetection {
    /// Clip the boxes to [0, 1].
    #[param(default = true)]
    pub clip: bool,
    /// Lowest score of a detection.
    #[param(default = 0.01)]
    pub threshold: f64,
    /// Index of the background class in cls_prob; -1: none.
    #[param(default = 0)]
    pub background_id: i64,
    /// Overlap (IoU) from which the lower-scoring box is suppressed; outside (0, 1]: no sorting and no suppression.
    #[param(default = 0.5)]
    pub nms_threshold: f64,
    /// Suppress across classes too.
    #[param(default = false)]
    pub force_suppress: bool,
    /// Scales of the (x, y, width, height) offsets.
    #[param(default = vec![0.1, 0.1, 0.2, 0.2])]
    pub variances: Vec<f64>,
    /// Keep only the nms_topk best detections before suppression; -1: no limit.
    #[param(default = -1)]
    pub nms_topk: i64,
}

impl MultiBoxDetection {
    const OP: &'static str = "_contrib_MultiBoxDetection";

    /// `(B, classes, N)` after checking the shapes and parameters.
    fn dims(&self, cls: &[usize], loc: &[usize], anchor: &[usize]) -> Result<(usize, usize, usize)> {
        if self.variances.len() != 4 {
            return Err(Error::Value(format!(
                "{}: 'variances' must hold 4 numbers, got {:?}",
                Self::OP,
                self.variances
            )));
        }
        let ok = cls.len() == 3
            && loc.len() == 2
            && anchor.len() == 3
            && loc[0] == cls[0]
            && Some(loc[1]) == cls[2].checked_mul(4)
            && (anchor[0] == 1 || anchor[0] == cls[0])
            && anchor[1] == cls[2]
            && anchor[2] == 4;
        if !ok {
            return Err(Error::Shape(format!(
                "{}: expected cls_prob (B, classes, N), loc_pred (B, N*4) and anchor (1 or B, N, 4), got shapes {}, {} and {}",
                Self::OP,
                fmt_shape(cls),
                fmt_shape(loc),
                fmt_shape(anchor)
            )));
        }
        Ok((cls[0], cls[1], cls[2]))
    }

    /// One batch item's output rows (n × 6).
    fn detect(&self, cls: &[f64], loc: &[f64], anchors: &[f64], classes: usize, n: usize) -> Vec<f64> {
        let mut rows: Vec<[f64; 6]> = Vec::new();
        for i in 0..n {
            let mut best: Option<(usize, f64)> = None;
            for j in (0..classes).filter(|&j| j as i64 != self.background_id) {
                let p = cls[j * n + i];
                if best.is_none_or(|(_, s)| p > s) {
                    best = Some((j, p));
                }
            }
            let Some((j, score)) = best.filter(|&(_, s)| s >= self.threshold) else { continue };
            let id = if self.background_id >= 0 && j as i64 > self.background_id { j - 1 } else { j };
            let b = decode(&anchors[i * 4..i * 4 + 4], &loc[i * 4..i * 4 + 4], &self.variances, self.clip);
            rows.push([id as f64, score, b[0], b[1], b[2], b[3]]);
        }
        if self.nms_threshold > 0.0 && self.nms_threshold <= 1.0 {
            // Descending score; ties keep anchor order.
            rows.sort_by(|a, b| b[1].partial_cmp(&a[1]).unwrap_or(std::cmp::Ordering::Equal));
            if self.nms_topk > 0 {
                rows.iter_mut().skip(self.nms_topk as usize).for_each(|r| r[0] = -1.0);
            }
            for i in 0..rows.len() {
                if rows[i][0] < 0.0 {
                    continue;
                }
                for j in i + 1..rows.len() {
                    let rivals = self.force_suppress || rows[i][0] == rows[j][0];
                    if rows[j][0] >= 0.0
                        && rivals
                        && super::boxes::iou(&rows[i][2..], &rows[j][2..]) >= self.nms_threshold
                    {
                        rows[j][0] = -1.0;
                    }
                }
            }
        }
        let mut out: Vec<f64> = rows.into_iter().flatten().collect();
        out.resize(n * 6, -1.0);
        out
    }
}

impl Op for MultiBoxDetection {
    fn name(&self) -> &'static str {
        Self::OP
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["cls_prob", "loc_pred", "anchor"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.to_attrs()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let (b, _, n) = self.dims(&inputs[0].shape, &inputs[1].shape, &inputs[2].shape)?;
        let dt = inputs[0].dtype;
        if let Some((m, name)) = inputs.iter().zip(self.arg_names()).find(|(m, _)| !m.dtype.is_float() || m.dtype != dt)
        {
            return Err(Error::DType(format!(
                "{}: argument '{name}' has dtype {}; every input must share one floating-point dtype ('cls_prob' has {dt})",
                Self::OP,
                m.dtype
            )));
        }
        Ok(vec![Meta::new(&[b, n, 6], dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (b, classes, n) = self.dims(inputs[0].shape(), inputs[1].shape(), inputs[2].shape())?;
        let [cls, loc, anchors] = [0, 1, 2].map(|i| inputs[i].to_f64_vec());
        let shared = inputs[2].shape()[0] == 1;
        let per_item = par::map_tasks(b, b * n * classes.max(1), Cost::Heavy, |k| {
            let a = if shared { &anchors[..] } else { &anchors[k * n * 4..(k + 1) * n * 4] };
            self.detect(&cls[k * classes * n..(k + 1) * classes * n], &loc[k * n * 4..(k + 1) * n * 4], a, classes, n)
        });
        with_dtype!(outputs[0].dtype(), T => {
            outputs[0].write_out::<T, _>(|o| {
                for (d, &s) in o.iter_mut().zip(per_item.iter().flatten()) {
                    *d = T::from_f64(s);
                }
            })
        })
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![None, None, None]) // zero, as in MXNet
    }
}

/// The multibox ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "_contrib_MultiBoxPrior",
        aliases: &[],
        args: &["data"],
        doc: "Generates SSD prior (anchor) boxes for every cell of a feature map, from sizes and ratios.",
        params: MultiBoxPrior::schema,
        build: parsed_op::<MultiBoxPrior>,
    },
    OpDef {
        name: "_contrib_MultiBoxDetection",
        aliases: &[],
        args: &["cls_prob", "loc_pred", "anchor"],
        doc: "Converts SSD class probabilities and box offsets into detections [class, score, box], with non-maximum suppression.",
        params: MultiBoxDetection::schema,
        build: parsed_op::<MultiBoxDetection>,
    },
];
