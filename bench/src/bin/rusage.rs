//! Runs a command and records what it cost in CPU time and page faults.
//!
//! ```text
//! rusage -o FILE -- COMMAND [ARGS...]
//! ```
//!
//! The command inherits stdin, stdout and stderr. When it ends, one line of
//! `key=value` fields goes to FILE:
//!
//! ```text
//! utime_s=0.912345 stime_s=1.234567 minflt=1051234 majflt=0 maxrss_kb=4200000
//! ```
//!
//! from `wait4`, so they cover the command and every child it waited for
//! (a `timeout` wrapper and the program it runs, for instance). `rusage`
//! exits with the command's status, or 128 + the signal that ended it, as a
//! shell would report it.

use std::io::Write as _;
use std::process::Command;

fn usage_exit() -> ! {
    eprintln!("usage: rusage -o FILE -- COMMAND [ARGS...]");
    std::process::exit(2);
}

fn secs(t: libc::timeval) -> f64 {
    t.tv_sec as f64 + t.tv_usec as f64 * 1e-6
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(o), Some(path), Some(dashes)) = (args.next(), args.next(), args.next()) else {
        usage_exit()
    };
    if o != "-o" || dashes != "--" {
        usage_exit();
    }
    let cmd: Vec<String> = args.collect();
    let Some((prog, rest)) = cmd.split_first() else {
        usage_exit()
    };
    let child = match Command::new(prog).args(rest).spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("rusage: cannot run {prog}: {e}");
            std::process::exit(127);
        }
    };
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: zeroed plain-data struct that wait4 fills in.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: waits for our own child; status and ru are ours to write.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            eprintln!("rusage: wait4: {e}");
            std::process::exit(1);
        }
    }
    let line = format!(
        "utime_s={:.6} stime_s={:.6} minflt={} majflt={} maxrss_kb={}\n",
        secs(ru.ru_utime),
        secs(ru.ru_stime),
        ru.ru_minflt,
        ru.ru_majflt,
        ru.ru_maxrss,
    );
    if let Err(e) = std::fs::File::create(&path).and_then(|mut f| f.write_all(line.as_bytes())) {
        eprintln!("rusage: writing {path}: {e}");
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        1
    };
    std::process::exit(code);
}
