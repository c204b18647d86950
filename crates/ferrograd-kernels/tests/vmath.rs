//! `vmath` accuracy against f64 `std` over dense sweeps, and special values.
//!
//! Error is measured in ulps of the correctly rounded f32 result (denormal ulp below 2^-126).
//! Measured maxima on x86-64 (AVX-512 and scalar code give the same bits): see the bounds below.

use ferrograd_kernels::vmath::{
    exp_f32, exp_f64, ln_f32, sigmoid_f32, sigmoid_f64 as vsigmoid_f64, tanh_f32, tanh_f64,
};

/// Distance from `got` to the exact value `want` in ulps of f32 at `want`.
fn ulp_err(got: f32, want: f64) -> f64 {
    let rounded = want as f32;
    if rounded.is_infinite() || got.is_infinite() || rounded.is_nan() || got.is_nan() {
        let same = got == rounded || (got.is_nan() && rounded.is_nan());
        return if same { 0.0 } else { f64::INFINITY };
    }
    let exp = if want == 0.0 { -126 } else { (want.abs().log2().floor() as i32).max(-126) };
    let ulp = 2f64.powi(exp - 23);
    (got as f64 - want).abs() / ulp
}

/// `n` points evenly spaced in [lo, hi].
fn grid(lo: f64, hi: f64, n: usize) -> impl Iterator<Item = f32> + Clone {
    (0..n).map(move |i| (lo + (hi - lo) * i as f64 / (n - 1) as f64) as f32)
}

/// `n` f32 values spread evenly over the bit patterns of [lo, hi] (both positive), so every binade
/// — denormals included — gets its share.
fn bit_sweep(lo: f32, hi: f32, n: usize) -> impl Iterator<Item = f32> + Clone {
    let (a, b) = (lo.to_bits() as u64, hi.to_bits() as u64);
    (0..n as u64).map(move |i| f32::from_bits((a + (b - a) * i / (n as u64 - 1)) as u32))
}

/// Max ulp error of `f` vs `exact` over `xs`, with the worst input.
fn max_err(xs: impl Iterator<Item = f32>, f: impl Fn(f32) -> f32, exact: impl Fn(f64) -> f64) -> (f64, f32) {
    let mut worst = (0.0, 0.0);
    for x in xs {
        let e = ulp_err(f(x), exact(x as f64));
        if e > worst.0 || e.is_nan() {
            worst = (e, x);
        }
    }
    worst
}

fn both_signs(xs: impl Iterator<Item = f32> + Clone) -> impl Iterator<Item = f32> {
    xs.clone().chain(xs.map(|x| -x))
}

fn check(name: &str, bound: f64, xs: impl Iterator<Item = f32>, f: impl Fn(f32) -> f32, exact: impl Fn(f64) -> f64) {
    let (e, x) = max_err(xs, f, exact);
    println!("{name}: max {e:.3} ulp at {x:e}");
    assert!(e <= bound, "{name}: {e} ulp at x = {x:e} (bound {bound})");
}

fn sigmoid_f64(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

#[test]
fn exp_accuracy() {
    check("exp grid", 1.0, grid(-105.0, 90.0, 1_000_000), exp_f32, f64::exp);
    // Results near overflow and in the denormal range.
    check("exp high", 1.0, grid(85.0, 88.8, 200_000), exp_f32, f64::exp);
    check("exp denormal", 1.0, grid(-104.5, -86.0, 200_000), exp_f32, f64::exp);
    check("exp tiny", 1.0, both_signs(bit_sweep(1e-45, 1.0, 300_000)), exp_f32, f64::exp);
}

#[test]
fn ln_accuracy() {
    check("ln all positive", 1.0, bit_sweep(1e-45, f32::MAX, 1_000_000), ln_f32, f64::ln);
    check("ln near 1", 1.0, grid(0.5, 2.0, 500_000), ln_f32, f64::ln);
}

#[test]
fn tanh_accuracy() {
    check("tanh grid", 1.5, both_signs(grid(0.0, 12.0, 500_000)), tanh_f32, f64::tanh);
    check("tanh 0.1..1", 1.5, grid(0.1, 1.0, 500_000), tanh_f32, f64::tanh);
    check("tanh tiny", 1.0, both_signs(bit_sweep(1e-45, 0.1, 300_000)), tanh_f32, f64::tanh);
}

#[test]
fn sigmoid_accuracy() {
    check("sigmoid grid", 2.5, grid(-110.0, 110.0, 1_000_000), sigmoid_f32, sigmoid_f64);
    check("sigmoid -10..10", 2.5, grid(-10.0, 10.0, 500_000), sigmoid_f32, sigmoid_f64);
    check("sigmoid tiny", 1.5, both_signs(bit_sweep(1e-45, 1e-3, 100_000)), sigmoid_f32, sigmoid_f64);
}

#[test]
fn special_values() {
    let inf = f32::INFINITY;
    for f in [exp_f32, ln_f32, tanh_f32, sigmoid_f32] {
        assert!(f(f32::NAN).is_nan());
        assert!(f(-f32::NAN).is_nan());
    }
    assert_eq!(exp_f32(inf), inf);
    assert_eq!(exp_f32(-inf), 0.0);
    assert_eq!(exp_f32(0.0), 1.0);
    assert_eq!(exp_f32(-0.0), 1.0);
    assert_eq!(exp_f32(88.72284), inf, "overflow");
    assert_eq!(exp_f32(1000.0), inf);
    assert!(exp_f32(88.7228).is_finite());
    assert_eq!(exp_f32(-103.98), 0.0, "underflow");
    assert_eq!(exp_f32(-1000.0), 0.0);
    assert_eq!(exp_f32(-103.2), f32::from_bits(1), "smallest denormal");
    assert_eq!(exp_f32(1.0), std::f32::consts::E);

    assert_eq!(ln_f32(0.0), -inf);
    assert_eq!(ln_f32(-0.0), -inf);
    assert!(ln_f32(-1.0).is_nan());
    assert!(ln_f32(-inf).is_nan());
    assert!(ln_f32(-1e-45).is_nan());
    assert_eq!(ln_f32(inf), inf);
    assert_eq!(ln_f32(1.0), 0.0);
    assert_eq!(ln_f32(std::f32::consts::E), 1.0);
    assert_eq!(ln_f32(f32::from_bits(1)), (2f64.powi(-149)).ln() as f32);

    assert_eq!(tanh_f32(inf), 1.0);
    assert_eq!(tanh_f32(-inf), -1.0);
    assert_eq!(tanh_f32(0.0).to_bits(), 0.0f32.to_bits());
    assert_eq!(tanh_f32(-0.0).to_bits(), (-0.0f32).to_bits());
    assert_eq!(tanh_f32(20.0), 1.0);
    assert_eq!(tanh_f32(1e-30), 1e-30);

    assert_eq!(sigmoid_f32(inf), 1.0);
    assert_eq!(sigmoid_f32(-inf), 0.0);
    assert_eq!(sigmoid_f32(0.0), 0.5);
    assert_eq!(sigmoid_f32(-0.0), 0.5);
    assert_eq!(sigmoid_f32(100.0), 1.0);
    assert!(sigmoid_f32(-100.0) > 0.0, "tiny but not flushed");
    assert_eq!(sigmoid_f32(-200.0), 0.0);
}

/// Distance from `got` to `want` (a libm result, itself within ~1 ulp) in ulps of f64 at `want`.
fn ulp_err_f64(got: f64, want: f64) -> f64 {
    if want.is_infinite() || got.is_infinite() || want.is_nan() || got.is_nan() {
        let same = got == want || (got.is_nan() && want.is_nan());
        return if same { 0.0 } else { f64::INFINITY };
    }
    let exp = if want == 0.0 { -1022 } else { (want.abs().log2().floor() as i64).max(-1022) };
    // 2^(exp - 52), built from bits (powi underflows to 0 near the denormal range).
    let ulp = f64::from_bits(if exp > -971 { ((exp - 52 + 1023) as u64) << 52 } else { 1 << (exp + 1074 - 52) });
    (got - want).abs() / ulp
}

fn check_f64(
    name: &str,
    bound: f64,
    xs: impl Iterator<Item = f64>,
    f: impl Fn(f64) -> f64,
    exact: impl Fn(f64) -> f64,
) {
    let mut worst = (0.0, 0.0);
    for x in xs {
        let e = ulp_err_f64(f(x), exact(x));
        if e > worst.0 || e.is_nan() {
            worst = (e, x);
        }
    }
    println!("{name}: max {:.3} ulp at {:e}", worst.0, worst.1);
    assert!(worst.0 <= bound, "{name}: {} ulp at x = {:e} (bound {bound})", worst.0, worst.1);
}

fn grid_f64(lo: f64, hi: f64, n: usize) -> impl Iterator<Item = f64> + Clone {
    (0..n).map(move |i| lo + (hi - lo) * i as f64 / (n - 1) as f64)
}

/// `n` f64 values spread over the bit patterns of [lo, hi] (both positive), denormals included.
fn bit_sweep_f64(lo: f64, hi: f64, n: usize) -> impl Iterator<Item = f64> + Clone {
    let (a, b) = (lo.to_bits() as u128, hi.to_bits() as u128);
    (0..n as u128).map(move |i| f64::from_bits((a + (b - a) * i / (n as u128 - 1)) as u64))
}

#[test]
fn exp_f64_accuracy() {
    check_f64("exp f64 grid", 1.5, grid_f64(-746.0, 710.0, 1_000_000), exp_f64, f64::exp);
    check_f64("exp f64 -5..5", 1.5, grid_f64(-5.0, 5.0, 500_000), exp_f64, f64::exp);
    check_f64("exp f64 tiny", 1.0, bit_sweep_f64(1e-320, 1.0, 300_000).flat_map(|x| [x, -x]), exp_f64, f64::exp);
}

#[test]
fn tanh_f64_accuracy() {
    check_f64("tanh f64 grid", 3.0, grid_f64(-25.0, 25.0, 1_000_000), tanh_f64, f64::tanh);
    check_f64("tanh f64 0..1", 3.0, grid_f64(0.0, 1.0, 500_000), tanh_f64, f64::tanh);
    check_f64("tanh f64 tiny", 2.0, bit_sweep_f64(1e-320, 0.1, 300_000).flat_map(|x| [x, -x]), tanh_f64, f64::tanh);
}

#[test]
fn sigmoid_f64_accuracy() {
    check_f64("sigmoid f64 grid", 3.0, grid_f64(-750.0, 750.0, 1_000_000), vsigmoid_f64, sigmoid_f64);
    check_f64("sigmoid f64 -10..10", 3.0, grid_f64(-10.0, 10.0, 500_000), vsigmoid_f64, sigmoid_f64);
}

#[test]
fn special_values_f64() {
    let inf = f64::INFINITY;
    for f in [exp_f64, tanh_f64, vsigmoid_f64] {
        assert!(f(f64::NAN).is_nan());
        assert!(f(-f64::NAN).is_nan());
    }
    assert_eq!(exp_f64(inf), inf);
    assert_eq!(exp_f64(-inf), 0.0);
    assert_eq!(exp_f64(0.0), 1.0);
    assert_eq!(exp_f64(-0.0), 1.0);
    assert_eq!(exp_f64(709.8), inf, "overflow");
    assert!(exp_f64(709.7).is_finite());
    assert_eq!(exp_f64(-745.2), 0.0, "underflow");
    assert_eq!(exp_f64(-745.0), f64::from_bits(1), "smallest denormal");
    assert!((exp_f64(1.0) - std::f64::consts::E).abs() <= std::f64::consts::E * f64::EPSILON);

    assert_eq!(tanh_f64(inf), 1.0);
    assert_eq!(tanh_f64(-inf), -1.0);
    assert_eq!(tanh_f64(0.0).to_bits(), 0.0f64.to_bits());
    assert_eq!(tanh_f64(-0.0).to_bits(), (-0.0f64).to_bits());
    assert_eq!(tanh_f64(30.0), 1.0);
    assert_eq!(tanh_f64(1e-300), 1e-300);
    assert_eq!(tanh_f64(-3e-9), -3e-9, "tiny arguments are returned exactly");

    assert_eq!(vsigmoid_f64(inf), 1.0);
    assert_eq!(vsigmoid_f64(-inf), 0.0);
    assert_eq!(vsigmoid_f64(0.0), 0.5);
    assert_eq!(vsigmoid_f64(40.0), 1.0);
    assert!(vsigmoid_f64(-700.0) > 0.0, "tiny but not flushed");
}
