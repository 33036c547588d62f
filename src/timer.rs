//! The deadline heap: which parked task to wake next, and when.
//!
//! A min-heap of `(deadline, seq)` keys. `seq` grows with every insertion,
//! so entries with equal deadlines come out in the order they were set
//! (FIFO), and no two keys are ever equal.
//!
//! Removal is lazy: when a task stops waiting for a timer (its socket became
//! ready first, or it was cancelled) its entry stays in the heap and is
//! skipped when it surfaces, because the [`Waiter`] token it carries no
//! longer matches the task's current wait. Counting those stale entries lets
//! the heap rebuild itself without them once they are the majority, so it
//! stays O(log live) and bounded in memory.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::time::Instant;

use crate::task::Waiter;

/// What the task is told when its timer fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fire {
    /// The timer was the whole wait ([`Op::Wait`](crate::Op::Wait)).
    Ready,
    /// The timer was the deadline of another wait.
    TimedOut,
}

/// One armed timer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    pub(crate) deadline: Instant,
    /// Insertion order; breaks deadline ties first-in, first-out.
    seq: u64,
    pub(crate) waiter: Waiter,
    pub(crate) fire: Fire,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.deadline, self.seq).cmp(&(other.deadline, other.seq))
    }
}

/// The heap and its bookkeeping.
#[derive(Debug, Default)]
pub(crate) struct Timers {
    heap: BinaryHeap<Reverse<Entry>>,
    next_seq: u64,
    /// Entries known to be stale (their wait ended some other way).
    /// # Invariant
    /// `stale <= heap.len()`.
    stale: usize,
}

/// Below this many entries the heap is never compacted: small heaps are
/// cheap to skip through.
const COMPACT_MIN: usize = 1024;

impl Timers {
    /// Arms a timer for `waiter` at `deadline`.
    pub(crate) fn insert(&mut self, deadline: Instant, waiter: Waiter, fire: Fire) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Reverse(Entry {
            deadline,
            seq,
            waiter,
            fire,
        }));
    }

    /// Notes that one armed entry went stale; rebuilds the heap without the
    /// stale entries once they are more than half of it. `live` says whether
    /// an entry's waiter is still waiting.
    pub(crate) fn mark_stale(&mut self, live: impl Fn(Waiter) -> bool) {
        self.stale = (self.stale + 1).min(self.heap.len());
        if self.heap.len() >= COMPACT_MIN && self.stale * 2 > self.heap.len() {
            let entries = std::mem::take(&mut self.heap).into_vec();
            self.heap = entries.into_iter().filter(|e| live(e.0.waiter)).collect();
            self.stale = 0;
        }
    }

    /// Removes and returns the earliest entry if it is due at `now`.
    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<Entry> {
        let top = self.heap.peek()?;
        // A deadline equal to `now` is due: a sleeper is woken at or after
        // its deadline, never before.
        if top.0.deadline <= now {
            self.heap.pop().map(|e| e.0)
        } else {
            None
        }
    }

    /// The earliest deadline of a live entry, dropping stale ones on top.
    pub(crate) fn next_deadline(&mut self, live: impl Fn(Waiter) -> bool) -> Option<Instant> {
        while let Some(top) = self.heap.peek() {
            if live(top.0.waiter) {
                return Some(top.0.deadline);
            }
            self.heap.pop();
            self.stale = self.stale.saturating_sub(1);
        }
        None
    }

    /// Notes that a popped entry was stale.
    pub(crate) fn popped_stale(&mut self) {
        self.stale = self.stale.saturating_sub(1);
    }

    /// Entries in the heap, stale ones included.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn w(key: usize) -> Waiter {
        Waiter {
            key,
            token: key as u64 + 1,
        }
    }

    #[test]
    fn equal_deadlines_fire_in_insertion_order() {
        let mut t = Timers::default();
        let at = Instant::now();
        for k in 0..100 {
            t.insert(at, w(k), Fire::Ready);
        }
        let order: Vec<usize> = std::iter::from_fn(|| t.pop_due(at))
            .map(|e| e.waiter.key)
            .collect();
        assert_eq!(order, (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn nothing_fires_before_its_deadline() {
        let mut t = Timers::default();
        let now = Instant::now();
        t.insert(now + Duration::from_millis(5), w(1), Fire::Ready);
        assert!(t.pop_due(now).is_none());
        assert!(t.pop_due(now + Duration::from_millis(5)).is_some());
    }

    #[test]
    fn compaction_keeps_only_live_entries() {
        let mut t = Timers::default();
        let now = Instant::now();
        for k in 0..4000 {
            t.insert(now + Duration::from_millis(k as u64), w(k), Fire::Ready);
        }
        // Keys >= 1000 go stale.
        for _ in 0..3000 {
            t.mark_stale(|x| x.key < 1000);
        }
        assert!(t.len() <= 2000, "heap was not compacted: {}", t.len());
        let mut got = 0;
        while let Some(e) = t.pop_due(now + Duration::from_secs(10)) {
            if e.waiter.key < 1000 {
                got += 1;
            }
        }
        assert_eq!(got, 1000);
    }
}
