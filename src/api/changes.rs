//! `GET {prefix}/changes?url=<share link>&since=<version>`: what changed on
//! a board since a version a client saw. The board is loaded as
//! `/api/detail` loads it (cache, coalescing, fleet tier, limits, errors),
//! so the permission check is the current load's: without a link that
//! opens the board now, no kept version of it is read. Then the kept
//! version `since` is compared with the board now
//! ([`crate::pipeline::changes`]) on the work pool, and the answer cached
//! with the document like a render. The MCP `board_changes` tool answers
//! through `BoardApi::changes_of` too. Without `since`, a request that asks
//! for a feed by `Accept` is answered by `api::feed`.

use super::error::ApiError;
use super::params::{unknown_parameter, url_value};
use super::respond::{self, ApiResponse, Served};
use super::route::{self, MethodAction};
use super::share_link::{self, ShareLink};
use super::{accept, timing, BoardApi, RequestParts};
use crate::encoding::Encoding;
use crate::pipeline::render::Rendered;
use crate::pipeline::version::is_version;
use crate::pipeline::{changes, Representation};
use crate::store::{Doc, Source};
use bytes::Bytes;
use std::sync::Arc;
use std::time::Instant;

/// A `/changes` request that passed every check before the load.
#[derive(Debug, Clone)]
pub struct ChangesRequest {
    pub link: ShareLink,
    /// The version the client saw: 32 lowercase hex digits.
    pub since: String,
    /// `wait`: how long to wait for a new version when nothing changed
    /// (the long poll; `board_api.live`).
    pub wait: Option<std::time::Duration>,
}

/// The longest `wait` of `/changes`, in seconds.
pub const MAX_WAIT_SECONDS: u64 = 60;

/// The query of a `/changes` request, each parameter at most once: `url`,
/// `since`, `wait`.
#[derive(Debug, Default)]
pub(crate) struct Query {
    pub url: Option<String>,
    pub since: Option<String>,
    pub wait: Option<String>,
}

/// Splits the query of a `/changes` request: only `url`, `since` and
/// `wait`, each at most once.
///
/// # Errors
/// `INVALID_REQUEST` naming the parameter.
pub(crate) fn query(query: Option<&str>) -> Result<Query, ApiError> {
    let pairs: Vec<_> = url::form_urlencoded::parse(query.unwrap_or("").as_bytes()).collect();
    let mut found = Query::default();
    for (key, value) in &pairs {
        let slot = match key.as_ref() {
            "url" => &mut found.url,
            "since" => &mut found.since,
            "wait" => &mut found.wait,
            other => {
                let field = unknown_parameter(other, &pairs).field().map(str::to_owned);
                return Err(ApiError::InvalidRequest {
                    field,
                    message: "unknown query parameter; allowed: url, since, wait".into(),
                });
            }
        };
        if slot.is_some() {
            return Err(ApiError::invalid_request(
                key,
                format!("{key} must appear at most once"),
            ));
        }
        *slot = Some(value.to_string());
    }
    Ok(found)
}

/// Checks the query of a `/changes` request: only `url`, `since` and
/// `wait`, each once; then `url` (present, 1 to 2048 characters), `since`
/// (present, a token this service could have made), `wait` (1 to 60
/// seconds), the share link.
///
/// # Errors
/// `INVALID_REQUEST` (field: the parameter), then `INVALID_SHARE_URL`.
pub fn parse(query_text: Option<&str>, share_host: &str) -> Result<ChangesRequest, ApiError> {
    let q = query(query_text)?;
    let wait = wait_value(q.wait.as_deref(), MAX_WAIT_SECONDS)?;
    let mut request = from_values(q.url.as_deref(), q.since.as_deref(), share_host)?;
    request.wait = wait;
    Ok(request)
}

/// `wait` in seconds, 1 to `max`.
///
/// # Errors
/// `INVALID_REQUEST` with field `wait`.
pub(crate) fn wait_value(
    wait: Option<&str>,
    max: u64,
) -> Result<Option<std::time::Duration>, ApiError> {
    let Some(text) = wait else {
        return Ok(None);
    };
    match text.trim().parse::<u64>() {
        Ok(s) if (1..=max).contains(&s) => Ok(Some(std::time::Duration::from_secs(s))),
        _ => Err(ApiError::invalid_request(
            "wait",
            format!("wait is a number of seconds from 1 to {max}"),
        )),
    }
}

/// [`parse`] for values given some other way (an MCP tool's arguments).
///
/// # Errors
/// As [`parse`], after the query's shape.
pub fn from_values(
    url: Option<&str>,
    since: Option<&str>,
    share_host: &str,
) -> Result<ChangesRequest, ApiError> {
    let url = url_value(url)?;
    let since = since.map(str::trim).unwrap_or_default();
    if since.is_empty() {
        return Err(ApiError::invalid_request(
            "since",
            "since is required: a Board-Version this service answered with",
        ));
    }
    check_version("since", since)?;
    let link = link_value(url, share_host)?;
    Ok(ChangesRequest {
        link,
        since: since.to_owned(),
        wait: None,
    })
}

/// `version` is a token this service could have made.
///
/// # Errors
/// `INVALID_REQUEST` naming `field`.
pub(crate) fn check_version(field: &str, version: &str) -> Result<(), ApiError> {
    if is_version(version) {
        Ok(())
    } else {
        Err(ApiError::invalid_request(
            field,
            format!("{field} is not a board version (32 lowercase hex digits, from a Board-Version header)"),
        ))
    }
}

/// The version in `Last-Event-ID`, where an event stream resumes, when the
/// request has one. The stream reads it; every other answer of the
/// endpoint ignores it, but still refuses a value that is not a version,
/// as the stream does: no request is answered as if a malformed header
/// were not there.
///
/// # Errors
/// `400 INVALID_REQUEST` (field `Last-Event-ID`).
pub(crate) fn last_event_id(headers: &http::HeaderMap) -> Result<Option<&str>, ApiError> {
    match headers.get(LAST_EVENT_ID) {
        Some(id) => {
            let id = id.to_str().unwrap_or("").trim();
            check_version("Last-Event-ID", id)?;
            Ok(Some(id))
        }
        None => Ok(None),
    }
}

/// The header an event stream resumes from.
const LAST_EVENT_ID: &str = "last-event-id";

/// The share link of a checked `url` value.
///
/// # Errors
/// `INVALID_SHARE_URL`.
pub(crate) fn link_value(url: &str, share_host: &str) -> Result<ShareLink, ApiError> {
    share_link::parse(url, share_host).map_err(|e| ApiError::InvalidShareUrl {
        message: e.message(),
    })
}

/// What [`BoardApi::changes_of`] answers: the rendered changes, and the
/// document they were compared with.
pub(crate) struct Answered {
    pub rendered: Rendered,
    pub doc: Doc,
}

impl BoardApi {
    /// `{prefix}/changes`: preflight, `405`, or the changes (errors with
    /// what was known of the load).
    pub(super) async fn answer_changes(
        &self,
        req: &RequestParts<'_>,
        request_id: &super::request_id::RequestIds,
    ) -> ApiResponse {
        match route::method_action(req.method) {
            MethodAction::Preflight => respond::preflight(req.headers),
            MethodAction::NotAllowed => respond::error(&ApiError::MethodNotAllowed, request_id),
            MethodAction::Read => {
                let mut served = Served::default();
                match self.changes(req, &mut served).await {
                    Ok(response) => response,
                    Err(e) => self.refused(&e, request_id, served),
                }
            }
        }
    }

    /// `GET {prefix}/changes`: the answer, or the error to answer with;
    /// `served` is filled in as facts are known.
    pub(super) async fn changes(
        &self,
        req: &RequestParts<'_>,
        served: &mut Served,
    ) -> Result<ApiResponse, ApiError> {
        let started = Instant::now();
        if let (Some(limiter), Some(ip)) = (&self.limiter, req.client_ip) {
            limiter.check(ip)?;
        }
        let query = req.query.unwrap_or("");
        // Without `since`, a request that names a feed type gets the feed.
        if let Some(format) = accept::feed(req.headers) {
            let q = self::query(Some(query))?;
            if q.since.is_none() {
                last_event_id(req.headers)?;
                return self.feed(req, format, q, served).await;
            }
        }
        let request = match self.parsed.changes().get(query) {
            Some(request) => request,
            None => {
                let request = Arc::new(parse(Some(query), &self.share_host)?);
                self.parsed.changes().put(query, Arc::clone(&request));
                request
            }
        };
        last_event_id(req.headers)?;
        // Changes have two representations: Markdown when asked for, else JSON.
        let representation = match accept::negotiate(req.headers) {
            Representation::Markdown => Representation::Markdown,
            _ => Representation::Json,
        };
        let (mut answered, mut source) = self.changes_of(&request, representation, served).await?;
        if let Some(wait) = request.wait {
            if answered.doc.board.version() == Some(request.since.as_str()) {
                // Nothing changed yet: wait for the board's poller to see a
                // new version (or the board gone), then answer as without
                // `wait`.
                if self
                    .wait_for_version(&request.link, &request.since, wait, req.client_ip)
                    .await?
                {
                    (answered, source) = self.changes_of(&request, representation, served).await?;
                }
            }
        }
        let mut response = respond::success(
            &answered.rendered,
            representation,
            Encoding::Identity,
            answered.doc.board.completeness(),
            req.headers,
        );
        set_version(&mut response, &answered.doc);
        let load = (source == Source::Miss).then_some(answered.doc.timing);
        response.headers.insert(
            timing::SERVER_TIMING,
            timing::server_timing(source.name(), load, started.elapsed()),
        );
        response.served = std::mem::take(served);
        Ok(response)
    }

    /// Waits up to `wait` for the poller of the board of `link` to see a
    /// version other than `seen` (or the board gone): true when one came.
    ///
    /// # Errors
    /// The bounds of `board_api.live` (`503`, `429`).
    pub(crate) async fn wait_for_version(
        &self,
        link: &ShareLink,
        seen: &str,
        wait: std::time::Duration,
        client: Option<std::net::IpAddr>,
    ) -> Result<bool, ApiError> {
        let slot = self.live.admit(client)?;
        let mut waiter = slot.watch(link, seen);
        Ok(tokio::time::timeout(wait, waiter.next()).await.is_ok())
    }

    /// The changes `request` asks for, as `representation`, and the level
    /// that answered the load: the board loaded (full), then the kept
    /// version `since` compared with it, cached with the document.
    ///
    /// # Errors
    /// The load's errors as `/api/detail` answers them; `410
    /// VERSION_NOT_KEPT` when `since` is not kept for this board.
    pub(crate) async fn changes_of(
        &self,
        request: &ChangesRequest,
        representation: Representation,
        served: &mut Served,
    ) -> Result<(Answered, Source), ApiError> {
        let board_id = &request.link.board_id;
        served.board = Some(Arc::from(board_id.as_str()));
        let (doc, source) = self.load_full(&request.link, served).await?;
        let Some(current) = doc.board.version().map(str::to_owned) else {
            log::error!("board {board_id}: a full document without a version");
            return Err(ApiError::Internal);
        };
        let since = request.since.as_str();
        let kind = match representation {
            Representation::Json => "changes",
            Representation::Markdown => "changes.md",
            Representation::Canvas => "changes.canvas",
        };
        let key: Arc<str> = Arc::from(since);
        let bytes = match self.boards.cached_derived(&doc, kind, &key) {
            Some(bytes) => bytes,
            None => {
                // The board now is `since`: nothing to read back.
                let older = if since == current {
                    None
                } else {
                    let kept = self
                        .boards
                        .kept_version(board_id, &request.link.permission_id, since)
                        .await
                        .map_err(|_| store_unavailable())?;
                    Some(kept.ok_or_else(not_kept)?)
                };
                let (board, from) = (board_id.clone(), since.to_owned());
                self.boards
                    .derived(&doc, kind, key, move |loaded| {
                        let answer = changes::answer(
                            "changes",
                            representation,
                            &board,
                            older.as_deref(),
                            &from,
                            loaded.document_json(),
                            &current,
                        )?;
                        Ok(answer.map_or_else(Bytes::new, pack))
                    })
                    .await
                    .map_err(|e| {
                        log::error!("board {board_id}: {e}");
                        ApiError::Internal
                    })?
            }
        };
        let rendered = unpack(bytes).ok_or_else(not_kept)?;
        Ok((Answered { rendered, doc }, source))
    }
}

/// `Board-Version` of `doc` on `response`, when it has one (a full document).
pub(super) fn set_version(response: &mut ApiResponse, doc: &Doc) {
    if let Some(version) = doc.board.version() {
        // 32 hex digits: always a valid value.
        if let Ok(value) = http::HeaderValue::from_str(version) {
            response
                .headers
                .insert(http::HeaderName::from_static(respond::BOARD_VERSION), value);
        }
    }
}

fn not_kept() -> ApiError {
    ApiError::VersionNotKept
}

/// The store of kept versions did not answer (busy, locked, unreachable):
/// `503` with `Retry-After`, never `410`, which would tell the client its
/// version is gone for good.
pub(super) fn store_unavailable() -> ApiError {
    ApiError::Overloaded {
        retry_after: std::time::Duration::from_secs(2),
    }
}

/// A rendered answer as the bytes the cache keeps: the ETag, a newline,
/// the body. An empty value is "not a version of this board".
pub(super) fn pack(rendered: Rendered) -> Bytes {
    let tag = rendered.etag.as_bytes();
    let mut out = Vec::with_capacity(tag.len() + 1 + rendered.body.len());
    out.extend_from_slice(tag);
    out.push(b'\n');
    out.extend_from_slice(&rendered.body);
    Bytes::from(out)
}

pub(super) fn unpack(bytes: Bytes) -> Option<Rendered> {
    let at = bytes.iter().position(|&b| b == b'\n')?;
    let etag = http::HeaderValue::from_maybe_shared(bytes.slice(..at)).ok()?;
    Some(Rendered {
        body: bytes.slice(at + 1..),
        etag,
        disposition: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST: &str = "app.milanote.com";
    const LINK: &str = "url=https%3A%2F%2Fapp.milanote.com%2F1W3ZZU1Qvua02H%2Fx%3Fp%3Dperm";

    #[test]
    fn since_is_checked_before_the_link() {
        let v = "0123456789abcdef0123456789abcdef";
        let cases: Vec<(String, &str, Option<&str>)> = vec![
            (format!("since={v}"), "INVALID_REQUEST", Some("url")),
            (LINK.into(), "INVALID_REQUEST", Some("since")),
            (format!("{LINK}&since="), "INVALID_REQUEST", Some("since")),
            (
                format!("{LINK}&since=xyz"),
                "INVALID_REQUEST",
                Some("since"),
            ),
            (
                format!("{LINK}&since={}", v.to_uppercase()),
                "INVALID_REQUEST",
                Some("since"),
            ),
            (
                format!("{LINK}&since={v}&since={v}"),
                "INVALID_REQUEST",
                Some("since"),
            ),
            (
                format!("{LINK}&since={v}&view=full"),
                "INVALID_REQUEST",
                Some("view"),
            ),
            (
                format!("url=https%3A%2F%2Fexample.com%2Fx&since={v}"),
                "INVALID_SHARE_URL",
                Some("url"),
            ),
        ];
        for (query, code, field) in cases {
            let e = parse(Some(&query), HOST).expect_err(&query);
            assert_eq!((e.code(), e.field()), (code, field), "{query}");
        }
        let ok = parse(Some(&format!("{LINK}&since={v}")), HOST).expect("valid");
        assert_eq!(
            (ok.link.board_id.as_str(), ok.since.as_str()),
            ("1W3ZZU1Qvua02H", v)
        );
    }

    #[test]
    fn packed_answers_come_back_whole() {
        let rendered = Rendered {
            body: Bytes::from_static(b"{\"ok\":true}\nx"),
            etag: http::HeaderValue::from_static("W/\"ab\""),
            disposition: None,
        };
        assert_eq!(unpack(pack(rendered.clone())), Some(rendered));
        assert_eq!(unpack(Bytes::new()), None);
    }
}
