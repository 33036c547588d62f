//! The waiter list every primitive and channel of this module is made of,
//! in either [flavor](super::flavor): a FIFO of waiters, each under an id,
//! and how the ones a waker took out were woken.
//!
//! A waiter publishes an entry (its flavor's wake handle, and what it waits
//! for or with: a kind of lock, a parked sender's value) under the
//! primitive's lock, then pauses (see [`wait`](super::wait)). A waker,
//! under the same lock, takes the first entry whose waiter still waits out
//! of the list, singling it out ([`Woken::One`]: it is handed a lock, a
//! permit, a notification), or takes every one out ([`Woken::All`]: a
//! broadcast, nothing to pass on). The owner always removes its own entry
//! when its pause ends, and learns how it was woken from where the entry
//! is:
//!
//! ```text
//!   waiter                                 waker (under the lock)
//!   ──────                                 ─────
//!   id = push(wake handle)  ──────────▶    wake_one: first entry the flavor
//!   pause                                    can wake: out of the list
//!      │                                   wake_all: every such entry out,
//!      ▼                                     its id noted as woken by all
//!   remove(id):  still listed → Not
//!                noted        → All
//!                neither      → One
//! ```
//!
//! An entry whose waiter the flavor knows to have stopped waiting (a task
//! of the waker's thread that timed out or is being unwound) is skipped and
//! left for its owner, so no wake-up is spent on a waiter that will not use
//! it. A task of another thread, or a plain thread, cannot be asked, so it
//! is taken: that waiter, if it does not use what it was handed, passes it
//! on.

use std::collections::VecDeque;

use super::flavor::{Flavor, Wakeups};

/// How a queued waiter was woken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Woken {
    /// Not woken by the primitive (yet): it timed out, or is unwinding.
    Not,
    /// Singled out: it was handed something (a lock, a permit, a
    /// notification) that must be passed on if it is not used.
    One,
    /// Woken with everybody else (a broadcast); nothing to pass on.
    All,
}

/// A FIFO of entries, each under an id that stays valid until it is
/// removed, so an entry can be taken out of the middle: the storage of a
/// [`Waiters`] list.
#[derive(Debug)]
struct WaitQueue<E> {
    next_id: u64,
    /// # Invariant
    /// Ids strictly increase from front to back, so an id is found by
    /// binary search.
    entries: VecDeque<(u64, E)>,
}

impl<E> Default for WaitQueue<E> {
    fn default() -> Self {
        WaitQueue {
            next_id: 0,
            entries: VecDeque::new(),
        }
    }
}

impl<E> WaitQueue<E> {
    /// Appends `e`; returns its id.
    #[inline]
    fn push(&mut self, e: E) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.entries.push_back((id, e));
        id
    }

    #[inline]
    fn index(&self, id: u64) -> Option<usize> {
        self.entries.binary_search_by_key(&id, |(i, _)| *i).ok()
    }

    /// Takes out the entry `id`, if it is still queued.
    #[inline]
    fn remove(&mut self, id: u64) -> Option<E> {
        // The common cases, the only entry or the newest, without a search
        // or a shift of the ring buffer.
        match self.entries.back() {
            None => return None,
            Some((i, _)) if *i == id => return self.entries.pop_back().map(|(_, e)| e),
            Some(_) => {}
        }
        let i = self.index(id)?;
        self.entries.remove(i).map(|(_, e)| e)
    }

    /// True while the entry `id` is queued.
    fn contains(&self, id: u64) -> bool {
        self.index(id).is_some()
    }

    /// The entry `id`, if it is still queued.
    fn get_mut(&mut self, id: u64) -> Option<&mut E> {
        let i = self.index(id)?;
        self.entries.get_mut(i).map(|(_, e)| e)
    }

    /// Removes and returns the first entry for which `pred` is true; the
    /// entries before it stay where they are. `pred` is where the waker
    /// unparks, so it runs at most once per entry, front to back.
    #[inline]
    fn take_first(&mut self, pred: impl FnMut(&E) -> bool) -> Option<E> {
        self.take_first_entry(pred).map(|(_, e)| e)
    }

    /// [`take_first`](Self::take_first), with the entry's id.
    #[inline]
    fn take_first_entry(&mut self, mut pred: impl FnMut(&E) -> bool) -> Option<(u64, E)> {
        // Nearly always the front entry is the one: take it without
        // shifting the ring buffer.
        let (_, front) = self.entries.front()?;
        if pred(front) {
            return self.entries.pop_front();
        }
        let i = self.entries.iter().skip(1).position(|(_, e)| pred(e))? + 1;
        self.entries.remove(i)
    }

    /// Takes out, front to back, every entry for which `pick` says
    /// `Some`, handing each to `take` with its id and what `pick` said; the
    /// others stay, in order, and so does the buffer.
    fn take_each<D>(
        &mut self,
        mut pick: impl FnMut(&E) -> Option<D>,
        mut take: impl FnMut(u64, E, D),
    ) {
        for _ in 0..self.entries.len() {
            let Some((id, e)) = self.entries.pop_front() else {
                break;
            };
            match pick(&e) {
                Some(d) => take(id, e, d),
                None => self.entries.push_back((id, e)),
            }
        }
    }

    /// Every entry, front to back.
    fn iter(&self) -> impl Iterator<Item = &E> {
        self.entries.iter().map(|(_, e)| e)
    }

    fn len(&self) -> usize {
        self.entries.len()
    }

    fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// One waiter's entry.
struct Entry<W, K> {
    /// What the waiter waits for (a read or a write lock, say).
    kind: K,
    /// How to wake it, in its flavor.
    wake: W,
}

/// The waiters of one primitive in flavor `F`, first come first served,
/// each waiting for a `K`.
pub(crate) struct Waiters<F: Flavor, K = ()> {
    /// Waiters not taken out by a waker, in the order they came.
    queue: WaitQueue<Entry<F::Wake, K>>,
    /// Waiters taken out by a broadcast ([`wake_all`](Self::wake_all))
    /// whose owners have not removed their entries yet.
    ///
    /// # Invariant
    /// Ids strictly increase from front to back: a broadcast takes the
    /// entries in order, and those it leaves (known to have stopped
    /// waiting) are never woken again, so each broadcast notes ids above
    /// those of the one before. The owners, woken in this order, mostly
    /// find their id at the front.
    all: VecDeque<u64>,
}

impl<F: Flavor, K> Default for Waiters<F, K> {
    fn default() -> Self {
        Waiters {
            queue: WaitQueue::default(),
            all: VecDeque::new(),
        }
    }
}

impl<F: Flavor, K> Waiters<F, K> {
    /// Queues a waiter for `kind`, woken through `wake`; returns its id.
    #[inline]
    pub(crate) fn push(&mut self, kind: K, wake: F::Wake) -> u64 {
        self.queue.push(Entry { kind, wake })
    }

    /// Takes the entry `id` out, queued or woken, and says how its waiter
    /// was woken ([`Woken::Not`] while it was still queued).
    #[inline]
    pub(crate) fn remove(&mut self, id: u64) -> Woken {
        match self.remove_entry(id) {
            Ok(_) => Woken::Not,
            Err(woken) => woken,
        }
    }

    /// [`remove`](Self::remove), giving back what the waiter waited with
    /// (`Ok`) while it was still queued.
    #[inline]
    pub(crate) fn remove_entry(&mut self, id: u64) -> Result<K, Woken> {
        if let Some(e) = self.queue.remove(id) {
            return Ok(e.kind);
        }
        Err(match self.all.front() {
            None => Woken::One,
            Some(&i) if i == id => {
                self.all.pop_front();
                Woken::All
            }
            Some(_) => match self.all.binary_search(&id) {
                Ok(i) => {
                    self.all.remove(i);
                    Woken::All
                }
                Err(_) => Woken::One,
            },
        })
    }

    /// How the waiter `id` has been woken so far, leaving its entry where
    /// it is.
    pub(crate) fn woken(&self, id: u64) -> Woken {
        if self.queue.contains(id) {
            Woken::Not
        } else if self.all.binary_search(&id).is_ok() {
            Woken::All
        } else {
            Woken::One
        }
    }

    /// Singles out the first waiter that still waits (see
    /// [`Flavor::wake_now`]), taking it out of the list and waking it, at
    /// once or through `out`. Returns whether there was one.
    #[inline]
    pub(crate) fn wake_one(&mut self, out: &mut F::Wakeups) -> bool {
        self.take_one(out).is_some()
    }

    /// [`wake_one`](Self::wake_one), giving back what the waiter waited
    /// with (a parked sender's value).
    #[inline]
    pub(crate) fn take_one(&mut self, out: &mut F::Wakeups) -> Option<K> {
        self.take_one_if(out, |_| true)
    }

    /// Wakes every waiter that still waits, as part of a broadcast
    /// (nothing to hand on if one of them goes away), taking them out of
    /// the list; those not woken at once go into `out`.
    pub(crate) fn wake_all(&mut self, out: &mut F::Wakeups) {
        let Waiters { queue, all } = self;
        queue.take_each(
            |e| match F::wake_now(&e.wake) {
                Some(true) => Some(false),
                Some(false) => None,
                None => Some(true),
            },
            |id, e, later| {
                all.push_back(id);
                if later {
                    out.push(e.wake);
                }
            },
        );
    }

    /// Wakes every waiter queued, leaving them in the list, each to look
    /// at the state again (the parked senders of a channel whose receiver
    /// went); those not woken at once go into `out`.
    pub(crate) fn wake_in_place(&self, out: &mut F::Wakeups) {
        for e in self.queue.iter() {
            if F::wake_now(&e.wake).is_none() {
                out.push(e.wake.clone());
            }
        }
    }

    /// Gives the waiter `id`, if still queued, a new wake handle: it waits
    /// again in the same place, in a new pause.
    pub(crate) fn rewake(&mut self, id: u64, wake: F::Wake) {
        if let Some(e) = self.queue.get_mut(id) {
            e.wake = wake;
        }
    }

    /// [`wake_all`](Self::wake_all), for the caller to send after the
    /// lock.
    pub(crate) fn take_all(&mut self) -> F::Wakeups {
        let mut out = F::Wakeups::default();
        self.wake_all(&mut out);
        out
    }

    /// [`take_one`](Self::take_one), if what the first waiter that still
    /// waits waits for passes `grant`; `None` when it does not (it stays
    /// first) or when nobody waits. A waiter skipped as gone is left for
    /// its owner.
    #[inline]
    pub(crate) fn take_one_if(
        &mut self,
        out: &mut F::Wakeups,
        mut grant: impl FnMut(&K) -> bool,
    ) -> Option<K> {
        let mut stop = false;
        let mut later = false;
        let e = self.queue.take_first(|e| {
            if stop || !grant(&e.kind) {
                stop = true;
                return false;
            }
            match F::wake_now(&e.wake) {
                Some(woke) => woke,
                None => {
                    later = true;
                    true
                }
            }
        })?;
        if later {
            out.push(e.wake);
        }
        Some(e.kind)
    }

    /// True when no waiter is queued.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Waiters queued now.
    pub(crate) fn len(&self) -> usize {
        self.queue.len()
    }
}

/// A primitive's own state `S` and its waiters, each waiting for a `K`,
/// behind one lock: what the waiting of [`wait`](super::wait) locks. It
/// dereferences to `S`.
pub(crate) struct WithWaiters<F: Flavor, S, K = ()> {
    state: S,
    pub(crate) waiters: Waiters<F, K>,
}

impl<F: Flavor, S, K> WithWaiters<F, S, K> {
    /// `state`, with nobody waiting.
    pub(crate) fn new(state: S) -> Self {
        WithWaiters {
            state,
            waiters: Waiters::default(),
        }
    }
}

impl<F: Flavor, S: Default, K> Default for WithWaiters<F, S, K> {
    fn default() -> Self {
        WithWaiters::new(S::default())
    }
}

impl<F: Flavor, S, K> std::ops::Deref for WithWaiters<F, S, K> {
    type Target = S;
    #[inline]
    fn deref(&self) -> &S {
        &self.state
    }
}

impl<F: Flavor, S, K> std::ops::DerefMut for WithWaiters<F, S, K> {
    #[inline]
    fn deref_mut(&mut self) -> &mut S {
        &mut self.state
    }
}
