//! A randomized cancellation storm: tasks that sleep, read sockets, join
//! each other, open scopes of tasks borrowing their stack, and yield,
//! cancelled and joined in seeded random order.
//!
//! Invariants: every task's destructor runs exactly once, no descriptor
//! leaks, no task runs after it finished, and every join reports what really
//! happened.

mod util;

use std::cell::{Cell, RefCell};
use std::io::{Read, Write};
use std::rc::Rc;
use std::time::Duration;

use util::XorShift;
use yieldloop::net::{TcpListener, TcpStream};
use yieldloop::{sleep, spawn, yield_now, JoinHandle};

/// Counts drops of one task's stack-held value.
struct Tracker {
    drops: Rc<Cell<u32>>,
}

impl Drop for Tracker {
    fn drop(&mut self) {
        self.drops.set(self.drops.get() + 1);
    }
}

/// Counts drops of a scoped task's value, which also reads what it
/// borrows from its parent's stack when dropped: a task torn down after
/// that stack would read freed memory.
struct Borrowing<'a> {
    data: &'a [u32],
    drops: Rc<Cell<u32>>,
}

impl Drop for Borrowing<'_> {
    fn drop(&mut self) {
        assert_eq!(self.data, [7, 8, 9], "a scoped task outlived its borrow");
        self.drops.set(self.drops.get() + 1);
    }
}

/// What the test knows about one task.
struct Entry {
    handle: Option<JoinHandle<u32>>,
    drops: Rc<Cell<u32>>,
    /// Set when the task's body returned; checked against later activity.
    finished: Rc<Cell<bool>>,
    cancelled: bool,
}

/// One storm from `seed`; returns how many tasks it ran.
fn storm(seed: u64, ops: usize) -> usize {
    let fds_before = util::open_fds();
    let n = yieldloop::run(move || {
        let mut rng = XorShift::new(seed);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        // Server side of every socket task: accept and keep the streams,
        // writing a byte now and then so some reads complete.
        let held: Rc<RefCell<Vec<TcpStream>>> = Rc::default();
        let h2 = held.clone();
        let acceptor = spawn(move || {
            for (i, s) in listener.incoming().enumerate() {
                let s = s.unwrap();
                if i % 2 == 0 {
                    let _ = (&s).write_all(b"x");
                }
                h2.borrow_mut().push(s);
            }
        });
        let entries: Rc<RefCell<Vec<Entry>>> = Rc::default();
        // The drop counters of every scoped task.
        let scoped: Rc<RefCell<Vec<Rc<Cell<u32>>>>> = Rc::default();
        let activity_after_finish = Rc::new(Cell::new(0u32));
        for _ in 0..ops {
            let len = entries.borrow().len();
            match rng.below(10) {
                // Spawn a task of a random kind.
                0..=4 => {
                    let drops = Rc::new(Cell::new(0));
                    let finished = Rc::new(Cell::new(false));
                    let kind = rng.below(5);
                    let ms = rng.below(20);
                    let children = rng.range(1, 5) as usize;
                    let scoped = scoped.clone();
                    let tracker = Tracker {
                        drops: drops.clone(),
                    };
                    let fin = finished.clone();
                    let after = activity_after_finish.clone();
                    // A task to join, picked now (it may be cancelled later).
                    let target = if len > 0 {
                        let i = rng.below(len as u64) as usize;
                        entries.borrow_mut()[i].handle.take().map(|h| (i, h))
                    } else {
                        None
                    };
                    let handle = spawn(move || {
                        let _t = tracker;
                        let v = match kind {
                            0 => {
                                sleep(Duration::from_millis(ms));
                                1
                            }
                            1 => {
                                let mut s = TcpStream::connect(addr).unwrap();
                                let mut b = [0u8; 1];
                                // Half of the servers never write: this
                                // waits until cancelled or the run ends.
                                let _ = s.read(&mut b);
                                2
                            }
                            2 => {
                                if let Some((_, h)) = target {
                                    let _ = h.join();
                                }
                                3
                            }
                            3 => {
                                // A scope whose tasks borrow this stack.
                                let data = vec![7u32, 8, 9];
                                yieldloop::scope(|s| {
                                    for c in 0..children {
                                        let drops = Rc::new(Cell::new(0));
                                        scoped.borrow_mut().push(drops.clone());
                                        // Made here, so a task torn down
                                        // before it ever ran drops it too.
                                        let b = Borrowing { data: &data, drops };
                                        s.spawn(move || {
                                            let _b = b;
                                            sleep(Duration::from_millis(ms + c as u64));
                                        });
                                    }
                                });
                                4
                            }
                            _ => {
                                for _ in 0..ms {
                                    yield_now();
                                }
                                5
                            }
                        };
                        if fin.get() {
                            after.set(after.get() + 1);
                        }
                        fin.set(true);
                        v
                    });
                    entries.borrow_mut().push(Entry {
                        handle: Some(handle),
                        drops,
                        finished,
                        cancelled: false,
                    });
                }
                // Cancel a random task.
                5..=6 if len > 0 => {
                    let i = rng.below(len as u64) as usize;
                    let h = entries.borrow_mut()[i].handle.take();
                    if let Some(h) = h {
                        if !h.is_finished() {
                            entries.borrow_mut()[i].cancelled = true;
                        }
                        // No borrow is held: the target unwinds right here.
                        h.cancel();
                        entries.borrow_mut()[i].handle = Some(h);
                    }
                }
                // Join a random task.
                7 if len > 0 => {
                    let i = rng.below(len as u64) as usize;
                    let h = entries.borrow_mut()[i].handle.take();
                    if let Some(h) = h {
                        let cancelled = entries.borrow()[i].cancelled;
                        // Socket readers may wait forever: bound the join.
                        match yieldloop::timeout(Duration::from_millis(30), move || h.join()) {
                            Ok(Ok(v)) => assert!((1..=5).contains(&v) && !cancelled),
                            Ok(Err(e)) => assert!(e.is_cancelled(), "unexpected {e}"),
                            Err(_elapsed) => {}
                        }
                    }
                }
                // Let the loop turn.
                _ => {
                    if rng.below(2) == 0 {
                        yield_now();
                    } else {
                        sleep(Duration::from_millis(rng.below(3)));
                    }
                }
            }
        }
        // Every finished task dropped its tracker once; none ran on after
        // finishing.
        for e in entries.borrow().iter() {
            if e.finished.get() {
                assert_eq!(
                    e.drops.get(),
                    1,
                    "a finished task's value dropped {} times",
                    e.drops.get()
                );
            }
            assert!(e.drops.get() <= 1);
        }
        assert_eq!(activity_after_finish.get(), 0);
        acceptor.cancel();
        held.borrow_mut().clear();
        // Leftover tasks are cancelled when main returns; count them after.
        let mut all: Vec<Rc<Cell<u32>>> =
            entries.borrow().iter().map(|e| e.drops.clone()).collect();
        all.extend(scoped.borrow().iter().cloned());
        let count = all.len();
        (all, count)
    });
    let (all, count) = n;
    for (i, d) in all.iter().enumerate() {
        assert_eq!(
            d.get(),
            1,
            "seed {seed}: task {i} dropped its value {} times",
            d.get()
        );
    }
    // Every socket of the storm is closed again.
    assert!(
        util::wait_until(Duration::from_secs(5), || util::open_fds() <= fds_before),
        "seed {seed}: descriptors leaked: {} before, {} after",
        fds_before,
        util::open_fds()
    );
    count
}

/// Twenty seeded storms of 300 random operations each keep every invariant,
/// scoped tasks' destructors included (each runs once, while what it
/// borrows is alive).
#[test]
fn seeded_cancellation_storms() {
    let mut tasks = 0;
    for seed in 1..=20u64 {
        tasks += storm(seed * 0x9E37_79B9, 300);
    }
    assert!(tasks > 1000, "storms too small: {tasks} tasks");
}
