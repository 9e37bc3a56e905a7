//! Traces over real sockets: the W3C `traceparent` a request arrives with
//! is continued (its trace id in the access log and in error bodies), a
//! malformed one starts a new trace and is never an error nor written
//! anywhere, an MCP message's `params._meta.traceparent` is its trace, and
//! nothing of a trace reaches the provider ([`context`]); the spans hold no
//! secret ([`secrets`]); the binary exports them to a real collector
//! ([`export`], over [`collector`]), as does a location of pingap's with a
//! dispatch of its own under the host's span ([`scoped`]), and a slow or
//! absent collector holds no request ([`backpressure`]).

mod backpressure;
pub(crate) mod collector;
mod context;
pub(crate) mod export;
mod scoped;
mod secrets;
