//! Feature `tokio`: a deadline for async handshakes, on yieldloop's
//! timers.

use std::future::{poll_fn, Future};
use std::io;
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

/// `fut`, given up with `TimedOut` once `deadline` has passed (if there is
/// one). A race polled by hand rather than a combinator crate's `select`:
/// two futures, one of which is a yieldloop timer.
pub(crate) async fn within<T>(
    deadline: Option<Duration>,
    fut: impl Future<Output = io::Result<T>>,
) -> io::Result<T> {
    let Some(d) = deadline else {
        return fut.await;
    };
    let mut fut = pin!(fut);
    let mut timer = yieldloop::sleep_future(d);
    poll_fn(|cx| {
        if let Poll::Ready(r) = fut.as_mut().poll(cx) {
            return Poll::Ready(r);
        }
        // Polled after the handshake, so that one that finishes at the
        // deadline's turn counts as finished.
        match pin!(&mut timer).poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(crate::stream::timed_out(d))),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}
