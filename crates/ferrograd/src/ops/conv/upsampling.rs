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
            p_value: 2,
            layout: None,
        };
        Ok(vec![Some(g.apply1(Pooling { p }, &[out_grads[0]])?)])
    }
}

pub fn upsampling_op(a: &Attrs) -> Result<OpRef> {
    let scale = a.int_or("scale", 0)?;
    if scale < 1 {
        return Err(Error::Value(format!("UpSampling: parameter 'scale' must be a positive integer, got {scale}")));
    }
    match a.str_or("sample_type", "nearest")? {
        "nearest" => {}
        other => {
            return Err(Error::Value(format!("UpSampling: sample_type '{other}' is not supported (only 'nearest')")))
        }
    }
    let n = a.int_or("num_args", 1)?;
    if n != 1 {
        return Err(Error::Value(format!("UpSampling: only num_args=1 is supported, got {n}")));
    }
    Ok(Arc::new(UpSampling { scale: scale as usize }))
}
