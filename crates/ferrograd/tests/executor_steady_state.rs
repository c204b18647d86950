//! The executor's steady state: once bound and run once, a forward + backward step of an MLP
//! allocates no array buffers (every value lives in the memory plan or in the caller's arrays),
//! and the plan's peak stays at the figure recorded in `docs/benchmarks.md`.
//!
//! A counting global allocator sees every allocation of this test binary; the file holds one test
//! so no other test allocates at the same time.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use ferrograd::executor::{Bindings, Executor};
use ferrograd::ops::backprop::GradReq;
use ferrograd::ops::AttrValue;
use ferrograd::symbol::Symbol;
use ferrograd::{DType, NDArray};

/// Allocations at least this large are array buffers (the smallest value of the MLP below, the
/// 128×10 f32 logits, is 5 KiB); smaller ones are bookkeeping.
const BUFFER_BYTES: usize = 4096;

struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static LARGE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() >= BUFFER_BYTES && COUNTING.load(Ordering::Relaxed) {
            LARGE.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same layout contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() >= BUFFER_BYTES && COUNTING.load(Ordering::Relaxed) {
            LARGE.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same layout contract as the caller's.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size >= BUFFER_BYTES && COUNTING.load(Ordering::Relaxed) {
            LARGE.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// The memory plan's peak for this MLP (batch 128, 784 → 512 → 10, every gradient written), in
/// bytes, when the test was written: the plan may shrink it, never grow it.
const MLP_PLANNED_BYTES: usize = 791_552;

/// 784 → 512 (relu) → 10 with SoftmaxOutput; weights and the label are the ops' own variables
/// (`fc1_weight`, ..., `softmax_label`).
fn mlp() -> Symbol {
    let hidden = |n| [("num_hidden", AttrValue::Int(n))];
    let fc1 = Symbol::op("FullyConnected", "fc1", &[Symbol::var("data")], &hidden(512)).unwrap();
    let r = Symbol::op("Activation", "relu1", &[fc1], &[("act_type", AttrValue::Str("relu".into()))]).unwrap();
    let fc2 = Symbol::op("FullyConnected", "fc2", &[r], &hidden(10)).unwrap();
    Symbol::op("SoftmaxOutput", "softmax", &[fc2], &[]).unwrap()
}

/// A deterministic array with values in [-0.5, 0.5).
fn filled(shape: &[usize], seed: usize) -> NDArray {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|i| ((i * 7919 + seed * 104_729) % 1000) as f32 / 1000.0 - 0.5).collect();
    NDArray::from_vec(v, shape).unwrap()
}

#[test]
fn mlp_step_allocates_no_buffers_and_plan_peak_does_not_grow() {
    let labels: Vec<f32> = (0..128).map(|i| (i % 10) as f32).collect();
    let args = vec![
        filled(&[128, 784], 1),
        filled(&[512, 784], 2),
        filled(&[512], 3),
        filled(&[10, 512], 4),
        filled(&[10], 5),
        NDArray::from_vec(labels, &[128]).unwrap(),
    ];
    let grads = args.iter().map(|a| Some(NDArray::zeros(a.shape(), DType::F32))).collect();
    let reqs = vec![GradReq::Write; args.len()];
    let mut exe = Executor::bind(&mlp(), Bindings { args, grads, reqs, aux: Vec::new() }).unwrap();
    assert!(
        exe.planned_bytes <= MLP_PLANNED_BYTES,
        "memory plan peak grew: {} bytes, recorded {MLP_PLANNED_BYTES}",
        exe.planned_bytes
    );

    // Warm-up: the first runs fill lazily created state (the loss head's ones). Each thread's
    // GEMM packing buffers are made once per thread, at full size, here: otherwise a pool thread
    // that happened to take no block during the warm-up (scheduling under load) would make its
    // buffer inside the counted steps.
    ferrograd_kernels::gemm::prepare_threads();
    for _ in 0..5 {
        exe.forward(true, &mut |_, _| {}).unwrap();
        exe.backward(&[None], true).unwrap();
    }
    let first = exe.grads[1].as_ref().unwrap().to_f64_vec();

    COUNTING.store(true, Ordering::SeqCst);
    for _ in 0..3 {
        exe.forward(true, &mut |_, _| {}).unwrap();
        exe.backward(&[None], true).unwrap();
    }
    COUNTING.store(false, Ordering::SeqCst);
    let large = LARGE.load(Ordering::SeqCst);
    assert_eq!(large, 0, "{large} buffer-sized allocations in 3 steady-state steps");

    // The steps did real work: the same inputs give the same, non-zero weight gradient.
    let again = exe.grads[1].as_ref().unwrap().to_f64_vec();
    assert_eq!(first, again);
    assert!(first.iter().any(|&g| g != 0.0));
}
