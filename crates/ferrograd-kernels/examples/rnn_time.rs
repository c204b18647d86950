//! Times the fused LSTM/GRU kernels on the issue-20 benchmark shape (seq 35, batch 32, 2 layers,
//! hidden 200, f32): `cargo run --release -p ferrograd-kernels --example rnn_time`.

use std::time::Instant;

use ferrograd_kernels::rnn::{backward, forward, Dims, Mode};

fn main() {
    for mode in [Mode::Lstm, Mode::Gru] {
        let d =
            Dims { mode, seq: 35, batch: 32, input: 200, hidden: 200, layers: 2, dirs: 1, dropout: false, clip: None };
        let n_state = d.layers * d.dirs * d.batch * d.hidden;
        let fill =
            |n: usize, s: f32| (0..n).map(|i| ((i * 7919 % 1000) as f32 / 1000.0 - 0.5) * s).collect::<Vec<f32>>();
        let x = fill(d.seq * d.batch * d.input, 2.0);
        let w = fill(d.param_size(), 0.2);
        let h0 = vec![0.0f32; n_state];
        let c0 = vec![0.0f32; n_state];
        let mut y = vec![0.0f32; d.seq * d.batch * d.hidden];
        let (mut hy, mut cy) = (vec![0.0f32; n_state], vec![0.0f32; n_state]);
        let mut res = vec![0.0f32; d.reserve_size()];
        let dy = vec![1.0f32; y.len()];
        let (mut dx, mut dw) = (vec![0.0f32; x.len()], vec![0.0f32; w.len()]);
        let (mut dh0, mut dc0) = (vec![0.0f32; n_state], vec![0.0f32; n_state]);
        let c0o = (mode == Mode::Lstm).then_some(&c0[..]);
        let (mut tf, mut tb) = (Vec::new(), Vec::new());
        for _ in 0..12 {
            let t = Instant::now();
            forward(&d, &x, &w, &h0, c0o, None, &mut y, &mut hy, &mut cy, &mut res);
            tf.push(t.elapsed().as_secs_f64());
            let t = Instant::now();
            backward(&d, &x, &w, &h0, c0o, &res, &dy, None, None, &mut dx, &mut dw, &mut dh0, &mut dc0);
            tb.push(t.elapsed().as_secs_f64());
        }
        tf.sort_by(f64::total_cmp);
        tb.sort_by(f64::total_cmp);
        println!(
            "{mode:?}: forward {:.2} ms, backward {:.2} ms (medians); checksum {:.6} {:.6}",
            tf[6] * 1e3,
            tb[6] * 1e3,
            y.iter().map(|v| *v as f64).sum::<f64>(),
            dw.iter().map(|v| *v as f64).sum::<f64>()
        );
    }
}
