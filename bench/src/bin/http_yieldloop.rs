//! HTTP/1.1 server on yieldloop: one scheduler thread, one task per
//! connection, running the `http_server` recipe's connection code
//! (`recipes/src/http.rs`: keep-alive, pipelining, `GET /`, `/sleep`).
//!
//! ```text
//! http_yieldloop --addr 127.0.0.1:PORT
//! ```

use std::io;
use std::rc::Rc;

use yieldloop::net::TcpListener;
use yieldloop_recipes::http::{serve_connection, Limits};

fn main() {
    let addr = yieldloop_bench::addr_arg("http_yieldloop");
    if let Err(e) = yieldloop::run(move || serve(&addr)) {
        eprintln!("http_yieldloop: {e}");
        std::process::exit(1);
    }
}

fn serve(addr: &str) -> io::Result<()> {
    let listener = TcpListener::bind(addr)?;
    let limits = Rc::new(Limits::default());
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                let limits = limits.clone();
                yieldloop::spawn(move || {
                    let _ = serve_connection(&stream, &limits);
                });
            }
            Err(e) => {
                eprintln!("http_yieldloop: accept: {e}");
                yieldloop::sleep(std::time::Duration::from_millis(10));
            }
        }
    }
}
