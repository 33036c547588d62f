//! A TLS echo server and a hundred clients in one thread: every handshake,
//! read and write pauses only its own task, and a ticker task keeps
//! ticking beside them.
//!
//! ```text
//! cargo run -p yieldloop-rustls --example tls_pair
//! ```
//!
//! prints, for instance:
//!
//! ```text
//! 100 clients had their lines echoed over TLS 1.3 in 61 ms; the ticker ticked 12 times meanwhile
//! ```

use std::cell::Cell;
use std::io::{self, BufRead, BufReader, Write};
use std::rc::Rc;
use std::time::{Duration, Instant};

use yieldloop::net::{TcpListener, TcpStream};
use yieldloop_rustls::rustls::pki_types::PrivatePkcs8KeyDer;
use yieldloop_rustls::rustls::RootCertStore;
use yieldloop_rustls::{TlsAcceptor, TlsConnector};

const CLIENTS: usize = 100;

fn main() -> io::Result<()> {
    // A self-signed certificate for localhost, trusted by the clients.
    let made =
        rcgen::generate_simple_self_signed(vec!["localhost".into()]).map_err(io::Error::other)?;
    let key = PrivatePkcs8KeyDer::from(made.signing_key.serialize_der());
    let acceptor = TlsAcceptor::from_single_cert(vec![made.cert.der().clone()], key.into())?
        .handshake_timeout(Some(Duration::from_secs(5)));
    let mut roots = RootCertStore::empty();
    roots
        .add(made.cert.der().clone())
        .map_err(io::Error::other)?;
    let connector = TlsConnector::with_roots(roots);

    yieldloop::run(move || -> io::Result<()> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        // The server: one task per connection, each echoing lines.
        yieldloop::spawn(move || loop {
            let Ok((stream, _)) = listener.accept() else {
                continue;
            };
            let acceptor = acceptor.clone();
            yieldloop::spawn(move || -> io::Result<()> {
                let tls = acceptor.accept(stream)?;
                let mut lines = BufReader::new(tls);
                let mut line = String::new();
                while lines.read_line(&mut line)? > 0 {
                    lines.get_mut().write_all(line.as_bytes())?;
                    line.clear();
                }
                Ok(())
            });
        });
        // The ticker: it ticks every 5 ms whatever the others wait for.
        let ticks = Rc::new(Cell::new(0u32));
        let ticker = {
            let ticks = ticks.clone();
            yieldloop::spawn(move || loop {
                yieldloop::sleep(Duration::from_millis(5));
                ticks.set(ticks.get() + 1);
            })
        };
        let start = Instant::now();
        let clients: Vec<_> = (0..CLIENTS)
            .map(|i| {
                let connector = connector.clone();
                yieldloop::spawn(move || -> io::Result<String> {
                    let tls = connector.connect("localhost", TcpStream::connect(addr)?)?;
                    let version = format!("{:?}", tls.session().protocol_version());
                    let mut lines = BufReader::new(tls);
                    let sent = format!("line {i}\n");
                    lines.get_mut().write_all(sent.as_bytes())?;
                    let mut back = String::new();
                    lines.read_line(&mut back)?;
                    assert_eq!(back, sent);
                    Ok(version)
                })
            })
            .collect();
        let mut version = String::new();
        for c in clients {
            version = c.join().expect("a client panicked")?;
        }
        let took = start.elapsed();
        ticker.cancel();
        let version = version
            .replace("Some(TLSv1_3)", "TLS 1.3")
            .replace("Some(TLSv1_2)", "TLS 1.2");
        println!(
            "{CLIENTS} clients had their lines echoed over {version} in {} ms; the ticker ticked {} times meanwhile",
            took.as_millis(),
            ticks.get()
        );
        Ok(())
    })
}
