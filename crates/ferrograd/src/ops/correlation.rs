//! `Correlation` (FlowNet): for each position of `data1` (stride1) and each displacement in a
//! (2·max_displacement/stride2 + 1)² neighbourhood (step stride2), the product (or, with
//! `is_multiply=False`, the absolute difference) of the kernel_size² patches of `data1` and of
//! `data2` at the displaced position, summed over channels and divided by kernel_size²·C. Both
//! inputs are zero-padded by pad_size.
//!
//! The gradient is `_backward_Correlation(ograd, data1, data2)` → (d data1, d data2). With
//! `is_multiply` the correlation is bilinear, so that op's own gradient is made of `Correlation`
//! and `_backward_Correlation` again; with absolute differences it is linear in `ograd` and
//! piecewise constant in the data, and its `ograd` gradient is [`CorrelationSignDiff`], whose
//! gradient is `_backward_Correlation`: differentiable to any order. Output planes (one per (n, displacement)) and gradient planes (one per
//! (n, channel)) are independent: large problems are split by planes, with results independent of
//! the thread count.

use std::sync::Arc;

use ferrograd_kernels::element::Element;
use ferrograd_kernels::par::{for_each_chunk_weighted, Cost};

use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::conv::{check_float, Contig};
use crate::ops::params::{OpDef, OpParams};
use crate::ops::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};

/// `Correlation`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct CorrelationParams {
    /// Patch size (odd).
    #[param(default = 1)]
    pub kernel_size: i64,
    /// Largest displacement compared.
    #[param(default = 1)]
    pub max_displacement: i64,
    /// Step between positions of data1.
    #[param(default = 1)]
    pub stride1: i64,
    /// Step between displacements.
    #[param(default = 1)]
    pub stride2: i64,
    /// Zero padding of both inputs on each side.
    #[param(default = 0)]
    pub pad_size: i64,
    /// Multiply the patches (True) or take their absolute difference (False).
    #[param(default = true)]
    pub is_multiply: bool,
}

/// The checked configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    k: usize,
    md: usize,
    s1: usize,
    s2: usize,
    pad: usize,
    multiply: bool,
}

/// Sizes of one problem.
#[derive(Clone, Copy, Debug)]
struct Dims {
    n: usize,
    c: usize,
    h: usize,
    w: usize,
    /// Output height and width.
    th: usize,
    tw: usize,
    /// Displacements per axis (the output has grid² channels).
    grid: usize,
}

impl Config {
    fn dims(&self, op: &str, a: &[usize], b: &[usize]) -> Result<Dims> {
        if a.len() != 4 || a != b {
            return Err(Error::Shape(format!(
                "{op}: data1 and data2 must be 4-D (N, C, H, W) of one shape, got {} and {}",
                fmt_shape(a),
                fmt_shape(b)
            )));
        }
        let border = self.md + (self.k - 1) / 2;
        let out =
            |size: usize| (size + 2 * self.pad).checked_sub(2 * border).filter(|&v| v > 0).map(|v| v.div_ceil(self.s1));
        let (Some(th), Some(tw)) = (out(a[2]), out(a[3])) else {
            return Err(Error::Shape(format!(
                "{op}: data of shape {} padded by {} is too small for max_displacement {} and kernel_size {}",
                fmt_shape(a),
                self.pad,
                self.md,
                self.k
            )));
        };
        Ok(Dims { n: a[0], c: a[1], h: a[2], w: a[3], th, tw, grid: 2 * (self.md / self.s2) + 1 })
    }

    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("kernel_size", self.k.to_string()),
            ("max_displacement", self.md.to_string()),
            ("stride1", self.s1.to_string()),
            ("stride2", self.s2.to_string()),
            ("pad_size", self.pad.to_string()),
            ("is_multiply", if self.multiply { "True" } else { "False" }.into()),
        ]
    }

    /// Calls `f(p1, p2)` for each pair of positions that output (displacement `t`, row `i`,
    /// col `j`) compares: flat indices into a data1 and a data2 plane, `None` in the padding.
    fn pairs(&self, d: &Dims, t: usize, i: usize, j: usize, mut f: impl FnMut(Option<usize>, Option<usize>)) {
        let r = (self.md / self.s2) as i64;
        let (y1, x1) = ((i * self.s1 + self.md) as i64, (j * self.s1 + self.md) as i64);
        let (dy, dx) = (((t / d.grid) as i64 - r) * self.s2 as i64, ((t % d.grid) as i64 - r) * self.s2 as i64);
        let pad = self.pad as i64;
        let at = |y: i64, x: i64| {
            let (y, x) = (y - pad, x - pad);
            (y >= 0 && x >= 0 && y < d.h as i64 && x < d.w as i64).then(|| y as usize * d.w + x as usize)
        };
        for ky in 0..self.k as i64 {
            for kx in 0..self.k as i64 {
                f(at(y1 + ky, x1 + kx), at(y1 + dy + ky, x1 + dx + kx));
            }
        }
    }

    fn forward<T: Element>(&self, d: &Dims, a: &[T], b: &[T], y: &mut [T]) {
        let hw = d.h * d.w;
        self.reduce_pairs(d, y, |n, p1, p2| {
            (0..d.c)
                .map(|c| {
                    let base = (n * d.c + c) * hw;
                    let va = p1.map_or(0.0, |i| a[base + i].to_f64());
                    let vb = p2.map_or(0.0, |i| b[base + i].to_f64());
                    if self.multiply {
                        va * vb
                    } else {
                        (va - vb).abs()
                    }
                })
                .sum()
        })
    }

    /// `Σ sign(a - b)·(ha - hb)` over the compared pairs (sign +1 at a tie, as in the backward).
    fn sign_diff<T: Element>(&self, d: &Dims, [ha, hb, a, b]: [&[T]; 4], y: &mut [T]) {
        let hw = d.h * d.w;
        self.reduce_pairs(d, y, |n, p1, p2| {
            (0..d.c)
                .map(|c| {
                    let base = (n * d.c + c) * hw;
                    let v = |x: &[T], p: Option<usize>| p.map_or(0.0, |i| x[base + i].to_f64());
                    let s = if v(a, p1) >= v(b, p2) { 1.0 } else { -1.0 };
                    s * (v(ha, p1) - v(hb, p2))
                })
                .sum()
        })
    }

    /// Each output value: `f(n, p1, p2)` summed over the compared pairs, divided by k²·C.
    fn reduce_pairs<T: Element>(
        &self,
        d: &Dims,
        y: &mut [T],
        f: impl Fn(usize, Option<usize>, Option<usize>) -> f64 + Sync,
    ) {
        let (tsz, ch) = (d.th * d.tw, d.grid * d.grid);
        if tsz == 0 {
            return;
        }
        let norm = (self.k * self.k * d.c) as f64;
        let mut planes: Vec<&mut [T]> = y.chunks_mut(tsz).collect();
        for_each_chunk_weighted(&mut planes, tsz * self.k * self.k * d.c, Cost::Light, |start, ps| {
            for (q, p) in ps.iter_mut().enumerate() {
                let (n, t) = ((start + q) / ch, (start + q) % ch);
                for (o, v) in p.iter_mut().enumerate() {
                    let mut s = 0.0;
                    self.pairs(d, t, o / d.tw, o % d.tw, |p1, p2| s += f(n, p1, p2));
                    *v = T::from_f64(s / norm);
                }
            }
        });
    }

    /// (d data1, d data2) for head gradient `g`.
    fn backward<T: Element>(&self, d: &Dims, g: &[T], a: &[T], b: &[T], da: &mut [T], db: &mut [T]) {
        let (hw, tsz, ch) = (d.h * d.w, d.th * d.tw, d.grid * d.grid);
        if hw == 0 {
            return;
        }
        let norm = (self.k * self.k * d.c) as f64;
        let work = ch * tsz * self.k * self.k;
        for (which, out) in [(0, da), (1, db)] {
            let mut planes: Vec<&mut [T]> = out.chunks_mut(hw).collect();
            for_each_chunk_weighted(&mut planes, work, Cost::Light, |start, ps| {
                let mut acc = vec![0.0f64; hw];
                for (q, p) in ps.iter_mut().enumerate() {
                    let plane = start + q;
                    let n = plane / d.c;
                    let (pa, pb) = (&a[plane * hw..][..hw], &b[plane * hw..][..hw]);
                    acc.iter_mut().for_each(|v| *v = 0.0);
                    for t in 0..ch {
                        for o in 0..tsz {
                            let gv = g[(n * ch + t) * tsz + o].to_f64() / norm;
                            self.pairs(d, t, o / d.tw, o % d.tw, |p1, p2| {
                                let va = p1.map_or(0.0, |i| pa[i].to_f64());
                                let vb = p2.map_or(0.0, |i| pb[i].to_f64());
                                let (mine, other) = if which == 0 { (p1, vb) } else { (p2, va) };
                                let Some(i) = mine else { return };
                                acc[i] += if self.multiply {
                                    gv * other
                                } else {
                                    let s = if va >= vb { 1.0 } else { -1.0 };
                                    if which == 0 {
                                        gv * s
                                    } else {
                                        -gv * s
                                    }
                                };
                            });
                        }
                    }
                    for (v, s) in p.iter_mut().zip(&acc) {
                        *v = T::from_f64(*s);
                    }
                }
            });
        }
    }
}

/// MXNet `Correlation(data1, data2)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Correlation {
    cfg: Config,
}

impl Op for Correlation {
    fn name(&self) -> &'static str {
        "Correlation"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["data1", "data2"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.cfg.attrs()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let dt = check_float(self.name(), self.arg_names(), inputs)?;
        let d = self.cfg.dims(self.name(), &inputs[0].shape, &inputs[1].shape)?;
        Ok(vec![Meta::new(&[d.n, d.grid * d.grid, d.th, d.tw], dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let d = self.cfg.dims(self.name(), inputs[0].shape(), inputs[1].shape())?;
        let (a, b) = (Contig::new(&inputs[0]), Contig::new(&inputs[1]));
        float_kernel!(self.name(), inputs[0].dtype(), T => outputs[0].write_out::<T, _>(|y| self.cfg.forward(&d, a.get::<T>(), b.get::<T>(), y)))
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        let r =
            g.apply(Arc::new(CorrelationBackward { cfg: self.cfg.clone() }), &[out_grads[0], inputs[0], inputs[1]])?;
        Ok(vec![Some(r[0]), Some(r[1])])
    }
}

/// `_backward_Correlation(ograd, data1, data2)` → (d data1, d data2).
#[derive(Clone, Debug, PartialEq)]
pub struct CorrelationBackward {
    cfg: Config,
}

impl Op for CorrelationBackward {
    fn name(&self) -> &'static str {
        "_backward_Correlation"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["ograd", "data1", "data2"]
    }
    fn num_outputs(&self) -> usize {
        2
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.cfg.attrs()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let dt = check_float(self.name(), self.arg_names(), inputs)?;
        let d = self.cfg.dims(self.name(), &inputs[1].shape, &inputs[2].shape)?;
        let want = [d.n, d.grid * d.grid, d.th, d.tw];
        if inputs[0].shape[..] != want[..] {
            return Err(Error::Shape(format!(
                "{}: ograd has shape {}, expected {}",
                self.name(),
                fmt_shape(&inputs[0].shape),
                fmt_shape(&want)
            )));
        }
        Ok(vec![Meta::new(&inputs[1].shape, dt), Meta::new(&inputs[2].shape, dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let d = self.cfg.dims(self.name(), inputs[1].shape(), inputs[2].shape())?;
        let (g, a, b) = (Contig::new(&inputs[0]), Contig::new(&inputs[1]), Contig::new(&inputs[2]));
        let (first, rest) = outputs.split_at_mut(1);
        float_kernel!(self.name(), inputs[1].dtype(), T => {
            let mut db = vec![T::zero(); inputs[2].size()];
            first[0].write_out::<T, _>(|da| self.cfg.backward(&d, g.get::<T>(), a.get::<T>(), b.get::<T>(), da, &mut db))?;
            rest[0].write_out::<T, _>(|out| out.copy_from_slice(&db))
        })
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        let ([go, a, b], [ha, hb]) = ([inputs[0], inputs[1], inputs[2]], [out_grads[0], out_grads[1]]);
        if !self.cfg.multiply {
            // Linear in ograd, piecewise constant in the data.
            let dg = g.apply1(CorrelationSignDiff { cfg: self.cfg.clone() }, &[ha, hb, a, b])?;
            return Ok(vec![Some(dg), None, None]);
        }
        // Σ ha·(d data1) + hb·(d data2) = <ograd, C(ha, b) + C(a, hb)> for the bilinear C.
        let fwd = Correlation { cfg: self.cfg.clone() };
        let (c1, c2) = (g.apply1(fwd.clone(), &[ha, b])?, g.apply1(fwd, &[a, hb])?);
        let dg = g.add(c1, c2)?;
        let da = g.apply(Arc::new(self.clone()), &[go, a, hb])?[0];
        let db = g.apply(Arc::new(self.clone()), &[go, ha, b])?[1];
        Ok(vec![Some(dg), Some(da), Some(db)])
    }
}

/// `CorrelationSignDiff(ha, hb, data1, data2)`: with absolute differences, the correlation's
/// pairs summed as `sign(data1 - data2)·(ha - hb)` (the gradient of `_backward_Correlation` with
/// respect to its `ograd`). Linear in (ha, hb), constant in the data. Not registered: it appears
/// only in gradient graphs.
#[derive(Clone, Debug, PartialEq)]
pub struct CorrelationSignDiff {
    cfg: Config,
}

impl Op for CorrelationSignDiff {
    fn name(&self) -> &'static str {
        "_Correlation_sign_diff"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["ha", "hb", "data1", "data2"]
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.cfg.attrs()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let dt = check_float(self.name(), self.arg_names(), inputs)?;
        let d = self.cfg.dims(self.name(), &inputs[2].shape, &inputs[3].shape)?;
        for h in &inputs[..2] {
            self.cfg.dims(self.name(), &h.shape, &inputs[2].shape)?;
        }
        Ok(vec![Meta::new(&[d.n, d.grid * d.grid, d.th, d.tw], dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let metas: Vec<Meta> = inputs.iter().map(|x| x.meta()).collect();
        self.infer(&metas)?;
        let d = self.cfg.dims(self.name(), inputs[2].shape(), inputs[3].shape())?;
        let c: Vec<Contig> = inputs.iter().map(Contig::new).collect();
        float_kernel!(self.name(), inputs[2].dtype(), T => {
            let xs = [c[0].get::<T>(), c[1].get::<T>(), c[2].get::<T>(), c[3].get::<T>()];
            outputs[0].write_out::<T, _>(|y| self.cfg.sign_diff(&d, xs, y))
        })
    }
    fn saves(&self) -> Saves {
        Saves::Inputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        let r =
            g.apply(Arc::new(CorrelationBackward { cfg: self.cfg.clone() }), &[out_grads[0], inputs[2], inputs[3]])?;
        Ok(vec![Some(r[0]), Some(r[1]), None, None])
    }
}

fn parse(a: &Attrs) -> Result<Config> {
    let p = CorrelationParams::parse(a)?;
    let op = &a.op;
    let positive = |key: &str, v: i64| {
        if v < 1 {
            Err(Error::Value(format!("{op}: parameter '{key}' must be a positive integer, got {v}")))
        } else {
            Ok(v as usize)
        }
    };
    let k = positive("kernel_size", p.kernel_size)?;
    if k % 2 == 0 {
        return Err(Error::Value(format!("{op}: parameter 'kernel_size' must be odd, got {k}")));
    }
    for (key, v) in [("max_displacement", p.max_displacement), ("pad_size", p.pad_size)] {
        if v < 0 {
            return Err(Error::Value(format!("{op}: parameter '{key}' must be non-negative, got {v}")));
        }
    }
    Ok(Config {
        k,
        md: p.max_displacement as usize,
        s1: positive("stride1", p.stride1)?,
        s2: positive("stride2", p.stride2)?,
        pad: p.pad_size as usize,
        multiply: p.is_multiply,
    })
}

fn build_correlation(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(Correlation { cfg: parse(a)? }))
}

fn build_correlation_backward(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(CorrelationBackward { cfg: parse(a)? }))
}

/// The correlation ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "Correlation",
        aliases: &[],
        args: &["data1", "data2"],
        doc: "FlowNet correlation of two (N, C, H, W) feature maps over a neighbourhood of displacements: \
              (N, (2·max_displacement/stride2 + 1)², H', W').",
        params: CorrelationParams::schema,
        build: build_correlation,
    },
    OpDef {
        name: "_backward_Correlation",
        aliases: &[],
        args: &["ograd", "data1", "data2"],
        doc: "Gradients of Correlation with respect to data1 and data2 from (ograd, data1, data2).",
        params: CorrelationParams::schema,
        build: build_correlation_backward,
    },
];
