//! The guarded stack pool.
//!
//! Every task runs on its own stack, and every stack needs a guard page below
//! it so that an overflow faults instead of silently overwriting a neighbour
//! (corosensei's `Stack` contract). Mapping each stack with its own `mmap` and
//! `mprotect`-ing its guard costs two kernel mappings per stack, and the
//! default `vm.max_map_count` of 65,530 then stops a process near 32,000
//! tasks. So stacks are carved from large chunks instead:
//!
//! ```text
//!  one chunk (one mapping, MAP_NORESERVE: only touched pages cost memory)
//!  ┌───────┬──────────────┬───────┬──────────────┬───────┬─────
//!  │ guard │   stack 0    │ guard │   stack 1    │ guard │ ...
//!  └───────┴──────────────┴───────┴──────────────┴───────┴─────
//!  low addresses                          stacks grow downwards ◀──
//! ```
//!
//! Guards are installed with `madvise(MADV_GUARD_INSTALL)` (Linux 6.13+),
//! which marks pages as faulting without splitting the mapping, so a chunk
//! stays one mapping however many stacks it holds; a chunk's guards go in
//! with one `process_madvise` call where the kernel accepts it. On older kernels the pool
//! falls back to `mprotect(PROT_NONE)`, which splits the mapping in two per
//! stack; running out of mappings is then reported with the sysctl to raise.
//! The environment variable `YIELDLOOP_STACK_GUARD=mprotect` forces the
//! fallback, to test or compare it.
//!
//! Elsewhere (macOS, FreeBSD, and Linux with the `portable` feature) guards
//! are always installed with `mprotect`. macOS and FreeBSD have no map
//! count limit like Linux's; their anonymous mappings are committed page by
//! page when touched, as `MAP_NORESERVE` asks for on Linux.
//!
//! Finished stacks go back to a per-thread free list and are reused by the
//! next spawn of the same size without any system call. Above a watermark,
//! returned stacks also give their memory back to the kernel
//! (`MADV_DONTNEED` on Linux, `MADV_FREE` elsewhere). Nothing relies on
//! what a reused stack holds: the task's record at its top is written
//! afresh at each spawn, and a coroutine writes every frame before reading
//! it. So it does not matter that Linux hands back zero pages while macOS
//! and FreeBSD may hand back the old contents.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io;
use std::num::NonZeroUsize;
use std::ptr;
use std::sync::atomic::{AtomicU8, Ordering};

use corosensei::stack::valgrind::ValgrindStackRegistration;
use corosensei::stack::{Stack, StackPointer};

/// The default stack size of a task: 64 KiB.
///
/// Stacks are reserved, not committed: a task only costs the pages it
/// actually touches (one or two for a typical I/O task), so the size costs
/// address space, not memory, with one exception: the kernel's page tables.
/// Every 2 MiB of address space that holds a touched page needs a 4 KiB
/// page-table page, so a task whose stack spans 256 KiB costs an eighth of
/// one (512 bytes) on top of its page, and a 64 KiB one a thirtieth (136
/// bytes): about 130 MB rather than 500 MB for a million tasks. 64 KiB is
/// still twice what a panic with `RUST_BACKTRACE=full` needs, and deep
/// enough for formatting, DNS lookups and a few levels of buffered readers
/// and parsers. Use [`Builder::stack_size`](crate::Builder::stack_size) for
/// deep recursion or large buffers on the stack; running out is reported
/// as an overflow that names the task, never a silent corruption. The main
/// task of [`run`](crate::run) gets more (256 KiB): there is one of it, and
/// it often holds a program's setup.
pub const DEFAULT_STACK_SIZE: usize = 64 * 1024;

/// The main task's stack size (see [`DEFAULT_STACK_SIZE`]).
pub(crate) const MAIN_STACK_SIZE: usize = 256 * 1024;

/// The smallest stack size [`Builder::stack_size`](crate::Builder::stack_size)
/// accepts (16 KiB); smaller requests are raised to it, since unwinding a
/// panic alone needs several KiB.
pub const MIN_STACK_SIZE: usize = 16 * 1024;

/// `MADV_GUARD_INSTALL`, Linux 6.13+; not yet in every libc release.
#[cfg(all(target_os = "linux", not(feature = "portable")))]
const MADV_GUARD_INSTALL: libc::c_int = 102;

/// Bytes of stacks (guards included) mapped at once, at most.
const CHUNK_BYTES: usize = 16 * 1024 * 1024;
/// Stacks per chunk, at most: small stacks still come in bounded batches.
const MAX_PER_CHUNK: usize = 64;
/// Free stacks of one size kept with their memory; stacks returned beyond
/// this many are handed back to the kernel with `MADV_DONTNEED` first.
const WARM_WATERMARK: usize = 1024;

/// How guards are installed, decided by the first chunk and then kept.
static GUARD_MODE: AtomicU8 = AtomicU8::new(GUARD_UNKNOWN);
const GUARD_UNKNOWN: u8 = 0;
const GUARD_MADVISE: u8 = 1;
const GUARD_MPROTECT: u8 = 2;

/// Flags of the mapping of a chunk. Linux is told not to reserve swap for
/// it (only touched pages count); macOS and FreeBSD never do for anonymous
/// memory, and FreeBSD has no such flag.
#[cfg(target_os = "linux")]
const CHUNK_FLAGS: libc::c_int = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE;
#[cfg(not(target_os = "linux"))]
const CHUNK_FLAGS: libc::c_int = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;

/// How free stacks beyond the watermark give their memory back. On Linux
/// `MADV_DONTNEED` drops the pages at once (they read back as zero); on
/// macOS and FreeBSD it is only a hint that keeps them, while `MADV_FREE`
/// lets the kernel take them (they read back as zero or as they were).
#[cfg(target_os = "linux")]
const TRIM_ADVICE: libc::c_int = libc::MADV_DONTNEED;
#[cfg(not(target_os = "linux"))]
const TRIM_ADVICE: libc::c_int = libc::MADV_FREE;
/// Whether one `madvise` may cover a run of neighbouring stacks with the
/// guard pages between them: Linux leaves guards as they are; elsewhere
/// each stack is advised alone, so a guard page never makes a call fail.
const TRIM_ACROSS_GUARDS: bool = cfg!(target_os = "linux");

/// The system page size, read once.
pub(crate) fn page_size() -> usize {
    static PAGE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    match PAGE.load(Ordering::Relaxed) {
        0 => {
            // SAFETY: sysconf has no memory-safety preconditions.
            let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
            let size = if size > 0 { size as usize } else { 4096 };
            PAGE.store(size, Ordering::Relaxed);
            size
        }
        size => size,
    }
}

/// Rounds a requested stack size to what the pool hands out.
pub(crate) fn round_size(bytes: usize) -> usize {
    let page = page_size();
    let bytes = bytes.clamp(MIN_STACK_SIZE, 1 << 40);
    // Page sizes are powers of two: a mask, not a division, on every spawn.
    debug_assert!(page.is_power_of_two());
    (bytes + page - 1) & !(page - 1)
}

/// A stack from the pool: `[limit, base)` with a guard page just below
/// `limit + page`. Goes back to its thread's pool when dropped.
#[derive(Debug)]
pub(crate) struct PooledStack {
    /// Highest address (the stack grows down from here).
    base: usize,
    /// Usable size in bytes, excluding the guard page.
    size: usize,
    /// Bytes at the top set aside by [`reserve_top`](Self::reserve_top);
    /// the coroutine's stack starts below them.
    reserved: usize,
    /// Tells valgrind (when running under it) that this range is a stack,
    /// so it follows the switches onto it; nothing otherwise.
    _valgrind: ValgrindStackRegistration,
}

impl PooledStack {
    /// Takes a stack of (at least) `bytes` bytes from this thread's pool.
    pub(crate) fn take(bytes: usize) -> io::Result<PooledStack> {
        let size = round_size(bytes);
        POOL.with(|p| p.borrow_mut().take(size))
    }

    /// Sets aside `bytes` at the top of the stack, aligned to 64, for the
    /// task's own record: that page is touched by the task's first frame
    /// anyway, so the record costs neither an allocation nor memory. The
    /// area stays valid, and untouched by the coroutine, until this stack is
    /// dropped; the stack the coroutine sees starts below it.
    ///
    /// # Panics
    ///
    /// If called twice, or for more than a page.
    pub(crate) fn reserve_top(&mut self, bytes: usize) -> std::ptr::NonNull<u8> {
        assert!(
            self.reserved == 0 && bytes <= page_size(),
            "bad stack reservation"
        );
        let start = (self.base - bytes) & !63;
        self.reserved = self.base - start;
        std::ptr::NonNull::new(start as *mut u8).expect("stack addresses are never null")
    }

    /// Where this stack's guard page is, for overflow reports.
    pub(crate) fn guard_info(&self) -> super::overflow::GuardInfo {
        let guard_lo = self.base - self.size - page_size();
        super::overflow::GuardInfo {
            guard_lo,
            guard_hi: guard_lo + page_size(),
            size: self.size,
            ..Default::default()
        }
    }
}

// SAFETY: `base` and `limit` bound a mapping of `size` readable, writable
// bytes that this value owns exclusively until it is dropped, with a guard
// page (MADV_GUARD_INSTALL or PROT_NONE) directly below. The base handed
// to the coroutine is below the reserved top, which is set before any
// coroutine sees the stack and never changes after; it is a multiple of 64
// and the limit is page aligned, which satisfies STACK_ALIGNMENT, and the
// reservation (at most a page) leaves far more than MIN_STACK_SIZE - 4096.
unsafe impl Stack for PooledStack {
    fn base(&self) -> StackPointer {
        NonZeroUsize::new(self.base - self.reserved).expect("stack base is never null")
    }

    fn limit(&self) -> StackPointer {
        // The limit includes the guard page below the usable area.
        NonZeroUsize::new(self.base - self.size - page_size()).expect("stack limit is never null")
    }
}

impl Drop for PooledStack {
    fn drop(&mut self) {
        let (base, size) = (self.base, self.size);
        // If the thread's pool is already gone (thread exit), the memory
        // stays mapped: leaking it is the safe choice.
        let _ = POOL.try_with(|p| {
            if let Ok(mut pool) = p.try_borrow_mut() {
                pool.list(size).warm.push_back(base);
            }
        });
    }
}

/// Counters of one thread's pool, for benchmarks and reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Chunks mapped so far.
    pub chunks: usize,
    /// Stacks carved so far.
    pub carved: usize,
    /// Stacks now in free lists.
    pub free: usize,
    /// Free stacks whose memory was given back to the kernel.
    pub trimmed: usize,
}

/// One thread's pool: free lists keyed by stack size.
#[derive(Debug, Default)]
struct Pool {
    /// Free stacks, one entry per stack size (a program uses one or a
    /// handful of sizes, so a short vector searched in order beats a hash
    /// map).
    free: Vec<FreeList>,
    stats: PoolStats,
}

/// The free stacks of one size, each kept as its base (highest address):
/// 8 bytes a stack, since a million finished tasks leave a million of them.
#[derive(Debug, Default)]
struct FreeList {
    size: usize,
    /// Stacks whose pages may still be resident. Taken and returned at the
    /// back (LIFO): the most recently used stack is the most likely to be
    /// in cache and memory. The front holds the longest unused.
    warm: VecDeque<usize>,
    /// Stacks whose memory went back to the kernel; used when no warm one
    /// is left.
    cold: Vec<usize>,
}

thread_local! {
    static POOL: RefCell<Pool> = RefCell::new(Pool::default());
}

/// This thread's pool counters.
pub fn pool_stats() -> PoolStats {
    POOL.with(|p| {
        let p = p.borrow();
        let mut s = p.stats;
        s.free = p.free.iter().map(|l| l.warm.len() + l.cold.len()).sum();
        s
    })
}

/// Gives the memory of free stacks beyond the watermark back to the kernel,
/// a batch at a time; true when more is left for a later call. The
/// scheduler calls it when it is about to sleep, so a burst of finished
/// tasks costs nothing while it runs.
pub(crate) fn trim() -> bool {
    POOL.try_with(|p| {
        p.try_borrow_mut()
            .map(|mut pool| pool.trim())
            .unwrap_or(false)
    })
    .unwrap_or(false)
}

/// At most this many stacks are given back per [`trim`]: handing back the
/// stacks of a million finished tasks at once would hold the thread for a
/// fifth of a second, a stall every task due in the meantime would feel.
/// The rest goes at the next trims, which the loop makes soon (see
/// `event_loop`).
const TRIM_BATCH: usize = 16 * 1024;

impl Pool {
    /// The free list for `size`, created empty on first use.
    fn list(&mut self, size: usize) -> &mut FreeList {
        let i = match self.free.iter().position(|l| l.size == size) {
            Some(i) => i,
            None => {
                self.free.push(FreeList {
                    size,
                    ..FreeList::default()
                });
                self.free.len() - 1
            }
        };
        &mut self.free[i]
    }

    // Its one caller is every spawn: inlined, the warm path is a few loads.
    #[inline]
    fn take(&mut self, size: usize) -> io::Result<PooledStack> {
        let list = self.list(size);
        let base = match list.warm.pop_back().or_else(|| list.cold.pop()) {
            Some(base) => base,
            None => {
                let carved = map_chunk(size, &mut list.warm)?;
                let base = list
                    .warm
                    .pop_back()
                    .expect("a chunk holds at least one stack");
                self.stats.chunks += 1;
                self.stats.carved += carved;
                base
            }
        };
        Ok(PooledStack {
            base,
            size,
            reserved: 0,
            _valgrind: ValgrindStackRegistration::new((base - size) as *mut u8, size),
        })
    }

    /// Gives back up to [`TRIM_BATCH`] idle stacks' memory; true when more
    /// is left to give back.
    fn trim(&mut self) -> bool {
        let page = page_size();
        let mut budget = TRIM_BATCH;
        let mut more = false;
        for list in &mut self.free {
            if list.warm.len() <= WARM_WATERMARK {
                continue;
            }
            if budget == 0 {
                more = true;
                break;
            }
            let excess = list.warm.len() - WARM_WATERMARK;
            if excess > budget {
                more = true;
            }
            let excess = excess.min(budget);
            budget -= excess;
            let mut doomed: Vec<usize> = list.warm.drain(..excess).collect();
            // Neighbouring slots of a chunk are contiguous, so sorting by
            // address lets one madvise cover a whole run of them (guard
            // pages included: on Linux MADV_DONTNEED leaves guard markers
            // and PROT_NONE pages as they are).
            doomed.sort_unstable();
            let slot = list.size + page;
            let mut i = 0;
            while i < doomed.len() {
                let mut j = i + 1;
                while TRIM_ACROSS_GUARDS && j < doomed.len() && doomed[j] == doomed[j - 1] + slot {
                    j += 1;
                }
                let lo = doomed[i] - list.size;
                let hi = doomed[j - 1];
                // SAFETY: [lo, hi) covers free stacks (and the guard pages
                // between them) that this pool owns and nobody runs on;
                // MADV_DONTNEED and MADV_FREE only drop their pages, whose
                // contents no one relies on (see the module docs).
                unsafe { libc::madvise(lo as *mut libc::c_void, hi - lo, TRIM_ADVICE) };
                i = j;
            }
            self.stats.trimmed += doomed.len();
            list.cold.extend(doomed);
        }
        more
    }
}

/// Maps one chunk of stacks of `size` bytes and pushes their bases onto
/// `list`. Returns how many were carved.
fn map_chunk(size: usize, list: &mut VecDeque<usize>) -> io::Result<usize> {
    let page = page_size();
    let slot = size + page;
    let count = (CHUNK_BYTES / slot).clamp(1, MAX_PER_CHUNK);
    let len = slot * count;
    // SAFETY: an anonymous private mapping at an address of the kernel's
    // choosing touches no existing memory.
    let addr = unsafe {
        libc::mmap(
            ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            CHUNK_FLAGS,
            -1,
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return Err(mapping_error(
            "mmap of a stack chunk",
            io::Error::last_os_error(),
        ));
    }
    let start = addr as usize;
    if let Err(e) = install_guards(start, slot, count, page) {
        // SAFETY: the chunk was mapped above and no stack from it has been
        // handed out yet.
        unsafe { libc::munmap(addr, len) };
        return Err(mapping_error("installing a stack guard page", e));
    }
    // Push in reverse so the lowest stack is handed out first.
    for i in (0..count).rev() {
        list.push_back(start + i * slot + slot);
    }
    Ok(count)
}

/// Installs the guard page at the bottom of each of `count` slots of `slot`
/// bytes from `start`: in one system call where the kernel allows it (the
/// call costs about as much as the page-table walk each guard needs), one
/// call per guard otherwise.
#[cfg(all(target_os = "linux", not(feature = "portable")))]
fn install_guards(start: usize, slot: usize, count: usize, page: usize) -> io::Result<()> {
    let mut done = 0;
    if GUARD_MODE.load(Ordering::Relaxed) == GUARD_UNKNOWN {
        // The first guard of the process finds out which way works.
        install_guard(start, page)?;
        done = 1;
    }
    if GUARD_MODE.load(Ordering::Relaxed) == GUARD_MADVISE && count - done > 1 {
        done += guards_in_one_call(start + done * slot, slot, count - done, page);
    }
    (done..count).try_for_each(|i| install_guard(start + i * slot, page))
}

/// `process_madvise(2)` on our own process with one range per guard page;
/// returns how many of the `count` guards it installed (0 when the kernel
/// does not offer it, which is then not asked again).
///
/// The process is named by `PIDFD_SELF` (Linux 6.15+), so no descriptor is
/// opened, and a forked child names itself.
#[cfg(all(target_os = "linux", not(feature = "portable")))]
fn guards_in_one_call(start: usize, slot: usize, count: usize, page: usize) -> usize {
    use std::sync::atomic::AtomicBool;

    /// `PIDFD_SELF` (`PIDFD_SELF_THREAD`): "the calling thread", whose
    /// memory is the whole process's; not yet in every libc release.
    const PIDFD_SELF: libc::c_int = -10_000;
    static UNAVAILABLE: AtomicBool = AtomicBool::new(false);
    if UNAVAILABLE.load(Ordering::Relaxed) {
        return 0;
    }
    let ranges: Vec<libc::iovec> = (0..count)
        .map(|i| libc::iovec {
            iov_base: (start + i * slot) as *mut libc::c_void,
            iov_len: page,
        })
        .collect();
    // SAFETY: every range is a page of the chunk just mapped, which no one
    // uses yet, and `ranges` outlives the call; PIDFD_SELF names this
    // process (older kernels refuse it with EBADF and touch nothing).
    let r = unsafe {
        libc::syscall(
            libc::SYS_process_madvise,
            PIDFD_SELF,
            ranges.as_ptr(),
            ranges.len(),
            MADV_GUARD_INSTALL,
            0,
        )
    };
    match usize::try_from(r) {
        Ok(bytes) => (bytes / page).min(count),
        Err(_) => {
            UNAVAILABLE.store(true, Ordering::Relaxed);
            0
        }
    }
}

/// Makes the page at `addr` fault on any access.
#[cfg(all(target_os = "linux", not(feature = "portable")))]
fn install_guard(addr: usize, page: usize) -> io::Result<()> {
    let mut mode = GUARD_MODE.load(Ordering::Relaxed);
    if mode == GUARD_UNKNOWN
        && std::env::var_os("YIELDLOOP_STACK_GUARD").is_some_and(|v| v == "mprotect")
    {
        // Lets the fallback be exercised (and compared) on new kernels.
        mode = GUARD_MPROTECT;
        GUARD_MODE.store(GUARD_MPROTECT, Ordering::Relaxed);
    }
    if mode != GUARD_MPROTECT {
        // SAFETY: `addr` is a page of a mapping we own and no one uses yet.
        let r = unsafe { libc::madvise(addr as *mut libc::c_void, page, MADV_GUARD_INSTALL) };
        if r == 0 {
            GUARD_MODE.store(GUARD_MADVISE, Ordering::Relaxed);
            return Ok(());
        }
        let err = io::Error::last_os_error();
        // An unknown advice value means an older kernel: fall back for good.
        if mode == GUARD_MADVISE || err.raw_os_error() != Some(libc::EINVAL) {
            return Err(err);
        }
        GUARD_MODE.store(GUARD_MPROTECT, Ordering::Relaxed);
    }
    // SAFETY: as above; PROT_NONE on our own unused page.
    let r = unsafe { libc::mprotect(addr as *mut libc::c_void, page, libc::PROT_NONE) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Installs the guard page at the bottom of each of `count` slots of `slot`
/// bytes from `start`, one `mprotect` each.
#[cfg(not(all(target_os = "linux", not(feature = "portable"))))]
fn install_guards(start: usize, slot: usize, count: usize, page: usize) -> io::Result<()> {
    (0..count).try_for_each(|i| install_guard(start + i * slot, page))
}

/// Makes the page at `addr` fault on any access: `mprotect`, the one way
/// off Linux (and with the `portable` feature).
#[cfg(not(all(target_os = "linux", not(feature = "portable"))))]
fn install_guard(addr: usize, page: usize) -> io::Result<()> {
    GUARD_MODE.store(GUARD_MPROTECT, Ordering::Relaxed);
    // SAFETY: `addr` is a page of a mapping we own and no one uses yet;
    // PROT_NONE on it.
    let r = unsafe { libc::mprotect(addr as *mut libc::c_void, page, libc::PROT_NONE) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// True if guard pages are installed with `MADV_GUARD_INSTALL` (one mapping
/// per chunk), false if with `mprotect` (two mappings per stack) or not yet
/// known. Always false off Linux and with the `portable` feature.
pub fn guards_use_madvise() -> bool {
    cfg!(all(target_os = "linux", not(feature = "portable")))
        && GUARD_MODE.load(Ordering::Relaxed) == GUARD_MADVISE
}

/// Wraps a mapping failure with what to do about it.
fn mapping_error(what: &str, err: io::Error) -> io::Error {
    // Only Linux counts mappings against a limit the user can raise.
    if cfg!(target_os = "linux") && err.raw_os_error() == Some(libc::ENOMEM) {
        let limit = std::fs::read_to_string("/proc/sys/vm/max_map_count")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into());
        io::Error::new(
            io::ErrorKind::OutOfMemory,
            format!(
                "yieldloop: {what} failed: out of memory or out of memory mappings \
                 (vm.max_map_count = {limit}); raise it with \
                 `sysctl -w vm.max_map_count=N` or use fewer or smaller stacks"
            ),
        )
    } else {
        io::Error::new(err.kind(), format!("yieldloop: {what} failed: {err}"))
    }
}

/// Takes a stack of `bytes` from this thread's pool and gives it back: the
/// cost of a warm pool round trip, for benchmarks. Only with the
/// `bench-hooks` feature.
#[cfg(feature = "bench-hooks")]
pub fn bench_pool_cycle(bytes: usize) -> std::io::Result<()> {
    let stack = PooledStack::take(bytes)?;
    drop(std::hint::black_box(stack));
    Ok(())
}
