//! The samplers of `ops::sampling_dists`: moments of each distribution (generous bounds: about
//! five standard errors), per-element parameters, multinomial categories, shuffles, and
//! `ln_gamma` (the shared `gammaln`) against known values.

use ferrograd::call;
use ferrograd::DType::{F32, F64, I32};
use ferrograd_kernels::special::gammaln as ln_gamma;

use crate::common::*;

fn mean_var(v: &[f64]) -> (f64, f64) {
    let m = v.iter().sum::<f64>() / v.len() as f64;
    (m, v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len() as f64)
}

/// Checks mean and variance of `n` draws against the distribution's, within `k` standard errors
/// (the variance's standard error taken as `var * sqrt(2 / n)` times a kurtosis allowance of 3).
fn check_moments(what: &str, v: &[f64], mean: f64, var: f64) {
    let n = v.len() as f64;
    let (m, s2) = mean_var(v);
    assert!((m - mean).abs() < 5.0 * (var / n).sqrt() + 1e-12, "{what}: mean {m}, want {mean}");
    assert!((s2 - var).abs() < 15.0 * var * (2.0 / n).sqrt() + 1e-12, "{what}: variance {s2}, want {var}");
}

pub fn dists(name: &'static str) {
    let n = 40_000i64;
    let shape = ("shape", tuple(&[n]));
    match name {
        "_random_gamma" => {
            for (a, b) in [(0.5, 2.0), (9.0, 0.5)] {
                let v = call1(name, &[], &[("alpha", float(a)), ("beta", float(b)), shape.clone()]).to_f64_vec();
                assert!(v.iter().all(|&x| x > 0.0));
                check_moments("gamma", &v, a * b, a * b * b);
            }
        }
        "_random_exponential" => {
            let v = call1(name, &[], &[("lam", float(4.0)), shape]).to_f64_vec();
            check_moments("exponential", &v, 0.25, 0.0625);
        }
        "_random_poisson" => {
            for lam in [0.7, 6.0, 40.0] {
                let y = call1(name, &[], &[("lam", float(lam)), shape.clone(), ("dtype", string("float64"))]);
                assert_eq!(y.dtype(), F64);
                let v = y.to_f64_vec();
                assert!(v.iter().all(|&x| x >= 0.0 && x.fract() == 0.0));
                check_moments("poisson", &v, lam, lam);
            }
        }
        "_random_negative_binomial" => {
            let (k, p) = (3.0, 0.4);
            let v = call1(name, &[], &[("k", float(k)), ("p", float(p)), shape]).to_f64_vec();
            check_moments("negative_binomial", &v, k * (1.0 - p) / p, k * (1.0 - p) / (p * p));
        }
        "_random_generalized_negative_binomial" => {
            let (mu, alpha) = (2.0, 0.3);
            let v = call1(name, &[], &[("mu", float(mu)), ("alpha", float(alpha)), shape]).to_f64_vec();
            check_moments("generalized_negative_binomial", &v, mu, mu + alpha * mu * mu);
        }
        "_sample_gamma" | "_sample_negative_binomial" | "_sample_generalized_negative_binomial" => {
            // Two distributions each; (a, b) and the means they give.
            let (a, b, want) = match name {
                "_sample_gamma" => ([1.0, 4.0], [2.0, 0.5], [2.0, 2.0]),
                "_sample_negative_binomial" => ([2.0, 5.0], [0.5, 0.25], [2.0, 15.0]),
                _ => ([2.0, 5.0], [0.5, 0.25], [2.0, 5.0]),
            };
            let y = call1(name, &[f64s(&a, &[2]), f64s(&b, &[2])], &[("shape", tuple(&[20_000]))]);
            assert_eq!((y.shape(), y.dtype()), (&[2usize, 20_000][..], F32));
            let v = y.to_f64_vec();
            for (half, want) in v.chunks(20_000).zip(want) {
                let m = mean_var(half).0;
                assert!((m / want - 1.0).abs() < 0.03, "{name}: mean {m}, want {want}");
            }
        }
        "_sample_exponential" | "_sample_poisson" => {
            let lam = f64s(&[0.5, 20.0], &[2, 1]);
            let v = call1(name, &[lam], &[("shape", tuple(&[20_000]))]).to_f64_vec();
            let (m0, m1) = (mean_var(&v[..20_000]).0, mean_var(&v[20_000..]).0);
            let want = if name == "_sample_poisson" { (0.5, 20.0) } else { (2.0, 0.05) };
            assert!((m0 / want.0 - 1.0).abs() < 0.05 && (m1 / want.1 - 1.0).abs() < 0.05, "{name}: {m0} {m1}");
        }
        "_sample_multinomial" => {
            let probs = f64s(&[0.2, 0.0, 0.8, 1.0, 0.0, 0.0], &[2, 3]);
            let y = call1(name, &[probs], &[("shape", tuple(&[10_000]))]);
            assert_eq!((y.shape(), y.dtype()), (&[2usize, 10_000][..], I32));
            let v = y.to_f64_vec();
            assert!(v[10_000..].iter().all(|&x| x == 0.0), "a row with one certain category");
            let twos = v[..10_000].iter().filter(|&&x| x == 2.0).count();
            assert!(v[..10_000].iter().all(|&x| x != 1.0), "a zero probability is never drawn");
            assert!((twos as f64 - 8000.0).abs() < 200.0, "frequency of category 2: {twos}");
        }
        _ => {
            // _shuffle: a permutation of the rows, each row intact.
            let x = f64s(&(0..30).map(f64::from).collect::<Vec<_>>(), &[10, 3]);
            let y = call1(name, std::slice::from_ref(&x), &[]);
            assert_eq!(y.shape(), &[10, 3]);
            let v = y.to_f64_vec();
            let mut firsts: Vec<f64> = v.chunks(3).map(|r| r[0]).collect();
            assert!(v.chunks(3).all(|r| r[1] == r[0] + 1.0 && r[2] == r[0] + 2.0 && r[0] % 3.0 == 0.0));
            firsts.sort_by(f64::total_cmp);
            assert_eq!(firsts, (0..10).map(|i| f64::from(i * 3)).collect::<Vec<_>>());
        }
    }
}

#[test]
fn ln_gamma_matches_known_values() {
    for (x, want) in [
        (1.0, 0.0),
        (2.0, 0.0),
        (0.5, 0.572_364_942_924_700_1),
        (10.0, 12.801_827_480_081_469),
        (1e-3, 6.907_178_885_383_853),
    ] {
        assert!((ln_gamma(x) - want).abs() < 1e-12 * want.abs().max(1.0), "ln_gamma({x}) = {}", ln_gamma(x));
    }
}

#[test]
fn sampler_parameter_errors_name_the_op_and_parameter() {
    use ferrograd::Error;
    for (name, params) in [
        ("_random_gamma", vec![("alpha", float(-1.0))]),
        ("_random_poisson", vec![("lam", float(-0.5))]),
        ("_random_exponential", vec![("lam", float(0.0))]),
        ("_random_negative_binomial", vec![("p", float(1.5))]),
    ] {
        let r = call::<ferrograd::NDArray>(name, &[], &params);
        let key = params[0].0;
        assert!(matches!(&r, Err(Error::Value(m)) if m.contains(name) && m.contains(key)), "{r:?}");
    }
    let r = call("_sample_poisson", &[f64s(&[1.0, -2.0], &[2])], &[]);
    assert!(matches!(&r, Err(Error::Value(m)) if m.contains("element 1")), "{r:?}");
    let r = call("_sample_multinomial", &[f64s(&[0.0; 300], &[300])], &[("dtype", string("uint8"))]);
    assert!(matches!(&r, Err(Error::Value(m)) if m.contains("300 categories")), "{r:?}");
}
