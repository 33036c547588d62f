//! The accept side: one scheduler per worker thread, each with its own
//! `SO_REUSEPORT` listener and one task per connection, and the drain that
//! ends it all.
//!
//! ```text
//!   Server::run_with(factory)
//!     worker w (thread): handler = factory()
//!       acceptor task:   (at its share of max_connections: wait for a close)
//!                        accept ─▶ spawn connection task (conn.rs) ─▶ table
//!                        (accept failing, EMFILE: back off 5 ms … 1 s, retry)
//!       signal task:     SIGTERM/SIGINT ─▶ Shutdown::trigger
//!       (worker 0) SIGQUIT ─▶ a task dump of every worker, on stderr
//!       main task:       wait for the trigger, then drain:
//!                          cancel the acceptor (the listener closes)
//!                          draining = true; cancel the idle connections
//!                          wait for the busy ones, up to `grace`
//!                          cancel what is left
//! ```

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use yieldloop::net::{TcpListener, ToSocketAddrs};
use yieldloop::signal::{Signals, SIGINT, SIGQUIT, SIGTERM};
use yieldloop::sync::local::{Event, Notify};
use yieldloop::sync::mpsc;
use yieldloop::{JoinHandle, Runtime};

use super::config::ServeConfig;
use super::conn::{self, ConnStats, Watch};
use super::message::{Request, Response};

impl ServeConfig {
    /// Binds `workers` listeners (at least one) to `addr` with
    /// `SO_REUSEPORT`, so that each worker thread accepts on its own.
    /// Binding comes before serving so that a program can learn the port
    /// (with `127.0.0.1:0`) and take a [`Shutdown`] handle first.
    ///
    /// # Errors
    ///
    /// The system's, from resolving or binding `addr`.
    pub fn bind(self, addr: impl ToSocketAddrs, workers: usize) -> io::Result<Server> {
        let listeners = yieldloop::net::reuseport_listeners(addr, workers.max(1))?;
        let addr = listeners[0].local_addr()?;
        Ok(Server {
            listeners,
            addr,
            config: self,
            shutdown: Shutdown::default(),
        })
    }
}

/// A bound server, not yet serving; see [`ServeConfig::bind`].
#[derive(Debug)]
pub struct Server {
    /// One listener per worker, all on `addr`.
    listeners: Vec<std::net::TcpListener>,
    /// Where it listens.
    addr: SocketAddr,
    /// Its limits.
    config: ServeConfig,
    /// What starts its drain, besides the signals.
    shutdown: Shutdown,
}

impl Server {
    /// The address the server listens on (with the port the system chose
    /// for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// A handle that starts the drain, from any thread.
    pub fn shutdown_handle(&self) -> Shutdown {
        self.shutdown.clone()
    }

    /// Serves with one `handler` cloned into each worker, until drained;
    /// see [`serve`](super::serve).
    ///
    /// # Errors
    ///
    /// As for [`run_with`](Self::run_with).
    pub fn run<H>(self, handler: H) -> io::Result<Summary>
    where
        H: Fn(&Request<'_>) -> Response + Clone + Send + Sync + 'static,
    {
        self.run_with(move || handler.clone())
    }

    /// Serves with a handler made by `factory` on each worker's thread,
    /// until drained; see [`serve_with`](super::serve_with).
    ///
    /// # Errors
    ///
    /// A worker's set-up failing (its threads, its listener, its signal
    /// handlers); the first such error once all workers have stopped.
    pub fn run_with<F, H>(self, factory: F) -> io::Result<Summary>
    where
        F: Fn() -> H + Send + Sync + 'static,
        H: Fn(&Request<'_>) -> Response + 'static,
    {
        let workers = self.listeners.len();
        let rt = Runtime::builder().workers(workers).build()?;
        let factory = Arc::new(factory);
        let config = Arc::new(self.config);
        let handles: Vec<_> = self
            .listeners
            .into_iter()
            .enumerate()
            .map(|(w, listener)| {
                let (factory, config, shutdown) =
                    (factory.clone(), config.clone(), self.shutdown.clone());
                rt.spawn_on(w, move || {
                    // A worker that fails (its set-up, a panicking factory)
                    // stops the others, which would otherwise serve on
                    // while `run_with` waits for it.
                    let mut guard = StopOthers {
                        shutdown: shutdown.clone(),
                        armed: true,
                    };
                    let result =
                        worker(w, workers, listener, &config, &shutdown, move || factory());
                    guard.armed = result.is_err();
                    result
                })
            })
            .collect();
        let mut summary = Summary::default();
        let mut first_error = None;
        for h in handles {
            let result = h
                .join()
                .unwrap_or_else(|e| Err(io::Error::other(format!("a worker failed: {e}"))));
            match result {
                Ok(s) => summary.add(&s),
                Err(e) => {
                    // One worker failing stops the others too.
                    self.shutdown.trigger();
                    first_error.get_or_insert(e);
                }
            }
        }
        rt.shutdown();
        match first_error {
            Some(e) => Err(e),
            None => Ok(summary),
        }
    }
}

/// Triggers the drain when dropped armed: when a worker returns an error
/// or unwinds.
struct StopOthers {
    shutdown: Shutdown,
    armed: bool,
}

impl Drop for StopOthers {
    fn drop(&mut self) {
        if self.armed {
            self.shutdown.trigger();
        }
    }
}

/// What a server did, returned when it has drained.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Summary {
    /// Connections accepted.
    pub connections: u64,
    /// Requests answered by the handler (500s for its panics included).
    pub requests: u64,
    /// Handler calls that panicked.
    pub panics: u64,
    /// Connections cancelled with a request still under way when the grace
    /// period ran out.
    pub cut: u64,
}

impl Summary {
    fn add(&mut self, other: &Summary) {
        self.connections += other.connections;
        self.requests += other.requests;
        self.panics += other.panics;
        self.cut += other.cut;
    }
}

/// Starts a server's drain from any thread: clone it, keep it, call
/// [`trigger`](Self::trigger). A signal (SIGTERM, SIGINT) does the same.
///
/// # Examples
///
/// ```
/// use yieldloop_http::{Response, ServeConfig};
///
/// let server = ServeConfig::default().signals(false).bind("127.0.0.1:0", 1).unwrap();
/// let stop = server.shutdown_handle();
/// let t = std::thread::spawn(move || server.run(|_req| Response::text(200, "ok")));
/// stop.trigger();
/// let summary = t.join().unwrap().unwrap();
/// assert_eq!(summary.requests, 0);
/// ```
#[derive(Clone, Default)]
pub struct Shutdown {
    /// (triggered, one sender per worker waiting): triggering drops the
    /// senders, which wakes each worker's receiver.
    inner: Arc<Mutex<(bool, Vec<mpsc::Sender<()>>)>>,
}

impl fmt::Debug for Shutdown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shutdown")
            .field("triggered", &self.is_triggered())
            .finish()
    }
}

impl Shutdown {
    /// Starts the drain; doing it again does nothing.
    pub fn trigger(&self) {
        let waiting = {
            let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            inner.0 = true;
            std::mem::take(&mut inner.1)
        };
        drop(waiting);
    }

    /// Whether the drain has been started.
    pub fn is_triggered(&self) -> bool {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).0
    }

    /// A receiver that wakes when the drain starts (its sender dropped),
    /// or `None` if it has started already.
    fn subscribe(&self) -> Option<mpsc::Receiver<()>> {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if inner.0 {
            return None;
        }
        let (tx, rx) = mpsc::channel();
        inner.1.push(tx);
        Some(rx)
    }
}

/// An open connection: its task, and whether one of its requests is under
/// way (the connection's own flag, see `Watch::busy`).
type Open = (JoinHandle<()>, Rc<Cell<bool>>);

/// What a worker's tasks share. An `Rc`: it never leaves the thread.
struct Shared<H> {
    handler: H,
    config: Arc<ServeConfig>,
    /// Set when the drain starts.
    draining: Cell<bool>,
    /// Open connections by number: their task, and whether one of their
    /// requests is under way.
    conns: RefCell<HashMap<u64, Open>>,
    /// Set when the table empties during a drain.
    emptied: Event,
    /// Connection tasks running (in the table or not).
    ///
    /// # Invariant
    ///
    /// At most `share` once the acceptor has spawned one.
    open: Cell<usize>,
    /// This worker's share of `max_connections`.
    share: usize,
    /// Notified when a connection ends, for the acceptor waiting at its
    /// share.
    slot_free: Notify,
    /// This worker's counts.
    summary: RefCell<Summary>,
}

/// One worker (number `w`): accepts until the drain, then drains.
fn worker<F, H>(
    w: usize,
    workers: usize,
    listener: std::net::TcpListener,
    config: &Arc<ServeConfig>,
    shutdown: &Shutdown,
    factory: F,
) -> io::Result<Summary>
where
    F: FnOnce() -> H,
    H: Fn(&Request<'_>) -> Response + 'static,
{
    // Signal handlers first: a SIGTERM that comes once requests are served
    // must find them in place, not end the process.
    let signals = if config.signals {
        Some(Signals::new([SIGINT, SIGTERM])?)
    } else {
        None
    };
    let listener = TcpListener::from_std(listener)?;
    let shared = Rc::new(Shared {
        handler: factory(),
        config: config.clone(),
        draining: Cell::new(false),
        conns: RefCell::default(),
        emptied: Event::new(),
        open: Cell::new(0),
        share: (config.max_connections / workers.max(1)).max(1),
        slot_free: Notify::new(),
        summary: RefCell::default(),
    });
    let on_signal = signals.map(|mut signals| {
        let shutdown = shutdown.clone();
        yieldloop::spawn(move || {
            if signals.recv().is_ok() {
                shutdown.trigger();
            }
        })
    });
    // One worker answers SIGQUIT for all: the dump lists every worker.
    let on_quit = if config.signals && w == 0 {
        let mut quit = Signals::new([SIGQUIT])?;
        Some(yieldloop::spawn(move || {
            while quit.recv().is_ok() {
                eprintln!("{}", yieldloop::diag::dump());
            }
        }))
    } else {
        None
    };
    let acceptor = {
        let shared = shared.clone();
        yieldloop::spawn(move || accept_loop(&listener, &shared))
    };

    if let Some(rx) = shutdown.subscribe() {
        // Pauses this task only: the acceptor and the connections go on.
        let _ = rx.recv();
    }

    // Stop accepting: cancelling the acceptor drops (closes) the listener.
    acceptor.cancel();
    let _ = acceptor.join();
    shared.draining.set(true);
    // Connections waiting for a request have nothing to finish: end them
    // now. Taken out of the table first, so that their teardown does not
    // find it borrowed.
    let idle: Vec<u64> = shared
        .conns
        .borrow()
        .iter()
        .filter(|(_, (_, busy))| !busy.get())
        .map(|(id, _)| *id)
        .collect();
    for id in idle {
        let entry = shared.conns.borrow_mut().remove(&id);
        if let Some((handle, _)) = entry {
            handle.cancel();
        }
    }
    // The busy ones answer with `Connection: close` and end by themselves.
    if !shared.conns.borrow().is_empty() {
        shared.emptied.wait_timeout(config.grace);
    }
    let left: Vec<_> = shared.conns.borrow_mut().drain().collect();
    shared.summary.borrow_mut().cut += left.len() as u64;
    for (_, (handle, _)) in left {
        handle.cancel();
        let _ = handle.join();
    }
    for task in [on_signal, on_quit].into_iter().flatten() {
        task.cancel();
    }
    let summary = shared.summary.borrow().clone();
    Ok(summary)
}

/// The first pause after a failed accept; it doubles up to [`BACKOFF_MAX`]
/// while accepts keep failing, as Go's `net/http` does.
const BACKOFF_MIN: Duration = Duration::from_millis(5);
/// See [`BACKOFF_MIN`].
const BACKOFF_MAX: Duration = Duration::from_secs(1);

/// Accepts connections and gives each a task, until cancelled; waits while
/// this worker has its share of `max_connections` open.
fn accept_loop<H>(listener: &TcpListener, shared: &Rc<Shared<H>>)
where
    H: Fn(&Request<'_>) -> Response + 'static,
{
    let mut next_id = 0u64;
    let mut last_report: Option<Instant> = None;
    let mut backoff = BACKOFF_MIN;
    loop {
        // At the cap: take no more until one closes. The kernel holds new
        // clients in the listener's backlog meanwhile; the connections
        // open are served as before. No pause between the check and the
        // wait, so no close can slip between them.
        while shared.open.get() >= shared.share {
            shared.slot_free.wait();
        }
        let stream = match listener.accept() {
            Ok((stream, _)) => {
                backoff = BACKOFF_MIN;
                stream
            }
            Err(e) => {
                // Out of descriptors (EMFILE, ENFILE), out of memory, or a
                // connection aborted before we got it: nothing to do for
                // that client. Say so at most once a second, back off (the
                // listener is still readable, so retrying at once would
                // spin), go on.
                if last_report.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
                    eprintln!("http: accept failed: {e}; retrying in {backoff:?}");
                    last_report = Some(Instant::now());
                }
                yieldloop::sleep(backoff);
                backoff = (backoff * 2).min(BACKOFF_MAX);
                continue;
            }
        };
        next_id += 1;
        let id = next_id;
        let busy = Rc::new(Cell::new(true));
        // Counted before the task runs (it may end before `spawn` returns),
        // and uncounted by `done` however the task ends, or if it never
        // starts.
        shared.open.set(shared.open.get() + 1);
        let done = Done(shared.clone(), id, Cell::new(ConnStats::default()));
        let task = {
            let busy = busy.clone();
            move || {
                let watch = Watch {
                    draining: &done.0.draining,
                    busy: &busy,
                };
                let shared = &done.0;
                let metrics = shared.config.metrics_path.as_deref();
                let handler = |req: &Request<'_>| match metrics {
                    Some(path) if req.path() == path && matches!(req.method(), "GET" | "HEAD") => {
                        metrics_page()
                    }
                    _ => (shared.handler)(req),
                };
                let _ = conn::run(&stream, &shared.config, &handler, &watch, &done.2);
            }
        };
        let spawned = match shared.config.stack_size {
            None => Ok(yieldloop::spawn(task)),
            Some(bytes) => yieldloop::Builder::new().stack_size(bytes).spawn(task),
        };
        match spawned {
            Ok(handle) => {
                shared.summary.borrow_mut().connections += 1;
                if !handle.is_finished() {
                    shared.conns.borrow_mut().insert(id, (handle, busy));
                }
            }
            Err(e) => eprintln!("http: cannot start a connection task: {e}"),
        }
    }
}

/// Takes a connection out of the table and the count of open ones, and
/// adds its counts, however its task ends, cancellation included (or if
/// it never starts): (the worker's state, its number, its counts).
struct Done<H: 'static>(Rc<Shared<H>>, u64, Cell<ConnStats>);

impl<H: 'static> Drop for Done<H> {
    fn drop(&mut self) {
        let shared = &self.0;
        let stats = self.2.get();
        shared.open.set(shared.open.get() - 1);
        shared.slot_free.notify_all();
        let mut summary = shared.summary.borrow_mut();
        summary.requests += stats.requests;
        summary.panics += stats.panics;
        let mut conns = shared.conns.borrow_mut();
        conns.remove(&self.1);
        if shared.draining.get() && conns.is_empty() {
            shared.emptied.set();
        }
    }
}

/// The runtime's counters in the Prometheus text format, for
/// [`ServeConfig::metrics_path`].
fn metrics_page() -> Response {
    Response::text(200, yieldloop::diag::prometheus())
        .header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
}
