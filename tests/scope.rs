//! Scoped tasks (`yieldloop::scope`) and waiting for several tasks
//! (`join_all`, `join_any`): borrowing, waiting, first-error-wins
//! cancellation, and the paths by which the scope's own task goes away.

mod util;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use yieldloop::{join_all, join_any, scope, sleep, spawn, timeout, yield_now};

/// Counts its drops.
struct Tracker(Rc<Cell<u32>>);

impl Drop for Tracker {
    fn drop(&mut self) {
        self.0.set(self.0.get() + 1);
    }
}

/// Scoped tasks borrow the caller's locals, mutably too, and `scope`
/// returns only after all of them, while other tasks keep running.
#[test]
fn tasks_borrow_and_scope_waits_for_all() {
    yieldloop::run(|| {
        let ticks = Rc::new(Cell::new(0u32));
        let t = ticks.clone();
        let ticker = spawn(move || loop {
            t.set(t.get() + 1);
            sleep(Duration::from_millis(2));
        });
        let names = ["a".to_string(), "bb".to_string(), "ccc".to_string()];
        let mut log = Vec::new();
        let total = Cell::new(0);
        let start = Instant::now();
        scope(|s| {
            for (i, name) in names.iter().enumerate() {
                let total = &total;
                s.spawn(move || {
                    sleep(Duration::from_millis(10 * (i as u64 + 1)));
                    total.set(total.get() + name.len());
                });
            }
            s.spawn(|| log.push("mutated from a scoped task"));
        });
        assert!(start.elapsed() >= Duration::from_millis(30));
        assert_eq!(total.get(), 6);
        assert_eq!(log, ["mutated from a scoped task"]);
        assert!(ticks.get() >= 3, "the ticker was starved: {}", ticks.get());
        ticker.cancel();
    });
}

/// Scoped tasks may spawn more tasks into the same scope; the scope waits
/// for those too. Scopes nest.
#[test]
fn scoped_tasks_spawn_more_and_scopes_nest() {
    yieldloop::run(|| {
        let done = RefCell::new(Vec::new());
        scope(|s| {
            s.spawn(|| {
                s.spawn(|| {
                    sleep(Duration::from_millis(10));
                    done.borrow_mut().push("grandchild");
                });
                let inner = Cell::new(0);
                scope(|s2| {
                    s2.spawn(|| inner.set(1));
                });
                assert_eq!(inner.get(), 1);
                done.borrow_mut().push("child");
            });
        });
        let mut got = done.into_inner();
        got.sort();
        assert_eq!(got, ["child", "grandchild"]);
    });
}

/// A scoped task's panic cancels its siblings at once (each destructor runs
/// once) and comes out of `scope` with its own payload after all ended.
#[test]
fn a_panic_cancels_the_siblings_and_comes_out_of_scope() {
    let drops = Rc::new(Cell::new(0));
    let d = drops.clone();
    let message = yieldloop::run(move || {
        let start = Instant::now();
        let r = util::quiet_panics(|| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                scope(|s| {
                    for _ in 0..3 {
                        let t = Tracker(d.clone());
                        s.spawn(move || {
                            let _t = t;
                            sleep(Duration::from_secs(60));
                        });
                    }
                    s.spawn(|| {
                        sleep(Duration::from_millis(5));
                        panic!("first failure");
                    });
                })
            }))
        });
        assert!(start.elapsed() < Duration::from_secs(30));
        util::panic_message(&*r.unwrap_err()).map(str::to_string)
    });
    assert_eq!(message.as_deref(), Some("first failure"));
    assert_eq!(drops.get(), 3);
}

/// A panic taken through the task's handle is the caller's: the scope
/// returns normally.
#[test]
fn a_joined_panic_is_not_raised_again() {
    yieldloop::run(|| {
        let v = util::quiet_panics(|| {
            scope(|s| {
                let h = s.spawn(|| -> u32 { panic!("handled") });
                let e = h.join().unwrap_err();
                assert_eq!(e.panic_message(), Some("handled"));
                5
            })
        });
        assert_eq!(v, 5);
    });
}

/// When the scope's closure panics, its tasks are torn down and the panic
/// goes on.
#[test]
fn a_panic_in_the_closure_tears_the_tasks_down() {
    let drops = Rc::new(Cell::new(0));
    let d = drops.clone();
    yieldloop::run(move || {
        let r = util::quiet_panics(|| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                scope(|s| {
                    let t = Tracker(d.clone());
                    s.spawn(move || {
                        let _t = t;
                        sleep(Duration::from_secs(60));
                    });
                    yield_now();
                    panic!("closure failed");
                })
            }))
        });
        assert!(r.is_err());
        assert_eq!(d.get(), 1, "the scoped task was not torn down");
    });
    assert_eq!(drops.get(), 1);
}

/// `cancel_all` cancels the other tasks; their handles say so.
#[test]
fn cancel_all_cancels_the_rest() {
    yieldloop::run(|| {
        scope(|s| {
            let a = s.spawn(|| sleep(Duration::from_secs(60)));
            let b = s.spawn(|| {
                sleep(Duration::from_millis(5));
                s.cancel_all(); // from a scoped task: spares itself
                9
            });
            assert_eq!(b.join().unwrap(), 9);
            assert!(a.join().unwrap_err().is_cancelled());
        });
    });
}

/// A timeout around a scope tears its tasks down (destructors once, while
/// what they borrow is alive) and reports `Elapsed`.
#[test]
fn a_timeout_around_a_scope_tears_its_tasks_down() {
    yieldloop::run(|| {
        let drops = Rc::new(Cell::new(0));
        let data = vec![1, 2, 3];
        let start = Instant::now();
        let r = timeout(Duration::from_millis(20), || {
            scope(|s| {
                for _ in 0..4 {
                    let t = Tracker(drops.clone());
                    let data = &data;
                    s.spawn(move || {
                        let _t = t;
                        assert_eq!(data.len(), 3);
                        sleep(Duration::from_secs(60));
                    });
                }
            })
        });
        assert!(r.is_err());
        assert!(start.elapsed() < Duration::from_secs(30));
        assert_eq!(drops.get(), 4);
        assert_eq!(data, [1, 2, 3]);
    });
}

/// A task cancelled while it waits on its scope has the scope's tasks torn
/// down first; every destructor runs once.
#[test]
fn a_cancelled_parent_tears_its_scope_down() {
    let drops = Rc::new(Cell::new(0));
    let d = drops.clone();
    yieldloop::run(move || {
        let d2 = d.clone();
        let parent = spawn(move || {
            let local = vec![5u8; 16];
            scope(|s| {
                for _ in 0..5 {
                    let t = Tracker(d2.clone());
                    let local = &local;
                    s.spawn(move || {
                        let _t = t;
                        sleep(Duration::from_secs(60));
                        local.len()
                    });
                }
            });
        });
        sleep(Duration::from_millis(10));
        parent.cancel();
        assert!(parent.join().unwrap_err().is_cancelled());
        assert_eq!(d.get(), 5);
    });
    assert_eq!(drops.get(), 5);
}

/// When `run` ends with a scope still open in a leftover task, the scope's
/// tasks are torn down before the task that owns the scope.
#[test]
fn run_ending_tears_scoped_tasks_down_first() {
    let order = Rc::new(RefCell::new(Vec::new()));
    let o = order.clone();
    yieldloop::run(move || {
        let o2 = o.clone();
        spawn(move || {
            /// Logs its name when dropped.
            struct Log(&'static str, Rc<RefCell<Vec<&'static str>>>);
            impl Drop for Log {
                fn drop(&mut self) {
                    self.1.borrow_mut().push(self.0);
                }
            }
            let _owner = Log("owner", o2.clone());
            scope(|s| {
                let l = Log("scoped", o2.clone());
                s.spawn(move || {
                    let _l = l;
                    sleep(Duration::from_secs(60));
                });
            });
        });
        sleep(Duration::from_millis(5));
        // main returns: both tasks are left over.
    });
    assert_eq!(*order.borrow(), ["scoped", "owner"]);
}

/// `join_all` gives the outcomes in the order of the handles.
#[test]
fn join_all_keeps_the_order_of_the_handles() {
    yieldloop::run(|| {
        let hs: Vec<_> = [20u64, 5, 10]
            .into_iter()
            .map(|ms| {
                spawn(move || {
                    sleep(Duration::from_millis(ms));
                    ms
                })
            })
            .collect();
        let out: Vec<u64> = join_all(hs).into_iter().map(Result::unwrap).collect();
        assert_eq!(out, [20, 5, 10]);
    });
}

/// `join_any` returns the tasks in the order they end, each once, and
/// `None` when none is left; a panic comes back as that task's error.
#[test]
fn join_any_returns_tasks_as_they_end() {
    yieldloop::run(|| {
        let mut hs: Vec<_> = [30u64, 10, 20]
            .into_iter()
            .map(|ms| {
                spawn(move || {
                    sleep(Duration::from_millis(ms));
                    if ms == 20 {
                        panic!("twenty");
                    }
                    ms
                })
            })
            .collect();
        let mut order = Vec::new();
        util::quiet_panics(|| {
            while let Some((_, r)) = join_any(&mut hs) {
                order.push(r.map_err(|e| e.panic_message().map(str::to_string)));
            }
        });
        assert_eq!(order, [Ok(10), Err(Some("twenty".to_string())), Ok(30)]);
        assert!(join_any(&mut hs).is_none());
    });
}

/// `join_any` inside a timeout gives up with the others still running.
#[test]
fn join_any_honours_a_timeout() {
    yieldloop::run(|| {
        let mut hs = vec![spawn(|| sleep(Duration::from_secs(60)))];
        let r = timeout(Duration::from_millis(10), || join_any(&mut hs));
        assert!(r.is_err());
        assert_eq!(hs.len(), 1);
        hs[0].cancel();
    });
}

/// `join_any` and `join_all` take scoped handles too.
#[test]
fn join_any_takes_scoped_handles() {
    yieldloop::run(|| {
        let base = 100u64;
        let (first, rest) = scope(|s| {
            let mut hs: Vec<_> = [20u64, 5]
                .into_iter()
                .map(|ms| {
                    s.spawn(move || {
                        sleep(Duration::from_millis(ms));
                        base + ms
                    })
                })
                .collect();
            let (i, first) = join_any(&mut hs).unwrap();
            assert_eq!(i, 1);
            let rest: Vec<u64> = join_all(hs).into_iter().map(Result::unwrap).collect();
            (first.unwrap(), rest)
        });
        assert_eq!((first, rest), (105, vec![120]));
    });
}

yieldloop::task_local! {
    /// A request id that follows the task into the tasks it spawns.
    #[inherit]
    static REQUEST: Cell<u64> = Cell::new(0);
}

/// Scoped tasks start with a copy of the caller's `#[inherit]` task-locals,
/// like tasks from `spawn`.
#[test]
fn scoped_tasks_inherit_task_locals() {
    yieldloop::run(|| {
        REQUEST.set(42);
        let seen = scope(|s| {
            let h = s.spawn(|| {
                let before = REQUEST.get();
                REQUEST.set(7); // the child's own copy
                before
            });
            h.join().unwrap()
        });
        assert_eq!(seen, 42);
        assert_eq!(REQUEST.get(), 42);
    });
}
