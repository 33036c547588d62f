//! The clock of the slow-task watch: the cheapest monotonic one each
//! system offers.

/// On Linux `CLOCK_MONOTONIC_COARSE` is read from the vDSO without touching
/// the TSC, in a few nanoseconds instead of the ~20 of the precise clock,
/// and its resolution (1–4 ms) is plenty for a threshold of tens of
/// milliseconds.
#[cfg(all(target_os = "linux", not(feature = "portable")))]
pub(crate) const WATCH_CLOCK: libc::clockid_t = libc::CLOCK_MONOTONIC_COARSE;
/// FreeBSD's counterpart of `CLOCK_MONOTONIC_COARSE`: the time of the last
/// clock tick, without reading the hardware counter.
#[cfg(target_os = "freebsd")]
pub(crate) const WATCH_CLOCK: libc::clockid_t = libc::CLOCK_MONOTONIC_FAST;
/// macOS's approximate clock, updated by the kernel rather than read from
/// the hardware counter.
#[cfg(target_vendor = "apple")]
pub(crate) const WATCH_CLOCK: libc::clockid_t = libc::CLOCK_MONOTONIC_RAW_APPROX;
/// Elsewhere (and on Linux with the `portable` feature) the POSIX clock.
#[cfg(not(any(
    all(target_os = "linux", not(feature = "portable")),
    target_os = "freebsd",
    target_vendor = "apple"
)))]
pub(crate) const WATCH_CLOCK: libc::clockid_t = libc::CLOCK_MONOTONIC;
