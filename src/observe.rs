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
//! context. With no subscriber (or one that filters these out), each costs
//! a check of a cached interest: no allocation, no lock.
//!
//! The reports keep going to stderr as before unless a subscriber takes
//! their `WARN` (or `ERROR`) events: then they go to it alone, so that they
//! are not printed twice. A panic's own message is printed by the panic
//! hook as usual either way.

#[cfg(feature = "tracing")]
use crate::protocol::{Op, Resume};

/// The span of one task: `tracing::Span` with the feature, nothing
/// without.
#[derive(Debug, Default)]
pub(crate) struct TaskSpan {
    #[cfg(feature = "tracing")]
    span: Option<tracing::Span>,
}

/// The span entered while a task runs; leaving it when dropped.
#[derive(Debug)]
pub(crate) struct Entered {
    #[cfg(feature = "tracing")]
    _entered: Option<tracing::span::EnteredSpan>,
}

impl TaskSpan {
    /// The span of a task being spawned, named by its serial and name.
    #[inline]
    pub(crate) fn new(serial: u64, name: Option<&str>) -> TaskSpan {
        #[cfg(feature = "tracing")]
        {
            let span = tracing::info_span!(
                target: "yieldloop",
                "task",
                task_id = serial,
                task_name = name.unwrap_or(""),
            );
            TaskSpan {
                span: (!span.is_disabled()).then_some(span),
            }
        }
        #[cfg(not(feature = "tracing"))]
        {
            let _ = (serial, name);
            TaskSpan {}
        }
    }

    /// Enters the span for one resume.
    #[inline]
    pub(crate) fn enter(&self) -> Entered {
        Entered {
            #[cfg(feature = "tracing")]
            _entered: self.span.as_ref().map(|s| s.clone().entered()),
        }
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
