//! Convolution, pooling and normalisation kernels over contiguous NC(D)(H)W buffers.
//!
//! Every spatial problem is normalised to three spatial axes (1-D and 2-D problems get leading
//! axes of size 1), so one im2col/col2im pair and one pooling loop serve 1-D, 2-D and 3-D.

mod affine;
mod channels_last;
mod cols;
mod convolution;
mod depthwise;
mod gathered;
mod pool;
mod stats;

pub use affine::{
    channel_affine, channel_affine2, channel_affine2_masked, channel_affine_act, channel_dot_masked, Affine, AffineAct,
    GradAffine,
};
pub use convolution::{conv_backward, conv_forward, conv_forward_then, ConvScratch, ConvShape};
#[doc(hidden)]
pub use gathered::set_enabled as set_gathered_columns;
pub use pool::{pool_forward, pool_linear_backward, pool_max_backward, pool_max_gather, PoolFloat, PoolKind};
pub use stats::{channel_dot, norm_stats};

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
    pub(crate) fn trivial(&self) -> bool {
        self.k == [1, 1, 1] && self.s == [1, 1, 1] && self.p == [0, 0, 0]
    }
}

/// Calls `f(first_plane, chunk)` over `out` cut into whole planes of `plane` elements, on the
/// calling thread unless the planes' work (`work` elements each, at `cost`) makes rayon pay.
/// Chunks depend only on the problem size and every output belongs to one task, so results do
/// not depend on the thread count.
pub(crate) fn for_plane_chunks<T: Send>(
    out: &mut [T],
    plane: usize,
    work: usize,
    cost: crate::par::Cost,
    f: impl Fn(usize, &mut [T]) + Sync + Send,
) {
    use crate::par;
    let planes = out.len() / plane.max(1);
    if planes < 2 || !par::is_parallel(planes.saturating_mul(work), cost) {
        f(0, out);
        return;
    }
    let per = (par::CHUNK_ELEMS / work.max(1)).clamp(1, planes);
    #[cfg(feature = "rayon")]
    {
        use rayon::prelude::*;
        out.par_chunks_mut(per * plane).enumerate().for_each(|(i, c)| par::in_task(|| f(i * per, c)));
    }
    #[cfg(not(feature = "rayon"))]
    {
        out.chunks_mut(per * plane).enumerate().for_each(|(i, c)| f(i * per, c));
    }
}
