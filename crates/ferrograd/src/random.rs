//! Counter-based random numbers (Philox-4x32-10).
//!
//! Element `i` of a draw is a pure function of (seed, position of the draw in the stream, `i`),
//! so results do not depend on how many threads fill the output. `seed(s)` restarts the stream.

use std::sync::Mutex;

use ferrograd_kernels::par::{self, Cost};
use ferrograd_kernels::Element;

use crate::dtype::{DType, DTypeElem};
use crate::error::{Error, Result};
use crate::ndarray::{checked_numel, NDArray};
use crate::{with_dtype, with_float_dtype};

struct Stream {
    key: u64,
    counter: u64,
}

static STREAM: Mutex<Stream> = Mutex::new(Stream { key: 0x5eed_f3a1_0000_0001, counter: 0 });

/// Restarts the global stream from `seed` (MXNet `mx.random.seed`).
pub fn seed(seed: u64) {
    let mut s = STREAM.lock().unwrap_or_else(|e| e.into_inner());
    s.key = seed ^ 0x9E37_79B9_7F4A_7C15;
    s.counter = 0;
}

/// Reserves `n` counters of the stream; returns (key, first counter).
fn reserve(n: u64) -> (u64, u64) {
    let mut s = STREAM.lock().unwrap_or_else(|e| e.into_inner());
    let start = s.counter;
    s.counter = s.counter.wrapping_add(n);
    (s.key, start)
}

#[inline(always)]
fn mulhilo(a: u32, b: u32) -> (u32, u32) {
    let p = u64::from(a) * u64::from(b);
    ((p >> 32) as u32, p as u32)
}

/// Philox-4x32 with 10 rounds: 128 random bits from a 128-bit counter and a 64-bit key.
#[inline(always)]
pub fn philox(counter: u64, stream: u64, key: u64) -> [u32; 4] {
    let mut c = [counter as u32, (counter >> 32) as u32, stream as u32, (stream >> 32) as u32];
    let (mut k0, mut k1) = (key as u32, (key >> 32) as u32);
    for _ in 0..10 {
        let (hi0, lo0) = mulhilo(0xD251_1F53, c[0]);
        let (hi1, lo1) = mulhilo(0xCD9E_8D57, c[2]);
        c = [hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0];
        k0 = k0.wrapping_add(0x9E37_79B9);
        k1 = k1.wrapping_add(0xBB67_AE85);
    }
    c
}

/// A uniform f64 in [0, 1) from two 32-bit words (53 random bits).
#[inline(always)]
fn unit(a: u32, b: u32) -> f64 {
    ((u64::from(a) << 21) ^ u64::from(b >> 11)) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Fills `out` (contiguous, element type `T`) with `f` of consecutive Philox blocks.
fn fill<T: DTypeElem>(out: &mut NDArray, f: impl Fn([u32; 4]) -> T + Sync + Send) -> Result<()> {
    let (key, start) = reserve(out.size() as u64);
    out.write_out::<T, _>(|o| {
        par::for_each_chunk(o, Cost::Heavy, |off, chunk| {
            for (j, o) in chunk.iter_mut().enumerate() {
                *o = f(philox((off + j) as u64, start, key));
            }
        })
    })
}

fn check(op: &str, shape: &[usize], dtype: DType, float_only: bool) -> Result<usize> {
    if float_only && !dtype.is_float() {
        return Err(Error::DType(format!("{op}: dtype must be a float type, got {dtype}")));
    }
    checked_numel(op, shape)
}

/// Uniform samples in [low, high).
pub fn uniform(low: f64, high: f64, shape: &[usize], dtype: DType) -> Result<NDArray> {
    check("uniform", shape, dtype, true)?;
    let mut out = NDArray::uninit(shape, dtype);
    uniform_into(low, high, &mut out)?;
    Ok(out)
}

/// [`uniform`] written into `out` (contiguous; its shape and dtype say what to draw).
pub fn uniform_into(low: f64, high: f64, out: &mut NDArray) -> Result<()> {
    check("uniform", out.shape(), out.dtype(), true)?;
    if !(low.is_finite() && high.is_finite()) || high < low {
        return Err(Error::Value(format!("uniform: need finite low <= high, got low={low}, high={high}")));
    }
    with_float_dtype!(out.dtype(), T => {
        fill::<T>(out, |r| T::from_f64(low + (high - low) * unit(r[0], r[1])))
    }, else unreachable!()) // ok: checked float above
}

/// Normal samples with mean `loc` and standard deviation `scale` (Box-Muller).
pub fn normal(loc: f64, scale: f64, shape: &[usize], dtype: DType) -> Result<NDArray> {
    check("normal", shape, dtype, true)?;
    let mut out = NDArray::uninit(shape, dtype);
    normal_into(loc, scale, &mut out)?;
    Ok(out)
}

/// [`normal`] written into `out` (contiguous; its shape and dtype say what to draw).
pub fn normal_into(loc: f64, scale: f64, out: &mut NDArray) -> Result<()> {
    check("normal", out.shape(), out.dtype(), true)?;
    if !(scale >= 0.0 && scale.is_finite() && loc.is_finite()) {
        return Err(Error::Value(format!("normal: need finite loc and scale >= 0, got loc={loc}, scale={scale}")));
    }
    with_float_dtype!(out.dtype(), T => {
        fill::<T>(out, |r| {
            let u1 = 1.0 - unit(r[0], r[1]); // (0, 1]: ln is finite
            let u2 = unit(r[2], r[3]);
            let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
            T::from_f64(loc + scale * z)
        })
    }, else unreachable!()) // ok: checked float above
}

/// Integers uniform in [low, high).
pub fn randint(low: i64, high: i64, shape: &[usize], dtype: DType) -> Result<NDArray> {
    check("randint", shape, dtype, false)?;
    let mut out = NDArray::uninit(shape, dtype);
    randint_into(low, high, &mut out)?;
    Ok(out)
}

/// [`randint`] written into `out` (contiguous; its shape and dtype say what to draw).
pub fn randint_into(low: i64, high: i64, out: &mut NDArray) -> Result<()> {
    check("randint", out.shape(), out.dtype(), false)?;
    if high <= low {
        return Err(Error::Value(format!("randint: need low < high, got low={low}, high={high}")));
    }
    let range = (high as i128 - low as i128) as u128;
    with_dtype!(out.dtype(), T => {
        fill::<T>(out, |r| {
            let bits = (u128::from(r[0]) << 32) | u128::from(r[1]);
            T::from_f64((low as i128 + ((bits * range) >> 64) as i128) as f64)
        })
    })
}
