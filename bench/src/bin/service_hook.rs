//! The example service (`yieldloop_recipes::service`) on one yieldloop
//! worker, its Redis commands sent by the `redis` crate's own synchronous
//! client, unmodified, under feature `hook`: a program written for
//! threads, whose blocking calls pause only their request's task. Built
//! only with `--features hook`. Each worker keeps the connections it
//! opened, one per request in flight (up to the load's 64).
//!
//! ```text
//! service_hook --addr 127.0.0.1:PORT --redis 127.0.0.1:REDIS_PORT
//! ```

use yieldloop_http::ServeConfig;
use yieldloop_recipes::service::ServiceConfig;
use yieldloop_redis::{ConnectOptions, PoolConfig};

fn main() {
    let (addr, redis, pool) = yieldloop_bench::service_args("service_hook");
    if pool {
        eprintln!(
            "service_hook: --pool does not apply (the sync client keeps its own connections)"
        );
        std::process::exit(2);
    }
    let client = match redis::Client::open(format!("redis://{redis}/")) {
        Ok(client) => client,
        Err(e) => {
            eprintln!("service_hook: {e}");
            std::process::exit(1);
        }
    };
    // The recipe's pool configuration is required by the service but
    // unused with the sync client.
    let config =
        ServiceConfig::new(PoolConfig::new(ConnectOptions::new(redis))).sync_client(client);
    // One worker, as for service_yieldloop and the tokio peer.
    let served = ServeConfig::default().bind(addr.as_str(), 1).and_then(|s| {
        s.run_with(move || {
            let service = config.service();
            move |req: &_| service.handle(req)
        })
    });
    if let Err(e) = served {
        eprintln!("service_hook: {e}");
        std::process::exit(1);
    }
}
