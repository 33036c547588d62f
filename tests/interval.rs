//! `interval`: ticks on schedule, and the three missed-tick behaviours
//! against a task that holds its thread past several ticks.

mod util;

use std::time::{Duration, Instant};

use util::within;
use yieldloop::{interval, interval_at, MissedTickBehavior, Runtime};

const PERIOD: Duration = Duration::from_millis(20);

fn hold(d: Duration) {
    let t0 = Instant::now();
    while t0.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// Ticks with `behavior` on worker 1 of a runtime: one tick, a hold of
/// 110 ms (ticks due at 20…100 missed), then three more ticks. Returns
/// the start, the instants the ticks returned, and when each call ended.
fn after_a_hold(behavior: MissedTickBehavior) -> (Instant, Vec<Instant>, Vec<Instant>) {
    within(move || {
        let rt = Runtime::builder().workers(2).build().unwrap();
        rt.spawn_on(1, move || {
            let start = Instant::now();
            let mut every = interval_at(start, PERIOD);
            every.set_missed_tick_behavior(behavior);
            assert_eq!(every.missed_tick_behavior(), behavior);
            let mut due = vec![every.tick()];
            let mut ended = vec![Instant::now()];
            hold(Duration::from_millis(110));
            for _ in 0..3 {
                due.push(every.tick());
                ended.push(Instant::now());
            }
            (start, due, ended)
        })
        .join()
        .unwrap()
    })
}

#[test]
fn burst_catches_up() {
    let (start, due, ended) = after_a_hold(MissedTickBehavior::Burst);
    // The missed ticks come one per call, at once, with their own instants.
    for (k, d) in due.iter().enumerate() {
        assert_eq!(*d, start + PERIOD * k as u32);
    }
    assert!(
        ended[3] - ended[1] < Duration::from_millis(15),
        "missed ticks came at once: {:?}",
        ended[3] - ended[1]
    );
}

#[test]
fn delay_starts_over() {
    let (start, due, ended) = after_a_hold(MissedTickBehavior::Delay);
    assert_eq!(due[1], start + PERIOD);
    // The late tick came at once, the next ones a full period apart.
    for k in 2..4 {
        // The schedule starts over a period after the late tick; a tick
        // late by less than the leeway (a loaded machine) is not missed
        // and moves nothing, so the instants are exact, not the gaps
        // between the calls' ends.
        let gap = ended[k] - ended[k - 1];
        assert!(ended[k] >= due[k], "tick {k} came before its instant");
        assert!(gap < PERIOD + Duration::from_millis(60), "{gap:?}");
        assert!(due[k] - due[k - 1] >= PERIOD);
    }
}

#[test]
fn skip_keeps_the_schedule() {
    let (start, due, ended) = after_a_hold(MissedTickBehavior::Skip);
    assert_eq!(due[1], start + PERIOD);
    // After the late tick, the next ones are on the old grid, none of the
    // missed ones replayed.
    for k in 2..4 {
        let offset = (due[k] - start).as_nanos() % PERIOD.as_nanos();
        assert_eq!(offset, 0, "tick {k} off the grid");
        assert!(
            due[k] >= start + Duration::from_millis(120),
            "{:?}",
            due[k] - start
        );
        assert!(ended[k] >= due[k]);
    }
    assert_eq!(due[3] - due[2], PERIOD);
}

/// On time, ticks keep to the schedule whatever the work takes, and
/// `reset` moves the next tick a period from now.
#[test]
fn ticks_on_schedule_and_reset() {
    within(|| {
        yieldloop::run(|| {
            let start = Instant::now();
            let mut every = interval(PERIOD);
            assert_eq!(every.period(), PERIOD);
            let first = every.tick();
            assert!(first - start < Duration::from_millis(5));
            for k in 1..4u32 {
                let due = every.tick();
                assert_eq!(due, first + PERIOD * k);
                assert!(Instant::now() >= due);
                // Work shorter than the period does not shift the grid.
                yieldloop::sleep(Duration::from_millis(5));
            }
            yieldloop::sleep(Duration::from_millis(5));
            let before = Instant::now();
            every.reset();
            let due = every.tick();
            assert!(due >= before + PERIOD);
            assert!(Instant::now() >= due);
        });
    });
}

/// A tick waited for inside an expiring `timeout` scope stays due.
#[test]
fn tick_in_timeout_scope_stays_due() {
    within(|| {
        yieldloop::run(|| {
            let start = Instant::now() + Duration::from_millis(50);
            let mut every = interval_at(start, PERIOD);
            let r = yieldloop::timeout(Duration::from_millis(5), || every.tick());
            assert!(r.is_err());
            assert_eq!(every.tick(), start);
        });
    });
}
