//! The deadline heap: which parked task to wake next, and when.
//!
//! A min-heap of `(deadline, seq)` keys. `seq` grows with every insertion,
//! so entries with equal deadlines come out in the order they were set
//! (FIFO), and no two keys are ever equal.
//!
//! Removal is lazy: when a task stops waiting for a timer (its socket became
//! ready first, or it was cancelled) its entry stays in the heap and is
//! skipped when it surfaces, because the [`WaitToken`] token it carries no
//! longer matches the task's current wait. Counting those stale entries lets
//! the heap rebuild itself without them once they are the majority, so it
//! stays O(log live) and bounded in memory.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

use crate::protocol::WaitToken;

/// What a timer is for, which decides what its task is told when it fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TimerKind {
    /// A sleep: the timer is the whole wait ([`Op::Wait`](crate::raw::Op::Wait)),
    /// and firing answers [`Resume::Ready`](crate::raw::Resume::Ready).
    Sleep,
    /// The deadline of another wait (a read, a park, …): firing answers
    /// [`Resume::TimedOut`](crate::raw::Resume::TimedOut).
    Deadline,
}

/// One armed timer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    pub(crate) deadline: Instant,
    /// Insertion order; breaks deadline ties first-in, first-out.
    seq: u64,
    pub(crate) waiter: WaitToken,
    /// What firing means.
    pub(crate) kind: TimerKind,
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
    pub(crate) fn insert(&mut self, deadline: Instant, waiter: WaitToken, kind: TimerKind) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Reverse(Entry {
            deadline,
            seq,
            waiter,
            kind,
        }));
    }

    /// Notes that one armed entry went stale; rebuilds the heap without the
    /// stale entries once they are more than half of it. `live` says whether
    /// an entry's waiter is still waiting.
    pub(crate) fn mark_stale(&mut self, live: impl Fn(WaitToken) -> bool) {
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
    pub(crate) fn next_deadline(&mut self, live: impl Fn(WaitToken) -> bool) -> Option<Instant> {
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

    /// True when no entry, live or stale, is armed.
    pub(crate) fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Entries in the heap, stale ones included.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }
}

/// The instant `d` from now; a duration too large to add is as good as
/// forever, so it gives [`far_future`] instead of overflowing.
pub(crate) fn deadline_after(d: Duration) -> Instant {
    Instant::now().checked_add(d).unwrap_or_else(far_future)
}

/// An instant about thirty years from now: "never", for deadline arithmetic.
pub(crate) fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86_400 * 365 * 30)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn w(key: usize) -> WaitToken {
        WaitToken {
            key,
            token: key as u64 + 1,
        }
    }

    #[test]
    fn equal_deadlines_fire_in_insertion_order() {
        let mut t = Timers::default();
        let at = Instant::now();
        for k in 0..100 {
            t.insert(at, w(k), TimerKind::Sleep);
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
        t.insert(now + Duration::from_millis(5), w(1), TimerKind::Sleep);
        assert!(t.pop_due(now).is_none());
        assert!(t.pop_due(now + Duration::from_millis(5)).is_some());
    }

    mod model {
        use super::*;
        use proptest::prelude::*;

        /// One step against both the heap and the reference model.
        #[derive(Debug, Clone)]
        enum Step {
            /// Arm a timer `at` ms after the base for a new waiter.
            Insert { at: u16 },
            /// Make waiter `pick` (modulo the live ones) stale.
            Cancel { pick: u16 },
            /// Advance the clock to `to` ms and pop everything due.
            Advance { to: u16 },
        }

        fn step() -> impl Strategy<Value = Step> {
            prop_oneof![
                4 => (0u16..200).prop_map(|at| Step::Insert { at }),
                1 => any::<u16>().prop_map(|pick| Step::Cancel { pick }),
                2 => (0u16..220).prop_map(|to| Step::Advance { to }),
            ]
        }

        proptest! {
            /// The heap pops exactly the live entries that are due, in
            /// (deadline, insertion) order, like a sorted list would, and
            /// never one before its deadline, whatever the mix of inserts,
            /// cancellations and compactions.
            #[test]
            fn heap_matches_a_sorted_list(steps in proptest::collection::vec(step(), 1..400)) {
                let base = Instant::now();
                let ms = |m: u16| base + Duration::from_millis(m as u64);
                let mut heap = Timers::default();
                // The model: (deadline, seq, key) of live entries.
                let mut model: Vec<(Instant, u64, usize)> = Vec::new();
                let mut live = std::collections::HashSet::new();
                let mut next_key = 0usize;
                let mut seq = 0u64;
                let mut now = base;
                for s in steps {
                    match s {
                        Step::Insert { at } => {
                            let w = WaitToken { key: next_key, token: next_key as u64 + 1 };
                            heap.insert(ms(at), w, TimerKind::Sleep);
                            model.push((ms(at), seq, next_key));
                            live.insert(next_key);
                            next_key += 1;
                            seq += 1;
                        }
                        Step::Cancel { pick } => {
                            if !model.is_empty() {
                                let i = pick as usize % model.len();
                                let (_, _, key) = model.remove(i);
                                live.remove(&key);
                                let l = live.clone();
                                heap.mark_stale(move |w| l.contains(&w.key));
                            }
                        }
                        Step::Advance { to } => {
                            now = now.max(ms(to));
                            let mut got = Vec::new();
                            while let Some(e) = heap.pop_due(now) {
                                prop_assert!(e.deadline <= now, "fired early");
                                if live.remove(&e.waiter.key) {
                                    got.push(e.waiter.key);
                                } else {
                                    heap.popped_stale();
                                }
                            }
                            model.sort();
                            let due: Vec<usize> = model
                                .iter()
                                .filter(|(d, _, _)| *d <= now)
                                .map(|(_, _, k)| *k)
                                .collect();
                            model.retain(|(d, _, _)| *d > now);
                            prop_assert_eq!(got, due);
                        }
                    }
                    let l = live.clone();
                    let next = heap.next_deadline(move |w| l.contains(&w.key));
                    let expect = model.iter().map(|(d, _, _)| *d).min();
                    prop_assert_eq!(next, expect);
                }
            }
        }
    }

    #[test]
    fn compaction_keeps_only_live_entries() {
        let mut t = Timers::default();
        let now = Instant::now();
        for k in 0..4000 {
            t.insert(
                now + Duration::from_millis(k as u64),
                w(k),
                TimerKind::Sleep,
            );
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
