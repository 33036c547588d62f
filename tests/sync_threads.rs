//! The cross-thread Mutex, RwLock, Semaphore, Notify, Barrier, WaitGroup,
//! OnceCell and Condvar, used by tasks on two workers and by plain threads.

mod util;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use yieldloop::sync::{Barrier, Condvar, Mutex, Notify, OnceCell, RwLock, Semaphore, WaitGroup};
use yieldloop::{Runtime, WorkerHandle};

use util::{quiet_panics, wait_until, within};

fn two_workers() -> Runtime {
    Runtime::builder().workers(2).build().unwrap()
}

fn join_all<T>(hs: Vec<WorkerHandle<T>>) -> Vec<T> {
    hs.into_iter().map(|h| h.join().unwrap()).collect()
}

/// Spins (bounded) until `m` has `n` waiters queued.
fn until_waiting(what: &str, n: usize, waiting: impl Fn() -> usize) {
    assert!(
        wait_until(Duration::from_secs(10), || waiting() == n),
        "{what}: {} waiters, expected {n}",
        waiting()
    );
}

/// Tasks on both workers and a plain thread increment one counter: the
/// total is exact and nobody is ever inside with another.
#[test]
fn mutex_counter_across_workers_and_a_thread() {
    within(|| {
        const TASKS: usize = 8;
        const ROUNDS: usize = 300;
        let rt = two_workers();
        let m = Arc::new(Mutex::new(0u64));
        let inside = Arc::new(AtomicBool::new(false));
        let tasks: Vec<_> = (0..TASKS)
            .map(|i| {
                let (m, inside) = (m.clone(), inside.clone());
                rt.spawn_on(i % 2, move || {
                    for r in 0..ROUNDS {
                        let mut g = m.lock();
                        assert!(!inside.swap(true, SeqCst), "two holders at once");
                        let v = *g;
                        if r % 7 == 0 {
                            // Held across a pause: other tasks of this
                            // worker run meanwhile.
                            yieldloop::yield_now();
                        }
                        *g = v + 1;
                        inside.store(false, SeqCst);
                    }
                })
            })
            .collect();
        for _ in 0..ROUNDS {
            let mut g = m.lock();
            assert!(!inside.swap(true, SeqCst), "two holders at once");
            *g += 1;
            inside.store(false, SeqCst);
        }
        join_all(tasks);
        assert_eq!(*m.lock(), ((TASKS + 1) * ROUNDS) as u64);
        assert!(!m.is_locked());
        rt.shutdown();
    });
}

/// Waiters queued one after another, alternating workers, get the lock in
/// the order they came.
#[test]
fn mutex_hands_over_in_fifo_order() {
    within(|| {
        let rt = two_workers();
        let m = Arc::new(Mutex::new(Vec::new()));
        let held = m.lock();
        let mut tasks = Vec::new();
        for i in 0..6 {
            let m2 = m.clone();
            tasks.push(rt.spawn_on(i % 2, move || m2.lock().push(i)));
            until_waiting("mutex", i + 1, || m.waiting());
        }
        // A failed try_lock leaves the lock and the queue as they were.
        assert!(m.try_lock().is_none() && m.lock_timeout(Duration::ZERO).is_none());
        assert_eq!(m.waiting(), 6);
        drop(held);
        join_all(tasks);
        assert_eq!(*m.lock(), [0, 1, 2, 3, 4, 5]);
    });
}

/// Waiters that time out, whose `timeout` scope expires, or that are
/// cancelled leave the queue; the lock then goes to the next one.
#[test]
fn mutex_waiters_that_give_up_pass_it_on() {
    within(|| {
        let rt = two_workers();
        let m = Arc::new(Mutex::new(0));
        let held = m.lock();
        let m1 = m.clone();
        let timed = rt.spawn_on(0, move || {
            let t = Instant::now();
            let got = m1.lock_timeout(Duration::from_millis(30)).is_some();
            (got, t.elapsed())
        });
        let m2 = m.clone();
        let scoped = rt.spawn_on(1, move || {
            yieldloop::timeout(Duration::from_millis(30), || *m2.lock() += 1).is_err()
        });
        let m3 = m.clone();
        let cancelled = rt.spawn_on(0, move || {
            let child = yieldloop::spawn(move || *m3.lock() += 100);
            yieldloop::sleep(Duration::from_millis(10));
            child.cancel();
            child.join().is_err()
        });
        let (got, waited) = timed.join().unwrap();
        assert!(!got && waited >= Duration::from_millis(30));
        assert!(scoped.join().unwrap(), "the timeout scope expired");
        assert!(cancelled.join().unwrap(), "the child was cancelled");
        until_waiting("mutex", 0, || m.waiting());
        // One live waiter after the ones that gave up: it gets the lock.
        let m4 = m.clone();
        let last = rt.spawn_on(1, move || *m4.lock() += 1000);
        until_waiting("mutex", 1, || m.waiting());
        drop(held);
        last.join().unwrap();
        assert_eq!(*m.lock(), 1000);
    });
}

/// Two readers hold the lock at once (each waits at a barrier only both
/// can pass together); a writer waits for them and excludes readers.
#[test]
fn rwlock_readers_share_writer_excludes() {
    within(|| {
        let rt = two_workers();
        let l = Arc::new(RwLock::new(1));
        let both_in = Arc::new(Barrier::new(2));
        let readers: Vec<_> = (0..2)
            .map(|w| {
                let (l, both_in) = (l.clone(), both_in.clone());
                rt.spawn_on(w, move || {
                    let g = l.read();
                    both_in.wait();
                    *g
                })
            })
            .collect();
        assert_eq!(join_all(readers), [1, 1]);

        let w = l.write();
        assert!(l.try_read().is_none());
        let l2 = l.clone();
        let reader = rt.spawn_on(0, move || *l2.read());
        thread::sleep(Duration::from_millis(20));
        assert!(!reader.is_finished(), "a reader got in past the writer");
        drop(w);
        *l.write() = 2;
        // The queued reader came before the second write.
        assert_eq!(reader.join().unwrap(), 1);
        assert_eq!(*l.read(), 2);
    });
}

/// One permit of two is never exceeded by tasks on both workers and a
/// thread; a timed-out acquire takes nothing.
#[test]
fn semaphore_across_workers() {
    within(|| {
        let rt = two_workers();
        let sem = Arc::new(Semaphore::new(2));
        let busy = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let job = {
            let (sem, busy, peak) = (sem.clone(), busy.clone(), peak.clone());
            move || {
                for _ in 0..20 {
                    let _p = sem.acquire();
                    let now = busy.fetch_add(1, SeqCst) + 1;
                    peak.fetch_max(now, SeqCst);
                    thread::yield_now();
                    busy.fetch_sub(1, SeqCst);
                }
            }
        };
        let tasks: Vec<_> = (0..6).map(|i| rt.spawn_on(i % 2, job.clone())).collect();
        job();
        join_all(tasks);
        assert!(peak.load(SeqCst) <= 2, "peak {}", peak.load(SeqCst));
        assert_eq!(sem.available_permits(), 2);

        let (a, b) = (sem.acquire(), sem.acquire());
        let s = sem.clone();
        let r = rt.spawn_on(1, move || {
            s.acquire_timeout(Duration::from_millis(20)).is_none()
        });
        assert!(r.join().unwrap());
        drop((a, b));
        assert_eq!(sem.available_permits(), 2);
    });
}

/// A notification from a plain thread wakes a task on a worker, and one
/// sent before anybody waits is kept.
#[test]
fn notify_across_threads() {
    within(|| {
        let rt = two_workers();
        let n = Arc::new(Notify::new());
        let n2 = n.clone();
        let waiter = rt.spawn_on(1, move || n2.wait());
        until_waiting("notify", 1, || n.waiting());
        n.notify_one();
        waiter.join().unwrap();

        n.notify_one();
        let n3 = n.clone();
        rt.spawn_on(0, move || n3.wait()).join().unwrap();
        assert!(!n.wait_timeout(Duration::from_millis(5)));
    });
}

/// Barrier rounds with tasks on both workers and a plain thread: one
/// leader a round, and nobody leaves a round before all arrived.
#[test]
fn barrier_rounds_across_workers_and_a_thread() {
    within(|| {
        let rt = two_workers();
        let b = Arc::new(Barrier::new(3));
        let arrived = Arc::new(AtomicUsize::new(0));
        let body = {
            let (b, arrived) = (b.clone(), arrived.clone());
            move || {
                let mut leaders = 0;
                for round in 1..=5 {
                    arrived.fetch_add(1, SeqCst);
                    leaders += usize::from(b.wait().is_leader());
                    assert!(
                        arrived.load(SeqCst) >= round * 3,
                        "left round {round} early"
                    );
                    // The next round cannot complete before everyone is
                    // past this one's check: it needs all three again.
                }
                leaders
            }
        };
        let tasks: Vec<_> = (0..2).map(|w| rt.spawn_on(w, body.clone())).collect();
        let leaders = body() + join_all(tasks).into_iter().sum::<usize>();
        assert_eq!(leaders, 5);
    });
}

/// A wait group counts down jobs on both workers; a plain thread and a
/// task both wait for it.
#[test]
fn wait_group_across_workers_and_a_thread() {
    within(|| {
        let rt = two_workers();
        let wg = Arc::new(WaitGroup::new());
        let done = Arc::new(AtomicUsize::new(0));
        wg.add(10);
        let wg2 = wg.clone();
        let d2 = done.clone();
        let task_waiter = rt.spawn_on(0, move || {
            wg2.wait();
            d2.load(SeqCst)
        });
        for i in 0..10 {
            let (wg, done) = (wg.clone(), done.clone());
            rt.spawn_on(i % 2, move || {
                yieldloop::sleep(Duration::from_millis(i as u64));
                done.fetch_add(1, SeqCst);
                wg.done();
            });
        }
        wg.wait();
        assert_eq!(done.load(SeqCst), 10);
        assert_eq!(task_waiter.join().unwrap(), 10);
    });
}

/// Callers race to initialise; the first initialiser panics, the next
/// waiter's runs, and everybody sees its one value.
#[test]
fn once_cell_init_once_after_a_panicking_initialiser() {
    within(|| {
        quiet_panics(|| {
            let rt = two_workers();
            let cell = Arc::new(OnceCell::new());
            let attempts = Arc::new(AtomicUsize::new(0));
            let init = {
                let (cell, attempts) = (cell.clone(), attempts.clone());
                move |me: usize| {
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        *cell.get_or_init(|| {
                            if attempts.fetch_add(1, SeqCst) == 0 {
                                thread::sleep(Duration::from_millis(20));
                                panic!("{}", util::EXPECTED_PANIC);
                            }
                            me
                        })
                    }))
                    .ok()
                }
            };
            let tasks: Vec<_> = (0..4)
                .map(|i| {
                    let init = init.clone();
                    rt.spawn_on(i % 2, move || init(i))
                })
                .collect();
            let mine = init(99);
            let mut seen: Vec<usize> = join_all(tasks).into_iter().flatten().collect();
            seen.extend(mine);
            // One caller saw the panic; the rest saw the one value set.
            assert_eq!(seen.len(), 4, "{seen:?}");
            assert!(seen.iter().all(|v| Some(v) == cell.get()), "{seen:?}");
            assert_eq!(attempts.load(SeqCst), 2);
        })
    });
}

/// A producer task on one worker and a consumer task on the other, through
/// a queue behind the Mutex and a Condvar; a wait with nothing coming
/// times out with the lock held again.
#[test]
fn condvar_producer_consumer_across_workers() {
    within(|| {
        const N: u64 = 2_000;
        let rt = two_workers();
        let shared = Arc::new((Mutex::new(VecDeque::new()), Condvar::new()));
        let s = shared.clone();
        let consumer = rt.spawn_on(1, move || {
            let (q, cv) = &*s;
            let mut sum = 0;
            for _ in 0..N {
                let mut g = q.lock();
                while g.is_empty() {
                    g = cv.wait(g);
                }
                sum += g.pop_front().unwrap();
            }
            sum
        });
        let s = shared.clone();
        rt.spawn_on(0, move || {
            for i in 1..=N {
                s.0.lock().push_back(i);
                s.1.notify_one();
                if i % 16 == 0 {
                    yieldloop::yield_now();
                }
            }
        })
        .join()
        .unwrap();
        assert_eq!(consumer.join().unwrap(), N * (N + 1) / 2);

        let (q, cv) = &*shared;
        let (g, r) = cv.wait_timeout(q.lock(), Duration::from_millis(10));
        assert!(r.timed_out() && g.is_empty());
        drop(g);
        assert!(!q.is_locked());
    });
}

/// A writer that gives up while readers queue behind it lets them in
/// alongside the reader that holds the lock.
#[test]
fn rwlock_writer_giving_up_admits_the_readers_behind_it() {
    within(|| {
        let rt = two_workers();
        let l = Arc::new(RwLock::new(0));
        let held = l.read();
        let l1 = l.clone();
        let writer = rt.spawn_on(0, move || {
            yieldloop::timeout(Duration::from_millis(50), || *l1.write() = 1).is_err()
        });
        thread::sleep(Duration::from_millis(10));
        let l2 = l.clone();
        let reader = rt.spawn_on(1, move || *l2.read());
        assert!(writer.join().unwrap(), "the writer gave up");
        // Still holding `held`: the reader got in beside it.
        assert_eq!(reader.join().unwrap(), 0);
        drop(held);
        assert!(l.try_write().is_some());
    });
}
