//! Ping-pong: two tasks that take turns, and one that naps without holding
//! up the other.
//!
//! ```text
//! cargo run --example ping_pong
//! cargo run --example ping_pong -- --scale 0.05 --rounds 3
//! ```
//!
//! `ping` first naps for 5 s. Meanwhile `pong` is not stuck behind it: it
//! practises, one swing a second, until ping's nap is over. Then the two
//! rally, ping, pong, ping, pong, for `--rounds` rounds (5 by default),
//! handing the turn over with `yield_now`, and the program exits:
//!
//! ```text
//! [0.00s] ping: napping for 5.00s before serving
//! [0.00s] pong: practice swing 1 while ping naps
//! [1.00s] pong: practice swing 2 while ping naps
//! ...
//! [5.00s] ping 1
//! [5.00s] pong 1
//! [5.00s] ping 2
//! ...
//! rally over: 5 rounds in 5.00s
//! ```
//!
//! `--scale F` multiplies the nap and the practice beat.

use std::cell::Cell;
use std::fmt;
use std::rc::Rc;
use std::time::{Duration, Instant};

mod args;
use args::Args;

/// How long ping naps, and pong's practice beat, before scaling.
const NAP: Duration = Duration::from_secs(5);
const BEAT: Duration = Duration::from_secs(1);

#[derive(Clone, Copy, PartialEq, Eq)]
enum Player {
    Ping,
    Pong,
}

impl fmt::Display for Player {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Player::Ping => "ping",
            Player::Pong => "pong",
        })
    }
}

/// What both players share.
///
/// A `Cell`, not a lock: both tasks run on one thread, and a task only ever
/// stops where it pauses (`yield_now`, `sleep_until`), so nothing can change
/// `turn` between a player reading it and acting on it.
struct Table {
    /// Whose shot it is in the rally.
    turn: Cell<Player>,
    /// When the program started, for the timestamps.
    start: Instant,
    /// When ping's nap ends and the rally starts.
    serve_at: Instant,
}

impl Table {
    fn log(&self, what: fmt::Arguments<'_>) {
        println!("[{:.2}s] {what}", self.start.elapsed().as_secs_f64());
    }

    /// Plays `rounds` shots for `me`, each on its turn.
    fn rally(&self, me: Player, other: Player, rounds: u32) {
        for round in 1..=rounds {
            // Not my turn: let the other player run, then look again. Each
            // `yield_now` lets every other ready task run once, so with both
            // players ready this passes the turn straight across.
            while self.turn.get() != me {
                yieldloop::yield_now();
            }
            self.log(format_args!("{me} {round}"));
            self.turn.set(other);
        }
    }
}

fn main() {
    let mut args = Args::new("ping_pong [--scale F] [--rounds N]");
    let scale = args.value_in("--scale", 1.0, 0.001..=1000.0);
    let rounds: u32 = args.value_or("--rounds", 5);
    args.finish();
    let start = Instant::now();
    let nap = NAP.mul_f64(scale);
    let beat = BEAT.mul_f64(scale);
    yieldloop::run(move || {
        let table = Rc::new(Table {
            turn: Cell::new(Player::Ping),
            start,
            serve_at: start + nap,
        });

        let t = table.clone();
        let ping = yieldloop::spawn(move || {
            t.log(format_args!(
                "ping: napping for {:.2}s before serving",
                nap.as_secs_f64()
            ));
            yieldloop::sleep_until(t.serve_at);
            t.rally(Player::Ping, Player::Pong, rounds);
        });

        let t = table.clone();
        let pong = yieldloop::spawn(move || {
            // Practise on a fixed beat until the serve. The last wait ends
            // exactly at `serve_at`, when ping wakes too, so both players are
            // ready when the rally starts.
            let mut swing = 0;
            let mut next = t.start;
            while next < t.serve_at {
                swing += 1;
                t.log(format_args!("pong: practice swing {swing} while ping naps"));
                next += beat;
                yieldloop::sleep_until(next.min(t.serve_at));
            }
            t.rally(Player::Pong, Player::Ping, rounds);
        });

        ping.join().expect("ping cannot fail");
        pong.join().expect("pong cannot fail");
    });
    println!(
        "rally over: {rounds} rounds in {:.2}s",
        start.elapsed().as_secs_f64()
    );
}
