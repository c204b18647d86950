//! Criterion benches of the convolution/normalisation ops at the op level (outputs allocated per
//! call, as in imperative use): the speed-target workloads.
//!
//! Run: `cargo bench -p ferrograd-benches --bench ops_conv`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use ferrograd::ops::registry::create;
use ferrograd::ops::{self, AttrValue, Attrs, Ctx, OpRef};
use ferrograd::{DType, NDArray};

fn data(shape: &[usize], seed: u64) -> NDArray {
    let n: usize = shape.iter().product();
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let v: Vec<f32> = (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 11) as f64 / (1u64 << 52) as f64 - 1.0) as f32
        })
        .collect();
    NDArray::from_vec(v, shape).expect("shape")
}

fn op(name: &str, params: &[(&str, AttrValue)]) -> OpRef {
    let mut a = Attrs::new(name);
    for (k, v) in params {
        a.items.push((k.to_string(), v.clone()));
    }
    create(name, &a).expect("op")
}

fn conv(c: &mut Criterion) {
    let mut g = c.benchmark_group("conv2d_32x3x32x32_64_3x3_f32");
    g.measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_millis(500)).sample_size(20);
    let p = [
        ("kernel", AttrValue::Tuple(vec![3, 3])),
        ("pad", AttrValue::Tuple(vec![1, 1])),
        ("num_filter", AttrValue::Int(64)),
    ];
    let (fwd, bwd) = (op("Convolution", &p), op("_backward_Convolution", &p));
    let (x, w, b) = (data(&[32, 3, 32, 32], 1), data(&[64, 3, 3, 3], 2), data(&[64], 3));
    let ctx = Ctx::default();
    g.bench_function("forward", |bch| {
        bch.iter(|| ops::run(fwd.as_ref(), &ctx, black_box(&[x.clone(), w.clone(), b.clone()])).expect("fwd"))
    });
    let gy = NDArray::ones(&[32, 64, 32, 32], DType::F32);
    g.bench_function("backward", |bch| {
        bch.iter(|| ops::run(bwd.as_ref(), &ctx, black_box(&[gy.clone(), x.clone(), w.clone()])).expect("bwd"))
    });
    g.bench_function("forward_backward", |bch| {
        bch.iter(|| {
            let y = ops::run(fwd.as_ref(), &ctx, &[x.clone(), w.clone(), b.clone()]).expect("fwd");
            let gy = NDArray::ones(y[0].shape(), DType::F32);
            ops::run(bwd.as_ref(), &ctx, black_box(&[gy, x.clone(), w.clone()])).expect("bwd")
        })
    });
    g.finish();
}

/// Forward in training mode, recorded, then the gradients of data, gamma and beta (as
/// `autograd.record()` + `backward()` do).
fn batch_norm(c: &mut Criterion) {
    use ferrograd::autograd::{self, BackwardArgs, Entry, GradReq, Tracked};
    let mut g = c.benchmark_group("batchnorm_32x64x32x32_f32");
    g.measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_millis(500)).sample_size(20);
    let bn = op("BatchNorm", &[("fix_gamma", AttrValue::Bool(false))]);
    let var = |x: NDArray| {
        let grad = NDArray::zeros(x.shape(), DType::F32);
        Tracked::with_entry(x, Some(Entry::variable(grad, GradReq::Write)))
    };
    let (x, gm, bt) = (var(data(&[32, 64, 32, 32], 4)), var(data(&[64], 5)), var(data(&[64], 6)));
    let (mm, mv) = (Tracked::new(NDArray::zeros(&[64], DType::F32)), Tracked::new(NDArray::ones(&[64], DType::F32)));
    g.bench_function("forward_backward", |bch| {
        bch.iter(|| {
            let prev = (autograd::set_recording(true), autograd::set_training(true));
            let y = autograd::invoke(&bn, [x.clone(), gm.clone(), bt.clone(), mm.clone(), mv.clone()]).expect("fwd");
            autograd::set_recording(prev.0);
            autograd::set_training(prev.1);
            let head = Tracked::new(NDArray::ones(y[0].shape(), DType::F32));
            let args = BackwardArgs { retain_graph: false, create_graph: false, train_mode: true };
            autograd::grad(&y[..1], &[Some(head)], &[x.clone(), gm.clone(), bt.clone()], args).expect("bwd")
        })
    });
    g.finish();
}

criterion_group!(benches, conv, batch_norm);
criterion_main!(benches);
