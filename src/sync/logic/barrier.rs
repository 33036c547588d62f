//! Waiters that wait for each other in rounds of `n`: the logic of
//! [`Barrier`](crate::sync::Barrier), in either flavor.

use std::fmt;

use crate::sync::flavor::{Flavor, Wakeups};
use crate::sync::wait;
use crate::sync::waiters::WithWaiters;

/// A barrier's rounds, behind the flavor's lock.
pub(crate) struct Barrier<F: Flavor> {
    n: usize,
    state: F::Lock<WithWaiters<F, Round>>,
}

struct Round {
    /// Waiters of the current round.
    arrived: usize,
    /// Rounds completed; a waiter knows its round is over when it changes.
    generation: u64,
}

impl<F: Flavor> Barrier<F> {
    /// A barrier for rounds of `n`. `n` of 0 or 1 never waits.
    pub(crate) fn new(n: usize) -> Self {
        Barrier {
            n,
            state: From::from(WithWaiters::new(Round {
                arrived: 0,
                generation: 0,
            })),
        }
    }

    /// Arrives and waits until `n` have arrived in this round; true for
    /// the last to arrive, the round's leader. A waiter unwound while the
    /// round is still open withdraws its arrival; once the round is
    /// complete it counted.
    ///
    /// # Panics
    ///
    /// If it must pause in a task that is unwinding, naming `what` as
    /// [`wait`](wait::wait) does; outside a task in the single-thread
    /// flavor.
    pub(crate) fn wait(&self, what: &'static str) -> bool {
        crate::task::coop::proceed();
        let mut st = F::lock(&self.state);
        st.arrived += 1;
        if st.arrived >= self.n {
            st.arrived = 0;
            st.generation += 1;
            let wakes = st.waiters.take_all();
            drop(st);
            wakes.wake();
            return true;
        }
        let generation = st.generation;
        loop {
            (st, _) = wait::wait(
                &self.state,
                st,
                (),
                None,
                wait::nothing,
                // Unwound while the round is still open: un-arrive.
                move |st: &mut WithWaiters<F, Round>, _| {
                    if st.generation == generation {
                        st.arrived -= 1;
                    }
                    F::Wakeups::default()
                },
                what,
            );
            if st.generation != generation {
                return false;
            }
        }
    }
}

impl<F: Flavor> fmt::Debug for Barrier<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = F::lock(&self.state);
        f.debug_struct("Barrier")
            .field("n", &self.n)
            .field("arrived", &st.arrived)
            .field("generation", &st.generation)
            .finish()
    }
}
