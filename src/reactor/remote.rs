//! Wake-ups sent to one scheduler from other threads: a queue of wait
//! tokens behind a mutex, and an interrupt (a `mio::Waker`) that makes the
//! scheduler's poll return when the queue goes from empty to not empty.
//!
//! ```text
//!   other thread                         scheduler thread
//!   ────────────                         ────────────────
//!   lock; push token; was empty?; unlock
//!   was empty: interrupt the poll ─────▶ poll returns (or the next one
//!                                        returns at once: the interrupt
//!                                        is remembered until polled)
//!                                        lock; take every token; unlock
//! ```
//!
//! No wake-up is lost: a push that finds the queue not empty knows that an
//! interrupt for the tokens before it is still to be acted on, and the
//! scheduler takes the whole queue, its token included, when it acts on it.
//!
//! Under `--cfg loom` the interrupt can also be a stand-in that a model's
//! thread waits on, so the queue's protocol is checked as it runs here.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::protocol::WaitToken;
use crate::sys::threads::Mutex;

/// Wake-ups sent to one scheduler from other threads.
#[derive(Debug)]
pub(crate) struct RemoteQueue {
    /// Waits to end, in the order they were sent.
    pending: Mutex<Vec<WaitToken>>,
    /// Interrupts the scheduler's poll.
    waker: Interrupt,
    /// Handles to this queue that a paused clock disregards (see
    /// [`outside_holders`](Self::outside_holders)). Bookkeeping of the
    /// paused clock, no part of the wake-up protocol: std's atomic.
    exempt: AtomicUsize,
}

/// What makes the scheduler's poll return.
#[derive(Debug)]
enum Interrupt {
    /// The reactor's own: an `eventfd` (or a pipe) its poll watches.
    Poll(mio::Waker),
    /// A model's stand-in for the poll.
    #[cfg(loom)]
    Model(crate::sys::threads::Arc<model::PollStandIn>),
}

impl RemoteQueue {
    pub(crate) fn new(waker: mio::Waker) -> RemoteQueue {
        RemoteQueue {
            pending: Mutex::new(Vec::new()),
            waker: Interrupt::Poll(waker),
            exempt: AtomicUsize::new(0),
        }
    }

    /// Queues a wake-up of `w` and makes sure the scheduler's poll returns.
    pub(crate) fn push(&self, w: WaitToken) {
        let was_empty = {
            let mut q = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            q.push(w);
            q.len() == 1
        };
        // One wake-up per batch: the scheduler drains the whole queue.
        if was_empty {
            self.interrupt();
        }
    }

    /// Makes the scheduler's poll return (or its next one return at
    /// once), without queuing a wake-up: for a request that the loop
    /// looks for after each poll.
    pub(crate) fn interrupt(&self) {
        match &self.waker {
            // A failed wake (the poll is gone) leaves nothing to wake.
            Interrupt::Poll(w) => {
                let _ = w.wake();
            }
            #[cfg(loom)]
            Interrupt::Model(p) => p.interrupt(),
        }
    }

    /// True if wake-ups are queued and not yet taken.
    pub(crate) fn has_pending(&self) -> bool {
        !self
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
    }

    /// How many handles to the queue exist beyond the scheduler's own and
    /// the exempt ones: ways another thread may still wake a task here
    /// (a task parked on a cross-thread wait, work on the blocking pool).
    pub(crate) fn outside_holders(self: &Arc<Self>) -> usize {
        (Arc::strong_count(self) - 1).saturating_sub(self.exempt.load(Ordering::Acquire))
    }

    /// Counts `n` more handles as exempt, or `n` fewer.
    pub(crate) fn set_exempt(&self, n: usize, on: bool) {
        if on {
            self.exempt.fetch_add(n, Ordering::AcqRel);
        } else {
            self.exempt.fetch_sub(n, Ordering::AcqRel);
        }
    }

    /// Takes everything queued so far, into `out`.
    pub(crate) fn drain(&self, out: &mut Vec<WaitToken>) {
        let mut q = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        out.append(&mut q);
    }
}

/// The model checks' side of the queue: a poll stand-in that remembers an
/// interrupt until it is waited on, as an `eventfd` does.
#[cfg(loom)]
pub(crate) mod model {
    use super::{Interrupt, RemoteQueue};
    use crate::sys::threads::{Arc, Condvar, Mutex};

    /// An `eventfd` and the poll on it, for a model's scheduler thread.
    #[derive(Debug, Default)]
    pub(crate) struct PollStandIn {
        interrupted: Mutex<bool>,
        cv: Condvar,
    }

    impl PollStandIn {
        pub(super) fn interrupt(&self) {
            *self.interrupted.lock().unwrap() = true;
            self.cv.notify_one();
        }

        /// The poll: returns once interrupted, consuming the interrupt.
        pub(crate) fn wait(&self) {
            let mut i = self.interrupted.lock().unwrap();
            while !*i {
                i = self.cv.wait(i).unwrap();
            }
            *i = false;
        }
    }

    impl RemoteQueue {
        /// A queue whose interrupts go to `poll`.
        pub(crate) fn model(poll: Arc<PollStandIn>) -> RemoteQueue {
            RemoteQueue {
                pending: Mutex::new(Vec::new()),
                waker: Interrupt::Model(poll),
                exempt: std::sync::atomic::AtomicUsize::new(0),
            }
        }
    }
}
