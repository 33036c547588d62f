//! The guarded stack pool: per-thread free lists of stacks carved from the
//! chunks [`mapping`](super::mapping) maps, each with its guard page.
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

use corosensei::stack::valgrind::ValgrindStackRegistration;
use corosensei::stack::{Stack, StackPointer};

use super::mapping::{self, map_chunk, page_size, TRIM_ACROSS_GUARDS};

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

/// Free stacks of one size kept with their memory; stacks returned beyond
/// this many are handed back to the kernel with `MADV_DONTNEED` first.
const WARM_WATERMARK: usize = 1024;

/// Rounds a requested stack size to what the pool hands out.
#[inline]
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
    // Every spawn's: inlined, the warm path is a few loads.
    #[inline]
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
    // Every finished task's: inlined, the warm path is a few stores.
    #[inline]
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
    #[inline]
    fn list(&mut self, size: usize) -> &mut FreeList {
        let i = match self.free.iter().position(|l| l.size == size) {
            Some(i) => i,
            None => self.new_list(size),
        };
        &mut self.free[i]
    }

    /// Makes the free list for a size not seen before; its place.
    #[cold]
    fn new_list(&mut self, size: usize) -> usize {
        self.free.push(FreeList {
            size,
            ..FreeList::default()
        });
        self.free.len() - 1
    }

    // Its one caller is every spawn: inlined, the warm path is a few loads.
    #[inline]
    fn take(&mut self, size: usize) -> io::Result<PooledStack> {
        let list = self.list(size);
        let base = match list.warm.pop_back().or_else(|| list.cold.pop()) {
            Some(base) => base,
            None => {
                let chunk = map_chunk(size)?;
                // Lowest last, so that the lowest stack is handed out first.
                list.warm.extend(chunk.bases().rev());
                let carved = chunk.count;
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
                // SAFETY: [lo, hi) covers free stacks of mapped chunks (and
                // the guard pages between them) that this pool owns and
                // nobody runs on, whose contents no one relies on (see the
                // module docs).
                unsafe { mapping::release(lo, hi - lo) };
                i = j;
            }
            self.stats.trimmed += doomed.len();
            list.cold.extend(doomed);
        }
        more
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
