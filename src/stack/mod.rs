//! Task stacks: the pool of guarded stacks every task runs on, and the
//! report that names a task whose stack overflowed into its guard page.

mod overflow;
mod pool;

pub(crate) use overflow::{install as install_overflow_report, GuardInfo};
#[cfg(feature = "bench-hooks")]
pub use pool::bench_pool_cycle;
pub use pool::{guards_use_madvise, pool_stats, PoolStats, DEFAULT_STACK_SIZE, MIN_STACK_SIZE};
pub(crate) use pool::{trim, PooledStack, MAIN_STACK_SIZE};
