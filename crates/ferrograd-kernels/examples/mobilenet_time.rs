//! Times MobileNet v2's convolutions (width 1.0, batch 8, 112×112 input) one layer shape at a
//! time, forward and backward, with their share of the whole: `cargo run --release -p
//! ferrograd-kernels --example mobilenet_time [dw|pw]` (only the depthwise or pointwise layers).

use std::time::Instant;

use ferrograd_kernels::conv::{conv_backward, conv_forward, ConvShape, Geom};

/// (channels in, channels out, input side, kernel side, stride, depthwise, how many in the net)
const LAYERS: [(usize, usize, usize, usize, usize, bool, usize); 26] = [
    (32, 32, 56, 3, 1, true, 1),
    (96, 96, 56, 3, 2, true, 1),
    (144, 144, 28, 3, 1, true, 1),
    (144, 144, 28, 3, 2, true, 1),
    (192, 192, 14, 3, 1, true, 2),
    (192, 192, 14, 3, 2, true, 1),
    (384, 384, 7, 3, 1, true, 4),
    (576, 576, 7, 3, 1, true, 2),
    (576, 576, 7, 3, 2, true, 1),
    (960, 960, 4, 3, 1, true, 3),
    (32, 16, 56, 1, 1, false, 1),
    (16, 96, 56, 1, 1, false, 1),
    (96, 24, 28, 1, 1, false, 1),
    (24, 144, 28, 1, 1, false, 2),
    (144, 24, 28, 1, 1, false, 1),
    (144, 32, 14, 1, 1, false, 1),
    (32, 192, 14, 1, 1, false, 3),
    (192, 32, 14, 1, 1, false, 2),
    (192, 64, 7, 1, 1, false, 1),
    (64, 384, 7, 1, 1, false, 4),
    (384, 64, 7, 1, 1, false, 3),
    (384, 96, 7, 1, 1, false, 1),
    (96, 576, 7, 1, 1, false, 3),
    (576, 96, 7, 1, 1, false, 2),
    (576, 160, 4, 1, 1, false, 1),
    (160, 960, 4, 1, 1, false, 3),
];

fn main() {
    let only = std::env::args().nth(1);
    let n = 8;
    let mut total = [0.0f64; 2];
    for &(c, f, side, k, st, dw, count) in &LAYERS {
        if only.as_deref().is_some_and(|o| (o == "dw") != dw) {
            continue;
        }
        let pad = k / 2;
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
        let groups = if dw { c } else { 1 };
        let s = ConvShape { n, f, groups, g };
        let fill = |len: usize| (0..len).map(|i| (i * 7919 % 1000) as f32 / 1000.0 - 0.5).collect::<Vec<f32>>();
        let (x, w, dy) = (fill(n * c * side * side), fill(f * (c / groups) * k * k), fill(n * f * out * out));
        let mut y = vec![0f32; n * f * out * out];
        let (mut dx, mut dwt) = (vec![0f32; x.len()], vec![0f32; w.len()]);
        let flops = 2.0 * (n * (c / groups) * f * out * out * k * k) as f64;
        let reps = (2e8 / flops).clamp(5.0, 2000.0) as usize;
        let once = |op: &mut dyn FnMut()| {
            let t = Instant::now();
            for _ in 0..reps {
                op();
            }
            t.elapsed().as_secs_f64() / reps as f64
        };
        let mut times = [Vec::new(), Vec::new()];
        for round in 0..6 {
            let tf = once(&mut || conv_forward(&s, &x, &w, None, &mut y));
            let tb = once(&mut || conv_backward(&s, &dy, Some(&x), &w, Some(&mut dx), Some(&mut dwt), None));
            if round > 0 {
                times[0].push(tf);
                times[1].push(tb);
            }
        }
        let med: Vec<f64> = times
            .iter_mut()
            .map(|t| {
                t.sort_by(f64::total_cmp);
                t[t.len() / 2]
            })
            .collect();
        total[0] += med[0] * count as f64;
        total[1] += med[1] * count as f64;
        println!(
            "{} c{c} f{f} {side}x{side} s{st} ×{count}: forward {:.3} ms ({:.1} GFLOP/s), backward {:.3} ms ({:.1}x)",
            if dw { "dw" } else { "pw" },
            med[0] * 1e3,
            flops / 1e9 / med[0],
            med[1] * 1e3,
            med[1] / med[0],
        );
    }
    println!(
        "whole net (these layers × their counts): forward {:.2} ms, backward {:.2} ms",
        total[0] * 1e3,
        total[1] * 1e3
    );
}
