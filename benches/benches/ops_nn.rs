//! Criterion benches of the nn ops' forward + backward (eager, through the gradient rules).
//!
//! Run: `cargo bench -p ferrograd-benches --bench ops_nn`.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use ferrograd::ops::grad::eval_grad;
use ferrograd::ops::registry::create;
use ferrograd::ops::{AttrValue, Attrs};
use ferrograd::NDArray;

fn data(n: usize, seed: u64, shape: &[usize]) -> NDArray {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let v: Vec<f32> = (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 11) as f64 / (1u64 << 52) as f64 - 1.0) as f32
        })
        .collect();
    NDArray::from_vec(v, shape).unwrap()
}

fn op(name: &str, params: &[(&str, AttrValue)]) -> ferrograd::ops::OpRef {
    let mut a = Attrs::new(name);
    for (k, v) in params {
        a.items.push((k.to_string(), v.clone()));
    }
    create(name, &a).unwrap()
}

fn nn(c: &mut Criterion) {
    let mut g = c.benchmark_group("nn_fwd_bwd");
    g.measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500)).sample_size(20);
    for name in ["softmax", "log_softmax"] {
        let o = op(name, &[]);
        let x = data(128 * 10000, 1, &[128, 10000]);
        let h = NDArray::ones(&[128, 10000], ferrograd::DType::F32);
        g.bench_function(format!("{name} 128x10000"), |b| {
            b.iter(|| eval_grad(o.as_ref(), std::slice::from_ref(&x), std::slice::from_ref(&h)).unwrap())
        });
    }
    let o = op("FullyConnected", &[("num_hidden", AttrValue::Int(512))]);
    let (x, w, bias) = (data(128 * 784, 2, &[128, 784]), data(512 * 784, 3, &[512, 784]), data(512, 4, &[512]));
    let h = NDArray::ones(&[128, 512], ferrograd::DType::F32);
    g.bench_function("FullyConnected 128x784->512", |b| {
        b.iter(|| eval_grad(o.as_ref(), &[x.clone(), w.clone(), bias.clone()], std::slice::from_ref(&h)).unwrap())
    });
    g.finish();
}

criterion_group!(benches, nn);
criterion_main!(benches);
