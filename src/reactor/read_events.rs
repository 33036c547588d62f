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
/// any not-`Send` or not-`Sync` part but its
/// [`PinnedToSchedulerThread`](crate::io::PinnedToSchedulerThread) marker,
/// which is then the one thing rustc names when a socket is moved to or
/// shared with another thread.
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

/// A place for one [`ReadMark`], or none: a `Cell<Option<ReadMark>>` in
/// effect, as a relaxed atomic for the same reason as [`ReadEvents`] (a
/// `Cell` would be the first thing rustc names when a socket is shared
/// with another thread).
#[derive(Debug)]
pub(crate) struct ReadMarkSlot(AtomicU64);

/// What an empty [`ReadMarkSlot`] holds. A real mark equal to it (after
/// 2^63 events, with the stream closed) would read back as none, which
/// only costs a read that the mark would have saved.
const NO_MARK: u64 = u64::MAX;

impl ReadMarkSlot {
    /// An empty slot.
    pub(crate) fn new() -> ReadMarkSlot {
        ReadMarkSlot(AtomicU64::new(NO_MARK))
    }

    /// The mark held, if any.
    #[inline]
    pub(crate) fn get(&self) -> Option<ReadMark> {
        match self.0.load(Ordering::Relaxed) {
            NO_MARK => None,
            m => Some(ReadMark(m)),
        }
    }

    /// Holds `mark` from now on, or nothing.
    #[inline]
    pub(crate) fn set(&self, mark: Option<ReadMark>) {
        self.0
            .store(mark.map_or(NO_MARK, |m| m.0), Ordering::Relaxed);
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

    #[test]
    fn a_mark_slot_holds_a_mark_or_nothing() {
        let e = ReadEvents::default();
        e.record(true);
        let slot = ReadMarkSlot::new();
        assert_eq!(slot.get(), None);
        slot.set(Some(e.mark()));
        assert_eq!(slot.get(), Some(e.mark()));
        slot.set(None);
        assert_eq!(slot.get(), None);
    }
}
