//! Criterion benches of the convolution kernels on every distinct convolution of ResNet-18 at
//! batch 8, 112×112 input (the training workload), plus a MobileNet depthwise layer:
//! forward, data gradient and weight gradient separately. Throughput is in FLOPs
//! (2·n·f·c/groups·k²·out_plane per pass), so criterion's "Gelem/s" reads as GFLOP/s.
//!
//! Run: `cargo bench -p ferrograd-benches --bench conv_layers` (threads: `RAYON_NUM_THREADS`).
//! `--bench conv_report` prints the same layers as one table against an equal-FLOP GEMM.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ferrograd_benches::data;
use ferrograd_benches::resnet::{flops, shape, LAYERS};
use ferrograd_kernels::conv::{conv_backward, conv_forward};

fn conv_layers(c: &mut Criterion) {
    for layer in LAYERS {
        let (shape, [xlen, wlen, ylen]) = shape(layer);
        let (x, w, dy) = (data(xlen, 1), data(wlen, 2), data(ylen, 3));
        let mut grp = c.benchmark_group(format!("conv_{}", layer.0));
        grp.measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(300)).sample_size(10);
        grp.throughput(Throughput::Elements(flops(layer)));
        let mut y = vec![0f32; ylen];
        grp.bench_function("forward", |b| b.iter(|| conv_forward(&shape, black_box(&x), &w, None, &mut y)));
        let mut dx = vec![0f32; xlen];
        grp.bench_function("data_grad", |b| {
            b.iter(|| conv_backward(&shape, black_box(&dy), None, &w, Some(&mut dx), None, None))
        });
        let mut dw = vec![0f32; wlen];
        grp.bench_function("weight_grad", |b| {
            b.iter(|| conv_backward(&shape, black_box(&dy), Some(&x), &w, None, Some(&mut dw), None))
        });
        grp.finish();
    }
}

criterion_group!(benches, conv_layers);
criterion_main!(benches);
