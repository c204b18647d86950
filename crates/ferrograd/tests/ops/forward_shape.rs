//! Forward tests of layout ops, casts and fills: shapes written by hand (MXNet's documented
//! examples for reshape codes), values against naive index loops, contiguous and strided inputs.

use ferrograd::DType::{self, Bool, F16, F32, F64, I32, U8};
use ferrograd::NDArray;

use crate::common::*;

/// Values of a fresh `0, 1, 2, …` array of `shape`, in `dt`, with its non-contiguous variants.
fn iota(shape: &[usize], dt: DType) -> NDArray {
    arr(&(0..numel(shape)).map(|i| i as f64).collect::<Vec<_>>(), shape, dt)
}

/// Checks an op that keeps the values in row-major order and only changes the shape.
fn check_same_values(name: &str, p: &Params, src: &[usize], want_shape: &[usize]) {
    for dt in [F32, I32] {
        let x = iota(src, dt);
        for (vname, xi) in variants(&x) {
            let y = call1(name, &[xi], p);
            check_arr(&format!("{name}{p:?} {src:?} {vname}"), &y, want_shape, dt, &x.to_f64_vec(), 0.0, 0.0);
        }
    }
}

/// MXNet's documented reshape examples (codes 0, -1, -2, -3, -4 and `reverse`).
pub fn reshape(name: &'static str) {
    type R = (&'static [usize], &'static [i64], bool, &'static [usize]);
    let cases: &[R] = &[
        (&[2, 3, 4], &[4, 0, 2], false, &[4, 3, 2]),
        (&[2, 3, 4], &[2, 0, 0], false, &[2, 3, 4]),
        (&[2, 3, 4], &[6, 1, -1], false, &[6, 1, 4]),
        (&[2, 3, 4], &[3, -1, 8], false, &[3, 1, 8]),
        (&[2, 3, 4], &[-1], false, &[24]),
        (&[2, 3, 4], &[-2], false, &[2, 3, 4]),
        (&[2, 3, 4], &[2, -2], false, &[2, 3, 4]),
        (&[2, 3, 4], &[-2, 1, 1], false, &[2, 3, 4, 1, 1]),
        (&[2, 3, 4], &[-3, 4], false, &[6, 4]),
        (&[2, 3, 4, 5], &[-3, -3], false, &[6, 20]),
        (&[2, 3, 4], &[0, -3], false, &[2, 12]),
        (&[2, 3, 4], &[-3, -2], false, &[6, 4]),
        (&[2, 3, 4], &[-4, 1, 2, -2], false, &[1, 2, 3, 4]),
        (&[2, 3, 4], &[2, -4, -1, 3, -2], false, &[2, 1, 3, 4]),
        (&[10, 5, 4], &[-1, 0], false, &[40, 5]),
        (&[10, 5, 4], &[-1, 0], true, &[50, 4]),
        (&[2, 3, 4], &[24], false, &[24]),
        (&[2, 3, 4], &[-4, -1, 1, 0, 0], false, &[2, 1, 3, 4]),
        (&[0, 3], &[-1, 3], false, &[0, 3]),
        (&[0, 3], &[0, -1], false, &[0, 3]),
        (&[0, 3, 4], &[0, -1], false, &[0, 12]),
        (&[], &[1, 1], false, &[1, 1]),
        (&[1], &[], false, &[]),
    ];
    for &(src, spec, reverse, want) in cases {
        let mut p: Params = vec![("shape", tuple(spec))];
        if reverse {
            p.push(("reverse", boolean(true)));
        }
        check_same_values(name, &p, src, want);
    }
}

pub fn flatten(name: &'static str) {
    for (src, want) in [
        (&[2usize, 3, 4][..], &[2usize, 12][..]),
        (&[5], &[5, 1]),
        (&[2, 0, 3], &[2, 0]),
        (&[0, 3], &[0, 3]),
        (&[4, 1], &[4, 1]),
    ] {
        check_same_values(name, &vec![], src, want);
    }
}

pub fn expand_dims(name: &'static str) {
    for (axis, want) in
        [(0i64, &[1usize, 2, 3][..]), (1, &[2, 1, 3]), (2, &[2, 3, 1]), (-1, &[2, 3, 1]), (-3, &[1, 2, 3])]
    {
        check_same_values(name, &vec![("axis", int(axis))], &[2, 3], want);
    }
    check_same_values(name, &vec![("axis", int(0))], &[], &[1]);
}

pub fn squeeze(name: &'static str) {
    type Case = (&'static [usize], Option<&'static [i64]>, &'static [usize]);
    let cases: &[Case] = &[
        (&[1, 3, 1], None, &[3]),
        (&[1, 3, 1], Some(&[0]), &[3, 1]),
        (&[1, 3, 1], Some(&[0, 2]), &[3]),
        (&[1, 3, 1], Some(&[-1]), &[1, 3]),
        (&[1, 1], None, &[1]), // legacy: never 0-d
        (&[3], None, &[3]),
        (&[0, 1], None, &[0]),
        (&[2, 1, 3], Some(&[1]), &[2, 3]),
    ];
    for &(src, axis, want) in cases {
        let p: Params = axis.map(|a| vec![("axis", tuple(a))]).unwrap_or_default();
        check_same_values(name, &p, src, want);
    }
}

/// Naive transpose: output index `o` reads input index `o` permuted back.
pub fn transpose(name: &'static str) {
    let cases: &[(&[usize], &[i64])] = &[
        (&[2, 3, 4], &[]),
        (&[2, 3, 4], &[1, 0, 2]),
        (&[2, 3, 4], &[2, 0, 1]),
        (&[2, 3, 4], &[-1, 0, 1]),
        (&[2, 3, 4], &[0, 1, 2]),
        (&[3, 4], &[]),
        (&[0, 3], &[1, 0]),
        (&[], &[]),
        (&[5], &[0]),
    ];
    for &(src, axes) in cases {
        let nd = src.len();
        let perm: Vec<usize> = if axes.is_empty() {
            (0..nd).rev().collect()
        } else {
            axes.iter().map(|&a| ((a + nd as i64) % nd as i64) as usize).collect()
        };
        let out_shape: Vec<usize> = perm.iter().map(|&p| src[p]).collect();
        for dt in [F32, F64, I32] {
            let x = iota(src, dt);
            let xv = x.to_f64_vec();
            let want: Vec<f64> = (0..numel(&out_shape))
                .map(|o| {
                    let oi = unravel(o, &out_shape);
                    let mut ii = vec![0; nd];
                    for (k, &p) in perm.iter().enumerate() {
                        ii[p] = oi[k];
                    }
                    xv[ravel(&ii, src)]
                })
                .collect();
            let p: Params = if axes.is_empty() { vec![] } else { vec![("axes", tuple(axes))] };
            for (vname, xi) in variants(&x) {
                let y = call1(name, &[xi], &p);
                check_arr(&format!("transpose {src:?} {axes:?} {vname}"), &y, &out_shape, dt, &want, 0.0, 0.0);
            }
        }
    }
}

/// NumPy broadcasting; a 0 in the target shape keeps the input's size (MXNet).
pub fn broadcast_to(name: &'static str) {
    let cases: &[(&[usize], &[i64], &[usize])] = &[
        (&[3], &[2, 3], &[2, 3]),
        (&[2, 1, 3], &[2, 4, 3], &[2, 4, 3]),
        (&[1, 3], &[2, 0], &[2, 3]),
        (&[], &[2, 2], &[2, 2]),
        (&[1], &[0, 4], &[0, 4]),
        (&[2, 3], &[2, 3], &[2, 3]),
        (&[4, 1], &[3, 4, 5], &[3, 4, 5]),
    ];
    for &(src, target, want_shape) in cases {
        for dt in [F32, I32] {
            let x = iota(src, dt);
            let xv = x.to_f64_vec();
            let want: Vec<f64> = (0..numel(want_shape)).map(|o| xv[bcast_src(&unravel(o, want_shape), src)]).collect();
            for (vname, xi) in variants(&x) {
                let y = call1(name, &[xi], &[("shape", tuple(target))]);
                check_arr(&format!("broadcast_to {src:?}->{target:?} {vname}"), &y, want_shape, dt, &want, 0.0, 0.0);
            }
        }
    }
}

/// Conversions use `as`-cast semantics: truncation toward zero for integers, != 0 for bool.
pub fn cast(name: &'static str) {
    let src = [-2.7, -0.5, 0.0, 0.5, 2.7, 300.25];
    for from in [F32, F64] {
        let x = arr(&src, &[2, 3], from);
        for to in [F32, F64, F16, I32, DType::I64, Bool] {
            let want: Vec<f64> = x.to_f64_vec().iter().map(|&v| round_to(v, to)).collect();
            for (vname, xi) in variants(&x) {
                let y = call1(name, &[xi], &[("dtype", string(to.name()))]);
                check_arr(&format!("Cast {from}->{to} {vname}"), &y, &[2, 3], to, &want, 0.0, 0.0);
            }
        }
    }
    let x = arr(&[0.0, 1.9, 200.0, 255.0], &[4], F32);
    check_arr(
        "Cast f32->u8",
        &call1(name, &[x], &[("dtype", string("uint8"))]),
        &[4],
        U8,
        &[0.0, 1.0, 200.0, 255.0],
        0.0,
        0.0,
    );
    let x = arr(&[-3.0, 7.0], &[2], I32);
    check_arr("Cast i32->f64", &call1(name, &[x], &[("dtype", string("float64"))]), &[2], F64, &[-3.0, 7.0], 0.0, 0.0);
}

/// `zeros_like`, `ones_like`: the input's shape and dtype; `_copy`: same values, own storage.
pub fn fill_or_copy(name: &'static str) {
    for shape in [&[][..], &[0], &[2, 3], &[3, 4, 2]] {
        for dt in [F32, F64, I32] {
            let x = iota(shape, dt);
            for (vname, xi) in variants(&x) {
                let y = call1(name, std::slice::from_ref(&xi), &[]);
                let want: Vec<f64> = match name {
                    "zeros_like" => vec![0.0; numel(shape)],
                    "ones_like" => vec![1.0; numel(shape)],
                    _ => x.to_f64_vec(),
                };
                check_arr(&format!("{name} {dt} {shape:?} {vname}"), &y, shape, dt, &want, 0.0, 0.0);
                assert!(!y.shares_storage(&xi), "{name} must not alias its input");
            }
        }
    }
    if name == "_copy" {
        // A copy is independent of later writes to the source.
        let mut x = iota(&[2, 2], F32);
        let y = call1(name, &[x.clone()], &[]);
        x.fill_scalar(9.0);
        assert_eq!(y.to_f64_vec(), vec![0.0, 1.0, 2.0, 3.0]);
    }
}

/// Python slice indices of `start:stop:step` on an axis of `n`, by enumeration.
fn py_range(n: usize, start: Option<i64>, stop: Option<i64>, step: i64) -> Vec<usize> {
    let n = n as i64;
    let fix = |v: i64| if v < 0 { v + n } else { v };
    let mut out = Vec::new();
    if step > 0 {
        let s = start.map_or(0, |v| fix(v).clamp(0, n));
        let e = stop.map_or(n, |v| fix(v).clamp(0, n));
        let mut i = s;
        while i < e {
            out.push(i as usize);
            i += step;
        }
    } else {
        let s = start.map_or(n - 1, |v| fix(v).clamp(-1, n - 1));
        let e = stop.map_or(-1, |v| fix(v).clamp(-1, n - 1));
        let mut i = s;
        while i > e {
            out.push(i as usize);
            i += step;
        }
    }
    out
}

type Sl = (Option<i64>, Option<i64>, Option<i64>);

/// Gathers the selected positions of `x` (per-axis index lists) in row-major order.
fn gather(xv: &[f64], shape: &[usize], sel: &[Vec<usize>]) -> (Vec<usize>, Vec<f64>) {
    let out_shape: Vec<usize> = sel.iter().map(Vec::len).collect();
    let vals = (0..numel(&out_shape))
        .map(|o| {
            let oi = unravel(o, &out_shape);
            let ii: Vec<usize> = oi.iter().enumerate().map(|(d, &k)| sel[d][k]).collect();
            xv[ravel(&ii, shape)]
        })
        .collect();
    (out_shape, vals)
}

fn opt_tuple(v: &[Option<i64>]) -> ferrograd::ops::AttrValue {
    let parts: Vec<String> = v.iter().map(|x| x.map_or("None".to_string(), |i| i.to_string())).collect();
    string(&format!("({})", parts.join(", ")))
}

/// `slice` (alias `crop`): begin/end/step per leading axis, Python semantics, `None` open ends.
pub fn slice(name: &'static str) {
    let shape = [4usize, 5, 6];
    let cases: &[&[Sl]] = &[
        &[(Some(1), Some(3), None)],
        &[(None, None, None), (Some(1), None, Some(2))],
        &[(Some(3), Some(0), Some(-1)), (Some(-1), Some(0), Some(-2))],
        &[(Some(-2), None, None)],
        &[(Some(10), None, None)],
        &[(Some(0), Some(4), Some(3)), (Some(1), Some(4), Some(1)), (None, None, Some(-1))],
        &[(Some(2), Some(2), None)],
    ];
    for dt in [F32, I32] {
        let x = iota(&shape, dt);
        let xv = x.to_f64_vec();
        for &case in cases {
            let mut sel: Vec<Vec<usize>> = shape.iter().map(|&n| (0..n).collect()).collect();
            for (d, &(b, e, s)) in case.iter().enumerate() {
                sel[d] = py_range(shape[d], b, e, s.unwrap_or(1));
            }
            let (want_shape, want) = gather(&xv, &shape, &sel);
            let begin: Vec<Option<i64>> = case.iter().map(|c| c.0).collect();
            let end: Vec<Option<i64>> = case.iter().map(|c| c.1).collect();
            let step: Vec<Option<i64>> = case.iter().map(|c| c.2).collect();
            let p: Params = vec![("begin", opt_tuple(&begin)), ("end", opt_tuple(&end)), ("step", opt_tuple(&step))];
            for (vname, xi) in variants(&x) {
                let y = call1(name, &[xi], &p);
                check_arr(&format!("{name} {case:?} {vname}"), &y, &want_shape, dt, &want, 0.0, 0.0);
            }
        }
    }
    // Tuple parameters given as integer tuples (no None) work as well.
    let x = iota(&[4, 5], F64);
    let y = call1(name, &[x], &[("begin", tuple(&[1, 0])), ("end", tuple(&[3, 5])), ("step", tuple(&[1, 2]))]);
    check_arr("slice int tuples", &y, &[2, 3], F64, &[5.0, 7.0, 9.0, 10.0, 12.0, 14.0], 0.0, 0.0);
}

pub fn slice_axis(name: &'static str) {
    let shape = [3usize, 5, 4];
    let cases: &[(i64, i64, Option<i64>)] =
        &[(1, 1, Some(4)), (-1, -3, None), (0, 0, Some(0)), (0, -2, Some(3)), (2, 0, None), (1, 4, Some(100))];
    for dt in [F32, I32] {
        let x = iota(&shape, dt);
        let xv = x.to_f64_vec();
        for &(axis, begin, end) in cases {
            let d = ((axis + 3) % 3) as usize;
            let mut sel: Vec<Vec<usize>> = shape.iter().map(|&n| (0..n).collect()).collect();
            sel[d] = py_range(shape[d], Some(begin), end, 1);
            let (want_shape, want) = gather(&xv, &shape, &sel);
            let mut p: Params = vec![("axis", int(axis)), ("begin", int(begin))];
            p.push(("end", end.map_or(ferrograd::ops::AttrValue::None, int)));
            for (vname, xi) in variants(&x) {
                let y = call1(name, &[xi], &p);
                check_arr(&format!("slice_axis {axis} {begin} {end:?} {vname}"), &y, &want_shape, dt, &want, 0.0, 0.0);
            }
        }
    }
}
