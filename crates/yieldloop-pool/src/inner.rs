//! What the handles of one pool share: the places, the idle connections
//! and the counts, under one lock.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use yieldloop::sync::Semaphore;

use crate::{Manage, PoolConfig};

/// An open connection and when it was opened (for the lifetime limit).
pub(crate) struct Slot<C> {
    pub(crate) conn: C,
    pub(crate) born: Instant,
}

impl<C> Slot<C> {
    /// A connection opened now.
    pub(crate) fn new(conn: C) -> Slot<C> {
        Slot {
            conn,
            born: yieldloop::now(),
        }
    }
}

/// What the handles of one pool share.
pub(crate) struct Inner<M: Manage> {
    pub(crate) config: PoolConfig<M>,
    /// One permit per place in the pool. A checkout holds one from the end
    /// of its wait until its connection is back in `idle` or closed. The
    /// semaphore is yieldloop's cross-thread one: waiters are tasks of any
    /// scheduler (which pause) and plain threads (which block), served in
    /// the order they came, and a permit handed to a waiter that is
    /// unwound meanwhile goes on to the next.
    pub(crate) places: Semaphore,
    /// A std mutex, not a task-aware one: it is held for a few field
    /// updates, never across a connect, a check, a discard or a pause.
    pub(crate) state: Mutex<State<M::Conn>>,
}

/// The pool's connections and counts.
pub(crate) struct State<C> {
    /// Idle connections in the order they came back: the most recent last,
    /// and handed out first (the others age, and an idle timeout closes
    /// them).
    pub(crate) idle: VecDeque<Idle<C>>,
    /// Connections open: idle, handed out, or being checked.
    ///
    /// # Invariant
    /// At most `max_size`. A connection is opened only by a checkout that
    /// holds a place and found no idle one, and a returned connection
    /// joins `idle` before its place is freed: so idle connections plus
    /// checkouts never exceed the places.
    pub(crate) live: usize,
    pub(crate) opened: u64,
    /// Every connection closed, for any reason.
    pub(crate) closed: u64,
    /// Those of `closed` that were broken, failed a check, or were held by
    /// a task that panicked.
    pub(crate) discarded: u64,
    /// Whether a reaper task watches this pool (see `reaper`).
    pub(crate) reaper: bool,
}

/// An idle connection and since when.
pub(crate) struct Idle<C> {
    pub(crate) slot: Slot<C>,
    pub(crate) since: Instant,
}

/// Why a connection is closed.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Why {
    /// Broken, failed its check or `idle_usable`, or held in a panic.
    Discarded,
    /// Past its idle timeout or its lifetime.
    Expired,
}

impl<C> State<C> {
    /// Counts one connection closed.
    fn count_closed(&mut self, why: Why) {
        self.live -= 1;
        self.closed += 1;
        if why == Why::Discarded {
            self.discarded += 1;
        }
    }

    /// Takes out (and counts as closed) the idle connections whose idle
    /// timeout or lifetime has passed at `now`, to be discarded once the
    /// lock is released.
    fn take_expired<M>(&mut self, now: Instant, config: &PoolConfig<M>) -> Vec<C> {
        let mut expired = Vec::new();
        let mut i = 0;
        while i < self.idle.len() {
            // A deadline `<= now` has passed.
            if expiry(&self.idle[i], config).is_some_and(|at| at <= now) {
                let idle = self.idle.remove(i).expect("in range");
                expired.push(idle.slot.conn);
                self.count_closed(Why::Expired);
            } else {
                i += 1;
            }
        }
        expired
    }
}

/// When an idle connection is to be closed: the earlier of its idle
/// timeout and its lifetime, if either is set.
fn expiry<C, M>(idle: &Idle<C>, config: &PoolConfig<M>) -> Option<Instant> {
    let idle_end = config.idle_timeout.map(|t| idle.since + t);
    let life_end = config.max_lifetime.map(|t| idle.slot.born + t);
    idle_end.into_iter().chain(life_end).min()
}

impl<M: Manage> Inner<M> {
    /// Locks the state. Nothing panics while it is held (no code of the
    /// client runs under it), so a poisoned lock is still consistent.
    pub(crate) fn lock(&self) -> MutexGuard<'_, State<M::Conn>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits up to `limit` for a place (`None`: as long as it takes).
    pub(crate) fn take_place(&self, limit: Option<Duration>) -> Result<(), M::Error> {
        match limit {
            None => self.places.acquire().forget(),
            Some(limit) => match self.places.acquire_timeout(limit) {
                Some(permit) => permit.forget(),
                None => {
                    let timeout = crate::CheckoutTimeout::new(limit, self.config.max_size);
                    return Err(self.config.manager.checkout_timed_out(timeout));
                }
            },
        }
        Ok(())
    }

    /// Frees a place taken with `take_place`: it goes to the longest
    /// waiter, if any.
    pub(crate) fn free_place(&self) {
        self.places.release();
    }

    /// The most recently returned idle connection, closing on the way the
    /// idle ones that have expired.
    pub(crate) fn pop_idle(&self) -> Option<Idle<M::Conn>> {
        let now = yieldloop::now();
        let (expired, next) = {
            let mut st = self.lock();
            let expired = st.take_expired(now, &self.config);
            (expired, st.idle.pop_back())
        };
        self.discard_all(expired);
        next
    }

    /// Counts a connection just opened; true when the caller is to start
    /// a reaper (the pool closes idle connections and none runs; it is
    /// marked running now).
    pub(crate) fn count_opened(&self) -> bool {
        let expiring = self.config.idle_timeout.is_some() || self.config.max_lifetime.is_some();
        let mut st = self.lock();
        st.live += 1;
        st.opened += 1;
        let start = expiring && !st.reaper && yieldloop::current_id().is_some();
        st.reaper |= start;
        start
    }

    /// Takes a connection back from a checkout: into `idle`, or closed if
    /// it has outlived its lifetime meanwhile.
    pub(crate) fn put_back(&self, slot: Slot<M::Conn>) {
        let now = yieldloop::now();
        // A deadline `<= now` has passed.
        let too_old = (self.config.max_lifetime).is_some_and(|t| slot.born + t <= now);
        if too_old {
            self.close(slot.conn, Why::Expired);
        } else {
            self.lock().idle.push_back(Idle { slot, since: now });
        }
    }

    /// Closes one open connection.
    pub(crate) fn close(&self, conn: M::Conn, why: Why) {
        self.lock().count_closed(why);
        self.config.manager.discard(conn);
    }

    /// Hands connections already counted as closed to `discard`.
    fn discard_all(&self, conns: Vec<M::Conn>) {
        for conn in conns {
            self.config.manager.discard(conn);
        }
    }

    /// Closes the idle connections that have expired, for the reaper, and
    /// says when to look again: the next expiry of an idle connection, or
    /// (none idle) one idle timeout or lifetime from now, whichever is
    /// shorter. `None`, with the reaper marked stopped, once the pool has
    /// no connection left: the next connect starts a new reaper.
    pub(crate) fn reap(&self) -> Option<Instant> {
        let now = yieldloop::now();
        let (expired, next) = {
            let mut st = self.lock();
            let expired = st.take_expired(now, &self.config);
            let next = if st.live == 0 {
                st.reaper = false;
                None
            } else {
                let period = (self.config.idle_timeout.into_iter())
                    .chain(self.config.max_lifetime)
                    .min()
                    .unwrap_or(Duration::from_secs(60));
                let soonest = st.idle.iter().filter_map(|i| expiry(i, &self.config)).min();
                Some(soonest.unwrap_or(now + period))
            };
            (expired, next)
        };
        self.discard_all(expired);
        next
    }
}
