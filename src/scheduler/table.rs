//! The task table: the scheduler's record of every live task, what state
//! each is in, and the run queue. Everything a wake-up touches is here.
//!
//! ```text
//!            spawn                 wait_for (any Op but Yield)
//!              │                ┌────────────────────────────┐
//!              ▼     resume     │                            ▼
//!           Queued ──────────▶ Running ──────────────▶ Waiting { token }
//!              ▲                │  ▲ Op::Yield, Op::Defer     │
//!              └────────────────┘  │                          │ wake(token)
//!              ▲                   │ return / cancelled       │
//!              └───────────────────┼──────────────────────────┘
//!                                  ▼
//!                           removed from the table
//! ```

use std::fmt;
use std::rc::Rc;

use slab::Slab;

use super::coroutine::OwnedHeader;
use super::port::ParkedOn;
use super::timers::Timers;
use super::trace;
use crate::protocol::{Resume, TaskId, WaitToken};
use crate::reactor::{IoWait, WaitingTasks};

/// Where a live task is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TaskState {
    /// In the run queue, to be resumed with its record's `resume` value.
    Queued { since: u32 },
    /// Its coroutine is running now. `cancel` is set by a cancellation of
    /// the running task, which tears it down at its next pause.
    Running { cancel: bool },
    /// Paused in the wait `token` (see [`WaitToken`]); `timer` is true
    /// while a timer entry for this wait sits in the heap, so the heap can
    /// count entries that went stale; `on` says what the wait is for, for
    /// a dump.
    Waiting {
        token: u64,
        timer: bool,
        on: WaitKind,
        since: u32,
    },
}
// In the variants that have it, `since` is the [`TaskTable::clock`] at
// which the task entered the state, for a dump: kept in the padding of the
// variants, so the record stays as small as it was. A running task has
// none: a dump can only see the task that asks for it running, and that
// one since the turn began at the latest.

/// What a waiting task waits for, as its op said (for a dump, which
/// finds the socket or the task joined by the wait's token).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum WaitKind {
    Timer,
    /// A socket or descriptor, as the reactor files the wait.
    Io(IoWait),
    Join,
    Parked(ParkedOn),
}

/// The scheduler's record of one live task.
pub(super) struct Task {
    pub(super) id: TaskId,
    /// Name given with [`Builder::name`](crate::Builder::name), for messages.
    pub(super) name: Option<Rc<str>>,
    /// The coroutine and the context its code reads, at a fixed address:
    /// the scheduler resumes the coroutine in place. `None` only once the
    /// task has been taken out of the table.
    pub(super) header: Option<OwnedHeader>,
    pub(super) state: TaskState,
    /// The answer to send at the next resume (`None` reads as `Ready`).
    /// (The tasks waiting for this one's end are kept in its header, on
    /// its stack: see [`Joiners`](super::coroutine::Joiners).)
    pub(super) resume: Option<Resume>,
}

impl fmt::Debug for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Task")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

/// The addresses a resume of one task touches first, noted at its last
/// pause so that they can be prefetched without reading the task's record
/// or header (which are what is cold). Kept per slot in a small array of
/// their own: a slot whose task ended keeps stale addresses, harmless to a
/// prefetch.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct PrefetchHint {
    /// The task's header.
    pub(super) header: usize,
    /// Where its stack pointer was at its last pause, 0 before the first.
    pub(super) paused_sp: usize,
}

/// The live tasks and the run queue.
#[derive(Debug, Default)]
pub(super) struct TaskTable {
    pub(super) slab: Slab<Task>,
    /// Tasks ready to run, in the order they became ready. A slot may be
    /// reused while an entry for its old task is still queued; the id's
    /// serial tells. The loop takes the whole queue at the start of a turn
    /// and runs it, so a plain `Vec` is all the FIFO needs.
    /// # Invariant
    /// A live task is queued exactly when its state is
    /// [`TaskState::Queued`], and then once: in this queue or in
    /// `deferred`.
    pub(super) run_queue: Vec<TaskId>,
    /// Tasks that paused with [`Op::Defer`](crate::raw::Op::Defer): queued
    /// at the back of the run queue after the next poll's wake-ups.
    pub(super) deferred: Vec<TaskId>,
    /// Per slot, what to prefetch before resuming its task.
    pub(super) hints: Vec<PrefetchHint>,
    /// Per slot, the task's `tracing` span (feature `tracing`, and only
    /// while a subscriber wants them).
    pub(super) spans: super::tracing_events::Spans,
    /// The last spawn's serial number.
    pub(super) next_serial: u64,
    /// The last wait token handed out.
    pub(super) next_token: u64,
    /// The scheduler's clock as the loop last read it, in milliseconds
    /// since the scheduler started (wrapping after 49 days): what a task's
    /// change of state is stamped with (the `since` of [`TaskState`]),
    /// without a clock read of its own.
    pub(super) clock: u32,
}

impl TaskTable {
    /// The tasks queued to run: in the run queue or deferred past the next
    /// poll.
    pub(super) fn queued(&self) -> usize {
        self.run_queue.len() + self.deferred.len()
    }

    /// A fresh wait token number, never 0.
    pub(super) fn fresh_token(&mut self) -> u64 {
        self.next_token += 1;
        self.next_token
    }

    /// True while the task of `w` is paused in that very wait.
    #[inline]
    pub(super) fn is_waiting(&self, w: WaitToken) -> bool {
        self.slab.get(w.key).is_some_and(
            |t| matches!(t.state, TaskState::Waiting { token, .. } if token == w.token),
        )
    }

    /// The task `id`, if it is still alive.
    pub(super) fn get_mut(&mut self, id: TaskId) -> Option<&mut Task> {
        self.slab.get_mut(id.key).filter(|t| t.id == id)
    }

    /// Ends the wait `w` with `value` and queues its task, if it is still
    /// in that wait. Returns whether it did, and whether the wait had a
    /// timer armed (now stale).
    /// (Always inlined: it is the unpark path's, and its callers each keep
    /// only the part they need.)
    #[inline(always)]
    fn wake(&mut self, w: WaitToken, value: Resume, cause: &str) -> (bool, bool) {
        match self.slab.get_mut(w.key) {
            Some(t) => match t.state {
                TaskState::Waiting { token, timer, .. } if token == w.token => {
                    if trace::on() {
                        trace::emit(format_args!(
                            "wake   {} by {cause}",
                            trace::Who(t.id.serial, t.name.as_deref())
                        ));
                    }
                    t.state = TaskState::Queued { since: self.clock };
                    t.resume = Some(value);
                    self.run_queue.push(t.id);
                    (true, timer)
                }
                _ => (false, false),
            },
            None => (false, false),
        }
    }
}

/// The task table with the timer heap beside it: waking a task may leave
/// its timer entry stale, which the heap counts.
pub(super) struct Waking<'a> {
    pub(super) tasks: &'a mut TaskTable,
    pub(super) timers: &'a mut Timers,
}

impl Waking<'_> {
    /// Ends the wait `w` with `value` if its task is still in it; returns
    /// whether it did. A timer the wait had armed is counted stale.
    #[inline]
    pub(super) fn wake_if_waiting(&mut self, w: WaitToken, value: Resume, cause: &str) -> bool {
        let (woken, had_timer) = self.tasks.wake(w, value, cause);
        if had_timer {
            let tasks = &*self.tasks;
            self.timers.mark_stale(|x| tasks.is_waiting(x));
        }
        woken
    }

    /// Ends the wait of a timer entry that just fired; a stale entry is
    /// counted out of the heap.
    pub(super) fn wake_by_timer(&mut self, w: WaitToken, value: Resume) {
        let (woken, _) = self.tasks.wake(w, value, "timer");
        if !woken {
            self.timers.popped_stale();
        }
    }
}

impl WaitingTasks for Waking<'_> {
    #[inline]
    fn is_waiting(&self, w: WaitToken) -> bool {
        self.tasks.is_waiting(w)
    }

    fn wake(&mut self, w: WaitToken, value: Resume, cause: &'static str) {
        self.wake_if_waiting(w, value, cause);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A task record fits two cache lines, so a wake-up or a resume touches
    /// no more than that of it, and stays at 96 bytes: a million sleeping
    /// tasks hold a million of them.
    #[test]
    fn a_task_record_fits_two_cache_lines() {
        assert!(
            std::mem::size_of::<Task>() <= 96,
            "Task is {} bytes",
            std::mem::size_of::<Task>()
        );
    }
}
