//! ResNet-18's convolutions at the issue-18 training workload (batch 8, 3×112×112 input), shared
//! by the `conv_layers` criterion bench and the `conv_report` table.

use ferrograd_kernels::conv::{ConvShape, Geom};

/// Images per batch.
pub const BATCH: usize = 8;

/// One convolution: `(name, in channels, out channels, groups, input side, kernel, stride, pad)`.
pub type Layer = (&'static str, usize, usize, usize, usize, usize, usize, usize);

/// Every distinct convolution of ResNet-18 (v1, 112² input: conv1 gives 56², the max-pool 28²),
/// in network order, then one MobileNet v2 depthwise layer for comparison.
pub const LAYERS: &[Layer] = &[
    ("conv1_3to64_7x7s2_112", 3, 64, 1, 112, 7, 2, 3),
    ("layer1_64to64_3x3_28", 64, 64, 1, 28, 3, 1, 1),
    ("layer2_64to128_3x3s2_28", 64, 128, 1, 28, 3, 2, 1),
    ("layer2_128to128_3x3_14", 128, 128, 1, 14, 3, 1, 1),
    ("layer2_down_64to128_1x1s2_28", 64, 128, 1, 28, 1, 2, 0),
    ("layer3_128to256_3x3s2_14", 128, 256, 1, 14, 3, 2, 1),
    ("layer3_256to256_3x3_7", 256, 256, 1, 7, 3, 1, 1),
    ("layer3_down_128to256_1x1s2_14", 128, 256, 1, 14, 1, 2, 0),
    ("layer4_256to512_3x3s2_7", 256, 512, 1, 7, 3, 2, 1),
    ("layer4_512to512_3x3_4", 512, 512, 1, 4, 3, 1, 1),
    ("layer4_down_256to512_1x1s2_7", 256, 512, 1, 7, 1, 2, 0),
    ("mobilenet_dw_144_3x3_28", 144, 144, 144, 28, 3, 1, 1),
];

/// A layer's shape at [`BATCH`] images, with its input, weight and output lengths.
pub fn shape(&(_, c, f, groups, side, k, s, p): &Layer) -> (ConvShape, [usize; 3]) {
    let out = (side + 2 * p - k) / s + 1;
    let g = Geom { c, inp: [1, side, side], out: [1, out, out], k: [1, k, k], s: [1, s, s], p: [0, p, p], d: [1; 3] };
    let lens = [BATCH * c * side * side, f * c / groups * k * k, BATCH * f * out * out];
    (ConvShape { n: BATCH, f, groups, g }, lens)
}

/// The GEMM a layer's forward lowers to, `(M, K, N)` = (out channels, in channels per group ×
/// kernel area, batch × output plane): its FLOPs equal the convolution's,
/// `2·n·f·(c/groups)·k²·out²`.
pub fn gemm_equivalent(&(_, c, f, groups, side, k, s, p): &Layer) -> (usize, usize, usize) {
    let out = (side + 2 * p - k) / s + 1;
    (f, c / groups * k * k, BATCH * out * out)
}

/// FLOPs of one pass (forward, data gradient or weight gradient: each is one such product).
pub fn flops(layer: &Layer) -> u64 {
    let (m, k, n) = gemm_equivalent(layer);
    2 * (m * k * n) as u64
}
