//! `_image_*` ops (`nd.image`): `to_tensor`, `normalize` and the flips, against naive
//! references written here (values and errors checked by running MXNet 1.9.1); gradients by
//! finite differences.

use ferrograd::ops::grad::eval_grad;
use ferrograd::DType::{F32, F64, I32, U8};
use ferrograd::{call, Error, NDArray};

use crate::common::*;
use crate::gradcheck::{build, check};

fn floats(v: &[f64]) -> ferrograd::ops::AttrValue {
    ferrograd::ops::AttrValue::Str(format!("({})", v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ")))
}

pub fn normalize_p() -> Params {
    vec![("mean", floats(&[0.1, 0.2, 0.3])), ("std", floats(&[1.0, 2.0, 4.0]))]
}

fn ramp(shape: &[usize]) -> NDArray {
    f64s(&(0..numel(shape)).map(|i| (i * 7 % 256) as f64).collect::<Vec<_>>(), shape)
}

/// (N)HWC → (N)CHW divided by 255.
fn to_tensor_ref(x: &NDArray) -> (Vec<usize>, Vec<f64>) {
    let s = x.shape().to_vec();
    let v = x.to_f64_vec();
    let (n, h, w, c) = if s.len() == 3 { (1, s[0], s[1], s[2]) } else { (s[0], s[1], s[2], s[3]) };
    let mut out = Vec::with_capacity(v.len());
    for i in 0..n {
        for ch in 0..c {
            for y in 0..h {
                for xx in 0..w {
                    out.push(v[((i * h + y) * w + xx) * c + ch] as f32 as f64 / 255.0);
                }
            }
        }
    }
    let shape = if s.len() == 3 { vec![c, h, w] } else { vec![n, c, h, w] };
    (shape, out)
}

fn flip_ref(x: &NDArray, left_right: bool) -> Vec<f64> {
    let s = x.shape().to_vec();
    let v = x.to_f64_vec();
    let axis = if left_right { s.len() - 2 } else { s.len() - 3 };
    (0..v.len())
        .map(|o| {
            let mut idx = unravel(o, &s);
            idx[axis] = s[axis] - 1 - idx[axis];
            v[ravel(&idx, &s)]
        })
        .collect()
}

pub fn forward(name: &'static str) {
    match name {
        "_image_to_tensor" => {
            for shape in [&[2, 3, 3][..], &[4, 2, 1], &[2, 2, 3, 3], &[0, 2, 2, 3], &[3, 1, 1]] {
                let x = ramp(shape);
                for dt in [U8, I32, F32, F64] {
                    for (vn, xv) in variants(&x.astype(dt)) {
                        let (ws, want) = to_tensor_ref(&xv);
                        let y = call1(name, &[xv], &[]);
                        check_arr(&format!("{name} {shape:?} {dt} {vn}"), &y, &ws, F32, &want, 1e-7, 0.0);
                    }
                }
            }
            // Values outside [0, 255] are scaled, not clipped (MXNet: 300 → 1.1764706).
            let y = call1(name, &[f64s(&[300.0], &[1, 1, 1])], &[]);
            assert_close("to_tensor 300", &y.to_f64_vec(), &[300.0f32 as f64 / 255.0], 1e-7, 0.0);
            let r = call(name, &[f64s(&[0.0; 6], &[2, 3])], &[]);
            assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains(name) && m.contains("(2, 3)")), "{r:?}");
        }
        "_image_normalize" => {
            let mean = [0.1, 0.2, 0.3];
            let std = [1.0, 2.0, 4.0];
            for shape in [&[3, 2, 2][..], &[2, 3, 1, 3]] {
                let x = ramp(shape);
                let s = x.shape().to_vec();
                let ch_axis = s.len() - 3;
                for dt in [F32, F64] {
                    for (vn, xv) in variants(&x.astype(dt)) {
                        let v = xv.to_f64_vec();
                        let want: Vec<f64> = (0..v.len())
                            .map(|o| {
                                let c = unravel(o, &s)[ch_axis];
                                (v[o] - mean[c]) / std[c]
                            })
                            .collect();
                        let y = call1(name, &[xv], &normalize_p());
                        let (rt, at) = tol(dt);
                        check_arr(&format!("{name} {shape:?} {dt} {vn}"), &y, &s, dt, &want, rt, at);
                    }
                }
            }
            // One value for every channel, and the defaults (zero mean, unit std) for any count.
            let x = ramp(&[5, 1, 2]);
            let y = call1(name, std::slice::from_ref(&x), &[("mean", floats(&[1.0])), ("std", floats(&[2.0]))]);
            let want: Vec<f64> = x.to_f64_vec().iter().map(|v| (v - 1.0) / 2.0).collect();
            check_arr("normalize scalar", &y, &[5, 1, 2], F64, &want, 1e-12, 0.0);
            check_arr(
                "normalize defaults",
                &call1(name, std::slice::from_ref(&x), &[]),
                &[5, 1, 2],
                F64,
                &x.to_f64_vec(),
                0.0,
                0.0,
            );
            let r = call(name, &[ramp(&[2, 2, 2])], &normalize_p());
            assert!(
                matches!(r, Err(Error::Shape(ref m)) if m.contains(name) && m.contains("mean has 3 values") && m.contains("(2, 2, 2)")),
                "{r:?}"
            );
            let r = call(name, &[ramp(&[3, 4])], &normalize_p());
            assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains(name) && m.contains("(3, 4)")), "{r:?}");
            let r = call(name, &[ramp(&[3, 1, 1]).astype(U8)], &normalize_p());
            assert!(matches!(r, Err(Error::DType(ref m)) if m.contains(name) && m.contains("uint8")), "{r:?}");
            let r = call(name, &[ramp(&[1, 1, 1])], &[("std", floats(&[0.0]))]);
            assert!(matches!(r, Err(Error::Value(ref m)) if m.contains(name) && m.contains("std")), "{r:?}");
        }
        _ => {
            let left_right = name == "_image_flip_left_right";
            for shape in [&[2, 3, 1][..], &[3, 4, 2], &[2, 2, 3, 1]] {
                let x = ramp(shape);
                for dt in [U8, F32, F64] {
                    for (vn, xv) in variants(&x.astype(dt)) {
                        let want = flip_ref(&xv, left_right);
                        let y = call1(name, &[xv], &[]);
                        check_arr(&format!("{name} {shape:?} {dt} {vn}"), &y, shape, dt, &want, 0.0, 0.0);
                    }
                }
            }
            let r = call(name, &[ramp(&[4, 4])], &[]);
            assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains(name) && m.contains("(4, 4)")), "{r:?}");
        }
    }
}

pub fn grad(name: &'static str) {
    let mut rng = Rng::new(1717);
    let (shape, params): (&[usize], Params) = match name {
        "_image_normalize" => (&[2, 3, 2, 2], normalize_p()),
        "_image_to_tensor" => (&[2, 3, 2], vec![]),
        _ => (&[2, 3, 2, 1], vec![]),
    };
    let op = build(name, &params);
    let x = f64s(&rng.signed(numel(shape), -1.0, 1.0), shape);
    if name != "_image_to_tensor" {
        check(name, &op, &[x], &mut rng, true);
        return;
    }
    // to_tensor's output is float32, too coarse for finite differences: the rule is checked
    // against its closed form, the head gradient moved back to HWC and divided by 255.
    let (h, w, c) = (shape[0], shape[1], shape[2]);
    let head: Vec<f64> = rng.signed(numel(shape), -1.0, 1.0).iter().map(|v| *v as f32 as f64).collect();
    let gy = f64s(&head, &[c, h, w]).astype(F32);
    let got = eval_grad(op.as_ref(), std::slice::from_ref(&x), &[gy]).expect("to_tensor gradient");
    let dx = got[0].as_ref().expect("a float input has a gradient");
    let want: Vec<f64> = (0..numel(shape))
        .map(|i| {
            let [y, xx, ch] = unravel(i, shape)[..] else { unreachable!() };
            head[(ch * h + y) * w + xx] / 255.0
        })
        .collect();
    check_arr("to_tensor gradient", dx, shape, F64, &want, 1e-7, 1e-12);
    let got = eval_grad(op.as_ref(), &[x.astype(U8)], &[f64s(&head, &[c, h, w]).astype(F32)]).expect("uint8 input");
    assert!(got[0].is_none(), "an integer image has no gradient");
}
