//! Shared test helpers: a seeded xorshift generator and a catalogue of input layouts.
#![allow(dead_code)] // each test binary uses a different subset

use ferrograd_kernels::layout::Layout;
use ferrograd_kernels::Element;

/// xorshift64* — tiny, seeded, good enough to scatter test inputs.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in [lo, hi).
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    pub fn vec_f32(&mut self, n: usize, lo: f64, hi: f64) -> Vec<f32> {
        (0..n).map(|_| self.range(lo, hi) as f32).collect()
    }
    pub fn vec<T: Element>(&mut self, n: usize, lo: f64, hi: f64) -> Vec<T> {
        (0..n).map(|_| T::from_f64(self.range(lo, hi))).collect()
    }
}

/// The ways a view of a given shape can sit in its buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Row-major, at a non-zero offset.
    Contiguous,
    /// Axes reversed in memory (a transpose).
    Permuted,
    /// Every other element of the last axis.
    Stepped,
    /// First axis walked backwards with step -2 (built with `slice_axis`).
    Reversed,
    /// First axis broadcast from size 1 (stride 0).
    Broadcast,
}

pub const KINDS: [Kind; 5] = [Kind::Contiguous, Kind::Permuted, Kind::Stepped, Kind::Reversed, Kind::Broadcast];
/// Kinds that never map two indices to one position (valid destinations).
pub const WRITABLE: [Kind; 4] = [Kind::Contiguous, Kind::Permuted, Kind::Stepped, Kind::Reversed];

/// A buffer filled by `fill` and a layout of `shape` of the requested kind into it.
pub fn make_view<T: Element>(shape: &[usize], kind: Kind, mut fill: impl FnMut() -> T) -> (Vec<T>, Layout) {
    let nd = shape.len();
    let (base_shape, build): (Vec<usize>, Box<dyn Fn(Layout) -> Layout>) = match kind {
        Kind::Contiguous => (shape.to_vec(), Box::new(|l| l)),
        Kind::Permuted => {
            let rev: Vec<usize> = shape.iter().rev().copied().collect();
            let perm: Vec<usize> = (0..nd).rev().collect();
            (rev, Box::new(move |l: Layout| l.permute(&perm)))
        }
        Kind::Stepped if nd > 0 => {
            let mut b = shape.to_vec();
            let n = b[nd - 1];
            b[nd - 1] = 2 * n + 1;
            (b, Box::new(move |l: Layout| l.slice_axis(nd - 1, 1, 2, n)))
        }
        Kind::Reversed if nd > 0 => {
            let mut b = shape.to_vec();
            let n = b[0];
            b[0] = 2 * n;
            (b, Box::new(move |l: Layout| l.slice_axis(0, (2 * n).saturating_sub(1), -2, n)))
        }
        Kind::Broadcast if nd > 0 => {
            let mut b = shape.to_vec();
            b[0] = 1;
            let target = shape.to_vec();
            (b, Box::new(move |l: Layout| l.broadcast_to(&target).expect("broadcastable")))
        }
        _ => (shape.to_vec(), Box::new(|l| l)),
    };
    let pad = 3;
    let n: usize = base_shape.iter().product();
    let buf: Vec<T> = (0..n + 2 * pad).map(|_| fill()).collect();
    let mut base = Layout::contiguous(&base_shape);
    base.offset = pad;
    let l = build(base);
    assert_eq!(l.shape.as_slice(), shape);
    (buf, l)
}

/// Bitwise-ish equality: equal values, or both NaN.
pub fn same<T: Element>(a: T, b: T) -> bool {
    let (x, y) = (a.to_f64(), b.to_f64());
    x == y || (x.is_nan() && y.is_nan())
}

pub fn assert_all_same<T: Element>(got: &[T], want: &[T], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(same(g, w), "{what}: element {i}: got {g:?}, want {w:?}");
    }
}

/// Runs `f` inside a dedicated rayon pool of `n` threads.
pub fn in_pool<R: Send>(n: usize, f: impl FnOnce() -> R + Send) -> R {
    rayon::ThreadPoolBuilder::new().num_threads(n).build().expect("pool").install(f)
}
