//! The shared board read API as a plugin of [pingap](https://github.com/vicanso/pingap),
//! the Pingora reverse proxy: category `shared_board_api`.
//!
//! A pingap binary links this crate and calls [`register`] first thing in
//! its `main()`; its configuration then names the plugin on a location:
//!
//! ```toml
//! [plugins.boards]
//! category = "shared_board_api"
//! config = "/etc/pingap/board_api.yaml"
//!
//! [locations.boards]
//! path = "/api"
//! plugins = ["boards"]
//! ```
//!
//! `config` is the path of a YAML file with a `board_api` section, the keys
//! of the standalone binary's configuration (its `server` section, which
//! pingap's own servers replace, is not required). The file is read and
//! checked when pingap builds the plugin, `pingap -t` included: a file that
//! fails the binary's checks is a plugin pingap refuses.
//!
//! The plugin answers every path under `board_api.prefix` (the unknown ones
//! with the API's `404 NOT_FOUND`) and hands every other path on to the
//! location's upstream and plugins. It reads a request's body only for the
//! MCP endpoint's `POST`, at most `board_api.mcp.max_body_bytes`. Plugins rebuilt from an unchanged file
//! (pingap rebuilds them when its configuration changes) share the API
//! already running, its cache included; when the file changed, the old API
//! ends (its work-pool threads exit, its cache is freed) once pingap drops
//! the last plugin that held it.
//!
//! With the `tracing` feature (for a pingap built with its own), pingap's
//! span for a request is the parent of the API's spans, and
//! `board_api.server.otlp` in the file exports them: one trace from the
//! caller through pingap to Milanote (docs/pingap.md).

use async_trait::async_trait;
use pingap_config::PluginConf;
use pingap_core::{Ctx, HttpResponse, Plugin, PluginStep, RequestPluginResult};
use pingap_plugin::{get_hash_key, get_plugin_factory, get_str_conf, Error};
use pingora_proxy::Session;
use shared_board_api::trace::context::Parent;
use shared_board_api::{ApiResponse, BoardApi, RequestParts};
use std::borrow::Cow;
use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

/// The plugin's category in pingap's configuration.
pub const CATEGORY: &str = "shared_board_api";

/// Registers the plugin with pingap's plugin factory. Call it once at the
/// start of `main()`, before pingap reads its configuration.
pub fn register() {
    get_plugin_factory().register(CATEGORY, |conf| Ok(Arc::new(BoardPlugin::new(conf)?)));
}

/// One `[plugins.NAME]` section of category `shared_board_api`.
pub struct BoardPlugin {
    api: Arc<BoardApi>,
    /// pingap's hash of the plugin's settings, its identity across reloads.
    hash: String,
}

impl BoardPlugin {
    /// Reads the plugin's settings: `config`, the path of the YAML file.
    ///
    /// # Errors
    /// `Error::Invalid` when `config` is missing, or when the file is
    /// unreadable or fails the checks of the binary's configuration (the
    /// message names the key).
    pub fn new(conf: &PluginConf) -> Result<Self, Error> {
        let invalid = |message: String| Error::Invalid {
            category: CATEGORY.to_string(),
            message,
        };
        let path = get_str_conf(conf, "config");
        if path.is_empty() {
            return Err(invalid(
                "config: the path of a YAML file with a board_api section is required".into(),
            ));
        }
        let api = BoardApi::shared_for_location(Path::new(&path))
            .map_err(|e| invalid(format!("{path}: {e}")))?;
        Ok(BoardPlugin {
            api,
            hash: get_hash_key(conf),
        })
    }
}

#[async_trait]
impl Plugin for BoardPlugin {
    fn config_key(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.hash)
    }

    async fn handle_request(
        &self,
        step: PluginStep,
        session: &mut Session,
        ctx: &mut Ctx,
    ) -> pingora_error::Result<RequestPluginResult> {
        if step != PluginStep::Request {
            return Ok(RequestPluginResult::Skipped);
        }
        let body = self.api.request_body(session).await;
        let req = session.req_header();
        let mut parts =
            RequestParts::new(&req.method, req.uri.path(), req.uri.query(), &req.headers)
                .with_client_ip(client_ip(session, ctx))
                .with_body(&body);
        if let Some(parent) = pingap_span(ctx) {
            parts = parts.with_trace_parent(parent);
        }
        Ok(match self.api.respond(parts).await {
            Some(answer) => RequestPluginResult::Respond(http_response(answer)),
            None => RequestPluginResult::Skipped,
        })
    }
}

/// pingap's span for this request, when pingap traces it (its `tracing`
/// feature and the server's `otlp_exporter`): the parent of the API's spans,
/// so that the collector sees one trace through pingap and the API.
#[cfg(feature = "tracing")]
fn pingap_span(ctx: &Ctx) -> Option<Parent> {
    use opentelemetry::trace::Span as _;
    let tracer = ctx.features.as_ref()?.otel_tracer.as_ref()?;
    let span = tracer.http_request_span.span_context();
    span.is_valid().then(|| Parent {
        trace_id: span.trace_id().to_bytes(),
        span_id: span.span_id().to_bytes(),
        flags: span.trace_flags().to_u8(),
    })
}

/// Without pingap's `tracing` feature, its request has no span: the API
/// continues the request's own `traceparent`, as the binary does.
#[cfg(not(feature = "tracing"))]
fn pingap_span(_: &Ctx) -> Option<Parent> {
    None
}

/// The client's address as pingap determined it (its trusted proxies
/// applied), else the connection's peer.
fn client_ip(session: &Session, ctx: &Ctx) -> Option<IpAddr> {
    ctx.conn
        .client_ip
        .as_deref()
        .and_then(|ip| ip.parse().ok())
        .or_else(|| {
            session
                .client_addr()
                .and_then(|a| a.as_inet())
                .map(|a| a.ip())
        })
}

/// The API's answer as pingap sends a plugin's response. pingap sets
/// `Content-Length` from the body (none for `204` and `304`, the GET's for
/// `HEAD`, whose body it does not send) and a `Cache-Control` that the
/// answer's own replaces. It replaces rather than appends a repeated header
/// name, so the values of one name travel as one comma-separated line, which
/// HTTP reads as the same field (RFC 9110 section 5.3).
fn http_response(answer: ApiResponse) -> HttpResponse {
    let mut headers: Vec<pingap_core::HttpHeader> = Vec::with_capacity(answer.headers.keys_len());
    for name in answer.headers.keys() {
        let mut values = answer.headers.get_all(name).iter();
        let Some(first) = values.next() else {
            continue;
        };
        let mut joined = first.clone();
        for more in values {
            let mut line = joined.as_bytes().to_vec();
            line.extend_from_slice(b", ");
            line.extend_from_slice(more.as_bytes());
            // Both parts were valid header values; so is their join.
            if let Ok(value) = http::HeaderValue::from_bytes(&line) {
                joined = value;
            }
        }
        headers.push((name.clone(), joined));
    }
    HttpResponse {
        status: answer.status,
        body: answer.body,
        headers: Some(headers),
        ..HttpResponse::default()
    }
}
