//! The stackful floor of the "sleepers" workload: the least any design that
//! gives each task a stack of its own pays for it on this machine.
//!
//! ```text
//! sleepers_floor --n N
//! ```
//!
//! No runtime: bare `corosensei` coroutines in a `Slab`, a `BinaryHeap` of
//! deadlines and a loop on one thread. Each coroutine runs on a guarded
//! stack of yieldloop's default size (`DEFAULT_STACK_SIZE`, 64 KiB) from a small pool that works
//! like yieldloop's: stacks carved from 16 MiB `MAP_NORESERVE` chunks, a
//! guard page below each (`MADV_GUARD_INSTALL` where the kernel has it, in
//! one `process_madvise` call per chunk where it can; `mprotect` otherwise),
//! finished stacks reused. A coroutine sleeps by yielding its deadline to the
//! loop, which files it in the heap; the loop sleeps with `thread::sleep`
//! until the earliest deadline and resumes what is due. What is left is the
//! cost of the stack itself: mapping it, the guard, and the page fault on its
//! first touch (the coroutine's initial frame is written at its top when it
//! is created).
//!
//! The workload and output are those of `sleepers` (see there): N tasks each
//! sleep one second and then return a pseudo-random number; all are joined.
//!
//! ```text
//! sleepers runtime=floor n=1000 wall_s=1.001234 spawn_s=0.000321 hwm_kb=5120 maps=40 checksum=49512
//! ```

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use corosensei::stack::{Stack, StackPointer};
use corosensei::{Coroutine, CoroutineResult, Yielder};
use slab::Slab;
use yieldloop_bench::sleepers::{max_maps, random, sample_maps, status_kb};

const SLEEP: Duration = Duration::from_secs(1);
/// yieldloop's default, so the two pay for the same stacks.
const STACK_SIZE: usize = yieldloop::DEFAULT_STACK_SIZE;
/// Bytes of stacks (guards included) mapped at once, at most (as yieldloop).
const CHUNK_BYTES: usize = 16 * 1024 * 1024;
/// Stacks per chunk, at most (as yieldloop).
const MAX_PER_CHUNK: usize = 64;
/// `MADV_GUARD_INSTALL`, Linux 6.13+; not yet in every libc release.
const MADV_GUARD_INSTALL: libc::c_int = 102;
/// `PIDFD_SELF` for `process_madvise`, Linux 6.15+.
const PIDFD_SELF: libc::c_int = -10_000;

fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 {
        size as usize
    } else {
        4096
    }
}

// ------------------------------------------------------------- stacks

/// A stack `[base - size, base)` with a guard page just below it, owned by
/// the pool and lent to one coroutine at a time.
#[derive(Debug)]
struct FloorStack {
    /// Highest address; the stack grows down from here.
    base: usize,
    /// Usable bytes, the guard page not included.
    size: usize,
    /// The system page size (the guard's size).
    page: usize,
}

// SAFETY: `[base - size, base)` is readable, writable memory of a chunk the
// pool mapped and never unmaps, lent to one coroutine at a time, with a
// guard page directly below it; `base` and `size` are page multiples, which
// satisfies corosensei's alignment.
unsafe impl Stack for FloorStack {
    fn base(&self) -> StackPointer {
        NonZeroUsize::new(self.base).expect("stack base is never null")
    }

    fn limit(&self) -> StackPointer {
        NonZeroUsize::new(self.base - self.size - self.page).expect("stack limit is never null")
    }
}

/// How guard pages are made, found out on the first one.
static GUARD: AtomicU8 = AtomicU8::new(GUARD_UNKNOWN);
const GUARD_UNKNOWN: u8 = 0;
/// `MADV_GUARD_INSTALL`, one range per call.
const GUARD_MADVISE: u8 = 1;
/// `MADV_GUARD_INSTALL`, all of a chunk's ranges in one `process_madvise`.
const GUARD_BATCH: u8 = 2;
/// `mprotect(PROT_NONE)`: two mappings per stack.
const GUARD_MPROTECT: u8 = 3;

/// Free stacks, reused last-in first-out; new ones are carved a chunk at a
/// time.
#[derive(Debug, Default)]
struct Pool {
    free: Vec<FloorStack>,
}

impl Pool {
    fn take(&mut self) -> io::Result<FloorStack> {
        if self.free.is_empty() {
            self.map_chunk()?;
        }
        Ok(self.free.pop().expect("a chunk holds at least one stack"))
    }

    fn put(&mut self, stack: FloorStack) {
        self.free.push(stack);
    }

    fn map_chunk(&mut self) -> io::Result<()> {
        let page = page_size();
        let slot = STACK_SIZE + page;
        let count = (CHUNK_BYTES / slot).clamp(1, MAX_PER_CHUNK);
        // SAFETY: an anonymous private mapping at an address of the
        // kernel's choosing touches no existing memory.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                slot * count,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let start = addr as usize;
        install_guards(start, slot, count, page)?;
        // Reversed, so the lowest stack is taken first.
        for i in (0..count).rev() {
            self.free.push(FloorStack {
                base: start + (i + 1) * slot,
                size: STACK_SIZE,
                page,
            });
        }
        Ok(())
    }
}

/// Makes the first page of each of `count` slots of `slot` bytes from
/// `start` fault on any access.
fn install_guards(start: usize, slot: usize, count: usize, page: usize) -> io::Result<()> {
    let guard = |i: usize| (start + i * slot) as *mut libc::c_void;
    if GUARD.load(Ordering::Relaxed) == GUARD_UNKNOWN {
        // SAFETY: the page is part of a mapping this pool just made.
        let r = unsafe { libc::madvise(guard(0), page, MADV_GUARD_INSTALL) };
        let mode = if r == 0 {
            GUARD_MADVISE
        } else {
            let err = io::Error::last_os_error();
            if err.raw_os_error() != Some(libc::EINVAL) {
                return Err(err);
            }
            GUARD_MPROTECT
        };
        GUARD.store(mode, Ordering::Relaxed);
        if mode == GUARD_MADVISE {
            // Try the rest of this chunk in one call.
            let ranges: Vec<libc::iovec> = (1..count)
                .map(|i| libc::iovec {
                    iov_base: guard(i),
                    iov_len: page,
                })
                .collect();
            if !ranges.is_empty() && batch(&ranges) == Some(ranges.len() * page) {
                GUARD.store(GUARD_BATCH, Ordering::Relaxed);
                return Ok(());
            }
            return (1..count).try_for_each(|i| guard_one(guard(i), page));
        }
    }
    match GUARD.load(Ordering::Relaxed) {
        GUARD_BATCH => {
            let ranges: Vec<libc::iovec> = (0..count)
                .map(|i| libc::iovec {
                    iov_base: guard(i),
                    iov_len: page,
                })
                .collect();
            match batch(&ranges) {
                Some(n) if n == ranges.len() * page => Ok(()),
                _ => Err(io::Error::other("process_madvise installed too few guards")),
            }
        }
        _ => (0..count).try_for_each(|i| guard_one(guard(i), page)),
    }
}

/// `process_madvise(PIDFD_SELF, ranges, MADV_GUARD_INSTALL)`: the bytes
/// advised, or `None` if the kernel refused.
fn batch(ranges: &[libc::iovec]) -> Option<usize> {
    // SAFETY: every range is a page of a chunk this pool just mapped and no
    // one uses yet; `ranges` outlives the call.
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
    usize::try_from(r).ok()
}

/// One guard page, the way found on the first.
fn guard_one(addr: *mut libc::c_void, page: usize) -> io::Result<()> {
    let r = if GUARD.load(Ordering::Relaxed) == GUARD_MPROTECT {
        // SAFETY: a page of a mapping this pool just made, unused yet.
        unsafe { libc::mprotect(addr, page, libc::PROT_NONE) }
    } else {
        // SAFETY: as above.
        unsafe { libc::madvise(addr, page, MADV_GUARD_INSTALL) }
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

// ------------------------------------------------------------- the loop

/// A sleeper: resumed with nothing, yields its deadline, returns its number.
type Sleeper = Coroutine<(), Instant, u64, FloorStack>;

struct Outcome {
    wall: Duration,
    spawn: Duration,
    checksum: u64,
}

fn run(n: u64, seed: u64) -> io::Result<Outcome> {
    let mut pool = Pool::default();
    let mut tasks: Slab<Sleeper> = Slab::new();
    let mut ready: VecDeque<usize> = VecDeque::new();
    let mut timers: BinaryHeap<Reverse<(Instant, usize)>> = BinaryHeap::new();
    let mut checksum = 0u64;

    let start = Instant::now();
    for i in 0..n {
        let stack = pool.take()?;
        let co = Coroutine::with_stack(stack, move |y: &Yielder<(), Instant>, ()| {
            if i == n - 1 {
                sample_maps();
            }
            y.suspend(Instant::now() + SLEEP);
            random(seed, i)
        });
        ready.push_back(tasks.insert(co));
    }
    let spawn = start.elapsed();
    sample_maps();

    // A resumed sleeper either files its deadline or returns (is joined).
    let mut step = |key: usize,
                    tasks: &mut Slab<Sleeper>,
                    timers: &mut BinaryHeap<Reverse<(Instant, usize)>>| {
        match tasks[key].resume(()) {
            CoroutineResult::Yield(deadline) => timers.push(Reverse((deadline, key))),
            CoroutineResult::Return(v) => {
                checksum += v;
                pool.put(tasks.remove(key).into_stack());
            }
        }
    };
    while let Some(key) = ready.pop_front() {
        step(key, &mut tasks, &mut timers);
    }
    while let Some(&Reverse((deadline, key))) = timers.peek() {
        let now = Instant::now();
        // A deadline <= now is due.
        if deadline > now {
            std::thread::sleep(deadline - now);
            continue;
        }
        timers.pop();
        step(key, &mut tasks, &mut timers);
    }
    assert!(tasks.is_empty(), "every sleeper returned");
    Ok(Outcome {
        wall: start.elapsed(),
        spawn,
        checksum,
    })
}

fn main() {
    let mut n: u64 = 1000;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--n" => n = args.next().and_then(|v| v.parse().ok()).unwrap_or(0),
            _ => {
                eprintln!("usage: sleepers_floor --n N");
                std::process::exit(2);
            }
        }
    }
    if n == 0 {
        eprintln!("sleepers_floor: --n must be a positive integer");
        std::process::exit(2);
    }
    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1);
    let outcome = match run(n, seed) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("sleepers_floor: mapping a stack failed: {e}");
            std::process::exit(3);
        }
    };
    sample_maps();
    let mode = match GUARD.load(Ordering::Relaxed) {
        GUARD_BATCH => "process_madvise",
        GUARD_MADVISE => "madvise",
        GUARD_MPROTECT => "mprotect",
        _ => "none",
    };
    println!(
        "sleepers runtime=floor n={n} wall_s={:.6} spawn_s={:.6} hwm_kb={} maps={} checksum={} guards={mode}",
        outcome.wall.as_secs_f64(),
        outcome.spawn.as_secs_f64(),
        status_kb("VmHWM"),
        max_maps(),
        outcome.checksum,
    );
}
