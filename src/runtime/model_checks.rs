//! Entry points for the model checks (`tests/loom_*.rs`), built only with
//! `--cfg loom`: the cross-thread protocols of the crate, driven by plain
//! model threads.
//!
//! A model cannot run a scheduler, so a [`ModelTask`] stands in for a task
//! and its scheduler at once: it makes pauses whose unparkers go through a
//! real [`RemoteQueue`] (with a stand-in for the poll's interrupt), and it
//! "parks" by doing what a scheduler does with that queue: wait for the
//! interrupt, drain, and resume when its pause's token is among the
//! wake-ups. The protocols under check take the stand-in where they would
//! take the task (see [`Pause`]), so the code checked is the code that runs.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use crate::interop::from_thread::{Completer, Handoff, RemoteJoinError};
use crate::protocol::{ParkToken, Resume, SchedulerId, WaitToken};
use crate::reactor::remote_model::PollStandIn;
use crate::reactor::RemoteQueue;
use crate::task::park::{Pause, RemoteUnparker};

/// A scheduler's side of [`diag::dump`](crate::diag::dump), played by one
/// model thread: the port requests are queued with, and the stand-in for
/// the poll their interrupt ends.
pub struct ModelPort {
    port: Arc<crate::scheduler::port::Port>,
    poll: crate::sys::threads::Arc<PollStandIn>,
}

impl std::fmt::Debug for ModelPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelPort").finish_non_exhaustive()
    }
}

impl Default for ModelPort {
    fn default() -> Self {
        ModelPort::new()
    }
}

impl ModelPort {
    /// A port whose requests interrupt this model's poll, as a
    /// scheduler's interrupt its `epoll_wait` through the cross-thread
    /// queue's `eventfd`.
    pub fn new() -> ModelPort {
        let poll = crate::sys::threads::Arc::new(PollStandIn::default());
        let queue = Arc::new(RemoteQueue::model(poll.clone()));
        let port = crate::scheduler::port::Port::new(7, Box::new(|| 0));
        port.set_interrupt(Box::new(move || queue.interrupt()));
        ModelPort {
            port: Arc::new(port),
            poll,
        }
    }

    /// Asks for a dump, as `diag::dump` does from any thread: the answer
    /// (here, the scheduler's id) comes back through a hand-off slot.
    pub fn ask(&self) -> HandoffWaiter<u64> {
        let (slot, completer) = Handoff::new();
        self.port
            .request(Box::new(move |d| completer.complete(Ok(d.scheduler))));
        HandoffWaiter(slot)
    }

    /// The scheduler's loop, cut down to what a dump request meets: wait
    /// in the poll until interrupted, then answer what is queued, until
    /// `n` requests have been answered.
    pub fn serve(&self, n: usize) {
        let mut answered = 0;
        while answered < n {
            self.poll.wait();
            if self.port.has_requests() {
                for r in self.port.take_requests() {
                    r(crate::scheduler::port::SchedulerDump {
                        scheduler: self.port.id,
                        thread: None,
                        tasks: Vec::new(),
                        unanswered: None,
                    });
                    answered += 1;
                }
            }
        }
    }
}

/// A task and its scheduler, played by one model thread.
#[derive(Debug)]
pub struct ModelTask {
    poll: crate::sys::threads::Arc<PollStandIn>,
    queue: Arc<RemoteQueue>,
    sched: SchedulerId,
    /// The number of the last pause made.
    pauses: u64,
    /// Wake-ups drained so far and not yet matched to a pause.
    seen: Vec<WaitToken>,
}

impl Default for ModelTask {
    fn default() -> Self {
        ModelTask::new()
    }
}

impl ModelTask {
    /// A task on a scheduler of its own.
    pub fn new() -> ModelTask {
        let poll = crate::sys::threads::Arc::new(PollStandIn::default());
        ModelTask {
            queue: Arc::new(RemoteQueue::model(poll.clone())),
            poll,
            sched: SchedulerId::next(),
            pauses: 0,
            seen: Vec::new(),
        }
    }

    /// A fresh pause and the unparker that ends it from any thread.
    pub fn pause(&mut self) -> (ModelPause, ModelUnparker) {
        let (token, remote) = Pause::prepare(self);
        (ModelPause(token), ModelUnparker(remote))
    }

    /// Waits, as the scheduler would, until `pause` is unparked.
    pub fn park(&mut self, pause: ModelPause) {
        Pause::park(self, pause.0, None);
    }
}

impl Pause for ModelTask {
    fn prepare(&mut self) -> (ParkToken, RemoteUnparker) {
        self.pauses += 1;
        let wait = WaitToken {
            key: 0,
            token: self.pauses,
        };
        let token = ParkToken {
            wait,
            sched: self.sched,
        };
        (token, RemoteUnparker::model(wait, self.queue.clone()))
    }

    /// A model has no clock: the deadline is not kept, and the pause ends
    /// only when unparked.
    fn park(&mut self, token: ParkToken, _deadline: Option<Instant>) -> Resume {
        loop {
            self.queue.drain(&mut self.seen);
            if let Some(i) = self.seen.iter().position(|w| *w == token.wait) {
                self.seen.swap_remove(i);
                return Resume::Ready;
            }
            self.poll.wait();
        }
    }
}

/// One pause of a [`ModelTask`].
#[derive(Debug)]
pub struct ModelPause(ParkToken);

/// Ends a [`ModelPause`] from any model thread.
#[derive(Clone, Debug)]
pub struct ModelUnparker(RemoteUnparker);

impl ModelUnparker {
    /// Queues the wake-up, as [`RemoteUnparker::unpark`] does.
    pub fn unpark(&self) {
        self.0.unpark();
    }
}

/// The waiting side of the hand-off slot under `BlockingHandle` and
/// `WorkerHandle`.
#[derive(Debug)]
pub struct HandoffWaiter<T>(Arc<Handoff<T>>);

/// The producing side of the hand-off slot; dropping it uncompleted
/// delivers a cancellation.
#[derive(Debug)]
pub struct HandoffProducer<T>(Completer<T>);

/// A new hand-off slot.
pub fn handoff<T>() -> (HandoffWaiter<T>, HandoffProducer<T>) {
    let (slot, completer) = Handoff::new();
    (HandoffWaiter(slot), HandoffProducer(completer))
}

impl<T> HandoffWaiter<T> {
    /// Waits as a task does (`None`: the work was cancelled).
    pub fn wait_task(&self, task: &mut ModelTask) -> Option<T> {
        self.0.wait_in_task(task).ok()
    }

    /// Waits as a plain thread does (`None`: the work was cancelled).
    pub fn wait_thread(&self) -> Option<T> {
        self.0.wait_blocking().ok()
    }

    /// Whether the outcome has arrived.
    pub fn is_done(&self) -> bool {
        self.0.is_done()
    }
}

impl<T> HandoffProducer<T> {
    /// Delivers `value`.
    pub fn complete(self, value: T) {
        self.0.complete(Ok(value));
    }

    /// Delivers a cancellation, as a lost piece of work does.
    pub fn cancel(self) {
        self.0
            .complete(Err(RemoteJoinError::cancelled("cancelled in a model")));
    }
}

/// `block_on` as it runs inside a task, with `task` as the task.
pub fn block_on_task<F: Future>(future: F, task: &mut ModelTask) -> F::Output {
    crate::interop::future::drive(future, Some(task))
}

/// `watch::Receiver::changed` as it runs inside a task (`false`: closed).
pub fn watch_changed_task<T>(
    rx: &mut crate::sync::watch::Receiver<T>,
    task: &mut ModelTask,
) -> bool {
    rx.changed_with(task).is_ok()
}

/// `broadcast::Receiver::recv` as it runs inside a task.
///
/// # Errors
///
/// As for `recv`, with [`TryRecvError::Closed`](crate::sync::broadcast::TryRecvError::Closed)
/// for `Closed`.
pub fn broadcast_recv_task<T: Clone>(
    rx: &mut crate::sync::broadcast::Receiver<T>,
    task: &mut ModelTask,
) -> Result<T, crate::sync::broadcast::TryRecvError> {
    rx.recv_with(task)
}

/// The job queues of a thread-per-core runtime: one inbox per worker
/// (`Runtime::spawn_on`) and the shared pool (`Runtime::spawn`), with the
/// job loop of a worker's main task run by model threads.
pub struct ModelWorkers {
    inboxes: Vec<super::worker::Inbox>,
    pool: super::worker::Pool,
}

impl std::fmt::Debug for ModelWorkers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelWorkers")
            .field("workers", &self.inboxes.len())
            .finish_non_exhaustive()
    }
}

impl ModelWorkers {
    /// Queues for `n` workers.
    pub fn new(n: usize) -> ModelWorkers {
        ModelWorkers {
            inboxes: (0..n).map(|_| super::worker::Inbox::new()).collect(),
            pool: super::worker::Pool::new(n),
        }
    }

    /// `Runtime::spawn`: queues `job` for whichever worker starts it first.
    pub fn spawn(&self, job: impl FnOnce() + Send + 'static) {
        self.pool.push(Box::new(job));
    }

    /// `Runtime::spawn_on(worker, ..)`: queues `job` for that worker.
    pub fn spawn_on(&self, worker: usize, job: impl FnOnce() + Send + 'static) {
        if let Err(job) = self.inboxes[worker].push(Box::new(job)) {
            drop(job);
        }
    }

    /// Closes every inbox and the pool, as a shutdown does.
    pub fn close(&self) {
        self.pool.close();
        for inbox in &self.inboxes {
            inbox.close();
        }
    }

    /// Runs worker `index`'s job loop with `task` as its main task,
    /// running each job it starts at once, until its inbox is closed.
    pub fn run_worker(&self, index: usize, task: &mut ModelTask) {
        let mut taken = Vec::new();
        let mut start = |job: super::worker::Job| job();
        while super::worker::worker_turn(
            index,
            &self.inboxes[index],
            &self.pool,
            task,
            &mut taken,
            &mut start,
        ) != super::worker::Turn::Closed
        {}
    }
}
