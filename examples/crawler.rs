//! A web crawler, the client-side program of the articles: a queue of URLs,
//! a fixed number of fetching tasks, a time limit per request, and a clean
//! end once every page found has been fetched.
//!
//! ```text
//! cargo run --example crawler                        # crawls a site it serves itself
//! cargo run --example crawler -- http://127.0.0.1:8080/ --tasks 4 --timeout-ms 500
//! ```
//!
//! Each fetch is plain blocking-style code (connect, write the request,
//! read the answer to the end) in its task: only that task waits on the
//! network. The crawler follows links to pages of the same host and port,
//! each once, and redirects up to `--max-redirects` (3) deep. A fetch that
//! takes longer than `--timeout-ms` (1000) is given up, its socket closed,
//! and counted as failed; so are refused connections and answers that are
//! not HTTP.
//!
//! Without a URL it starts a small site of its own on 127.0.0.1 (on a plain
//! thread, one thread per connection): twelve linked pages, a redirect, a
//! missing page, a link to another host, and a page that answers after 3 s
//! (longer than the time limit).

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::io::{self, Read, Write};
use std::rc::Rc;
use std::time::{Duration, Instant};

use yieldloop::net::TcpStream;
use yieldloop::sync::local::{sync_channel, WaitGroup};

mod args;
use args::Args;

/// The crawl's settings.
#[derive(Clone, Debug)]
struct Settings {
    root: Option<String>,
    tasks: usize,
    timeout: Duration,
    max_redirects: u32,
    max_pages: usize,
}

// ANCHOR: url
/// An `http://host:port/path` URL, the only kind this crawler follows.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Url {
    host: String,
    port: u16,
    path: String,
}

impl Url {
    fn parse(s: &str) -> Option<Url> {
        let rest = s.strip_prefix("http://")?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) => (h, p.parse().ok()?),
            None => (authority, 80),
        };
        let path = path.split('#').next().unwrap_or("/");
        (!host.is_empty()).then(|| Url {
            host: host.to_string(),
            port,
            path: path.to_string(),
        })
    }

    /// `link` as found in a page of `self`: absolute, or a path on the
    /// same host.
    fn join(&self, link: &str) -> Option<Url> {
        if link.starts_with("http://") {
            Url::parse(link)
        } else if link.starts_with('/') {
            Url::parse(&format!("http://{}:{}{link}", self.host, self.port))
        } else {
            None // relative paths, mailto:, https:, ...: not followed here
        }
    }
}
// ANCHOR_END: url

/// What one fetch found.
enum Fetched {
    /// A page and the links in it.
    Page { status: u16, links: Vec<String> },
    /// A redirect to `Location`.
    Redirect { status: u16, location: String },
}

// ANCHOR: fetch
/// One GET, blocking-style: connect, send, read until the server closes.
/// Only this task waits for the network.
fn fetch(url: &Url) -> io::Result<Fetched> {
    let mut stream = TcpStream::connect((url.host.as_str(), url.port))?;
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}:{}\r\nConnection: close\r\nUser-Agent: yieldloop-crawler\r\n\r\n",
        url.path, url.host, url.port
    );
    stream.write_all(request.as_bytes())?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer)?;
    parse_answer(&answer)
}
// ANCHOR_END: fetch

/// The status line, `Location` and the `href="/..."` links of an answer.
fn parse_answer(answer: &[u8]) -> io::Result<Fetched> {
    let text = String::from_utf8_lossy(answer);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no end of head"))?;
    let status: u16 = head
        .strip_prefix("HTTP/1.")
        .and_then(|rest| rest.get(2..5))
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "not an HTTP answer"))?;
    if (300..400).contains(&status) {
        let location = head
            .lines()
            .find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("location")
                    .then(|| value.trim().to_string())
            })
            .ok_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidData, "redirect without Location")
            })?;
        return Ok(Fetched::Redirect { status, location });
    }
    let links = body
        .split("href=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .map(str::to_string)
        .collect();
    Ok(Fetched::Page { status, links })
}

// ANCHOR: crawl
/// What the crawl did.
#[derive(Default, Debug)]
struct Report {
    pages: usize,
    failed: usize,
    most_at_once: usize,
}

/// Crawls from `root` with `settings.tasks` fetching tasks.
fn crawl(root: Url, settings: &Settings) -> Report {
    // The queue: URLs (and how many redirects led to them) for the workers.
    let (queue, jobs) = sync_channel::<(Url, u32)>(1024);
    let jobs = Rc::new(jobs);
    // One count per URL queued and not yet done: the crawl is over when it
    // drops to zero (asyncio's `Queue.join`).
    let pending = Rc::new(WaitGroup::new());
    let seen = Rc::new(RefCell::new(HashSet::from([root.clone()])));
    let report = Rc::new(RefCell::new(Report::default()));
    let in_flight = Rc::new(Cell::new(0usize));
    let started = Instant::now();

    pending.add(1);
    queue.send((root.clone(), 0)).expect("the queue is open");

    let workers: Vec<_> = (0..settings.tasks)
        .map(|_| {
            let (jobs, queue, pending) = (jobs.clone(), queue.clone(), pending.clone());
            let (seen, report, in_flight) = (seen.clone(), report.clone(), in_flight.clone());
            let (root, s) = (root.clone(), settings.clone());
            yieldloop::spawn(move || {
                // Runs until cancelled, paused on the queue when it is empty.
                for (url, redirects) in jobs.iter() {
                    in_flight.set(in_flight.get() + 1);
                    {
                        let mut r = report.borrow_mut();
                        r.most_at_once = r.most_at_once.max(in_flight.get());
                    }
                    let t = Instant::now();
                    let fetched = yieldloop::timeout(s.timeout, || fetch(&url));
                    in_flight.set(in_flight.get() - 1);
                    let ms = t.elapsed().as_millis();
                    let mut found = Vec::new();
                    match fetched {
                        Err(_) => {
                            println!("{:<12} timed out after {ms} ms", url.path);
                            report.borrow_mut().failed += 1;
                        }
                        Ok(Err(e)) => {
                            println!("{:<12} failed: {e}", url.path);
                            report.borrow_mut().failed += 1;
                        }
                        Ok(Ok(Fetched::Redirect { status, location })) => {
                            println!("{:<12} {status} -> {location}", url.path);
                            if redirects < s.max_redirects {
                                found.extend(url.join(&location).map(|u| (u, redirects + 1)));
                            }
                        }
                        Ok(Ok(Fetched::Page { status, links })) => {
                            println!("{:<12} {status}, {} links, {ms} ms", url.path, links.len());
                            report.borrow_mut().pages += 1;
                            found.extend(links.iter().filter_map(|l| url.join(l)).map(|u| (u, 0)));
                        }
                    }
                    for (next, redirects) in found {
                        let same_site = next.host == root.host && next.port == root.port;
                        if same_site
                            && seen.borrow().len() < s.max_pages
                            && seen.borrow_mut().insert(next.clone())
                        {
                            pending.add(1);
                            // Pauses while the queue is full; never fails,
                            // as the queue closes only once all is done.
                            queue.send((next, redirects)).expect("the queue is open");
                        }
                    }
                    pending.done();
                }
            })
        })
        .collect();

    // Every URL queued has been fetched (asyncio's `await q.join()`): the
    // workers, each paused on the empty queue, are cancelled, which
    // unwinds them there, and joined.
    pending.wait();
    for worker in &workers {
        worker.cancel();
    }
    for worker in workers {
        match worker.join() {
            Ok(()) => {}
            Err(e) if e.is_cancelled() => {}
            Err(e) => panic!("a worker failed: {e}"),
        }
    }
    let report = Rc::try_unwrap(report)
        .expect("the workers are done")
        .into_inner();
    println!(
        "{} pages, {} failed, in {} ms; at most {} fetches at once",
        report.pages,
        report.failed,
        started.elapsed().as_millis(),
        report.most_at_once
    );
    report
}
// ANCHOR_END: crawl

/// The demonstration site: `/` links to `/page/1`..`/page/12`, each page
/// links to the next two and back to `/`; `/old` redirects to `/page/3`;
/// `/slow` answers after 3 s; `/missing` is 404; one link leaves the host.
fn serve_demo_site() -> io::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || demo_answer(conn));
        }
    });
    Ok(port)
}

fn demo_answer(mut conn: std::net::TcpStream) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && matches!(conn.read(&mut byte), Ok(1)) {
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head);
    let path = head.split(' ').nth(1).unwrap_or("/");
    let link = |p: String| format!("<a href=\"{p}\">{p}</a>\n");
    let (status, extra, body) = match path {
        "/" => {
            let mut body: String = (1..=12).map(|i| link(format!("/page/{i}"))).collect();
            body += &link("/old".into());
            body += &link("/slow".into());
            body += &link("/missing".into());
            body += "<a href=\"http://192.0.2.1/elsewhere\">elsewhere</a>\n";
            ("200 OK", String::new(), body)
        }
        "/old" => (
            "301 Moved Permanently",
            "Location: /page/3\r\n".into(),
            String::new(),
        ),
        "/slow" => {
            std::thread::sleep(Duration::from_secs(3));
            ("200 OK", String::new(), "finally\n".into())
        }
        p if p.starts_with("/page/") => {
            let n: u32 = p[6..].parse().unwrap_or(0);
            let body = link(format!("/page/{}", n % 12 + 1))
                + &link(format!("/page/{}", (n + 1) % 12 + 1))
                + &link("/".into());
            ("200 OK", String::new(), body)
        }
        _ => ("404 Not Found", String::new(), "no such page\n".into()),
    };
    // A little time per page, as a real server takes.
    std::thread::sleep(Duration::from_millis(20));
    let answer = format!(
        "HTTP/1.1 {status}\r\n{extra}Content-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = conn.write_all(answer.as_bytes());
}

fn main() {
    let mut args = Args::new(
        "crawler [URL] [--tasks N] [--timeout-ms MS] [--max-redirects N] [--max-pages N]",
    );
    let settings = Settings {
        tasks: args.value_in("--tasks", 4, 1..),
        timeout: Duration::from_millis(args.value_or("--timeout-ms", 1000)),
        max_redirects: args.value_or("--max-redirects", 3),
        max_pages: args.value_in("--max-pages", 10_000, 1..),
        // Last: once the options are taken, what is left is the URL.
        root: args.positional("URL"),
    };
    args.finish();
    let root = match &settings.root {
        Some(url) => url.clone(),
        None => {
            let port = serve_demo_site().expect("starting the demonstration site");
            format!("http://127.0.0.1:{port}/")
        }
    };
    let Some(root) = Url::parse(&root) else {
        args.fail(format!("not an http:// URL: {root}"));
    };
    let report = yieldloop::run(|| crawl(root, &settings));
    if report.pages == 0 {
        std::process::exit(1);
    }
}
