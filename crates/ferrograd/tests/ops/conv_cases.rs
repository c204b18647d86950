//! Convolution, `_backward_Convolution` and Deconvolution against naive float64 loops, their
//! gradients (first and second order), and their bad-input errors.

use ferrograd::call;
use ferrograd::ops::AttrValue;
use ferrograd::DType::{F32, F64};
use ferrograd::{Error, NDArray};

use crate::common::*;
use crate::gradcheck::{build, check};

/// One convolution configuration (per spatial axis: kernel, stride, dilate, pad).
#[derive(Clone, Debug)]
pub struct Cfg {
    pub k: Vec<usize>,
    pub s: Vec<usize>,
    pub d: Vec<usize>,
    pub p: Vec<usize>,
    pub f: usize,
    pub g: usize,
    pub bias: bool,
}

impl Cfg {
    pub fn new(k: &[usize], s: &[usize], d: &[usize], p: &[usize], f: usize, g: usize, bias: bool) -> Cfg {
        Cfg { k: k.to_vec(), s: s.to_vec(), d: d.to_vec(), p: p.to_vec(), f, g, bias }
    }

    pub fn params(&self) -> Params {
        let t = |v: &[usize]| tuple(&v.iter().map(|&x| x as i64).collect::<Vec<_>>());
        let mut v = vec![
            ("kernel", t(&self.k)),
            ("stride", t(&self.s)),
            ("dilate", t(&self.d)),
            ("pad", t(&self.p)),
            ("num_filter", int(self.f as i64)),
            ("num_group", int(self.g as i64)),
        ];
        if !self.bias {
            v.push(("no_bias", boolean(true)));
        }
        v
    }

    fn out_sp(&self, xs: &[usize]) -> Vec<usize> {
        (0..self.k.len())
            .map(|i| (xs[2 + i] + 2 * self.p[i] - (self.d[i] * (self.k[i] - 1) + 1)) / self.s[i] + 1)
            .collect()
    }

    /// Calls `f(out_index, data_index, weight_index, filter)` for every multiply-add of the
    /// convolution of data shape `xs` (weight `(f, c/g, k...)`), out shape returned.
    fn visit(&self, xs: &[usize], mut f: impl FnMut(usize, usize, usize, usize)) -> Vec<usize> {
        let nd = self.k.len();
        let mut os = vec![xs[0], self.f];
        os.extend(self.out_sp(xs));
        let (cg, fg) = (xs[1] / self.g, self.f / self.g);
        let mut ws = vec![self.f, cg];
        ws.extend(&self.k);
        for o in 0..numel(&os) {
            let oi = unravel(o, &os);
            let (ni, fi) = (oi[0], oi[1]);
            let gi = fi / fg;
            for cj in 0..cg {
                for kk in 0..numel(&self.k) {
                    let ki = unravel(kk, &self.k);
                    let mut xi = vec![ni, gi * cg + cj];
                    let mut ok = true;
                    for i in 0..nd {
                        let pos = (oi[2 + i] * self.s[i] + ki[i] * self.d[i]) as i64 - self.p[i] as i64;
                        if pos < 0 || pos >= xs[2 + i] as i64 {
                            ok = false;
                            break;
                        }
                        xi.push(pos as usize);
                    }
                    if ok {
                        let mut wi = vec![fi, cj];
                        wi.extend(&ki);
                        f(o, ravel(&xi, xs), ravel(&wi, &ws), fi);
                    }
                }
            }
        }
        os
    }

    fn wshape(&self, c: usize) -> Vec<usize> {
        let mut ws = vec![self.f, c / self.g];
        ws.extend(&self.k);
        ws
    }

    pub fn forward_ref(&self, x: &NDArray, w: &NDArray, b: Option<&NDArray>) -> (Vec<usize>, Vec<f64>) {
        let (xv, wv) = (x.to_f64_vec(), w.to_f64_vec());
        let mut acc = std::collections::HashMap::<usize, f64>::new();
        let os = self.visit(x.shape(), |o, xi, wi, _| *acc.entry(o).or_insert(0.0) += xv[xi] * wv[wi]);
        let plane: usize = os[2..].iter().product();
        let bv = b.map(|b| b.to_f64_vec());
        let out = (0..numel(&os))
            .map(|o| acc.get(&o).copied().unwrap_or(0.0) + bv.as_ref().map_or(0.0, |b| b[(o / plane) % self.f]))
            .collect();
        (os, out)
    }

    /// (dx, dw, db) of the convolution for head gradient `gy`.
    pub fn backward_ref(&self, gy: &NDArray, x: &NDArray, w: &NDArray) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let (gv, xv, wv) = (gy.to_f64_vec(), x.to_f64_vec(), w.to_f64_vec());
        let (mut dx, mut dw) = (vec![0.0; x.size()], vec![0.0; w.size()]);
        self.visit(x.shape(), |o, xi, wi, _| {
            dx[xi] += gv[o] * wv[wi];
            dw[wi] += gv[o] * xv[xi];
        });
        let plane: usize = gy.shape()[2..].iter().product();
        let mut db = vec![0.0; self.f];
        for (o, &g) in gv.iter().enumerate() {
            db[(o / plane) % self.f] += g;
        }
        (dx, dw, db)
    }
}

fn rand(rng: &mut Rng, shape: &[usize]) -> NDArray {
    f64s(&rng.vec(numel(shape), -1.0, 1.0), shape)
}

/// The configurations tried: (data shape, cfg).
fn configs() -> Vec<(Vec<usize>, Cfg)> {
    vec![
        (vec![2, 3, 5, 6], Cfg::new(&[3, 3], &[1, 1], &[1, 1], &[1, 1], 4, 1, true)),
        (vec![1, 2, 7, 5], Cfg::new(&[3, 2], &[2, 1], &[1, 2], &[0, 1], 3, 1, false)),
        (vec![2, 4, 5, 5], Cfg::new(&[2, 2], &[1, 2], &[1, 1], &[1, 0], 6, 2, true)),
        (vec![2, 4, 4, 3], Cfg::new(&[1, 1], &[1, 1], &[1, 1], &[0, 0], 2, 2, true)),
        (vec![3, 2, 9], Cfg::new(&[3], &[2], &[2], &[2], 3, 1, true)),
        (vec![1, 2, 4, 3, 5], Cfg::new(&[2, 2, 3], &[1, 2, 1], &[1, 1, 1], &[1, 0, 1], 2, 1, true)),
        (vec![0, 3, 5, 5], Cfg::new(&[3, 3], &[1, 1], &[1, 1], &[0, 0], 2, 1, true)),
    ]
}

pub fn convolution(name: &'static str) {
    let mut rng = Rng::new(11);
    for (xs, cfg) in configs() {
        let x = rand(&mut rng, &xs);
        let w = rand(&mut rng, &cfg.wshape(xs[1]));
        let b = rand(&mut rng, &[cfg.f]);
        let (os, want) = cfg.forward_ref(&x, &w, cfg.bias.then_some(&b));
        for dt in [F64, F32] {
            for (vname, xv) in variants(&x.astype(dt)) {
                let mut ins = vec![xv, transposed_or_same(&w.astype(dt))];
                if cfg.bias {
                    ins.push(b.astype(dt));
                }
                let y = call1(name, &ins, &cfg.params());
                let (rtol, atol) = if dt == F64 { (1e-12, 1e-12) } else { (1e-5, 1e-5) };
                check_arr(&format!("{name} {xs:?} {cfg:?} {dt} {vname}"), &y, &os, dt, &want, rtol, atol);
            }
        }
    }
    // MXNet string attributes give the same op.
    let x = rand(&mut rng, &[1, 2, 4, 4]);
    let w = rand(&mut rng, &[3, 2, 3, 3]);
    let s = |v: &str| AttrValue::Str(v.into());
    let p = [("kernel", s("(3, 3)")), ("pad", s("(1, 1)")), ("num_filter", s("3")), ("no_bias", s("True"))];
    let y = call1(name, &[x.clone(), w.clone()], &p);
    let cfg = Cfg::new(&[3, 3], &[1, 1], &[1, 1], &[1, 1], 3, 1, false);
    let (os, want) = cfg.forward_ref(&x, &w, None);
    check_arr("string attrs", &y, &os, F64, &want, 1e-12, 1e-12);
}

fn transposed_or_same(x: &NDArray) -> NDArray {
    variants(x).pop().map(|(_, v)| v).unwrap_or_else(|| x.clone())
}

fn grad_configs() -> Vec<(Vec<usize>, Cfg)> {
    vec![
        (vec![2, 2, 4, 3], Cfg::new(&[2, 2], &[1, 1], &[1, 1], &[1, 0], 2, 1, true)),
        (vec![1, 4, 5], Cfg::new(&[2], &[2], &[2], &[1], 2, 2, true)),
        (vec![1, 2, 3, 2, 3], Cfg::new(&[2, 1, 2], &[1, 1, 2], &[1, 1, 1], &[0, 1, 1], 2, 1, false)),
    ]
}

pub fn convolution_grad(name: &'static str) {
    let mut rng = Rng::new(12);
    for (xs, cfg) in grad_configs() {
        let mut ins = vec![rand(&mut rng, &xs), rand(&mut rng, &cfg.wshape(xs[1]))];
        if cfg.bias {
            ins.push(rand(&mut rng, &[cfg.f]));
        }
        let op = build(name, &cfg.params());
        check(&format!("{name} {xs:?} {cfg:?}"), &op, &ins, &mut rng, true);
    }
}

pub fn conv_backward(name: &'static str) {
    let mut rng = Rng::new(13);
    for (xs, cfg) in configs() {
        let x = rand(&mut rng, &xs);
        let w = rand(&mut rng, &cfg.wshape(xs[1]));
        let mut os = vec![xs[0], cfg.f];
        os.extend(cfg.out_sp(&xs));
        let gy = rand(&mut rng, &os);
        let (dx, dw, db) = cfg.backward_ref(&gy, &x, &w);
        for dt in [F64, F32] {
            let ins = [transposed_or_same(&gy.astype(dt)), x.astype(dt), w.astype(dt)];
            let outs = call(name, &ins, &cfg.params()).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(outs.len(), if cfg.bias { 3 } else { 2 });
            let (rtol, atol) = if dt == F64 { (1e-12, 1e-12) } else { (1e-5, 1e-4) };
            let what = format!("{name} {xs:?} {cfg:?} {dt}");
            check_arr(&format!("{what} dx"), &outs[0], &xs, dt, &dx, rtol, atol);
            check_arr(&format!("{what} dw"), &outs[1], &cfg.wshape(xs[1]), dt, &dw, rtol, atol);
            if cfg.bias {
                check_arr(&format!("{what} db"), &outs[2], &[cfg.f], dt, &db, rtol, atol);
            }
        }
    }
}

pub fn conv_backward_grad(name: &'static str) {
    let mut rng = Rng::new(14);
    for (xs, cfg) in grad_configs() {
        let mut os = vec![xs[0], cfg.f];
        os.extend(cfg.out_sp(&xs));
        let ins = [rand(&mut rng, &os), rand(&mut rng, &xs), rand(&mut rng, &cfg.wshape(xs[1]))];
        let op = build(name, &cfg.params());
        check(&format!("{name} {xs:?} {cfg:?}"), &op, &ins, &mut rng, true);
    }
}

/// Deconvolution cases: (data shape, cfg with f = num_filter, adj, target_shape).
/// (data shape, cfg, adj, target_shape).
type DeconvCase = (Vec<usize>, Cfg, Vec<usize>, Vec<usize>);

fn deconv_configs() -> Vec<DeconvCase> {
    vec![
        (vec![2, 3, 3, 4], Cfg::new(&[3, 3], &[2, 2], &[1, 1], &[1, 1], 2, 1, true), vec![1, 0], vec![]),
        (vec![1, 4, 4, 3], Cfg::new(&[2, 3], &[1, 2], &[2, 1], &[0, 1], 4, 2, false), vec![], vec![]),
        (vec![2, 2, 5], Cfg::new(&[3], &[2], &[1], &[0], 3, 1, true), vec![], vec![10]),
        (vec![1, 2, 2, 3, 2], Cfg::new(&[2, 2, 2], &[2, 1, 1], &[1, 1, 1], &[0, 1, 0], 2, 1, true), vec![], vec![]),
    ]
}

/// Naive deconvolution: the scatter y[n, f, o*s + k*d - p] += x[n, c, o] * w[c, f_local, k].
fn deconv_ref(x: &NDArray, w: &NDArray, b: Option<&NDArray>, cfg: &Cfg, pad: &[usize], out_sp: &[usize]) -> Vec<f64> {
    // The conv whose data is y (f channels) and whose output is x (c channels), weight (c, f/g, k).
    let c = x.shape()[1];
    let conv = Cfg { f: c, p: pad.to_vec(), ..cfg.clone() };
    let mut ys = vec![x.shape()[0], cfg.f];
    ys.extend(out_sp);
    let (xv, wv) = (x.to_f64_vec(), w.to_f64_vec());
    let mut y = vec![0.0; numel(&ys)];
    let os = conv.visit(&ys, |o, yi, wi, _| y[yi] += xv[o] * wv[wi]);
    assert_eq!(os, x.shape(), "deconv reference geometry");
    if let Some(b) = b {
        let bv = b.to_f64_vec();
        let plane: usize = out_sp.iter().product();
        for (i, v) in y.iter_mut().enumerate() {
            *v += bv[(i / plane) % cfg.f];
        }
    }
    y
}

fn deconv_params(cfg: &Cfg, adj: &[usize], target: &[usize]) -> Params {
    let mut p = cfg.params();
    if cfg.bias {
        p.push(("no_bias", boolean(false))); // Deconvolution has no bias by default (MXNet 1.9)
    }
    let t = |v: &[usize]| tuple(&v.iter().map(|&x| x as i64).collect::<Vec<_>>());
    if !adj.is_empty() {
        p.push(("adj", t(adj)));
    }
    if !target.is_empty() {
        p.push(("target_shape", t(target)));
    }
    p
}

/// (pad, output spatial) as MXNet computes them.
fn deconv_geom(xs: &[usize], cfg: &Cfg, adj: &[usize], target: &[usize]) -> (Vec<usize>, Vec<usize>) {
    (0..cfg.k.len())
        .map(|i| {
            let full = cfg.s[i] * (xs[2 + i] - 1) + cfg.d[i] * (cfg.k[i] - 1) + 1;
            if target.is_empty() {
                let a = adj.get(i).copied().unwrap_or(0);
                (cfg.p[i], full + a - 2 * cfg.p[i])
            } else {
                let t = full - target[i];
                (t.div_ceil(2), target[i])
            }
        })
        .unzip()
}

pub fn deconvolution(name: &'static str) {
    let mut rng = Rng::new(15);
    for (xs, cfg, adj, target) in deconv_configs() {
        let x = rand(&mut rng, &xs);
        let mut ws = vec![xs[1], cfg.f / cfg.g];
        ws.extend(&cfg.k);
        let w = rand(&mut rng, &ws);
        let b = rand(&mut rng, &[cfg.f]);
        let (pad, out_sp) = deconv_geom(&xs, &cfg, &adj, &target);
        let want = deconv_ref(&x, &w, cfg.bias.then_some(&b), &cfg, &pad, &out_sp);
        let mut ys = vec![xs[0], cfg.f];
        ys.extend(&out_sp);
        for dt in [F64, F32] {
            for (vname, xv) in variants(&x.astype(dt)) {
                let mut ins = vec![xv, w.astype(dt)];
                if cfg.bias {
                    ins.push(b.astype(dt));
                }
                let y = call1(name, &ins, &deconv_params(&cfg, &adj, &target));
                let (rtol, atol) = if dt == F64 { (1e-12, 1e-12) } else { (1e-5, 1e-5) };
                check_arr(&format!("{name} {xs:?} {cfg:?} {dt} {vname}"), &y, &ys, dt, &want, rtol, atol);
            }
        }
    }
}

pub fn deconvolution_grad(name: &'static str) {
    let mut rng = Rng::new(16);
    for (xs, cfg, adj, target) in deconv_configs().into_iter().take(3) {
        let mut ws = vec![xs[1], cfg.f / cfg.g];
        ws.extend(&cfg.k);
        let xs_small: Vec<usize> = xs.iter().enumerate().map(|(i, &v)| if i == 0 { 1 } else { v }).collect();
        let mut ins = vec![rand(&mut rng, &xs_small), rand(&mut rng, &ws)];
        if cfg.bias {
            ins.push(rand(&mut rng, &[cfg.f]));
        }
        let op = build(name, &deconv_params(&cfg, &adj, &target));
        check(&format!("{name} {xs:?} {cfg:?}"), &op, &ins, &mut rng, true);
    }
}

#[track_caller]
fn expect_err(name: &str, ins: &[NDArray], params: &[(&str, AttrValue)], shape_err: bool, needles: &[&str]) {
    let r = call(name, ins, params);
    let msg = match (&r, shape_err) {
        (Err(Error::Shape(m)), true) | (Err(Error::Value(m)), false) => m.clone(),
        _ => panic!("{name}{params:?}: expected a {} error, got {r:?}", if shape_err { "Shape" } else { "Value" }),
    };
    for n in needles {
        assert!(msg.contains(n), "{name}: message {msg:?} does not mention {n:?}");
    }
}

#[test]
fn convolution_errors() {
    let z = |s: &[usize]| NDArray::zeros(s, F32);
    let p = |k: &[i64], nf: i64| vec![("kernel", tuple(k)), ("num_filter", int(nf)), ("no_bias", boolean(true))];
    // Kernel larger than the (padded) input.
    expect_err(
        "Convolution",
        &[z(&[1, 2, 3, 3]), z(&[4, 2, 5, 5])],
        &p(&[5, 5], 4),
        true,
        &["Convolution", "kernel (5, 5)", "(1, 2, 3, 3)"],
    );
    // Wrong weight shape.
    expect_err(
        "Convolution",
        &[z(&[1, 2, 6, 6]), z(&[4, 3, 3, 3])],
        &p(&[3, 3], 4),
        true,
        &["Convolution", "weight", "(4, 3, 3, 3)", "(4, 2, 3, 3)"],
    );
    // Channels not divisible by num_group.
    let mut pg = p(&[3, 3], 4);
    pg.push(("num_group", int(2)));
    expect_err(
        "Convolution",
        &[z(&[1, 3, 6, 6]), z(&[4, 1, 3, 3])],
        &pg,
        true,
        &["Convolution", "num_group 2", "(1, 3, 6, 6)"],
    );
    // Data rank does not match the kernel.
    expect_err("Convolution", &[z(&[2, 6, 6]), z(&[4, 2, 3, 3])], &p(&[3, 3], 4), true, &["Convolution", "(2, 6, 6)"]);
    // Bias shape.
    let pb = vec![("kernel", tuple(&[3])), ("num_filter", int(4))];
    expect_err("Convolution", &[z(&[1, 2, 6]), z(&[4, 2, 3]), z(&[3])], &pb, true, &["Convolution", "bias", "(3,)"]);
    // Bad parameters.
    expect_err(
        "Convolution",
        &[z(&[1, 2, 6, 6]), z(&[4, 2, 3, 3])],
        &[("kernel", tuple(&[3, 3]))],
        false,
        &["num_filter"],
    );
    let mut ps = p(&[3, 3], 4);
    ps.push(("stride", tuple(&[0, 1])));
    expect_err("Convolution", &[z(&[1, 2, 6, 6]), z(&[4, 2, 3, 3])], &ps, false, &["Convolution", "stride"]);
    let mut ps = p(&[3, 3], 4);
    ps.push(("pad", tuple(&[1])));
    expect_err("Convolution", &[z(&[1, 2, 6, 6]), z(&[4, 2, 3, 3])], &ps, false, &["Convolution", "pad"]);
    let mut pl = p(&[3, 3], 4);
    pl.push(("layout", string("NHWC")));
    expect_err("Convolution", &[z(&[1, 2, 6, 6]), z(&[4, 2, 3, 3])], &pl, false, &["Convolution", "NHWC"]);
    expect_err(
        "Convolution",
        &[z(&[1, 2, 6, 6]), z(&[4, 2, 3, 3])],
        &[("kernel", string("(3, x)"))],
        false,
        &["kernel"],
    );
    // Missing bias input when no_bias is False.
    let r = call("Convolution", &[z(&[1, 2, 6]), z(&[4, 2, 3])], &pb);
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("Convolution") && m.contains("bias")), "{r:?}");
    // Integer data.
    let r = call("Convolution", &[NDArray::zeros(&[1, 2, 6], ferrograd::DType::I32), z(&[4, 2, 3])], &p(&[3], 4));
    assert!(matches!(r, Err(Error::DType(ref m)) if m.contains("Convolution")), "{r:?}");
    // Deconvolution: adj must be smaller than stride; weight shape.
    let mut pa = p(&[3, 3], 2);
    pa.push(("adj", tuple(&[1, 1])));
    expect_err("Deconvolution", &[z(&[1, 2, 3, 3]), z(&[2, 2, 3, 3])], &pa, false, &["Deconvolution", "adj"]);
    expect_err(
        "Deconvolution",
        &[z(&[1, 2, 3, 3]), z(&[2, 3, 3, 3])],
        &p(&[3, 3], 2),
        true,
        &["Deconvolution", "weight", "(2, 3, 3, 3)"],
    );
    // _backward_Convolution: ograd shape must match the convolution output.
    expect_err(
        "_backward_Convolution",
        &[z(&[1, 4, 3, 3]), z(&[1, 2, 6, 6]), z(&[4, 2, 3, 3])],
        &p(&[3, 3], 4),
        true,
        &["_backward_Convolution", "ograd", "(1, 4, 3, 3)", "(1, 4, 4, 4)"],
    );
}
