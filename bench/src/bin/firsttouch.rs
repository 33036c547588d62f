//! What the first touch of anonymous memory costs on this machine, cold and
//! warm.
//!
//! ```text
//! firsttouch [--max-mb MB] [--settle S]
//! firsttouch --pretouch --mb MB
//! ```
//!
//! On a virtual machine the host backs the guest's memory lazily and takes
//! back what the guest has left free; the guest's first touch of a page the
//! host no longer backs costs a fault in the host as well as in the guest,
//! several times a plain page fault. The kernel hands out the pages freed
//! most recently first, and those are still backed: a program gets warm
//! memory up to about what ran shortly before it touched, and cold memory
//! beyond. A benchmark that touches gigabytes (the million sleepers) pays
//! for that on top of its own cost, depending on what ran before it. This
//! program measures both prices so the report can tell them apart.
//!
//! Measuring (the default), timed in 32 MiB chunks, 4 KiB pages
//! (`MADV_NOHUGEPAGE`), one byte written per page:
//!
//! - warm: maps a GiB of private anonymous memory, touches it, unmaps it,
//!   and then three times maps, touches and unmaps a GiB again, which gets
//!   back the pages just freed; the median of the three is the warm figure.
//! - cold: waits `--settle` seconds (5), maps up to `--max-mb` MiB (12288,
//!   and at most half of `MemAvailable`) and touches it chunk by chunk past
//!   the pages still backed, until it has found a GiB of chunks that cost at
//!   least 2.5 times the warm figure per fault, or reached the limit. Those
//!   chunks are the cold figure; with less than a quarter GiB of them, the
//!   slowest eighth of all chunks is printed instead (and comes out close to
//!   warm: the report then calls no run cold).
//!
//! Prints one line:
//!
//! ```text
//! firsttouch touched_mb=4608 cold_mb=1024 settle_s=5 cold_s_per_gib=2.8 cold_sys_us_per_fault=10.4 cold_faults=262144 warm_s_per_gib=0.43 warm_sys_us_per_fault=1.45 warm_faults=262144
//! ```
//!
//! - `touched_mb`: what the cold pass touched; `cold_mb`: how much of it
//!   was found cold.
//! - `*_s_per_gib`: wall time of the touching loop per GiB touched.
//! - `*_sys_us_per_fault`: system time (`getrusage`) per minor page fault
//!   during the loop; bench/run.sh records the same ratio for every
//!   sleepers run, and the report judges from the difference between cold
//!   and warm which runs were served cold memory.
//!
//! `--pretouch` touches `--mb` MiB once, frees it and exits, printing
//! nothing: the next process to start gets that much memory warm.

use std::io;
use std::time::{Duration, Instant};

/// Bytes timed together in a pass.
const CHUNK: usize = 32 << 20;
/// A chunk whose system time per fault is this many times the warm
/// figure's was served cold memory.
const COLD_FACTOR: f64 = 2.5;
/// How much cold memory the cold pass looks for.
const COLD_BYTES: usize = 1 << 30;
/// Bytes of each warm pass: the pages just freed come back at once, so a
/// gigabyte says all there is to say.
const WARM_BYTES: usize = 1 << 30;

/// A pass over the mapping, or part of one.
#[derive(Clone, Copy, Default)]
struct Pass {
    secs: f64,
    sys_secs: f64,
    faults: u64,
    bytes: usize,
}

impl Pass {
    fn add(self, o: Pass) -> Pass {
        Pass {
            secs: self.secs + o.secs,
            sys_secs: self.sys_secs + o.sys_secs,
            faults: self.faults + o.faults,
            bytes: self.bytes + o.bytes,
        }
    }

    fn s_per_gib(&self) -> f64 {
        self.secs / (self.bytes as f64 / (1u64 << 30) as f64)
    }

    fn sys_us_per_fault(&self) -> f64 {
        self.sys_secs * 1e6 / self.faults.max(1) as f64
    }
}

/// System time (s) and minor faults of this thread so far.
fn usage() -> (f64, u64) {
    // SAFETY: getrusage writes one `rusage` into the zeroed struct we own.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut ru);
        ru
    };
    let sys = ru.ru_stime.tv_sec as f64 + ru.ru_stime.tv_usec as f64 * 1e-6;
    (sys, ru.ru_minflt as u64)
}

/// Maps `bytes`, writes one byte per page until `enough` says so (asked
/// after every chunk), unmaps; times the touching, one entry per chunk.
fn pass(
    bytes: usize,
    page: usize,
    mut enough: impl FnMut(&[Pass]) -> bool,
) -> io::Result<Vec<Pass>> {
    // SAFETY: a fresh private anonymous mapping; nothing else refers to it.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    // Small pages, as the sleepers' stacks get: one fault per 4 KiB. A
    // failure only means the kernel has no THP to turn off.
    // SAFETY: advice on the mapping made above.
    unsafe { libc::madvise(p, bytes, libc::MADV_NOHUGEPAGE) };
    let base = p.cast::<u8>();
    let mut chunks = Vec::new();
    for lo in (0..bytes).step_by(CHUNK) {
        let hi = (lo + CHUNK).min(bytes);
        let (sys0, flt0) = usage();
        let start = Instant::now();
        for off in (lo..hi).step_by(page) {
            // SAFETY: `off < bytes`, inside the writable mapping; volatile
            // so the stores are not merged or dropped.
            unsafe { base.add(off).write_volatile(1) };
        }
        let secs = start.elapsed().as_secs_f64();
        let (sys1, flt1) = usage();
        chunks.push(Pass {
            secs,
            sys_secs: sys1 - sys0,
            faults: flt1 - flt0,
            bytes: hi - lo,
        });
        if enough(&chunks) {
            break;
        }
    }
    // SAFETY: unmaps exactly the mapping made above; no reference to it
    // outlives this function.
    unsafe { libc::munmap(p, bytes) };
    Ok(chunks)
}

/// The chunks of a pass added up.
fn total(chunks: &[Pass]) -> Pass {
    chunks.iter().fold(Pass::default(), |a, c| a.add(*c))
}

fn usage_exit() -> ! {
    eprintln!("usage: firsttouch [--max-mb MB] [--settle S] | firsttouch --pretouch --mb MB");
    std::process::exit(2);
}

/// `MemAvailable` of /proc/meminfo, in MiB.
fn mem_available_mb() -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb: usize = info
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb / 1024)
}

fn main() {
    let mut mb: usize = 0;
    let mut max_mb: usize = 12288;
    let mut settle: f64 = 5.0;
    let mut pretouch = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut num = || args.next().and_then(|v| v.parse::<f64>().ok());
        match a.as_str() {
            "--mb" => mb = num().unwrap_or(0.0) as usize,
            "--max-mb" => max_mb = num().unwrap_or(0.0) as usize,
            "--settle" => settle = num().unwrap_or(f64::NAN),
            "--pretouch" => pretouch = true,
            _ => usage_exit(),
        }
    }
    if (pretouch && mb == 0) || max_mb == 0 || !(settle.is_finite() && settle >= 0.0) {
        usage_exit();
    }
    // SAFETY: sysconf has no memory-safety preconditions.
    let page = match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        p if p > 0 => p as usize,
        _ => 4096,
    };
    let fail = |e: io::Error| -> ! {
        eprintln!("firsttouch: mmap failed: {e}");
        std::process::exit(1);
    };
    if pretouch {
        pass(mb << 20, page, |_| false).unwrap_or_else(|e| fail(e));
        return;
    }
    // Warm: a GiB touched, freed and touched again at once, three times
    // (the first touch of all, which may be cold, is not counted).
    pass(WARM_BYTES, page, |_| false).unwrap_or_else(|e| fail(e));
    let mut warm: Vec<Pass> = (0..3)
        .map(|_| total(&pass(WARM_BYTES, page, |_| false).unwrap_or_else(|e| fail(e))))
        .collect();
    warm.sort_by(|a, b| a.secs.total_cmp(&b.secs));
    let warm = warm[1];
    // Cold: whatever lies beyond the pages that are still backed. Touch
    // until COLD_BYTES of chunks have cost COLD_FACTOR times the warm
    // figure per fault, or the limit: --max-mb, and half the memory
    // available, so as not to crowd others out.
    std::thread::sleep(Duration::from_secs_f64(settle));
    let limit = max_mb
        .min(mem_available_mb().map_or(max_mb, |m| m / 2))
        .max(64);
    let is_cold = |c: &Pass| c.sys_us_per_fault() >= COLD_FACTOR * warm.sys_us_per_fault();
    let mut chunks = pass(limit << 20, page, |cs| {
        cs.iter().filter(|c| is_cold(c)).count() * CHUNK >= COLD_BYTES
    })
    .unwrap_or_else(|e| fail(e));
    let touched = total(&chunks);
    let found: Vec<Pass> = chunks.iter().copied().filter(is_cold).collect();
    let cold = if found.len() * CHUNK >= COLD_BYTES / 4 {
        total(&found)
    } else {
        // Too little cold memory to speak of: the slowest eighth of what
        // was touched, which then comes out close to warm.
        chunks.sort_by(|a, b| b.sys_us_per_fault().total_cmp(&a.sys_us_per_fault()));
        total(&chunks[..chunks.len().div_ceil(8)])
    };
    println!(
        "firsttouch touched_mb={} cold_mb={} settle_s={settle} cold_s_per_gib={:.3} cold_sys_us_per_fault={:.2} cold_faults={} warm_s_per_gib={:.3} warm_sys_us_per_fault={:.2} warm_faults={}",
        touched.bytes >> 20,
        (found.len() * CHUNK) >> 20,
        cold.s_per_gib(),
        cold.sys_us_per_fault(),
        cold.faults,
        warm.s_per_gib(),
        warm.sys_us_per_fault(),
        warm.faults,
    );
}
