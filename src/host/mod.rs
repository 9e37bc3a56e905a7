//! The only Pingora-facing code.
//!
//! - The seam (private module, methods on [`BoardApi`](crate::BoardApi)):
//!   [`BoardApi::handle`](crate::BoardApi::handle) from a host's
//!   `request_filter` (or [`BoardApi::serve`](crate::BoardApi::serve), which
//!   also reports what a host's access log wants: [`Answered`]), and
//!   [`BoardApi::request_summary`](crate::BoardApi::request_summary) from its
//!   `request_summary`.
//! - [`service`]: the standalone `ProxyHttp` service and its listeners, what
//!   the binary runs, with its access log (`access_log`) and the operator
//!   listener's probes (`probes`), and the connections' time limits
//!   (`edge`).
//! - [`upgrade`]: the binary's signal handling, which hands the listening
//!   sockets over only to a process that waits for them.

pub(crate) mod access_log;
mod edge;
mod operator_guard;
pub mod preflight;
mod probes;
mod registry;
mod seam;
pub mod service;
pub mod upgrade;

pub use seam::{Answered, BODY_DEADLINE, CLIENT_GONE};
