//! [`WaitGroup`] and [`Barrier`] across threads, and what a wait at
//! either barrier returns.

use std::fmt;

use super::flavor::CrossThread;
use super::logic::{self, Gate};

/// Waits for a collection of jobs on any workers or threads to finish,
/// like Go's `sync.WaitGroup`.
///
/// [`add`](Self::add) counts jobs in, [`done`](Self::done) counts one out,
/// and [`wait`](Self::wait) pauses the task (or blocks the plain thread)
/// until the count is zero. A waiter woken by the count reaching zero
/// returns even if the count went up again before it ran, as in Go. A
/// waiter that gives up just leaves: the count belongs to the jobs.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use yieldloop::{sync::WaitGroup, Runtime};
///
/// let wg = Arc::new(WaitGroup::new());
/// let rt = Runtime::builder().workers(2).build().unwrap();
/// for i in 0..4 {
///     wg.add(1);
///     let wg = wg.clone();
///     rt.spawn_on(i % 2, move || {
///         yieldloop::yield_now();
///         wg.done();
///     });
/// }
/// wg.wait(); // a plain thread: blocks
/// assert_eq!(wg.count(), 0);
/// ```
pub struct WaitGroup {
    gate: Gate<CrossThread>,
}

impl Default for WaitGroup {
    fn default() -> Self {
        WaitGroup::new()
    }
}

impl WaitGroup {
    /// A wait group with a count of zero.
    pub fn new() -> WaitGroup {
        WaitGroup { gate: Gate::new(0) }
    }

    /// Adds `n` to the count.
    pub fn add(&self, n: usize) {
        self.gate.add(n);
    }

    /// Takes one from the count; at zero, every waiter wakes.
    ///
    /// # Panics
    ///
    /// Panics if the count is zero already (more `done`s than `add`s), as
    /// Go's does.
    pub fn done(&self) {
        self.gate.done();
    }

    /// The count now.
    pub fn count(&self) -> usize {
        self.gate.count()
    }

    /// Waits until the count is zero; returns at once if it is.
    ///
    /// # Panics
    ///
    /// Panics if it must pause in a task that is unwinding.
    pub fn wait(&self) {
        self.gate.wait(None, "for a WaitGroup");
    }
}

impl fmt::Debug for WaitGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.gate, f)
    }
}

/// Lets `n` tasks or threads, on any workers, wait for each other: each
/// [`wait`](Self::wait) pauses (or blocks) until `n` have called it, then
/// all go on together, and the barrier is ready for the next round.
///
/// # Cancellation
///
/// A task unwound while waiting withdraws its arrival: the round then
/// waits for another to take its place. (Once the round is complete it
/// counted.)
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use yieldloop::{sync::Barrier, Runtime};
///
/// let barrier = Arc::new(Barrier::new(3));
/// let rt = Runtime::builder().workers(2).build().unwrap();
/// let tasks: Vec<_> = (0..2)
///     .map(|w| {
///         let b = barrier.clone();
///         rt.spawn_on(w, move || b.wait().is_leader())
///     })
///     .collect();
/// let mut leaders = usize::from(barrier.wait().is_leader()); // a plain thread
/// for t in tasks {
///     leaders += usize::from(t.join().unwrap());
/// }
/// assert_eq!(leaders, 1);
/// ```
pub struct Barrier {
    raw: logic::Barrier<CrossThread>,
}

impl Barrier {
    /// A barrier for `n` waiters. `n` of 0 or 1 never waits.
    pub fn new(n: usize) -> Barrier {
        Barrier {
            raw: logic::Barrier::new(n),
        }
    }

    /// Arrives and waits until `n` have arrived in this round.
    ///
    /// # Panics
    ///
    /// Panics if it must pause in a task that is unwinding.
    pub fn wait(&self) -> BarrierWaitResult {
        BarrierWaitResult::new(self.raw.wait("for a Barrier"))
    }
}

impl fmt::Debug for Barrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.raw, f)
    }
}

/// What [`Barrier::wait`] and [`local::Barrier::wait`](super::local::Barrier::wait)
/// return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BarrierWaitResult {
    leader: bool,
}

impl BarrierWaitResult {
    pub(crate) fn new(leader: bool) -> BarrierWaitResult {
        BarrierWaitResult { leader }
    }

    /// True for exactly one task of each round: the last to arrive.
    pub fn is_leader(&self) -> bool {
        self.leader
    }
}
