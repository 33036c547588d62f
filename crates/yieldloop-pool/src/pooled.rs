//! [`Pooled`]: a checked-out connection, and the place in the pool it
//! holds.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use crate::inner::{Inner, Slot, Why};
use crate::Manage;

/// A place in the pool, taken by a checkout: freed on drop, however the
/// checkout or its holder ends.
pub(crate) struct Place<M: Manage>(Arc<Inner<M>>);

impl<M: Manage> Place<M> {
    /// Owns a place the caller has just taken.
    pub(crate) fn new(inner: Arc<Inner<M>>) -> Place<M> {
        Place(inner)
    }
}

impl<M: Manage> Drop for Place<M> {
    fn drop(&mut self) {
        self.0.free_place();
    }
}

/// A connection checked out of a [`Pool`](crate::Pool); it dereferences to
/// the connection and goes back when dropped.
///
/// On drop the connection is closed instead ([`Manage::discard`]) when
/// [`Manage::is_broken`] says it is broken, when its lifetime has passed,
/// or when the holder is panicking (a task or thread that panics, or a
/// task unwound by a [`timeout`](yieldloop::timeout) or a cancel): a call
/// may have stopped half-way, so its state is unknown. Either way its place
/// is freed and the longest waiting checkout goes on.
pub struct Pooled<M: Manage> {
    /// `None` only while a checkout is still looking for a connection.
    conn: Option<Slot<M::Conn>>,
    /// Dropped after `conn` is dealt with (see `Drop`): the connection is
    /// back in the pool (or closed) before the next waiter is let in.
    place: Place<M>,
}

impl<M: Manage> Pooled<M> {
    /// A checkout holding `place` and no connection yet.
    pub(crate) fn new(place: Place<M>) -> Pooled<M> {
        Pooled { conn: None, place }
    }

    /// Puts `slot` in, and gives access to its connection.
    pub(crate) fn fill(&mut self, slot: Slot<M::Conn>) -> &mut M::Conn {
        &mut self.conn.insert(slot).conn
    }

    /// Closes the connection held, keeping the place.
    pub(crate) fn close(&mut self, why: Why) {
        if let Some(slot) = self.conn.take() {
            self.place.0.close(slot.conn, why);
        }
    }

    /// Closes the connection now instead of giving it back (a client that
    /// cannot tell from [`Manage::is_broken`] that this one is spoiled),
    /// and frees its place.
    pub fn discard(mut this: Pooled<M>) {
        this.close(Why::Discarded);
    }
}

impl<M: Manage> Deref for Pooled<M> {
    type Target = M::Conn;

    fn deref(&self) -> &M::Conn {
        &self.conn.as_ref().expect("present once checked out").conn
    }
}

impl<M: Manage> DerefMut for Pooled<M> {
    fn deref_mut(&mut self) -> &mut M::Conn {
        &mut self.conn.as_mut().expect("present once checked out").conn
    }
}

impl<M: Manage> Drop for Pooled<M> {
    fn drop(&mut self) {
        let Some(slot) = self.conn.take() else {
            return;
        };
        let inner = &self.place.0;
        if std::thread::panicking() || inner.config.manager.is_broken(&slot.conn) {
            inner.close(slot.conn, Why::Discarded);
        } else {
            inner.put_back(slot);
        }
        // `place` drops next and frees the place, handing it to the
        // longest waiter.
    }
}

impl<M: Manage> fmt::Debug for Pooled<M>
where
    M::Conn: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Pooled")
            .field(&self.conn.as_ref().map(|s| &s.conn))
            .finish()
    }
}
