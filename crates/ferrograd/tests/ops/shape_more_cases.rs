//! Joining/splitting/repeating and index-map ops (`Concat`, `stack`, `SliceChannel`, `add_n`,
//! `SwapAxis`, `tile`, `repeat`, `reverse`, `broadcast_like`, `broadcast_axis`, `slice_like`,
//! `pick`, `batch_take`, `one_hot`, `Pad`, `diag`) against naive float64 loops, plus gradient
//! checks (first and second order) and bad inputs.

use ferrograd::call;
use ferrograd::ops::AttrValue;
use ferrograd::DType::{self, F32, F64, I32, I64};
use ferrograd::{Error, NDArray};

use crate::common::*;
use crate::gradcheck::{build, check};

fn iota(shape: &[usize], dt: DType) -> NDArray {
    arr(&(0..numel(shape)).map(|i| i as f64 * 0.5 - 1.0).collect::<Vec<_>>(), shape, dt)
}

fn rand(rng: &mut Rng, shape: &[usize]) -> NDArray {
    f64s(&rng.vec(numel(shape), -2.0, 2.0), shape)
}

/// Runs `name` on every combination of input variants (contiguous, strided, transposed).
fn on_variants(inputs: &[NDArray], f: &mut dyn FnMut(&str, Vec<NDArray>)) {
    let mut combos: Vec<(String, Vec<NDArray>)> = vec![(String::new(), vec![])];
    for x in inputs {
        let mut next = Vec::new();
        for (tag, xs) in &combos {
            for (vn, v) in variants(x) {
                let mut ys = xs.clone();
                ys.push(v);
                next.push((format!("{tag}{vn} "), ys));
            }
        }
        combos = next;
        combos.truncate(6);
    }
    for (tag, xs) in combos {
        f(&tag, xs);
    }
}

fn concat_ref(parts: &[NDArray], axis: usize) -> (Vec<usize>, Vec<f64>) {
    let mut shape = parts[0].shape().to_vec();
    shape[axis] = parts.iter().map(|x| x.shape()[axis]).sum();
    let vals: Vec<Vec<f64>> = parts.iter().map(|x| x.to_f64_vec()).collect();
    let out = (0..numel(&shape))
        .map(|o| {
            let mut idx = unravel(o, &shape);
            let mut k = 0;
            while idx[axis] >= parts[k].shape()[axis] {
                idx[axis] -= parts[k].shape()[axis];
                k += 1;
            }
            vals[k][ravel(&idx, parts[k].shape())]
        })
        .collect();
    (shape, out)
}

pub fn concat(name: &'static str) {
    let cases: &[(&[&[usize]], i64)] = &[
        (&[&[2, 3], &[2, 0], &[2, 4]], 1),
        (&[&[1, 3], &[2, 3]], 0),
        (&[&[2, 2, 3], &[2, 1, 3], &[2, 2, 3]], -2),
        (&[&[3]], 0),
        (&[&[0, 2], &[0, 3]], 1),
    ];
    for &(shapes, dim) in cases {
        for dt in [F64, F32, I32] {
            let xs: Vec<NDArray> = shapes
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let v: Vec<f64> = (0..numel(s)).map(|j| (i * 100 + j) as f64).collect();
                    arr(&v, s, dt)
                })
                .collect();
            let axis = if dim < 0 { (dim + shapes[0].len() as i64) as usize } else { dim as usize };
            let (ws, want) = concat_ref(&xs, axis);
            on_variants(&xs, &mut |tag, vs| {
                let y = call1(name, &vs, &[("dim", int(dim)), ("num_args", int(vs.len() as i64))]);
                check_arr(&format!("{name} {shapes:?} dim={dim} {dt} {tag}"), &y, &ws, dt, &want, 0.0, 0.0);
            });
        }
    }
    // MXNet's default dim is 1.
    let y = call1(name, &[iota(&[2, 1], F64), iota(&[2, 2], F64)], &[]);
    assert_eq!(y.shape(), &[2, 3]);
    // Large enough to take the parallel path.
    let (a, b) = (iota(&[300, 301], F32), iota(&[300, 200], F32));
    let (ws, want) = concat_ref(&[a.clone(), b.clone()], 1);
    check_arr("Concat large", &call1(name, &[a, b], &[]), &ws, F32, &want, 0.0, 0.0);
}

pub fn concat_grad(name: &'static str) {
    let mut rng = Rng::new(7);
    let op = build(name, &[("dim", int(1))]);
    let xs = vec![rand(&mut rng, &[2, 2]), rand(&mut rng, &[2, 0]), rand(&mut rng, &[2, 3])];
    check("Concat", &op, &xs, &mut rng, true);
    let op = build(name, &[("dim", int(0))]);
    check("Concat dim 0", &op, &[rand(&mut rng, &[1, 3]), rand(&mut rng, &[2, 3])], &mut rng, true);
}

pub fn stack(name: &'static str) {
    for (shape, axis) in [(&[2usize, 3][..], 0i64), (&[2, 3], 1), (&[2, 3], -1), (&[], 0), (&[0, 2], 1)] {
        let xs: Vec<NDArray> = (0..3)
            .map(|i| arr(&(0..numel(shape)).map(|j| (i * 10 + j) as f64).collect::<Vec<_>>(), shape, F64))
            .collect();
        let nd = shape.len() as i64 + 1;
        let ax = ((axis + nd) % nd) as usize;
        let expanded: Vec<NDArray> = xs.iter().map(|x| x.expand_dims(ax as i64).unwrap()).collect();
        let (ws, want) = concat_ref(&expanded, ax);
        on_variants(&xs, &mut |tag, vs| {
            let y = call1(name, &vs, &[("axis", int(axis))]);
            check_arr(&format!("stack {shape:?} axis={axis} {tag}"), &y, &ws, F64, &want, 0.0, 0.0);
        });
    }
}

pub fn stack_grad(name: &'static str) {
    let mut rng = Rng::new(8);
    for axis in [0i64, 2] {
        let op = build(name, &[("axis", int(axis))]);
        check("stack", &op, &[rand(&mut rng, &[2, 3]), rand(&mut rng, &[2, 3])], &mut rng, true);
    }
}

pub fn split(name: &'static str) {
    for (shape, n, axis, squeeze) in [
        (&[2usize, 6][..], 3usize, 1i64, false),
        (&[4, 3], 2, 0, false),
        (&[2, 3, 2], 3, -2, true),
        (&[0, 4], 2, 1, false),
    ] {
        let x = iota(shape, F64);
        let ax = ((axis + shape.len() as i64) % shape.len() as i64) as usize;
        for (vn, xv) in variants(&x) {
            let ys = call(
                name,
                &[xv],
                &[("num_outputs", int(n as i64)), ("axis", int(axis)), ("squeeze_axis", boolean(squeeze))],
            )
            .unwrap();
            assert_eq!(ys.len(), n);
            let len = shape[ax] / n;
            for (k, y) in ys.iter().enumerate() {
                let mut ps = shape.to_vec();
                ps[ax] = len;
                let want: Vec<f64> = (0..numel(&ps))
                    .map(|o| {
                        let mut idx = unravel(o, &ps);
                        idx[ax] += k * len;
                        x.to_f64_vec()[ravel(&idx, shape)]
                    })
                    .collect();
                if squeeze {
                    ps.remove(ax);
                }
                check_arr(&format!("split {shape:?} {n} axis={axis} part {k} {vn}"), y, &ps, F64, &want, 0.0, 0.0);
            }
        }
    }
    // Outputs are copies: writing one leaves the input alone.
    let x = iota(&[2, 2], F64);
    let mut ys = call(name, std::slice::from_ref(&x), &[("num_outputs", int(2))]).unwrap();
    ys[0].fill_scalar(9.0);
    assert_eq!(x.to_f64_vec(), iota(&[2, 2], F64).to_f64_vec());
}

pub fn split_grad(name: &'static str) {
    let mut rng = Rng::new(9);
    let op = build(name, &[("num_outputs", int(2)), ("axis", int(1))]);
    check("split", &op, &[rand(&mut rng, &[2, 4])], &mut rng, true);
    let op = build(name, &[("num_outputs", int(3)), ("axis", int(0)), ("squeeze_axis", boolean(true))]);
    check("split squeeze", &op, &[rand(&mut rng, &[3, 2])], &mut rng, true);
}

pub fn add_n(name: &'static str) {
    for shape in [&[2usize, 3][..], &[], &[0, 4], &[5]] {
        for dt in [F64, F32, I64] {
            let xs: Vec<NDArray> = (0..3)
                .map(|i| arr(&(0..numel(shape)).map(|j| (i * 7 + j) as f64).collect::<Vec<_>>(), shape, dt))
                .collect();
            let want: Vec<f64> = (0..numel(shape)).map(|j| (0..3).map(|i| (i * 7 + j) as f64).sum()).collect();
            on_variants(&xs, &mut |tag, vs| {
                check_arr(&format!("add_n {shape:?} {dt} {tag}"), &call1(name, &vs, &[]), shape, dt, &want, 0.0, 0.0);
            });
        }
    }
    let x = iota(&[400, 400], F32);
    let y = call1(name, &[x.clone(), x.clone()], &[]);
    let want: Vec<f64> = x.to_f64_vec().iter().map(|v| 2.0 * v).collect();
    check_arr("add_n large", &y, &[400, 400], F32, &want, 0.0, 0.0);
}

pub fn add_n_grad(name: &'static str) {
    let mut rng = Rng::new(10);
    let op = build(name, &[]);
    check("add_n", &op, &[rand(&mut rng, &[2, 3]), rand(&mut rng, &[2, 3]), rand(&mut rng, &[2, 3])], &mut rng, true);
}

pub fn swapaxis(name: &'static str) {
    for (shape, d1, d2) in [(&[2usize, 3, 4][..], 0i64, 2i64), (&[2, 3], 1, 0), (&[2, 3], -1, -1), (&[0, 3], 0, 1)] {
        let x = iota(shape, F64);
        let nd = shape.len() as i64;
        let (a, b) = (((d1 + nd) % nd) as usize, ((d2 + nd) % nd) as usize);
        let mut ws = shape.to_vec();
        ws.swap(a, b);
        let want: Vec<f64> = (0..numel(&ws))
            .map(|o| {
                let mut idx = unravel(o, &ws);
                idx.swap(a, b);
                x.to_f64_vec()[ravel(&idx, shape)]
            })
            .collect();
        for (vn, xv) in variants(&x) {
            let y = call1(name, &[xv], &[("dim1", int(d1)), ("dim2", int(d2))]);
            check_arr(&format!("SwapAxis {shape:?} {d1} {d2} {vn}"), &y, &ws, F64, &want, 0.0, 0.0);
        }
    }
}

pub fn swapaxis_grad(name: &'static str) {
    let mut rng = Rng::new(11);
    let op = build(name, &[("dim1", int(0)), ("dim2", int(2))]);
    check("SwapAxis", &op, &[rand(&mut rng, &[2, 3, 2])], &mut rng, true);
}

pub fn tile(name: &'static str) {
    for (shape, reps, ws) in [
        (&[2usize, 3][..], &[2i64, 2][..], &[4usize, 6][..]),
        (&[2, 3], &[3], &[2, 9]),
        (&[3], &[2, 2], &[2, 6]),
        (&[], &[3], &[3]),
        (&[2, 0], &[2, 2], &[4, 0]),
        (&[2, 3], &[0, 1], &[0, 3]),
    ] {
        let x = iota(shape, F64);
        let n = ws.len();
        let xs: Vec<usize> = std::iter::repeat_n(1, n - shape.len()).chain(shape.iter().copied()).collect();
        let want: Vec<f64> = (0..numel(ws))
            .map(|o| {
                let idx: Vec<usize> = unravel(o, ws).iter().zip(&xs).map(|(&i, &d)| i % d).collect();
                x.to_f64_vec()[ravel(&idx, &xs)]
            })
            .collect();
        for (vn, xv) in variants(&x) {
            let y = call1(name, &[xv], &[("reps", tuple(reps))]);
            check_arr(&format!("tile {shape:?} {reps:?} {vn}"), &y, ws, F64, &want, 0.0, 0.0);
        }
    }
}

pub fn tile_grad(name: &'static str) {
    let mut rng = Rng::new(12);
    check("tile", &build(name, &[("reps", tuple(&[2, 3]))]), &[rand(&mut rng, &[2, 2])], &mut rng, true);
    check("tile pad", &build(name, &[("reps", tuple(&[2, 1, 2]))]), &[rand(&mut rng, &[3])], &mut rng, true);
}

pub fn repeat(name: &'static str) {
    for (shape, r, axis) in [
        (&[2usize, 3][..], 2usize, Some(1i64)),
        (&[2, 3], 3, Some(0)),
        (&[2, 3], 2, None),
        (&[2, 3], 2, Some(-1)),
        (&[0, 2], 2, Some(1)),
        (&[3], 0, Some(0)),
    ] {
        let x = iota(shape, F64);
        let (src, ax): (Vec<usize>, usize) = match axis {
            None => (vec![numel(shape)], 0),
            Some(a) => (shape.to_vec(), ((a + shape.len() as i64) % shape.len() as i64) as usize),
        };
        let mut ws = src.clone();
        ws[ax] *= r;
        let want: Vec<f64> = (0..numel(&ws))
            .map(|o| {
                let mut idx = unravel(o, &ws);
                idx[ax] /= r;
                x.to_f64_vec()[ravel(&idx, &src)]
            })
            .collect();
        for (vn, xv) in variants(&x) {
            let mut ps: Params = vec![("repeats", int(r as i64))];
            if let Some(a) = axis {
                ps.push(("axis", int(a)));
            }
            let y = call1(name, &[xv], &ps);
            check_arr(&format!("repeat {shape:?} {r} {axis:?} {vn}"), &y, &ws, F64, &want, 0.0, 0.0);
        }
    }
}

pub fn repeat_grad(name: &'static str) {
    let mut rng = Rng::new(13);
    check("repeat", &build(name, &[("repeats", int(2)), ("axis", int(0))]), &[rand(&mut rng, &[2, 3])], &mut rng, true);
    check("repeat flat", &build(name, &[("repeats", int(3))]), &[rand(&mut rng, &[2, 2])], &mut rng, true);
}

pub fn reverse(name: &'static str) {
    for (shape, axes) in [(&[2usize, 3][..], &[0i64][..]), (&[2, 3, 2], &[1, -1]), (&[4], &[0]), (&[0, 3], &[1])] {
        let x = iota(shape, F64);
        let nd = shape.len() as i64;
        let ax: Vec<usize> = axes.iter().map(|&a| ((a + nd) % nd) as usize).collect();
        let want: Vec<f64> = (0..numel(shape))
            .map(|o| {
                let mut idx = unravel(o, shape);
                for &a in &ax {
                    idx[a] = shape[a] - 1 - idx[a];
                }
                x.to_f64_vec()[ravel(&idx, shape)]
            })
            .collect();
        for (vn, xv) in variants(&x) {
            let y = call1(name, &[xv], &[("axis", tuple(axes))]);
            check_arr(&format!("reverse {shape:?} {axes:?} {vn}"), &y, shape, F64, &want, 0.0, 0.0);
        }
    }
}

pub fn reverse_grad(name: &'static str) {
    let mut rng = Rng::new(14);
    check("reverse", &build(name, &[("axis", tuple(&[0, 1]))]), &[rand(&mut rng, &[2, 3])], &mut rng, true);
}

fn bcast_ref(x: &NDArray, shape: &[usize]) -> Vec<f64> {
    let v = x.to_f64_vec();
    (0..numel(shape)).map(|o| v[bcast_src(&unravel(o, shape), x.shape())]).collect()
}

/// (lhs shape, rhs shape, (lhs_axes, rhs_axes), expected shape).
type LikeCase = (&'static [usize], &'static [usize], Option<(&'static [i64], &'static [i64])>, &'static [usize]);

pub fn broadcast_like(name: &'static str) {
    let cases: &[LikeCase] = &[
        (&[2, 1, 3], &[2, 4, 3], None, &[2, 4, 3]),
        (&[3], &[2, 3], None, &[2, 3]),
        (&[1, 3], &[5, 0, 7], Some((&[0], &[0])), &[5, 3]),
        (&[1, 1], &[4, 2], Some((&[0, 1], &[1, 0])), &[2, 4]),
        (&[1, 2], &[0, 2], None, &[0, 2]),
    ];
    for &(ls, rs, axes, ws) in cases {
        let x = iota(ls, F64);
        let like = NDArray::zeros(rs, F32);
        let mut ps: Params = vec![];
        if let Some((a, b)) = axes {
            ps = vec![("lhs_axes", tuple(a)), ("rhs_axes", tuple(b))];
        }
        for (vn, xv) in variants(&x) {
            let y = call1(name, &[xv, like.clone()], &ps);
            check_arr(&format!("broadcast_like {ls:?} {rs:?} {vn}"), &y, ws, F64, &bcast_ref(&x, ws), 0.0, 0.0);
        }
    }
}

pub fn broadcast_like_grad(name: &'static str) {
    let mut rng = Rng::new(15);
    let op = build(name, &[]);
    check("broadcast_like", &op, &[rand(&mut rng, &[2, 1]), rand(&mut rng, &[2, 3])], &mut rng, true);
    let op = build(name, &[("lhs_axes", tuple(&[0])), ("rhs_axes", tuple(&[1]))]);
    check("broadcast_like axes", &op, &[rand(&mut rng, &[1, 2]), rand(&mut rng, &[2, 3])], &mut rng, true);
}

pub fn broadcast_axis(name: &'static str) {
    for (shape, axes, sizes, ws) in [
        (&[1usize, 3][..], &[0i64][..], &[4i64][..], &[4usize, 3][..]),
        (&[2, 1, 1], &[1, 2], &[3, 2], &[2, 3, 2]),
        (&[2, 1], &[-1], &[0], &[2, 0]),
        (&[2, 3], &[1], &[3], &[2, 3]),
    ] {
        let x = iota(shape, F64);
        for (vn, xv) in variants(&x) {
            let y = call1(name, &[xv], &[("axis", tuple(axes)), ("size", tuple(sizes))]);
            check_arr(&format!("broadcast_axis {shape:?} {vn}"), &y, ws, F64, &bcast_ref(&x, ws), 0.0, 0.0);
        }
    }
}

pub fn broadcast_axis_grad(name: &'static str) {
    let mut rng = Rng::new(16);
    let op = build(name, &[("axis", tuple(&[0, 2])), ("size", tuple(&[3, 2]))]);
    check("broadcast_axis", &op, &[rand(&mut rng, &[1, 2, 1])], &mut rng, true);
}

pub fn slice_like(name: &'static str) {
    for (ds, ls, axes, ws) in [
        (&[3usize, 4][..], &[2usize, 3][..], &[][..], &[2usize, 3][..]),
        (&[3, 4, 2], &[1, 2], &[1i64][..], &[3, 2, 2]),
        (&[3, 4], &[5, 0], &[-1], &[3, 0]),
        (&[3, 4], &[3, 4], &[], &[3, 4]),
    ] {
        let x = iota(ds, F64);
        let like = NDArray::zeros(ls, I32);
        let want: Vec<f64> = (0..numel(ws)).map(|o| x.to_f64_vec()[ravel(&unravel(o, ws), ds)]).collect();
        for (vn, xv) in variants(&x) {
            let y = call1(name, &[xv, like.clone()], &[("axes", tuple(axes))]);
            check_arr(&format!("slice_like {ds:?} {ls:?} {axes:?} {vn}"), &y, ws, F64, &want, 0.0, 0.0);
        }
    }
}

pub fn slice_like_grad(name: &'static str) {
    let mut rng = Rng::new(17);
    let op = build(name, &[("axes", tuple(&[0]))]);
    check("slice_like", &op, &[rand(&mut rng, &[3, 2]), rand(&mut rng, &[2, 5])], &mut rng, true);
}

fn resolve(i: f64, n: usize, mode: &str) -> usize {
    let i = i.trunc() as i64;
    (if mode == "wrap" { i.rem_euclid(n as i64) } else { i.clamp(0, n as i64 - 1) }) as usize
}

pub fn pick(name: &'static str) {
    let x = iota(&[3, 4], F64);
    let xv = x.to_f64_vec();
    for mode in ["clip", "wrap"] {
        for keepdims in [false, true] {
            // axis 1 (also as -1): one index per row, including out-of-range ones.
            let ind = [1.0, -1.0, 6.0];
            for axis in [1i64, -1] {
                for idt in [F32, I32, I64] {
                    for (vn, xi) in variants(&x) {
                        let y = call1(
                            name,
                            &[xi, arr(&ind, &[3], idt)],
                            &[("axis", int(axis)), ("mode", string(mode)), ("keepdims", boolean(keepdims))],
                        );
                        let want: Vec<f64> = (0..3).map(|r| xv[r * 4 + resolve(ind[r], 4, mode)]).collect();
                        let ws: &[usize] = if keepdims { &[3, 1] } else { &[3] };
                        check_arr(&format!("pick axis={axis} {mode} {idt} {vn}"), &y, ws, F64, &want, 0.0, 0.0);
                    }
                }
            }
            // axis 0 with an index already shaped (1, 4).
            let ind0 = [0.0, 2.0, 5.0, -4.0];
            let y = call1(
                name,
                &[x.clone(), arr(&ind0, &[1, 4], I64)],
                &[("axis", int(0)), ("mode", string(mode)), ("keepdims", boolean(keepdims))],
            );
            let want: Vec<f64> = (0..4).map(|c| xv[resolve(ind0[c], 3, mode) * 4 + c]).collect();
            let ws: &[usize] = if keepdims { &[1, 4] } else { &[4] };
            check_arr(&format!("pick axis=0 {mode}"), &y, ws, F64, &want, 0.0, 0.0);
        }
    }
    // Empty lanes.
    let y = call1(name, &[NDArray::zeros(&[0, 3], F64), NDArray::zeros(&[0], I32)], &[]);
    assert_eq!(y.shape(), &[0]);
}

pub fn pick_grad(name: &'static str) {
    let mut rng = Rng::new(18);
    let op = build(name, &[("axis", int(1))]);
    check("pick", &op, &[rand(&mut rng, &[3, 4]), arr(&[1.0, 3.0, 1.0], &[3], I64)], &mut rng, true);
    let op = build(name, &[("axis", int(0)), ("keepdims", boolean(true)), ("mode", string("wrap"))]);
    check("pick wrap", &op, &[rand(&mut rng, &[3, 2]), arr(&[-1.0, 4.0], &[1, 2], I32)], &mut rng, true);
}

pub fn batch_take(name: &'static str) {
    let x = iota(&[3, 4], F64);
    let xv = x.to_f64_vec();
    let ind = [2.0, 7.0, -3.0];
    for idt in [I32, I64, F32] {
        for (vn, xi) in variants(&x) {
            let y = call1(name, &[xi, arr(&ind, &[3], idt)], &[]);
            let want: Vec<f64> = (0..3).map(|r| xv[r * 4 + resolve(ind[r], 4, "clip")]).collect();
            check_arr(&format!("batch_take {idt} {vn}"), &y, &[3], F64, &want, 0.0, 0.0);
        }
    }
}

pub fn batch_take_grad(name: &'static str) {
    let mut rng = Rng::new(19);
    check(
        "batch_take",
        &build(name, &[]),
        &[rand(&mut rng, &[3, 2]), arr(&[1.0, 0.0, 1.0], &[3], I64)],
        &mut rng,
        true,
    );
}

pub fn one_hot(name: &'static str) {
    let ind = [1.0, 0.0, 3.0, -1.0, 2.0, 2.0];
    for (ishape, dt) in [(&[6usize][..], F32), (&[2, 3], F64), (&[3, 2], I32)] {
        for idt in [F32, I64] {
            let idx = arr(&ind, ishape, idt);
            let y = call1(
                name,
                &[idx],
                &[
                    ("depth", int(3)),
                    ("on_value", float(5.0)),
                    ("off_value", float(-1.0)),
                    ("dtype", string(dt.name())),
                ],
            );
            let want: Vec<f64> =
                ind.iter().flat_map(|&i| (0..3).map(move |c| if i as i64 == c { 5.0 } else { -1.0 })).collect();
            let mut ws = ishape.to_vec();
            ws.push(3);
            check_arr(&format!("one_hot {ishape:?} {dt}"), &y, &ws, dt, &want, 0.0, 0.0);
        }
    }
    let y = call1(name, &[NDArray::zeros(&[0], I32)], &[("depth", int(4))]);
    check_arr("one_hot empty", &y, &[0, 4], F32, &[], 0.0, 0.0);
    let y = call1(name, &[arr(&[1.0], &[], I32)], &[("depth", int(2))]);
    check_arr("one_hot 0-d", &y, &[2], F32, &[0.0, 1.0], 0.0, 0.0);
}

fn pad_ref(x: &NDArray, w: &[usize], mode: &str, value: f64) -> (Vec<usize>, Vec<f64>) {
    let s = x.shape();
    let os: Vec<usize> = s.iter().enumerate().map(|(d, &n)| n + w[2 * d] + w[2 * d + 1]).collect();
    let v = x.to_f64_vec();
    let vals = (0..numel(&os))
        .map(|o| {
            let oi = unravel(o, &os);
            let mut si = Vec::new();
            for (d, &i) in oi.iter().enumerate() {
                let (p, n) = (i as i64 - w[2 * d] as i64, s[d] as i64);
                let q = if (0..n).contains(&p) {
                    p
                } else {
                    match mode {
                        "constant" => return value,
                        "edge" => p.clamp(0, n - 1),
                        _ => {
                            if p < 0 {
                                -p
                            } else {
                                2 * (n - 1) - p
                            }
                        }
                    }
                };
                si.push(q as usize);
            }
            v[ravel(&si, s)]
        })
        .collect();
    (os, vals)
}

pub fn pad(name: &'static str) {
    let cases: &[(&[usize], &[i64])] = &[
        (&[1, 2, 3, 3], &[0, 0, 0, 0, 1, 2, 2, 1]),
        (&[2, 3], &[1, 1, 2, 0]),
        (&[4], &[3, 2]),
        (&[1, 1, 2, 3, 3], &[0, 0, 0, 0, 1, 1, 2, 2, 0, 1]),
    ];
    for &(shape, w) in cases {
        let x = iota(shape, F64);
        let wu: Vec<usize> = w.iter().map(|&v| v as usize).collect();
        for mode in ["constant", "edge", "reflect"] {
            let (ws, want) = pad_ref(&x, &wu, mode, 2.5);
            for (vn, xv) in variants(&x) {
                let y = call1(
                    name,
                    &[xv],
                    &[("mode", string(mode)), ("pad_width", tuple(w)), ("constant_value", float(2.5))],
                );
                check_arr(&format!("Pad {shape:?} {mode} {vn}"), &y, &ws, F64, &want, 0.0, 0.0);
            }
        }
    }
    // 0-d data: nothing to pad.
    let y = call1(name, &[f64s(&[4.0], &[])], &[("mode", string("constant")), ("pad_width", tuple(&[]))]);
    check_arr("Pad 0-d", &y, &[], F64, &[4.0], 0.0, 0.0);
    // String attributes (symbol JSON form) and an empty axis padded with a constant.
    let y = call1(
        name,
        &[NDArray::zeros(&[0, 2], F32)],
        &[("mode", string("constant")), ("pad_width", string("(1, 1, 0, 0)"))],
    );
    check_arr("Pad empty", &y, &[2, 2], F32, &[0.0; 4], 0.0, 0.0);
}

pub fn pad_grad(name: &'static str) {
    let mut rng = Rng::new(20);
    for mode in ["constant", "edge", "reflect"] {
        let op =
            build(name, &[("mode", string(mode)), ("pad_width", tuple(&[1, 2, 2, 1])), ("constant_value", float(1.5))]);
        check(&format!("Pad {mode}"), &op, &[rand(&mut rng, &[3, 3])], &mut rng, true);
    }
}

pub fn diag(name: &'static str) {
    // Extraction from matrices and stacks of matrices.
    for (shape, k, a1, a2) in [
        (&[3usize, 4][..], 0i64, 0i64, 1i64),
        (&[3, 4], 1, 0, 1),
        (&[3, 4], -2, 0, 1),
        (&[3, 4], 4, 0, 1),
        (&[2, 3, 4], 1, 2, 0),
        (&[2, 3, 3], -1, -2, -1),
    ] {
        let x = iota(shape, F64);
        let nd = shape.len() as i64;
        let (a1, a2) = (((a1 + nd) % nd) as usize, ((a2 + nd) % nd) as usize);
        let (o1, o2) = ((-k).max(0) as usize, k.max(0) as usize);
        let len = (shape[a1] as i64 - o1 as i64).min(shape[a2] as i64 - o2 as i64).max(0) as usize;
        let rest: Vec<usize> = (0..shape.len()).filter(|&d| d != a1 && d != a2).collect();
        let mut ws: Vec<usize> = rest.iter().map(|&d| shape[d]).collect();
        ws.push(len);
        let want: Vec<f64> = (0..numel(&ws))
            .map(|o| {
                let oi = unravel(o, &ws);
                let mut si = vec![0; shape.len()];
                for (r, &d) in rest.iter().enumerate() {
                    si[d] = oi[r];
                }
                let j = oi[ws.len() - 1];
                si[a1] = j + o1;
                si[a2] = j + o2;
                x.to_f64_vec()[ravel(&si, shape)]
            })
            .collect();
        for (vn, xv) in variants(&x) {
            let y = call1(name, &[xv], &[("k", int(k)), ("axis1", int(a1 as i64)), ("axis2", int(a2 as i64))]);
            check_arr(&format!("diag {shape:?} k={k} {vn}"), &y, &ws, F64, &want, 0.0, 0.0);
        }
    }
    // Past the empty diagonal just outside the matrix, the diagonal does not exist (MXNet).
    for k in [5i64, -4] {
        let err = call(name, &[iota(&[3, 4], F64)], &[("k", int(k))]).unwrap_err();
        assert!(err.to_string().contains("does not exist"), "diag k={k}: {err}");
    }
    // Construction from a vector.
    for k in [0i64, 2, -1] {
        let v = iota(&[3], F64);
        let m = 3 + k.unsigned_abs() as usize;
        let want: Vec<f64> = (0..m * m)
            .map(|o| {
                let (i, j) = ((o / m) as i64, (o % m) as i64);
                let t = if k >= 0 { i } else { j };
                if j - i == k {
                    v.to_f64_vec()[t as usize]
                } else {
                    0.0
                }
            })
            .collect();
        check_arr(&format!("diag vector k={k}"), &call1(name, &[v], &[("k", int(k))]), &[m, m], F64, &want, 0.0, 0.0);
    }
}

pub fn diag_grad(name: &'static str) {
    let mut rng = Rng::new(21);
    check("diag", &build(name, &[("k", int(1))]), &[rand(&mut rng, &[3, 4])], &mut rng, true);
    check(
        "diag 3-d",
        &build(name, &[("axis1", int(1)), ("axis2", int(2))]),
        &[rand(&mut rng, &[2, 2, 3])],
        &mut rng,
        true,
    );
    check("diag vector", &build(name, &[("k", int(-1))]), &[rand(&mut rng, &[3])], &mut rng, true);
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Shape,
    DType,
    Value,
}

#[track_caller]
fn expect(kind: Kind, name: &str, inputs: &[NDArray], params: &[(&str, AttrValue)], needles: &[&str]) {
    let r = call(name, inputs, params);
    let msg = match (&r, kind) {
        (Err(Error::Shape(m)), Kind::Shape)
        | (Err(Error::DType(m)), Kind::DType)
        | (Err(Error::Value(m)), Kind::Value) => m.clone(),
        _ => panic!("{name}{params:?}: expected a {kind:?} error, got {r:?}"),
    };
    for n in needles {
        assert!(msg.contains(n), "{name}: message {msg:?} does not mention {n:?}");
    }
}

fn z(shape: &[usize]) -> NDArray {
    NDArray::zeros(shape, F32)
}

#[test]
fn shape_more_errors() {
    expect(Kind::Shape, "Concat", &[z(&[2, 3]), z(&[3, 3])], &[("dim", int(1))], &["Concat", "(2, 3)", "(3, 3)"]);
    expect(Kind::Shape, "concat", &[z(&[2, 3]), z(&[2])], &[], &["Concat", "(2, 3)", "(2,)"]);
    expect(Kind::DType, "Concat", &[z(&[2]), NDArray::zeros(&[2], F64)], &[("dim", int(0))], &["Concat", "dtype"]);
    expect(Kind::Value, "Concat", &[z(&[2])], &[("dim", int(0)), ("num_args", int(2))], &["Concat", "num_args"]);
    expect(Kind::Value, "Concat", &[z(&[2])], &[("dim", string("one"))], &["Concat", "dim"]);
    expect(Kind::Shape, "stack", &[z(&[2, 3]), z(&[3, 2])], &[], &["stack", "(2, 3)", "(3, 2)"]);
    expect(
        Kind::Shape,
        "split",
        &[z(&[2, 5])],
        &[("num_outputs", int(2))],
        &["SliceChannel", "(2, 5)", "num_outputs=2"],
    );
    expect(
        Kind::Shape,
        "SliceChannel",
        &[z(&[4, 2])],
        &[("num_outputs", int(2)), ("axis", int(0)), ("squeeze_axis", boolean(true))],
        &["squeeze_axis"],
    );
    expect(Kind::Value, "split", &[z(&[4])], &[], &["num_outputs"]);
    expect(Kind::Shape, "add_n", &[z(&[2, 3]), z(&[3])], &[], &["add_n", "(2, 3)", "(3,)"]);
    expect(Kind::Value, "tile", &[z(&[2])], &[("reps", string("(2, -1)"))], &["tile", "reps"]);
    expect(Kind::Value, "tile", &[z(&[2])], &[("reps", string("two"))], &["tile", "reps"]);
    expect(Kind::Value, "repeat", &[z(&[2])], &[], &["repeat", "repeats"]);
    expect(Kind::Shape, "broadcast_like", &[z(&[2, 3]), z(&[4, 3])], &[], &["broadcast_like", "(2, 3)", "(4, 3)"]);
    expect(
        Kind::Shape,
        "broadcast_axis",
        &[z(&[2, 3])],
        &[("axis", int(0)), ("size", int(4))],
        &["broadcast_axis", "(2, 3)"],
    );
    expect(Kind::Shape, "slice_like", &[z(&[2, 3]), z(&[3, 3])], &[], &["slice_like", "(2, 3)", "(3, 3)"]);
    expect(Kind::Shape, "pick", &[z(&[2, 3]), z(&[3])], &[("axis", int(1))], &["pick", "(2, 3)", "(3,)"]);
    expect(Kind::Value, "pick", &[z(&[2, 3]), z(&[2])], &[("mode", string("raise"))], &["pick", "mode"]);
    expect(Kind::Shape, "batch_take", &[z(&[2, 3]), z(&[3])], &[], &["batch_take", "(2, 3)", "(3,)"]);
    expect(Kind::Value, "one_hot", &[z(&[2])], &[], &["one_hot", "depth"]);
    let constant = ("mode", string("constant"));
    expect(
        Kind::Shape,
        "Pad",
        &[z(&[2, 3])],
        &[constant.clone(), ("pad_width", tuple(&[1, 1]))],
        &["Pad", "(2, 3)", "pad_width"],
    );
    expect(
        Kind::Shape,
        "Pad",
        &[z(&[2, 3])],
        &[("mode", string("reflect")), ("pad_width", tuple(&[0, 0, 3, 0]))],
        &["Pad", "reflect", "(2, 3)"],
    );
    expect(
        Kind::Value,
        "Pad",
        &[z(&[2, 3])],
        &[("mode", string("wrap")), ("pad_width", tuple(&[0, 0, 1, 1]))],
        &["Pad", "mode"],
    );
    expect(Kind::Shape, "diag", &[z(&[])], &[], &["diag", "()"]);
    expect(Kind::Value, "diag", &[z(&[2, 2])], &[("axis1", int(1)), ("axis2", int(1))], &["diag", "axis"]);
    // Absurd sizes fail cleanly instead of overflowing or exhausting memory.
    expect(Kind::Value, "diag", &[z(&[3])], &[("k", int(i64::MIN))], &["diag", "too large"]);
    expect(Kind::Value, "Pad", &[z(&[2])], &[constant, ("pad_width", tuple(&[0, i64::MAX]))], &["Pad"]);
    expect(Kind::Value, "tile", &[z(&[2])], &[("reps", tuple(&[i64::MAX, 4]))], &["tile"]);
    expect(Kind::Value, "one_hot", &[z(&[2])], &[("depth", int(i64::MAX))], &["one_hot"]);
    // A diagonal beyond the edge does not exist (MXNet raises), even for an absurd k.
    expect(Kind::Value, "diag", &[z(&[2, 3])], &[("k", int(i64::MIN))], &["diag", "does not exist"]);
}
