//! Times convolution forward and backward on small-map layer shapes (the demo CNN's second layer
//! and ResNet-18's deep layers at batch 8): `cargo run --release -p ferrograd-kernels --example
//! conv_time`.

use std::time::Instant;

use ferrograd_kernels::conv::{conv_backward, conv_forward, ConvShape, Geom};

fn main() {
    // (images, channels, filters, map side)
    for (n, c, f, side) in
        [(128, 16, 32, 4), (128, 32, 64, 4), (128, 64, 64, 4), (32, 64, 64, 8), (8, 512, 512, 4), (8, 256, 256, 7)]
    {
        let g =
            Geom { c, inp: [1, side, side], out: [1, side, side], k: [1, 3, 3], s: [1; 3], p: [0, 1, 1], d: [1; 3] };
        let s = ConvShape { n, f, groups: 1, g };
        let fill = |len: usize| (0..len).map(|i| (i * 7919 % 1000) as f32 / 1000.0 - 0.5).collect::<Vec<f32>>();
        let (x, w, dy) = (fill(n * c * side * side), fill(f * c * 9), fill(n * f * side * side));
        let mut y = vec![0f32; n * f * side * side];
        let (mut dx, mut dw) = (vec![0f32; x.len()], vec![0f32; w.len()]);
        let reps = (2e8 / (n * c * f * side * side * 9) as f64).clamp(3.0, 400.0) as usize;
        let time = |mut op: Box<dyn FnMut() + '_>| {
            op();
            let mut ts: Vec<f64> = (0..5)
                .map(|_| {
                    let t = Instant::now();
                    for _ in 0..reps {
                        op();
                    }
                    t.elapsed().as_secs_f64() / reps as f64
                })
                .collect();
            ts.sort_by(f64::total_cmp);
            ts[2]
        };
        let tf = time(Box::new(|| conv_forward(&s, &x, &w, None, &mut y)));
        let tb = time(Box::new(|| conv_backward(&s, &dy, Some(&x), &w, Some(&mut dx), Some(&mut dw), None)));
        let gflop = 2.0 * (n * c * f * side * side * 9) as f64 / 1e9;
        println!(
            "n{n} c{c} f{f} {side}x{side}: forward {:.3} ms ({:.0} GFLOP/s), backward {:.3} ms ({:.1}x forward)",
            tf * 1e3,
            gflop / tf,
            tb * 1e3,
            tb / tf
        );
    }
}
