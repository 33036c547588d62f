//! [`channel_handles!`]: what the handles of both channel kinds do alike.

/// Implements, for the handles of one channel kind (`Sender`, `SyncSender`
/// and `Receiver`, each holding its [`Chan`] in a field `chan`), all that
/// the two kinds do alike: the sender count kept by `Clone` and `Drop`, the
/// close in `Drop`, `Debug`, the hooks of a [`Select`](super::Select), and
/// the receiver's iterators, whose docs come from the call.
macro_rules! channel_handles {
    (
        $(#[$iter_doc:meta])*
        pub struct Iter;
        $(#[$try_iter_doc:meta])*
        pub struct TryIter;
        $(#[$into_iter_doc:meta])*
        pub struct IntoIter;
    ) => {
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
