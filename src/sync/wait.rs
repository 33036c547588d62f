//! The one way a waiter waits on a [`Waiters`](super::waiters::Waiters)
//! list, in either flavor: publish an entry under the primitive's lock,
//! release the lock, pause, take the lock again and remove the entry,
//! learning how it was woken.
//!
//! ```text
//!   waiter                                   waker
//!   ──────                                   ─────
//!   lock; id = push(entry); unlock
//!   pause (task: park; thread: park())
//!                                            lock; take the first entry
//!                                              (or all); change the state
//!                                              for the one served; unlock
//!                                            wake ─────── unpark ───▶
//!   lock; woken = remove(id)
//!   woken One, but unwinding? → hand it on (`abandon`)
//! ```
//!
//! Every decision is taken under the lock, so what the waker does and what
//! the waiter sees agree: a waiter whose entry was taken as [`Woken::One`]
//! *was handed* something (a lock, a permit, a notification) even if its
//! pause ended for another reason (its deadline passed at the same moment:
//! it then keeps what it got; it is being unwound: its `abandon` hands it
//! on, so nothing is lost to a waiter that is gone).
//!
//! No wake-up is lost: the entry is published under the lock before the
//! waiter pauses. A task cannot miss an unpark sent before it parked (its
//! scheduler acts on the unpark only once the task has paused); a thread
//! cannot either (an unpark before `park` makes `park` return at once).
//!
//! How the caller pauses is its flavor's: in the single-thread one always
//! as a task; across threads as a task if it is one, else as a plain
//! thread, which blocks.

use std::time::Instant;

use super::flavor::{Flavor, Guard, Wakeups};
use super::waiters::{WithWaiters, Woken};
use crate::protocol::{ParkToken, Resume};
use crate::scheduler::port::ParkedOn;
use crate::sys::threads::thread;
use crate::task::park::{park_on, park_token, InTask, Pause, RemoteUnparker};

/// Runs a closure when dropped, unless defused: the drop guards that undo a
/// registration when a task is unwound out of a pause.
pub(crate) struct OnDrop<F: FnOnce()>(Option<F>);

impl<F: FnOnce()> OnDrop<F> {
    #[inline]
    pub(crate) fn new(f: F) -> Self {
        OnDrop(Some(f))
    }

    /// Forgets the closure: the pause ended normally.
    #[inline]
    pub(crate) fn defuse(mut self) {
        self.0 = None;
    }
}

impl<F: FnOnce()> Drop for OnDrop<F> {
    #[inline]
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}

/// The held lock of a primitive's state `S` and its waiters.
type Held<'a, F, S, K> = Guard<'a, F, WithWaiters<F, S, K>>;

/// A wait could not even begin: the caller is a task that is unwinding,
/// which cannot pause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unwinding;

/// What a waiter does before pausing, after its entry is published: a
/// condition wait unlocks its mutex there.
pub(crate) fn nothing() {}

/// Queues the caller as a waiter for `kind` (under `st`, the held lock of
/// `lock`), runs `then` with the lock released, and waits until a waker
/// takes its entry or `deadline` passes. Returns the lock, taken again, and
/// how the waiter was woken: [`Woken::Not`] means the deadline passed
/// first. The entry is gone when this returns.
///
/// If a task is unwound out of the pause (a [`timeout`](crate::timeout())
/// scope expired, or it was cancelled), or cannot pause at all because it
/// is unwinding already, `abandon` runs under the lock with how it was
/// woken: it hands on what the waiter was given and will not use, and
/// returns the wake-ups that takes. In the second case this then panics,
/// saying it cannot wait `what` ("for a Mutex"), unless the waiter had been
/// woken (it then returns as usual).
#[inline]
pub(crate) fn wait<'a, F: Flavor, S, K>(
    lock: &'a F::Lock<WithWaiters<F, S, K>>,
    st: Held<'a, F, S, K>,
    kind: K,
    deadline: Option<Instant>,
    then: impl FnOnce(),
    abandon: impl FnOnce(&mut WithWaiters<F, S, K>, Woken) -> F::Wakeups,
    what: &'static str,
) -> (Held<'a, F, S, K>, Woken) {
    if let Some(me) = F::thread_waiter() {
        return wait_thread::<F, S, K>(lock, st, kind, me, deadline, then);
    }
    match wait_task(
        lock,
        st,
        kind,
        deadline,
        then,
        abandon,
        &mut caller(ParkedOn::Sync),
    ) {
        Ok(done) => done,
        Err(Unwinding) => unwinding(what),
    }
}

/// The panic of a wait that cannot begin: the caller is a task that is
/// unwinding. `what` says what it waited for, as "for a Mutex".
#[cold]
#[inline(never)]
pub(crate) fn unwinding(what: &str) -> ! {
    panic!("yieldloop: cannot wait {what} in a task that is unwinding")
}

/// [`wait`] for a task, pausing through `pause`. If it cannot pause (it is
/// unwinding) and was not woken, `abandon` has run and the lock is
/// released: [`Unwinding`].
pub(crate) fn wait_task<'a, F: Flavor, S, K>(
    lock: &'a F::Lock<WithWaiters<F, S, K>>,
    mut st: Held<'a, F, S, K>,
    kind: K,
    deadline: Option<Instant>,
    then: impl FnOnce(),
    abandon: impl FnOnce(&mut WithWaiters<F, S, K>, Woken) -> F::Wakeups,
    pause: &mut impl Pause,
) -> Result<(Held<'a, F, S, K>, Woken), Unwinding> {
    let (token, wake, keep) = F::task_waiter(pause);
    let id = st.waiters.push(kind, wake);
    // No lock is held across the pause: the guard below takes it while the
    // stack unwinds from inside the park.
    drop(st);
    then();
    // Runs if the task unwinds out of the pause, and when it cannot pause.
    let guard = OnDrop::new(move || {
        let mut st = F::lock(lock);
        let woken = st.waiters.remove(id);
        let wakes = abandon(&mut st, woken);
        drop(st);
        wakes.wake();
    });
    let r = pause.park(token, deadline);
    drop(keep);
    let mut st = F::lock(lock);
    let woken = st.waiters.remove(id);
    if let (Resume::Cancelled, Woken::Not) = (r, woken) {
        drop(st);
        // Runs `abandon` (the entry is gone already).
        drop(guard);
        return Err(Unwinding);
    }
    guard.defuse();
    Ok((st, woken))
}

/// [`wait`] for a plain thread, woken through `me`: it blocks.
fn wait_thread<'a, F: Flavor, S, K>(
    lock: &'a F::Lock<WithWaiters<F, S, K>>,
    mut st: Held<'a, F, S, K>,
    kind: K,
    me: F::Wake,
    deadline: Option<Instant>,
    then: impl FnOnce(),
) -> (Held<'a, F, S, K>, Woken) {
    let id = st.waiters.push(kind, me);
    drop(st);
    then();
    #[cfg(loom)]
    let mut tried = false;
    loop {
        st = F::lock(lock);
        let woken = st.waiters.woken(id);
        // A deadline `<= now` has passed.
        #[cfg(not(loom))]
        let passed = deadline.is_some_and(|d| Instant::now() >= d);
        #[cfg(loom)]
        let passed = tried;
        if woken != Woken::Not || passed {
            let woken = st.waiters.remove(id);
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

/// Why [`wait_until`] returned without a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NotReady {
    /// The deadline passed.
    TimedOut,
    /// The caller is a task that is unwinding: it cannot pause.
    Unwinding,
}

/// Who waits in [`wait_until`].
pub(crate) enum Waiter<'p, P> {
    /// The caller as it is: a task pauses, saying for a dump what it waits
    /// on; a plain thread blocks.
    Caller(ParkedOn),
    /// A task pausing through `P`: a model check's stand-in for one.
    #[cfg_attr(not(loom), allow(dead_code))]
    Task(&'p mut P),
}

/// The caller, as it is, waiting on `on`.
pub(crate) fn caller(on: ParkedOn) -> Waiter<'static, InTask> {
    Waiter::Caller(on)
}

/// The caller pauses as [`InTask`] does, but with the pause inlined into the
/// wait (which [`InTask`]'s methods, compiled apart, are not): it is the
/// hand-over path of every single-thread primitive.
impl<P: Pause> Pause for Waiter<'_, P> {
    #[inline(always)]
    fn prepare(&mut self) -> (ParkToken, RemoteUnparker) {
        match self {
            Waiter::Caller(_) => {
                let token = park_token();
                (token, token.remote())
            }
            Waiter::Task(p) => p.prepare(),
        }
    }

    #[inline(always)]
    fn park(&mut self, token: ParkToken, deadline: Option<Instant>) -> Resume {
        match self {
            Waiter::Caller(on) => park_on(token, deadline, *on),
            Waiter::Task(p) => p.park(token, deadline),
        }
    }
}

/// Waits until `ready` gives a result or `deadline` passes. `ready` runs
/// under the lock: first with [`Woken::Not`], then after each wake-up
/// with how the waiter was woken, so a waiter that a waker served may take
/// that for the result even if the state changed again since. A waiter
/// unwound out of its pause runs `abandon` as in [`wait`].
pub(crate) fn wait_until<F: Flavor, S, R>(
    lock: &F::Lock<WithWaiters<F, S>>,
    mut ready: impl FnMut(&mut WithWaiters<F, S>, Woken) -> Option<R>,
    deadline: Option<Instant>,
    abandon: impl Fn(&mut WithWaiters<F, S>, Woken) -> F::Wakeups,
    mut waiter: Waiter<'_, impl Pause>,
) -> Result<R, NotReady> {
    let mut st = F::lock(lock);
    let mut woken = Woken::Not;
    loop {
        if let Some(r) = ready(&mut st, woken) {
            return Ok(r);
        }
        // A deadline `<= now` has passed: one last look was taken above.
        if deadline.is_some_and(|d| crate::scheduler::timers::now() >= d) {
            return Err(NotReady::TimedOut);
        }
        let me = match waiter {
            Waiter::Caller(_) => F::thread_waiter(),
            Waiter::Task(_) => None,
        };
        let abandon = |st: &mut WithWaiters<F, S>, woken| abandon(st, woken);
        (st, woken) = match me {
            Some(me) => wait_thread::<F, S, ()>(lock, st, (), me, deadline, nothing),
            None => wait_task(lock, st, (), deadline, nothing, abandon, &mut waiter)
                .map_err(|Unwinding| NotReady::Unwinding)?,
        };
    }
}
