//! Waiting for children away from their task: on the blocking pool, and
//! for orphans (children whose [`Child`](super::Child) was dropped while
//! they ran) so that none is left a zombie.
//!
//! On Linux an orphan's pidfd goes to one process-wide reaper thread, which
//! sleeps in its own `mio::Poll` until some orphan exits, so any number of
//! long-lived orphans cost one idle thread. Elsewhere (and without pidfds)
//! an orphan is waited for on the blocking pool, holding one pool thread
//! until it exits.

use std::io;
use std::os::fd::OwnedFd;
use std::process::ExitStatus;
use std::sync::Arc;

use super::exit::Exit;
use crate::interop::from_thread::Handoff;

/// The outcome of a wait on the blocking pool, for the task that waits.
pub(crate) type PoolWait = Arc<Handoff<io::Result<ExitStatus>>>;

/// Starts a blocking-pool job that waits for `exit`'s child and reaps it,
/// and returns the slot its outcome arrives in. Dropping the slot leaves
/// the job running, so the child is still reaped.
pub(crate) fn wait_on_pool(exit: Arc<Exit>) -> PoolWait {
    let (slot, completer) = Handoff::new();
    // If no pool thread can run the job, the job is dropped, and with it
    // the completer, which reports a cancellation to the slot.
    drop(crate::interop::blocking::spawn_blocking(move || {
        completer.complete(Ok(exit.wait_blocking()));
    }));
    slot
}

/// Has `exit`'s child, still running, reaped once it exits: by the reaper
/// thread when there is a pidfd for it and the thread runs, else on the
/// blocking pool.
pub(crate) fn orphan(exit: Arc<Exit>, pidfd: Option<OwnedFd>) {
    let exit = match pidfd {
        Some(fd) => match by_pidfd::adopt(exit, fd) {
            Ok(()) => return,
            Err(exit) => exit,
        },
        None => exit,
    };
    drop(wait_on_pool(exit));
}

mod by_pidfd {
    //! The reaper thread: orphans' pidfds in a `mio::Poll` of its own
    //! (only where the platform has pidfds: see `sys`).

    use std::io;
    use std::os::fd::{AsRawFd, OwnedFd};
    use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
    use std::thread;
    use std::time::Duration;

    use mio::unix::SourceFd;
    use mio::{Events, Interest, Poll, Registry, Token};
    use slab::Slab;

    use super::super::exit::Exit;

    /// How soon an orphan whose exit was reported, but which could not be
    /// reaped yet, is tried again.
    const RETRY: Duration = Duration::from_millis(10);

    /// The reaper's state, shared by its thread and the threads handing it
    /// orphans.
    struct Reaper {
        /// Where orphans' pidfds are registered, from any thread.
        registry: Registry,
        /// The orphans, keyed by their `mio::Token`.
        orphans: Mutex<Slab<Orphan>>,
    }

    /// A child whose handle is gone.
    struct Orphan {
        exit: Arc<Exit>,
        /// Its pidfd, registered in the reaper's poll; closed with it.
        pidfd: OwnedFd,
    }

    /// The reaper, started on first use; `None` if it could not start.
    fn reaper() -> Option<&'static Arc<Reaper>> {
        static REAPER: OnceLock<Option<Arc<Reaper>>> = OnceLock::new();
        REAPER.get_or_init(|| start().ok()).as_ref()
    }

    fn start() -> io::Result<Arc<Reaper>> {
        let poll = Poll::new()?;
        let reaper = Arc::new(Reaper {
            registry: poll.registry().try_clone()?,
            orphans: Mutex::new(Slab::new()),
        });
        let r = reaper.clone();
        thread::Builder::new()
            .name("yieldloop-reaper".into())
            .stack_size(64 * 1024)
            .spawn(move || r.run(poll))?;
        Ok(reaper)
    }

    /// Hands the orphan over to the reaper thread, or gives it back if the
    /// thread is not available.
    pub(super) fn adopt(exit: Arc<Exit>, pidfd: OwnedFd) -> Result<(), Arc<Exit>> {
        let Some(r) = reaper() else { return Err(exit) };
        let mut orphans = r.lock();
        let entry = orphans.vacant_entry();
        // Registered with the lock held, so that the reaper, which takes
        // the lock for each event, finds the orphan in its slot. A child
        // that has exited already is reported at once.
        let registered = r.registry.register(
            &mut SourceFd(&pidfd.as_raw_fd()),
            Token(entry.key()),
            Interest::READABLE,
        );
        if registered.is_err() {
            return Err(exit);
        }
        entry.insert(Orphan { exit, pidfd });
        Ok(())
    }

    impl Reaper {
        fn lock(&self) -> MutexGuard<'_, Slab<Orphan>> {
            // Nothing panics with the lock held.
            self.orphans.lock().unwrap_or_else(|e| e.into_inner())
        }

        /// The thread's life: sleep until orphans exit, reap them.
        fn run(&self, mut poll: Poll) {
            let mut events = Events::with_capacity(64);
            // Orphans reported exited that could not be reaped yet.
            let mut retry: Vec<usize> = Vec::new();
            loop {
                let timeout = (!retry.is_empty()).then_some(RETRY);
                if let Err(e) = poll.poll(&mut events, timeout) {
                    if e.kind() != io::ErrorKind::Interrupted {
                        // Not expected from epoll; do not spin on it.
                        thread::sleep(Duration::from_millis(100));
                    }
                    continue;
                }
                let mut keys = std::mem::take(&mut retry);
                keys.extend(events.iter().map(|ev| ev.token().0));
                let mut orphans = self.lock();
                for key in keys {
                    let Some(orphan) = orphans.get(key) else {
                        continue;
                    };
                    if let Ok(None) = orphan.exit.try_reap() {
                        if !retry.contains(&key) {
                            retry.push(key);
                        }
                        continue;
                    }
                    // Reaped, or reaped by someone else: either way done.
                    let orphan = orphans.remove(key);
                    let _ = self
                        .registry
                        .deregister(&mut SourceFd(&orphan.pidfd.as_raw_fd()));
                }
            }
        }
    }
}
