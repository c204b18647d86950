//! `UpSampling` with `sample_type='nearest'` (one input): each spatial position of the last two
//! axes is repeated `scale × scale` times. It is the adjoint of sum pooling with kernel = stride =
//! `scale`, so its gradient is that `Pooling`, whose own gradient is this op again.

use std::sync::Arc;

use ferrograd_kernels::conv::{pool_linear_backward, PoolKind};

use super::pooling::{PoolParams, PoolType, Pooling};
use super::{Contig, Window};
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ndarray::{Meta, NDArray};
use crate::ops::params::{OpDef, OpParams, ParamEnum};
use crate::ops::{Attrs, Ctx, Grad, Op, OpRef, Saves, Val};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpSampling {
    pub scale: usize,
}

impl UpSampling {
    fn window(&self) -> Window {
        Window { kernel: vec![self.scale; 2], stride: vec![self.scale; 2], dilate: vec![1; 2], pad: vec![0; 2] }
    }
    fn out_shape(&self, x: &[usize]) -> Result<Vec<usize>> {
        if x.len() != 4 {
            return Err(Error::Shape(format!("UpSampling: data must be 4-D (N, C, H, W), got shape {}", fmt_shape(x))));
        }
        Ok(vec![x[0], x[1], x[2] * self.scale, x[3] * self.scale])
    }
}

impl Op for UpSampling {
    fn name(&self) -> &'static str {
        "UpSampling"
    }
    fn attrs(&self) -> Vec<(&'static str, String)> {
        vec![("scale", self.scale.to_string()), ("sample_type", "nearest".into()), ("num_args", "1".into())]
    }
    fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>> {
        let dt = super::check_float(self.name(), &["data"], inputs)?;
        Ok(vec![Meta::new(&self.out_shape(&inputs[0].shape)?, dt)])
    }
    fn forward(&self, _ctx: &Ctx, inputs: &[NDArray], outputs: &mut [NDArray]) -> Result<()> {
        let xs = inputs[0].shape().to_vec();
        let out = self.out_shape(&xs)?;
        let g = self.window().geom(1, &out[2..], &xs[2..]);
        let x = Contig::new(&inputs[0]);
        match inputs[0].dtype() {
            DType::F32 => outputs[0].write_out::<f32, _>(|y| pool_linear_backward(&g, PoolKind::Sum, x.get(), y)),
            DType::F64 => outputs[0].write_out::<f64, _>(|y| pool_linear_backward(&g, PoolKind::Sum, x.get(), y)),
            other => Err(Error::DType(format!("UpSampling: unsupported dtype {other}"))),
        }
    }
    fn saves(&self) -> Saves {
        Saves::None
    }
    fn grad(&self, g: &mut Grad<'_>, _inputs: &[Val], _outputs: &[Val], out_grads: &[Val]) -> Result<Vec<Option<Val>>> {
        let p = PoolParams {
            win: Some(self.window()),
            pool_type: PoolType::Sum,
            global_pool: false,
            full: false,
            count_include_pad: true,
            p_value: 0,
            layout: None,
        };
        Ok(vec![Some(g.apply1(Pooling { p }, &[out_grads[0]])?)])
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
    /// Integer factor applied to height and width.
    pub scale: i64,
    /// Channels of bilinear's weight (accepted and ignored: only nearest is supported).
    #[param(default = 0)]
    pub num_filter: i64,
    /// Interpolation method (only nearest is supported).
    pub sample_type: SampleType,
    /// How several inputs combine (accepted and ignored: one input only).
    #[param(default = MultiInputMode::Concat)]
    pub multi_input_mode: MultiInputMode,
    /// Number of inputs (only 1 is supported).
    #[param(default = 1)]
    pub num_args: i64,
    /// Scratch memory limit in MB (accepted and ignored).
    #[param(default = 512)]
    pub workspace: i64,
}

fn build_upsampling(a: &Attrs) -> Result<OpRef> {
    let p = UpSamplingParams::parse(a)?;
    if p.scale < 1 {
        return Err(Error::Value(format!("UpSampling: parameter 'scale' must be a positive integer, got {}", p.scale)));
    }
    if p.sample_type != SampleType::Nearest {
        return Err(Error::Value(format!(
            "UpSampling: sample_type '{}' is not supported (only 'nearest')",
            p.sample_type.name()
        )));
    }
    if p.num_args != 1 {
        return Err(Error::Value(format!("UpSampling: only num_args=1 is supported, got {}", p.num_args)));
    }
    Ok(Arc::new(UpSampling { scale: p.scale as usize }))
}

/// The upsampling op's declaration.
pub const DEFS: &[OpDef] = &[OpDef {
    name: "UpSampling",
    aliases: &[],
    args: &["data"],
    doc: "Nearest-neighbour upsampling of (N, C, H, W) by an integer scale (sample_type='nearest', one input).",
    params: UpSamplingParams::schema,
    build: build_upsampling,
}];
