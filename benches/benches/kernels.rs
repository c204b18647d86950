//! Criterion benches of ferrograd's kernels on preallocated outputs (no allocation is timed).
//!
//! Run: `cargo bench -p ferrograd-benches --bench kernels`. Measurement times are short so the
//! whole run stays around a minute on a 2-core machine.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion, Throughput};
use ferrograd_benches::data;
use ferrograd_kernels::matmul::{gemm, GemmElement};
use ferrograd_kernels::par::Cost;
use ferrograd_kernels::reduce::{reduce, reduce_slice, Sum};
use ferrograd_kernels::unary_binary::{binary, unary};
use ferrograd_kernels::vmath::exp_f32;
use ferrograd_kernels::Layout;

fn configure<'a>(c: &'a mut Criterion, name: &str) -> BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut g = c.benchmark_group(name);
    g.measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500)).sample_size(20);
    g
}

const SIZES: [(usize, &str); 3] = [(16, "16"), (1 << 16, "64K"), (1 << 22, "4M")];

fn elementwise(c: &mut Criterion) {
    let mut g = configure(c, "add_f32");
    for (n, label) in SIZES {
        let (a, b) = (data::<f32>(n, 1), data::<f32>(n, 2));
        let mut out = vec![0f32; n];
        let l = Layout::contiguous(&[n]);
        g.throughput(Throughput::Bytes(3 * 4 * n as u64));
        g.bench_function(BenchmarkId::from_parameter(label), |bch| {
            bch.iter(|| binary(black_box(&a), &l, black_box(&b), &l, &mut out, Cost::Light, |x, y| x + y))
        });
    }
    g.finish();
    let mut g = configure(c, "exp_f32");
    for (n, label) in SIZES {
        let a = data::<f32>(n, 3);
        let mut out = vec![0f32; n];
        let l = Layout::contiguous(&[n]);
        g.throughput(Throughput::Elements(n as u64));
        g.bench_function(BenchmarkId::from_parameter(label), |bch| {
            bch.iter(|| unary(black_box(&a), &l, &mut out, Cost::Heavy, exp_f32))
        });
    }
    g.finish();
}

fn reductions(c: &mut Criterion) {
    let mut g = configure(c, "sum_f32");
    let n = 1 << 22;
    let a = data::<f32>(n, 4);
    g.throughput(Throughput::Bytes(4 * n as u64));
    g.bench_function("4M", |bch| bch.iter(|| reduce_slice(black_box(&a), Sum)));
    let l = Layout::contiguous(&[2048, 2048]);
    let mut out = vec![0f32; 2048];
    for (axis, flags) in [("axis0_2048x2048", [true, false]), ("axis1_2048x2048", [false, true])] {
        g.bench_function(axis, |bch| bch.iter(|| reduce(black_box(&a), &l, &flags, Sum, &mut out)));
    }
    g.finish();
}

fn bench_gemm<T: GemmElement>(g: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>, n: usize) {
    let (a, b) = (data::<T>(n * n, 5), data::<T>(n * n, 6));
    let mut c = vec![T::zero(); n * n];
    let view = (0, n as isize, 1);
    g.throughput(Throughput::Elements(2 * (n * n * n) as u64)); // flops
    g.bench_function(BenchmarkId::new(T::NAME, n), |bch| {
        bch.iter(|| gemm(n, n, n, black_box(&a), view, black_box(&b), view, &mut c, false))
    });
}

fn matmul(c: &mut Criterion) {
    let mut g = configure(c, "gemm");
    g.sample_size(10);
    for n in [64, 256, 1024] {
        bench_gemm::<f32>(&mut g, n);
    }
    bench_gemm::<f64>(&mut g, 1024);
    g.finish();
}

criterion_group!(benches, elementwise, reductions, matmul);
criterion_main!(benches);
