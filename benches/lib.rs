//! Shared inputs of the benchmarks in `benches/` (the benches themselves live there).

pub mod resnet;

use ferrograd_kernels::Element;

/// Reproducible values in [-1, 1) (xorshift from `seed`): every bench's inputs.
pub fn data<T: Element>(n: usize, seed: u64) -> Vec<T> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            T::from_f64((x >> 11) as f64 / (1u64 << 52) as f64 - 1.0)
        })
        .collect()
}
