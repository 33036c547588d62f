//! Shared bits of the benchmark binaries.

/// Read buffer size of every echo server.
pub const BUF: usize = 4096;

/// Parses `--addr HOST:PORT` (the only argument of the echo servers).
pub fn addr_arg(prog: &str) -> String {
    let mut addr = "127.0.0.1:1235".to_string();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--addr" => match args.next() {
                Some(v) => addr = v,
                None => usage(prog),
            },
            _ => usage(prog),
        }
    }
    addr
}

/// The body of `GET /page` on the HTTP benchmark servers (`http_yieldloop`,
/// `http_hyper`): an answer of a few KB, for the pipelining attack of
/// run.sh's `attack` stage (many such answers for a few bytes of requests).
pub static PAGE: [u8; 4096] = [b'.'; 4096];

/// The largest body `POST /upload` takes on the HTTP benchmark servers: the
/// yieldloop server's default `max_body`, and the `Limited` the hyper one
/// collects through.
pub const UPLOAD_MAX: usize = 1024 * 1024;

/// Redis connections the native service may open (its pool's maximum): one
/// per load connection of the benchmark, so that no request waits for one.
pub const SERVICE_REDIS_CONNS: usize = 64;

/// Parses `--addr HOST:PORT --redis HOST:PORT [--pool]` (the service
/// benchmarks' arguments): where to listen, where Redis is, and whether to
/// use a pool of Redis connections rather than one multiplexed one.
pub fn service_args(prog: &str) -> (String, String, bool) {
    let mut addr = "127.0.0.1:1235".to_string();
    let mut redis = "127.0.0.1:6379".to_string();
    let mut pool = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let slot = match a.as_str() {
            "--pool" => {
                pool = true;
                continue;
            }
            "--addr" => &mut addr,
            "--redis" => &mut redis,
            _ => service_usage(prog),
        };
        match args.next() {
            Some(v) => *slot = v,
            None => service_usage(prog),
        }
    }
    (addr, redis, pool)
}

fn service_usage(prog: &str) -> ! {
    eprintln!("usage: {prog} --addr HOST:PORT --redis HOST:PORT [--pool]");
    std::process::exit(2);
}

fn usage(prog: &str) -> ! {
    eprintln!("usage: {prog} --addr HOST:PORT");
    std::process::exit(2);
}

/// What the sleepers binaries (`sleepers`, `sleepers_floor`) measure alike.
pub mod sleepers {
    use std::sync::atomic::{AtomicUsize, Ordering};

    static MAX_MAPS: AtomicUsize = AtomicUsize::new(0);

    /// Counts the process's memory mappings and keeps the largest count seen.
    pub fn sample_maps() {
        if let Ok(s) = std::fs::read_to_string("/proc/self/maps") {
            MAX_MAPS.fetch_max(s.lines().count(), Ordering::Relaxed);
        }
    }

    /// The largest mapping count [`sample_maps`] has seen.
    pub fn max_maps() -> usize {
        MAX_MAPS.load(Ordering::Relaxed)
    }

    /// A `kB` field of /proc/self/status, e.g. `VmHWM`.
    pub fn status_kb(field: &str) -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }

    /// splitmix64: the "random number" each task returns, in 0..100.
    pub fn random(seed: u64, i: u64) -> u64 {
        let mut z = seed.wrapping_add(i.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % 100
    }
}

/// What the database benchmarks (`db_roundtrip`, `db_ticker`) share.
pub mod db;

/// Parses `--runtime RT --bench B [--ops N] [--label NAME]`, the arguments
/// of the micro-benchmarks (`handover`, `xmutex`): the runtime, the
/// benchmark (one of `benches`), the ops, `default_ops(bench)` if not
/// given, and the name the result line gives the runtime (`RT` unless
/// `--label` says otherwise: a build with other features, such as
/// yieldloop with `tracing`, reports under a name of its own). Exits with
/// a usage message (naming `runtimes`) on anything else.
pub fn micro_args(
    prog: &str,
    runtimes: &str,
    benches: &[&str],
    default_ops: fn(&str) -> u64,
) -> (String, String, u64, String) {
    let usage = || -> ! {
        eprintln!(
            "usage: {prog} --runtime {runtimes} --bench {} [--ops N] [--label NAME]",
            benches.join("|")
        );
        std::process::exit(2);
    };
    let (mut runtime, mut bench, mut ops) = (String::new(), String::new(), None);
    let mut label = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--runtime" => runtime = args.next().unwrap_or_else(|| usage()),
            "--bench" => bench = args.next().unwrap_or_else(|| usage()),
            "--ops" => ops = Some(args.next().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)),
            "--label" => label = Some(args.next().unwrap_or_else(|| usage())),
            _ => usage(),
        }
    }
    if !benches.contains(&bench.as_str()) || !runtimes.split('|').any(|r| r == runtime) {
        usage();
    }
    let ops = ops.unwrap_or_else(|| default_ops(&bench));
    if ops < 2 {
        eprintln!("{prog}: --ops must be an integer of at least 2");
        std::process::exit(2);
    }
    let label = label.unwrap_or_else(|| runtime.clone());
    (runtime, bench, ops, label)
}

/// Prints a micro-benchmark's result line, `PROG runtime=.. bench=..
/// ops=.. secs=.. ns_per_op=..` and `extra` (more ` key=value` fields), for
/// `done` ops that took `took`; or `na=1 reason=..` for an error that
/// starts `na: `; any other error ends the process with status 3.
pub fn micro_report(
    prog: &str,
    runtime: &str,
    bench: &str,
    result: Result<(std::time::Duration, u64, String), String>,
) {
    match result {
        Ok((took, done, extra)) => println!(
            "{prog} runtime={runtime} bench={bench} ops={done} secs={:.6} ns_per_op={:.2}{extra}",
            took.as_secs_f64(),
            took.as_nanos() as f64 / done as f64,
        ),
        Err(e) => match e.strip_prefix("na: ") {
            Some(reason) => println!("{prog} runtime={runtime} bench={bench} na=1 reason={reason}"),
            None => {
                eprintln!("{prog}: {e}");
                std::process::exit(3);
            }
        },
    }
}
