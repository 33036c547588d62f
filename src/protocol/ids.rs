//! The names the layers above pass around: which task, which pause of a
//! task, which socket, which scheduler. Plain `Copy` data, no logic beyond
//! formatting.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

/// Identifies a task on its scheduler.
///
/// Ids are never reused within one [`run`](crate::run): the serial number
/// grows with every spawn, so an id held after its task ended cannot name a
/// newer task that happens to occupy the same table slot.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TaskId {
    /// Slot in the scheduler's task table.
    pub(crate) key: usize,
    /// Spawn serial number; tells apart the tasks that used the same slot.
    pub(crate) serial: u64,
}

impl TaskId {
    /// The task's serial number: 1 for the main task, then one more for each
    /// task spawned on this scheduler.
    pub fn as_u64(self) -> u64 {
        self.serial
    }
}

impl fmt::Debug for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TaskId({})", self.serial)
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.serial)
    }
}

/// How messages for users name a task: `task 'conn-7' (id 12)` when it was
/// given a name, `task 12` when not. The panic message of a task, the
/// slow-task warning and the stuck-task report all use it, so one task reads
/// the same everywhere.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TaskLabel<'a> {
    /// The task's serial number (see [`TaskId::as_u64`]).
    pub(crate) serial: u64,
    /// The name given with [`Builder::name`](crate::Builder::name), if any.
    pub(crate) name: Option<&'a str>,
}

impl fmt::Display for TaskLabel<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name {
            Some(name) => write!(f, "task '{name}' (id {})", self.serial),
            None => write!(f, "task {}", self.serial),
        }
    }
}

/// Names one pause of one task: "wake the task in slot `key` if it is still
/// in wait `token`".
///
/// Every time a task pauses it gets a fresh token, unique on its scheduler.
/// Timers, socket waiter lists and join lists keep a `WaitToken`, and a
/// wake-up only takes effect if the task is still waiting under that very
/// token, so a timer that fires after its task moved on (or after its slot
/// was reused) does nothing: stale wake-ups are impossible by construction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct WaitToken {
    /// Slot of the task in the scheduler's task table.
    pub(crate) key: usize,
    /// The pause's number; never 0.
    pub(crate) token: u64,
}

/// Names a scheduler, unique in the process, so that a socket or a park
/// token made on one never touches another's tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct SchedulerId(u64);

impl SchedulerId {
    /// A fresh id, never handed out before in this process.
    pub(crate) fn next() -> SchedulerId {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        SchedulerId(NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// Its number, for reports.
    pub(crate) fn number(self) -> u64 {
        self.0
    }
}

/// Names an I/O source registered with the current scheduler's reactor.
///
/// Sockets from [`net`](crate::net) register themselves when they are created
/// and hand out their id through `io_id()`; the id is then used in
/// [`Op::ReadReady`](crate::raw::Op::ReadReady),
/// [`Op::WriteReady`](crate::raw::Op::WriteReady) and
/// [`Op::Accept`](crate::raw::Op::Accept).
///
/// An id carries a serial number, so an id whose source has gone away (and
/// whose table slot may have been reused) is recognised as stale and answered
/// with an error instead of waking on somebody else's socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IoId {
    /// Slot in the reactor's source table; also the `mio::Token`.
    pub(crate) key: usize,
    /// Serial number of the registration that owns the slot.
    pub(crate) serial: u64,
}

/// Names one pause of one task, for whoever will end that pause.
///
/// Whoever holds the token can wake the task exactly once, and only out of
/// that very pause; a token whose pause is over does nothing and reports
/// `false`, so a primitive handing something over knows to try its next
/// waiter.
///
/// Take it with [`park_token`](crate::raw::park_token), publish it, then
/// [`park`](crate::raw::park) with it *without pausing in between* (a pause
/// in between would use up the task's wait, and the token would then name
/// nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ParkToken {
    /// The pause.
    pub(crate) wait: WaitToken,
    /// The scheduler the task lives on.
    pub(crate) sched: SchedulerId,
}
