//! What the hook knows about descriptors: what kind each is (a socket, a
//! pipe, anything else), and its registration with this thread's reactor.
//!
//! The kind belongs to the descriptor number, so it is kept process-wide,
//! in a fixed table of atomic words indexed by number (zeroed memory of
//! the executable, touched only where used): looking it up, and learning
//! it with `fstat`, allocates nothing, takes no lock and touches no
//! thread-local state, so a signal handler's `write` to its self-pipe can
//! make it while the code it interrupted holds the allocator's lock. A
//! registration belongs to the thread's scheduler, so it is kept per
//! thread, in a table made on the thread's first wait (the one path that
//! allocates, and one a signal handler's call never takes: it only waits
//! on a descriptor left blocking).
//!
//! A descriptor number is reused as soon as it is closed, on any thread,
//! so each number has a process-wide *generation*, kept in the same word
//! as its kind: the `close` hook bumps the generation (from any thread)
//! and forgets the kind, and a per-thread entry whose generation is behind
//! is stale and made anew. A descriptor closed without the hook seeing it
//! (`dup2` over it, a raw system call, the C library's own internal
//! `close`) is caught on the way to a wait: a registration also remembers
//! the file's device and inode, checked with `fstat` before every wait.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use libc::c_int;

use crate::protocol::{IoId, SchedulerId};
use crate::scheduler;

/// Descriptor numbers below this have a word of their own (a generation
/// and a kind): Linux's default ceiling on descriptor numbers
/// (`fs.nr_open`). Higher ones share generation 0, and their kind is
/// looked up with `fstat` on each call (their registrations rest on the
/// inode check).
const TRACKED: usize = 1 << 20;

/// Per-thread entries below this number are kept by index, above it in a
/// map, so that one high descriptor number does not cost a table that
/// long.
const LOW: usize = 1 << 16;

/// The low two bits of a number's word: its kind (see [`Kind::bits`]).
const KIND_MASK: u32 = 0b11;
/// What one `close` adds to a number's word: the generation is the word
/// shifted right by two.
const GEN_STEP: u32 = 1 << 2;

/// The word of each descriptor number: its generation, bumped by every
/// `close` the hook sees, above the kind found for it since (two bits,
/// 0 for not looked at yet). 4 MiB of zeroed memory, touched only where
/// used.
// SAFETY: an `AtomicU32` has the size and bit validity of a `u32`, so an
// array of zeroed `u32`s is an array of `AtomicU32`s holding 0.
static WORDS: [AtomicU32; TRACKED] = unsafe { std::mem::transmute([0u32; TRACKED]) };

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

impl Kind {
    const fn bits(self) -> u32 {
        match self {
            Kind::Unknown => 0,
            Kind::Socket => 1,
            Kind::Pipe => 2,
            Kind::Other => 3,
        }
    }

    const fn from_bits(b: u32) -> Kind {
        match b & KIND_MASK {
            0 => Kind::Unknown,
            1 => Kind::Socket,
            2 => Kind::Pipe,
            _ => Kind::Other,
        }
    }
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

/// The hook's record of one descriptor number on this thread, for its
/// waits.
#[derive(Clone, Copy, Debug)]
struct Entry {
    /// The number's generation when this entry was made.
    gen: u32,
    reg: Option<Reg>,
    /// The socket's timeouts, once read.
    timeouts: Option<Timeouts>,
}

const EMPTY: Entry = Entry {
    gen: 0,
    reg: None,
    timeouts: None,
};

/// This thread's entries: by index below [`LOW`] (grown on demand), in a
/// map above.
#[derive(Debug, Default)]
struct Table {
    low: Vec<Entry>,
    high: HashMap<c_int, Entry>,
}

impl Table {
    fn entry(&mut self, fd: c_int) -> &mut Entry {
        let i = fd as usize;
        if i >= LOW {
            return self.high.entry(fd).or_insert(EMPTY);
        }
        if self.low.len() <= i {
            self.low.resize(i + 1, EMPTY);
        }
        &mut self.low[i]
    }

    fn get_mut(&mut self, fd: c_int) -> Option<&mut Entry> {
        let i = fd as usize;
        if i >= LOW {
            self.high.get_mut(&fd)
        } else {
            self.low.get_mut(i)
        }
    }
}

thread_local! {
    /// This thread's entries. Never borrowed across a pause. Touched only
    /// on the way to a wait, and by a `close` on a thread where that has
    /// happened ([`TABLE_MADE`]).
    static TABLE: RefCell<Option<Table>> = const { RefCell::new(None) };
    /// True once this thread has touched [`TABLE`]. A plain `Cell` without
    /// a destructor, so reading it is a plain load: no lazy
    /// initialisation, no destructor registered (which allocates), as a
    /// `close` from a signal handler or from a thread without a scheduler
    /// requires.
    static TABLE_MADE: Cell<bool> = const { Cell::new(false) };
}

/// The word of `fd`'s number, if it has one.
#[inline]
fn word(fd: c_int) -> Option<&'static AtomicU32> {
    WORDS.get(usize::try_from(fd).ok()?)
}

/// The current generation of `fd`'s number.
#[inline]
fn generation(fd: c_int) -> u32 {
    word(fd).map_or(0, |w| w.load(Ordering::Acquire) >> 2)
}

/// Runs `f` on this thread's entry for `fd` (stale entries reset first).
/// A stale registration found on the way is freed once the table is let
/// go of (freeing it may wake wakers, which may call back in). `None`
/// when the table is in use already: a call made from inside the hook's
/// own bookkeeping, which then gets the plain treatment.
///
/// Allocates (the table, and its growth): only for a wait.
fn with_entry<R>(fd: c_int, f: impl FnOnce(&mut Entry) -> R) -> Option<R> {
    let gen = generation(fd);
    TABLE_MADE.set(true);
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

/// The kind of `fd`, looked up with `fstat` the first time (for numbers
/// above [`TRACKED`], every time). Allocates nothing, takes no lock and
/// touches no thread-local state: safe in a signal handler.
#[inline]
pub(super) fn kind(fd: c_int) -> Kind {
    if fd < 0 {
        return Kind::Other;
    }
    let w = word(fd);
    let seen = w.map_or(0, |w| w.load(Ordering::Acquire));
    let known = Kind::from_bits(seen);
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
    // Kept unless a `close` (or another lookup) changed the word since.
    if let Some(w) = w {
        let _ = w.compare_exchange(
            seen,
            seen | kind.bits(),
            Ordering::AcqRel,
            Ordering::Relaxed,
        );
    }
    kind
}

/// The socket timeout of `fd` for reads (`write`: writes), from this
/// thread's entry while no `setsockopt` of a timeout came since it was
/// read, else from `read_both(write)`, called for both directions and kept.
/// Asked only on the way to a wait.
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

/// Forgets what kind `fd` was: a call found it was not what the word
/// said (a number closed and reused where the hook did not see it).
pub(super) fn forget_kind(fd: c_int) {
    if let Some(w) = word(fd) {
        let _ = w.fetch_and(!KIND_MASK, Ordering::AcqRel);
    }
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
/// thread: bumps the number's generation (forgetting its kind), and takes
/// the descriptor out of this thread's reactor if the hook registered it
/// here. On a thread that never waited in a hooked call, and in a child
/// process after `fork`, that is one atomic update and one plain
/// thread-local load: nothing allocated, no lock. (In the child, the
/// reactor's poller is the parent's too: telling it would take the
/// descriptor out of the parent's.)
pub(super) fn closing(fd: c_int) {
    if fd < 0 {
        return;
    }
    let gen = match word(fd) {
        Some(w) => {
            let was = w
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
                    Some((v & !KIND_MASK).wrapping_add(GEN_STEP))
                })
                .unwrap_or_else(|v| v);
            was >> 2
        }
        None => 0,
    };
    if !TABLE_MADE.get() || super::fork::forked() {
        return;
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
