//! The deadline heap: which parked task to wake next, and when.
//!
//! A min-heap of `(deadline, seq)` keys. `seq` grows with every insertion,
//! so entries with equal deadlines come out in the order they were set
//! (FIFO), and no two keys are ever equal.
//!
//! Most deadlines arrive in order: a thousand tasks that each sleep one
//! second, or each wait five seconds for a read, set deadlines that only
//! grow. Those skip the heap: an entry whose key is not below the last one
//! in a plain queue beside it is appended there, and the earliest entry is
//! whichever of the two fronts is smaller. Setting and firing such a
//! deadline is then O(1) and walks memory in order, where the heap's
//! O(log n) pop touches a cache line on each of its ~20 levels at a
//! million entries. Deadlines out of order go to the heap.
//!
//! ```text
//!   in order:  ┌─────────────────────────────┐
//!              │ queue  d1 ≤ d2 ≤ d3 ≤ ...   │──┐
//!              └─────────────────────────────┘  ├─▶ earliest of the fronts
//!   otherwise: ┌─────────────────────────────┐  │
//!              │ heap (min on top)           │──┘
//!              └─────────────────────────────┘
//! ```
//!
//! An entry is 32 bytes: the deadline is kept as nanoseconds from the
//! heap's creation and the timer's kind rides in the lowest bit of `seq`,
//! since a million sleeping tasks hold a million entries.
//!
//! Removal is lazy: when a task stops waiting for a timer (its socket became
//! ready first, or it was cancelled) its entry stays in the heap and is
//! skipped when it surfaces, because the [`WaitToken`] token it carries no
//! longer matches the task's current wait. Counting those stale entries lets
//! the heap rebuild itself without them once they are the majority, so it
//! stays O(log live) and bounded in memory.

use std::cell::Cell;
use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};
use std::task::Waker;
use std::time::{Duration, Instant};

use slab::Slab;

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

/// A timer that fired.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    /// When it was due.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) deadline: Instant,
    pub(crate) waiter: WaitToken,
    /// What firing means.
    pub(crate) kind: TimerKind,
}

/// One armed timer as stored, ordered by `(at, seq)`.
#[derive(Clone, Copy, Debug)]
struct Slot {
    /// The deadline, in nanoseconds after [`Timers::epoch`] (negative for
    /// a deadline before it): exact, and half the size of an `Instant`.
    at: i64,
    /// Insertion number, shifted left by one, breaking deadline ties
    /// first-in, first-out; the lowest bit is set for a
    /// [`TimerKind::Deadline`].
    seq: u64,
    waiter: WaitToken,
}

impl PartialEq for Slot {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Slot {}
impl PartialOrd for Slot {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Slot {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

impl Slot {
    fn kind(&self) -> TimerKind {
        if self.seq & 1 == 0 {
            TimerKind::Sleep
        } else {
            TimerKind::Deadline
        }
    }
}

/// The heap, the in-order queue beside it, and their bookkeeping.
#[derive(Debug)]
pub(crate) struct Timers {
    /// The instant deadlines are counted from.
    epoch: Instant,
    /// Entries that came out of order.
    heap: BinaryHeap<Reverse<Slot>>,
    /// Entries that came in order.
    /// # Invariant
    /// Sorted: each entry's key is at least the one before it.
    queue: VecDeque<Slot>,
    next_seq: u64,
    /// Entries known to be stale (their wait ended some other way).
    /// # Invariant
    /// `stale <= heap.len() + queue.len()`.
    stale: usize,
}

impl Default for Timers {
    fn default() -> Self {
        Timers {
            epoch: Instant::now(),
            heap: BinaryHeap::new(),
            queue: VecDeque::new(),
            next_seq: 0,
            stale: 0,
        }
    }
}

/// Below this many entries the heap is never compacted: small heaps are
/// cheap to skip through.
const COMPACT_MIN: usize = 1024;

/// Which of the two holds the earliest entry.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Front {
    Queue,
    Heap,
}

impl Timers {
    /// `t` as nanoseconds after the epoch (saturating: i64 spans ±292 years).
    fn offset(&self, t: Instant) -> i64 {
        match t.checked_duration_since(self.epoch) {
            Some(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
            None => i64::try_from((self.epoch - t).as_nanos()).map_or(i64::MIN, |n| -n),
        }
    }

    /// The instant `at` nanoseconds after the epoch.
    fn instant(&self, at: i64) -> Instant {
        let d = Duration::from_nanos(at.unsigned_abs());
        if at >= 0 {
            self.epoch + d
        } else {
            self.epoch - d
        }
    }

    /// Arms a timer for `waiter` at `deadline`.
    pub(crate) fn insert(&mut self, deadline: Instant, waiter: WaitToken, kind: TimerKind) {
        let seq = self.next_seq << 1 | u64::from(kind == TimerKind::Deadline);
        self.next_seq += 1;
        let slot = Slot {
            at: self.offset(deadline),
            seq,
            waiter,
        };
        // `seq` only grows, so a deadline no earlier than the queue's last
        // keeps the queue sorted.
        match self.queue.back() {
            Some(last) if last.at > slot.at => self.heap.push(Reverse(slot)),
            _ => self.queue.push_back(slot),
        }
    }

    /// Entries armed and not known to be stale.
    pub(crate) fn pending(&self) -> usize {
        self.len() - self.stale
    }

    /// Every entry, stale ones included, with its deadline.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (WaitToken, Instant)> + '_ {
        let slots = self.heap.iter().map(|r| &r.0).chain(self.queue.iter());
        slots.map(|s| (s.waiter, self.instant(s.at)))
    }

    /// Entries in the heap and the queue, stale ones included.
    pub(crate) fn len(&self) -> usize {
        self.heap.len() + self.queue.len()
    }

    /// Notes that one armed entry went stale; rebuilds the heap and queue
    /// without the stale entries once they are more than half of them.
    /// `live` says whether an entry's waiter is still waiting.
    #[inline]
    pub(crate) fn mark_stale(&mut self, live: impl Fn(WaitToken) -> bool) {
        self.stale = (self.stale + 1).min(self.len());
        if self.len() >= COMPACT_MIN && self.stale * 2 > self.len() {
            self.compact(&live);
        }
    }

    /// Drops every stale entry. Rare, and kept out of line so that the
    /// wake-ups that call [`mark_stale`](Self::mark_stale) stay small.
    #[cold]
    #[inline(never)]
    fn compact(&mut self, live: &dyn Fn(WaitToken) -> bool) {
        let entries = std::mem::take(&mut self.heap).into_vec();
        self.heap = entries.into_iter().filter(|e| live(e.0.waiter)).collect();
        self.queue.retain(|e| live(e.waiter));
        self.stale = 0;
    }

    /// Where the earliest entry is, if any.
    fn front(&self) -> Option<(Front, Slot)> {
        match (self.queue.front(), self.heap.peek()) {
            (Some(q), Some(h)) if h.0 < *q => Some((Front::Heap, h.0)),
            (Some(q), _) => Some((Front::Queue, *q)),
            (None, Some(h)) => Some((Front::Heap, h.0)),
            (None, None) => None,
        }
    }

    /// Removes the earliest entry, which is in `from`.
    fn pop_front(&mut self, from: Front) {
        match from {
            Front::Queue => {
                self.queue.pop_front();
            }
            Front::Heap => {
                self.heap.pop();
            }
        }
    }

    /// Removes and returns the earliest entry if it is due at `now`.
    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<Entry> {
        let (from, top) = self.front()?;
        // A deadline equal to `now` is due: a sleeper is woken at or after
        // its deadline, never before.
        if top.at <= self.offset(now) {
            self.pop_front(from);
            Some(Entry {
                deadline: self.instant(top.at),
                waiter: top.waiter,
                kind: top.kind(),
            })
        } else {
            None
        }
    }

    /// The earliest deadline of a live entry, dropping stale ones on top.
    pub(crate) fn next_deadline(&mut self, live: impl Fn(WaitToken) -> bool) -> Option<Instant> {
        while let Some((from, top)) = self.front() {
            if live(top.waiter) {
                return Some(self.instant(top.at));
            }
            self.pop_front(from);
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
        self.heap.is_empty() && self.queue.is_empty()
    }
}

/// Timers that wake a future's [`Waker`] rather than a task: the timers
/// behind [`Sleep`](crate::Sleep).
///
/// A heap of their own (the same [`Timers`], its entries' `WaitToken`
/// naming a slot here instead of a task), so that a task's wake-up never
/// has to ask which kind of timer it is looking at. Each armed timer holds
/// its future's latest waker in a slot; the slot's serial tells a live
/// entry from one whose future was dropped or re-armed, and such stale
/// entries are skipped and counted like the task timers' ones.
#[derive(Debug, Default)]
pub(crate) struct WakerTimers {
    heap: Timers,
    /// The armed timers: the serial their heap entry carries, and the
    /// waker to wake when it fires.
    slots: Slab<(u64, Waker)>,
    next_serial: u64,
}

impl WakerTimers {
    /// Is the slot named by `w` still armed under that serial?
    fn live(slots: &Slab<(u64, Waker)>, w: WaitToken) -> bool {
        slots
            .get(w.key)
            .is_some_and(|(serial, _)| *serial == w.token)
    }

    /// How many armed timers hold a waker that wakes what `waker` wakes.
    pub(crate) fn holds_of(&self, waker: &Waker) -> usize {
        self.slots
            .iter()
            .filter(|(_, (_, w))| w.will_wake(waker))
            .count()
    }

    /// Arms a timer that wakes `waker` at `deadline`; returns its name.
    pub(crate) fn arm(&mut self, deadline: Instant, waker: Waker) -> WaitToken {
        self.next_serial += 1;
        let token = self.next_serial;
        let key = self.slots.insert((token, waker));
        let w = WaitToken { key, token };
        self.heap.insert(deadline, w, TimerKind::Sleep);
        w
    }

    /// Files `waker` as the one to wake for the armed timer `w`. Returns
    /// the waker it replaced, to be dropped by the caller outside the
    /// scheduler's state, and `false` if `w` is no longer armed (it fired).
    pub(crate) fn update(&mut self, w: WaitToken, waker: &Waker) -> (bool, Option<Waker>) {
        match self.slots.get_mut(w.key) {
            Some((serial, old)) if *serial == w.token => {
                if old.will_wake(waker) {
                    (true, None)
                } else {
                    (true, Some(std::mem::replace(old, waker.clone())))
                }
            }
            _ => (false, None),
        }
    }

    /// Disarms the timer `w` if it is still armed; returns its waker, to be
    /// dropped outside the scheduler's state.
    pub(crate) fn disarm(&mut self, w: WaitToken) -> Option<Waker> {
        if !Self::live(&self.slots, w) {
            return None;
        }
        let (_, waker) = self.slots.remove(w.key);
        let slots = &self.slots;
        self.heap.mark_stale(|x| Self::live(slots, x));
        Some(waker)
    }

    /// Moves the wakers of the timers due at `now` to `out`, disarming them.
    pub(crate) fn fire_due(&mut self, now: Instant, out: &mut Vec<Waker>) {
        while let Some(entry) = self.heap.pop_due(now) {
            if Self::live(&self.slots, entry.waiter) {
                out.push(self.slots.remove(entry.waiter.key).1);
            } else {
                self.heap.popped_stale();
            }
        }
    }

    /// The earliest deadline of an armed timer.
    pub(crate) fn next_deadline(&mut self) -> Option<Instant> {
        let slots = &self.slots;
        self.heap.next_deadline(|w| Self::live(slots, w))
    }

    /// True when no entry, live or stale, is in the heap.
    pub(crate) fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// How many timers are armed.
    pub(crate) fn armed(&self) -> usize {
        self.slots.len()
    }
}

/// The instant `d` from now; a duration too large to add is as good as
/// forever, so it gives [`far_future`] instead of overflowing.
pub(crate) fn deadline_after(d: Duration) -> Instant {
    now().checked_add(d).unwrap_or_else(far_future)
}

/// An instant about thirty years from now: "never", for deadline arithmetic.
pub(crate) fn far_future() -> Instant {
    now() + Duration::from_secs(86_400 * 365 * 30)
}

thread_local! {
    /// The paused clock of this thread's scheduler: the instant it shows,
    /// or `None` when the scheduler runs on real time.
    static PAUSED_AT: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// What time it is for the scheduler of this thread: the real monotonic
/// clock, or, under a paused clock (`start_paused`), the instant that
/// clock shows. Every deadline the runtime sets or checks reads it here.
#[inline]
pub(crate) fn now() -> Instant {
    PAUSED_AT.with(Cell::get).unwrap_or_else(Instant::now)
}

/// The paused clock's reading, if this thread's scheduler runs on one.
#[inline]
pub(crate) fn paused_at() -> Option<Instant> {
    PAUSED_AT.with(Cell::get)
}

/// Starts (`Some`, at that reading), moves, or ends (`None`) the paused
/// clock of this thread.
pub(crate) fn set_paused_at(at: Option<Instant>) {
    PAUSED_AT.with(|c| c.set(at));
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

    /// Counts wakes.
    #[derive(Default)]
    struct Count(std::sync::atomic::AtomicUsize);

    impl std::task::Wake for Count {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    /// Waker timers fire in deadline order and only when due; a disarmed
    /// one, or one whose waker was replaced, hands over nothing stale.
    #[test]
    fn waker_timers_fire_live_wakers_when_due() {
        use std::sync::Arc;
        let mut t = WakerTimers::default();
        let now = Instant::now();
        let ms = |m: u64| now + Duration::from_millis(m);
        let (a, b, c) = (
            Arc::new(Count::default()),
            Arc::new(Count::default()),
            Arc::new(Count::default()),
        );
        let wa = t.arm(ms(30), Waker::from(a.clone()));
        let wb = t.arm(ms(10), Waker::from(b.clone()));
        let wc = t.arm(ms(20), Waker::from(c.clone()));
        assert_eq!(t.next_deadline(), Some(ms(10)));
        assert!(t.disarm(wb).is_some());
        assert!(t.disarm(wb).is_none(), "disarmed twice");
        assert_eq!(t.next_deadline(), Some(ms(20)));
        // c's waker replaced by a's: c's own is handed back.
        let (armed, old) = t.update(wc, &Waker::from(a.clone()));
        assert!(armed && old.is_some());
        let mut out = Vec::new();
        t.fire_due(ms(19), &mut out);
        assert!(out.is_empty(), "nothing is due before 20 ms");
        t.fire_due(ms(30), &mut out);
        assert_eq!(out.len(), 2);
        out.drain(..).for_each(Waker::wake);
        assert_eq!(a.0.load(std::sync::atomic::Ordering::SeqCst), 2);
        assert_eq!(b.0.load(std::sync::atomic::Ordering::SeqCst), 0);
        assert_eq!(c.0.load(std::sync::atomic::Ordering::SeqCst), 0);
        // Fired: no longer armed, and the heap is empty.
        assert!(!t.update(wa, &Waker::from(a.clone())).0);
        assert_eq!(t.next_deadline(), None);
        assert!(t.is_empty());
    }

    #[test]
    fn nothing_fires_before_its_deadline() {
        let mut t = Timers::default();
        let now = Instant::now();
        t.insert(now + Duration::from_millis(5), w(1), TimerKind::Sleep);
        assert!(t.pop_due(now).is_none());
        assert!(t.pop_due(now + Duration::from_millis(5)).is_some());
    }

    /// Deadlines out of order go to the heap, in order to the queue; the
    /// two still give one order, ties first-in, first-out across both, and
    /// every entry keeps its kind and deadline, even one before the heap's
    /// creation.
    #[test]
    fn queue_and_heap_merge_in_key_order() {
        let before = Instant::now();
        let mut t = Timers::default();
        let at = |ms: u64| t.epoch + Duration::from_millis(ms);
        let (d5, d3, d7) = (at(5), at(3), at(7));
        t.insert(d5, w(0), TimerKind::Sleep); // queue
        t.insert(d7, w(1), TimerKind::Deadline); // queue
        t.insert(d5, w(2), TimerKind::Deadline); // heap: before 7
        t.insert(d3, w(3), TimerKind::Sleep); // heap
        t.insert(before, w(4), TimerKind::Sleep); // heap, before the epoch
        assert_eq!(t.len(), 5);
        let got: Vec<(usize, TimerKind, Instant)> = std::iter::from_fn(|| t.pop_due(d7))
            .map(|e| (e.waiter.key, e.kind, e.deadline))
            .collect();
        assert_eq!(
            got,
            vec![
                (4, TimerKind::Sleep, before),
                (3, TimerKind::Sleep, d3),
                (0, TimerKind::Sleep, d5),
                (2, TimerKind::Deadline, d5),
                (1, TimerKind::Deadline, d7),
            ]
        );
        assert!(t.is_empty());
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
