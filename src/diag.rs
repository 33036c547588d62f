//! Tuning and diagnostics: statistics of the stack and blocking pools,
//! the slow-task warning, the scheduler trace, and the blocking pool's
//! limits. Everyday code needs none of these.
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//!
//! // Warn about any task that holds its thread for over 50 ms at a time.
//! yieldloop::diag::set_slow_task_threshold(Some(Duration::from_millis(50)));
//! yieldloop::run(|| {
//!     yieldloop::spawn(|| ()).join().unwrap();
//! });
//! let stats = yieldloop::diag::pool_stats();
//! assert!(stats.carved >= 1);
//! ```

pub use crate::blocking::{
    blocking_pool_stats, set_blocking_idle_timeout, set_blocking_max_threads, BlockingPoolStats,
    DEFAULT_BLOCKING_IDLE_TIMEOUT, DEFAULT_BLOCKING_MAX_THREADS,
};
pub use crate::slow_task::{set_slow_task_threshold, slow_task_threshold};
#[cfg(feature = "bench-hooks")]
pub use crate::stack::bench_pool_cycle;
pub use crate::stack::{guards_use_madvise, pool_stats, PoolStats};
pub use crate::trace::{trace_off, trace_to_file, trace_to_stderr};
