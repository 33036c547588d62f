//! Shared bits of the benchmark binaries.

/// Read buffer size of every echo server.
pub const BUF: usize = 4096;

/// Parses `--addr HOST:PORT` (the only argument of the echo servers).
pub fn addr_arg(prog: &str) -> String {
    let mut addr = "127.0.0.1:1235".to_string();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--addr" => match args.next() {
                Some(v) => addr = v,
                None => usage(prog),
            },
            _ => usage(prog),
        }
    }
    addr
}

fn usage(prog: &str) -> ! {
    eprintln!("usage: {prog} --addr HOST:PORT");
    std::process::exit(2);
}
