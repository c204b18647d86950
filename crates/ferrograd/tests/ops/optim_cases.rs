//! Forward cases of the fused optimizer update ops: values against per-element references in
//! f64, states mutated in place, the weight input left alone, and `update_in_place` agreeing with
//! the op's output. (Python tests compare every op with MXNet 1.9.1's own results.)

use ferrograd::ops::{self, AttrValue, Attrs};
use ferrograd::DType::{F16, F32, F64};
use ferrograd::NDArray;

use crate::common::*;

const N: usize = 6;

fn data(seed: f64, positive: bool) -> Vec<f64> {
    (0..N)
        .map(|i| {
            let v = ((i as f64 + 1.0) * 0.37 + seed).sin();
            if positive {
                v.abs() + 0.1
            } else {
                v
            }
        })
        .collect()
}

fn inputs_for(name: &str) -> Vec<NDArray> {
    let (n, positive): (usize, &[usize]) = match name {
        "sgd_update" | "signsgd_update" => (2, &[]),
        "sgd_mom_update" | "signum_update" | "nag_mom_update" | "rmsprop_update" => (3, &[2]),
        "adam_update" | "lamb_update_phase1" => (4, &[3]),
        "ftrl_update" => (4, &[3]),
        "rmspropalex_update" | "ftml_update" => (5, &[2, 3]),
        _ => unreachable!("{name}"),
    };
    (0..n)
        .map(|i| {
            let mut v = data(i as f64, positive.contains(&i));
            if name == "rmspropalex_update" && i == 3 {
                // The running mean of g must stay below the root of the running mean of g²
                // (input 2), or n - g² goes negative and the update is NaN.
                v.iter_mut().for_each(|x| *x *= 0.01);
            }
            f64s(&v, &[2, 3])
        })
        .collect()
}

pub fn lr_p() -> Params {
    vec![("lr", float(0.1)), ("wd", float(0.01)), ("rescale_grad", float(0.5)), ("clip_gradient", float(0.3))]
}
pub fn mom_p() -> Params {
    let mut p = lr_p();
    p.push(("momentum", float(0.9)));
    p
}
pub fn t_p() -> Params {
    vec![("lr", float(0.1)), ("t", int(2)), ("wd", float(0.01))]
}
pub fn lamb1_p() -> Params {
    vec![("t", int(2)), ("wd", float(0.01))]
}
pub fn adamw_p() -> Params {
    vec![("lr", float(0.1)), ("eta", float(0.5)), ("wd", float(0.01))]
}
pub fn multi_p() -> Params {
    vec![("lrs", string("(0.1, 0.2)")), ("wds", string("(0.0, 0.01)")), ("num_weights", int(2))]
}

fn clip(x: f64) -> f64 {
    x.clamp(-0.3, 0.3)
}

/// Per-element f64 reference of the ops with simple rules: (new weight, new states).
fn reference(name: &str, w: f64, g: f64, s: &[f64]) -> Option<(f64, Vec<f64>)> {
    let (lr, wd) = (0.1, 0.01);
    let gg = clip(0.5 * g);
    Some(match name {
        "sgd_update" => ((1.0 - lr * wd) * w - lr * gg, vec![]),
        "sgd_mom_update" => {
            let m = 0.9 * s[0] - lr * (gg + wd * w);
            (w + m, vec![m])
        }
        "nag_mom_update" => {
            let g2 = gg + wd * w;
            let m = 0.9 * s[0] - lr * g2;
            (w + 0.9 * m - lr * g2, vec![m])
        }
        "signsgd_update" => ((1.0 - lr * wd) * w - lr * g.signum(), vec![]),
        "adam_update" => {
            let g2 = clip(0.5 * g + wd * w);
            let (m, v) = (0.9 * s[0] + 0.1 * g2, 0.999 * s[1] + 0.001 * g2 * g2);
            (w - lr * m / (v.sqrt() + 1e-8), vec![m, v])
        }
        _ => return None,
    })
}

pub fn update(name: &'static str) {
    let params = match name {
        "sgd_mom_update" | "signum_update" | "nag_mom_update" => mom_p(),
        "ftml_update" => t_p(),
        "lamb_update_phase1" => lamb1_p(),
        _ => lr_p(),
    };
    let params: Vec<(&str, AttrValue)> = match name {
        "signsgd_update" | "rmsprop_update" | "rmspropalex_update" | "ftrl_update" | "adam_update" => {
            params.into_iter().filter(|(k, _)| *k != "momentum").collect()
        }
        "ftml_update" => {
            let mut p = params;
            p.push(("clip_grad", float(0.3)));
            p
        }
        _ => params,
    };
    let ins = inputs_for(name);
    let before: Vec<Vec<f64>> = ins.iter().map(NDArray::to_f64_vec).collect();
    let out = ferrograd::call(name, &ins, &params).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(out.len(), 1, "{name}: one output");
    assert_eq!(ins[0].to_f64_vec(), before[0], "{name}: the weight input is not written");
    for (i, (a, b)) in ins.iter().zip(&before).enumerate().skip(2) {
        assert_ne!(&a.to_f64_vec(), b, "{name}: state input {i} is updated in place");
    }
    if reference(name, 0.0, 0.0, &[0.0, 0.0]).is_some() {
        let got = out[0].to_f64_vec();
        for e in 0..N {
            let s: Vec<f64> = before[2..].iter().map(|v| v[e]).collect();
            let (w, states) = reference(name, before[0][e], before[1][e], &s).unwrap();
            assert!((got[e] - w).abs() < 1e-12, "{name}: element {e}: {} vs {w}", got[e]);
            for (k, sv) in states.iter().enumerate() {
                let now = ins[2 + k].to_f64_vec()[e];
                assert!((now - sv).abs() < 1e-12, "{name}: state {k} element {e}: {now} vs {sv}");
            }
        }
    }
    // The in-place entry point computes the same weight from the same starting point.
    let again: Vec<NDArray> = before.iter().map(|v| f64s(v, &[2, 3])).collect();
    let mut attrs = Attrs::new(name);
    attrs.items = params.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    ops::optim::update_in_place(name, &attrs, &again, |_| Ok(())).unwrap();
    assert_eq!(again[0].to_f64_vec(), out[0].to_f64_vec(), "{name}: in place vs output");
}

pub fn adamw(name: &'static str) {
    let mut ins = inputs_for("adam_update");
    for scale in [0.5, 0.0] {
        let w = ins[0].to_f64_vec();
        let mut call_ins = ins.clone();
        let mp = name.starts_with("_mp_");
        if mp {
            // float16 weight and gradient, float32 states, then the float32 master copy of the
            // weight before rescale_grad.
            call_ins = vec![
                ins[0].astype(F16),
                ins[1].astype(F16),
                ins[2].astype(F32),
                ins[3].astype(F32),
                ins[0].astype(F32),
            ];
        }
        let scale_arr = f64s(&[scale], &[1]);
        call_ins.push(if mp { scale_arr.astype(F32) } else { scale_arr });
        let out = ferrograd::call(name, &call_ins, &adamw_p()).unwrap();
        let got = out[0].to_f64_vec();
        if scale == 0.0 {
            assert_eq!(got, w, "{name}: rescale_grad 0 skips the update");
        } else {
            assert!(got.iter().zip(&w).all(|(a, b)| a != b), "{name}: update applied");
        }
        ins = call_ins[..4].to_vec();
    }
}

pub fn lamb2(name: &'static str) {
    let w = f64s(&[3.0, 4.0], &[2]);
    let g = f64s(&[1.0, 0.0], &[2]);
    let out = ferrograd::call(name, &[w, g, f64s(&[5.0], &[1]), f64s(&[1.0], &[1])], &[("lr", float(0.1))]).unwrap();
    check_arr(name, &out[0], &[2], F64, &[3.0 - 0.5, 4.0], 1e-12, 0.0);
}

pub fn multi(name: &'static str) {
    let mp = name.contains("_mp_");
    let mom = name.contains("mom");
    let mut ins = Vec::new();
    for k in 0..2 {
        let w = data(k as f64, false);
        ins.push(if mp { f64s(&w, &[2, 3]).astype(F16) } else { f64s(&w, &[2, 3]).astype(F32) });
        ins.push(if mp {
            f64s(&data(5.0, false), &[2, 3]).astype(F16)
        } else {
            f64s(&data(5.0, false), &[2, 3]).astype(F32)
        });
        if mom {
            ins.push(f64s(&[0.0; N], &[2, 3]).astype(F32));
        }
        if mp {
            ins.push(f64s(&w, &[2, 3]).astype(F32));
        }
    }
    let out = ferrograd::call(name, &ins, &multi_p()).unwrap();
    assert_eq!(out.len(), 2, "{name}: one output per weight");
    let group = ins.len() / 2;
    for (k, (lr, wd)) in [(0.1, 0.0), (0.2, 0.01)].into_iter().enumerate() {
        let (w, g) = (ins[k * group].to_f64_vec(), ins[k * group + 1].to_f64_vec());
        let want: Vec<f64> = w.iter().zip(&g).map(|(w, g)| w - lr * (g + wd * w)).collect();
        let (rtol, atol) = if mp { (2e-3, 2e-3) } else { (1e-5, 1e-6) };
        check_arr(name, &out[k], &[2, 3], if mp { F16 } else { F32 }, &want, rtol, atol);
    }
}

/// The multi-precision single-weight ops: float16 weight and grad, float32 states and master.
pub fn multi_single(name: &'static str) {
    let w = data(0.0, false);
    let g = data(1.0, false);
    let mut ins = vec![f64s(&w, &[2, 3]).astype(F16), f64s(&g, &[2, 3]).astype(F16)];
    let mom = name.contains("mom");
    if mom {
        ins.push(f64s(&[0.0; N], &[2, 3]).astype(F32));
    }
    let master = f64s(&w, &[2, 3]).astype(F32);
    ins.push(master.clone());
    let params = if mom { mom_p() } else { lr_p() };
    let out = ferrograd::call(name, &ins, &params).unwrap();
    let g16: Vec<f64> = ins[1].to_f64_vec();
    let w32 = master.to_f64_vec();
    let want: Vec<f64> = if !mom {
        w.iter().zip(&g16).map(|(&w, &g)| (1.0 - 0.1 * 0.01) * (w as f32 as f64) - 0.1 * clip(0.5 * g)).collect()
    } else if name.starts_with("mp_nag") {
        w.iter()
            .zip(&g16)
            .map(|(&w, &g)| {
                let w = w as f32 as f64;
                let g2 = clip(0.5 * g) + 0.01 * w;
                w + 0.9 * (-0.1 * g2) - 0.1 * g2
            })
            .collect()
    } else {
        w.iter()
            .zip(&g16)
            .map(|(&w, &g)| {
                let w = w as f32 as f64;
                w - 0.1 * (clip(0.5 * g) + 0.01 * w)
            })
            .collect()
    };
    assert_close(name, &w32, &want, 1e-6, 1e-7);
    check_arr(name, &out[0], &[2, 3], F16, &want, 2e-3, 1e-3);
}
