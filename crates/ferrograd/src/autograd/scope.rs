//! Scoped recording and training flags for Rust callers (Python's `with autograd.record():`).
//!
//! A [`RecordGuard`] sets the thread's flags and puts the previous values back when dropped, so
//! the state is restored on every exit: normal return, `?` early return, or a panic unwinding
//! through the scope. [`record`], [`pause`], [`train_mode`] and [`predict_mode`] wrap a closure in
//! such a guard.

use super::state::{set_recording, set_training};

/// Restores the recording and training flags it changed when dropped.
#[must_use = "the flags are restored as soon as the guard is dropped"]
#[derive(Debug)]
pub struct RecordGuard {
    prev_recording: Option<bool>,
    prev_training: Option<bool>,
}

impl RecordGuard {
    /// Sets the recording flag and/or the training flag (`None` leaves a flag as it is) until the
    /// guard is dropped.
    pub fn new(recording: Option<bool>, training: Option<bool>) -> RecordGuard {
        RecordGuard { prev_recording: recording.map(set_recording), prev_training: training.map(set_training) }
    }

    /// `autograd.record(train_mode=train)`: recording on, training flag set to `train`.
    pub fn record(train: bool) -> RecordGuard {
        RecordGuard::new(Some(true), Some(train))
    }

    /// `autograd.pause(train_mode=train)`: recording off, training flag set to `train`.
    pub fn pause(train: bool) -> RecordGuard {
        RecordGuard::new(Some(false), Some(train))
    }
}

impl Drop for RecordGuard {
    fn drop(&mut self) {
        if let Some(t) = self.prev_training {
            set_training(t);
        }
        if let Some(r) = self.prev_recording {
            set_recording(r);
        }
    }
}

/// Runs `f` with recording on and training mode on (Python's `autograd.record()`, whose
/// `train_mode` defaults to true), then restores both flags.
///
/// ```
/// use ferrograd::{autograd, NDArray, Tracked};
/// let mut x = Tracked::new(NDArray::from_vec(vec![3.0f64], &[1])?);
/// x.attach_grad();
/// let y = autograd::record(|| &x * &x)?; // y = x², recorded
/// y.backward()?;
/// assert_eq!(x.grad().map(|g| g.to_f64_vec()), Some(vec![6.0])); // dy/dx = 2x
/// assert!(!autograd::is_recording());
/// # Ok::<(), ferrograd::Error>(())
/// ```
pub fn record<R>(f: impl FnOnce() -> R) -> R {
    record_with(true, f)
}

/// Runs `f` with recording on and the training flag set to `train` (`autograd.record(train_mode=
/// train)`); `record_with(false, ..)` records in predict mode (Dropout is the identity).
pub fn record_with<R>(train: bool, f: impl FnOnce() -> R) -> R {
    let _guard = RecordGuard::record(train);
    f()
}

/// Runs `f` with recording off and training off (`autograd.pause()`).
pub fn pause<R>(f: impl FnOnce() -> R) -> R {
    let _guard = RecordGuard::pause(false);
    f()
}

/// Runs `f` with the training flag on, leaving the recording flag alone (`autograd.train_mode()`).
pub fn train_mode<R>(f: impl FnOnce() -> R) -> R {
    let _guard = RecordGuard::new(None, Some(true));
    f()
}

/// Runs `f` with the training flag off, leaving the recording flag alone
/// (`autograd.predict_mode()`).
pub fn predict_mode<R>(f: impl FnOnce() -> R) -> R {
    let _guard = RecordGuard::new(None, Some(false));
    f()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autograd::{is_recording, is_training};

    #[test]
    fn nested_scopes_restore_the_previous_flags() {
        assert!(!is_recording() && !is_training());
        record(|| {
            assert!(is_recording() && is_training());
            pause(|| assert!(!is_recording() && !is_training()));
            predict_mode(|| assert!(is_recording() && !is_training()));
            assert!(is_recording() && is_training());
        });
        record_with(false, || assert!(is_recording() && !is_training()));
        train_mode(|| assert!(!is_recording() && is_training()));
        assert!(!is_recording() && !is_training());
    }

    #[test]
    fn early_return_and_panic_restore_the_flags() {
        fn early() -> Result<(), ()> {
            let _g = RecordGuard::record(true);
            Err(())?;
            Ok(())
        }
        assert!(early().is_err());
        assert!(!is_recording() && !is_training());
        let r = std::panic::catch_unwind(|| record(|| panic!("inside record")));
        assert!(r.is_err());
        assert!(!is_recording() && !is_training());
    }
}
