//! [`WaitGroup`] (wait for a count of jobs to finish, Go-style) and
//! [`Barrier`] (wait for a number of tasks to arrive).

use std::fmt;

use crate::sync::flavor::Local;
use crate::sync::logic::{self, Gate};
use crate::sync::BarrierWaitResult;

/// Waits for a collection of jobs to finish, like Go's `sync.WaitGroup`.
///
/// [`add`](Self::add) counts jobs in, [`done`](Self::done) counts one out,
/// and [`wait`](Self::wait) pauses until the count is zero. A waiter woken
/// by the count reaching zero returns even if the count has gone up again
/// before it ran, as in Go.
///
/// Single-thread: share it through an `Rc`. A waiter cancelled while
/// waiting just leaves the queue; the count belongs to the jobs, not the
/// waiters.
///
/// # Examples
///
/// ```
/// use std::{cell::Cell, rc::Rc, time::Duration};
/// use yieldloop::sync::local::WaitGroup;
///
/// yieldloop::run(|| {
///     let wg = Rc::new(WaitGroup::new());
///     let finished = Rc::new(Cell::new(0));
///     for i in 0..5u64 {
///         wg.add(1);
///         let (wg, finished) = (wg.clone(), finished.clone());
///         yieldloop::spawn(move || {
///             yieldloop::sleep(Duration::from_millis(i));
///             finished.set(finished.get() + 1);
///             wg.done();
///         });
///     }
///     wg.wait();
///     assert_eq!(finished.get(), 5);
/// });
/// ```
pub struct WaitGroup {
    gate: Gate<Local>,
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

    /// Pauses the task until the count is zero; returns at once if it is.
    ///
    /// # Panics
    ///
    /// Panics if it must pause outside a task, or in a task that is
    /// unwinding.
    pub fn wait(&self) {
        self.gate.wait(None, "for a WaitGroup");
    }
}

impl fmt::Debug for WaitGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.gate, f)
    }
}

/// Lets `n` tasks wait for each other: each [`wait`](Self::wait) pauses
/// until `n` tasks have called it, then all go on together, and the barrier
/// is ready for the next round. Like `std::sync::Barrier`, for tasks.
///
/// Single-thread: share it through an `Rc`.
///
/// # Cancellation
///
/// A task cancelled while waiting withdraws its arrival: the round then
/// waits for another task to take its place. (Once the round is complete
/// the task counted, even if it is cancelled before it runs again.)
///
/// # Examples
///
/// ```
/// use std::{cell::RefCell, rc::Rc};
/// use yieldloop::sync::local::Barrier;
///
/// yieldloop::run(|| {
///     let barrier = Rc::new(Barrier::new(3));
///     let log = Rc::new(RefCell::new(Vec::new()));
///     let tasks: Vec<_> = (0..3)
///         .map(|i| {
///             let (barrier, log) = (barrier.clone(), log.clone());
///             yieldloop::spawn(move || {
///                 log.borrow_mut().push(format!("before {i}"));
///                 let leader = barrier.wait().is_leader();
///                 log.borrow_mut().push(format!("after {i}"));
///                 leader
///             })
///         })
///         .collect();
///     let leaders = tasks.into_iter().map(|t| t.join().unwrap());
///     assert_eq!(leaders.filter(|&l| l).count(), 1);
///     // Nobody got past the barrier before everybody reached it.
///     let log = log.borrow();
///     assert!(log[..3].iter().all(|e| e.starts_with("before")));
/// });
/// ```
pub struct Barrier {
    raw: logic::Barrier<Local>,
}

impl Barrier {
    /// A barrier for `n` tasks. `n` of 0 or 1 never pauses.
    pub fn new(n: usize) -> Barrier {
        Barrier {
            raw: logic::Barrier::new(n),
        }
    }

    /// Arrives and pauses until `n` tasks have arrived in this round.
    ///
    /// # Panics
    ///
    /// Panics if it must pause outside a task, or in a task that is
    /// unwinding.
    pub fn wait(&self) -> BarrierWaitResult {
        BarrierWaitResult::new(self.raw.wait("at a Barrier"))
    }
}

impl fmt::Debug for Barrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.raw, f)
    }
}
