//! Gather and scatter ops: `take`, `gather_nd`, `scatter_nd` and their gradients.
//!
//! These are the differentiable building blocks of advanced indexing (`x[[0, 2]]`, `x[mask]`, see
//! [`advanced`]). Each gather's gradient is a scatter-add into zeros and each scatter's gradient is
//! the gather again, so every op here is differentiable any number of times. Index inputs may have
//! any dtype (floats truncate toward zero, as in MXNet); they never receive a gradient.

pub mod advanced;

use std::sync::Arc;

use ferrograd_kernels::par::{self, Cost};
use ferrograd_kernels::Element;

use super::attrs::fmt_tuple;
use super::binary::Num;
use super::common::{dense, resolve_index, sizes, split3};
use super::params::{NoParams, OpDef, OpParams, ParamEnum};
use super::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::view::normalize_axis;
use crate::ndarray::{Meta, NDArray};
use crate::with_dtype;

/// How `take` treats indices outside `[0, n)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, ParamEnum)]
pub enum TakeMode {
    /// Clamp into `[0, n-1]` (MXNet's default).
    Clip,
    /// Accept `[-n, n)` (negatives count from the end) and fail on anything else.
    Raise,
    /// Wrap around modulo `n`.
    Wrap,
}

/// A row lookup's layout ([`Op::row_lookup`]): input `table` is read at the rows numbered by
/// input `indices`, out-of-range numbers resolved by `mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowLookup {
    pub table: usize,
    pub indices: usize,
    pub mode: TakeMode,
}

/// The index values of an index array as `i64`, in row-major order (floats truncate).
pub fn index_values(x: &NDArray) -> Result<Vec<i64>> {
    let (buf, range) = dense(x);
    if let Some(s) = buf.slice::<i64>() {
        return Ok(s[range].to_vec()); // exact, whatever the magnitude
    }
    Ok(with_dtype!(x.dtype(), T => {
        buf.typed::<T>()?[range].iter().map(|v| v.to_f64() as i64).collect()
    }))
}

/// `out[r] = src[row(r)]` for rows of `inner` elements, where `row` maps an output row to a
/// source row start; parallel over fixed-size chunks of the output.
fn gather_rows<T: Element>(src: &[T], inner: usize, out: &mut [T], row: impl Fn(usize) -> usize + Sync + Send) {
    if inner == 0 || out.is_empty() {
        return;
    }
    if inner == 1 {
        // Element gathers (masks, point indices): no row arithmetic per element.
        par::for_each_chunk(out, Cost::Light, |start, o| {
            o.iter_mut().enumerate().for_each(|(j, v)| *v = src[row(start + j)]);
        });
        return;
    }
    par::for_each_chunk(out, Cost::Light, |start, o| {
        let (mut pos, end) = (start, start + o.len());
        while pos < end {
            let (r, col) = (pos / inner, pos % inner);
            let n = (inner - col).min(end - pos);
            let s = row(r) + col;
            o[pos - start..pos - start + n].copy_from_slice(&src[s..s + n]);
            pos += n;
        }
    });
}

/// `out[dst(r)..+inner] (+)= src[r·inner..+inner]` for each source row `r`, in order (so with
/// `add = false` the last write to a position wins, as in NumPy).
fn scatter_rows<T: Num>(src: &[T], inner: usize, out: &mut [T], add: bool, dst: impl Fn(usize) -> usize) {
    if inner == 0 {
        return;
    }
    for (r, s) in src.chunks_exact(inner).enumerate() {
        let d = &mut out[dst(r)..dst(r) + inner];
        if add {
            d.iter_mut().zip(s).for_each(|(o, &v)| *o = T::add(*o, v));
        } else {
            d.copy_from_slice(s);
        }
    }
}

/// `take(a, indices, axis=0, mode='clip')`: slices of `a` along `axis` at the given indices.
/// Output shape `a.shape[:axis] + indices.shape + a.shape[axis+1:]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Take {
    pub axis: i64,
    pub mode: TakeMode,
}

impl Take {
    fn out_shape(&self, a: &[usize], idx: &[usize]) -> Result<(usize, Vec<usize>)> {
        if a.is_empty() {
            return Err(Error::Shape("take: data must have at least one dimension, got shape ()".into()));
        }
        let axis = normalize_axis("take", self.axis, a.len())?;
        let mut s = a[..axis].to_vec();
        s.extend_from_slice(idx);
        s.extend_from_slice(&a[axis + 1..]);
        Ok((axis, s))
    }
}

impl Op for Take {
    fn name(&self) -> &'static str {
        "take"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["a", "indices"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = Vec::new();
        if self.axis != 0 {
            v.push(("axis", self.axis.to_string()));
        }
        if self.mode != TakeMode::Clip {
            v.push(("mode", self.mode.name().to_string()));
        }
        v
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let (_, s) = self.out_shape(&inputs[0].shape, &inputs[1].shape)?;
        Ok(vec![Meta::new(&s, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (a, ind) = (&inputs[0], &inputs[1]);
        let (axis, _) = self.out_shape(a.shape(), ind.shape())?;
        let (_, n, inner) = split3(a.shape(), axis);
        let idx = index_values(ind)?
            .into_iter()
            .map(|i| resolve_index("take", i, n, axis, self.mode))
            .collect::<Result<Vec<usize>>>()?;
        let k = idx.len().max(1);
        let (buf, range) = dense(a);
        with_dtype!(a.dtype(), T => {
            let src = &buf.typed::<T>()?[range];
            outputs[0].write_out::<T, _>(|o| {
                if idx.len() == o.len() / inner.max(1) {
                    gather_rows(src, inner, o, |r| idx[r] * inner) // nothing before the axis
                } else {
                    gather_rows(src, inner, o, |r| ((r / k) * n + idx[r % k]) * inner)
                }
            })
        })
    }
    fn row_lookup(&self) -> Option<RowLookup> {
        (self.axis == 0).then_some(RowLookup { table: 0, indices: 1, mode: self.mode })
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let shape = g.shape(inputs[0]);
        let back = TakeGrad { axis: self.axis, mode: self.mode, shape };
        Ok(vec![Some(g.apply1(back, &[og[0], inputs[1]])?), None])
    }
}

/// `_backward_take`: zeros of `shape` with the incoming gradient's slices added at the taken
/// indices (repeated indices accumulate). Its gradient is `take` again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TakeGrad {
    pub axis: i64,
    pub mode: TakeMode,
    pub shape: Vec<usize>,
}

impl Op for TakeGrad {
    fn name(&self) -> &'static str {
        "_backward_take"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["ograd", "indices"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("axis", self.axis.to_string()),
            ("mode", self.mode.name().to_string()),
            ("shape", fmt_tuple(&self.shape.iter().map(|&d| d as i64).collect::<Vec<_>>())),
        ]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let take = Take { axis: self.axis, mode: self.mode };
        let (_, want) = take.out_shape(&self.shape, &inputs[1].shape)?;
        if inputs[0].shape.as_slice() != want.as_slice() {
            return Err(Error::Shape(format!(
                "_backward_take: gradient has shape {}, expected {} for data {} and indices {}",
                fmt_shape(&inputs[0].shape),
                fmt_shape(&want),
                fmt_shape(&self.shape),
                fmt_shape(&inputs[1].shape)
            )));
        }
        Ok(vec![Meta::new(&self.shape, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (og, ind) = (&inputs[0], &inputs[1]);
        let axis = normalize_axis("_backward_take", self.axis, self.shape.len())?;
        let (_, n, inner) = split3(&self.shape, axis);
        let idx = index_values(ind)?
            .into_iter()
            .map(|i| resolve_index("_backward_take", i, n, axis, self.mode))
            .collect::<Result<Vec<usize>>>()?;
        let k = idx.len().max(1);
        let (buf, range) = dense(og);
        with_dtype!(og.dtype(), T => {
            let src = &buf.typed::<T>()?[range];
            outputs[0].write_out::<T, _>(|o| {
                o.fill(T::zero());
                scatter_rows(src, inner, o, true, |r| ((r / k) * n + idx[r % k]) * inner)
            })
        })
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let take = Take { axis: self.axis, mode: self.mode };
        Ok(vec![Some(g.apply1(take, &[og[0], inputs[1]])?), None])
    }
}

/// Checks `indices` of shape `(M, B...)` against `data` of shape `(X0..X{M-1}, rest...)`, and
/// returns `(M, B, rest)`.
fn nd_parts(op: &str, data: &[usize], indices: &[usize]) -> Result<(usize, Vec<usize>, Vec<usize>)> {
    let m = *indices.first().ok_or_else(|| {
        Error::Shape(format!("{op}: indices must have at least one dimension (M, ...), got shape ()"))
    })?;
    if m == 0 || m > data.len() {
        return Err(Error::Shape(format!(
            "{op}: indices of shape {} index {m} axes, but data of shape {} has {} (need 1 <= M <= ndim)",
            fmt_shape(indices),
            fmt_shape(data),
            data.len()
        )));
    }
    Ok((m, indices[1..].to_vec(), data[m..].to_vec()))
}

/// Row starts (in elements of a dense array of `shape`) selected by `(M, nb)` index values.
fn nd_rows(op: &str, shape: &[usize], m: usize, idx: &[i64]) -> Result<Vec<usize>> {
    let nb = idx.len() / m.max(1);
    let inner: usize = shape[m..].iter().product();
    let mut rows = vec![0usize; nb];
    let mut stride = inner;
    for d in (0..m).rev() {
        let n = shape[d];
        for (b, r) in rows.iter_mut().enumerate() {
            let i = idx[d * nb + b];
            *r += resolve_index(op, i, n, d, TakeMode::Raise)? * stride;
        }
        stride *= n;
    }
    Ok(rows)
}

/// `gather_nd(data, indices)`: `out[b, ...] = data[indices[0, b], ..., indices[M-1, b], ...]`.
/// Negative indices count from the end; anything outside `[-n, n)` is an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GatherNd;

impl Op for GatherNd {
    fn name(&self) -> &'static str {
        "gather_nd"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["data", "indices"]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let (_, mut b, rest) = nd_parts("gather_nd", &inputs[0].shape, &inputs[1].shape)?;
        b.extend(rest);
        Ok(vec![Meta::new(&b, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (data, ind) = (&inputs[0], &inputs[1]);
        let (m, _, rest) = nd_parts("gather_nd", data.shape(), ind.shape())?;
        let rows = nd_rows("gather_nd", data.shape(), m, &index_values(ind)?)?;
        let inner: usize = rest.iter().product();
        let (buf, range) = dense(data);
        with_dtype!(data.dtype(), T => {
            let src = &buf.typed::<T>()?[range];
            outputs[0].write_out::<T, _>(|o| gather_rows(src, inner, o, |r| rows[r]))
        })
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let shape = g.shape(inputs[0]);
        Ok(vec![Some(g.apply1(ScatterNd { shape, add: true }, &[og[0], inputs[1]])?), None])
    }
}

/// `scatter_nd(data, indices, shape)` (`add = false`: the last write to a position wins) and
/// `_backward_gather_nd(data, indices, shape)` (`add = true`: repeated positions accumulate):
/// zeros of `shape` with `data[b, ...]` placed at `indices[:, b]`. The gradient is `gather_nd`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScatterNd {
    pub shape: Vec<usize>,
    pub add: bool,
}

impl Op for ScatterNd {
    fn name(&self) -> &'static str {
        if self.add {
            "_backward_gather_nd"
        } else {
            "scatter_nd"
        }
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["data", "indices"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("shape", fmt_tuple(&self.shape.iter().map(|&d| d as i64).collect::<Vec<_>>()))]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let (_, mut want, rest) = nd_parts(self.name(), &self.shape, &inputs[1].shape)?;
        want.extend(rest);
        if inputs[0].shape.as_slice() != want.as_slice() {
            return Err(Error::Shape(format!(
                "{}: data has shape {}, expected {} for indices {} and shape {}",
                self.name(),
                fmt_shape(&inputs[0].shape),
                fmt_shape(&want),
                fmt_shape(&inputs[1].shape),
                fmt_shape(&self.shape)
            )));
        }
        Ok(vec![Meta::new(&self.shape, inputs[0].dtype)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let (data, ind) = (&inputs[0], &inputs[1]);
        let (m, _, rest) = nd_parts(self.name(), &self.shape, ind.shape())?;
        let rows = nd_rows(self.name(), &self.shape, m, &index_values(ind)?)?;
        let inner: usize = rest.iter().product();
        let (buf, range) = dense(data);
        let add = self.add;
        with_dtype!(data.dtype(), T => {
            let src = &buf.typed::<T>()?[range];
            outputs[0].write_out::<T, _>(|o| {
                o.fill(T::zero());
                scatter_rows(src, inner, o, add, |r| rows[r])
            })
        })
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _o: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        // For scatter_nd this is exact when the indices are unique (as MXNet assumes).
        Ok(vec![Some(g.apply1(GatherNd, &[og[0], inputs[1]])?), None])
    }
}

/// `take`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct TakeParams {
    /// Axis of `a` to take slices from (negative counts from the end).
    #[param(default = 0)]
    pub axis: i64,
    /// What an index outside the axis does: clamp, wrap around or fail.
    #[param(default = TakeMode::Clip)]
    pub mode: TakeMode,
}

/// `_backward_take`'s parameters: `take`'s and the shape of its input.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct TakeGradParams {
    /// Axis the forward `take` took slices from.
    #[param(default = 0)]
    pub axis: i64,
    /// The forward `take`'s handling of out-of-range indices.
    #[param(default = TakeMode::Clip)]
    pub mode: TakeMode,
    /// Shape of the forward input (the gradient's shape).
    pub shape: Vec<i64>,
}

/// `scatter_nd`'s and `_backward_gather_nd`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct ScatterNdParams {
    /// Shape of the output.
    pub shape: Vec<i64>,
}

/// A declared shape as sizes (negative sizes fail).
/// Registry builder for `take`.
pub fn take_op(a: &Attrs) -> Result<OpRef> {
    let p = TakeParams::parse(a)?;
    Ok(Arc::new(Take { axis: p.axis, mode: p.mode }))
}

/// Registry builder for `_backward_take`.
pub fn take_grad_op(a: &Attrs) -> Result<OpRef> {
    let p = TakeGradParams::parse(a)?;
    Ok(Arc::new(TakeGrad { axis: p.axis, mode: p.mode, shape: sizes(&a.op, "shape", &p.shape)? }))
}

/// Registry builder for `gather_nd`.
pub fn gather_nd_op(a: &Attrs) -> Result<OpRef> {
    NoParams::parse(a)?;
    Ok(Arc::new(GatherNd))
}

/// Registry builder for `scatter_nd` and `_backward_gather_nd`.
pub fn scatter_nd_op(a: &Attrs) -> Result<OpRef> {
    let p = ScatterNdParams::parse(a)?;
    Ok(Arc::new(ScatterNd { shape: sizes(&a.op, "shape", &p.shape)?, add: a.op == "_backward_gather_nd" }))
}

/// The gather/scatter ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "take",
        aliases: &[],
        args: &["a", "indices"],
        doc: "Slices of a along axis at the given indices (mode clip, wrap or raise).",
        params: TakeParams::schema,
        build: take_op,
    },
    OpDef {
        name: "_backward_take",
        aliases: &[],
        args: &["ograd", "indices"],
        doc: "Gradient of take: scatter-add into zeros of shape.",
        params: TakeGradParams::schema,
        build: take_grad_op,
    },
    OpDef {
        name: "gather_nd",
        aliases: &[],
        args: &["data", "indices"],
        doc: "Elements or slices of data at index tuples indices[:, i] (shape (M, ...)).",
        params: NoParams::schema,
        build: gather_nd_op,
    },
    OpDef {
        name: "scatter_nd",
        aliases: &[],
        args: &["data", "indices"],
        doc: "Zeros of shape with data written at index tuples indices[:, i].",
        params: ScatterNdParams::schema,
        build: scatter_nd_op,
    },
    OpDef {
        name: "_backward_gather_nd",
        aliases: &[],
        args: &["data", "indices"],
        doc: "Zeros of shape with data added at index tuples (gather_nd gradient).",
        params: ScatterNdParams::schema,
        build: scatter_nd_op,
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::{DType, DTypeElem};
    use crate::ops::grad::eval_grad;
    use crate::ops::{build, run, run1, AttrValue, Ctx};

    fn call(name: &str, inputs: &[NDArray], params: &[(&str, AttrValue)]) -> Result<Vec<NDArray>> {
        run(build(name, params, inputs.len())?.as_ref(), &Ctx::default(), inputs)
    }

    fn vals<T: DTypeElem>(x: &NDArray) -> Vec<T> {
        x.to_vec::<T>().unwrap()
    }

    fn arr(v: Vec<f64>, s: &[usize]) -> NDArray {
        NDArray::from_vec(v, s).unwrap()
    }
    fn iarr(v: Vec<i64>, s: &[usize]) -> NDArray {
        NDArray::from_vec(v, s).unwrap()
    }
    fn iota(s: &[usize]) -> NDArray {
        arr((0..s.iter().product::<usize>()).map(|i| i as f64).collect(), s)
    }

    #[test]
    fn take_along_axes_and_modes() {
        let a = iota(&[3, 4]);
        let y = run1(
            &Take { axis: 0, mode: TakeMode::Clip },
            &Ctx::default(),
            &[a.clone(), iarr(vec![2, 0, 5, -1], &[2, 2])],
        )
        .unwrap();
        assert_eq!(y.shape(), &[2, 2, 4]);
        let want: Vec<f64> = [2, 0, 2, 0].iter().flat_map(|&r| (0..4).map(move |c| (r * 4 + c) as f64)).collect();
        assert_eq!(y.to_f64_vec(), want);
        // Axis 1, wrap mode, float indices truncate.
        let ind = arr(vec![1.7, -1.0, 5.0], &[3]);
        let y = run1(&Take { axis: -1, mode: TakeMode::Wrap }, &Ctx::default(), &[a.clone(), ind]).unwrap();
        assert_eq!(y.shape(), &[3, 3]);
        assert_eq!(y.to_f64_vec(), vec![1., 3., 1., 5., 7., 5., 9., 11., 9.]);
        // Raise mode: negatives count from the end, others fail naming axis, size and index.
        let y = run1(&Take { axis: 1, mode: TakeMode::Raise }, &Ctx::default(), &[a.clone(), iarr(vec![-4], &[1])]);
        assert_eq!(y.unwrap().to_f64_vec(), vec![0., 4., 8.]);
        let e = run1(&Take { axis: 1, mode: TakeMode::Raise }, &Ctx::default(), &[a, iarr(vec![4], &[1])]);
        let msg = e.unwrap_err().to_string();
        assert!(msg.contains("index 4") && msg.contains("axis 1") && msg.contains("size 4"), "{msg}");
    }

    #[test]
    fn take_keeps_dtype_and_reads_strided_views() {
        let a = NDArray::from_vec(vec![1i32, 2, 3, 4, 5, 6], &[2, 3]).unwrap().transpose(&[]).unwrap();
        let y = run1(&Take { axis: 0, mode: TakeMode::Clip }, &Ctx::default(), &[a, iarr(vec![2, 0], &[2])]).unwrap();
        assert_eq!(y.dtype(), DType::I32);
        assert_eq!(vals::<i32>(&y), vec![3, 6, 1, 4]);
    }

    #[test]
    fn take_gradient_scatters_and_its_gradient_gathers() {
        let a = iota(&[3, 2]);
        let ind = iarr(vec![2, 0, 2], &[3]);
        let op = Take { axis: 0, mode: TakeMode::Clip };
        let og = arr(vec![1., 2., 3., 4., 5., 6.], &[3, 2]);
        let g = eval_grad(&op, &[a.clone(), ind.clone()], std::slice::from_ref(&og)).unwrap();
        assert_eq!(g[0].as_ref().unwrap().to_f64_vec(), vec![3., 4., 0., 0., 6., 8.]);
        assert!(g[1].is_none());
        let back = TakeGrad { axis: 0, mode: TakeMode::Clip, shape: vec![3, 2] };
        let gg = arr(vec![10., 20., 30., 40., 50., 60.], &[3, 2]);
        let g2 = eval_grad(&back, &[og, ind], &[gg]).unwrap();
        assert_eq!(g2[0].as_ref().unwrap().to_f64_vec(), vec![50., 60., 10., 20., 50., 60.]);
    }

    #[test]
    fn gather_nd_matches_hand_values() {
        let data = iota(&[2, 3, 2]);
        // Two index tuples over the first two axes: (1, 2) and (0, -1).
        let ind = iarr(vec![1, 0, 2, -1], &[2, 2]);
        let y = run1(&GatherNd, &Ctx::default(), &[data.clone(), ind]).unwrap();
        assert_eq!(y.shape(), &[2, 2]);
        assert_eq!(y.to_f64_vec(), vec![10., 11., 4., 5.]);
        // Full index: one element per column.
        let ind = iarr(vec![0, 1, 2, 0, 1, 1], &[3, 2]);
        let y = run1(&GatherNd, &Ctx::default(), &[data.clone(), ind]).unwrap();
        assert_eq!(y.to_f64_vec(), vec![5., 7.]);
        let e = run1(&GatherNd, &Ctx::default(), &[data.clone(), iarr(vec![2, 0], &[2, 1])]).unwrap_err();
        assert!(matches!(e, Error::Index(_)) && e.to_string().contains("axis 0 with size 2"), "{e}");
        let e = run1(&GatherNd, &Ctx::default(), &[data, iarr(vec![0; 4], &[4, 1])]).unwrap_err();
        assert!(matches!(e, Error::Shape(_)), "{e}");
    }

    #[test]
    fn gather_nd_gradient_accumulates_and_is_differentiable() {
        let data = iota(&[2, 2]);
        let ind = iarr(vec![1, 1, 0, 0, 0, 1], &[2, 3]); // (1,0), (1,0), (0,1)
        let og = arr(vec![1., 2., 3.], &[3]);
        let g = eval_grad(&GatherNd, &[data, ind.clone()], std::slice::from_ref(&og)).unwrap();
        assert_eq!(g[0].as_ref().unwrap().to_f64_vec(), vec![0., 3., 3., 0.]);
        let back = ScatterNd { shape: vec![2, 2], add: true };
        let gg = arr(vec![5., 6., 7., 8.], &[2, 2]);
        let g2 = eval_grad(&back, &[og, ind], &[gg]).unwrap();
        assert_eq!(g2[0].as_ref().unwrap().to_f64_vec(), vec![7., 7., 6.]);
    }

    #[test]
    fn scatter_nd_last_write_wins_and_registry_names() {
        let data = arr(vec![1., 2., 3.], &[3]);
        let ind = iarr(vec![0, 2, 0], &[1, 3]);
        let p = [("shape", AttrValue::Tuple(vec![4]))];
        let y = call("scatter_nd", &[data.clone(), ind.clone()], &p).unwrap();
        assert_eq!(y[0].to_f64_vec(), vec![3., 0., 2., 0.]);
        let y = call("_backward_gather_nd", &[data.clone(), ind.clone()], &p).unwrap();
        assert_eq!(y[0].to_f64_vec(), vec![4., 0., 2., 0.]);
        let bad = [("shape", AttrValue::Tuple(vec![4, 2]))];
        assert!(matches!(call("scatter_nd", &[data, ind], &bad).unwrap_err(), Error::Shape(_)));
        let t = call("take", &[iota(&[4]), iarr(vec![3, 9], &[2])], &[("mode", AttrValue::Str("raise".into()))]);
        assert!(matches!(t.unwrap_err(), Error::Index(_)));
        let t = call("take", &[iota(&[4]), iarr(vec![9], &[1])], &[("mode", AttrValue::Str("bogus".into()))]);
        assert!(t.unwrap_err().to_string().contains("mode"));
    }

    #[test]
    fn parallel_take_matches_sequential_reference() {
        // Large enough to go parallel: rows straddle chunk boundaries.
        let (rows, cols) = (3000usize, 37usize);
        let a = iota(&[rows, cols]);
        let idx: Vec<i64> = (0..rows as i64).map(|i| (i * 7919) % rows as i64).collect();
        let y =
            run1(&Take { axis: 0, mode: TakeMode::Clip }, &Ctx::default(), &[a, iarr(idx.clone(), &[rows])]).unwrap();
        let want: Vec<f64> = idx.iter().flat_map(|&r| (0..cols).map(move |c| (r as usize * cols + c) as f64)).collect();
        assert_eq!(y.to_f64_vec(), want);
    }
}
