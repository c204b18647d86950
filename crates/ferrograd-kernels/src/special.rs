//! Special functions on f64: `erf`, `erfinv`, `gamma`, `gammaln` and the polygamma family, written
//! here (no dependency) and accurate to ~1e-13 relative away from poles. The ops' elementwise
//! kinds (`erf`, `gamma`, ...) and the samplers' densities call them.

use std::f64::consts::PI;

const TWO_OVER_SQRT_PI: f64 = std::f64::consts::FRAC_2_SQRT_PI;

/// erfc(x) for x >= 2.5 by its continued fraction (backward evaluation).
fn erfc_cf(x: f64) -> f64 {
    let mut f = x;
    for n in (1..=120).rev() {
        f = x + (n as f64 * 0.5) / f;
    }
    (-x * x).exp() / (f * PI.sqrt())
}

/// The error function.
pub fn erf(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    let r = if a < 2.5 {
        // erf(a) = 2/√π e^{-a²} Σ 2ⁿ a^{2n+1} / (1·3·…·(2n+1)): positive terms, no cancellation.
        let a2 = a * a;
        let (mut term, mut sum) = (a, a);
        for n in 1..200 {
            term *= 2.0 * a2 / (2 * n + 1) as f64;
            sum += term;
            if term <= sum * 1e-17 {
                break;
            }
        }
        TWO_OVER_SQRT_PI * (-a2).exp() * sum
    } else if a < 6.0 {
        1.0 - erfc_cf(a)
    } else {
        1.0
    };
    r.copysign(x)
}

/// erfc(a) for a >= 0.
fn erfc_pos(a: f64) -> f64 {
    if a < 2.5 {
        1.0 - erf(a)
    } else if a < 27.0 {
        erfc_cf(a)
    } else {
        0.0
    }
}

/// The inverse error function on [-1, 1] (±inf at ±1, NaN outside).
pub fn erfinv(y: f64) -> f64 {
    if y.is_nan() || y.abs() > 1.0 {
        return f64::NAN;
    }
    if y.abs() == 1.0 {
        return f64::INFINITY.copysign(y);
    }
    if y == 0.0 {
        return y;
    }
    // Giles' single-precision approximation, then Halley steps on erf (or erfc near ±1).
    let w = -((1.0 - y) * (1.0 + y)).ln();
    let p = if w < 5.0 {
        let w = w - 2.5;
        [
            2.810_226_36e-08,
            3.432_739_39e-07,
            -3.523_387_7e-06,
            -4.391_506_54e-06,
            0.000_218_580_87,
            -0.001_253_725_03,
            -0.004_177_681_64,
            0.246_640_727,
            1.501_409_41,
        ]
        .iter()
        .fold(0.0, |p, &c| c + p * w)
    } else {
        let w = w.sqrt() - 3.0;
        [
            -0.000_200_214_257,
            0.000_100_950_558,
            0.001_349_343_22,
            -0.003_673_428_44,
            0.005_739_507_73,
            -0.007_622_461_3,
            0.009_438_870_47,
            1.001_674_06,
            2.832_976_82,
        ]
        .iter()
        .fold(0.0, |p, &c| c + p * w)
    };
    let (s, ay) = (y.signum(), y.abs());
    let mut r = p * ay;
    for _ in 0..3 {
        let d = TWO_OVER_SQRT_PI * (-r * r).exp();
        if d == 0.0 {
            break;
        }
        // f(r) = erf(r) - y, computed as (1-y) - erfc(r) when y is near 1 (no cancellation).
        let f = if ay > 0.5 { (1.0 - ay) - erfc_pos(r) } else { erf(r) - ay };
        let dr = f / d;
        r -= dr / (1.0 + r * dr);
    }
    s * r
}

const LANCZOS_G: f64 = 7.0;

const LANCZOS: [f64; 9] = [
    0.999_999_999_999_809_9,
    676.520_368_121_885_1,
    -1_259.139_216_722_402_8,
    771.323_428_777_653_1,
    -176.615_029_162_140_6,
    12.507_343_278_686_905,
    -0.138_571_095_265_720_12,
    9.984_369_578_019_572e-6,
    1.505_632_735_149_311_6e-7,
];

fn lanczos_sum(x: f64) -> f64 {
    LANCZOS[1..].iter().enumerate().fold(LANCZOS[0], |a, (i, &c)| a + c / (x + (i + 1) as f64))
}

/// The gamma function: ±inf at ±0 (the limit from that side, as C's `tgamma` and SciPy), NaN at
/// the poles -1, -2, ... (the two one-sided limits differ in sign).
pub fn gamma(x: f64) -> f64 {
    if x == 0.0 {
        return f64::INFINITY.copysign(x);
    }
    if x.is_nan() || (x < 0.0 && x == x.floor()) {
        return f64::NAN;
    }
    if x < 0.5 {
        return PI / ((PI * x).sin() * gamma(1.0 - x));
    }
    if x > 171.7 {
        return f64::INFINITY;
    }
    let z = x - 1.0;
    let t = z + LANCZOS_G + 0.5;
    // t^(z+0.5) split in two halves so that it cannot overflow before e^{-t} scales it down.
    let h = t.powf(0.5 * (z + 0.5));
    (2.0 * PI).sqrt() * h * ((-t).exp() * h) * lanczos_sum(z)
}

/// ln|Γ(x)| (+inf at poles and at ±inf, as C's `lgamma`; exactly 0 at 1 and 2).
pub fn gammaln(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x.is_infinite() {
        return f64::INFINITY;
    }
    if x == 1.0 || x == 2.0 {
        return 0.0;
    }
    if x <= 0.0 && x == x.floor() {
        return f64::INFINITY;
    }
    if x < 0.5 {
        return (PI / (PI * x).sin().abs()).ln() - gammaln(1.0 - x);
    }
    let z = x - 1.0;
    let t = z + LANCZOS_G + 0.5;
    0.5 * (2.0 * PI).ln() + (z + 0.5) * t.ln() - t + lanczos_sum(z).ln()
}

/// Bernoulli numbers B2, B4, ..., B20.
const BERNOULLI: [f64; 10] = [
    1.0 / 6.0,
    -1.0 / 30.0,
    1.0 / 42.0,
    -1.0 / 30.0,
    5.0 / 66.0,
    -691.0 / 2730.0,
    7.0 / 6.0,
    -3617.0 / 510.0,
    43867.0 / 798.0,
    -174_611.0 / 330.0,
];

/// The polygamma function ψ⁽ⁿ⁾(x) (n = 0: digamma). At the poles 0, -1, -2, ... as SciPy:
/// digamma is ∓inf at ±0 and NaN at the negative integers; for n ≥ 1 the pole is (-1)ⁿ⁺¹·inf
/// from both sides.
pub fn polygamma(n: u32, x: f64) -> f64 {
    let sign = if n.is_multiple_of(2) { 1.0 } else { -1.0 }; // (-1)^n
    if x.is_nan() {
        return x;
    }
    if x <= 0.0 && x == x.floor() {
        return match n {
            0 if x == 0.0 => -f64::INFINITY.copysign(x),
            0 => f64::NAN,
            _ => -sign * f64::INFINITY,
        };
    }
    let nf = n as f64;
    let fact = |k: u32| (1..=k).fold(1.0, |a, i| a * i as f64);
    let n_fact = fact(n);
    // Recurrence ψ⁽ⁿ⁾(x) = ψ⁽ⁿ⁾(x+1) - (-1)ⁿ n! / x^{n+1}, up to where the asymptotic series is exact.
    let (mut x, mut acc) = (x, 0.0);
    while x < 15.0 {
        acc -= sign * n_fact / x.powi(n as i32 + 1);
        x += 1.0;
    }
    let asym = if n == 0 {
        let x2 = 1.0 / (x * x);
        let mut s = x.ln() - 0.5 / x;
        let mut p = x2;
        for (k, &b) in BERNOULLI.iter().enumerate() {
            s -= b / (2.0 * (k + 1) as f64) * p;
            p *= x2;
        }
        s
    } else {
        // (-1)^{n+1} [ (n-1)!/xⁿ + n!/(2x^{n+1}) + Σ B2k (2k+n-1)!/((2k)! x^{2k+n}) ]
        let mut s = fact(n - 1) / x.powf(nf) + n_fact / (2.0 * x.powf(nf + 1.0));
        for (k, &b) in BERNOULLI.iter().enumerate() {
            let k2 = 2 * (k as u32 + 1);
            s += b * fact(k2 + n - 1) / fact(k2) / x.powf(k2 as f64 + nf);
        }
        -sign * s
    };
    acc + asym
}
