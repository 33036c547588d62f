//! The scheduler: one per thread, it owns every task on that thread and runs
//! the loop.
//!
//! ```text
//!   ┌─▶ run every task that is ready now, once, in FIFO order
//!   │        each runs until it yields an Op; the Op files it under a
//!   │        timer, a socket, another task, or back in the run queue
//!   │   poll the kernel: don't wait if tasks are ready, else until the
//!   │        next deadline, else until an event (0% CPU while idle)
//!   │   wake the tasks (and futures' wakers) whose sockets became ready
//!   └── wake the tasks whose deadlines are due (deadline <= now)
//! ```
//!
//! One file per job. The tasks and the loop:
//!
//! - this file: the [`Scheduler`] and its lifecycle (spawn, cancel,
//!   shutdown, [`run_main`]) and the calls the layers above make on it;
//! - `coroutine`: a task's own memory (its coroutine and context at the
//!   top of its stack), the thread-local of the running task, and the
//!   panic hook that names it;
//! - `current`: the thread-local that makes this thread's scheduler
//!   reachable;
//! - `table`: the task table, each task's `TaskState`
//!   and the run queue;
//! - `timers`: the deadline heap, and the clock the runtime reads (real,
//!   or paused);
//! - `wait_for`: filing a paused task under what its `Op` waits for;
//! - `event_loop`: the loop itself: turns, resumes, prefetching, polling,
//!   panic attribution and the slow-task report.
//!
//! And what shows them at work:
//!
//! - `port`: each scheduler's counters (what
//!   [`diag::metrics`](crate::diag::metrics) reads) and the dump requests
//!   queued for it, shared with every thread, and a dump's types;
//! - `dump`: the scheduler's answers to [`diag::dump`](crate::diag::dump):
//!   its tasks, their states and backtraces;
//! - `tracing_events`: with feature `tracing`, the spans and events a
//!   `tracing` subscriber is told;
//! - `trace`: the scheduler trace, one line per decision;
//! - `slow_task`: the slow-task watch, whose monitor thread flags a task
//!   that holds the thread too long.
//!
//! The scheduler state sits in a `RefCell` reached through the thread-local
//! in `current`. A running task stays in the task table, marked
//! [`Running`](table::TaskState::Running) (a cancellation then only flags
//! it), and no borrow of the state is held across a resume, so a task can
//! spawn, wake and cancel other tasks freely.

use std::cell::{Cell, RefCell, RefMut};
use std::io;
use std::os::fd::RawFd;
use std::rc::Rc;
use std::sync::Arc;
use std::task::Waker;
use std::time::Instant;

use crate::protocol::{IoId, Resume, SchedulerId, TaskId, WaitToken};
use crate::reactor::{
    IoWait, PollReady, Reactor, ReadEvents, Readiness, RemoteQueue, WaitingTasks,
};
use crate::stack::{PooledStack, MAIN_STACK_SIZE};

pub(crate) mod coroutine;
mod current;
mod dump;
mod event_loop;
pub(crate) mod port;
pub(crate) mod slow_task;
mod table;
pub(crate) mod timers;
pub(crate) mod trace;
pub(crate) mod tracing_events;
mod wait_for;

use coroutine::OwnedHeader;
pub(crate) use current::{has_scheduler, install, try_with_scheduler, with_scheduler};
use table::{PrefetchHint, Task, TaskState, TaskTable, Waking};
use timers::{Timers, WakerTimers};

/// One thread's scheduler.
#[derive(Debug)]
pub(crate) struct Scheduler {
    /// Unique in the process.
    pub(crate) id: SchedulerId,
    core: RefCell<Core>,
    /// Readiness collected by the last poll; kept to reuse its allocation.
    ready_buf: RefCell<Vec<Readiness>>,
    /// The turn being run; kept to reuse its allocation.
    batch_buf: RefCell<Vec<TaskId>>,
    /// What this scheduler shows the slow-task monitor.
    watch: Arc<slow_task::Watch>,
    /// Its counters and dump requests, shared with any thread.
    port: Arc<port::Port>,
    /// The hold histogram's sampling, brought up to date at each poll:
    /// the resumes since the last timed one, how many to let pass before
    /// the next (drawn at random), whether one is due (then a resume of
    /// the next turn, at random, is timed and counts for them all), and
    /// the state of the generator.
    since_sample: Cell<u64>,
    sample_gap: Cell<u32>,
    sample_due: Cell<bool>,
    sample_seed: Cell<u64>,
    /// The instant the task table's clock counts from.
    epoch: Instant,
    /// The budget of the tasks spawned here without one of their own (see
    /// [`Builder::budget`](crate::Builder::budget)).
    default_budget: Cell<u32>,
    /// When the loop first looked at the clock for busy turns since its
    /// last poll (see `event_loop`'s `busy_too_long`).
    busy_since: Cell<Option<Instant>>,
}

/// The scheduler's mutable state.
#[derive(Debug)]
struct Core {
    tasks: TaskTable,
    timers: Timers,
    /// The timers of futures ([`Sleep`](crate::Sleep)), which wake wakers.
    waker_timers: WakerTimers,
    reactor: Reactor,
}

impl Core {
    /// The task table and timer heap, as the [`WaitingTasks`] that end waits.
    fn waking(&mut self) -> Waking<'_> {
        self.split().1
    }

    /// The reactor, and beside it the [`WaitingTasks`] it ends waits through.
    fn split(&mut self) -> (&mut Reactor, Waking<'_>) {
        let waking = Waking {
            tasks: &mut self.tasks,
            timers: &mut self.timers,
        };
        (&mut self.reactor, waking)
    }

    /// Removes a task from the table, wakes its joiners and hands back its
    /// header, to be dropped by the caller *after* the borrow of the core
    /// ends: dropping a suspended coroutine unwinds it, and its destructors
    /// may reach the scheduler.
    fn remove(&mut self, key: usize) -> Option<OwnedHeader> {
        let mut task = self.tasks.slab.try_remove(key)?;
        self.tasks.spans.close(key);
        if let TaskState::Waiting { timer: true, .. } = task.state {
            let tasks = &self.tasks;
            self.timers.mark_stale(|x| tasks.is_waiting(x));
        }
        let mut header = task.header.take()?;
        for w in header.joiners().take() {
            self.waking().wake(w, Resume::Ready, "task-end");
        }
        Some(header)
    }
}

impl Scheduler {
    pub(crate) fn new() -> io::Result<Scheduler> {
        // Panic messages inside tasks name the task from now on.
        coroutine::install_panic_hook();
        let id = SchedulerId::next();
        let mut reactor = Reactor::new()?;
        let watch = slow_task::Watch::register();
        let running = watch.clone();
        let port = port::Port::register(id.number(), Box::new(move || running.running_task()));
        // A dump request interrupts the poll through the cross-thread
        // queue, held weakly: the request is not a way to wake a task,
        // which is what the queue's holders count as.
        let queue = Arc::downgrade(&reactor.remote_queue()?);
        port.set_interrupt(Box::new(move || {
            if let Some(q) = queue.upgrade() {
                q.interrupt();
            }
        }));
        let seed = 0x9E37_79B9_7F4A_7C15 ^ id.number().wrapping_mul(0x2545_F491_4F6C_DD1D);
        let mut seed_state = seed | 1;
        let gap = port::gap_from(port::xorshift(&mut seed_state));
        Ok(Scheduler {
            id,
            core: RefCell::new(Core {
                tasks: TaskTable::default(),
                timers: Timers::default(),
                waker_timers: WakerTimers::default(),
                reactor,
            }),
            ready_buf: RefCell::new(Vec::new()),
            batch_buf: RefCell::new(Vec::new()),
            watch,
            port,
            since_sample: Cell::new(0),
            sample_gap: Cell::new(gap),
            sample_due: Cell::new(false),
            sample_seed: Cell::new(seed_state),
            epoch: Instant::now(),
            default_budget: Cell::new(coroutine::DEFAULT_BUDGET),
            busy_since: Cell::new(None),
        })
    }

    /// Spawns a task; it is queued to run after the tasks already ready.
    /// `make_body` is given the new task's id and returns what the task
    /// runs, which must leave its outcome wherever its handle looks for it
    /// (the body is dropped unrun if the task is cancelled before its first
    /// turn).
    pub(crate) fn spawn<B>(
        &self,
        name: Option<Rc<str>>,
        stack_size: usize,
        budget: Option<u32>,
        make_body: impl FnOnce(TaskId) -> B,
    ) -> io::Result<TaskId>
    where
        B: FnOnce() + 'static,
    {
        let mut stack = PooledStack::take(stack_size)?;
        let header_at = stack.reserve_top(OwnedHeader::SIZE);
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
            // The header keeps a clone of the name for as long as the
            // coroutine exists, teardown included.
            guard.name_ptr = n.as_ptr() as usize;
            guard.name_len = n.len();
        }
        let co = coroutine::new_coroutine(stack, make_body(id));
        if tasks.hints.len() <= id.key {
            tasks.hints.resize(id.key + 1, PrefetchHint::default());
        }
        tasks.hints[id.key] = PrefetchHint {
            header: header_at.as_ptr() as usize,
            paused_sp: 0,
        };
        let budget = budget.unwrap_or(self.default_budget.get());
        // SAFETY: `header_at` was reserved on the stack `co` runs on.
        let header = unsafe { OwnedHeader::new_in(header_at, co, id, guard, name.clone(), budget) };
        tasks.spans.open(id.key, id.serial, name.as_deref());
        entry.insert(Task {
            id,
            name,
            header: Some(header),
            state: TaskState::Queued { since: tasks.clock },
            resume: None,
        });
        tasks.run_queue.push(id);
        if trace::on() {
            let name = tasks.slab[id.key].name.clone();
            let by = coroutine::current_task()
                .filter(|_| coroutine::in_task())
                .map_or("run".to_string(), |p| format!("task {p}"));
            trace::emit(format_args!(
                "spawn  {} by {by}",
                trace::Who(id.serial, name.as_deref())
            ));
        }
        Ok(id)
    }

    /// Sets the budget of the tasks spawned here from now on without one
    /// of their own (at least 1).
    pub(crate) fn set_default_budget(&self, budget: u32) {
        self.default_budget.set(budget.max(1));
    }

    /// Its counters now: exact, when the state is free (called from a
    /// task of this scheduler), else as of its last poll.
    pub(crate) fn metrics(&self) -> port::SchedulerMetrics {
        if let Ok(core) = self.core.try_borrow() {
            core.publish_counts(&self.port.metrics);
        }
        self.port.snapshot()
    }

    /// A fresh wait token for the task in slot `key` (see [`WaitToken`]).
    pub(crate) fn wait_token(&self, key: usize) -> WaitToken {
        let token = self.core.borrow_mut().tasks.fresh_token();
        WaitToken { key, token }
    }

    /// Ends the wait `w` if its task is still in it; see
    /// [`ParkToken`](crate::raw::ParkToken).
    pub(crate) fn unpark(&self, w: WaitToken) -> bool {
        self.core
            .borrow_mut()
            .waking()
            .wake_if_waiting(w, Resume::Ready, "unpark")
    }

    /// Makes readiness of `io` end the wait `w` (with [`Resume::Ready`]),
    /// for waits on several things at once.
    pub(crate) fn watch_io(&self, w: WaitToken, io: IoId, write: bool) -> io::Result<()> {
        let what = if write {
            IoWait::Writable
        } else {
            IoWait::Readable
        };
        let core = &mut *self.core.borrow_mut();
        let tasks = &core.tasks;
        core.reactor
            .add_waiter(io, what, w, |x| tasks.is_waiting(x))
    }

    /// Makes the end of `task` end the wait `w`; returns false if the task
    /// has ended.
    pub(crate) fn watch_task(&self, w: WaitToken, task: TaskId) -> bool {
        match self.core.borrow_mut().tasks.get_mut(task) {
            Some(Task {
                header: Some(h), ..
            }) => {
                h.joiners().push(w);
                true
            }
            _ => false,
        }
    }

    /// True while the task `id` is in the table (it has not ended).
    pub(crate) fn is_alive(&self, id: TaskId) -> bool {
        self.core.borrow_mut().tasks.get_mut(id).is_some()
    }

    /// How busy this scheduler is: its live tasks plus those queued to
    /// run, the load [`Runtime::spawn`](crate::Runtime::spawn) compares.
    pub(crate) fn load(&self) -> usize {
        let core = self.core.borrow();
        core.tasks.slab.len() + core.tasks.queued()
    }

    /// True if the task of `w` is still in that wait.
    pub(crate) fn is_waiting(&self, w: WaitToken) -> bool {
        self.core.borrow().tasks.is_waiting(w)
    }

    /// The queue other threads wake this scheduler's tasks through.
    ///
    /// # Panics
    ///
    /// If the kernel refuses the `eventfd` behind it (out of descriptors).
    pub(crate) fn remote_queue(&self) -> Arc<RemoteQueue> {
        match self.core.borrow_mut().reactor.remote_queue() {
            Ok(q) => q,
            Err(e) => panic!("yieldloop: cannot create a cross-thread waker: {e}"),
        }
    }

    /// Cancels a task as [`JoinHandle::cancel`](crate::JoinHandle::cancel)
    /// does: as [`cancel`](Self::cancel), except for a task paused inside
    /// an intercepted call (feature `hook`), whose frames of foreign code
    /// an unwind must not cross. Such a task is not torn down on the spot:
    /// it is marked cancelled and woken, its call fails (a sleep goes on
    /// sleeping), and it runs on, in its turns, until a pause of its own,
    /// where it is torn down. So a task that keeps making intercepted calls
    /// (a reconnect loop) neither spins nor holds the caller, and a dump
    /// shows it cancelled and still running.
    pub(crate) fn cancel_soon(&self, id: TaskId) {
        {
            let mut core = self.core.borrow_mut();
            let Some(t) = core.tasks.get_mut(id) else {
                return;
            };
            let Some(h) = &t.header else {
                return;
            };
            let h = h.as_ptr();
            let paused = !matches!(t.state, TaskState::Running { .. })
                // SAFETY: the header is live while its record is in the
                // table, and its task is not running.
                && unsafe { coroutine::paused_in_foreign_call(h) };
            if paused {
                // SAFETY: as above.
                unsafe { coroutine::cancel_in_foreign_call(h) };
                match t.state {
                    TaskState::Waiting { token, .. } => {
                        let w = WaitToken { key: id.key, token };
                        core.waking()
                            .wake_if_waiting(w, Resume::Cancelled, "cancel");
                    }
                    TaskState::Queued { .. } => t.resume = Some(Resume::Cancelled),
                    TaskState::Running { .. } => {}
                }
                drop(core);
                if trace::on() {
                    trace::emit(format_args!(
                        "cancel task {} (inside an intercepted call: it runs on to its next own pause)",
                        id.serial
                    ));
                }
                return;
            }
        }
        self.cancel(id);
    }

    /// Cancels a task on the spot: a paused task is torn down before this
    /// returns (see [`coroutine::drop_task`]), the running one at its next
    /// pause. What a scope's end needs: its tasks borrow from it.
    pub(crate) fn cancel(&self, id: TaskId) {
        let header = {
            let mut core = self.core.borrow_mut();
            match core.tasks.get_mut(id) {
                Some(t) => {
                    if let TaskState::Running { cancel, .. } = &mut t.state {
                        // It is the running task: tear it down at its next
                        // pause.
                        *cancel = true;
                        return;
                    }
                }
                None => return,
            }
            core.remove(id.key)
        };
        if let Some(header) = header {
            if trace::on() {
                trace::emit(format_args!("cancel task {}", id.serial));
            }
            coroutine::drop_task(header);
        }
    }

    /// Registers an I/O source with this scheduler's reactor.
    pub(crate) fn register(
        &self,
        source: &mut impl mio::event::Source,
        fd: RawFd,
    ) -> io::Result<(IoId, ReadEvents)> {
        let mut core = self.core.borrow_mut();
        let (reactor, mut waking) = core.split();
        let r = reactor.register(source, fd, &mut waking, true);
        self.release_and_wake(core);
        r
    }

    /// Registers the descriptor `fd` for the `hook` feature's waits, or,
    /// if it is registered here already (one of yieldloop's own sockets,
    /// polled by a library), answers with that registration, shared.
    #[cfg(feature = "hook")]
    pub(crate) fn register_shared(&self, fd: RawFd) -> io::Result<IoId> {
        let mut core = self.core.borrow_mut();
        let (reactor, mut waking) = core.split();
        let r = reactor.register(&mut mio::unix::SourceFd(&fd), fd, &mut waking, false);
        self.release_and_wake(core);
        r.map(|(id, _)| id)
    }

    /// Deregisters an I/O source; tasks still waiting on it get an error,
    /// and a future waiting on it is woken.
    pub(crate) fn deregister(&self, id: IoId) {
        let mut core = self.core.borrow_mut();
        let (reactor, mut waking) = core.split();
        reactor.deregister(id, &mut waking);
        self.release_and_wake(core);
    }

    /// True while `id` names a live registration here.
    #[cfg(feature = "hook")]
    pub(crate) fn is_registered(&self, id: IoId) -> bool {
        self.core
            .try_borrow()
            .is_ok_and(|c| c.reactor.is_registered(id))
    }

    /// Deregisters the source `id` if the scheduler's state is free now
    /// (`forget`: without telling the poller, for a descriptor number that
    /// may name another file by now; see [`Reactor::forget`]). Returns
    /// false, doing nothing, when the state is in use: called from a
    /// `close` that can come from anywhere, including the scheduler's own
    /// code.
    #[cfg(feature = "hook")]
    pub(crate) fn try_deregister(&self, id: IoId, forget: bool) -> bool {
        let Ok(mut core) = self.core.try_borrow_mut() else {
            return false;
        };
        let (reactor, mut waking) = core.split();
        if forget {
            reactor.forget(id, &mut waking);
        } else {
            reactor.deregister(id, &mut waking);
        }
        self.release_and_wake(core);
        true
    }

    /// Asks whether the source `io` is worth trying in one direction for a
    /// future polled with `waker`, filing the waker if not (see
    /// [`Reactor::poll_ready`]). `Ok(true)`: try.
    pub(crate) fn poll_io_ready(
        &self,
        io: IoId,
        write: bool,
        would_block: bool,
        waker: &Waker,
    ) -> io::Result<bool> {
        let polled = self
            .core
            .borrow_mut()
            .reactor
            .poll_ready(io, write, would_block, waker)?;
        match polled {
            PollReady::Ready => Ok(true),
            // The waker it replaced is dropped here, with the state let go
            // of: a waker's destructor is foreign code.
            PollReady::Pending(replaced) => {
                drop(replaced);
                Ok(false)
            }
        }
    }

    /// How many of this scheduler's future timers hold a waker that wakes
    /// what `waker` wakes.
    pub(crate) fn waker_timer_holds(&self, waker: &Waker) -> usize {
        self.core.borrow().waker_timers.holds_of(waker)
    }

    /// Arms a timer that wakes `waker` at `deadline`, for a future.
    pub(crate) fn arm_waker_timer(&self, deadline: Instant, waker: Waker) -> WaitToken {
        self.core.borrow_mut().waker_timers.arm(deadline, waker)
    }

    /// Files `waker` for the future's timer `w`; false if `w` has fired (or
    /// was disarmed) meanwhile.
    pub(crate) fn update_waker_timer(&self, w: WaitToken, waker: &Waker) -> bool {
        let (armed, replaced) = self.core.borrow_mut().waker_timers.update(w, waker);
        // Dropped with the state let go of: a waker's destructor is
        // foreign code.
        drop(replaced);
        armed
    }

    /// Disarms the future's timer `w`, if it is still armed.
    pub(crate) fn disarm_waker_timer(&self, w: WaitToken) {
        let waker = self.core.borrow_mut().waker_timers.disarm(w);
        drop(waker);
    }

    /// Lets go of the scheduler's state (`core`) and then wakes the wakers
    /// that events, deregistrations or due timers have ended meanwhile, if
    /// any: a wake may call back in, to unpark a task.
    #[inline]
    fn release_and_wake(&self, mut core: RefMut<'_, Core>) {
        if core.reactor.has_woken() {
            let woken = core.reactor.take_woken();
            drop(core);
            self.wake_wakers(woken);
        }
    }

    /// Wakes the wakers taken from the reactor, with the scheduler's state
    /// let go of, then hands the emptied list back to keep its allocation.
    fn wake_wakers(&self, mut woken: Vec<Waker>) {
        for w in woken.drain(..) {
            w.wake();
        }
        self.core.borrow_mut().reactor.restore_woken(woken);
    }

    /// Tears down every task still alive, unwinding their stacks, until none
    /// is left (destructors may spawn more).
    pub(crate) fn shutdown(&self) {
        loop {
            let doomed: Vec<(TaskId, OwnedHeader)> = {
                let mut core = self.core.borrow_mut();
                // Newest first: a scoped task, which may borrow from the
                // stack of the task that spawned it (always older), is torn
                // down before that stack is.
                let mut keys: Vec<(u64, usize)> = core
                    .tasks
                    .slab
                    .iter()
                    .map(|(k, t)| (t.id.serial, k))
                    .collect();
                keys.sort_unstable_by(|a, b| b.cmp(a));
                let keys = keys.into_iter().map(|(_, k)| k);
                keys.filter_map(|k| {
                    let id = core.tasks.slab[k].id;
                    core.remove(k).map(|co| (id, co))
                })
                .collect()
            };
            if doomed.is_empty() && self.core.borrow().tasks.slab.is_empty() {
                break;
            }
            for (id, header) in doomed {
                if trace::on() {
                    trace::emit(format_args!("cancel task {} (run is ending)", id.serial));
                }
                coroutine::drop_task(header);
            }
        }
        let mut core = self.core.borrow_mut();
        core.tasks.run_queue.clear();
        core.tasks.deferred.clear();
    }
}

/// Runs `main` as the main task of a new scheduler on this thread, until it
/// has ended (`finished` says so), then tears down the tasks left.
/// `main` is made like a body for [`Scheduler::spawn`].
///
/// # Panics
///
/// If the event loop or the main task cannot be created, and if the main
/// task can never finish (nothing is left that could wake it).
pub(crate) fn run_main<B>(
    paused: bool,
    make_main: impl FnOnce(TaskId) -> B,
    finished: impl Fn() -> bool,
) where
    B: FnOnce() + 'static,
{
    /// Puts the thread back on real time however the run ends.
    struct RealTimeAfter;
    impl Drop for RealTimeAfter {
        fn drop(&mut self) {
            timers::set_paused_at(None);
        }
    }
    let sched = match Scheduler::new() {
        Ok(s) => Rc::new(s),
        Err(e) => panic!("yieldloop::run: cannot create the event loop: {e}"),
    };
    let _real_time_after = RealTimeAfter;
    if paused {
        timers::set_paused_at(Some(std::time::Instant::now()));
    }
    crate::stack::install_overflow_report(coroutine::running_guard);
    let guard = install(sched.clone());
    if let Err(e) = sched.spawn(Some(Rc::from("main")), MAIN_STACK_SIZE, None, make_main) {
        panic!("yieldloop::run: cannot start the main task: {e}");
    }
    sched.run_until(&finished);
    let completed = finished();
    sched.shutdown();
    trace::flush();
    drop(guard);
    if !completed {
        panic!(
            "yieldloop::run: the main task can never finish: it waits for something \
             no other task or event can provide (a deadlock)"
        );
    }
}
