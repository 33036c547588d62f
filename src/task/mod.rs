//! What a task does, on top of the scheduler: pause, park, spawn other
//! tasks and wait for them, bound its waits with a deadline, keep values of
//! its own.
//!
//! - `suspend`: [`suspend`](crate::raw::suspend), the one way a task
//!   pauses, each pause narrowed to the enclosing `timeout` scope;
//! - `timeout`: [`timeout`](crate::timeout()) and
//!   [`timeout_at`](crate::timeout_at), a deadline over a piece of a task's
//!   code, which every pause inside it carries;
//! - `coop`: the cooperative budget, spent by each operation that could
//!   have paused and went ahead, and paid back by a pause once it is spent;
//! - `park`: park tokens, the one building block of every waiting
//!   primitive;
//! - `task_local`: values that belong to one task;
//! - `spawn`: [`spawn`](crate::spawn()), [`JoinHandle`](crate::JoinHandle)
//!   and [`run`](crate::run), which starts the first task;
//! - `scope`: [`scope`](crate::scope()), tasks that borrow from the task
//!   that opened the scope;
//! - `join_many`: [`join_all`](crate::join_all) and
//!   [`join_any`](crate::join_any), waiting for several tasks at once;
//! - `raw`: the pauses above as a public protocol, for primitives of your
//!   own.
//!
//! `raw` and `task_local` are public modules, re-exported by the crate
//! root under their own names; the rest reaches the root item by item.

pub(crate) mod coop;
pub(crate) mod join_many;
pub(crate) mod park;
pub mod raw;
pub(crate) mod scope;
pub(crate) mod spawn;
pub(crate) mod suspend;
pub mod task_local;
pub(crate) mod timeout;

// The macro is defined here rather than in `task_local.rs`: a macro
// exported from a module the root re-exports whole would be documented a
// second time inside it, under a path that does not exist.

/// Declares task-locals: each `static NAME: T = init;` becomes a
/// [`LocalKey<T>`](crate::task_local::LocalKey) whose value is made from `init` the first time
/// a task uses it and dropped when that task ends.
///
/// The syntax is that of [`std::thread_local!`]: several statics in one
/// invocation, each with its attributes (doc comments included) and
/// visibility. One more attribute is understood: `#[inherit]` makes tasks
/// spawned by a task that has a value for the key start with a clone of it
/// (see [`LocalKey`](crate::task_local::LocalKey)); it needs `T: Clone`.
///
/// # Examples
///
/// ```
/// use std::cell::{Cell, RefCell};
///
/// yieldloop::task_local! {
///     /// The request this task works for; spawned tasks carry it on.
///     #[inherit]
///     pub static REQUEST_ID: Cell<u64> = Cell::new(0);
///     /// Lines this task logged (each task its own).
///     static LOG: RefCell<Vec<String>> = RefCell::new(Vec::new());
/// }
///
/// yieldloop::run(|| {
///     REQUEST_ID.set(7);
///     LOG.with_borrow_mut(|log| log.push("parent".to_string()));
///     let child = yieldloop::spawn(|| {
///         // Inherited: the parent's 7. Not inherited: a fresh, empty log.
///         (REQUEST_ID.get(), LOG.with_borrow(|log| log.len()))
///     });
///     assert_eq!(child.join().unwrap(), (7, 0));
/// });
/// ```
///
/// `#[inherit]` needs a `Clone` type:
///
/// ```compile_fail
/// struct Connection;
/// yieldloop::task_local! {
///     #[inherit]
///     static CONN: Option<Connection> = None;
/// }
/// ```
#[macro_export]
macro_rules! task_local {
    () => {};
    ($(#[$($attr:tt)*])* $vis:vis static $name:ident : $t:ty = $init:expr; $($rest:tt)*) => {
        $crate::task_local!(@key [] [] $(#[$($attr)*])* ; $vis static $name : $t = $init);
        $crate::task_local!($($rest)*);
    };
    ($(#[$($attr:tt)*])* $vis:vis static $name:ident : $t:ty = $init:expr) => {
        $crate::task_local!(@key [] [] $(#[$($attr)*])* ; $vis static $name : $t = $init);
    };
    // One key: sort `#[inherit]` out of the attributes (the first bracket
    // keeps the others, the second says whether it was there), then write
    // the static.
    (@key [$($kept:tt)*] [$($inherit:tt)*] #[inherit] $($rest:tt)*) => {
        $crate::task_local!(@key [$($kept)*] [inherit] $($rest)*);
    };
    (@key [$($kept:tt)*] [$($inherit:tt)*] #[$($attr:tt)*] $($rest:tt)*) => {
        $crate::task_local!(@key [$($kept)* #[$($attr)*]] [$($inherit)*] $($rest)*);
    };
    (@key [$($kept:tt)*] [] ; $vis:vis static $name:ident : $t:ty = $init:expr) => {
        $($kept)*
        $vis static $name: $crate::task_local::LocalKey<$t> = {
            fn __init() -> $t {
                $init
            }
            $crate::task_local::LocalKey::__new(
                ::core::concat!(::core::module_path!(), "::", ::core::stringify!($name)),
                __init,
            )
        };
    };
    (@key [$($kept:tt)*] [inherit] ; $vis:vis static $name:ident : $t:ty = $init:expr) => {
        $($kept)*
        $vis static $name: $crate::task_local::LocalKey<$t> = {
            fn __init() -> $t {
                $init
            }
            $crate::task_local::LocalKey::__new_inherited(
                ::core::concat!(::core::module_path!(), "::", ::core::stringify!($name)),
                __init,
            )
        };
    };
}
