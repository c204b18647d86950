//! NumPy-style indexing with integer arrays and boolean masks (`x[[0, 2]]`, `x[:, idx]`,
//! `x[mask]`, `x[i, :, j]`), resolved into a short plan of differentiable ops.
//!
//! Reading runs the plan: a basic-index view (slices and new axes, with full slices at the
//! advanced positions), then `take` (one index array) or a transpose plus `gather_nd` (several),
//! then a transpose that puts the broadcast index dimensions where NumPy puts them. Masks become
//! integer arrays (their nonzero coordinates) first. Writing (`x[key] = v`) resolves the same key
//! to buffer positions and stores the broadcast value there, in index order (the last write to a
//! repeated position wins, as in NumPy).

use std::sync::Arc;

use ferrograd_kernels::layout::broadcast_shapes;
use ferrograd_kernels::Layout;

use super::{GatherNd, Take, TakeMode};
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::Meta;
use crate::ndarray::{NDArray, SliceArg};
use crate::ops::layout::{Reshape, Transpose};
use crate::ops::slice::BasicIndex;
use crate::ops::{run1, Ctx, Op, OpRef};
use crate::with_dtype;

/// One element of an index key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IndexItem {
    /// An integer, a slice or `None` (new axis).
    Basic(SliceArg),
    /// `...`: as many full slices as needed.
    Ellipsis,
    /// An integer index array (row-major values; negatives count from the end).
    Array { shape: Vec<usize>, values: Vec<i64> },
    /// A boolean mask over as many axes as it has dimensions.
    Mask { shape: Vec<usize>, values: Vec<bool> },
}

/// One step of an indexing plan: apply `op` to the current value (and to `index`, if any).
#[derive(Clone, Debug)]
pub struct Step {
    pub op: OpRef,
    pub index: Option<NDArray>,
}

/// A key resolved against a shape.
struct Resolved {
    /// The basic index applied first (full slices at advanced positions).
    basic: Vec<SliceArg>,
    /// Axes of the basic result indexed by arrays, increasing.
    adv_axes: Vec<usize>,
    /// Per advanced axis: the resolved indices broadcast to `bshape` (row-major).
    idx: Vec<Vec<usize>>,
    bshape: Vec<usize>,
    /// The other axes of the basic result, in order.
    rest_axes: Vec<usize>,
    /// Position of the broadcast index dimensions among the output axes.
    insert_at: usize,
}

fn is_advanced(it: &IndexItem) -> bool {
    matches!(it, IndexItem::Array { .. } | IndexItem::Mask { .. })
}

const FULL: SliceArg = SliceArg::Range { start: None, stop: None, step: 1 };

/// Replaces `...` by full slices and appends full slices for unindexed trailing axes.
fn expand_ellipsis(shape: &[usize], items: &[IndexItem]) -> Result<Vec<IndexItem>> {
    let consumed: usize = items
        .iter()
        .map(|it| match it {
            IndexItem::Basic(SliceArg::NewAxis) | IndexItem::Ellipsis => 0,
            IndexItem::Basic(_) | IndexItem::Array { .. } => 1,
            IndexItem::Mask { shape, .. } => shape.len(),
        })
        .sum();
    if consumed > shape.len() {
        return Err(Error::Index(format!(
            "too many indices for array of shape {}: {consumed} axes indexed",
            fmt_shape(shape)
        )));
    }
    let fill = shape.len() - consumed;
    let mut out = Vec::with_capacity(items.len() + fill);
    let mut seen = false;
    for it in items {
        if let IndexItem::Ellipsis = it {
            if std::mem::replace(&mut seen, true) {
                return Err(Error::Index("an index can only have a single ellipsis ('...')".into()));
            }
            out.extend(std::iter::repeat_n(IndexItem::Basic(FULL), fill));
        } else {
            out.push(it.clone());
        }
    }
    if !seen {
        out.extend(std::iter::repeat_n(IndexItem::Basic(FULL), fill));
    }
    Ok(out)
}

/// Row-major coordinates of the true elements of a mask, one vector per mask axis.
fn nonzero(shape: &[usize], values: &[bool]) -> Vec<Vec<i64>> {
    let nnz = values.iter().filter(|&&v| v).count();
    let mut coords: Vec<Vec<i64>> = shape.iter().map(|_| Vec::with_capacity(nnz)).collect();
    let mut idx = vec![0i64; shape.len()];
    for &v in values {
        if v {
            coords.iter_mut().zip(&idx).for_each(|(c, &i)| c.push(i));
        }
        // Advance the multi-index (row-major odometer).
        for d in (0..shape.len()).rev() {
            idx[d] += 1;
            if (idx[d] as usize) < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    coords
}

/// Fails unless a mask of shape `ms` matches the axes of `shape` starting at `ax`.
fn check_mask(shape: &[usize], ax: usize, ms: &[usize]) -> Result<()> {
    if ms.is_empty() {
        return Err(Error::Index("boolean scalar indices are not supported".into()));
    }
    for (j, &m) in ms.iter().enumerate() {
        if shape[ax + j] != m {
            return Err(Error::Index(format!(
                "boolean index did not match indexed array along axis {}; size of axis is {} but size of \
                 corresponding boolean axis is {m}",
                ax + j,
                shape[ax + j]
            )));
        }
    }
    Ok(())
}

/// `values` of `shape` broadcast to `target` (row-major), already checked compatible.
fn broadcast_values(values: Vec<usize>, shape: &[usize], target: &[usize]) -> Vec<usize> {
    if shape == target {
        return values;
    }
    let l = Layout::contiguous(shape).broadcast_to(target).unwrap_or_else(|| Layout::contiguous(target));
    offsets(&l.shape, &l.strides).into_iter().map(|o| values[o as usize]).collect()
}

/// Row-major element offsets `Σ index[d]·strides[d]` over `shape`.
fn offsets(shape: &[usize], strides: &[isize]) -> Vec<isize> {
    let mut out = vec![0isize];
    for (&n, &s) in shape.iter().zip(strides) {
        out = out.iter().flat_map(|&o| (0..n as isize).map(move |i| o + i * s)).collect();
    }
    out
}

fn resolve(shape: &[usize], items: &[IndexItem]) -> Result<Resolved> {
    let items = expand_ellipsis(shape, items)?;
    // (axis of x, axis of the basic result, index shape, raw values) per advanced index.
    let mut adv: Vec<(usize, usize, Vec<usize>, Vec<i64>)> = Vec::new();
    let (mut basic, mut rest_axes) = (Vec::new(), Vec::new());
    let (mut ax, mut yax) = (0usize, 0usize);
    for it in items {
        match it {
            IndexItem::Basic(SliceArg::Index(i)) => {
                adv.push((ax, yax, vec![], vec![i]));
                basic.push(FULL);
                (ax, yax) = (ax + 1, yax + 1);
            }
            IndexItem::Basic(a) => {
                basic.push(a);
                rest_axes.push(yax);
                ax += usize::from(a != SliceArg::NewAxis);
                yax += 1;
            }
            IndexItem::Array { shape: s, values } => {
                adv.push((ax, yax, s, values));
                basic.push(FULL);
                (ax, yax) = (ax + 1, yax + 1);
            }
            IndexItem::Mask { shape: ms, values } => {
                check_mask(shape, ax, &ms)?;
                for c in nonzero(&ms, &values) {
                    let n = c.len();
                    adv.push((ax, yax, vec![n], c));
                    basic.push(FULL);
                    (ax, yax) = (ax + 1, yax + 1);
                }
            }
            IndexItem::Ellipsis => {}
        }
    }
    let mut bshape: Vec<usize> = Vec::new();
    for (_, _, s, _) in &adv {
        bshape = broadcast_shapes(&bshape, s).map(|d| d.to_vec()).ok_or_else(|| {
            let shapes: Vec<String> = adv.iter().map(|(_, _, s, _)| fmt_shape(s)).collect();
            Error::Index(format!(
                "shape mismatch: indexing arrays could not be broadcast together with shapes {}",
                shapes.join(" ")
            ))
        })?;
    }
    let mut idx = Vec::with_capacity(adv.len());
    let adv_axes: Vec<usize> = adv.iter().map(|a| a.1).collect();
    for (x_ax, _, s, values) in adv {
        let n = shape[x_ax] as i64;
        let resolved = values
            .into_iter()
            .map(|i| {
                if i < -n || i >= n {
                    return Err(Error::Index(format!(
                        "index {i} is out of bounds for axis {x_ax} with size {n} (array shape {})",
                        fmt_shape(shape)
                    )));
                }
                Ok(if i < 0 { (i + n) as usize } else { i as usize })
            })
            .collect::<Result<Vec<usize>>>()?;
        idx.push(broadcast_values(resolved, &s, &bshape));
    }
    let adjacent = adv_axes.windows(2).all(|w| w[1] == w[0] + 1);
    let insert_at = if adjacent { adv_axes.first().copied().unwrap_or(0) } else { 0 };
    Ok(Resolved { basic, adv_axes, idx, bshape, rest_axes, insert_at })
}

/// True when a key needs the advanced path (it contains an index array or a mask).
pub fn needs_advanced(items: &[IndexItem]) -> bool {
    items.iter().any(is_advanced)
}

/// The basic index arguments of a key without arrays or masks (`...` expanded), else `None`.
pub fn basic_args(shape: &[usize], items: &[IndexItem]) -> Result<Option<Vec<SliceArg>>> {
    if needs_advanced(items) {
        return Ok(None);
    }
    let args = expand_ellipsis(shape, items)?
        .into_iter()
        .filter_map(|it| if let IndexItem::Basic(a) = it { Some(a) } else { None })
        .collect();
    Ok(Some(args))
}

/// `x[mask]`-style keys (one mask, otherwise slices and new axes): the mask's axes are merged
/// and read with one `take` of the flat positions of its true elements.
fn single_mask_plan(shape: &[usize], items: &[IndexItem]) -> Result<Option<Vec<Step>>> {
    let items = expand_ellipsis(shape, items)?;
    let masks = items.iter().filter(|it| matches!(it, IndexItem::Mask { .. })).count();
    let other_adv = items.iter().any(|it| matches!(it, IndexItem::Array { .. } | IndexItem::Basic(SliceArg::Index(_))));
    if masks != 1 || other_adv {
        return Ok(None);
    }
    let (mut basic, mut p, mut ax, mut mask) = (Vec::new(), 0usize, 0usize, None);
    for it in items {
        match it {
            IndexItem::Basic(a) => {
                p += usize::from(mask.is_none());
                ax += usize::from(a != SliceArg::NewAxis);
                basic.push(a);
            }
            IndexItem::Mask { shape: ms, values } => {
                check_mask(shape, ax, &ms)?;
                basic.extend(std::iter::repeat_n(FULL, ms.len()));
                ax += ms.len();
                mask = Some((ms, values));
            }
            _ => {}
        }
    }
    let Some((ms, values)) = mask else { return Ok(None) };
    let k = ms.len();
    let mut steps = Vec::new();
    let index = BasicIndex { args: basic };
    let y = index.infer(&[Meta::new(shape, DType::F32)])?.swap_remove(0).shape;
    if index.args.iter().any(|a| *a != FULL) {
        steps.push(Step { op: Arc::new(index), index: None });
    }
    if k > 1 {
        let mut merged = y[..p].to_vec();
        merged.push(ms.iter().product());
        merged.extend_from_slice(&y[p + k..]);
        steps.push(Step { op: Arc::new(Reshape::to(&merged)), index: None });
    }
    let flat: Vec<i64> = values.iter().enumerate().filter(|(_, &v)| v).map(|(i, _)| i as i64).collect();
    let n = flat.len();
    let take = Take { axis: p as i64, mode: TakeMode::Clip };
    steps.push(Step { op: Arc::new(take), index: Some(NDArray::from_vec(flat, &[n])?) });
    Ok(Some(steps))
}

/// The ops that read `x[key]` from an array of `shape`, in order.
pub fn plan(shape: &[usize], items: &[IndexItem]) -> Result<Vec<Step>> {
    if let Some(args) = basic_args(shape, items)? {
        return Ok(vec![Step { op: Arc::new(BasicIndex { args }), index: None }]);
    }
    if let Some(steps) = single_mask_plan(shape, items)? {
        return Ok(steps);
    }
    let r = resolve(shape, items)?;
    let mut steps = Vec::new();
    if r.basic.iter().any(|a| *a != FULL) {
        steps.push(Step { op: Arc::new(BasicIndex { args: r.basic.clone() }), index: None });
    }
    let k = r.adv_axes.len();
    let nb = r.bshape.len();
    let as_i64 = |v: &[usize]| v.iter().map(|&i| i as i64).collect::<Vec<_>>();
    if k == 1 {
        let index = NDArray::from_vec(as_i64(&r.idx[0]), &r.bshape)?;
        let take = Take { axis: r.adv_axes[0] as i64, mode: TakeMode::Clip };
        steps.push(Step { op: Arc::new(take), index: Some(index) });
        return Ok(steps);
    }
    let perm: Vec<i64> = r.adv_axes.iter().chain(&r.rest_axes).map(|&a| a as i64).collect();
    if perm.iter().enumerate().any(|(i, &p)| p != i as i64) {
        steps.push(Step { op: Arc::new(Transpose { axes: perm }), index: None });
    }
    let mut ishape = vec![k];
    ishape.extend_from_slice(&r.bshape);
    let flat: Vec<i64> = r.idx.iter().flat_map(|v| as_i64(v)).collect();
    steps.push(Step { op: Arc::new(GatherNd), index: Some(NDArray::from_vec(flat, &ishape)?) });
    let (p, m) = (r.insert_at, r.rest_axes.len());
    if p > 0 {
        let back: Vec<i64> = (nb..nb + p).chain(0..nb).chain(nb + p..nb + m).map(|a| a as i64).collect();
        steps.push(Step { op: Arc::new(Transpose { axes: back }), index: None });
    }
    Ok(steps)
}

/// Runs a plan on `x` with [`run1`] (the Python layer runs the same steps through its own entry).
pub fn run_plan(x: &NDArray, steps: &[Step]) -> Result<NDArray> {
    let mut cur = x.clone();
    for s in steps {
        cur = match &s.index {
            Some(i) => run1(s.op.as_ref(), &Ctx::default(), &[cur, i.clone()])?,
            None => run1(s.op.as_ref(), &Ctx::default(), &[cur])?,
        };
    }
    Ok(cur)
}

/// `x[key]`: the full NumPy result shape (0-d when every axis gets a scalar index).
pub fn index(x: &NDArray, items: &[IndexItem]) -> Result<NDArray> {
    run_plan(x, &plan(x.shape(), items)?)
}

/// `x[key] = value`: writes `value` (converted to x's dtype, broadcast to the indexed shape)
/// into x's own storage, so every view of x sees it.
pub fn assign(x: &mut NDArray, items: &[IndexItem], value: &NDArray) -> Result<()> {
    let r = resolve(x.shape(), items)?;
    x.write(|_, _| ()); // materialise a broadcast view first, so the layout below is final
    let l = x.slice_layout(&r.basic)?;
    let nb = r.bshape.len();
    let rest_shape: Vec<usize> = r.rest_axes.iter().map(|&a| l.shape[a]).collect();
    let p = r.insert_at;
    let mut out_shape = rest_shape[..p].to_vec();
    out_shape.extend_from_slice(&r.bshape);
    out_shape.extend_from_slice(&rest_shape[p..]);
    let value = if value.dtype() == x.dtype() { value.clone() } else { value.astype(x.dtype()) };
    let vl = crate::ndarray::convert::assignable_layout(value.layout(), out_shape.len());
    let vl = vl.broadcast_to(&out_shape).ok_or_else(|| {
        Error::Shape(format!(
            "assignment: cannot broadcast value of shape {} to the indexed shape {}",
            fmt_shape(value.shape()),
            fmt_shape(&out_shape)
        ))
    })?;
    // Value axes reordered to [index dims..., rest dims...].
    let order: Vec<usize> = (p..p + nb).chain(0..p).chain(p + nb..out_shape.len()).collect();
    let vl = vl.permute(&order);
    let rest_dst: Vec<isize> = r.rest_axes.iter().map(|&a| l.strides[a]).collect();
    let rd = offsets(&rest_shape, &rest_dst);
    let rv = offsets(&rest_shape, &vl.strides[nb..]);
    let bv = offsets(&r.bshape, &vl.strides[..nb]);
    let adv_strides: Vec<isize> = r.adv_axes.iter().map(|&a| l.strides[a]).collect();
    let src = value.snapshot();
    let dtype = x.dtype();
    x.write(|buf, _| {
        with_dtype!(dtype, T => {
            let (Some(s), Some(d)) = (src.slice::<T>(), buf.slice_mut::<T>()) else { return };
            for (b, &vb) in bv.iter().enumerate() {
                let db = l.offset as isize + r.idx.iter().zip(&adv_strides).map(|(i, &st)| i[b] as isize * st).sum::<isize>();
                let vb = vl.offset as isize + vb;
                for (&o, &v) in rd.iter().zip(&rv) {
                    d[(db + o) as usize] = s[(vb + v) as usize];
                }
            }
        })
    });
    Ok(())
}

/// An `Array` item from index values.
pub fn array_item(values: Vec<i64>, shape: &[usize]) -> IndexItem {
    IndexItem::Array { shape: shape.to_vec(), values }
}

/// A `Mask` item from a bool/0-1 array.
pub fn mask_item(x: &NDArray) -> Result<IndexItem> {
    let values = x.astype(DType::Bool).to_vec::<bool>()?;
    Ok(IndexItem::Mask { shape: x.shape().to_vec(), values })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iota(s: &[usize]) -> NDArray {
        NDArray::from_vec((0..s.iter().product::<usize>()).map(|i| i as f64).collect(), s).unwrap()
    }
    fn arr(v: &[i64]) -> IndexItem {
        array_item(v.to_vec(), &[v.len()])
    }
    fn b(a: SliceArg) -> IndexItem {
        IndexItem::Basic(a)
    }
    fn range(start: Option<i64>, stop: Option<i64>, step: i64) -> IndexItem {
        b(SliceArg::Range { start, stop, step })
    }

    #[test]
    fn single_array_on_each_axis() {
        let x = iota(&[3, 4]);
        let y = index(&x, &[arr(&[2, 0, -1])]).unwrap();
        assert_eq!(y.shape(), &[3, 4]);
        assert_eq!(&y.to_f64_vec()[..4], &[8., 9., 10., 11.]);
        let y = index(&x, &[b(FULL), arr(&[3, 1])]).unwrap();
        assert_eq!(y.to_f64_vec(), vec![3., 1., 7., 5., 11., 9.]);
    }

    #[test]
    fn several_arrays_broadcast_and_place_dims_like_numpy() {
        let x = iota(&[2, 3, 4]);
        // Adjacent arrays on axes 1, 2: result (2, 2).
        let y = index(&x, &[b(FULL), arr(&[0, 2]), arr(&[1, 3])]).unwrap();
        assert_eq!(y.shape(), &[2, 2]);
        assert_eq!(y.to_f64_vec(), vec![1., 11., 13., 23.]);
        // Separated by a slice (int counts as advanced): index dims first, shape (2, 3).
        let y = index(&x, &[arr(&[1, 0]), b(FULL), b(SliceArg::Index(2))]).unwrap();
        assert_eq!(y.shape(), &[2, 3]);
        assert_eq!(y.to_f64_vec(), vec![14., 18., 22., 2., 6., 10.]);
        // (2,1) with (3,) broadcast to (2,3) on axes 0 and 2, a step slice in between.
        let col = array_item(vec![1, 0], &[2, 1]);
        let y = index(&x, &[col, range(None, None, -2), arr(&[0, 1, 3])]).unwrap();
        assert_eq!(y.shape(), &[2, 3, 2]);
        assert_eq!(&y.to_f64_vec()[..6], &[20., 12., 21., 13., 23., 15.]);
        // Adjacent arrays after a leading slice stay in place: (2, 2) inserted at axis 1.
        let y = index(&x, &[b(FULL), arr(&[0, 1]), arr(&[0, 0]), b(SliceArg::NewAxis)]).unwrap();
        assert_eq!(y.shape(), &[2, 2, 1]);
        assert_eq!(y.to_f64_vec(), vec![0., 4., 12., 16.]);
    }

    #[test]
    fn masks_and_errors() {
        let x = iota(&[2, 3]);
        let mask = NDArray::from_vec(vec![true, false, true, false, true, true], &[2, 3]).unwrap();
        let y = index(&x, &[mask_item(&mask).unwrap()]).unwrap();
        assert_eq!(y.to_f64_vec(), vec![0., 2., 4., 5.]);
        let rows = NDArray::from_vec(vec![false, true], &[2]).unwrap();
        let y = index(&x, &[mask_item(&rows).unwrap(), range(Some(1), None, 1)]).unwrap();
        assert_eq!((y.shape().to_vec(), y.to_f64_vec()), (vec![1, 2], vec![4., 5.]));
        let bad = NDArray::from_vec(vec![true; 3], &[3]).unwrap();
        let e = index(&x, &[mask_item(&bad).unwrap()]).unwrap_err().to_string();
        assert!(e.contains("axis 0") && e.contains("size of axis is 2"), "{e}");
        let e = index(&x, &[b(FULL), arr(&[3])]).unwrap_err().to_string();
        assert!(e.contains("index 3 is out of bounds for axis 1 with size 3"), "{e}");
        let e = index(&x, &[arr(&[0, 1]), arr(&[0, 1, 2])]).unwrap_err();
        assert!(matches!(e, Error::Index(_)) && e.to_string().contains("(2,) (3,)"), "{e}");
        assert!(index(&x, &[arr(&[0]), arr(&[0]), arr(&[0])]).is_err());
    }

    #[test]
    fn assign_writes_through_the_key() {
        let mut x = iota(&[3, 4]);
        let view = x.slice(&[SliceArg::Range { start: Some(1), stop: None, step: 1 }]).unwrap();
        assign(&mut x, &[arr(&[2, 0]), b(FULL)], &NDArray::from_vec(vec![-1.0, -2.0, -3.0, -4.0], &[4]).unwrap())
            .unwrap();
        assert_eq!(&x.to_f64_vec()[..4], &[-1., -2., -3., -4.]);
        assert_eq!(&view.to_f64_vec()[4..], &[-1., -2., -3., -4.]); // the view sees the write
                                                                    // Element pairs (1, 0) and (1, 3); a repeated index: the last write wins.
        let mut x = iota(&[3, 4]);
        assign(&mut x, &[arr(&[1, 1]), arr(&[0, 3])], &NDArray::from_vec(vec![5.0f64, 6.0], &[2]).unwrap()).unwrap();
        assert_eq!(&x.to_f64_vec()[4..8], &[5., 5., 6., 6.]);
        assign(&mut x, &[arr(&[0, 0])], &NDArray::from_vec(vec![1.0, 2.0], &[2, 1]).unwrap()).unwrap();
        assert_eq!(&x.to_f64_vec()[..4], &[2., 2., 2., 2.]);
        // A (2, 1) value does not broadcast to the (3, 2) region of x[:, [1, 2]].
        let v = NDArray::from_vec(vec![7i32, 9], &[2, 1]).unwrap();
        let e = assign(&mut x, &[b(FULL), arr(&[1, 2])], &v).unwrap_err();
        assert!(matches!(e, Error::Shape(_)) && e.to_string().contains("(3, 2)"), "{e}");
        let mut y = iota(&[2, 2]);
        assign(&mut y, &[arr(&[1, 0]), arr(&[0, 0])], &v.reshape(&[2]).unwrap()).unwrap();
        assert_eq!(y.to_f64_vec(), vec![9., 1., 7., 3.]);
        let mask = NDArray::from_vec(vec![1.0f32, 0.0, 0.0, 1.0], &[2, 2]).unwrap();
        assign(&mut y, &[mask_item(&mask).unwrap()], &NDArray::full(&[], DType::F64, 0.5)).unwrap();
        assert_eq!(y.to_f64_vec(), vec![0.5, 1., 7., 0.5]);
    }
}
