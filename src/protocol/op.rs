//! The protocol between a task and its scheduler: what a task asks for when
//! it pauses ([`Op`]) and what the scheduler answers when it resumes it
//! ([`Resume`]).
//!
//! This is the generator model of `yield` and `send` made concrete. A task
//! calls [`suspend`](crate::raw::suspend) with an `Op`; its coroutine switches back
//! to the scheduler, which files the task under whatever the `Op` waits for.
//! When that happens, the scheduler resumes the coroutine, and `suspend`
//! returns the `Resume` value it was sent.
//!
//! Both types are plain data: they carry ids, deadlines and owned values,
//! never pointers into the task's stack, so nothing here outlives the pause.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::time::Instant;

use super::ids::{IoId, ParkToken, TaskId};

/// What a task asks the scheduler for when it pauses.
///
/// Each variant says what the scheduler does with the task and which
/// [`Resume`] value it sends back.
#[derive(Debug)]
#[non_exhaustive]
pub enum Op {
    /// Go to the back of the run queue and let every other ready task run
    /// once. Answered with [`Resume::Ready`] on the next turn of the loop.
    Yield,
    /// Go to the back of the run queue once the scheduler has next polled
    /// for I/O events, so that every task those events wake runs first:
    /// what a task whose [budget](crate::diag::DEFAULT_BUDGET) is spent
    /// does before its next operation (see
    /// [`consume_budget`](crate::raw::consume_budget)). Answered with
    /// [`Resume::Ready`]. Dearer than [`Op::Yield`], which may run again
    /// before the next poll: one poll per turn in which a task defers.
    Defer,
    /// Sleep until the given instant. The task is parked in the deadline heap
    /// and answered with [`Resume::Ready`] once `now >= deadline`, never
    /// earlier. A deadline already past makes this the same as [`Op::Yield`].
    Wait(Instant),
    /// Wait until the source may be readable (or has hung up or failed).
    /// Answered with [`Resume::Ready`]; the task must then retry its read,
    /// which may still report `WouldBlock` (readiness is a hint). With a
    /// deadline, answered with [`Resume::TimedOut`] if it passes first. A
    /// stale id is answered with [`Resume::Err`].
    ReadReady(IoId, Option<Instant>),
    /// Wait until the source may be writable (or has hung up or failed). The
    /// same answers as [`Op::ReadReady`]. A non-blocking `connect` finishes
    /// with this op.
    WriteReady(IoId, Option<Instant>),
    /// Wait for a connection on a listening socket and accept it. The
    /// scheduler performs the `accept` itself when the listener becomes
    /// readable and answers with [`Resume::Accepted`]; a failed accept (for
    /// example `EMFILE`) is answered with [`Resume::Err`]. With a deadline,
    /// answered with [`Resume::TimedOut`] if it passes first.
    Accept(IoId, Option<Instant>),
    /// Wait until the task ends, however it ends. Answered with
    /// [`Resume::Ready`] (at once if it has ended already, or if it is the
    /// calling task, which could never end while it waits); the outcome
    /// itself is collected from the [`JoinHandle`](crate::JoinHandle). With a
    /// deadline, answered with [`Resume::TimedOut`] if it passes first.
    Join(TaskId, Option<Instant>),
    /// Park until the [`ParkToken`] is unparked (answered
    /// with [`Resume::Ready`]) or the deadline passes ([`Resume::TimedOut`]).
    /// The building block of channels, mutexes and other waiting
    /// primitives; see [`park`](crate::raw::park). A token that does not belong to
    /// the calling task is answered with [`Resume::Err`].
    Park(ParkToken, Option<Instant>),
}

/// What the scheduler sends back when it resumes a task.
#[non_exhaustive]
pub enum Resume {
    /// What the task waited for has happened (or, for readiness, may have).
    Ready,
    /// A connection accepted for an [`Op::Accept`]: the socket, already in
    /// non-blocking mode, and the peer's address.
    Accepted(std::net::TcpStream, SocketAddr),
    /// The deadline given with the op passed before the op completed.
    TimedOut,
    /// The wait was abandoned because the task is being torn down; the task
    /// should return (or let its stack unwind) without waiting again. This is
    /// also what [`suspend`](crate::raw::suspend) answers, without pausing, when it
    /// is called while the task is unwinding from a panic.
    Cancelled,
    /// The op failed.
    Err(io::Error),
}

impl fmt::Debug for Resume {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Resume::Ready => f.write_str("Ready"),
            Resume::Accepted(_, addr) => write!(f, "Accepted({addr})"),
            Resume::TimedOut => f.write_str("TimedOut"),
            Resume::Cancelled => f.write_str("Cancelled"),
            Resume::Err(e) => write!(f, "Err({e})"),
        }
    }
}

impl Resume {
    /// Turns the answer to a readiness wait into an `io::Result`:
    /// `Ready` is `Ok`, `TimedOut` is [`io::ErrorKind::TimedOut`],
    /// `Cancelled` is [`io::ErrorKind::Interrupted`], `Err(e)` is `e`.
    pub fn into_io(self) -> io::Result<()> {
        match self {
            Resume::Ready => Ok(()),
            Resume::TimedOut => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "yieldloop: the operation timed out",
            )),
            Resume::Cancelled => Err(io::Error::new(
                io::ErrorKind::Interrupted,
                "yieldloop: the task is being cancelled",
            )),
            Resume::Err(e) => Err(e),
            Resume::Accepted(..) => Err(io::Error::other(
                "yieldloop: unexpected Accepted answer to a readiness wait",
            )),
        }
    }
}
