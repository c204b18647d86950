//! Region proposals of a Faster R-CNN region proposal network: `_contrib_Proposal` (one image)
//! and `_contrib_MultiProposal` (a batch).
//!
//! Per image: anchors (one per ratio × scale, centred on every feature-map cell, `feature_stride`
//! apart) are moved by the predicted deltas, clipped to the image, scored by the foreground half
//! of `cls_prob`; boxes of the padded map (beyond `im_info`'s size) and boxes smaller than
//! `rpn_min_size · scale` get score -1 (the small ones also grow by the minimum size, as in
//! MXNet). The `rpn_pre_nms_top_n` best go through non-maximum suppression (inclusive pixel
//! coordinates: a box is x2 - x1 + 1 wide), and the first `rpn_post_nms_top_n` kept boxes are
//! the output rows `[batch_index, x1, y1, x2, y2]`, repeated in order when fewer are kept.
//! The ops are not differentiable: their inputs get zero gradients, as in MXNet.

use ferrograd_kernels::element::Element;
use ferrograd_kernels::par::{map_tasks, Cost};

use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::boxes::{greedy_nms, iou_with};
use crate::ops::params::{OpDef, OpParams};
use crate::ops::{Ctx, Grad, Op, Saves, Val};

/// The parameters of `_contrib_Proposal` and `_contrib_MultiProposal`.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct ProposalParams {
    /// Boxes kept (best scores first) before non-maximum suppression; <= 0: all.
    #[param(default = 6000)]
    pub rpn_pre_nms_top_n: i64,
    /// Boxes output per image after non-maximum suppression.
    #[param(default = 300)]
    pub rpn_post_nms_top_n: i64,
    /// Suppression threshold: a box overlapping a kept one by more (IoU) is dropped.
    #[param(default = 0.7)]
    pub threshold: f64,
    /// Minimum box height and width, in image pixels before im_info's scale.
    #[param(default = 16)]
    pub rpn_min_size: i64,
    /// Anchor scales (multiples of feature_stride).
    #[param(default = vec![4.0, 8.0, 16.0, 32.0])]
    pub scales: Vec<f64>,
    /// Anchor aspect ratios (height / width).
    #[param(default = vec![0.5, 1.0, 2.0])]
    pub ratios: Vec<f64>,
    /// Image pixels per feature-map cell.
    #[param(default = 16)]
    pub feature_stride: i64,
    /// Also output each box's score (a second output).
    #[param(default = false)]
    pub output_score: bool,
    /// The deltas are corner offsets (IoU loss) rather than centre/size deltas.
    #[param(default = false)]
    pub iou_loss: bool,
}

/// Sizes of one problem: images, anchors per cell, feature map.
#[derive(Clone, Copy, Debug)]
struct Dims {
    n: usize,
    a: usize,
    h: usize,
    w: usize,
    post: usize,
}

impl ProposalParams {
    fn dims(&self, op: &str, multi: bool, inputs: &[&[usize]]) -> Result<Dims> {
        let (cls, bbox, info) = (inputs[0], inputs[1], inputs[2]);
        if cls.len() != 4 || !cls[1].is_multiple_of(2) {
            return Err(Error::Shape(format!(
                "{op}: cls_prob must be 4-D (N, 2·anchors, H, W), got shape {}",
                fmt_shape(cls)
            )));
        }
        let (n, a, h, w) = (cls[0], cls[1] / 2, cls[2], cls[3]);
        if !multi && n != 1 {
            return Err(Error::Shape(format!(
                "{op}: takes one image (cls_prob of batch 1; use _contrib_MultiProposal for a batch), got cls_prob \
                 of shape {}",
                fmt_shape(cls)
            )));
        }
        let anchors = self.ratios.len() * self.scales.len();
        if a != anchors {
            return Err(Error::Shape(format!(
                "{op}: cls_prob of shape {} has {a} anchors per cell, but ratios {:?} × scales {:?} make {anchors}",
                fmt_shape(cls),
                self.ratios,
                self.scales
            )));
        }
        if bbox != [n, 4 * a, h, w] {
            return Err(Error::Shape(format!(
                "{op}: bbox_pred has shape {}, expected {} for cls_prob of shape {}",
                fmt_shape(bbox),
                fmt_shape(&[n, 4 * a, h, w]),
                fmt_shape(cls)
            )));
        }
        if info != [n, 3] {
            return Err(Error::Shape(format!(
                "{op}: im_info has shape {}, expected {} rows [height, width, scale] for cls_prob of shape {}",
                fmt_shape(info),
                fmt_shape(&[n, 3]),
                fmt_shape(cls)
            )));
        }
        if a * h * w == 0 {
            return Err(Error::Shape(format!("{op}: cls_prob of shape {} has no anchors", fmt_shape(cls))));
        }
        Ok(Dims { n, a, h, w, post: self.rpn_post_nms_top_n as usize })
    }

    fn check(&self, op: &str) -> Result<()> {
        if self.rpn_post_nms_top_n < 0 {
            return Err(Error::Value(format!(
                "{op}: parameter 'rpn_post_nms_top_n' must be non-negative, got {}",
                self.rpn_post_nms_top_n
            )));
        }
        if self.feature_stride <= 0 {
            return Err(Error::Value(format!(
                "{op}: parameter 'feature_stride' must be positive, got {}",
                self.feature_stride
            )));
        }
        if self.scales.is_empty() || self.ratios.is_empty() {
            return Err(Error::Value(format!("{op}: parameters 'scales' and 'ratios' must not be empty")));
        }
        Ok(())
    }

    /// The anchors centred on cell (0, 0), ratio-major, computed in single precision as MXNet
    /// does (the rounding decides the integer sizes).
    fn anchors(&self) -> Vec<[f64; 4]> {
        let fs = self.feature_stride as f32;
        let (side, ctr) = (fs, 0.5 * (fs - 1.0));
        let mut out = Vec::with_capacity(self.ratios.len() * self.scales.len());
        for &ratio in &self.ratios {
            for &scale in &self.scales {
                let (ratio, scale) = (ratio as f32, scale as f32);
                let size_ratios = (side * side / ratio).floor();
                let w = (size_ratios.sqrt() + 0.5).floor() * scale;
                let h = (w / scale * ratio + 0.5).floor() * scale;
                let c = |v: f32| v as f64;
                out.push([
                    c(ctr - 0.5 * (w - 1.0)),
                    c(ctr - 0.5 * (h - 1.0)),
                    c(ctr + 0.5 * (w - 1.0)),
                    c(ctr + 0.5 * (h - 1.0)),
                ]);
            }
        }
        out
    }

    /// One image's output rows `[x1, y1, x2, y2, score]`, `d.post` of them.
    #[allow(clippy::too_many_arguments)]
    fn image(
        &self,
        op: &str,
        d: &Dims,
        anchors: &[[f64; 4]],
        cls: &[f64],
        deltas: &[f64],
        info: &[f64],
        single: bool,
    ) -> Result<Vec<[f64; 5]>> {
        let r = |v: f64| if single { v as f32 as f64 } else { v };
        let (a_n, h, w) = (d.a, d.h, d.w);
        let plane = h * w;
        let fs = self.feature_stride as f64;
        let (im_h, im_w, im_scale) = (info[0], info[1], info[2]);
        let (real_h, real_w) = ((im_h / fs).trunc(), (im_w / fs).trunc());
        if real_h > h as f64 || real_w > w as f64 {
            return Err(Error::Value(format!(
                "{op}: im_info [{im_h}, {im_w}] / feature_stride {fs} covers {real_h} × {real_w} cells, more \
                 than the {h} × {w} score map"
            )));
        }
        let min_size = r(self.rpn_min_size as f64 * im_scale);
        let clip = |v: f64, hi: f64| r(v.min(r(hi - 1.0)).max(0.0));
        let mut boxes = Vec::with_capacity(a_n * plane);
        for j in 0..h {
            for k in 0..w {
                for (a, anchor) in anchors.iter().enumerate() {
                    let (sx, sy) = (k as f64 * fs, j as f64 * fs);
                    let [x1, y1, x2, y2] = [anchor[0] + sx, anchor[1] + sy, anchor[2] + sx, anchor[3] + sy].map(r);
                    let dlt = |q: usize| deltas[(a * 4 + q) * plane + j * w + k];
                    let mut score = cls[(a_n + a) * plane + j * w + k];
                    let pred = if self.iou_loss {
                        [r(x1 + dlt(0)), r(y1 + dlt(1)), r(x2 + dlt(2)), r(y2 + dlt(3))]
                    } else {
                        let (bw, bh) = (r(r(x2 - x1) + 1.0), r(r(y2 - y1) + 1.0));
                        let (cx, cy) = (r(x1 + r(0.5 * r(bw - 1.0))), r(y1 + r(0.5 * r(bh - 1.0))));
                        let (pcx, pcy) = (r(r(dlt(0) * bw) + cx), r(r(dlt(1) * bh) + cy));
                        let (pw, ph) = (r(r(dlt(2).exp()) * bw), r(r(dlt(3).exp()) * bh));
                        let (hw, hh) = (r(0.5 * r(pw - 1.0)), r(0.5 * r(ph - 1.0)));
                        [r(pcx - hw), r(pcy - hh), r(pcx + hw), r(pcy + hh)]
                    };
                    let mut b = [clip(pred[0], im_w), clip(pred[1], im_h), clip(pred[2], im_w), clip(pred[3], im_h)];
                    if j as f64 >= real_h || k as f64 >= real_w {
                        score = -1.0;
                    }
                    let (bw, bh) = (r(r(b[2] - b[0]) + 1.0), r(r(b[3] - b[1]) + 1.0));
                    if bw < min_size || bh < min_size {
                        let half = r(min_size / 2.0);
                        b = [r(b[0] - half), r(b[1] - half), r(b[2] + half), r(b[3] + half)];
                        score = -1.0;
                    }
                    boxes.push([b[0], b[1], b[2], b[3], score]);
                }
            }
        }
        // Best first; ties keep anchor order (MXNet's sort leaves their order unspecified).
        let mut order: Vec<usize> = (0..boxes.len()).collect();
        order.sort_by(|&i, &j| boxes[j][4].partial_cmp(&boxes[i][4]).unwrap_or(std::cmp::Ordering::Equal));
        let pre =
            if self.rpn_pre_nms_top_n > 0 { (self.rpn_pre_nms_top_n as usize).min(boxes.len()) } else { boxes.len() };
        order.truncate(pre);
        let max_keep = d.post.min(pre);
        let kept = greedy_nms(&order, max_keep, |k, i| iou_with(&boxes[k], &boxes[i], 1.0) > self.threshold);
        Ok((0..d.post).map(|i| boxes[kept[i % kept.len()]]).collect())
    }
}

/// `_contrib_Proposal` (`multi` false) or `_contrib_MultiProposal`.
#[derive(Clone, Debug, PartialEq)]
pub struct Proposal {
    pub p: ProposalParams,
    pub multi: bool,
}

impl Op for Proposal {
    fn name(&self) -> &'static str {
        if self.multi {
            "_contrib_MultiProposal"
        } else {
            "_contrib_Proposal"
        }
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["cls_prob", "bbox_pred", "im_info"]
    }
    fn num_outputs(&self) -> usize {
        2
    }
    fn num_visible_outputs(&self) -> usize {
        if self.p.output_score {
            2
        } else {
            1
        }
    }
    fn output_names(&self) -> Option<&'static [&'static str]> {
        Some(&["output", "score"])
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.p.to_attrs()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let op = self.name();
        let dt = inputs[0].dtype;
        if let Some((m, name)) = inputs
            .iter()
            .zip(self.arg_names())
            .find(|(m, _)| !matches!(m.dtype, crate::dtype::DType::F32 | crate::dtype::DType::F64) || m.dtype != dt)
        {
            return Err(Error::DType(format!(
                "{op}: argument '{name}' has dtype {}; every input must share one dtype, float32 or float64 ('cls_prob' has {dt})",
                m.dtype
            )));
        }
        let shapes: Vec<&[usize]> = inputs.iter().map(|m| &m.shape[..]).collect();
        let d = self.p.dims(op, self.multi, &shapes)?;
        let rows = d.n * d.post;
        Ok(vec![Meta::new(&[rows, 5], dt), Meta::new(&[rows, 1], dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let shapes: Vec<&[usize]> = inputs.iter().map(|a| a.shape()).collect();
        let d = self.p.dims(self.name(), self.multi, &shapes)?;
        let [cls, bbox, info] = [0, 1, 2].map(|i| inputs[i].to_f64_vec());
        let single = inputs[0].dtype() == crate::dtype::DType::F32;
        let anchors = self.p.anchors();
        let (cs, bs) = (2 * d.a * d.h * d.w, 4 * d.a * d.h * d.w);
        let per_image = map_tasks(d.n, d.n * cs * 16, Cost::Heavy, |b| {
            self.p.image(
                self.name(),
                &d,
                &anchors,
                &cls[b * cs..][..cs],
                &bbox[b * bs..][..bs],
                &info[b * 3..][..3],
                single,
            )
        });
        let mut rows = Vec::with_capacity(d.n * d.post);
        for (b, img) in per_image.into_iter().enumerate() {
            rows.extend(img?.into_iter().map(|r| (b, r)));
        }
        let (o0, o1) = outputs.split_at_mut(1);
        float_kernel!(self.name(), o0[0].dtype(), T => {
            o0[0].write_out::<T, _>(|o| {
                for (dst, (b, r)) in o.chunks_mut(5).zip(&rows) {
                    dst[0] = T::from_f64(*b as f64);
                    for q in 0..4 {
                        dst[q + 1] = T::from_f64(r[q]);
                    }
                }
            })?;
            o1[0].write_out::<T, _>(|o| {
                for (dst, (_, r)) in o.iter_mut().zip(&rows) {
                    *dst = T::from_f64(r[4]);
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

fn build_proposal(a: &crate::ops::Attrs) -> Result<crate::ops::OpRef> {
    let p = ProposalParams::parse(a)?;
    p.check(&a.op)?;
    Ok(std::sync::Arc::new(Proposal { p, multi: false }))
}

fn build_multi_proposal(a: &crate::ops::Attrs) -> Result<crate::ops::OpRef> {
    let p = ProposalParams::parse(a)?;
    p.check(&a.op)?;
    Ok(std::sync::Arc::new(Proposal { p, multi: true }))
}

/// The proposal ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "_contrib_Proposal",
        aliases: &[],
        args: &["cls_prob", "bbox_pred", "im_info"],
        doc: "Region proposals of a region proposal network for one image: anchors moved by bbox_pred, scored by \
              cls_prob, non-maximum suppressed; rows [0, x1, y1, x2, y2] (and scores with output_score).",
        params: ProposalParams::schema,
        build: build_proposal,
    },
    OpDef {
        name: "_contrib_MultiProposal",
        aliases: &[],
        args: &["cls_prob", "bbox_pred", "im_info"],
        doc: "Proposal for a batch of images: rpn_post_nms_top_n rows [batch_index, x1, y1, x2, y2] per image.",
        params: ProposalParams::schema,
        build: build_multi_proposal,
    },
];
