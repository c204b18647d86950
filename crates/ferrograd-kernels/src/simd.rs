//! Runtime CPU-feature dispatch for hot loops.
//!
//! The crate is built for the baseline x86-64 target, so that one wheel runs everywhere. Hot loops
//! are written once as `#[inline(always)]` generic code and instantiated by [`simd_dispatch!`]
//! inside functions compiled with AVX-512 or AVX2+FMA enabled; the closures they call are inlined
//! into those functions and vectorised at that width.

use std::sync::atomic::{AtomicU8, Ordering};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Baseline = 1,
    Avx2 = 2,
    Avx512 = 3,
}

static LEVEL: AtomicU8 = AtomicU8::new(0);

/// The best instruction-set level this CPU supports (detected once).
#[inline]
pub fn level() -> Level {
    match LEVEL.load(Ordering::Relaxed) {
        1 => Level::Baseline,
        2 => Level::Avx2,
        3 => Level::Avx512,
        _ => {
            let l = detect();
            LEVEL.store(l as u8, Ordering::Relaxed);
            l
        }
    }
}

fn detect() -> Level {
    #[cfg(target_arch = "x86_64")]
    {
        if std::env::var_os("FERROGRAD_NO_AVX512").is_none()
            && is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512dq")
            && is_x86_feature_detected!("avx512vl")
        {
            return Level::Avx512;
        }
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            return Level::Avx2;
        }
    }
    Level::Baseline
}

/// Defines `pub fn $name<generics>(args) -> ret` that runs `$body` compiled for the best level
/// available at run time. The body must only call `#[inline(always)]` code (and closures) to
/// benefit from the wider instructions.
#[macro_export]
macro_rules! simd_dispatch {
    (
        $(#[$meta:meta])*
        pub fn $name:ident<$($g:ident),*>($($arg:ident : $ty:ty),* $(,)?) $(-> $ret:ty)?
        where { $($wc:tt)* }
        $body:block
    ) => {
        $(#[$meta])*
        #[inline]
        pub fn $name<$($g),*>($($arg: $ty),*) $(-> $ret)? where $($wc)* {
            #[inline(always)]
            fn body<$($g),*>($($arg: $ty),*) $(-> $ret)? where $($wc)* $body

            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,bmi2")]
            fn avx512<$($g),*>($($arg: $ty),*) $(-> $ret)? where $($wc)* {
                body($($arg),*)
            }

            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma")]
            fn avx2<$($g),*>($($arg: $ty),*) $(-> $ret)? where $($wc)* {
                body($($arg),*)
            }

            #[cfg(target_arch = "x86_64")]
            match $crate::simd::level() {
                // SAFETY: `level()` reported that this CPU supports the enabled features.
                $crate::simd::Level::Avx512 => return unsafe { avx512($($arg),*) },
                // SAFETY: as above.
                $crate::simd::Level::Avx2 => return unsafe { avx2($($arg),*) },
                $crate::simd::Level::Baseline => {}
            }
            body($($arg),*)
        }
    };
}
