//! [`RequestParts`]: the parts of a request the API reads, from any HTTP
//! stack, and its redacted summary for a log line.

use crate::trace::context::Parent;
use http::{HeaderMap, Method};
use std::net::IpAddr;

/// A request as [`BoardApi::respond`](super::BoardApi::respond) reads it,
/// from any HTTP stack: the parts the pipeline reads and nothing else (the
/// caller's cookies and authorization are never forwarded anywhere).
///
/// Built with [`RequestParts::new`] and the `with_*` methods; fields may be
/// added (the struct is `#[non_exhaustive]`), each with a method and a
/// default that keeps today's behaviour.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct RequestParts<'a> {
    pub method: &'a Method,
    /// The path, without query.
    pub path: &'a str,
    /// The raw query, without `?`.
    pub query: Option<&'a str>,
    pub headers: &'a HeaderMap,
    /// The client's address, for the optional rate limit. `None` unless set.
    pub client_ip: Option<IpAddr>,
    /// The request body, empty unless set: only a `POST` to the MCP
    /// endpoint or to `{prefix}/board` has one this API reads (see
    /// [`BoardApi::body_limit`](super::BoardApi::body_limit)); the host
    /// passes at most one byte over the limit.
    pub body: &'a [u8],
    /// The host's own span, the parent of this request's spans in place of
    /// the request's `traceparent`. `None` unless set.
    pub trace_parent: Option<Parent>,
}

impl<'a> RequestParts<'a> {
    /// The request line and headers; no client address and an empty body.
    pub fn new(
        method: &'a Method,
        path: &'a str,
        query: Option<&'a str>,
        headers: &'a HeaderMap,
    ) -> Self {
        RequestParts {
            method,
            path,
            query,
            headers,
            client_ip: None,
            body: &[],
            trace_parent: None,
        }
    }

    /// The client's address, as the host determined it (the peer, or the
    /// one a trusted proxy reported).
    pub fn with_client_ip(mut self, ip: Option<IpAddr>) -> Self {
        self.client_ip = ip;
        self
    }

    /// The request body as the host read it.
    pub fn with_body(mut self, body: &'a [u8]) -> Self {
        self.body = body;
        self
    }

    /// The host's span for this request, which continues the trace its
    /// caller sent or started one: the API's spans become its children,
    /// and the request's own `traceparent` (which the host read already) is
    /// not read again. A host that traces each request itself sets it
    /// (pingap with its `tracing` feature).
    pub fn with_trace_parent(mut self, parent: Parent) -> Self {
        self.trace_parent = Some(parent);
        self
    }

    /// The request line for a log, the query replaced by `[redacted]`
    /// however it is encoded (the `url` parameter carries the permission
    /// id): `GET /api/detail?[redacted]`.
    pub fn summary(&self) -> String {
        let query = if self.query.is_some() {
            "?[redacted]"
        } else {
            ""
        };
        format!("{} {}{query}", self.method, self.path)
    }
}
