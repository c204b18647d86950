//! The gradient of the deformable convolutions, built from differentiable ops.
//!
//! The forward is `y = weight · (mask ⊙ S(data, offset)) + bias` per group, where `S` gathers
//! the bilinear samples of every kernel tap into an im2col matrix (N, C·taps, L). `S` is linear
//! in the data and its weights are products of one hat function per axis of the sampling point,
//! so differentiating in the offsets swaps an axis's weights for their derivatives, once (the
//! second derivative along one axis is 0). The samplers `S_o` with derivative orders `o` in
//! {0, 1}² ([`DcnSample`]) and their adjoints in the data ([`DcnSampleAdjoint`]) are closed under
//! differentiation, and the rest of the gradient is reshapes, products and sums, so the
//! gradient is differentiable to any order. These ops are not registered: they appear only in
//! gradient graphs.

use ferrograd_kernels::matmul::GemmElement;
use ferrograd_kernels::par::{map_tasks, Cost};

use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::conv::{check_float, Contig};
use crate::ops::deformable::{Corner, Dcn, Dims, Image};
use crate::ops::join::Stack;
use crate::ops::{Ctx, Grad, Op, Saves, Val};

const SAMPLE: &str = "_DeformableConvolution_sample";
const ADJOINT: &str = "_DeformableConvolution_sample_adjoint";

/// Derivative orders of the sampling weights: (d/d offset y, d/d offset x).
type Order = [bool; 2];

fn weight(c: &Corner, o: Order) -> f64 {
    match o {
        [false, false] => c.wt,
        [true, false] => c.dy,
        [false, true] => c.dx,
        [true, true] => c.dyx,
    }
}

fn order_attr(o: Order) -> (&'static str, String) {
    ("order", format!("({}, {})", o[0] as u8, o[1] as u8))
}

impl Dcn {
    /// Kernel taps kh·kw.
    pub(crate) fn taps(&self) -> usize {
        self.win.kernel[0] * self.win.kernel[1]
    }

    /// The sizes for sampling `data` at `offset` only (the other inputs taken as expected).
    pub(crate) fn sample_dims(&self, op: &str, data: &[usize], offset: &[usize]) -> Result<Dims> {
        let out = self.out_size(op, data)?;
        let want = self.arg_shapes(data, out);
        let mut shapes: Vec<&[usize]> = vec![data, offset];
        if self.modulated {
            shapes.push(&want[1]);
        }
        shapes.push(&want[2]);
        self.dims(op, &shapes)
    }
}

/// One image's data and offsets.
fn image<'a, T>(d: &Dims, x: &'a [T], off: &'a [T], n: usize) -> Image<'a, T> {
    let mo = 2 * d.dg * d.taps() * d.positions();
    Image { x: &x[n * d.c * d.h * d.w..][..d.c * d.h * d.w], off: &off[n * mo..][..mo], mask: None }
}

/// `S_o(data, offset)` → (N, C·taps, L).
fn sample<T: GemmElement>(d: &Dims, clamp: bool, o: Order, x: &[T], off: &[T], out: &mut [T]) {
    let (l, hw, per) = (d.positions(), d.h * d.w, d.c * d.taps() * d.positions());
    let work = d.n * per * 4;
    let cols = map_tasks(d.n, work, Cost::Light, |n| {
        let img = image(d, x, off, n);
        let mut col = vec![T::zero(); per];
        img.visit_with(d, clamp, |r, p, _, cs, _| {
            let plane = &img.x[(r / d.taps()) * hw..][..hw];
            col[r * l + p] = T::from_f64(cs.iter().map(|c| weight(c, o) * plane[c.at].to_f64()).sum());
        });
        col
    });
    for (dst, col) in out.chunks_mut(per.max(1)).zip(&cols) {
        dst.copy_from_slice(col);
    }
}

/// The adjoint of [`sample`] in the data: (N, C·taps, L) → (N, C, H, W).
fn adjoint<T: GemmElement>(d: &Dims, clamp: bool, o: Order, u: &[T], off: &[T], out: &mut [T]) {
    let (l, hw, per) = (d.positions(), d.h * d.w, d.c * d.taps() * d.positions());
    let work = d.n * per * 4;
    let zeros = vec![T::zero(); d.n * d.c * hw];
    let parts = map_tasks(d.n, work, Cost::Light, |n| {
        let img = image(d, &zeros, off, n);
        let un = &u[n * per..][..per];
        let mut dx = vec![0.0f64; d.c * hw];
        img.visit_with(d, clamp, |r, p, _, cs, _| {
            let gv = un[r * l + p].to_f64();
            for c in cs {
                dx[(r / d.taps()) * hw + c.at] += gv * weight(c, o);
            }
        });
        dx
    });
    for (dst, dx) in out.chunks_mut((d.c * hw).max(1)).zip(&parts) {
        dst.iter_mut().zip(dx).for_each(|(a, b)| *a = T::from_f64(*b));
    }
}

/// `S_o(data, offset)`: the im2col matrix of bilinear samples with the weights differentiated
/// in the offsets as `order` says.
#[derive(Clone, Debug, PartialEq)]
pub struct DcnSample {
    p: Dcn,
    order: Order,
}

impl Op for DcnSample {
    fn name(&self) -> &'static str {
        SAMPLE
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["data", "offset"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![order_attr(self.order)]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let dt = check_float(SAMPLE, self.arg_names(), inputs)?;
        let d = self.p.sample_dims(SAMPLE, &inputs[0].shape, &inputs[1].shape)?;
        Ok(vec![Meta::new(&[d.n, d.c * d.taps(), d.positions()], dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let d = self.p.sample_dims(SAMPLE, inputs[0].shape(), inputs[1].shape())?;
        let (x, off) = (Contig::new(&inputs[0]), Contig::new(&inputs[1]));
        let clamp = !self.p.modulated;
        float_kernel!(SAMPLE, inputs[0].dtype(), T => outputs[0].write_out::<T, _>(|y| sample(&d, clamp, self.order, x.get::<T>(), off.get::<T>(), y)))
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        let xs = g.shape(inputs[0]);
        let adj = DcnSampleAdjoint { p: self.p.clone(), order: self.order, hw: [xs[2], xs[3]] };
        let dx = g.apply1(adj, &[out_grads[0], inputs[1]])?;
        let doff = offset_grad(g, &self.p, out_grads[0], inputs[0], inputs[1], self.order)?;
        Ok(vec![Some(dx), Some(doff)])
    }
}

/// `S_o*(u, offset)`: the adjoint of [`DcnSample`] in the data, for data of spatial size `hw`.
#[derive(Clone, Debug, PartialEq)]
pub struct DcnSampleAdjoint {
    p: Dcn,
    order: Order,
    hw: [usize; 2],
}

impl DcnSampleAdjoint {
    fn dims(&self, u: &[usize], off: &[usize]) -> Result<Dims> {
        let taps = self.p.taps();
        if u.len() != 3 || !u[1].is_multiple_of(taps) {
            return Err(Error::Shape(format!("{ADJOINT}: u must be (N, C·{taps}, L), got shape {}", fmt_shape(u))));
        }
        let d = self.p.sample_dims(ADJOINT, &[u[0], u[1] / taps, self.hw[0], self.hw[1]], off)?;
        if u[2] != d.positions() {
            return Err(Error::Shape(format!(
                "{ADJOINT}: u has shape {}, expected {} positions",
                fmt_shape(u),
                d.positions()
            )));
        }
        Ok(d)
    }
}

impl Op for DcnSampleAdjoint {
    fn name(&self) -> &'static str {
        ADJOINT
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["u", "offset"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![order_attr(self.order), ("data_hw", format!("({}, {})", self.hw[0], self.hw[1]))]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let dt = check_float(ADJOINT, self.arg_names(), inputs)?;
        let d = self.dims(&inputs[0].shape, &inputs[1].shape)?;
        Ok(vec![Meta::new(&[d.n, d.c, d.h, d.w], dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let d = self.dims(inputs[0].shape(), inputs[1].shape())?;
        let (u, off) = (Contig::new(&inputs[0]), Contig::new(&inputs[1]));
        let clamp = !self.p.modulated;
        float_kernel!(ADJOINT, inputs[0].dtype(), T => outputs[0].write_out::<T, _>(|y| adjoint(&d, clamp, self.order, u.get::<T>(), off.get::<T>(), y)))
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        // <h, S*(u)> = <S(h), u>.
        let du = g.apply1(DcnSample { p: self.p.clone(), order: self.order }, &[out_grads[0], inputs[1]])?;
        let doff = offset_grad(g, &self.p, inputs[0], out_grads[0], inputs[1], self.order)?;
        Ok(vec![Some(du), Some(doff)])
    }
}

/// The offset gradient of `<u, S_o(x, offset)>`: per deformable group, tap and position, the sum
/// over the group's channels of `u·S_{o+y}` and `u·S_{o+x}`, in the offsets' (N, dg·taps·2, Ho,
/// Wo) layout.
fn offset_grad(g: &mut Grad<'_>, p: &Dcn, u: Val, x: Val, off: Val, o: Order) -> Result<Val> {
    if o == [true, true] {
        return g.zeros_like(off);
    }
    let (xs, offs) = (g.shape(x), g.shape(off));
    let (n, c, dg, taps, l) = (xs[0], xs[1], p.deform_groups, p.taps(), offs[2] * offs[3]);
    let mut parts: [Option<Val>; 2] = [None, None];
    for axis in 0..2 {
        if o[axis] {
            continue;
        }
        let mut d = o;
        d[axis] = true;
        let s = g.apply1(DcnSample { p: p.clone(), order: d }, &[x, off])?;
        let prod = g.mul(u, s)?;
        let prod = g.reshape(prod, &[n, dg, c / dg, taps, l])?;
        parts[axis] = Some(g.sum_axes(prod, vec![2], false)?);
    }
    let [py, px] = match parts {
        [Some(a), Some(b)] => [a, b],
        [Some(a), None] => [a, g.zeros_like(a)?],
        [None, Some(b)] => [g.zeros_like(b)?, b],
        [None, None] => return g.zeros_like(off),
    };
    let both = g.apply1(Stack { axis: 3, num_args: Some(2) }, &[py, px])?;
    g.reshape(both, &offs)
}

/// `[G, a, b]` blocks of an (N, G·a, b) array as (G, a, N·b).
fn to_groups(g: &mut Grad<'_>, v: Val, n: usize, groups: usize, a: usize, b: usize) -> Result<Val> {
    let v = g.reshape(v, &[n, groups, a, b])?;
    let v = g.transpose(v, vec![1, 2, 0, 3])?;
    g.reshape(v, &[groups, a, n * b])
}

/// The inverse of [`to_groups`]: (G, a, N·b) → (N, G·a, b).
fn from_groups(g: &mut Grad<'_>, v: Val, n: usize, groups: usize, a: usize, b: usize) -> Result<Val> {
    let v = g.reshape(v, &[groups, a, n, b])?;
    let v = g.transpose(v, vec![2, 0, 1, 3])?;
    g.reshape(v, &[n, groups * a, b])
}

/// The gradients of `(Modulated)DeformableConvolution(data, offset[, mask], weight[, bias])`
/// for output gradient `gy`.
pub(crate) fn grad(g: &mut Grad<'_>, p: &Dcn, inputs: &[Val], gy: Val) -> Result<Vec<Option<Val>>> {
    let (x, off) = (inputs[0], inputs[1]);
    let mask = p.modulated.then(|| inputs[2]);
    let w = inputs[if p.modulated { 3 } else { 2 }];
    let (xs, ws, ys) = (g.shape(x), g.shape(w), g.shape(gy));
    let (n, c, f, groups, dg, taps) = (xs[0], xs[1], ws[0], p.num_group, p.deform_groups, p.taps());
    let l = ys[2] * ys[3];
    let (fg, kg) = (f / groups, c / groups * taps);
    let col = g.apply1(DcnSample { p: p.clone(), order: [false, false] }, &[x, off])?;
    let grouped5 = [n, dg, c / dg, taps, l];
    // The mask as a factor of the columns: (N, dg, 1, taps, L).
    let m5 = match mask {
        Some(m) => Some(g.reshape(m, &[n, dg, 1, taps, l])?),
        None => None,
    };
    let colm = match m5 {
        Some(m5) => {
            let c5 = g.reshape(col, &grouped5)?;
            let cm = g.mul(c5, m5)?;
            g.reshape(cm, &[n, c * taps, l])?
        }
        None => col,
    };
    let wg = g.reshape(w, &[groups, fg, kg])?;
    let gyg = to_groups(g, gy, n, groups, fg, l)?;
    // Column gradient weightᵀ · gy and weight gradient gy · columnsᵀ, group by group.
    let dcolm = g.dot(wg, gyg, true, false, true)?;
    let dcolm = from_groups(g, dcolm, n, groups, kg, l)?;
    let colmg = to_groups(g, colm, n, groups, kg, l)?;
    let dw = g.dot(gyg, colmg, false, true, true)?;
    let dw = g.reshape(dw, &ws)?;
    let (dcol, dmask) = match (m5, mask) {
        (Some(m5), Some(m)) => {
            let d5 = g.reshape(dcolm, &grouped5)?;
            let dc = g.mul(d5, m5)?;
            let dc = g.reshape(dc, &[n, c * taps, l])?;
            let c5 = g.reshape(col, &grouped5)?;
            let dm = g.mul(d5, c5)?;
            let dm = g.sum_axes(dm, vec![2], false)?;
            let ms = g.shape(m);
            (dc, Some(g.reshape(dm, &ms)?))
        }
        _ => (dcolm, None),
    };
    let adj = DcnSampleAdjoint { p: p.clone(), order: [false, false], hw: [xs[2], xs[3]] };
    let dx = g.apply1(adj, &[dcol, off])?;
    let doff = offset_grad(g, p, dcol, x, off, [false, false])?;
    let mut out = vec![Some(dx), Some(doff)];
    if let Some(dm) = dmask {
        out.push(Some(dm));
    }
    out.push(Some(dw));
    if inputs.len() > out.len() {
        out.push(Some(g.sum_axes(gy, vec![0, 2, 3], false)?));
    }
    Ok(out)
}
