//! [`Select`]: wait for the first of several things, Go's `select`.
//!
//! A send case sends only when that needs no wait, during the scan; while
//! the select waits, it sits in the channel's queue of waiters for room,
//! all of which are woken when room comes (or a receiver, for a
//! rendezvous), each to try again. So at most one send happens per wait,
//! and a send case that loses keeps its value.
//!
//! A select takes one [`ParkToken`] per pause and publishes it in the
//! waiter queue of every channel it watches, with a deadline on the park
//! for its deadline cases. Whatever fires first unparks the token; the
//! others find it stale. When the task runs again it takes its entries out
//! of every channel (an entry is never left behind) and, if a channel had
//! singled it out for a message that it does not report, hands that
//! wake-up on to the channel's next receiver.
//!
//! Socket and task-end cases are watched by small helper tasks, one per
//! case, that live as long as the `Select`. Each parks with its own token
//! on its one socket or task and, when it fires, records that and unparks
//! the select. A helper has two jobs that the select's own token could not
//! do: it says exactly *which* case fired (one token watching several
//! sockets could not tell them apart), and it keeps watching while the
//! select is busy elsewhere, so a readiness edge that comes in while the
//! select reports another case is remembered for its next `wait`, not lost.
//! It also keeps the number of registrations on a socket or task at one,
//! however many times the select waits.
//!
//! ```text
//!  Select::wait ──▶ scan cases in order: ready? ──yes──▶ return its index
//!                        │ no
//!                        ▼
//!                  register token in each channel; helpers know it
//!                  park(token, earliest deadline)
//!                        │ woken by a channel, a helper, or the deadline
//!                        ▼
//!                  unregister from every channel ──▶ scan again
//! ```

use std::cell::{Cell, RefCell};
use std::fmt;
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::wait::OnDrop;
use crate::protocol::ParkToken;
use crate::protocol::TaskId;
use crate::protocol::{IoId, Resume};
use crate::scheduler::port::ParkedOn;
use crate::stack::MIN_STACK_SIZE;
use crate::task::park::{park_on, park_token};
use crate::task::spawn::{Builder, JoinHandle};

/// The hooks a [`Select`] drives a receiver through; sealed, so the set of
/// selectable types is this module's to decide.
pub(crate) mod sealed {
    use crate::protocol::ParkToken;

    /// One select pause's entry in one channel's receiver queue.
    #[derive(Debug)]
    pub struct Registration {
        /// The entry's id in the channel's queue; whether a sender picked
        /// it, its removal says.
        pub(crate) id: u64,
        /// A cross-thread channel's second handle on the select's unparker,
        /// held for the length of the pause (see
        /// [`Flavor::task_wake`](crate::sync::flavor::Flavor::task_wake)).
        pub(crate) _keep: Option<crate::task::park::RemoteUnparker>,
    }

    /// A bounded sender a [`Select`](super::Select) can send through.
    pub trait SelectSend<T> {
        /// Sends `value` if that can be done without waiting.
        fn try_send(&self, value: T) -> Result<(), crate::sync::TrySendError<T>>;
        /// Queues `token` to be woken when a send may succeed.
        fn register(&self, token: ParkToken) -> Registration;
        /// Takes the entry out again.
        fn unregister(&self, reg: &Registration);
    }

    /// A receiver a [`Select`](super::Select) can wait on.
    pub trait SelectRecv {
        /// True if a receive would not find the channel empty: a message
        /// waits, or the channel is closed.
        fn is_ready(&self) -> bool;
        /// Queues `token` as a receiver to wake.
        fn register(&self, token: ParkToken) -> Registration;
        /// Takes the entry out again; returns whether a sender had picked
        /// it.
        fn unregister(&self, reg: &Registration) -> bool;
        /// Hands a wake-up this select will not use to the next receiver.
        fn pass_on(&self);
    }
}

use sealed::{Registration, SelectRecv};

/// A receiver that [`Select::recv`] accepts: the single-thread
/// [`Receiver`](super::local::Receiver) and [`OneshotReceiver`](super::OneshotReceiver),
/// and the cross-thread [`mpsc::Receiver`](super::mpsc::Receiver).
///
/// It is sealed: it cannot be implemented outside this crate.
pub trait Selectable: sealed::SelectRecv {}

/// A bounded sender that [`Select::send`] accepts: the single-thread
/// [`SyncSender`](super::local::SyncSender) and the cross-thread
/// [`mpsc::SyncSender`](super::mpsc::SyncSender).
///
/// It is sealed: it cannot be implemented outside this crate.
pub trait SelectableSender<T>: sealed::SelectSend<T> {}

/// A send case: a sender and the slot its value waits in.
trait SendCase {
    /// Tries the send; true if the case is done (sent, or failed for good
    /// because the receiver is gone), false if the channel is full.
    fn attempt(&self) -> bool;
    fn register(&self, token: ParkToken) -> Registration;
    fn unregister(&self, reg: &Registration);
}

struct SendSlot<'a, T, S: ?Sized> {
    tx: &'a S,
    slot: &'a Cell<Option<T>>,
}

impl<T, S: SelectableSender<T> + ?Sized> SendCase for SendSlot<'_, T, S> {
    fn attempt(&self) -> bool {
        let Some(v) = self.slot.take() else {
            // Nothing to send: sent by an earlier wait.
            return true;
        };
        match self.tx.try_send(v) {
            Ok(()) => true,
            Err(crate::sync::TrySendError::Full(v)) => {
                self.slot.set(Some(v));
                false
            }
            Err(crate::sync::TrySendError::Disconnected(v)) => {
                self.slot.set(Some(v));
                true
            }
        }
    }

    fn register(&self, token: ParkToken) -> Registration {
        self.tx.register(token)
    }

    fn unregister(&self, reg: &Registration) {
        self.tx.unregister(reg);
    }
}

/// Is a task finished? [`JoinHandle`] without its value type.
trait Finished {
    fn finished(&self) -> bool;
}

impl<T> Finished for JoinHandle<T> {
    fn finished(&self) -> bool {
        self.is_finished()
    }
}

enum Case<'a> {
    Recv(&'a dyn SelectRecv),
    Send(Box<dyn SendCase + 'a>),
    Io {
        io: IoId,
        write: bool,
    },
    Join {
        id: TaskId,
        handle: &'a dyn Finished,
    },
    Deadline(Instant),
    Timeout(Duration),
}

/// What the select and its helper tasks share.
#[derive(Debug, Default)]
struct Shared {
    /// The token the select is parked under, while it is.
    parked: Cell<Option<ParkToken>>,
    /// Per case: a readiness edge seen and not reported yet (sockets), or
    /// the watched task ended (joins).
    fired: RefCell<Vec<bool>>,
    /// Per case: the socket is gone; the case stays ready, since an
    /// operation on it fails at once.
    closed: RefCell<Vec<bool>>,
}

impl Shared {
    /// A helper saw case `i` fire: note it and wake the select if it waits.
    fn fire(&self, i: usize, closed: bool) {
        self.fired.borrow_mut()[i] = true;
        if closed {
            self.closed.borrow_mut()[i] = true;
        }
        if let Some(t) = self.parked.get() {
            // False when the select is not parked (it will scan anyway).
            t.unpark();
        }
    }
}

/// Waits for the first of several things: a message on a channel, a socket
/// becoming ready, a task ending, a deadline.
///
/// Add cases with the builder methods; each gets the index of its position
/// (0, 1, …). [`wait`](Self::wait) returns the index of a case that is
/// ready, pausing the task until one is. When several are ready, the one
/// added first wins, so put the case that must not be starved first.
///
/// | case | ready when |
/// |---|---|
/// | [`recv`](Self::recv) | a message waits, or the channel is closed (`try_recv` will not say `Empty`) |
/// | [`send`](Self::send) | the value was sent (the bounded channel had room, or a receiver waited at a rendezvous), or the receiver is gone |
/// | [`readable`](Self::readable) / [`writable`](Self::writable) | the socket had a readiness edge since the case was last reported |
/// | [`join`](Self::join) | the task has ended |
/// | [`deadline`](Self::deadline) / [`timeout`](Self::timeout) | the instant has passed (`timeout`: counted from the start of each `wait`) |
///
/// A select does not receive for you: after a receive case is reported,
/// call `try_recv` on that receiver. It succeeds, unless another task
/// receiving from the same receiver took the message in between.
///
/// Socket cases are edge-triggered, like the scheduler's readiness waits:
/// they report *new* readiness (data arrived, the peer hung up, buffer
/// space came free) from the first `wait` on. Data left unread after a
/// report does not fire the case again, so read what the edge announced
/// before selecting again. Keep and reuse one `Select` in a loop: its
/// helper tasks remember edges that come while it is reporting other cases.
///
/// A single-thread type (it is not `Send`), like the tasks it runs in.
///
/// # Cancellation
///
/// If the task is cancelled (or a [`timeout`](crate::timeout) scope
/// expires) while it waits, its entries are removed from every channel and
/// a message it had been picked for goes to the channel's next receiver.
/// Dropping the `Select` cancels its helper tasks.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use yieldloop::sync::Select;
/// use yieldloop::sync::local::channel;
///
/// yieldloop::run(|| {
///     let (fast_tx, fast) = channel();
///     let (_slow_tx, slow) = channel::<&str>();
///     yieldloop::spawn(move || {
///         yieldloop::sleep(Duration::from_millis(5));
///         fast_tx.send("hello").unwrap();
///     });
///     let mut sel = Select::new()
///         .recv(&slow)
///         .recv(&fast)
///         .timeout(Duration::from_secs(5));
///     match sel.wait() {
///         0 => unreachable!("nothing is ever sent on `slow`"),
///         1 => assert_eq!(fast.try_recv(), Ok("hello")),
///         _ => panic!("timed out"),
///     }
/// });
/// ```
pub struct Select<'a> {
    cases: Vec<Case<'a>>,
    shared: Rc<Shared>,
    /// The helper tasks, started at the first `wait`.
    helpers: Vec<JoinHandle<()>>,
}

impl Default for Select<'_> {
    fn default() -> Self {
        Select::new()
    }
}

impl<'a> Select<'a> {
    /// A select with no cases yet.
    pub fn new() -> Self {
        Select {
            cases: Vec::new(),
            shared: Rc::new(Shared::default()),
            helpers: Vec::new(),
        }
    }

    /// Adds a case that is ready when `rx` has a message or is closed.
    pub fn recv(mut self, rx: &'a impl Selectable) -> Self {
        self.cases.push(Case::Recv(rx));
        self
    }

    /// Adds a send case, Go's `case ch <- v`: the value waits in `slot`,
    /// and the case is ready once the select has sent it through `tx` (a
    /// bounded channel, single-thread or cross-thread), which it does only
    /// when the send needs no wait: the channel has room, or for a
    /// rendezvous a receiver waits. The select sends for at most one case
    /// per [`wait`](Self::wait), the one it reports.
    ///
    /// If another case wins, the value stays in `slot`; once this case is
    /// reported, `slot` is empty. The case is also reported, with the value
    /// still in `slot`, when the receiver is gone and no send can succeed.
    /// An empty `slot` counts as sent: the case is ready at once.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::cell::Cell;
    /// use yieldloop::sync::{local::sync_channel, Select};
    ///
    /// yieldloop::run(|| {
    ///     let (tx, rx) = sync_channel::<u32>(1);
    ///     tx.send(0).unwrap(); // full
    ///     let (quit_tx, quit) = yieldloop::sync::local::channel::<()>();
    ///     let reader = yieldloop::spawn(move || {
    ///         yieldloop::sleep(std::time::Duration::from_millis(5));
    ///         rx.recv().unwrap() + rx.recv().unwrap()
    ///     });
    ///     let slot = Cell::new(Some(7));
    ///     let mut sel = Select::new().recv(&quit).send(&tx, &slot);
    ///     assert_eq!(sel.wait(), 1); // room came, 7 was sent
    ///     assert_eq!(slot.take(), None);
    ///     drop(sel);
    ///     drop(quit_tx);
    ///     assert_eq!(reader.join().unwrap(), 7);
    /// });
    /// ```
    pub fn send<T: 'a>(
        mut self,
        tx: &'a impl SelectableSender<T>,
        slot: &'a Cell<Option<T>>,
    ) -> Self {
        self.cases.push(Case::Send(Box::new(SendSlot { tx, slot })));
        self
    }

    /// Adds a case that fires when the socket `io` becomes readable (or
    /// hangs up); see the edge-triggering note on [`Select`].
    pub fn readable(mut self, io: IoId) -> Self {
        self.cases.push(Case::Io { io, write: false });
        self
    }

    /// Adds a case that fires when the socket `io` becomes writable.
    pub fn writable(mut self, io: IoId) -> Self {
        self.cases.push(Case::Io { io, write: true });
        self
    }

    /// Adds a case that is ready once the task of `handle` has ended; join
    /// it afterwards for its value.
    pub fn join<T>(mut self, handle: &'a JoinHandle<T>) -> Self {
        self.cases.push(Case::Join {
            id: handle.id(),
            handle,
        });
        self
    }

    /// Adds a case that is ready once `deadline` has passed.
    pub fn deadline(mut self, deadline: Instant) -> Self {
        self.cases.push(Case::Deadline(deadline));
        self
    }

    /// Adds a case that is ready once `timeout` has passed since the start
    /// of the current [`wait`](Self::wait).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.cases.push(Case::Timeout(timeout));
        self
    }

    /// The number of cases.
    pub fn len(&self) -> usize {
        self.cases.len()
    }

    /// True if there are no cases.
    pub fn is_empty(&self) -> bool {
        self.cases.is_empty()
    }

    /// Pauses the task until a case is ready and returns its index; see
    /// [`Select`].
    ///
    /// # Panics
    ///
    /// Panics outside a task, if there are no cases, if a helper task
    /// cannot be started (no memory for its stack), or if the task would
    /// have to pause while it is unwinding.
    pub fn wait(&mut self) -> usize {
        crate::task::coop::proceed();
        assert!(
            !self.cases.is_empty(),
            "yieldloop: Select::wait with no cases"
        );
        let start = crate::scheduler::timers::now();
        self.start_helpers();
        loop {
            if let Some(i) = self.scan(start) {
                return i;
            }
            let token = park_token();
            let regs = self.register(token);
            // A channel of another thread may have become ready between
            // the scan and the registration, and found nobody to wake:
            // look again, now that a wake-up would find this select.
            if let Some(i) = self.scan(start) {
                for f in self.unregister(&regs) {
                    if f != i {
                        self.pass_on(f);
                    }
                }
                return i;
            }
            self.shared.parked.set(Some(token));
            // Unwound while parked: leave every channel, handing on any
            // wake-up a channel gave this select.
            let guard = OnDrop::new(|| {
                self.shared.parked.set(None);
                for i in self.unregister(&regs) {
                    self.pass_on(i);
                }
            });
            let r = park_on(token, self.earliest(start), ParkedOn::Channel);
            guard.defuse();
            self.shared.parked.set(None);
            let fired = self.unregister(&regs);
            if let Resume::Cancelled = r {
                for i in fired {
                    self.pass_on(i);
                }
                panic!("yieldloop: Select::wait cannot pause in a task that is unwinding");
            }
            let chosen = self.scan(start);
            for i in fired {
                if chosen != Some(i) {
                    self.pass_on(i);
                }
            }
            if let Some(i) = chosen {
                return i;
            }
        }
    }

    /// The first ready case, in order; consumes a socket case's edge.
    fn scan(&self, start: Instant) -> Option<usize> {
        let now = crate::scheduler::timers::now();
        let mut fired = self.shared.fired.borrow_mut();
        let closed = self.shared.closed.borrow();
        self.cases
            .iter()
            .enumerate()
            .position(|(i, case)| match case {
                Case::Recv(rx) => rx.is_ready(),
                Case::Send(tx) => tx.attempt(),
                Case::Io { .. } => closed[i] || std::mem::take(&mut fired[i]),
                Case::Join { handle, .. } => handle.finished(),
                // A deadline `<= now` has passed.
                Case::Deadline(d) => now >= *d,
                Case::Timeout(t) => start.checked_add(*t).is_some_and(|d| now >= d),
            })
    }

    /// The earliest deadline among the cases, for the park.
    fn earliest(&self, start: Instant) -> Option<Instant> {
        self.cases
            .iter()
            .filter_map(|case| match case {
                Case::Deadline(d) => Some(*d),
                Case::Timeout(t) => start.checked_add(*t),
                _ => None,
            })
            .min()
    }

    fn register(&self, token: ParkToken) -> Vec<(usize, Registration)> {
        self.cases
            .iter()
            .enumerate()
            .filter_map(|(i, case)| match case {
                Case::Recv(rx) => Some((i, rx.register(token))),
                Case::Send(tx) => Some((i, tx.register(token))),
                _ => None,
            })
            .collect()
    }

    /// Leaves every channel; returns the cases whose channel had picked
    /// this select for a message.
    fn unregister(&self, regs: &[(usize, Registration)]) -> Vec<usize> {
        regs.iter()
            .filter_map(|(i, reg)| match &self.cases[*i] {
                Case::Recv(rx) => rx.unregister(reg).then_some(*i),
                // Woken with every other waiter for room: nothing to pass on.
                Case::Send(tx) => {
                    tx.unregister(reg);
                    None
                }
                _ => None,
            })
            .collect()
    }

    fn pass_on(&self, i: usize) {
        if let Case::Recv(rx) = &self.cases[i] {
            rx.pass_on();
        }
    }

    /// Starts one helper task per socket and task-end case, once.
    fn start_helpers(&mut self) {
        if !self.helpers.is_empty() || self.shared.fired.borrow().len() == self.cases.len() {
            return;
        }
        *self.shared.fired.borrow_mut() = vec![false; self.cases.len()];
        *self.shared.closed.borrow_mut() = vec![false; self.cases.len()];
        for (i, case) in self.cases.iter().enumerate() {
            let shared = self.shared.clone();
            let helper: Box<dyn FnOnce()> = match *case {
                Case::Io { io, write } => Box::new(move || watch_io(&shared, i, io, write)),
                Case::Join { id, .. } => Box::new(move || watch_task(&shared, i, id)),
                _ => continue,
            };
            // The helpers only park: the smallest stack is plenty.
            match Builder::new()
                .name("select-helper")
                .stack_size(MIN_STACK_SIZE)
                .spawn(helper)
            {
                Ok(h) => self.helpers.push(h),
                Err(e) => panic!("yieldloop: Select cannot start a helper task: {e}"),
            }
        }
    }
}

/// A socket case's helper: report every readiness edge until the socket
/// goes away.
fn watch_io(shared: &Shared, i: usize, io: IoId, write: bool) {
    loop {
        let token = park_token();
        if token.watch_io(io, write).is_err() {
            // A closed socket: ready for good, its operation fails at once.
            shared.fire(i, true);
            return;
        }
        match park_on(token, None, ParkedOn::Channel) {
            Resume::Ready => shared.fire(i, false),
            Resume::Cancelled => return,
            // The socket was closed while watched.
            _ => {
                shared.fire(i, true);
                return;
            }
        }
    }
}

/// A task-end case's helper: wake the select when the task ends.
fn watch_task(shared: &Shared, i: usize, id: TaskId) {
    let token = park_token();
    if token.watch_task(id) {
        let _ = park_on(token, None, ParkedOn::Channel);
    }
    shared.fire(i, false);
}

impl Drop for Select<'_> {
    fn drop(&mut self) {
        for h in &self.helpers {
            h.cancel();
        }
    }
}

impl fmt::Debug for Select<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kinds: Vec<&str> = self
            .cases
            .iter()
            .map(|c| match c {
                Case::Recv(_) => "recv",
                Case::Send(_) => "send",
                Case::Io { write: false, .. } => "readable",
                Case::Io { write: true, .. } => "writable",
                Case::Join { .. } => "join",
                Case::Deadline(_) => "deadline",
                Case::Timeout(_) => "timeout",
            })
            .collect();
        f.debug_struct("Select")
            .field("cases", &kinds)
            .field("helpers", &self.helpers.len())
            .finish()
    }
}
