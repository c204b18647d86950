//! The calling thread taken into the global pool (`par::join_pool`, what the Python module does
//! at import): its parallel loops still split, nested work inside their tasks stays serial, and
//! results keep their bits. One test in its own binary: the global pool is per process.

use ferrograd_kernels::matmul::gemm_with;
use ferrograd_kernels::par::{self, Cost};

#[test]
fn joined_caller_runs_loops_in_place_with_the_same_results() {
    // A product computed before the pool exists, on this thread alone.
    let (m, n, k) = (96, 200, 150);
    let a: Vec<f32> = (0..m * k).map(|i| ((i * 7 % 13) as f32 - 6.0) * 0.37).collect();
    let b: Vec<f32> = (0..k * n).map(|i| ((i * 5 % 11) as f32 - 5.0) * 0.21).collect();
    let serial_opts = ferrograd_kernels::gemm::Options { tasks: Some(1), ..Default::default() };
    let mut serial = vec![0f32; m * n];
    gemm_with(m, n, k, &a, (0, k as isize, 1), &b, (0, n as isize, 1), &mut serial, false, serial_opts);

    assert!(par::join_pool(), "the global pool did not exist yet");
    assert!(!par::join_pool(), "a second call finds the pool built");
    assert_eq!(rayon::current_thread_index(), Some(0));
    assert!(!par::in_worker(), "the joined thread is not inside a task");

    // Every task of a parallel loop sees itself as nested work, on whichever thread it runs.
    let work = 1 << 24;
    let nested = par::map_tasks(8, work, Cost::Light, |_| (par::in_worker(), rayon::current_thread_index()));
    assert!(nested.iter().all(|&(inside, _)| inside), "{nested:?}");
    assert!(!par::in_worker(), "the flag is cleared after the loop");

    // A product split over tasks from the joined thread gives the serial bits.
    let split_opts = ferrograd_kernels::gemm::Options { tasks: Some(6), ..Default::default() };
    let mut split = vec![0f32; m * n];
    gemm_with(m, n, k, &a, (0, k as isize, 1), &b, (0, n as isize, 1), &mut split, false, split_opts);
    assert!(serial.iter().zip(&split).all(|(x, y)| x.to_bits() == y.to_bits()));

    // Chunked elementwise work covers every element exactly once.
    let mut out = vec![0u32; 1 << 20];
    par::for_each_chunk(&mut out, Cost::Light, |start, chunk| {
        assert!(par::in_worker());
        for (i, v) in chunk.iter_mut().enumerate() {
            *v += (start + i) as u32;
        }
    });
    assert!(out.iter().enumerate().all(|(i, &v)| v == i as u32));
}
