//! Chapter 12 exercise: a doorbell rung by another thread, a descriptor
//! that yieldloop did not open, waited on with `io::PausingIo`.
//!
//! ```text
//! cargo run --example exercise_ch12_doorbell
//! cargo run --example exercise_ch12_doorbell -- --rings 10 --interval-ms 50
//! cargo run --example exercise_ch12_doorbell -- --blocking
//! ```
//!
//! A plain OS thread, standing in for a C library's worker or any code
//! outside the loop, rings a bell `--rings` times (5), `--interval-ms` (20)
//! apart, by writing one byte into a pipe, and closes its end when done.
//! The main task reads the other end until the pipe is closed, while a
//! ticker task sleeps 1 ms at a time beside it. The read end is a raw
//! descriptor from `libc::pipe`, made into a `File` and handed to
//! `PausingIo`, which makes it non-blocking and registers it with the
//! scheduler's reactor: each read that finds the pipe empty pauses the
//! main task only, so the ticker keeps ticking.
//!
//! With `--blocking` the same `File` is read as it is, in blocking mode:
//! every read stops the whole thread until the next ring, the ticker never
//! gets a turn while the bell is awaited, and it reports 0 ticks. This is
//! what any library that reads its own descriptors with blocking calls
//! does to the loop.
//!
//! One line per ring, then `rings: N`, then the ticker's count and longest
//! gap while the bell was awaited. (On Linux an `eventfd` would serve as
//! the bell just as well: it is read the same way, eight bytes at a time.)

use std::cell::Cell;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::rc::Rc;
use std::time::{Duration, Instant};

use yieldloop::io::PausingIo;

mod args;
use args::Args;

fn main() -> io::Result<()> {
    let mut args = Args::new("exercise_ch12_doorbell [--rings N] [--interval-ms MS] [--blocking]");
    let rings: u32 = args.value_or("--rings", 5);
    let interval_ms: u64 = args.value_or("--interval-ms", 20);
    let blocking = args.flag("--blocking");
    args.finish();

    let (bell, ringer) = pipe()?;
    yieldloop::run(move || -> io::Result<()> {
        // The ringer: an OS thread, outside the loop, with a blocking pipe
        // end of its own. Dropping the end at the close is the last ring.
        let interval = Duration::from_millis(interval_ms);
        let ringer = std::thread::spawn(move || -> io::Result<()> {
            let mut end = File::from(ringer);
            for _ in 0..rings {
                std::thread::sleep(interval);
                end.write_all(b"!")?;
            }
            Ok(())
        });

        let stop = Rc::new(Cell::new(false));
        let ticker = {
            let stop = stop.clone();
            yieldloop::spawn(move || {
                let (mut ticks, mut longest) = (0u32, Duration::ZERO);
                let mut last = Instant::now();
                // Bounded: at most 60 s of ticks, whatever happens.
                while !stop.get() && ticks < 60_000 {
                    yieldloop::sleep(Duration::from_millis(1));
                    ticks += 1;
                    longest = longest.max(last.elapsed());
                    last = Instant::now();
                }
                (ticks, longest)
            })
        };

        let file = File::from(bell);
        let start = Instant::now();
        let heard = if blocking {
            listen(&mut &file, start)?
        } else {
            // Non-blocking from here on, registered with this thread's
            // reactor; `&PausingIo<File>` reads like the `File` did.
            let bell = PausingIo::new(file)?;
            listen(&mut &bell, start)?
        };
        stop.set(true);
        let (ticks, longest) = ticker.join().expect("the ticker panicked");
        ringer.join().expect("the ringer panicked")?;
        println!("rings: {heard}");
        println!(
            "ticker while waiting: {ticks} ticks, longest gap {} ms",
            longest.as_millis()
        );
        Ok(())
    })
}

/// Reads the bell until its other end is closed, printing each ring;
/// returns how many there were.
fn listen(bell: &mut impl Read, start: Instant) -> io::Result<u32> {
    let mut heard = 0;
    let mut buf = [0u8; 64];
    loop {
        let n = bell.read(&mut buf)?;
        if n == 0 {
            return Ok(heard);
        }
        for _ in 0..n {
            heard += 1;
            println!("ring {heard} at {} ms", start.elapsed().as_millis());
        }
    }
}

/// A pipe, as `(read end, write end)`.
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `pipe` writes two descriptors into the array it is given,
    // which has room for exactly two.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } == -1 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just opened by `pipe` and nothing else
    // owns them.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}
