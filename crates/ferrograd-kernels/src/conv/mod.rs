//! Convolution, pooling and normalisation kernels over contiguous NC(D)(H)W buffers.
//!
//! Every spatial problem is normalised to three spatial axes (1-D and 2-D problems get leading
//! axes of size 1), so one im2col/col2im pair and one pooling loop serve 1-D, 2-D and 3-D.

mod convolution;
mod depthwise;
mod pool;
mod stats;

pub use convolution::{conv_backward, conv_forward, ConvShape};
pub use pool::{pool_forward, pool_linear_backward, pool_max_backward, pool_max_gather, PoolFloat, PoolKind};
pub use stats::{channel_affine, channel_affine2, channel_dot, norm_stats};

/// Spatial geometry of one convolution or pooling window problem (three spatial axes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geom {
    /// Channels of the (image-side) input.
    pub c: usize,
    pub inp: [usize; 3],
    pub out: [usize; 3],
    pub k: [usize; 3],
    pub s: [usize; 3],
    pub p: [usize; 3],
    pub d: [usize; 3],
}

impl Geom {
    pub fn in_plane(&self) -> usize {
        self.inp.iter().product()
    }
    pub fn out_plane(&self) -> usize {
        self.out.iter().product()
    }
    pub fn ksize(&self) -> usize {
        self.k.iter().product()
    }
    /// im2col is the identity (1x1 kernel, stride 1, no padding).
    fn trivial(&self) -> bool {
        self.k == [1, 1, 1] && self.s == [1, 1, 1] && self.p == [0, 0, 0]
    }
}
