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
use ferrograd_kernels::special::gammaln;

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
    let mut out = NDArray::try_uninit("uniform", shape, dtype)?;
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
    let mut out = NDArray::try_uninit("normal", shape, dtype)?;
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
    let mut out = NDArray::try_uninit("randint", shape, dtype)?;
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

/// The random words of one output element: element `i` of a draw starts on the block
/// `philox(i, start, key)` (as [`fill`]) and continues on blocks under derived keys, so a sampler
/// may take as many words as its rejection loop needs and still not depend on other elements.
pub struct ElemRng {
    i: u64,
    start: u64,
    key: u64,
    round: u64,
    block: [u32; 4],
    used: usize,
}

impl ElemRng {
    fn new(i: u64, start: u64, key: u64) -> Self {
        ElemRng { i, start, key, round: 0, block: philox(i, start, key), used: 0 }
    }

    fn word(&mut self) -> u32 {
        if self.used == 4 {
            self.round += 1;
            let key = self.key ^ self.round.wrapping_mul(0xD1B5_4A32_D192_ED03);
            self.block = philox(self.i, self.start, key);
            self.used = 0;
        }
        self.used += 1;
        self.block[self.used - 1]
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        let (a, b) = (self.word(), self.word());
        unit(a, b)
    }

    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.uniform();
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Gamma with shape `alpha > 0` and unit scale (Marsaglia and Tsang; for `alpha < 1`,
    /// `Gamma(alpha + 1) * U^(1 / alpha)`).
    pub fn gamma(&mut self, alpha: f64) -> f64 {
        if alpha < 1.0 {
            let u = 1.0 - self.uniform(); // (0, 1]
            return self.gamma(alpha + 1.0) * u.powf(1.0 / alpha);
        }
        let d = alpha - 1.0 / 3.0;
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let x = self.normal();
            let v = 1.0 + c * x;
            if v <= 0.0 {
                continue;
            }
            let v = v * v * v;
            let u = self.uniform();
            if u < 1.0 - 0.0331 * x.powi(4) || u.ln() < 0.5 * x * x + d * (1.0 - v + v.ln()) {
                return d * v;
            }
        }
    }

    /// Poisson with mean `lam >= 0`: multiplication of uniforms below 10, Hörmann's transformed
    /// rejection (PTRS) above.
    pub fn poisson(&mut self, lam: f64) -> f64 {
        if lam <= 0.0 {
            return 0.0;
        }
        if lam < 10.0 {
            let limit = (-lam).exp();
            let mut k = 0.0;
            let mut p = self.uniform();
            while p > limit {
                k += 1.0;
                p *= self.uniform();
            }
            return k;
        }
        let (slam, loglam) = (lam.sqrt(), lam.ln());
        let b = 0.931 + 2.53 * slam;
        let a = -0.059 + 0.02483 * b;
        let inv_alpha = 1.1239 + 1.1328 / (b - 3.4);
        let vr = 0.9277 - 3.6224 / (b - 2.0);
        loop {
            let u = self.uniform() - 0.5;
            let v = self.uniform();
            let us = 0.5 - u.abs();
            let k = ((2.0 * a / us + b) * u + lam + 0.43).floor();
            if us >= 0.07 && v <= vr {
                return k;
            }
            if k < 0.0 || (us < 0.013 && v > us) {
                continue;
            }
            if v.ln() + inv_alpha.ln() - (a / (us * us) + b).ln() <= -lam + k * loglam - gammaln(k + 1.0) {
                return k;
            }
        }
    }
}

/// A word sequence for a sampler that needs one sequential stream (a shuffle's Fisher-Yates).
pub fn sequence_rng() -> ElemRng {
    let (key, start) = reserve(1);
    ElemRng::new(0, start, key)
}

/// Fills `out` (contiguous, float or integer) with `f(rng, q)` for each element `q`, every
/// element drawing from its own [`ElemRng`].
pub fn fill_per_element(out: &mut NDArray, f: impl Fn(&mut ElemRng, usize) -> f64 + Sync + Send) -> Result<()> {
    let (key, start) = reserve(out.size() as u64);
    with_dtype!(out.dtype(), T => out.write_out::<T, _>(|o| {
        par::for_each_chunk(o, Cost::Heavy, |off, chunk| {
            for (j, o) in chunk.iter_mut().enumerate() {
                let q = off + j;
                *o = T::from_f64(f(&mut ElemRng::new(q as u64, start, key), q));
            }
        })
    }))
}
