//! What the database benchmarks (`db_roundtrip`, `db_ticker`) share: their
//! command line, the routes a task can take to a database, and the clock
//! and CPU readings.

use std::time::{Duration, Instant};

use yieldloop::sync::mpsc;

/// The database a run talks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Db {
    Redis,
    Postgres,
}

/// How a task reaches the database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// The recipes' clients over yieldloop's own sockets, in the task.
    Native,
    /// The tokio clients (redis's `MultiplexedConnection`, tokio-postgres's
    /// own `connect`) through `yieldloop::on_tokio`.
    OnTokio,
    /// The synchronous clients (`redis::Connection`, the `postgres` crate)
    /// on yieldloop's blocking pool through `yieldloop::spawn_blocking`.
    Blocking,
    /// The same tokio clients on a plain tokio `current_thread` runtime,
    /// without yieldloop: the yardstick.
    Tokio,
    /// The same tokio clients, each query spawned from a plain tokio
    /// `current_thread` runtime onto a second, multi-thread one of one
    /// worker and awaited there: tokio's own hop between runtimes.
    TokioHop,
}

impl Db {
    pub fn name(self) -> &'static str {
        match self {
            Db::Redis => "redis",
            Db::Postgres => "postgres",
        }
    }
}

impl Route {
    pub fn name(self) -> &'static str {
        match self {
            Route::Native => "native",
            Route::OnTokio => "on_tokio",
            Route::Blocking => "blocking",
            Route::Tokio => "tokio",
            Route::TokioHop => "tokio_hop",
        }
    }
}

/// The command line both binaries take.
#[derive(Clone, Debug)]
pub struct Args {
    pub db: Db,
    pub route: Route,
    /// The route as the command line named it: `on_tokio_mt` is the
    /// on_tokio route with the shared runtime sized to one worker per CPU.
    pub label: &'static str,
    /// The server, `HOST:PORT`.
    pub addr: String,
    /// `db_roundtrip`: measured queries. `db_ticker`: waiting tasks.
    pub n: u64,
    /// `db_roundtrip`: queries run before the measured ones.
    pub warmup: u64,
    /// `db_ticker`: how long each task waits on the database (ms).
    pub wait_ms: u64,
    /// Worker threads of the shared tokio runtime of `on_tokio` (its
    /// default, one, when not given).
    pub tokio_workers: Option<usize>,
    /// `db_roundtrip --vs ROUTE`: the route this one is compared with, run
    /// interleaved in the same process (and its label).
    pub vs: Option<(Route, &'static str)>,
    /// `db_roundtrip --vs`: how many pairs of batches (each batch `n`
    /// queries).
    pub pairs: u64,
}

/// A route's name on the command line: the route, and the label it keeps.
fn route_arg(v: &str) -> Option<(Route, &'static str)> {
    Some(match v {
        "native" => (Route::Native, "native"),
        "on_tokio" => (Route::OnTokio, "on_tokio"),
        "on_tokio_mt" => (Route::OnTokio, "on_tokio_mt"),
        "blocking" => (Route::Blocking, "blocking"),
        "tokio" => (Route::Tokio, "tokio"),
        "tokio_hop" => (Route::TokioHop, "tokio_hop"),
        _ => return None,
    })
}

/// Parses the command line; prints `usage` and exits on anything unknown.
pub fn args(usage: &str) -> Args {
    let bad = || -> ! {
        eprintln!("usage: {usage}");
        std::process::exit(2);
    };
    let mut a = Args {
        db: Db::Redis,
        route: Route::Native,
        label: "native",
        addr: String::new(),
        n: 0,
        warmup: 0,
        wait_ms: 200,
        tokio_workers: None,
        vs: None,
        pairs: 0,
    };
    let mut n = None;
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().unwrap_or_else(|| bad());
        let int = |v: &str| v.parse::<u64>().unwrap_or_else(|_| bad());
        match k.as_str() {
            "--db" => {
                a.db = match v.as_str() {
                    "redis" => Db::Redis,
                    "postgres" => Db::Postgres,
                    _ => bad(),
                }
            }
            "--route" => (a.route, a.label) = route_arg(&v).unwrap_or_else(|| bad()),
            "--vs" => a.vs = Some(route_arg(&v).unwrap_or_else(|| bad())),
            "--pairs" => a.pairs = int(&v),
            "--addr" => a.addr = v,
            "--n" | "--tasks" => n = Some(int(&v)),
            "--warmup" => a.warmup = int(&v),
            "--wait-ms" => a.wait_ms = int(&v),
            "--tokio-workers" => a.tokio_workers = Some(int(&v).max(1) as usize),
            _ => bad(),
        }
    }
    if a.addr.is_empty() {
        bad();
    }
    a.n = n.unwrap_or(0);
    let labels = [Some(a.label), a.vs.map(|(_, l)| l)];
    // One shared runtime per process: a comparison of its two sizes needs
    // two processes.
    if labels.contains(&Some("on_tokio")) && labels.contains(&Some("on_tokio_mt")) {
        bad();
    }
    if labels.contains(&Some("on_tokio_mt")) {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        a.tokio_workers = Some(cpus);
    }
    if let Some(workers) = a.tokio_workers {
        if let Err(e) = yieldloop::tokio_runtime(|b| {
            b.worker_threads(workers);
        }) {
            eprintln!("sizing the shared tokio runtime: {e}");
            std::process::exit(1);
        }
    }
    a
}

/// The libpq-style connection string of the benchmark servers: trust
/// authentication as the `postgres` superuser (what `initdb -U postgres
/// --auth-host=trust` sets up).
pub fn pg_conninfo(addr: &str) -> String {
    let (host, port) = addr.rsplit_once(':').unwrap_or((addr, "5432"));
    format!("host={host} port={port} user=postgres dbname=postgres")
}

/// User and system CPU time of the whole process (every thread: the
/// scheduler, tokio's workers, the blocking pool), from `getrusage`.
pub fn cpu_time() -> (Duration, Duration) {
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    // SAFETY: getrusage only writes the struct it is handed, which is
    // zero-initialised plain data.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

/// The process's CPU time, user + system.
pub fn cpu_total() -> Duration {
    let (user, sys) = cpu_time();
    user + sys
}

/// How a route runs its queries once warm.
pub enum Pace {
    /// `n` queries, timed one by one: one run's figures ([`Meter`]).
    Run { n: u64 },
    /// Batches on demand, for an interleaved comparison of two routes in
    /// one process: once warm, a zero on `took` (ready); then for each
    /// size that arrives on `batches`, that many queries, and the
    /// process's CPU time they took sent back on `took`. Ends when
    /// `batches` closes.
    Batches {
        batches: mpsc::Receiver<u64>,
        took: mpsc::Sender<Duration>,
    },
}

/// Runs `$warmup` queries untimed, then what `$pace` (a [`Pace`]) asks
/// for; evaluates to the result fields of a [`Pace::Run`] (none for
/// batches), as a `Result<String, String>`.
///
/// `$q` is one query, an expression of type `Result<(), String>` written
/// out in each loop, so that it may `.await` inside an async block (the
/// tokio routes) as well as call a client that pauses the task; a `?` in
/// it ends the enclosing function or closure. Waiting for the next batch
/// blocks the thread on a plain thread or in a tokio runtime's
/// `block_on`, which nothing of the runtime's needs meanwhile (the
/// connection is idle), and pauses only the task in yieldloop.
#[macro_export]
macro_rules! drive {
    ($pace:expr, $warmup:expr, $q:expr) => {{
        for _ in 0..$warmup {
            $q?;
        }
        match $pace {
            $crate::db::Pace::Run { n } => {
                let mut m = $crate::db::Meter::start(n);
                for _ in 0..n {
                    let t = ::std::time::Instant::now();
                    $q?;
                    m.lap(t);
                }
                Ok(m.finish())
            }
            $crate::db::Pace::Batches { batches, took } => {
                if took.send(::std::time::Duration::ZERO).is_ok() {
                    while let Ok(k) = batches.recv() {
                        let from = $crate::db::cpu_total();
                        for _ in 0..k {
                            $q?;
                        }
                        if took.send($crate::db::cpu_total() - from).is_err() {
                            break;
                        }
                    }
                }
                Ok(String::new())
            }
        }
    }};
}

/// Nearest-rank percentile of sorted values (`per_mille` / 1000).
pub fn percentile(sorted: &[Duration], per_mille: usize) -> Duration {
    let n = sorted.len();
    if n == 0 {
        return Duration::ZERO;
    }
    let rank = (per_mille * n).div_ceil(1000);
    sorted[rank.clamp(1, n) - 1]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Times a sequence of queries: the latency of each, and the wall and CPU
/// time of the whole sequence.
#[derive(Debug)]
pub struct Meter {
    lat: Vec<Duration>,
    start: Instant,
    cpu: (Duration, Duration),
}

impl Meter {
    /// Starts the clocks, with room for `n` latencies.
    pub fn start(n: u64) -> Meter {
        Meter {
            lat: Vec::with_capacity(n as usize),
            cpu: cpu_time(),
            start: Instant::now(),
        }
    }

    /// Records one query that began at `began`.
    pub fn lap(&mut self, began: Instant) {
        self.lat.push(began.elapsed());
    }

    /// Stops the clocks and returns the result fields: per query, the wall
    /// time, the process's CPU time (user + system, and each), and the
    /// latency percentiles.
    pub fn finish(mut self) -> String {
        let wall = self.start.elapsed();
        let (u1, s1) = cpu_time();
        let (user, sys) = (u1 - self.cpu.0, s1 - self.cpu.1);
        let n = self.lat.len().max(1) as f64;
        self.lat.sort();
        format!(
            "n={} wall_us={:.2} cpu_us={:.2} user_us={:.2} sys_us={:.2} p50_us={:.1} p99_us={:.1} max_us={:.1}",
            self.lat.len(),
            us(wall) / n,
            us(user + sys) / n,
            us(user) / n,
            us(sys) / n,
            us(percentile(&self.lat, 500)),
            us(percentile(&self.lat, 990)),
            us(percentile(&self.lat, 1000)),
        )
    }
}

/// The gaps a 1 ms ticker saw, and how long each waiting task waited.
#[derive(Debug, Default)]
pub struct Gaps {
    /// Per tick: when it came (since the ticker started), and the time
    /// since the one before.
    pub gaps: Vec<(Duration, Duration)>,
    pub waits: Vec<Duration>,
}

impl Gaps {
    /// The result fields: the ticker's gaps (longest, when it ended, p99,
    /// p50), its tick count, and the shortest and longest wait of the tasks.
    pub fn fields(mut self) -> String {
        let longest_end = self
            .gaps
            .iter()
            .max_by_key(|(_, gap)| *gap)
            .map_or(Duration::ZERO, |(at, _)| *at);
        let mut gaps: Vec<Duration> = self.gaps.iter().map(|(_, gap)| *gap).collect();
        gaps.sort();
        self.waits.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        format!(
            "tasks={} ticks={} max_gap_ms={:.3} max_gap_end_ms={:.1} p99_gap_ms={:.3} p50_gap_ms={:.3} wait_min_ms={:.1} wait_max_ms={:.1}",
            self.waits.len(),
            gaps.len(),
            ms(percentile(&gaps, 1000)),
            ms(longest_end),
            ms(percentile(&gaps, 990)),
            ms(percentile(&gaps, 500)),
            ms(self.waits.first().copied().unwrap_or_default()),
            ms(self.waits.last().copied().unwrap_or_default()),
        )
    }
}

/// A failure, as the text of the run's error line.
pub fn fail(e: impl std::fmt::Display) -> String {
    e.to_string()
}
