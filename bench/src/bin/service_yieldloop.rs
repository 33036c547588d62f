//! The example service (`yieldloop_recipes::service`) on one yieldloop
//! worker: its Redis endpoints over one multiplexed Redis connection (the
//! Redis recipe's `Multiplexed`), or with `--pool` over the recipe's
//! per-worker pool, one connection per command in flight. The benchmark
//! loads `GET /hits/bench`, one Redis `GET` per request.
//!
//! ```text
//! service_yieldloop --addr 127.0.0.1:PORT --redis 127.0.0.1:REDIS_PORT [--pool]
//! ```

use std::time::Duration;

use yieldloop_http::ServeConfig;
use yieldloop_recipes::service::ServiceConfig;
use yieldloop_redis::{ConnectOptions, PoolConfig};

fn main() {
    let (addr, redis, pool) = yieldloop_bench::service_args("service_yieldloop");
    // With --pool, as many connections as the load has (64), so that no
    // request waits for a checkout.
    let pool_mode = pool;
    // No read timeout: like the tokio peer's client by default, a call
    // waits as long as its reply takes (a timeout would put a timer per
    // call on the scheduler's heap).
    let connect = ConnectOptions::new(redis).connect_timeout(Duration::from_secs(2));
    let pool = PoolConfig::new(connect).max_size(yieldloop_bench::SERVICE_REDIS_CONNS);
    let config = ServiceConfig::new(pool).multiplexed(!pool_mode);
    // One worker: the benchmark compares one scheduler thread with one
    // tokio current_thread runtime.
    let served = ServeConfig::default().bind(addr.as_str(), 1).and_then(|s| {
        s.run_with(move || {
            let service = config.service();
            move |req: &_| service.handle(req)
        })
    });
    if let Err(e) = served {
        eprintln!("service_yieldloop: {e}");
        std::process::exit(1);
    }
}
