//! What the first touch of anonymous memory costs on this machine, cold and
//! warm.
//!
//! ```text
//! firsttouch [--mb MB] [--settle S]
//! firsttouch --pretouch --mb MB
//! ```
//!
//! On a virtual machine the host may take back guest memory that has been
//! free for a few seconds; the guest's next first touch of such a page then
//! costs a fault in the host as well as in the guest, several times a plain
//! page fault. A benchmark that touches gigabytes (the million sleepers)
//! pays that on top of its own cost, depending on what ran before it. This
//! program measures both prices so the report can tell them apart.
//!
//! Measuring (the default): waits `--settle` seconds (10), so that memory
//! freed just before (a build, an earlier run) has time to go cold like the
//! rest, then maps `--mb` MiB (4096, what the largest sleepers cells hold)
//! of private anonymous memory in 4 KiB pages (`MADV_NOHUGEPAGE`) and writes
//! one byte in every page: the cold pass. The kernel hands out recently
//! freed pages first, and on a busy machine a good part of those may still
//! be backed, so the pass is timed in 32 MiB chunks and the cold figures are
//! those of the slowest eighth of the chunks (by system time per fault);
//! the whole pass is printed too. Then it unmaps the memory, maps a GiB of
//! it again at once and touches it, three times: the warm passes, which get
//! back pages just freed, still backed by the host. Prints one line (the
//! warm figures are the median pass):
//!
//! ```text
//! firsttouch mb=4096 settle_s=10 cold_s_per_gib=2.41 cold_sys_us_per_fault=9.1 cold_faults=131072 pass_s_per_gib=2.2 warm_s_per_gib=0.35 warm_sys_us_per_fault=1.3 warm_faults=262144
//! ```
//!
//! - `*_s_per_gib`: wall time of the touching loop per GiB touched
//!   (`pass_s_per_gib`: the whole cold pass).
//! - `*_sys_us_per_fault`: system time (`getrusage`) per minor page fault
//!   during the loop; bench/run.sh records the same ratio for every
//!   sleepers run, and the report judges from the difference between cold
//!   and warm which runs were served cold memory.
//!
//! `--pretouch` touches `--mb` MiB once, frees it and exits, printing
//! nothing: the next process to start gets that memory warm.

use std::io;
use std::time::{Duration, Instant};

/// Bytes timed together in a pass.
const CHUNK: usize = 32 << 20;
/// The cold figures are those of the slowest 1/COLD_SHARE of the chunks.
const COLD_SHARE: usize = 8;
/// Bytes of each warm pass, at most: the pages just freed come back at
/// once, so a gigabyte says all there is to say.
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

/// Maps `bytes`, writes one byte per page, unmaps; times the touching, one
/// entry per chunk.
fn pass(bytes: usize, page: usize) -> io::Result<Vec<Pass>> {
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
    eprintln!("usage: firsttouch [--mb MB] [--settle S] | firsttouch --pretouch --mb MB");
    std::process::exit(2);
}

fn main() {
    let mut mb: usize = 4096;
    let mut settle: f64 = 10.0;
    let mut pretouch = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--mb" => mb = args.next().and_then(|v| v.parse().ok()).unwrap_or(0),
            "--settle" => settle = args.next().and_then(|v| v.parse().ok()).unwrap_or(f64::NAN),
            "--pretouch" => pretouch = true,
            _ => usage_exit(),
        }
    }
    if mb == 0 || !(settle.is_finite() && settle >= 0.0) {
        usage_exit();
    }
    // SAFETY: sysconf has no memory-safety preconditions.
    let page = match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        p if p > 0 => p as usize,
        _ => 4096,
    };
    let bytes = mb << 20;
    let fail = |e: io::Error| -> ! {
        eprintln!("firsttouch: mmap of {mb} MiB failed: {e}");
        std::process::exit(1);
    };
    if pretouch {
        pass(bytes, page).unwrap_or_else(|e| fail(e));
        return;
    }
    std::thread::sleep(Duration::from_secs_f64(settle));
    let mut chunks = pass(bytes, page).unwrap_or_else(|e| fail(e));
    let whole = total(&chunks);
    chunks.sort_by(|a, b| b.sys_us_per_fault().total_cmp(&a.sys_us_per_fault()));
    let cold = total(&chunks[..chunks.len().div_ceil(COLD_SHARE)]);
    let warm_bytes = bytes.min(WARM_BYTES);
    let mut warm: Vec<Pass> = (0..3)
        .map(|_| total(&pass(warm_bytes, page).unwrap_or_else(|e| fail(e))))
        .collect();
    warm.sort_by(|a, b| a.secs.total_cmp(&b.secs));
    let warm = warm[1];
    println!(
        "firsttouch mb={mb} settle_s={settle} cold_s_per_gib={:.3} cold_sys_us_per_fault={:.2} cold_faults={} pass_s_per_gib={:.3} warm_s_per_gib={:.3} warm_sys_us_per_fault={:.2} warm_faults={}",
        cold.s_per_gib(),
        cold.sys_us_per_fault(),
        cold.faults,
        whole.s_per_gib(),
        warm.s_per_gib(),
        warm.sys_us_per_fault(),
        warm.faults,
    );
}
