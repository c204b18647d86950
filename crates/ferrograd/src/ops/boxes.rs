//! Bounding-box operators of MXNet's `contrib`: `box_iou` (pairwise intersection over union),
//! `box_nms` (non-maximum suppression, with its gradient routed back to the kept boxes) and
//! `bipartite_matching` (greedy matching on a score matrix).

use std::sync::Arc;

use ferrograd_kernels::par::{self, Cost};
use ferrograd_kernels::Element;

use super::attrs::fmt_tuple;
use super::common::{dense, gather, scatter_add, NONE};
use super::common::{sizes, to_i64};
use super::params::{parsed_op, NoParams, OpDef, OpParams, ParamEnum};
use super::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::with_dtype;

/// How a box's four numbers are laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ParamEnum)]
pub enum BoxFormat {
    /// `[x, y, width, height]`, (x, y) the centre.
    Center,
    /// `[xmin, ymin, xmax, ymax]`.
    Corner,
}

impl BoxFormat {
    /// The box as corners.
    fn corners(self, b: [f64; 4]) -> [f64; 4] {
        match self {
            BoxFormat::Corner => b,
            BoxFormat::Center => [b[0] - b[2] / 2.0, b[1] - b[3] / 2.0, b[0] + b[2] / 2.0, b[1] + b[3] / 2.0],
        }
    }
    /// Corners written in this format.
    fn encode(self, c: [f64; 4]) -> [f64; 4] {
        match self {
            BoxFormat::Corner => c,
            BoxFormat::Center => [(c[0] + c[2]) / 2.0, (c[1] + c[3]) / 2.0, c[2] - c[0], c[3] - c[1]],
        }
    }
}

/// Intersection over union of two corner boxes (their first four values); 0 when the union is
/// empty. Shared by every box operator (`box_iou`, `box_nms`, the MultiBox operators).
pub(crate) fn iou(a: &[f64], b: &[f64]) -> f64 {
    iou_with(a, b, 0.0)
}

/// [`iou`] with `extra` added to every side length: 1 for boxes in inclusive pixel
/// coordinates (a box from x1 to x2 is x2 - x1 + 1 wide), as the RPN `Proposal` ops measure.
pub(crate) fn iou_with(a: &[f64], b: &[f64], extra: f64) -> f64 {
    let w = (a[2].min(b[2]) - a[0].max(b[0]) + extra).max(0.0);
    let h = (a[3].min(b[3]) - a[1].max(b[1]) + extra).max(0.0);
    let inter = w * h;
    let area = |r: &[f64]| (r[2] - r[0] + extra) * (r[3] - r[1] + extra);
    let union = area(a) + area(b) - inter;
    if union > 0.0 {
        inter / union
    } else {
        0.0
    }
}

/// Greedy non-maximum suppression over `order` (best first): each box is kept unless
/// `suppresses(kept, box)` holds for a box kept before it; stops after `max_keep` boxes.
pub(crate) fn greedy_nms(order: &[usize], max_keep: usize, suppresses: impl Fn(usize, usize) -> bool) -> Vec<usize> {
    let mut kept: Vec<usize> = Vec::with_capacity(order.len().min(max_keep));
    for &i in order {
        if kept.len() >= max_keep {
            break;
        }
        if !kept.iter().any(|&j| suppresses(j, i)) {
            kept.push(i);
        }
    }
    kept
}

fn read4(v: &[f64]) -> [f64; 4] {
    [v[0], v[1], v[2], v[3]]
}

// ---------------------------------------------------------------------------------------------

/// `box_iou(lhs, rhs, format)`: IoU of every lhs box with every rhs box; output shape
/// `lhs.shape[:-1] + rhs.shape[:-1]`. The gradient is zero, as in MXNet.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct BoxIou {
    /// The box encoding: "corner" [xmin, ymin, xmax, ymax] or "center" [x, y, width, height].
    #[param(default = BoxFormat::Corner)]
    pub format: BoxFormat,
}

impl Op for BoxIou {
    fn name(&self) -> &'static str {
        "_contrib_box_iou"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["lhs", "rhs"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.to_attrs()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let (l, r) = (&inputs[0].shape, &inputs[1].shape);
        if l.last() != Some(&4) || r.last() != Some(&4) {
            return Err(Error::Shape(format!(
                "_contrib_box_iou: lhs and rhs must end in an axis of 4 box coordinates, got shapes {} and {}",
                fmt_shape(l),
                fmt_shape(r)
            )));
        }
        let mut shape = l[..l.len() - 1].to_vec();
        shape.extend_from_slice(&r[..r.len() - 1]);
        Ok(vec![Meta::new(&shape, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let corners = |x: &NDArray| -> Vec<[f64; 4]> {
            x.to_f64_vec().chunks_exact(4).map(|b| self.format.corners(read4(b))).collect()
        };
        let (l, r) = (corners(&inputs[0]), corners(&inputs[1]));
        with_dtype!(outputs[0].dtype(), T => {
            outputs[0].write_out::<T, _>(|o| {
                // Each output is one pair's IoU: chunks of pairs run in parallel when many.
                let m = r.len().max(1);
                par::for_each_chunk(o, Cost::Heavy, |first, chunk| {
                    for (t, v) in chunk.iter_mut().enumerate() {
                        let (i, j) = ((first + t) / m, (first + t) % m);
                        *v = T::from_f64(iou(&l[i], &r[j]));
                    }
                })
            })
        })
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![None, None])
    }
}

// ---------------------------------------------------------------------------------------------

/// `box_nms(data, ...)`: per batch of `n` boxes of width `k` (the last two axes), keeps the boxes
/// scoring above `valid_thresh` (the `topk` best, if set), drops each box overlapping a
/// better-scoring kept one by more than `overlap_thresh` (only within its class unless
/// `force_suppress`), and writes the kept boxes in descending score order, rows of -1 after them.
/// A hidden second output records each row's source box, which routes the gradient.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct BoxNms {
    /// Overlap (IoU) above which the lower-scoring box is suppressed.
    #[param(default = 0.5)]
    pub overlap_thresh: f64,
    /// Boxes scoring at or below this are dropped.
    #[param(default = 0.0)]
    pub valid_thresh: f64,
    /// Keep only the topk best-scoring boxes before suppression; -1: no limit.
    #[param(default = -1)]
    pub topk: i64,
    /// Position of the 4 coordinates in a box row.
    #[param(default = 2)]
    pub coord_start: i64,
    /// Position of the score in a box row.
    #[param(default = 1)]
    pub score_index: i64,
    /// Position of the class id in a box row; -1: no class.
    #[param(default = -1)]
    pub id_index: i64,
    /// Class id of background boxes, dropped before suppression (needs id_index); -1: none.
    #[param(default = -1)]
    pub background_id: i64,
    /// Suppress across classes too.
    #[param(default = false)]
    pub force_suppress: bool,
    /// Coordinate encoding of the input boxes.
    #[param(default = BoxFormat::Corner)]
    pub in_format: BoxFormat,
    /// Coordinate encoding of the output boxes.
    #[param(default = BoxFormat::Corner)]
    pub out_format: BoxFormat,
}

impl BoxNms {
    const OP: &'static str = "_contrib_box_nms";

    /// `(batches, n, k)` of the data shape, after checking the field positions fit in `k`.
    fn dims(&self, shape: &[usize]) -> Result<(usize, usize, usize)> {
        if shape.len() < 2 {
            return Err(Error::Shape(format!(
                "{}: data must have at least 2 dimensions (boxes, box width), got shape {}",
                Self::OP,
                fmt_shape(shape)
            )));
        }
        let k = shape[shape.len() - 1];
        let fits = |i: i64, span: i64| i >= 0 && i + span <= k as i64;
        if !fits(self.coord_start, 4) || !fits(self.score_index, 1) || (self.id_index >= 0 && !fits(self.id_index, 1)) {
            return Err(Error::Value(format!(
                "{}: coord_start={} (4 coordinates), score_index={} and id_index={} must lie within \
                 box rows of width {k} (data shape {})",
                Self::OP,
                self.coord_start,
                self.score_index,
                self.id_index,
                fmt_shape(shape)
            )));
        }
        let n = shape[shape.len() - 2];
        Ok((shape[..shape.len() - 2].iter().product(), n, k))
    }

    /// For one batch's rows, the source row of each output row (`NONE` past the kept boxes).
    fn select(&self, rows: &[f64], n: usize, k: usize) -> Vec<usize> {
        if self.topk == 0 {
            return (0..n).collect(); // MXNet passes the boxes through untouched
        }
        let row = |i: usize| &rows[i * k..(i + 1) * k];
        let score = |i: usize| row(i)[self.score_index as usize];
        let class = |i: usize| if self.id_index >= 0 { Some(row(i)[self.id_index as usize]) } else { None };
        let coord = |i: usize| self.in_format.corners(read4(&row(i)[self.coord_start as usize..]));
        let background =
            if self.id_index >= 0 && self.background_id >= 0 { Some(self.background_id as f64) } else { None };
        let mut order: Vec<usize> = (0..n)
            .filter(|&i| score(i) > self.valid_thresh && (background.is_none() || class(i) != background))
            .collect();
        // Descending score; ties keep input order.
        order.sort_by(|&a, &b| score(b).partial_cmp(&score(a)).unwrap_or(std::cmp::Ordering::Equal));
        if self.topk > 0 {
            order.truncate(self.topk as usize);
        }
        let mut kept = greedy_nms(&order, usize::MAX, |j, i| {
            let same_class = self.force_suppress || self.id_index < 0 || class(i) == class(j);
            same_class && iou(&coord(i), &coord(j)) > self.overlap_thresh
        });
        kept.resize(n, NONE);
        kept
    }
}

impl Op for BoxNms {
    fn name(&self) -> &'static str {
        Self::OP
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.to_attrs()
    }
    fn num_outputs(&self) -> usize {
        2
    }
    fn num_visible_outputs(&self) -> usize {
        1
    }
    fn output_names(&self) -> Option<&'static [&'static str]> {
        Some(&["output0", "output1"]) // MXNet's default names for two outputs
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let s = &inputs[0].shape;
        self.dims(s)?;
        Ok(vec![inputs[0].clone(), Meta::new(&s[..s.len() - 1], DType::I64)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let x = &inputs[0];
        let (batches, n, k) = self.dims(x.shape())?;
        let values = x.to_f64_vec();
        // Batch items are independent: in parallel when the pairwise suppression is worth it.
        let per_item = par::map_tasks(batches, batches * n * n, Cost::Heavy, |b| {
            let rows = &values[b * n * k..(b + 1) * n * k];
            self.select(rows, n, k).into_iter().map(|s| if s == NONE { NONE } else { b * n + s }).collect::<Vec<_>>()
        });
        let source: Vec<usize> = per_item.into_iter().flatten().collect();
        let c0 = self.coord_start as usize;
        let convert = self.in_format != self.out_format && self.topk != 0;
        with_dtype!(x.dtype(), T => {
            outputs[0].write_out::<T, _>(|o| {
                for (r, &s) in source.iter().enumerate() {
                    let out = &mut o[r * k..(r + 1) * k];
                    if s == NONE {
                        out.fill(T::from_f64(-1.0));
                        continue;
                    }
                    let src = &values[s * k..(s + 1) * k];
                    out.iter_mut().zip(src).for_each(|(v, &w)| *v = T::from_f64(w));
                    if convert {
                        let c = self.out_format.encode(self.in_format.corners(read4(&src[c0..])));
                        out[c0..c0 + 4].iter_mut().zip(c).for_each(|(v, w)| *v = T::from_f64(w));
                    }
                }
            })
        })?;
        outputs[1].write_out::<i64, _>(|o| {
            o.iter_mut().zip(&source).for_each(|(v, &s)| *v = if s == NONE { -1 } else { s as i64 })
        })
    }
    fn saves(&self) -> Saves {
        Saves::Outputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], outputs: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let shape = g.shape(inputs[0]);
        Ok(vec![Some(g.apply1(BoxRowsScatter { shape }, &[og[0], outputs[1]])?)])
    }
}

/// Output row → source row map (in elements) from a row-source array (`-1` = none).
fn row_map(op: &str, sources: &NDArray, rows: usize, k: usize) -> Result<Vec<usize>> {
    let (buf, range) = dense(sources);
    let src = buf
        .slice::<i64>()
        .ok_or_else(|| Error::DType(format!("{op}: row sources must be int64, got {}", sources.dtype())))?;
    let mut map = Vec::with_capacity(src[range.clone()].len() * k);
    for &s in &src[range] {
        if s >= 0 && (s as usize) >= rows {
            return Err(Error::Index(format!("{op}: row source {s} is out of range for {rows} rows")));
        }
        map.extend((0..k).map(|c| if s < 0 { NONE } else { s as usize * k + c }));
    }
    Ok(map)
}

/// `_backward_contrib_box_nms`: zeros of the data's shape with each output row's gradient added
/// at its source box (rows of dropped boxes get none). Its gradient is [`BoxRowsGather`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoxRowsScatter {
    pub shape: Vec<usize>,
}

impl Op for BoxRowsScatter {
    fn name(&self) -> &'static str {
        "_backward_contrib_box_nms"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["ograd", "sources"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("shape", fmt_tuple(&to_i64(&self.shape)))]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        if inputs[0].shape.as_slice() != self.shape.as_slice() {
            return Err(Error::Shape(format!(
                "{}: gradient of shape {} does not match the data shape {}",
                self.name(),
                fmt_shape(&inputs[0].shape),
                fmt_shape(&self.shape)
            )));
        }
        Ok(vec![inputs[0].clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let k = self.shape.last().copied().unwrap_or(1);
        let rows = self.shape.iter().product::<usize>() / k.max(1);
        let map = row_map(self.name(), &inputs[1], rows, k)?;
        scatter_add(&inputs[0], &map, &mut outputs[0])
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![Some(g.apply1(BoxRowsGather, &[og[0], inputs[1]])?), None])
    }
}

/// `_contrib_box_rows_gather`: output row `r` is data row `sources[r]` (zeros where it is -1):
/// the gradient of [`BoxRowsScatter`], and the linear part of `box_nms` itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BoxRowsGather;

impl Op for BoxRowsGather {
    fn name(&self) -> &'static str {
        "_contrib_box_rows_gather"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["data", "sources"]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let (d, s) = (&inputs[0].shape, &inputs[1].shape);
        if d.is_empty() || d[..d.len() - 1] != s[..] {
            return Err(Error::Shape(format!(
                "{}: sources must have one entry per row of data, got shapes {} and {}",
                self.name(),
                fmt_shape(d),
                fmt_shape(s)
            )));
        }
        Ok(vec![inputs[0].clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let shape = inputs[0].shape();
        let k = shape.last().copied().unwrap_or(1);
        let rows = inputs[0].size() / k.max(1);
        let map = row_map(self.name(), &inputs[1], rows, k)?;
        gather(&inputs[0], &map, 0.0, &mut outputs[0])
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let shape = g.shape(inputs[0]);
        Ok(vec![Some(g.apply1(BoxRowsScatter { shape }, &[og[0], inputs[1]])?), None])
    }
}

// ---------------------------------------------------------------------------------------------

/// `bipartite_matching(data, is_ascend, threshold, topk)`: on each (N, M) score matrix, takes
/// the pairs best first (descending scores, or ascending with `is_ascend`), matching a row and a
/// column when both are still free, until a score fails the threshold or `topk` matches are made.
/// Outputs the matched column of each row and the matched row of each column (-1: none), in the
/// data's dtype. The gradient is zero, as in MXNet.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct BipartiteMatching {
    /// Match the lowest scores first instead of the highest.
    #[param(default = false)]
    pub is_ascend: bool,
    /// Scores below it (above it with is_ascend) are never matched.
    pub threshold: f64,
    /// At most this many matches; -1: no limit.
    #[param(default = -1)]
    pub topk: i64,
}

impl BipartiteMatching {
    fn dims(shape: &[usize]) -> Result<(usize, usize, usize)> {
        if shape.len() < 2 {
            return Err(Error::Shape(format!(
                "_contrib_bipartite_matching: data must have at least 2 dimensions (N, M), got shape {}",
                fmt_shape(shape)
            )));
        }
        let (n, m) = (shape[shape.len() - 2], shape[shape.len() - 1]);
        Ok((shape[..shape.len() - 2].iter().product(), n, m))
    }

    fn match_one(&self, s: &[f64], n: usize, m: usize, rows: &mut [f64], cols: &mut [f64]) {
        let mut order: Vec<usize> = (0..n * m).collect();
        let key = |i: &usize| s[*i];
        if self.is_ascend {
            order.sort_by(|a, b| key(a).partial_cmp(&key(b)).unwrap_or(std::cmp::Ordering::Equal));
        } else {
            order.sort_by(|a, b| key(b).partial_cmp(&key(a)).unwrap_or(std::cmp::Ordering::Equal));
        }
        let limit = if self.topk > 0 { self.topk as usize } else { usize::MAX };
        let mut made = 0;
        for i in order {
            let passes = if self.is_ascend { s[i] <= self.threshold } else { s[i] >= self.threshold };
            if !passes || made >= limit {
                break;
            }
            let (r, c) = (i / m, i % m);
            if rows[r] < 0.0 && cols[c] < 0.0 {
                rows[r] = c as f64;
                cols[c] = r as f64;
                made += 1;
            }
        }
    }
}

impl Op for BipartiteMatching {
    fn name(&self) -> &'static str {
        "_contrib_bipartite_matching"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.to_attrs()
    }
    fn num_outputs(&self) -> usize {
        2
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let s = &inputs[0].shape;
        Self::dims(s)?;
        let lead = &s[..s.len() - 2];
        let rows = [lead, &[s[s.len() - 2]]].concat();
        let cols = [lead, &[s[s.len() - 1]]].concat();
        Ok(vec![Meta::new(&rows, inputs[0].dtype), Meta::new(&cols, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (batches, n, m) = Self::dims(inputs[0].shape())?;
        let s = inputs[0].to_f64_vec();
        // Batch items are independent: matched in parallel when the sorts are worth it.
        let per_item = par::map_tasks(batches, batches * n * m * 8, Cost::Heavy, |b| {
            let (mut rows, mut cols) = (vec![-1.0; n], vec![-1.0; m]);
            self.match_one(&s[b * n * m..(b + 1) * n * m], n, m, &mut rows, &mut cols);
            (rows, cols)
        });
        let rows: Vec<f64> = per_item.iter().flat_map(|(r, _)| r.iter().copied()).collect();
        let cols: Vec<f64> = per_item.iter().flat_map(|(_, c)| c.iter().copied()).collect();
        let dtype = outputs[0].dtype();
        with_dtype!(dtype, T => {
            outputs[0].write_out::<T, _>(|o| o.iter_mut().zip(&rows).for_each(|(v, &r)| *v = T::from_f64(r)))?;
            outputs[1].write_out::<T, _>(|o| o.iter_mut().zip(&cols).for_each(|(v, &c)| *v = T::from_f64(c)))
        })
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _i: &[Val], _o: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Ok(vec![None])
    }
}

/// `_backward_contrib_box_nms`'s parameter.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct BoxRowsScatterParams {
    /// Shape of the data whose gradient this is.
    pub shape: Vec<i64>,
}

fn scatter_op(a: &Attrs) -> Result<OpRef> {
    let p = BoxRowsScatterParams::parse(a)?;
    Ok(Arc::new(BoxRowsScatter { shape: sizes("_backward_contrib_box_nms", "shape", &p.shape)? }))
}

/// The bounding-box ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "_contrib_box_iou",
        aliases: &[],
        args: &["lhs", "rhs"],
        doc: "Intersection over union of every lhs box with every rhs box.",
        params: BoxIou::schema,
        build: parsed_op::<BoxIou>,
    },
    OpDef {
        name: "_contrib_box_nms",
        aliases: &["_contrib_box_non_maximum_suppression"],
        args: &["data"],
        doc: "Non-maximum suppression: kept boxes by descending score, then rows of -1.",
        params: BoxNms::schema,
        build: parsed_op::<BoxNms>,
    },
    OpDef {
        name: "_contrib_bipartite_matching",
        aliases: &[],
        args: &["data"],
        doc: "Greedy bipartite matching on a score matrix: each row's column and each column's row.",
        params: BipartiteMatching::schema,
        build: parsed_op::<BipartiteMatching>,
    },
    OpDef {
        name: "_backward_contrib_box_nms",
        aliases: &[],
        args: &["ograd", "sources"],
        doc: "box_nms's gradient: each output row's gradient added at its source box.",
        params: BoxRowsScatterParams::schema,
        build: scatter_op,
    },
    OpDef {
        name: "_contrib_box_rows_gather",
        aliases: &[],
        args: &["data", "sources"],
        doc: "Row r of the output is data row sources[r] (zeros where it is -1).",
        params: NoParams::schema,
        build: |a| {
            NoParams::parse(a)?;
            Ok(Arc::new(BoxRowsGather))
        },
    },
];
