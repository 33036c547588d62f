//! A socket's count of read events, shared between the reactor (which
//! counts) and the socket (which reads the count to skip reads bound to
//! find nothing).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The bit of the count that says the end of the stream (or an error) has
/// been reported. Kept in the same word as the count so that one load
/// gives both.
const CLOSED: u64 = 1 << 63;

/// How many read events a source has had, and whether one of them reported
/// the end of the stream or an error. The reactor records events; the
/// socket takes [`ReadMark`]s to compare.
///
/// An `Arc<AtomicU64>` rather than an `Rc<Cell<u64>>`, though only the
/// scheduler's thread touches it: relaxed loads and stores compile to the
/// same plain moves as a `Cell`'s, and a socket holding it stays free of
/// any not-`Send` part but its
/// [`PinnedToSchedulerThread`](crate::io::PinnedToSchedulerThread) marker,
/// which is then the one thing rustc names when a socket is moved to
/// another thread.
#[derive(Debug, Clone, Default)]
pub(crate) struct ReadEvents(Arc<AtomicU64>);

/// The state of a [`ReadEvents`] at one moment: equal marks mean no read
/// event came in between.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReadMark(u64);

impl ReadEvents {
    /// Counts one read event; `closed` when it reported the end of the
    /// stream or an error, which stays recorded from then on.
    pub(crate) fn record(&self, closed: bool) {
        // Relaxed, and a load then a store rather than a read-modify-write:
        // only the scheduler's thread counts and reads.
        let n = self.0.load(Ordering::Relaxed);
        let count = n.wrapping_add(1) & !CLOSED;
        let closed = if closed { CLOSED } else { 0 };
        self.0
            .store(count | (n & CLOSED) | closed, Ordering::Relaxed);
    }

    /// The count and closed flag now.
    #[inline]
    pub(crate) fn mark(&self) -> ReadMark {
        ReadMark(self.0.load(Ordering::Relaxed))
    }
}

impl ReadMark {
    /// True once an event has reported the end of the stream or an error.
    pub(crate) fn closed(self) -> bool {
        self.0 & CLOSED != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_change_with_each_event_and_closed_sticks() {
        let e = ReadEvents::default();
        let m0 = e.mark();
        assert!(!m0.closed());
        e.record(false);
        let m1 = e.mark();
        assert_ne!(m0, m1);
        assert!(!m1.closed());
        e.record(true);
        e.record(false);
        assert!(e.mark().closed(), "closed stays once reported");
        assert_ne!(e.mark(), m1);
    }
}
