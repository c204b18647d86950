//! Criterion benches of the convolution kernels on every distinct convolution of ResNet-18 at
//! batch 8, 112×112 input (the training workload), plus a MobileNet depthwise layer:
//! forward, data gradient and weight gradient separately. Throughput is in FLOPs
//! (2·n·f·c/groups·k·out_plane per pass), so criterion's "elem/s" reads as FLOP/s.
//!
//! Run: `cargo bench -p ferrograd-benches --bench conv_layers` (threads: `RAYON_NUM_THREADS`).

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ferrograd_kernels::conv::{conv_backward, conv_forward, ConvShape, Geom};

/// `(name, c, f, groups, input side, kernel, stride, pad)` at batch 8.
type Layer = (&'static str, usize, usize, usize, usize, usize, usize, usize);
const LAYERS: &[Layer] = &[
    ("conv1_3to64_7x7s2_112", 3, 64, 1, 112, 7, 2, 3),
    ("layer1_64to64_3x3_28", 64, 64, 1, 28, 3, 1, 1),
    ("layer2_64to128_3x3s2_28", 64, 128, 1, 28, 3, 2, 1),
    ("layer2_128to128_3x3_14", 128, 128, 1, 14, 3, 1, 1),
    ("layer2_down_64to128_1x1s2_28", 64, 128, 1, 28, 1, 2, 0),
    ("layer3_256to256_3x3_7", 256, 256, 1, 7, 3, 1, 1),
    ("layer4_512to512_3x3_4", 512, 512, 1, 4, 3, 1, 1),
    ("mobilenet_dw_144_3x3_28", 144, 144, 144, 28, 3, 1, 1),
];
const BATCH: usize = 8;

fn data(n: usize, seed: u64) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 11) as f64 / (1u64 << 52) as f64 - 1.0) as f32
        })
        .collect()
}

fn conv_layers(c: &mut Criterion) {
    for &(name, ch, f, groups, side, k, s, p) in LAYERS {
        let out = (side + 2 * p - k) / s + 1;
        let g = Geom {
            c: ch,
            inp: [1, side, side],
            out: [1, out, out],
            k: [1, k, k],
            s: [1, s, s],
            p: [0, p, p],
            d: [1; 3],
        };
        let shape = ConvShape { n: BATCH, f, groups, g };
        let (xlen, wlen, ylen) = (BATCH * ch * side * side, f * ch / groups * k * k, BATCH * f * out * out);
        let (x, w, dy) = (data(xlen, 1), data(wlen, 2), data(ylen, 3));
        let flops = (2 * BATCH * f * (ch / groups) * k * k * out * out) as u64;
        let mut grp = c.benchmark_group(format!("conv_{name}"));
        grp.measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(300)).sample_size(10);
        grp.throughput(Throughput::Elements(flops));
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
