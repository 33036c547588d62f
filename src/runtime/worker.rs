//! The worker side of a [`Runtime`](super::Runtime): the thread, its
//! inbox of jobs, and the main task that turns each job into a task.

use std::cell::Cell;
use std::collections::VecDeque;
use std::io;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::thread;

use super::affinity;
use crate::handoff::{Completer, RemoteJoinError};
use crate::park::{park, park_token, RemoteUnparker};

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
pub(super) struct Inbox {
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
pub(super) type Job = Box<dyn FnOnce() + Send + 'static>;

impl Inbox {
    /// An open inbox with no jobs.
    pub(super) fn new() -> Inbox {
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
    pub(super) fn push(&self, job: Job) -> Result<(), Job> {
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
    pub(super) fn close(&self) {
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

/// Runs one job's closure as a task body and delivers its outcome.
pub(super) fn run_job<F, T>(f: F, completer: Completer<T>)
where
    F: FnOnce() -> T,
{
    match panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => completer.complete(Ok(v)),
        Err(payload) => {
            if crate::task::forced_unwind() {
                // The scheduler is tearing the task down (a shutdown): let
                // the unwind go on; dropping the completer reports it.
                panic::resume_unwind(payload);
            }
            completer.complete(Err(RemoteJoinError::panicked(payload)));
        }
    }
}

/// A worker thread's main task: take jobs from the inbox, spawn a task for
/// each, park until more come; return once the inbox is closed (which makes
/// `run` cancel the tasks left).
fn worker_main(inbox: &Inbox, stack_size: usize) {
    loop {
        let jobs = {
            let mut st = inbox.lock();
            if st.closed {
                return;
            }
            std::mem::take(&mut st.jobs)
        };
        if jobs.is_empty() {
            // Token and unparker are made outside the lock.
            let token = park_token();
            let remote = token.remote();
            // This clone and the one left in the inbox bring jobs, they end
            // no wait: a paused clock may jump past them.
            let exempt = remote.exempt_from_clock(2);
            {
                let mut st = inbox.lock();
                if st.closed || !st.jobs.is_empty() {
                    continue;
                }
                // The clone kept here while parked tells the scheduler that
                // a wake-up from another thread is still possible, until this
                // task has actually been woken (see `handoff`).
                st.waiter = Some(remote.clone());
            }
            // Nothing pauses between leaving the unparker and parking.
            let _ = park(token, None);
            drop(remote);
            drop(exempt);
            continue;
        }
        for job in jobs {
            // Without a stack the job is dropped, which tells its handle.
            if let Err(e) = crate::spawn::Builder::new()
                .stack_size(stack_size)
                .spawn(job)
            {
                eprintln!("yieldloop: runtime worker cannot start a task: {e}");
            }
        }
    }
}

/// A worker thread's body.
pub(super) fn worker_thread(
    index: usize,
    cpu: Option<usize>,
    inbox: &Arc<Inbox>,
    stack_size: usize,
    paused: bool,
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
        if let Err(e) = affinity::pin_current_thread(cpu) {
            let _ = ready.send(Err(e));
            return;
        }
    }
    CURRENT_WORKER.with(|c| c.set(Some(index)));
    let inbox = inbox.clone();
    let ready = ready.clone();
    crate::spawn::run_clocked(paused, move || {
        let _ = ready.send(Ok(()));
        drop(ready);
        worker_main(&inbox, stack_size);
    });
}
