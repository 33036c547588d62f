//! CPU pinning: `sched_getaffinity`/`sched_setaffinity` on Linux,
//! `cpuset_getaffinity`/`cpuset_setaffinity` on FreeBSD. macOS has no hard
//! thread affinity (its affinity tags are only hints, and ignored on Apple
//! silicon), so pinning there is refused with `Unsupported`.
//!
//! Pinning has no portable form, so the `portable` feature leaves it as it
//! is on Linux.

#[cfg(target_os = "linux")]
pub(crate) use linux::{allowed_cpus, pin_current_thread};

#[cfg(target_os = "freebsd")]
pub(crate) use freebsd::{allowed_cpus, pin_current_thread};

#[cfg(not(any(target_os = "linux", target_os = "freebsd")))]
pub(crate) use unsupported::{allowed_cpus, pin_current_thread};

#[cfg(target_os = "linux")]
mod linux {
    use std::io;

    /// A CPU mask as the kernel reads it: 1024 bits, like glibc's
    /// `cpu_set_t`. Built by hand rather than with libc's `CPU_SET`, which
    /// is an `unsafe fn`: setting bits in an array needs no unsafety.
    type Mask = [u64; 16];

    /// The CPUs this process may run on, in increasing order.
    pub(crate) fn allowed_cpus() -> io::Result<Vec<usize>> {
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
    pub(crate) fn pin_current_thread(cpu: usize) -> io::Result<()> {
        let mut mask: Mask = [0; 16];
        let word = mask
            .get_mut(cpu / 64)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "CPU number too high"))?;
        *word |= 1 << (cpu % 64);
        // SAFETY: the pointer and length describe `mask`, which lives for
        // the call; the kernel only reads it. Thread id 0 is this thread.
        let r = unsafe {
            libc::sched_setaffinity(0, std::mem::size_of::<Mask>(), mask.as_ptr().cast())
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

#[cfg(target_os = "freebsd")]
mod freebsd {
    use std::io;
    use std::mem::{size_of, zeroed};

    /// Bits in libc's `cpuset_t`, the size the kernel is told.
    const BITS: usize = 8 * size_of::<libc::cpuset_t>();

    /// The CPUs this process may run on, in increasing order.
    pub(crate) fn allowed_cpus() -> io::Result<Vec<usize>> {
        // SAFETY: `cpuset_t` is plain bits; all zeroes is the empty set.
        let mut set: libc::cpuset_t = unsafe { zeroed() };
        // SAFETY: the size and pointer describe `set`, which lives for the
        // call; id -1 with CPU_WHICH_PID is the calling process.
        let r = unsafe {
            libc::cpuset_getaffinity(
                libc::CPU_LEVEL_WHICH,
                libc::CPU_WHICH_PID,
                -1,
                size_of::<libc::cpuset_t>(),
                &mut set,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: every index is below BITS, inside the set.
        Ok((0..BITS)
            .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
            .collect())
    }

    /// Pins the calling thread to `cpu`.
    pub(crate) fn pin_current_thread(cpu: usize) -> io::Result<()> {
        if cpu >= BITS {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "CPU number too high",
            ));
        }
        // SAFETY: as above, the empty set.
        let mut set: libc::cpuset_t = unsafe { zeroed() };
        // SAFETY: `cpu` was checked to be inside the set.
        unsafe { libc::CPU_SET(cpu, &mut set) };
        // SAFETY: the size and pointer describe `set`, which lives for the
        // call; the kernel only reads it. Id -1 with CPU_WHICH_TID is the
        // calling thread.
        let r = unsafe {
            libc::cpuset_setaffinity(
                libc::CPU_LEVEL_WHICH,
                libc::CPU_WHICH_TID,
                -1,
                size_of::<libc::cpuset_t>(),
                &set,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

#[cfg(not(any(target_os = "linux", target_os = "freebsd")))]
mod unsupported {
    use std::io;

    /// The refusal, with the reason.
    fn unsupported() -> io::Error {
        io::Error::new(
            io::ErrorKind::Unsupported,
            "yieldloop: pinning threads to CPUs is not supported on this system \
             (macOS has no hard thread affinity); build the runtime without `pin(true)`",
        )
    }

    /// Always `Unsupported`.
    pub(crate) fn allowed_cpus() -> io::Result<Vec<usize>> {
        Err(unsupported())
    }

    /// Always `Unsupported`.
    pub(crate) fn pin_current_thread(_cpu: usize) -> io::Result<()> {
        Err(unsupported())
    }
}
