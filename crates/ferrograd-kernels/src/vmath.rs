//! Branch-free f32 transcendentals that vectorise when inlined into a [`simd_dispatch!`] loop.
//!
//! `std`'s `f32::exp` is a libm call per element and never vectorises. These use range reduction
//! plus short polynomials (a few ulp of error, tested against `f64` in `tests/vmath.rs`), and
//! handle NaN, ±inf, zero and overflow explicitly. No `mul_add`: on the baseline target it would be
//! a libm call too.
//!
//! [`simd_dispatch!`]: crate::simd_dispatch

const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;
const LOG2E: f32 = std::f32::consts::LOG2_E;

/// e^x.
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    let xc = x.clamp(-87.336_55, 88.722_83);
    let n = (xc * LOG2E + 0.5).floor();
    let r = xc - n * LN2_HI - n * LN2_LO;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0 + r * (1.0 / 5040.0)))))));
    // 2^n for n in [-126, 128]; n = 128 is folded into the mantissa to stay finite.
    let ni = n as i32;
    let over = ni > 127;
    let scale = f32::from_bits((((if over { 127 } else { ni }) + 127) as u32) << 23);
    let res = if over { p * 2.0 * scale } else { p * scale };
    let res = if x > 88.722_83 { f32::INFINITY } else { res };
    if x < -87.336_55 {
        0.0
    } else {
        res
    }
}

/// Natural logarithm.
#[inline(always)]
pub fn ln_f32(x: f32) -> f32 {
    let denormal = x < f32::MIN_POSITIVE;
    let xs = if denormal { x * 8_388_608.0 } else { x };
    let bits = xs.to_bits() as i32;
    let e = ((bits >> 23) & 0xff) - 127 - if denormal { 23 } else { 0 };
    let m = f32::from_bits(((bits & 0x007f_ffff) | 0x3f80_0000) as u32);
    let big = m > std::f32::consts::SQRT_2;
    let m = if big { m * 0.5 } else { m };
    let e = (if big { e + 1 } else { e }) as f32;
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let ln_m = 2.0 * s * (1.0 + s2 * (1.0 / 3.0 + s2 * (1.0 / 5.0 + s2 * (1.0 / 7.0 + s2 * (1.0 / 9.0)))));
    let res = e * LN2_HI + (ln_m + e * LN2_LO);
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
    let a2 = a * a;
    let small = a
        * (1.0
            + a2 * (-1.0 / 3.0
                + a2 * (2.0 / 15.0 + a2 * (-17.0 / 315.0 + a2 * (62.0 / 2835.0 + a2 * (-1382.0 / 155_925.0))))));
    let large = 1.0 - 2.0 / (exp_f32(2.0 * a) + 1.0);
    let r = if a < 0.3 { small } else { large };
    r.copysign(x)
}

/// Logistic sigmoid 1 / (1 + e^-x).
#[inline(always)]
pub fn sigmoid_f32(x: f32) -> f32 {
    1.0 / (1.0 + exp_f32(-x))
}
