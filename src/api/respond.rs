//! Step 8's last part and every early answer: the JSON envelope, the error
//! catalogue's bodies, `Cache-Control`, CORS, the weak ETag and `304`
//! Pure: produces an [`ApiResponse`], no Pingora types.

use super::error::ApiError;
use super::request_id::RequestIds;
use super::route::{ALLOW, BOARD_ALLOW};
use crate::document::Completeness;
use crate::encoding::Encoding;
use crate::pipeline::{Rendered, Representation};
use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::StatusCode;

pub const SUCCESS_CACHE_CONTROL: &str = "public, max-age=60, stale-while-revalidate=300";
pub const ERROR_CACHE_CONTROL: &str = "no-store";
const JSON: &str = "application/json; charset=utf-8";
/// The header that says whether every nested board of the answer's board
/// was loaded: `complete`, or `partial; unloaded=<n>`.
pub const BOARD_COMPLETENESS: &str = "board-completeness";
/// `Vary` of every answer of the read endpoints: the body depends on the
/// request's `Accept` and `Accept-Encoding`.
const VARY_ACCEPT: &str = "Accept, Accept-Encoding";
/// The response headers scripts on other origins may read.
pub const EXPOSE_HEADERS: &str =
    "ETag, Server-Timing, Board-Completeness, Board-Version, X-Request-Id, Content-Disposition";
/// The board version of an answer's board (see `pipeline::version`).
pub const BOARD_VERSION: &str = "board-version";
/// Preflight answers allow this request header when the browser names none.
const DEFAULT_ALLOW_HEADERS: &str = "If-None-Match";

/// A complete answer of [`BoardApi::respond`](crate::BoardApi::respond),
/// ready for any HTTP stack. `body` is what a GET would carry; a HEAD
/// answer has the same headers and the host drops the body. `headers` has
/// no `Content-Length`: the host's stack sets it from the body it sends.
/// Built by the crate only; fields may be added (`#[non_exhaustive]`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ApiResponse {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// What an access log wants to know beside status and size.
    pub served: Served,
}

/// Facts about an answered request for an access log, free of secrets:
/// which level of the store answered and which board was asked for (its
/// id, never the permission id). Set on errors from the load on too (a
/// board the provider refused, a provider failure); empty for answers that
/// read no board (errors before the fetch, preflights, the playground).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Served {
    /// `hit`, `shared`, `miss` or `coalesced`, as in `Server-Timing`.
    pub cache: Option<&'static str>,
    /// The board id of the share link.
    pub board: Option<std::sync::Arc<str>>,
    /// An MCP request: the JSON-RPC method (one of those served, or
    /// `other`), and the tool of a `tools/call`. Never its arguments.
    pub rpc: Option<&'static str>,
    pub tool: Option<&'static str>,
    /// The answer's `X-Request-Id` (the client's, or one minted); set on
    /// every answer of [`BoardApi::respond`](crate::BoardApi::respond).
    pub request_id: Option<HeaderValue>,
    /// The request's W3C trace id, 32 lower-case hex digits: the caller's
    /// (`traceparent`) or one started here; set with `request_id`.
    pub trace_id: Option<String>,
}

impl Served {
    /// The facts of an answer that read no board: its two ids.
    pub fn of(ids: &RequestIds) -> Self {
        Served {
            request_id: Some(ids.request_id.clone()),
            trace_id: Some(ids.trace.trace_id_hex()),
            ..Served::default()
        }
    }
}

impl ApiResponse {
    fn new(status: StatusCode) -> Self {
        // Room for every header an answer carries, so the map is allocated
        // once instead of grown on the hot path.
        let mut headers = HeaderMap::with_capacity(12);
        cors(&mut headers);
        // Every answer, 304 and preflight included: a browser never sniffs a
        // JSON body (or an error echoing a parameter) into something active.
        headers.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        ApiResponse {
            status,
            headers,
            body: Bytes::new(),
            served: Served::default(),
        }
    }

    fn set(&mut self, name: HeaderName, value: &'static str) {
        self.headers.insert(name, HeaderValue::from_static(value));
    }

    /// Whether this status ever carries a body (204 and 304 never do).
    pub fn has_body(&self) -> bool {
        !matches!(
            self.status,
            StatusCode::NO_CONTENT | StatusCode::NOT_MODIFIED
        )
    }
}

/// The CORS headers every response of our endpoints carries.
fn cors(headers: &mut HeaderMap) {
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    headers.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(EXPOSE_HEADERS),
    );
}

/// The headers of an event stream (`/changes` with `Accept:
/// text/event-stream`) that opened at board version `version`: its type,
/// `no-store`, no buffering by a proxy in front (`X-Accel-Buffering: no`),
/// `Board-Version`, and what every answer of the endpoint carries: `Vary`
/// (the same URL answers JSON, Markdown or a feed by `Accept`), `nosniff`
/// and CORS. Kept by the connection for as long as the stream lasts, so
/// no more than that: not `Board-Completeness` nor `Server-Timing`, which
/// would take the header map past 12 entries and double it (1.2 to 2.5 KB
/// a stream, `benches/live_heaptrack.sh`).
pub(crate) fn stream_headers(version: &str) -> HeaderMap {
    let mut headers = HeaderMap::with_capacity(8);
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        http::HeaderName::from_static("x-accel-buffering"),
        HeaderValue::from_static("no"),
    );
    // 32 hex digits: always a valid value.
    if let Ok(value) = HeaderValue::from_str(version) {
        headers.insert(http::HeaderName::from_static(BOARD_VERSION), value);
    }
    headers.insert(header::VARY, HeaderValue::from_static(VARY_ACCEPT));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    cors(&mut headers);
    headers
}

/// `{"ok":false,"error":{"code","message","field"?,"hint"?,"requestId","traceId"}}`
/// with `no-store`; `requestId` is the answer's `X-Request-Id`, which the
/// caller sets (see [`stamp`]), `traceId` the request's trace.
pub fn error(err: &ApiError, ids: &RequestIds) -> ApiResponse {
    let mut response = ApiResponse::new(err.status());
    response.set(header::CONTENT_TYPE, JSON);
    response.set(header::CACHE_CONTROL, ERROR_CACHE_CONTROL);
    match err {
        ApiError::MethodNotAllowed => response.set(header::ALLOW, ALLOW),
        ApiError::PostOnly => response.set(header::ALLOW, BOARD_ALLOW),
        ApiError::RateLimited { retry_after } | ApiError::Overloaded { retry_after } => {
            let secs = retry_after.as_secs().max(1);
            response
                .headers
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        _ => {}
    }
    let mut error = serde_json::Map::new();
    error.insert("code".into(), err.code().into());
    error.insert("message".into(), err.message().into());
    if let Some(field) = err.field() {
        error.insert("field".into(), field.into());
    }
    if let Some(hint) = err.hint() {
        error.insert("hint".into(), hint.into());
    }
    // Checked to be ASCII (see `request_id`), so never lossy.
    let id = String::from_utf8_lossy(ids.request_id.as_bytes());
    error.insert("requestId".into(), id.into());
    error.insert("traceId".into(), ids.trace.trace_id_hex().into());
    let body = serde_json::json!({ "ok": false, "error": error });
    response.body = Bytes::from(body.to_string());
    response
}

/// Stamps `ids` on an answer: the `X-Request-Id` header, and the served
/// facts an access log reads (the request id and the trace id).
pub fn stamp(response: &mut ApiResponse, ids: &RequestIds) {
    response
        .headers
        .insert(super::request_id::X_REQUEST_ID, ids.request_id.clone());
    response.served.request_id = Some(ids.request_id.clone());
    // An MCP message in a trace of its own (`params._meta.traceparent`)
    // keeps that one.
    if response.served.trace_id.is_none() {
        response.served.trace_id = Some(ids.trace.trace_id_hex());
    }
}

/// `204` CORS preflight: allows the headers the browser asked for, else
/// `If-None-Match`. `no-store`: an answer to `OPTIONS` is not for HTTP
/// caches (a browser keeps a preflight by `Access-Control-Max-Age`, which
/// `Cache-Control` does not touch), and an answer that names its own
/// `Cache-Control` is the same through any host (pingap gives an answer
/// without one `private, no-cache`).
pub fn preflight(request_headers: &HeaderMap) -> ApiResponse {
    preflight_for(request_headers, ALLOW, DEFAULT_ALLOW_HEADERS)
}

/// [`preflight`] for a route with its own methods (`POST {prefix}/board`:
/// `POST, OPTIONS`) and the request headers allowed when the browser names
/// none.
pub fn preflight_for(
    request_headers: &HeaderMap,
    methods: &'static str,
    default_headers: &'static str,
) -> ApiResponse {
    let mut response = ApiResponse::new(StatusCode::NO_CONTENT);
    response.set(header::CACHE_CONTROL, ERROR_CACHE_CONTROL);
    response.set(header::ACCESS_CONTROL_ALLOW_METHODS, methods);
    let allow_headers = request_headers
        .get(header::ACCESS_CONTROL_REQUEST_HEADERS)
        .filter(|v| !v.as_bytes().trim_ascii().is_empty())
        .cloned()
        .unwrap_or(HeaderValue::from_static(default_headers));
    response
        .headers
        .insert(header::ACCESS_CONTROL_ALLOW_HEADERS, allow_headers);
    response.set(header::ACCESS_CONTROL_MAX_AGE, "86400");
    response.set(header::VARY, "Access-Control-Request-Headers");
    response
}

/// Whether the request's `If-None-Match` matches `etag` (RFC 9110 weak
/// comparison, lists and `*`). Several header lines are one comma-separated
/// list (RFC 9110 section 5.3), so each line is a part of it and any match
/// counts.
fn if_none_match(request_headers: &HeaderMap, etag: &HeaderValue) -> bool {
    request_headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .any(|line| {
            pingora_core::protocols::http::conditional_filter::weak_validate_etag(
                line.as_bytes(),
                etag.as_bytes(),
            )
        })
}

/// The `Board-Completeness` value of a board as complete as `completeness`.
fn completeness_header(completeness: Completeness) -> HeaderValue {
    if completeness.is_complete() {
        return HeaderValue::from_static("complete");
    }
    // ASCII letters, digits and `; =`: always a valid value.
    HeaderValue::try_from(completeness.to_string())
        .unwrap_or_else(|_| HeaderValue::from_static("partial"))
}

/// `200` with the body in `representation` and its weak ETag, or `304`
/// when the request's `If-None-Match` matches it. Both carry
/// `Vary: Accept, Accept-Encoding`: the body depends on both; and both say
/// how complete the board is (`Board-Completeness`). `encoding` is the coding `rendered.body` is
/// already in (`Content-Encoding` on a `200`); Pingora's compression module
/// leaves a response that has one alone.
pub fn success(
    rendered: &Rendered,
    representation: Representation,
    encoding: Encoding,
    completeness: Completeness,
    request_headers: &HeaderMap,
) -> ApiResponse {
    let not_modified = if_none_match(request_headers, &rendered.etag);
    let mut response = ApiResponse::new(if not_modified {
        StatusCode::NOT_MODIFIED
    } else {
        StatusCode::OK
    });
    response.headers.insert(header::ETAG, rendered.etag.clone());
    response.headers.insert(
        HeaderName::from_static(BOARD_COMPLETENESS),
        completeness_header(completeness),
    );
    response.set(header::CACHE_CONTROL, SUCCESS_CACHE_CONTROL);
    response.set(header::VARY, VARY_ACCEPT);
    if !not_modified {
        response.set(header::CONTENT_TYPE, representation.content_type());
        if let Some(token) = encoding.token() {
            response.set(header::CONTENT_ENCODING, token);
        }
        response.body = rendered.body.clone();
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::render;
    use serde_json::{json, Value};

    fn err(e: &ApiError) -> ApiResponse {
        let mut headers = HeaderMap::new();
        headers.insert(
            "traceparent",
            HeaderValue::from_static("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        );
        let mut ids = RequestIds::for_request(&headers);
        ids.request_id = HeaderValue::from_static("t-1");
        error(e, &ids)
    }

    fn header<'a>(r: &'a ApiResponse, name: &str) -> Option<&'a str> {
        r.headers.get(name).and_then(|v| v.to_str().ok())
    }

    #[test]
    fn error_envelope_and_headers() {
        let r = err(&ApiError::invalid_request("view", "bad view"));
        assert_eq!(r.status, 400);
        assert_eq!(header(&r, "cache-control"), Some("no-store"));
        assert_eq!(header(&r, "access-control-allow-origin"), Some("*"));
        assert_eq!(
            header(&r, "access-control-expose-headers"),
            Some(EXPOSE_HEADERS)
        );
        assert_eq!(header(&r, "content-type"), Some(JSON));
        assert_eq!(header(&r, "etag"), None);
        let body: Value = serde_json::from_slice(&r.body).expect("json");
        assert_eq!(
            body,
            json!({"ok": false, "error": {"code": "INVALID_REQUEST", "message": "bad view", "field": "view", "requestId": "t-1", "traceId": "4bf92f3577b34da6a3ce929d0e0e4736"}})
        );
        let r = err(&ApiError::BoardNotFound);
        let body: Value = serde_json::from_slice(&r.body).expect("json");
        assert_eq!(body["error"].get("field"), None);
        assert_eq!(body["error"]["code"], "BOARD_NOT_FOUND");
    }

    #[test]
    fn method_not_allowed_names_allow_and_rate_limit_retry_after() {
        let r = err(&ApiError::MethodNotAllowed);
        assert_eq!((r.status.as_u16(), header(&r, "allow")), (405, Some(ALLOW)));
        let r = err(&ApiError::RateLimited {
            retry_after: std::time::Duration::from_millis(10),
        });
        assert_eq!(
            (r.status.as_u16(), header(&r, "retry-after")),
            (429, Some("1"))
        );
        let r = err(&ApiError::Overloaded {
            retry_after: std::time::Duration::from_secs(2),
        });
        assert_eq!(
            (r.status.as_u16(), header(&r, "retry-after")),
            (503, Some("2"))
        );
        assert_eq!(header(&r, "cache-control"), Some("no-store"));
        assert_eq!(header(&r, "access-control-allow-origin"), Some("*"));
        let body: Value = serde_json::from_slice(&r.body).expect("json");
        assert_eq!(body["error"]["code"], "OVERLOADED");
    }

    #[test]
    fn preflight_echoes_requested_headers() {
        let mut req = HeaderMap::new();
        let r = preflight(&req);
        assert_eq!(r.status, 204);
        assert_eq!(
            header(&r, "access-control-allow-headers"),
            Some("If-None-Match")
        );
        assert_eq!(header(&r, "access-control-allow-methods"), Some(ALLOW));
        assert_eq!(header(&r, "access-control-max-age"), Some("86400"));
        assert_eq!(header(&r, "access-control-allow-origin"), Some("*"));
        assert_eq!(header(&r, "cache-control"), Some("no-store"));
        req.insert(
            header::ACCESS_CONTROL_REQUEST_HEADERS,
            HeaderValue::from_static("if-none-match, x-custom"),
        );
        let r = preflight(&req);
        assert_eq!(
            header(&r, "access-control-allow-headers"),
            Some("if-none-match, x-custom")
        );
        assert!(r.body.is_empty() && !r.has_body());
    }

    #[test]
    fn success_envelope_etag_and_304() {
        let data =
            json!({"version": 1, "fetchedAt": "2026-01-01T00:00:00.000Z", "board": {"id": "b"}});
        let ok = |e: &'static str, sel: &str, d: &Value, inm: Option<&HeaderValue>| {
            let mut headers = HeaderMap::new();
            if let Some(inm) = inm {
                headers.insert(header::IF_NONE_MATCH, inm.clone());
            }
            success(
                &render(e, sel, d).expect("renders"),
                Representation::Json,
                Encoding::Identity,
                Completeness::default(),
                &headers,
            )
        };
        let r = ok("detail", "full", &data, None);
        assert_eq!(r.status, 200);
        assert_eq!(header(&r, "cache-control"), Some(SUCCESS_CACHE_CONTROL));
        let body: Value = serde_json::from_slice(&r.body).expect("json");
        assert_eq!(body, json!({"ok": true, "data": data}));
        let etag = r.headers.get("etag").expect("etag").clone();
        let tag = etag.to_str().expect("ascii");
        assert!(tag.starts_with("W/\"") && tag.len() == 3 + 32 + 1, "{tag}");

        // fetchedAt does not change the ETag; anything else does.
        let refetched =
            json!({"version": 1, "fetchedAt": "2027-01-01T00:00:00.000Z", "board": {"id": "b"}});
        let again = ok("detail", "full", &refetched, None);
        assert_eq!(again.headers.get("etag"), Some(&etag));
        let changed =
            json!({"version": 1, "fetchedAt": "2026-01-01T00:00:00.000Z", "board": {"id": "c"}});
        let other = [
            ok("search", "full", &data, None),
            ok("detail", "compact", &data, None),
            ok("detail", "full", &changed, None),
        ];
        for r in other {
            assert_ne!(r.headers.get("etag"), Some(&etag));
        }

        for inm in [
            tag.to_string(),
            tag[2..].to_string(),
            format!("\"x\", {tag}"),
            "*".into(),
        ] {
            let inm = HeaderValue::from_str(&inm).expect("header");
            let r = ok("detail", "full", &data, Some(&inm));
            assert_eq!(r.status, 304, "{inm:?}");
            assert!(r.body.is_empty());
            assert_eq!(r.headers.get("etag"), Some(&etag));
            assert_eq!(header(&r, "cache-control"), Some(SUCCESS_CACHE_CONTROL));
            assert_eq!(header(&r, "access-control-allow-origin"), Some("*"));
            assert_eq!(header(&r, BOARD_COMPLETENESS), Some("complete"));
        }
        let rendered = render("detail", "full", &data).expect("renders");
        let gz = success(
            &rendered,
            Representation::Json,
            Encoding::Gzip,
            Completeness::default(),
            &HeaderMap::new(),
        );
        assert_eq!(header(&gz, "content-encoding"), Some("gzip"));
        assert_eq!(gz.headers.get("etag"), Some(&etag));
        let mut inm = HeaderMap::new();
        inm.insert(header::IF_NONE_MATCH, etag.clone());
        let not_modified = success(
            &rendered,
            Representation::Json,
            Encoding::Gzip,
            Completeness::default(),
            &inm,
        );
        assert_eq!(not_modified.status, 304);
        assert_eq!(header(&not_modified, "content-encoding"), None);
        let stale = HeaderValue::from_static("W/\"0123\"");
        let r = ok("detail", "full", &data, Some(&stale));
        assert_eq!(r.status, 200);
        assert_eq!(header(&r, BOARD_COMPLETENESS), Some("complete"));
    }

    #[test]
    fn partial_boards_say_how_many_boards_are_missing_on_200_and_304() {
        let rendered = render("detail", "full", &json!({"version": 1})).expect("renders");
        let partial = Completeness {
            unloaded: 3,
            transient: true,
        };
        let ok = success(
            &rendered,
            Representation::Json,
            Encoding::Identity,
            partial,
            &HeaderMap::new(),
        );
        let mut inm = HeaderMap::new();
        inm.insert(header::IF_NONE_MATCH, rendered.etag.clone());
        let not_modified = success(
            &rendered,
            Representation::Json,
            Encoding::Identity,
            partial,
            &inm,
        );
        for (r, status) in [(ok, 200), (not_modified, 304)] {
            assert_eq!(r.status, status);
            assert_eq!(header(&r, BOARD_COMPLETENESS), Some("partial; unloaded=3"));
            assert_eq!(
                header(&r, "access-control-expose-headers"),
                Some(EXPOSE_HEADERS)
            );
        }
    }

    #[test]
    fn if_none_match_on_several_lines_is_one_list() {
        let data = json!({"version": 1, "board": {"id": "b"}});
        let rendered = render("search", "compact", &data).expect("renders");
        let lines = |values: &[&str]| {
            let mut headers = HeaderMap::new();
            for v in values {
                headers.append(
                    header::IF_NONE_MATCH,
                    HeaderValue::from_str(v).expect("header"),
                );
            }
            success(
                &rendered,
                Representation::Json,
                Encoding::Identity,
                Completeness::default(),
                &headers,
            )
            .status
            .as_u16()
        };
        let tag = rendered.etag.to_str().expect("ascii");
        let strong = &tag[2..];
        // The match on the second or third line counts as on the first.
        assert_eq!(lines(&["\"a\"", tag]), 304);
        assert_eq!(lines(&["\"a\", W/\"b\"", "\"c\"", strong]), 304);
        assert_eq!(lines(&[tag, "\"a\""]), 304);
        assert_eq!(lines(&["\"a\"", "*"]), 304);
        assert_eq!(lines(&["\"a\"", "W/\"b\""]), 200);
        assert_eq!(lines(&[]), 200);
    }

    #[test]
    fn every_answer_says_nosniff() {
        let data = json!({"version": 1});
        let rendered = render("detail", "full", &data).expect("renders");
        let mut inm = HeaderMap::new();
        inm.insert(header::IF_NONE_MATCH, rendered.etag.clone());
        let answers = [
            success(
                &rendered,
                Representation::Json,
                Encoding::Identity,
                Completeness::default(),
                &HeaderMap::new(),
            ),
            success(
                &rendered,
                Representation::Json,
                Encoding::Identity,
                Completeness::default(),
                &inm,
            ),
            preflight(&HeaderMap::new()),
            err(&ApiError::NotFound),
            err(&ApiError::MethodNotAllowed),
            err(&ApiError::UpstreamTimeout),
        ];
        for r in answers {
            assert_eq!(
                header(&r, "x-content-type-options"),
                Some("nosniff"),
                "{}",
                r.status
            );
        }
    }
}
