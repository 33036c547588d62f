//! HTTP/2 on yieldloop through hyper: h2c with prior knowledge and
//! HTTP/1.1 on one listener, HTTP/2 over TLS chosen by ALPN, answered to
//! curl (with nghttp2) and to hyper's HTTP/2 client on yieldloop; many
//! streams overlapped on one connection and one scheduler beside a ticker.

mod util;

use std::cell::Cell;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::rc::Rc;
use std::time::{Duration, Instant};

use yieldloop::net::TcpListener;
use yieldloop_http::hyper::service::service_fn;
use yieldloop_http::with_hyper::{serve_auto, serve_tls, Http2Client};
use yieldloop_http::yieldloop_rustls::rustls::pki_types::PrivatePkcs8KeyDer;
use yieldloop_http::yieldloop_rustls::{TlsAcceptor, TlsConnector};
use yieldloop_recipes::demo::hyper::demo;

/// A certificate for localhost: the acceptor presenting it, and the PEM
/// file of the certificate (for curl and the connector to trust).
fn certificate() -> (TlsAcceptor, PathBuf) {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let key = PrivatePkcs8KeyDer::from(made.signing_key.serialize_der());
    let acceptor =
        TlsAcceptor::from_single_cert(vec![made.cert.der().clone()], key.into()).unwrap();
    let pem = util::scratch("cert.pem");
    std::fs::write(&pem, made.cert.pem()).unwrap();
    (acceptor, pem)
}

/// Which server to run: h2c and HTTP/1.1 by the first bytes, or TLS.
#[derive(Clone)]
enum Mode {
    Cleartext,
    Tls(TlsAcceptor),
}

/// Runs the demo service on a yieldloop run of this thread, and `client`
/// on a thread of the blocking pool; ends when the client is done.
fn with_server<T: Send + 'static>(
    mode: Mode,
    client: impl FnOnce(SocketAddr) -> T + Send + 'static,
) -> T {
    yieldloop::run(move || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        yieldloop::spawn(move || match mode {
            Mode::Cleartext => serve_auto(listener, service_fn(demo)),
            Mode::Tls(acceptor) => serve_tls(listener, acceptor, service_fn(demo)),
        });
        yieldloop::spawn_blocking(move || client(addr))
            .join()
            .expect("the client")
    })
}

/// Whether curl is installed; if not, says so for a skipped test.
fn have_curl() -> bool {
    let ok = Command::new("curl").arg("--version").output().is_ok();
    if !ok {
        eprintln!("skipping: curl is not installed (install the curl package)");
    }
    ok
}

/// Runs curl with `args`; returns its standard output, failing the test
/// (with its standard error) if it fails.
fn curl(args: &[&str]) -> String {
    let out = Command::new("curl")
        .args(["-s", "-S", "--max-time", "30"])
        .args(args)
        .output()
        .expect("running curl");
    assert!(
        out.status.success(),
        "curl {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// curl with prior knowledge speaks HTTP/2 in cleartext (h2c) and gets
/// the answers; plain HTTP/1.1 on the same listener is answered in
/// HTTP/1.1.
///
/// One URL per curl: curl 7.88.1 fails ("Error in the HTTP2 framing
/// layer") before sending a second request on a reused prior-knowledge
/// connection, while nghttp sends both on one connection to this server.
#[test]
fn curl_h2c_prior_knowledge_and_http1_on_one_listener() {
    if !have_curl() {
        return;
    }
    let (h2, h1) = with_server(Mode::Cleartext, |addr| {
        let mut h2 = String::new();
        for path in ["/", "/sleep?ms=10"] {
            h2 += &curl(&[
                "--http2-prior-knowledge",
                "-w",
                "[%{http_version} %{response_code}]\n",
                &format!("http://{addr}{path}"),
            ]);
        }
        let h1 = curl(&[
            "--http1.1",
            "-w",
            "[%{http_version} %{response_code}]",
            &format!("http://{addr}/"),
        ]);
        (h2, h1)
    });
    assert_eq!(h2, "Hello from yieldloop!\n[2 200]\nslept 10 ms\n[2 200]\n");
    assert_eq!(h1, "Hello from yieldloop!\n[1.1 200]");
}

/// curl over TLS asks for h2 by ALPN and gets HTTP/2; asked for
/// HTTP/1.1, it gets HTTP/1.1 from the same server.
#[test]
fn curl_http2_over_tls_by_alpn() {
    if !have_curl() {
        return;
    }
    let (acceptor, pem) = certificate();
    let (h2, h1) = with_server(Mode::Tls(acceptor), move |addr| {
        let url = format!("https://localhost:{}/sleep?ms=5", addr.port());
        let resolve = format!("localhost:{}:127.0.0.1", addr.port());
        let cacert = pem.to_str().unwrap();
        let h2 = curl(&[
            "--http2",
            "--resolve",
            &resolve,
            "--cacert",
            cacert,
            "-w",
            "[%{http_version} %{response_code}]",
            &url,
            &url,
        ]);
        let h1 = curl(&[
            "--http1.1",
            "--resolve",
            &resolve,
            "--cacert",
            cacert,
            "-w",
            "[%{http_version} %{response_code}]",
            &url,
        ]);
        (h2, h1)
    });
    // Two requests on one connection.
    assert_eq!(h2, "slept 5 ms\n[2 200]slept 5 ms\n[2 200]");
    assert_eq!(h1, "slept 5 ms\n[1.1 200]");
}

/// Runs `streams` requests of `/sleep?ms=50` at once, each from a task of
/// its own, on one HTTP/2 connection (`client`), with a ticker task
/// beside them; returns how long they took and the ticks.
fn overlapped(client: &Http2Client, streams: usize) -> (Duration, u32) {
    let ticks = Rc::new(Cell::new(0u32));
    let ticker = {
        let ticks = ticks.clone();
        yieldloop::spawn(move || loop {
            yieldloop::sleep(Duration::from_millis(5));
            ticks.set(ticks.get() + 1);
        })
    };
    let start = Instant::now();
    let tasks: Vec<_> = (0..streams)
        .map(|_| {
            let client = client.clone();
            yieldloop::spawn(move || {
                let resp = client.get("/sleep?ms=50").expect("a request");
                assert_eq!(resp.status(), 200);
                assert_eq!(resp.body().as_ref(), b"slept 50 ms\n");
            })
        })
        .collect();
    for t in tasks {
        t.join().expect("a request task");
    }
    let took = start.elapsed();
    ticker.cancel();
    (took, ticks.get())
}

/// hyper's HTTP/2 client on yieldloop, h2c: 200 requests that each sleep
/// 50 ms on the server travel as concurrent streams of one connection,
/// client and server on one scheduler, and take about 50 ms, not 10 s; the
/// ticker ticks meanwhile.
#[test]
fn hyper_http2_client_overlaps_streams_on_one_scheduler() {
    yieldloop::run(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = yieldloop::spawn(move || serve_auto(listener, service_fn(demo)));
        let client = Http2Client::connect(&format!("http://{addr}")).unwrap();
        let (took, ticks) = overlapped(&client, 200);
        assert!(took < Duration::from_secs(3), "200 streams took {took:?}");
        assert!(ticks >= 2, "the ticker ticked {ticks} times in {took:?}");
        let resp = client.get("/nope").unwrap();
        assert_eq!(resp.status(), 404);
        assert_eq!(resp.version(), yieldloop_http::hyper::Version::HTTP_2);
        server.cancel();
    });
}

/// The same over TLS, HTTP/2 agreed by ALPN; a client that trusts
/// another certificate is refused, and the server goes on.
#[test]
fn hyper_http2_client_over_tls() {
    let (acceptor, pem) = certificate();
    let connector = TlsConnector::from_pem_file(&pem).unwrap();
    let (_, other_pem) = certificate();
    let stranger = TlsConnector::from_pem_file(&other_pem).unwrap();
    yieldloop::run(move || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = yieldloop::spawn(move || serve_tls(listener, acceptor, service_fn(demo)));
        let url = format!("https://localhost:{port}");
        let refused = Http2Client::connect_tls(&url, &stranger).unwrap_err();
        assert!(refused.to_string().contains("certificate"), "{refused}");
        let client = Http2Client::connect_tls(&url, &connector).unwrap();
        let (took, ticks) = overlapped(&client, 100);
        assert!(took < Duration::from_secs(3), "100 streams took {took:?}");
        assert!(ticks >= 2, "the ticker ticked {ticks} times in {took:?}");
        server.cancel();
    });
}

/// Prior knowledge against a server that speaks only HTTP/1.1 fails
/// with an error, not a hang.
#[test]
fn http2_client_against_an_http1_only_server_fails() {
    yieldloop::run(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server =
            yieldloop::spawn(move || yieldloop_http::with_hyper::serve(listener, service_fn(demo)));
        let result = yieldloop::timeout(util::TIMEOUT, || {
            Http2Client::connect(&format!("http://{addr}")).and_then(|c| c.get("/"))
        })
        .expect("no answer within the timeout");
        assert!(result.is_err(), "{result:?}");
        server.cancel();
    });
}
