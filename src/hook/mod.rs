//! Feature `hook` (Linux): blocking socket and sleep calls made from a
//! task pause only that task.
//!
//! yieldloop defines the C library's entry points listed below. A call
//! made from inside a yieldloop task is served by pausing that task on the
//! scheduler (its reactor for descriptors, its timer heap for sleeps);
//! the same call made anywhere else (a plain thread, the blocking pool,
//! the scheduler's own code between resumes, a task being torn down, code
//! outside [`run`](crate::run)) is the C library's own function, reached
//! after one thread-local read. So a synchronous library that opens its
//! own sockets (the `redis` crate's `Client::open`, `ureq`, the `mysql`
//! crate, a C client library such as libpq or libcurl) is cooperative
//! inside a task without being changed: while it waits for its server,
//! the other tasks of the thread run. So is an event loop run inside a
//! task, a C library's (libevent's `event_base_dispatch`) or one written
//! by hand: it waits in `epoll_wait`, which pauses only that task.
//!
//! A synchronous client that drives a tokio runtime of its own (the
//! `postgres` crate runs one per client, and waits in its `block_on`) is
//! the exception. tokio marks the whole *thread* as inside that runtime
//! for as long as `block_on` runs, in a thread-local every task of the
//! thread shares, so no other task may run while one waits there: another
//! task entering a tokio runtime would panic ("Cannot start a runtime from
//! within a runtime"). So a wait inside a tokio runtime is left as the
//! plain call, which blocks the thread: such clients work from tasks, one
//! call at a time per thread, as without the hook. Run them with
//! [`spawn_blocking`](crate::spawn_blocking) to have their calls overlap.
//!
//! # What is intercepted
//!
//! | calls | from a task |
//! |---|---|
//! | `read`, `readv`, `recv`, `recvfrom`, `recvmsg` | on a socket the caller left blocking: made with `MSG_DONTWAIT`; on `EAGAIN` the task waits until the socket is readable, then tries again; `MSG_WAITALL` and `MSG_PEEK` as the kernel serves them (see [the flags and limits](self#flags-and-limits)) |
//! | `write`, `writev`, `send`, `sendto`, `sendmsg` | the same, waiting for writability; on a stream socket the call returns once every byte is handed to the kernel, as a blocking send does, and on a pipe once every byte is in the pipe, as a blocking write does |
//! | `connect` | on a blocking socket: started non-blocking (the mode is switched for that one system call and put back at once), the task waits until the socket is writable, and the call returns the kernel's outcome from `SO_ERROR` (`ECONNREFUSED`, `ETIMEDOUT`, …); to a Unix listener whose backlog is full, the task waits until it makes room |
//! | `accept`, `accept4` | on a blocking listener: the task waits until a connection is pending, then the plain call takes it |
//! | `poll`, `ppoll`, `select` | a zero-timeout poll first; if nothing is ready the task waits until one of the descriptors may be, or the timeout passes, and the answer is that of a real zero-timeout poll (the `revents` and sets are the kernel's); `select` leaves the time not slept in its timeout, as Linux's does; a `ppoll` with a signal mask is the plain call (the mask is applied atomically with the kernel's wait, which a pause cannot do) |
//! | `epoll_wait`, `epoll_pwait`, `epoll_pwait2` | with a timeout that is not zero: a zero-timeout wait first; if nothing is ready the task waits until the epoll descriptor is readable (it is while it has events) or the timeout passes, and the answer is that of a real zero-timeout wait (the events and error numbers are the kernel's, 0 at the timeout); cut short by a cancellation or a timeout scope, the wait fails with `EINTR`, never `ECANCELED` or `ETIMEDOUT` (see [the timeouts](self#timeouts-cancellation-and-teardown)); with a signal mask other than the thread's, the plain call (the mask is installed atomically with the kernel's wait) |
//! | `nanosleep`, `clock_nanosleep`, `usleep`, `sleep` | the task sleeps on the timer heap |
//! | `getaddrinfo` | runs on the [blocking pool](crate::spawn_blocking) while the task waits |
//! | `close` | drops what the hook kept about the descriptor (from any thread), then closes it; a task of the same thread waiting on it meanwhile gets `EBADF` |
//! | `setsockopt` | the plain call; a change of `SO_RCVTIMEO` or `SO_SNDTIMEO` makes the hook read the socket timeouts it keeps again |
//!
//! The library sees blocking semantics throughout: the hook never changes
//! a descriptor's mode (apart from the one `connect` system call), so
//! `fcntl(F_GETFL)` and `ioctl` report the library's own, and need no
//! interception. A descriptor the library made non-blocking, or a call
//! with its own `MSG_DONTWAIT`, gets the plain answer (`EAGAIN` as
//! before). `SO_RCVTIMEO` and `SO_SNDTIMEO` are honoured: when the time
//! passes the call fails with `EAGAIN` (`EINPROGRESS` for `connect`), or
//! returns the bytes moved so far, as the kernel's. A descriptor that is
//! neither a socket nor a pipe (a regular file, a terminal, a device) gets
//! the plain call. A read of a pipe or FIFO left blocking waits until it
//! is readable, then the plain call is made (should another reader empty
//! it first, that call blocks the thread as it would have); a write is
//! made of writes that never wait, with pauses between them while the
//! pipe is full.
//! A `write` on a socket is a `send` without flags, so it raises `SIGPIPE`
//! on a broken connection exactly as `write` does.
//!
//! # Flags and limits
//!
//! Where a flag, a socket type or a limit changes what the kernel's call
//! does, the call from a task does the same: the same return value, the
//! same `errno`, the same bytes (`tests/hook_exact.rs` makes each call on
//! a plain thread and in a task and compares them).
//!
//! | case | the kernel's call (on a plain thread) | from a task |
//! |---|---|---|
//! | `recv`, `recvfrom` with `MSG_WAITALL` on a stream socket (TCP, `AF_UNIX`) | waits until all `len` bytes have come; fewer at the end of the stream, or when an error, a signal or `SO_RCVTIMEO` cuts it short after some | the same: receives with `MSG_DONTWAIT` at the offset reached, pausing between them |
//! | the same with `MSG_PEEK` on TCP | waits until `len` bytes are queued and returns them, consuming none (fewer at the end of the stream or when `SO_RCVTIMEO` passes) | the same: peeks at all that is queued; while that is fewer than `len` and the stream has neither ended nor failed (`poll`'s `POLLRDHUP`, `POLLHUP`, `POLLERR`), pauses until more comes |
//! | the same with `MSG_PEEK` on an `AF_UNIX` stream | returns what is queued, waiting only while nothing is | the same: one peek |
//! | `MSG_WAITALL` on a datagram socket (UDP, `AF_UNIX` datagram and sequenced-packet, raw) | no effect: the first datagram, at once | the same: one receive |
//! | `MSG_PEEK` without `MSG_WAITALL` | waits while nothing is queued, then returns what is, consuming none | the same |
//! | `recvmsg` with `MSG_WAITALL` on a stream socket | waits until all the vectors' bytes have come (or the stream ends, fails or times out) | the same, the task paused between receives, each made into what is left of the vectors (the caller's array is narrowed for each receive and put back as it was); with control data asked for (`msg_controllen` not 0), **one receive**, as without the flag, since a second would write over the first's control data |
//! | `MSG_DONTWAIT`, or a descriptor the caller made non-blocking (`O_NONBLOCK`) | never waits: `EAGAIN`, or what is there | the plain call |
//! | `readv`, `writev` with a count below 0 or above `IOV_MAX` (1024); `sendmsg`, `recvmsg` with a `msg_iovlen` above it | `EINVAL` (`EMSGSIZE` for a message), at once | the plain call, at once: the same error. The hook reads a caller's vectors only once the kernel has accepted them |
//! | `write`, `writev` on a pipe or FIFO left blocking, more bytes than the pipe has room for | waits while the reader drains the pipe, and returns once every byte is in it (the count written, if an error or a signal cuts it short after some); at most `PIPE_BUF` (4096) bytes go in whole | the same: each attempt writes what fits now (`pwritev2` with `RWF_NOWAIT`), and while the pipe is full the task pauses until it is writable; the count written if a cancellation or an error cuts it short after some. Where the kernel refuses `RWF_NOWAIT` on pipes (before Linux 6.4), a write of up to `PIPE_BUF` bytes is the plain call once the pipe polls writable, and a longer one goes `PIPE_BUF` bytes at a time, each once the pipe polls writable |
//! | blocking `connect` to an `AF_UNIX` listener whose backlog is full | waits until the listener accepts, then connects; `EAGAIN` once `SO_SNDTIMEO` passes | the same: a non-blocking `connect` there fails with `EAGAIN` (there is nothing in progress to wait for, and no event says when there is room), so it is made again after pauses of 1 ms, doubling up to 50 ms, until it connects, fails otherwise, or `SO_SNDTIMEO` passes (`EAGAIN`) |
//! | `select` with `tv_usec` of 1,000,000 or more | the C library carries whole seconds out of `tv_usec`; a negative `tv_sec` or `tv_usec` is `EINVAL`; the time not slept is left in the timeout, normalised | the same |
//! | `select` with `nfds` above `FD_SETSIZE` (1024) | taken: the kernel reads (and writes) no more bits of each set than the process's descriptor table holds; only a negative `nfds` is `EINVAL` | the same: for such an `nfds` the table's size is read from `/proc/self/status` (`FDSize`) |
//!
//! # Signal handlers and `fork`
//!
//! Where the C library's function is async-signal-safe, so is the
//! intercepted one, in these cases (the fast path allocates nothing, takes
//! no lock and touches no thread-local state that is initialised lazily or
//! has a destructor):
//!
//! - every intercepted call from a thread that is not running a task (a
//!   plain thread, the blocking pool, the scheduler's own code), and in a
//!   child process after `fork`: one thread-local load, then the C
//!   library's function;
//! - `read`, `readv`, `recv`, `recvfrom`, `recvmsg`, `write`, `writev`,
//!   `send`, `sendto`, `sendmsg` on a **non-blocking** descriptor (or with
//!   `MSG_DONTWAIT`) from a handler that interrupted a task: the kind of
//!   the descriptor is looked up in a fixed process-wide table (an `fstat`
//!   the first time), and such a call never pauses the task, even when
//!   its budget is spent (an `fcntl` then checks the mode). The usual
//!   self-pipe write is of this kind;
//! - `close` (on any thread), `setsockopt`: an atomic update, and for a
//!   `close` of a descriptor that a task of the interrupted thread has
//!   waited on, the removal of its registration from the reactor, which is
//!   made only if the scheduler's state is not in use and may free memory:
//!   close such a descriptor outside the handler.
//!
//! Not safe in a handler that interrupts a task: any of these calls on a
//! descriptor left **blocking** (it may pause the task inside the handler),
//! the sleeps (they pause the task), `poll`, `ppoll`, `select` and the
//! epoll waits with a timeout, `connect`, `accept`, and `getaddrinfo` (not
//! async-signal-safe in the C library either). A self-pipe must be non-blocking anyway.
//!
//! `fork` is intercepted too: the C library's, and in the child (one
//! thread, with a copy of the schedulers' memory and the parent's
//! reactor's poller, which it shares with the parent) every intercepted
//! call from then on is the plain one, and a `close` leaves the reactor
//! alone. So a task may `fork` and have the child make plain calls
//! (`usleep`, `write`, `execve`, `_exit`); the child never runs the
//! scheduler or the parent's tasks, and the parent is unaffected. The
//! child must not use yieldloop's own API (`spawn`, `sleep`, channels),
//! which would switch to the copy of the parent's tasks. A child made
//! without the `fork` name (a raw `clone`, `vfork`, `posix_spawn`) is not
//! marked, and must `exec` or `_exit` at once.
//!
//! # Timeouts, cancellation and teardown
//!
//! The caller of an intercepted call is foreign code: a C library, or an
//! `extern "C"` function, which an unwind must never cross. So a pause
//! inside an intercepted call never unwinds:
//!
//! - when the deadline of an enclosing [`timeout`](crate::timeout()) scope
//!   passes during the call, the call fails with **`ETIMEDOUT`**, the
//!   expiry is recorded in the task, and the scope's `timeout` returns
//!   `Err(Elapsed)` when its closure returns (the task's next own pause
//!   inside the scope unwinds to it as usual);
//! - when the task is cancelled by [`JoinHandle::cancel`](crate::JoinHandle::cancel)
//!   during the call, it is not unwound: it is marked cancelled and woken,
//!   and `cancel` returns at once. On its next turn the call fails with
//!   **`ECANCELED`**, as does every intercepted I/O call it makes from then
//!   on; it runs on, in its turns like any task, until its next own pause
//!   (a yieldloop call that waits), where it is torn down as any other
//!   cancelled task. Meanwhile [`diag::dump`](crate::diag::dump) lists it
//!   as cancelled (`TaskDump::cancelled`), with its backtrace, and the
//!   slow-task warning says so if it holds the thread;
//! - when a [`scope`](crate::scope()) tears its tasks down, or
//!   [`run`](crate::run) or a [`Runtime`](crate::Runtime) ends, the
//!   teardown cannot wait: a task inside such a call is resumed on the spot
//!   (its call failing with `ECANCELED`) until it pauses on its own. A task
//!   that is still paused inside intercepted calls after eight such
//!   resumes is left as it is: its stack is leaked, never unwound. So is
//!   one torn down while its thread unwinds (a `timeout` or a panic
//!   tearing down a [`scope`](crate::scope()) whose task is inside such a
//!   call): resumed then, its code would run mid-unwind, where a panic of
//!   its own (an `unwrap` of the error) would abort the process. A message
//!   on stderr says when a task is left so;
//! - a sleep cut short either way returns as if it had slept its full
//!   time (a sleep that failed would be retried by most callers, and
//!   `std::thread::sleep` allows only `EINTR`); but a sleep that *starts*
//!   in a cancelled task, or after its timeout scope has passed, sleeps its
//!   whole time: a loop that retries a failing call and sleeps between
//!   tries (a reconnect loop) then neither spins nor holds the thread;
//! - the epoll waits follow the sleeps' rule, since an event loop takes any
//!   error of its wait but `EINTR` as fatal (tokio panics, and its runtime,
//!   dropped during that unwind, aborts the process; libuv and libev abort
//!   at once): a wait cut short either way fails with `EINTR`, as one cut
//!   short by a signal does, and a wait that *starts* in a cancelled task,
//!   or after its timeout scope has passed, is not cut short: it returns
//!   its events, or 0 at its own timeout. The loop runs on until it
//!   returns of its own accord (one that never does keeps a cancelled task
//!   alive), and the scope's `timeout` returns `Elapsed` when its closure
//!   returns;
//! - writes to standard output and standard error (descriptors 1 and 2)
//!   are always the plain calls, from a task too, whatever they are (a
//!   terminal, a file, a pipe, a socket): std holds the `RefCell` of its
//!   `Stdout` or `Stderr` across the write, so a task paused in one would
//!   make the next `println!` of another task of the thread panic with
//!   "already borrowed"; and a cancelled or panicking task's last words
//!   must get out (a failed write to stderr in the panic hook aborts the
//!   process). The price: a write to a full stdout or stderr pipe blocks
//!   the thread until its reader drains it, as without the hook;
//! - a panic inside the hook's own code makes the call fail with `EIO`.
//!
//! # Setting up
//!
//! The definitions live in yieldloop's library, so inside the final
//! executable they take the place of the C library's for every call made
//! by Rust code (the standard library's included: `std::net`,
//! `std::thread::sleep`, and every crate built on them). A C library
//! loaded as a shared object (with `dlopen`, or linked against the
//! executable, like libpq or libcurl) reaches them only if the executable
//! exports them. rustc already puts `#[no_mangle]` functions in an
//! executable's dynamic symbol table on Linux (seen with rustc 1.95, in
//! debug and release builds, whether or not the program names this
//! module); the one setting that guarantees it whatever the toolchain is
//! to link the executable with `-rdynamic`, for instance from its build
//! script
//!
//! ```text
//! fn main() {
//!     println!("cargo:rustc-link-arg-bins=-rdynamic");
//! }
//! ```
//!
//! or in `.cargo/config.toml`:
//!
//! ```text
//! [target.x86_64-unknown-linux-gnu]
//! rustflags = ["-C", "link-arg=-rdynamic"]
//! ```
//!
//! [`active`] tells whether that is in effect.
//!
//! The hook needs the dynamically linked GNU C library (or another that
//! `dlsym(RTLD_NEXT, ..)` finds); a statically linked executable aborts
//! at its first intercepted call, with a message.
//!
//! # Cost
//!
//! Outside a task: one thread-local read and an indirect call more than
//! the plain call. Inside a task, on a socket: the call itself with
//! `MSG_DONTWAIT`; when it would block, an `fcntl` (is the descriptor the
//! library's non-blocking one?), an `fstat` (is its registration still for
//! this file?) and the pause. The socket's timeouts are read with
//! `getsockopt` on its first wait, and again only after a `setsockopt` of
//! one (on any socket: a duplicate descriptor shares its socket's
//! options). Each
//! descriptor is registered with the reactor once, on its first wait,
//! and leaves it on `close`. yieldloop's own sockets, pipes and
//! [`PausingIo`](crate::io::PausingIo) descriptors are non-blocking, and
//! their calls are marked as yieldloop's own: the hook lets them through
//! after the same one-word check as outside a task. (So does a call made
//! inside a closure given to `PausingIo::read_with` and its kind.)
//!
//! # What is not covered
//!
//! Calls that do not go through these names: raw `syscall()`, a C library
//! linked statically (musl), system calls the C library makes
//! internally; waits on futexes (`std::sync::Mutex`, `Condvar`, channels
//! of the standard library), file I/O.
//! They block the thread, as without the feature. A `std::sync::Mutex` or
//! a `RefCell` held across an intercepted call is held while the task is
//! paused: another task of the same thread that takes it blocks the whole
//! thread for good (the mutex) or panics (the `RefCell`). A descriptor
//! used from tasks of two schedulers is registered with each (`epoll`
//! allows it) and each wait is woken by its own; the two race for the
//! bytes as two threads would, and an `accept` woken for a connection
//! another thread took blocks its thread until the next one. A signal
//! handler that writes to a *blocking* descriptor while a task runs would
//! pause that task inside the handler: self-pipes must be non-blocking
//! anyway. A descriptor closed where the hook does not see it (`dup2`
//! over it, a raw system call, the C library's own internal `close`, as
//! in `fclose`) may have its number taken for what it was: a registration
//! is checked against the file's inode before each wait, and a socket
//! taken for one that is not gets the plain call, but a number that was a
//! file and is now a socket gets the plain, blocking call until the hook
//! sees it closed. All epoll descriptors share one inode (as do eventfds
//! and timerfds), so an epoll descriptor closed unseen whose number goes
//! to another epoll instance is taken for the first: a wait on it from a
//! task sees none of its events and lasts its whole timeout. Signals do not cut a task's sleep short (`EINTR` never comes
//! from one, and the remaining-time argument is never written): the
//! scheduler's thread receives them, the task sleeps its full time. The
//! book's chapter 12 says more, and what the slow-task monitor reports
//! when a library blocks where the hook cannot see.

// Elsewhere the build stops in `sys`, with a message naming the feature,
// and these items are left out so that the message is all it reports.
crate::sys::linux_only! {
    mod calls;
    mod epoll;
    mod fds;
    mod fork;
    mod lookup;
    mod pause;
    mod real;
    mod symbols;
    /// True when the intercepting definitions are the ones this process's
    /// shared libraries reach: the executable was linked with them and
    /// exports them (`-rdynamic`; see the [module docs](self#setting-up)).
    ///
    /// Calls made by Rust code inside the executable (the standard library's
    /// included) reach the hook whenever the feature is on; this tells about
    /// C libraries loaded as shared objects, which reach it only through the
    /// export.
    ///
    /// # Examples
    ///
    /// A startup check:
    ///
    /// ```
    /// if !yieldloop::hook::active() {
    ///     eprintln!(
    ///         "C libraries loaded as shared objects will block the scheduler's \
    ///          thread: link the executable with -rdynamic"
    ///     );
    /// }
    /// ```
    pub fn active() -> bool {
        // What a shared library's call to `recv` is bound to: the first
        // definition in the global scope, which is the executable's when it
        // exports its symbols.
        // SAFETY: a NUL-terminated name; RTLD_DEFAULT searches the global scope.
        let found = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"recv".as_ptr()) };
        std::ptr::eq(found.cast_const().cast::<()>(), symbols::recv as *const ())
    }
}
