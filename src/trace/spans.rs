//! The spans this crate opens, in one place so their names and fields are
//! seen together: what each says, and that none says anything secret.
//!
//! | span | opened by | fields |
//! |---|---|---|
//! | `shared_board_api.request` | `BoardApi::respond` | `route`, `status`, `cache`, `bytes`, the trace ids |
//! | `shared_board_api.mcp` | an MCP message (in its `_meta.traceparent`'s trace, when valid) | `rpc` |
//! | `shared_board_api.load` | the store, for a board not in the process cache | `board`, `tier`, `outcome` |
//! | `shared_board_api.admission` | a cold load waiting for its slot (the lock wait) | |
//! | `shared_board_api.upstream` | the provider fetch of a cold load | `requests` |
//! | `shared_board_api.build` | building the document on the work pool | |
//! | `shared_board_api.render` | a render not in the cache | `representation` |
//! | `shared_board_api.watch.run` | one run of a watch job | `job`, `outcome`, the trace ids |
//! | `shared_board_api.watch.delivery` | one webhook attempt | `job`, `attempt`, `outcome` |
//! | `shared_board_api.live.poll` | a live stream's fresh load of a board | `board`, `outcome` |
//!
//! A span that starts a trace here, or continues a caller's, carries its
//! W3C ids as fields (`trace_id`, `span_id`, `parent_span_id`, `sampled`,
//! `trace_state`): the binary's exporter reads them to place the span in
//! the caller's trace; a host's subscriber sees them as plain attributes.
//! Every other span is a child of the span current where it opens, as
//! `tracing` makes it: `shared_board_api.request` is the child of the host's
//! span for the request.

use super::TraceContext;
use tracing::field::Empty;
use tracing::Span;

/// `shared_board_api.request`, a child of the host's current span.
pub fn request(trace: &TraceContext) -> Span {
    tracing::info_span!(
        "shared_board_api.request",
        route = Empty,
        status = Empty,
        cache = Empty,
        bytes = Empty,
        trace_id = %Hex(&trace.trace_id),
        span_id = %Hex(&trace.span_id),
        parent_span_id = trace.parent_id.as_ref().map(|p| display(Hex(p))),
        sampled = trace.sampled,
        trace_state = state(trace),
    )
}

/// `shared_board_api.watch.run`: a run of job `job` (its configured id), the root
/// of a trace of its own.
pub fn watch_run(job: &str, trace: &TraceContext) -> Span {
    tracing::info_span!(
        parent: None,
        "shared_board_api.watch.run",
        job = job,
        outcome = Empty,
        trace_id = %Hex(&trace.trace_id),
        span_id = %Hex(&trace.span_id),
        sampled = trace.sampled,
    )
}

/// `shared_board_api.mcp`: one JSON-RPC message (`rpc`, the method's label),
/// placed in the trace of its `params._meta.traceparent` when it has a
/// valid one, else simply a child of the request's span.
pub fn mcp(rpc: &'static str, trace: Option<&TraceContext>) -> Span {
    tracing::info_span!(
        "shared_board_api.mcp",
        rpc = rpc,
        trace_id = trace.map(|t| display(Hex(&t.trace_id))),
        span_id = trace.map(|t| display(Hex(&t.span_id))),
        parent_span_id = trace
            .and_then(|t| t.parent_id.as_ref())
            .map(|p| display(Hex(p))),
        sampled = trace.map(|t| t.sampled),
    )
}

/// `shared_board_api.watch.delivery`: one attempt of a delivery of job `job`,
/// in the trace of the run that queued it (`traceparent`, as stored) when
/// it has one, else in the current span.
pub fn watch_delivery(job: &str, attempt: u32, traceparent: Option<&str>) -> Span {
    let placed = traceparent
        .and_then(|t| super::context::parse_traceparent(t.as_bytes()))
        .map(|parent| TraceContext::child_of(parent, None));
    let placed = placed.as_ref();
    tracing::info_span!(
        parent: None,
        "shared_board_api.watch.delivery",
        job = job,
        attempt = attempt,
        outcome = Empty,
        trace_id = placed.map(|t| display(Hex(&t.trace_id))),
        span_id = placed.map(|t| display(Hex(&t.span_id))),
        parent_span_id = placed.and_then(|t| t.parent_id.as_ref()).map(|p| display(Hex(p))),
        sampled = placed.map(|t| t.sampled),
    )
}

/// `shared_board_api.live.poll`: a live stream's fresh load of board `board`.
pub fn live_poll(board: &str) -> Span {
    tracing::info_span!(
        parent: None,
        "shared_board_api.live.poll",
        board = board,
        outcome = Empty
    )
}

/// `shared_board_api.load`: a board read below the process cache (the fleet
/// tier, else the provider), by board id.
pub fn load(board: &str) -> Span {
    tracing::info_span!(
        "shared_board_api.load",
        board = board,
        tier = Empty,
        outcome = Empty
    )
}

/// Records how the current `shared_board_api.load` ended: the tier that
/// answered (`shared` or `provider`, when it did) and `ok` or the error's
/// kind.
pub fn loaded(tier: Option<&'static str>, outcome: &'static str) {
    let span = Span::current();
    if span.is_disabled() {
        return;
    }
    if let Some(tier) = tier {
        span.record("tier", tier);
    }
    span.record("outcome", outcome);
}

/// The caller's `tracestate`, as text.
fn state(trace: &TraceContext) -> Option<&str> {
    trace.state.as_ref().and_then(|s| s.to_str().ok())
}

/// Bytes as lower-case hex, written straight into the field's formatter.
pub struct Hex<'a>(pub &'a [u8]);

impl std::fmt::Display for Hex<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

/// Records what an answer was on its `shared_board_api.request` span:
/// status, body bytes, the cache level that answered.
pub fn answered(span: &Span, status: u16, bytes: usize, cache: Option<&'static str>) {
    if span.is_disabled() {
        return;
    }
    span.record("status", status);
    span.record("bytes", bytes);
    if let Some(cache) = cache {
        span.record("cache", cache);
    }
}

/// Records the route (an endpoint's name, never the path or query) on the
/// current `shared_board_api.request` span.
pub fn route(name: &'static str) {
    Span::current().record("route", name);
}
