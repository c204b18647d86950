//! `MultiBoxTarget` of MXNet's `contrib`: SSD's training targets. Anchors are matched to ground
//! truth boxes, matched anchors get box regression targets and their class, and (with negative
//! mining) only the hardest negatives are kept as background. Its gradient is zero, as in MXNet.

use ferrograd_kernels::par::{self, Cost};
use ferrograd_kernels::Element;

use super::params::{parsed_op, OpDef, OpParams};
use super::{Ctx, Grad, Op, Saves, Val};
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::with_dtype;

/// Overlaps at or below this do not match in the one-to-one stage.
const MIN_MATCH: f64 = 1e-6;

/// `MultiBoxTarget(anchor, label, cls_pred, ...)`: per batch item, every ground truth box (label
/// rows `[class, xmin, ymin, xmax, ymax, ...]`, class -1 for padding) first takes its best
/// free anchor (greedily, best overlap first), then every other anchor whose best overlap
/// exceeds `overlap_threshold` takes that box. Outputs: the box targets of matched anchors
/// (centre offsets and log sizes, divided by `variances`), their mask, and each anchor's class
/// target (class + 1; 0 for background). With `negative_mining_ratio > 0` only the hardest
/// negatives (lowest background probability under softmax(cls_pred), among anchors whose best
/// overlap is below `negative_mining_thresh`), `max(ratio·positives, minimum_negative_samples)`
/// of them, are background; the other unmatched anchors get `ignore_label`.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct MultiBoxTarget {
    /// Overlap (IoU) above which an anchor matches a ground truth box.
    #[param(default = 0.5)]
    pub overlap_threshold: f64,
    /// Class target of anchors left out by negative mining.
    #[param(default = -1.0)]
    pub ignore_label: f64,
    /// Negatives kept per positive; -1: no mining (every unmatched anchor is background).
    #[param(default = -1.0)]
    pub negative_mining_ratio: f64,
    /// Anchors overlapping a ground truth box this much or more are never mined as negatives.
    #[param(default = 0.5)]
    pub negative_mining_thresh: f64,
    /// Least number of negatives kept by mining.
    #[param(default = 0)]
    pub minimum_negative_samples: i64,
    /// Scales of the (x, y, width, height) targets.
    #[param(default = vec![0.1, 0.1, 0.2, 0.2])]
    pub variances: Vec<f64>,
}

/// One batch item's targets.
struct Targets {
    loc: Vec<f64>,
    mask: Vec<f64>,
    cls: Vec<f64>,
}

impl MultiBoxTarget {
    const OP: &'static str = "_contrib_MultiBoxTarget";

    /// `(B, N, M, label width, classes)` after checking the shapes and parameters.
    fn dims(&self, anchor: &[usize], label: &[usize], cls: &[usize]) -> Result<[usize; 5]> {
        if self.variances.len() != 4 || self.minimum_negative_samples < 0 {
            return Err(Error::Value(format!(
                "{}: 'variances' must hold 4 numbers and 'minimum_negative_samples' be >= 0, got {:?} and {}",
                Self::OP,
                self.variances,
                self.minimum_negative_samples
            )));
        }
        let ok = anchor.len() == 3
            && anchor[0] == 1
            && anchor[2] == 4
            && label.len() == 3
            && label[2] >= 5
            && cls.len() == 3
            && cls[0] == label[0]
            && cls[2] == anchor[1];
        if !ok {
            return Err(Error::Shape(format!(
                "{}: expected anchor (1, N, 4), label (B, M, 5 or more) and cls_pred (B, classes, N), got shapes {}, {} and {}",
                Self::OP,
                fmt_shape(anchor),
                fmt_shape(label),
                fmt_shape(cls)
            )));
        }
        Ok([label[0], anchor[1], label[1], label[2], cls[1]])
    }

    fn targets(
        &self,
        anchors: &[f64],
        label: &[f64],
        cls_pred: &[f64],
        n: usize,
        width: usize,
        classes: usize,
    ) -> Targets {
        let gts: Vec<&[f64]> = label.chunks_exact(width).filter(|r| r[0] >= 0.0).collect();
        let anchor = |i: usize| &anchors[i * 4..i * 4 + 4];
        let ious: Vec<Vec<f64>> =
            (0..n).map(|i| gts.iter().map(|g| super::boxes::iou(anchor(i), &g[1..5])).collect()).collect();
        let mut matched: Vec<Option<usize>> = vec![None; n];
        // One to one: the best remaining (anchor, box) pair, until every box has an anchor.
        let mut free_gt = vec![true; gts.len()];
        for _ in 0..gts.len().min(n) {
            let mut best: Option<(usize, usize, f64)> = None;
            for (i, row) in ious.iter().enumerate().filter(|(i, _)| matched[*i].is_none()) {
                for (j, &v) in row.iter().enumerate().filter(|(j, _)| free_gt[*j]) {
                    if v > MIN_MATCH && best.is_none_or(|(_, _, b)| v > b) {
                        best = Some((i, j, v));
                    }
                }
            }
            let Some((i, j, _)) = best else { break };
            matched[i] = Some(j);
            free_gt[j] = false;
        }
        // Then every other anchor overlapping a box enough.
        let best_of = |i: usize| -> Option<(usize, f64)> {
            ious[i].iter().copied().enumerate().fold(None, |b, (j, v)| match b {
                Some((_, bv)) if bv >= v => b,
                _ => Some((j, v)),
            })
        };
        for (i, m) in matched.iter_mut().enumerate() {
            if m.is_none() {
                *m = best_of(i).filter(|&(_, v)| v > self.overlap_threshold).map(|(j, _)| j);
            }
        }
        let mut t = Targets { loc: vec![0.0; n * 4], mask: vec![0.0; n * 4], cls: vec![0.0; n] };
        let v = &self.variances;
        for (i, m) in matched.iter().enumerate() {
            let Some(j) = *m else { continue };
            let (a, g) = (anchor(i), &gts[j][1..5]);
            let (aw, ah, gw, gh) = (a[2] - a[0], a[3] - a[1], g[2] - g[0], g[3] - g[1]);
            let (ax, ay, gx, gy) = ((a[0] + a[2]) / 2.0, (a[1] + a[3]) / 2.0, (g[0] + g[2]) / 2.0, (g[1] + g[3]) / 2.0);
            let enc = [(gx - ax) / aw / v[0], (gy - ay) / ah / v[1], (gw / aw).ln() / v[2], (gh / ah).ln() / v[3]];
            t.loc[i * 4..i * 4 + 4].copy_from_slice(&enc);
            t.mask[i * 4..i * 4 + 4].fill(1.0);
            t.cls[i] = gts[j][0] + 1.0;
        }
        if self.negative_mining_ratio > 0.0 {
            let positives = matched.iter().filter(|m| m.is_some()).count();
            // Background probability of each candidate negative, under a softmax over classes.
            let mut candidates: Vec<(f64, usize)> = (0..n)
                .filter(|&i| matched[i].is_none() && best_of(i).map_or(0.0, |(_, v)| v) < self.negative_mining_thresh)
                .map(|i| {
                    let score = |c: usize| cls_pred[c * n + i];
                    let top = (0..classes).map(score).fold(f64::NEG_INFINITY, f64::max);
                    let total: f64 = (0..classes).map(|c| (score(c) - top).exp()).sum();
                    ((score(0) - top).exp() / total, i)
                })
                .collect();
            // Hardest (least background-like) first; ties keep anchor order.
            candidates.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
            let wanted =
                ((self.negative_mining_ratio * positives as f64) as usize).max(self.minimum_negative_samples as usize);
            for i in (0..n).filter(|&i| matched[i].is_none()) {
                t.cls[i] = self.ignore_label;
            }
            for &(_, i) in candidates.iter().take(wanted) {
                t.cls[i] = 0.0;
            }
        }
        t
    }
}

impl Op for MultiBoxTarget {
    fn name(&self) -> &'static str {
        Self::OP
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["anchor", "label", "cls_pred"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.to_attrs()
    }
    fn num_outputs(&self) -> usize {
        3
    }
    fn output_names(&self) -> Option<&'static [&'static str]> {
        Some(&["output0", "output1", "output2"])
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let [b, n, ..] = self.dims(&inputs[0].shape, &inputs[1].shape, &inputs[2].shape)?;
        let dt = inputs[0].dtype;
        if let Some((m, name)) = inputs.iter().zip(self.arg_names()).find(|(m, _)| !m.dtype.is_float() || m.dtype != dt)
        {
            return Err(Error::DType(format!(
                "{}: argument '{name}' has dtype {}; every input must share one floating-point dtype ('anchor' has {dt})",
                Self::OP,
                m.dtype
            )));
        }
        let boxes = Meta::new(&[b, n * 4], dt);
        Ok(vec![boxes.clone(), boxes, Meta::new(&[b, n], dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let [b, n, m, width, classes] = self.dims(inputs[0].shape(), inputs[1].shape(), inputs[2].shape())?;
        let [anchors, label, cls] = [0, 1, 2].map(|i| inputs[i].to_f64_vec());
        let per_item = par::map_tasks(b, b * n * (m + classes), Cost::Heavy, |k| {
            let lab = &label[k * m * width..(k + 1) * m * width];
            self.targets(&anchors, lab, &cls[k * classes * n..(k + 1) * classes * n], n, width, classes)
        });
        let parts: [fn(&Targets) -> &Vec<f64>; 3] = [|t| &t.loc, |t| &t.mask, |t| &t.cls];
        for (out, part) in outputs.iter_mut().zip(parts) {
            with_dtype!(out.dtype(), T => {
                out.write_out::<T, _>(|o| {
                    for (d, &s) in o.iter_mut().zip(per_item.iter().flat_map(part)) {
                        *d = T::from_f64(s);
                    }
                })
            })?;
        }
        Ok(())
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![None, None, None]) // zero, as in MXNet
    }
}

/// The multibox target op's declaration.
pub const DEFS: &[OpDef] = &[OpDef {
    name: "_contrib_MultiBoxTarget",
    aliases: &[],
    args: &["anchor", "label", "cls_pred"],
    doc: "Computes SSD training targets (box targets, box mask, class targets) by matching anchors to labelled boxes.",
    params: MultiBoxTarget::schema,
    build: parsed_op::<MultiBoxTarget>,
}];
