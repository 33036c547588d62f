//! Model checks of a thread-per-core runtime's job queues: the inbox of
//! each worker (`Runtime::spawn_on`) and the pool all workers take from
//! (`Runtime::spawn`), against the job loop of the workers' main tasks,
//! which leave an unparker in both and pause when there is nothing to
//! start. Every interleaving within the preemption bound: no job is left
//! queued while its worker sleeps (loom reports a deadlock then), every
//! job runs exactly once, and a shutdown wakes every worker.
//!
//! Run with
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release --test loom_runtime`.
#![cfg(loom)]

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::{Arc, Condvar, Mutex};
use loom::thread;
use yieldloop::model::{ModelTask, ModelWorkers};

/// Counts the jobs run, and lets the model's main thread wait for `n`.
#[derive(Default)]
struct Done {
    n: Mutex<usize>,
    cv: Condvar,
}

impl Done {
    fn one(&self) {
        *self.n.lock().unwrap() += 1;
        self.cv.notify_all();
    }

    fn wait_for(&self, n: usize) {
        let mut got = self.n.lock().unwrap();
        while *got < n {
            got = self.cv.wait(got).unwrap();
        }
    }
}

/// A model thread running worker `index`'s job loop until its inbox is
/// closed.
fn start_worker(w: &Arc<ModelWorkers>, index: usize) -> thread::JoinHandle<()> {
    let w = w.clone();
    thread::spawn(move || w.run_worker(index, &mut ModelTask::new()))
}

/// A job spawned into the pool while the one worker is looking, offering
/// itself or asleep is started.
#[test]
fn a_pooled_job_reaches_a_sleeping_worker() {
    loom::model(|| {
        let w = Arc::new(ModelWorkers::new(1));
        let done = Arc::new(Done::default());
        let worker = start_worker(&w, 0);
        let d = done.clone();
        w.spawn(move || d.one());
        done.wait_for(1);
        w.close();
        worker.join().unwrap();
    });
}

/// Two jobs in the pool and two workers: each job runs exactly once, on
/// whichever worker takes it; then a shutdown wakes both.
#[test]
fn two_workers_share_the_pool() {
    loom::model(|| {
        let w = Arc::new(ModelWorkers::new(2));
        let done = Arc::new(Done::default());
        let runs = Arc::new(AtomicUsize::new(0));
        let workers: Vec<_> = (0..2).map(|i| start_worker(&w, i)).collect();
        for _ in 0..2 {
            let (d, r) = (done.clone(), runs.clone());
            w.spawn(move || {
                r.fetch_add(1, Ordering::SeqCst);
                d.one();
            });
        }
        done.wait_for(2);
        w.close();
        for t in workers {
            t.join().unwrap();
        }
        assert_eq!(runs.load(Ordering::SeqCst), 2);
    });
}

/// A job sent to one worker's inbox while it sleeps, or while it has just
/// been woken through the pool (its inbox unparker then stale), is
/// started.
#[test]
fn an_inbox_job_beside_a_pooled_one() {
    loom::model(|| {
        let w = Arc::new(ModelWorkers::new(1));
        let done = Arc::new(Done::default());
        let worker = start_worker(&w, 0);
        let d = done.clone();
        w.spawn(move || d.one());
        let d = done.clone();
        w.spawn_on(0, move || d.one());
        done.wait_for(2);
        w.close();
        worker.join().unwrap();
    });
}
