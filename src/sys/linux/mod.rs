//! What Linux does better, taken unless the `portable` feature asks for
//! the portable paths: the precise timer, child exits as readiness, guard
//! pages that keep a chunk of stacks one mapping.

mod guards;
mod pidfd;
mod timerfd;

pub(crate) use guards::{guards_use_madvise, install_guards};
pub(crate) use pidfd::PidFd;
pub(crate) use timerfd::TimerFd as PreciseTimer;
