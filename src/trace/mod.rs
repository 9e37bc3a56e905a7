//! Traces: the W3C Trace Context a request arrives with ([`context`]), and
//! the names and fields of the spans this crate opens through the `tracing`
//! crate (`spans`), which a host's subscriber (`tracing-opentelemetry`)
//! or the binary's own exporter (`crate::otlp`, with the `demo` feature)
//! records.
//!
//! No span name, field or event carries a share link, permission id, token,
//! webhook URL or secret: spans name boards by id, jobs by their configured
//! id, and say how long and how much, never what was asked with.

pub mod context;
pub(crate) mod spans;

pub use context::TraceContext;
