//! Times BatchNorm's backward passes, plain and fused with clip's gradient, on one MobileNet v2
//! activation shape: `cargo run --release -p ferrograd-kernels --example bn_time`.

use std::time::Instant;

use ferrograd_kernels::conv::{
    channel_affine2, channel_affine2_masked, channel_affine_act, channel_dot, channel_dot_masked, Affine, AffineAct,
    GradAffine,
};

fn median(mut f: impl FnMut()) -> f64 {
    let mut t: Vec<f64> = (0..21)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    t.sort_by(|a, b| a.total_cmp(b));
    t[10]
}

fn main() {
    for (c, side) in [(96, 56), (144, 28), (192, 14), (384, 7), (960, 4)] {
        shape(8, c, side * side);
    }
}

fn shape(n: usize, c: usize, plane: usize) {
    println!("8 x {c} x {plane}");
    let len = n * c * plane;
    let x: Vec<f32> = (0..len).map(|i| ((i * 7919) % 1000) as f32 / 100.0 - 5.0).collect();
    let dy: Vec<f32> = (0..len).map(|i| ((i * 104_729) % 1000) as f32 / 1000.0 - 0.5).collect();
    let ch = |v: f32| vec![v; c];
    let (mu, a, b) = (ch(0.1), ch(0.7), ch(0.2));
    let f = Affine { mu: &mu, a: &a, b: &b };
    let (ka, kk, kc) = (ch(0.5), ch(-0.01), ch(0.001));
    let bw = GradAffine { a: &ka, mu: &mu, k: &kk, c: &kc };
    let act = AffineAct::Clip(0.0, 6.0);
    let (mut g, mut dx, mut y) = (vec![0f32; len], vec![0f32; len], vec![0f32; len]);
    for _ in 0..2 {
        let fwd = median(|| channel_affine_act(&x, plane, c, f, AffineAct::Identity, &mut y));
        let fwd_act = median(|| channel_affine_act(&x, plane, c, f, act, &mut y));
        let mask = median(|| {
            for ((o, &d), &t) in g.iter_mut().zip(&dy).zip(&y) {
                *o = d * if (0.0..=6.0).contains(&t) { 1.0 } else { 0.0 };
            }
        });
        let dot = median(|| {
            std::hint::black_box(channel_dot(&g, &x, n, c, plane));
        });
        let dot_m = median(|| {
            std::hint::black_box(channel_dot_masked(&dy, &x, (n, c, plane), f, act));
        });
        let aff2 = median(|| channel_affine2(&g, &x, plane, c, &ka, (&mu, &kk), &kc, &mut dx));
        let aff2_m = median(|| channel_affine2_masked(&dy, &x, (plane, c), f, bw, act, &mut dx));
        let aff2_r = median(|| channel_affine2_masked(&dy, &x, (plane, c), f, bw, AffineAct::Relu, &mut dx));
        println!(
            "fwd {fwd:.3} fwd+clip {fwd_act:.3} | mask {mask:.3} dot {dot:.3} affine2 {aff2:.3} | dot_masked {dot_m:.3} affine2_masked {aff2_m:.3} relu {aff2_r:.3} ms"
        );
    }
}
