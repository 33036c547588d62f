//! The loop itself: turns of resumes, polls between them, and what the
//! loop does around each resume (prefetching, panic attribution, the
//! slow-task report, the trace).

use std::panic;
use std::time::Instant;

use corosensei::CoroutineResult;

use super::coroutine;
use super::table::TaskState;
use super::timers::{self, TimerKind};
use super::trace;
use super::{Core, Scheduler};
use crate::protocol::{Op, Resume, TaskId};
use crate::reactor::Wait;

/// While tasks stay ready, the loop polls for I/O events only once this
/// many resumes have run since the last poll, so that turns of one or two
/// tasks do not pay a system call every few hand-overs. It is counted in
/// resumes, not turns (a turn runs every ready task once): turns of
/// hundreds of tasks would otherwise hold a socket's wake-up for thousands
/// of resumes. Turns end on the poll, so a socket waits behind busy tasks
/// for at most this many short resumes and the rest of a turn.
const POLL_EVERY_RESUMES: usize = 256;

/// … unless the ready tasks have been at it for [`POLL_AT_LEAST_EVERY`]:
/// tasks that each pause within their budgets (see `coop`) but keep one
/// another busy (two tasks on a small channel, each doing work per item)
/// would otherwise run for many milliseconds between polls. The clock is
/// read for it only after every this many budget units spent …
const CLOCK_EVERY_SPENT: u32 = 512;
/// … and a poll is due once this much time has passed since the first
/// such reading after the last poll.
const POLL_AT_LEAST_EVERY: std::time::Duration = std::time::Duration::from_millis(1);

/// Turns of at least this many tasks resume each with the memory of a task
/// further on its way into the cache (see [`coroutine::prefetch_task`]) …
const PREFETCH_FROM_TASKS: usize = 8;
/// … this many places further in the turn.
const PREFETCH_AHEAD: usize = 2;

/// How soon the loop comes back to give back more idle stacks when the
/// last trim left some (see `stack::trim`).
const TRIM_AGAIN_AFTER: std::time::Duration = std::time::Duration::from_millis(1);

/// Under a paused clock that something other than time holds still (a
/// socket, another thread), the loop looks again this often whether the
/// clock may jump.
const PAUSED_RECHECK: std::time::Duration = std::time::Duration::from_millis(5);

/// Settings read once per turn of the loop, not once per resume.
#[derive(Debug)]
struct Turn {
    /// Is the trace on?
    traced: bool,
    /// Has a `tracing` subscriber ever been set (feature `tracing`;
    /// always false without)? Then each resume takes the copy of
    /// [`Scheduler::run_one`] that reports to it.
    observed: bool,
    /// Does this turn prefetch (see [`PREFETCH_FROM_TASKS`])? Then each
    /// pause's stack pointer is noted for the next turn's prefetches; in
    /// turns of a few tasks, whose memory stays in the cache, it is not.
    prefetch: bool,
}

impl Core {
    /// Publishes the task counts and the run queue's length to `metrics`.
    pub(super) fn publish_counts(&self, metrics: &super::port::Metrics) {
        let spawned = self.tasks.next_serial;
        metrics.spawned.set(spawned);
        metrics.ended.set(spawned - self.tasks.slab.len() as u64);
        metrics.run_queue.set(self.tasks.queued() as u64);
    }

    /// Wakes every task whose deadline is due at `now`, and files the
    /// wakers of the futures' timers due by then with the reactor's list of
    /// wakers to wake once the state is let go of.
    fn fire_timers(&mut self, now: Instant) {
        while let Some(entry) = self.timers.pop_due(now) {
            let value = match entry.kind {
                TimerKind::Sleep => Resume::Ready,
                TimerKind::Deadline => Resume::TimedOut,
            };
            self.waking().wake_by_timer(entry.waiter, value);
        }
        if !self.waker_timers.is_empty() {
            self.waker_timers.fire_due(now, self.reactor.woken_mut());
        }
    }

    /// Under a paused clock: may the clock jump to the next deadline? Only
    /// when no task or future waits on a socket or descriptor, and no
    /// other thread holds a way to wake a task here (a cross-thread wait,
    /// work on the blocking pool, a future woken from elsewhere).
    fn time_alone_wakes(&self) -> bool {
        let tasks = &self.tasks;
        !self.reactor.outside_wake_possible() && !self.reactor.io_waited_on(|w| tasks.is_waiting(w))
    }

    /// Are any timers armed, of tasks or of futures (stale ones included)?
    fn has_timers(&self) -> bool {
        !self.timers.is_empty() || !self.waker_timers.is_empty()
    }

    /// Until when the next poll may block: `now` if tasks are ready, else
    /// the next live deadline, else `None` (until an event).
    fn poll_deadline(&mut self, now: Instant) -> Option<Instant> {
        if !self.tasks.run_queue.is_empty() || !self.tasks.deferred.is_empty() {
            return Some(now);
        }
        let tasks = &self.tasks;
        let of_tasks = self.timers.next_deadline(|w| tasks.is_waiting(w));
        match (of_tasks, self.waker_timers.next_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

impl Scheduler {
    /// Prefetches for the task [`PREFETCH_AHEAD`] places after `next` in
    /// the turn `batch`, if there is one.
    #[inline]
    fn prefetch_ahead(&self, batch: &[TaskId], next: usize) {
        if let Some(ahead) = batch.get(next + PREFETCH_AHEAD - 1) {
            self.prefetch(ahead.key);
        }
    }

    /// Starts loading what resuming the task in slot `key` touches (see
    /// [`coroutine::prefetch_task`]), from the addresses noted for it.
    fn prefetch(&self, key: usize) {
        let core = self.core.borrow();
        if let Some(h) = core.tasks.hints.get(key) {
            coroutine::prefetch_task(h.header, h.paused_sp);
        }
    }

    /// [`run_one`](Self::run_one), reporting to `tracing` if the turn
    /// says a subscriber was set.
    #[inline(always)]
    fn run_one_in<const TIMED: bool>(&self, id: TaskId, turn: &Turn, weight: u64) {
        if turn.observed {
            self.run_one_observed::<TIMED>(id, turn, weight);
        } else {
            self.run_one::<TIMED, false>(id, turn, weight);
        }
    }

    /// [`run_one`](Self::run_one) inside the task's `tracing` span
    /// (feature `tracing`), entered until the task is filed.
    #[inline(never)]
    fn run_one_observed<const TIMED: bool>(&self, id: TaskId, turn: &Turn, weight: u64) {
        let _entered = self.core.borrow().tasks.spans.enter(id.key);
        self.run_one::<TIMED, true>(id, turn, weight);
    }

    /// Runs one queued task until it pauses or ends, and files it. With
    /// `TIMED`, the resume is timed for the hold histogram, standing for
    /// `weight` resumes; with `OBSERVED`, its resume and pause are
    /// reported to `tracing` (feature `tracing`). Each is a copy of its
    /// own, so that the plain resumes pay nothing for either. Kept out of
    /// line, as the turn's loop is best with it.
    #[inline(never)]
    fn run_one<const TIMED: bool, const OBSERVED: bool>(
        &self,
        id: TaskId,
        turn: &Turn,
        weight: u64,
    ) {
        let key = id.key;
        let (header, value) = {
            let mut core = self.core.borrow_mut();
            let Some(t) = core.tasks.get_mut(id) else {
                return;
            };
            if !matches!(t.state, TaskState::Queued { .. }) {
                return;
            }
            let Some(header) = &t.header else {
                return;
            };
            let header = header.as_ptr();
            t.state = TaskState::Running { cancel: false };
            let value = t.resume.take().unwrap_or(Resume::Ready);
            (header, value)
        };
        #[cfg(feature = "tracing")]
        if OBSERVED {
            super::tracing_events::resumed(&value);
        }
        let traced = turn.traced;
        if traced {
            let name = self.task_name(id);
            trace::emit(format_args!(
                "resume {} with {}",
                trace::Who(id.serial, name.as_deref()),
                trace::ShowResume(&value)
            ));
        }
        let resume_no = self.watch.begin(id.serial);
        let timed_from = if TIMED { Some(Instant::now()) } else { None };
        // A panic out of the resume is caught for the whole turn in
        // `run_until` (one landing pad per turn, not per resume), which
        // knows it came out of a resume by the watch's mark, from `begin`
        // to `end`, and whose it was by the task's `Running` state.
        // SAFETY: the header belongs to the task record, which stays in the
        // table while the task is `Running`: a cancellation only marks a
        // running task, and nothing else removes one before this function
        // does, below.
        let result = unsafe { coroutine::resume_task(header, value) };
        if let Some(from) = timed_from {
            self.port.metrics.record_hold(from.elapsed(), weight);
        }
        #[cfg(feature = "tracing")]
        if OBSERVED {
            match &result {
                CoroutineResult::Yield(op) => super::tracing_events::paused(op),
                CoroutineResult::Return(()) => super::tracing_events::ended(),
            }
        }
        if traced {
            let name = self.task_name(id);
            let who = trace::Who(id.serial, name.as_deref());
            match &result {
                CoroutineResult::Yield(op) => trace::emit(format_args!(
                    "yield  {who} -> {}",
                    trace::ShowOp(op, timers::now())
                )),
                _ => trace::emit(format_args!("end    {who}")),
            }
        }
        if self.watch.end() {
            self.warn_slow(resume_no, id);
        }
        let mut core = self.core.borrow_mut();
        match result {
            CoroutineResult::Yield(op) => {
                if turn.prefetch {
                    // SAFETY: as for the resume above: the header lives
                    // while the task's record is in the table, and its task
                    // just paused.
                    let paused_sp = unsafe { coroutine::paused_sp(header) };
                    if let Some(h) = core.tasks.hints.get_mut(key) {
                        h.paused_sp = paused_sp;
                    }
                }
                let clock = core.tasks.clock;
                let task = &mut core.tasks.slab[key];
                if task.state == (TaskState::Running { cancel: true }) {
                    let header = core.remove(key);
                    drop(core);
                    if let Some(header) = header {
                        coroutine::drop_task(header);
                    }
                } else if let Op::Yield = op {
                    // The hottest op: straight back to the queue, no wait
                    // token. (`resume` is `None`, which reads as `Ready`.)
                    task.state = TaskState::Queued { since: clock };
                    core.tasks.run_queue.push(id);
                } else if let Op::Defer = op {
                    // A spent budget: queued behind what the next poll
                    // wakes.
                    task.state = TaskState::Queued { since: clock };
                    core.tasks.deferred.push(id);
                } else {
                    core.wait_for(id, op, self.id);
                }
            }
            CoroutineResult::Return(()) => {
                let header = core.remove(key);
                drop(core);
                // The coroutine is done: dropping it only returns its stack.
                drop(header);
            }
        }
    }

    /// Handles a panic that unwound out of a turn: if it came out of a
    /// task's resume (the task's body catches its own panics, so this is a
    /// panic in the runtime itself while it ran the task), that task is
    /// gone and the others go on; any other panic goes on unwinding.
    #[cold]
    fn resume_panicked(&self, payload: Box<dyn std::any::Any + Send>) {
        // Only one task is `Running` at a time: the one resumed.
        let running = (self.watch.running_task() != 0)
            .then(|| {
                let core = self.core.borrow();
                core.tasks
                    .slab
                    .iter()
                    .find(|(_, t)| matches!(t.state, TaskState::Running { .. }))
                    .map(|(key, t)| (key, t.id))
            })
            .flatten();
        let Some((key, id)) = running else {
            panic::resume_unwind(payload)
        };
        self.watch.end();
        let header = self.core.borrow_mut().remove(key);
        if let Some(header) = header {
            coroutine::drop_task(header);
        }
        eprintln!(
            "yieldloop: internal error while running task {id}: {}",
            crate::protocol::join_failure::payload_text(&*payload).unwrap_or("<non-string panic>")
        );
    }

    /// Warns about the resume the slow-task monitor flagged: normally the
    /// one that just ended (`resume_no`, of task `id`), or, when the flag
    /// came a moment too late for that resume's check, an earlier one.
    #[cold]
    fn warn_slow(&self, resume_no: u64, id: TaskId) {
        let Some(flag) = self.watch.take_flag() else {
            return;
        };
        let Some(limit) = super::slow_task::threshold() else {
            return;
        };
        self.port.metrics.slow_holds.add(1);
        let (name, cancelled) = {
            let core = self.core.borrow();
            let task = if flag.resume == resume_no {
                core.tasks.slab.get(id.key).filter(|t| t.id == id)
            } else {
                core.tasks
                    .slab
                    .iter()
                    .find(|(_, t)| t.id.serial == flag.task)
                    .map(|(_, t)| t)
            };
            let header = task.and_then(|t| t.header.as_ref()).map(|h| h.as_ptr());
            // SAFETY: the header is live while its record is in the table
            // (the borrow holds it there), and no task runs while the
            // scheduler does this.
            let cancelled =
                header.is_some_and(|h| unsafe { coroutine::cancelled_in_foreign_call(h) });
            (task.and_then(|t| t.name.clone()), cancelled)
        };
        super::slow_task::warn(
            flag.task,
            name.as_deref(),
            flag.held.max(limit),
            limit,
            cancelled,
        );
    }

    /// The name of a live task.
    fn task_name(&self, id: TaskId) -> Option<std::rc::Rc<str>> {
        let mut core = self.core.borrow_mut();
        core.tasks.get_mut(id).and_then(|t| t.name.clone())
    }

    /// Runs the loop until `done()` says so.
    pub(crate) fn run_until(&self, done: impl Fn() -> bool) {
        let mut ready = std::mem::take(&mut *self.ready_buf.borrow_mut());
        let mut batch = std::mem::take(&mut *self.batch_buf.borrow_mut());
        let mut resumes_without_poll = 0usize;
        loop {
            // 1. Run every task that is ready now, once. Tasks they wake or
            //    spawn wait for the next turn, so the poll below is never
            //    starved by tasks that keep yielding.
            std::mem::swap(&mut batch, &mut self.core.borrow_mut().tasks.run_queue);
            // With a handful of tasks, their memory stays in the cache.
            let prefetch = batch.len() >= PREFETCH_FROM_TASKS;
            let turn = Turn {
                traced: trace::on(),
                observed: super::tracing_events::active(),
                prefetch,
            };
            let mut next = 0;
            // The place in this turn of the resume timed for the hold
            // histogram, at random, when one is due (see `sample_due`):
            // most turns have none, and take the loop below without looking.
            let len = batch.len();
            let timed_at = if self.sample_due.get() && len > 0 {
                Some(self.draw() as usize % len)
            } else {
                None
            };
            let finished = loop {
                let turn_run = panic::catch_unwind(panic::AssertUnwindSafe(|| {
                    let Some(at) = timed_at else {
                        // No resume of this turn is timed.
                        while next < len {
                            let id = batch[next];
                            next += 1;
                            if prefetch {
                                self.prefetch_ahead(&batch, next);
                            }
                            self.run_one_in::<false>(id, &turn, 0);
                            if done() {
                                return true;
                            }
                        }
                        return false;
                    };
                    while next < len {
                        let id = batch[next];
                        next += 1;
                        if prefetch {
                            self.prefetch_ahead(&batch, next);
                        }
                        if at == next - 1 {
                            self.sample_due.set(false);
                            let weight = self.since_sample.replace(0).max(1);
                            self.sample_gap.set(super::port::gap_from(self.draw()));
                            self.run_one_in::<true>(id, &turn, weight);
                        } else {
                            self.run_one_in::<false>(id, &turn, 0);
                        }
                        if done() {
                            return true;
                        }
                    }
                    false
                }));
                match turn_run {
                    Ok(finished) => break finished,
                    Err(payload) => self.resume_panicked(payload),
                }
            };
            if finished {
                // Leave the rest of the turn at the head of the queue for a
                // later run of the loop.
                let mut core = self.core.borrow_mut();
                let queue = &mut core.tasks.run_queue;
                queue.splice(0..0, batch.drain(next..));
                batch.clear();
                drop(core);
                *self.ready_buf.borrow_mut() = ready;
                *self.batch_buf.borrow_mut() = batch;
                return;
            }
            resumes_without_poll += batch.len();
            batch.clear();
            // 2. Sleep in the kernel until an event or the next deadline.
            let mut core = self.core.borrow_mut();
            if !core.tasks.run_queue.is_empty() {
                // Tasks are ready: a poll could not sleep anyway, so only
                // look for events every few hundred resumes; a syscall per
                // turn of one or two tasks would cost more than the turn
                // itself. Timers still fire, and the clock is only read
                // when there are timers to fire. A task
                // that deferred, or busy turns that have gone on too long,
                // want the poll now.
                if resumes_without_poll < POLL_EVERY_RESUMES
                    && core.tasks.deferred.is_empty()
                    && (coroutine::spent() < CLOCK_EVERY_SPENT || !self.busy_too_long())
                {
                    if core.has_timers() {
                        let now = timers::now();
                        core.tasks.clock = self.clock_of(now);
                        core.fire_timers(now);
                        self.release_and_wake(core);
                    }
                    continue;
                }
            }
            // The paused clock's reading, if the scheduler runs on one: read
            // once per poll, for the time and for the two steps below.
            let paused = timers::paused_at();
            let now = paused.unwrap_or_else(Instant::now);
            let mut deadline = core.poll_deadline(now);
            // Under a paused clock, the instant to jump to when only time
            // can wake a task: the next deadline, once a look without
            // waiting finds no event either.
            let mut jump_to = None;
            if let (Some(_), Some(d)) = (paused, deadline) {
                if d > now {
                    if core.time_alone_wakes() {
                        jump_to = Some(d);
                        deadline = Some(now);
                    } else {
                        // Held still by I/O or another thread: wait for
                        // real, a slice at a time, since the last holder
                        // may let go without waking the loop.
                        deadline = Some(d.min(now + PAUSED_RECHECK));
                    }
                }
            }
            if deadline != Some(now) && crate::stack::trim() {
                // About to sleep: a good moment to hand idle stack memory
                // back to the kernel, a batch at a time so that no task due
                // meanwhile waits for all of it. With more left, the sleep
                // is cut short to come back for the next batch (an event
                // or a timer is still served first).
                let soon = now + TRIM_AGAIN_AFTER;
                deadline = Some(deadline.map_or(soon, |d| d.min(soon)));
            }
            coroutine::take_spent();
            self.busy_since.set(None);
            // The counters other threads read, brought up to date once per
            // poll rather than per resume.
            let metrics = &self.port.metrics;
            metrics.resumes.add(resumes_without_poll as u64);
            let since = self.since_sample.get() + resumes_without_poll as u64;
            self.since_sample.set(since);
            if since >= u64::from(self.sample_gap.get()) {
                self.sample_due.set(true);
            }
            resumes_without_poll = 0;
            core.publish_counts(metrics);
            if deadline.is_none() && core.reactor.is_idle() {
                // No timer, no socket, no ready task: nothing can ever wake
                // the tasks that are left. Return; the caller reports it.
                *self.ready_buf.borrow_mut() = ready;
                *self.batch_buf.borrow_mut() = batch;
                return;
            }
            ready.clear();
            let wait = match core.reactor.plan_wait(deadline, now) {
                Ok(wait) => wait,
                Err(e) => panic!("yieldloop: arming the precise timer failed: {e}"),
            };
            let traced = trace::on();
            if traced {
                trace::poll_start(
                    wait.step(),
                    wait.timeout(),
                    wait.kernel_millis(),
                    wait.timer(),
                    deadline.filter(|_| wait != Wait::Now).map(|d| d - now),
                );
            }
            // The real time the poll may sleep from: for the paused clock,
            // and for the time parked.
            let sleeps = wait != Wait::Now;
            let waited_from = if paused.is_some() {
                Some(Instant::now())
            } else {
                sleeps.then_some(now)
            };
            let polled = match core.reactor.poll(wait, &mut ready) {
                Ok(polled) => polled,
                Err(e) => panic!("yieldloop: polling for I/O events failed: {e}"),
            };
            metrics.polls.add(1);
            if ready.is_empty() && !polled.timer_fired {
                metrics.empty_polls.add(1);
            }
            if let (true, Some(from)) = (sleeps, waited_from) {
                metrics.parked_ns.add(from.elapsed().as_nanos() as u64);
            }
            metrics
                .timers
                .set((core.timers.pending() + core.waker_timers.armed()) as u64);
            metrics.io_sources.set(core.reactor.source_count() as u64);
            if let (Some(_), Some(from)) = (paused, waited_from) {
                // A paused clock stands still while tasks run; it jumps
                // when only time can wake one, and otherwise (a socket or
                // another thread might) moves on as far as the poll
                // really waited.
                let moved = match jump_to {
                    Some(d) if ready.is_empty() => d,
                    _ => now + from.elapsed(),
                };
                timers::set_paused_at(Some(moved));
            }
            if traced {
                trace::poll_end(
                    now,
                    ready.len(),
                    polled.timer_fired,
                    polled.interrupted,
                    wait.timeout().is_some_and(|t| !t.is_zero()),
                );
            }
            // The clock after the poll: what the wake-ups below are
            // stamped with (not the reading from before the poll, which
            // may have slept), and what the timers are due by.
            let now = timers::now();
            core.tasks.clock = self.clock_of(now);
            // 3. Wake the tasks whose sockets are ready or whom other
            //    threads woke …
            let (reactor, mut waking) = core.split();
            for r in ready.iter().copied() {
                reactor.dispatch(r, &mut waking);
            }
            // 4. … and those whose deadlines are due; then the tasks
            //    that deferred to them.
            core.fire_timers(now);
            let tasks = &mut core.tasks;
            if !tasks.deferred.is_empty() {
                tasks.run_queue.append(&mut tasks.deferred);
            }
            // 5. Wake the futures whose sources are ready or whose timers
            //    are due, once the state is let go of: a wake may unpark a
            //    task.
            self.release_and_wake(core);
            // 6. Answer the dump requests other threads (or tasks) made.
            if self.port.has_requests() {
                self.answer_requests();
            }
        }
    }

    /// Called after every [`CLOCK_EVERY_SPENT`] budget units spent between
    /// two polls: true once the busy turns have gone on for
    /// [`POLL_AT_LEAST_EVERY`] since the first such call after the last
    /// poll, and a poll is due. Out of line: the turn's loop keeps less
    /// live across it.
    #[cold]
    #[inline(never)]
    fn busy_too_long(&self) -> bool {
        coroutine::take_spent();
        // The real clock: this is about the thread's time, not a paused
        // clock's.
        let now = Instant::now();
        match self.busy_since.get() {
            Some(since) => now.saturating_duration_since(since) >= POLL_AT_LEAST_EVERY,
            None => {
                self.busy_since.set(Some(now));
                false
            }
        }
    }

    /// `now` on the task table's clock: milliseconds since the scheduler
    /// started, wrapping.
    #[inline]
    pub(super) fn clock_of(&self, now: Instant) -> u32 {
        now.saturating_duration_since(self.epoch).as_millis() as u32
    }

    /// A random number, for the hold histogram's sampling.
    #[cold]
    fn draw(&self) -> u64 {
        let mut seed = self.sample_seed.get();
        let x = super::port::xorshift(&mut seed);
        self.sample_seed.set(seed);
        x
    }
}
