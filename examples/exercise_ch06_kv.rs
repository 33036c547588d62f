//! Chapter 6 exercise: a line-based key-value server.
//!
//! ```text
//! cargo run --example exercise_ch06_kv                      # serves 127.0.0.1:1236
//! nc 127.0.0.1 1236                                         # then: SET a 1, GET a, QUIT
//! cargo run --example exercise_ch06_kv -- --addr 127.0.0.1:0 --max-clients 2
//! ```
//!
//! The echo server of chapter 6 with a protocol: each line is a command,
//! answered with one line. `SET key value` answers `OK`, `GET key` answers
//! `VALUE value` or `NONE`, `DEL key` answers `OK` or `NONE`, `QUIT` closes
//! the connection, anything else gets `ERR ...` and the connection goes on.
//! One task per connection reads lines with `BufReader::read_line`, pausing
//! inside it; all connections share one table through an `Rc<RefCell>`,
//! safe without a lock because the tasks share one thread and no borrow is
//! held across a pause. The first stderr line is `listening on ADDR`; with
//! `--max-clients N` the server stops after N connections have closed.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Write};
use std::rc::Rc;

use yieldloop::net::{TcpListener, TcpStream};

mod args;
use args::Args;

type Table = Rc<RefCell<HashMap<String, String>>>;

/// The answer to one command line, or `None` for `QUIT`.
fn answer(line: &str, table: &Table) -> Option<String> {
    let mut words = line.split_whitespace();
    let reply = match (words.next(), words.next(), words.next()) {
        (Some("SET"), Some(key), Some(_)) => {
            // The value is the rest of the line after the key, spaces and all.
            let value = line
                .trim_end()
                .splitn(3, ' ')
                .nth(2)
                .unwrap_or("")
                .trim_start();
            table.borrow_mut().insert(key.into(), value.into());
            "OK".into()
        }
        (Some("GET"), Some(key), None) => match table.borrow().get(key) {
            Some(value) => format!("VALUE {value}"),
            None => "NONE".into(),
        },
        (Some("DEL"), Some(key), None) => match table.borrow_mut().remove(key) {
            Some(_) => "OK".into(),
            None => "NONE".into(),
        },
        (Some("QUIT"), None, None) => return None,
        _ => format!("ERR unknown command {:?}", line.trim_end()),
    };
    Some(reply + "\n")
}

/// One connection: a command per line until `QUIT` or end of stream.
fn serve(stream: TcpStream, table: Table) -> io::Result<usize> {
    let mut reader = BufReader::new(&stream);
    let (mut line, mut commands) = (String::new(), 0);
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Ok(commands); // the client hung up
        }
        commands += 1;
        match answer(&line, &table) {
            Some(reply) => (&stream).write_all(reply.as_bytes())?, // may pause
            None => return Ok(commands),
        }
    }
}

fn main() -> io::Result<()> {
    let mut args = Args::new("exercise_ch06_kv [--addr HOST:PORT] [--max-clients N]");
    let addr: String = args.value_or("--addr", "127.0.0.1:1236".into());
    // 0 is no limit, as without the option.
    let max_clients: Option<usize> = args.value("--max-clients").filter(|&n| n > 0);
    args.finish();
    yieldloop::run(move || {
        let listener = TcpListener::bind(&addr)?;
        eprintln!("listening on {}", listener.local_addr()?);
        let table: Table = Rc::default();
        let gone = Rc::new(Cell::new(0));
        let mut conns = Vec::new();
        for id in 1.. {
            if max_clients.is_some_and(|max| id > max) {
                break;
            }
            let (stream, peer) = listener.accept()?;
            let (table, gone) = (table.clone(), gone.clone());
            conns.push(yieldloop::spawn(move || {
                let outcome = serve(stream, table);
                gone.set(gone.get() + 1);
                match outcome {
                    Ok(n) => eprintln!("client {id} ({peer}) left after {n} commands"),
                    Err(e) => eprintln!("client {id} ({peer}) failed: {e}"),
                }
            }));
        }
        for conn in conns {
            let _ = conn.join();
        }
        eprintln!(
            "served {} clients, {} keys stored",
            gone.get(),
            table.borrow().len()
        );
        Ok(())
    })
}
