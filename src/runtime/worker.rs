//! The worker side of a [`Runtime`](super::Runtime): the thread, its
//! inbox of jobs, and the main task that turns each job into a task.

use std::cell::Cell;
use std::collections::VecDeque;
use std::io;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{mpsc, Arc};
use std::thread;

use crate::interop::from_thread::{Completer, RemoteJoinError};
use crate::scheduler::port::ParkedOn;
use crate::sys::threads::atomic::{AtomicUsize, Ordering};
use crate::sys::threads::{Mutex, MutexGuard};
use crate::task::park::{InTask, Pause, RemoteUnparker};

thread_local! {
    /// The index of the runtime worker this thread is, if it is one.
    pub(super) static CURRENT_WORKER: Cell<Option<usize>> = const { Cell::new(None) };
}

/// The runtime's side of one worker thread.
pub(super) struct Worker {
    pub(super) inbox: Arc<Inbox>,
    /// `None` once joined.
    pub(super) thread: Option<thread::JoinHandle<()>>,
}

/// Work waiting for one worker.
pub(crate) struct Inbox {
    state: Mutex<InboxState>,
}

struct InboxState {
    jobs: VecDeque<Job>,
    /// Set by shutdown, or when the worker's thread ends; no job is taken
    /// after that.
    closed: bool,
    /// The worker's main task, parked waiting for jobs.
    /// # Invariant
    /// `Some` only while `jobs` is empty: whoever queues a job takes it
    /// and unparks.
    waiter: Option<RemoteUnparker>,
}

/// A job: spawns nothing itself; the worker runs it as a task's body.
pub(crate) type Job = Box<dyn FnOnce() + Send + 'static>;

impl Inbox {
    /// An open inbox with no jobs.
    pub(crate) fn new() -> Inbox {
        Inbox {
            state: Mutex::new(InboxState {
                jobs: VecDeque::new(),
                closed: false,
                waiter: None,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, InboxState> {
        // Held for a few moves only, and nothing in those panics.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `job` and wakes the worker; hands the job back if the worker
    /// is gone.
    pub(crate) fn push(&self, job: Job) -> Result<(), Job> {
        let waiter = {
            let mut st = self.lock();
            if st.closed {
                return Err(job);
            }
            st.jobs.push_back(job);
            st.waiter.take()
        };
        if let Some(w) = waiter {
            w.unpark();
        }
        Ok(())
    }

    /// Stops the worker: no more jobs are taken, and the queued ones are
    /// dropped (their handles report a cancellation).
    pub(crate) fn close(&self) {
        let (jobs, waiter) = {
            let mut st = self.lock();
            st.closed = true;
            (std::mem::take(&mut st.jobs), st.waiter.take())
        };
        // Dropped outside the lock: a job's drop wakes its waiter.
        drop(jobs);
        if let Some(w) = waiter {
            w.unpark();
        }
    }
}

/// The jobs of [`Runtime::spawn`](super::Runtime::spawn), which no worker
/// has started yet, and what the workers publish to be chosen by.
///
/// A job is not given to a worker when it is spawned but taken by one when
/// it starts: each worker's main task takes one job per turn it gets (a
/// few while a long backlog waits; see [`Pool::take`]) (so a
/// worker busy with many runnable tasks takes jobs more slowly than an idle
/// one, whose main task runs again as soon as the job it started pauses or
/// ends). A spawn wakes the least-loaded of the workers whose main task is
/// parked, by the loads they published.
pub(crate) struct Pool {
    state: Mutex<PoolState>,
    /// Per worker: its scheduler's live tasks plus run-queue depth, as its
    /// main task saw them on its last turn. Relaxed: a hint, read to choose.
    loads: Vec<AtomicUsize>,
}

struct PoolState {
    jobs: VecDeque<Job>,
    /// Workers whose main task is parked with nothing to do, with the way
    /// to wake it.
    idle: Vec<(usize, RemoteUnparker)>,
    /// Set by shutdown: jobs are dropped, not queued.
    closed: bool,
}

impl Pool {
    pub(crate) fn new(workers: usize) -> Pool {
        Pool {
            state: Mutex::new(PoolState {
                jobs: VecDeque::new(),
                idle: Vec::new(),
                closed: false,
            }),
            loads: (0..workers).map(|_| AtomicUsize::new(0)).collect(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, PoolState> {
        // Held for a few moves only, and nothing in those panics.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `job` for whichever worker starts it first, waking the
    /// least-loaded idle worker; drops it (its handle reports the
    /// cancellation) if the runtime is shutting down.
    pub(crate) fn push(&self, job: Job) {
        let woken = {
            let mut st = self.lock();
            if st.closed {
                drop(st);
                drop(job);
                return;
            }
            st.jobs.push_back(job);
            let least = (0..st.idle.len())
                .min_by_key(|&i| self.loads[st.idle[i].0].load(Ordering::Relaxed));
            least.map(|i| st.idle.swap_remove(i).1)
        };
        if let Some(w) = woken {
            w.unpark();
        }
    }

    /// Takes the oldest jobs into `out`: one, or while many wait a few
    /// (an eighth of the backlog per worker, at most [`BATCH`]), so that a
    /// long queue costs fewer turns; the last jobs go one at a time, which
    /// is where balance matters.
    fn take(&self, out: &mut Vec<Job>) {
        let mut st = self.lock();
        let n = (st.jobs.len() / (8 * self.loads.len())).clamp(1, BATCH);
        let n = n.min(st.jobs.len());
        out.extend(st.jobs.drain(..n));
    }

    /// Drops the jobs not started and refuses new ones.
    pub(crate) fn close(&self) {
        let jobs = {
            let mut st = self.lock();
            st.closed = true;
            st.idle.clear();
            std::mem::take(&mut st.jobs)
        };
        // Dropped outside the lock: a job's drop wakes its waiter.
        drop(jobs);
    }
}

/// The most jobs a worker takes from the shared queue in one turn.
const BATCH: usize = 8;

/// Runs one job's closure as a task body and delivers its outcome.
pub(super) fn run_job<F, T>(f: F, completer: Completer<T>)
where
    F: FnOnce() -> T,
{
    match panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => completer.complete(Ok(v)),
        Err(payload) => {
            if crate::scheduler::coroutine::forced_unwind() {
                // The scheduler is tearing the task down (a shutdown): let
                // the unwind go on; dropping the completer reports it.
                panic::resume_unwind(payload);
            }
            completer.complete(Err(RemoteJoinError::panicked(payload)));
        }
    }
}

/// A worker thread's main task: take jobs from the inbox, spawn a task for
/// each; take a job (or a few) of the shared pool per turn; park until
/// more come; return once the inbox is closed (which makes `run` cancel
/// the tasks left).
fn worker_main(index: usize, inbox: &Inbox, pool: &Pool, stack_size: usize) {
    let mut start = |job: Job| {
        // Without a stack the job is dropped, which tells its handle.
        if let Err(e) = crate::task::spawn::Builder::new()
            .stack_size(stack_size)
            .spawn(job)
        {
            eprintln!("yieldloop: runtime worker cannot start a task: {e}");
        }
    };
    let mut taken = Vec::with_capacity(BATCH);
    loop {
        // This task itself is not counted.
        let load = crate::scheduler::with_scheduler("Runtime", |s| s.load()).saturating_sub(1);
        pool.loads[index].store(load, Ordering::Relaxed);
        match worker_turn(
            index,
            inbox,
            pool,
            &mut InTask(ParkedOn::OtherThread),
            &mut taken,
            &mut start,
        ) {
            Turn::Closed => return,
            // The jobs taken from the pool run before this task's next turn.
            Turn::FromPool => crate::time::yield_now(),
            Turn::FromInbox | Turn::Parked => {}
        }
    }
}

/// How one turn of a worker's job loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Turn {
    /// The inbox is closed: the worker stops.
    Closed,
    /// Jobs of the inbox were started (none of the pool).
    FromInbox,
    /// Jobs of the pool were started.
    FromPool,
    /// Nothing to start: the worker offered itself and paused until woken
    /// (or found work while offering, and did not pause).
    Parked,
}

/// One turn of a worker's job loop, pausing through `pause` (the worker's
/// main task; a model thread in the loom checks, so that the code checked
/// is the code that runs): start the inbox's jobs and a job or a few of
/// the pool's with `start`; with none, leave an unparker as the inbox's
/// waiter and in the pool's idle list, and pause until one is used.
///
/// No job is left waiting while the worker sleeps: the inbox and the pool
/// are looked at again under their locks, with the unparker left in both
/// in the same critical section, and whoever queues a job afterwards takes
/// an unparker out and uses it.
pub(crate) fn worker_turn(
    index: usize,
    inbox: &Inbox,
    pool: &Pool,
    pause: &mut impl Pause,
    taken: &mut Vec<Job>,
    start: &mut impl FnMut(Job),
) -> Turn {
    let jobs = {
        let mut st = inbox.lock();
        if st.closed {
            return Turn::Closed;
        }
        std::mem::take(&mut st.jobs)
    };
    let had_jobs = !jobs.is_empty();
    jobs.into_iter().for_each(&mut *start);
    pool.take(taken);
    if !taken.is_empty() {
        taken.drain(..).for_each(start);
        return Turn::FromPool;
    }
    if had_jobs {
        return Turn::FromInbox;
    }
    // Token and unparker are made outside the locks.
    let (token, remote) = pause.prepare();
    // This clone and the two left in the inbox and the pool bring jobs,
    // they end no wait: a paused clock may jump past them.
    let exempt = remote.exempt_from_clock(3);
    {
        let mut st = inbox.lock();
        if st.closed || !st.jobs.is_empty() {
            return Turn::Parked;
        }
        let mut ps = pool.lock();
        if !ps.jobs.is_empty() {
            return Turn::Parked;
        }
        // The clones kept here while parked tell the scheduler that a
        // wake-up from another thread is still possible, until this task
        // has actually been woken (see `interop::from_thread`).
        st.waiter = Some(remote.clone());
        ps.idle.push((index, remote.clone()));
    }
    // Nothing pauses between leaving the unparker and parking.
    let _ = pause.park(token, None);
    // Woken by the inbox, or by a spawn that took this entry already.
    pool.lock().idle.retain(|(w, _)| *w != index);
    drop(remote);
    drop(exempt);
    Turn::Parked
}

/// What a [`RuntimeBuilder`](super::RuntimeBuilder) sets for each worker.
#[derive(Debug, Clone, Copy)]
pub(super) struct WorkerSettings {
    /// The stack size of the tasks it starts for jobs.
    pub(super) stack_size: usize,
    /// Whether its scheduler runs on a paused clock.
    pub(super) paused: bool,
    /// The budget of the tasks started on it.
    pub(super) budget: u32,
}

/// A worker thread's body.
pub(super) fn worker_thread(
    index: usize,
    cpu: Option<usize>,
    inbox: &Arc<Inbox>,
    pool: &Arc<Pool>,
    settings: WorkerSettings,
    ready: &mpsc::Sender<io::Result<()>>,
) {
    /// Closes the inbox when the thread ends, however it ends, so no job
    /// waits for a worker that is gone.
    struct CloseOnExit<'a>(&'a Inbox);
    impl Drop for CloseOnExit<'_> {
        fn drop(&mut self) {
            self.0.close();
        }
    }
    let _close = CloseOnExit(inbox);
    if let Some(cpu) = cpu {
        if let Err(e) = crate::sys::pin_current_thread(cpu) {
            let _ = ready.send(Err(e));
            return;
        }
    }
    CURRENT_WORKER.with(|c| c.set(Some(index)));
    let inbox = inbox.clone();
    let pool = pool.clone();
    let ready = ready.clone();
    crate::task::spawn::run_clocked(settings.paused, move || {
        crate::scheduler::with_scheduler("Runtime", |s| s.set_default_budget(settings.budget));
        let _ = ready.send(Ok(()));
        drop(ready);
        worker_main(index, &inbox, &pool, settings.stack_size);
    });
}
