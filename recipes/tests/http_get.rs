//! The `http_get` recipe, run as a child process against the `http_server`
//! recipe and against small std servers that frame bodies in other ways.

mod util;

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};

use util::Server;

/// The stdout lines of an `http_get` run, and whether it succeeded.
fn http_get(args: &[&str]) -> (bool, Vec<String>) {
    let out = util::run_example("http_get", args);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (
        out.status.success(),
        text.lines().map(String::from).collect(),
    )
}

/// The report line of `url`.
fn line_for<'a>(lines: &'a [String], url: &str) -> &'a str {
    lines
        .iter()
        .find(|l| l.ends_with(&format!("  {url}")))
        .unwrap_or_else(|| panic!("no line for {url} in {lines:?}"))
}

/// The seconds in the last line, "N URL(s) in S s: ...".
fn total_secs(lines: &[String]) -> f64 {
    let last = lines.last().expect("a total line");
    last.split(" in ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no total time in {last:?}"))
}

/// Four URLs, three of them `/sleep?ms=400`, on a one-thread server: all
/// are fetched at once, so the whole run takes about 0.4 s, not 1.2 s.
#[test]
fn urls_are_fetched_concurrently() {
    let server = Server::start("http_server", &["--workers", "1"]);
    let base = format!("http://{}", server.addr);
    let urls: Vec<String> = ["/", "/sleep?ms=400", "/sleep?ms=400", "/sleep?ms=400"]
        .iter()
        .map(|p| format!("{base}{p}"))
        .collect();
    let args: Vec<&str> = urls.iter().map(String::as_str).collect();
    let (ok, lines) = http_get(&args);
    assert!(ok, "{lines:?}");
    assert_eq!(lines.len(), 5, "{lines:?}");
    assert!(line_for(&lines, &urls[0]).starts_with("200 OK"));
    assert!(line_for(&lines, &urls[0]).contains(" 22 bytes"));
    assert!(line_for(&lines, &urls[1]).contains(" 13 bytes"));
    // The quick URL finishes first.
    assert!(lines[0].ends_with(&urls[0]), "{lines:?}");
    let secs = total_secs(&lines);
    // At least one sleep; well under the three sleeps in a row (1.2 s),
    // with room for a slow machine.
    assert!(secs >= 0.4, "{secs} s");
    assert!(
        secs < 1.1,
        "{secs} s: the URLs were not fetched concurrently"
    );
    assert!(lines[4].contains("4 ok, 0 failed"), "{lines:?}");
}

/// A one-connection server on a std thread answering each request with
/// `answer(path)`, then closing; returns its address.
fn std_server(answer: fn(&str) -> Vec<u8>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(16) {
            let Ok(mut stream) = stream else { continue };
            stream.set_read_timeout(Some(util::TIMEOUT)).unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            if reader.read_line(&mut request_line).is_err() {
                continue;
            }
            // Skip the rest of the head.
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let path = request_line.split(' ').nth(1).unwrap_or("").to_string();
            let _ = stream.write_all(&answer(&path));
        }
    });
    addr
}

/// Bodies framed by chunks (with extensions and trailers), by
/// `Content-Length`, and by the end of the connection are all counted right;
/// an interim 100 answer is skipped.
#[test]
fn every_body_framing_is_read() {
    let addr = std_server(|path| match path {
        "/chunked" => b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
              5\r\nhello\r\n1A;note=x\r\nabcdefghijklmnopqrstuvwxyz\r\n\
              0\r\nX-Trailer: yes\r\n\r\n"
            .to_vec(),
        "/length" => {
            let mut a = b"HTTP/1.1 100 Continue\r\n\r\n\
                          HTTP/1.1 201 Created\r\nContent-Length: 70000\r\n\r\n"
                .to_vec();
            a.extend(std::iter::repeat_n(b'z', 70_000));
            a
        }
        "/close" => b"HTTP/1.0 200 OK\r\n\r\nsome bytes until the end".to_vec(),
        "/empty" => b"HTTP/1.1 204 No Content\r\n\r\n".to_vec(),
        _ => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec(),
    });
    let urls: Vec<String> = ["/chunked", "/length", "/close", "/empty"]
        .iter()
        .map(|p| format!("http://{addr}{p}"))
        .collect();
    let args: Vec<&str> = urls.iter().map(String::as_str).collect();
    let (ok, lines) = http_get(&args);
    assert!(ok, "{lines:?}");
    for (url, want) in urls.iter().zip([
        "200 OK 31 bytes",
        "201 Created 70000 bytes",
        "200 OK 24 bytes",
        "204 No Content 0 bytes",
    ]) {
        let line = line_for(&lines, url);
        let squeezed = line.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(squeezed.starts_with(want), "{line:?}, wanted {want:?}");
    }
}

/// A body cut short, a refused connection, an https URL and a malformed
/// answer are each reported on their own line, and the exit status is 1;
/// the good URL among them still succeeds.
#[test]
fn failures_are_reported_per_url() {
    let addr = std_server(|path| match path {
        "/short" => b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this".to_vec(),
        "/good" => b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".to_vec(),
        _ => b"this is not HTTP\r\n\r\n".to_vec(),
    });
    // A port nothing listens on: bind one, then free it.
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let urls = [
        format!("http://{addr}/short"),
        format!("http://{closed}/"),
        "https://localhost/".to_string(),
        format!("http://{addr}/garbage"),
        format!("http://{addr}/good"),
    ];
    let args: Vec<&str> = urls.iter().map(String::as_str).collect();
    let (ok, lines) = http_get(&args);
    assert!(!ok, "{lines:?}");
    assert!(line_for(&lines, &urls[0]).contains("cut short"));
    assert!(line_for(&lines, &urls[1]).starts_with("error: "));
    assert!(line_for(&lines, &urls[2]).contains("https is not supported"));
    assert!(line_for(&lines, &urls[3]).contains("malformed"));
    assert!(line_for(&lines, &urls[4]).starts_with("200 OK"));
    assert!(
        lines.last().unwrap().contains("1 ok, 4 failed"),
        "{lines:?}"
    );
}

/// A server that never answers is given up on after `--timeout`.
#[test]
fn a_silent_server_times_out() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    // Accepts (the kernel does) and never answers; kept open for the test.
    let url = format!("http://{addr}/");
    let (ok, lines) = http_get(&["--timeout", "1", &url]);
    assert!(!ok);
    assert!(line_for(&lines, &url).contains("within 1 s"), "{lines:?}");
    drop(listener);
}
