//! Traces over real sockets: the W3C `traceparent` a request arrives with
//! is continued (its trace id in the access log and in error bodies), a
//! malformed one starts a new trace and is never an error nor written
//! anywhere, an MCP message's `params._meta.traceparent` is its trace, and
//! nothing of a trace reaches the provider ([`context`]); the spans hold no
//! secret ([`secrets`]).

mod context;
mod secrets;
