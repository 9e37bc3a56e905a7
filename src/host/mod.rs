//! The only Pingora-facing code.
//!
//! - [`seam`]: what a host gateway calls from its own `ProxyHttp`:
//!   [`BoardApi::handle`](crate::BoardApi::handle) from `request_filter`, and
//!   [`BoardApi::request_summary`](crate::BoardApi::request_summary) from
//!   `request_summary`.
//! - [`service`]: the standalone `ProxyHttp` service and the listeners the
//!   binary runs.

pub mod seam;
pub mod service;
