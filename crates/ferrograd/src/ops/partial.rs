//! Partial shapes: what symbolic inference knows about a shape before it knows all of it.
//!
//! MXNet lets a graph be declared with unknown dimensions (`0` in legacy mode, `-1` with
//! `np_shape`) and fills them in from the rest of the graph, forward and backward. Here a shape is
//! `None` (rank unknown) or a list of dimensions, each `None` (size unknown) or a size. Ops refine
//! their input and output shapes from each other in `Op::infer_partial`, using the helpers below;
//! the graph walker (`symbol::infer`) repeats that until nothing changes.

use crate::error::{fmt_shape, Error, Result};

/// A shape with unknown parts: `None` = rank unknown; a `None` dimension = size unknown.
pub type PartialShape = Option<Vec<Option<usize>>>;

/// A fully known shape as a partial one.
pub fn known(shape: &[usize]) -> PartialShape {
    Some(shape.iter().map(|&d| Some(d)).collect())
}

/// A sampler's `shape` parameter as symbolic inference reads it: `()` is an unknown rank and a 0
/// an unknown size (MXNet's legacy shapes), to be inferred from the consumers; `None` when the
/// shape is fully given.
pub fn open_shape(shape: &[usize]) -> Option<Vec<PartialShape>> {
    if shape.is_empty() {
        return Some(vec![None]);
    }
    shape.contains(&0).then(|| vec![Some(shape.iter().map(|&d| (d > 0).then_some(d)).collect())])
}

/// The shape, when every dimension is known.
pub fn complete(p: &PartialShape) -> Option<Vec<usize>> {
    p.as_ref()?.iter().copied().collect()
}

/// MXNet's text for a partial shape in messages: `[0,4]` (unknown dimensions as 0).
pub fn fmt_partial(p: &PartialShape) -> String {
    match p {
        None => "[]".into(),
        Some(d) => format!("[{}]", d.iter().map(|x| x.unwrap_or(0).to_string()).collect::<Vec<_>>().join(",")),
    }
}

/// Merges `from` into `into`, filling unknown parts; true when `into` learnt something. A rank or
/// dimension that disagrees is a shape error in MXNet's words ("Provided" is what `into` held).
pub fn merge(into: &mut PartialShape, from: &PartialShape) -> Result<bool> {
    let Some(new) = from else { return Ok(false) };
    let provided = fmt_partial(into);
    let Some(old) = into else {
        *into = Some(new.clone());
        return Ok(true);
    };
    let conflict = || {
        let inferred = complete(from).map_or_else(|| fmt_partial(from), |s| fmt_shape(&s));
        Error::Shape(format!("Shape inconsistent, Provided = {provided}, inferred shape={inferred}"))
    };
    if old.len() != new.len() {
        return Err(conflict());
    }
    let mut changed = false;
    for i in 0..old.len() {
        match (old[i], new[i]) {
            (Some(a), Some(b)) if a != b => return Err(conflict()),
            (None, Some(b)) => {
                old[i] = Some(b);
                changed = true;
            }
            _ => {}
        }
    }
    Ok(changed)
}

/// Elementwise ops: every input and output has one shape, so what any of them knows, all know.
pub fn same_shape(inputs: &mut [PartialShape], outputs: &mut [PartialShape]) -> Result<()> {
    let mut joint: PartialShape = None;
    for s in inputs.iter().chain(outputs.iter()) {
        merge(&mut joint, s)?;
    }
    for s in inputs.iter_mut().chain(outputs.iter_mut()) {
        merge(s, &joint)?;
    }
    Ok(())
}

/// Merges one dimension: `slot` learns `value` when unknown; a known, different size is an error.
pub fn merge_dim(slot: &mut Option<usize>, value: Option<usize>, what: &str) -> Result<()> {
    match (*slot, value) {
        (Some(a), Some(b)) if a != b => Err(Error::Shape(format!("Shape inconsistent in {what}: {a} vs {b}"))),
        (None, v) => {
            *slot = v;
            Ok(())
        }
        _ => Ok(()),
    }
}

/// NumPy-style broadcasting of two partial shapes, forward only (MXNet cannot tell which side a
/// broadcast dimension came from): a dimension is known when both sides know it.
pub fn broadcast(lhs: &PartialShape, rhs: &PartialShape) -> Result<PartialShape> {
    let (Some(l), Some(r)) = (lhs, rhs) else { return Ok(None) };
    let n = l.len().max(r.len());
    let at = |s: &Vec<Option<usize>>, i: usize| if i + s.len() >= n { s[i + s.len() - n] } else { Some(1) };
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        out.push(match (at(l, i), at(r, i)) {
            (Some(a), Some(b)) if a == b || b == 1 => Some(a),
            (Some(1), Some(b)) => Some(b),
            (Some(_), Some(_)) => {
                return Err(Error::Shape(format!(
                    "operands could not be broadcast together with shapes {} {}",
                    fmt_partial(lhs),
                    fmt_partial(rhs)
                )))
            }
            _ => None,
        });
    }
    Ok(Some(out))
}

/// `axis` (negative from the end) as an index into `nd` axes.
fn norm_axis(axis: i64, nd: usize) -> Option<usize> {
    let a = if axis < 0 { axis + nd as i64 } else { axis };
    (0..nd as i64).contains(&a).then_some(a as usize)
}

/// The rank, when known.
fn rank(s: &PartialShape) -> Option<usize> {
    s.as_ref().map(Vec::len)
}

/// Product of the dimensions, when all are known.
fn product(dims: &[Option<usize>]) -> Option<usize> {
    dims.iter().try_fold(1usize, |acc, d| d.map(|d| acc * d))
}

/// `broadcast_*` ops: the output from both operands, forward only.
pub fn broadcast_binary(inputs: &mut [PartialShape], outputs: &mut [PartialShape]) -> Result<()> {
    let out = broadcast(&inputs[0], &inputs[1])?;
    merge(&mut outputs[0], &out).map(drop)
}

/// `FullyConnected`: the output's leading dimensions are the data's; the weight is
/// `(num_hidden, in_features)` and the bias `(num_hidden,)`.
pub fn fully_connected(
    num_hidden: usize,
    flatten: bool,
    ins: &mut [PartialShape],
    outs: &mut [PartialShape],
) -> Result<()> {
    // As in MXNet, nothing is inferred before the data's rank is known.
    let Some(data) = ins[0].clone().filter(|d| !d.is_empty()) else { return Ok(()) };
    let n = data.len();
    if let Some(b) = ins.get_mut(2) {
        merge(b, &known(&[num_hidden]))?;
    }
    let (lead, feats) = if flatten { (1, product(&data[1..])) } else { (n - 1, data[n - 1]) };
    let mut out: Vec<Option<usize>> = data[..lead].to_vec();
    out.push(Some(num_hidden));
    let mut out = Some(out);
    merge(&mut out, &outs[0])?;
    merge(&mut outs[0], &out)?;
    // Backward: the output's leading dimensions are the data's.
    let mut back = Some(data.clone());
    if let Some(o) = &outs[0] {
        for (i, d) in o.iter().take(lead).enumerate() {
            if let Some(b) = back.as_mut() {
                merge_dim(&mut b[i], *d, "FullyConnected data")?;
            }
        }
    }
    merge(&mut ins[0], &back)?;
    merge(&mut ins[1], &Some(vec![Some(num_hidden), feats]))?;
    Ok(())
}

/// A channel-first convolution's geometry (the window along each spatial axis).
pub struct ConvGeometry<'a> {
    pub kernel: &'a [usize],
    pub stride: &'a [usize],
    pub dilate: &'a [usize],
    pub pad: &'a [usize],
    pub num_filter: usize,
    pub num_group: usize,
}

/// `Convolution`: batch and spatial sizes forward; backward the batch always, and a spatial size
/// where the stride is 1 (otherwise several input sizes give the same output size). The weight is
/// `(num_filter, channels / num_group, *kernel)`.
pub fn convolution(g: &ConvGeometry<'_>, ins: &mut [PartialShape], outs: &mut [PartialShape]) -> Result<()> {
    let k = g.kernel.len();
    let at = |v: &[usize], i: usize, default: usize| v.get(i).copied().unwrap_or(default);
    // As in MXNet, nothing is inferred before the data's rank is known.
    let Some(mut data) = ins[0].clone().filter(|d| d.len() == k + 2) else { return Ok(()) };
    if let Some(b) = ins.get_mut(2) {
        merge(b, &known(&[g.num_filter]))?;
    }
    let mut out = outs[0].clone().unwrap_or_else(|| vec![None; k + 2]);
    merge_dim(&mut out[0], data[0], "Convolution batch")?;
    merge_dim(&mut data[0], out[0], "Convolution batch")?;
    merge_dim(&mut out[1], Some(g.num_filter), "Convolution num_filter")?;
    for i in 0..k {
        let span = at(g.dilate, i, 1) * (g.kernel[i] - 1) + 1;
        let (s, p) = (at(g.stride, i, 1), at(g.pad, i, 0));
        if let Some(d) = data[i + 2] {
            let padded = d + 2 * p;
            if padded >= span {
                merge_dim(&mut out[i + 2], Some((padded - span) / s + 1), "Convolution output")?;
            }
        }
        if let (1, Some(o)) = (s, out[i + 2]) {
            if o + span > 1 + 2 * p {
                merge_dim(&mut data[i + 2], Some(o + span - 1 - 2 * p), "Convolution data")?;
            }
        }
    }
    let mut w = vec![Some(g.num_filter), data[1].map(|c| c / g.num_group.max(1))];
    w.extend(g.kernel.iter().map(|&x| Some(x)));
    merge(&mut ins[1], &Some(w))?;
    merge(&mut ins[0], &Some(data))?;
    merge(&mut outs[0], &Some(out))?;
    Ok(())
}

/// `Concat`: all shapes agree off the joined axis; on it the output is the sum, and one unknown
/// input size follows from the output's.
pub fn concat(dim: i64, ins: &mut [PartialShape], outs: &mut [PartialShape]) -> Result<()> {
    let Some(n) = ins.iter().chain(outs.iter()).find_map(rank) else { return Ok(()) };
    let Some(ax) = norm_axis(dim, n) else { return Ok(()) };
    // Off-axis dimensions are shared by everyone.
    let mut joint = vec![None; n];
    for s in ins.iter().chain(outs.iter()).flatten() {
        if s.len() != n {
            return Err(Error::Shape(format!("Concat: inputs of different ranks {} and {n}", s.len())));
        }
        for i in (0..n).filter(|&i| i != ax) {
            merge_dim(&mut joint[i], s[i], "Concat")?;
        }
    }
    for s in ins.iter_mut().chain(outs.iter_mut()) {
        let mut v = s.clone().unwrap_or_else(|| vec![None; n]);
        for i in (0..n).filter(|&i| i != ax) {
            v[i] = joint[i];
        }
        merge(s, &Some(v))?;
    }
    let sizes: Vec<Option<usize>> = ins.iter().map(|s| s.as_ref().and_then(|v| v[ax])).collect();
    if let Some(total) = sizes.iter().copied().sum::<Option<usize>>() {
        if let Some(o) = outs[0].as_mut() {
            merge_dim(&mut o[ax], Some(total), "Concat output")?;
        }
    } else if let (Some(total), [missing]) = (
        outs[0].as_ref().and_then(|o| o[ax]),
        sizes.iter().enumerate().filter(|(_, s)| s.is_none()).map(|(i, _)| i).collect::<Vec<_>>().as_slice(),
    ) {
        let rest: usize = sizes.iter().flatten().sum();
        if let (Some(v), Some(left)) = (ins[*missing].as_mut(), total.checked_sub(rest)) {
            v[ax] = Some(left);
        }
    }
    Ok(())
}

/// The split ops' common part: the split axis and the data's dimensions, those off the axis
/// learnt from the outputs (which drop the axis when `squeeze`); `None` while the rank is unknown.
type SplitData = Option<(usize, Vec<Option<usize>>)>;

fn split_data(axis: i64, squeeze: bool, ins: &[PartialShape], outs: &[PartialShape], op: &str) -> Result<SplitData> {
    let n = match (rank(&ins[0]), outs.iter().find_map(rank)) {
        (Some(n), _) => n,
        (None, Some(m)) => m + usize::from(squeeze),
        _ => return Ok(None),
    };
    let Some(ax) = norm_axis(axis, n) else { return Ok(None) };
    let mut data = ins[0].clone().unwrap_or_else(|| vec![None; n]);
    let out_dim = |i: usize| if squeeze { i.checked_sub(usize::from(i > ax)) } else { Some(i) };
    for o in outs.iter().flatten() {
        for i in (0..n).filter(|&i| i != ax) {
            if let Some(oi) = out_dim(i) {
                merge_dim(&mut data[i], o.get(oi).copied().flatten(), op)?;
            }
        }
    }
    Ok(Some((ax, data)))
}

/// Each output of a split: the data with the axis sized `size(k)` (or removed when `squeeze`).
fn split_outputs(
    ax: usize,
    squeeze: bool,
    data: &[Option<usize>],
    size: impl Fn(usize) -> Option<usize>,
    outs: &mut [PartialShape],
) -> Result<()> {
    for (k, o) in outs.iter_mut().enumerate() {
        let mut each: Vec<Option<usize>> = Vec::with_capacity(data.len());
        for (i, &d) in data.iter().enumerate() {
            if i != ax {
                each.push(d);
            } else if !squeeze {
                each.push(size(k));
            }
        }
        merge(o, &Some(each))?;
    }
    Ok(())
}

/// `SliceChannel`/`split`: each output is the input with the axis divided by `num_outputs`
/// (removed with `squeeze_axis`), so the outputs' other dimensions are the input's.
pub fn slice_channel(
    num: usize,
    axis: i64,
    squeeze: bool,
    ins: &mut [PartialShape],
    outs: &mut [PartialShape],
) -> Result<()> {
    let Some((ax, mut data)) = split_data(axis, squeeze, ins, outs, "SliceChannel")? else { return Ok(()) };
    if squeeze {
        merge_dim(&mut data[ax], Some(num), "SliceChannel axis")?;
    } else {
        for o in outs.iter().flatten() {
            merge_dim(&mut data[ax], o.get(ax).copied().flatten().map(|d| d * num), "SliceChannel axis")?;
        }
    }
    let len = data[ax].map(|d| d / num.max(1));
    split_outputs(ax, squeeze, &data, |_| len, outs)?;
    merge(&mut ins[0], &Some(data))?;
    Ok(())
}

/// `_split_v2`: the outputs share the data's other dimensions; along the axis the data is the
/// parts' total (their count when squeezed), and each part's size follows from the parameters once
/// the axis size is known (cut at `indices`, all but the last part are known without it).
pub fn split_v2(
    indices: &[i64],
    sections: usize,
    axis: i64,
    squeeze: bool,
    ins: &mut [PartialShape],
    outs: &mut [PartialShape],
) -> Result<()> {
    let Some((ax, mut data)) = split_data(axis, squeeze, ins, outs, "_split_v2")? else { return Ok(()) };
    let total = if squeeze {
        Some(outs.len())
    } else {
        outs.iter().map(|o| o.as_ref().and_then(|v| v.get(ax).copied().flatten())).sum()
    };
    merge_dim(&mut data[ax], total, "_split_v2 axis")?;
    let len = data[ax];
    let sizes: Vec<Option<usize>> = if sections > 0 {
        (0..sections).map(|k| len.map(|l| l / sections + usize::from(k < l % sections))).collect()
    } else {
        let mut v = Vec::with_capacity(indices.len());
        for (k, &b) in indices.iter().enumerate() {
            let e = indices.get(k + 1).map(|&e| usize::try_from(e).ok());
            let (b, e) = (usize::try_from(b).ok(), e.unwrap_or(len));
            if let (Some(l), Some(x)) = (len, b.max(e)) {
                if x > l {
                    return Err(Error::Shape(format!(
                        "_split_v2: index {x} is outside axis {ax} of size {l} (data shape {})",
                        fmt_partial(&Some(data.clone()))
                    )));
                }
            }
            v.push(b.zip(e).and_then(|(b, e)| e.checked_sub(b)));
        }
        v
    };
    split_outputs(ax, squeeze, &data, |k| sizes.get(k).copied().flatten(), outs)?;
    merge(&mut ins[0], &Some(data))?;
    Ok(())
}

/// `dot` (`batch = false`) and `batch_dot`. `dot` contracts the lhs's last axis with the rhs's
/// first; `batch_dot` multiplies matching matrices of two 3-d stacks, and needs each matrix's
/// shape known (only the batch size may be missing).
pub fn dot(
    transpose_a: bool,
    transpose_b: bool,
    batch: bool,
    ins: &mut [PartialShape],
    outs: &mut [PartialShape],
) -> Result<()> {
    let (Some(l), Some(r)) = (ins[0].clone(), ins[1].clone()) else { return Ok(()) };
    if l.is_empty() || r.is_empty() {
        return Ok(());
    }
    let out = if batch {
        if l.len() != 3 || r.len() != 3 || product(&l[1..]).is_none() || product(&r[1..]).is_none() {
            return Ok(());
        }
        let rows = if transpose_a { l[2] } else { l[1] };
        let cols = if transpose_b { r[1] } else { r[2] };
        let mut b = l[0];
        merge_dim(&mut b, r[0], "batch_dot batch")?;
        vec![b, rows, cols]
    } else {
        // Transposed N-d operands reverse all axes; only the common 2-d case is inferred partly.
        if (transpose_a && l.len() != 2) || (transpose_b && r.len() != 2) {
            return Ok(());
        }
        let mut lo = l.clone();
        if transpose_a {
            lo.reverse();
        }
        let mut ro = r.clone();
        if transpose_b {
            ro.reverse();
        }
        let mut out = lo[..lo.len() - 1].to_vec();
        out.extend_from_slice(&ro[1..]);
        out
    };
    merge(&mut outs[0], &Some(out)).map(drop)
}

/// `Embedding`: the output is the indices' shape plus `output_dim`.
pub fn embedding(output_dim: usize, ins: &mut [PartialShape], outs: &mut [PartialShape]) -> Result<()> {
    if let Some(d) = ins[0].clone() {
        let mut out = d;
        out.push(Some(output_dim));
        merge(&mut outs[0], &Some(out))?;
    }
    if let Some(o) = outs[0].clone() {
        if !o.is_empty() {
            merge(&mut ins[0], &Some(o[..o.len() - 1].to_vec()))?;
        }
    }
    Ok(())
}

/// `transpose`: output axis `i` is input axis `perm[i]` (empty `axes` reverse the order).
pub fn transpose(axes: &[i64], ins: &mut [PartialShape], outs: &mut [PartialShape]) -> Result<()> {
    let Some(n) = rank(&ins[0]).or(rank(&outs[0])) else { return Ok(()) };
    let perm: Option<Vec<usize>> =
        if axes.is_empty() { Some((0..n).rev().collect()) } else { axes.iter().map(|&a| norm_axis(a, n)).collect() };
    let Some(perm) = perm.filter(|p| p.len() == n) else { return Ok(()) };
    let mut data = ins[0].clone().unwrap_or_else(|| vec![None; n]);
    let mut out = outs[0].clone().unwrap_or_else(|| vec![None; n]);
    for (i, &p) in perm.iter().enumerate() {
        merge_dim(&mut out[i], data[p], "transpose")?;
        merge_dim(&mut data[p], out[i], "transpose")?;
    }
    merge(&mut ins[0], &Some(data))?;
    merge(&mut outs[0], &Some(out)).map(drop)
}

/// `pick`: the output (and the index) is the data without the picked axis (kept as 1 with
/// `keepdims`).
pub fn pick(axis: i64, keepdims: bool, ins: &mut [PartialShape], outs: &mut [PartialShape]) -> Result<()> {
    let Some(data) = ins[0].clone() else { return Ok(()) };
    let Some(ax) = norm_axis(axis, data.len()) else { return Ok(()) };
    let mut out = data.clone();
    if keepdims {
        out[ax] = Some(1);
    } else {
        out.remove(ax);
    }
    let mut out = Some(out);
    merge(&mut out, &ins[1])?;
    merge(&mut out, &outs[0])?;
    merge(&mut ins[1], &out)?;
    merge(&mut outs[0], &out)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_fills_unknown_dims_and_rejects_conflicts() {
        let mut a: PartialShape = Some(vec![None, Some(10)]);
        assert!(merge(&mut a, &Some(vec![Some(12), None])).unwrap());
        assert_eq!(a, known(&[12, 10]));
        assert!(!merge(&mut a, &None).unwrap());
        assert!(merge(&mut a, &known(&[12, 11])).is_err());
        assert!(merge(&mut a, &known(&[12])).is_err());
    }

    #[test]
    fn same_shape_shares_knowledge_both_ways() {
        let mut ins = vec![Some(vec![None, Some(10)]), Some(vec![Some(12), None])];
        let mut outs = vec![None];
        same_shape(&mut ins, &mut outs).unwrap();
        assert_eq!(outs[0], known(&[12, 10]));
        assert_eq!(ins[0], known(&[12, 10]));
    }

    fn p(dims: &[usize]) -> PartialShape {
        Some(dims.iter().map(|&d| (d > 0).then_some(d)).collect())
    }

    #[test]
    fn fully_connected_fills_weight_and_batch() {
        let (mut ins, mut outs) = (vec![p(&[0, 10]), None, None], vec![p(&[5, 0])]);
        fully_connected(21, true, &mut ins, &mut outs).unwrap();
        assert_eq!(ins, vec![p(&[5, 10]), p(&[21, 10]), p(&[21])]);
        assert_eq!(outs, vec![p(&[5, 21])]);
    }

    #[test]
    fn convolution_infers_input_size_back_only_for_stride_one() {
        let g = ConvGeometry {
            kernel: &[3, 3],
            stride: &[1, 1],
            dilate: &[1, 1],
            pad: &[1, 1],
            num_filter: 21,
            num_group: 1,
        };
        let (mut ins, mut outs) = (vec![p(&[0, 10, 0, 0]), None, None], vec![p(&[5, 21, 32, 32])]);
        convolution(&g, &mut ins, &mut outs).unwrap();
        assert_eq!(ins, vec![p(&[5, 10, 32, 32]), p(&[21, 10, 3, 3]), p(&[21])]);
        let g2 = ConvGeometry { stride: &[2, 2], ..g };
        let (mut ins, mut outs) = (vec![p(&[0, 10, 0, 0]), None, None], vec![p(&[5, 21, 16, 16])]);
        convolution(&g2, &mut ins, &mut outs).unwrap();
        assert_eq!(ins[0], p(&[5, 10, 0, 0]));
        // (32 + 2 - 3) / 2 + 1 = 16 forward.
        let (mut ins, mut outs) = (vec![p(&[1, 3, 32, 32]), None, None], vec![None]);
        convolution(&g2, &mut ins, &mut outs).unwrap();
        assert_eq!(outs[0], p(&[1, 21, 16, 16]));
    }

    #[test]
    fn concat_sums_the_axis_and_fills_one_missing_input() {
        let (mut ins, mut outs) = (vec![p(&[0, 10]), p(&[0, 5])], vec![p(&[2, 0])]);
        concat(1, &mut ins, &mut outs).unwrap();
        assert_eq!(ins, vec![p(&[2, 10]), p(&[2, 5])]);
        assert_eq!(outs, vec![p(&[2, 15])]);
        let (mut ins, mut outs) = (vec![p(&[2, 4]), p(&[2, 0])], vec![p(&[2, 9])]);
        concat(-1, &mut ins, &mut outs).unwrap();
        assert_eq!(ins[1], p(&[2, 5]));
    }

    #[test]
    fn slice_channel_shares_dims_with_its_outputs() {
        let (mut ins, mut outs) = (vec![p(&[0, 10])], vec![None, p(&[5]), None]);
        slice_channel(3, 1, true, &mut ins, &mut outs).unwrap_err();
        let (mut ins, mut outs) = (vec![p(&[0, 15, 0])], vec![None, p(&[3, 5, 2]), None]);
        slice_channel(3, 1, false, &mut ins, &mut outs).unwrap();
        assert_eq!(ins[0], p(&[3, 15, 2]));
        assert_eq!(outs[0], p(&[3, 5, 2]));
    }

    #[test]
    fn split_v2_fills_parts_and_the_axis_total() {
        let (mut ins, mut outs) = (vec![p(&[0, 6, 0])], vec![None, None, None]);
        split_v2(&[], 3, 1, false, &mut ins, &mut outs).unwrap();
        assert_eq!(outs, vec![p(&[0, 2, 0]); 3]);
        let (mut ins, mut outs) = (vec![p(&[0, 0, 3])], vec![p(&[4, 2, 0]), p(&[0, 5, 0])]);
        split_v2(&[0, 2], 0, 1, false, &mut ins, &mut outs).unwrap();
        assert_eq!(ins[0], p(&[4, 7, 3]));
        assert_eq!(outs, vec![p(&[4, 2, 3]), p(&[4, 5, 3])]);
        let (mut ins, mut outs) = (vec![None], vec![p(&[2, 0]), None]);
        split_v2(&[], 2, -1, true, &mut ins, &mut outs).unwrap();
        assert_eq!(ins[0], p(&[2, 0, 2]));
        let (mut ins, mut outs) = (vec![p(&[0, 6])], vec![None, None]);
        assert!(split_v2(&[0, 9], 0, 1, false, &mut ins, &mut outs).is_err());
    }

    #[test]
    fn dot_transpose_embedding_pick_keep_unknown_batch() {
        let (mut ins, mut outs) = (vec![p(&[0, 3, 4]), p(&[4, 5])], vec![None]);
        dot(false, false, false, &mut ins, &mut outs).unwrap();
        assert_eq!(outs[0], p(&[0, 3, 5]));
        let (mut ins, mut outs) = (vec![p(&[0, 3, 4]), p(&[0, 0, 5])], vec![None]);
        dot(false, false, true, &mut ins, &mut outs).unwrap();
        assert_eq!(outs[0], None);
        let (mut ins, mut outs) = (vec![p(&[0, 3, 224, 225])], vec![None]);
        transpose(&[0, 3, 2, 1], &mut ins, &mut outs).unwrap();
        assert_eq!(outs[0], p(&[0, 225, 224, 3]));
        let (mut ins, mut outs) = (vec![p(&[0, 5]), None], vec![None]);
        embedding(10, &mut ins, &mut outs).unwrap();
        assert_eq!(outs[0], p(&[0, 5, 10]));
        let (mut ins, mut outs) = (vec![p(&[0, 3, 3]), p(&[7, 0])], vec![None]);
        pick(1, false, &mut ins, &mut outs).unwrap();
        assert_eq!(outs[0], p(&[7, 3]));
    }

    #[test]
    fn broadcast_keeps_unknown_dims_unknown() {
        let b = broadcast(&Some(vec![None, Some(1), Some(3)]), &known(&[4, 1])).unwrap();
        assert_eq!(b, Some(vec![None, Some(4), Some(3)]));
        assert_eq!(broadcast(&None, &known(&[2])).unwrap(), None);
        assert!(broadcast(&known(&[2]), &known(&[3])).is_err());
    }
}
