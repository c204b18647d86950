//! One array used from several Python threads.
//!
//! MXNet's engine serialises writes to one array; ferrograd does the same for every in-place
//! update the binding makes (`a += b`, `a[key] = v`, `src.copyto(a)`): the update holds its
//! storage's *update lock* from reading the current value to writing the result, so concurrent
//! updates of one array (or of views sharing its storage) never lose each other's writes. Reads
//! need no lock: they take a copy-on-write snapshot of the buffer, so a reader sees the value
//! before or after a concurrent write, never half of it.
//!
//! Deadlocks are avoided by construction: a thread holds at most one update lock at a time (an
//! update locks only the array it writes; its operands are read through snapshots), runs no
//! Python code while holding it, and waits for a busy lock with the GIL released, so the holder
//! can always get the GIL back to finish.
//!
//! The locks are striped: a fixed table indexed by the storage's address. Two unrelated arrays
//! may share a stripe and then serialise their updates, which costs only waiting, never
//! correctness.

use crate::errors::IntoPyResult;
use ferrograd::{NDArray, Tracked};
use parking_lot::{Condvar, Mutex};
use pyo3::prelude::*;

use crate::ndarray::PyNDArray;

/// A lock that can be waited for without the GIL and then held with it (a `MutexGuard` cannot
/// leave the closure that runs without the GIL).
struct UpdateLock {
    busy: Mutex<bool>,
    freed: Condvar,
}

impl UpdateLock {
    const fn new() -> UpdateLock {
        UpdateLock { busy: Mutex::new(false), freed: Condvar::new() }
    }

    fn try_acquire(&self) -> bool {
        let mut busy = self.busy.lock();
        !std::mem::replace(&mut *busy, true)
    }

    fn acquire(&self) {
        let mut busy = self.busy.lock();
        while *busy {
            self.freed.wait(&mut busy);
        }
        *busy = true;
    }

    fn release(&self) {
        *self.busy.lock() = false;
        self.freed.notify_one();
    }
}

const STRIPES: usize = 256;

static LOCKS: [UpdateLock; STRIPES] = [const { UpdateLock::new() }; STRIPES];

fn stripe(x: &NDArray) -> &'static UpdateLock {
    // Fibonacci hashing: the top 8 bits of the product mix every bit of the address.
    let mixed = (x.storage_id() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    &LOCKS[(mixed >> 56) as usize % STRIPES]
}

/// Holds an update lock; releases it when dropped.
pub struct UpdateGuard(&'static UpdateLock);

impl Drop for UpdateGuard {
    fn drop(&mut self) {
        self.0.release();
    }
}

/// Takes the update lock of `x`'s storage, waiting for it with the GIL released.
pub fn lock_updates(py: Python<'_>, x: &NDArray) -> UpdateGuard {
    let lock = stripe(x);
    if !lock.try_acquire() {
        py.detach(|| lock.acquire());
    }
    UpdateGuard(lock)
}

/// Runs a read-modify-write of `target`'s storage as one step with respect to other threads:
/// `f` gets the current handle, with its autograd entry for the in-place check (compute from
/// it, then write through its `array_mut()`) while the storage's
/// update lock is held. `f` must not run Python code (it may release the GIL for native work).
/// A write that had to give the handle a new storage (a broadcast view is materialised first)
/// is stored back.
pub fn update_storage<R>(
    py: Python<'_>,
    target: &PyNDArray,
    f: impl FnOnce(&mut Tracked) -> PyResult<R>,
) -> PyResult<R> {
    loop {
        let locked = target.tracked().py_err(py)?;
        let _guard = lock_updates(py, &locked);
        let mut current = target.tracked().py_err(py)?;
        if !current.shares_storage(&locked) {
            continue; // another thread rebound the handle while we waited: lock the new storage
        }
        let r = f(&mut current)?;
        if !current.shares_storage(&locked) {
            target.set_array(current);
        }
        return Ok(r);
    }
}

/// `(storage id, write count)` of `x`: it changes whenever ferrograd writes `x`'s storage
/// (through any view); `None` when memory outside ferrograd's control may have been written (an
/// exported or imported buffer). The distributed store uses it to notice a gradient edited after
/// it was sent.
#[pyo3::pyfunction]
pub fn _storage_stamp(x: pyo3::PyRef<'_, crate::ndarray::PyNDArray>) -> pyo3::PyResult<Option<(usize, u64)>> {
    let array = x.array().py_err(x.py())?;
    Ok(array.storage_version().map(|v| (array.storage_id(), v)))
}
