//! `getaddrinfo` from a task: the C library's lookup runs on yieldloop's
//! blocking pool, as [`net::lookup_host`](crate::net::lookup_host)'s does,
//! while only the calling task waits.

use std::ffi::CString;
use std::ptr;
use std::sync::{Arc, Mutex, PoisonError};

use libc::{addrinfo, c_int};

use super::pause::{self, Woke};
use super::real;
use crate::protocol::Op;
use crate::task::park::{park_token, RemoteUnparker};

/// The fields of the caller's `hints` that a lookup reads, copied: the
/// lookup may outlive the call (when the task is cancelled meanwhile).
#[derive(Debug, Clone, Copy)]
pub(super) struct Hints {
    flags: c_int,
    family: c_int,
    socktype: c_int,
    protocol: c_int,
}

impl From<&addrinfo> for Hints {
    fn from(h: &addrinfo) -> Hints {
        Hints {
            flags: h.ai_flags,
            family: h.ai_family,
            socktype: h.ai_socktype,
            protocol: h.ai_protocol,
        }
    }
}

/// Where the pool thread leaves the answer for the task.
#[derive(Debug, Default)]
struct Slot {
    /// The lookup's return value and list (an address, to be `Send`).
    result: Option<(c_int, usize)>,
    /// The task gave up (it was cancelled): the pool thread frees the list.
    abandoned: bool,
    /// The task's unparker while it waits.
    waiter: Option<RemoteUnparker>,
}

fn lock(slot: &Mutex<Slot>) -> std::sync::MutexGuard<'_, Slot> {
    slot.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs the C library's `getaddrinfo` on the blocking pool and waits for
/// it, pausing the task. `Err` carries the error number of a wait that
/// ended early (a cancellation, a timeout scope's deadline).
pub(super) fn on_pool(
    node: Option<CString>,
    service: Option<CString>,
    hints: Option<Hints>,
) -> Result<(c_int, *mut addrinfo), c_int> {
    let slot = Arc::new(Mutex::new(Slot::default()));
    let theirs = slot.clone();
    let _detached = crate::interop::blocking::spawn_blocking(move || {
        // SAFETY: all-zero is a valid `addrinfo` (null pointers, zeroes).
        let mut h: addrinfo = unsafe { std::mem::zeroed() };
        if let Some(x) = hints {
            h.ai_flags = x.flags;
            h.ai_family = x.family;
            h.ai_socktype = x.socktype;
            h.ai_protocol = x.protocol;
        }
        let mut out: *mut addrinfo = ptr::null_mut();
        let c = |s: &Option<CString>| s.as_ref().map_or(ptr::null(), |s| s.as_ptr());
        // SAFETY: NUL-terminated strings (or null), a valid `hints` (or
        // null), a writable out-parameter.
        let code = unsafe {
            real::getaddrinfo(
                c(&node),
                c(&service),
                if hints.is_some() { &h } else { ptr::null() },
                &mut out,
            )
        };
        let mut st = lock(&theirs);
        if st.abandoned {
            drop(st);
            if !out.is_null() {
                // SAFETY: the list this lookup made, which nobody else has.
                unsafe { libc::freeaddrinfo(out) };
            }
            return;
        }
        st.result = Some((code, out as usize));
        let waiter = st.waiter.take();
        drop(st);
        if let Some(w) = waiter {
            w.unpark();
        }
    });
    loop {
        let token = park_token();
        let remote = token.remote();
        {
            let mut st = lock(&slot);
            if let Some((code, list)) = st.result.take() {
                return Ok((code, list as *mut addrinfo));
            }
            st.waiter = Some(remote);
        }
        match pause::pause(None, false, |d| Op::Park(token, d)) {
            Woke::Ready | Woke::TimedOut => {}
            Woke::Failed(e) => {
                let mut st = lock(&slot);
                st.waiter = None;
                match st.result.take() {
                    Some((_, list)) if list != 0 => {
                        drop(st);
                        // SAFETY: the lookup's own list, handed to nobody.
                        unsafe { libc::freeaddrinfo(list as *mut addrinfo) };
                    }
                    Some(_) => {}
                    None => st.abandoned = true,
                }
                return Err(e);
            }
        }
    }
}
