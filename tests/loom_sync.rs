//! Model checks of the cross-thread synchronisation primitives: their
//! waiter queues and hand-overs under every interleaving loom explores,
//! with plain threads as the waiters (a waiter with a deadline gives up at
//! a point of the model's choosing).
//!
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 CARGO_TARGET_DIR=target/loom
//! cargo test --release --test loom_sync`
#![cfg(loom)]

use std::time::Duration;

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use loom::sync::Arc;
use loom::thread;
use yieldloop::sync::{Barrier, Condvar, Mutex, Notify, OnceCell, RwLock, Semaphore, WaitGroup};

/// Long enough never to pass on its own: under loom a waiter with a
/// deadline gives up at a point the model picks.
const LONG: Duration = Duration::from_secs(3600);

/// Increments a counter behind `m`, checking nobody else is inside.
fn increment(m: &Mutex<u32>, inside: &AtomicBool) {
    let mut g = m.lock();
    assert!(!inside.swap(true, SeqCst), "two holders at once");
    *g += 1;
    inside.store(false, SeqCst);
}

/// Three threads increment behind the lock: never two inside at once, no
/// increment lost, and the lock ends free, whatever order the hand-overs
/// take.
#[test]
fn mutex_hand_over() {
    loom::model(|| {
        let m = Arc::new(Mutex::new(0));
        let inside = Arc::new(AtomicBool::new(false));
        let ts: Vec<_> = (0..2)
            .map(|_| {
                let (m, inside) = (m.clone(), inside.clone());
                thread::spawn(move || increment(&m, &inside))
            })
            .collect();
        increment(&m, &inside);
        for t in ts {
            t.join().unwrap();
        }
        assert_eq!(*m.try_lock().expect("the lock ends free"), 3);
        assert!(!m.is_locked());
    });
}

/// A waiter gives up while the holder unlocks: it either got the lock or
/// left the queue, and a second waiter still gets it.
#[test]
fn mutex_waiter_times_out_while_handed() {
    loom::model(|| {
        let m = Arc::new(Mutex::new(0));
        let held = m.lock();
        let m1 = m.clone();
        let quitter = thread::spawn(move || {
            if let Some(mut g) = m1.lock_timeout(LONG) {
                *g += 1;
            }
        });
        let m2 = m.clone();
        let stayer = thread::spawn(move || *m2.lock() += 10);
        drop(held);
        quitter.join().unwrap();
        stayer.join().unwrap();
        let v = *m.try_lock().expect("the lock ends free");
        assert!(v == 10 || v == 11, "{v}");
    });
}

/// One permit, two takers and the main thread: never two holders, and the
/// permit comes back.
#[test]
fn semaphore_permits() {
    loom::model(|| {
        let sem = Arc::new(Semaphore::new(1));
        let inside = Arc::new(AtomicUsize::new(0));
        let ts: Vec<_> = (0..2)
            .map(|_| {
                let (sem, inside) = (sem.clone(), inside.clone());
                thread::spawn(move || {
                    let _p = sem.acquire();
                    assert_eq!(inside.fetch_add(1, SeqCst), 0);
                    inside.fetch_sub(1, SeqCst);
                })
            })
            .collect();
        for t in ts {
            t.join().unwrap();
        }
        assert_eq!(sem.available_permits(), 1);
    });
}

/// A permit handed to a waiter that gives up goes on or back: none is lost.
#[test]
fn semaphore_timeout_keeps_count() {
    loom::model(|| {
        let sem = Arc::new(Semaphore::new(0));
        let s = sem.clone();
        let quitter = thread::spawn(move || s.acquire_timeout(LONG).map(|p| p.forget()).is_some());
        sem.release();
        let took = quitter.join().unwrap();
        assert_eq!(sem.available_permits(), usize::from(!took));
    });
}

/// `notify_one` before or after the wait began: the waiter returns.
#[test]
fn notify_before_or_after_wait() {
    loom::model(|| {
        let n = Arc::new(Notify::new());
        let n2 = n.clone();
        let t = thread::spawn(move || n2.notify_one());
        n.wait();
        t.join().unwrap();
    });
}

/// A notification picked for a waiter that gives up is kept for the next.
#[test]
fn notify_not_lost_to_timeout() {
    loom::model(|| {
        let n = Arc::new(Notify::new());
        let n2 = n.clone();
        let quitter = thread::spawn(move || n2.wait_timeout(LONG));
        n.notify_one();
        if !quitter.join().unwrap() {
            // Nobody took it: it is stored.
            n.wait();
        }
    });
}

/// Two threads and the main one meet: exactly one leader, nobody stuck.
#[test]
fn barrier_round() {
    loom::model(|| {
        let b = Arc::new(Barrier::new(3));
        let ts: Vec<_> = (0..2)
            .map(|_| {
                let b = b.clone();
                thread::spawn(move || b.wait().is_leader())
            })
            .collect();
        let mut leaders = usize::from(b.wait().is_leader());
        for t in ts {
            leaders += usize::from(t.join().unwrap());
        }
        assert_eq!(leaders, 1);
    });
}

/// `wait` returns once both jobs are done.
#[test]
fn wait_group_done() {
    loom::model(|| {
        let wg = Arc::new(WaitGroup::new());
        let done = Arc::new(AtomicUsize::new(0));
        wg.add(2);
        let ts: Vec<_> = (0..2)
            .map(|_| {
                let (wg, done) = (wg.clone(), done.clone());
                thread::spawn(move || {
                    done.fetch_add(1, SeqCst);
                    wg.done();
                })
            })
            .collect();
        wg.wait();
        assert_eq!(done.load(SeqCst), 2);
        for t in ts {
            t.join().unwrap();
        }
    });
}

/// Two initialisers race: one runs, both see its value.
#[test]
fn once_cell_init_race() {
    loom::model(|| {
        let cell = Arc::new(OnceCell::new());
        let c = cell.clone();
        let t = thread::spawn(move || *c.get_or_init(|| 1));
        let mine = *cell.get_or_init(|| 2);
        let theirs = t.join().unwrap();
        assert_eq!(mine, theirs);
    });
}

/// The first initialiser panics: the waiter (or a later caller) sets it.
#[test]
fn once_cell_panicking_initialiser() {
    loom::model(|| {
        let cell = Arc::new(OnceCell::<u8>::new());
        let c = cell.clone();
        let t = thread::spawn(move || {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                *c.get_or_init(|| panic!("first initialiser fails"))
            }))
            .ok()
        });
        let mine = *cell.get_or_init(|| 7);
        assert_eq!(mine, 7);
        assert!(matches!(t.join().unwrap(), None | Some(7)));
    });
}

/// A condition set and signalled by another thread is seen by the waiter.
#[test]
fn condvar_wait_notify() {
    loom::model(|| {
        let pair = Arc::new((Mutex::new(false), Condvar::new()));
        let p = pair.clone();
        let t = thread::spawn(move || {
            *p.0.lock() = true;
            p.1.notify_one();
        });
        let mut ready = pair.0.lock();
        while !*ready {
            ready = pair.1.wait(ready);
        }
        drop(ready);
        t.join().unwrap();
    });
}

/// A writer and a reader: the reader sees the value before or after the
/// write, never a held write lock, and the lock ends free.
#[test]
fn rwlock_reader_writer() {
    loom::model(|| {
        let l = Arc::new(RwLock::new(0));
        let l2 = l.clone();
        let w = thread::spawn(move || *l2.write() += 1);
        let seen = *l.read();
        assert!(seen == 0 || seen == 1);
        w.join().unwrap();
        assert_eq!(*l.try_write().expect("the lock ends free"), 1);
    });
}
