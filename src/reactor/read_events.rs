//! A socket's count of read events, shared between the reactor (which
//! counts) and the socket (which reads the count to skip reads bound to
//! find nothing).

use std::cell::Cell;
use std::rc::Rc;

/// The bit of the count that says the end of the stream (or an error) has
/// been reported. Kept in the same word as the count so that one `Cell`
/// read gives both.
const CLOSED: u64 = 1 << 63;

/// How many read events a source has had, and whether one of them reported
/// the end of the stream or an error. The reactor records events; the
/// socket takes [`ReadMark`]s to compare.
#[derive(Debug, Clone, Default)]
pub(crate) struct ReadEvents(Rc<Cell<u64>>);

/// The state of a [`ReadEvents`] at one moment: equal marks mean no read
/// event came in between.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReadMark(u64);

impl ReadEvents {
    /// Counts one read event; `closed` when it reported the end of the
    /// stream or an error, which stays recorded from then on.
    pub(crate) fn record(&self, closed: bool) {
        let n = self.0.get();
        let count = n.wrapping_add(1) & !CLOSED;
        let closed = if closed { CLOSED } else { 0 };
        self.0.set(count | (n & CLOSED) | closed);
    }

    /// The count and closed flag now.
    pub(crate) fn mark(&self) -> ReadMark {
        ReadMark(self.0.get())
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
