//! Higher-order gradients of `BilinearSampler`.
//!
//! Sampling `y = S(grid)·data` is linear in the data, and its weights are products of one hat
//! function per axis, each linear in its grid coordinate within a cell. Differentiating in the
//! grid therefore only swaps an axis's weights `(1 - f, f)` for `(-s, s)` (s: the half extent
//! of that axis in pixels), once: a second derivative along the same axis is 0. The samplers
//! `D_o(data, grid)` with derivative orders `o` in {0, 1}² ([`SamplerDeriv`]), and their adjoints
//! in the data ([`SamplerDerivAdjoint`]), are closed under differentiation:
//!
//! - `D_o(x, G)`: d x = `D_o*(u, G)`; d G = `Σ_c u·D_{o+x}(x, G)`, `Σ_c u·D_{o+y}(x, G)`;
//! - `D_o*(u, G)`: d u = `D_o(h, G)`; d G as above with `(x, u)` replaced by `(h, u)`;
//!
//! and `_backward_BilinearSampler`'s gradient ([`sampler_backward_grad`]) is made of them. These
//! ops are not registered: they appear only in gradient graphs.

use std::sync::Arc;

use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::conv::{check_float, Contig};
use crate::ops::join::Concat;
use crate::ops::slice::SliceAxis;
use crate::ops::spatial::{BilinearSamplerBackward, Order, SamplerDims};
use crate::ops::{Ctx, Grad, Op, Saves, Val};

const DERIV: &str = "_BilinearSampler_deriv";
const ADJOINT: &str = "_BilinearSampler_deriv_adjoint";

fn order_attr(o: Order) -> Vec<(&'static str, String)> {
    vec![("order", format!("({}, {})", o[0] as u8, o[1] as u8))]
}

/// `Σ_c u·D_{o+x}(x, grid)` and `Σ_c u·D_{o+y}(x, grid)` joined as an (N, 2, OH, OW) grid
/// gradient: the grid gradient of `<u, D_o(x, grid)>`.
fn grid_grad(g: &mut Grad<'_>, u: Val, x: Val, grid: Val, o: Order) -> Result<Val> {
    if o == [true, true] {
        return g.zeros_like(grid);
    }
    let mut parts: [Option<Val>; 2] = [None, None];
    for axis in 0..2 {
        if o[axis] {
            continue;
        }
        let mut d = o;
        d[axis] = true;
        let t = g.apply1(SamplerDeriv { order: d }, &[x, grid])?;
        let p = g.mul(u, t)?;
        parts[axis] = Some(g.sum_axes(p, vec![1], true)?);
    }
    let parts = match parts {
        [Some(a), Some(b)] => [a, b],
        [Some(a), None] => [a, g.zeros_like(a)?],
        [None, Some(b)] => [g.zeros_like(b)?, b],
        [None, None] => unreachable!("o != [true, true] leaves an axis"),
    };
    g.apply1(Concat { dim: 1, num_args: Some(2) }, &parts)
}

/// The gradient of `_backward_BilinearSampler(ograd, data, grid)` → (d data, d grid) for head
/// gradients (hd, hg): with `hg = (hx, hy)` and `D10`, `D01`, `D11` the derivative samplers,
///
/// - d ograd = `D00(hd) + hx·D10(data) + hy·D01(data)`,
/// - d data = `D10*(ograd·hx) + D01*(ograd·hy)`,
/// - d grid = the grid gradient of `<ograd, D00(hd)>` plus `Σ_c ograd·D11(data)·(hy, hx)`.
pub(crate) fn sampler_backward_grad(g: &mut Grad<'_>, inputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
    let ([og, x, grid], [hd, hg]) = ([inputs[0], inputs[1], inputs[2]], [out_grads[0], out_grads[1]]);
    let xs = g.shape(x);
    let hw = [xs[2], xs[3]];
    let (hx, hy) = (
        g.apply1(SliceAxis { axis: 1, begin: 0, end: Some(1) }, &[hg])?,
        g.apply1(SliceAxis { axis: 1, begin: 1, end: Some(2) }, &[hg])?,
    );
    let d = |o: Order| SamplerDeriv { order: o };
    // d ograd
    let t00 = g.apply1(d([false, false]), &[hd, grid])?;
    let t10 = g.apply1(d([true, false]), &[x, grid])?;
    let t01 = g.apply1(d([false, true]), &[x, grid])?;
    let (a, b) = (g.mul(hx, t10)?, g.mul(hy, t01)?);
    let s = g.add(t00, a)?;
    let dog = g.add(s, b)?;
    // d data
    let (ox, oy) = (g.mul(og, hx)?, g.mul(og, hy)?);
    let a = g.apply1(SamplerDerivAdjoint { order: [true, false], hw }, &[ox, grid])?;
    let b = g.apply1(SamplerDerivAdjoint { order: [false, true], hw }, &[oy, grid])?;
    let dx = g.add(a, b)?;
    // d grid
    let first = g.apply(Arc::new(BilinearSamplerBackward), &[og, hd, grid])?[1];
    let t11 = g.apply1(d([true, true]), &[x, grid])?;
    let c = g.mul(og, t11)?;
    let c = g.sum_axes(c, vec![1], true)?;
    let (cx, cy) = (g.mul(c, hy)?, g.mul(c, hx)?);
    let cross = g.apply1(Concat { dim: 1, num_args: Some(2) }, &[cx, cy])?;
    let dgrid = g.add(first, cross)?;
    Ok(vec![Some(dog), Some(dx), Some(dgrid)])
}

/// `D_o(data, grid)`: bilinear sampling with the weights differentiated in the grid as `order`
/// says (`[false, false]` is `BilinearSampler`).
#[derive(Clone, Debug, PartialEq)]
pub struct SamplerDeriv {
    order: Order,
}

impl Op for SamplerDeriv {
    fn name(&self) -> &'static str {
        DERIV
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["data", "grid"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        order_attr(self.order)
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let dt = check_float(DERIV, self.arg_names(), inputs)?;
        Ok(vec![Meta::new(&SamplerDims::new(DERIV, &inputs[0].shape, &inputs[1].shape)?.out(), dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let d = SamplerDims::new(DERIV, inputs[0].shape(), inputs[1].shape())?;
        let (x, gr) = (Contig::new(&inputs[0]), Contig::new(&inputs[1]));
        float_kernel!(DERIV, inputs[0].dtype(), T => outputs[0].write_out::<T, _>(|y| d.forward(self.order, x.get::<T>(), gr.get::<T>(), y)))
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        let xs = g.shape(inputs[0]);
        let adj = SamplerDerivAdjoint { order: self.order, hw: [xs[2], xs[3]] };
        let dx = g.apply1(adj, &[out_grads[0], inputs[1]])?;
        let dgrid = grid_grad(g, out_grads[0], inputs[0], inputs[1], self.order)?;
        Ok(vec![Some(dx), Some(dgrid)])
    }
}

/// `D_o*(ograd, grid)`: the adjoint of [`SamplerDeriv`] in the data, an (N, C, H, W) array for
/// the (H, W) = `hw` of the sampled data.
#[derive(Clone, Debug, PartialEq)]
pub struct SamplerDerivAdjoint {
    order: Order,
    hw: [usize; 2],
}

impl SamplerDerivAdjoint {
    fn dims(&self, ograd: &[usize], grid: &[usize]) -> Result<SamplerDims> {
        if ograd.len() != 4 {
            return Err(Error::Shape(format!("{ADJOINT}: ograd must be 4-D, got shape {}", fmt_shape(ograd))));
        }
        let data = [ograd[0], ograd[1], self.hw[0], self.hw[1]];
        let d = SamplerDims::new(ADJOINT, &data, grid)?;
        if d.out()[..] != ograd[..] {
            return Err(Error::Shape(format!(
                "{ADJOINT}: ograd has shape {}, expected {} for grid {}",
                fmt_shape(ograd),
                fmt_shape(&d.out()),
                fmt_shape(grid)
            )));
        }
        Ok(d)
    }
}

impl Op for SamplerDerivAdjoint {
    fn name(&self) -> &'static str {
        ADJOINT
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["ograd", "grid"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut a = order_attr(self.order);
        a.push(("data_hw", format!("({}, {})", self.hw[0], self.hw[1])));
        a
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let dt = check_float(ADJOINT, self.arg_names(), inputs)?;
        self.dims(&inputs[0].shape, &inputs[1].shape)?;
        let s = &inputs[0].shape;
        Ok(vec![Meta::new(&[s[0], s[1], self.hw[0], self.hw[1]], dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let d = self.dims(inputs[0].shape(), inputs[1].shape())?;
        let (u, gr) = (Contig::new(&inputs[0]), Contig::new(&inputs[1]));
        float_kernel!(ADJOINT, inputs[0].dtype(), T => outputs[0].write_out::<T, _>(|dx| d.adjoint(self.order, u.get::<T>(), gr.get::<T>(), dx)))
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        // <h, D*(u, G)> = <D(h, G), u>.
        let du = g.apply1(SamplerDeriv { order: self.order }, &[out_grads[0], inputs[1]])?;
        let dgrid = grid_grad(g, inputs[0], out_grads[0], inputs[1], self.order)?;
        Ok(vec![Some(du), Some(dgrid)])
    }
}
