//! Waiting for several tasks at once: all of them in order ([`join_all`],
//! asyncio's `gather`), or whichever ends first ([`join_any`], the
//! `select` over tasks).

use super::park::{park, park_token};
use super::scope::ScopedJoinHandle;
use super::spawn::{JoinError, JoinHandle};
use crate::protocol::{Resume, TaskId};

/// A handle [`join_all`] and [`join_any`] can wait on: a [`JoinHandle`] or
/// a [`ScopedJoinHandle`]. Sealed: it cannot be implemented outside this
/// crate.
pub trait Joinable: sealed::Sealed {
    /// The task's value.
    type Output;
    /// The task's id.
    fn task_id(&self) -> TaskId;
    /// True once the task has ended.
    fn finished(&self) -> bool;
    /// Pauses until the task ends; its outcome.
    ///
    /// # Errors
    ///
    /// As for [`JoinHandle::join`].
    fn join_task(self) -> Result<Self::Output, JoinError>;
}

mod sealed {
    /// Keeps [`Joinable`](super::Joinable) to this crate's handles.
    pub trait Sealed {}
    impl<T> Sealed for super::JoinHandle<T> {}
    impl<T> Sealed for super::ScopedJoinHandle<'_, T> {}
}

/// [`Joinable`] for a handle whose inherent `id`, `is_finished` and `join`
/// are what it asks for: both handles have them.
macro_rules! joinable {
    ($($handle:ty),*) => {$(
        impl<T> Joinable for $handle {
            type Output = T;
            fn task_id(&self) -> TaskId {
                self.id()
            }
            fn finished(&self) -> bool {
                self.is_finished()
            }
            fn join_task(self) -> Result<T, JoinError> {
                self.join()
            }
        }
    )*};
}

joinable!(JoinHandle<T>, ScopedJoinHandle<'_, T>);

/// Pauses until every task has ended and returns their outcomes in the
/// order of `handles` (not the order they ended in). Takes
/// [`JoinHandle`]s or [`ScopedJoinHandle`]s.
///
/// # Panics
///
/// Panics if it must pause outside a task.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// yieldloop::run(|| {
///     let handles = [30u64, 10, 20].map(|ms| {
///         yieldloop::spawn(move || {
///             yieldloop::sleep(Duration::from_millis(ms));
///             ms
///         })
///     });
///     let done: Vec<u64> = yieldloop::join_all(handles)
///         .into_iter()
///         .map(Result::unwrap)
///         .collect();
///     assert_eq!(done, [30, 10, 20]);
/// });
/// ```
pub fn join_all<H: Joinable>(
    handles: impl IntoIterator<Item = H>,
) -> Vec<Result<H::Output, JoinError>> {
    handles.into_iter().map(H::join_task).collect()
}

/// Pauses until one of the tasks has ended, takes its handle out of
/// `handles` and returns where it stood with its outcome; `None` if
/// `handles` is empty. Takes [`JoinHandle`]s or [`ScopedJoinHandle`]s. The other tasks go on; call again for the next one,
/// or cancel them.
///
/// Of tasks that have all ended already, the first in `handles` is taken.
///
/// # Panics
///
/// Panics if it must pause outside a task.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// yieldloop::run(|| {
///     let mut racers: Vec<_> = [("slow", 200u64), ("fast", 10)]
///         .into_iter()
///         .map(|(name, ms)| {
///             yieldloop::spawn(move || {
///                 yieldloop::sleep(Duration::from_millis(ms));
///                 name
///             })
///         })
///         .collect();
///     let (index, winner) = yieldloop::join_any(&mut racers).unwrap();
///     assert_eq!((index, winner.unwrap()), (1, "fast"));
///     racers.iter().for_each(|h| h.cancel()); // the rest are not needed
/// });
/// ```
pub fn join_any<H: Joinable>(
    handles: &mut Vec<H>,
) -> Option<(usize, Result<H::Output, JoinError>)> {
    loop {
        if handles.is_empty() {
            return None;
        }
        if let Some(i) = handles.iter().position(H::finished) {
            return Some((i, handles.remove(i).join_task()));
        }
        // One park, unparked by the end of any of them. Nothing pauses
        // between taking the token and parking, so none can end unseen.
        let token = park_token();
        let watching = handles.iter().all(|h| token.watch_task(h.task_id()));
        if !watching {
            continue;
        }
        if let Resume::Cancelled = park(token, None) {
            // This task is being torn down: hand back the first one's
            // answer, which is a cancellation error too.
            return Some((0, handles.remove(0).join_task()));
        }
    }
}
