//! A count of permits that waiters take, first come, first served: the
//! logic of [`Semaphore`](crate::sync::Semaphore) and
//! [`Notify`](crate::sync::Notify), in either flavor.
//!
//! A notify is a semaphore that stores at most one permit: `notify_one`
//! gives a permit back, `wait` takes one, and `notify_all` wakes every
//! waiter without storing anything.

use std::fmt;
use std::time::Instant;

use crate::scheduler::port::ParkedOn;
use crate::sync::flavor::{Flavor, Wakeups};
use crate::sync::wait::{self, NotReady};
use crate::sync::waiters::{WithWaiters, Woken};

/// Permits and the waiters queued for them, behind the flavor's lock.
pub(crate) struct Semaphore<F: Flavor> {
    state: F::Lock<WithWaiters<F, Permits>>,
}

struct Permits {
    /// # Invariant
    /// Nonzero only while no waiter is queued that can take a permit: one
    /// given back goes to a waiter before it goes back to the count.
    permits: usize,
    /// The most permits kept: a permit given back above it is dropped.
    most: usize,
}

impl<F: Flavor> WithWaiters<F, Permits> {
    /// Gives one permit back: to the longest waiter, else to the count.
    #[inline]
    fn give(&mut self) -> F::Wakeups {
        let mut out = F::Wakeups::default();
        if !self.waiters.wake_one(&mut out) && self.permits < self.most {
            self.permits += 1;
        }
        out
    }

    #[inline]
    fn take(&mut self) -> bool {
        if self.permits > 0 {
            self.permits -= 1;
            true
        } else {
            false
        }
    }
}

impl<F: Flavor> Semaphore<F> {
    /// A semaphore with `permits` permits, keeping at most `most`.
    pub(crate) fn new(permits: usize, most: usize) -> Self {
        Semaphore {
            state: From::from(WithWaiters::new(Permits { permits, most })),
        }
    }

    /// Takes a permit if one is free now.
    pub(crate) fn try_acquire(&self) -> bool {
        F::lock(&self.state).take()
    }

    /// Takes a permit, waiting until one is handed over or `deadline`
    /// passes; true if it got one (or was woken by
    /// [`wake_all`](Self::wake_all)). A waiter handed a permit keeps it,
    /// also if its deadline passed at that moment; one unwound hands it on.
    ///
    /// # Panics
    ///
    /// If it must pause in a task that is unwinding, naming `what` as
    /// [`wait`](wait::wait) does; outside a task in the single-thread
    /// flavor.
    pub(crate) fn acquire(&self, deadline: Option<Instant>, what: &'static str) -> bool {
        crate::task::coop::proceed();
        let r = wait::wait_until(
            &self.state,
            |st: &mut WithWaiters<F, Permits>, woken| {
                (woken != Woken::Not || st.take()).then_some(())
            },
            deadline,
            // Handed a permit, then unwound: pass it on.
            |st, woken| match woken {
                Woken::One => st.give(),
                _ => F::Wakeups::default(),
            },
            wait::caller(ParkedOn::Sync),
        );
        match r {
            Ok(()) => true,
            Err(NotReady::TimedOut) => false,
            Err(NotReady::Unwinding) => wait::unwinding(what),
        }
    }

    /// Gives one permit back: hands it to the longest waiter, or adds it to
    /// the count (up to the most kept).
    #[inline]
    pub(crate) fn release(&self) {
        let wakes = F::lock(&self.state).give();
        wakes.wake();
    }

    /// Wakes every waiter waiting now; stores nothing.
    pub(crate) fn wake_all(&self) {
        let wakes = F::lock(&self.state).waiters.take_all();
        wakes.wake();
    }

    /// Permits free now.
    pub(crate) fn available_permits(&self) -> usize {
        F::lock(&self.state).permits
    }

    /// Waiters queued now.
    pub(crate) fn waiting(&self) -> usize {
        F::lock(&self.state).waiters.len()
    }

    /// `{:?}` as a semaphore: its permits and waiters.
    pub(crate) fn fmt_permits(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = F::lock(&self.state);
        f.debug_struct("Semaphore")
            .field("permits", &st.permits)
            .field("waiting", &st.waiters.len())
            .finish()
    }

    /// `{:?}` as a notify: whether a permit is stored, and its waiters.
    pub(crate) fn fmt_notify(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = F::lock(&self.state);
        f.debug_struct("Notify")
            .field("permit", &(st.permits > 0))
            .field("waiting", &st.waiters.len())
            .finish()
    }
}
