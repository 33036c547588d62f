//! The echo server behind TLS: one task per connection, each running a
//! rustls session over a yieldloop `TcpStream` with plain `Read`/`Write`
//! calls, no async anywhere.
//!
//! ```text
//! cargo run --release --example tls_echo                   # 127.0.0.1:1237, a fresh certificate
//! cargo run --release --example tls_echo -- --write-cert /tmp/echo-cert.pem
//! openssl s_client -connect 127.0.0.1:1237 -CAfile /tmp/echo-cert.pem -quiet   # then type lines
//! ```
//!
//! Options:
//!
//! - `--addr HOST:PORT` (default 127.0.0.1:1237);
//! - `--cert PATH --key PATH`: the certificate chain and private key, PEM
//!   files; without them a self-signed certificate for `localhost` and
//!   `127.0.0.1` is made at start;
//! - `--write-cert PATH`: write the certificate in use (PEM) there, for
//!   clients to trust;
//! - `--idle-timeout SECS`: close a connection silent for that long
//!   (default 300; 0 = never);
//! - `--quiet`: no per-connection log lines.
//!
//! yieldloop-rustls does the work: its `TlsAcceptor` runs each handshake
//! (within the idle timeout), and the `TlsStream` it hands back drives the
//! TLS session in each `read` and `write`, whose socket reads and writes
//! pause only the connection's task. A client that sends something other
//! than TLS fails its handshake and loses its own connection; the others go
//! on.

use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Duration;

use yieldloop::net::{TcpListener, TcpStream};
use yieldloop_rustls::rustls::pki_types::PrivatePkcs8KeyDer;
use yieldloop_rustls::{TlsAcceptor, DEFAULT_HANDSHAKE_TIMEOUT};

#[path = "../../examples/args/mod.rs"]
mod args;
use args::Args;

/// Command-line settings.
#[derive(Debug)]
struct Config {
    addr: String,
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
    write_cert: Option<PathBuf>,
    idle: Option<Duration>,
    quiet: bool,
}

fn main() {
    let mut args = Args::new(
        "tls_echo [--addr HOST:PORT] [--cert PEM --key PEM] [--write-cert PATH] \
         [--idle-timeout SECS] [--quiet]",
    );
    let config = Config {
        addr: args.value_or("--addr", "127.0.0.1:1237".into()),
        cert: args.value("--cert"),
        key: args.value("--key"),
        write_cert: args.value("--write-cert"),
        // 0 seconds: no limit.
        idle: Some(Duration::from_secs(args.value_or("--idle-timeout", 300)))
            .filter(|idle| !idle.is_zero()),
        quiet: args.flag("--quiet"),
    };
    args.finish();
    if config.cert.is_some() != config.key.is_some() {
        args.fail("--cert and --key go together");
    }
    if let Err(e) = yieldloop::run(move || serve(&config)) {
        eprintln!("tls_echo: {e}");
        std::process::exit(1);
    }
}

/// Builds the TLS configuration, binds, and accepts until killed.
fn serve(config: &Config) -> io::Result<()> {
    let tls = tls_acceptor(config)?;
    let listener = TcpListener::bind(config.addr.as_str())?;
    eprintln!("tls_echo: listening on {}", listener.local_addr()?);
    let quiet = config.quiet;
    let idle = config.idle;
    // Shared by this thread's tasks only: an `Rc` is enough.
    let live = Rc::new(std::cell::Cell::new(0usize));
    loop {
        let (stream, peer) = match listener.accept() {
            Ok(c) => c,
            Err(e) => {
                // Out of descriptors, or a connection aborted before we got
                // it: wait a moment and go on.
                eprintln!("tls_echo: accept failed: {e}; retrying in 100 ms");
                yieldloop::sleep(Duration::from_millis(100));
                continue;
            }
        };
        let (tls, live) = (tls.clone(), live.clone());
        live.set(live.get() + 1);
        if !quiet {
            eprintln!("open  {peer} (live: {})", live.get());
        }
        yieldloop::spawn(move || {
            let result = echo(stream, tls, idle);
            live.set(live.get() - 1);
            if !quiet {
                match result {
                    Ok(n) => eprintln!("close {peer} after {n} bytes (live: {})", live.get()),
                    Err(e) => eprintln!("close {peer}: {e} (live: {})", live.get()),
                }
            }
        });
    }
}

/// The server's certificate and key: from `--cert`/`--key`, or made now.
/// Handshakes get the idle timeout (or the default deadline without one).
fn tls_acceptor(config: &Config) -> io::Result<TlsAcceptor> {
    // The certificate chain, its PEM text (for --write-cert), the key.
    let (chain, pem, key) = match (&config.cert, &config.key) {
        (Some(cert), Some(key)) => {
            let chain = yieldloop_rustls::load_certs(cert)?;
            let pem = std::fs::read_to_string(cert)?;
            (chain, pem, yieldloop_rustls::load_key(key)?)
        }
        _ => {
            let made = rcgen::generate_simple_self_signed(vec![
                "localhost".to_string(),
                "127.0.0.1".to_string(),
            ])
            .map_err(io::Error::other)?;
            eprintln!("tls_echo: made a self-signed certificate for localhost and 127.0.0.1");
            let key = PrivatePkcs8KeyDer::from(made.signing_key.serialize_der());
            (vec![made.cert.der().clone()], made.cert.pem(), key.into())
        }
    };
    if let Some(path) = &config.write_cert {
        std::fs::write(path, pem)?;
    }
    let deadline = config.idle.unwrap_or(DEFAULT_HANDSHAKE_TIMEOUT);
    Ok(TlsAcceptor::from_single_cert(chain, key)?.handshake_timeout(Some(deadline)))
}

/// The read buffer: one TLS record's worth of plaintext.
const BUF_SIZE: usize = 16 * 1024;

/// Runs one TLS session: the handshake, then every decrypted byte is
/// encrypted and sent back. Returns the bytes echoed.
fn echo(stream: TcpStream, acceptor: TlsAcceptor, idle: Option<Duration>) -> io::Result<u64> {
    stream.set_nodelay(true)?;
    stream.set_read_timeout(idle)?;
    stream.set_write_timeout(idle)?;
    let mut tls = acceptor.accept(stream)?;
    let mut buf = vec![0u8; BUF_SIZE];
    let mut total = 0u64;
    loop {
        let n = match tls.read(&mut buf) {
            // The client sent close_notify: a clean end.
            Ok(0) => break,
            Ok(n) => n,
            // The client closed the TCP connection without close_notify.
            // Nothing was cut that we could still echo, so end quietly.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(e),
        };
        tls.write_all(&buf[..n])?;
        tls.flush()?;
        total += n as u64;
    }
    // Say goodbye in TLS, then in TCP.
    let _ = tls.shutdown();
    Ok(total)
}
