//! The examples' command line: `--name VALUE` options, `--name` switches
//! and positional arguments, each parsed into the type the program wants.
//!
//! ```text
//! let mut args = Args::new("ticker [--period-ms MS] [--quiet] [FILE]");
//! let period_ms: u64 = args.value_or("--period-ms", 20);
//! let quiet = args.flag("--quiet");
//! let file: Option<String> = args.positional("FILE");
//! args.finish();
//! ```
//!
//! Options are taken by name wherever they stand, so a program asks for
//! its options first and then for its positional arguments, which are what
//! is left, in order. Any mistake (an unknown argument, a missing value, a
//! value that does not parse or is out of range) prints the program's name
//! and the problem, then the usage line, on stderr, and exits with code 2.
//! `-h` or `--help` prints the usage line (and the help text, if the
//! program has one) on stdout and exits with code 0.
//!
//! Every example that takes arguments has this module as `mod args;`; the
//! recipes' examples name the file with `#[path]`. It is plain std code, on
//! purpose: a library such as clap would do more, and hide how little a
//! command line needs.

// Each example uses only some of these methods.
#![allow(dead_code)]

use std::fmt::{Debug, Display};
use std::ops::RangeBounds;
use std::process;
use std::str::FromStr;

/// The command line, taken piece by piece.
#[derive(Debug)]
pub struct Args {
    /// The usage line without its `usage: `; the first word is the
    /// program's name, which starts every error message.
    synopsis: &'static str,
    /// The arguments (after the program's name) that no call has taken
    /// yet, in their order.
    rest: Vec<String>,
}

impl Args {
    /// The process's arguments. `synopsis` is the program's name and what
    /// it takes, as the usage line shows them: `"ticker [--ticks N]"`.
    pub fn new(synopsis: &'static str) -> Args {
        Args::with_help(synopsis, "")
    }

    /// As [`Args::new`], with a text that `--help` prints after the usage
    /// line, such as what each option means.
    pub fn with_help(synopsis: &'static str, help: &str) -> Args {
        let rest: Vec<String> = std::env::args().skip(1).collect();
        if rest.iter().any(|a| a == "-h" || a == "--help") {
            println!("usage: {synopsis}");
            if !help.is_empty() {
                println!("\n{help}");
            }
            process::exit(0);
        }
        Args { synopsis, rest }
    }

    /// Whether the switch `name` (such as `"--quiet"`) was given.
    pub fn flag(&mut self, name: &str) -> bool {
        let before = self.rest.len();
        self.rest.retain(|a| a != name);
        self.rest.len() < before
    }

    /// The value after the option `name` (`--addr 127.0.0.1:80`), parsed;
    /// `None` if the option was not given. Given twice, the last one counts.
    pub fn value<T>(&mut self, name: &str) -> Option<T>
    where
        T: FromStr,
        T::Err: Display,
    {
        let mut text = None;
        while let Some(i) = self.rest.iter().position(|a| a == name) {
            if i + 1 == self.rest.len() {
                self.fail(format!("{name} needs a value"));
            }
            self.rest.remove(i);
            // The value has moved up into the option's place.
            text = Some(self.rest.remove(i));
        }
        text.map(|text| self.parse(name, text))
    }

    /// The value of the option `name`, or `default` if it was not given.
    pub fn value_or<T>(&mut self, name: &str, default: T) -> T
    where
        T: FromStr,
        T::Err: Display,
    {
        self.value(name).unwrap_or(default)
    }

    /// As [`Args::value_or`], refusing a value outside `range`
    /// (`1..=1000`, `0.0..=60.0`, `1..`).
    pub fn value_in<T, R>(&mut self, name: &str, default: T, range: R) -> T
    where
        T: FromStr + PartialOrd,
        T::Err: Display,
        R: RangeBounds<T> + Debug,
    {
        let value = self.value_or(name, default);
        if !range.contains(&value) {
            self.fail(format!("{name} must be in {range:?}"));
        }
        value
    }

    /// The next positional argument, parsed; `None` if none is left. `name`
    /// is how the usage line calls it, for the error message. Ask for the
    /// options first: until they are taken, they count as positional too.
    pub fn positional<T>(&mut self, name: &str) -> Option<T>
    where
        T: FromStr,
        T::Err: Display,
    {
        let next = self.rest.first()?;
        if next.starts_with('-') {
            self.fail(format!("unknown argument {next:?}"));
        }
        let text = self.rest.remove(0);
        Some(self.parse(name, text))
    }

    /// The next positional argument, which must be one of `choices`; the
    /// first of them if none is left.
    pub fn choice(&mut self, choices: &[&'static str]) -> &'static str {
        let Some(given) = self.positional::<String>("") else {
            return choices[0];
        };
        match choices.iter().find(|&&c| c == given) {
            Some(choice) => choice,
            None => self.fail(format!("unknown argument {given:?}")),
        }
    }

    /// Refuses any argument that no call has taken: call it last.
    pub fn finish(&self) {
        if let Some(extra) = self.rest.first() {
            self.fail(format!("unknown argument {extra:?}"));
        }
    }

    /// Prints `problem` and the usage line on stderr, and exits with code 2.
    pub fn fail(&self, problem: impl Display) -> ! {
        let program = self.synopsis.split(' ').next().unwrap_or(self.synopsis);
        eprintln!("{program}: {problem}\nusage: {}", self.synopsis);
        process::exit(2)
    }

    /// `text`, the value of `name`, parsed as a `T`.
    fn parse<T>(&self, name: &str, text: String) -> T
    where
        T: FromStr,
        T::Err: Display,
    {
        text.parse()
            .unwrap_or_else(|e| self.fail(format!("{name} {text:?}: {e}")))
    }
}
