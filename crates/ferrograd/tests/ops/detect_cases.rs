//! Detection ops and multi-input `UpSampling`, against naive references written here (values
//! and error cases checked by running MXNet 1.9.1); gradients by finite differences.

use ferrograd::ops::grad::eval_grad;
use ferrograd::DType::{F32, F64};
use ferrograd::{call, Error, NDArray};

use crate::common::*;
use crate::gradcheck::{build, check};

fn rand(rng: &mut Rng, shape: &[usize]) -> NDArray {
    f64s(&rng.signed(numel(shape), -1.0, 1.0), shape)
}

// --- UpSampling with several inputs -----------------------------------------------------------

fn up_params(scale: i64, mode: &str, n: usize) -> Vec<(&'static str, ferrograd::ops::AttrValue)> {
    vec![
        ("scale", int(scale)),
        ("sample_type", string("nearest")),
        ("multi_input_mode", string(mode)),
        ("num_args", int(n as i64)),
    ]
}

/// Nearest upsampling of every input to the first's size times `scale`, concatenated or summed.
fn upsample_ref(xs: &[NDArray], scale: usize, sum: bool) -> (Vec<usize>, Vec<f64>) {
    let s0 = xs[0].shape();
    let (oh, ow) = (s0[2] * scale, s0[3] * scale);
    let channels = if sum { s0[1] } else { xs.iter().map(|x| x.shape()[1]).sum() };
    let os = vec![s0[0], channels, oh, ow];
    let mut out = vec![0.0; numel(&os)];
    let mut c0 = 0;
    for x in xs {
        let (s, v) = (x.shape(), x.to_f64_vec());
        let (fh, fw) = (oh / s[2], ow / s[3]);
        for b in 0..s[0] {
            for c in 0..s[1] {
                for y in 0..oh {
                    for xx in 0..ow {
                        out[ravel(&[b, c0 + c, y, xx], &os)] += v[ravel(&[b, c, y / fh, xx / fw], s)];
                    }
                }
            }
        }
        if !sum {
            c0 += s[1];
        }
    }
    (os, out)
}

#[test]
fn upsampling_several_inputs_forward() {
    let mut rng = Rng::new(2901);
    let cases: [(&[&[usize]], usize); 4] = [
        (&[&[2, 2, 2, 3], &[2, 1, 4, 6]], 2),
        (&[&[1, 1, 2, 2], &[1, 3, 1, 1], &[1, 2, 6, 6]], 3),
        (&[&[1, 2, 3, 2], &[1, 1, 1, 2]], 1),
        (&[&[1, 2, 2, 2], &[1, 2, 4, 1]], 2), // different factors per axis (MXNet fails here)
    ];
    for (shapes, scale) in cases {
        let xs: Vec<NDArray> = shapes.iter().map(|s| rand(&mut rng, s)).collect();
        let (os, want) = upsample_ref(&xs, scale, false);
        for dt in [F64, F32] {
            let xd: Vec<NDArray> = xs.iter().map(|x| x.astype(dt)).collect();
            let y = call1("UpSampling", &xd, &up_params(scale as i64, "concat", xs.len()));
            let want_dt: Vec<f64> = want.iter().map(|&v| round_to(v, dt)).collect();
            check_arr(&format!("UpSampling concat {shapes:?} {dt}"), &y, &os, dt, &want_dt, 0.0, 0.0);
        }
        // Sum needs equal channel counts: give every input the first's.
        let c = shapes[0][1];
        let xs: Vec<NDArray> = shapes.iter().map(|s| rand(&mut rng, &[s[0], c, s[2], s[3]])).collect();
        let (os, want) = upsample_ref(&xs, scale, true);
        let y = call1("UpSampling", &xs, &up_params(scale as i64, "sum", xs.len()));
        check_arr(&format!("UpSampling sum {shapes:?}"), &y, &os, F64, &want, 1e-15, 1e-15);
    }
    // MXNet 1.9.1's own numbers: a 2x2 two-channel input and a 4x4 one, scale 2, summed.
    let a = f64s(&(0..8).map(f64::from).collect::<Vec<_>>(), &[1, 2, 2, 2]);
    let b = f64s(&(0..32).map(|v| f64::from(v) + 100.0).collect::<Vec<_>>(), &[1, 2, 4, 4]);
    let y = call1("UpSampling", &[a, b], &up_params(2, "sum", 2));
    assert_eq!(&y.to_f64_vec()[..8], &[100.0, 101.0, 103.0, 104.0, 104.0, 105.0, 107.0, 108.0]);
}

#[test]
fn upsampling_several_inputs_errors() {
    let z = |s: &[usize]| NDArray::zeros(s, F32);
    let run = |xs: &[NDArray], mode: &str, n: usize| call("UpSampling", xs, &up_params(2, mode, n));
    let r = run(&[z(&[1, 2, 2, 2]), z(&[1, 1, 3, 3])], "concat", 2);
    assert!(
        matches!(r, Err(Error::Shape(ref m)) if m.contains("UpSampling") && m.contains("height 3") && m.contains("(1, 1, 3, 3)")),
        "{r:?}"
    );
    let r = run(&[z(&[1, 2, 2, 2]), z(&[1, 1, 4, 4])], "sum", 2);
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("same number of channels")), "{r:?}");
    let r = run(&[z(&[1, 2, 2, 2]), z(&[2, 2, 4, 4])], "concat", 2);
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("batch size")), "{r:?}");
    let r = run(&[z(&[1, 2, 2, 2]), z(&[1, 2, 8, 8])], "concat", 2);
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("does not divide")), "{r:?}");
    let r = run(&[z(&[1, 2, 2, 2])], "concat", 2);
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("num_args=2")), "{r:?}");
    let r = run(&[z(&[1, 2, 2, 2]), z(&[1, 2, 2])], "concat", 2);
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("4-D")), "{r:?}");
    let r = call("UpSampling", &[z(&[1, 2, 2, 2]), NDArray::zeros(&[1, 2, 2, 2], F64)], &up_params(1, "sum", 2));
    assert!(matches!(r, Err(Error::DType(ref m)) if m.contains("arg1")), "{r:?}");
}

#[test]
fn upsampling_several_inputs_grad() {
    let mut rng = Rng::new(2902);
    let cases: [(&[&[usize]], i64, &str); 3] = [
        (&[&[1, 2, 2, 1], &[1, 1, 4, 2]], 2, "concat"),
        (&[&[1, 1, 1, 2], &[1, 1, 3, 6], &[1, 1, 1, 1]], 3, "sum"),
        (&[&[2, 1, 2, 2], &[2, 2, 1, 4]], 2, "concat"),
    ];
    for (shapes, scale, mode) in cases {
        let op = build("UpSampling", &up_params(scale, mode, shapes.len()));
        let xs: Vec<NDArray> = shapes.iter().map(|s| rand(&mut rng, s)).collect();
        check(&format!("UpSampling {mode} {shapes:?}"), &op, &xs, &mut rng, true);
    }
    // Hand-derived (MXNet 1.9.1 agrees): a 1x1 input summed into a 4x4 output gets the sum of its
    // channel of the output gradient.
    let op = build("UpSampling", &up_params(2, "sum", 2));
    let a = NDArray::zeros(&[1, 2, 2, 2], F64);
    let b = NDArray::zeros(&[1, 2, 1, 1], F64);
    let head = f64s(&(0..32).map(f64::from).collect::<Vec<_>>(), &[1, 2, 4, 4]);
    let g = eval_grad(op.as_ref(), &[a, b], &[head]).unwrap();
    assert_eq!(g[1].as_ref().unwrap().to_f64_vec(), vec![120.0, 376.0]);
    assert_eq!(g[0].as_ref().unwrap().to_f64_vec(), vec![10.0, 18.0, 42.0, 50.0, 74.0, 82.0, 106.0, 114.0]);
}

// --- box_encode / box_decode ------------------------------------------------------------------

fn center(c: &[f64]) -> [f64; 4] {
    [(c[0] + c[2]) / 2.0, (c[1] + c[3]) / 2.0, c[2] - c[0], c[3] - c[1]]
}

fn random_corners(rng: &mut Rng, n: usize) -> Vec<f64> {
    (0..n)
        .flat_map(|_| {
            let (x, y) = (rng.uniform(0.0, 1.0), rng.uniform(0.0, 1.0));
            [x, y, x + rng.uniform(0.1, 1.0), y + rng.uniform(0.1, 1.0)]
        })
        .collect()
}

fn box_encode_case(name: &'static str) {
    let mut rng = Rng::new(2903);
    let (b, n, m) = (2, 4, 3);
    let samples = [1.0, -1.0, 0.0, 0.6, 1.0, 1.0, 0.4, 1.0];
    let matches = [2.0, -1.0, 7.0, 0.0, 1.0, 0.0, -1.0, 2.0];
    let anchors = random_corners(&mut rng, b * n);
    let refs = random_corners(&mut rng, b * m);
    let (means, stds) = ([0.1, -0.2, 0.0, 0.3], [0.1, 0.2, 0.5, 2.0]);
    for shared_anchors in [false, true] {
        let a_rows = if shared_anchors { n } else { b * n };
        let mut want = vec![0.0; b * n * 4];
        let mut mask = vec![0.0; b * n * 4];
        for i in 0..b * n {
            if samples[i] <= 0.5 {
                continue;
            }
            let r = (i / n) * m + matches[i] as usize;
            let a = center(&anchors[(i % a_rows) * 4..][..4]);
            let t = center(&refs[r * 4..][..4]);
            let raw = [(t[0] - a[0]) / a[2], (t[1] - a[1]) / a[3], (t[2] / a[2]).ln(), (t[3] / a[3]).ln()];
            for d in 0..4 {
                want[i * 4 + d] = (raw[d] - means[d]) / stds[d];
                mask[i * 4 + d] = 1.0;
            }
        }
        for dt in [F64, F32] {
            let ins = [
                arr(&samples, &[b, n], dt),
                arr(&matches, &[b, n], dt),
                arr(&anchors[..a_rows * 4], &[a_rows / n, n, 4], dt),
                arr(&refs, &[b, m, 4], dt),
                arr(&means, &[4], dt),
                arr(&stds, &[4], dt),
            ];
            let out = call(name, &ins, &[]).unwrap();
            let (rtol, atol) = tol(dt);
            check_arr(&format!("box_encode {dt}"), &out[0], &[b, n, 4], dt, &want, rtol, atol);
            check_arr(&format!("box_encode mask {dt}"), &out[1], &[b, n, 4], dt, &mask, 0.0, 0.0);
        }
    }
    // MXNet 1.9.1: anchor (0, 0, 2, 2) matched to ref 0, (0, 0, 1, 1).
    let out = call(
        name,
        &[
            f64s(&[1.0], &[1, 1]),
            f64s(&[0.0], &[1, 1]),
            f64s(&[0.0, 0.0, 2.0, 2.0], &[1, 1, 4]),
            f64s(&[0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 5.0, 5.0], &[1, 2, 4]),
            f64s(&[0.0; 4], &[4]),
            f64s(&[1.0; 4], &[4]),
        ],
        &[],
    )
    .unwrap();
    assert_close("box_encode mxnet", &out[0].to_f64_vec(), &[-0.25, -0.25, -(2f64.ln()), -(2f64.ln())], 1e-12, 0.0);
    // Bad input: a positive sample matched outside refs, and shapes that do not fit.
    let z = |s: &[usize]| NDArray::zeros(s, F32);
    let mut bad = vec![z(&[1, 2]), z(&[1, 2]), z(&[1, 2, 4]), z(&[1, 3, 4]), z(&[4]), z(&[4])];
    bad[0] = f64s(&[1.0, 0.0], &[1, 2]).astype(F32);
    bad[1] = f64s(&[3.0, 0.0], &[1, 2]).astype(F32);
    let r = call(name, &bad, &[]);
    assert!(
        matches!(r, Err(Error::Index(ref m)) if m.contains("box_encode") && m.contains("matches[0, 0] = 3")),
        "{r:?}"
    );
    let shapes: [[&[usize]; 6]; 3] = [
        [&[2, 4], &[2, 3], &[2, 3, 4], &[2, 2, 4], &[4], &[4]],
        [&[2, 3], &[2, 3], &[2, 3, 4], &[1, 2, 4], &[4], &[4]],
        [&[2, 3], &[2, 3], &[2, 3, 4], &[2, 2, 4], &[3], &[4]],
    ];
    for s in shapes {
        let ins: Vec<NDArray> = s.iter().map(|s| z(s)).collect();
        let r = call(name, &ins, &[]);
        assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("box_encode") && m.contains(&fmt(s[0]))), "{r:?}");
    }
}

fn fmt(s: &[usize]) -> String {
    format!("({})", s.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", "))
}

fn box_decode_case(name: &'static str) {
    let mut rng = Rng::new(2904);
    let (b, n) = (2, 3);
    let data = rng.signed(b * n * 4, -1.0, 1.0);
    let anchors = random_corners(&mut rng, b * n);
    let stds = [0.1, 0.2, 0.3, 0.4];
    for format in ["corner", "center"] {
        for clip in [-1.0, 0.05] {
            for a_batch in [1, b] {
                let a_rows = a_batch * n;
                let want: Vec<f64> = (0..b * n)
                    .flat_map(|i| {
                        let a = &anchors[(i % a_rows) * 4..][..4];
                        let a = if format == "corner" { center(a) } else { [a[0], a[1], a[2], a[3]] };
                        let d = &data[i * 4..][..4];
                        let c = |v: f64| if clip > 0.0 { v.min(clip) } else { v };
                        let (x, y) = (d[0] * stds[0] * a[2] + a[0], d[1] * stds[1] * a[3] + a[1]);
                        let (w, h) = (c(d[2] * stds[2]).exp() * a[2] / 2.0, c(d[3] * stds[3]).exp() * a[3] / 2.0);
                        [x - w, y - h, x + w, y + h]
                    })
                    .collect();
                let ps = [
                    ("std0", float(stds[0])),
                    ("std1", float(stds[1])),
                    ("std2", float(stds[2])),
                    ("std3", float(stds[3])),
                    ("clip", float(clip)),
                    ("format", string(format)),
                ];
                for dt in [F64, F32] {
                    let ins = [arr(&data, &[b, n, 4], dt), arr(&anchors[..a_rows * 4], &[a_batch, n, 4], dt)];
                    let (rtol, atol) = tol(dt);
                    for (vn, x) in variants(&ins[0]) {
                        let y = call1(name, &[x, ins[1].clone()], &ps);
                        check_arr(
                            &format!("box_decode {format} clip {clip} {dt} {vn}"),
                            &y,
                            &[b, n, 4],
                            dt,
                            &want,
                            rtol,
                            atol,
                        );
                    }
                }
            }
        }
    }
    // MXNet 1.9.1: offsets (0, 0, 5, 5) on the centre anchor (1, 1, 2, 2), clip 2.
    let y = call1(
        name,
        &[f64s(&[0.0, 0.0, 5.0, 5.0], &[1, 1, 4]), f64s(&[1.0, 1.0, 2.0, 2.0], &[1, 1, 4])],
        &[("clip", float(2.0))],
    );
    let e = 2f64.exp();
    assert_close("box_decode mxnet", &y.to_f64_vec(), &[1.0 - e, 1.0 - e, 1.0 + e, 1.0 + e], 1e-12, 0.0);
    let z = |s: &[usize]| NDArray::zeros(s, F32);
    for (d, a) in [
        (&[2usize, 3, 4][..], &[3usize, 4][..]),
        (&[2, 3, 5], &[1, 3, 4]),
        (&[3, 4], &[1, 3, 4]),
        (&[2, 3, 4], &[1, 2, 4]),
    ] {
        let r = call(name, &[z(d), z(a)], &[]);
        assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("box_decode") && m.contains(&fmt(a))), "{r:?}");
    }
    let r = call(name, &[z(&[1, 1, 4]), NDArray::zeros(&[1, 1, 4], F64)], &[]);
    assert!(matches!(r, Err(Error::DType(ref m)) if m.contains("anchors")), "{r:?}");
}

// --- MultiBoxPrior ---------------------------------------------------------------------------

/// Anchors of an (h, w) map: per cell, each size with the first ratio, then each further ratio
/// with the first size.
fn prior_ref(
    h: usize,
    w: usize,
    sizes: &[f64],
    ratios: &[f64],
    steps: [f64; 2],
    offsets: [f64; 2],
    clip: bool,
) -> Vec<f64> {
    let step = |s: f64, n: usize| if s > 0.0 { s } else { 1.0 / n as f64 };
    let mut shapes: Vec<(f64, f64)> = sizes.iter().map(|&s| (s, ratios[0])).collect();
    shapes.extend(ratios[1..].iter().map(|&r| (sizes[0], r)));
    let mut out = Vec::new();
    for y in 0..h {
        for x in 0..w {
            let cy = (y as f64 + offsets[0]) * step(steps[0], h);
            let cx = (x as f64 + offsets[1]) * step(steps[1], w);
            for &(s, r) in &shapes {
                let (bw, bh) = (s * h as f64 / w as f64 * r.sqrt(), s / r.sqrt());
                for v in [cx - bw / 2.0, cy - bh / 2.0, cx + bw / 2.0, cy + bh / 2.0] {
                    out.push(if clip { v.clamp(0.0, 1.0) } else { v });
                }
            }
        }
    }
    out
}

fn floats(v: &[f64]) -> ferrograd::ops::AttrValue {
    ferrograd::ops::AttrValue::Str(format!("({})", v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ")))
}

/// Feature map shape, sizes, ratios, steps, offsets and clip of one MultiBoxPrior case.
type PriorCase = (&'static [usize], &'static [f64], &'static [f64], [f64; 2], [f64; 2], bool);

fn multibox_prior_case(name: &'static str) {
    let cases: [PriorCase; 4] = [
        (&[1, 3, 2, 3], &[0.5, 0.25], &[1.0, 2.0, 0.5], [-1.0, -1.0], [0.5, 0.5], false),
        (&[1, 3, 2, 3], &[0.5, 1.5], &[1.0], [0.3, 0.4], [0.2, 0.7], true),
        (&[2, 1, 1, 1], &[0.5], &[4.0], [-1.0, -1.0], [0.5, 0.5], false),
        (&[1, 1, 4, 2], &[0.3, 0.6, 0.9], &[2.0, 3.0], [0.25, -1.0], [0.0, 1.0], true),
    ];
    for (shape, sizes, ratios, steps, offsets, clip) in cases {
        let want = prior_ref(shape[2], shape[3], sizes, ratios, steps, offsets, clip);
        let ps = [
            ("sizes", floats(sizes)),
            ("ratios", floats(ratios)),
            ("steps", floats(&steps)),
            ("offsets", floats(&offsets)),
            ("clip", boolean(clip)),
        ];
        for dt in [F64, F32] {
            let y = call1(name, &[NDArray::zeros(shape, dt)], &ps);
            let (rtol, atol) = tol(dt);
            check_arr(
                &format!("MultiBoxPrior {shape:?} {sizes:?} {ratios:?}"),
                &y,
                &[1, want.len() / 4, 4],
                dt,
                &want,
                rtol,
                atol,
            );
        }
    }
    // MXNet 1.9.1 on a 2x3 map, sizes (0.5, 0.25), ratios (1, 2, 0.5): the first cell's boxes.
    let y = call1(
        name,
        &[NDArray::zeros(&[1, 3, 2, 3], F32)],
        &[("sizes", floats(&[0.5, 0.25])), ("ratios", floats(&[1.0, 2.0, 0.5]))],
    );
    let mx = [
        0.0,
        0.0,
        0.33333334,
        0.5,
        0.08333334,
        0.125,
        0.25,
        0.375,
        -0.06903559,
        0.07322331,
        0.40236893,
        0.4267767,
        0.04881554,
        -0.10355338,
        0.2845178,
        0.6035534,
    ];
    assert_close("MultiBoxPrior mxnet", &y.to_f64_vec()[..16], &mx, 1e-6, 1e-7);
    let z = NDArray::zeros(&[1, 1, 2, 2], F32);
    for (k, v) in
        [("sizes", floats(&[-1.0])), ("ratios", floats(&[0.0])), ("steps", floats(&[1.0])), ("offsets", floats(&[0.5]))]
    {
        let r = call(name, std::slice::from_ref(&z), &[(k, v)]);
        assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("MultiBoxPrior") && m.contains(k)), "{k}: {r:?}");
    }
    let r = call(name, &[NDArray::zeros(&[2, 3], F32)], &[]);
    assert!(matches!(r, Err(Error::Shape(ref m)) if m.contains("MultiBoxPrior") && m.contains("(2, 3)")), "{r:?}");
}

// --- MultiBoxDetection -----------------------------------------------------------------------

fn multibox_detection_case(name: &'static str) {
    // Four anchors: A0 and A1 overlap with IoU 1/3; A3's best class scores under the threshold.
    let anchors = [0.0, 0.0, 0.5, 1.0, 0.25, 0.0, 0.75, 1.0, 0.6, 0.6, 0.9, 0.9, 0.0, 0.0, 0.1, 0.1];
    // cls_prob (1, 3 classes, 4 anchors): background, class 0, class 1.
    let cls = [0.1, 0.2, 0.05, 0.995, 0.9, 0.8, 0.0, 0.005, 0.0, 0.0, 0.95, 0.0];
    let (a0, a1, a2) = (&anchors[0..4], &anchors[4..8], &anchors[8..12]);
    let row = |c: f64, s: f64, b: &[f64]| vec![c, s, b[0], b[1], b[2], b[3]];
    let none = vec![-1.0; 6];
    let cases: Vec<(Params, Vec<Vec<f64>>)> = vec![
        (vec![], vec![row(1.0, 0.95, a2), row(0.0, 0.9, a0), row(0.0, 0.8, a1), none.clone()]),
        (
            vec![("nms_threshold", float(0.3))],
            vec![row(1.0, 0.95, a2), row(0.0, 0.9, a0), row(-1.0, 0.8, a1), none.clone()],
        ),
        (
            vec![("nms_threshold", float(0.0))],
            vec![row(0.0, 0.9, a0), row(0.0, 0.8, a1), row(1.0, 0.95, a2), none.clone()],
        ),
        (vec![("nms_topk", int(1))], vec![row(1.0, 0.95, a2), row(-1.0, 0.9, a0), row(-1.0, 0.8, a1), none.clone()]),
        (
            vec![("threshold", float(0.85)), ("force_suppress", boolean(true))],
            vec![row(1.0, 0.95, a2), row(0.0, 0.9, a0), none.clone(), none.clone()],
        ),
        // Class 2 as the background: classes 0 and 1 keep their ids.
        (
            vec![("background_id", int(2)), ("nms_threshold", float(0.0))],
            vec![row(1.0, 0.9, a0), row(1.0, 0.8, a1), row(0.0, 0.05, a2), row(0.0, 0.995, &anchors[12..])],
        ),
    ];
    for (ps, want) in cases {
        let want: Vec<f64> = want.concat();
        for dt in [F64, F32] {
            let ins = [arr(&cls, &[1, 3, 4], dt), NDArray::zeros(&[1, 16], dt), arr(&anchors, &[1, 4, 4], dt)];
            let y = call1(name, &ins, &ps);
            let (rtol, atol) = tol(dt);
            check_arr(&format!("MultiBoxDetection {ps:?} {dt}"), &y, &[1, 4, 6], dt, &want, rtol, atol);
        }
    }
    // Offsets scaled by the variances, then clipped: anchor (0.2, 0.2, 0.6, 0.4), centre (0.4, 0.3).
    let loc = [1.0, -1.0, 2f64.ln() / 0.2, 0.0];
    let ins = [f64s(&[0.0, 1.0], &[1, 2, 1]), f64s(&loc, &[1, 4]), f64s(&[0.2, 0.2, 0.6, 0.4], &[1, 1, 4])];
    let y = call1(name, &ins, &[]);
    assert_close("MultiBoxDetection decode", &y.to_f64_vec(), &[0.0, 1.0, 0.04, 0.18, 0.84, 0.38], 1e-12, 1e-12);
    let loc = [0.0, 0.0, 10.0, 0.0];
    let y = call1(name, &[ins[0].clone(), f64s(&loc, &[1, 4]), ins[2].clone()], &[]);
    assert_close("MultiBoxDetection clip", &y.to_f64_vec()[2..], &[0.0, 0.2, 1.0, 0.4], 1e-12, 1e-12);
    let y = call1(name, &[ins[0].clone(), f64s(&loc, &[1, 4]), ins[2].clone()], &[("clip", boolean(false))]);
    assert!(y.to_f64_vec()[4] > 1.0, "no clip");
    // Bad input.
    let z = |s: &[usize]| NDArray::zeros(s, F32);
    for s in [
        [&[1usize, 2, 2][..], &[1, 8], &[1, 3, 4]],
        [&[1, 2, 2], &[1, 6], &[1, 2, 4]],
        [&[2, 2, 2], &[1, 8], &[1, 2, 4]],
    ] {
        let r = call(name, &[z(s[0]), z(s[1]), z(s[2])], &[]);
        assert!(
            matches!(r, Err(Error::Shape(ref m)) if m.contains("MultiBoxDetection") && m.contains(&fmt(s[1]))),
            "{r:?}"
        );
    }
    let r = call(name, &[z(&[1, 2, 2]), z(&[1, 8]), z(&[1, 2, 4])], &[("variances", floats(&[0.1, 0.2]))]);
    assert!(matches!(r, Err(Error::Value(ref m)) if m.contains("variances")), "{r:?}");
}

// --- MultiBoxTarget --------------------------------------------------------------------------

fn multibox_target_case(name: &'static str) {
    // Anchors: A0 matches box 0 well; A1 overlaps it a little; A2 is box 1's only (weak) overlap;
    // A3..A5 overlap nothing.
    let anchors = [
        0.1, 0.1, 0.4, 0.4, 0.2, 0.2, 0.5, 0.5, 0.6, 0.6, 0.8, 0.8, 0.0, 0.8, 0.1, 0.9, 0.8, 0.0, 0.9, 0.1, 0.45, 0.0,
        0.55, 0.05,
    ];
    let label = [1.0, 0.1, 0.1, 0.38, 0.42, 0.0, 0.7, 0.7, 1.0, 1.0, -1.0, -1.0, -1.0, -1.0, -1.0];
    // cls_pred (1, 2 classes, 6 anchors): background logits vs class logits.
    let cls = [0.0, 0.0, 0.0, 3.0, -1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
    let enc = |a: &[f64], g: &[f64], v: [f64; 4]| -> Vec<f64> {
        let (aw, ah, gw, gh) = (a[2] - a[0], a[3] - a[1], g[2] - g[0], g[3] - g[1]);
        vec![
            ((g[0] + g[2]) - (a[0] + a[2])) / 2.0 / aw / v[0],
            ((g[1] + g[3]) - (a[1] + a[3])) / 2.0 / ah / v[1],
            (gw / aw).ln() / v[2],
            (gh / ah).ln() / v[3],
        ]
    };
    let v = [0.1, 0.1, 0.2, 0.2];
    let mut loc = enc(&anchors[0..4], &label[1..5], v);
    loc.extend([0.0; 4]);
    loc.extend(enc(&anchors[8..12], &label[6..10], v));
    loc.extend([0.0; 12]);
    let mask: Vec<f64> = [1.0, 0.0, 1.0, 0.0, 0.0, 0.0].iter().flat_map(|&m| [m; 4]).collect();
    // Softmax background probabilities: A3 (bg logit 3) is the easiest negative, A4 (-1) the hardest.
    let cases: Vec<(Params, [f64; 6])> = vec![
        (vec![], [2.0, 0.0, 1.0, 0.0, 0.0, 0.0]),
        (vec![("overlap_threshold", float(0.05))], [2.0, 2.0, 1.0, 0.0, 0.0, 0.0]),
        (vec![("negative_mining_ratio", float(1.0))], [2.0, 0.0, 1.0, -1.0, 0.0, -1.0]),
        (
            vec![
                ("negative_mining_ratio", float(0.5)),
                ("ignore_label", float(-2.0)),
                ("negative_mining_thresh", float(0.1)),
            ],
            [2.0, -2.0, 1.0, -2.0, 0.0, -2.0],
        ),
        (
            vec![("negative_mining_ratio", float(0.5)), ("minimum_negative_samples", int(3))],
            [2.0, 0.0, 1.0, -1.0, 0.0, 0.0],
        ),
    ];
    for (ps, want_cls) in cases {
        for dt in [F64, F32] {
            let ins = [arr(&anchors, &[1, 6, 4], dt), arr(&label, &[1, 3, 5], dt), arr(&cls, &[1, 2, 6], dt)];
            let out = call(name, &ins, &ps).unwrap();
            let (rtol, atol) = tol(dt);
            check_arr(&format!("MultiBoxTarget cls {ps:?} {dt}"), &out[2], &[1, 6], dt, &want_cls, 0.0, 0.0);
            if ps.is_empty() {
                check_arr(&format!("MultiBoxTarget loc {dt}"), &out[0], &[1, 24], dt, &loc, rtol, atol);
                check_arr(&format!("MultiBoxTarget mask {dt}"), &out[1], &[1, 24], dt, &mask, 0.0, 0.0);
            }
        }
    }
    // Variances divide the targets.
    let ins = [f64s(&anchors, &[1, 6, 4]), f64s(&label, &[1, 3, 5]), f64s(&cls, &[1, 2, 6])];
    let out = call(name, &ins, &[("variances", floats(&[1.0, 2.0, 0.5, 0.25]))]).unwrap();
    assert_close(
        "MultiBoxTarget variances",
        &out[0].to_f64_vec()[..4],
        &enc(&anchors[0..4], &label[1..5], [1.0, 2.0, 0.5, 0.25]),
        1e-12,
        1e-12,
    );
    // MXNet 1.9.1: anchor (0.1, 0.1, 0.4, 0.4) against box (0.1, 0.1, 0.38, 0.42).
    assert_close("MultiBoxTarget mxnet", &out[0].to_f64_vec()[..1], &[-0.0333333], 1e-5, 0.0);
    let z = |s: &[usize]| NDArray::zeros(s, F32);
    for s in [
        [&[2usize, 3, 4][..], &[1, 2, 5], &[1, 2, 3]],
        [&[1, 3, 4], &[1, 2, 4], &[1, 2, 3]],
        [&[1, 3, 4], &[1, 2, 5], &[2, 2, 3]],
    ] {
        let r = call(name, &[z(s[0]), z(s[1]), z(s[2])], &[]);
        assert!(
            matches!(r, Err(Error::Shape(ref m)) if m.contains("MultiBoxTarget") && m.contains(&fmt(s[1]))),
            "{r:?}"
        );
    }
}

pub fn detect(name: &'static str) {
    match name {
        "_contrib_box_encode" => box_encode_case(name),
        "_contrib_box_decode" => box_decode_case(name),
        "_contrib_MultiBoxPrior" => multibox_prior_case(name),
        "_contrib_MultiBoxDetection" => multibox_detection_case(name),
        "_contrib_MultiBoxTarget" => multibox_target_case(name),
        other => panic!("no detection case for {other}"),
    }
}

/// MXNet's gradients of these ops are zero: ours are too (no gradient flows to any input).
pub fn detect_zero_grad(name: &'static str) {
    let mut rng = Rng::new(2905);
    let inputs: Vec<NDArray> = match name {
        "_contrib_box_encode" => vec![
            f64s(&[1.0, 0.0], &[1, 2]),
            f64s(&[0.0, 0.0], &[1, 2]),
            f64s(&random_corners(&mut rng, 2), &[1, 2, 4]),
            f64s(&random_corners(&mut rng, 1), &[1, 1, 4]),
            f64s(&[0.0; 4], &[4]),
            f64s(&[1.0; 4], &[4]),
        ],
        "_contrib_box_decode" => vec![rand(&mut rng, &[1, 2, 4]), f64s(&random_corners(&mut rng, 2), &[1, 2, 4])],
        "_contrib_MultiBoxPrior" => vec![rand(&mut rng, &[2, 1, 2, 3])],
        "_contrib_MultiBoxTarget" => vec![
            f64s(&random_corners(&mut rng, 3), &[1, 3, 4]),
            f64s(&[0.0, 0.1, 0.1, 0.5, 0.5, -1.0, -1.0, -1.0, -1.0, -1.0], &[1, 2, 5]),
            rand(&mut rng, &[1, 2, 3]),
        ],
        "_contrib_MultiBoxDetection" => {
            vec![
                f64s(&rng.vec(6, 0.0, 1.0), &[1, 2, 3]),
                rand(&mut rng, &[1, 12]),
                f64s(&random_corners(&mut rng, 3), &[1, 3, 4]),
            ]
        }
        other => panic!("no detection gradient case for {other}"),
    };
    let op = build(name, &[]);
    let outs = ferrograd::ops::run(op.as_ref(), &Default::default(), &inputs).unwrap();
    let heads: Vec<NDArray> = outs.iter().map(|o| f64s(&vec![1.0; o.size()], o.shape())).collect();
    let g = eval_grad(op.as_ref(), &inputs, &heads).unwrap();
    assert!(g.iter().all(|g| g.is_none()), "{name}: zero gradients");
}
