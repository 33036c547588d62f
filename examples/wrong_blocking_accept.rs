//! What goes wrong: a blocking call inside a task freezes the loop.
//!
//! ```text
//! cargo run --example wrong_blocking_accept               # std accept
//! cargo run --example wrong_blocking_accept -- net        # yieldloop::net
//! cargo run --example wrong_blocking_accept -- blocking   # spawn_blocking
//! cargo run --example wrong_blocking_accept -- --client-after-ms 500
//! ```
//!
//! A ticker task prints a line every 100 ms. Beside it, an acceptor task
//! waits for one connection, which a client thread makes after
//! `--client-after-ms` (1500 by default). With std's blocking
//! `TcpListener::accept` the whole thread waits in the kernel and the
//! ticker stops for as long; the slow-task watch reports the acceptor. With
//! `yieldloop::net::TcpListener`, or std's accept moved to the blocking
//! pool, only the acceptor waits and the ticks go on. The longest gap
//! between two ticks is printed at the end.

use std::cell::{Cell, RefCell};
use std::net::{SocketAddr, TcpStream};
use std::rc::Rc;
use std::time::{Duration, Instant};

use yieldloop::Builder;

mod args;
use args::Args;

fn main() {
    let mut args = Args::new("wrong_blocking_accept [wrong|net|blocking] [--client-after-ms N]");
    let client_after = Duration::from_millis(args.value_or("--client-after-ms", 1500));
    let mode = args.choice(&["wrong", "net", "blocking"]);
    args.finish();
    let gap = yieldloop::run(move || {
        let start = Instant::now();
        let ticks = Rc::new(RefCell::new(Vec::new()));
        let done = Rc::new(Cell::new(false));
        let ticker = ticker(start, ticks.clone(), done.clone());
        let acceptor = Builder::new()
            .name("acceptor")
            .spawn(move || {
                // A few ticks first, to show the rhythm.
                yieldloop::sleep(Duration::from_millis(250));
                let at = |what: &str| println!("{what} at {} ms", start.elapsed().as_millis());
                match mode {
                    "wrong" => accept_blocking(client_after, at),
                    "net" => accept_pausing(client_after, at),
                    _ => accept_on_pool(client_after, at),
                }
                yieldloop::sleep(Duration::from_millis(250));
                done.set(true);
            })
            .unwrap();
        acceptor.join().unwrap();
        ticker.join().unwrap();
        let ticks = ticks.take();
        ticks.windows(2).map(|w| w[1] - w[0]).max()
    });
    match gap {
        Some(gap) => println!("longest gap between ticks: {} ms", gap.as_millis()),
        None => println!("fewer than two ticks"),
    }
}

/// Prints a tick every 100 ms until `done`, noting when each came.
fn ticker(
    start: Instant,
    ticks: Rc<RefCell<Vec<Duration>>>,
    done: Rc<Cell<bool>>,
) -> yieldloop::JoinHandle<()> {
    yieldloop::spawn(move || {
        while !done.get() {
            let now = start.elapsed();
            ticks.borrow_mut().push(now);
            println!("tick at {} ms", now.as_millis());
            yieldloop::sleep(Duration::from_millis(100));
        }
    })
}

/// A plain thread that connects to `addr` after `delay`.
fn client(addr: SocketAddr, delay: Duration) {
    std::thread::spawn(move || {
        std::thread::sleep(delay);
        // The acceptor owns the result; a failed connect shows as a hang
        // the watchdog of the tests catches, so only report it here.
        if let Err(e) = TcpStream::connect(addr) {
            eprintln!("client: cannot connect to {addr}: {e}");
        }
    });
}

// ANCHOR: wrong
/// Wrong: std's `accept` blocks the thread until the client comes.
fn accept_blocking(client_after: Duration, at: impl Fn(&str)) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    client(listener.local_addr().unwrap(), client_after);
    at("acceptor: waiting (std accept)");
    let (_conn, _peer) = listener.accept().unwrap(); // the thread stops here
    at("acceptor: accepted");
}
// ANCHOR_END: wrong

// ANCHOR: net
/// yieldloop's listener: `accept` pauses the task, the ticker goes on.
fn accept_pausing(client_after: Duration, at: impl Fn(&str)) {
    let listener = yieldloop::net::TcpListener::bind("127.0.0.1:0").unwrap();
    client(listener.local_addr().unwrap(), client_after);
    at("acceptor: waiting (yieldloop accept)");
    let (_conn, _peer) = listener.accept().unwrap(); // only this task waits
    at("acceptor: accepted");
}
// ANCHOR_END: net

// ANCHOR: blocking
/// A blocking call that cannot be changed (here std's `accept` again) runs
/// on a blocking-pool thread; the task pauses in `join` meanwhile.
fn accept_on_pool(client_after: Duration, at: impl Fn(&str)) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    client(listener.local_addr().unwrap(), client_after);
    at("acceptor: waiting (std accept on the pool)");
    let accepted = yieldloop::spawn_blocking(move || listener.accept());
    let (_conn, _peer) = accepted.join().unwrap().unwrap();
    at("acceptor: accepted");
}
// ANCHOR_END: blocking
