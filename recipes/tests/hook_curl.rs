//! libcurl's easy interface, loaded with `dlopen` and driven from tasks
//! under feature `hook`, against the recipes' HTTP server: libcurl's own
//! non-blocking sockets wait in its `poll`, which reaches yieldloop's
//! definition because the test executable exports it (`-rdynamic`, set by
//! the recipes' build script), so transfers from several tasks overlap on
//! one thread. Skips, naming the package, where libcurl.so.4 is missing.
#![allow(unsafe_code)] // Calls into libcurl; see `Curl` for each one's contract.

mod hook_util;
mod util;

use std::cell::Cell;
use std::ffi::{c_char, c_int, c_long, c_void, CStr, CString};
use std::rc::Rc;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use hook_util::dl::Library;
use hook_util::HttpServer;

/// The libcurl functions the tests use, from `curl/curl.h` and
/// `curl/easy.h`; `CURL` is opaque, `CURLcode` an int.
#[derive(Clone, Copy)]
struct Curl {
    easy_init: unsafe extern "C" fn() -> *mut c_void,
    easy_setopt: unsafe extern "C" fn(*mut c_void, c_int, ...) -> c_int,
    easy_perform: unsafe extern "C" fn(*mut c_void) -> c_int,
    easy_getinfo: unsafe extern "C" fn(*mut c_void, c_int, ...) -> c_int,
    easy_strerror: unsafe extern "C" fn(c_int) -> *const c_char,
    easy_cleanup: unsafe extern "C" fn(*mut c_void),
}

// The option and info numbers of curl.h: a type base plus an index.
const CURLOPT_WRITEDATA: c_int = 10_001;
const CURLOPT_URL: c_int = 10_002;
const CURLOPT_WRITEFUNCTION: c_int = 20_011;
const CURLOPT_NOSIGNAL: c_int = 99;
const CURLOPT_TIMEOUT_MS: c_int = 155;
const CURLINFO_RESPONSE_CODE: c_int = 0x20_0002;
/// `CURL_GLOBAL_ALL`.
const CURL_GLOBAL_ALL: c_long = 3;
/// `CURLE_OPERATION_TIMEDOUT`.
const CURLE_OPERATION_TIMEDOUT: c_int = 28;

impl Curl {
    /// libcurl.so.4, initialised once for the process; `None` after saying
    /// which package to install.
    fn load() -> Option<Curl> {
        static CURL: OnceLock<Result<Curl, String>> = OnceLock::new();
        let loaded = CURL.get_or_init(|| {
            let lib = Library::open("libcurl.so.4")?;
            // SAFETY: each type is the function's C signature from curl.h
            // (CURLcode and CURLoption are C enums, int-sized); the global
            // init runs once, before any other call, as libcurl asks.
            unsafe {
                let init: unsafe extern "C" fn(c_long) -> c_int = lib.function("curl_global_init");
                assert_eq!(init(CURL_GLOBAL_ALL), 0, "curl_global_init");
                Ok(Curl {
                    easy_init: lib.function("curl_easy_init"),
                    easy_setopt: lib.function("curl_easy_setopt"),
                    easy_perform: lib.function("curl_easy_perform"),
                    easy_getinfo: lib.function("curl_easy_getinfo"),
                    easy_strerror: lib.function("curl_easy_strerror"),
                    easy_cleanup: lib.function("curl_easy_cleanup"),
                })
            }
        });
        match loaded {
            Ok(curl) => Some(*curl),
            Err(e) => {
                hook_util::skip(&format!("libcurl.so.4 ({e})"), "libcurl4");
                None
            }
        }
    }

    /// GETs `url` with a fresh easy handle: (status, body), or libcurl's
    /// error code and message.
    fn get(self, url: &str, limit: Duration) -> Result<(u16, Vec<u8>), (c_int, String)> {
        let url = CString::new(url).expect("a URL");
        let mut body: Vec<u8> = Vec::new();
        // SAFETY: the handle lives until the cleanup below; every option
        // gets the argument type curl.h gives it (a C string that outlives
        // the transfer, a long, the callback and its data pointer, which
        // points at `body` for the whole transfer).
        unsafe {
            let h = (self.easy_init)();
            assert!(!h.is_null(), "curl_easy_init");
            let limit_ms = c_long::try_from(limit.as_millis()).unwrap_or(c_long::MAX);
            let one: c_long = 1;
            let set = [
                (self.easy_setopt)(h, CURLOPT_URL, url.as_ptr()),
                (self.easy_setopt)(h, CURLOPT_NOSIGNAL, one),
                (self.easy_setopt)(h, CURLOPT_TIMEOUT_MS, limit_ms),
                (self.easy_setopt)(
                    h,
                    CURLOPT_WRITEFUNCTION,
                    collect as extern "C" fn(*const c_char, usize, usize, *mut c_void) -> usize,
                ),
                (self.easy_setopt)(
                    h,
                    CURLOPT_WRITEDATA,
                    &mut body as *mut Vec<u8> as *mut c_void,
                ),
            ];
            assert!(set.iter().all(|&rc| rc == 0), "curl_easy_setopt: {set:?}");
            let rc = (self.easy_perform)(h);
            let mut status: c_long = 0;
            let info_rc =
                (self.easy_getinfo)(h, CURLINFO_RESPONSE_CODE, &mut status as *mut c_long);
            (self.easy_cleanup)(h);
            if rc != 0 {
                let msg = CStr::from_ptr((self.easy_strerror)(rc))
                    .to_string_lossy()
                    .into_owned();
                return Err((rc, msg));
            }
            assert_eq!(info_rc, 0, "curl_easy_getinfo");
            Ok((status as u16, body))
        }
    }
}

/// libcurl's write callback: appends what it got to the `Vec<u8>` its data
/// pointer points at.
extern "C" fn collect(ptr: *const c_char, size: usize, n: usize, data: *mut c_void) -> usize {
    let len = size * n;
    // SAFETY: libcurl passes `len` readable bytes at `ptr` and the data
    // pointer set with CURLOPT_WRITEDATA, a live `Vec<u8>` (see `get`).
    unsafe {
        let body = &mut *(data as *mut Vec<u8>);
        body.extend_from_slice(std::slice::from_raw_parts(ptr.cast::<u8>(), len));
    }
    len
}

/// Ten tasks each fetch `/sleep?ms=200` with their own easy handle: all
/// are answered in well under the 2 s they would take one after another,
/// and a 1 ms ticker on the same thread keeps ticking.
#[test]
fn transfers_from_tasks_overlap() {
    let Some(curl) = Curl::load() else { return };
    // The C library reaches the hook only through the executable's
    // exported symbols.
    assert!(
        yieldloop::hook::active(),
        "the test executable does not export the hook's symbols (-rdynamic)"
    );
    const TASKS: usize = 10;
    let server = HttpServer::start();
    let url = format!("http://{}/sleep?ms=200", server.addr);
    let (elapsed, ticks, longest) = yieldloop::run(move || {
        let stop = Rc::new(Cell::new(false));
        let ticker = util::ticker(stop.clone());
        yieldloop::sleep(Duration::from_millis(10));
        let start = Instant::now();
        let tasks: Vec<_> = (0..TASKS)
            .map(|_| {
                let url = url.clone();
                yieldloop::spawn(move || curl.get(&url, util::TIMEOUT))
            })
            .collect();
        for task in tasks {
            let (status, body) = task.join().unwrap().expect("the transfer");
            assert_eq!((status, body.as_slice()), (200, &b"slept 200 ms\n"[..]));
        }
        let elapsed = start.elapsed();
        stop.set(true);
        let (ticks, longest) = ticker.join().unwrap();
        (elapsed, ticks, longest)
    });
    hook_util::assert_overlapped_beside_ticker(
        "10 transfers",
        elapsed,
        Duration::from_millis(1200),
        ticks,
        longest,
    );
}

/// Bodies, statuses and libcurl's own timeout, in a task as on a plain
/// thread (there, the plain calls).
#[test]
fn answers_and_timeouts_in_a_task_and_on_a_thread() {
    let Some(curl) = Curl::load() else { return };
    let server = HttpServer::start();
    let addr = server.addr;
    let session = move || {
        let mut out = Vec::new();
        let (status, body) = curl
            .get(&format!("http://{addr}/"), util::TIMEOUT)
            .expect("GET /");
        out.push(format!("{status} {}", String::from_utf8_lossy(&body)));
        let (status, _) = curl
            .get(&format!("http://{addr}/missing"), util::TIMEOUT)
            .expect("GET /missing");
        out.push(format!("{status}"));
        let start = Instant::now();
        let timed_out = curl.get(
            &format!("http://{addr}/sleep?ms=2000"),
            Duration::from_millis(200),
        );
        let waited = start.elapsed();
        out.push(format!(
            "timeout={} in time={}",
            matches!(timed_out, Err((CURLE_OPERATION_TIMEDOUT, _))),
            waited >= Duration::from_millis(190) && waited < Duration::from_millis(1500)
        ));
        out
    };
    let on_thread = std::thread::spawn(session).join().unwrap();
    assert_eq!(
        on_thread,
        [
            "200 Hello from yieldloop!\n",
            "404",
            "timeout=true in time=true"
        ]
    );
    let in_task = yieldloop::run(session);
    assert_eq!(in_task, on_thread);
}
