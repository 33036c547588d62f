//! What makes a primitive or a channel single-thread or cross-thread: its
//! [`Flavor`], [`Local`] or [`CrossThread`].
//!
//! Every primitive and channel of this module is written once, over a
//! flavor type parameter, and the flavor says what differs between the
//! kinds:
//!
//! | | [`Local`] | [`CrossThread`] |
//! |---|---|---|
//! | the [lock](Flavor::Lock) around the state | `RefCell` | std `Mutex` |
//! | a mutex's lock [`Word`] | `Cell<usize>` | `AtomicUsize` |
//! | a waiter's wake handle ([`Flavor::Wake`]) | its [`ParkToken`] | its token and a [`RemoteUnparker`], or a plain [`Thread`](thread::Thread) |
//! | when a waker wakes it | at once, under the lock, learning whether it still waits | a task of the waker's thread so; others later, through [`Wakeups`] (a primitive sends them once its lock is released) |
//! | who waits | a task | a task, or a plain thread, which blocks |
//!
//! The flavor is a type parameter, not a trait object, so each kind is
//! compiled for itself: the single-thread kinds make no atomic operation
//! and no dynamic call.

use std::cell::{Cell, RefCell, RefMut};
use std::ops::DerefMut;
use std::sync::PoisonError;

use crate::protocol::ParkToken;
use crate::sys::threads::atomic::{AtomicUsize, Ordering};
use crate::sys::threads::{thread, Mutex, MutexGuard};
use crate::task::park::{park_token, Pause, RemoteUnparker};

/// The held lock of state `S` in flavor `F`: a `RefMut` or a `MutexGuard`.
pub(crate) type Guard<'a, F, S> = <F as Flavor>::Guard<'a, S>;

/// A mutex's lock word: read and changed as an atomic integer is, which
/// the single-thread flavor does with a plain `Cell` (the orderings then
/// mean nothing).
pub(crate) trait Word: From<usize> {
    /// The value.
    fn get(&self, order: Ordering) -> usize;
    /// Sets the value.
    fn put(&self, v: usize, order: Ordering);
    /// Sets the value to `new` if it is `current` (with `order` when it
    /// does, `Relaxed` when it does not); true if it did.
    fn replace_if(&self, current: usize, new: usize, order: Ordering) -> bool;
}

// `#[inline]`: the lock word is the whole of an uncontended lock and
// unlock, and is compiled in the crate that locks.
impl Word for Cell<usize> {
    #[inline]
    fn get(&self, _: Ordering) -> usize {
        Cell::get(self)
    }

    #[inline]
    fn put(&self, v: usize, _: Ordering) {
        self.set(v);
    }

    #[inline]
    fn replace_if(&self, current: usize, new: usize, _: Ordering) -> bool {
        let hit = Cell::get(self) == current;
        if hit {
            self.set(new);
        }
        hit
    }
}

impl Word for AtomicUsize {
    #[inline]
    fn get(&self, order: Ordering) -> usize {
        self.load(order)
    }

    #[inline]
    fn put(&self, v: usize, order: Ordering) {
        self.store(v, order);
    }

    #[inline]
    fn replace_if(&self, current: usize, new: usize, order: Ordering) -> bool {
        self.compare_exchange(current, new, order, Ordering::Relaxed)
            .is_ok()
    }
}

/// The wake-ups a waker takes out of a waiter list under the lock, to send
/// once the lock is released, so that the woken never find it held by
/// their waker.
#[must_use = "the waiters wake only when `wake` is called"]
pub(crate) trait Wakeups<W>: Default {
    /// Adds the wake-up of a waiter taken out of the list.
    fn push(&mut self, w: W);
    /// Sends them, in the order they were taken.
    fn wake(self);
}

/// What makes a primitive or a channel single-thread or cross-thread (see
/// the [module docs](self)).
pub(crate) trait Flavor: Sized + 'static {
    /// The lock around a primitive's or a channel's state, made from the
    /// state with `From`.
    type Lock<S>: From<S>;
    /// What [`lock`](Flavor::lock) hands out.
    type Guard<'a, S: 'a>: DerefMut<Target = S>;
    /// A mutex's lock word.
    type Word: Word;
    /// How a queued waiter is woken: what its entry holds.
    type Wake: Clone;
    /// Wake-ups taken under the lock and sent after it.
    type Wakeups: Wakeups<Self::Wake>;

    /// Takes the lock `l`. Either flavor holds it for a few instructions
    /// and never across a pause or a wait.
    fn lock<'a, S: 'a>(l: &'a Self::Lock<S>) -> Self::Guard<'a, S>;

    /// Called by a waker, under the lock, on a waiter it serves: wakes it
    /// now where that can be done and says whether it was still waiting
    /// (`Some(false)`: it timed out or is being unwound, and the next is
    /// tried). A task of the waker's own thread is woken so; one of
    /// another thread cannot be asked, and a plain thread neither, so they
    /// are taken to be waiting (`None`) and woken once the lock is
    /// released, through [`Wakeups`](Flavor::Wakeups).
    fn wake_now(w: &Self::Wake) -> Option<bool>;

    /// The pause of the calling task made through `pause`: its token,
    /// the wake handle its entry holds, and a handle the task keeps until
    /// the pause is over (see [`task_wake`](Flavor::task_wake)).
    fn task_waiter(pause: &mut impl Pause) -> (ParkToken, Self::Wake, Option<RemoteUnparker>);

    /// The wake handle of the pause `token` of the calling task, and what
    /// the task keeps until that pause is over: across threads a second
    /// handle on its unparker, because a waker drops the entry's handle
    /// right after unparking, and the scheduler counts live handles to
    /// tell a task that can still be woken from a deadlocked one.
    fn task_wake(token: ParkToken) -> (Self::Wake, Option<RemoteUnparker>);

    /// The wake handle of the calling plain thread, which then blocks;
    /// `None` in a task, and always in the single-thread flavor, whose
    /// waiters are tasks only.
    fn thread_waiter() -> Option<Self::Wake>;
}

/// The single-thread flavor: state in a `RefCell`, waiters the tasks of one
/// scheduler, woken through their [`ParkToken`] without any atomic
/// operation.
#[derive(Debug)]
pub(crate) struct Local;

/// The wake-ups of the single-thread flavor: none are left to send after
/// the lock, since [`Local::wake_now`] woke each waiter already.
#[derive(Default)]
pub(crate) struct Woke;

impl Wakeups<ParkToken> for Woke {
    #[inline]
    fn push(&mut self, _: ParkToken) {}

    #[inline]
    fn wake(self) {}
}

// `#[inline]` throughout: these are called on every hand-over from generic
// code that may be compiled in the crate using the primitive, where a
// function of this crate that is not generic is otherwise never inlined.
impl Flavor for Local {
    type Lock<S> = RefCell<S>;
    type Guard<'a, S: 'a> = RefMut<'a, S>;
    type Word = Cell<usize>;
    type Wake = ParkToken;
    type Wakeups = Woke;

    /// Borrows the state: every handle lives on one scheduler's thread and
    /// no borrow is held across a pause, so a borrow is never contended.
    #[inline]
    fn lock<'a, S: 'a>(l: &'a RefCell<S>) -> RefMut<'a, S> {
        l.borrow_mut()
    }

    #[inline]
    fn wake_now(token: &ParkToken) -> Option<bool> {
        Some(token.unpark())
    }

    /// The calling task's own token: a `pause` (there is only ever the
    /// task itself) would make a cross-thread unparker, which a waiter of
    /// one thread has no use for.
    #[inline]
    fn task_waiter(_: &mut impl Pause) -> (ParkToken, ParkToken, Option<RemoteUnparker>) {
        let token = park_token();
        (token, token, None)
    }

    #[inline]
    fn task_wake(token: ParkToken) -> (ParkToken, Option<RemoteUnparker>) {
        (token, None)
    }

    #[inline]
    fn thread_waiter() -> Option<ParkToken> {
        None
    }
}

/// The cross-thread flavor: state behind a std mutex, waiters the tasks of
/// any scheduler and plain threads.
#[derive(Debug)]
pub(crate) struct CrossThread;

/// How a cross-thread waiter is woken.
#[derive(Clone)]
pub(crate) enum Wake {
    /// A paused task: through its token on its own thread, through the
    /// unparker from others.
    Task {
        token: ParkToken,
        remote: RemoteUnparker,
    },
    /// A blocked plain thread.
    Thread(thread::Thread),
}

impl Wake {
    /// Wakes the waiter where that can be done at once, on the task's own
    /// scheduler thread: `Some(whether it was still paused)`. `None`
    /// elsewhere, and for a thread: then only [`send`](Self::send)
    /// reaches it.
    #[inline]
    pub(crate) fn unpark_here(&self) -> Option<bool> {
        match self {
            Wake::Task { token, .. } => token.unpark_here(),
            Wake::Thread(_) => None,
        }
    }

    /// Wakes the waiter from any thread. Whether a task was still paused
    /// is decided by its scheduler; a stale wake-up is ignored there.
    #[inline]
    pub(crate) fn send(&self) {
        match self {
            Wake::Task { remote, .. } => remote.unpark(),
            Wake::Thread(t) => t.unpark(),
        }
    }
}

/// The wake-ups of the cross-thread flavor. The first is kept inline: a
/// mutex or a semaphore hands over to one waiter at a time, and that
/// allocates nothing.
#[derive(Default)]
pub(crate) struct Deferred {
    first: Option<Wake>,
    rest: Vec<Wake>,
}

impl Wakeups<Wake> for Deferred {
    #[inline]
    fn push(&mut self, w: Wake) {
        if self.first.is_none() {
            self.first = Some(w);
        } else {
            self.rest.push(w);
        }
    }

    #[inline]
    fn wake(self) {
        for w in self.first.into_iter().chain(self.rest) {
            w.send();
        }
    }
}

impl Flavor for CrossThread {
    type Lock<S> = Mutex<S>;
    type Guard<'a, S: 'a> = MutexGuard<'a, S>;
    type Word = AtomicUsize;
    type Wake = Wake;
    type Wakeups = Deferred;

    /// A std mutex, not a task-aware one, because nothing ever pauses while
    /// holding it (it is released before any park). No code panics while
    /// holding it in a way that leaves the state half-updated (values are
    /// dropped after it is released), so a poisoned lock still holds a
    /// sound state.
    #[inline]
    fn lock<'a, S: 'a>(l: &'a Mutex<S>) -> MutexGuard<'a, S> {
        l.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// On the task's own thread the scheduler is reached directly, with no
    /// cross-thread queue or poll interruption, and says whether the task
    /// still waits.
    #[inline]
    fn wake_now(w: &Wake) -> Option<bool> {
        w.unpark_here()
    }

    #[inline]
    fn task_waiter(pause: &mut impl Pause) -> (ParkToken, Wake, Option<RemoteUnparker>) {
        let (token, remote) = pause.prepare();
        let keep = Some(remote.clone());
        (token, Wake::Task { token, remote }, keep)
    }

    #[inline]
    fn task_wake(token: ParkToken) -> (Wake, Option<RemoteUnparker>) {
        let remote = token.remote();
        let keep = Some(remote.clone());
        (Wake::Task { token, remote }, keep)
    }

    #[inline]
    fn thread_waiter() -> Option<Wake> {
        // A task parks; a plain thread blocks.
        match crate::task::spawn::current_id() {
            Some(_) => None,
            None => Some(Wake::Thread(thread::current())),
        }
    }
}
