//! The logic of the primitives, each written once over a
//! [`Flavor`](super::flavor::Flavor): the cross-thread types at
//! [`sync`](super)'s root and the single-thread ones of
//! [`local`](super::local) are thin faces over these, with their own docs.
//!
//! - `semaphore`: [`Semaphore`] (also the logic of `Notify`: a semaphore
//!   that keeps at most one permit);
//! - `mutex`: [`RawMutex`], a mutex's lock without its value;
//! - `gate`: [`Gate`], a count waited for to reach zero (`WaitGroup`, and
//!   `Event` as a count of 0 or 1);
//! - `barrier`: [`Barrier`].

mod barrier;
mod gate;
mod mutex;
mod semaphore;

pub(crate) use barrier::Barrier;
pub(crate) use gate::Gate;
pub(crate) use mutex::RawMutex;
pub(crate) use semaphore::Semaphore;
