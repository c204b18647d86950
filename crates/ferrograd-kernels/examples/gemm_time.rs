//! Times the GEMM on one thread against this core's FMA peak (measured here by a register-only
//! FMA loop), for the four transpose combinations of a few MLP and convolution shapes:
//! `cargo run --release -p ferrograd-kernels --example gemm_time [M N K [nn|nt|tn|tt]]`.
//! `GEMM_TASKS=n` splits each product into `n` parallel tasks instead (the share is then of
//! one core's peak).

use std::time::Instant;

use ferrograd_kernels::gemm::Options;
use ferrograd_kernels::matmul::gemm_with;

/// FLOP/s of 512-bit (or 256-bit) f32 FMAs on independent registers: the core's peak.
fn fma_peak() -> f64 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F (checked above).
            return unsafe { peak_avx512() };
        }
    }
    f64::NAN
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn peak_avx512() -> f64 {
    use std::arch::x86_64::*;
    let iters = 20_000_000u64;
    let mut acc = [_mm512_set1_ps(0.0); 12];
    let (x, y) = (_mm512_set1_ps(1.0000001), _mm512_set1_ps(0.9999999));
    let start = Instant::now();
    for _ in 0..iters {
        for a in acc.iter_mut() {
            *a = _mm512_fmadd_ps(*a, x, y);
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let sum: f32 = acc.iter().map(|a| _mm512_reduce_add_ps(*a)).sum();
    std::hint::black_box(sum);
    (iters * 12 * 32) as f64 / secs
}

fn time(m: usize, n: usize, k: usize, ta: bool, tb: bool) -> f64 {
    let a = vec![1.0f32; m * k];
    let b = vec![0.5f32; k * n];
    let mut c = vec![0.0f32; m * n];
    let a_view = if ta { (0, 1, m as isize) } else { (0, k as isize, 1) };
    let b_view = if tb { (0, 1, k as isize) } else { (0, n as isize, 1) };
    let tasks = std::env::var("GEMM_TASKS").ok().and_then(|t| t.parse().ok()).unwrap_or(1);
    let opts = Options { tasks: Some(tasks), ..Options::default() };
    let mut best = f64::INFINITY;
    for _ in 0..7 {
        let reps = (2e8 / (m * n * k) as f64).ceil() as usize;
        let start = Instant::now();
        for _ in 0..reps {
            gemm_with(m, n, k, &a, a_view, &b, b_view, &mut c, false, opts);
        }
        best = best.min(start.elapsed().as_secs_f64() / reps as f64);
    }
    2.0 * (m * n * k) as f64 / best
}

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    // An optional fourth argument (nn, nt, tn, tt) times one transpose combination only.
    let only = std::env::args().nth(4);
    let shapes: Vec<(usize, usize, usize)> = if args.len() == 3 {
        vec![(args[0], args[1], args[2])]
    } else {
        vec![(128, 512, 512), (512, 512, 128), (64, 784, 576), (256, 392, 2304), (512, 128, 4608), (1024, 1024, 1024)]
    };
    let peak = fma_peak();
    println!("one core's f32 FMA peak: {:.1} GFLOP/s", peak / 1e9);
    for (m, n, k) in shapes {
        let row: Vec<String> = [(false, false), (false, true), (true, false), (true, true)]
            .iter()
            .filter(|&&(ta, tb)| {
                only.as_deref()
                    .is_none_or(|o| o == format!("{}{}", if ta { 't' } else { 'n' }, if tb { 't' } else { 'n' }))
            })
            .map(|&(ta, tb)| {
                let f = time(m, n, k, ta, tb);
                format!(
                    "{}{} {:6.1} GF/s {:3.0}%",
                    if ta { 't' } else { 'n' },
                    if tb { 't' } else { 'n' },
                    f / 1e9,
                    100.0 * f / peak
                )
            })
            .collect();
        println!("{m:5}x{n:5}x{k:5}  {}", row.join("  "));
    }
}
