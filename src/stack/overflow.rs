//! Stack-overflow reports.
//!
//! A task that overflows its stack touches the guard page below it and the
//! kernel raises `SIGSEGV`. Left alone, that is a bare "Segmentation fault"
//! with no hint of which task or why. This module installs a `SIGSEGV`/`SIGBUS`
//! handler, running on an alternate signal stack (the faulting stack has no
//! room left), that checks whether the faulting address lies in the guard
//! page of the task running on this thread. If it does, it writes a message
//! naming the task, its stack size and how to raise it, then lets the signal
//! take its default course. Any other fault goes to the handler that was
//! installed before ours (Rust's own, which reports main-thread overflows),
//! or to the default action.
//!
//! The handler only reads a thread-local pointer to plain words that the scheduler
//! updates before each resume, and calls `write(2)` and `sigaction(2)`,
//! which are async-signal-safe. It learns where that pointer is from the
//! function handed to [`install`]: the stack layer knows nothing of tasks.

use std::cell::Cell;
use std::ptr;
use std::sync::OnceLock;

/// What the handler needs to know about the running task.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct GuardInfo {
    /// Lowest address of the guard page; 0 when no task runs.
    pub(crate) guard_lo: usize,
    /// One past the guard page.
    pub(crate) guard_hi: usize,
    /// Usable stack size in bytes.
    pub(crate) size: usize,
    /// Task serial number.
    pub(crate) id: u64,
    /// The task's name (borrowed from the task record, alive while it runs).
    pub(crate) name_ptr: usize,
    pub(crate) name_len: usize,
}

/// The handlers that were installed before ours, for faults that are not
/// guard-page hits.
static PREVIOUS: OnceLock<Previous> = OnceLock::new();

struct Previous {
    segv: libc::sigaction,
    bus: libc::sigaction,
}

// SAFETY: `sigaction` is plain data (a handler address, flags and a signal
// mask); it is written once before the handler is installed and only read
// afterwards.
unsafe impl Sync for Previous {}
// SAFETY: as above.
unsafe impl Send for Previous {}

/// Finds the guard info of the task running on the calling thread (null
/// when none runs); must be async-signal-safe. Set once, by the first
/// [`install`].
static RUNNING_GUARD: OnceLock<fn() -> *const GuardInfo> = OnceLock::new();

/// Installs the handler (once per process) and makes sure this thread has an
/// alternate signal stack. `running_guard` tells the handler the guard info
/// of the task running on the faulting thread (null when none runs); it is
/// called from the signal handler, so it must be async-signal-safe.
pub(crate) fn install(running_guard: fn() -> *const GuardInfo) {
    RUNNING_GUARD.get_or_init(|| running_guard);
    PREVIOUS.get_or_init(|| {
        // SAFETY: sigaction is called with valid pointers to initialised
        // structs; the handler is an `extern "C"` fn of the SA_SIGINFO shape.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = handler as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            let mut segv: libc::sigaction = std::mem::zeroed();
            let mut bus: libc::sigaction = std::mem::zeroed();
            libc::sigaction(libc::SIGSEGV, ptr::null(), &mut segv);
            libc::sigaction(libc::SIGBUS, ptr::null(), &mut bus);
            let prev = Previous { segv, bus };
            libc::sigaction(libc::SIGSEGV, &action, ptr::null_mut());
            libc::sigaction(libc::SIGBUS, &action, ptr::null_mut());
            prev
        }
    });
    ALT_READY.with(|ready| {
        if !ready.get() {
            ensure_alt_stack();
            ready.set(true);
        }
    });
}

thread_local! {
    /// Whether this thread's alternate signal stack has been checked.
    static ALT_READY: Cell<bool> = const { Cell::new(false) };
}

/// Size of an alternate signal stack we map ourselves.
const ALT_SIZE: usize = 64 * 1024;

/// Gives this thread an alternate signal stack unless it has one (Rust's
/// runtime makes one for the threads it starts).
fn ensure_alt_stack() {
    // SAFETY: querying the current alternate stack with a valid out pointer.
    let mut current: libc::stack_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::sigaltstack(ptr::null(), &mut current) };
    if current.ss_flags & libc::SS_DISABLE == 0 {
        return;
    }
    // SAFETY: a fresh anonymous mapping; it is never unmapped, since a
    // signal may arrive on this thread at any time until it exits.
    let mem = unsafe {
        libc::mmap(
            ptr::null_mut(),
            ALT_SIZE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if mem == libc::MAP_FAILED {
        return;
    }
    let stack = libc::stack_t {
        ss_sp: mem,
        ss_flags: 0,
        ss_size: ALT_SIZE,
    };
    // SAFETY: `stack` describes the mapping made above.
    unsafe { libc::sigaltstack(&stack, ptr::null_mut()) };
}

/// The signal handler; see the module docs.
extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
    let addr = unsafe { (*info).si_addr() } as usize;
    let running = RUNNING_GUARD.get().map_or(ptr::null(), |f| f());
    // SAFETY: a non-null pointer names the running task's guard info, kept
    // alive by its task's header for the whole resume (see `task_context`).
    let running = unsafe { running.as_ref() };
    if let Some(t) = running.filter(|t| addr >= t.guard_lo && addr < t.guard_hi) {
        report(t, addr);
        // Let the fault take its default course: the process stops with
        // SIGSEGV as it would have, after the explanation.
        reset_to_default(sig);
        return;
    }
    // Not ours: hand over to whoever was installed before.
    let Some(prev) = PREVIOUS.get() else {
        reset_to_default(sig);
        return;
    };
    let prev = if sig == libc::SIGBUS {
        &prev.bus
    } else {
        &prev.segv
    };
    let h = prev.sa_sigaction;
    if h == libc::SIG_DFL || h == libc::SIG_IGN {
        reset_to_default(sig);
    } else if prev.sa_flags & libc::SA_SIGINFO != 0 {
        // SAFETY: the previous handler was installed with SA_SIGINFO, so it
        // has this signature.
        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
            unsafe { std::mem::transmute(h) };
        f(sig, info, ctx);
    } else {
        // SAFETY: a plain handler takes the signal number only.
        let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(h) };
        f(sig);
    }
}

fn reset_to_default(sig: libc::c_int) {
    // SAFETY: installing SIG_DFL with a zeroed, valid sigaction struct.
    unsafe {
        let mut dfl: libc::sigaction = std::mem::zeroed();
        dfl.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(sig, &dfl, ptr::null_mut());
    }
}

/// Writes the report with `write(2)` only: no allocation in a signal
/// handler.
fn report(t: &GuardInfo, addr: usize) {
    let mut buf = Buf::new();
    // The same naming as panic messages and slow-task warnings:
    // `task 'name' (id N)`, or `task N` for a task without a name.
    buf.push(b"\nyieldloop: task ");
    if t.name_len > 0 {
        buf.push(b"'");
        // SAFETY: name_ptr/name_len describe the running task's name, which
        // its task header keeps alive while its coroutine exists.
        buf.push(unsafe { std::slice::from_raw_parts(t.name_ptr as *const u8, t.name_len) });
        buf.push(b"' (id ");
        buf.push_num(t.id as usize, 10);
        buf.push(b")");
    } else {
        buf.push_num(t.id as usize, 10);
    }
    buf.push(b" overflowed its stack of ");
    buf.push_num(t.size, 10);
    buf.push(b" bytes (fault at 0x");
    buf.push_num(addr, 16);
    buf.push(b" in its guard page).\nyieldloop: give it more room with ");
    buf.push(b"yieldloop::Builder::new().stack_size(BYTES).spawn(..), or recurse less.\n");
    // SAFETY: writing an initialised buffer to stderr.
    unsafe { libc::write(2, buf.data.as_ptr().cast(), buf.len) };
}

/// A fixed buffer for the report.
struct Buf {
    data: [u8; 512],
    len: usize,
}

impl Buf {
    fn new() -> Buf {
        Buf {
            data: [0; 512],
            len: 0,
        }
    }

    fn push(&mut self, s: &[u8]) {
        let n = s.len().min(self.data.len() - self.len);
        self.data[self.len..self.len + n].copy_from_slice(&s[..n]);
        self.len += n;
    }

    fn push_num(&mut self, mut v: usize, base: usize) {
        let mut digits = [0u8; 32];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b"0123456789abcdef"[v % base];
            v /= base;
            if v == 0 {
                break;
            }
        }
        self.push(&digits[i..]);
    }
}
