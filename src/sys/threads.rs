//! What threads share: the standard library's `Arc`, locks, condition
//! variables and atomics, or, when the crate is built with `--cfg loom`
//! for the model checks (`tests/loom_*.rs`), the `loom` crate's stand-ins,
//! which let a model explore every interleaving of the threads that use
//! them.
//!
//! Code that makes up a cross-thread protocol takes these types from here
//! rather than from `std::sync`, so that the very code that runs is the
//! code the models check.

#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Condvar, Mutex, MutexGuard};

#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Condvar, Mutex, MutexGuard};

/// Atomic integers and flags, and the fences between them.
pub(crate) mod atomic {
    #[cfg(not(loom))]
    pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};

    #[cfg(loom)]
    pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
}

/// Threads as waiters: a plain thread waiting on a cross-thread primitive
/// parks itself, and whoever hands it something unparks it by its handle.
/// (loom has no `park_timeout`: under the models a waiter with a deadline
/// yields once and then gives up, which lets the model place its timeout
/// anywhere.)
pub(crate) mod thread {
    #[cfg(not(loom))]
    pub(crate) use std::thread::current;
    #[cfg(not(loom))]
    pub(crate) use std::thread::park;
    #[cfg(not(loom))]
    pub(crate) use std::thread::park_timeout;
    #[cfg(not(loom))]
    pub(crate) use std::thread::Thread;

    #[cfg(loom)]
    pub(crate) use loom::thread::current;
    #[cfg(loom)]
    pub(crate) use loom::thread::park;
    #[cfg(loom)]
    pub(crate) use loom::thread::yield_now;
    #[cfg(loom)]
    pub(crate) use loom::thread::Thread;

    /// A model has no clock: a timed park returns at once, as a spurious
    /// wake-up may, and the caller looks at its deadline again.
    #[cfg(loom)]
    pub(crate) fn park_timeout(_: std::time::Duration) {
        loom::thread::yield_now();
    }
}
