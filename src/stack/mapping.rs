//! The mapping behind the stack pool: chunks of stacks, each stack with a
//! guard page below it. Every `unsafe` call of the stack pool's memory
//! handling (`mmap`, `madvise`, `munmap`) is here, but those that install
//! the guard pages, which are the platform module's (`sys`).
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
//! Guards are installed by the platform module (`sys`): on Linux with
//! `madvise(MADV_GUARD_INSTALL)` (Linux 6.13+), which marks pages as
//! faulting without splitting the mapping, so a chunk stays one mapping
//! however many stacks it holds; a chunk's guards go in with one
//! `process_madvise` call where the kernel accepts it. On older kernels
//! the pool falls back to `mprotect(PROT_NONE)`, which splits the mapping
//! in two per stack; running out of mappings is then reported with the
//! sysctl to raise. The environment variable
//! `YIELDLOOP_STACK_GUARD=mprotect` forces the fallback, to test or compare
//! it.
//!
//! Elsewhere (macOS, FreeBSD, and Linux with the `portable` feature) guards
//! are always installed with `mprotect`. macOS and FreeBSD have no map
//! count limit like Linux's; their anonymous mappings are committed page by
//! page when touched, as `MAP_NORESERVE` asks for on Linux.
//!
//! Chunks are never unmapped: their stacks go back to the pool's free
//! lists, and idle ones give only their memory back ([`release`]).

use std::io;
use std::ptr;
use std::sync::atomic::Ordering;

use crate::sys::{CHUNK_FLAGS, TRIM_ADVICE};

/// Bytes of stacks (guards included) mapped at once, at most.
const CHUNK_BYTES: usize = 16 * 1024 * 1024;
/// Stacks per chunk, at most: small stacks still come in bounded batches.
const MAX_PER_CHUNK: usize = 64;

/// Whether one `madvise` may cover a run of neighbouring stacks with the
/// guard pages between them (see [`crate::sys`]).
pub(super) const TRIM_ACROSS_GUARDS: bool = crate::sys::TRIM_ACROSS_GUARDS;

/// The system page size, read once.
pub(super) fn page_size() -> usize {
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

/// A chunk just mapped: `count` slots of `slot` bytes from `start`, each a
/// guard page with a stack above it, the guards installed. Its stacks are
/// the caller's from now on; the chunk is never unmapped.
#[derive(Debug)]
pub(super) struct Chunk {
    /// The lowest address of the mapping: the first slot's guard page.
    start: usize,
    /// Bytes per slot: one guard page and one stack.
    slot: usize,
    /// How many stacks it holds.
    pub(super) count: usize,
}

impl Chunk {
    /// The base (highest address, where a stack starts growing down) of
    /// each of its stacks, lowest first.
    pub(super) fn bases(&self) -> impl DoubleEndedIterator<Item = usize> + '_ {
        (0..self.count).map(|i| self.start + i * self.slot + self.slot)
    }
}

/// Maps one chunk of stacks of `size` bytes (a multiple of the page size),
/// guard pages installed.
///
/// # Errors
///
/// The system's error, with what to do about it when the process ran out
/// of mappings.
pub(super) fn map_chunk(size: usize) -> io::Result<Chunk> {
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
    Ok(Chunk { start, slot, count })
}

/// Gives the memory of `[lo, lo + len)` back to the kernel: `MADV_DONTNEED`
/// on Linux (the pages read back as zero), `MADV_FREE` elsewhere (they read
/// back as zero or as they were). Guard pages in the range stay guards on
/// Linux; elsewhere a range must not cross one (see
/// [`TRIM_ACROSS_GUARDS`]).
///
/// # Safety
///
/// The range must lie within stacks of chunks from [`map_chunk`] (and the
/// guard pages between them) that the caller owns and that no coroutine
/// runs on, and whose contents no one relies on any more.
pub(super) unsafe fn release(lo: usize, len: usize) {
    // SAFETY: the caller's promise: free stack memory of our own mapping,
    // whose contents may be dropped. The advice only drops pages, so a
    // failure leaves the memory as it was, and is ignored.
    unsafe { libc::madvise(lo as *mut libc::c_void, len, TRIM_ADVICE) };
}

use crate::sys::install_guards;

/// True if guard pages are installed with `MADV_GUARD_INSTALL` (one mapping
/// per chunk), false if with `mprotect` (two mappings per stack) or not yet
/// known. Always false off Linux and with the `portable` feature.
pub fn guards_use_madvise() -> bool {
    crate::sys::guards_use_madvise()
}

/// Wraps a mapping failure with what to do about it.
fn mapping_error(what: &str, err: io::Error) -> io::Error {
    // Only Linux counts mappings against a limit the user can raise.
    if crate::sys::COUNTS_MAPPINGS && err.raw_os_error() == Some(libc::ENOMEM) {
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
