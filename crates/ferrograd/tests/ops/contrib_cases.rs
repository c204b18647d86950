//! `contrib` ops: `quadratic`, `div_sqrt_dim`, `arange_like`, `index_array`, `index_copy` and the
//! bounding-box ops, against naive references written here (and MXNet 1.9.1's documented
//! examples, whose values were checked by running MXNet); gradients by finite differences.

use ferrograd::ops::grad::eval_grad;
use ferrograd::DType::{F32, F64, I32, I64};
use ferrograd::NDArray;

use crate::common::*;
use crate::gradcheck::{build, check};

fn values(x: &NDArray) -> Vec<f64> {
    x.to_f64_vec()
}

pub fn contrib(name: &'static str) {
    match name {
        "_contrib_quadratic" => {
            let ps = [("a", float(1.5)), ("b", float(2.0)), ("c", float(3.0))];
            let data = [-2.0, -0.5, 0.0, 1.0, 2.5, 4.0];
            for dt in [F64, F32] {
                let x = arr(&data, &[2, 3], dt);
                let want: Vec<f64> = data.iter().map(|v| round_to(1.5 * v * v + 2.0 * v + 3.0, dt)).collect();
                for (vn, xv) in variants(&x) {
                    check_arr(&format!("quadratic {dt} {vn}"), &call1(name, &[xv], &ps), &[2, 3], dt, &want, 0.0, 0.0);
                }
            }
            // Integer data: evaluated in double precision, then truncated (MXNet: [1, 2] -> [6, 13]).
            let y = call1(name, &[arr(&[1.0, 2.0], &[2], I32)], &ps);
            check_arr("quadratic int32", &y, &[2], I32, &[6.0, 13.0], 0.0, 0.0);
            assert_eq!(values(&call1(name, &[f64s(&[3.0], &[])], &[])), vec![0.0], "all-zero defaults");
        }
        "_contrib_div_sqrt_dim" => {
            let data: Vec<f64> = (0..12).map(|i| i as f64 - 4.0).collect();
            for dt in [F64, F32] {
                let x = arr(&data, &[3, 4], dt);
                let want: Vec<f64> = data.iter().map(|v| round_to(v / 2.0, dt)).collect();
                for (vn, xv) in variants(&x) {
                    check_arr(
                        &format!("div_sqrt_dim {dt} {vn}"),
                        &call1(name, &[xv], &[]),
                        &[3, 4],
                        dt,
                        &want,
                        0.0,
                        0.0,
                    );
                }
            }
            let y = call1(name, &[f64s(&[1.0, 1.0, 1.0], &[1, 3])], &[]);
            assert_close("div_sqrt_dim by sqrt(3)", &values(&y), &[1.0 / 3f64.sqrt(); 3], 1e-15, 0.0);
            // Integer data is divided by the rounded root (MXNet: 10 / sqrt(3) -> 10 / 1).
            check_arr(
                "div_sqrt_dim int32",
                &call1(name, &[arr(&[10.0; 3], &[3], I32)], &[]),
                &[3],
                I32,
                &[10.0; 3],
                0.0,
                0.0,
            );
            let e = ferrograd::call(name, &[f64s(&[1.0], &[])], &[]).unwrap_err().to_string();
            assert!(e.contains("at least one dimension"), "{e}");
        }
        "_contrib_arange_like" => {
            let x = arr(&[0.0; 12], &[3, 4], F64);
            let y = call1(
                name,
                std::slice::from_ref(&x),
                &[("start", float(1.0)), ("step", float(0.5)), ("repeat", int(2))],
            );
            let want: Vec<f64> = (0..12).map(|i| 1.0 + (i / 2) as f64 * 0.5).collect();
            check_arr("arange_like repeat", &y, &[3, 4], F64, &want, 0.0, 0.0);
            let y = call1(name, std::slice::from_ref(&x), &[("start", float(1.0)), ("axis", int(0))]);
            check_arr("arange_like axis", &y, &[3], F64, &[1.0, 2.0, 3.0], 0.0, 0.0);
            let y = call1(name, std::slice::from_ref(&x), &[("axis", int(-1))]);
            check_arr("arange_like axis -1", &y, &[4], F64, &[0.0, 1.0, 2.0, 3.0], 0.0, 0.0);
            // Integer dtype: start and step are rounded first (MXNet gives all 1 here).
            let y = call1(name, &[arr(&[0.0; 6], &[2, 3], I32)], &[("start", float(1.7)), ("step", float(0.5))]);
            check_arr("arange_like int32", &y, &[2, 3], I32, &[1.0; 6], 0.0, 0.0);
            assert!(ferrograd::call(name, std::slice::from_ref(&x), &[("axis", int(2))]).is_err());
            assert!(ferrograd::call(name, &[x], &[("repeat", int(0))]).is_err());
        }
        "_contrib_index_array" => {
            let x = arr(&[0.0; 6], &[3, 2], F32);
            let y = call1(name, std::slice::from_ref(&x), &[]);
            check_arr("index_array", &y, &[3, 2, 2], I64, &[0., 0., 0., 1., 1., 0., 1., 1., 2., 0., 2., 1.], 0.0, 0.0);
            let x3 = arr(&[0.0; 12], &[3, 2, 2], F32);
            let y = call1(name, std::slice::from_ref(&x3), &[("axes", tuple(&[1, 0]))]);
            let mut want = Vec::new();
            for i in 0..3 {
                for j in 0..2 {
                    for _k in 0..2 {
                        want.extend([j as f64, i as f64]);
                    }
                }
            }
            check_arr("index_array axes", &y, &[3, 2, 2, 2], I64, &want, 0.0, 0.0);
            let y = call1(name, &[x], &[("axes", tuple(&[-1]))]);
            check_arr("index_array axes -1", &y, &[3, 2, 1], I64, &[0., 1., 0., 1., 0., 1.], 0.0, 0.0);
            assert!(ferrograd::call(name, &[x3], &[("axes", tuple(&[3]))]).is_err());
        }
        "_contrib_index_copy" => {
            let old = f64s(&[0.0; 15], &[5, 3]);
            let new = f64s(&[1., 2., 3., 4., 5., 6., 7., 8., 9.], &[3, 3]);
            for idt in [F32, I64, I32] {
                let y = call1(name, &[old.clone(), arr(&[0.0, 4.0, 2.0], &[3], idt), new.clone()], &[]);
                let want = [1., 2., 3., 0., 0., 0., 7., 8., 9., 0., 0., 0., 4., 5., 6.];
                check_arr(&format!("index_copy {idt}"), &y, &[5, 3], F64, &want, 0.0, 0.0);
            }
            let bad = ferrograd::call(name, &[old.clone(), arr(&[0.0, 7.0, 2.0], &[3], I64), new.clone()], &[]);
            assert!(bad.unwrap_err().to_string().contains("index 7 is out of range"));
            let bad = ferrograd::call(name, &[old, arr(&[1.0], &[1], I64), new], &[]).unwrap_err().to_string();
            assert!(bad.contains("one entry per row") && bad.contains("index_vector (1,)"), "{bad}");
        }
        "_contrib_box_iou" => {
            let a = f64s(&[0.5, 0.5, 1.0, 1.0, 0.0, 0.0, 0.5, 0.5], &[2, 4]);
            let b = f64s(&[0.25, 0.25, 0.75, 0.75], &[1, 4]);
            // Corner: both overlaps are 1/16 over 7/16.
            check_arr(
                "box_iou corner",
                &call1(name, &[a.clone(), b.clone()], &[]),
                &[2, 1],
                F64,
                &[1.0 / 7.0; 2],
                1e-12,
                0.0,
            );
            // Center: a is [0,0,1,1] and [-.25,-.25,.25,.25]; b is [-.125,-.125,.625,.625]
            // (MXNet 1.9.1 gives 0.33333334 and 0.20930232).
            let (first, second) = (0.390625 / (1.0 + 0.5625 - 0.390625), 0.140625 / (0.25 + 0.5625 - 0.140625));
            let y = call1(name, &[a, b], &[("format", string("center"))]);
            check_arr("box_iou center", &y, &[2, 1], F64, &[first, second], 1e-12, 0.0);
            // Shapes: leading axes of both sides are kept.
            let y = call1(name, &[f64s(&[0.0; 24], &[2, 3, 4]), f64s(&[0.0; 20], &[5, 4])], &[]);
            assert_eq!(y.shape(), &[2, 3, 5]);
            assert!(values(&y).iter().all(|&v| v == 0.0), "empty boxes have IoU 0");
            assert!(ferrograd::call(name, &[f64s(&[0.0; 3], &[1, 3]), f64s(&[0.0; 4], &[1, 4])], &[]).is_err());
        }
        "_contrib_box_nms" => {
            let d = f64s(
                &[
                    0., 0.5, 0.1, 0.1, 0.2, 0.2, 1., 0.4, 0.1, 0.1, 0.2, 0.2, 0., 0.3, 0.1, 0.1, 0.14, 0.14, 2., 0.6,
                    0.5, 0.5, 0.7, 0.8,
                ],
                &[4, 6],
            );
            let ps = |force: bool| {
                vec![("overlap_thresh", float(0.1)), ("id_index", int(0)), ("force_suppress", boolean(force))]
            };
            let neg = [-1.0; 6];
            let row = |i: usize| values(&d)[i * 6..(i + 1) * 6].to_vec();
            let y = call1(name, std::slice::from_ref(&d), &ps(true));
            let want = [row(3), row(0), neg.to_vec(), neg.to_vec()].concat();
            check_arr("box_nms forced", &y, &[4, 6], F64, &want, 0.0, 0.0);
            let y = call1(name, std::slice::from_ref(&d), &ps(false));
            let want = [row(3), row(0), row(1), neg.to_vec()].concat();
            check_arr("box_nms per class", &y, &[4, 6], F64, &want, 0.0, 0.0);
            let mut p = ps(false);
            p.push(("background_id", int(0)));
            let want = [row(3), row(1), neg.to_vec(), neg.to_vec()].concat();
            check_arr("box_nms background", &call1(name, std::slice::from_ref(&d), &p), &[4, 6], F64, &want, 0.0, 0.0);
            // valid_thresh and topk, output as centres.
            let p = vec![
                ("overlap_thresh", float(0.1)),
                ("valid_thresh", float(0.35)),
                ("topk", int(2)),
                ("out_format", string("center")),
            ];
            let want =
                [vec![2., 0.6, 0.6, 0.65, 0.2, 0.3], vec![0., 0.5, 0.15, 0.15, 0.1, 0.1], neg.to_vec(), neg.to_vec()]
                    .concat();
            check_arr(
                "box_nms topk center",
                &call1(name, std::slice::from_ref(&d), &p),
                &[4, 6],
                F64,
                &want,
                1e-12,
                1e-12,
            );
            // Overlap equal to the threshold is kept (strictly greater suppresses); ties keep order.
            let t = f64s(&[0., 0.5, 0., 0., 2., 2., 0., 0.5, 0., 0., 2., 1.], &[2, 6]);
            let y = call1(name, std::slice::from_ref(&t), &[("overlap_thresh", float(0.5))]);
            check_arr("box_nms at threshold", &y, &[2, 6], F64, &values(&t), 0.0, 0.0);
            // Batched over leading axes, and topk=0 passes the boxes through (as MXNet does).
            let b = f64s(&[values(&d), values(&d)].concat(), &[2, 4, 6]);
            let y = call1(name, std::slice::from_ref(&b), &ps(true));
            let want = [row(3), row(0), neg.to_vec(), neg.to_vec()].concat();
            check_arr("box_nms batched", &y, &[2, 4, 6], F64, &[want.clone(), want].concat(), 0.0, 0.0);
            let y = call1(name, std::slice::from_ref(&b), &[("topk", int(0))]);
            check_arr("box_nms topk=0", &y, &[2, 4, 6], F64, &values(&b), 0.0, 0.0);
            let e = ferrograd::call(name, &[d], &[("coord_start", int(3))]).unwrap_err().to_string();
            assert!(e.contains("coord_start=3"), "{e}");
        }
        "_backward_contrib_box_nms" => {
            let g = f64s(&[1., 2., 3., 4., 5., 6.], &[3, 2]);
            let src = arr(&[2.0, -1.0, 0.0], &[3], I64);
            let y = call1(name, &[g, src], &[("shape", tuple(&[3, 2]))]);
            check_arr("box_nms scatter", &y, &[3, 2], F64, &[5., 6., 0., 0., 1., 2.], 0.0, 0.0);
        }
        "_contrib_box_rows_gather" => {
            let x = f64s(&[1., 2., 3., 4., 5., 6.], &[3, 2]);
            let y = call1(name, &[x, arr(&[2.0, -1.0, 0.0], &[3], I64)], &[]);
            check_arr("box rows gather", &y, &[3, 2], F64, &[5., 6., 0., 0., 1., 2.], 0.0, 0.0);
        }
        "_contrib_bipartite_matching" => {
            let s = f64s(&[0.5, 0.6, 0.1, 0.2, 0.3, 0.4], &[3, 2]);
            let run = |p: &[(&str, ferrograd::ops::AttrValue)]| {
                let out = ferrograd::call(name, std::slice::from_ref(&s), p).unwrap();
                (values(&out[0]), values(&out[1]))
            };
            assert_eq!(run(&[("threshold", float(1e-12))]), (vec![1., -1., 0.], vec![2., 0.]));
            assert_eq!(run(&[("threshold", float(0.35))]), (vec![1., -1., -1.], vec![-1., 0.]));
            let asc = [("threshold", float(0.35)), ("is_ascend", boolean(true))];
            assert_eq!(run(&asc), (vec![-1., 0., -1.], vec![1., -1.]));
            // topk limits the number of matches (MXNet makes one more: see docs/mxnet-users.md).
            assert_eq!(run(&[("threshold", float(1e-12)), ("topk", int(1))]), (vec![1., -1., -1.], vec![-1., 0.]));
            let b = ferrograd::call(name, &[f64s(&[0.0; 12], &[2, 3, 2])], &[("threshold", float(0.5))]).unwrap();
            assert_eq!((b[0].shape(), b[1].shape()), (&[2usize, 3][..], &[2usize, 2][..]));
        }
        "_contrib_gradientmultiplier" => {
            let x = f64s(&[1.0, -2.5, 3.0], &[3]);
            check_arr(
                "gradientmultiplier",
                &call1(name, &[x], &[("scalar", float(-0.5))]),
                &[3],
                F64,
                &[1.0, -2.5, 3.0],
                0.0,
                0.0,
            );
        }
        "_contrib_round_ste" | "_contrib_sign_ste" => {
            let x = f64s(&[-1.5, 1.5, -1.9, 1.9, 2.7, 0.5, -0.5, 0.0, f64::NAN], &[9]);
            let want: &[f64] = if name == "_contrib_round_ste" {
                &[-2., 2., -2., 2., 3., 1., -1., 0.] // halves away from zero, as MXNet's round
            } else {
                &[-1., 1., -1., 1., 1., 1., -1., 0.]
            };
            let y = values(&call1(name, &[x], &[]));
            assert_eq!(&y[..8], want, "{name}");
            assert!(if name == "_contrib_sign_ste" { y[8] == 0.0 } else { y[8].is_nan() }, "{name} of NaN: {}", y[8]);
        }
        "_contrib_allclose" => {
            let run = |a: &[f64], b: &[f64], p: &[(&str, ferrograd::ops::AttrValue)]| {
                let y = call1(name, &[f64s(a, &[a.len()]), f64s(b, &[b.len()])], p);
                assert_eq!((y.shape(), y.dtype()), (&[][..], ferrograd::DType::U8));
                values(&y)[0]
            };
            // MXNet's documented examples.
            assert_eq!(run(&[1e10, 1e-7], &[1.00001e10, 1e-8], &[]), 0.0);
            assert_eq!(run(&[1e10, 1e-8], &[1.00001e10, 1e-9], &[]), 1.0);
            assert_eq!(run(&[1.0, f64::NAN], &[1.0, f64::NAN], &[]), 1.0);
            assert_eq!(run(&[1.0, f64::NAN], &[1.0, f64::NAN], &[("equal_nan", boolean(false))]), 0.0);
            assert_eq!(run(&[1.0, 2.0], &[1.1, 2.0], &[("atol", float(0.2))]), 1.0);
            assert!(ferrograd::call(name, &[f64s(&[1.0, 2.0], &[2]), f64s(&[1.0], &[1])], &[]).is_err());
        }
        other => panic!("no contrib case for {other}"),
    }
}

pub fn contrib_grad(name: &'static str) {
    let mut rng = Rng::new(name.len() as u64 + 7);
    match name {
        "_contrib_quadratic" => {
            let op = build(name, &[("a", float(1.5)), ("b", float(-2.0)), ("c", float(3.0))]);
            check(name, &op, &[f64s(&rng.vec(6, -2.0, 2.0), &[2, 3])], &mut rng, true);
        }
        "_contrib_div_sqrt_dim" => {
            check(name, &build(name, &[]), &[f64s(&rng.vec(8, -2.0, 2.0), &[2, 4])], &mut rng, true);
        }
        "_contrib_index_copy" => {
            let op = build(name, &[]);
            let (old, new) = (f64s(&rng.vec(12, -1.0, 1.0), &[4, 3]), f64s(&rng.vec(6, -1.0, 1.0), &[2, 3]));
            check(name, &op, &[old, arr(&[3.0, 1.0], &[2], I64), new], &mut rng, true);
        }
        "_contrib_box_nms" => {
            // Away from ties the kept set is locally constant, so the map is linear there.
            let d = f64s(&[0., 0.9, 0., 0., 1., 1., 0., 0.6, 0.1, 0.1, 1., 1., 0., 0.7, 3., 3., 4., 4.], &[3, 6]);
            let op = build(name, &[]);
            check(name, &op, std::slice::from_ref(&d), &mut rng, false);
            let g =
                eval_grad(op.as_ref(), &[d], &[f64s(&(0..18).map(|i| i as f64).collect::<Vec<_>>(), &[3, 6])]).unwrap();
            // Output rows: box 0, box 2, dropped: box 1 gets nothing.
            let want: Vec<f64> =
                [(0..6).map(|i| i as f64).collect::<Vec<_>>(), vec![0.0; 6], (6..12).map(|i| i as f64).collect()]
                    .concat();
            assert_eq!(g[0].as_ref().unwrap().to_f64_vec(), want);
        }
        "_backward_contrib_box_nms" => {
            let op = build(name, &[("shape", tuple(&[3, 2]))]);
            check(
                name,
                &op,
                &[f64s(&rng.vec(6, -1.0, 1.0), &[3, 2]), arr(&[2.0, -1.0, 0.0], &[3], I64)],
                &mut rng,
                true,
            );
        }
        "_contrib_box_rows_gather" => {
            let op = build(name, &[]);
            check(
                name,
                &op,
                &[f64s(&rng.vec(6, -1.0, 1.0), &[3, 2]), arr(&[1.0, -1.0, 1.0], &[3], I64)],
                &mut rng,
                true,
            );
        }
        "_contrib_gradientmultiplier" => {
            // Deliberately not the derivative of the (identity) forward: no finite differences.
            let op = build(name, &[("scalar", float(-0.5))]);
            let g = eval_grad(op.as_ref(), &[f64s(&[1.0, 2.0], &[2])], &[f64s(&[4.0, -2.0], &[2])]).unwrap();
            assert_eq!(g[0].as_ref().unwrap().to_f64_vec(), vec![-2.0, 1.0]);
        }
        "_contrib_round_ste" | "_contrib_sign_ste" => {
            let op = build(name, &[]);
            let g = eval_grad(op.as_ref(), &[f64s(&[-1.4, 0.0, 2.6], &[3])], &[f64s(&[3.0, -1.0, 0.5], &[3])]).unwrap();
            assert_eq!(g[0].as_ref().unwrap().to_f64_vec(), vec![3.0, -1.0, 0.5], "{name}: identity gradient");
        }
        // Zero gradients, as in MXNet.
        "_contrib_box_iou" | "_contrib_bipartite_matching" | "_contrib_arange_like" | "_contrib_index_array" => {
            let params = if name == "_contrib_bipartite_matching" { vec![("threshold", float(0.1))] } else { vec![] };
            let op = build(name, &params);
            let inputs: Vec<NDArray> = match name {
                "_contrib_box_iou" => vec![f64s(&rng.vec(8, 0.0, 1.0), &[2, 4]), f64s(&rng.vec(4, 0.0, 1.0), &[1, 4])],
                _ => vec![f64s(&rng.vec(6, 0.0, 1.0), &[2, 3])],
            };
            let outs = ferrograd::ops::run(op.as_ref(), &Default::default(), &inputs).unwrap();
            let heads: Vec<NDArray> = outs.iter().map(|o| f64s(&vec![1.0; o.size()], o.shape())).collect();
            let g = eval_grad(op.as_ref(), &inputs, &heads).unwrap();
            assert!(g.iter().all(|g| g.is_none()), "{name}: zero gradients");
        }
        other => panic!("no contrib gradient case for {other}"),
    }
}

/// Naive multi-head attention pieces on row-major vectors: the (L, B, H, parts, D) projection
/// element, the scores and the attended values.
struct Heads {
    b: usize,
    h: usize,
    d: usize,
}

impl Heads {
    fn at(&self, x: &[f64], parts: usize, part: usize, (l, bb, hh, dd): (usize, usize, usize, usize)) -> f64 {
        x[(((l * self.b + bb) * self.h + hh) * parts + part) * self.d + dd]
    }
    /// scores[(b·H + h), i, j] = Σ_d q(i) k(j) / √D
    fn scores(&self, q: (&[f64], usize, usize, usize), k: (&[f64], usize, usize, usize)) -> Vec<f64> {
        let (lq, lk) = (q.3, k.3);
        let mut out = vec![0.0; self.b * self.h * lq * lk];
        for bb in 0..self.b {
            for hh in 0..self.h {
                for i in 0..lq {
                    for j in 0..lk {
                        let s: f64 = (0..self.d)
                            .map(|dd| self.at(q.0, q.1, q.2, (i, bb, hh, dd)) * self.at(k.0, k.1, k.2, (j, bb, hh, dd)))
                            .sum();
                        out[((bb * self.h + hh) * lq + i) * lk + j] = s / (self.d as f64).sqrt();
                    }
                }
            }
        }
        out
    }
    /// out[i, b, h·D + d] = Σ_j att[(b·H + h), i, j] v(j)
    fn attend(&self, att: &[f64], lq: usize, v: (&[f64], usize, usize, usize)) -> Vec<f64> {
        let lk = v.3;
        let mut out = vec![0.0; lq * self.b * self.h * self.d];
        for i in 0..lq {
            for bb in 0..self.b {
                for hh in 0..self.h {
                    for dd in 0..self.d {
                        let s: f64 = (0..lk)
                            .map(|j| {
                                att[((bb * self.h + hh) * lq + i) * lk + j] * self.at(v.0, v.1, v.2, (j, bb, hh, dd))
                            })
                            .sum();
                        out[((i * self.b + bb) * self.h + hh) * self.d + dd] = s;
                    }
                }
            }
        }
        out
    }
}

/// Inputs for each interleaved product: L=3 queries, Lk=4 keys, B=2, H=2, D=3.
fn attention_inputs(name: &str, rng: &mut Rng) -> Vec<NDArray> {
    let (l, lk, b, h, d) = (3, 4, 2, 2, 3);
    match name {
        "_contrib_interleaved_matmul_selfatt_qk" => {
            vec![f64s(&rng.vec(l * b * h * 3 * d, -1.0, 1.0), &[l, b, h * 3 * d])]
        }
        "_contrib_interleaved_matmul_selfatt_valatt" => vec![
            f64s(&rng.vec(l * b * h * 3 * d, -1.0, 1.0), &[l, b, h * 3 * d]),
            f64s(&rng.vec(b * h * l * l, -1.0, 1.0), &[b * h, l, l]),
        ],
        "_contrib_interleaved_matmul_encdec_qk" => vec![
            f64s(&rng.vec(l * b * h * d, -1.0, 1.0), &[l, b, h * d]),
            f64s(&rng.vec(lk * b * h * 2 * d, -1.0, 1.0), &[lk, b, h * 2 * d]),
        ],
        _ => vec![
            f64s(&rng.vec(lk * b * h * 2 * d, -1.0, 1.0), &[lk, b, h * 2 * d]),
            f64s(&rng.vec(b * h * l * lk, -1.0, 1.0), &[b * h, l, lk]),
        ],
    }
}

pub fn attention(name: &'static str) {
    let mut rng = Rng::new(41);
    let xs = attention_inputs(name, &mut rng);
    let hd = Heads { b: 2, h: 2, d: 3 };
    let v: Vec<Vec<f64>> = xs.iter().map(values).collect();
    let (want, shape): (Vec<f64>, Vec<usize>) = match name {
        "_contrib_interleaved_matmul_selfatt_qk" => (hd.scores((&v[0], 3, 0, 3), (&v[0], 3, 1, 3)), vec![4, 3, 3]),
        "_contrib_interleaved_matmul_selfatt_valatt" => (hd.attend(&v[1], 3, (&v[0], 3, 2, 3)), vec![3, 2, 6]),
        "_contrib_interleaved_matmul_encdec_qk" => (hd.scores((&v[0], 1, 0, 3), (&v[1], 2, 0, 4)), vec![4, 3, 4]),
        _ => (hd.attend(&v[1], 3, (&v[0], 2, 1, 4)), vec![3, 2, 6]),
    };
    let y = call1(name, &xs, &[("heads", int(2))]);
    check_arr(name, &y, &shape, F64, &want, 1e-12, 1e-13);
    let xs32: Vec<NDArray> = xs.iter().map(|x| x.astype(F32)).collect();
    check_arr(&format!("{name} f32"), &call1(name, &xs32, &[("heads", int(2))]), &shape, F32, &want, 1e-5, 1e-6);
    // heads must divide the projection width.
    let e = ferrograd::call(name, &xs, &[("heads", int(5))]).unwrap_err().to_string();
    assert!(e.contains("heads=5"), "{e}");
    assert!(ferrograd::call(name, &xs, &[("heads", int(0))]).is_err());
}

pub fn attention_grad(name: &'static str) {
    let mut rng = Rng::new(43);
    let xs = attention_inputs(name, &mut rng);
    check(name, &build(name, &[("heads", int(2))]), &xs, &mut rng, true);
}
