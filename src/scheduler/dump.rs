//! The scheduler's side of [`diag::dump`](crate::diag::dump): listing its
//! tasks, what each waits on and since when, and capturing where each is
//! paused, on its own stack.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::coroutine;
use super::port::{Backtrace, SchedulerDump, TaskDump, TaskState as Shown, WaitingOn};
use super::table::{TaskState, WaitKind};
use super::Scheduler;
use crate::protocol::WaitToken;
use crate::reactor::IoWait;

/// One task as listed under the state's borrow, before its backtrace.
struct Listed {
    dump: TaskDump,
    /// The header of a task that has paused before (its stack can be
    /// walked), and is paused now.
    capture: Option<std::ptr::NonNull<super::coroutine::TaskHeader>>,
}

impl Scheduler {
    /// Answers every dump request queued with this scheduler's port. Called
    /// by the loop between turns, with no task running and the state let
    /// go of.
    #[cold]
    pub(super) fn answer_requests(&self) {
        let requests = self.port.take_requests();
        if requests.is_empty() {
            return;
        }
        let dump = self.dump_here();
        for r in requests {
            r(dump.clone());
        }
    }

    /// Lists this scheduler's tasks with their states and backtraces.
    fn dump_here(&self) -> SchedulerDump {
        let now = super::timers::now();
        let listed = self.list_tasks(now);
        let tasks = listed
            .into_iter()
            .map(|mut l| {
                if let Some(header) = l.capture {
                    // SAFETY: the header was listed from the task table a
                    // moment ago, with no task running (the loop calls this
                    // between turns) and none run since: the task is alive,
                    // paused in `pause` (it has paused before: the hint's
                    // stack pointer says so), and nothing drops or resumes
                    // it until this returns.
                    let ips = unsafe { coroutine::capture_backtrace(header) };
                    l.dump.backtrace = ips.map(Backtrace::new);
                }
                l.dump
            })
            .collect();
        SchedulerDump {
            scheduler: self.id.number(),
            thread: self.port.thread.clone(),
            tasks,
            unanswered: None,
        }
    }

    /// The tasks, by id, with what each waits on, under one borrow of the
    /// state.
    fn list_tasks(&self, now: Instant) -> Vec<Listed> {
        let core = self.core.borrow();
        let clock = self.clock_of(now);
        // Each wait's deadline, from the timer heap (stale entries are
        // left out by their token).
        let tasks = &core.tasks;
        let mut deadlines: HashMap<WaitToken, Instant> = HashMap::new();
        for (w, at) in core.timers.entries() {
            if tasks.is_waiting(w) {
                deadlines
                    .entry(w)
                    .and_modify(|d| *d = (*d).min(at))
                    .or_insert(at);
            }
        }
        // The socket of each wait on one, and the task each join waits
        // for (its joiners list holds the wait).
        let fds: HashMap<WaitToken, i32> = core.reactor.waits().collect();
        let mut joined: HashMap<WaitToken, u64> = HashMap::new();
        for (_, t) in core.tasks.slab.iter() {
            if let Some(h) = &t.header {
                joined.extend(h.joiners_iter().map(|w| (w, t.id.serial)));
            }
        }
        let mut out = Vec::with_capacity(core.tasks.slab.len());
        for (key, t) in core.tasks.slab.iter() {
            // Where the task last paused, 0 before its first resume (the
            // loop notes it for prefetching only in long turns).
            // SAFETY: the header is live while its record is in the table,
            // which the borrow holds, and no task runs while the scheduler
            // takes the dump.
            let hint = t
                .header
                .as_ref()
                .map_or(0, |h| unsafe { coroutine::paused_sp(h.as_ptr()) });
            let (state, since, deadline) = match t.state {
                // Running since this turn began, at the latest: the
                // loop's last reading of the clock.
                TaskState::Running { .. } => (Shown::Running, core.tasks.clock, None),
                TaskState::Queued { since } => (Shown::Ready { started: hint != 0 }, since, None),
                TaskState::Waiting {
                    token, on, since, ..
                } => {
                    let w = WaitToken { key, token };
                    let fd = || fds.get(&w).copied().filter(|&fd| fd >= 0);
                    let on = match on {
                        WaitKind::Timer => WaitingOn::Timer,
                        WaitKind::Io(IoWait::Readable) => WaitingOn::Readable { fd: fd() },
                        WaitKind::Io(IoWait::Writable) => WaitingOn::Writable { fd: fd() },
                        WaitKind::Io(IoWait::Connection) => WaitingOn::Accept { fd: fd() },
                        WaitKind::Join => WaitingOn::Join {
                            task: joined.get(&w).copied().unwrap_or(0),
                        },
                        WaitKind::Parked(p) => p.into(),
                    };
                    (Shown::Waiting(on), since, deadlines.get(&w).copied())
                }
            };
            let capture = match state {
                Shown::Running | Shown::Ready { started: false } => None,
                _ => t.header.as_ref().map(|h| h.as_ptr()),
            };
            out.push(Listed {
                dump: TaskDump {
                    id: t.id.serial,
                    name: t.name.as_deref().map(str::to_owned),
                    state,
                    since: Duration::from_millis(u64::from(clock.wrapping_sub(since))),
                    deadline_in: deadline.map(|d| d.saturating_duration_since(now)),
                    backtrace: None,
                    cancelled: t.header.as_ref().is_some_and(|h| {
                        // SAFETY: the header is live while its record is in
                        // the table; a running task (the one asking) is
                        // not read: its flag is its own.
                        !matches!(t.state, TaskState::Running { .. })
                            && unsafe { coroutine::cancelled_in_foreign_call(h.as_ptr()) }
                    }),
                },
                capture,
            });
        }
        out.sort_by_key(|l| l.dump.id);
        out
    }
}
