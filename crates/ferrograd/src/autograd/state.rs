//! Thread-local recording and training flags (MXNet keeps them per thread too).

use std::cell::Cell;

thread_local! {
    static RECORDING: Cell<bool> = const { Cell::new(false) };
    static TRAINING: Cell<bool> = const { Cell::new(false) };
}

pub fn is_recording() -> bool {
    RECORDING.with(Cell::get)
}

pub fn is_training() -> bool {
    TRAINING.with(Cell::get)
}

/// Sets the recording flag of this thread; returns the previous value.
pub fn set_recording(on: bool) -> bool {
    RECORDING.with(|c| c.replace(on))
}

/// Sets the training flag of this thread; returns the previous value.
pub fn set_training(on: bool) -> bool {
    TRAINING.with(|c| c.replace(on))
}
