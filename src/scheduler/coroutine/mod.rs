//! A task's own memory and the thread-local of the running task.
//!
//! Two words are kept apart here. A task's *header* is the block of memory
//! that holds its coroutine and context ([`TaskHeader`]). A task's *body* is
//! the function its coroutine runs: the spawning layer's wrapper around the
//! user's closure, which keeps the closure's value or panic for the
//! task's handle (see [`new_coroutine`]).
//!
//! Each task's coroutine and context live in one block at the top of its
//! own stack, its [`TaskHeader`]. The scheduler resumes the coroutine in
//! place ([`resume_task`]); code running in the task finds its context
//! through the thread-local `CURRENT`, and pauses through
//! [`TaskContext::pause`], which reaches the coroutine's [`Yielder`] by a
//! raw pointer kept in the context. That is why this module holds the
//! crate's main `unsafe`. The rules that keep the pointers valid are all
//! enforced in this file:
//!
//! * a header's address never changes while its task lives;
//! * `CURRENT` points at the running task's context only while
//!   [`resume_task`] or [`drop_task`] runs that task, and is cleared (or
//!   restored) before they return, so code on the scheduler's own stack
//!   never sees a task context at all;
//! * a task stores its yielder pointer in its context when its coroutine starts
//!   ([`enter_task`]). The yielder lives on the coroutine's own stack, which
//!   stays mapped for as long as the coroutine exists, and it is only
//!   dereferenced from code running on that very stack.
//!
//! ```text
//!   top of the task's stack ─▶ ┌──────────────────────────────┐
//!                              │ TaskHeader                    │
//!                              │   co: the corosensei coroutine │
//!                              │   cx: TaskContext (id, guard,  │
//!                              │       yielder, timeout,        │
//!                              │       task-locals slot)        │
//!                              │   joiners: who waits for it    │
//!                              ├──────────────────────────────┤
//!                              │ the task's frames, growing ▼  │
//! ```

use std::any::Any;
use std::cell::Cell;
use std::ptr::{self, NonNull};
use std::rc::Rc;

use corosensei::{Coroutine, CoroutineResult, Yielder};

use crate::protocol::{Op, Resume, TaskId, TaskLabel, WaitToken};
use crate::stack::{GuardInfo, PooledStack};

mod panic_hook;

pub(crate) use panic_hook::install as install_panic_hook;

/// The coroutine type every task runs in: resumed with [`Resume`], yields
/// [`Op`], returns nothing (the task's value goes wherever its body puts it).
pub(crate) type TaskCoroutine = Coroutine<Wake, Op, (), PooledStack>;

/// What a paused task is resumed with: the answer to its op, or, from
/// [`capture_backtrace`], a request to note where it is and pause again.
/// `Capture` takes a value `Resume` never uses, so a `Wake` is a `Resume`
/// in memory: telling the two apart costs the pause a compare.
pub(crate) enum Wake {
    Answer(Resume),
    Capture,
}

const _: () = assert!(std::mem::size_of::<Wake>() == std::mem::size_of::<Resume>());

/// A coroutine on `stack` that runs `body` (the task's body: the wrapper
/// around the user's closure) as a task: it first records its yielder
/// ([`enter_task`]), so [`TaskContext::pause`] can find it.
///
/// corosensei copies the coroutine's start closure onto the new stack and
/// refuses one over 1 KiB, so a bigger body (a large value captured by a
/// task's closure, a large future handed to
/// [`spawn_future`](crate::spawn_future)) is moved to the heap first and
/// only its box is copied.
pub(crate) fn new_coroutine<B: FnOnce() + 'static>(stack: PooledStack, body: B) -> TaskCoroutine {
    if std::mem::size_of::<B>() > INLINE_BODY_MAX {
        let body = Box::new(body);
        // A box of a closure is a closure, of one word.
        start_coroutine(stack, body)
    } else {
        start_coroutine(stack, body)
    }
}

/// The largest task body copied onto its stack as it is; well below
/// corosensei's 1 KiB limit for the start closure that wraps it.
const INLINE_BODY_MAX: usize = 512;

fn start_coroutine(stack: PooledStack, body: impl FnOnce() + 'static) -> TaskCoroutine {
    Coroutine::with_stack(stack, move |yielder: &Yielder<Wake, Op>, _first| {
        enter_task(yielder);
        body();
    })
}

thread_local! {
    /// The running (or unwinding) task's context; null while the scheduler
    /// itself runs. One word, written twice per resume.
    static CURRENT: Cell<*const TaskContext> = const { Cell::new(ptr::null()) };
    /// True while the scheduler tears a task down; tells a task's body that a
    /// caught unwind is the coroutine's forced unwind and must go on.
    static FORCED_UNWIND: Cell<bool> = const { Cell::new(false) };
    /// Budget units spent by this thread's tasks since the scheduler last
    /// took the count ([`take_spent`]), added at each task's pause: tasks that each pause within their
    /// budget, but keep one another busy (two tasks on a small channel),
    /// still make the loop look for I/O often enough.
    static SPENT: Cell<u32> = const { Cell::new(0) };
}

/// The budget units this thread's tasks spent since the last call
/// (wrapping); the count starts again from 0.
#[inline]
pub(crate) fn take_spent() -> u32 {
    SPENT.with(|s| s.replace(0))
}

/// The budget units this thread's tasks spent since the last
/// [`take_spent`], without taking them.
#[inline]
pub(crate) fn spent() -> u32 {
    SPENT.with(Cell::get)
}

/// The [`timeout`](crate::timeout()) in force in a task: its deadline and
/// the id its expiry carries. Kept here, in the task's context, so that it
/// follows the task across its pauses; only the `timeout` module makes and
/// reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TimeoutScope {
    pub(crate) deadline: std::time::Instant,
    pub(crate) id: u64,
}

/// What code running in a task needs to know about itself: kept in the
/// task's [`TaskHeader`], so it needs no saving and restoring around each pause.
///
/// `repr(C)` keeps the fields in this order: first those every pause or
/// resume reads or writes, which then share the header's first two cache
/// lines with the coroutine's saved stack pointer (see [`HOT_HEADER`]);
/// after them those read only now and then (a timeout's expiry in an
/// intercepted call, a task-local, a stack-overflow report). With
/// hundreds of tasks, each line a resume touches is a likely cache miss.
#[derive(Debug)]
#[repr(C)]
pub(crate) struct TaskContext {
    /// The coroutine's yielder, set when the coroutine starts, before the
    /// body runs.
    yielder: Cell<*const Yielder<Wake, Op>>,
    /// The task's cooperative budget; see [`Budget`].
    budget: Budget,
    /// About where the stack pointer was when the task last paused (the
    /// address of a local of [`TaskContext::pause`]), or 0 before the first pause:
    /// the frames a resume returns through lie just around it.
    paused_sp: Cell<usize>,
    /// The task's earliest active [`timeout`](crate::timeout()).
    timeout: Cell<Option<TimeoutScope>>,
    pub(crate) id: TaskId,
    /// What the `hook` feature keeps about the task; see [`ForeignState`].
    foreign: ForeignState,
    /// The task's task-locals, kept here for the `task_local` module, which
    /// alone looks inside (this module does not know their type). Empty
    /// until the task first uses one, so a task that never does costs no
    /// allocation; 16 bytes, which keeps the header within its four cache
    /// lines.
    ///
    /// # Invariant
    ///
    /// Owns no memory once the task's body has ended (by return, panic or
    /// forced unwind): the body tears its task-locals down on its way out,
    /// so they are dropped on the task's stack, and leaves a zero-sized
    /// marker; the header, which has no drop of its own, leaks nothing.
    locals: LocalsSlot,
    /// Where the guard page is, for stack-overflow reports.
    pub(crate) guard: GuardInfo,
}

/// How many operations that could pause a task may complete at once, in
/// one turn of the task, before the next such operation first gives the
/// thread back: the cooperative budget every task starts each turn with,
/// unless [`Builder::budget`](crate::Builder::budget) or
/// [`RuntimeBuilder::budget`](crate::RuntimeBuilder::budget) says
/// otherwise.
///
/// An operation counts when it is one that waits for something (a socket
/// read or write, an accept, a channel's send or receive, a lock, a join,
/// a poll of an async reader, an intercepted call under feature `hook`)
/// and it completes without waiting. A pause of any kind starts a new turn
/// with a whole budget, so a task that waits now and then never meets it.
///
/// 128, as tokio's: with it, a task that always finds its input ready
/// still gives its thread back every few hundred microseconds of socket
/// reads, while the hand-over, echo and HTTP paths, which pause every
/// operation or two, never reach it (see the book's chapter on fairness
/// for how it was chosen and what it costs).
pub const DEFAULT_BUDGET: u32 = 128;

/// A task's cooperative budget: how many operations that could have
/// paused it may still complete at once before the next one first gives
/// the thread back (see the `coop` module). Kept beside the rest of the
/// context, on the cache lines a resume touches anyway.
#[derive(Debug)]
struct Budget {
    /// Units left in this turn.
    ///
    /// # Invariant
    ///
    /// Set back to `full` by every pause ([`TaskContext::pause`]), so a
    /// turn starts with a whole budget whatever ended the last one; what
    /// the turn spent is then added to `SPENT`.
    left: Cell<u32>,
    /// The budget a turn starts with (at least 1), or [`UNCONSTRAINED`]
    /// inside an [`unconstrained`](crate::raw::unconstrained) region.
    full: Cell<u32>,
}

/// [`Budget::full`] inside an unconstrained region: a spent budget is
/// refilled there instead of yielding.
const UNCONSTRAINED: u32 = u32::MAX;

/// The state of a task's intercepted C calls (feature `hook`), kept in its
/// context so that the scheduler can read it when it tears the task down.
/// A task paused inside an intercepted call has frames of foreign code
/// (a C library, or an `extern "C"` function) above the pause, which an
/// unwind must never cross: such a task is resumed with
/// [`Resume::Cancelled`] instead, and unwound at its next own pause.
///
/// `repr(C)`: the flags a pause reads first, the scope id, read only when
/// a timeout ends an intercepted call, last (see [`TaskContext`]).
#[derive(Debug, Default)]
#[repr(C)]
pub(crate) struct ForeignState {
    /// True while the task is paused inside an intercepted call.
    paused: Cell<bool>,
    /// True once the task was cancelled (or torn down) while paused inside
    /// an intercepted call: every intercepted call fails at once from then
    /// on, and its next own pause is its last.
    cancelled: Cell<bool>,
    /// True while the task makes one of yieldloop's own calls on a
    /// non-blocking descriptor ([`own_io`]): the hook lets those through
    /// without looking at the descriptor.
    #[cfg(feature = "hook")]
    own_io: Cell<bool>,
    /// The id of a timeout scope whose deadline ended an intercepted call
    /// (0: none): the scope's `timeout` returns `Err(Elapsed)` when its
    /// closure returns.
    expired_scope: Cell<u64>,
}

/// True when an intercepted call (feature `hook`) made now should be
/// served by pausing the calling task: a task runs (not torn down) and
/// is not inside one of yieldloop's own I/O calls ([`own_io`]).
#[cfg(feature = "hook")]
#[inline(always)]
pub(crate) fn hook_applies() -> bool {
    match running_cx() {
        Some(cx) => !cx.foreign.own_io.get() && !FORCED_UNWIND.with(Cell::get),
        None => false,
    }
}

/// Runs `f`, one of yieldloop's own operations on a non-blocking
/// descriptor (a `PausingIo` try), marked so that the `hook` feature lets
/// its system calls through untouched. Without the feature, just `f()`.
#[inline(always)]
pub(crate) fn own_io<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(feature = "hook")]
    {
        /// Puts the mark back however `f` ends (also if it pauses, the
        /// mark being the task's own).
        struct Restore(Option<&'static TaskContext>, bool);
        impl Drop for Restore {
            fn drop(&mut self) {
                if let Some(cx) = self.0 {
                    cx.foreign.own_io.set(self.1);
                }
            }
        }
        let cx = running_cx();
        let was = cx.is_some_and(|cx| cx.foreign.own_io.replace(true));
        let _restore = Restore(cx, was);
        f()
    }
    #[cfg(not(feature = "hook"))]
    f()
}

/// The cell of [`TaskContext::locals`]; a type of its own only to be
/// `Debug` (a `Cell` of a non-`Copy` value is not).
struct LocalsSlot(Cell<Option<Box<dyn Any>>>);

impl std::fmt::Debug for LocalsSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LocalsSlot")
    }
}

/// A task's coroutine and context, in one block whose address is fixed for
/// the task's life: the scheduler resumes the coroutine in place while the
/// task table may grow, and the thread-local points at the context while
/// the task runs. The block sits at the top of the task's own stack (see
/// [`PooledStack::reserve_top`](crate::stack::PooledStack::reserve_top)),
/// so a task costs no allocation of its own.
///
/// `repr(C)` keeps the fields in this order: the coroutine (whose saved
/// stack pointer a resume reads first), then the context, whose fields a
/// pause and a resume use come first (the two lines of [`HOT_HEADER`],
/// all [`prefetch_task`] loads), then the joiners and the name, used when
/// the task ends or is reported.
#[repr(C)]
pub(crate) struct TaskHeader {
    /// Declared first, so it is dropped (and unwound) while `cx` is intact.
    co: TaskCoroutine,
    cx: TaskContext,
    /// The tasks waiting for this one's end; the scheduler's, reached
    /// through [`OwnedHeader::joiners`].
    joiners: Joiners,
    /// The task's name, if it was given one.
    ///
    /// # Invariant
    ///
    /// Kept for as long as the coroutine exists, teardown included: the
    /// name pointer in [`TaskContext::guard`] points into this string, and
    /// the stack-overflow report and the panic message read it while the
    /// task runs or is unwound, after the scheduler may have dropped its
    /// own record of the task.
    name: Option<Rc<str>>,
}

/// The tasks waiting for one task's end (in [`Op::Join`](crate::raw::Op::Join),
/// or a select that watches it). Nearly always one (its handle's owner), so
/// the first is kept inline: no allocation for a plain join.
///
/// They live in the task's header rather than in the scheduler's record of
/// the task: the header's page is the task's stack, which the task has
/// touched anyway, where every byte of the record is a megabyte with a
/// million tasks.
#[derive(Debug)]
pub(crate) struct Joiners {
    /// The first joiner, or [`NO_JOINER`]: a token of 0, which no wait
    /// has, stands for none (an `Option` would cost the header a word,
    /// and with it a cache line).
    first: WaitToken,
    /// The joiners after the first (empty, so unallocated, nearly always).
    rest: Vec<WaitToken>,
}

/// [`Joiners::first`] when there is none.
const NO_JOINER: WaitToken = WaitToken { key: 0, token: 0 };

impl Default for Joiners {
    fn default() -> Joiners {
        Joiners {
            first: NO_JOINER,
            rest: Vec::new(),
        }
    }
}

impl Joiners {
    /// Adds `w`, to be woken when the task ends.
    pub(crate) fn push(&mut self, w: WaitToken) {
        debug_assert!(w.token != 0, "a wait token is never 0");
        if self.first.token == NO_JOINER.token {
            self.first = w;
        } else {
            self.rest.push(w);
        }
    }

    /// The first joiner, if any.
    fn first(&self) -> Option<WaitToken> {
        (self.first.token != NO_JOINER.token).then_some(self.first)
    }

    /// The joiners, without taking them.
    pub(crate) fn iter(&self) -> impl Iterator<Item = WaitToken> + '_ {
        self.first().into_iter().chain(self.rest.iter().copied())
    }

    /// Takes them all, in the order they came.
    pub(crate) fn take(&mut self) -> impl Iterator<Item = WaitToken> {
        let first = self.first();
        self.first = NO_JOINER;
        let rest = std::mem::take(&mut self.rest);
        first.into_iter().chain(rest)
    }
}

/// The owner of a task's [`TaskHeader`]. Dropping it drops the coroutine; use
/// [`drop_task`] for one that may be suspended.
pub(crate) struct OwnedHeader(NonNull<TaskHeader>);

// A header stays within four cache lines: a resume touches them (see
// `prefetch_task`), and a byte more costs a line more on every task's
// stack.
const _: () = assert!(OwnedHeader::SIZE <= 256);

impl OwnedHeader {
    /// Bytes to reserve at the top of a task's stack for its header.
    pub(crate) const SIZE: usize = std::mem::size_of::<TaskHeader>();

    /// Writes the header of a task running `co` at `at`.
    ///
    /// # Safety
    ///
    /// `at` must come from `reserve_top(OwnedHeader::SIZE)` on the very stack
    /// that `co` runs on, so that the area stays valid exactly as long as
    /// the coroutine holds its stack.
    #[inline(always)]
    pub(crate) unsafe fn new_in(
        at: NonNull<u8>,
        co: TaskCoroutine,
        id: TaskId,
        guard: GuardInfo,
        name: Option<Rc<str>>,
        budget: u32,
    ) -> OwnedHeader {
        let at = at.cast::<TaskHeader>();
        const { assert!(std::mem::align_of::<TaskHeader>() <= 64) };
        // SAFETY: by the contract, `at` points at OwnedHeader::SIZE writable
        // bytes, 64-aligned (enough for TaskHeader), that nothing else uses.
        unsafe {
            at.as_ptr().write(TaskHeader {
                co,
                cx: TaskContext {
                    guard,
                    id,
                    yielder: Cell::new(ptr::null()),
                    timeout: Cell::new(None),
                    paused_sp: Cell::new(0),
                    locals: LocalsSlot(Cell::new(None)),
                    foreign: ForeignState::default(),
                    budget: Budget {
                        left: Cell::new(budget.clamp(1, UNCONSTRAINED - 1)),
                        full: Cell::new(budget.clamp(1, UNCONSTRAINED - 1)),
                    },
                },
                joiners: Joiners::default(),
                name,
            });
        }
        OwnedHeader(at)
    }

    /// The header's address, for [`resume_task`].
    pub(crate) fn as_ptr(&self) -> NonNull<TaskHeader> {
        self.0
    }

    /// The tasks waiting for this one's end, without taking them.
    pub(crate) fn joiners_iter(&self) -> impl Iterator<Item = WaitToken> + '_ {
        // SAFETY: as for `joiners`; this borrow is shared and brief.
        unsafe { &*ptr::addr_of!((*self.0.as_ptr()).joiners) }.iter()
    }

    /// The tasks waiting for this one's end.
    pub(crate) fn joiners(&mut self) -> &mut Joiners {
        // SAFETY: the header is live while `self` is (see `new_in`), and
        // nothing else reaches `joiners`: the running task's coroutine is
        // borrowed field by field (`co`, `cx`), never as a whole header, so
        // this borrow overlaps none, even when the task is the running one.
        unsafe { &mut *ptr::addr_of_mut!((*self.0.as_ptr()).joiners) }
    }
}

impl Drop for OwnedHeader {
    fn drop(&mut self) {
        let p = self.0.as_ptr();
        // SAFETY: `p` was written by `new_in` and this is its only owner,
        // dropped once. The joiners (normally emptied by the scheduler
        // already) are moved out first and never touched in place again:
        // the coroutine's drop below gives their memory away.
        let joiners = unsafe { ptr::read(ptr::addr_of!((*p).joiners)) };
        // SAFETY: as for the joiners. The name is held here until the
        // coroutine is gone, so it outlives the task's teardown.
        let name = unsafe { ptr::read(ptr::addr_of!((*p).name)) };
        // SAFETY: as above. The coroutine is dropped in place through the
        // raw pointer, because unwinding it runs task code that reads `cx`
        // through the thread-local's pointer. Dropping it returns its
        // stack, and with it the memory of this header, to the pool: nothing
        // touches the header after this line (`cx` needs no drop: its
        // task-locals slot was emptied by the task's body).
        unsafe { ptr::drop_in_place(ptr::addr_of_mut!((*p).co)) };
        drop(joiners);
        drop(name);
    }
}

impl std::fmt::Debug for OwnedHeader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OwnedHeader")
    }
}

/// The running task's context, if a task runs and is not being torn down.
#[inline(always)]
fn running_cx() -> Option<&'static TaskContext> {
    let cx = CURRENT.with(Cell::get);
    // SAFETY: a non-null CURRENT points at the context of the task whose
    // coroutine is running (or being torn down) on this thread: set by
    // `resume_task`/`drop_task` from a live header and cleared (restored)
    // before that call returns, so the header outlives every use made of it
    // from the task's own stack. The `'static` never escapes this module's
    // callers, which use it within the task's run.
    unsafe { cx.as_ref() }
}

/// Spends one unit of the running task's budget (see
/// [`TaskContext::spend_budget`]); false outside a task.
#[inline(always)]
pub(crate) fn spend_running_budget() -> bool {
    match running_cx() {
        Some(cx) => cx.spend_budget(),
        None => false,
    }
}

/// True when the running task's budget is spent (see
/// [`TaskContext::budget_exhausted`]); false outside a task.
#[inline(always)]
pub(crate) fn running_budget_exhausted() -> bool {
    running_cx().is_some_and(TaskContext::budget_exhausted)
}

/// The running task's earliest active timeout.
pub(crate) fn timeout_scope() -> Option<TimeoutScope> {
    running_cx().and_then(|cx| cx.timeout.get())
}

/// Replaces the running task's timeout, returning the old one.
pub(crate) fn set_timeout_scope(timeout: Option<TimeoutScope>) -> Option<TimeoutScope> {
    running_cx().and_then(|cx| cx.timeout.replace(timeout))
}

/// Takes the record that an intercepted call of the running task ended
/// on the deadline of the timeout scope `id`: true if one did (see
/// [`ForeignState::expired_scope`]).
pub(crate) fn take_expired_scope(id: u64) -> bool {
    running_cx().is_some_and(|cx| {
        let hit = cx.foreign.expired_scope.get() == id;
        if hit {
            cx.foreign.expired_scope.set(0);
        }
        hit
    })
}

impl TaskContext {
    /// True once the task was cancelled while paused inside an intercepted
    /// call (see [`ForeignState`]).
    #[cfg(feature = "hook")]
    #[inline]
    pub(crate) fn foreign_cancelled(&self) -> bool {
        self.foreign.cancelled.get()
    }

    /// Records that the timeout scope `id` ended an intercepted call.
    #[cfg(feature = "hook")]
    pub(crate) fn record_expired_scope(&self, id: u64) {
        self.foreign.expired_scope.set(id);
    }

    /// [`pause`](Self::pause), from inside an intercepted call: while the
    /// task is paused, a teardown resumes it with [`Resume::Cancelled`]
    /// instead of unwinding its stack (see [`drop_task`]).
    #[cfg(feature = "hook")]
    pub(crate) fn pause_foreign(&self, op: Op) -> Resume {
        /// Clears the mark however the pause ends (it cannot unwind, but
        /// the mark must never outlive it).
        struct Unmark<'a>(&'a Cell<bool>);
        impl Drop for Unmark<'_> {
            fn drop(&mut self) {
                self.0.set(false);
            }
        }
        self.foreign.paused.set(true);
        let _unmark = Unmark(&self.foreign.paused);
        self.pause(op)
    }

    /// True once the task was cancelled inside an intercepted call and now
    /// makes a pause of its own (not from inside such a call): the pause at
    /// which it is to be torn down.
    #[cfg(feature = "hook")]
    #[inline]
    pub(crate) fn cancelled_own_pause(&self) -> bool {
        self.foreign.cancelled.get() && !self.foreign.paused.get()
    }

    /// The task's earliest active timeout.
    #[inline]
    pub(crate) fn timeout_scope(&self) -> Option<TimeoutScope> {
        self.timeout.get()
    }

    /// Switches to the scheduler with `op` and returns the answer it
    /// resumes the task with. Only [`suspend`](crate::raw::suspend) calls
    /// this, with the context [`with_running`] gave it, after checking
    /// that the task is not unwinding.
    ///
    /// Inlined into every pause, so that a resume lands in the code that
    /// paused: each frame between the switch and that code is a return the
    /// processor may mispredict on every resume, since the switch leaves
    /// its return predictions describing the other stack. Out of line, the
    /// channel hand-over ran 2 % more instructions; its time was a fifth
    /// more in one series of alternating runs and the same in a later one.
    #[inline(always)]
    pub(crate) fn pause(&self, op: Op) -> Resume {
        let yielder = self.yielder.get();
        assert!(
            !yielder.is_null(),
            "yieldloop: suspend before the task started"
        );
        // Only the address is kept (for `prefetch_task`), never dereferenced.
        let here = 0u8;
        self.paused_sp
            .set(std::hint::black_box(ptr::addr_of!(here)) as usize);
        // A pause of any kind ends the task's turn: what it spent is
        // counted for the loop, and the next turn starts with a whole
        // budget (a task that spent nothing pays two loads).
        let (left, full) = (self.budget.left.get(), self.budget.full.get());
        if left != full {
            SPENT.with(|s| s.set(s.get().wrapping_add(full.wrapping_sub(left))));
            self.budget.left.set(full);
        }
        // SAFETY: the pointer was stored by `enter_task` from the `&Yielder`
        // this task's coroutine was started with. That yielder lives on the
        // coroutine's stack, which is the stack we are running on now
        // (`self` is the running task's context, handed out by
        // `with_running`, and `pause` runs on the task's stack), so it is
        // alive for the whole call.
        match unsafe { (*yielder).suspend(op) } {
            Wake::Answer(answer) => answer,
            // Resumed only to tell where it is paused.
            Wake::Capture => self.serve_captures(yielder),
        }
    }

    /// Spends one unit of the task's budget for an operation that could
    /// have paused; true when there was none left, and the caller must
    /// give the thread back before it goes on (the pause refills it).
    #[inline(always)]
    pub(crate) fn spend_budget(&self) -> bool {
        let left = self.budget.left.get();
        if left > 0 {
            self.budget.left.set(left - 1);
            false
        } else {
            self.budget_spent()
        }
    }

    /// True when the budget has run out (without spending any of it).
    #[inline]
    pub(crate) fn budget_exhausted(&self) -> bool {
        self.budget.left.get() == 0 && self.budget.full.get() != UNCONSTRAINED
    }

    /// The budget ran out: inside an unconstrained region it is refilled
    /// and the operation goes on; elsewhere the caller yields.
    #[cold]
    #[inline(never)]
    fn budget_spent(&self) -> bool {
        if self.budget.full.get() == UNCONSTRAINED {
            self.budget.left.set(UNCONSTRAINED);
            return false;
        }
        true
    }

    /// Lifts the budget, for an unconstrained region; returns what
    /// [`leave_unconstrained`](Self::leave_unconstrained) puts back.
    pub(crate) fn enter_unconstrained(&self) -> u32 {
        self.budget.left.set(UNCONSTRAINED);
        self.budget.full.replace(UNCONSTRAINED)
    }

    /// Ends an unconstrained region begun by the
    /// [`enter_unconstrained`](Self::enter_unconstrained) that returned
    /// `full`: the budget is `full` again, and what is left of this turn
    /// no more than that.
    pub(crate) fn leave_unconstrained(&self, full: u32) {
        self.budget.full.set(full);
        let left = self.budget.left.get().min(full);
        self.budget.left.set(left);
    }

    /// Answers [`capture_backtrace`]: notes the return addresses of this
    /// task's frames into `CAPTURED`, pauses again (the scheduler
    /// disregards the op), and so on until a resume that is not a capture,
    /// whose answer is the pause's answer.
    #[cold]
    #[inline(never)]
    fn serve_captures(&self, yielder: *const Yielder<Wake, Op>) -> Resume {
        loop {
            let (lo, hi) = (self.paused_sp.get(), self.guard.guard_hi + self.guard.size);
            // A failure to walk the stack leaves an empty backtrace; it
            // must not unwind into the scheduler.
            let ips = std::panic::catch_unwind(|| {
                let mut ips = Vec::new();
                backtrace::trace(|frame| {
                    let sp = frame.sp() as usize;
                    if sp <= lo {
                        // This function's own frames, below the pause.
                        return true;
                    }
                    if sp >= hi || ips.len() >= MAX_FRAMES {
                        // Past the task's own stack: the scheduler's.
                        return false;
                    }
                    ips.push(frame.ip() as usize);
                    true
                });
                ips
            })
            .unwrap_or_default();
            CAPTURED.with(|c| c.set(Some(ips)));
            // SAFETY: as in `pause`: the yielder lives on this very stack.
            if let Wake::Answer(answer) = unsafe { (*yielder).suspend(Op::Yield) } {
                return answer;
            }
        }
    }
}

/// The most return addresses a captured backtrace keeps.
const MAX_FRAMES: usize = 128;

thread_local! {
    /// The return addresses a task noted for [`capture_backtrace`].
    static CAPTURED: Cell<Option<Vec<usize>>> = const { Cell::new(None) };
}

/// The return addresses of a paused task's frames, from its pause
/// outwards to the start of its stack: the task is resumed, walks its own
/// stack, and pauses again where it was; nothing else of it runs, and its
/// wait is left as it was. `None` if the task could not tell (its stack
/// could not be walked).
///
/// # Safety
///
/// `header` must come from a live [`OwnedHeader`] whose task has paused
/// at least once (in [`TaskContext::pause`]) and is paused now, not
/// running, not being torn down; nothing may drop it or resume it until
/// this returns.
pub(crate) unsafe fn capture_backtrace(header: NonNull<TaskHeader>) -> Option<Vec<usize>> {
    // SAFETY: the header is alive and its coroutine is ours to resume (the
    // contract); the task, paused in `pause`, sees `Capture`, only walks
    // its stack and pauses again.
    let result = unsafe { wake_task(header, Wake::Capture) };
    match result {
        CoroutineResult::Yield(_) => CAPTURED.with(Cell::take),
        // Cannot happen: `serve_captures` always pauses again.
        CoroutineResult::Return(()) => None,
    }
}

/// Runs `f` with the task-locals slot of the running task (or of the task
/// being torn down), or returns `None` when no task runs on this thread.
/// See [`TaskContext::locals`] for who fills and empties it.
#[inline]
pub(crate) fn with_locals<R>(f: impl FnOnce(&Cell<Option<Box<dyn Any>>>) -> R) -> Option<R> {
    running_cx().map(|cx| f(&cx.locals.0))
}

/// Runs `f` with the running task's context, or `None` when no task runs
/// on this thread.
#[inline(always)]
pub(crate) fn with_running<R>(f: impl FnOnce(Option<&TaskContext>) -> R) -> R {
    f(running_cx())
}

/// Where the task of `header` last paused: see [`prefetch_task`].
///
/// # Safety
///
/// `header` must be a live header.
pub(crate) unsafe fn paused_sp(header: NonNull<TaskHeader>) -> usize {
    // SAFETY: the header is live by the contract; `paused_sp` is a plain
    // `Cell<usize>` that only its own task writes, and that task is paused.
    unsafe { (*ptr::addr_of!((*header.as_ptr()).cx)).paused_sp.get() }
}

/// Asks the CPU to start loading what resuming a paused task touches
/// first: its header at `header` (the coroutine's saved stack pointer) and the
/// stack around `sp`, where it last paused (see [`paused_sp`]): the
/// registers the switch saved lie below that point, the frames the resume
/// returns through above.
///
/// A resume is a chain of dependent loads into the task's memory (the
/// saved stack pointer, then the frame it points at, then each frame
/// returned through), and with hundreds of tasks that memory has left the
/// cache since the task last ran: each load waits in turn, and the jump to
/// the task cannot be predicted past them. The scheduler calls this for
/// tasks a little ahead in the turn, so the loads overlap with the work of
/// the tasks resumed before them.
///
/// Both are plain addresses, never dereferenced: a prefetch neither faults
/// nor changes anything but the cache, so a stale address costs nothing
/// but a wasted load. On targets other than x86-64 this does nothing.
#[inline]
pub(crate) fn prefetch_task(header: usize, sp: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let mut off = 0;
        while off < HOT_HEADER {
            prefetch_line(header.wrapping_add(off));
            off += 64;
        }
        if sp != 0 {
            let lo = (sp & !63).wrapping_sub(PREFETCH_BELOW);
            let mut off = 0;
            while off < PREFETCH_BELOW + PREFETCH_ABOVE {
                prefetch_line(lo.wrapping_add(off));
                off += 64;
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (header, sp);
}

/// Asks for the cache line holding `addr` (any address: a prefetch
/// neither faults nor changes anything but the cache).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn prefetch_line(addr: usize) {
    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
    let p = addr as *const i8;
    // SAFETY: SSE, which `_mm_prefetch` needs, is part of the x86-64
    // baseline; the instruction does not access memory architecturally, so
    // no address can make it fault or race.
    unsafe { _mm_prefetch::<_MM_HINT_T0>(p) }
}

/// The part of a header a pause and a resume read or write: the
/// coroutine and the context's fields up to the timeout scope id of
/// [`ForeignState`], the first of those read only now and then (see
/// [`TaskContext`]). Two cache lines: one more per task is one more likely
/// miss per resume when hundreds of tasks take turns.
const HOT_HEADER: usize = std::mem::offset_of!(TaskHeader, cx)
    + std::mem::offset_of!(TaskContext, foreign)
    + std::mem::offset_of!(ForeignState, expired_scope);
const _: () = assert!(HOT_HEADER <= 128);

/// Bytes of stack below and above a task's pause point that
/// [`prefetch_task`] asks for.
#[cfg(target_arch = "x86_64")]
const PREFETCH_BELOW: usize = 256;
#[cfg(target_arch = "x86_64")]
const PREFETCH_ABOVE: usize = 512;

/// Records the running task's yielder; called first thing on a task's
/// coroutine, before its body runs.
fn enter_task(yielder: &Yielder<Wake, Op>) {
    if let Some(cx) = running_cx() {
        cx.yielder.set(yielder);
    }
}

/// Resumes a task's coroutine in place with `value`, with the task's
/// context as the thread's current one until control comes back.
///
/// This is the hot path of every hand-over: one thread-local write before
/// and one after.
///
/// # Safety
///
/// `header` must come from a live [`OwnedHeader`] that is not dropped, and whose
/// coroutine is not otherwise borrowed, until this call returns.
#[inline]
pub(crate) unsafe fn resume_task(
    header: NonNull<TaskHeader>,
    value: Resume,
) -> CoroutineResult<Op, ()> {
    // SAFETY: this function's contract.
    unsafe { wake_task(header, Wake::Answer(value)) }
}

/// [`resume_task`] with a [`Wake`].
///
/// # Safety
///
/// As for [`resume_task`].
#[inline(always)]
unsafe fn wake_task(header: NonNull<TaskHeader>, value: Wake) -> CoroutineResult<Op, ()> {
    /// Clears the task context however the resume ends.
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            CURRENT.with(|c| c.set(ptr::null()));
        }
    }
    let p = header.as_ptr();
    // SAFETY: by this function's contract the header is alive and its
    // coroutine is ours to resume for the duration; `cx` and `co` are
    // reached as separate fields, so the shared reads of `cx` made by the
    // task while it runs never overlap the `&mut` of the coroutine.
    unsafe {
        CURRENT.with(|c| c.set(ptr::addr_of!((*p).cx)));
        let _clear = Clear;
        (*ptr::addr_of_mut!((*p).co)).resume(value)
    }
}

/// Drops a task's header, and with it its coroutine and stack. A suspended
/// coroutine is unwound first, so the
/// destructors of everything on its stack run; the task's body sees the
/// unwind as forced and lets it pass. The caller's task context is restored
/// afterwards, so a task torn down from inside another task (a
/// cancellation) leaves the outer task's context as it was.
///
/// A task paused inside an intercepted C call (feature `hook`) has foreign
/// frames above its pause, which an unwind must never cross. It is resumed
/// instead, with [`Resume::Cancelled`] and its [`ForeignState::cancelled`]
/// set, so that its call fails and its code runs on until it pauses on its
/// own or ends; then it is unwound (or dropped) as any other. A task that
/// is still inside an intercepted call after [`FOREIGN_ROUNDS`] such
/// resumes, or that is torn down while this thread unwinds (its code
/// would run mid-unwind, where a panic of its own aborts), is leaked: its
/// stack is never run or unwound again.
pub(crate) fn drop_task(header: OwnedHeader) {
    /// Puts back the context that was current before the teardown.
    struct Restore(*const TaskContext, bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            CURRENT.with(|c| c.set(self.0));
            FORCED_UNWIND.with(|f| f.set(self.1));
        }
    }
    let p = header.as_ptr();
    let mut rounds = 0;
    // SAFETY: the header is alive until `header` drops, and its task is
    // not running while this reads it.
    while unsafe { paused_in_foreign_call(p) } {
        if rounds == FOREIGN_ROUNDS || std::thread::panicking() {
            // While this thread unwinds (a timeout scope or a panic tearing
            // a scope's tasks down), the task's code would run with the
            // unwind in progress, where any panic of its own (an `unwrap`
            // of the error its call returns) aborts the process.
            eprintln!(
                "yieldloop: a task paused inside an intercepted call could not be resumed \
                 to end it ({}); it is left as it is: its stack is leaked, never unwound",
                if rounds == FOREIGN_ROUNDS {
                    "it stayed inside such calls through its cancellations"
                } else {
                    "it was torn down during an unwind"
                }
            );
            std::mem::forget(header);
            return;
        }
        rounds += 1;
        let _restore = Restore(
            CURRENT.with(Cell::get),
            FORCED_UNWIND.with(|f| f.replace(false)),
        );
        // SAFETY: as above; the flag is read by the task's code once it
        // runs again, below.
        unsafe { cancel_in_foreign_call(p) };
        // SAFETY: the header is alive and owned here, and its coroutine,
        // paused, is borrowed by nothing else: the caller took it out of
        // the task table.
        match unsafe { resume_task(p, Resume::Cancelled) } {
            // It ran to its end: nothing is left to unwind.
            CoroutineResult::Return(()) => {
                drop(header);
                return;
            }
            // It paused again; what it asked for is moot.
            CoroutineResult::Yield(_) => {}
        }
    }
    // SAFETY: the header is alive until `header` drops at the end of this
    // call.
    let cx = unsafe { ptr::addr_of!((*header.as_ptr().as_ptr()).cx) };
    let _restore = Restore(
        CURRENT.with(|c| c.replace(cx)),
        FORCED_UNWIND.with(|f| f.replace(true)),
    );
    drop(header);
}

/// True while the task of `header` is paused inside an intercepted call
/// (feature `hook`; always false without).
///
/// # Safety
///
/// `header` must be a live header whose task is not running.
pub(crate) unsafe fn paused_in_foreign_call(header: NonNull<TaskHeader>) -> bool {
    // SAFETY: the contract.
    unsafe { foreign_state(header) }.paused.get()
}

/// The [`ForeignState`] of the task of `header`.
///
/// # Safety
///
/// As for [`paused_in_foreign_call`]: its cells are plain ones that only
/// the task's own code writes otherwise, and it is not running.
unsafe fn foreign_state<'a>(header: NonNull<TaskHeader>) -> &'a ForeignState {
    // SAFETY: the header is live (the contract), and the state is only
    // read or set through its cells while the task is not running.
    unsafe { &(*ptr::addr_of!((*header.as_ptr()).cx)).foreign }
}

/// True when the task of `header` was cancelled inside an intercepted
/// call and runs on until its next own pause (see [`ForeignState`]).
///
/// # Safety
///
/// As for [`paused_in_foreign_call`].
pub(crate) unsafe fn cancelled_in_foreign_call(header: NonNull<TaskHeader>) -> bool {
    // SAFETY: the contract.
    unsafe { foreign_state(header) }.cancelled.get()
}

/// Marks the task of `header`, paused inside an intercepted call, as
/// cancelled: from its next resume its intercepted calls fail (or, for a
/// sleep, wait without being cut short), and its next own pause is its
/// last.
///
/// # Safety
///
/// As for [`paused_in_foreign_call`].
pub(crate) unsafe fn cancel_in_foreign_call(header: NonNull<TaskHeader>) {
    // SAFETY: the contract.
    unsafe { foreign_state(header) }.cancelled.set(true)
}

/// How many times [`drop_task`] resumes a task that stays paused inside
/// intercepted calls before it gives up on it.
const FOREIGN_ROUNDS: u32 = 8;

/// The guard info of the task running on this thread, or null; read by the
/// stack-overflow signal handler (a plain thread-local read, which is
/// async-signal-safe).
pub(crate) fn running_guard() -> *const GuardInfo {
    let cx = CURRENT.try_with(Cell::get).unwrap_or(ptr::null());
    if cx.is_null() {
        return ptr::null();
    }
    // SAFETY: a non-null CURRENT points at a live context (see
    // `running_cx`); this only computes a field address.
    unsafe { ptr::addr_of!((*cx).guard) }
}

/// Runs `f` with the label of the task running (or being torn down) on
/// this thread, or `None` when no task runs here.
pub(crate) fn with_running_label<R>(f: impl FnOnce(Option<TaskLabel<'_>>) -> R) -> R {
    let Some(cx) = running_cx() else {
        return f(None);
    };
    let g = &cx.guard;
    let name = (g.name_len > 0).then(|| {
        // SAFETY: `name_ptr`/`name_len` were taken from the task's name,
        // which its header holds for as long as the coroutine exists (see
        // `TaskHeader::name`), and the coroutine exists while its context
        // is the running one.
        let bytes = unsafe { std::slice::from_raw_parts(g.name_ptr as *const u8, g.name_len) };
        std::str::from_utf8(bytes).unwrap_or("?")
    });
    f(Some(TaskLabel { serial: g.id, name }))
}

/// True while the scheduler is unwinding a task it tears down.
#[inline]
pub(crate) fn forced_unwind() -> bool {
    FORCED_UNWIND.with(Cell::get)
}

/// The id of the task running (or being torn down) on this thread, if any.
pub(crate) fn current_task() -> Option<TaskId> {
    running_cx().map(|cx| cx.id)
}

/// True when called from a running task's stack (not during a teardown).
pub(crate) fn in_task() -> bool {
    !FORCED_UNWIND.with(Cell::get) && running_cx().is_some()
}
