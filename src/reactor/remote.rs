//! Wake-ups sent to one scheduler from other threads: a queue of wait
//! tokens behind a mutex, and a `mio::Waker` that interrupts the
//! scheduler's poll when the queue goes from empty to not empty.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::protocol::WaitToken;

/// Wake-ups sent to one scheduler from other threads.
#[derive(Debug)]
pub(crate) struct RemoteQueue {
    /// Waits to end, in the order they were sent.
    pending: Mutex<Vec<WaitToken>>,
    /// Interrupts the scheduler's poll.
    waker: mio::Waker,
    /// Handles to this queue that a paused clock disregards (see
    /// [`outside_holders`](Self::outside_holders)).
    exempt: AtomicUsize,
}

impl RemoteQueue {
    pub(crate) fn new(waker: mio::Waker) -> RemoteQueue {
        RemoteQueue {
            pending: Mutex::new(Vec::new()),
            waker,
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
            // A failed wake (the poll is gone) leaves nothing to wake.
            let _ = self.waker.wake();
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
