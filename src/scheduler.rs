//! The scheduler: one per thread, it owns every task on that thread and runs
//! the loop.
//!
//! ```text
//!   ┌─▶ run every task that is ready now, once, in FIFO order
//!   │        each runs until it yields an Op; the Op files it under a
//!   │        timer, a socket, another task, or back in the run queue
//!   │   poll the kernel: don't wait if tasks are ready, else until the
//!   │        next deadline, else until an event (0% CPU while idle)
//!   │   wake the tasks whose sockets became ready
//!   └── wake the tasks whose deadlines are due (deadline <= now)
//! ```
//!
//! The scheduler state sits in a `RefCell` reached through the thread-local
//! in [`context`](crate::context). A running task stays in the task table,
//! marked `running` (a cancellation then only flags it), and no borrow of
//! the state is held across a resume, so a task can spawn, wake and cancel
//! other tasks freely.

use std::cell::{Cell, RefCell};
use std::io;
use std::os::fd::RawFd;
use std::panic;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use corosensei::CoroutineResult;
use slab::Slab;

use crate::context::{self, BodyBox};
use crate::op::{IoId, Op, Resume};
use crate::park::RemoteQueue;
use crate::reactor::{Dir, Reactor, Readiness, READ_CLOSED, WAKER_KEY};
use crate::stack::PooledStack;
use crate::task::{self, JoinHandle, Task, TaskId, Waiter};
use crate::timer::{Fire, Timers};
use crate::trace;

/// Gives every scheduler a process-wide unique id, so a socket registered
/// with one never touches another's tables.
static NEXT_SCHEDULER_ID: AtomicU64 = AtomicU64::new(1);

/// While tasks stay ready, the loop polls for I/O events only every this
/// many turns (a turn runs every ready task once) …
const POLL_EVERY_TURNS: u32 = 32;
/// … and this many resumes, so that turns of one or two tasks do not pay
/// a system call every few dozen hand-overs. Both bound how long a socket
/// waits behind busy tasks: a few hundred short resumes.
const POLL_EVERY_RESUMES: usize = 256;

/// Turns of at least this many tasks resume each with the memory of a task
/// further on its way into the cache (see [`context::prefetch_task`]) …
const PREFETCH_FROM_TASKS: usize = 8;
/// … this many places further in the turn.
const PREFETCH_AHEAD: usize = 2;

/// The addresses a resume of one task touches first, noted at its last
/// pause so that they can be prefetched without reading the task's record
/// or body (which are what is cold). Kept per slot in a small array of
/// their own: a slot whose task ended keeps stale addresses, harmless to a
/// prefetch.
#[derive(Debug, Default, Clone, Copy)]
struct PrefetchHint {
    /// The task's body.
    body: usize,
    /// Where its stack pointer was at its last pause, 0 before the first.
    paused_sp: usize,
}

/// Settings read once per turn of the loop, not once per resume.
#[derive(Debug)]
struct Turn {
    /// Is the trace on?
    traced: bool,
}

/// One thread's scheduler.
#[derive(Debug)]
pub(crate) struct Scheduler {
    /// Unique in the process.
    pub(crate) id: u64,
    core: RefCell<Core>,
    /// Readiness collected by the last poll; kept to reuse its allocation.
    ready_buf: RefCell<Vec<Readiness>>,
    /// The turn being run; kept to reuse its allocation.
    batch_buf: RefCell<Vec<(usize, u64)>>,
    /// The slot of the task being resumed while a resume runs, else
    /// `usize::MAX`.
    in_resume: Cell<usize>,
    /// What this scheduler shows the slow-task monitor.
    watch: std::sync::Arc<crate::slow::Watch>,
}

/// The scheduler's mutable state.
#[derive(Debug)]
struct Core {
    tasks: TaskTable,
    timers: Timers,
    reactor: Reactor,
}

/// The live tasks and the run queue: everything a wake-up touches.
#[derive(Debug, Default)]
struct TaskTable {
    slab: Slab<Task>,
    /// Tasks ready to run, by slot and serial (a slot may be reused while an
    /// entry for its old task is still queued; the serial tells), in the
    /// order they became ready. The loop takes the whole queue at the start
    /// of a turn and runs it, so a plain `Vec` is all the FIFO needs.
    /// # Invariant
    /// A live task is queued at most once: it is queued only on the move
    /// from `wait != 0` to `wait == 0`, or right after it yields `Op::Yield`.
    run_queue: Vec<(usize, u64)>,
    /// Per slot, what to prefetch before resuming its task.
    hints: Vec<PrefetchHint>,
    next_serial: u64,
    next_token: u64,
}

impl TaskTable {
    fn is_waiting(&self, w: Waiter) -> bool {
        self.slab.get(w.key).is_some_and(|t| t.wait == w.token)
    }

    /// Wakes `w` with `value` if it is still in that wait. Returns whether
    /// it did, and whether the wait had a timer armed (now stale).
    fn wake(&mut self, w: Waiter, value: Resume, cause: &str) -> (bool, bool) {
        match self.slab.get_mut(w.key) {
            Some(t) if t.wait == w.token => {
                if trace::on() {
                    trace::emit(format_args!(
                        "wake   {} by {cause}",
                        trace::Who(t.id.serial, t.name.as_deref())
                    ));
                }
                t.wait = 0;
                t.resume = Some(value);
                self.run_queue.push((w.key, t.id.serial));
                (true, std::mem::take(&mut t.timer_armed))
            }
            _ => (false, false),
        }
    }
}

impl Core {
    /// Wakes a waiter by something other than its timer.
    fn wake(&mut self, w: Waiter, value: Resume, cause: &str) {
        let (_, had_timer) = self.tasks.wake(w, value, cause);
        if had_timer {
            let tasks = &self.tasks;
            self.timers.mark_stale(|x| tasks.is_waiting(x));
        }
    }

    /// Files a task that just yielded `op`, an op that waits for something
    /// (`run_one` puts an `Op::Yield` straight back in the queue itself).
    fn file(&mut self, id: TaskId, op: Op, self_id: u64) {
        let key = id.key;
        self.tasks.next_token += 1;
        let token = self.tasks.next_token;
        let task = &mut self.tasks.slab[key];
        let waiter = Waiter { key, token };
        task.wait = token;
        let (dir, io, deadline) = match op {
            Op::Yield => unreachable!("run_one queues a yield without filing it"),
            Op::Wait(deadline) => {
                task.timer_armed = true;
                self.timers.insert(deadline, waiter, Fire::Ready);
                return;
            }
            Op::Join(target) => {
                match self.tasks.slab.get_mut(target.key) {
                    Some(t) if t.id == target && target.key != key => t.joiners.push(waiter),
                    // Ended already (or joining itself, which could never
                    // end): answer at once.
                    _ => self.wake(waiter, Resume::Ready, "now"),
                }
                return;
            }
            Op::Park(t, deadline) => {
                if t.waiter.key != key || t.sched != self_id {
                    self.wake(
                        waiter,
                        Resume::Err(io::Error::new(
                            io::ErrorKind::InvalidInput,
                            "yieldloop: Op::Park with a token of another task",
                        )),
                        "now",
                    );
                    return;
                }
                // The token was handed out before the pause; it is the wait.
                task.wait = t.waiter.token;
                if let Some(deadline) = deadline {
                    task.timer_armed = true;
                    self.timers.insert(deadline, t.waiter, Fire::TimedOut);
                }
                return;
            }
            Op::ReadReady(io, d) => (Dir::Read, io, d),
            Op::WriteReady(io, d) => (Dir::Write, io, d),
            Op::Accept(io, d) => (Dir::Accept, io, d),
        };
        if let Some(src) = self.reactor.get_mut(io) {
            // Waits that ended another way (a timeout, a cancellation) leave
            // their entries behind; drop them before the list grows.
            if src.readers.len() + src.writers.len() > 4 {
                let tasks = &self.tasks;
                src.readers.retain(|(w, _)| tasks.is_waiting(*w));
                src.writers.retain(|w| tasks.is_waiting(*w));
            }
        }
        match self.reactor.add_waiter(io, dir, waiter) {
            Ok(()) => {
                if let Some(deadline) = deadline {
                    self.tasks.slab[key].timer_armed = true;
                    self.timers.insert(deadline, waiter, Fire::TimedOut);
                }
            }
            Err(e) => self.wake(waiter, Resume::Err(e), "now"),
        }
    }

    /// Wakes the tasks other threads asked to wake.
    fn drain_remote(&mut self, scratch: &mut Vec<Waiter>) {
        if let Some(q) = self.reactor.remote().cloned() {
            q.drain(scratch);
            for w in scratch.drain(..) {
                self.wake(w, Resume::Ready, "remote");
            }
        }
    }

    /// Wakes the tasks waiting on one source that became ready.
    fn dispatch(&mut self, r: Readiness) {
        let Some(src) = self.reactor.sources.get_mut(r.key) else {
            return;
        };
        let fd = src.fd;
        if r.read {
            let closed = if r.read_closed { READ_CLOSED } else { 0 };
            let n = src.read_events.get();
            src.read_events
                .set((n.wrapping_add(1) & !READ_CLOSED) | (n & READ_CLOSED) | closed);
        }
        // The lists are taken out while their tasks are woken, then put
        // back emptied, so their allocations serve the next waits.
        let mut readers = if r.read {
            std::mem::take(&mut src.readers)
        } else {
            Vec::new()
        };
        let mut writers = if r.write {
            std::mem::take(&mut src.writers)
        } else {
            Vec::new()
        };
        let mut still_waiting = Vec::new();
        for (w, dir) in readers.drain(..) {
            if dir == Dir::Accept {
                if !self.tasks.is_waiting(w) {
                    continue;
                }
                match accept_on(fd) {
                    Ok((stream, addr)) => self.wake(w, Resume::Accepted(stream, addr), "socket"),
                    // Another acceptor (or a spurious event) took it.
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => still_waiting.push((w, dir)),
                    Err(e) => self.wake(w, Resume::Err(e), "socket"),
                }
            } else {
                self.wake(w, Resume::Ready, "socket");
            }
        }
        for w in writers.drain(..) {
            self.wake(w, Resume::Ready, "socket");
        }
        if let Some(src) = self.reactor.sources.get_mut(r.key) {
            readers.extend(still_waiting);
            if src.readers.is_empty() {
                src.readers = readers;
            } else {
                src.readers.extend(readers);
            }
            if src.writers.is_empty() {
                src.writers = writers;
            }
        }
    }

    /// Wakes every task whose deadline is due at `now`.
    fn fire_timers(&mut self, now: Instant) {
        while let Some(entry) = self.timers.pop_due(now) {
            let value = match entry.fire {
                Fire::Ready => Resume::Ready,
                Fire::TimedOut => Resume::TimedOut,
            };
            let (woken, _) = self.tasks.wake(entry.waiter, value, "timer");
            if !woken {
                self.timers.popped_stale();
            }
        }
    }

    /// Until when the next poll may block: `now` if tasks are ready, else
    /// the next live deadline, else `None` (until an event).
    fn poll_deadline(&mut self, now: Instant) -> Option<Instant> {
        if !self.tasks.run_queue.is_empty() {
            return Some(now);
        }
        let tasks = &self.tasks;
        self.timers.next_deadline(|w| tasks.is_waiting(w))
    }

    /// Removes a task from the table, wakes its joiners and hands back its
    /// body, to be dropped by the caller *after* the borrow of the core
    /// ends: dropping a suspended coroutine unwinds it, and its destructors
    /// may reach the scheduler.
    fn remove(&mut self, key: usize) -> Option<BodyBox> {
        let task = self.tasks.slab.try_remove(key)?;
        if task.timer_armed && task.wait != 0 {
            let tasks = &self.tasks;
            self.timers.mark_stale(|x| tasks.is_waiting(x));
        }
        let mut task = task;
        for w in task.joiners.take() {
            self.wake(w, Resume::Ready, "task-end");
        }
        task.body.take()
    }
}

/// Accepts one connection on the listening socket `fd`.
fn accept_on(fd: RawFd) -> io::Result<(std::net::TcpStream, std::net::SocketAddr)> {
    crate::net::accept_raw(fd)
}

impl Scheduler {
    pub(crate) fn new() -> io::Result<Scheduler> {
        Ok(Scheduler {
            id: NEXT_SCHEDULER_ID.fetch_add(1, Ordering::Relaxed),
            core: RefCell::new(Core {
                tasks: TaskTable::default(),
                timers: Timers::default(),
                reactor: Reactor::new()?,
            }),
            ready_buf: RefCell::new(Vec::new()),
            batch_buf: RefCell::new(Vec::new()),
            in_resume: Cell::new(usize::MAX),
            watch: crate::slow::Watch::register(),
        })
    }

    /// Spawns a task; it is queued to run after the tasks already ready.
    pub(crate) fn spawn<F, T>(
        &self,
        name: Option<Rc<str>>,
        stack_size: usize,
        f: F,
    ) -> io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + 'static,
        T: 'static,
    {
        let mut stack = PooledStack::take(stack_size)?;
        let body_at = stack.reserve_top(BodyBox::SIZE);
        let mut guard = stack.guard_info();
        let mut core = self.core.borrow_mut();
        let tasks = &mut core.tasks;
        tasks.next_serial += 1;
        let entry = tasks.slab.vacant_entry();
        let id = TaskId {
            key: entry.key(),
            serial: tasks.next_serial,
        };
        guard.id = id.serial;
        if let Some(n) = &name {
            // The name lives in the task record as long as the task runs.
            guard.name_ptr = n.as_ptr() as usize;
            guard.name_len = n.len();
        }
        let (co, slot) = task::make_task(id, stack, f);
        if tasks.hints.len() <= id.key {
            tasks.hints.resize(id.key + 1, PrefetchHint::default());
        }
        tasks.hints[id.key] = PrefetchHint {
            body: body_at.as_ptr() as usize,
            paused_sp: 0,
        };
        entry.insert(Task {
            id,
            name,
            // SAFETY: `body_at` was reserved on the stack `co` runs on.
            body: Some(unsafe { BodyBox::new_in(body_at, co, id, guard) }),
            running: false,
            wait: 0,
            timer_armed: false,
            resume: None,
            joiners: Default::default(),
            cancel_requested: false,
        });
        tasks.run_queue.push((id.key, id.serial));
        if trace::on() {
            let name = tasks.slab[id.key].name.clone();
            let by = crate::task::current_id().map_or("run".to_string(), |p| format!("task {p}"));
            trace::emit(format_args!(
                "spawn  {} by {by}",
                trace::Who(id.serial, name.as_deref())
            ));
        }
        Ok(JoinHandle::new(id, slot))
    }

    /// A fresh wait token (see [`Waiter`]).
    pub(crate) fn next_token(&self) -> u64 {
        let mut core = self.core.borrow_mut();
        core.tasks.next_token += 1;
        core.tasks.next_token
    }

    /// Wakes `w` if it is still in that wait; see [`crate::ParkToken`].
    pub(crate) fn unpark(&self, w: Waiter) -> bool {
        let mut core = self.core.borrow_mut();
        if core.tasks.is_waiting(w) {
            core.wake(w, Resume::Ready, "unpark");
            true
        } else {
            false
        }
    }

    /// Makes readiness of `io` wake `w` (with [`Resume::Ready`]), for
    /// waits on several things at once.
    pub(crate) fn watch_io(&self, w: Waiter, io: IoId, write: bool) -> io::Result<()> {
        let dir = if write { Dir::Write } else { Dir::Read };
        self.core.borrow_mut().reactor.add_waiter(io, dir, w)
    }

    /// Makes the end of `task` wake `w`; returns false if it has ended.
    pub(crate) fn watch_task(&self, w: Waiter, task: TaskId) -> bool {
        let mut core = self.core.borrow_mut();
        match core.tasks.slab.get_mut(task.key) {
            Some(t) if t.id == task => {
                t.joiners.push(w);
                true
            }
            _ => false,
        }
    }

    /// True if `w` is still waiting.
    pub(crate) fn is_waiting(&self, w: Waiter) -> bool {
        self.core.borrow().tasks.is_waiting(w)
    }

    /// The queue other threads wake this scheduler's tasks through.
    ///
    /// # Panics
    ///
    /// If the kernel refuses the `eventfd` behind it (out of descriptors).
    pub(crate) fn remote_queue(&self) -> std::sync::Arc<RemoteQueue> {
        match self.core.borrow_mut().reactor.remote_queue() {
            Ok(q) => q,
            Err(e) => panic!("yieldloop: cannot create a cross-thread waker: {e}"),
        }
    }

    /// Cancels a task: see [`JoinHandle::cancel`].
    pub(crate) fn cancel(&self, id: TaskId) {
        let co = {
            let mut core = self.core.borrow_mut();
            match core.tasks.slab.get_mut(id.key) {
                Some(t) if t.id == id => {
                    if t.running {
                        // It is the running task: tear it down at its next pause.
                        t.cancel_requested = true;
                        return;
                    }
                }
                _ => return,
            }
            core.remove(id.key)
        };
        if let Some(body) = co {
            if trace::on() {
                trace::emit(format_args!("cancel task {}", id.serial));
            }
            context::drop_task(body);
        }
    }

    /// Registers an I/O source with this scheduler's reactor.
    pub(crate) fn register(
        &self,
        source: &mut impl mio::event::Source,
        fd: RawFd,
    ) -> io::Result<(IoId, Rc<Cell<u64>>)> {
        self.core.borrow_mut().reactor.register(source, fd)
    }

    /// Deregisters an I/O source; tasks still waiting on it get an error.
    pub(crate) fn deregister(&self, id: IoId, source: &mut impl mio::event::Source) {
        let mut core = self.core.borrow_mut();
        for w in core.reactor.deregister(id, source) {
            core.wake(
                w,
                Resume::Err(io::Error::new(
                    io::ErrorKind::NotConnected,
                    "yieldloop: the socket was closed while a task waited on it",
                )),
                "closed",
            );
        }
    }

    /// Starts loading what resuming the task in slot `key` touches (see
    /// [`context::prefetch_task`]), from the addresses noted for it.
    fn prefetch(&self, key: usize) {
        let core = self.core.borrow();
        if let Some(h) = core.tasks.hints.get(key) {
            context::prefetch_task(h.body, h.paused_sp);
        }
    }

    /// Runs one queued task until it pauses or ends, and files it.
    fn run_one(&self, key: usize, serial: u64, turn: &mut Turn) {
        let (body, value, id) = {
            let mut core = self.core.borrow_mut();
            let Some(t) = core.tasks.slab.get_mut(key) else {
                return;
            };
            if t.id.serial != serial || t.wait != 0 || t.running {
                return;
            }
            let Some(body) = &t.body else {
                return;
            };
            let body = body.as_ptr();
            t.running = true;
            (body, t.resume.take().unwrap_or(Resume::Ready), t.id)
        };
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
        // A panic out of the resume is caught for the whole turn in
        // `run_until` (one landing pad per turn, not per resume), which
        // reads this to know whose it was.
        self.in_resume.set(key);
        // SAFETY: the body belongs to the task record, which stays in the
        // table while `running` is set: a cancellation only marks a running
        // task, and nothing else removes one before this function does,
        // below.
        let result = unsafe { context::resume_task(body, value) };
        self.in_resume.set(usize::MAX);
        if traced {
            let name = self.task_name(id);
            let who = trace::Who(id.serial, name.as_deref());
            match &result {
                CoroutineResult::Yield(op) => trace::emit(format_args!(
                    "yield  {who} -> {}",
                    trace::ShowOp(op, Instant::now())
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
                // SAFETY: as for the resume above: the body lives while the
                // task's record is in the table, and its task just paused.
                let paused_sp = unsafe { context::paused_sp(body) };
                if let Some(h) = core.tasks.hints.get_mut(key) {
                    h.paused_sp = paused_sp;
                }
                let task = &mut core.tasks.slab[key];
                task.running = false;
                if task.cancel_requested {
                    let body = core.remove(key);
                    drop(core);
                    if let Some(body) = body {
                        context::drop_task(body);
                    }
                } else if let Op::Yield = op {
                    // The hottest op: straight back to the queue, no wait
                    // token. (`resume` is `None`, which reads as `Ready`.)
                    core.tasks.run_queue.push((key, id.serial));
                } else {
                    core.file(id, op, self.id);
                }
            }
            CoroutineResult::Return(()) => {
                let body = core.remove(key);
                drop(core);
                // The coroutine is done: dropping it only returns its stack.
                drop(body);
            }
        }
    }

    /// Handles a panic that unwound out of a turn: if it came out of a
    /// task's resume (the task's body catches its own panics, so this is a
    /// panic in the runtime itself while it ran the task), that task is
    /// gone and the others go on; any other panic goes on unwinding.
    #[cold]
    fn resume_panicked(&self, payload: Box<dyn std::any::Any + Send>) {
        let key = self.in_resume.replace(usize::MAX);
        let id = self.core.borrow().tasks.slab.get(key).map(|t| t.id);
        let Some(id) = id else {
            panic::resume_unwind(payload)
        };
        self.watch.end();
        let body = self.core.borrow_mut().remove(key);
        if let Some(body) = body {
            context::drop_task(body);
        }
        eprintln!(
            "yieldloop: internal error while running task {id}: {}",
            task::payload_text(&*payload).unwrap_or("<non-string panic>")
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
        let Some(limit) = crate::slow::threshold() else {
            return;
        };
        let name = if flag.resume == resume_no {
            self.task_name(id)
        } else {
            let core = self.core.borrow();
            core.tasks
                .slab
                .iter()
                .find(|(_, t)| t.id.serial == flag.task)
                .and_then(|(_, t)| t.name.clone())
        };
        crate::slow::warn(flag.task, name.as_deref(), flag.held.max(limit), limit);
    }

    /// The name of a live task.
    fn task_name(&self, id: TaskId) -> Option<Rc<str>> {
        let core = self.core.borrow();
        core.tasks
            .slab
            .get(id.key)
            .filter(|t| t.id == id)
            .and_then(|t| t.name.clone())
    }

    /// Runs the loop until `done()` says so.
    pub(crate) fn run_until(&self, done: impl Fn() -> bool) {
        let mut ready = std::mem::take(&mut *self.ready_buf.borrow_mut());
        let mut batch = std::mem::take(&mut *self.batch_buf.borrow_mut());
        let mut remote_scratch = Vec::new();
        let mut turns_without_poll = 0u32;
        let mut resumes_without_poll = 0usize;
        loop {
            // 1. Run every task that is ready now, once. Tasks they wake or
            //    spawn wait for the next turn, so the poll below is never
            //    starved by tasks that keep yielding.
            std::mem::swap(&mut batch, &mut self.core.borrow_mut().tasks.run_queue);
            let mut turn = Turn {
                traced: trace::on(),
            };
            let mut next = 0;
            // With a handful of tasks, their memory stays in the cache.
            let prefetch = batch.len() >= PREFETCH_FROM_TASKS;
            let finished = loop {
                let turn_run = panic::catch_unwind(panic::AssertUnwindSafe(|| {
                    while next < batch.len() {
                        let (key, serial) = batch[next];
                        next += 1;
                        if prefetch {
                            if let Some(&(ahead, _)) = batch.get(next + PREFETCH_AHEAD - 1) {
                                self.prefetch(ahead);
                            }
                        }
                        self.run_one(key, serial, &mut turn);
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
                // look for events every few turns; a syscall per turn would
                // cost more than the turn itself. Timers still fire, and the
                // clock is only read when there are timers to fire.
                turns_without_poll += 1;
                if turns_without_poll < POLL_EVERY_TURNS
                    || resumes_without_poll < POLL_EVERY_RESUMES
                {
                    if !core.timers.is_empty() {
                        core.fire_timers(Instant::now());
                    }
                    continue;
                }
            }
            let now = Instant::now();
            let deadline = core.poll_deadline(now);
            if deadline != Some(now) {
                // About to sleep: a good moment to hand idle stack memory
                // back to the kernel.
                crate::stack::trim();
            }
            turns_without_poll = 0;
            resumes_without_poll = 0;
            if deadline.is_none()
                && core.reactor.sources.is_empty()
                && !core.reactor.has_remote_handles()
            {
                // No timer, no socket, no ready task: nothing can ever wake
                // the tasks that are left. Return; the caller reports it.
                *self.ready_buf.borrow_mut() = ready;
                *self.batch_buf.borrow_mut() = batch;
                return;
            }
            ready.clear();
            let traced = trace::on();
            if traced {
                match deadline {
                    Some(d) if d <= now => trace::emit(format_args!("poll   no sleep")),
                    Some(d) => {
                        trace::emit(format_args!("poll   sleep up to {}", trace::secs(d - now)))
                    }
                    None => trace::emit(format_args!("poll   sleep until an event")),
                }
            }
            if let Err(e) = core.reactor.poll(deadline, now, &mut ready) {
                panic!("yieldloop: polling for I/O events failed: {e}");
            }
            if traced {
                trace::emit(format_args!(
                    "polled slept {}, {} event(s)",
                    trace::secs(now.elapsed()),
                    ready.len()
                ));
            }
            // 3. Wake the tasks whose sockets are ready or whom other
            //    threads woke …
            for r in ready.iter().copied() {
                if r.key == WAKER_KEY {
                    core.drain_remote(&mut remote_scratch);
                } else {
                    core.dispatch(r);
                }
            }
            // 4. … and those whose deadlines are due.
            core.fire_timers(Instant::now());
        }
    }

    /// Tears down every task still alive, unwinding their stacks, until none
    /// is left (destructors may spawn more).
    pub(crate) fn shutdown(&self) {
        loop {
            let doomed: Vec<(TaskId, BodyBox)> = {
                let mut core = self.core.borrow_mut();
                let keys: Vec<usize> = core.tasks.slab.iter().map(|(k, _)| k).collect();
                keys.into_iter()
                    .filter_map(|k| {
                        let id = core.tasks.slab[k].id;
                        core.remove(k).map(|co| (id, co))
                    })
                    .collect()
            };
            if doomed.is_empty() && self.core.borrow().tasks.slab.is_empty() {
                break;
            }
            for (id, body) in doomed {
                if trace::on() {
                    trace::emit(format_args!("cancel task {} (run is ending)", id.serial));
                }
                context::drop_task(body);
            }
        }
        self.core.borrow_mut().tasks.run_queue.clear();
    }
}

/// Runs `f` as the main task of a new scheduler on this thread.
pub(crate) fn run_main<F, T>(f: F) -> T
where
    F: FnOnce() -> T + 'static,
    T: 'static,
{
    let sched = match Scheduler::new() {
        Ok(s) => Rc::new(s),
        Err(e) => panic!("yieldloop::run: cannot create the event loop: {e}"),
    };
    crate::overflow::install();
    let guard = context::install(sched.clone());
    let main = match sched.spawn(Some(Rc::from("main")), task::DEFAULT_STACK_SIZE, f) {
        Ok(h) => h,
        Err(e) => panic!("yieldloop::run: cannot start the main task: {e}"),
    };
    let finished = Cell::new(false);
    sched.run_until(|| {
        finished.set(main.is_finished());
        finished.get()
    });
    let completed = main.is_finished();
    sched.shutdown();
    trace::flush();
    drop(guard);
    if !completed {
        panic!(
            "yieldloop::run: the main task can never finish: it waits for something \
             no other task or event can provide (a deadlock)"
        );
    }
    match main.join() {
        Ok(v) => v,
        Err(e) if e.is_panic() => panic::resume_unwind(e.into_panic()),
        Err(e) => panic!("yieldloop::run: the main task was cancelled ({e})"),
    }
}
