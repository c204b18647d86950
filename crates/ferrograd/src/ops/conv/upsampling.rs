//! `UpSampling` with `sample_type='nearest'`. The output's spatial size is the first input's
//! times `scale`; every input is repeated to that size by its own integer factors (output size /
//! input size, per axis), then the inputs are concatenated along the channels
//! (`multi_input_mode='concat'`) or added (`'sum'`). Repeating is the adjoint of sum pooling with
//! kernel = stride = factor, so each input's gradient is that `Pooling` of (its channel slice of)
//! the output gradient, whose own gradient is upsampling again.

use std::sync::Arc;

use ferrograd_kernels::conv::{pool_linear_backward, PoolFloat, PoolKind};

use super::pooling::{PoolParams, PoolType, Pooling};
use super::{Contig, Window};
use crate::dtype::{DType, DTypeElem};
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::params::{OpDef, OpParams, ParamEnum};
use crate::ops::slice::SliceAxis;
use crate::ops::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};

const OP: &str = "UpSampling";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpSampling {
    pub scale: usize,
    pub mode: MultiInputMode,
    pub num_args: usize,
}

/// Where each input goes: its repeat factors (height, width) and first output channel.
struct Plan {
    out: Vec<usize>,
    factors: Vec<[usize; 2]>,
    channel_start: Vec<usize>,
}

fn window(f: [usize; 2]) -> Window {
    Window { kernel: f.to_vec(), stride: f.to_vec(), dilate: vec![1; 2], pad: vec![0; 2] }
}

impl UpSampling {
    fn plan(&self, shapes: &[&[usize]]) -> Result<Plan> {
        if shapes.len() != self.num_args {
            return Err(Error::Value(format!(
                "{OP}: num_args={} but {} input(s) were given",
                self.num_args,
                shapes.len()
            )));
        }
        let all = || shapes.iter().map(|s| fmt_shape(s)).collect::<Vec<_>>().join(", ");
        if let Some(s) = shapes.iter().find(|s| s.len() != 4) {
            return Err(Error::Shape(format!("{OP}: data must be 4-D (N, C, H, W), got shape {}", fmt_shape(s))));
        }
        let first = shapes[0];
        let grow = |v: usize| {
            v.checked_mul(self.scale)
                .ok_or_else(|| Error::Value(format!("{OP}: output size {v} x scale {} overflows", self.scale)))
        };
        let (oh, ow) = (grow(first[2])?, grow(first[3])?);
        let mut factors = Vec::with_capacity(shapes.len());
        let mut channel_start = Vec::with_capacity(shapes.len());
        let mut channels = 0;
        for (i, s) in shapes.iter().enumerate() {
            if s[0] != first[0] {
                return Err(Error::Shape(format!(
                    "{OP}: input {i} has batch size {}, but input 0 has {} (shapes {})",
                    s[0],
                    first[0],
                    all()
                )));
            }
            let factor = |o: usize, v: usize, axis: &str| -> Result<usize> {
                match (o, v) {
                    (0, _) => Ok(1),
                    (_, v) if v > 0 && o.is_multiple_of(v) => Ok(o / v),
                    _ => Err(Error::Shape(format!(
                        "{OP}: input {i}'s {axis} {v} does not divide the output {axis} {o} (input 0's times scale={}; shapes {})",
                        self.scale,
                        all()
                    ))),
                }
            };
            factors.push([factor(oh, s[2], "height")?, factor(ow, s[3], "width")?]);
            match self.mode {
                MultiInputMode::Concat => {
                    channel_start.push(channels);
                    channels += s[1];
                }
                MultiInputMode::Sum => {
                    if s[1] != first[1] {
                        return Err(Error::Shape(format!(
                            "{OP}: multi_input_mode='sum' needs the same number of channels in every input, got shapes {}",
                            all()
                        )));
                    }
                    channel_start.push(0);
                    channels = s[1];
                }
            }
        }
        Ok(Plan { out: vec![first[0], channels, oh, ow], factors, channel_start })
    }

    fn run<T: PoolFloat + DTypeElem>(&self, plan: &Plan, xs: &[Contig], shapes: &[&[usize]], y: &mut [T]) {
        let (n, c, o) = (plan.out[0], plan.out[1], plan.out[2] * plan.out[3]);
        let upsample = |i: usize, dst: &mut [T]| {
            let g = window(plan.factors[i]).geom(1, &plan.out[2..], &shapes[i][2..]);
            pool_linear_backward(&g, PoolKind::Sum, xs[i].get::<T>(), dst);
        };
        if xs.len() == 1 {
            return upsample(0, y);
        }
        let mut tmp = Vec::new();
        for (i, s) in shapes.iter().enumerate() {
            tmp.resize(s[0] * s[1] * o, T::zero());
            upsample(i, &mut tmp);
            match self.mode {
                MultiInputMode::Sum if i > 0 => y.iter_mut().zip(&tmp).for_each(|(a, &b)| *a += b),
                MultiInputMode::Sum => y.copy_from_slice(&tmp),
                MultiInputMode::Concat => {
                    let block = s[1] * o;
                    for b in 0..n {
                        let at = (b * c + plan.channel_start[i]) * o;
                        y[at..at + block].copy_from_slice(&tmp[b * block..(b + 1) * block]);
                    }
                }
            }
        }
    }
}

impl Op for UpSampling {
    fn name(&self) -> &'static str {
        OP
    }
    fn arg_names(&self) -> &'static [&'static str] {
        &["*data"]
    }
    fn variadic(&self) -> bool {
        true
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        let mut v = vec![("scale", self.scale.to_string()), ("sample_type", "nearest".into())];
        v.push(("num_args", self.num_args.to_string()));
        if self.mode == MultiInputMode::Sum {
            v.push(("multi_input_mode", "sum".into()));
        }
        v
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let names: Vec<String> = (0..inputs.len()).map(|i| format!("arg{i}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let dt = super::check_float(OP, &names, inputs)?;
        let shapes: Vec<&[usize]> = inputs.iter().map(|m| &m.shape[..]).collect();
        Ok(vec![Meta::new(&self.plan(&shapes)?.out, dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let shapes: Vec<&[usize]> = inputs.iter().map(|x| x.shape()).collect();
        let plan = self.plan(&shapes)?;
        let xs: Vec<Contig> = inputs.iter().map(Contig::new).collect();
        match inputs[0].dtype() {
            DType::F32 => outputs[0].write_out::<f32, _>(|y| self.run(&plan, &xs, &shapes, y)),
            DType::F64 => outputs[0].write_out::<f64, _>(|y| self.run(&plan, &xs, &shapes, y)),
            other => Err(Error::DType(format!("{OP}: unsupported dtype {other}"))),
        }
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, inputs: &[Val], _outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        let shapes: Vec<Vec<usize>> = inputs.iter().map(|&v| g.shape(v)).collect();
        let refs: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
        let plan = self.plan(&refs)?;
        let mut grads = Vec::with_capacity(inputs.len());
        for (i, s) in shapes.iter().enumerate() {
            let mut gy = out_grads[0];
            if self.mode == MultiInputMode::Concat && inputs.len() > 1 {
                let begin = plan.channel_start[i] as i64;
                gy = g.apply1(SliceAxis { axis: 1, begin, end: Some(begin + s[1] as i64) }, &[gy])?;
            }
            if plan.factors[i] != [1, 1] {
                let p = PoolParams {
                    win: Some(window(plan.factors[i])),
                    pool_type: PoolType::Sum,
                    global_pool: false,
                    full: false,
                    count_include_pad: true,
                    p_value: 0,
                    layout: None,
                };
                gy = g.apply1(Pooling { p }, &[gy])?;
            }
            grads.push(Some(gy));
        }
        Ok(grads)
    }
}

/// `UpSampling`'s `sample_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ParamEnum)]
pub enum SampleType {
    Bilinear,
    Nearest,
}

/// `UpSampling`'s `multi_input_mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ParamEnum)]
pub enum MultiInputMode {
    Concat,
    Sum,
}

/// `UpSampling`'s parameters.
#[derive(Clone, Debug, PartialEq, OpParams)]
pub struct UpSamplingParams {
    /// Integer factor applied to the first input's height and width.
    pub scale: i64,
    /// Channels of bilinear's weight (accepted and ignored: only nearest is supported).
    #[param(default = 0)]
    pub num_filter: i64,
    /// Interpolation method (only nearest is supported).
    pub sample_type: SampleType,
    /// How several inputs combine: concatenated along the channels, or added.
    #[param(default = MultiInputMode::Concat)]
    pub multi_input_mode: MultiInputMode,
    /// Number of inputs.
    #[param(default = 1)]
    pub num_args: i64,
    /// Scratch memory limit in MB (accepted and ignored).
    #[param(default = 512)]
    pub workspace: i64,
}

fn build_upsampling(a: &Attrs) -> Result<OpRef> {
    let p = UpSamplingParams::parse(a)?;
    if p.scale < 1 {
        return Err(Error::Value(format!("{OP}: parameter 'scale' must be a positive integer, got {}", p.scale)));
    }
    if p.sample_type != SampleType::Nearest {
        return Err(Error::Value(format!(
            "{OP}: sample_type '{}' is not supported (only 'nearest')",
            p.sample_type.name()
        )));
    }
    if p.num_args < 1 {
        return Err(Error::Value(format!("{OP}: parameter 'num_args' must be >= 1, got {}", p.num_args)));
    }
    Ok(Arc::new(UpSampling { scale: p.scale as usize, mode: p.multi_input_mode, num_args: p.num_args as usize }))
}

/// The upsampling op's declaration.
pub const DEFS: &[OpDef] = &[OpDef {
    name: "UpSampling",
    aliases: &[],
    args: &["*data"],
    doc: "Nearest-neighbour upsampling of (N, C, H, W) inputs to the first input's size times scale, \
          concatenated along the channels or summed (sample_type='nearest').",
    params: UpSamplingParams::schema,
    build: build_upsampling,
}];
