//! The connection's driving: tokio-postgres's [`Connection`] future, polled
//! by whichever task can do it cheapest.
//!
//! The connection does the socket work for every call: it sends the
//! requests the [`Client`](tokio_postgres::Client) queues and hands the
//! server's answers to the calls' response channels. A task of its own
//! (the driver) polls it whenever it is woken. But a query that wakes that
//! task to send its request, waits for it to read the answer, and is woken
//! by it in turn makes three task switches of a round trip where one
//! would do. So while a call waits, the calling task polls the connection
//! itself, in its own [`block_on`](yieldloop::block_on) loop
//! ([`Link::drive_while`]), and the connection's wake-ups come to it
//! rather than to the driver: the query's round trip is then one pause of
//! the calling task, as on a single-threaded tokio runtime, where a
//! `block_on` future and the connection task share one loop.
//!
//! ```text
//!   the connection's waker (Relay)
//!     ├─ a call is waiting (one at a time): wake the call's task, which
//!     │  polls the connection, then its own future
//!     └─ otherwise: wake the driver task, which polls the connection
//! ```
//!
//! One call at a time takes the wake-ups; other calls sharing the client
//! meanwhile are served by that call's task or, once it returns, by the
//! driver. The relay counts the wake-ups: one that comes while the driving
//! call is polling wakes nobody (the call polls the connection after its
//! own future whenever the count moved), and a call that returns (or
//! unwinds) with wake-ups it has not acted on hands them on to the driver,
//! so none is lost.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Wake, Waker};

use tokio_postgres::tls::NoTlsStream;
use tokio_postgres::Connection;
use yieldloop::net::TcpStream;

/// tokio-postgres's background future for one connection.
type Conn = Connection<TcpStream, NoTlsStream>;

/// The connection, shared by its driver task and the calls of its client.
pub(super) struct Link {
    /// `None` once the connection has ended.
    conn: RefCell<Option<Conn>>,
    /// Why the connection ended, once it has.
    lost: RefCell<Option<String>>,
    /// The waker the connection is always polled with: the same one by
    /// every poller, so the reactor and the channels keep it from poll to
    /// poll, and it wakes whoever drives at the time of the wake.
    waker: Waker,
    /// What `waker` wakes, kept to tell it who drives.
    relay: Arc<Relay>,
}

impl Link {
    pub(super) fn new(conn: Conn) -> Rc<Link> {
        let relay = Arc::new(Relay {
            flags: AtomicU64::new(0),
            state: Mutex::new(Targets::default()),
        });
        Rc::new(Link {
            conn: RefCell::new(Some(conn)),
            lost: RefCell::new(None),
            waker: Waker::from(relay.clone()),
            relay,
        })
    }

    /// Why the connection ended, if it has.
    pub(super) fn lost(&self) -> Option<String> {
        self.lost.borrow().clone()
    }

    /// The driver task's future: polls the connection whenever no call
    /// takes its wake-ups, until it ends.
    pub(super) fn drive(self: Rc<Self>) -> impl Future<Output = ()> {
        std::future::poll_fn(move |cx| {
            {
                let mut st = self.relay.lock();
                if !st.driver.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    st.driver = Some(cx.waker().clone());
                }
            }
            self.poll_conn()
        })
    }

    /// `future`, with the calling task driving the connection while it
    /// waits (unless another call already does).
    pub(super) fn drive_while<'a, F: Future>(
        self: &'a Rc<Self>,
        future: Pin<&'a mut F>,
    ) -> DriveWhile<'a, F> {
        DriveWhile {
            link: self,
            future,
            driving: None,
            seen: 0,
        }
    }

    /// Polls the connection, if it has not ended; `Ready` once it has.
    fn poll_conn(&self) -> Poll<()> {
        let mut slot = self.conn.borrow_mut();
        let Some(conn) = slot.as_mut() else {
            return Poll::Ready(());
        };
        let Poll::Ready(result) = Pin::new(conn).poll(&mut Context::from_waker(&self.waker)) else {
            return Poll::Pending;
        };
        // The socket closes here.
        *slot = None;
        drop(slot);
        *self.lost.borrow_mut() = Some(match result {
            Ok(()) => "the connection was closed".to_string(),
            Err(e) => e.to_string(),
        });
        // A call may have seen the end: the driver task ends too.
        let driver = self.relay.lock().driver.clone();
        if let Some(w) = driver {
            w.wake();
        }
        Poll::Ready(())
    }
}

/// A call's future, with its task driving the connection while it waits;
/// see [`Link::drive_while`].
pub(super) struct DriveWhile<'a, F> {
    link: &'a Rc<Link>,
    future: Pin<&'a mut F>,
    /// The waker this call has the connection's wake-ups go to, while it
    /// takes them.
    driving: Option<Waker>,
    /// The count of the connection's wake-ups as of this call's last poll
    /// of the connection: a count past it is work the connection has not
    /// seen.
    seen: u64,
}

impl<F: Future> Future for DriveWhile<'_, F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        let relay = &this.link.relay;
        match &this.driving {
            Some(w) if w.will_wake(cx.waker()) => {}
            Some(_) => {
                relay.update_caller(cx.waker());
                this.driving = Some(cx.waker().clone());
            }
            None => {
                // Read first: a wake-up counted after this may have gone
                // to this call, which then polls the connection for it.
                this.seen = wakes(relay.flags.load(Ordering::Acquire));
                if !relay.claim(cx.waker()) {
                    return this.future.as_mut().poll(cx);
                }
                this.driving = Some(cx.waker().clone());
            }
        }
        // Wake-ups from here on are only counted: the connection is polled
        // below whenever one came.
        let flags = relay.flags.fetch_or(POLLING, Ordering::AcqRel);
        if wakes(flags) != this.seen {
            // Answers came: hand them over before the call looks.
            this.seen = wakes(flags);
            let _ = this.link.poll_conn();
        }
        let polled = this.future.as_mut().poll(cx);
        let flags = relay.flags.load(Ordering::Acquire);
        if wakes(flags) != this.seen {
            // The call queued a request: send it.
            this.seen = wakes(flags);
            let _ = this.link.poll_conn();
        }
        let flags = relay.flags.fetch_and(!POLLING, Ordering::AcqRel);
        if polled.is_pending() && wakes(flags) != this.seen {
            // A wake-up came during the connection's poll: poll again.
            cx.waker().wake_by_ref();
        }
        polled
    }
}

impl<F> Drop for DriveWhile<'_, F> {
    fn drop(&mut self) {
        if self.driving.is_none() {
            return;
        }
        let (flags, driver) = {
            let mut st = self.link.relay.lock();
            st.caller = None;
            let flags = self.link.relay.flags.fetch_and(!CALLER, Ordering::AcqRel);
            (flags, st.driver.clone())
        };
        // A wake-up this call took and did not act on (it returned, or
        // unwound, first) is the driver's now.
        if wakes(flags) != self.seen {
            if let Some(w) = driver {
                w.wake();
            }
        }
    }
}

/// [`Relay::flags`]: a call drives the connection.
const CALLER: u64 = 1;
/// [`Relay::flags`]: that call is polling, and will poll the connection
/// after any wake-up that comes meanwhile.
const POLLING: u64 = 2;
/// [`Relay::flags`]: one wake-up, counted above the two flags.
const ONE_WAKE: u64 = 4;

/// The count of wake-ups in `flags`.
fn wakes(flags: u64) -> u64 {
    flags / ONE_WAKE
}

/// The connection's waker: passes each wake-up on to whoever drives the
/// connection at that moment. Wakes may come from any thread (a clone of
/// the tokio-postgres `Client` may be used anywhere), hence the atomic
/// flags and the lock.
struct Relay {
    /// [`CALLER`] and [`POLLING`], and the count of wake-ups above them.
    /// A wake counts itself and reads the flags in one step: it need not
    /// wake a call that is polling, which will see the count.
    flags: AtomicU64,
    /// Whom to wake.
    state: Mutex<Targets>,
}

#[derive(Default)]
struct Targets {
    /// The driver task's waker, once it has polled.
    driver: Option<Waker>,
    /// The waker of the call that drives the connection, while one does.
    /// # Invariant
    /// `Some` exactly while [`CALLER`] is set (both change under the lock).
    caller: Option<Waker>,
}

impl Relay {
    fn lock(&self) -> MutexGuard<'_, Targets> {
        // Held for a few field moves and waker clones, which do not
        // panic; a poisoned lock still holds a consistent state.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Has the wake-ups go to `waker`, a call's, unless another call
    /// takes them already; whether this one does now.
    fn claim(&self, waker: &Waker) -> bool {
        let mut st = self.lock();
        if st.caller.is_some() {
            return false;
        }
        st.caller = Some(waker.clone());
        self.flags.fetch_or(CALLER, Ordering::AcqRel);
        true
    }

    /// Keeps `waker` as the driving call's, if it is another than before.
    fn update_caller(&self, waker: &Waker) {
        let mut st = self.lock();
        if !st.caller.as_ref().is_some_and(|w| w.will_wake(waker)) {
            st.caller = Some(waker.clone());
        }
    }
}

impl Wake for Relay {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let flags = self.flags.fetch_add(ONE_WAKE, Ordering::AcqRel);
        if flags & (CALLER | POLLING) == CALLER | POLLING {
            // The driving call is polling: it sees the count.
            return;
        }
        let target = {
            let st = self.lock();
            // The call may have let go since the count: then the driver.
            st.caller.clone().or_else(|| st.driver.clone())
        };
        // Woken outside the lock: the woken side may take it at once.
        if let Some(w) = target {
            w.wake();
        }
    }
}
