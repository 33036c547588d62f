//! What a `tracing` subscriber is told (Cargo feature `tracing`): a span
//! per task, its pauses and resumes, the slow-task and stuck-task reports,
//! and a task's panic. Without the feature every item here is empty and
//! compiles to nothing.
//!
//! | what | how | level |
//! |---|---|---|
//! | a task, from spawn to end | span `task`, fields `task_id`, `task_name` | `INFO` |
//! | the task resumed, with what | event `resume`, field `resume` | `TRACE` |
//! | the task paused, on which op | event `pause`, field `op` | `TRACE` |
//! | the task ended | event `end` | `TRACE` |
//! | a resume held the thread past the threshold | event, fields `task_id`, `task_name`, `held_ms`, `threshold_ms` | `WARN` |
//! | a resume still running long past it | event, fields `task_id`, `held_s` | `WARN` |
//! | a task panicked | event, fields `task_id`, `task_name`, `location`, `panic` (its message) | `ERROR` |
//!
//! The task's span is entered for each resume and left when the task
//! pauses, so the events the task's own code emits carry it as their
//! context. Until a subscriber is set (globally or for a scope), the
//! scheduler skips them all on one check per turn of its loop; with one
//! that filters these out, each costs a check of a cached interest: no
//! allocation, no lock. A task spawned before any subscriber was set has
//! no span.
//!
//! The reports keep going to stderr as before unless a subscriber takes
//! their `WARN` (or `ERROR`) events: then they go to it alone, so that they
//! are not printed twice. A panic's own message is printed by the panic
//! hook as usual either way.

#[cfg(feature = "tracing")]
use crate::protocol::{Op, Resume};

/// The spans of a scheduler's tasks, by task slot: with the feature, a
/// span for each task spawned while a subscriber wanted them; nothing
/// without. Kept beside the task table rather than in each task's record,
/// so that with no subscriber a task costs nothing more than it does
/// without the feature: the list stays empty.
#[derive(Debug, Default)]
pub(crate) struct Spans {
    #[cfg(feature = "tracing")]
    by_slot: Vec<Option<tracing::Span>>,
}

/// The span entered while a task runs; leaving it when dropped.
#[derive(Debug)]
pub(crate) struct Entered {
    #[cfg(feature = "tracing")]
    _entered: Option<tracing::span::EnteredSpan>,
}

/// True once a `tracing` subscriber has been set, globally or for a
/// scope, on any thread (one load); false without the feature. Until
/// then no span is opened and no event is made: the scheduler asks once
/// per turn of its loop and skips them all.
#[inline]
pub(crate) fn active() -> bool {
    #[cfg(feature = "tracing")]
    {
        tracing::dispatcher::has_been_set()
    }
    #[cfg(not(feature = "tracing"))]
    {
        false
    }
}

impl Spans {
    /// Opens the span of a task being spawned into `slot`, named by its
    /// serial and name (if a subscriber wants it).
    ///
    /// Out of line, check included: the spawn's own code is then the same
    /// with the feature as without it (where the call is empty and goes).
    /// Inlined, the check alone cost spawn + join 5% with no subscriber,
    /// through the code around it rather than its own two instructions.
    #[inline(never)]
    pub(crate) fn open(&mut self, slot: usize, serial: u64, name: Option<&str>) {
        if active() {
            self.open_observed(slot, serial, name);
        }
    }

    /// [`open`](Self::open), once a subscriber has been set.
    #[cold]
    fn open_observed(&mut self, slot: usize, serial: u64, name: Option<&str>) {
        #[cfg(feature = "tracing")]
        {
            let span = tracing::info_span!(
                target: "yieldloop",
                "task",
                task_id = serial,
                task_name = name.unwrap_or(""),
            );
            if span.is_disabled() {
                return;
            }
            if self.by_slot.len() <= slot {
                self.by_slot.resize_with(slot + 1, || None);
            }
            self.by_slot[slot] = Some(span);
        }
        #[cfg(not(feature = "tracing"))]
        let _ = (slot, serial, name);
    }

    /// Enters the span of the task in `slot` for one resume.
    #[inline]
    pub(crate) fn enter(&self, slot: usize) -> Entered {
        #[cfg(not(feature = "tracing"))]
        let _ = slot;
        Entered {
            #[cfg(feature = "tracing")]
            _entered: self
                .by_slot
                .get(slot)
                .and_then(Option::as_ref)
                .map(|s| s.clone().entered()),
        }
    }

    /// Closes the span of the task that was in `slot`, which has ended.
    #[inline]
    pub(crate) fn close(&mut self, slot: usize) {
        #[cfg(feature = "tracing")]
        if let Some(s) = self.by_slot.get_mut(slot) {
            *s = None;
        }
        #[cfg(not(feature = "tracing"))]
        let _ = slot;
    }
}

/// The task is about to be resumed with `value`.
#[cfg(feature = "tracing")]
#[inline]
pub(crate) fn resumed(value: &Resume) {
    tracing::trace!(target: "yieldloop", resume = ?value, "resume");
}

/// The task paused on `op`.
#[cfg(feature = "tracing")]
#[inline]
pub(crate) fn paused(op: &Op) {
    tracing::trace!(target: "yieldloop", op = ?op, "pause");
}

/// The task's body returned or unwound.
#[cfg(feature = "tracing")]
#[inline]
pub(crate) fn ended() {
    tracing::trace!(target: "yieldloop", "end");
}

/// Reports a resume that held the thread for `held` (over `limit`) as a
/// warning event; false, having done nothing, when no subscriber takes it
/// (the caller prints it as before).
#[cold]
pub(crate) fn slow_task(serial: u64, name: Option<&str>, held_ms: f64, limit_ms: u128) -> bool {
    #[cfg(feature = "tracing")]
    {
        if tracing::enabled!(target: "yieldloop", tracing::Level::WARN) {
            tracing::warn!(
                target: "yieldloop",
                task_id = serial,
                task_name = name.unwrap_or(""),
                held_ms,
                threshold_ms = limit_ms as u64,
                "a task ran without pausing past the threshold; every other task on its \
                 thread waited"
            );
            return true;
        }
    }
    let _ = (serial, name, held_ms, limit_ms);
    false
}

/// Reports a resume still running after `held_s` seconds as a warning
/// event; false when no subscriber takes it.
#[cold]
pub(crate) fn stuck_task(serial: u64, held_s: f64) -> bool {
    #[cfg(feature = "tracing")]
    {
        if tracing::enabled!(target: "yieldloop", tracing::Level::WARN) {
            tracing::warn!(
                target: "yieldloop",
                task_id = serial,
                held_s,
                "a task has been running without pausing and still is; every other task \
                 on its thread is stalled"
            );
            return true;
        }
    }
    let _ = (serial, held_s);
    false
}

/// Reports a task's panic as an error event (the panic hook prints its
/// message as usual).
#[cfg(feature = "tracing")]
#[cold]
pub(crate) fn task_panicked(serial: u64, name: Option<&str>, location: &str, message: &str) {
    tracing::error!(
        target: "yieldloop",
        task_id = serial,
        task_name = name.unwrap_or(""),
        location,
        panic = message,
        "a task panicked"
    );
}
