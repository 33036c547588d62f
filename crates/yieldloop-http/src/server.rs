//! The accept side: one scheduler per worker thread, each with its own
//! `SO_REUSEPORT` listener and one task per connection, and the drain that
//! ends it all.
//!
//! ```text
//!   Server::run_with(factory)
//!     worker w (thread): handler = factory()
//!       acceptor task:   accept ─▶ spawn connection task (conn.rs) ─▶ table
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
use yieldloop::sync::local::Event;
use yieldloop::sync::mpsc;
use yieldloop::{JoinHandle, Runtime};

use super::conn::{self, ConnStats, Watch, MAX_HEADERS_CAP};
use super::message::{Request, Response};

/// The limits and timeouts of a server, and how it stops; a builder.
///
/// Every setter takes and returns the configuration, so a server is set up
/// in one expression; [`bind`](Self::bind) then makes it a [`Server`].
///
/// | setting | default | past it |
/// |---|---|---|
/// | [`max_head`](Self::max_head) | 8 KiB | 431 |
/// | [`max_headers`](Self::max_headers) | 64 | 431 |
/// | [`max_body`](Self::max_body) | 1 MiB | 413 |
/// | [`idle_timeout`](Self::idle_timeout) | 60 s | the connection closes |
/// | [`read_timeout`](Self::read_timeout) | 30 s | 408, then it closes |
/// | [`write_timeout`](Self::write_timeout) | 30 s | the connection closes |
/// | [`grace`](Self::grace) | 10 s | requests still running are cancelled |
/// | [`signals`](Self::signals) | on | SIGTERM and SIGINT start the drain; SIGQUIT prints a task dump |
/// | [`metrics_path`](Self::metrics_path) | `/metrics` | `GET` there answers with the runtime's counters |
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use yieldloop_http::ServeConfig;
///
/// let config = ServeConfig::default()
///     .max_body(64 * 1024)
///     .idle_timeout(Some(Duration::from_secs(5)))
///     .grace(Duration::from_secs(2));
/// assert_eq!(config.max_head, 8 * 1024);
/// ```
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// Largest request head (request line and headers) in bytes; also the
    /// size of each connection's read buffer.
    pub max_head: usize,
    /// Most headers a request may carry (at most 128).
    pub max_headers: usize,
    /// Largest request body (`Content-Length`) in bytes. The handler gets
    /// the body whole, so this bounds the memory one connection may take.
    pub max_body: u64,
    /// How long a connection may stay silent between requests; `None`: as
    /// long as it likes.
    pub idle_timeout: Option<Duration>,
    /// How long a request may take to come in, head and body, from the
    /// moment the server finds it incomplete; `None`: no limit. This is
    /// what stops a client that sends a byte now and then.
    pub read_timeout: Option<Duration>,
    /// How long an answer may wait for the client to take it.
    pub write_timeout: Option<Duration>,
    /// How long a drain waits for the requests under way.
    pub grace: Duration,
    /// Whether SIGTERM and SIGINT start the drain, and SIGQUIT prints a
    /// dump of every task of every worker to stderr
    /// ([`yieldloop::diag::dump`]), as Go prints its goroutines, while the
    /// server goes on. Their handlers stay in place once the server has
    /// returned (see `yieldloop::signal`): from then on the program no
    /// longer ends on them by default.
    pub signals: bool,
    /// The path whose `GET` is answered, ahead of the handler, with every
    /// scheduler's counters in the Prometheus text format
    /// ([`yieldloop::diag::prometheus`]): tasks, resumes, polls, busy and
    /// parked time, timers, sockets, the blocking pool, and how long
    /// resumes hold the thread. `None`: every path goes to the handler.
    pub metrics_path: Option<String>,
    /// Stack size of the connection tasks (handlers run on them); `None`:
    /// yieldloop's default.
    pub stack_size: Option<usize>,
}

impl Default for ServeConfig {
    fn default() -> ServeConfig {
        ServeConfig {
            max_head: 8 * 1024,
            max_headers: 64,
            max_body: 1024 * 1024,
            idle_timeout: Some(Duration::from_secs(60)),
            read_timeout: Some(Duration::from_secs(30)),
            write_timeout: Some(Duration::from_secs(30)),
            grace: Duration::from_secs(10),
            signals: true,
            metrics_path: Some("/metrics".to_string()),
            stack_size: None,
        }
    }
}

impl ServeConfig {
    /// Sets [`max_head`](Self#structfield.max_head).
    pub fn max_head(mut self, bytes: usize) -> Self {
        self.max_head = bytes;
        self
    }

    /// Sets [`max_headers`](Self#structfield.max_headers), capped at 128.
    pub fn max_headers(mut self, n: usize) -> Self {
        self.max_headers = n.min(MAX_HEADERS_CAP);
        self
    }

    /// Sets [`max_body`](Self#structfield.max_body).
    pub fn max_body(mut self, bytes: u64) -> Self {
        self.max_body = bytes;
        self
    }

    /// Sets [`idle_timeout`](Self#structfield.idle_timeout).
    pub fn idle_timeout(mut self, t: Option<Duration>) -> Self {
        self.idle_timeout = t;
        self
    }

    /// Sets [`read_timeout`](Self#structfield.read_timeout).
    pub fn read_timeout(mut self, t: Option<Duration>) -> Self {
        self.read_timeout = t;
        self
    }

    /// Sets [`write_timeout`](Self#structfield.write_timeout).
    pub fn write_timeout(mut self, t: Option<Duration>) -> Self {
        self.write_timeout = t;
        self
    }

    /// Sets [`grace`](Self#structfield.grace).
    pub fn grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// Sets [`signals`](Self#structfield.signals).
    pub fn signals(mut self, on: bool) -> Self {
        self.signals = on;
        self
    }

    /// Sets [`metrics_path`](Self#structfield.metrics_path).
    pub fn metrics_path(mut self, path: Option<&str>) -> Self {
        self.metrics_path = path.map(str::to_owned);
        self
    }

    /// Sets [`stack_size`](Self#structfield.stack_size).
    pub fn stack_size(mut self, bytes: Option<usize>) -> Self {
        self.stack_size = bytes;
        self
    }

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
        let rt = Runtime::builder().workers(self.listeners.len()).build()?;
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
                    let result = worker(w, listener, &config, &shutdown, move || factory());
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
    /// This worker's counts.
    summary: RefCell<Summary>,
}

/// One worker (number `w`): accepts until the drain, then drains.
fn worker<F, H>(
    w: usize,
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

/// Accepts connections and gives each a task, until cancelled.
fn accept_loop<H>(listener: &TcpListener, shared: &Rc<Shared<H>>)
where
    H: Fn(&Request<'_>) -> Response + 'static,
{
    let mut next_id = 0u64;
    let mut last_report: Option<Instant> = None;
    loop {
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of descriptors, or a connection aborted before we got
                // it: nothing to do for that client. Say so at most once a
                // second, wait a moment (descriptors may free up), go on.
                if last_report.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
                    eprintln!("http: accept failed: {e}; retrying in 100 ms");
                    last_report = Some(Instant::now());
                }
                yieldloop::sleep(Duration::from_millis(100));
                continue;
            }
        };
        next_id += 1;
        let id = next_id;
        let busy = Rc::new(Cell::new(true));
        let task = {
            let (shared, busy) = (shared.clone(), busy.clone());
            move || {
                /// Takes the connection out of the table and adds its
                /// counts however the task ends, cancellation included.
                struct Done<H: 'static>(Rc<Shared<H>>, u64, Cell<ConnStats>);
                impl<H: 'static> Drop for Done<H> {
                    fn drop(&mut self) {
                        let shared = &self.0;
                        let stats = self.2.get();
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
                let done = Done(shared, id, Cell::new(ConnStats::default()));
                let watch = Watch {
                    draining: &done.0.draining,
                    busy: &busy,
                };
                let shared = &done.0;
                let metrics = shared.config.metrics_path.as_deref();
                let handler = |req: &Request<'_>| match metrics {
                    Some(path) if req.path() == path && req.method() == "GET" => metrics_page(),
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

/// The runtime's counters in the Prometheus text format, for
/// [`ServeConfig::metrics_path`].
fn metrics_page() -> Response {
    Response::text(200, yieldloop::diag::prometheus())
        .header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
}
