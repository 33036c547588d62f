//! The example service's handler (`yieldloop_recipes::service`) on
//! `serve_with`, against a real redis-server and PostgreSQL started for
//! each test, reached with a real HTTP client (ureq): every endpoint, the
//! error statuses, and a database dying under the running service.
//! Each test skips (with a message naming the package) when its servers are
//! not installed.

#[path = "../../tests/util/servers.rs"]
mod servers;

use std::net::SocketAddr;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use yieldloop_http::{ServeConfig, Shutdown, Summary};
use yieldloop_postgres as postgres;
use yieldloop_recipes::service::{create_schema, ServiceConfig};
use yieldloop_redis::{ConnectOptions, PoolConfig};

/// The most any one request or wait of these tests may take.
const TIMEOUT: Duration = Duration::from_secs(30);

/// The service on two workers on a thread of the test; drained when dropped.
struct Running {
    addr: SocketAddr,
    stop: Shutdown,
    done: mpsc::Receiver<std::io::Result<Summary>>,
}

impl Running {
    fn start(config: ServiceConfig) -> Running {
        let server = ServeConfig::default()
            .signals(false)
            .bind("127.0.0.1:0", 2)
            .unwrap();
        let (addr, stop) = (server.local_addr(), server.shutdown_handle());
        let (tx, done) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(server.run_with(move || {
                let service = config.service();
                move |req: &_| service.handle(req)
            }));
        });
        Running { addr, stop, done }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Drains and waits (bounded) for the server to return.
    fn drain(self) -> Summary {
        self.stop.trigger();
        self.done
            .recv_timeout(TIMEOUT)
            .expect("the service returns after a drain")
            .expect("the service ran without error")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.trigger();
    }
}

/// Redis options with short limits, so that a dead server fails fast.
fn redis_config(addr: SocketAddr) -> PoolConfig {
    PoolConfig::new(
        ConnectOptions::new(addr.to_string())
            .connect_timeout(Duration::from_secs(5))
            .read_timeout(Duration::from_secs(5)),
    )
    .max_size(4)
    .checkout_timeout(Some(Duration::from_secs(5)))
}

/// PostgreSQL options for the test's server, its table created.
fn pg_config(server: &servers::PgServer) -> postgres::PoolConfig {
    let mut opts = postgres::ConnectOptions::new(server.addr().to_string())
        .user(server.user())
        .dbname(server.dbname())
        .connect_timeout(Duration::from_secs(10));
    if let Some(password) = server.password() {
        opts = opts.password(password);
    }
    let table = opts.clone();
    yieldloop::run(move || create_schema(&table)).expect("creating the users table");
    postgres::PoolConfig::new(opts)
        .max_size(4)
        .checkout_timeout(Some(Duration::from_secs(5)))
}

/// Both servers, or `None` (after the harness said which is missing).
fn both() -> Option<(servers::RedisServer, servers::PgServer)> {
    let redis = servers::redis()?;
    let pg = servers::postgres()?;
    Some((redis, pg))
}

/// A ureq agent that hands back every status and gives up after TIMEOUT.
fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(TIMEOUT))
        .build()
        .into()
}

/// An answer: its status, its `X-Cache` header, and its body as JSON.
#[derive(Debug)]
struct Answer {
    status: u16,
    cache: Option<String>,
    json: Value,
}

fn answer(resp: Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> Answer {
    let mut resp = resp.expect("the service answers");
    let status = resp.status().as_u16();
    assert_eq!(
        resp.headers()["content-type"],
        "application/json",
        "every answer is JSON"
    );
    let cache = resp
        .headers()
        .get("x-cache")
        .map(|v| v.to_str().unwrap().to_string());
    let text = resp.body_mut().read_to_string().unwrap();
    let json = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    Answer {
        status,
        cache,
        json,
    }
}

fn get(agent: &ureq::Agent, url: &str) -> Answer {
    answer(agent.get(url).call())
}

fn post(agent: &ureq::Agent, url: &str, body: &str) -> Answer {
    answer(
        agent
            .post(url)
            .header("Content-Type", "application/json")
            .send(body),
    )
}

/// The error message of an error answer.
fn error_of(a: &Answer) -> &str {
    a.json["error"]
        .as_str()
        .unwrap_or_else(|| panic!("an error answer has an \"error\" string: {a:?}"))
}

/// The counter: increments and reads, per key, from several client
/// threads at once (both workers, each with its own pool, or its own
/// multiplexed connection).
#[test]
fn hits_count_per_key_across_workers() {
    for multiplexed in [false, true] {
        hits_count(multiplexed);
    }
}

fn hits_count(multiplexed: bool) {
    let Some(redis) = servers::redis() else {
        return;
    };
    let config = ServiceConfig::new(redis_config(redis.addr())).multiplexed(multiplexed);
    let service = Running::start(config);
    let agent = agent();

    let fresh = get(&agent, &service.url("/hits/never"));
    assert_eq!(fresh.status, 200);
    assert_eq!(fresh.json, json!({"key": "never", "hits": 0}));

    // 4 threads x 25 increments of key "a", 1 thread x 10 of key "b.2".
    let threads: Vec<_> = (0..5)
        .map(|t| {
            let (agent, url) = (
                agent.clone(),
                service.url(if t < 4 { "/hits/a" } else { "/hits/b.2" }),
            );
            std::thread::spawn(move || {
                let n = if t < 4 { 25 } else { 10 };
                let mut seen = Vec::new();
                for _ in 0..n {
                    let a = post(&agent, &url, "");
                    assert_eq!(a.status, 200, "{a:?}");
                    seen.push(a.json["hits"].as_i64().unwrap());
                }
                seen
            })
        })
        .collect();
    let mut seen_a = Vec::new();
    for (t, th) in threads.into_iter().enumerate() {
        let seen = th.join().unwrap();
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
        if t < 4 {
            seen_a.extend(seen);
        }
    }
    // Every increment of "a" answered a different count: 1 to 100.
    seen_a.sort_unstable();
    assert_eq!(seen_a, (1..=100).collect::<Vec<i64>>());
    assert_eq!(
        get(&agent, &service.url("/hits/a")).json,
        json!({"key": "a", "hits": 100})
    );
    assert_eq!(get(&agent, &service.url("/hits/b.2")).json["hits"], 10);
    let summary = service.drain();
    assert!(summary.requests >= 113, "{summary:?}");
}

/// Bad keys, unknown routes and wrong methods: 400, 404, 405, each with a
/// JSON error; the health check answers.
#[test]
fn bad_requests_get_json_errors() {
    let Some(redis) = servers::redis() else {
        return;
    };
    let service = Running::start(ServiceConfig::new(redis_config(redis.addr())));
    let agent = agent();

    let health = get(&agent, &service.url("/health"));
    assert_eq!((health.status, health.json), (200, json!({"status": "ok"})));

    let long = format!("/hits/{}", "k".repeat(129));
    for path in ["/hits/", "/hits/a%20b", "/hits/a/b", long.as_str()] {
        let a = post(&agent, &service.url(path), "");
        assert_eq!(a.status, 400, "{path}: {a:?}");
        assert!(error_of(&a).contains("key"), "{a:?}");
    }
    let longest = format!("/hits/{}", "k".repeat(128));
    assert_eq!(post(&agent, &service.url(&longest), "").status, 200);

    for path in ["/", "/nothing", "/hits", "/health/more"] {
        let a = get(&agent, &service.url(path));
        assert_eq!(a.status, 404, "{path}: {a:?}");
        error_of(&a);
    }
    let a = answer(agent.delete(&service.url("/hits/a")).call());
    assert_eq!(a.status, 405, "{a:?}");
    error_of(&a);
    service.drain();
}

/// Redis killed under the running service: the counter's requests fail
/// with 503 and a JSON error, each promptly, while the service stays up
/// and the endpoints that need no Redis go on answering.
#[test]
fn redis_dying_fails_its_requests_with_503_and_the_service_goes_on() {
    for multiplexed in [false, true] {
        redis_dying(multiplexed);
    }
}

fn redis_dying(multiplexed: bool) {
    let Some(mut redis) = servers::redis() else {
        return;
    };
    let config = ServiceConfig::new(redis_config(redis.addr())).multiplexed(multiplexed);
    let service = Running::start(config);
    let agent = agent();
    // Warm both workers' pools: connections that will find Redis gone.
    for _ in 0..20 {
        assert_eq!(post(&agent, &service.url("/hits/k"), "").status, 200);
    }
    redis.kill();
    for i in 0..20 {
        let started = Instant::now();
        let a = post(&agent, &service.url("/hits/k"), "");
        assert_eq!(
            a.status, 503,
            "request {i} after the kill ({multiplexed}): {a:?}"
        );
        assert!(error_of(&a).contains("redis"), "{a:?}");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "a request with Redis gone took {:?}",
            started.elapsed()
        );
        let a = get(&agent, &service.url("/hits/k"));
        assert_eq!(a.status, 503, "{a:?}");
        let health = get(&agent, &service.url("/health"));
        assert_eq!(health.status, 200, "{health:?}");
    }
    let summary = service.drain();
    assert!(summary.requests >= 80, "{summary:?}");
}

/// Users: created from JSON into PostgreSQL, read back through the Redis
/// cache (a miss, then hits), with 400, 404, 405 and 409 for what is wrong.
#[test]
fn users_are_created_and_read_through_the_cache() {
    let Some((redis, pg)) = both() else {
        return;
    };
    let config = ServiceConfig::new(redis_config(redis.addr())).postgres(pg_config(&pg));
    let service = Running::start(config);
    let agent = agent();

    let mut resp = agent
        .post(&service.url("/users"))
        .send(r#"{"name": "Ada Lovelace", "email": "ada@example.com"}"#)
        .unwrap();
    assert_eq!(resp.status().as_u16(), 201);
    let location = resp.headers()["location"].to_str().unwrap().to_string();
    let created: Value = serde_json::from_str(&resp.body_mut().read_to_string().unwrap()).unwrap();
    let id = created["id"].as_i64().expect("the new user has an id");
    assert_eq!(location, format!("/users/{id}"));
    assert_eq!(
        created,
        json!({"id": id, "name": "Ada Lovelace", "email": "ada@example.com"})
    );
    let other = post(
        &agent,
        &service.url("/users"),
        r#"{"name": "Grace", "email": "grace@example.com", "extra": [1, 2]}"#,
    );
    assert_eq!(other.status, 201, "{other:?}");
    assert_ne!(other.json["id"], id);

    let first = get(&agent, &service.url(&location));
    assert_eq!(
        (first.status, first.cache.as_deref()),
        (200, Some("miss")),
        "{first:?}"
    );
    assert_eq!(first.json, created);
    for _ in 0..3 {
        let again = get(&agent, &service.url(&location));
        assert_eq!(
            (again.status, again.cache.as_deref()),
            (200, Some("hit")),
            "{again:?}"
        );
        assert_eq!(again.json, created);
    }

    let dup = post(
        &agent,
        &service.url("/users"),
        r#"{"name": "Someone else", "email": "ada@example.com"}"#,
    );
    assert_eq!(dup.status, 409, "{dup:?}");
    assert!(error_of(&dup).contains("exists"), "{dup:?}");

    let too_long = format!(r#"{{"name": "{}", "email": "a@b"}}"#, "n".repeat(201));
    for body in [
        "",
        "{",
        "not json",
        "[1, 2]",
        r#"{"name": "Nobody"}"#,
        r#"{"name": 7, "email": "x@y"}"#,
        r#"{"name": " ", "email": "x@y"}"#,
        r#"{"name": "No at", "email": "nowhere"}"#,
        too_long.as_str(),
    ] {
        let a = post(&agent, &service.url("/users"), body);
        assert_eq!(a.status, 400, "{body:?}: {a:?}");
        error_of(&a);
    }
    for path in [
        "/users/0",
        "/users/-1",
        "/users/+1",
        "/users/abc",
        "/users/1.5",
    ] {
        let a = get(&agent, &service.url(path));
        assert_eq!(a.status, 400, "{path}: {a:?}");
    }
    let missing = get(&agent, &service.url("/users/999999"));
    assert_eq!(missing.status, 404, "{missing:?}");
    assert!(error_of(&missing).contains("999999"));
    assert_eq!(get(&agent, &service.url("/users")).status, 405);
    assert_eq!(
        answer(agent.delete(&service.url(&location)).call()).status,
        405
    );
    service.drain();
}

/// PostgreSQL killed under the running service: the user endpoints answer
/// 503 with a JSON error, each promptly; cached users are still served
/// from Redis, and the counter goes on.
#[test]
fn postgres_dying_fails_its_requests_with_503_and_the_service_goes_on() {
    let Some((redis, mut pg)) = both() else {
        return;
    };
    let config = ServiceConfig::new(redis_config(redis.addr())).postgres(pg_config(&pg));
    let service = Running::start(config);
    let agent = agent();
    let cached = post(
        &agent,
        &service.url("/users"),
        r#"{"name": "Cached", "email": "cached@example.com"}"#,
    );
    assert_eq!(cached.status, 201, "{cached:?}");
    let cached_url = service.url(&format!("/users/{}", cached.json["id"]));
    assert_eq!(get(&agent, &cached_url).cache.as_deref(), Some("miss"));
    let uncached = post(
        &agent,
        &service.url("/users"),
        r#"{"name": "Uncached", "email": "uncached@example.com"}"#,
    );
    let uncached_url = service.url(&format!("/users/{}", uncached.json["id"]));

    pg.kill();
    for i in 0..10 {
        let started = Instant::now();
        let a = get(&agent, &uncached_url);
        assert_eq!(a.status, 503, "read {i} after the kill: {a:?}");
        assert!(error_of(&a).contains("postgres"), "{a:?}");
        let a = post(
            &agent,
            &service.url("/users"),
            &format!(r#"{{"name": "Late", "email": "late{i}@example.com"}}"#),
        );
        assert_eq!(a.status, 503, "insert {i} after the kill: {a:?}");
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "two requests with PostgreSQL gone took {:?}",
            started.elapsed()
        );
        let hit = get(&agent, &cached_url);
        assert_eq!(
            (hit.status, hit.cache.as_deref()),
            (200, Some("hit")),
            "{hit:?}"
        );
        let a = post(&agent, &service.url("/hits/still"), "");
        assert_eq!(a.json["hits"], i + 1, "{a:?}");
    }
    service.drain();
}

/// With Redis killed, users still come from PostgreSQL, past the cache
/// (`X-Cache: off`), while the counter answers 503 (Redis multiplexed).
#[test]
fn users_are_served_past_a_dead_cache() {
    let Some((mut redis, pg)) = both() else {
        return;
    };
    let config = ServiceConfig::new(redis_config(redis.addr()))
        .postgres(pg_config(&pg))
        .multiplexed(true);
    let service = Running::start(config);
    let agent = agent();
    let user = post(
        &agent,
        &service.url("/users"),
        r#"{"name": "Kept", "email": "kept@example.com"}"#,
    );
    assert_eq!(user.status, 201, "{user:?}");
    let url = service.url(&format!("/users/{}", user.json["id"]));
    assert_eq!(get(&agent, &url).cache.as_deref(), Some("miss"));
    assert_eq!(get(&agent, &url).cache.as_deref(), Some("hit"));
    redis.kill();
    for i in 0..10 {
        let a = get(&agent, &url);
        assert_eq!(
            (a.status, a.cache.as_deref()),
            (200, Some("off")),
            "read {i}: {a:?}"
        );
        assert_eq!(a.json, user.json);
        assert_eq!(post(&agent, &service.url("/hits/k"), "").status, 503);
    }
    let late = post(
        &agent,
        &service.url("/users"),
        r#"{"name": "Late", "email": "late@example.com"}"#,
    );
    assert_eq!(late.status, 201, "{late:?}");
    service.drain();
}

/// A process and everything below it (the PostgreSQL server's backends),
/// from the parent ids in /proc.
fn with_descendants(root: u32) -> Vec<u32> {
    let mut all = vec![root];
    let mut i = 0;
    while i < all.len() {
        let children = servers::children_of(all[i]);
        all.extend(children);
        i += 1;
    }
    all
}

/// Stops processes with SIGSTOP; continues them when dropped.
struct Frozen(Vec<u32>);

impl Frozen {
    fn new(pids: Vec<u32>) -> Frozen {
        signal(&pids, "STOP");
        Frozen(pids)
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        signal(&self.0, "CONT");
    }
}

/// Sends signal `name` to each of `pids`, one by one: a backend may have
/// exited since the list was made, but the first (the server) must get it.
fn signal(pids: &[u32], name: &str) {
    for (i, pid) in pids.iter().enumerate() {
        let status = std::process::Command::new("kill")
            .arg(format!("-{name}"))
            .arg(pid.to_string())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("running kill");
        assert!(i > 0 || status.success(), "kill -{name} {pid}");
    }
}

/// PostgreSQL hanging (every process of it stopped): user requests that
/// need it answer 503 once the service's time limit runs out, the counter
/// goes on, and once the server runs again users are served again.
#[test]
fn a_hanging_postgres_answers_503_after_the_time_limit() {
    let Some((redis, pg)) = both() else {
        return;
    };
    let limit = Duration::from_millis(500);
    let config = ServiceConfig::new(redis_config(redis.addr()))
        .postgres(pg_config(&pg))
        .postgres_timeout(limit)
        .multiplexed(true);
    let service = Running::start(config);
    let agent = agent();
    let user = post(
        &agent,
        &service.url("/users"),
        r#"{"name": "Patient", "email": "patient@example.com"}"#,
    );
    assert_eq!(user.status, 201, "{user:?}");
    let url = service.url(&format!("/users/{}", user.json["id"]));

    let frozen = Frozen::new(with_descendants(pg.pid()));
    for i in 0..3 {
        let started = Instant::now();
        let a = get(&agent, &url);
        let took = started.elapsed();
        assert_eq!(a.status, 503, "read {i} with PostgreSQL stopped: {a:?}");
        assert!(error_of(&a).contains("within"), "{a:?}");
        assert!(took >= limit, "503 before the limit, after {took:?}");
        assert!(took < Duration::from_secs(10), "503 only after {took:?}");
        assert_eq!(
            post(&agent, &service.url("/hits/h"), "").json["hits"],
            i + 1
        );
    }
    drop(frozen);

    // Running again: the interrupted connections were dropped, new ones
    // serve the user (a few tries: the server catches up first).
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let a = get(&agent, &url);
        if a.status == 200 {
            assert_eq!(a.json, user.json);
            break;
        }
        assert!(Instant::now() < deadline, "still failing: {a:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    service.drain();
}
