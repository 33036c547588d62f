//! The waiting every cross-thread primitive is made of: a FIFO of waiters
//! behind a std mutex, each waiter a parked task (of any scheduler) or a
//! parked plain thread.
//!
//! ```text
//!   waiter                                   waker
//!   ──────                                   ─────
//!   lock; push entry (woken: Not); unlock
//!   park (task: Op::Park; thread: park())
//!                                            lock; first entry still Not:
//!                                              woken = One (or All), take
//!                                              its Wake; apply the hand-over
//!                                              to the state; unlock
//!                                            wake() ─── unpark ───▶
//!   lock; remove own entry; read woken; unlock
//! ```
//!
//! Every decision is taken under the lock, so what the waker does and what
//! the waiter sees agree: a waiter whose entry says `One` *was handed*
//! something (a lock, a permit, a notification) even if its pause ended
//! for another reason (its deadline passed at the same moment: it then
//! keeps what it got; it is being unwound: its `abandon` hands it on). An
//! entry stays in the queue until its owner removes it, so the waker skips
//! entries already woken; the entries a waker looks at before finding a
//! live one are at most those woken and not yet run.
//!
//! No wake-up is lost: the entry is published under the lock before the
//! waiter pauses. A task cannot miss an unpark sent before it parked (its
//! scheduler acts on the unpark only once the task has paused); a thread
//! cannot either (an unpark before `park` makes `park` return at once).
//!
//! The mutex is a std one, not a task-aware one, because nothing pauses
//! while holding it: it is held for a few field updates.

use std::collections::VecDeque;
use std::sync::PoisonError;
use std::time::Instant;

use crate::protocol::{ParkToken, Resume};
use crate::scheduler::port::ParkedOn;
use crate::sync::waitq::{OnDrop, WaitQueue, Woken};
use crate::sys::threads::{thread, Mutex, MutexGuard};
use crate::task::park::{park_on, park_token, RemoteUnparker};

/// How to wake one waiter, taken out of its entry by the waker.
pub(crate) enum Wake {
    /// A parked task: through its token on its own thread, through the
    /// unparker from others.
    Task {
        token: ParkToken,
        remote: RemoteUnparker,
    },
    /// A parked plain thread.
    Thread(thread::Thread),
}

impl Wake {
    /// Wakes the waiter. Called after the state's lock is released, so the
    /// woken side never finds it held by its waker.
    #[inline]
    pub(crate) fn wake(self) {
        match self {
            // On the task's own thread the scheduler is reached directly,
            // with no cross-thread queue or poll interruption.
            Wake::Task { token, remote } => {
                if token.unpark_here().is_none() {
                    remote.unpark();
                }
            }
            Wake::Thread(t) => t.unpark(),
        }
    }
}

/// Wakes every waiter of `wakes`, in order.
pub(crate) fn wake_all(wakes: impl IntoIterator<Item = Wake>) {
    for w in wakes {
        w.wake();
    }
}

/// One waiter's entry.
struct Entry<K> {
    /// What the waiter waits for (a read or a write lock, say).
    kind: K,
    /// Set by the waker, read by the owner when it removes the entry.
    woken: Woken,
    /// `None` once the waker has taken it.
    wake: Option<Wake>,
}

/// The waiters of one primitive, first come first served.
pub(crate) struct Waiters<K = ()> {
    /// Woken entries and entries not woken yet may interleave (an entry
    /// stays until its owner removes it), so every scan skips the woken.
    q: WaitQueue<Entry<K>>,
}

impl<K> Default for Waiters<K> {
    fn default() -> Self {
        Waiters {
            q: WaitQueue::default(),
        }
    }
}

impl<K> Waiters<K> {
    /// The first waiter not woken yet.
    fn first_live(&mut self) -> Option<&mut Entry<K>> {
        self.q.iter_mut().find(|e| e.woken == Woken::Not)
    }

    /// What the first waiter not woken yet waits for.
    pub(crate) fn front(&mut self) -> Option<&K> {
        self.first_live().map(|e| &e.kind)
    }

    /// Singles out the first waiter not woken yet: marks it as handed
    /// something, and returns how to wake it once the lock is released.
    #[inline]
    pub(crate) fn wake_one(&mut self) -> Option<Wake> {
        let e = self.first_live()?;
        e.woken = Woken::One;
        e.wake.take()
    }

    /// Wakes every waiter not woken yet, as part of a broadcast (nothing to
    /// hand on if one of them goes away).
    pub(crate) fn wake_all(&mut self) -> VecDeque<Wake> {
        self.q
            .iter_mut()
            .filter(|e| e.woken == Woken::Not)
            .filter_map(|e| {
                e.woken = Woken::All;
                e.wake.take()
            })
            .collect()
    }

    /// True when no waiter is left to wake.
    #[inline]
    pub(crate) fn is_empty(&mut self) -> bool {
        self.first_live().is_none()
    }

    /// Waiters not woken yet.
    pub(crate) fn len(&self) -> usize {
        self.q.iter().filter(|e| e.woken == Woken::Not).count()
    }
}

/// A primitive's state that holds its waiters.
pub(crate) trait Queued {
    /// What a waiter waits for.
    type Kind;
    /// The waiters.
    fn waiters(&mut self) -> &mut Waiters<Self::Kind>;
}

impl<K> Queued for Waiters<K> {
    type Kind = K;
    fn waiters(&mut self) -> &mut Waiters<K> {
        self
    }
}

/// Locks a primitive's state. Nothing panics while it is held in a way
/// that leaves it half-updated, so a poisoned lock is still consistent.
#[inline]
pub(crate) fn lock<S>(m: &Mutex<S>) -> MutexGuard<'_, S> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// True when the caller is a task (and parks), false on a plain thread
/// (which blocks).
#[inline]
fn in_task() -> bool {
    crate::task::spawn::current_id().is_some()
}

/// What a waiter does before pausing, after its entry is published: a
/// condition wait unlocks its mutex there.
pub(crate) fn nothing() {}

/// The wait for one thing handed over (a lock, a permit, a notification,
/// a turn): [`wait`] with no step before pausing, whose `abandon` passes
/// what an unwound waiter was handed on with `pass_on`. Returns the lock
/// and whether the waiter was woken (false: `deadline` passed first).
pub(crate) fn wait_handed<'a, S: Queued<Kind = ()>>(
    m: &'a Mutex<S>,
    st: MutexGuard<'a, S>,
    deadline: Option<Instant>,
    pass_on: impl FnOnce(&mut S) -> Option<Wake>,
    what: &'static str,
) -> (MutexGuard<'a, S>, bool) {
    // A deadline `<= now` has passed.
    if deadline.is_some_and(|d| crate::scheduler::timers::now() >= d) {
        return (st, false);
    }
    let (st, woken) = wait(
        m,
        st,
        (),
        deadline,
        nothing,
        |st, woken| match woken {
            Woken::One => pass_on(st).into_iter().collect(),
            _ => Vec::new(),
        },
        what,
    );
    (st, woken != Woken::Not)
}

/// Queues the caller as a waiter for `kind` (under `st`, the held lock of
/// `m`), runs `then` with the lock released, and waits until a waker picks
/// it or `deadline` passes. Returns the lock, taken again, and how the
/// waiter was woken: [`Woken::Not`] means the deadline passed first. The
/// entry is gone when this returns.
///
/// A task is parked (only it pauses); a plain thread is parked whole.
///
/// If a task is unwound out of the pause (a [`timeout`](crate::timeout())
/// scope expired, or it was cancelled), or cannot pause at all because it
/// is unwinding already, `abandon` runs under the lock with how it was
/// woken: it hands on what the waiter was given and will not use, and
/// returns the waiters to wake for that. In the second case this then
/// panics, naming `what`, unless the waiter had been handed something (it
/// then returns it as usual).
pub(crate) fn wait<'a, S: Queued>(
    m: &'a Mutex<S>,
    st: MutexGuard<'a, S>,
    kind: S::Kind,
    deadline: Option<Instant>,
    then: impl FnOnce(),
    abandon: impl FnOnce(&mut S, Woken) -> Vec<Wake>,
    what: &'static str,
) -> (MutexGuard<'a, S>, Woken) {
    if in_task() {
        wait_task(m, st, kind, deadline, then, abandon, what)
    } else {
        wait_thread(m, st, kind, deadline, then)
    }
}

fn wait_task<'a, S: Queued>(
    m: &'a Mutex<S>,
    mut st: MutexGuard<'a, S>,
    kind: S::Kind,
    deadline: Option<Instant>,
    then: impl FnOnce(),
    abandon: impl FnOnce(&mut S, Woken) -> Vec<Wake>,
    what: &'static str,
) -> (MutexGuard<'a, S>, Woken) {
    let token = park_token();
    let remote = token.remote();
    // A second handle stays with the task while it is parked: the waker
    // drops the entry's handle right after unparking, and the scheduler
    // counts live handles to tell a task that can still be woken from a
    // deadlocked one.
    let keep = remote.clone();
    let id = st.waiters().q.push(Entry {
        kind,
        woken: Woken::Not,
        wake: Some(Wake::Task { token, remote }),
    });
    drop(st);
    then();
    // Runs if the task unwinds out of the pause, and when it cannot pause.
    let guard = OnDrop::new(move || {
        let mut st = lock(m);
        let woken = st.waiters().q.remove(id).map_or(Woken::Not, |e| e.woken);
        let wakes = abandon(&mut st, woken);
        drop(st);
        wake_all(wakes);
    });
    let r = park_on(token, deadline, ParkedOn::Sync);
    drop(keep);
    let mut st = lock(m);
    let woken = match st.waiters().q.get_mut(id) {
        Some(e) => e.woken,
        None => Woken::Not,
    };
    if let (Resume::Cancelled, Woken::Not) = (r, woken) {
        drop(st);
        // Runs `abandon` (which removes the entry), then the panic.
        drop(guard);
        panic!("yieldloop: cannot wait for {what} in a task that is unwinding");
    }
    guard.defuse();
    st.waiters().q.remove(id);
    (st, woken)
}

fn wait_thread<'a, S: Queued>(
    m: &'a Mutex<S>,
    mut st: MutexGuard<'a, S>,
    kind: S::Kind,
    deadline: Option<Instant>,
    then: impl FnOnce(),
) -> (MutexGuard<'a, S>, Woken) {
    let id = st.waiters().q.push(Entry {
        kind,
        woken: Woken::Not,
        wake: Some(Wake::Thread(thread::current())),
    });
    drop(st);
    then();
    #[cfg(loom)]
    let mut tried = false;
    loop {
        st = lock(m);
        let woken = st.waiters().q.get_mut(id).map_or(Woken::Not, |e| e.woken);
        // A deadline `<= now` has passed.
        #[cfg(not(loom))]
        let passed = deadline.is_some_and(|d| Instant::now() >= d);
        #[cfg(loom)]
        let passed = tried;
        if woken != Woken::Not || passed {
            st.waiters().q.remove(id);
            return (st, woken);
        }
        drop(st);
        // An unpark that came before this returns it at once; one meant for
        // an earlier wait makes the loop look again.
        match deadline {
            None => thread::park(),
            #[cfg(not(loom))]
            Some(d) => thread::park_timeout(d.saturating_duration_since(Instant::now())),
            #[cfg(loom)]
            Some(_) => {
                tried = true;
                thread::yield_now();
            }
        }
    }
}
