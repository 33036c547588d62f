//! A count that waiters wait to see at zero: the logic of
//! [`WaitGroup`](crate::sync::WaitGroup) and of
//! [`Event`](crate::sync::local::Event), in either flavor.
//!
//! An event is a gate whose count is 0 (set) or 1 (clear). When the count
//! reaches zero every waiter wakes; a waiter woken so returns even if the
//! count went up again before it ran, as in Go's `sync.WaitGroup`. A waiter
//! that gives up just leaves: the count belongs to the jobs, not the
//! waiters.

use std::fmt;
use std::time::Instant;

use crate::scheduler::port::ParkedOn;
use crate::sync::flavor::{Flavor, Guard, Wakeups};
use crate::sync::wait::{self, NotReady};
use crate::sync::waiters::{WithWaiters, Woken};

/// The count and the waiters for it to reach zero, behind the flavor's
/// lock.
pub(crate) struct Gate<F: Flavor> {
    state: F::Lock<WithWaiters<F, Count>>,
}

struct Count {
    /// At zero the waiters wake.
    count: usize,
}

impl<F: Flavor> Gate<F> {
    /// A gate with the count `count`.
    pub(crate) fn new(count: usize) -> Self {
        Gate {
            state: From::from(WithWaiters::new(Count { count })),
        }
    }

    /// Adds `n` to the count.
    pub(crate) fn add(&self, n: usize) {
        F::lock(&self.state).count += n;
    }

    /// Sets the count; at zero every waiter wakes.
    pub(crate) fn set(&self, count: usize) {
        Self::set_locked(F::lock(&self.state), count);
    }

    /// [`set`](Self::set) under the held lock `st`, which it releases.
    fn set_locked(mut st: Guard<'_, F, WithWaiters<F, Count>>, count: usize) {
        st.count = count;
        if count == 0 {
            let wakes = st.waiters.take_all();
            drop(st);
            wakes.wake();
        }
    }

    /// Takes one from the count; at zero every waiter wakes.
    ///
    /// # Panics
    ///
    /// If the count is zero already (more `done`s than `add`s), as Go's
    /// does.
    pub(crate) fn done(&self) {
        let st = F::lock(&self.state);
        assert!(
            st.count > 0,
            "yieldloop: WaitGroup::done called more times than add counted"
        );
        let count = st.count - 1;
        Self::set_locked(st, count);
    }

    /// The count now.
    pub(crate) fn count(&self) -> usize {
        F::lock(&self.state).count
    }

    /// Waits until the count is zero, or `deadline` passes; true if it
    /// reached zero.
    ///
    /// # Panics
    ///
    /// If it must pause in a task that is unwinding, naming `what` as
    /// [`wait`](wait::wait) does; outside a task in the single-thread
    /// flavor.
    pub(crate) fn wait(&self, deadline: Option<Instant>, what: &'static str) -> bool {
        crate::task::coop::proceed();
        let r = wait::wait_until(
            &self.state,
            |st: &mut WithWaiters<F, Count>, woken| {
                (woken != Woken::Not || st.count == 0).then_some(())
            },
            deadline,
            |_, _| F::Wakeups::default(),
            wait::caller(ParkedOn::Sync),
        );
        match r {
            Ok(()) => true,
            Err(NotReady::TimedOut) => false,
            Err(NotReady::Unwinding) => wait::unwinding(what),
        }
    }

    /// Waiters queued now.
    pub(crate) fn waiting(&self) -> usize {
        F::lock(&self.state).waiters.len()
    }
}

/// As a wait group: the count and the waiters.
impl<F: Flavor> fmt::Debug for Gate<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = F::lock(&self.state);
        f.debug_struct("WaitGroup")
            .field("count", &st.count)
            .field("waiting", &st.waiters.len())
            .finish()
    }
}
