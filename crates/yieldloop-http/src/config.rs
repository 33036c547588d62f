//! [`ServeConfig`]: a server's limits and timeouts, and the yardstick
//! each default follows.

use std::time::Duration;

/// The most headers a request may carry whatever the configuration says:
/// the size of the parser's table, which lives on the task's stack.
/// 128 headers of 32 bytes are 4 KiB of a connection task's 64 KiB
/// default stack, reserved but not written (the table is uninitialised).
pub(crate) const MAX_HEADERS_CAP: usize = 128;

/// The limits and timeouts of a server, and how it stops; a builder.
///
/// Every setter takes and returns the configuration, so a server is set up
/// in one expression; [`bind`](Self::bind) then makes it a [`Server`](crate::Server). Each
/// default follows a server that faces the internet every day, named in
/// the last column; [Facing the internet](crate#facing-the-internet) says
/// what each limit protects.
///
/// | setting | default | past it | yardstick |
/// |---|---|---|---|
/// | [`max_head`](Self::max_head) | 8 KiB | 414 (request line), 431 | nginx `large_client_header_buffers` (8k a line); hyper's first read buffer |
/// | [`max_headers`](Self::max_headers) | 100 | 431 | hyper's `max_headers` |
/// | [`max_body`](Self::max_body) | 1 MiB | 413 | nginx `client_max_body_size` |
/// | [`header_timeout`](Self::header_timeout) | 30 s for the whole head | 408, close | hyper's `header_read_timeout`; Go's `ReadHeaderTimeout` (from the accept for the first request) |
/// | [`body_timeout`](Self::body_timeout) | 60 s for the whole body | 408, close | nginx `client_body_timeout`, for the whole body instead of between two reads |
/// | [`write_timeout`](Self::write_timeout) | 60 s for each batch of answers | close | nginx `send_timeout`, for the whole batch as Go's `WriteTimeout` |
/// | [`idle_timeout`](Self::idle_timeout) | 75 s between requests | close | nginx `keepalive_timeout` |
/// | [`max_unwritten`](Self::max_unwritten) | 64 KiB of answers | no more requests read until written | nginx `output_buffers` (2 × 32k) |
/// | [`max_connections`](Self::max_connections) | ¾ of `RLIMIT_NOFILE` (at most 1024 below it) | not accepted until one closes | nginx `worker_connections`/`limit_conn`; Go's `netutil.LimitListener` |
/// | [`grace`](Self::grace) | 10 s | requests still running are cancelled | |
/// | [`signals`](Self::signals) | on | SIGTERM and SIGINT start the drain; SIGQUIT prints a task dump | |
/// | [`metrics_path`](Self::metrics_path) | off | `GET`/`HEAD` there answer the runtime's counters | |
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
///     .max_connections(10_000)
///     .grace(Duration::from_secs(2));
/// assert_eq!(config.max_head, 8 * 1024);
/// assert_eq!(config.metrics_path, None);
/// ```
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// Largest request head (request line and headers) in bytes; also the
    /// size of each connection's read buffer. A request line that alone
    /// passes it gets 414, a head that does 431.
    pub max_head: usize,
    /// Most headers a request may carry (at most 128).
    pub max_headers: usize,
    /// Largest request body in bytes, declared (`Content-Length`) or
    /// decoded (chunked): the handler gets the body whole, so this bounds
    /// what one request may make the server hold. The buffer grows as the
    /// body arrives, never ahead of it.
    pub max_body: u64,
    /// How long a connection may stay silent between requests; `None`: as
    /// long as it likes.
    pub idle_timeout: Option<Duration>,
    /// How long a whole request head may take to come in: from its first
    /// byte, or from the accept for a connection's first request (a
    /// connection that sends nothing is closed then, without an answer).
    /// `None`: no limit (and a new connection waits `idle_timeout`). One
    /// deadline for the head, not one per read: a client that sends a byte
    /// now and then gains nothing.
    pub header_timeout: Option<Duration>,
    /// How long a whole request body may take to come in, from the end of
    /// its head (or from `100 Continue`); `None`: no limit.
    pub body_timeout: Option<Duration>,
    /// How long the client may take to receive a batch of answers (what
    /// has piled up for a pipelining client, or one large answer), all of
    /// it, not each write; `None`: no limit.
    pub write_timeout: Option<Duration>,
    /// How many bytes of answers may wait for a pipelining client before
    /// the server writes them and stops reading its requests until they
    /// are taken. A body of 4 KiB or more, or larger than this, is
    /// written from the handler's bytes, not copied (and does not wait).
    pub max_unwritten: usize,
    /// Most connections open at once, over all workers (each worker takes
    /// an equal share, at least one). Past it a worker stops accepting
    /// until one of its connections closes; those it has are served as
    /// before, and new clients wait in the listener's backlog.
    pub max_connections: usize,
    /// How long a drain waits for the requests under way.
    pub grace: Duration,
    /// Whether SIGTERM and SIGINT start the drain, and SIGQUIT prints a
    /// dump of every task of every worker to stderr
    /// ([`yieldloop::diag::dump`]), as Go prints its goroutines, while the
    /// server goes on. Their handlers stay in place once the server has
    /// returned (see `yieldloop::signal`): from then on the program no
    /// longer ends on them by default.
    pub signals: bool,
    /// A path whose `GET` and `HEAD` are answered, ahead of the handler,
    /// with every scheduler's counters in the Prometheus text format
    /// ([`yieldloop::diag::prometheus`]): tasks, resumes, polls, busy and
    /// parked time, timers, sockets, the blocking pool, and how long
    /// resumes hold the thread. `None` (the default): every path goes to
    /// the handler. The page is unauthenticated and some kilobytes long:
    /// turn it on where only the monitoring can reach the server, or serve
    /// [`yieldloop::diag::prometheus`] from a handler route of your own
    /// behind your own checks.
    pub metrics_path: Option<String>,
    /// Stack size of the connection tasks (handlers run on them); `None`:
    /// yieldloop's default.
    pub stack_size: Option<usize>,
}

impl Default for ServeConfig {
    fn default() -> ServeConfig {
        ServeConfig {
            max_head: 8 * 1024,
            max_headers: 100,
            max_body: 1024 * 1024,
            idle_timeout: Some(Duration::from_secs(75)),
            header_timeout: Some(Duration::from_secs(30)),
            body_timeout: Some(Duration::from_secs(60)),
            write_timeout: Some(Duration::from_secs(60)),
            max_unwritten: 64 * 1024,
            max_connections: default_max_connections(),
            grace: Duration::from_secs(10),
            signals: true,
            metrics_path: None,
            stack_size: None,
        }
    }
}

/// The default connection cap: three quarters of the soft limit on open
/// descriptors (`RLIMIT_NOFILE`), and never closer to it than 16 nor
/// further than 1024, leaving the rest to the listeners, the runtime and
/// the handlers' own files and sockets. Read from `/proc/self/limits`
/// where there is one; 1024 (a common soft limit) where there is not.
fn default_max_connections() -> usize {
    let soft = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("Max open files"))?;
            match line.split_whitespace().nth(3)? {
                "unlimited" => Some(1 << 20),
                n => n.parse::<usize>().ok(),
            }
        })
        .unwrap_or(1024);
    let headroom = (soft / 4).clamp(16, 1024);
    soft.saturating_sub(headroom).max(1)
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

    /// Sets [`header_timeout`](Self#structfield.header_timeout).
    pub fn header_timeout(mut self, t: Option<Duration>) -> Self {
        self.header_timeout = t;
        self
    }

    /// Sets [`body_timeout`](Self#structfield.body_timeout).
    pub fn body_timeout(mut self, t: Option<Duration>) -> Self {
        self.body_timeout = t;
        self
    }

    /// Sets [`write_timeout`](Self#structfield.write_timeout).
    pub fn write_timeout(mut self, t: Option<Duration>) -> Self {
        self.write_timeout = t;
        self
    }

    /// Sets [`max_unwritten`](Self#structfield.max_unwritten) (at least
    /// one byte).
    pub fn max_unwritten(mut self, bytes: usize) -> Self {
        self.max_unwritten = bytes.max(1);
        self
    }

    /// Sets [`max_connections`](Self#structfield.max_connections) (at
    /// least one).
    pub fn max_connections(mut self, n: usize) -> Self {
        self.max_connections = n.max(1);
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
}
