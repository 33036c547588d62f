//! A pool of one's own: plain TCP connections to a small line server that
//! this program starts itself, shared by 20 tasks through a pool of at most
//! 4. Each task checks a connection out, asks the server for the time it
//! took to answer, and gives the connection back by dropping its guard;
//! the tasks that find every connection taken pause until one comes back.
//!
//! ```text
//! cargo run --example counted
//! ```

use std::io::{self, BufRead, BufReader, Write};
use std::time::Duration;

use yieldloop::net::{TcpListener, TcpStream};
use yieldloop_pool::{CheckoutTimeout, Manage, PoolConfig};

/// How to open, check and give up on a connection to `addr`.
#[derive(Clone, Debug)]
struct Lines {
    addr: std::net::SocketAddr,
}

/// A connection: the stream, and whether a call on it failed part-way.
struct Conn {
    reader: BufReader<TcpStream>,
    broken: bool,
}

impl Manage for Lines {
    type Conn = Conn;
    type Error = io::Error;

    fn connect(&self) -> io::Result<Conn> {
        println!("opening a connection");
        let stream = TcpStream::connect(self.addr)?;
        Ok(Conn {
            reader: BufReader::new(stream),
            broken: false,
        })
    }

    fn is_broken(&self, conn: &Conn) -> bool {
        conn.broken
    }

    fn checkout_timed_out(&self, timeout: CheckoutTimeout) -> io::Error {
        timeout.into()
    }
}

/// One question and its answer on a pooled connection.
fn ask(conn: &mut Conn, question: &str) -> io::Result<String> {
    let result = (|| {
        conn.reader
            .get_mut()
            .write_all(format!("{question}\n").as_bytes())?;
        let mut line = String::new();
        conn.reader.read_line(&mut line)?;
        Ok(line.trim_end().to_string())
    })();
    // A failed call may leave half an answer behind: never reuse it.
    conn.broken |= result.is_err();
    result
}

/// The server: answers each line with the line and how long it waited.
fn serve(listener: TcpListener) {
    loop {
        let Ok((stream, _)) = listener.accept() else {
            return;
        };
        yieldloop::spawn(move || {
            let mut reader = BufReader::new(&stream);
            let mut line = String::new();
            while matches!(reader.read_line(&mut line), Ok(n) if n > 0) {
                yieldloop::sleep(Duration::from_millis(20));
                let answer = format!("{} after 20 ms\n", line.trim_end());
                if (&stream).write_all(answer.as_bytes()).is_err() {
                    return;
                }
                line.clear();
            }
        });
    }
}

fn main() -> io::Result<()> {
    yieldloop::run(|| {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        yieldloop::spawn(move || serve(listener));
        let config = PoolConfig::new(Lines { addr }).max_size(4);
        let tasks: Vec<_> = (0..20)
            .map(|i| {
                let pool = config.pool();
                yieldloop::spawn(move || -> io::Result<String> {
                    let mut conn = pool.get()?;
                    ask(&mut conn, &format!("task {i}"))
                })
            })
            .collect();
        for task in tasks {
            println!("{}", task.join().expect("a task panicked")?);
        }
        Ok(())
    })
}
