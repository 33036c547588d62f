//! Waiting for several tasks at once: all of them in order ([`join_all`],
//! asyncio's `gather`), or whichever ends first ([`join_any`], the
//! `select` over tasks).

use crate::park::{park, park_token};
use crate::protocol::Resume;
use crate::spawn::{JoinError, JoinHandle};

/// Pauses until every task has ended and returns their outcomes in the
/// order of `handles` (not the order they ended in).
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
pub fn join_all<T>(handles: impl IntoIterator<Item = JoinHandle<T>>) -> Vec<Result<T, JoinError>> {
    handles.into_iter().map(JoinHandle::join).collect()
}

/// Pauses until one of the tasks has ended, takes its handle out of
/// `handles` and returns where it stood with its outcome; `None` if
/// `handles` is empty. The other tasks go on; call again for the next one,
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
pub fn join_any<T>(handles: &mut Vec<JoinHandle<T>>) -> Option<(usize, Result<T, JoinError>)> {
    loop {
        if handles.is_empty() {
            return None;
        }
        if let Some(i) = handles.iter().position(JoinHandle::is_finished) {
            return Some((i, handles.remove(i).join()));
        }
        // One park, unparked by the end of any of them. Nothing pauses
        // between taking the token and parking, so none can end unseen.
        let token = park_token();
        let watching = handles.iter().all(|h| token.watch_task(h.id()));
        if !watching {
            continue;
        }
        if let Resume::Cancelled = park(token, None) {
            // This task is being torn down: hand back the first one's
            // answer, which is a cancellation error too.
            return Some((0, handles.remove(0).join()));
        }
    }
}
