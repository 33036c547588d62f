//! Thread-per-core: several OS threads, each running its own scheduler, and
//! a way to hand work to a chosen one.
//!
//! Tasks never move between threads. Work is handed to a worker once, as a
//! `Send` closure; from then on it is an ordinary task of that worker's
//! scheduler, and everything it creates there (tasks, sockets, `Rc`s,
//! thread-locals) stays on that thread for good. That is what keeps `Rc`,
//! `RefCell` and thread-locals sound inside tasks: only the closure handed
//! over and its result cross threads, so only they must be `Send`.
//!
//! ```text
//!   Runtime::spawn_on(w, f) ──▶ worker w's inbox (Mutex<VecDeque>)
//!                                 + RemoteUnparker ──▶ mio::Waker ──┐
//!   worker w: yieldloop::run(main task) ◀──────────────────────────┘
//!     main task: take the inbox, spawn one task per job, park again
//!     job task:  runs f, hands the result back through a WorkerHandle
//! ```
//!
//! For a server, give each worker its own listening socket bound with
//! `SO_REUSEPORT` ([`reuseport_listeners`](crate::net::reuseport_listeners));
//! the kernel then spreads incoming connections over the workers, and no
//! connection ever changes thread.
//!
//! Beside the runtime, in `model_checks` (built only with `--cfg loom`):
//! the entry points of the model checks of every protocol that crosses
//! threads, this runtime's job queues among them.

use std::cell::Cell;
use std::fmt;
use std::io;
use std::panic;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;

use crate::interop::from_thread::{await_handoff, Handoff, RemoteJoinError};

#[cfg(loom)]
#[doc(hidden)]
pub mod model_checks;
pub(crate) mod worker;

use worker::{run_job, worker_thread, Inbox, Job, Pool, Worker, WorkerSettings, CURRENT_WORKER};

/// Thread-per-core: a set of worker threads, each running its own
/// scheduler.
///
/// Built with [`Runtime::builder`]; work is handed to a chosen worker with
/// [`spawn_on`](Self::spawn_on) (or to each with
/// [`spawn_each`](Self::spawn_each)). Dropping the runtime (or calling
/// [`shutdown`](Self::shutdown)) stops every worker and joins its thread.
///
/// # Tasks never move between threads
///
/// Work crosses to a worker once, as a `Send` closure; from then on it is an
/// ordinary task of that worker's scheduler, and everything it creates
/// there (tasks, sockets, `Rc`s, `RefCell`s, thread-locals) stays on that
/// thread for good. That is what keeps `Rc` and thread-locals sound inside
/// tasks: only the closure handed over and its result cross threads, so
/// only they must be `Send`. There is no work stealing; spread the load by
/// giving each worker its own share, for a server its own `SO_REUSEPORT`
/// listener ([`reuseport_listeners`](crate::net::reuseport_listeners)).
///
/// # Examples
///
/// ```
/// use std::rc::Rc;
///
/// let rt = yieldloop::Runtime::builder().workers(2).build().unwrap();
/// let handles: Vec<_> = (0..rt.workers())
///     .map(|w| {
///         rt.spawn_on(w, move || {
///             // A task of worker `w`: Rc is fine, it never leaves this thread.
///             let shared = Rc::new(w * 10);
///             let s = shared.clone();
///             let child = yieldloop::spawn(move || *s + 1);
///             (yieldloop::Runtime::current_worker(), child.join().unwrap())
///         })
///     })
///     .collect();
/// // Joined from a plain thread: each join blocks until the result is in.
/// let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
/// assert_eq!(results, [(Some(0), 1), (Some(1), 11)]);
/// rt.shutdown();
/// ```
pub struct Runtime {
    workers: Vec<Worker>,
    /// The jobs of [`spawn`](Self::spawn) that no worker has started yet.
    pool: Arc<Pool>,
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("workers", &self.workers.len())
            .finish()
    }
}

impl Runtime {
    /// A builder for a runtime; see [`RuntimeBuilder`].
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    /// A runtime with one worker per available core and no pinning.
    ///
    /// # Errors
    ///
    /// As for [`RuntimeBuilder::build`].
    pub fn new() -> io::Result<Runtime> {
        Runtime::builder().build()
    }

    /// How many workers the runtime has; they are numbered from 0.
    pub fn workers(&self) -> usize {
        self.workers.len()
    }

    /// The index of the worker the calling thread is, or `None` on a thread
    /// that is not a runtime worker.
    pub fn current_worker() -> Option<usize> {
        CURRENT_WORKER.with(Cell::get)
    }

    /// Runs `f` as a new task on worker `worker` and returns a handle to its
    /// value.
    ///
    /// `f` runs on the worker's thread like any task there: it may spawn
    /// tasks, open sockets and use `Rc`; none of that ever leaves the
    /// thread. Only `f` and its value cross threads, hence `Send`.
    ///
    /// # Panics
    ///
    /// If `worker >= self.workers()`.
    ///
    /// The closure must be `Send`, since it crosses threads; an `Rc` made
    /// outside cannot go with it:
    ///
    /// ```compile_fail
    /// let rt = yieldloop::Runtime::builder().workers(1).build().unwrap();
    /// let shared = std::rc::Rc::new(5);
    /// rt.spawn_on(0, move || *shared + 1);
    /// ```
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = yieldloop::Runtime::builder().workers(2).build().unwrap();
    /// let h = rt.spawn_on(1, || {
    ///     yieldloop::sleep(std::time::Duration::from_millis(5));
    ///     yieldloop::Runtime::current_worker()
    /// });
    /// // Joined from a task: only the task pauses.
    /// let got = yieldloop::run(move || h.join().unwrap());
    /// assert_eq!(got, Some(1));
    /// ```
    pub fn spawn_on<F, T>(&self, worker: usize, f: F) -> WorkerHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let n = self.workers.len();
        assert!(
            worker < n,
            "yieldloop::Runtime::spawn_on: worker {worker} does not exist (the runtime has {n})"
        );
        let (slot, mut completer) = Handoff::new();
        completer.set_drop_reason("the worker stopped before the task finished");
        let job: Job = Box::new(move || run_job(f, completer));
        // A refused job is dropped here, which reports the cancellation.
        let _ = self.workers[worker].inbox.push(job);
        WorkerHandle { slot, worker }
    }

    /// Runs `f` as a new task on whichever worker starts it first, and
    /// returns a handle to its value: balanced placement for work of
    /// uneven cost.
    ///
    /// The job waits in a queue the workers share. Each worker's main task
    /// takes one job from it per turn it gets (a few while a long backlog
    /// waits, the last ones singly), and a spawn wakes the
    /// least-loaded idle worker (by the live tasks and run-queue depth
    /// each publishes): so an idle worker takes the next job as soon as
    /// the one it started pauses or ends, and a worker whose run queue is
    /// long takes jobs rarely. Once started, the task never moves: like
    /// [`spawn_on`](Self::spawn_on)'s, it may use `Rc` and thread-locals.
    ///
    /// The cost over `spawn_on`: one more lock (the shared queue) per job
    /// or batch, and jobs start a turn of a worker's main task at a time.
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = yieldloop::Runtime::builder().workers(2).build().unwrap();
    /// let handles: Vec<_> = (0..8u64)
    ///     .map(|i| rt.spawn(move || (1..=i * 1000).sum::<u64>()))
    ///     .collect();
    /// // Joined from a plain thread; from a task on any worker works too.
    /// let sums: Vec<u64> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    /// assert_eq!(sums[2], 2000 * 2001 / 2);
    /// ```
    pub fn spawn<F, T>(&self, f: F) -> SpawnHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let (slot, mut completer) = Handoff::new();
        completer.set_drop_reason("the runtime shut down before the task started or finished");
        let placed = Arc::new(AtomicUsize::new(NOT_PLACED));
        let at = placed.clone();
        let job: Job = Box::new(move || {
            at.store(
                Runtime::current_worker().unwrap_or(NOT_PLACED),
                Ordering::Relaxed,
            );
            run_job(f, completer);
        });
        self.pool.push(job);
        SpawnHandle {
            handle: WorkerHandle {
                slot,
                worker: NOT_PLACED,
            },
            placed,
        }
    }

    /// Runs `f(worker)` on every worker, one task each, and returns the
    /// handles in worker order.
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = yieldloop::Runtime::builder().workers(3).build().unwrap();
    /// let ids: Vec<usize> = rt
    ///     .spawn_each(|w| {
    ///         assert_eq!(yieldloop::Runtime::current_worker(), Some(w));
    ///         w
    ///     })
    ///     .into_iter()
    ///     .map(|h| h.join().unwrap())
    ///     .collect();
    /// assert_eq!(ids, [0, 1, 2]);
    /// ```
    pub fn spawn_each<F, T>(&self, f: F) -> Vec<WorkerHandle<T>>
    where
        F: Fn(usize) -> T + Send + Sync + 'static,
        T: Send + 'static,
    {
        let f = Arc::new(f);
        (0..self.workers.len())
            .map(|w| {
                let f = f.clone();
                self.spawn_on(w, move || f(w))
            })
            .collect()
    }

    /// Runs `f` as a task on worker 0 and blocks the calling thread until
    /// it returns (inside a task, pauses the task instead): the
    /// [`run`](crate::run) of a runtime. (To run a `Future`, spawn a task
    /// that drives it; this takes a closure.)
    ///
    /// # Panics
    ///
    /// If `f` panics, the panic is resumed here with its payload. Also
    /// panics if the task is cancelled, which only happens if worker 0
    /// stopped (its thread died).
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = yieldloop::Runtime::builder().workers(1).build().unwrap();
    /// assert_eq!(rt.run(|| 6 * 7), 42);
    /// ```
    #[doc(alias = "block_on")]
    pub fn run<F, T>(&self, f: F) -> T
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        match self.spawn_on(0, f).join() {
            Ok(v) => v,
            Err(e) if e.is_panic() => panic::resume_unwind(e.into_panic()),
            Err(e) => panic!("yieldloop::Runtime::run: {e}"),
        }
    }

    /// Stops every worker and joins their threads.
    ///
    /// Each worker stops taking work; jobs not yet started are dropped, and
    /// the tasks still alive on it are cancelled: unwound from where they
    /// are paused, so their destructors run and their sockets close. The
    /// handles of work that did not finish report a cancellation. A task
    /// that is not paused but blocking its thread (which tasks must not do)
    /// delays this until it pauses or ends.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.pool.close();
        for w in &self.workers {
            w.inbox.close();
        }
        for w in &mut self.workers {
            if let Some(t) = w.thread.take() {
                // A worker whose scheduler panicked has reported it on stderr
                // already; shutting down goes on with the others.
                let _ = t.join();
            }
        }
    }
}

impl Drop for Runtime {
    /// The same as [`shutdown`](Runtime::shutdown).
    fn drop(&mut self) {
        self.stop();
    }
}

/// Configures a [`Runtime`].
///
/// # Examples
///
/// ```
/// let rt = yieldloop::Runtime::builder()
///     .workers(2)
///     .pin(false)
///     .name("web")
///     .build()
///     .expect("threads start");
/// assert_eq!(rt.workers(), 2);
/// ```
#[derive(Debug, Clone)]
pub struct RuntimeBuilder {
    workers: Option<usize>,
    pin: bool,
    name: String,
    stack_size: usize,
    paused: bool,
    budget: u32,
}

impl Default for RuntimeBuilder {
    fn default() -> Self {
        RuntimeBuilder {
            workers: None,
            pin: false,
            name: "yieldloop-worker".into(),
            stack_size: crate::stack::DEFAULT_STACK_SIZE,
            paused: false,
            budget: crate::scheduler::coroutine::DEFAULT_BUDGET,
        }
    }
}

impl RuntimeBuilder {
    /// The number of worker threads (default: the number of cores
    /// [`std::thread::available_parallelism`] reports). 0 is taken as 1.
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = Some(n.max(1));
        self
    }

    /// Pins worker `i` to the `i`-th CPU the process may run on (wrapping
    /// around when there are more workers than CPUs), with
    /// `sched_setaffinity` on Linux and `cpuset_setaffinity` on FreeBSD.
    /// Off by default. Pinning keeps each worker's caches warm and its
    /// interrupts local, and suits a machine dedicated to the server; leave
    /// it off where other programs share the CPUs.
    ///
    /// macOS has no hard thread affinity: there [`build`](Self::build)
    /// fails with [`ErrorKind::Unsupported`](io::ErrorKind::Unsupported)
    /// when pinning is asked for.
    pub fn pin(mut self, pin: bool) -> Self {
        self.pin = pin;
        self
    }

    /// The worker threads' name prefix; worker `i` is named `"{name}-{i}"`.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The stack size of the tasks [`Runtime::spawn_on`] starts (default
    /// [`DEFAULT_STACK_SIZE`](crate::DEFAULT_STACK_SIZE)); see
    /// [`Builder::stack_size`](crate::Builder::stack_size).
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = bytes;
        self
    }

    /// The cooperative budget of the tasks started on the workers, by
    /// [`Runtime::spawn`], [`Runtime::spawn_on`] or from their own tasks
    /// (default [`DEFAULT_BUDGET`](crate::diag::DEFAULT_BUDGET)); a task's
    /// own [`Builder::budget`](crate::Builder::budget) comes first. See
    /// `Builder::budget` for what it does. 0 is taken as 1.
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = yieldloop::Runtime::builder()
    ///     .workers(1)
    ///     .budget(32)
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(rt.run(|| 6 * 7), 42);
    /// ```
    pub fn budget(mut self, budget: u32) -> Self {
        self.budget = budget.max(1);
        self
    }

    /// Runs each worker on a paused clock (off by default): for tests of
    /// code that waits on time. See [`run_paused`](crate::run_paused) for
    /// how the clock moves.
    ///
    /// Each worker has a clock of its own: it starts at the real time its
    /// worker starts, and jumps when that worker's own tasks wait on time
    /// alone. A worker's inbox of new work does not hold its clock
    /// still; a task waiting on another worker (a join, a cross-thread
    /// channel or lock) does.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let rt = yieldloop::Runtime::builder()
    ///     .workers(2)
    ///     .start_paused(true)
    ///     .build()
    ///     .unwrap();
    /// let started = std::time::Instant::now();
    /// let slept = rt.run(|| {
    ///     let t0 = yieldloop::now();
    ///     yieldloop::sleep(Duration::from_secs(3600));
    ///     yieldloop::now() - t0
    /// });
    /// assert!(slept >= Duration::from_secs(3600));
    /// assert!(started.elapsed() < Duration::from_secs(60));
    /// ```
    pub fn start_paused(mut self, paused: bool) -> Self {
        self.paused = paused;
        self
    }

    /// Starts the worker threads and waits until each runs its scheduler.
    ///
    /// # Errors
    ///
    /// If a thread cannot be started, or pinning was asked for and the
    /// system refuses it (always on macOS: `Unsupported`). The workers
    /// already started are stopped again.
    pub fn build(self) -> io::Result<Runtime> {
        let n = match self.workers {
            Some(n) => n,
            None => thread::available_parallelism().map_or(1, usize::from),
        };
        let cpus = if self.pin {
            let cpus = crate::sys::allowed_cpus()?;
            if cpus.is_empty() {
                return Err(io::Error::other("no CPU to pin the workers to"));
            }
            cpus
        } else {
            Vec::new()
        };
        let mut rt = Runtime {
            workers: Vec::with_capacity(n),
            pool: Arc::new(Pool::new(n)),
        };
        let (ready_tx, ready_rx) = mpsc::channel::<io::Result<()>>();
        for i in 0..n {
            let inbox = Arc::new(Inbox::new());
            let cpu = (!cpus.is_empty()).then(|| cpus[i % cpus.len()]);
            let ready = ready_tx.clone();
            let theirs = inbox.clone();
            let pool = rt.pool.clone();
            let settings = WorkerSettings {
                stack_size: self.stack_size,
                paused: self.paused,
                budget: self.budget,
            };
            let thread = thread::Builder::new()
                .name(format!("{}-{i}", self.name))
                .spawn(move || worker_thread(i, cpu, &theirs, &pool, settings, &ready))?;
            rt.workers.push(Worker {
                inbox,
                thread: Some(thread),
            });
            // Wait for this worker before the next, so an error stops early.
            match ready_rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(e),
                Err(_) => return Err(io::Error::other("a runtime worker died while starting")),
            }
        }
        Ok(rt)
    }
}

/// An owned permission to wait for the value of a task started with
/// [`Runtime::spawn_on`].
///
/// It is `Send`: join it from a task on any scheduler (the task pauses) or
/// from a plain thread (the thread blocks). Dropping it detaches the task.
pub struct WorkerHandle<T> {
    slot: Arc<Handoff<T>>,
    worker: usize,
}

impl<T> fmt::Debug for WorkerHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkerHandle")
            .field("worker", &self.worker)
            .field("finished", &self.is_finished())
            .finish()
    }
}

impl<T> WorkerHandle<T> {
    /// The worker the task runs on.
    pub fn worker(&self) -> usize {
        self.worker
    }

    /// True once the task has returned, panicked or been cancelled. Never
    /// pauses.
    pub fn is_finished(&self) -> bool {
        self.slot.is_done()
    }

    /// Waits for the task's value. Inside a task this pauses only the task;
    /// outside any task it blocks the thread.
    ///
    /// # Errors
    ///
    /// A [`RemoteJoinError`] carrying the payload if the task panicked, or
    /// a cancellation if the runtime shut down before the task finished.
    pub fn join(self) -> Result<T, RemoteJoinError> {
        self.slot.wait()
    }
}

await_handoff! {
    /// Awaiting the handle waits for the task's value without blocking: an
    /// `async` program (on tokio, say) can hand work to a yieldloop runtime and
    /// `.await` it. The outcome is the same as [`join`](WorkerHandle::join)'s;
    /// dropping the future detaches the task, which runs on.
    ///
    /// # Panics
    ///
    /// If polled again after it has returned its output.
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = yieldloop::Runtime::builder().workers(1).build().unwrap();
    /// let tokio_rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// let v = tokio_rt.block_on(async {
    ///     let h = rt.spawn_on(0, || {
    ///         yieldloop::sleep(std::time::Duration::from_millis(5));
    ///         21 * 2
    ///     });
    ///     h.await
    /// });
    /// assert_eq!(v.unwrap(), 42);
    /// ```
    WorkerHandle
}

/// [`SpawnHandle::worker`] before the task has started.
const NOT_PLACED: usize = usize::MAX;

/// An owned permission to wait for the value of a task started with
/// [`Runtime::spawn`].
///
/// It is `Send`: join it from a task on any worker or scheduler (the task
/// pauses) or from a plain thread (the thread blocks), or `.await` it.
/// Dropping it detaches the task.
pub struct SpawnHandle<T> {
    /// The hand-off the value comes through; its worker is not known when
    /// it is made.
    handle: WorkerHandle<T>,
    /// The worker that started the task, or [`NOT_PLACED`].
    placed: Arc<AtomicUsize>,
}

impl<T> fmt::Debug for SpawnHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpawnHandle")
            .field("worker", &self.worker())
            .field("finished", &self.is_finished())
            .finish()
    }
}

impl<T> SpawnHandle<T> {
    /// The worker the task runs on; `None` until one has started it.
    pub fn worker(&self) -> Option<usize> {
        Some(self.placed.load(Ordering::Relaxed)).filter(|&w| w != NOT_PLACED)
    }

    /// True once the task has returned, panicked or been cancelled. Never
    /// pauses.
    pub fn is_finished(&self) -> bool {
        self.handle.is_finished()
    }

    /// Waits for the task's value, as [`WorkerHandle::join`] does: inside a
    /// task this pauses only the task; outside any task it blocks the
    /// thread.
    ///
    /// # Errors
    ///
    /// As for [`WorkerHandle::join`].
    pub fn join(self) -> Result<T, RemoteJoinError> {
        self.handle.join()
    }
}

/// Awaiting the handle waits for the task's value, as
/// [`WorkerHandle`]'s does.
///
/// # Panics
///
/// If polled again after it has returned its output.
impl<T> std::future::Future for SpawnHandle<T> {
    type Output = Result<T, RemoteJoinError>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        std::pin::Pin::new(&mut self.handle).poll(cx)
    }
}
