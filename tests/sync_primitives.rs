//! Mutex, Semaphore, WaitGroup, Barrier, Notify and Event: contention from
//! thousands of tasks, fairness, and cancellation leaving no ghost waiters.

mod util;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use yieldloop::sync::local::{Barrier, Event, Mutex, Notify, Semaphore, WaitGroup};
use yieldloop::{sleep, spawn, yield_now};

use util::within;

/// Three thousand tasks take turns on one mutex, each holding it across a
/// pause; never two inside at once, and no update lost.
#[test]
fn mutex_under_contention() {
    within(|| {
        yieldloop::run(|| {
            let m = Rc::new(Mutex::new(0u64));
            let inside = Rc::new(Cell::new(false));
            let tasks: Vec<_> = (0..3_000)
                .map(|_| {
                    let (m, inside) = (m.clone(), inside.clone());
                    spawn(move || {
                        for _ in 0..3 {
                            let mut g = m.lock();
                            assert!(!inside.replace(true), "two tasks inside the mutex");
                            let v = *g;
                            yield_now();
                            *g = v + 1;
                            inside.set(false);
                        }
                    })
                })
                .collect();
            tasks.into_iter().for_each(|t| t.join().unwrap());
            assert_eq!(*m.lock(), 9_000);
            assert!(!m.is_locked());
            assert_eq!(m.waiting(), 0);
        })
    });
}

/// Waiters get the mutex in the order they asked for it, and a task that
/// unlocks and relocks at once goes to the back of the queue.
#[test]
fn mutex_is_fifo() {
    within(|| {
        yieldloop::run(|| {
            let m = Rc::new(Mutex::new(Vec::new()));
            let guard = m.lock();
            let tasks: Vec<_> = (0..200)
                .map(|i| {
                    let m = m.clone();
                    spawn(move || {
                        m.lock().push(i);
                        m.lock().push(1_000 + i);
                    })
                })
                .collect();
            yield_now(); // all two hundred queue, in spawn order
            assert_eq!(m.waiting(), 200);
            drop(guard);
            tasks.into_iter().for_each(|t| t.join().unwrap());
            let order = m.lock().clone();
            let expected: Vec<i32> = (0..200).chain(1_000..1_200).collect();
            assert_eq!(order, expected);
        })
    });
}

/// A task cancelled while waiting for the mutex leaves the queue; the next
/// unlock goes to a live task.
#[test]
fn mutex_cancelled_waiter_leaves_no_ghost() {
    within(|| {
        yieldloop::run(|| {
            let m = Rc::new(Mutex::new(Vec::new()));
            let guard = m.lock();
            let waiters: Vec<_> = (0..3)
                .map(|i| {
                    let m = m.clone();
                    spawn(move || m.lock().push(i))
                })
                .collect();
            yield_now();
            assert_eq!(m.waiting(), 3);
            waiters[0].cancel();
            assert_eq!(m.waiting(), 2);
            drop(guard);
            for w in waiters.into_iter().skip(1) {
                w.join().unwrap();
            }
            assert_eq!(*m.lock(), [1, 2]);
            assert!(!m.is_locked());
        })
    });
}

/// A waiter handed the lock but cancelled before it ran passes the lock on.
#[test]
fn mutex_handed_over_then_cancelled_passes_it_on() {
    within(|| {
        yieldloop::run(|| {
            let m = Rc::new(Mutex::new(0));
            let guard = m.lock();
            let (ma, mb) = (m.clone(), m.clone());
            let a = spawn(move || *ma.lock() += 1);
            let b = spawn(move || *mb.lock() += 10);
            yield_now();
            drop(guard); // hands the lock to a …
            a.cancel(); // … which never runs
            b.join().unwrap();
            assert_eq!(*m.lock(), 10);
            assert!(a.join().unwrap_err().is_cancelled());
        })
    });
}

/// Two waiters served by two releases in one go, the later one cancelled
/// before either runs: it hands its permit on to the third, and the first
/// keeps its own.
#[test]
fn semaphore_served_waiters_cancelled_out_of_order() {
    within(|| {
        yieldloop::run(|| {
            let s = Rc::new(Semaphore::new(0));
            let got = Rc::new(RefCell::new(Vec::new()));
            let waiter = |i: u32| {
                let (s, got) = (s.clone(), got.clone());
                spawn(move || {
                    let permit = s.acquire();
                    got.borrow_mut().push(i);
                    permit.forget();
                })
            };
            let ws: Vec<_> = (0..3).map(waiter).collect();
            yield_now();
            assert_eq!(s.waiting(), 3);
            s.release(); // serves 0 …
            s.release(); // … and 1,
            assert_eq!(s.waiting(), 1);
            ws[1].cancel(); // which never runs: 2 gets its permit
            assert_eq!(s.waiting(), 0);
            for w in [&ws[0], &ws[2]] {
                while !w.is_finished() {
                    yield_now();
                }
            }
            assert_eq!(*got.borrow(), [0, 2]);
            assert_eq!(s.available_permits(), 0);
        })
    });
}

/// A task cancelled while *holding* the guard unlocks as it unwinds; a lock
/// under an expiring `timeout` scope gives up cleanly.
#[test]
fn mutex_holder_cancelled_and_timeout_scope() {
    within(|| {
        yieldloop::run(|| {
            let m = Rc::new(Mutex::new(0));
            let mh = m.clone();
            let holder = spawn(move || {
                let _g = mh.lock();
                sleep(Duration::from_secs(3600));
            });
            yield_now();
            assert!(m.is_locked());
            let r = yieldloop::timeout(Duration::from_millis(10), || *m.lock() += 1);
            assert!(r.is_err());
            assert_eq!(m.waiting(), 0);
            holder.cancel();
            assert!(!m.is_locked());
            *m.lock() += 1;
            assert_eq!(m.into_inner_rc(), 1);
        })
    });
}

/// Helper: the value of an `Rc<Mutex<T>>` nobody else holds.
trait IntoInnerRc<T> {
    fn into_inner_rc(self) -> T;
}

impl<T> IntoInnerRc<T> for Rc<Mutex<T>> {
    fn into_inner_rc(self) -> T {
        Rc::try_unwrap(self)
            .ok()
            .expect("still shared")
            .into_inner()
    }
}

/// Two thousand tasks share ten permits: never more than ten at work, all
/// permits back at the end.
#[test]
fn semaphore_limits_concurrency() {
    within(|| {
        yieldloop::run(|| {
            let sem = Rc::new(Semaphore::new(10));
            let busy = Rc::new(Cell::new(0));
            let peak = Rc::new(Cell::new(0));
            let tasks: Vec<_> = (0..2_000)
                .map(|_| {
                    let (sem, busy, peak) = (sem.clone(), busy.clone(), peak.clone());
                    spawn(move || {
                        let _p = sem.acquire();
                        busy.set(busy.get() + 1);
                        peak.set(peak.get().max(busy.get()));
                        yield_now();
                        busy.set(busy.get() - 1);
                    })
                })
                .collect();
            tasks.into_iter().for_each(|t| t.join().unwrap());
            assert_eq!(peak.get(), 10);
            assert_eq!(sem.available_permits(), 10);
            assert_eq!(sem.waiting(), 0);
        })
    });
}

/// Semaphore waiters are served in order; cancelled waiters, before and
/// after being handed a permit, leave the count right.
#[test]
fn semaphore_fifo_and_cancellation() {
    within(|| {
        yieldloop::run(|| {
            let sem = Rc::new(Semaphore::new(1));
            let order = Rc::new(RefCell::new(Vec::new()));
            let held = sem.acquire();
            let waiters: Vec<_> = (0..6)
                .map(|i| {
                    let (sem, order) = (sem.clone(), order.clone());
                    spawn(move || {
                        let _p = sem.acquire();
                        order.borrow_mut().push(i);
                    })
                })
                .collect();
            yield_now();
            assert_eq!(sem.waiting(), 6);
            waiters[1].cancel(); // waiting: just leaves
            assert_eq!(sem.waiting(), 5);
            drop(held); // handed to 0
            waiters[0].cancel(); // handed over, never ran: passes it on to 2
            for (i, w) in waiters.into_iter().enumerate().skip(2) {
                w.join().unwrap_or_else(|e| panic!("waiter {i}: {e}"));
            }
            assert_eq!(*order.borrow(), [2, 3, 4, 5]);
            assert_eq!(sem.available_permits(), 1);
            assert_eq!(sem.waiting(), 0);
        })
    });
}

/// try_acquire, forget and release keep the count as documented.
#[test]
fn semaphore_try_forget_release() {
    within(|| {
        yieldloop::run(|| {
            let sem = Semaphore::new(2);
            let a = sem.try_acquire().unwrap();
            let b = sem.try_acquire().unwrap();
            assert!(sem.try_acquire().is_none());
            a.forget();
            drop(b);
            assert_eq!(sem.available_permits(), 1);
            sem.release();
            assert_eq!(sem.available_permits(), 2);
            sem.release(); // grows it
            assert_eq!(sem.available_permits(), 3);
        })
    });
}

/// A wait group waits for two thousand jobs; waiters cancelled meanwhile
/// leave no trace.
#[test]
fn wait_group_waits_for_all_jobs() {
    within(|| {
        yieldloop::run(|| {
            let wg = Rc::new(WaitGroup::new());
            let finished = Rc::new(Cell::new(0));
            for i in 0..2_000u64 {
                wg.add(1);
                let (wg, finished) = (wg.clone(), finished.clone());
                spawn(move || {
                    sleep(Duration::from_micros(i % 50));
                    finished.set(finished.get() + 1);
                    wg.done();
                });
            }
            let w = wg.clone();
            let doomed = spawn(move || w.wait());
            yield_now();
            doomed.cancel();
            let other_waiters: Vec<_> = (0..10)
                .map(|_| {
                    let wg = wg.clone();
                    spawn(move || wg.wait())
                })
                .collect();
            wg.wait();
            assert_eq!(finished.get(), 2_000);
            assert_eq!(wg.count(), 0);
            other_waiters.into_iter().for_each(|t| t.join().unwrap());
            wg.wait(); // zero: returns at once
        })
    });
}

/// More `done`s than `add`s is a bug, reported by a panic.
#[test]
#[should_panic(expected = "more times than add")]
fn wait_group_done_below_zero_panics() {
    within(|| WaitGroup::new().done());
}

/// A barrier of a thousand tasks, three rounds: nobody passes a round
/// early, one leader per round.
#[test]
fn barrier_rounds() {
    within(|| {
        yieldloop::run(|| {
            const N: usize = 1_000;
            let barrier = Rc::new(Barrier::new(N));
            let round = Rc::new(Cell::new(0usize));
            let arrived = Rc::new(Cell::new(0usize));
            let tasks: Vec<_> = (0..N)
                .map(|_| {
                    let (barrier, round, arrived) =
                        (barrier.clone(), round.clone(), arrived.clone());
                    spawn(move || {
                        let mut leaders = 0;
                        for r in 0..3 {
                            assert_eq!(round.get(), r);
                            arrived.set(arrived.get() + 1);
                            if barrier.wait().is_leader() {
                                assert_eq!(arrived.get(), N * (r + 1));
                                round.set(r + 1);
                                leaders += 1;
                            } else {
                                // The leader ran first (it never paused).
                                assert_eq!(round.get(), r + 1);
                            }
                        }
                        leaders
                    })
                })
                .collect();
            let leaders: usize = tasks.into_iter().map(|t| t.join().unwrap()).sum();
            assert_eq!(leaders, 3);
        })
    });
}

/// A task cancelled while waiting at a barrier withdraws its arrival: the
/// round waits for a replacement.
#[test]
fn barrier_cancelled_waiter_withdraws() {
    within(|| {
        yieldloop::run(|| {
            let barrier = Rc::new(Barrier::new(3));
            let spawn_waiter = |b: &Rc<Barrier>| {
                let b = b.clone();
                spawn(move || b.wait().is_leader())
            };
            let a = spawn_waiter(&barrier);
            let b = spawn_waiter(&barrier);
            yield_now();
            b.cancel();
            let c = spawn_waiter(&barrier);
            yield_now();
            // Two arrived (a and c): still waiting.
            assert!(!a.is_finished() && !c.is_finished());
            let d = spawn_waiter(&barrier);
            let leaders = [a, c, d].into_iter().map(|t| t.join().unwrap());
            assert_eq!(leaders.filter(|&l| l).count(), 1);
        })
    });
}

/// notify_one wakes one waiter (in order) or stores a single permit;
/// notify_all wakes everyone waiting; a picked waiter cancelled before it
/// ran passes the notification on.
#[test]
fn notify_one_all_and_cancellation() {
    within(|| {
        yieldloop::run(|| {
            let n = Rc::new(Notify::new());
            let woke = Rc::new(RefCell::new(Vec::new()));
            let spawn_waiter = |i: u32| {
                let (n, woke) = (n.clone(), woke.clone());
                spawn(move || {
                    n.wait();
                    woke.borrow_mut().push(i);
                })
            };
            let ws: Vec<_> = (0..4).map(spawn_waiter).collect();
            yield_now();
            n.notify_one();
            yield_now();
            assert_eq!(*woke.borrow(), [0]);
            n.notify_one(); // picks 1 …
            ws[1].cancel(); // … which never runs: 2 gets it
            yield_now();
            assert_eq!(*woke.borrow(), [0, 2]);
            n.notify_all();
            yield_now();
            assert_eq!(*woke.borrow(), [0, 2, 3]);
            assert_eq!(n.waiting(), 0);
            // Nobody waiting: two notifications store one permit.
            n.notify_one();
            n.notify_one();
            assert!(n.wait_timeout(Duration::from_millis(1)));
            let start = Instant::now();
            assert!(!n.wait_timeout(Duration::from_millis(20)));
            assert!(start.elapsed() >= Duration::from_millis(20));
            // notify_all stores nothing.
            n.notify_all();
            assert!(!n.wait_timeout(Duration::from_millis(1)));
        })
    });
}

/// Notify under contention: a thousand waiters, each woken exactly once by
/// a thousand notify_one calls spread over time.
#[test]
fn notify_under_contention() {
    within(|| {
        yieldloop::run(|| {
            let n = Rc::new(Notify::new());
            let woken = Rc::new(Cell::new(0));
            let tasks: Vec<_> = (0..1_000)
                .map(|_| {
                    let (n, woken) = (n.clone(), woken.clone());
                    spawn(move || {
                        n.wait();
                        woken.set(woken.get() + 1);
                    })
                })
                .collect();
            for i in 0..1_000 {
                n.notify_one();
                if i % 10 == 0 {
                    yield_now();
                }
            }
            tasks.into_iter().for_each(|t| t.join().unwrap());
            assert_eq!(woken.get(), 1_000);
        })
    });
}

/// An event wakes every waiter when set, lets waits through while set,
/// blocks them again once cleared, and times out.
#[test]
fn event_set_clear_wait() {
    within(|| {
        yieldloop::run(|| {
            let ev = Rc::new(Event::new());
            let waiters: Vec<_> = (0..1_000)
                .map(|_| {
                    let ev = ev.clone();
                    spawn(move || ev.wait())
                })
                .collect();
            yield_now();
            waiters[3].cancel();
            assert!(!ev.is_set());
            ev.set();
            ev.clear(); // waiters woken by set still return
            for (i, w) in waiters.into_iter().enumerate() {
                if i != 3 {
                    w.join().unwrap();
                }
            }
            assert!(!ev.wait_timeout(Duration::from_millis(10)));
            ev.set();
            assert!(ev.wait_timeout(Duration::from_millis(10)));
            ev.wait();
        })
    });
}
