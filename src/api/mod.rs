//! The request contract: [`BoardApi`] answers `/api/search`, `/api/detail`,
//! `/api/canvas`, `POST /api/board` ([`post`]) and `/api/mcp` ([`mcp`]) from
//! plain request parts (route, method, query or body, share link, then the
//! pipeline and the response policies), each answer with its `X-Request-Id`
//! ([`request_id`]). No Pingora types here: the `host` module is the adapter.

pub mod accept;
pub mod changes;
pub mod error;
mod feed;
pub(crate) mod live;
mod load;
pub mod mcp;
mod memo;
pub mod params;
mod parts;
pub(crate) mod playground;
pub mod post;
mod rate_limit;
pub mod request_id;
pub mod respond;
pub mod route;
pub mod share_link;
pub mod timing;

use crate::client_addr::TrustedProxies;
use crate::config::{ApiSettings, ConfigError, McpSettings};
use crate::encoding;
use crate::log_throttle::Throttle;
use crate::metrics::Metrics;
use crate::pipeline::Representation;
use crate::provider::error::FetchError;
use crate::store::{Boards, LoadError, Source, Versions};
use error::ApiError;
use http::{HeaderMap, Method};
use memo::{ParseMemo, Slot};
use params::BoardRequest;
use rate_limit::RateLimiter;
use request_id::RequestIds;
use respond::{ApiResponse, Served};
use route::{Endpoint, MethodAction, Route};
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::instrument::WithSubscriber as _;
use tracing::Instrument as _;

pub use parts::RequestParts;

/// The board API: share-link validation, fetching (cached, coalesced),
/// sanitizing, selection and the response policies, answered from a host's
/// `request_filter` with [`BoardApi::handle`].
///
/// One value serves every Pingora thread (`Send + Sync`); share it with an
/// `Arc` or own it in the host's `ProxyHttp`.
pub struct BoardApi {
    share_host: String,
    /// Parsed requests by endpoint and raw query (see [`BoardApi::parsed`]).
    parsed: ParseMemo,
    boards: Boards,
    limiter: Option<RateLimiter>,
    /// Whose forwarding headers name the client (default: nobody's).
    proxies: TrustedProxies,
    /// `/api` unless configured: the endpoints are `{prefix}/search`,
    /// `{prefix}/detail`, `{prefix}/board` and `{prefix}/mcp`.
    prefix: String,
    /// Other paths under the prefix are our `404 NOT_FOUND`.
    claim_prefix: bool,
    /// Standalone: every path is ours, unknown ones `404 NOT_FOUND`.
    answer_all_paths: bool,
    /// Standalone only: `GET /` and `HEAD /` are the playground page.
    playground: bool,
    /// Serve cached renders compressed per `Accept-Encoding` (default true).
    compress: bool,
    /// The MCP endpoint at `{prefix}/mcp` (`board_api.mcp`).
    mcp: McpSettings,
    /// This instance's series, labelled `api` by `board_api.name`.
    metrics: Metrics,
    /// Streams, long polls and their pollers (`board_api.live`).
    live: live::Hub,
    /// The span export of pingap's plugin (`board_api.server.otlp` in its
    /// file): [`BoardApi::respond`]'s work runs under it, the host's
    /// subscriber keeps everything else. `None` everywhere else.
    spans: Option<tracing::Dispatch>,
}

impl BoardApi {
    /// Builds the API from validated settings. Only its endpoints are
    /// answered (by default under `/api`: `/search`, `/detail`, `/canvas`,
    /// `/board`, and `/mcp` unless `board_api.mcp.enabled` is false); other
    /// paths are the host's, and
    /// so are other paths under the prefix unless `claim_prefix` is set
    /// (default false). Caching (default on, 60 s), the rate limit (default
    /// off) and trusted balancers (`server.trusted_proxies`) are as configured.
    ///
    /// # Errors
    /// A [`ConfigError`] for `board_api.provider` when the provider client
    /// cannot be built (e.g. an unreadable or empty `ca_file`).
    pub fn new(settings: &ApiSettings) -> Result<Self, ConfigError> {
        let metrics = Metrics::new(settings.name());
        let boards = Boards::reporting(
            settings.provider.clone(),
            settings.provider_name.clone(),
            settings.cache.clone(),
            settings.shared.clone(),
            &settings.limits,
            Some(metrics.clone()),
        )
        .map_err(|e| ConfigError::new("board_api.provider", e))?;
        let versions = Versions::open(&settings.changes, settings.shared.as_ref())
            .map_err(|e| ConfigError::new("board_api.changes", e))?;
        let boards = boards.with_versions(versions);
        let live = live::Hub::new(settings.live.clone(), boards.clone(), metrics.clone());
        Ok(BoardApi {
            share_host: settings.share_host.clone(),
            parsed: ParseMemo::default(),
            boards,
            limiter: settings.rate_limit.map(RateLimiter::new),
            proxies: settings.trusted_proxies.clone(),
            prefix: settings.prefix.clone(),
            claim_prefix: settings.claim_prefix,
            answer_all_paths: false,
            playground: false,
            compress: true,
            mcp: settings.mcp.clone(),
            metrics,
            live,
            spans: None,
        })
    }

    /// Builds the API from the `board_api` section of a YAML file, typically
    /// the host's own Pingora configuration file (Pingora ignores the
    /// section; the host's `ServerConf` keys are not read here). Defaults as
    /// [`BoardApi::new`].
    ///
    /// # Errors
    /// A [`ConfigError`]: the file is unreadable (key `(file)`), a key is
    /// missing or invalid (the key path, with line and column where known),
    /// or the provider client cannot be built.
    pub fn from_file(path: &std::path::Path) -> Result<Self, ConfigError> {
        Self::new(&ApiSettings::from_file(path)?)
    }

    /// Believes the forwarding headers (`Forwarded`, `X-Forwarded-For`) of
    /// requests whose TCP peer is one of `proxies`, so the rate limit (and
    /// the standalone access log) see the client behind a balancer; see
    /// [`TrustedProxies::client`]. Replaces `server.trusted_proxies` (default
    /// none). Only [`BoardApi::handle`] and [`BoardApi::serve`] resolve it: a
    /// host calling [`BoardApi::respond`] passes the client it determined.
    pub fn trust_proxies(mut self, proxies: TrustedProxies) -> Self {
        self.proxies = proxies;
        self
    }

    /// The proxies whose forwarding headers are believed.
    pub(crate) fn proxies(&self) -> &TrustedProxies {
        &self.proxies
    }

    /// Standalone mode: every path is ours, and unknown ones are `404 NOT_FOUND`.
    pub(crate) fn answer_all_paths(mut self) -> Self {
        self.answer_all_paths = true;
        self
    }

    /// Standalone mode with the playground page at `GET /` and `HEAD /`
    /// (`board_api.server.playground`); without standalone mode (`answer_all_paths`)
    /// it has no effect, so an embedding host never serves it.
    pub fn serve_playground(mut self, on: bool) -> Self {
        self.playground = on;
        self
    }

    /// Whether cached renders are served compressed (gzip, br, zstd by
    /// `Accept-Encoding`, compressed once and cached). Default true; the
    /// standalone binary turns it off with `compression_level: 0`.
    pub fn compress_renders(mut self, on: bool) -> Self {
        self.compress = on;
        self
    }

    /// Whether `path` is one this API answers: `{prefix}/search`,
    /// `{prefix}/detail`, `{prefix}/canvas`, `{prefix}/board`, and
    /// `{prefix}/mcp` unless `board_api.mcp` is off; with `claim_prefix`,
    /// every path under the prefix; standalone, every path.
    pub(crate) fn owns(&self, path: &str) -> bool {
        match route::route(path, &self.prefix) {
            Route::Endpoint(_) | Route::Board | Route::Changes => true,
            Route::Mcp if self.mcp.enabled => true,
            Route::Mcp | Route::UnderPrefix => self.claim_prefix || self.answer_all_paths,
            Route::Outside => self.answer_all_paths,
        }
    }

    /// Whether the request to `path` with `method` has a body this API
    /// reads, and how many bytes of it at most: `Some(limit)` for a `POST`
    /// to the MCP endpoint (`board_api.mcp.max_body_bytes`) or to
    /// `{prefix}/board` (32 KiB, `BODY_LIMIT`), `None` for
    /// everything else. A host reads at most `limit + 1` bytes of such a
    /// body into [`RequestParts::body`]; more than `limit` is answered `413`.
    pub fn body_limit(&self, method: &Method, path: &str) -> Option<usize> {
        if *method != Method::POST {
            return None;
        }
        match route::route(path, &self.prefix) {
            Route::Board => Some(post::BODY_LIMIT),
            Route::Mcp if self.mcp.enabled => Some(self.mcp.max_body_bytes),
            _ => None,
        }
    }

    /// Answers a request, or `None` when its path is the host's: the
    /// transport-neutral entry, for hosts that do not hand over a Pingora
    /// `Session` (a plugin that returns a response to its gateway, a test,
    /// another HTTP stack). [`BoardApi::handle`] and [`BoardApi::serve`] are
    /// this plus writing the answer to a `Session`.
    ///
    /// The answer is complete: status, headers (`Content-Length` aside) and
    /// the body a `GET` carries. For `HEAD` send the headers without the
    /// body; for `304` and `204` ([`ApiResponse::has_body`] false) send no
    /// body. [`ApiResponse::served`] and [`RequestParts::summary`] are what
    /// an access log may print; the request's query is not (it holds the
    /// share link's permission id).
    ///
    /// ```no_run
    /// # async fn demo(boards: &shared_board_api::BoardApi) {
    /// use shared_board_api::RequestParts;
    /// let (method, headers) = (http::Method::GET, http::HeaderMap::new());
    /// let query = "url=https%3A%2F%2Fapp.milanote.com%2F1Abc%2Fx%3Fp%3DSECRET";
    /// let parts = RequestParts::new(&method, "/api/search", Some(query), &headers);
    /// match boards.respond(parts).await {
    ///     Some(answer) => println!("{} {}", parts.summary(), answer.status),
    ///     None => { /* not ours: the host goes on with its own routing */ }
    /// }
    /// # }
    /// ```
    pub async fn respond(&self, req: RequestParts<'_>) -> Option<ApiResponse> {
        if !self.owns(req.path) {
            return None;
        }
        let ids = RequestIds::for_parts(&req);
        let mut response = match &self.spans {
            Some(spans) => self.traced(&req, &ids).with_subscriber(spans.clone()).await,
            None => self.traced(&req, &ids).await,
        };
        respond::stamp(&mut response, &ids);
        Some(response)
    }

    /// Answers every path under the prefix, unknown ones with `404
    /// NOT_FOUND` (a location of a host that routes the whole prefix here).
    pub(crate) fn claim_whole_prefix(&mut self) {
        self.claim_prefix = true;
    }

    /// Runs [`BoardApi::respond`]'s work under `spans`, a subscriber of its
    /// own, in a process whose subscriber is the host's.
    #[cfg(feature = "otlp")]
    pub(crate) fn export_spans(&mut self, spans: tracing::Dispatch) {
        self.spans = Some(spans);
    }

    /// [`BoardApi::answer`] in its `shared_board_api.request` span, which
    /// records what the answer was.
    async fn traced(&self, req: &RequestParts<'_>, ids: &RequestIds) -> ApiResponse {
        let span = crate::trace::spans::request(&ids.trace);
        let response = self.answer(req, ids).instrument(span.clone()).await;
        crate::trace::spans::answered(
            &span,
            response.status.as_u16(),
            response.body.len(),
            response.served.cache,
        );
        response
    }

    /// The answer to a request for a path of ours.
    async fn answer(&self, req: &RequestParts<'_>, request_id: &RequestIds) -> ApiResponse {
        let endpoint = match route::route(req.path, &self.prefix) {
            Route::Endpoint(endpoint) => endpoint,
            Route::Board => {
                let response = self.board(req, request_id).await;
                self.answered_as("board", response.status.as_u16());
                return response;
            }
            Route::Changes => {
                // Boxed: its future nests deep (a host's async block must
                // stay within the compiler's layout depth).
                let response = Box::pin(self.answer_changes(req, request_id)).await;
                self.answered_as("changes", response.status.as_u16());
                return response;
            }
            Route::Mcp if self.mcp.enabled => {
                let response = self.mcp(req).await;
                self.answered_as("mcp", response.status.as_u16());
                return response;
            }
            Route::Outside if self.playground && req.path == "/" => {
                if let Some(page) = playground::page(req.method) {
                    self.answered_as("playground", page.status.as_u16());
                    return page;
                }
                self.answered_as("unknown", 404);
                return respond::error(&ApiError::NotFound, request_id);
            }
            Route::Mcp | Route::UnderPrefix | Route::Outside => {
                self.answered_as("unknown", 404);
                return respond::error(&ApiError::NotFound, request_id);
            }
        };
        let response = match route::method_action(req.method) {
            MethodAction::Preflight => respond::preflight(req.headers),
            MethodAction::NotAllowed => respond::error(&ApiError::MethodNotAllowed, request_id),
            MethodAction::Read => {
                let mut served = Served::default();
                match self.read(endpoint, req, &mut served).await {
                    Ok(response) => response,
                    Err(e) => self.refused(&e, request_id, served),
                }
            }
        };
        self.answered_as(endpoint.name(), response.status.as_u16());
        response
    }

    /// Counts an answer of `route` and names the route on the request's
    /// span.
    fn answered_as(&self, route: &'static str, status: u16) {
        crate::trace::spans::route(route);
        self.metrics.request(route, status);
    }

    /// The error answer to a request for a board; it still says which
    /// board and level, when the load got that far.
    fn refused(&self, e: &ApiError, request_id: &RequestIds, served: Served) -> ApiResponse {
        if matches!(e, ApiError::Overloaded { .. }) {
            // Every such answer: a full queue, a wait in it past the
            // deadline, the fleet's budget.
            self.metrics.overloaded();
        }
        let mut response = respond::error(e, request_id);
        response.served = served;
        response
    }

    /// The error answer to a request for an event stream, stamped with its
    /// `X-Request-Id`.
    pub(crate) fn refused_stream(
        &self,
        e: &ApiError,
        request_id: &RequestIds,
        served: Served,
    ) -> ApiResponse {
        let mut response = self.refused(e, request_id, served);
        respond::stamp(&mut response, request_id);
        response
    }

    /// Counts a request answered outside [`BoardApi::respond`] (a stream).
    pub(crate) fn count_request(&self, endpoint: &str, status: u16) {
        self.metrics.request(endpoint, status);
    }

    /// The path prefix of the endpoints.
    pub(crate) fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Ends every open event stream: the server shuts down.
    pub(crate) fn end_streams(&self) {
        self.live.shut_down();
    }

    /// The optional per-client rate limit (`board_api.rate_limit`).
    fn limit_rate(&self, req: &RequestParts<'_>) -> Result<(), ApiError> {
        match (&self.limiter, req.client_ip) {
            (Some(limiter), Some(ip)) => limiter.check(ip),
            _ => Ok(()),
        }
    }

    /// A `GET` or `HEAD` of a read endpoint: its query, then the board.
    async fn read(
        &self,
        endpoint: Endpoint,
        req: &RequestParts<'_>,
        served: &mut Served,
    ) -> Result<ApiResponse, ApiError> {
        self.limit_rate(req)?;
        let request = self.parsed(endpoint, req.query)?;
        self.answer_board(endpoint, &request, req.headers, req.headers, served)
            .await
    }

    /// Reads the board of a checked request and renders the answer of
    /// `endpoint` in the representation and coding `headers` ask for;
    /// `conditional` holds the `If-None-Match` honoured (the request's own
    /// headers, or none for a request never answered `304`). `served` is
    /// filled in as soon as each fact is known, so an error answer carries
    /// them too.
    async fn answer_board(
        &self,
        endpoint: Endpoint,
        request: &BoardRequest,
        headers: &HeaderMap,
        conditional: &HeaderMap,
        served: &mut Served,
    ) -> Result<ApiResponse, ApiError> {
        let started = Instant::now();
        served.board = Some(Arc::from(request.link.board_id.as_str()));
        let (document, source) = self.load_full(&request.link, served).await?;
        let board_id = &request.link.board_id;
        log::debug!(
            "board {board_id} ready in {:?} ({})",
            started.elapsed(),
            source.name()
        );
        let encoding = if self.compress {
            encoding::negotiate(
                headers
                    .get(http::header::ACCEPT_ENCODING)
                    .map(http::HeaderValue::as_bytes),
            )
        } else {
            encoding::Encoding::Identity
        };
        let representation = match endpoint {
            Endpoint::Canvas => Representation::Canvas,
            Endpoint::Search | Endpoint::Detail => accept::negotiate(headers),
        };
        let variant = self
            .boards
            .variant(
                &document,
                endpoint.name(),
                &request.selection,
                representation,
                encoding,
            )
            .await
            .map_err(|e| {
                log::error!("board {board_id}: {e}");
                api_error(e)
            })?;
        let mut response = respond::success(
            &variant.rendered,
            representation,
            variant.encoding,
            document.board.completeness(),
            conditional,
        );
        if let (Some(disposition), true) = (&variant.rendered.disposition, response.has_body()) {
            response
                .headers
                .insert(http::header::CONTENT_DISPOSITION, disposition.clone());
        }
        if let Some(version) = document.board.version() {
            // 32 hex digits: always a valid value.
            if let Ok(value) = http::HeaderValue::from_str(version) {
                response
                    .headers
                    .insert(http::HeaderName::from_static(respond::BOARD_VERSION), value);
            }
        }
        let load = (source == Source::Miss).then_some(document.timing);
        response.headers.insert(
            timing::SERVER_TIMING,
            timing::server_timing(source.name(), load, started.elapsed()),
        );
        response.served = std::mem::take(served);
        Ok(response)
    }
}

/// A failed load in the log, in words, at the level of whose it is: the
/// client's (a denied or missing board: DEBUG), the provider's (5xx,
/// timeouts, malformed answers: WARN), ours (a bug: ERROR). Overload is ours
/// by design, not a fault: WARN, since an operator sizes the limits.
///
/// Only the request that met the failure logs it at that level, and WARN
/// lines at most once a minute per kind (overload, provider failures). Requests that joined that load, or got the failure
/// from the error cache during `error_ttl_seconds`, log it at DEBUG, so an
/// outage is one line per failure, not one per request.
fn log_failure(board_id: &str, after: Duration, e: &LoadError, source: Source) {
    let ms = after.as_secs_f64() * 1000.0;
    if source != Source::Miss {
        log::debug!(
            "board {board_id}: {e} (again, {} in {ms:.1} ms)",
            source.name()
        );
        return;
    }
    match e {
        LoadError::Fetch(FetchError::AccessDenied | FetchError::NotFound) => {
            log::debug!("board {board_id} refused after {ms:.0} ms: {e}")
        }
        // A client can cause these at will (a flood of cold loads, boards of
        // its own that fail): a WARN line a minute for each, the rest at
        // DEBUG, the next WARN counting them.
        LoadError::Overloaded => {
            static OVERLOADED: Throttle = Throttle::new();
            OVERLOADED.warn(&format!("board {board_id} failed after {ms:.0} ms: {e}"));
        }
        LoadError::Fetch(_) => {
            static FAILED: Throttle = Throttle::new();
            FAILED.warn(&format!("board {board_id} failed after {ms:.0} ms: {e}"));
        }
        LoadError::Internal(_) => log::error!("board {board_id} failed after {ms:.0} ms: {e}"),
    }
}

impl BoardApi {
    /// The request a query asks for, parsed once per distinct query.
    ///
    /// A cached answer is mostly bookkeeping, and reading the share link
    /// (a URL parse and percent-decoding) and the selection was the largest
    /// part of it (a profile of repeated cached requests put it near a tenth
    /// of the process's time). Clients repeat queries byte for byte, so the
    /// parse is memoized by its raw text. Only successes are kept; bad
    /// queries are cheap to refuse again.
    fn parsed(
        &self,
        endpoint: Endpoint,
        query: Option<&str>,
    ) -> Result<Arc<BoardRequest>, ApiError> {
        let query = query.unwrap_or("");
        let slot = Slot::Query(endpoint);
        if let Some(request) = self.parsed.get(slot, query) {
            return Ok(request);
        }
        let request = Arc::new(params::parse(endpoint, Some(query), &self.share_host)?);
        self.parsed.put(slot, query, Arc::clone(&request));
        Ok(request)
    }

    /// [`Self::parsed`] for an MCP tool's `url`, `view`, `include` and
    /// `exclude` arguments, read as `/api/detail` reads them.
    fn parsed_values(&self, values: [Option<&str>; 4]) -> Result<Arc<BoardRequest>, ApiError> {
        // One text per distinct set of values: each value's length (or `-`
        // when absent) before it, so no two sets share a text.
        let len: usize = values.iter().flatten().map(|v| v.len() + 8).sum();
        let mut key = String::with_capacity(len + 4);
        for value in values {
            match value {
                Some(v) => {
                    let _ = write!(key, "{}:", v.len());
                    key.push_str(v);
                }
                None => key.push('-'),
            }
        }
        if let Some(request) = self.parsed.get(Slot::Tool, &key) {
            return Ok(request);
        }
        let request = Arc::new(params::from_values(
            Endpoint::Detail,
            values,
            &self.share_host,
        )?);
        self.parsed.put(Slot::Tool, &key, Arc::clone(&request));
        Ok(request)
    }
}

/// How long a client refused with `503 OVERLOADED` should wait.
const OVERLOADED_RETRY_AFTER: Duration = Duration::from_secs(1);

fn api_error(e: LoadError) -> ApiError {
    match e {
        LoadError::Fetch(e) => ApiError::from(&e),
        LoadError::Overloaded => ApiError::Overloaded {
            retry_after: OVERLOADED_RETRY_AFTER,
        },
        LoadError::Internal(_) => ApiError::Internal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_can_be_shared_across_pingora_threads() {
        fn is<T: Send + Sync + 'static>() {}
        is::<BoardApi>();
    }
}
