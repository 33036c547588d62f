//! Task-locals: one value per task, made on first use, dropped exactly once
//! when the task ends however it ends, copied into spawned tasks only for
//! `#[inherit]` keys, and out of reach outside a task.
//!
//! Each test runs on its own thread (the test harness's), so the
//! thread-local counters below count that test's values only.

use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::rc::Rc;
use std::time::Duration;

use yieldloop::{run, sleep, spawn, yield_now};

thread_local! {
    /// Values of `TRACKED` made on this thread.
    static MADE: Cell<u32> = const { Cell::new(0) };
    /// Values of `TRACKED` dropped on this thread.
    static DROPPED: Cell<u32> = const { Cell::new(0) };
}

/// Counts its making and its drop in the thread's counters.
struct Tracked(u32);

impl Tracked {
    fn new() -> Tracked {
        MADE.with(|m| m.set(m.get() + 1));
        Tracked(0)
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        DROPPED.with(|d| d.set(d.get() + 1));
    }
}

/// Zeroes the counters (in case the harness runs tests one after another
/// on one thread).
fn reset() {
    MADE.with(|m| m.set(0));
    DROPPED.with(|d| d.set(0));
}

fn made() -> u32 {
    MADE.with(Cell::get)
}

fn dropped() -> u32 {
    DROPPED.with(Cell::get)
}

yieldloop::task_local! {
    /// A plain per-task counter.
    static COUNTER: Cell<u32> = Cell::new(0);
    /// A value that counts how often it is made and dropped.
    static TRACKED: RefCell<Tracked> = RefCell::new(Tracked::new());
    /// Carried into spawned tasks.
    #[inherit]
    pub static REQUEST_ID: Cell<u64> = Cell::new(0);
    /// Inherited too, but starts fresh where the parent never used it.
    #[inherit]
    static TRAIL: RefCell<Vec<&'static str>> = RefCell::new(vec!["init"]);
    /// Not `Send`: task-locals never leave their thread.
    static SHARED: Rc<Cell<u8>> = Rc::new(Cell::new(1));
}

/// Two tasks interleaving with `yield_now` on one thread each see only
/// their own value.
#[test]
fn each_task_sees_its_own_value() {
    let (a, b) = run(|| {
        let count = |step: u32| {
            move || {
                for _ in 0..5 {
                    COUNTER.set(COUNTER.get() + step);
                    yield_now();
                }
                COUNTER.get()
            }
        };
        let a = spawn(count(1));
        let b = spawn(count(10));
        (a.join().unwrap(), b.join().unwrap())
    });
    assert_eq!((a, b), (5, 50));
}

/// The initializer runs on a task's first use of the key, once, and never
/// for tasks that do not use it; `set` on a fresh key skips it.
#[test]
fn values_are_made_lazily_once_per_task() {
    reset();
    run(|| {
        let idle = spawn(yield_now);
        idle.join().unwrap();
        assert_eq!(made(), 0, "a task that never used the key made a value");
        let user = spawn(|| {
            TRACKED.with_borrow_mut(|t| t.0 += 1);
            yield_now();
            TRACKED.with_borrow_mut(|t| t.0 += 1);
            TRACKED.with_borrow(|t| t.0)
        });
        assert_eq!(user.join().unwrap(), 2);
        assert_eq!(made(), 1);
        let setter = spawn(|| {
            TRACKED.set(Tracked(9));
            TRACKED.with_borrow(|t| t.0)
        });
        assert_eq!(setter.join().unwrap(), 9);
        assert_eq!(made(), 1, "`set` on a fresh key ran the initializer");
    });
}

/// A task's value is dropped once when it returns, before its joiner
/// sees the result.
#[test]
fn the_value_is_dropped_once_when_the_task_returns() {
    reset();
    run(|| {
        let t = spawn(|| TRACKED.with(|_| ()));
        t.join().unwrap();
        assert_eq!((made(), dropped()), (1, 1));
    });
    assert_eq!(dropped(), 1);
}

/// A task's value is dropped once when it panics.
#[test]
fn the_value_is_dropped_once_when_the_task_panics() {
    reset();
    run(|| {
        let t = spawn(|| {
            TRACKED.with(|_| ());
            yield_now();
            panic!("on purpose");
        });
        assert!(t.join().unwrap_err().is_panic());
        assert_eq!((made(), dropped()), (1, 1));
    });
    assert_eq!(dropped(), 1);
}

/// A task's value is dropped once when it is cancelled, and once for each
/// task still alive when `run` returns.
#[test]
fn the_value_is_dropped_once_when_the_task_is_cancelled() {
    reset();
    run(|| {
        let sleeper = spawn(|| {
            TRACKED.with(|_| ());
            sleep(Duration::from_secs(3600));
        });
        yield_now();
        assert_eq!(made(), 1);
        sleeper.cancel();
        assert!(sleeper.join().unwrap_err().is_cancelled());
        assert_eq!(dropped(), 1);
        // Left running: cancelled by `run` on its way out.
        spawn(|| {
            TRACKED.with(|_| ());
            sleep(Duration::from_secs(3600));
        });
        yield_now();
        assert_eq!(made(), 2);
    });
    assert_eq!(dropped(), 2);
}

/// While a cancelled task unwinds, destructors on its stack still read its
/// values; a task-local's own destructor finds the keys closed instead of
/// making values nobody would drop.
#[test]
fn destructors_see_the_values_until_the_teardown() {
    thread_local! {
        static SEEN: Cell<Option<u64>> = const { Cell::new(None) };
        static LATE: RefCell<Option<String>> = const { RefCell::new(None) };
    }
    /// Records the task's request id when dropped.
    struct ReadsId;
    impl Drop for ReadsId {
        fn drop(&mut self) {
            SEEN.with(|s| s.set(Some(REQUEST_ID.get())));
        }
    }
    /// Tries a task-local from a task-local's destructor.
    struct ReadsLate;
    impl Drop for ReadsLate {
        fn drop(&mut self) {
            let err = COUNTER.try_with(Cell::get).unwrap_err();
            LATE.with(|l| *l.borrow_mut() = Some(err.to_string()));
        }
    }
    yieldloop::task_local! {
        static LATE_READER: ReadsLate = ReadsLate;
    }
    run(|| {
        let t = spawn(|| {
            REQUEST_ID.set(42);
            LATE_READER.with(|_| ());
            let _guard = ReadsId;
            sleep(Duration::from_secs(3600));
        });
        yield_now();
        t.cancel();
        assert!(t.join().unwrap_err().is_cancelled());
    });
    assert_eq!(SEEN.with(Cell::get), Some(42));
    let late = LATE
        .with(|l| l.borrow_mut().take())
        .expect("destructor ran");
    assert!(
        late.contains("COUNTER") && late.contains("being dropped"),
        "{late}"
    );
}

/// `#[inherit]` keys start a spawned task with a clone of its parent's
/// value (through `Builder` too, and on down to grandchildren); the child's
/// changes stay its own; other keys start fresh.
#[test]
fn inherited_keys_are_cloned_into_children_and_others_start_fresh() {
    run(|| {
        REQUEST_ID.set(7);
        COUNTER.set(3);
        TRAIL.with_borrow_mut(|t| t.push("parent"));
        let child = spawn(|| {
            let seen = (REQUEST_ID.get(), COUNTER.get(), TRAIL.with_borrow(Vec::len));
            REQUEST_ID.set(8);
            TRAIL.with_borrow_mut(|t| t.push("child"));
            let grandchild = spawn(|| (REQUEST_ID.get(), TRAIL.with_borrow(|t| t.join("/"))));
            (seen, grandchild.join().unwrap())
        });
        let (seen, grand) = child.join().unwrap();
        assert_eq!(seen, (7, 0, 2));
        assert_eq!(grand, (8, "init/parent/child".to_string()));
        assert_eq!(REQUEST_ID.get(), 7, "the child's change reached the parent");
        assert_eq!(TRAIL.with_borrow(Vec::len), 2);
        let built = yieldloop::Builder::new()
            .name("built")
            .spawn(|| REQUEST_ID.get())
            .unwrap();
        assert_eq!(built.join().unwrap(), 7);
    });
}

/// A parent that never used an `#[inherit]` key passes nothing on: the
/// child makes its own from the initializer.
#[test]
fn a_parent_without_a_value_passes_nothing_on() {
    run(|| {
        let child = spawn(|| TRAIL.with_borrow(|t| t.join("/")));
        assert_eq!(child.join().unwrap(), "init");
        assert!(REQUEST_ID.try_with(|_| ()).is_ok());
    });
}

/// Outside a task, `with` panics with a message naming the key and saying
/// where to call it; `try_with` returns the error instead.
#[test]
fn outside_a_task_with_panics_and_try_with_errs() {
    reset();
    let err = COUNTER.try_with(Cell::get).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("task_local::COUNTER"), "{text}");
    assert!(text.contains("outside a task"), "{text}");
    let payload = panic::catch_unwind(AssertUnwindSafe(|| COUNTER.get())).unwrap_err();
    let message = payload
        .downcast_ref::<String>()
        .expect("a formatted message");
    assert!(message.contains("`task_local::COUNTER`"), "{message}");
    assert!(
        message.contains("inside `yieldloop::run` or a task"),
        "{message}"
    );
    // Nothing was made or kept for the thread.
    assert!(TRACKED.try_with(|_| ()).is_err());
    assert_eq!(made(), 0);
}

/// The main task of `run` has values of its own: not seen by its children
/// (for keys not inherited), dropped when `run` returns, and gone for the
/// next `run` on the thread.
#[test]
fn the_main_task_has_its_own_values() {
    reset();
    run(|| {
        COUNTER.set(5);
        TRACKED.with(|_| ());
        let child = spawn(|| COUNTER.get());
        assert_eq!(child.join().unwrap(), 0);
        assert_eq!(COUNTER.get(), 5);
    });
    assert_eq!((made(), dropped()), (1, 1));
    assert_eq!(run(|| COUNTER.get()), 0);
}

/// A `with` closure may use other keys, making their values on the way,
/// and values need not be `Send`.
#[test]
fn keys_nest_and_values_need_not_be_send() {
    run(|| {
        let total = COUNTER.with(|c| {
            c.set(1);
            SHARED.with(|s| {
                s.set(s.get() + 1);
                TRACKED.with_borrow(|t| c.get() + u32::from(s.get()) + t.0)
            })
        });
        assert_eq!(total, 3);
        let mine = SHARED.with(Rc::clone);
        mine.set(10);
        assert_eq!(SHARED.with(|s| s.get()), 10);
    });
}
