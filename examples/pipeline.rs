//! A three-stage pipeline joined by bounded channels, showing backpressure.
//!
//! ```text
//! cargo run --example pipeline
//! ```
//!
//! A fast producer makes 12 jobs, a middle stage squares them, and a slow
//! consumer takes 10 ms over each. Each channel holds 2 jobs. At first the
//! producer's sends return at once; once the channels (and the middle
//! stage's hands) are full, every send *parks the producer* until the
//! consumer has taken a job, so the producer slows to the consumer's pace
//! instead of piling up an unbounded queue. Typical output:
//!
//! ```text
//! [  0.0 ms] producer: job 0 sent at once
//! [  0.0 ms] producer: job 1 sent at once
//! ...
//! [ 10.1 ms] consumer: 0 squared is 0
//! [ 10.1 ms] producer: job 6 sent after waiting 10.1 ms
//! ...
//! done in 120 ms: the producer spent 60 ms parked in send, and no channel ever held more than 2 jobs
//! ```

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use yieldloop::sync::local::sync_channel;

/// Jobs the producer makes.
const JOBS: u64 = 12;
/// Capacity of each channel.
const BOUND: usize = 2;
/// How long the consumer takes over a job.
const WORK: Duration = Duration::from_millis(10);

fn main() {
    let start = Instant::now();
    let stamp = move || format!("[{:5.1} ms]", start.elapsed().as_secs_f64() * 1e3);

    let (parked, fullest) = yieldloop::run(move || {
        let (jobs_tx, jobs_rx) = sync_channel::<u64>(BOUND);
        let (squares_tx, squares_rx) = sync_channel::<(u64, u64)>(BOUND);
        let fullest = Rc::new(Cell::new(0));

        let producer = yieldloop::spawn(move || {
            let mut parked = Duration::ZERO;
            for job in 0..JOBS {
                let t = Instant::now();
                jobs_tx.send(job).expect("the middle stage hung up");
                let waited = t.elapsed();
                parked += waited;
                if waited < Duration::from_millis(1) {
                    println!("{} producer: job {job} sent at once", stamp());
                } else {
                    let ms = waited.as_secs_f64() * 1e3;
                    println!(
                        "{} producer: job {job} sent after waiting {ms:.1} ms",
                        stamp()
                    );
                }
            }
            // Dropping the sender closes the channel: the stages drain and
            // end.
            parked
        });

        let f = fullest.clone();
        let middle = yieldloop::spawn(move || {
            for job in jobs_rx.iter() {
                f.set(f.get().max(jobs_rx.len()));
                squares_tx
                    .send((job, job * job))
                    .expect("the consumer hung up");
            }
        });

        for (job, square) in squares_rx.iter() {
            fullest.set(fullest.get().max(squares_rx.len()));
            yieldloop::sleep(WORK);
            println!("{} consumer: {job} squared is {square}", stamp());
        }
        middle.join().expect("the middle stage failed");
        let parked = producer.join().expect("the producer failed");
        (parked, fullest.get())
    });

    println!(
        "done in {:.0} ms: the producer spent {:.0} ms parked in send, \
         and no channel ever held more than {fullest} jobs",
        start.elapsed().as_secs_f64() * 1e3,
        parked.as_secs_f64() * 1e3,
    );
}
