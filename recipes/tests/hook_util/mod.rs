//! Helpers of the `hook_*` tests: the recipes' HTTP server on a thread of
//! its own inside the test process, and C libraries loaded at run time
//! with `dlopen` (so that building the tests needs no C development
//! package, and a machine without the library skips instead of failing).
#![allow(dead_code)]

use std::net::SocketAddr;
use std::thread::JoinHandle;
use std::time::Duration;

use yieldloop_http::{Request, Response, ServeConfig, Shutdown};

/// The recipes' HTTP server, serving [`demo`](yieldloop_recipes::demo::http::demo)
/// (`/` and `/sleep?ms=N`) on one worker thread of this process; drained
/// and joined when dropped.
pub struct HttpServer {
    /// Where it listens.
    pub addr: SocketAddr,
    shutdown: Shutdown,
    thread: Option<JoinHandle<()>>,
}

impl HttpServer {
    /// Binds 127.0.0.1:0 and serves the demo routes.
    pub fn start() -> HttpServer {
        HttpServer::start_with(yieldloop_recipes::demo::http::demo)
    }

    /// Binds 127.0.0.1:0 and serves with `handler`.
    pub fn start_with(
        handler: impl Fn(&Request<'_>) -> Response + Clone + Send + Sync + 'static,
    ) -> HttpServer {
        // No signal handlers in a test process; a short drain at the end.
        let server = ServeConfig::default()
            .signals(false)
            .grace(Duration::from_millis(500))
            .bind("127.0.0.1:0", 1)
            .expect("binding the HTTP server");
        let addr = server.local_addr();
        let shutdown = server.shutdown_handle();
        let thread = std::thread::spawn(move || {
            server.run(handler).expect("the HTTP server");
        });
        HttpServer {
            addr,
            shutdown,
            thread: Some(thread),
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.shutdown.trigger();
        if let Some(t) = self.thread.take() {
            // A server that panicked already failed its requests; do not
            // panic again while a failing test unwinds.
            let _ = t.join();
        }
    }
}

/// Stack size for tasks that run a client written for threads: ureq's
/// calls, unoptimised, need more than yieldloop's default 64 KiB (a
/// thread's stack is 2 to 8 MiB, and such code never had to count).
pub const CLIENT_STACK: usize = 1 << 20;

/// Spawns `f` as a task with [`CLIENT_STACK`] bytes of stack.
pub fn spawn_client<T: 'static>(f: impl FnOnce() -> T + 'static) -> yieldloop::JoinHandle<T> {
    yieldloop::Builder::new()
        .stack_size(CLIENT_STACK)
        .spawn(f)
        .expect("a task with a larger stack")
}

/// Checks a run of blocking calls made from tasks beside the shared
/// ticker: they overlapped (the run took under `limit`, where `what` says
/// what ran), and the ticker on the same thread kept ticking (at least 50
/// ticks, no gap of 100 ms).
pub fn assert_overlapped_beside_ticker(
    what: &str,
    elapsed: Duration,
    limit: Duration,
    ticks: u32,
    longest: Duration,
) {
    assert!(elapsed < limit, "{what} took {elapsed:?}");
    assert!(ticks >= 50, "ticker ticked {ticks} times in {elapsed:?}");
    assert!(
        longest < Duration::from_millis(100),
        "ticker's longest gap: {longest:?}"
    );
}

/// Reports that a test is skipped because a shared library is missing, or
/// fails when `YIELDLOOP_REQUIRE_SERVERS=1` asks for everything to be
/// there (as CI does after installing the packages).
pub fn skip(what: &str, package: &str) {
    use std::io::Write;
    let line = format!("skipping: {what} not found (apt-get install {package})");
    if std::env::var_os("YIELDLOOP_REQUIRE_SERVERS").is_some_and(|v| v == "1") {
        panic!("{line}; YIELDLOOP_REQUIRE_SERVERS=1 asks for it to be installed");
    }
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// C libraries opened with `dlopen`.
///
/// The only unsafe code of the recipes' tests: calling into a C library
/// has no safe form. Everything unsafe stays in this module and in the
/// thin wrappers of the tests that use it.
#[allow(unsafe_code)]
pub mod dl {
    use std::ffi::{c_void, CStr, CString};

    /// A shared library opened with `dlopen`, never closed: the C
    /// libraries loaded here keep threads and global state of their own,
    /// and unloading them under those is not worth the risk in a test.
    #[derive(Debug)]
    pub struct Library {
        handle: *mut c_void,
        name: String,
    }

    impl Library {
        /// Opens `soname` (`libpq.so.5`), or says why not.
        pub fn open(soname: &str) -> Result<Library, String> {
            let c = CString::new(soname).map_err(|e| e.to_string())?;
            // SAFETY: `c` is a valid C string; RTLD_NOW resolves every
            // symbol now, so a missing one fails here rather than later.
            let handle = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
            if handle.is_null() {
                return Err(last_error());
            }
            Ok(Library {
                handle,
                name: soname.to_string(),
            })
        }

        /// The address of function `name`, as a function pointer of type
        /// `F`.
        ///
        /// # Safety
        ///
        /// `F` must be an `extern "C"` function pointer type matching the
        /// function's C declaration.
        ///
        /// # Panics
        ///
        /// If the library has no such symbol.
        pub unsafe fn function<F: Copy>(&self, name: &str) -> F {
            assert_eq!(
                std::mem::size_of::<F>(),
                std::mem::size_of::<*mut c_void>(),
                "a function pointer type"
            );
            let c = CString::new(name).expect("a symbol name");
            // SAFETY: the handle is open (never closed) and `c` is a valid
            // C string.
            let ptr = unsafe { libc::dlsym(self.handle, c.as_ptr()) };
            assert!(
                !ptr.is_null(),
                "{} has no symbol {name}: {}",
                self.name,
                last_error()
            );
            // SAFETY: a non-null symbol address, reinterpreted as the
            // function pointer type the caller vouches for.
            unsafe { std::mem::transmute_copy::<*mut c_void, F>(&ptr) }
        }
    }

    /// `dlerror`'s message.
    fn last_error() -> String {
        // SAFETY: dlerror returns null or a C string valid until the next
        // dl* call on this thread; it is copied at once.
        let msg = unsafe { libc::dlerror() };
        if msg.is_null() {
            "unknown dlopen error".into()
        } else {
            // SAFETY: non-null, so a NUL-terminated string from dlerror.
            unsafe { CStr::from_ptr(msg) }
                .to_string_lossy()
                .into_owned()
        }
    }
}
