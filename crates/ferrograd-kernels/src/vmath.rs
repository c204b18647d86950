//! Branch-free f32 transcendentals that vectorise when inlined into a [`simd_dispatch!`] loop.
//!
//! `std`'s `f32::exp` is a libm call per element and never vectorises. These use range reduction
//! plus short polynomials, and handle NaN, ±inf, ±0, overflow and denormals explicitly. Measured
//! max errors (tests/vmath.rs, vs f64): exp 0.92 ulp, ln 0.81, tanh 1.3, sigmoid 2.3.
//!
//! Polynomials use `mul_add`: inside the AVX2/AVX-512 instantiations it is one FMA instruction
//! (~40% faster than mul + add); on the baseline target it is a correctly rounded libm call, so
//! every path gives the same bits.
//!
//! [`simd_dispatch!`]: crate::simd_dispatch

const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;
const LOG2E: f32 = std::f32::consts::LOG2_E;
/// 1.5·2^23: adding it to |v| < 2^22 rounds `v` to an integer held in the low mantissa bits, which
/// gives round-to-nearest and the integer bits without a float→int cast (a saturating `as i32`
/// does not vectorise).
const SHIFT: f32 = 12_582_912.0;

/// 2^e for e in [-126, 127], built from its exponent bits.
#[inline(always)]
fn pow2i(e: i32) -> f32 {
    f32::from_bits(((e + 127) as u32) << 23)
}

/// e^x.
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    // Beyond these bounds the result is inf / 0 anyway; clamping keeps n in [-150, 129], and IEEE
    // overflow / gradual underflow in the final scaling produce inf, denormals and 0 correctly.
    // NaN passes through `clamp`.
    let xc = x.clamp(-104.0, 89.0);
    let t = xc.mul_add(LOG2E, SHIFT);
    let n = t - SHIFT;
    let ni = t.to_bits() as i32 - SHIFT.to_bits() as i32;
    // r = x - n·ln2 in [-ln2/2, ln2/2] as r_hi + r_lo: n·LN2_HI is exact (LN2_HI has 9 significant
    // bits), so r_hi is exact and r_lo = -n·LN2_LO is a small correction.
    let r_hi = n.mul_add(-LN2_HI, xc);
    let r_lo = -(n * LN2_LO);
    let r = r_hi + r_lo;
    // e^r = 1 + r + r²·Q(r) (Taylor; truncation < 0.05 ulp). Summing the small parts before r_hi and
    // then 1 keeps the intermediate roundings well below the final one.
    let q = r.mul_add(1.0 / 5040.0, 1.0 / 720.0);
    let q = r.mul_add(q, 1.0 / 120.0);
    let q = r.mul_add(q, 1.0 / 24.0);
    let q = r.mul_add(q, 1.0 / 6.0);
    let q = r.mul_add(q, 0.5);
    let p = 1.0 + (r_hi + (r * r).mul_add(q, r_lo));
    // 2^n as two normal factors: p·2^e1 is exact, the second product rounds once (to a denormal,
    // 0 or inf when out of range).
    let e1 = ni >> 1;
    p * pow2i(e1) * pow2i(ni - e1)
}

/// Natural logarithm.
#[inline(always)]
pub fn ln_f32(x: f32) -> f32 {
    let denormal = x < f32::MIN_POSITIVE;
    let xs = if denormal { x * 8_388_608.0 } else { x };
    let bits = xs.to_bits() as i32;
    let e = ((bits >> 23) & 0xff) - 127 - if denormal { 23 } else { 0 };
    let m = f32::from_bits(((bits & 0x007f_ffff) | 0x3f80_0000) as u32);
    // m in [√2/2, √2), x = m·2^e.
    let big = m > std::f32::consts::SQRT_2;
    let m = if big { m * 0.5 } else { m };
    let e = (if big { e + 1 } else { e }) as f32;
    // ln(1+f) = f - f²/2 + s·(f²/2 + R(s²)) with s = f/(2+f) and R = 2s²/3 + 2s⁴/5 + …: the exact f
    // carries the result, the rounded terms are small corrections (< 1 ulp overall).
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let r = z * z.mul_add(z.mul_add(z.mul_add(2.0 / 9.0, 2.0 / 7.0), 2.0 / 5.0), 2.0 / 3.0);
    let hfsq = 0.5 * f * f;
    let res = e.mul_add(LN2_HI, (s.mul_add(hfsq + r, e * LN2_LO) - hfsq) + f);
    let res = if x == f32::INFINITY { x } else { res };
    let res = if x == 0.0 { f32::NEG_INFINITY } else { res };
    if x < 0.0 || x.is_nan() {
        f32::NAN
    } else {
        res
    }
}

/// Hyperbolic tangent.
#[inline(always)]
pub fn tanh_f32(x: f32) -> f32 {
    let a = x.abs();
    // |x| < 0.625: a + a³·P(a²), P fitted (Chebyshev, degree 5) to (tanh a - a)/a³ on [0, 0.625];
    // approximation error < 0.1 ulp.
    let z = a * a;
    let p = z.mul_add(0.002_295_842_9, -0.008_346_982);
    let p = z.mul_add(p, 0.021_769_961);
    let p = z.mul_add(p, -0.053_959_407);
    let p = z.mul_add(p, 0.133_333_04);
    let p = z.mul_add(p, -0.333_333_34);
    let small = a.mul_add(z * p, a);
    // Larger |x|: 1 - 2/(e^2a + 1), no cancellation worse than a factor ~2 here; e^2a = inf gives 1.
    let large = 1.0 - 2.0 / (exp_f32(2.0 * a) + 1.0);
    let r = if a < 0.625 { small } else { large };
    r.copysign(x)
}

/// Logistic sigmoid 1 / (1 + e^-x), as e^-|x| / (1 + e^-|x|) for negative x so tiny results keep
/// their precision instead of flushing to 0.
#[inline(always)]
pub fn sigmoid_f32(x: f32) -> f32 {
    let e = exp_f32(-x.abs());
    let num = if x >= 0.0 { 1.0 } else { e };
    num / (1.0 + e)
}

// ---- f64 ---------------------------------------------------------------------------------------
// The same shape as the f32 functions, with Taylor polynomials long enough for f64 (truncation
// below 0.01 ulp on the reduced range). tests/vmath.rs bounds the error against `std`.

/// ln 2 split so that `n·LN2_HI_F64` is exact for |n| < 2^20 (LN2_HI_F64 has 32 significant bits).
const LN2_HI_F64: f64 = 6.931_471_803_691_238e-1;
const LN2_LO_F64: f64 = 1.908_214_929_270_587_7e-10;
/// 1.5·2^52: the f64 counterpart of [`SHIFT`].
const SHIFT_F64: f64 = 6_755_399_441_055_744.0;

/// 2^e for e in [-1022, 1023].
#[inline(always)]
fn pow2i_f64(e: i64) -> f64 {
    f64::from_bits(((e + 1023) as u64) << 52)
}

/// `(n, r)` with `x = n·ln2 + r`, |r| ≤ ln2/2 (x already clamped to a few thousand).
#[inline(always)]
fn reduce_ln2(x: f64) -> (i64, f64) {
    let t = x.mul_add(std::f64::consts::LOG2_E, SHIFT_F64);
    let n = t - SHIFT_F64;
    let ni = t.to_bits() as i64 - SHIFT_F64.to_bits() as i64;
    (ni, n.mul_add(-LN2_LO_F64, n.mul_add(-LN2_HI_F64, x)))
}

/// `(e^r - 1 - r) / r²` for |r| ≤ ln2/2: Taylor to r¹¹ (truncation < 4e-18 relative).
#[inline(always)]
fn expm1_tail(r: f64) -> f64 {
    let q = r.mul_add(1.0 / 6_227_020_800.0, 1.0 / 479_001_600.0);
    let q = r.mul_add(q, 1.0 / 39_916_800.0);
    let q = r.mul_add(q, 1.0 / 3_628_800.0);
    let q = r.mul_add(q, 1.0 / 362_880.0);
    let q = r.mul_add(q, 1.0 / 40_320.0);
    let q = r.mul_add(q, 1.0 / 5_040.0);
    let q = r.mul_add(q, 1.0 / 720.0);
    let q = r.mul_add(q, 1.0 / 120.0);
    let q = r.mul_add(q, 1.0 / 24.0);
    let q = r.mul_add(q, 1.0 / 6.0);
    r.mul_add(q, 0.5)
}

/// e^x in f64.
#[inline(always)]
pub fn exp_f64(x: f64) -> f64 {
    // Beyond these bounds the result is inf / 0; the clamp keeps n in [-1077, 1025]. NaN passes.
    let xc = x.clamp(-746.0, 710.0);
    let (ni, r) = reduce_ln2(xc);
    let p = 1.0 + (r * r).mul_add(expm1_tail(r), r);
    let e1 = ni >> 1;
    p * pow2i_f64(e1) * pow2i_f64(ni - e1)
}

/// `e^y - 1` for |y| ≤ 1 without range reduction: Taylor to y¹⁹ (truncation < 5e-19 relative).
#[inline(always)]
fn expm1_unreduced(y: f64) -> f64 {
    let mut q = 1.0 / 121_645_100_408_832_000.0; // 1/19!
    q = y.mul_add(q, 1.0 / 6_402_373_705_728_000.0);
    q = y.mul_add(q, 1.0 / 355_687_428_096_000.0);
    q = y.mul_add(q, 1.0 / 20_922_789_888_000.0);
    q = y.mul_add(q, 1.0 / 1_307_674_368_000.0);
    q = y.mul_add(q, 1.0 / 87_178_291_200.0);
    q = y.mul_add(q, 1.0 / 6_227_020_800.0);
    q = y.mul_add(q, 1.0 / 479_001_600.0);
    q = y.mul_add(q, 1.0 / 39_916_800.0);
    q = y.mul_add(q, 1.0 / 3_628_800.0);
    q = y.mul_add(q, 1.0 / 362_880.0);
    q = y.mul_add(q, 1.0 / 40_320.0);
    q = y.mul_add(q, 1.0 / 5_040.0);
    q = y.mul_add(q, 1.0 / 720.0);
    q = y.mul_add(q, 1.0 / 120.0);
    q = y.mul_add(q, 1.0 / 24.0);
    q = y.mul_add(q, 1.0 / 6.0);
    q = y.mul_add(q, 0.5);
    (y * y).mul_add(q, y)
}

/// Hyperbolic tangent in f64: `t / (t + 2)` with `t = e^(2|x|) - 1`. Below |x| = 0.5, `t` comes
/// from an unreduced series (full relative precision near 0); above, from `2^n·expm1(r) + (2^n - 1)`
/// (exact scaling, no cancellation worse than ~1.3×).
#[inline(always)]
pub fn tanh_f64(x: f64) -> f64 {
    // tanh(20) rounds to 1 in f64; the clamp keeps 2^n finite. `min` turns NaN into 20, so NaN is
    // passed through explicitly at the end.
    let a = x.abs().min(20.0);
    let (ni, r) = reduce_ln2(2.0 * a);
    let em = (r * r).mul_add(expm1_tail(r), r);
    let s = pow2i_f64(ni);
    let large = em.mul_add(s, s - 1.0);
    let t = if a < 0.5 { expm1_unreduced(2.0 * a) } else { large };
    let res = (t / (t + 2.0)).copysign(x);
    // Below 2^-28, x³/3 is under half an ulp of x: x itself is the rounded result.
    if x.is_nan() || a < 3.725_290_298_461_914e-9 {
        x
    } else {
        res
    }
}

/// Logistic sigmoid in f64 (see [`sigmoid_f32`]).
#[inline(always)]
pub fn sigmoid_f64(x: f64) -> f64 {
    let e = exp_f64(-x.abs());
    let num = if x >= 0.0 { 1.0 } else { e };
    num / (1.0 + e)
}
