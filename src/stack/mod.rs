//! Task stacks: the mapping of guarded stacks (`mapping`, where all the
//! unsafe memory calls are), the pool of them every task runs on (`pool`),
//! and the report that names a task whose stack overflowed into its guard
//! page (`overflow`).

mod mapping;
mod overflow;
mod pool;

pub use mapping::guards_use_madvise;
pub(crate) use overflow::{install as install_overflow_report, GuardInfo};
#[cfg(feature = "bench-hooks")]
pub use pool::bench_pool_cycle;
pub use pool::{pool_stats, PoolStats, DEFAULT_STACK_SIZE, MIN_STACK_SIZE};
pub(crate) use pool::{trim, PooledStack, MAIN_STACK_SIZE};
