//! The waiter queue every primitive in this module is built on, and the
//! park-in-a-queue step they all share.
//!
//! A waiting task publishes an entry (its [`ParkToken`]) in the
//! primitive's queue of [`Signals`], then parks. A waker walks the queue
//! front to back and unparks the first entry whose token still names a
//! pause ([`ParkToken::unpark`] returns true): that waiter is the one
//! served; the waker takes its entry out and notes how it was woken. An
//! entry whose unpark fails belongs to a task that stopped waiting (it
//! timed out, or is being unwound); it is skipped and left for its owner,
//! who always takes out its own entry or note, so the queue never keeps
//! ghosts and no wake-up is spent on a task that will not use it.
//!
//! ```text
//!   waiter                                  waker
//!   ──────                                  ─────
//!   token = park_token()
//!   id = queue.push(token)    ──────────▶   take_first_entry(|token| token.unpark())
//!   park(token)                                 false: skip (owner cleans up)
//!      │                                        true:  note (id, One/All)
//!      ▼
//!   how = remove(id)   (always, by the owner: on return and on unwind;
//!                       Not if still queued, else the waker's note)
//!   how == One but unwinding?  → hand the wake-up on (drop guard)
//! ```

use std::cell::RefCell;
use std::collections::VecDeque;
use std::time::Instant;

use crate::protocol::ParkToken;
use crate::protocol::Resume;
use crate::scheduler::port::ParkedOn;
use crate::task::park::{park_on, park_token};

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

/// A FIFO of waiters, each under an id that stays valid until it is
/// removed, so a waiter can take itself out of the middle.
#[derive(Debug)]
pub(crate) struct WaitQueue<E> {
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
    pub(crate) fn push(&mut self, e: E) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.entries.push_back((id, e));
        id
    }

    fn index(&self, id: u64) -> Option<usize> {
        self.entries.binary_search_by_key(&id, |(i, _)| *i).ok()
    }

    /// Takes out the entry `id`, if it is still queued.
    #[inline]
    pub(crate) fn remove(&mut self, id: u64) -> Option<E> {
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
    pub(crate) fn contains(&self, id: u64) -> bool {
        self.index(id).is_some()
    }

    /// The entry `id`, if it is still queued.
    pub(crate) fn get_mut(&mut self, id: u64) -> Option<&mut E> {
        let i = self.index(id)?;
        self.entries.get_mut(i).map(|(_, e)| e)
    }

    /// Removes and returns the first entry for which `pred` is true; the
    /// entries before it stay where they are. `pred` is where the waker
    /// unparks, so it runs at most once per entry, front to back.
    #[inline]
    pub(crate) fn take_first(&mut self, pred: impl FnMut(&E) -> bool) -> Option<E> {
        self.take_first_entry(pred).map(|(_, e)| e)
    }

    /// [`take_first`](Self::take_first), with the entry's id.
    #[inline]
    pub(crate) fn take_first_entry(
        &mut self,
        mut pred: impl FnMut(&E) -> bool,
    ) -> Option<(u64, E)> {
        // Nearly always the front entry is the one: take it without
        // shifting the ring buffer.
        let (_, front) = self.entries.front()?;
        if pred(front) {
            return self.entries.pop_front();
        }
        let i = self.entries.iter().skip(1).position(|(_, e)| pred(e))? + 1;
        self.entries.remove(i)
    }

    /// Takes every entry out, front to back, keeping the queue's buffer.
    pub(crate) fn drain_all(&mut self) -> std::collections::vec_deque::Drain<'_, (u64, E)> {
        self.entries.drain(..)
    }

    /// Takes every entry out, front to back.
    pub(crate) fn take_all(&mut self) -> VecDeque<(u64, E)> {
        std::mem::take(&mut self.entries)
    }

    /// Every entry, front to back.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &E> {
        self.entries.iter().map(|(_, e)| e)
    }

    /// Every entry, front to back, to update in place.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut E> {
        self.entries.iter_mut().map(|(_, e)| e)
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The tasks parked for a single-thread primitive, in the order they
/// came, and how the ones a waker has already taken out were woken.
///
/// A waker takes a served entry out of the queue at once (so the queue
/// holds only tasks still to be served) and notes its id and how in
/// `served`; the task reads and drops that note when it resumes (see
/// [`park_local`]). Served ids only grow, since a waker serves the first
/// live entry and those before it can never be served again, so the notes
/// stay sorted and are read front first, in the order the tasks were
/// woken. Nothing is allocated per wait.
#[derive(Debug, Default)]
pub(crate) struct Signals {
    queue: WaitQueue<ParkToken>,
    /// # Invariant
    /// Ids strictly increase from front to back.
    served: VecDeque<(u64, Woken)>,
}

impl Signals {
    /// Tasks queued and not yet served.
    pub(crate) fn len(&self) -> usize {
        self.queue.len()
    }

    /// Takes the entry `id` out, queued or served, and says how its task
    /// was woken ([`Woken::Not`] while it is still queued).
    #[inline]
    fn remove(&mut self, id: u64) -> Woken {
        if self.queue.remove(id).is_some() {
            return Woken::Not;
        }
        match self.served.front() {
            Some(&(i, how)) if i == id => {
                self.served.pop_front();
                how
            }
            _ => match self.served.binary_search_by_key(&id, |(i, _)| *i) {
                Ok(i) => self.served.remove(i).map_or(Woken::Not, |(_, how)| how),
                // Taken out by a broadcast whose unpark it missed.
                Err(_) => Woken::Not,
            },
        }
    }
}

/// Wakes the first live waiter of `q` as the one singled out. Returns
/// whether there was one.
pub(crate) fn wake_one(q: &mut Signals) -> bool {
    match q.queue.take_first_entry(|t| t.unpark()) {
        Some((id, _)) => {
            q.served.push_back((id, Woken::One));
            true
        }
        None => false,
    }
}

/// Wakes every waiter of `q` as part of a broadcast.
pub(crate) fn wake_all(q: &mut Signals) {
    let Signals { queue, served } = q;
    for (id, token) in queue.drain_all() {
        // An entry whose task stopped waiting is simply dropped: its owner
        // finds it gone and not served, and has nothing to hand on.
        if token.unpark() {
            served.push_back((id, Woken::All));
        }
    }
}

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

/// Parks the calling task in the queue `queue(state)` until a waker picks
/// it or `deadline` passes, and returns the scheduler's answer and how the
/// primitive woke it. The entry is gone when this returns.
///
/// If the task is unwound out of the pause instead (it was cancelled, or a
/// [`timeout`](crate::timeout) scope expired), the entry is removed and
/// `abandon` runs with the state and the [`Woken`] flag, to hand on
/// whatever the task was given but will not use.
///
/// When the task cannot pause at all (it is already unwinding, so the park
/// answers [`Resume::Cancelled`] at once) this returns that answer with
/// [`Woken::Not`].
pub(crate) fn park_local<S>(
    state: &RefCell<S>,
    queue: impl Fn(&mut S) -> &mut Signals,
    deadline: Option<Instant>,
    abandon: impl FnOnce(&mut S, Woken),
) -> (Resume, Woken) {
    let token = park_token();
    let id = queue(&mut state.borrow_mut()).queue.push(token);
    // No borrow of `state` is held across the pause: the guard below may
    // need it while the stack unwinds from inside `park`.
    let guard = OnDrop::new(|| {
        let mut st = state.borrow_mut();
        let woken = queue(&mut st).remove(id);
        abandon(&mut st, woken);
    });
    let r = park_on(token, deadline, ParkedOn::Sync);
    guard.defuse();
    let woken = queue(&mut state.borrow_mut()).remove(id);
    (r, woken)
}
