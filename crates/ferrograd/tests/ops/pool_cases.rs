//! Pooling and its gradient ops against naive float64 loops; gradients to second order; errors.

use ferrograd::call;
use ferrograd::DType::{F32, F64};
use ferrograd::{Error, NDArray};

use crate::common::*;
use crate::gradcheck::{build, check};

#[derive(Clone, Debug)]
pub struct PCfg {
    pub kind: &'static str,
    pub k: Vec<usize>,
    pub s: Vec<usize>,
    pub p: Vec<usize>,
    pub full: bool,
    pub cip: bool,
    pub pv: i64,
    pub global: bool,
}

fn pc(kind: &'static str, k: &[usize], s: &[usize], p: &[usize], full: bool) -> PCfg {
    PCfg { kind, k: k.to_vec(), s: s.to_vec(), p: p.to_vec(), full, cip: true, pv: 2, global: false }
}

impl PCfg {
    fn params(&self) -> Params {
        let t = |v: &[usize]| tuple(&v.iter().map(|&x| x as i64).collect::<Vec<_>>());
        let mut v = vec![("pool_type", string(self.kind))];
        if self.global {
            v.push(("global_pool", boolean(true)));
        } else {
            v.extend([("kernel", t(&self.k)), ("stride", t(&self.s)), ("pad", t(&self.p))]);
        }
        if self.full {
            v.push(("pooling_convention", string("full")));
        }
        if !self.cip {
            v.push(("count_include_pad", boolean(false)));
        }
        if self.kind == "lp" {
            v.push(("p_value", int(self.pv)));
        }
        v
    }

    /// For each output: (flat output index, window input indices, padded area); output shape.
    fn windows(&self, xs: &[usize]) -> (Vec<usize>, Vec<(Vec<usize>, usize)>) {
        let nd = xs.len() - 2;
        let (k, s, p) = if self.global {
            (xs[2..].to_vec(), vec![1; nd], vec![0; nd])
        } else {
            (self.k.clone(), self.s.clone(), self.p.clone())
        };
        let mut os = xs[..2].to_vec();
        for i in 0..nd {
            let span = xs[2 + i] + 2 * p[i] - k[i];
            os.push(if self.full { span.div_ceil(s[i]) } else { span / s[i] } + 1);
        }
        let mut res = Vec::new();
        for o in 0..numel(&os) {
            let oi = unravel(o, &os);
            let mut area = 1usize;
            let mut ranges = Vec::new();
            for i in 0..nd {
                let start = (oi[2 + i] * s[i]) as i64 - p[i] as i64;
                let end = (start + k[i] as i64).min((xs[2 + i] + p[i]) as i64);
                area *= (end - start).max(0) as usize;
                ranges.push((start.max(0) as usize, (end.max(0) as usize).min(xs[2 + i])));
            }
            let mut idx = Vec::new();
            let wshape: Vec<usize> = ranges.iter().map(|&(a, b)| b.saturating_sub(a)).collect();
            for w in 0..numel(&wshape) {
                let wi = unravel(w, &wshape);
                let mut full_idx = vec![oi[0], oi[1]];
                full_idx.extend(wi.iter().zip(&ranges).map(|(&d, &(a, _))| a + d));
                idx.push(ravel(&full_idx, xs));
            }
            res.push((idx, area));
        }
        (os, res)
    }

    fn scale(&self, idx: &[usize], area: usize) -> f64 {
        match self.kind {
            "avg" => {
                let n = if self.cip { area } else { idx.len() };
                if n == 0 {
                    0.0
                } else {
                    1.0 / n as f64
                }
            }
            _ => 1.0,
        }
    }

    fn argmax(xv: &[f64], idx: &[usize]) -> Option<usize> {
        let mut best: Option<usize> = None;
        for &i in idx {
            if best.is_none_or(|b| xv[i] > xv[b]) {
                best = Some(i);
            }
        }
        best
    }

    fn forward_ref(&self, x: &NDArray) -> (Vec<usize>, Vec<f64>) {
        let xv = x.to_f64_vec();
        let (os, ws) = self.windows(x.shape());
        let vals = ws
            .iter()
            .map(|(idx, area)| match self.kind {
                "max" => Self::argmax(&xv, idx).map_or(0.0, |i| xv[i]),
                // MXNet's signed form for p = 1 and 3 (a real cube root), |x| beyond.
                "lp" if self.pv == 1 => idx.iter().map(|&i| xv[i]).sum::<f64>(),
                "lp" if self.pv == 3 => idx.iter().map(|&i| xv[i].powi(3)).sum::<f64>().cbrt(),
                "lp" => {
                    let p = self.pv as f64;
                    idx.iter().map(|&i| xv[i].abs().powf(p)).sum::<f64>().powf(1.0 / p)
                }
                _ => idx.iter().map(|&i| xv[i]).sum::<f64>() * self.scale(idx, *area),
            })
            .collect();
        (os, vals)
    }

    fn backward_ref(&self, gy: &NDArray, x: &NDArray) -> Vec<f64> {
        let (xv, gv) = (x.to_f64_vec(), gy.to_f64_vec());
        let (_, ws) = self.windows(x.shape());
        let mut dx = vec![0.0; x.size()];
        for (o, (idx, area)) in ws.iter().enumerate() {
            if self.kind == "max" {
                if let Some(i) = Self::argmax(&xv, idx) {
                    dx[i] += gv[o];
                }
            } else {
                for &i in idx {
                    dx[i] += gv[o] * self.scale(idx, *area);
                }
            }
        }
        dx
    }
}

fn rand(rng: &mut Rng, shape: &[usize]) -> NDArray {
    f64s(&rng.signed(numel(shape), 0.1, 1.0), shape)
}

fn configs() -> Vec<(Vec<usize>, PCfg)> {
    let mut v = vec![
        (vec![2, 3, 7, 6], pc("max", &[3, 3], &[2, 2], &[1, 1], false)),
        (vec![2, 2, 5, 7], pc("avg", &[2, 3], &[1, 2], &[1, 0], true)),
        (vec![2, 2, 8], pc("sum", &[3], &[2], &[1], true)),
        (vec![1, 2, 4, 5, 4], pc("max", &[2, 2, 2], &[2, 1, 2], &[0, 1, 1], false)),
        (vec![1, 2, 5, 5], pc("lp", &[2, 2], &[2, 2], &[0, 0], true)),
        (vec![0, 2, 4, 4], pc("avg", &[2, 2], &[2, 2], &[0, 0], false)),
        (vec![1, 1, 3, 3], pc("max", &[2, 2], &[3, 3], &[1, 1], true)),
    ];
    let mut a = pc("avg", &[3, 2], &[2, 1], &[1, 1], true);
    a.cip = false;
    v.push((vec![1, 2, 5, 4], a));
    for pv in [1, 3] {
        let mut l = pc("lp", &[3], &[1], &[1], false);
        l.pv = pv;
        v.push((vec![2, 2, 5], l));
    }
    for kind in ["max", "avg", "sum"] {
        let mut g = pc(kind, &[], &[], &[], false);
        g.global = true;
        v.push((vec![2, 3, 4, 3], g));
    }
    let mut g = pc("max", &[], &[], &[], false);
    g.global = true;
    v.push((vec![2, 3, 5], g));
    v
}

pub fn pooling(name: &'static str) {
    let mut rng = Rng::new(21);
    for (xs, cfg) in configs() {
        let x = rand(&mut rng, &xs);
        let (os, want) = cfg.forward_ref(&x);
        for dt in [F64, F32] {
            for (vname, xv) in variants(&x.astype(dt)) {
                let y = call1(name, &[xv], &cfg.params());
                let (rtol, atol) = if dt == F64 { (1e-12, 1e-12) } else { (1e-5, 1e-6) };
                check_arr(&format!("{name} {xs:?} {cfg:?} {dt} {vname}"), &y, &os, dt, &want, rtol, atol);
            }
        }
    }
    // MXNet string attributes.
    let x = rand(&mut rng, &[1, 1, 4, 4]);
    let p = [("kernel", string("(2, 2)")), ("stride", string("(2, 2)")), ("pool_type", string("avg"))];
    let y = call1(name, std::slice::from_ref(&x), &p);
    let (os, want) = pc("avg", &[2, 2], &[2, 2], &[0, 0], false).forward_ref(&x);
    check_arr("string attrs", &y, &os, F64, &want, 1e-12, 1e-12);
}

fn grad_configs() -> Vec<(Vec<usize>, PCfg)> {
    configs().into_iter().filter(|(xs, _)| numel(xs) > 0 && numel(xs) <= 260).collect()
}

pub fn pooling_grad(name: &'static str) {
    let mut rng = Rng::new(22);
    for (xs, cfg) in grad_configs() {
        let op = build(name, &cfg.params());
        check(&format!("{name} {xs:?} {cfg:?}"), &op, &[rand(&mut rng, &xs)], &mut rng, true);
    }
}

pub fn pool_backward(name: &'static str) {
    let mut rng = Rng::new(23);
    for (xs, cfg) in configs().into_iter().filter(|(_, c)| c.kind != "lp") {
        let x = rand(&mut rng, &xs);
        let (os, _) = cfg.windows(&xs);
        let gy = rand(&mut rng, &os);
        let want = cfg.backward_ref(&gy, &x);
        for dt in [F64, F32] {
            let y = call1(name, &[transposed(&gy.astype(dt)), x.astype(dt)], &cfg.params());
            let (rtol, atol) = if dt == F64 { (1e-12, 1e-12) } else { (1e-5, 1e-6) };
            check_arr(&format!("{name} {xs:?} {cfg:?} {dt}"), &y, &xs, dt, &want, rtol, atol);
        }
    }
}

fn transposed(x: &NDArray) -> NDArray {
    variants(x).pop().map(|(_, v)| v).unwrap_or_else(|| x.clone())
}

pub fn pool_backward_grad(name: &'static str) {
    let mut rng = Rng::new(24);
    for (xs, cfg) in grad_configs().into_iter().filter(|(_, c)| c.kind != "lp") {
        let (os, _) = cfg.windows(&xs);
        let op = build(name, &cfg.params());
        check(&format!("{name} {xs:?} {cfg:?}"), &op, &[rand(&mut rng, &os), rand(&mut rng, &xs)], &mut rng, true);
    }
}

pub fn max_gather(name: &'static str) {
    let mut rng = Rng::new(25);
    for (xs, cfg) in configs().into_iter().filter(|(_, c)| c.kind == "max") {
        let (x, h) = (rand(&mut rng, &xs), rand(&mut rng, &xs));
        let (os, ws) = cfg.windows(&xs);
        let (xv, hv) = (x.to_f64_vec(), h.to_f64_vec());
        let want: Vec<f64> = ws.iter().map(|(idx, _)| PCfg::argmax(&xv, idx).map_or(0.0, |i| hv[i])).collect();
        let y = call1(name, &[h, x], &cfg.params());
        check_arr(&format!("{name} {xs:?} {cfg:?}"), &y, &os, F64, &want, 0.0, 0.0);
    }
}

pub fn max_gather_grad(name: &'static str) {
    let mut rng = Rng::new(26);
    for (xs, cfg) in grad_configs().into_iter().filter(|(_, c)| c.kind == "max") {
        let op = build(name, &cfg.params());
        check(&format!("{name} {xs:?}"), &op, &[rand(&mut rng, &xs), rand(&mut rng, &xs)], &mut rng, true);
    }
}

#[test]
fn pooling_errors() {
    let z = |s: &[usize]| NDArray::zeros(s, F32);
    let r = call("Pooling", &[z(&[1, 1, 2, 2])], &[("kernel", tuple(&[3, 3]))]);
    assert!(
        matches!(r, Err(Error::Shape(ref m)) if m.contains("Pooling") && m.contains("(3, 3)") && m.contains("(1, 1, 2, 2)")),
        "{r:?}"
    );
    let r = call("Pooling", &[z(&[1, 4, 4])], &[("kernel", tuple(&[2, 2]))]);
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("Pooling") && m.contains("(1, 4, 4)")), "{r:?}");
    let r = call("Pooling", &[z(&[1, 1, 4, 4])], &[("kernel", tuple(&[2, 2])), ("pool_type", string("median"))]);
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("pool_type") && m.contains("median")), "{r:?}");
    let r = call("Pooling", &[z(&[1, 1, 4, 4])], &[("kernel", tuple(&[2, 2])), ("pooling_convention", string("odd"))]);
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("pooling_convention")), "{r:?}");
    let r = call("Pooling", &[z(&[1, 1, 4, 4])], &[("pool_type", string("max"))]);
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("kernel")), "{r:?}");
    let r = call("Pooling", &[z(&[1, 1, 4, 4])], &[("kernel", tuple(&[2, 2])), ("stride", tuple(&[0, 1]))]);
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("stride")), "{r:?}");
    let r = call("Pooling", &[z(&[4])], &[("global_pool", boolean(true))]);
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("Pooling") && m.contains("(4,)")), "{r:?}");
    let r = call(
        "_backward_Pooling",
        &[z(&[1, 1, 3, 3]), z(&[1, 1, 4, 4])],
        &[("kernel", tuple(&[2, 2])), ("stride", tuple(&[2, 2]))],
    );
    assert!(
        matches!(r, Err(Error::Shape(ref m)) if m.contains("_backward_Pooling") && m.contains("ograd") && m.contains("(1, 1, 2, 2)")),
        "{r:?}"
    );
    let _ = F64;
}

pub fn upsampling(name: &'static str) {
    let mut rng = Rng::new(27);
    for (shape, scale) in
        [(&[2, 3, 2, 3][..], 2usize), (&[1, 1, 3, 1][..], 3), (&[0, 2, 2, 2][..], 2), (&[1, 2, 2, 2][..], 1)]
    {
        let x = rand(&mut rng, shape);
        let xv = x.to_f64_vec();
        let os = [shape[0], shape[1], shape[2] * scale, shape[3] * scale];
        let want: Vec<f64> = (0..numel(&os))
            .map(|o| {
                let i = unravel(o, &os);
                xv[ravel(&[i[0], i[1], i[2] / scale, i[3] / scale], shape)]
            })
            .collect();
        for dt in [F64, F32] {
            for (vname, xa) in variants(&x.astype(dt)) {
                let p = [("scale", int(scale as i64)), ("sample_type", string("nearest"))];
                let y = call1(name, &[xa], &p);
                let want_dt: Vec<f64> = want.iter().map(|&v| round_to(v, dt)).collect();
                check_arr(&format!("{name} {shape:?} x{scale} {dt} {vname}"), &y, &os, dt, &want_dt, 0.0, 0.0);
            }
        }
    }
    let r = call(name, &[NDArray::zeros(&[2, 2], F32)], &[("scale", int(2)), ("sample_type", string("nearest"))]);
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("UpSampling") && m.contains("(2, 2)")), "{r:?}");
    let r =
        call(name, &[NDArray::zeros(&[1, 1, 2, 2], F32)], &[("scale", int(2)), ("sample_type", string("bilinear"))]);
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("bilinear")), "{r:?}");
}

pub fn upsampling_grad(name: &'static str) {
    let mut rng = Rng::new(28);
    for (shape, scale) in [(&[1, 2, 2, 3][..], 2i64), (&[2, 1, 1, 2][..], 3)] {
        let op = build(name, &[("scale", int(scale)), ("sample_type", string("nearest"))]);
        check(&format!("{name} {shape:?} x{scale}"), &op, &[rand(&mut rng, shape)], &mut rng, true);
    }
}
