//! Shared inputs of the benchmarks in `benches/` (the benches themselves live there).

pub mod resnet;
