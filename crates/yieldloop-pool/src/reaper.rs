//! The reaper: a task that closes idle connections once their idle timeout
//! or lifetime has passed, for a pool that sets either.
//!
//! A checkout never hands out an expired connection (it closes those it
//! finds on the way), so the reaper is only about not keeping connections
//! open at the server while nobody asks the pool. It sleeps until the next
//! idle connection expires, or, with none idle, one idle timeout (or
//! lifetime) at most: no polling. It starts on the scheduler of the
//! checkout that opens a connection while none runs, and stops once the
//! pool has no connection left, is dropped, or its scheduler ends; the
//! next connect opened from a task then starts another. A pool used only
//! from plain threads has none: its expired connections are closed at the
//! next checkout or return.

use std::sync::{Arc, Weak};

use crate::inner::Inner;
use crate::Manage;

/// Starts the reaper of `inner` on this thread's scheduler; the caller has
/// marked it running.
pub(crate) fn start<M: Manage>(inner: &Arc<Inner<M>>) {
    let weak = Arc::downgrade(inner);
    let spawned = yieldloop::Builder::new()
        .name("yieldloop-pool reaper")
        .spawn(move || run(weak));
    if spawned.is_err() {
        // No stack for a task: the checkouts still close what expires.
        inner.lock().reaper = false;
    }
}

/// The reaper's loop. It holds the pool weakly: a reaper never keeps a
/// pool alive.
fn run<M: Manage>(weak: Weak<Inner<M>>) {
    let mut running = Running(weak.clone());
    loop {
        // Not upgraded across the sleep.
        let next = match weak.upgrade() {
            Some(inner) => inner.reap(),
            None => break,
        };
        match next {
            Some(at) => yieldloop::sleep_until(at),
            // `reap` has marked the reaper stopped, under the pool's lock.
            None => break,
        }
    }
    running.0 = Weak::new();
}

/// Marks the reaper stopped if it is torn down while it sleeps (its
/// scheduler ended), so that the next connect starts another. Disarmed on
/// a normal end, where `reap` already did it: clearing the mark then could
/// clear a newer reaper's.
struct Running<M: Manage>(Weak<Inner<M>>);

impl<M: Manage> Drop for Running<M> {
    fn drop(&mut self) {
        if let Some(inner) = self.0.upgrade() {
            inner.lock().reaper = false;
        }
    }
}
