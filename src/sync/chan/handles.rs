//! [`channel_handles!`]: the public face of a channel kind, written once
//! for both kinds.

/// Defines the public handles of one channel kind, and the functions that
/// make them, over the channel core of one
/// [`Flavor`](crate::sync::flavor::Flavor): the calling module names the
/// shared pointer (`Rc` or `Arc`) and its `Chan<T>`, and gives the docs of
/// every item, which differ between the kinds (one pauses a task, the other
/// also blocks a plain thread). The signatures, the bodies, and all that the
/// two kinds do alike (the sender count kept by `Clone` and `Drop`, the close
/// in `Drop`, `Debug`, the hooks of a [`Select`](super::super::Select), the
/// receiver's iterators) are written here once.
///
/// The bodies only forward to the core: each handle is the shared pointer
/// and nothing else, so a call costs what it cost when each kind spelled
/// its handles out, and the generic core is compiled for each kind.
///
/// Items the receiver of one kind has and the other lacks go at the end of
/// its block, as plain methods.
///
/// The error types, `Duration` and `Instant` are named as the calling
/// module imports them: its docs link to them anyway, so they are in scope
/// there, and the expansion reads exactly as the handles did when each
/// module spelled them out.
macro_rules! channel_handles {
    (
        shared: $shared:ident<$chan:ident>,

        $(#[$channel_doc:meta])*
        pub fn channel;
        $(#[$sync_channel_doc:meta])*
        pub fn sync_channel;

        $(#[$sender_doc:meta])*
        pub struct Sender {
            $(#[$sender_send_doc:meta])*
            pub fn send;
        }

        $(#[$sync_sender_doc:meta])*
        pub struct SyncSender {
            $(#[$sync_send_doc:meta])*
            pub fn send;
            $(#[$try_send_doc:meta])*
            pub fn try_send;
        }

        $(#[$receiver_doc:meta])*
        pub struct Receiver {
            $(#[$recv_doc:meta])*
            pub fn recv;
            $(#[$try_recv_doc:meta])*
            pub fn try_recv;
            $(#[$recv_timeout_doc:meta])*
            pub fn recv_timeout;
            $(#[$recv_deadline_doc:meta])*
            pub fn recv_deadline;
            $(#[$iter_fn_doc:meta])*
            pub fn iter;
            $(#[$try_iter_fn_doc:meta])*
            pub fn try_iter;
            $($receiver_more:tt)*
        }

        $(#[$iter_doc:meta])*
        pub struct Iter;
        $(#[$try_iter_doc:meta])*
        pub struct TryIter;
        $(#[$into_iter_doc:meta])*
        pub struct IntoIter;
    ) => {
        $(#[$channel_doc])*
        pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
            let chan = $shared::new($chan::new(None));
            (Sender { chan: chan.clone() }, Receiver { chan })
        }

        $(#[$sync_channel_doc])*
        pub fn sync_channel<T>(bound: usize) -> (SyncSender<T>, Receiver<T>) {
            let chan = $shared::new($chan::new(Some(bound)));
            (SyncSender { chan: chan.clone() }, Receiver { chan })
        }

        $(#[$sender_doc])*
        pub struct Sender<T> {
            chan: $shared<$chan<T>>,
        }

        impl<T> Sender<T> {
            $(#[$sender_send_doc])*
            pub fn send(&self, value: T) -> Result<(), SendError<T>> {
                self.chan
                    .try_send(value)
                    .map_err(|e| SendError(e.into_inner()))
            }
        }

        $(#[$sync_sender_doc])*
        pub struct SyncSender<T> {
            chan: $shared<$chan<T>>,
        }

        impl<T> SyncSender<T> {
            $(#[$sync_send_doc])*
            pub fn send(&self, value: T) -> Result<(), SendError<T>> {
                self.chan.send(value)
            }

            $(#[$try_send_doc])*
            pub fn try_send(&self, value: T) -> Result<(), TrySendError<T>> {
                self.chan.try_send(value)
            }
        }

        $(#[$receiver_doc])*
        pub struct Receiver<T> {
            chan: $shared<$chan<T>>,
        }

        impl<T> Receiver<T> {
            $(#[$recv_doc])*
            pub fn recv(&self) -> Result<T, RecvError> {
                self.chan
                    .recv_deadline(None)
                    .map_err(|_| RecvError)
            }

            $(#[$try_recv_doc])*
            pub fn try_recv(&self) -> Result<T, TryRecvError> {
                self.chan.try_recv()
            }

            $(#[$recv_timeout_doc])*
            pub fn recv_timeout(
                &self,
                timeout: Duration,
            ) -> Result<T, RecvTimeoutError> {
                let deadline = $crate::time::deadline_after(timeout);
                self.chan.recv_deadline(Some(deadline))
            }

            $(#[$recv_deadline_doc])*
            pub fn recv_deadline(
                &self,
                deadline: Instant,
            ) -> Result<T, RecvTimeoutError> {
                self.chan.recv_deadline(Some(deadline))
            }

            $(#[$iter_fn_doc])*
            pub fn iter(&self) -> Iter<'_, T> {
                Iter { rx: self }
            }

            $(#[$try_iter_fn_doc])*
            pub fn try_iter(&self) -> TryIter<'_, T> {
                TryIter { rx: self }
            }

            $($receiver_more)*
        }

        impl<T> Clone for Sender<T> {
            fn clone(&self) -> Self {
                self.chan.add_sender();
                Sender {
                    chan: self.chan.clone(),
                }
            }
        }

        impl<T> Clone for SyncSender<T> {
            fn clone(&self) -> Self {
                self.chan.add_sender();
                SyncSender {
                    chan: self.chan.clone(),
                }
            }
        }

        impl<T> Drop for Sender<T> {
            fn drop(&mut self) {
                self.chan.drop_sender();
            }
        }

        impl<T> Drop for SyncSender<T> {
            fn drop(&mut self) {
                self.chan.drop_sender();
            }
        }

        impl<T> Drop for Receiver<T> {
            fn drop(&mut self) {
                self.chan.drop_receiver();
            }
        }

        impl<T> std::fmt::Debug for Sender<T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.chan.debug("Sender", f)
            }
        }

        impl<T> std::fmt::Debug for SyncSender<T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.chan.debug("SyncSender", f)
            }
        }

        impl<T> std::fmt::Debug for Receiver<T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.chan.debug("Receiver", f)
            }
        }

        impl<T> $crate::sync::select::sealed::SelectRecv for Receiver<T> {
            fn is_ready(&self) -> bool {
                self.chan.is_ready()
            }

            fn register(
                &self,
                token: $crate::protocol::ParkToken,
            ) -> $crate::sync::select::sealed::Registration {
                self.chan.register(token)
            }

            fn unregister(&self, reg: &$crate::sync::select::sealed::Registration) -> bool {
                self.chan.unregister(reg)
            }

            fn pass_on(&self) {
                self.chan.pass_on();
            }
        }

        impl<T> $crate::sync::Selectable for Receiver<T> {}

        impl<T> $crate::sync::select::sealed::SelectSend<T> for SyncSender<T> {
            fn try_send(&self, value: T) -> Result<(), TrySendError<T>> {
                self.chan.try_send(value)
            }

            fn register(
                &self,
                token: $crate::protocol::ParkToken,
            ) -> $crate::sync::select::sealed::Registration {
                self.chan.register_space(token)
            }

            fn unregister(&self, reg: &$crate::sync::select::sealed::Registration) {
                self.chan.unregister_space(reg);
            }
        }

        impl<T> $crate::sync::SelectableSender<T> for SyncSender<T> {}

        $(#[$iter_doc])*
        #[derive(Debug)]
        pub struct Iter<'a, T> {
            rx: &'a Receiver<T>,
        }

        impl<T> Iterator for Iter<'_, T> {
            type Item = T;

            fn next(&mut self) -> Option<T> {
                self.rx.recv().ok()
            }
        }

        $(#[$try_iter_doc])*
        #[derive(Debug)]
        pub struct TryIter<'a, T> {
            rx: &'a Receiver<T>,
        }

        impl<T> Iterator for TryIter<'_, T> {
            type Item = T;

            fn next(&mut self) -> Option<T> {
                self.rx.try_recv().ok()
            }
        }

        $(#[$into_iter_doc])*
        #[derive(Debug)]
        pub struct IntoIter<T> {
            rx: Receiver<T>,
        }

        impl<T> Iterator for IntoIter<T> {
            type Item = T;

            fn next(&mut self) -> Option<T> {
                self.rx.recv().ok()
            }
        }

        impl<T> IntoIterator for Receiver<T> {
            type Item = T;
            type IntoIter = IntoIter<T>;

            fn into_iter(self) -> IntoIter<T> {
                IntoIter { rx: self }
            }
        }

        impl<'a, T> IntoIterator for &'a Receiver<T> {
            type Item = T;
            type IntoIter = Iter<'a, T>;

            fn into_iter(self) -> Iter<'a, T> {
                self.iter()
            }
        }
    };
}

pub(crate) use channel_handles;
