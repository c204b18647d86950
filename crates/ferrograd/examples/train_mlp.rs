//! Trains a two-layer MLP on two interleaved spirals with ferrograd's Rust API: arrays and
//! operators from `ferrograd::api` on `Tracked` arrays, the tape through `autograd::record` and `backward`, and plain
//! full-batch gradient descent. Deterministic (a fixed-seed SplitMix64 generates the data and the
//! initial weights).
//!
//! `cargo run -p ferrograd --example train_mlp` prints the loss every 100 steps and the final
//! accuracy, and exits non-zero unless the accuracy is clearly better than chance.

use std::time::Instant;

use ferrograd::{autograd, NDArray, Result, Tracked};

/// SplitMix64: a tiny, fixed-seed generator (the example needs no dependency).
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1).
    fn uniform(&mut self) -> f32 {
        ((self.next_u64() >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
}

/// Two interleaved spirals: `n` points per class, features `(2n, 2)`, labels `0`/`1`.
fn spirals(n: usize, rng: &mut Rng) -> Result<(NDArray, Vec<usize>)> {
    let mut xs = Vec::with_capacity(4 * n);
    let mut labels = Vec::with_capacity(2 * n);
    for class in 0..2 {
        for i in 0..n {
            let r = 0.1 + 0.9 * i as f32 / n as f32;
            let t = 3.5 * i as f32 / n as f32 + class as f32 * std::f32::consts::PI + 0.15 * rng.uniform();
            xs.extend([r * t.sin(), r * t.cos()]);
            labels.push(class);
        }
    }
    Ok((NDArray::from_vec(xs, &[2 * n, 2])?, labels))
}

fn one_hot(labels: &[usize], classes: usize) -> Result<NDArray> {
    let mut v = vec![0.0f32; labels.len() * classes];
    for (i, &c) in labels.iter().enumerate() {
        v[i * classes + c] = 1.0;
    }
    NDArray::from_vec(v, &[labels.len(), classes])
}

/// A weight matrix with entries uniform in ±sqrt(6 / (fan_in + fan_out)) (Glorot).
fn glorot(rows: usize, cols: usize, rng: &mut Rng) -> Result<NDArray> {
    let a = (6.0 / (rows + cols) as f32).sqrt();
    NDArray::from_vec((0..rows * cols).map(|_| a * rng.uniform()).collect(), &[rows, cols])
}

/// The network: `softmax(tanh(x·W1 + b1)·W2 + b2)`; returns the logits.
fn forward(x: &Tracked, p: &[Tracked]) -> Result<Tracked> {
    let h = x.dot(&p[0])?.add_arr(&p[1])?.tanh()?;
    h.dot(&p[2])?.add_arr(&p[3])
}

/// Mean cross-entropy of `logits` against one-hot `targets`.
fn cross_entropy(logits: &Tracked, targets: &Tracked) -> Result<Tracked> {
    let per_sample = (targets * &logits.log_softmax(1)?)?.sum_axis(1)?;
    let mean = per_sample.mean()?;
    -mean
}

fn accuracy(logits: &NDArray, labels: &[usize]) -> f64 {
    let v = logits.to_f64_vec();
    let hits = labels.iter().enumerate().filter(|&(i, &c)| usize::from(v[2 * i + 1] > v[2 * i]) == c).count();
    hits as f64 / labels.len() as f64
}

/// What a training run produced.
pub struct Report {
    /// The loss at every step.
    pub losses: Vec<f64>,
    /// Training-set accuracy after the last step.
    pub accuracy: f64,
}

/// Trains for `steps` full-batch gradient-descent steps; prints the loss every `print_every`
/// steps (0: silent).
pub fn train(steps: usize, print_every: usize) -> Result<Report> {
    let mut rng = Rng(42);
    let (x, labels) = spirals(100, &mut rng)?;
    let (x, targets) = (Tracked::new(x), Tracked::new(one_hot(&labels, 2)?));
    let hidden = 32;
    let mut params: Vec<Tracked> = vec![
        glorot(2, hidden, &mut rng)?.into(),
        NDArray::zeros(&[hidden], ferrograd::DType::F32).into(),
        glorot(hidden, 2, &mut rng)?.into(),
        NDArray::zeros(&[2], ferrograd::DType::F32).into(),
    ];
    for p in &mut params {
        p.attach_grad();
    }
    let lr = 0.5;
    let mut losses = Vec::with_capacity(steps);
    for step in 0..steps {
        let loss = autograd::record(|| cross_entropy(&forward(&x, &params)?, &targets))?;
        loss.backward()?;
        let l = loss.item_f64()?;
        losses.push(l);
        if print_every > 0 && (step % print_every == 0 || step + 1 == steps) {
            println!("step {step:4}  loss {l:.4}");
        }
        // Plain SGD, outside the recording scope (the update is not part of the graph).
        for p in &mut params {
            let g = p.grad().ok_or_else(|| ferrograd::Error::Runtime("parameter has no gradient".into()))?;
            let updated = (p.array() - &(&g * lr)?)?;
            p.array_mut().assign_from(&updated)?;
        }
    }
    let accuracy = accuracy(forward(&x, &params)?.array(), &labels);
    Ok(Report { losses, accuracy })
}

fn main() -> Result<()> {
    let start = Instant::now();
    let report = train(1500, 100)?;
    println!("final accuracy {:.1}% in {:.2?}", 100.0 * report.accuracy, start.elapsed());
    if report.accuracy < 0.9 {
        eprintln!("accuracy {:.3} is not clearly better than chance (0.5)", report.accuracy);
        std::process::exit(1);
    }
    Ok(())
}
