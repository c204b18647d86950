//! Helpers shared by ferrograd's integration tests: a deterministic RNG, array builders (including
//! non-contiguous layouts with given values), naive index arithmetic and tolerant comparisons.
#![allow(dead_code)]

use ferrograd::ops::AttrValue;
use ferrograd::{DType, NDArray, SliceArg};

/// SplitMix64: tiny, deterministic, good enough for test data.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[lo, hi)`.
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        let u = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        lo + (hi - lo) * u
    }

    /// Uniform integer in `[lo, hi]`.
    pub fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next_u64() % ((hi - lo + 1) as u64)) as i64
    }

    pub fn vec(&mut self, n: usize, lo: f64, hi: f64) -> Vec<f64> {
        (0..n).map(|_| self.uniform(lo, hi)).collect()
    }

    /// Values with `lo <= |v| < hi` and a random sign (keeps samples away from 0).
    pub fn signed(&mut self, n: usize, lo: f64, hi: f64) -> Vec<f64> {
        (0..n).map(|_| if self.next_u64() & 1 == 0 { 1.0 } else { -1.0 } * self.uniform(lo, hi)).collect()
    }

    /// A random permutation of `0..n`.
    pub fn perm(&mut self, n: usize) -> Vec<usize> {
        let mut p: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = (self.next_u64() % (i as u64 + 1)) as usize;
            p.swap(i, j);
        }
        p
    }
}

pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// An array of `dt` holding `data` (given in f64, converted with the dtype's cast).
pub fn arr(data: &[f64], shape: &[usize], dt: DType) -> NDArray {
    let x = NDArray::from_vec(data.to_vec(), shape).unwrap();
    if dt == DType::F64 {
        x
    } else {
        x.astype(dt)
    }
}

pub fn f64s(data: &[f64], shape: &[usize]) -> NDArray {
    arr(data, shape, DType::F64)
}

/// A value as the dtype's element cast would store it, back in f64 (`as`-cast semantics).
pub fn round_to(v: f64, dt: DType) -> f64 {
    match dt {
        DType::F64 => v,
        DType::F32 => v as f32 as f64,
        DType::F16 => ferrograd::f16::from_f64(v).to_f64(),
        DType::I32 => v as i32 as f64,
        DType::I64 => v as i64 as f64,
        DType::U8 => v as u8 as f64,
        DType::I8 => v as i8 as f64,
        DType::Bool => f64::from(u8::from(v != 0.0)),
    }
}

/// Row-major multi-index of flat position `i`.
pub fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        if shape[d] > 0 {
            idx[d] = i % shape[d];
            i /= shape[d];
        }
    }
    idx
}

pub fn ravel(idx: &[usize], shape: &[usize]) -> usize {
    idx.iter().zip(shape).fold(0, |acc, (&i, &n)| acc * n + i)
}

/// Flat position in an input of `in_shape` read by output multi-index `out_idx` under NumPy
/// broadcasting (leading axes dropped, size-1 axes pinned to 0).
pub fn bcast_src(out_idx: &[usize], in_shape: &[usize]) -> usize {
    let lead = out_idx.len() - in_shape.len();
    let idx: Vec<usize> =
        in_shape.iter().enumerate().map(|(d, &n)| if n == 1 { 0 } else { out_idx[lead + d] }).collect();
    ravel(&idx, in_shape)
}

/// Same values as `x`, stored transposed: the result's layout is not contiguous (ndim >= 2).
pub fn transposed_view(x: &NDArray) -> NDArray {
    let t = x.transpose(&[]).unwrap().copy();
    let v = t.transpose(&[]).unwrap();
    assert_eq!(v.shape(), x.shape());
    v
}

/// Same values as `x`, read with step 2 from a buffer twice as long along the last axis.
pub fn strided_view(x: &NDArray) -> NDArray {
    if x.ndim() == 0 {
        return x.clone();
    }
    let mut big = x.shape().to_vec();
    let last = big.len() - 1;
    big[last] *= 2;
    let vals = x.to_f64_vec();
    let mut data = vec![f64::NAN; numel(&big)];
    for (i, &v) in vals.iter().enumerate() {
        let mut idx = unravel(i, x.shape());
        idx[last] *= 2;
        data[ravel(&idx, &big)] = v;
    }
    let base = arr(&data, &big, x.dtype());
    let mut args = vec![SliceArg::Range { start: None, stop: None, step: 1 }; last];
    args.push(SliceArg::Range { start: None, stop: None, step: 2 });
    let v = base.slice(&args).unwrap();
    assert_eq!(v.shape(), x.shape());
    v
}

/// `x` itself plus non-contiguous arrays with the same values (where the shape allows).
pub fn variants(x: &NDArray) -> Vec<(&'static str, NDArray)> {
    let mut v = vec![("contiguous", x.clone())];
    if x.ndim() >= 1 && x.size() > 1 {
        v.push(("strided", strided_view(x)));
    }
    if x.size() > 0 && x.ndim() >= 2 && x.shape().iter().filter(|&&n| n > 1).count() >= 2 {
        let t = transposed_view(x);
        assert!(!t.layout().is_contiguous());
        v.push(("transposed", t));
    }
    v
}

/// True when `a` and `b` agree: both NaN, equal infinities, or `|a-b| <= atol + rtol·|b|`.
pub fn close(a: f64, b: f64, rtol: f64, atol: f64) -> bool {
    if a.is_nan() || b.is_nan() {
        return a.is_nan() && b.is_nan();
    }
    if a.is_infinite() || b.is_infinite() {
        return a == b;
    }
    (a - b).abs() <= atol + rtol * b.abs()
}

#[track_caller]
pub fn assert_close(what: &str, got: &[f64], want: &[f64], rtol: f64, atol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length {} vs expected {}", got.len(), want.len());
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(close(g, w, rtol, atol), "{what}: element {i}: got {g}, expected {w} (rtol {rtol}, atol {atol})");
    }
}

/// Checks shape, dtype and values of `y`.
#[track_caller]
pub fn check_arr(what: &str, y: &NDArray, shape: &[usize], dt: DType, want: &[f64], rtol: f64, atol: f64) {
    assert_eq!(y.shape(), shape, "{what}: shape");
    assert_eq!(y.dtype(), dt, "{what}: dtype");
    assert_close(what, &y.to_f64_vec(), want, rtol, atol);
}

/// Forward tolerance for results computed in `dt` against an f64 reference.
pub fn tol(dt: DType) -> (f64, f64) {
    match dt {
        DType::F64 => (1e-12, 1e-13),
        DType::F32 => (4e-6, 1e-6),
        DType::F16 => (2e-3, 1e-3),
        _ => (0.0, 0.0),
    }
}

pub type Params = Vec<(&'static str, AttrValue)>;

pub fn int(v: i64) -> AttrValue {
    AttrValue::Int(v)
}
pub fn float(v: f64) -> AttrValue {
    AttrValue::Float(v)
}
pub fn tuple(v: &[i64]) -> AttrValue {
    AttrValue::Tuple(v.to_vec())
}
pub fn boolean(v: bool) -> AttrValue {
    AttrValue::Bool(v)
}
pub fn string(v: &str) -> AttrValue {
    AttrValue::Str(v.to_string())
}

/// Runs a single-output op by name, panicking with the op name on error.
#[track_caller]
pub fn call1(name: &str, inputs: &[NDArray], params: &[(&str, AttrValue)]) -> NDArray {
    match ferrograd::call(name, inputs, params) {
        Ok(mut v) => v.swap_remove(0),
        Err(e) => {
            panic!("{name}{params:?} on {:?}: {e}", inputs.iter().map(|x| x.shape().to_vec()).collect::<Vec<_>>())
        }
    }
}

/// Every subset of `0..n` (as lists of axes).
pub fn subsets(n: usize) -> Vec<Vec<i64>> {
    (0..1u32 << n).map(|m| (0..n as i64).filter(|&d| m & (1 << d) != 0).collect()).collect()
}
