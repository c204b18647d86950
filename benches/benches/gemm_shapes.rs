//! Criterion benches of the GEMM on the shapes that matter (issue 18): an MLP's layers at batch
//! 128 and ResNet-18's convolutions lowered to GEMM at batch 8, 112×112 (forward `W·cols`, data
//! gradient `Wᵀ·dy`, weight gradient `dy·colsᵀ`), on one task and on the default split.
//!
//! Run: `cargo bench -p ferrograd-benches --bench gemm_shapes`. The Python sibling,
//! `benches/python/gemm.py`, runs the same shapes against PyTorch's `torch.mm`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ferrograd_benches::data;
use ferrograd_kernels::gemm::Options;
use ferrograd_kernels::matmul::gemm_with;

/// (label, M, K, N, A transposed, B transposed).
const SHAPES: &[(&str, usize, usize, usize, bool, bool)] = &[
    ("mlp_fwd", 128, 512, 512, false, false),
    ("mlp_dgrad", 128, 512, 784, false, true),
    ("mlp_wgrad", 512, 128, 784, true, false),
    ("conv1_fwd", 64, 147, 3136, false, false),
    ("conv1_wgrad", 64, 3136, 147, false, true),
    ("layer1_fwd", 64, 576, 784, false, false),
    ("layer1_dgrad", 576, 64, 784, true, false),
    ("layer1_wgrad", 64, 784, 576, false, true),
    ("layer3_fwd", 256, 2304, 392, false, false),
    ("layer3_dgrad", 2304, 256, 392, true, false),
    ("layer3_wgrad", 256, 392, 2304, false, true),
    ("layer4_fwd", 512, 4608, 128, false, false),
];

fn shapes(c: &mut Criterion) {
    let mut g = c.benchmark_group("gemm_shapes_f32");
    g.measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500)).sample_size(20);
    for &(label, m, k, n, ta, tb) in SHAPES {
        let (a, b) = (data::<f32>(m * k, 1), data::<f32>(k * n, 2));
        let mut out = vec![0f32; m * n];
        let av = if ta { (0, 1, m as isize) } else { (0, k as isize, 1) };
        let bv = if tb { (0, 1, k as isize) } else { (0, n as isize, 1) };
        g.throughput(Throughput::Elements((2 * m * n * k) as u64));
        for (split, options) in
            [("1task", Options { tasks: Some(1), ..Options::default() }), ("default", Options::default())]
        {
            g.bench_function(BenchmarkId::new(label, split), |bch| {
                bch.iter(|| gemm_with(m, n, k, black_box(&a), av, black_box(&b), bv, &mut out, false, options))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, shapes);
criterion_main!(benches);
