//! The board for agents: a Model Context Protocol server on `POST
//! {prefix}/mcp` (Streamable HTTP, JSON-RPC 2.0 answered as
//! `application/json`, never a stream), with two read-only tools,
//! `read_board` and `search_board` (`tools`). Pingora-free, like the rest
//! of the API: request parts and the body in, an [`ApiResponse`] out.
//!
//! Both eras on one endpoint ([`era`]): 2026-07-28 (stateless:
//! `server/discover`, per-request `_meta`) and the handshake revisions
//! 2025-06-18 and 2025-11-25 (`initialize`, `notifications/initialized`
//! answered `202`). No session id is ever issued, so any node of a fleet
//! answers any request.
//!
//! In order, before a method runs: an `Origin` that is not allowed
//! (`board_api.mcp.allowed_origins`) is `403`; a method other than `POST`
//! is `405` (`OPTIONS` is a CORS preflight for allowed origins); a body
//! over `board_api.mcp.max_body_bytes` is `413`; a body that is not one
//! JSON-RPC message is `400` ([`jsonrpc`]). Each of these answers with a
//! JSON-RPC error object whose `id` is `null`. Then the era's checks, and
//! the method: errors of a 2026-07-28 request take the status that
//! revision gives them (`404` for an unknown method, `400` for the
//! others); a handshake-era request's method errors are `200`, as that era
//! answered them.

pub mod era;
pub mod jsonrpc;

mod call;
mod read;
mod server;
mod tools;

/// `read_board`'s cursors as the tool reads them, for the fuzz target
/// (`internals` only; the cursor's form is not an interface).
#[cfg(feature = "internals")]
pub mod cursor {
    use super::read;
    use crate::api::error::ApiError;
    use crate::pipeline::markdown::pages::Paged;

    /// The renderer a cursor binds: this build's version.
    pub const RENDERER: &str = read::RENDERER;

    /// The digest of the arguments that chose the text.
    pub fn binding(selection: &str, board: Option<&str>, json: bool) -> String {
        read::binding(selection, board, json)
    }

    /// A cursor this build makes.
    pub fn encode(board_id: &str, version: &str, bound: &str, offset: usize) -> String {
        read::Cursor {
            renderer: RENDERER.to_owned(),
            board_id: board_id.to_owned(),
            version: version.to_owned(),
            bound: bound.to_owned(),
            offset,
        }
        .encode()
    }

    /// Where the page `cursor` asks for starts (see `read::resume`).
    ///
    /// # Errors
    /// The tool's refusal of the cursor.
    pub fn resume(
        cursor: &str,
        board_id: &str,
        version: &str,
        bound: &str,
    ) -> Result<usize, ApiError> {
        read::resume(cursor, board_id, version, bound)
    }

    /// The result core of the page of `paged` from `start`, as `read_board`
    /// writes it (the object's members, without braces).
    ///
    /// # Errors
    /// The tool's refusal of a start where no block starts.
    pub fn page_core(
        paged: &Paged,
        start: usize,
        max_chars: usize,
        board_id: &str,
        version: &str,
        bound: &str,
    ) -> Result<String, ApiError> {
        let next = |offset| encode(board_id, version, bound, offset);
        let shown = read::show(paged, start, max_chars, next)?;
        Ok(read::core(&shown, version, paged.title()))
    }
}

use super::respond::{ApiResponse, Served};
use super::timing::SERVER_TIMING;
use super::{BoardApi, RequestParts};
use bytes::Bytes;
use era::Era;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, StatusCode};
use jsonrpc::{RpcError, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND};
use tracing::Instrument as _;

/// The methods the endpoint allows (`Allow` on `405`, preflights).
const ALLOW: &str = "POST, OPTIONS";
/// Request headers a browser on an allowed origin may send.
const ALLOW_HEADERS: &str =
    "Content-Type, Accept, MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Session-Id, Last-Event-ID";

impl BoardApi {
    /// Answers a request to the MCP endpoint (see the module docs).
    pub(crate) async fn mcp(&self, req: &RequestParts<'_>) -> ApiResponse {
        let origin = req.headers.get(header::ORIGIN);
        if origin.is_some_and(|o| !self.mcp.allows_origin(o.as_bytes())) {
            let e = RpcError::new(None, INVALID_REQUEST, "Origin not allowed");
            return answer(StatusCode::FORBIDDEN, e.body(), None);
        }
        match *req.method {
            Method::POST => {}
            Method::OPTIONS => return preflight(req.headers, origin),
            _ => {
                let e = RpcError::new(
                    None,
                    INVALID_REQUEST,
                    "Method not allowed: POST one JSON-RPC message to this endpoint",
                );
                let mut response = answer(StatusCode::METHOD_NOT_ALLOWED, e.body(), origin);
                response
                    .headers
                    .insert(header::ALLOW, HeaderValue::from_static(ALLOW));
                return response;
            }
        }
        if req.body.len() > self.mcp.max_body_bytes {
            let e = RpcError::new(
                None,
                INVALID_REQUEST,
                format!("Request body over {} bytes", self.mcp.max_body_bytes),
            );
            return answer(StatusCode::PAYLOAD_TOO_LARGE, e.body(), origin);
        }
        let message = match jsonrpc::parse(req.body) {
            Ok(message) => message,
            // A message read whole whose `params` is not an object: an
            // error of the method's params, `200` in the handshake era.
            Err(e) if e.code == INVALID_PARAMS && era::handshake_by_headers(req.headers) => {
                return answer(StatusCode::OK, e.body(), origin)
            }
            Err(e) => return answer(StatusCode::BAD_REQUEST, e.body(), origin),
        };
        let rpc = method_label(&message.method);
        let era = match era::classify(&message, req.headers) {
            Ok(era) => era,
            Err(e) => {
                let mut response = answer(modern_status(e.code), e.body(), origin);
                self.metrics.mcp(rpc, "", "error");
                response.served.rpc = Some(rpc);
                return response;
            }
        };
        let Some(id) = message.id.clone() else {
            // A notification (`notifications/initialized`, a cancellation):
            // nothing to act on in a server without sessions.
            self.metrics.mcp(rpc, "", "accepted");
            let mut response = answer(StatusCode::ACCEPTED, Vec::new(), origin);
            response.headers.remove(header::CONTENT_TYPE);
            return response;
        };
        // `params._meta.traceparent`: the agent's own trace, continued.
        let meta_trace = message
            .meta()
            .and_then(|m| m.text("traceparent"))
            .and_then(|v| crate::trace::context::parse_traceparent(v.as_bytes()))
            .map(|parent| crate::trace::TraceContext::child_of(parent, None));
        let span = crate::trace::spans::mcp(rpc, meta_trace.as_ref());
        let mut served = Served {
            rpc: Some(rpc),
            trace_id: meta_trace.as_ref().map(|t| t.trace_id_hex()),
            ..Served::default()
        };
        let mut called = call::Called::default();
        let params = message.params.as_ref();
        let result = match (era, &*message.method) {
            (Era::Modern, "server/discover") => Ok(ResultText::Static(server::discover())),
            (_, "tools/list") => Ok(ResultText::Static(server::tools_list(era))),
            (Era::Handshake, "initialize") => Ok(ResultText::Owned(server::initialize(
                params.and_then(|p| p.protocol_version.as_deref()),
            ))),
            (Era::Handshake, "ping") => Ok(ResultText::Static(server::empty())),
            (_, "tools/call") => self
                .call_tool(params, req, &mut served, &mut called)
                .instrument(span)
                .await
                .map(ResultText::Tool),
            _ => Err(RpcError::new(
                None,
                METHOD_NOT_FOUND,
                "Method not found: this server answers server/discover, initialize, ping, tools/list and tools/call",
            )),
        };
        let tool = called.tool.map_or("", |t| t.name());
        let mut response = match result {
            Ok(result) => {
                let outcome = if called.failed { "tool_error" } else { "ok" };
                self.metrics.mcp(rpc, tool, outcome);
                let body = match &result {
                    ResultText::Static(result) => jsonrpc::result_body(&id, &[result]),
                    ResultText::Owned(result) => jsonrpc::result_body(&id, &[result]),
                    ResultText::Tool(core) => jsonrpc::result_body(&id, &call::result(era, core)),
                };
                answer(StatusCode::OK, body, origin)
            }
            Err(mut e) => {
                self.metrics.mcp(rpc, tool, "error");
                e.id = Some(id);
                let status = match era {
                    Era::Modern => modern_status(e.code),
                    Era::Handshake => StatusCode::OK,
                };
                answer(status, e.body(), origin)
            }
        };
        if let Some(timing) = called.timing {
            response.headers.insert(SERVER_TIMING, timing);
        }
        response.served = served;
        response
    }
}

/// A method's result object, as its JSON text.
enum ResultText {
    /// Written once at start-up (`server/discover`, `tools/list`, `ping`).
    Static(&'static [u8]),
    Owned(Vec<u8>),
    /// A tool result's core, wrapped for the era as it is written.
    Tool(Bytes),
}

/// The HTTP status a 2026-07-28 error takes (as the official SDKs map it).
fn modern_status(code: i64) -> StatusCode {
    match code {
        METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        jsonrpc::PARSE_ERROR
        | INVALID_REQUEST
        | jsonrpc::INVALID_PARAMS
        | jsonrpc::HEADER_MISMATCH
        | jsonrpc::UNSUPPORTED_PROTOCOL_VERSION => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

/// The method as metrics and the access log name it: one of those served,
/// `notification` for any other notification, else `other` (a client's
/// method name is never echoed into a label).
fn method_label(method: &str) -> &'static str {
    match method {
        "server/discover" => "server/discover",
        "initialize" => "initialize",
        "notifications/initialized" => "notifications/initialized",
        "ping" => "ping",
        "tools/list" => "tools/list",
        "tools/call" => "tools/call",
        m if m.starts_with("notifications/") => "notification",
        _ => "other",
    }
}

/// An answer with a JSON body (none for `202`): `no-store`, `nosniff`, and
/// for a request from an allowed browser origin, that origin in
/// `Access-Control-Allow-Origin`.
fn answer(status: StatusCode, body: Vec<u8>, origin: Option<&HeaderValue>) -> ApiResponse {
    let mut headers = HeaderMap::with_capacity(8);
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    cors(&mut headers, origin);
    ApiResponse {
        status,
        headers,
        body: Bytes::from(body),
        served: Served::default(),
    }
}

/// `Vary: Origin, Accept-Encoding`: the CORS headers follow `Origin`, and a
/// host's compression module (Pingora's in the binary) codes the JSON
/// body by `Accept-Encoding`. Saying both here spares that module
/// appending its own `Vary` line to every answer.
fn cors(headers: &mut HeaderMap, origin: Option<&HeaderValue>) {
    headers.insert(
        header::VARY,
        HeaderValue::from_static("Origin, Accept-Encoding"),
    );
    if let Some(origin) = origin {
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
        headers.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static("Server-Timing, X-Request-Id"),
        );
    }
}

/// `204` for a preflight from an allowed origin (or without one).
fn preflight(request: &HeaderMap, origin: Option<&HeaderValue>) -> ApiResponse {
    let mut response = answer(StatusCode::NO_CONTENT, Vec::new(), origin);
    response.headers.remove(header::CONTENT_TYPE);
    let h = &mut response.headers;
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static(ALLOW),
    );
    let asked = request
        .get(header::ACCESS_CONTROL_REQUEST_HEADERS)
        .filter(|v| !v.as_bytes().trim_ascii().is_empty())
        .cloned();
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        asked.unwrap_or(HeaderValue::from_static(ALLOW_HEADERS)),
    );
    h.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("86400"),
    );
    h.insert(
        header::VARY,
        HeaderValue::from_static("Origin, Access-Control-Request-Headers"),
    );
    response
}
