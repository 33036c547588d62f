//! The cross-thread primitives: the waiting they share (`wait`) and each
//! primitive in its file. Every one keeps its state behind a std mutex
//! (the `Mutex` also has a one-atomic fast path), and its waiters are
//! tasks of any scheduler or plain threads.

mod condvar;
mod mutex;
mod notify;
mod once;
mod rwlock;
mod semaphore;
mod wait;
mod waitgroup;

pub use condvar::{Condvar, WaitTimeoutResult};
pub use mutex::{Mutex, MutexGuard};
pub use notify::Notify;
pub use once::OnceCell;
pub use rwlock::{RwLock, RwLockReadGuard, RwLockWriteGuard};
pub use semaphore::{Semaphore, SemaphorePermit};
pub use waitgroup::{Barrier, WaitGroup};
