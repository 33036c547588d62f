//! Reading a child's standard output and error to their ends at the same
//! time, in one task.
//!
//! Reading one pipe to its end and then the other can stall for good: the
//! child blocks writing to the full pipe nobody reads, and never closes the
//! one being read. So each turn drains both pipes as far as they go, and
//! the task then parks until either becomes readable (the select of
//! [`ParkToken::watch_io`](crate::raw::ParkToken::watch_io)), with no
//! second task to clean up after.

use std::io;

use super::pipes::{ChildStderr, ChildStdout};
use crate::protocol::IoId;
use crate::task::park::{park, park_token};

/// How much room each read is given.
const CHUNK: usize = 32 * 1024;

/// A pipe end [`read_both`] reads.
trait Source {
    fn try_read(&self, buf: &mut [u8]) -> io::Result<usize>;
    fn io_id(&self) -> IoId;
}

impl Source for ChildStdout {
    fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        ChildStdout::try_read(self, buf)
    }

    fn io_id(&self) -> IoId {
        ChildStdout::io_id(self)
    }
}

impl Source for ChildStderr {
    fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        ChildStderr::try_read(self, buf)
    }

    fn io_id(&self) -> IoId {
        ChildStderr::io_id(self)
    }
}

/// Reads `out` and `err` (either may be absent) to their ends, both at
/// once, pausing the task while neither has data.
///
/// # Errors
///
/// A read's error, or the task being cancelled.
pub(crate) fn read_both(
    mut out: Option<ChildStdout>,
    mut err: Option<ChildStderr>,
) -> io::Result<(Vec<u8>, Vec<u8>)> {
    let (mut out_buf, mut err_buf) = (Vec::new(), Vec::new());
    loop {
        let mut empty = Vec::with_capacity(2);
        drain(&mut out, &mut out_buf, &mut empty)?;
        drain(&mut err, &mut err_buf, &mut empty)?;
        if empty.is_empty() {
            return Ok((out_buf, err_buf));
        }
        // Both pipes were read until they said `WouldBlock`, so data
        // arriving from here on raises a new event, which the waits filed
        // below (before the scheduler polls again) will see.
        let token = park_token();
        for id in empty {
            token.watch_io(id, false)?;
        }
        park(token, None).into_io()?;
    }
}

/// Reads `pipe` until it is empty (pushing its id on `empty`) or at its end
/// (then it is closed and set to `None`).
fn drain<S: Source>(
    pipe: &mut Option<S>,
    buf: &mut Vec<u8>,
    empty: &mut Vec<IoId>,
) -> io::Result<()> {
    let Some(p) = pipe else { return Ok(()) };
    loop {
        let len = buf.len();
        buf.resize(len + CHUNK, 0);
        let r = p.try_read(&mut buf[len..]);
        buf.truncate(len + *r.as_ref().unwrap_or(&0));
        match r {
            Ok(0) => {
                *pipe = None;
                return Ok(());
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                empty.push(p.io_id());
                return Ok(());
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}
