//! libevent's event loop, loaded with `dlopen` and run inside tasks under
//! feature `hook`: `event_base_dispatch` waits in `epoll_wait`, which
//! reaches yieldloop's definition because the test executable exports it
//! (`-rdynamic`, set by the recipes' build script), so twenty loops, each
//! waiting 200 ms for a timer event, overlap on one thread while a ticker
//! keeps ticking; a loop waiting for a socket wakes when the socket is
//! written. Skips, naming the package, where libevent-2.1.so.7 is missing.
#![allow(unsafe_code)] // Calls into libevent; see `Ev` for each one's contract.

mod hook_util;
mod util;

use std::cell::Cell;
use std::ffi::{c_char, c_int, c_short, c_void, CStr};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::rc::Rc;
use std::time::{Duration, Instant};

use hook_util::dl::Library;

/// An event's callback, as libevent calls it: the descriptor, what
/// happened (`EV_TIMEOUT`, `EV_READ`, ...), and the argument given to
/// `event_new`.
type Callback = extern "C" fn(c_int, c_short, *mut c_void);

/// The libevent functions the tests use, from its C declarations
/// (`event2/event.h`); `event_base` and `event` are opaque.
#[derive(Clone, Copy)]
struct Ev {
    base_new: unsafe extern "C" fn() -> *mut c_void,
    base_get_method: unsafe extern "C" fn(*const c_void) -> *const c_char,
    base_dispatch: unsafe extern "C" fn(*mut c_void) -> c_int,
    base_free: unsafe extern "C" fn(*mut c_void),
    event_new:
        unsafe extern "C" fn(*mut c_void, c_int, c_short, Callback, *mut c_void) -> *mut c_void,
    event_add: unsafe extern "C" fn(*mut c_void, *const libc::timeval) -> c_int,
    event_free: unsafe extern "C" fn(*mut c_void),
}

/// `EV_TIMEOUT`: the event's time passed.
const EV_TIMEOUT: c_short = 0x01;
/// `EV_READ`: the descriptor is readable.
const EV_READ: c_short = 0x02;

impl Ev {
    /// libevent-2.1.so.7, or `None` after saying which package to install.
    fn load() -> Option<Ev> {
        let lib = match Library::open("libevent-2.1.so.7") {
            Ok(lib) => lib,
            Err(e) => {
                hook_util::skip(&format!("libevent-2.1.so.7 ({e})"), "libevent-2.1-7");
                return None;
            }
        };
        // SAFETY: each type below is the function's C signature from
        // event2/event.h, with opaque pointers as `c_void`.
        unsafe {
            Some(Ev {
                base_new: lib.function("event_base_new"),
                base_get_method: lib.function("event_base_get_method"),
                base_dispatch: lib.function("event_base_dispatch"),
                base_free: lib.function("event_base_free"),
                event_new: lib.function("event_new"),
                event_add: lib.function("event_add"),
                event_free: lib.function("event_free"),
            })
        }
    }

    /// A new event base, freed on drop.
    fn base(self) -> Base {
        // SAFETY: no arguments; null only when out of memory or no backend.
        let base = unsafe { (self.base_new)() };
        assert!(!base.is_null(), "event_base_new failed");
        Base { ev: self, base }
    }
}

/// An event base (libevent's loop), freed on drop.
struct Base {
    ev: Ev,
    base: *mut c_void,
}

/// What the callback of one event saw: how often it ran, and the `what`
/// of its last run.
#[derive(Default)]
struct Seen {
    calls: Cell<u32>,
    what: Cell<c_short>,
}

/// The callback of every event of these tests: `arg` is the event's
/// [`Seen`]. It cannot panic (nothing in it does), so nothing unwinds
/// into libevent.
extern "C" fn record(_fd: c_int, what: c_short, arg: *mut c_void) {
    // SAFETY: `arg` is the `Seen` given to `event_new` by `Base::once`,
    // which outlives the dispatch that calls this.
    let seen = unsafe { &*arg.cast::<Seen>() };
    seen.calls.set(seen.calls.get() + 1);
    seen.what.set(what);
}

impl Base {
    /// The backend libevent chose ("epoll" on Linux).
    fn method(&self) -> String {
        // SAFETY: a live base; the name is a static string.
        unsafe { CStr::from_ptr((self.ev.base_get_method)(self.base)) }
            .to_string_lossy()
            .into_owned()
    }

    /// Adds one event (on `fd`, -1 for a timer alone, for `what`, with
    /// `timeout` if any) and runs the loop until no event is left; returns
    /// what the event's callback saw and `event_base_dispatch`'s value.
    fn once(&self, fd: c_int, what: c_short, timeout: Option<Duration>) -> (Seen, c_int) {
        let seen = Seen::default();
        let arg = (&seen as *const Seen).cast_mut().cast::<c_void>();
        // SAFETY: a live base, a callback of the right type, and `arg`
        // valid until the event is freed below.
        let event = unsafe { (self.ev.event_new)(self.base, fd, what, record, arg) };
        assert!(!event.is_null(), "event_new failed");
        let tv = timeout.map(|t| libc::timeval {
            tv_sec: t.as_secs() as _,
            tv_usec: t.subsec_micros() as _,
        });
        let tvp = tv.as_ref().map_or(std::ptr::null(), |t| t as *const _);
        // SAFETY: a live event; libevent copies the timeval.
        assert_eq!(unsafe { (self.ev.event_add)(event, tvp) }, 0, "event_add");
        // SAFETY: a live base, dispatched from one thread only.
        let r = unsafe { (self.ev.base_dispatch)(self.base) };
        // SAFETY: the event made above, not pending any more, freed once.
        unsafe { (self.ev.event_free)(event) };
        (seen, r)
    }
}

impl Drop for Base {
    fn drop(&mut self) {
        // SAFETY: a live base with no events left, freed exactly once.
        unsafe { (self.ev.base_free)(self.base) }
    }
}

/// Twenty tasks each run a libevent loop of their own, waiting 200 ms for
/// a timer event: all finish in well under the 4 s they would take one
/// after another, and a 1 ms ticker on the same thread keeps ticking.
#[test]
fn twenty_libevent_loops_overlap_on_one_thread() {
    let Some(ev) = Ev::load() else { return };
    assert!(
        yieldloop::hook::active(),
        "the test executable does not export the hook's symbols (-rdynamic)"
    );
    const LOOPS: usize = 20;
    const WAIT: Duration = Duration::from_millis(200);
    let (elapsed, ticks, longest) = yieldloop::run(move || {
        let stop = Rc::new(Cell::new(false));
        let ticker = util::ticker(stop.clone());
        yieldloop::sleep(Duration::from_millis(10));
        let start = Instant::now();
        let loops: Vec<_> = (0..LOOPS)
            .map(|_| {
                hook_util::spawn_client(move || {
                    let base = ev.base();
                    let method = base.method();
                    let begun = Instant::now();
                    let (seen, r) = base.once(-1, 0, Some(WAIT));
                    (
                        method,
                        seen.calls.get(),
                        seen.what.get(),
                        r,
                        begun.elapsed(),
                    )
                })
            })
            .collect();
        for l in loops {
            let (method, calls, what, r, waited) = l.join().unwrap();
            assert_eq!(method, "epoll");
            assert_eq!((calls, what), (1, EV_TIMEOUT));
            // 1: the loop ended because no event was left.
            assert!(r >= 0, "event_base_dispatch: {r}");
            assert!(
                waited >= WAIT - Duration::from_millis(1),
                "after {waited:?}"
            );
        }
        let elapsed = start.elapsed();
        stop.set(true);
        let (ticks, longest) = ticker.join().unwrap();
        (elapsed, ticks, longest)
    });
    eprintln!("20 libevent loops of 200 ms: {elapsed:?} in all; ticker's longest gap {longest:?}");
    assert!(
        elapsed < Duration::from_millis(500),
        "the loops did not overlap: {elapsed:?}"
    );
    assert!(ticks >= 50, "ticker ticked {ticks} times in {elapsed:?}");
    assert!(
        longest < Duration::from_millis(20),
        "ticker's longest gap: {longest:?}"
    );
}

/// A libevent loop waiting for a socket to be readable (with a 5 s
/// timeout it does not reach): woken when another task writes to it
/// 100 ms later, with `EV_READ`.
#[test]
fn a_libevent_loop_wakes_for_its_socket() {
    let Some(ev) = Ev::load() else { return };
    yieldloop::run(move || {
        let (a, b) = UnixStream::pair().unwrap();
        let writer = yieldloop::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            (&a).write_all(b"x").unwrap();
            a
        });
        let (seen, took) = hook_util::spawn_client(move || {
            let base = ev.base();
            let t = Instant::now();
            let (seen, _) = base.once(b.as_raw_fd(), EV_READ, Some(Duration::from_secs(5)));
            (seen, t.elapsed())
        })
        .join()
        .unwrap();
        writer.join().unwrap();
        assert_eq!((seen.calls.get(), seen.what.get()), (1, EV_READ));
        assert!(
            took >= Duration::from_millis(95) && took < Duration::from_secs(2),
            "{took:?}"
        );
    });
}
