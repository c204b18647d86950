//! Issue 18's convolution targets, layer by layer: each ResNet-18 convolution (batch 8, 112²)
//! timed forward, data gradient and weight gradient, next to the GEMM its forward lowers to
//! (same M, K, N, so the same FLOPs). Prints a markdown table with, per layer, the forward's
//! GFLOP/s as a fraction of that GEMM's (target ≥ 0.70) and the backward's time (data + weight
//! gradients) over the forward's (target ≤ 2.5).
//!
//! Run: `cargo bench -p ferrograd-benches --bench conv_report` (threads: `RAYON_NUM_THREADS`;
//! rounds: `CONV_REPORT_ROUNDS`, default 5). The four timings of a layer are interleaved round by
//! round and the table shows their medians, so a busy neighbour slows all four alike. On a shared
//! machine, `CONV_REPORT_CPU=1` with `RAYON_NUM_THREADS=1` times in the process's CPU time (Linux:
//! the sum of `/proc/self/task/*/schedstat`), which other processes' load does not inflate.

use std::hint::black_box;
use std::time::{Duration, Instant};

use ferrograd_benches::data;
use ferrograd_benches::resnet::{flops, gemm_equivalent, shape, BATCH, LAYERS};
use ferrograd_kernels::conv::{conv_backward, conv_forward};
use ferrograd_kernels::gemm::Options;
use ferrograd_kernels::matmul::gemm_with;

/// Wall time of one call: `f` repeated for at least this long per round.
const ROUND: Duration = Duration::from_millis(60);

/// Nanoseconds of CPU time used so far by all of this process's threads (`None` off Linux).
fn process_cpu_ns() -> Option<u64> {
    let mut total = 0;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let stat = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
        total += stat.split(' ').next()?.parse::<u64>().ok()?;
    }
    Some(total)
}

/// Wall time, or process CPU time when asked for.
#[derive(Clone, Copy)]
enum Clock {
    Wall,
    Cpu,
}

impl Clock {
    /// Seconds `f` takes, by this clock.
    fn time(self, f: &mut dyn FnMut()) -> f64 {
        match self {
            Clock::Wall => {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            }
            Clock::Cpu => {
                let start = process_cpu_ns().expect("CONV_REPORT_CPU needs /proc/self/task/*/schedstat");
                f();
                let end = process_cpu_ns().expect("CONV_REPORT_CPU needs /proc/self/task/*/schedstat");
                end.saturating_sub(start) as f64 * 1e-9
            }
        }
    }
}

fn calls_per_round(f: &mut dyn FnMut()) -> u32 {
    f();
    let t = Instant::now();
    f();
    let once = t.elapsed().max(Duration::from_micros(1));
    (ROUND.as_secs_f64() / once.as_secs_f64()).ceil().max(1.0) as u32
}

/// The 1-minute load average (Linux), to show how busy the machine was.
fn load_average() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split(' ').next().unwrap_or("?").to_owned()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument selects layers by name.
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let rounds: usize = std::env::var("CONV_REPORT_ROUNDS").ok().and_then(|s| s.parse().ok()).unwrap_or(5);
    let clock = if std::env::var("CONV_REPORT_CPU").is_ok_and(|v| v == "1") { Clock::Cpu } else { Clock::Wall };
    let threads = ferrograd_kernels::par::num_threads();
    if matches!(clock, Clock::Cpu) && threads != 1 {
        eprintln!(
            "CONV_REPORT_CPU sums every thread's CPU time: set RAYON_NUM_THREADS=1 for times comparable to wall time"
        );
    }
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("model name")).map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    println!(
        "{cpu}, {threads} thread(s), f32, batch {BATCH}, 112² input, medians of {rounds} interleaved rounds, {}, load average {} at start",
        if matches!(clock, Clock::Cpu) { "process CPU time" } else { "wall time" },
        load_average()
    );
    println!();
    println!(
        "| layer | GEMM M×K×N | fwd ms | fwd GFLOP/s | GEMM GFLOP/s | fwd / GEMM | dgrad ms | wgrad ms | bwd / fwd |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let (mut fwd_fracs, mut bwd_ratios) = (Vec::new(), Vec::new());
    for layer in LAYERS {
        if filter.as_deref().is_some_and(|f| !layer.0.contains(f)) {
            continue;
        }
        let (shape, [xlen, wlen, ylen]) = shape(layer);
        let (x, w, dy) = (data(xlen, 1), data(wlen, 2), data(ylen, 3));
        let (mut y, mut dx, mut dw) = (vec![0f32; ylen], vec![0f32; xlen], vec![0f32; wlen]);
        let (m, k, n) = gemm_equivalent(layer);
        let (ga, gb, mut gc) = (data(m * k, 4), data(k * n, 5), vec![0f32; m * n]);
        let mut passes: [Box<dyn FnMut() + '_>; 4] = [
            Box::new(|| conv_forward(&shape, black_box(&x), &w, None, &mut y)),
            Box::new(|| conv_backward(&shape, black_box(&dy), None, &w, Some(&mut dx), None, None)),
            Box::new(|| conv_backward(&shape, black_box(&dy), Some(&x), &w, None, Some(&mut dw), None)),
            Box::new(|| {
                gemm_with(
                    m,
                    n,
                    k,
                    black_box(&ga),
                    (0, k as isize, 1),
                    &gb,
                    (0, n as isize, 1),
                    &mut gc,
                    false,
                    Options::default(),
                )
            }),
        ];
        let calls: Vec<u32> = passes.iter_mut().map(|f| calls_per_round(f.as_mut())).collect();
        let mut secs = vec![Vec::new(); passes.len()];
        for _ in 0..rounds {
            for (i, f) in passes.iter_mut().enumerate() {
                let total = clock.time(&mut || {
                    for _ in 0..calls[i] {
                        f();
                    }
                });
                secs[i].push(total / calls[i] as f64);
            }
        }
        let [fwd, dgrad, wgrad, gemm] = [0, 1, 2, 3].map(|i| median(secs[i].clone()));
        let gflops = |s: f64| flops(layer) as f64 / s / 1e9;
        let (frac, bwd) = (gemm / fwd, (dgrad + wgrad) / fwd);
        // The targets are ResNet-18's; the grouped (depthwise) layer is shown for comparison.
        let target = layer.3 == 1;
        if target {
            fwd_fracs.push(frac);
            bwd_ratios.push(bwd);
        }
        let verdict = |ok: bool| match (target, ok) {
            (false, _) => " (no target)",
            (true, true) => "",
            (true, false) => " (miss)",
        };
        println!(
            "| {} | {m}×{k}×{n} | {:.2} | {:.0} | {:.0} | {:.2}{} | {:.2} | {:.2} | {:.2}{} |",
            layer.0,
            fwd * 1e3,
            gflops(fwd),
            gflops(gemm),
            frac,
            verdict(frac >= 0.7),
            dgrad * 1e3,
            wgrad * 1e3,
            bwd,
            verdict(bwd <= 2.5),
        );
    }
    let met = |v: &[f64], ok: fn(f64) -> bool| v.iter().filter(|&&x| ok(x)).count();
    println!();
    println!(
        "ResNet-18 targets: forward ≥ 0.70 of the GEMM on {}/{} layers; backward ≤ 2.5× forward on {}/{} layers (load average {} at end)",
        met(&fwd_fracs, |x| x >= 0.7),
        fwd_fracs.len(),
        met(&bwd_ratios, |x| x <= 2.5),
        bwd_ratios.len(),
        load_average()
    );
}
