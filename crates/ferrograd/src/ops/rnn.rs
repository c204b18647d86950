//! `RNN`: MXNet's fused recurrent layer (`rnn_relu`, `rnn_tanh`, `lstm`, `gru`; stacked,
//! optionally bidirectional, dropout between layers) and `_backward_RNN`, its native
//! backpropagation through time.
//!
//! Inputs follow MXNet: `data (T, N, I)`, `parameters` (one flat vector, MXNet's packing — see
//! `ferrograd_kernels::rnn`), `state (L·D, N, H)` and, for LSTM, `state_cell`. Outputs: `out
//! (T, N, D·H)`, with `state_outputs` also `hy` (and `cy` for LSTM), plus a hidden *reserve*
//! (what the backward reads: gates, cells, layer outputs, dropout masks). The gradient rule calls
//! `_backward_RNN` on the saved inputs and reserve, unless the gradient is to be differentiated
//! again: then it is built from differentiable ops ([`super::rnn_grad`]).

use std::sync::Arc;

use ferrograd_kernels::rnn::{backward, forward, Dims, Mode};

use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::attrs::fmt_float;
use crate::ops::conv::{check_float, Contig};
use crate::ops::params::{OpDef, OpParams, ParamEnum};
use crate::ops::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};

/// The recurrence of `RNN`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ParamEnum)]
pub enum RnnMode {
    Gru,
    Lstm,
    #[param(name = "rnn_relu")]
    RnnRelu,
    #[param(name = "rnn_tanh")]
    RnnTanh,
}

/// `RNN`'s parameters (MXNet 1.9.1's names and defaults).
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct RnnParams {
    /// Hidden units per layer and direction.
    pub state_size: i64,
    /// Number of stacked layers.
    pub num_layers: i64,
    /// Run a second, time-reversed layer and concatenate both outputs.
    #[param(default = false)]
    pub bidirectional: bool,
    /// The recurrence: rnn_relu, rnn_tanh, lstm or gru.
    pub mode: RnnMode,
    /// Dropout probability on the outputs of every layer but the last (training only).
    #[param(default = 0.0)]
    pub p: f64,
    /// Also return the final hidden state (and cell state for LSTM).
    #[param(default = false)]
    pub state_outputs: bool,
    /// LSTM projection size (not supported).
    #[param(default = None)]
    pub projection_size: Option<i64>,
    /// Lower bound the LSTM cell state is clipped to after each step.
    #[param(default = None)]
    pub lstm_state_clip_min: Option<f64>,
    /// Upper bound the LSTM cell state is clipped to after each step.
    #[param(default = None)]
    pub lstm_state_clip_max: Option<f64>,
    /// Whether clipping maps NaN cell states to the bounds (accepted; NaN stays NaN).
    #[param(default = false)]
    pub lstm_state_clip_nan: bool,
    /// Take a per-sequence length input (not supported).
    #[param(default = false)]
    pub use_sequence_length: bool,
}

const ARGS: &[&str] = &["data", "parameters", "state"];
const ARGS_LSTM: &[&str] = &["data", "parameters", "state", "state_cell"];
const BACK_ARGS: &[&str] = &["data", "parameters", "state", "reserve", "ograd", "ograd_state"];
// LSTM's extra inputs come last so that one declaration (trailing optional inputs) serves all modes.
const BACK_ARGS_LSTM: &[&str] =
    &["data", "parameters", "state", "reserve", "ograd", "ograd_state", "state_cell", "ograd_state_cell"];

/// The validated configuration shared by `RNN` and `_backward_RNN`.
#[derive(Clone, Debug, PartialEq)]
pub struct RnnConfig {
    pub params: RnnParams,
    mode: Mode,
    hidden: usize,
    layers: usize,
    dirs: usize,
    clip: Option<(f64, f64)>,
}

impl RnnConfig {
    fn new(op: &str, p: RnnParams) -> Result<RnnConfig> {
        if p.state_size <= 0 || p.num_layers <= 0 {
            return Err(Error::Value(format!(
                "{op}: state_size and num_layers must be positive, got state_size={} num_layers={}",
                p.state_size, p.num_layers
            )));
        }
        if !(0.0..1.0).contains(&p.p) {
            return Err(Error::Value(format!("{op}: dropout p must be in [0, 1), got {}", p.p)));
        }
        if p.projection_size.is_some() {
            return Err(Error::Value(format!("{op}: projection_size (LSTMP) is not implemented in ferrograd")));
        }
        if p.use_sequence_length {
            return Err(Error::Value(format!(
                "{op}: use_sequence_length=True is not implemented in ferrograd (MXNet's CPU RNN does not support it either); \
                 pad the sequences or mask the outputs with SequenceMask"
            )));
        }
        let mode = match p.mode {
            RnnMode::RnnRelu => Mode::Relu,
            RnnMode::RnnTanh => Mode::Tanh,
            RnnMode::Lstm => Mode::Lstm,
            RnnMode::Gru => Mode::Gru,
        };
        let clip = match (p.lstm_state_clip_min, p.lstm_state_clip_max) {
            (None, None) => None,
            (Some(lo), Some(hi)) if mode == Mode::Lstm && lo <= hi => Some((lo, hi)),
            (lo, hi) => {
                return Err(Error::Value(format!(
                    "{op}: lstm_state_clip_min/max must both be given, with min <= max, and only for mode 'lstm'; got {lo:?}, {hi:?} for mode '{}'",
                    p.mode.name()
                )))
            }
        };
        Ok(RnnConfig {
            mode,
            hidden: p.state_size as usize,
            layers: p.num_layers as usize,
            dirs: if p.bidirectional { 2 } else { 1 },
            clip,
            params: p,
        })
    }

    fn is_lstm(&self) -> bool {
        self.mode == Mode::Lstm
    }

    fn dims(&self, data: &[usize], dropout: bool) -> Dims {
        Dims {
            mode: self.mode,
            seq: data[0],
            batch: data[1],
            input: data[2],
            hidden: self.hidden,
            layers: self.layers,
            dirs: self.dirs,
            dropout,
            clip: self.clip,
        }
    }

    fn describe(&self) -> String {
        format!(
            "mode '{}', state_size {}, num_layers {}, bidirectional {}",
            self.params.mode.name(),
            self.hidden,
            self.layers,
            if self.dirs == 2 { "True" } else { "False" }
        )
    }

    fn state_shape(&self, data: &[usize]) -> Vec<usize> {
        vec![self.layers * self.dirs, data[1], self.hidden]
    }

    /// Checks data, parameters, state(s) shapes; returns the kernel's dims (dropout in the
    /// reserve whenever p > 0, so the reserve size is the same in training and inference).
    fn check(&self, op: &str, names: &[&str], metas: &[Meta]) -> Result<(Dims, DType)> {
        let dt = check_float(op, names, metas)?;
        let data = &metas[0].shape;
        if data.len() != 3 {
            return Err(Error::Shape(format!(
                "{op}: data must be 3-D (sequence length, batch, input size) — layout TNC, got shape {}",
                fmt_shape(data)
            )));
        }
        let dims = self.dims(data, self.params.p > 0.0 && self.layers > 1);
        let want = dims.param_size();
        if metas[1].shape.as_slice() != [want] {
            return Err(Error::Shape(format!(
                "{op}: parameters has shape {}, expected ({want},) for {} and input size {}",
                fmt_shape(&metas[1].shape),
                self.describe(),
                data[2]
            )));
        }
        let st = self.state_shape(data);
        let nstates = if self.is_lstm() { 2 } else { 1 };
        for (m, n) in metas[2..2 + nstates].iter().zip(&names[2..]) {
            if m.shape.as_slice() != st.as_slice() {
                return Err(Error::Shape(format!(
                    "{op}: {n} has shape {}, expected {} (num_layers·directions, batch, state_size) for data {} and {}",
                    fmt_shape(&m.shape),
                    fmt_shape(&st),
                    fmt_shape(data),
                    self.describe()
                )));
            }
        }
        Ok((dims, dt))
    }

    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = self.params.to_attrs();
        for (k, val) in v.iter_mut() {
            if *k == "p" {
                *val = fmt_float(self.params.p);
            }
        }
        v
    }
}

/// MXNet `RNN`.
#[derive(Clone, Debug, PartialEq)]
pub struct Rnn {
    pub cfg: RnnConfig,
}

impl Rnn {
    fn visible(&self) -> usize {
        match (self.cfg.params.state_outputs, self.cfg.is_lstm()) {
            (false, _) => 1,
            (true, false) => 2,
            (true, true) => 3,
        }
    }
}

impl Op for Rnn {
    fn name(&self) -> &'static str {
        "RNN"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        if self.cfg.is_lstm() {
            ARGS_LSTM
        } else {
            ARGS
        }
    }
    fn num_outputs(&self) -> usize {
        self.visible() + 1
    }
    fn num_visible_outputs(&self) -> usize {
        self.visible()
    }
    fn is_random(&self) -> bool {
        self.cfg.params.p > 0.0 && self.cfg.layers > 1
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.cfg.attrs()
    }
    fn infer_missing(&self, inputs: &[Option<Meta>]) -> Vec<Option<Meta>> {
        let Some(d) = inputs.first().cloned().flatten() else { return Vec::new() };
        if d.shape.len() != 3 {
            return Vec::new();
        }
        let size = self.cfg.dims(&d.shape, false).param_size();
        let st = Meta::new(&self.cfg.state_shape(&d.shape), d.dtype);
        let mut v = vec![None, Some(Meta::new(&[size], d.dtype)), Some(st.clone())];
        if self.cfg.is_lstm() {
            v.push(Some(st));
        }
        v
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let (dims, dt) = self.cfg.check(self.name(), self.arg_names(), inputs)?;
        let data = &inputs[0].shape;
        let mut out = vec![Meta::new(&[data[0], data[1], self.cfg.dirs * self.cfg.hidden], dt)];
        let st = Meta::new(&self.cfg.state_shape(data), dt);
        out.extend(std::iter::repeat_n(st, self.visible() - 1));
        out.push(Meta::new(&[dims.reserve_size()], dt));
        Ok(out)
    }
    fn forward(&self, ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let metas: Vec<Meta> = inputs.iter().map(|a| Meta::new(a.shape(), a.dtype())).collect();
        let (dims, dt) = self.cfg.check(self.name(), self.arg_names(), &metas)?;
        let masks = if dims.dropout {
            let p = self.cfg.params.p;
            let keep = 1.0 / (1.0 - p);
            let u = if ctx.is_train {
                crate::random::uniform(0.0, 1.0, &[dims.mask_size()], DType::F64)?.to_f64_vec()
            } else {
                vec![1.0; dims.mask_size()]
            };
            let m: Vec<f64> = u
                .into_iter()
                .map(|v| {
                    if !ctx.is_train {
                        1.0
                    } else if v >= p {
                        keep
                    } else {
                        0.0
                    }
                })
                .collect();
            Some(m)
        } else {
            None
        };
        let ins: Vec<Contig> = inputs.iter().map(Contig::new).collect();
        let n_state = dims.layers * dims.dirs * dims.batch * dims.hidden;
        let vis = self.visible();
        let (head, rest) = outputs.split_at_mut(1);
        let (states, reserve) = rest.split_at_mut(vis - 1);
        float_kernel!(self.name(), dt, T => {
            let masks: Option<Vec<T>> = masks.map(|m| m.into_iter().map(|v| v as T).collect());
            let mut hy = vec![0.0 as T; n_state];
            let mut cy = vec![0.0 as T; if self.cfg.is_lstm() { n_state } else { 0 }];
            let c0 = if self.cfg.is_lstm() { Some(ins[3].get::<T>()) } else { None };
            head[0].write_out::<T, _>(|y| {
                reserve[0].write_out::<T, _>(|res| {
                    forward(&dims, ins[0].get(), ins[1].get(), ins[2].get(), c0, masks.as_deref(), y, &mut hy, &mut cy, res)
                })
            })??;
            if let Some(s) = states.get_mut(0) {
                s.write_out::<T, _>(|o| o.copy_from_slice(&hy))?;
            }
            if let Some(s) = states.get_mut(1) {
                s.write_out::<T, _>(|o| o.copy_from_slice(&cy))?;
            }
            Ok(())
        })
    }
    fn saves(&self) -> Saves {
        Saves::InputsAndOutputs
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], outputs: &[Val], og: &[Val]) -> Result<Vec<Option<Val>>> {
        let lstm = self.cfg.is_lstm();
        if g.differentiable() {
            // The gradient will be differentiated again: BPTT written in differentiable ops.
            let metas: Vec<Meta> = inputs.iter().map(|&v| g.meta(v)).collect();
            let (dims, _) = self.cfg.check(self.name(), self.arg_names(), &metas)?;
            let vis = self.visible();
            return super::rnn_grad::grad(g, dims, vis, inputs, outputs[vis], og);
        }
        // First order only (an executor, or a backward without create_graph): the fused BPTT.
        let mut ins: Vec<Val> = inputs[..3].to_vec();
        ins.push(outputs[self.visible()]);
        ins.push(og[0]);
        let (dhy, dcy) = if self.cfg.params.state_outputs {
            (og[1], if lstm { Some(og[2]) } else { None })
        } else {
            let z = g.zeros_like(inputs[2])?;
            (z, Some(z))
        };
        ins.push(dhy);
        if lstm {
            ins.push(inputs[3]);
            ins.extend(dcy);
        }
        let grads = g.apply(Arc::new(RnnBackward { cfg: self.cfg.clone() }), &ins)?;
        Ok(grads.into_iter().map(Some).collect())
    }
}

/// `_backward_RNN(data, parameters, state, reserve, ograd, ograd_state, [state_cell,
/// ograd_state_cell])` → gradients of data, parameters, state and (LSTM) state_cell.
#[derive(Clone, Debug, PartialEq)]
pub struct RnnBackward {
    pub cfg: RnnConfig,
}

impl Op for RnnBackward {
    fn name(&self) -> &'static str {
        "_backward_RNN"
    }
    fn arg_names(&self) -> &'static [&'static str] {
        if self.cfg.is_lstm() {
            BACK_ARGS_LSTM
        } else {
            BACK_ARGS
        }
    }
    fn num_outputs(&self) -> usize {
        if self.cfg.is_lstm() {
            4
        } else {
            3
        }
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        self.cfg.attrs()
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let lstm = self.cfg.is_lstm();
        // The forward's inputs, in the forward's order, get the forward's checks.
        let mut fwd: Vec<Meta> = inputs[..3].to_vec();
        if lstm {
            fwd.push(inputs[6].clone());
        }
        let (dims, dt) = self.cfg.check(self.name(), if lstm { ARGS_LSTM } else { ARGS }, &fwd)?;
        check_float(self.name(), self.arg_names(), inputs)?;
        let data = &inputs[0].shape;
        let mut expect = vec![
            (3, vec![dims.reserve_size()]),
            (4, vec![data[0], data[1], self.cfg.dirs * self.cfg.hidden]),
            (5, self.cfg.state_shape(data)),
        ];
        if lstm {
            expect.push((7, self.cfg.state_shape(data)));
        }
        for (k, want) in expect {
            if inputs[k].shape.as_slice() != want.as_slice() {
                return Err(Error::Shape(format!(
                    "{}: {} has shape {}, expected {}",
                    self.name(),
                    self.arg_names()[k],
                    fmt_shape(&inputs[k].shape),
                    fmt_shape(&want)
                )));
            }
        }
        Ok(fwd.iter().map(|m| Meta::new(&m.shape, dt)).collect())
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let metas: Vec<Meta> = inputs.iter().map(|a| Meta::new(a.shape(), a.dtype())).collect();
        let lstm = self.cfg.is_lstm();
        let dt = self.infer(&metas)?[0].dtype;
        let dims = self.cfg.dims(&metas[0].shape, self.cfg.params.p > 0.0 && self.cfg.layers > 1);
        let ins: Vec<Contig> = inputs.iter().map(Contig::new).collect();
        let n_state = dims.layers * dims.dirs * dims.batch * dims.hidden;
        let (dx_out, rest) = outputs.split_at_mut(1);
        let (dw_out, states) = rest.split_at_mut(1);
        float_kernel!(self.name(), dt, T => {
            let (c0, dcy) = if lstm { (Some(ins[6].get::<T>()), Some(ins[7].get::<T>())) } else { (None, None) };
            let mut dh0 = vec![0.0 as T; n_state];
            let mut dc0 = vec![0.0 as T; if lstm { n_state } else { 0 }];
            dx_out[0].write_out::<T, _>(|dx| {
                dw_out[0].write_out::<T, _>(|dw| {
                    backward(
                        &dims,
                        ins[0].get(),
                        ins[1].get(),
                        ins[2].get(),
                        c0,
                        ins[3].get(),
                        ins[4].get(),
                        Some(ins[5].get()),
                        dcy,
                        dx,
                        dw,
                        &mut dh0,
                        &mut dc0,
                    )
                })
            })??;
            states[0].write_out::<T, _>(|o| o.copy_from_slice(&dh0))?;
            if lstm {
                states[1].write_out::<T, _>(|o| o.copy_from_slice(&dc0))?;
            }
            Ok(())
        })
    }
    fn differentiable(&self) -> bool {
        false
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, _g: &mut Grad<'_>, _inputs: &[Val], _outputs: &[Val], _og: &[Val]) -> Result<Vec<Option<Val>>> {
        Err(Error::Value(
            "_backward_RNN has no gradient; to differentiate an RNN gradient again, differentiate RNN itself \
             with create_graph=True (its rule then builds the gradient from differentiable ops)"
                .into(),
        ))
    }
}

fn build_rnn(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(Rnn { cfg: RnnConfig::new(&a.op, RnnParams::parse(a)?)? }))
}

fn build_rnn_backward(a: &Attrs) -> Result<OpRef> {
    Ok(Arc::new(RnnBackward { cfg: RnnConfig::new(&a.op, RnnParams::parse(a)?)? }))
}

/// The recurrent ops' declarations.
pub const DEFS: &[OpDef] = &[
    OpDef {
        name: "RNN",
        aliases: &[],
        args: &["data", "parameters", "state", "state_cell?"],
        doc: "Fused multi-layer (bidirectional) RNN/LSTM/GRU over a TNC sequence with MXNet's flat parameter packing.",
        params: RnnParams::schema,
        build: build_rnn,
    },
    OpDef {
        name: "_backward_RNN",
        aliases: &[],
        args: &["data", "parameters", "state", "reserve", "ograd", "ograd_state", "state_cell?", "ograd_state_cell?"],
        doc: "Backpropagation through time of RNN from its inputs, reserve and output gradients.",
        params: RnnParams::schema,
        build: build_rnn_backward,
    },
];
