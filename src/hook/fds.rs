//! What the hook knows about descriptors: what kind each is (a socket, a
//! pipe, anything else), and its registration with this thread's reactor.
//!
//! Kept per thread, in a table indexed by descriptor number, because a
//! registration belongs to the thread's scheduler. A descriptor number is
//! reused as soon as it is closed, on any thread, so every entry carries
//! the process-wide *generation* of its number at the time it was made:
//! the `close` hook bumps the generation (from any thread), and an entry
//! whose generation is behind is stale and made anew. A descriptor closed
//! without the hook seeing it (`dup2` over it, a raw system call, the C
//! library's own internal `close`) is caught on the way to a wait: a
//! registration also remembers the file's device and inode, checked with
//! `fstat` before every wait.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use libc::c_int;

use crate::protocol::{IoId, SchedulerId};
use crate::scheduler;

/// Descriptor numbers below this have a generation of their own; higher
/// ones share generation 0 (their kind is then looked up again only if a
/// call finds it wrong, and their registrations rest on the inode check).
const TRACKED: usize = 1 << 16;

/// The generation of each descriptor number: bumped by every `close` the
/// hook sees. 256 KiB of zeroed memory, touched only where used.
static GENERATION: [AtomicU32; TRACKED] = [const { AtomicU32::new(0) }; TRACKED];

/// What a descriptor is, as far as the hook cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// Not looked at yet (or stale).
    Unknown,
    /// A socket: calls are made with `MSG_DONTWAIT`.
    Socket,
    /// A pipe or FIFO: the task waits for readiness, then makes the plain
    /// call.
    Pipe,
    /// A regular file, a terminal, a device, anything else: the plain call.
    Other,
}

/// Bumped by every `setsockopt` of `SO_RCVTIMEO` or `SO_SNDTIMEO` the hook
/// sees, on any descriptor and any thread: the socket timeouts kept in the
/// entries are good while it stays what it was when they were read. One
/// counter for all descriptors, because a duplicate of a descriptor (its
/// own number) shares its socket's options.
static TIMEOUTS_EPOCH: AtomicU32 = AtomicU32::new(0);

/// A socket's timeouts as last read, and the epoch they were read in.
#[derive(Clone, Copy, Debug)]
struct Timeouts {
    epoch: u32,
    read: Option<Duration>,
    write: Option<Duration>,
}

/// One registration with a reactor.
#[derive(Clone, Copy, Debug)]
struct Reg {
    sched: SchedulerId,
    io: IoId,
    dev: u64,
    ino: u64,
}

/// The hook's record of one descriptor number on this thread.
#[derive(Clone, Copy, Debug)]
struct Entry {
    /// The number's generation when this entry was made.
    gen: u32,
    kind: Kind,
    reg: Option<Reg>,
    /// The socket's timeouts, once read.
    timeouts: Option<Timeouts>,
}

const EMPTY: Entry = Entry {
    gen: 0,
    kind: Kind::Unknown,
    reg: None,
    timeouts: None,
};

/// This thread's entries: by index below [`TRACKED`] (grown on demand),
/// in a map above, so that one high descriptor number does not cost a
/// table that long.
#[derive(Debug, Default)]
struct Table {
    low: Vec<Entry>,
    high: HashMap<c_int, Entry>,
}

impl Table {
    fn entry(&mut self, fd: c_int) -> &mut Entry {
        let i = fd as usize;
        if i >= TRACKED {
            return self.high.entry(fd).or_insert(EMPTY);
        }
        if self.low.len() <= i {
            self.low.resize(i + 1, EMPTY);
        }
        &mut self.low[i]
    }

    fn get_mut(&mut self, fd: c_int) -> Option<&mut Entry> {
        let i = fd as usize;
        if i >= TRACKED {
            self.high.get_mut(&fd)
        } else {
            self.low.get_mut(i)
        }
    }
}

thread_local! {
    /// This thread's entries. Never borrowed across a pause.
    static TABLE: RefCell<Option<Table>> = const { RefCell::new(None) };
}

/// The current generation of `fd`'s number.
#[inline]
fn generation(fd: c_int) -> u32 {
    GENERATION
        .get(fd as usize)
        .map_or(0, |g| g.load(Ordering::Acquire))
}

/// Runs `f` on this thread's entry for `fd` (stale entries reset first).
/// A stale registration found on the way is freed once the table is let
/// go of (freeing it may wake wakers, which may call back in). `None`
/// when the table is in use already: a call made from inside the hook's
/// own bookkeeping (a signal handler's `write`, say), which then gets the
/// plain treatment.
fn with_entry<R>(fd: c_int, f: impl FnOnce(&mut Entry) -> R) -> Option<R> {
    let gen = generation(fd);
    let (r, stale) = TABLE.with(|t| {
        let mut t = t.try_borrow_mut().ok()?;
        let e = t.get_or_insert_with(Table::default).entry(fd);
        let mut stale = None;
        if e.gen != gen {
            stale = e.reg.take();
            *e = Entry { gen, ..EMPTY };
        }
        Some((f(e), stale))
    })?;
    if let Some(reg) = stale {
        forget(reg);
    }
    Some(r)
}

/// The kind of `fd`, looked up with `fstat` the first time.
pub(super) fn kind(fd: c_int) -> Kind {
    if fd < 0 {
        return Kind::Other;
    }
    let Some(known) = with_entry(fd, |e| e.kind) else {
        return Kind::Other;
    };
    if known != Kind::Unknown {
        return known;
    }
    let kind = match stat(fd) {
        Some(st) => match st.st_mode & libc::S_IFMT {
            libc::S_IFSOCK => Kind::Socket,
            libc::S_IFIFO => Kind::Pipe,
            _ => Kind::Other,
        },
        // A bad descriptor: the plain call reports it.
        None => return Kind::Other,
    };
    let _ = with_entry(fd, |e| e.kind = kind);
    kind
}

/// The socket timeout of `fd` for reads (`write`: writes), from this
/// thread's entry while no `setsockopt` of a timeout came since it was
/// read, else from `read_both(write)`, called for both directions and kept.
pub(super) fn socket_timeout(
    fd: c_int,
    write: bool,
    read_both: impl Fn(bool) -> Option<Duration>,
) -> Option<Duration> {
    let epoch = TIMEOUTS_EPOCH.load(Ordering::Acquire);
    let pick = |t: Timeouts| if write { t.write } else { t.read };
    if let Some(Some(t)) = with_entry(fd, |e| e.timeouts.filter(|t| t.epoch == epoch)) {
        return pick(t);
    }
    let t = Timeouts {
        epoch,
        read: read_both(false),
        write: read_both(true),
    };
    let _ = with_entry(fd, |e| e.timeouts = Some(t));
    pick(t)
}

/// Called by the `setsockopt` hook, on any thread, when a socket's timeout
/// changes: every kept timeout is read again before its next use.
pub(super) fn timeouts_changed() {
    TIMEOUTS_EPOCH.fetch_add(1, Ordering::AcqRel);
}

/// Forgets what kind `fd` was: a call found it was not what the entry
/// said (a number closed and reused where the hook did not see it).
pub(super) fn forget_kind(fd: c_int) {
    let _ = with_entry(fd, |e| e.kind = Kind::Unknown);
}

/// `fstat` of `fd`.
fn stat(fd: c_int) -> Option<libc::stat> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `st` has room for a `stat`, which the call fills on success.
    let r = unsafe { libc::fstat(fd, st.as_mut_ptr()) };
    // SAFETY: filled by the successful call.
    (r == 0).then(|| unsafe { st.assume_init() })
}

/// True if the library made `fd` non-blocking (`O_NONBLOCK` on its file
/// description): its calls then go through untouched.
pub(super) fn nonblocking(fd: c_int) -> bool {
    // SAFETY: F_GETFL takes no argument and touches no memory.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    flags != -1 && flags & libc::O_NONBLOCK != 0
}

/// `fd`'s registration with this thread's scheduler's reactor, made on
/// first use (and again when the descriptor number names another file
/// than when it was made).
///
/// # Errors
///
/// The reactor's (say `EPERM` for a descriptor that cannot be polled), or
/// `EBADF`.
pub(super) fn registration(fd: c_int) -> io::Result<IoId> {
    let st = stat(fd).ok_or_else(io::Error::last_os_error)?;
    let (dev, ino) = (st.st_dev, st.st_ino);
    let sched = scheduler::try_with_scheduler(|s| s.id)
        .ok_or_else(|| io::Error::from_raw_os_error(libc::EPERM))?;
    let busy = || io::Error::from_raw_os_error(libc::EBUSY);
    let (known, stale) = with_entry(fd, |e| match e.reg {
        Some(r)
            if r.sched == sched
                && r.dev == dev
                && r.ino == ino
                && scheduler::with_scheduler("the hook", |s| s.is_registered(r.io)) =>
        {
            (Some(r.io), None)
        }
        // Another file under the same number, closed behind our back, or a
        // registration of an earlier run: drop it without telling the
        // poller, which would act on the new file.
        Some(_) => (None, e.reg.take()),
        None => (None, None),
    })
    .ok_or_else(busy)?;
    if let Some(r) = stale {
        forget(r);
    }
    if let Some(io) = known {
        return Ok(io);
    }
    let io = scheduler::with_scheduler("the hook", |s| s.register_shared(fd))?;
    // Not recorded if the table is busy: the next registration then takes
    // this one over (see `Reactor::register`).
    let _ = with_entry(fd, |e| {
        e.reg = Some(Reg {
            sched,
            io,
            dev,
            ino,
        })
    });
    Ok(io)
}

/// Frees a stale registration's slot in its reactor, if that is this
/// thread's and free to touch now (else it stays until the run ends).
fn forget(reg: Reg) {
    let _ = scheduler::try_with_scheduler(|s| {
        if s.id == reg.sched {
            s.try_deregister(reg.io, true);
        }
    });
}

/// Called by the `close` hook before the descriptor closes, on any
/// thread: bumps the number's generation, and takes the descriptor out of
/// this thread's reactor if the hook registered it here.
pub(super) fn closing(fd: c_int) {
    if fd < 0 {
        return;
    }
    let gen = generation(fd);
    if let Some(g) = GENERATION.get(fd as usize) {
        g.fetch_add(1, Ordering::AcqRel);
    }
    let reg = TABLE
        .try_with(|t| {
            let mut t = t.try_borrow_mut().ok()?;
            let e = t.as_mut()?.get_mut(fd)?;
            let reg = e.reg.take().map(|r| (r, e.gen == gen));
            *e = EMPTY;
            reg
        })
        .ok()
        .flatten();
    if let Some((reg, current)) = reg {
        let _ = scheduler::try_with_scheduler(|s| {
            if s.id == reg.sched {
                // Still open, and (if the entry is current) the very file
                // registered: the poller is told, which also covers a
                // duplicate of the descriptor that stays open.
                s.try_deregister(reg.io, !current);
            }
        });
    }
}
