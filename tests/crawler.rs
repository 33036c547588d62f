//! The crawler example against a site this test serves itself, on a plain
//! thread per connection, which counts how many connections are open at
//! once and how often each page is asked for.

mod util;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use util::example;

/// What the site saw.
#[derive(Default)]
struct Seen {
    open: AtomicUsize,
    most_open: AtomicUsize,
    asked: Mutex<HashMap<String, usize>>,
}

/// A site of 30 pages in a ring, each linking to the next three, with a
/// redirect, a slow page (5 s) and a link to another host. Returns its
/// port.
fn serve(seen: Arc<Seen>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let seen = seen.clone();
            std::thread::spawn(move || answer(conn, &seen));
        }
    });
    port
}

fn answer(mut conn: TcpStream, seen: &Seen) {
    let now = seen.open.fetch_add(1, Ordering::SeqCst) + 1;
    seen.most_open.fetch_max(now, Ordering::SeqCst);
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && matches!(conn.read(&mut byte), Ok(1)) {
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let path = head.split(' ').nth(1).unwrap_or("/").to_string();
    *seen.asked.lock().unwrap().entry(path.clone()).or_default() += 1;
    let page = |n: usize| format!("<a href=\"/p/{}\">next</a>", n % 30);
    let (status, extra, body) = if path == "/" {
        let body = format!(
            "{}<a href=\"/moved\">m</a><a href=\"/slow\">s</a><a href=\"http://192.0.2.1/x\">x</a>",
            page(0)
        );
        ("200 OK", "", body)
    } else if path == "/moved" {
        ("302 Found", "Location: /p/7\r\n", String::new())
    } else if path == "/slow" {
        std::thread::sleep(Duration::from_secs(5));
        ("200 OK", "", String::new())
    } else if let Some(n) = path
        .strip_prefix("/p/")
        .and_then(|n| n.parse::<usize>().ok())
    {
        (
            "200 OK",
            "",
            (1..=3).map(|k| page(n + k)).collect::<String>(),
        )
    } else {
        ("404 Not Found", "", String::new())
    };
    std::thread::sleep(Duration::from_millis(30));
    let _ = write!(
        conn,
        "HTTP/1.1 {status}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    seen.open.fetch_sub(1, Ordering::SeqCst);
}

/// Every page is fetched once, no more than `--tasks` at a time, the slow
/// page is given up at the time limit, the other host is not visited, and
/// the crawl ends cleanly, well before the slow page would have answered.
#[test]
fn crawler_fetches_each_page_once_within_its_limits() {
    let seen = Arc::new(Seen::default());
    let port = serve(seen.clone());
    let root = format!("http://127.0.0.1:{port}/");
    let out = example::run("crawler", &[&root, "--tasks", "5", "--timeout-ms", "400"]);
    out.assert_success();
    let asked = seen.asked.lock().unwrap().clone();
    // The root, the 30 pages, the redirect and the slow page: each once.
    assert_eq!(asked.len(), 33, "{asked:?}\n{out}");
    assert!(asked.values().all(|&n| n == 1), "{asked:?}");
    assert!(out.stdout.contains("/slow        timed out after"), "{out}");
    assert!(out.stdout.contains("/moved       302 -> /p/7"), "{out}");
    assert!(
        out.last_line().starts_with("31 pages, 1 failed, in "),
        "{out}"
    );
    let most = seen.most_open.load(Ordering::SeqCst);
    assert!((2..=5).contains(&most), "{most} connections at once");
    // 32 answers of 30 ms each, five at a time, and one 400 ms give-up:
    // about a second even one at a time; the slow page alone would be 5 s.
    // The crawler's own clock, so that building the example is not counted.
    let ms: u64 = out
        .last_line()
        .split(" in ")
        .nth(1)
        .and_then(|rest| rest.split(" ms").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no time in {:?}", out.last_line()));
    assert!(ms < 4_000, "the crawl took {ms} ms");
}
