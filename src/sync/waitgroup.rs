//! [`WaitGroup`] and [`Barrier`] across threads.

use std::fmt;

use super::waiters::{self, lock, Queued, Waiters};
use crate::sync::local::BarrierWaitResult;
use crate::sync::waitq::Woken;
use crate::sys::threads::Mutex as StdMutex;

/// Waits for a collection of jobs on any workers or threads to finish,
/// like Go's `sync.WaitGroup`.
///
/// [`add`](Self::add) counts jobs in, [`done`](Self::done) counts one out,
/// and [`wait`](Self::wait) pauses the task (or blocks the plain thread)
/// until the count is zero. A waiter woken by the count reaching zero
/// returns even if the count went up again before it ran, as in Go. A
/// waiter that gives up just leaves: the count belongs to the jobs.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use yieldloop::{sync::WaitGroup, Runtime};
///
/// let wg = Arc::new(WaitGroup::new());
/// let rt = Runtime::builder().workers(2).build().unwrap();
/// for i in 0..4 {
///     wg.add(1);
///     let wg = wg.clone();
///     rt.spawn_on(i % 2, move || {
///         yieldloop::yield_now();
///         wg.done();
///     });
/// }
/// wg.wait(); // a plain thread: blocks
/// assert_eq!(wg.count(), 0);
/// ```
#[derive(Default)]
pub struct WaitGroup {
    state: StdMutex<WgState>,
}

#[derive(Default)]
struct WgState {
    count: usize,
    waiters: Waiters,
}

impl Queued for WgState {
    type Kind = ();
    fn waiters(&mut self) -> &mut Waiters {
        &mut self.waiters
    }
}

impl WaitGroup {
    /// A wait group with a count of zero.
    pub fn new() -> WaitGroup {
        WaitGroup::default()
    }

    /// Adds `n` to the count.
    pub fn add(&self, n: usize) {
        lock(&self.state).count += n;
    }

    /// Takes one from the count; at zero, every waiter wakes.
    ///
    /// # Panics
    ///
    /// Panics if the count is zero already (more `done`s than `add`s), as
    /// Go's does.
    pub fn done(&self) {
        let mut st = lock(&self.state);
        assert!(
            st.count > 0,
            "yieldloop: WaitGroup::done called more times than add counted"
        );
        st.count -= 1;
        if st.count == 0 {
            let wakes = st.waiters.wake_all();
            drop(st);
            waiters::wake_all(wakes);
        }
    }

    /// The count now.
    pub fn count(&self) -> usize {
        lock(&self.state).count
    }

    /// Waits until the count is zero; returns at once if it is.
    ///
    /// # Panics
    ///
    /// Panics if it must pause in a task that is unwinding.
    pub fn wait(&self) {
        crate::task::coop::proceed();
        let st = lock(&self.state);
        if st.count == 0 {
            return;
        }
        // Only `done` wakes a waiter with no deadline.
        let _ = waiters::wait(
            &self.state,
            st,
            (),
            None,
            waiters::nothing,
            |_, _| Vec::new(),
            "a WaitGroup",
        );
    }
}

impl fmt::Debug for WaitGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = lock(&self.state);
        f.debug_struct("WaitGroup")
            .field("count", &st.count)
            .field("waiting", &st.waiters.len())
            .finish()
    }
}

/// Lets `n` tasks or threads, on any workers, wait for each other: each
/// [`wait`](Self::wait) pauses (or blocks) until `n` have called it, then
/// all go on together, and the barrier is ready for the next round.
///
/// # Cancellation
///
/// A task unwound while waiting withdraws its arrival: the round then
/// waits for another to take its place. (Once the round is complete it
/// counted.)
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use yieldloop::{sync::Barrier, Runtime};
///
/// let barrier = Arc::new(Barrier::new(3));
/// let rt = Runtime::builder().workers(2).build().unwrap();
/// let tasks: Vec<_> = (0..2)
///     .map(|w| {
///         let b = barrier.clone();
///         rt.spawn_on(w, move || b.wait().is_leader())
///     })
///     .collect();
/// let mut leaders = usize::from(barrier.wait().is_leader()); // a plain thread
/// for t in tasks {
///     leaders += usize::from(t.join().unwrap());
/// }
/// assert_eq!(leaders, 1);
/// ```
pub struct Barrier {
    n: usize,
    state: StdMutex<BarrierState>,
}

struct BarrierState {
    /// Waiters of the current round.
    arrived: usize,
    /// Rounds completed; a waiter knows its round is over when it changes.
    generation: u64,
    waiters: Waiters,
}

impl Queued for BarrierState {
    type Kind = ();
    fn waiters(&mut self) -> &mut Waiters {
        &mut self.waiters
    }
}

impl Barrier {
    /// A barrier for `n` waiters. `n` of 0 or 1 never waits.
    pub fn new(n: usize) -> Barrier {
        Barrier {
            n,
            state: StdMutex::new(BarrierState {
                arrived: 0,
                generation: 0,
                waiters: Waiters::default(),
            }),
        }
    }

    /// Arrives and waits until `n` have arrived in this round.
    ///
    /// # Panics
    ///
    /// Panics if it must pause in a task that is unwinding.
    pub fn wait(&self) -> BarrierWaitResult {
        crate::task::coop::proceed();
        let mut st = lock(&self.state);
        st.arrived += 1;
        if st.arrived >= self.n {
            st.arrived = 0;
            st.generation += 1;
            let wakes = st.waiters.wake_all();
            drop(st);
            waiters::wake_all(wakes);
            return BarrierWaitResult::new(true);
        }
        let generation = st.generation;
        let (_st, woken) = waiters::wait(
            &self.state,
            st,
            (),
            None,
            waiters::nothing,
            // Unwound while the round is still open: un-arrive.
            move |st, _| {
                if st.generation == generation {
                    st.arrived -= 1;
                }
                Vec::new()
            },
            "a Barrier",
        );
        debug_assert_eq!(woken, Woken::All);
        BarrierWaitResult::new(false)
    }
}

impl fmt::Debug for Barrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = lock(&self.state);
        f.debug_struct("Barrier")
            .field("n", &self.n)
            .field("arrived", &st.arrived)
            .field("generation", &st.generation)
            .finish()
    }
}
