//! [`PinnedToSchedulerThread`]: the marker that keeps an I/O object on the
//! thread of the scheduler it is registered with.

use std::marker::PhantomData;
use std::rc::Rc;

/// Held by every I/O object registered with a scheduler, so that the
/// object is neither `Send` nor `Sync`: its registration (the slot in the
/// reactor, the tasks waiting on it) lives in one thread's scheduler, and
/// only tasks of that scheduler can wait on it. Tasks never move between
/// threads, and neither does what they wait on.
///
/// It is a type of its own, not a bare `PhantomData<*const ()>`, for the
/// compiler's sake: moving a socket into `std::thread::spawn` or
/// [`spawn_blocking`](crate::spawn_blocking), or sharing a reference to
/// one with another thread, then fails with
/// "`Rc<PinnedToSchedulerThread>` cannot be sent (shared) between threads
/// safely", naming the reason. rustc names every `Rc` or `Cell` it finds
/// inside the type (and a raw pointer only if there is none), so nothing
/// else in a [`PausingIo`](super::PausingIo) is `!Send` or `!Sync`: its
/// per-thread state is kept in relaxed atomics, which cost what a `Cell`
/// costs, and this marker is the one thing the error names. To work with a
/// connection from another thread, pass the data through a
/// [channel](crate::sync), or let a task on that thread's own scheduler
/// open the connection.
#[derive(Debug)]
pub(crate) struct PinnedToSchedulerThread(PhantomData<Rc<PinnedToSchedulerThread>>);

impl PinnedToSchedulerThread {
    /// The marker, for the constructor of a type that holds it.
    pub(crate) const NEW: PinnedToSchedulerThread = PinnedToSchedulerThread(PhantomData);
}

#[cfg(test)]
pub(super) mod tests {
    use super::PinnedToSchedulerThread;

    /// Resolves only for a type that is not `Send`: for a `Send` one, the
    /// two blanket impls both apply and the call is ambiguous, which fails
    /// to compile. So a test calling it fails at build time if its type
    /// ever becomes `Send`.
    pub(in crate::io) trait AmbiguousIfSend<A> {
        fn not_send() {}
    }
    impl<T: ?Sized> AmbiguousIfSend<()> for T {}
    impl<T: ?Sized + Send> AmbiguousIfSend<u8> for T {}

    /// The same for `Sync`.
    pub(in crate::io) trait AmbiguousIfSync<A> {
        fn not_sync() {}
    }
    impl<T: ?Sized> AmbiguousIfSync<()> for T {}
    impl<T: ?Sized + Sync> AmbiguousIfSync<u8> for T {}

    #[test]
    fn the_marker_is_neither_send_nor_sync() {
        <PinnedToSchedulerThread as AmbiguousIfSend<_>>::not_send();
        <PinnedToSchedulerThread as AmbiguousIfSync<_>>::not_sync();
    }
}
