//! The lock of a mutex, without the value it guards: the logic of
//! [`Mutex`](crate::sync::Mutex) and
//! [`local::Mutex`](crate::sync::local::Mutex), in either flavor.
//!
//! A lock word says whether the lock is held, and whether waiters may be
//! queued; the queue sits behind the flavor's lock and is only touched
//! under contention. So taking and releasing a lock nobody waits for is one
//! compare-and-swap each (across threads an atomic one; on one thread a
//! compare and a store of a `Cell`).
//!
//! ```text
//!              lock (CAS)                      lock, held: CAS to CONTENDED,
//!   UNLOCKED ─────────────▶ LOCKED ─────────▶ queue and wait
//!      ▲      unlock (CAS)    │   ▲                │
//!      └──────────────────────┘   │ unlock: hand   ▼
//!      ▲                          │ to the first  CONTENDED
//!      │ unlock, nobody queued    │ waiter, the     │
//!      └──────────────────────────┴── last one ─────┘
//! ```
//!
//! Unlocking with waiters hands the lock to the one that has waited
//! longest, which then holds it without racing for it: acquisition is
//! first come, first served, and a newcomer does not overtake the queue.

use crate::sync::flavor::{Flavor, Wakeups, Word};
use crate::sync::wait;
use crate::sync::waiters::{WithWaiters, Woken};
use crate::sys::threads::atomic::Ordering;
use std::time::Instant;

/// Nobody holds the lock.
const UNLOCKED: usize = 0;
/// Held, and nobody waits: unlocking is one compare-and-swap.
const LOCKED: usize = 1;
/// Held, and waiters may be queued: unlocking takes the queue's lock.
const CONTENDED: usize = 2;

/// A mutex's lock word and its waiters.
pub(crate) struct RawMutex<F: Flavor> {
    /// [`UNLOCKED`], [`LOCKED`] or [`CONTENDED`].
    ///
    /// # Invariant
    /// While a waiter not yet handed the lock is queued, the state is
    /// `CONTENDED` (set under the queue's lock before queueing), so the
    /// holder's unlock takes the queue's lock and hands over.
    state: F::Word,
    waiters: F::Lock<WithWaiters<F, ()>>,
}

impl<F: Flavor> RawMutex<F> {
    /// An unlocked lock.
    pub(crate) fn new() -> Self {
        RawMutex {
            state: F::Word::from(UNLOCKED),
            waiters: From::from(WithWaiters::new(())),
        }
    }

    /// Locks, waiting until the lock is handed over.
    ///
    /// # Panics
    ///
    /// If it must pause in a task that is unwinding, naming `what` as
    /// [`wait`](wait::wait) does; outside a task in the single-thread
    /// flavor.
    #[inline]
    pub(crate) fn lock(&self, what: &'static str) {
        crate::task::coop::proceed();
        if !self.try_lock() {
            // With no deadline only a hand-over ends the wait.
            let locked = self.lock_slow(None, what);
            debug_assert!(locked);
        }
    }

    /// [`lock`](Self::lock), giving up at `deadline`: true once the lock is
    /// held.
    pub(crate) fn lock_deadline(&self, deadline: Instant, what: &'static str) -> bool {
        crate::task::coop::proceed();
        self.try_lock() || self.lock_slow(Some(deadline), what)
    }

    /// Locks if the lock is free now and nobody waits for it.
    #[inline]
    pub(crate) fn try_lock(&self) -> bool {
        self.state.replace_if(UNLOCKED, LOCKED, Ordering::Acquire)
    }

    /// True while the lock is held.
    pub(crate) fn is_locked(&self) -> bool {
        self.state.get(Ordering::Relaxed) != UNLOCKED
    }

    /// Waiters queued for the lock now.
    pub(crate) fn waiting(&self) -> usize {
        F::lock(&self.waiters).waiters.len()
    }

    /// Queues for the lock; true once it is held, false if `deadline`
    /// passed first.
    #[inline(never)]
    fn lock_slow(&self, deadline: Option<Instant>, what: &'static str) -> bool {
        let mut st = F::lock(&self.waiters);
        loop {
            // Under the queue's lock the state changes only by a holder's
            // fast unlock (LOCKED to UNLOCKED) and a fast lock after it.
            match self.state.get(Ordering::Relaxed) {
                UNLOCKED if self.try_lock() => return true,
                UNLOCKED => continue,
                LOCKED if !self.state.replace_if(LOCKED, CONTENDED, Ordering::Relaxed) => continue,
                _ => {}
            }
            // A deadline `<= now` has passed.
            if deadline.is_some_and(|d| crate::scheduler::timers::now() >= d) {
                self.leave(&mut st);
                return false;
            }
            let woken;
            (st, woken) = wait::wait(
                &self.waiters,
                st,
                (),
                deadline,
                wait::nothing,
                // Handed the lock, then unwound: hand it on.
                |st, woken| match woken {
                    Woken::One => self.unlock_locked(st),
                    _ => {
                        self.leave(st);
                        F::Wakeups::default()
                    }
                },
                what,
            );
            if woken == Woken::One {
                // Handed over: the state stayed locked for us.
                return true;
            }
            // Only a deadline ends a wait unwoken.
            self.leave(&mut st);
            return false;
        }
    }

    /// A waiter leaves without the lock: with nobody left queued, the
    /// holder's unlock can take the fast path again.
    fn leave(&self, st: &mut WithWaiters<F, ()>) {
        if st.waiters.is_empty() {
            // The lock is held (it is never left unlocked with waiters
            // queued), so the state is LOCKED or CONTENDED.
            self.state.replace_if(CONTENDED, LOCKED, Ordering::Relaxed);
        }
    }

    /// Unlocks: hands the lock to the longest waiter, if any.
    #[inline]
    pub(crate) fn unlock(&self) {
        if !self.state.replace_if(LOCKED, UNLOCKED, Ordering::Release) {
            self.unlock_slow();
        }
    }

    #[cold]
    fn unlock_slow(&self) {
        let mut st = F::lock(&self.waiters);
        let wakes = self.unlock_locked(&mut st);
        drop(st);
        wakes.wake();
    }

    /// Unlocks under the queue's lock: the longest waiter is handed the
    /// lock (the state stays locked), or the state goes to `UNLOCKED`.
    /// Returns the wake-up to send once the queue's lock is released.
    fn unlock_locked(&self, st: &mut WithWaiters<F, ()>) -> F::Wakeups {
        let mut wakes = F::Wakeups::default();
        if st.waiters.wake_one(&mut wakes) {
            if st.waiters.is_empty() {
                self.state.put(LOCKED, Ordering::Relaxed);
            }
        } else {
            self.state.put(UNLOCKED, Ordering::Release);
        }
        wakes
    }
}
