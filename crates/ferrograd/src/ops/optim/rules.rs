//! The update rules of the fused optimizer ops, each one pass over a chunk of memory.
//!
//! A rule sees the gradient (read-only) and its mutable lanes: lane 0 is the array updated in
//! place (the weight, or `weight32` for the multi-precision ops, or for `lamb_update_phase1` the
//! output that starts as a copy of the weight), the others are the optimizer states in the order
//! the op takes them. Arithmetic is in the element type (as MXNet's kernels do), every element
//! independently, so results do not depend on chunking or threads.

use std::ops::{Add, Div, Mul, Neg, Sub};

/// The float element types the rules run on (`f32`, `f64`; `float16` runs in `f32`).
pub trait Real:
    Copy
    + Send
    + Sync
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
{
    fn c(v: f64) -> Self;
    fn sqrt(self) -> Self;
    fn abs(self) -> Self;
}

impl Real for f32 {
    #[inline(always)]
    fn c(v: f64) -> Self {
        v as f32
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        f32::sqrt(self)
    }
    #[inline(always)]
    fn abs(self) -> Self {
        f32::abs(self)
    }
}

impl Real for f64 {
    #[inline(always)]
    fn c(v: f64) -> Self {
        v
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
    #[inline(always)]
    fn abs(self) -> Self {
        f64::abs(self)
    }
}

/// `x` clipped to `[-c, c]` when `c >= 0` (MXNet clips from 0 up: `clip_gradient=0` zeroes).
#[inline(always)]
fn clip<T: Real>(x: T, c: T, on: bool) -> T {
    if !on {
        x
    } else if x > c {
        c
    } else if x < -c {
        -c
    } else {
        x
    }
}

/// -1, 0 or 1 (0 for NaN, as MXNet's `(x > 0) - (x < 0)`).
#[inline(always)]
fn sign<T: Real>(x: T) -> T {
    if x > T::c(0.0) {
        T::c(1.0)
    } else if x < T::c(0.0) {
        T::c(-1.0)
    } else {
        T::c(0.0)
    }
}

/// The gradient preprocessing every rule shares: `rescale_grad` and `clip_gradient`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GradPrep {
    pub rescale: f64,
    pub clip: f64,
}

/// One fused update with its parameters bound (runtime scalars such as LAMB's norms included).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rule {
    Sgd {
        lr: f64,
        wd: f64,
        prep: GradPrep,
    },
    SgdMom {
        lr: f64,
        momentum: f64,
        wd: f64,
        prep: GradPrep,
    },
    SignSgd {
        lr: f64,
        wd: f64,
    },
    Signum {
        lr: f64,
        momentum: f64,
        wd: f64,
        wd_lh: f64,
        prep: GradPrep,
    },
    NagMom {
        lr: f64,
        momentum: f64,
        wd: f64,
        prep: GradPrep,
    },
    Adam {
        lr: f64,
        beta1: f64,
        beta2: f64,
        epsilon: f64,
        wd: f64,
        prep: GradPrep,
    },
    AdamW {
        lr: f64,
        eta: f64,
        beta1: f64,
        beta2: f64,
        epsilon: f64,
        wd: f64,
        prep: GradPrep,
    },
    RmsProp {
        lr: f64,
        gamma1: f64,
        epsilon: f64,
        wd: f64,
        clip_weights: f64,
        prep: GradPrep,
    },
    RmsPropAlex {
        lr: f64,
        gamma1: f64,
        gamma2: f64,
        epsilon: f64,
        wd: f64,
        clip_weights: f64,
        prep: GradPrep,
    },
    Ftrl {
        lr: f64,
        lamda1: f64,
        beta: f64,
        wd: f64,
        prep: GradPrep,
    },
    Ftml {
        lr: f64,
        beta1: f64,
        beta2: f64,
        epsilon: f64,
        t: i64,
        wd: f64,
        prep: GradPrep,
    },
    LambPhase1 {
        beta1: f64,
        beta2: f64,
        epsilon: f64,
        t: i64,
        bias_correction: bool,
        wd: f64,
        prep: GradPrep,
    },
    /// `scale` = `lr · r1/r2` (or `lr` when a norm is zero), computed once per call.
    LambPhase2 {
        scale: f64,
    },
}

impl Rule {
    /// How many mutable lanes (lane 0 included) the rule updates.
    pub fn lanes(&self) -> usize {
        match self {
            Rule::Sgd { .. } | Rule::SignSgd { .. } | Rule::LambPhase2 { .. } => 1,
            Rule::SgdMom { .. } | Rule::Signum { .. } | Rule::NagMom { .. } | Rule::RmsProp { .. } => 2,
            Rule::Adam { .. } | Rule::AdamW { .. } | Rule::Ftrl { .. } | Rule::LambPhase1 { .. } => 3,
            Rule::RmsPropAlex { .. } | Rule::Ftml { .. } => 4,
        }
    }

    /// Applies the rule to one chunk: `lanes[k][i]` and `g[i]` for every `i`.
    pub fn apply<T: Real>(&self, g: &[T], lanes: &mut [&mut [T]]) {
        let k = T::c;
        let prep = |p: &GradPrep| (k(p.rescale), k(p.clip), p.clip >= 0.0);
        match (*self, lanes) {
            (Rule::Sgd { lr, wd, prep: p }, [w]) => {
                let ((r, c, on), lr, wd) = (prep(&p), k(lr), k(wd));
                for (w, &g) in w.iter_mut().zip(g) {
                    *w = (k(1.0) - lr * wd) * *w - lr * clip(r * g, c, on);
                }
            }
            (Rule::SgdMom { lr, momentum, wd, prep: p }, [w, m]) => {
                let ((r, c, on), lr, mo, wd) = (prep(&p), k(lr), k(momentum), k(wd));
                for ((w, m), &g) in w.iter_mut().zip(m.iter_mut()).zip(g) {
                    let g = clip(r * g, c, on) + wd * *w;
                    *m = mo * *m - lr * g;
                    *w = *w + *m;
                }
            }
            (Rule::SignSgd { lr, wd }, [w]) => {
                let (lr, wd) = (k(lr), k(wd));
                for (w, &g) in w.iter_mut().zip(g) {
                    *w = (k(1.0) - lr * wd) * *w - lr * sign(g);
                }
            }
            (Rule::Signum { lr, momentum, wd, wd_lh, prep: p }, [w, m]) => {
                let ((r, c, on), lr, mo, wd, wd_lh) = (prep(&p), k(lr), k(momentum), k(wd), k(wd_lh));
                for ((w, m), &g) in w.iter_mut().zip(m.iter_mut()).zip(g) {
                    *m = mo * *m - (k(1.0) - mo) * (wd * *w + clip(r * g, c, on));
                    *w = (k(1.0) - lr * wd_lh) * *w + lr * sign(*m);
                }
            }
            (Rule::NagMom { lr, momentum, wd, prep: p }, [w, m]) => {
                let ((r, c, on), lr, mo, wd) = (prep(&p), k(lr), k(momentum), k(wd));
                for ((w, m), &g) in w.iter_mut().zip(m.iter_mut()).zip(g) {
                    let g = clip(r * g, c, on) + wd * *w;
                    *m = mo * *m - lr * g;
                    *w = *w + mo * *m - lr * g;
                }
            }
            (Rule::Adam { lr, beta1, beta2, epsilon, wd, prep: p }, [w, mean, var]) => {
                let ((r, c, on), lr, b1, b2, eps, wd) = (prep(&p), k(lr), k(beta1), k(beta2), k(epsilon), k(wd));
                for (((w, m), v), &g) in w.iter_mut().zip(mean.iter_mut()).zip(var.iter_mut()).zip(g) {
                    let g = clip(r * g + wd * *w, c, on);
                    *m = b1 * *m + (k(1.0) - b1) * g;
                    *v = b2 * *v + (k(1.0) - b2) * g * g;
                    *w = *w - lr * *m / ((*v).sqrt() + eps);
                }
            }
            (Rule::AdamW { lr, eta, beta1, beta2, epsilon, wd, prep: p }, [w, mean, var]) => {
                let ((r, c, on), lr, eta, b1, b2, eps, wd) =
                    (prep(&p), k(lr), k(eta), k(beta1), k(beta2), k(epsilon), k(wd));
                for (((w, m), v), &g) in w.iter_mut().zip(mean.iter_mut()).zip(var.iter_mut()).zip(g) {
                    let g = clip(r * g, c, on);
                    *m = b1 * *m + (k(1.0) - b1) * g;
                    *v = b2 * *v + (k(1.0) - b2) * g * g;
                    *w = *w - eta * (lr * *m / ((*v).sqrt() + eps) + wd * *w);
                }
            }
            (Rule::RmsProp { lr, gamma1, epsilon, wd, clip_weights, prep: p }, [w, n]) => {
                let ((r, c, on), lr, g1, eps, wd) = (prep(&p), k(lr), k(gamma1), k(epsilon), k(wd));
                let (cw, cw_on) = (k(clip_weights), clip_weights >= 0.0);
                for ((w, n), &g) in w.iter_mut().zip(n.iter_mut()).zip(g) {
                    let g = clip(r * g + wd * *w, c, on);
                    *n = (k(1.0) - g1) * g * g + g1 * *n;
                    *w = clip(*w - lr * (g / (*n + eps).sqrt()), cw, cw_on);
                }
            }
            (Rule::RmsPropAlex { lr, gamma1, gamma2, epsilon, wd, clip_weights, prep: p }, [w, n, ga, d]) => {
                let ((r, c, on), lr, g1, g2, eps, wd) = (prep(&p), k(lr), k(gamma1), k(gamma2), k(epsilon), k(wd));
                let (cw, cw_on) = (k(clip_weights), clip_weights >= 0.0);
                let lanes = w.iter_mut().zip(n.iter_mut()).zip(ga.iter_mut()).zip(d.iter_mut());
                for ((((w, n), ga), d), &g) in lanes.zip(g) {
                    let g = clip(r * g + wd * *w, c, on);
                    *n = (k(1.0) - g1) * g * g + g1 * *n;
                    *ga = (k(1.0) - g1) * g + g1 * *ga;
                    *d = g2 * *d - lr * (g / (*n - *ga * *ga + eps).sqrt());
                    *w = clip(*w + *d, cw, cw_on);
                }
            }
            (Rule::Ftrl { lr, lamda1, beta, wd, prep: p }, [w, z, n]) => {
                let ((r, c, on), lr, l1, beta, wd) = (prep(&p), k(lr), k(lamda1), k(beta), k(wd));
                for (((w, z), n), &g) in w.iter_mut().zip(z.iter_mut()).zip(n.iter_mut()).zip(g) {
                    let g = clip(r * g, c, on);
                    *z = *z + g - ((*n + g * g).sqrt() - (*n).sqrt()) * *w / lr;
                    *n = *n + g * g;
                    *w = if (*z).abs() > l1 { (sign(*z) * l1 - *z) / ((beta + (*n).sqrt()) / lr + wd) } else { k(0.0) };
                }
            }
            (Rule::Ftml { lr, beta1, beta2, epsilon, t, wd, prep: p }, [w, d, v, z]) => {
                let ((r, c, on), b1, b2, eps, wd) = (prep(&p), k(beta1), k(beta2), k(epsilon), k(wd));
                let (bc1, bc2) = (k(1.0 - beta1.powi(t as i32)), k(1.0 - beta2.powi(t as i32)));
                let lr = k(lr);
                let lanes = w.iter_mut().zip(d.iter_mut()).zip(v.iter_mut()).zip(z.iter_mut());
                for ((((w, d), v), z), &g) in lanes.zip(g) {
                    let g = clip(r * g + wd * *w, c, on);
                    *v = b2 * *v + (k(1.0) - b2) * g * g;
                    let d_t = bc1 / lr * ((*v / bc2).sqrt() + eps);
                    *z = b1 * *z + (k(1.0) - b1) * g - (d_t - b1 * *d) * *w;
                    *d = d_t;
                    *w = -*z / d_t;
                }
            }
            (Rule::LambPhase1 { beta1, beta2, epsilon, t, bias_correction, wd, prep: p }, [w, mean, var]) => {
                let ((r, c, on), b1, b2, eps, wd) = (prep(&p), k(beta1), k(beta2), k(epsilon), k(wd));
                let (bc1, bc2) = if bias_correction {
                    (k(1.0 - beta1.powi(t as i32)), k(1.0 - beta2.powi(t as i32)))
                } else {
                    (k(1.0), k(1.0))
                };
                for (((w, m), v), &g) in w.iter_mut().zip(mean.iter_mut()).zip(var.iter_mut()).zip(g) {
                    let g = clip(r * g, c, on);
                    *m = b1 * *m + (k(1.0) - b1) * g;
                    *v = b2 * *v + (k(1.0) - b2) * g * g;
                    *w = (*m / bc1) / ((*v / bc2).sqrt() + eps) + wd * *w;
                }
            }
            (Rule::LambPhase2 { scale }, [w]) => {
                let s = k(scale);
                for (w, &g) in w.iter_mut().zip(g) {
                    *w = *w - s * g;
                }
            }
            _ => unreachable!("fused update: lane count checked by the driver"),
        }
    }
}
