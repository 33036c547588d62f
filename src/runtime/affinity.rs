//! CPU pinning with `sched_getaffinity`/`sched_setaffinity`.
use std::io;

/// A CPU mask as the kernel reads it: 1024 bits, like glibc's
/// `cpu_set_t`. Built by hand rather than with libc's `CPU_SET`, which
/// is an `unsafe fn`: setting bits in an array needs no unsafety.
type Mask = [u64; 16];

/// The CPUs this process may run on, in increasing order.
pub(super) fn allowed_cpus() -> io::Result<Vec<usize>> {
    let mut mask: Mask = [0; 16];
    // SAFETY: the pointer and length describe `mask`, which lives for
    // the call; the kernel writes at most that many bytes into it.
    let r = unsafe {
        libc::sched_getaffinity(0, std::mem::size_of::<Mask>(), mask.as_mut_ptr().cast())
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((0..mask.len() * 64)
        .filter(|&cpu| mask[cpu / 64] & (1 << (cpu % 64)) != 0)
        .collect())
}

/// Pins the calling thread to `cpu`.
pub(super) fn pin_current_thread(cpu: usize) -> io::Result<()> {
    let mut mask: Mask = [0; 16];
    let word = mask
        .get_mut(cpu / 64)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "CPU number too high"))?;
    *word |= 1 << (cpu % 64);
    // SAFETY: the pointer and length describe `mask`, which lives for
    // the call; the kernel only reads it. Thread id 0 is this thread.
    let r =
        unsafe { libc::sched_setaffinity(0, std::mem::size_of::<Mask>(), mask.as_ptr().cast()) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
