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
