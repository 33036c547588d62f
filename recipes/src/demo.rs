//! The demonstration routes of the HTTP examples and benchmarks: the same
//! routes as a handler of [`yieldloop_http`]'s server ([`http::demo`]) and
//! as a hyper service ([`hyper::demo`]).

pub mod http;
pub mod hyper;
