//! `epoll_wait`, `epoll_pwait` and `epoll_pwait2` from a task: the wait
//! of an event loop that runs inside a task (libevent's, mio's under a
//! tokio runtime, one written by hand) pauses only that task.
//!
//! An epoll descriptor is itself pollable: it is readable while its ready
//! list holds an event. So the task's wait is a wait on one descriptor:
//!
//! ```text
//!   epoll_wait(epfd, events, max, timeout)      (timeout not 0)
//!     real epoll_wait(.., 0) ─ events or an error ──▶ return them
//!        │ nothing ready
//!        ▼
//!     pause until epfd is readable or the deadline ◀─┐
//!     real epoll_wait(.., 0) ─ events ──▶ return     │
//!        │ nothing (a spent edge) ───────────────────┘
//!        ▼ deadline
//!     real epoll_wait(.., 0): 0 normally, as the kernel's at its timeout
//! ```
//!
//! The reactor's registration is edge-triggered, and that is sound here
//! for the reason it is for sockets: the task pauses only after a
//! zero-timeout call found nothing, and anything that becomes ready after
//! that call adds to the descriptor's ready list, which raises a new edge
//! (a registration made on the first pause also reports a readiness
//! already there). An edge that came before the call and was not consumed
//! yet wakes the task once for nothing, and it pauses again: no spin.
//! Every answer is a real call's, so the events, their order and the
//! error numbers (`EINVAL` for `maxevents <= 0`, `EBADF`, `EFAULT`) are
//! the kernel's.
//!
//! # Cancellation and timeout scopes
//!
//! The other intercepted calls fail with `ECANCELED` in a cancelled task
//! and with `ETIMEDOUT` once a timeout scope has passed. An event loop
//! takes any error of its wait but `EINTR` as the end of the world: tokio
//! panics ("unexpected error when polling the I/O driver"), and the
//! runtime, left without its driver, panics again while the unwind drops
//! it, which aborts the process; libuv and libev abort at once. So a
//! wait never fails for these reasons, and follows the rule of the sleeps
//! instead:
//!
//! - a wait that a cancellation or the scope's deadline cuts short fails
//!   with `EINTR`, as one cut short by a signal does: the loop looks
//!   around (a loop of the caller's own can end there) and waits again;
//! - a wait that starts in a cancelled task, or after the scope's deadline,
//!   is not cut short: it returns its events, or 0 at its own timeout. So
//!   the loop neither spins nor fails; it runs on until it returns of its
//!   own accord, and the task is torn down at its next own pause (the
//!   scope's `timeout` returns `Elapsed` when its closure returns). A loop
//!   that never returns keeps a cancelled task alive.
//!
//! # Event loops that mark the thread: tokio
//!
//! A blocking client that drives a tokio runtime of its own (the
//! `postgres` crate runs a `current_thread` runtime per client and enters
//! it with `block_on` for every call) waits in this call too. But tokio
//! marks the whole thread as inside that runtime while `block_on` runs,
//! in a thread-local that every task of the thread shares: were the wait
//! a pause, another task entering a tokio runtime meanwhile (a second
//! client's connect or query) would panic ("Cannot start a runtime from
//! within a runtime"), and the drop of its client during the unwind would
//! enter the runtime again and abort the process. So a wait made inside a
//! tokio runtime (tokio's own `Handle::try_current` says so) is the plain
//! call: it blocks the thread for its timeout, as it does without the
//! hook, and such clients stay correct, one call at a time per thread.
//! Run them with `spawn_blocking` to have them overlap. Other loops
//! (libevent's, libuv's, one written by hand) keep no such mark, and
//! pause only their task.
//!
//! # Signal masks
//!
//! `epoll_pwait` and `epoll_pwait2` with a signal mask install it for the
//! wait and put the old one back, atomically with the wait: a signal the
//! caller keeps blocked otherwise can end the wait (with `EINTR`), and
//! only the wait. A pause cannot do that: the mask would be the thread's
//! while the scheduler runs every other task, and a signal let in would
//! interrupt their code, not the wait. So a call with a mask other than
//! the thread's current one is the plain call, which blocks the thread for
//! its timeout, as `ppoll` with a mask does. A mask equal to the current
//! one changes nothing in the kernel's wait, and the call is served as
//! `epoll_wait`.

use std::time::Duration;

use libc::{c_int, epoll_event, sigset_t};

/// True while the calling thread is inside a tokio runtime: a blocking
/// client's `block_on` (the `postgres` crate's) waits in this call. Such a
/// wait is the plain call, which blocks the thread (see the module docs):
/// tokio keeps the runtime's mark in a thread-local that every task of the
/// thread shares, so no other task may run while it is set.
pub(super) fn inside_tokio_runtime() -> bool {
    tokio::runtime::Handle::try_current().is_ok()
}

use super::pause::{self, fail, wait_fd, Woke, CANCELLED, SCOPE_EXPIRED};
use super::real;

/// The three symbols' wait from a task, with a timeout that is not zero:
/// [`wait`], unless the call must stay the plain one, `plain` (made with
/// the caller's own arguments, so its timeout is passed on as it came):
/// when `mask` (null: none) is not the thread's own signal mask, or the
/// thread is inside a tokio runtime. Run under the hook's panic guard.
///
/// # Safety
///
/// As for `epoll_pwait(2)`: `events` valid for `max` entries, `mask` null
/// or a valid `sigset_t`.
pub(super) unsafe fn wait_or_plain(
    epfd: c_int,
    events: *mut epoll_event,
    max: c_int,
    timeout: Option<Duration>,
    mask: *const sigset_t,
    plain: impl FnOnce() -> c_int,
) -> c_int {
    pause::guard(-1, || {
        // SAFETY: a non-null mask is the caller's valid `sigset_t`.
        if (!mask.is_null() && !unsafe { mask_is_current(mask) }) || inside_tokio_runtime() {
            return plain();
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { wait(epfd, events, max, timeout) }
    })
}

/// `epoll_wait` from a task, with a timeout that is not zero (`None`:
/// no timeout). Never fails because of a cancellation or a timeout scope
/// (see the module docs): a wait they cut short fails with `EINTR`, and a
/// wait that starts after them waits as asked.
///
/// # Safety
///
/// As for `epoll_wait(2)`: `events` valid for `max` entries.
pub(super) unsafe fn wait(
    epfd: c_int,
    events: *mut epoll_event,
    max: c_int,
    timeout: Option<Duration>,
) -> c_int {
    // A wait is an operation of the task's budget, spent also when it
    // completes at once (as a `poll` does). A cancellation seen here makes
    // the wait below one that nothing cuts short.
    let _ = pause::proceed();
    // SAFETY: the caller's array, for a wait that does not block; the
    // kernel checks the arguments, so a bad one fails here, at once.
    let collect = || unsafe { real::epoll_wait(epfd, events, max, 0) };
    let r = collect();
    if r != 0 {
        return r;
    }
    let deadline = timeout.and_then(|t| crate::scheduler::timers::now().checked_add(t));
    // A loop that waits again after a wait was cut short (any event loop
    // does, on `EINTR`) must neither spin nor fail: from a cancelled task,
    // or once the timeout scope has passed, the wait is not cut short
    // again.
    let regardless = pause::cancelled() || pause::scope_expired();
    loop {
        let woke = if regardless {
            pause::wait_fd_regardless(epfd, deadline)
        } else {
            wait_fd(epfd, false, deadline)
        };
        match woke {
            Woke::Ready => {
                let r = collect();
                if r != 0 {
                    return r;
                }
            }
            // The kernel's answer at the deadline: 0, unless an event came
            // at the last moment.
            Woke::TimedOut => return collect(),
            // Cut short: as by a signal. (The scope's expiry is recorded,
            // and its `timeout` returns `Elapsed` once its closure has.)
            Woke::Failed(CANCELLED | SCOPE_EXPIRED) => return fail(libc::EINTR),
            // The descriptor was closed meanwhile (`EBADF`).
            Woke::Failed(e) => return fail(e),
        }
    }
}

/// The bytes of a signal set that the kernel reads: the C library passes
/// it 64 signals' worth (`_NSIG / 8`), whatever the size of `sigset_t`.
const KERNEL_SIGSET_BYTES: usize = 8;

/// True when `mask` is the calling thread's signal mask already, so that
/// installing it for a wait changes nothing (see the module docs).
///
/// # Safety
///
/// `mask` points to a valid `sigset_t`.
pub(super) unsafe fn mask_is_current(mask: *const sigset_t) -> bool {
    // SAFETY: an all-zero `sigset_t` is an empty set.
    let mut current: sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: no set to install (`how` is then ignored), and a writable
    // set for the current mask.
    if unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut current) } != 0 {
        return false;
    }
    // SAFETY: both are valid `sigset_t`s, longer than the bytes compared.
    let (given, current) = unsafe {
        (
            std::slice::from_raw_parts(mask.cast::<u8>(), KERNEL_SIGSET_BYTES),
            std::slice::from_raw_parts(
                (&current as *const sigset_t).cast::<u8>(),
                KERNEL_SIGSET_BYTES,
            ),
        )
    };
    given == current
}
