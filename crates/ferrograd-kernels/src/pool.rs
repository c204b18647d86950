//! Recycled output buffers.
//!
//! Every op output is a new vector that the op then overwrites completely. Handing it memory that
//! already holds valid numbers (a buffer an earlier array released) costs nothing; zeroing fresh
//! memory costs a full extra pass (measured 1.9× on memory-bound ops), and leaving it
//! uninitialised is unsound. So released buffers of numeric types go to this pool, keyed by byte
//! size and alignment, and an output of the same size takes one back. Training loops allocate the
//! same sizes every step, so in steady state ops take no memory from the allocator at all.
//!
//! The pool holds at most `FERROGRAD_BUFFER_POOL_MB` megabytes (default 256; 0 turns it off);
//! buffers beyond that, and small ones, go back to the allocator as usual.

use std::collections::HashMap;
use std::mem::{align_of, size_of, ManuallyDrop};
use std::ptr::NonNull;
use std::sync::{LazyLock, Mutex};

use crate::Element;

/// Smaller buffers are cheap to zero and are not pooled.
const MIN_BYTES: usize = 16 * 1024;
/// At most this many free buffers of one size are kept.
const MAX_PER_SIZE: usize = 16;

/// A free block: the allocation of a `Vec` with `len == capacity`, of the key's byte size and
/// alignment, every element of which was initialised.
struct Block(NonNull<u8>);

// SAFETY: a block is plain memory owned by the pool alone; it is moved between threads only as
// ownership passes (under the pool's lock).
unsafe impl Send for Block {}

struct Pool {
    free: HashMap<(usize, usize), Vec<Block>>,
    bytes: usize,
    limit: usize,
}

static POOL: LazyLock<Mutex<Pool>> = LazyLock::new(|| {
    let mb = std::env::var("FERROGRAD_BUFFER_POOL_MB").ok().and_then(|s| s.trim().parse::<usize>().ok());
    Mutex::new(Pool { free: HashMap::new(), bytes: 0, limit: mb.unwrap_or(256).saturating_mul(1 << 20) })
});

/// Whether buffers of `n` `T`s are pooled: numeric types only (`bool` has invalid bit patterns,
/// so its memory must not be reused as, or from, another type), above the size floor.
fn poolable<T: Element>(n: usize) -> bool {
    T::NAME != "bool" && n.saturating_mul(size_of::<T>()) >= MIN_BYTES
}

/// A vector of exactly `n` `T`s whose elements hold arbitrary (valid) numbers, from the pool;
/// `None` when none of that size is free.
pub fn take<T: Element>(n: usize) -> Option<Vec<T>> {
    if !poolable::<T>(n) {
        return None;
    }
    let bytes = n * size_of::<T>();
    let block = {
        let mut pool = POOL.lock().ok()?;
        let block = pool.free.get_mut(&(bytes, align_of::<T>()))?.pop()?;
        pool.bytes -= bytes;
        block
    };
    // SAFETY: the block was allocated by the global allocator for `bytes` bytes at `T`'s
    // alignment (its key), i.e. with the layout of `n` `T`s; all its bytes were initialised
    // numbers of a type with the same size class and alignment, and every bit pattern is a valid
    // value of every pooled type (plain integers and floats).
    Some(unsafe { Vec::from_raw_parts(block.0.as_ptr().cast::<T>(), n, n) })
}

/// Releases `v`: into the pool when it qualifies and there is room, else to the allocator.
pub fn give<T: Element>(v: Vec<T>) {
    if !poolable::<T>(v.len()) || v.len() != v.capacity() {
        return;
    }
    let bytes = v.len() * size_of::<T>();
    let Ok(mut pool) = POOL.lock() else { return };
    if pool.bytes + bytes > pool.limit {
        return;
    }
    let list = pool.free.entry((bytes, align_of::<T>())).or_default();
    if list.len() >= MAX_PER_SIZE {
        return;
    }
    let mut v = ManuallyDrop::new(v);
    if let Some(ptr) = NonNull::new(v.as_mut_ptr().cast::<u8>()) {
        list.push(Block(ptr));
        pool.bytes += bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_released_buffer_is_reused_for_the_same_size_and_small_ones_are_not_pooled() {
        let n = MIN_BYTES / 4 + 17; // a size no other test uses
        let v: Vec<f32> = vec![1.5; n];
        let ptr = v.as_ptr() as usize;
        give(v);
        let w: Vec<i32> = take(n).expect("same byte size and alignment");
        assert_eq!(w.as_ptr() as usize, ptr);
        assert_eq!((w.len(), w.capacity()), (n, n));
        assert_eq!(w[0], 1.5f32.to_bits() as i32);
        give(vec![0u8; 16]);
        assert!(take::<u8>(16).is_none());
        give(vec![true; MIN_BYTES * 2]);
        assert!(take::<bool>(MIN_BYTES * 2).is_none());
    }
}
