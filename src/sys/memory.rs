//! How the stack pool maps its chunks and gives idle memory back, which
//! differs by system whatever the `portable` feature says.

/// Flags of the mapping of a chunk of stacks. Linux is told not to reserve
/// swap for it (only touched pages count); macOS and FreeBSD never do for
/// anonymous memory, and FreeBSD has no such flag.
#[cfg(target_os = "linux")]
pub(crate) const CHUNK_FLAGS: libc::c_int =
    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE;
#[cfg(not(target_os = "linux"))]
pub(crate) const CHUNK_FLAGS: libc::c_int = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;

/// How free stacks beyond the watermark give their memory back. On Linux
/// `MADV_DONTNEED` drops the pages at once (they read back as zero); on
/// macOS and FreeBSD it is only a hint that keeps them, while `MADV_FREE`
/// lets the kernel take them (they read back as zero or as they were).
#[cfg(target_os = "linux")]
pub(crate) const TRIM_ADVICE: libc::c_int = libc::MADV_DONTNEED;
#[cfg(not(target_os = "linux"))]
pub(crate) const TRIM_ADVICE: libc::c_int = libc::MADV_FREE;

/// Whether one `madvise` may cover a run of neighbouring stacks with the
/// guard pages between them: Linux leaves guards as they are; elsewhere
/// each stack is advised alone, so a guard page never makes a call fail.
pub(crate) const TRIM_ACROSS_GUARDS: bool = cfg!(target_os = "linux");

/// Whether the system counts a process's mappings against a limit the
/// user can raise (Linux's `vm.max_map_count`), which an `ENOMEM` from
/// `mmap` or `mprotect` may mean was reached.
pub(crate) const COUNTS_MAPPINGS: bool = cfg!(target_os = "linux");
