//! `CTCLoss(data, label, data_lengths?, label_lengths?)`: Connectionist Temporal Classification
//! (Graves et al., 2006), MXNet's `CTCLoss`/`ctc_loss`/`contrib.CTCLoss`.
//!
//! `data` holds unnormalised scores `(T, N, C)` (a softmax over the alphabet is applied inside),
//! `label` class indices `(N, L)`. The blank is class 0 (`blank_label='first'`, labels in
//! `[1, C)`, padded with 0) or class `C - 1` (`'last'`, labels in `[0, C)`, padded with -1);
//! `use_label_lengths` cuts each row by `label_lengths` instead of at the padding, and
//! `use_data_lengths` uses only the first `data_lengths[n]` steps of sequence `n`. The output is
//! the negative log-likelihood per sequence `(N,)`. The forward also computes the gradient with
//! respect to `data` (softmax minus the alpha-beta occupancy) into a hidden second output; the
//! gradient rule scales it by the head gradient. An alignment that cannot exist (a label longer
//! than the steps allow) has probability 0: loss +inf and gradient 0 (MXNet returned 0).

use std::sync::Arc;

use super::float_only;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::params::{OpDef, OpParams, ParamEnum};
use crate::ops::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};

/// Where the blank sits in the alphabet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, ParamEnum)]
pub enum BlankLabel {
    First,
    Last,
}

/// `CTCLoss`'s parameters.
#[derive(Clone, Copy, Debug, PartialEq, OpParams)]
pub struct CtcParams {
    /// Read the steps of each sequence from the data_lengths input.
    #[param(default = false)]
    pub use_data_lengths: bool,
    /// Read the length of each label row from the label_lengths input.
    #[param(default = false)]
    pub use_label_lengths: bool,
    /// The blank is class 0 ('first', labels padded with 0) or the last class ('last', padded with -1).
    #[param(default = BlankLabel::First)]
    pub blank_label: BlankLabel,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CtcLoss(CtcParams);

const NAME: &str = "CTCLoss";

fn log_add(a: f64, b: f64) -> f64 {
    if a == f64::NEG_INFINITY {
        return b;
    }
    if b == f64::NEG_INFINITY {
        return a;
    }
    let m = a.max(b);
    m + ((a - m).exp() + (b - m).exp()).ln()
}

/// Log-softmax of each row of `x` (`steps` rows of `classes`).
fn log_softmax(x: &[f64], classes: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    for row in x.chunks(classes) {
        let m = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let lse = m + row.iter().map(|v| (v - m).exp()).sum::<f64>().ln();
        out.extend(row.iter().map(|v| v - lse));
    }
    out
}

/// Loss and gradient (w.r.t. the unnormalised scores) of one sequence: `logp` is `(steps,
/// classes)` log-probabilities, `labels` the symbols without blanks.
fn ctc_one(logp: &[f64], classes: usize, labels: &[usize], blank: usize) -> (f64, Vec<f64>) {
    let steps = logp.len() / classes;
    // The label with a blank before, between and after its symbols; a path may skip the blank
    // between two different symbols.
    let mut ext = vec![blank; 2 * labels.len() + 1];
    let mut skip = vec![false; ext.len()];
    for (i, &l) in labels.iter().enumerate() {
        ext[2 * i + 1] = l;
        skip[2 * i + 1] = i > 0 && labels[i - 1] != l;
    }
    let width = ext.len();
    let emit = |t: usize, s: usize| logp[t * classes + ext[s]];
    let mut alpha = vec![f64::NEG_INFINITY; steps * width];
    let mut beta = vec![f64::NEG_INFINITY; steps * width];
    for s in 0..width.min(2) {
        alpha[s] = emit(0, s);
        beta[(steps - 1) * width + width - 1 - s] = emit(steps - 1, width - 1 - s);
    }
    for t in 1..steps {
        let (prev, cur) = alpha.split_at_mut(t * width);
        let prev = &prev[(t - 1) * width..];
        for s in 0..width {
            let mut a = prev[s];
            if s >= 1 {
                a = log_add(a, prev[s - 1]);
            }
            if s >= 2 && skip[s] {
                a = log_add(a, prev[s - 2]);
            }
            cur[s] = a + emit(t, s);
        }
    }
    for t in (0..steps - 1).rev() {
        let (cur, next) = beta.split_at_mut((t + 1) * width);
        let cur = &mut cur[t * width..];
        for s in 0..width {
            let mut b = next[s];
            if s + 1 < width {
                b = log_add(b, next[s + 1]);
            }
            if s + 2 < width && skip[s + 2] {
                b = log_add(b, next[s + 2]);
            }
            cur[s] = b + emit(t, s);
        }
    }
    let last = &alpha[(steps - 1) * width..];
    let loglik = if width > 1 { log_add(last[width - 1], last[width - 2]) } else { last[0] };
    if !loglik.is_finite() {
        return (f64::INFINITY, vec![0.0; logp.len()]);
    }
    // d(-log p)/d(score) = softmax - (sum of alpha*beta/emit over the positions of that class) / p.
    let mut occupancy = vec![f64::NEG_INFINITY; logp.len()];
    for t in 0..steps {
        for s in 0..width {
            let o = &mut occupancy[t * classes + ext[s]];
            *o = log_add(*o, alpha[t * width + s] + beta[t * width + s]);
        }
    }
    let grad = logp.iter().zip(&occupancy).map(|(lp, occ)| lp.exp() - (occ - lp - loglik).exp()).collect();
    (-loglik, grad)
}

impl CtcLoss {
    fn blank(&self, classes: usize) -> usize {
        match self.0.blank_label {
            BlankLabel::First => 0,
            BlankLabel::Last => classes - 1,
        }
    }

    /// Index of each optional input among the inputs.
    fn length_inputs(&self) -> (Option<usize>, Option<usize>) {
        let data = self.0.use_data_lengths.then_some(2);
        let label = self.0.use_label_lengths.then_some(2 + usize::from(self.0.use_data_lengths));
        (data, label)
    }

    /// The symbols of label row `n` (cut at the padding or by its length), checked against the
    /// alphabet.
    fn row(&self, label: &[f64], width: usize, n: usize, length: Option<f64>, classes: usize) -> Result<Vec<usize>> {
        let row = &label[n * width..(n + 1) * width];
        let first = self.0.blank_label == BlankLabel::First;
        let row: Vec<i64> = match length {
            Some(len) => {
                if !(0.0..=width as f64).contains(&len) {
                    return Err(Error::Value(format!(
                        "{NAME}: label_lengths[{n}] = {len} is outside [0, {width}] (label rows have {width} entries)"
                    )));
                }
                row[..len as usize].iter().map(|&v| v as i64).collect()
            }
            None => {
                let pad = if first { 0 } else { -1 };
                row.iter().map(|&v| v as i64).take_while(|&v| v != pad).collect()
            }
        };
        // As MXNet: with the blank last, a label may name the blank class itself.
        let (lo, hi) = if first { (1, classes as i64) } else { (0, classes as i64) };
        if let Some(bad) = row.iter().find(|&&v| v < lo || v >= hi) {
            return Err(Error::Value(format!(
                "{NAME}: label values must lie in [{lo}, {hi}) for {classes} classes with blank_label='{}', got {bad} in row {n}",
                if first { "first" } else { "last" }
            )));
        }
        Ok(row.into_iter().map(|v| v as usize).collect())
    }
}

impl Op for CtcLoss {
    fn name(&self) -> &'static str {
        NAME
    }
    fn arg_names(&self) -> &'static [&'static str] {
        match (self.0.use_data_lengths, self.0.use_label_lengths) {
            (false, false) => &["data", "label"],
            (true, false) => &["data", "label", "data_lengths"],
            (false, true) => &["data", "label", "label_lengths"],
            (true, true) => &["data", "label", "data_lengths", "label_lengths"],
        }
    }
    fn num_outputs(&self) -> usize {
        2
    }
    fn num_visible_outputs(&self) -> usize {
        1
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.0.to_attrs()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let data = &inputs[0];
        float_only(NAME, "data", data.dtype)?;
        let shapes = || {
            inputs.iter().zip(self.arg_names()).map(|(m, n)| format!("{n} {}", fmt_shape(&m.shape))).collect::<Vec<_>>()
        };
        if data.shape.len() != 3 || data.shape[2] < 2 {
            return Err(Error::Shape(format!(
                "{NAME}: data must have shape (sequence_length, batch, alphabet_size) with alphabet_size >= 2 (a blank and a class), got {}",
                shapes().join(", ")
            )));
        }
        let (steps, batch) = (data.shape[0], data.shape[1]);
        let label = &inputs[1].shape;
        let lengths_ok = inputs[2..].iter().all(|m| m.shape.as_slice() == [batch]);
        if steps == 0 || label.len() != 2 || label[0] != batch || !lengths_ok {
            return Err(Error::Shape(format!(
                "{NAME}: expected data (T, N, C) with T > 0, label (N, L) and lengths (N,), got {}",
                shapes().join(", ")
            )));
        }
        Ok(vec![Meta::new(&[batch], data.dtype), data.clone()])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let shape = inputs[0].shape().to_vec();
        let (steps, batch, classes) = (shape[0], shape[1], shape[2]);
        let data = inputs[0].to_f64_vec();
        let label = inputs[1].to_f64_vec();
        let width = inputs[1].shape()[1];
        let (data_len_at, label_len_at) = self.length_inputs();
        let data_lens = data_len_at.map(|i| inputs[i].to_f64_vec());
        let label_lens = label_len_at.map(|i| inputs[i].to_f64_vec());
        let mut losses = vec![0.0; batch];
        let mut grad = vec![0.0; data.len()];
        for n in 0..batch {
            let used = match &data_lens {
                Some(l) if !(1.0..=steps as f64).contains(&l[n]) => {
                    return Err(Error::Value(format!(
                        "{NAME}: data_lengths[{n}] = {} is outside [1, {steps}] for data of shape {}",
                        l[n],
                        fmt_shape(&shape)
                    )))
                }
                Some(l) => l[n] as usize,
                None => steps,
            };
            let labels = self.row(&label, width, n, label_lens.as_ref().map(|l| l[n]), classes)?;
            // Sequence n's scores, step-major: data[t, n, :].
            let mut scores = Vec::with_capacity(used * classes);
            for t in 0..used {
                let at = (t * batch + n) * classes;
                scores.extend_from_slice(&data[at..at + classes]);
            }
            let (loss, g) = ctc_one(&log_softmax(&scores, classes), classes, &labels, self.blank(classes));
            losses[n] = loss;
            for (t, row) in g.chunks(classes).enumerate() {
                let at = (t * batch + n) * classes;
                grad[at..at + classes].copy_from_slice(row);
            }
        }
        outputs[0].write_from(&NDArray::from_vec(losses, &[batch])?)?;
        outputs[1].write_from(&NDArray::from_vec(grad, &shape)?)
    }
    fn saves(&self) -> Saves {
        Saves::Outputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], outputs: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let shape = g.shape(outputs[1]);
        let head = g.reshape(og[0], &[1, shape[1], 1])?;
        let head = g.broadcast_to(head, &shape)?;
        let mut grads = vec![Some(g.mul(outputs[1], head)?)];
        grads.resize(inputs.len(), None);
        Ok(grads)
    }
}

fn build_ctc(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(CtcLoss(CtcParams::parse(a)?)))
}

/// The CTC loss op's declaration.
pub const DEFS: &[OpDef] = &[OpDef {
    name: NAME,
    aliases: &["ctc_loss", "_contrib_CTCLoss", "_contrib_ctc_loss"],
    args: &["data", "label", "data_lengths?", "label_lengths?"],
    doc: "Connectionist Temporal Classification loss per sequence of data (T, N, C) for labels (N, L); blank class 0 ('first') or C-1 ('last').",
    params: CtcParams::schema,
    build: build_ctc,
}];
