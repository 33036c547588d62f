//! An HTTP/1.1 client fetching several URLs at once: a task per URL, each
//! connecting, writing its request and reading the answer with plain
//! `Read`/`Write` calls, the way one would fetch a single URL.
//!
//! ```text
//! cargo run --release --example http_server &
//! cargo run --release --example http_get -- http://127.0.0.1:8080/ \
//!     'http://127.0.0.1:8080/sleep?ms=300' 'http://127.0.0.1:8080/sleep?ms=300'
//! ```
//!
//! Each URL's line is printed when it is done: status, body bytes, time.
//! The last line gives the total time, which is about that of the slowest
//! URL, not the sum. Options: `--timeout SECS` per URL (default 30).
//! Exits with status 1 if any URL failed.
//!
//! Plain `http://` only (see the `tls_echo` recipe for TLS with rustls).
//! Bodies may be framed by `Content-Length`, by chunked transfer coding, or
//! by the end of the connection; they are counted and thrown away. Host
//! names are resolved with the system's blocking resolver, which holds up
//! the thread while it runs; give IP addresses where that matters.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::time::{Duration, Instant};

use yieldloop::net::TcpStream;

#[path = "../../examples/args/mod.rs"]
mod args;
use args::Args;

/// Largest response head taken.
const MAX_HEAD: usize = 64 * 1024;
/// Longest chunk-size or trailer line taken in a chunked body.
const MAX_LINE: u64 = 4096;

fn main() {
    let mut args = Args::new("http_get [--timeout SECS] URL...");
    let timeout = Duration::from_secs(args.value_in("--timeout", 30, 1..));
    let urls: Vec<String> = std::iter::from_fn(|| args.positional("URL")).collect();
    if urls.is_empty() {
        args.fail("no URL given");
    }
    let start = Instant::now();
    let failed = yieldloop::run(move || {
        let tasks: Vec<_> = urls
            .into_iter()
            .map(|url| {
                yieldloop::spawn(move || {
                    let t0 = Instant::now();
                    let result = yieldloop::timeout(timeout, || fetch(&url)).unwrap_or_else(|_| {
                        Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            format!("no complete answer within {} s", timeout.as_secs()),
                        ))
                    });
                    let secs = t0.elapsed().as_secs_f64();
                    match &result {
                        Ok(a) => println!(
                            "{} {:<12} {:>9} bytes {secs:>8.3} s  {url}",
                            a.status, a.reason, a.body_bytes
                        ),
                        Err(e) => println!("error: {e} ({secs:.3} s)  {url}"),
                    }
                    result.is_err()
                })
            })
            .collect();
        let n = tasks.len();
        let failed = tasks
            .into_iter()
            .map(|t| t.join().unwrap_or(true))
            .filter(|&failed| failed)
            .count();
        (n, failed)
    });
    let (n, failed) = failed;
    println!(
        "{n} URL(s) in {:.3} s: {} ok, {failed} failed",
        start.elapsed().as_secs_f64(),
        n - failed
    );
    if failed > 0 {
        std::process::exit(1);
    }
}

/// What the report line shows of an answer.
#[derive(Debug)]
struct Answer {
    status: u16,
    reason: String,
    body_bytes: u64,
}

/// How the body of an answer ends.
#[derive(Debug, Clone, Copy)]
enum Framing {
    /// No body (HEAD, 204, 304).
    Empty,
    /// `Content-Length`.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// Neither: the body runs until the server closes.
    UntilClose,
}

fn fetch(url: &str) -> io::Result<Answer> {
    let (authority, host, port, path) = split_url(url)?;
    let stream = TcpStream::connect((host, port))?;
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: yieldloop-http-get\r\n\
         Accept: */*\r\nConnection: close\r\n\r\n"
    );
    (&stream).write_all(request.as_bytes())?;

    // Read until the head is complete; the bytes after it start the body.
    let mut buf = Vec::with_capacity(8 * 1024);
    let mut chunk = [0u8; 8 * 1024];
    let (status, reason, framing, head_len) = loop {
        let n = (&stream).read(&mut chunk)?;
        if n == 0 {
            return Err(invalid(
                "the server closed before its answer's head was complete",
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut resp = httparse::Response::new(&mut headers);
        match resp.parse(&buf) {
            Ok(httparse::Status::Complete(len)) => {
                let status = resp.code.unwrap_or(0);
                if (100..200).contains(&status) {
                    // An interim answer (100 Continue): the real one follows.
                    buf.drain(..len);
                    continue;
                }
                let reason = resp.reason.unwrap_or("").to_string();
                break (status, reason, framing(status, resp.headers)?, len);
            }
            Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD => {
                return Err(invalid("the answer's head is over 64 KiB"));
            }
            Ok(httparse::Status::Partial) => {}
            Err(e) => return Err(invalid(&format!("malformed answer: {e}"))),
        }
    };

    // The body: what came with the head, then the socket.
    let mut body = BufReader::new((&buf[head_len..]).chain(&stream));
    let body_bytes = match framing {
        Framing::Empty => 0,
        Framing::Length(n) => {
            let got = io::copy(&mut (&mut body).take(n), &mut io::sink())?;
            if got < n {
                return Err(invalid(&format!("body cut short: {got} of {n} bytes")));
            }
            got
        }
        Framing::UntilClose => io::copy(&mut body, &mut io::sink())?,
        Framing::Chunked => read_chunked(&mut body)?,
    };
    Ok(Answer {
        status,
        reason,
        body_bytes,
    })
}

/// Splits `http://host[:port][/path]` into (authority, host, port, path).
fn split_url(url: &str) -> io::Result<(&str, &str, u16, &str)> {
    let rest = url.strip_prefix("http://").ok_or_else(|| {
        if url.starts_with("https://") {
            io::Error::new(
                io::ErrorKind::Unsupported,
                "https is not supported here (the tls_echo recipe shows rustls)",
            )
        } else {
            invalid("not an http:// URL")
        }
    })?;
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], &rest[i..]),
        // "http://host?x" has an empty path: the request target is "/?x".
        Some(_) => return Err(invalid("write the path before the query: http://host/?...")),
        None => (rest, "/"),
    };
    // "[::1]:8080", "127.0.0.1:8080", "example.com".
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !p.contains(']') => {
            let port = p.parse().map_err(|_| invalid("bad port"))?;
            (h, port)
        }
        _ => (authority, 80),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err(invalid("no host in the URL"));
    }
    Ok((authority, host, port, path))
}

fn framing(status: u16, headers: &[httparse::Header<'_>]) -> io::Result<Framing> {
    if status == 204 || status == 304 {
        return Ok(Framing::Empty);
    }
    let mut framing = Framing::UntilClose;
    for h in headers {
        if h.name.eq_ignore_ascii_case("transfer-encoding") {
            // Chunked is always the last coding when present.
            let v = String::from_utf8_lossy(h.value);
            if v.trim().to_ascii_lowercase().ends_with("chunked") {
                return Ok(Framing::Chunked);
            }
        } else if h.name.eq_ignore_ascii_case("content-length") {
            let n = std::str::from_utf8(h.value)
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .ok_or_else(|| invalid("bad Content-Length"))?;
            framing = Framing::Length(n);
        }
    }
    Ok(framing)
}

/// Reads a chunked body to its end (trailers included); returns its size.
fn read_chunked(body: &mut impl BufRead) -> io::Result<u64> {
    let mut total = 0u64;
    let mut line = String::new();
    loop {
        line.clear();
        body.take(MAX_LINE).read_line(&mut line)?;
        if !line.ends_with('\n') {
            return Err(invalid("chunk size line cut short or too long"));
        }
        // "1a3f;name=value\r\n": the size in hex, then optional extensions.
        let size = line.split(';').next().unwrap_or("").trim();
        let size = u64::from_str_radix(size, 16)
            .map_err(|_| invalid(&format!("bad chunk size {size:?}")))?;
        if size == 0 {
            break;
        }
        let got = io::copy(&mut body.take(size), &mut io::sink())?;
        if got < size {
            return Err(invalid("chunk cut short"));
        }
        total += size;
        line.clear();
        body.take(MAX_LINE).read_line(&mut line)?;
        if line != "\r\n" && line != "\n" {
            return Err(invalid("no line end after a chunk"));
        }
    }
    // Trailer fields, up to the empty line.
    loop {
        line.clear();
        body.take(MAX_LINE).read_line(&mut line)?;
        if line.is_empty() {
            return Err(invalid("the server closed inside the trailers"));
        }
        if line == "\r\n" || line == "\n" {
            return Ok(total);
        }
    }
}

fn invalid(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.to_string())
}
