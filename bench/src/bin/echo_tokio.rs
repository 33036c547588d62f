//! Echo server on tokio's current-thread runtime, one task per connection.
//!
//! ```text
//! echo_tokio --addr 127.0.0.1:PORT
//! ```

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

fn main() {
    let addr = yieldloop_bench::addr_arg("echo_tokio");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    if let Err(e) = rt.block_on(serve(&addr)) {
        eprintln!("echo_tokio: {e}");
        std::process::exit(1);
    }
}

async fn serve(addr: &str) -> std::io::Result<()> {
    let listener = TcpListener::bind(addr).await?;
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(async move {
                    let _ = echo(stream).await;
                });
            }
            Err(e) => {
                eprintln!("echo_tokio: accept: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        }
    }
}

async fn echo(mut stream: TcpStream) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut buf = [0u8; yieldloop_bench::BUF];
    loop {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        stream.write_all(&buf[..n]).await?;
    }
}
