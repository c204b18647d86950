//! Times convolution forward and backward on small-map layer shapes (the demo CNN's two layers)
//! and on ResNet-18's layers at batch 8, 112×112, with the im2col columns gathered from the
//! padded images and written out, interleaved: `cargo run --release -p ferrograd-kernels
//! --example conv_time`.

use std::time::Instant;

use ferrograd_kernels::conv::{conv_backward, conv_forward, set_gathered_columns, ConvShape, Geom};

/// (images, channels, filters, input side, kernel side, stride, padding)
const LAYERS: [(usize, usize, usize, usize, usize, usize, usize); 13] = [
    (128, 1, 16, 8, 3, 1, 1),
    (128, 16, 32, 4, 3, 1, 1),
    (128, 64, 64, 4, 3, 1, 1),
    (32, 64, 64, 8, 3, 1, 1),
    (8, 3, 64, 112, 7, 2, 3),
    (8, 64, 64, 28, 3, 1, 1),
    (8, 64, 128, 28, 3, 2, 1),
    (8, 64, 128, 28, 1, 2, 0),
    (8, 128, 128, 14, 3, 1, 1),
    (8, 128, 256, 14, 3, 2, 1),
    (8, 256, 256, 7, 3, 1, 1),
    (8, 256, 512, 7, 3, 2, 1),
    (8, 512, 512, 4, 3, 1, 1),
];

fn main() {
    // An optional argument picks one layer (its index in LAYERS), for profiling.
    let only: Option<usize> = std::env::args().nth(1).and_then(|a| a.parse().ok());
    for (i, &(n, c, f, side, k, st, pad)) in LAYERS.iter().enumerate() {
        if only.is_some_and(|o| o != i) {
            continue;
        }
        let out = (side + 2 * pad - k) / st + 1;
        let g = Geom {
            c,
            inp: [1, side, side],
            out: [1, out, out],
            k: [1, k, k],
            s: [1, st, st],
            p: [0, pad, pad],
            d: [1; 3],
        };
        let s = ConvShape { n, f, groups: 1, g };
        let fill = |len: usize| (0..len).map(|i| (i * 7919 % 1000) as f32 / 1000.0 - 0.5).collect::<Vec<f32>>();
        let (x, w, dy) = (fill(n * c * side * side), fill(f * c * k * k), fill(n * f * out * out));
        let mut y = vec![0f32; n * f * out * out];
        let (mut dx, mut dw) = (vec![0f32; x.len()], vec![0f32; w.len()]);
        let flops = 2.0 * (n * c * f * out * out * k * k) as f64;
        let reps = (4e8 / flops).clamp(3.0, 400.0) as usize;
        let once = |op: &mut dyn FnMut()| {
            let t = Instant::now();
            for _ in 0..reps {
                op();
            }
            t.elapsed().as_secs_f64() / reps as f64
        };
        // [gathered, written] × [forward, backward], rounds interleaved, medians of 5.
        let mut times = vec![Vec::new(); 4];
        for round in 0..6 {
            for (i, gathered) in [true, false].into_iter().enumerate() {
                set_gathered_columns(gathered);
                let tf = once(&mut || conv_forward(&s, &x, &w, None, &mut y));
                let tb = once(&mut || conv_backward(&s, &dy, Some(&x), &w, Some(&mut dx), Some(&mut dw), None));
                if round > 0 {
                    times[2 * i].push(tf);
                    times[2 * i + 1].push(tb);
                }
            }
        }
        set_gathered_columns(true);
        let med: Vec<f64> = times
            .iter_mut()
            .map(|t| {
                t.sort_by(f64::total_cmp);
                t[t.len() / 2]
            })
            .collect();
        println!(
            "n{n} c{c} f{f} {side}x{side} k{k} s{st}: forward {:.3} ms ({:.0} GFLOP/s; written-out columns {:.3} ms), \
             backward {:.3} ms ({:.1}x forward; written-out {:.3} ms)",
            med[0] * 1e3,
            flops / 1e9 / med[0],
            med[2] * 1e3,
            med[1] * 1e3,
            med[1] / med[0],
            med[3] * 1e3,
        );
    }
}
