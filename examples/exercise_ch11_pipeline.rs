//! Chapter 11 exercise: a pipeline of child processes, with a task as one
//! of its stages.
//!
//! ```text
//! cargo run --example exercise_ch11_pipeline
//! cargo run --example exercise_ch11_pipeline -- --n 1000000 --divisor 13
//! ```
//!
//! The shell pipeline `seq 1 N | <keep multiples of D> | sort -rn`, with the
//! middle stage a yieldloop task: one task reads `seq`'s output line by
//! line and writes the multiples of `--divisor` (7) into `sort`'s stdin,
//! another reads `sort`'s output, and a third ticks every millisecond
//! meanwhile. With the default `--n` (200,000) more than a pipe's worth of
//! numbers (64 KiB on Linux) goes into `sort`, so the filter must pause on
//! a full pipe until `sort` reads; every read and write pauses only its own
//! task. A pipe that is never empty or full never makes a task wait, though,
//! so the filter also yields every thousand numbers, lest it hold the thread
//! for the whole stream. Dropping `sort`'s stdin is its end of input. The program prints
//! what came out and how both children exited.

use std::cell::Cell;
use std::io::{self, BufRead, BufReader, BufWriter, ErrorKind, Write};
use std::rc::Rc;
use std::time::Duration;

use yieldloop::process::{Command, Stdio};

mod args;
use args::Args;

fn main() -> io::Result<()> {
    let mut args = Args::new("exercise_ch11_pipeline [--n N] [--divisor D]");
    let n: u64 = args.value_in("--n", 200_000, 1..=10_000_000);
    let divisor: u64 = args.value_in("--divisor", 7, 1..);
    args.finish();
    yieldloop::run(move || {
        let mut seq = Command::new("seq")
            .args(["1", &n.to_string()])
            .stdout(Stdio::piped())
            .spawn()?;
        let mut sort = Command::new("sort")
            .arg("-rn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let (numbers, to_sort) = (
            seq.stdout.take().expect("piped"),
            sort.stdin.take().expect("piped"),
        );
        let sorted = sort.stdout.take().expect("piped");

        let ticks = Rc::new(Cell::new(0u32));
        let (t, done) = (ticks.clone(), Rc::new(Cell::new(false)));
        let finished = done.clone();
        let ticker = yieldloop::spawn(move || {
            while !finished.get() {
                yieldloop::sleep(Duration::from_millis(1));
                t.set(t.get() + 1);
            }
        });
        // The middle stage: seq's lines in, the multiples out to sort.
        let filter = yieldloop::spawn(move || -> io::Result<(u64, u64)> {
            let mut out = BufWriter::new(to_sort); // 8 KiB writes, not one per line
            let (mut read, mut kept) = (0, 0);
            for line in BufReader::new(numbers).lines() {
                let x: u64 = line?
                    .trim()
                    .parse()
                    .map_err(|e| io::Error::new(ErrorKind::InvalidData, e))?;
                read += 1;
                if x % divisor == 0 {
                    writeln!(out, "{x}")?; // pauses while sort's pipe is full
                    kept += 1;
                }
                if read % 1000 == 0 {
                    // A stage whose pipes are never empty or full never has
                    // to wait, so it would never pause: let the others run.
                    yieldloop::yield_now();
                }
            }
            out.flush()?;
            Ok((read, kept)) // `out` is dropped here: sort sees end of input
        });
        // The last stage: sort's output, the first three lines and a sum.
        let reader = yieldloop::spawn(move || -> io::Result<(Vec<String>, u64, u64)> {
            let (mut first, mut lines, mut sum) = (Vec::new(), 0, 0);
            for line in BufReader::new(sorted).lines() {
                let line = line?;
                sum += line.trim().parse::<u64>().unwrap_or(0);
                lines += 1;
                if first.len() < 3 {
                    first.push(line);
                }
            }
            Ok((first, lines, sum))
        });

        let (read, kept) = filter.join().expect("the filter does not panic")?;
        let (first, lines, sum) = reader.join().expect("the reader does not panic")?;
        let (seq_status, sort_status) = (seq.wait()?, sort.wait()?);
        done.set(true);
        ticker.join().expect("the ticker does not panic");
        println!(
            "filter: read {read} numbers from seq, passed {kept} multiples of {divisor} to sort"
        );
        println!(
            "sort gave back {lines} lines, largest first: {}; their sum {sum}",
            first.join(", ")
        );
        let code = |s: std::process::ExitStatus| s.code().unwrap_or(-1); // -1: a signal
        println!(
            "seq exited with {}, sort with {}",
            code(seq_status),
            code(sort_status)
        );
        println!("the ticker ticked {} times meanwhile", ticks.get());
        Ok(())
    })
}
