//! Gather/scatter ops (`take`, `gather_nd`, `scatter_nd` and their gradients) against naive loops.

use ferrograd::DType::{F32, F64, I32, I64};
use ferrograd::{Error, NDArray};

use crate::common::*;
use crate::gradcheck::{build, check};

fn iota(shape: &[usize]) -> NDArray {
    f64s(&(0..numel(shape)).map(|i| i as f64 * 1.5 - 2.0).collect::<Vec<_>>(), shape)
}

/// Naive `take`: out[pre, idx..., post] = a[pre, resolve(idx), post].
fn take_ref(a: &NDArray, ind: &[f64], ishape: &[usize], axis: usize, mode: &str) -> (Vec<usize>, Vec<f64>) {
    let s = a.shape();
    let n = s[axis] as i64;
    let av = a.to_f64_vec();
    let res = |i: f64| -> usize {
        let i = i.trunc() as i64;
        (match mode {
            "clip" => i.clamp(0, n - 1),
            "wrap" => i.rem_euclid(n),
            _ => {
                if i < 0 {
                    i + n
                } else {
                    i
                }
            }
        }) as usize
    };
    let out_shape: Vec<usize> = s[..axis].iter().chain(ishape).chain(&s[axis + 1..]).copied().collect();
    let vals = (0..numel(&out_shape))
        .map(|o| {
            let oi = unravel(o, &out_shape);
            let k = ravel(&oi[axis..axis + ishape.len()], ishape);
            let mut ai: Vec<usize> = oi[..axis].to_vec();
            ai.push(res(ind[k]));
            ai.extend_from_slice(&oi[axis + ishape.len()..]);
            av[ravel(&ai, s)]
        })
        .collect();
    (out_shape, vals)
}

pub fn take(name: &'static str) {
    let a = iota(&[4, 3]);
    let index_sets: &[(&[f64], &[usize])] = &[
        (&[2.0, 0.0], &[2]),
        (&[3.0, -1.0, 5.0, 1.7], &[2, 2]),
        (&[1.0], &[]),
        (&[], &[0]),
        (&[-4.0, 2.0, 3.0], &[3]),
    ];
    for &(ind, ishape) in index_sets {
        for axis in [0i64, 1, -1] {
            let d = ((axis + 2) % 2) as usize;
            for mode in ["clip", "wrap", "raise"] {
                let n = a.shape()[d] as f64;
                let in_range = ind.iter().all(|&i| i.trunc() >= -n && i.trunc() < n);
                for idt in [F32, I64, I32] {
                    let idx = arr(ind, ishape, idt);
                    for (vname, ai) in variants(&a) {
                        let res =
                            ferrograd::call(name, &[ai, idx.clone()], &[("axis", int(axis)), ("mode", string(mode))]);
                        let what = format!("take {ind:?} axis={axis} mode={mode} {idt} {vname}");
                        if mode == "raise" && !in_range {
                            assert!(matches!(res, Err(Error::Index(ref m)) if m.contains("take")), "{what}: {res:?}");
                            continue;
                        }
                        let (ws, want) = take_ref(&a, ind, ishape, d, mode);
                        check_arr(&what, &res.unwrap()[0], &ws, F64, &want, 0.0, 0.0);
                    }
                }
            }
        }
    }
}

pub fn take_grad(name: &'static str) {
    let mut rng = Rng::new(41);
    for axis in [0i64, 1] {
        let op = build(name, &[("axis", int(axis))]);
        let a = f64s(&rng.vec(12, -2.0, 2.0), &[4, 3]);
        // Repeated indices accumulate.
        let idx = arr(&[2.0, 0.0, 2.0], &[3], I64);
        check(&format!("take axis={axis}"), &op, &[a, idx], &mut rng, true);
    }
}

/// Naive scatter-add of `og` (shaped like take's output) into zeros of `shape`.
pub fn backward_take(name: &'static str) {
    let shape = [3usize, 2];
    let ind = [2.0, 0.0, 2.0, 5.0];
    for mode in ["clip", "wrap"] {
        let og = iota(&[4, 2]);
        let ogv = og.to_f64_vec();
        let mut want = vec![0.0; 6];
        for (k, &i) in ind.iter().enumerate() {
            let r = if mode == "clip" { (i as i64).clamp(0, 2) } else { (i as i64).rem_euclid(3) } as usize;
            for c in 0..2 {
                want[r * 2 + c] += ogv[k * 2 + c];
            }
        }
        let y = call1(name, &[og, arr(&ind, &[4], I64)], &[("shape", tuple(&[3, 2])), ("mode", string(mode))]);
        check_arr(&format!("_backward_take {mode}"), &y, &shape, F64, &want, 0.0, 0.0);
    }
}

pub fn backward_take_grad(name: &'static str) {
    let mut rng = Rng::new(43);
    let op = build(name, &[("shape", tuple(&[3, 2])), ("axis", int(0))]);
    let og = f64s(&rng.vec(8, -2.0, 2.0), &[4, 2]);
    check("_backward_take", &op, &[og, arr(&[2.0, 0.0, 2.0, 1.0], &[4], I64)], &mut rng, true);
}

/// Naive gather_nd: out[b, rest] = data[idx[0, b], ..., idx[M-1, b], rest].
fn gather_ref(data: &NDArray, ind: &[f64], ishape: &[usize]) -> (Vec<usize>, Vec<f64>) {
    let s = data.shape();
    let m = ishape[0];
    let bshape = &ishape[1..];
    let nb = numel(bshape);
    let out_shape: Vec<usize> = bshape.iter().chain(&s[m..]).copied().collect();
    let dv = data.to_f64_vec();
    let vals = (0..numel(&out_shape))
        .map(|o| {
            let oi = unravel(o, &out_shape);
            let b = ravel(&oi[..bshape.len()], bshape);
            let mut di: Vec<usize> = (0..m)
                .map(|d| {
                    let i = ind[d * nb + b] as i64;
                    (if i < 0 { i + s[d] as i64 } else { i }) as usize
                })
                .collect();
            di.extend_from_slice(&oi[bshape.len()..]);
            dv[ravel(&di, s)]
        })
        .collect();
    (out_shape, vals)
}

const ND_CASES: &[(&[f64], &[usize])] = &[
    (&[0.0, 2.0, 1.0, 1.0, 3.0, -1.0], &[2, 3]),
    (&[2.0, 0.0], &[1, 2]),
    (&[1.0, 0.0, 2.0, 3.0, 1.0, 0.0], &[3, 2]),
    (&[1.0, 0.0, 3.0, 2.0], &[2, 2, 1]),
];

pub fn gather_nd(name: &'static str) {
    let data = iota(&[3, 4, 2]);
    for &(ind, ishape) in ND_CASES {
        let (ws, want) = gather_ref(&data, ind, ishape);
        for idt in [I64, F32] {
            for (vname, di) in variants(&data) {
                let y = call1(name, &[di, arr(ind, ishape, idt)], &[]);
                check_arr(&format!("gather_nd {ind:?} {idt} {vname}"), &y, &ws, F64, &want, 0.0, 0.0);
            }
        }
    }
    let e = ferrograd::call(name, &[data, arr(&[5.0], &[1, 1], I64)], &[]);
    assert!(matches!(e, Err(Error::Index(_))), "{e:?}");
}

pub fn gather_nd_grad(name: &'static str) {
    let mut rng = Rng::new(47);
    let op = build(name, &[]);
    for &(ind, ishape) in ND_CASES {
        let data = f64s(&rng.vec(24, -2.0, 2.0), &[3, 4, 2]);
        check(&format!("gather_nd {ind:?}"), &op, &[data, arr(ind, ishape, I64)], &mut rng, true);
    }
}

/// scatter_nd writes (last write wins), `_backward_gather_nd` adds; both into zeros of `shape`.
pub fn scatter_nd(name: &'static str) {
    let add = name == "_backward_gather_nd";
    let shape = [3usize, 4, 2];
    let dshape = [3usize, 4, 2];
    let target = iota(&dshape);
    for &(ind, ishape) in ND_CASES {
        // data shaped like gather_nd's output for these indices.
        let (gshape, _) = gather_ref(&target, ind, ishape);
        let data = iota(&gshape);
        let dv = data.to_f64_vec();
        let m = ishape[0];
        let nb = numel(&ishape[1..]);
        let inner = numel(&shape[m..]);
        let mut want = vec![0.0; numel(&shape)];
        for b in 0..nb {
            let lead: Vec<usize> = (0..m)
                .map(|d| {
                    let i = ind[d * nb + b] as i64;
                    (if i < 0 { i + shape[d] as i64 } else { i }) as usize
                })
                .collect();
            let base = ravel(&lead, &shape[..m]) * inner;
            for c in 0..inner {
                if add {
                    want[base + c] += dv[b * inner + c];
                } else {
                    want[base + c] = dv[b * inner + c];
                }
            }
        }
        for (vname, di) in variants(&data) {
            let y = call1(name, &[di, arr(ind, ishape, I64)], &[("shape", tuple(&[3, 4, 2]))]);
            check_arr(&format!("{name} {ind:?} {vname}"), &y, &shape, F64, &want, 0.0, 0.0);
        }
    }
}

pub fn scatter_nd_grad(name: &'static str) {
    let mut rng = Rng::new(53);
    let op = build(name, &[("shape", tuple(&[3, 4, 2]))]);
    // Distinct index tuples (scatter_nd's gradient is only defined without duplicates).
    let (ind, ishape) = ND_CASES[0];
    let data = f64s(&rng.vec(6, -2.0, 2.0), &[3, 2]);
    check(name, &op, &[data, arr(ind, ishape, I64)], &mut rng, true);
}
