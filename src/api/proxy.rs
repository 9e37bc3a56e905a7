//! The thin Pingora adapter. Three ways in:
//! - [`BoardApi::handle`]: one call from a host gateway's `request_filter`;
//! - [`WithBoardApi`]: wraps any `ProxyHttp` so it also serves our API;
//! - [`BoardApiService`]: the standalone service the binary runs.

use super::respond::ApiResponse;
use super::{BoardApi, RequestParts};
use async_trait::async_trait;
use bytes::Bytes;
use http::header;
use pingora_cache::key::HashBinary;
use pingora_cache::{CacheKey, CacheMeta, ForcedFreshness, HitHandler, PurgeAction, RespCacheable};
use pingora_core::modules::http::compression::ResponseCompressionBuilder;
use pingora_core::modules::http::HttpModules;
use pingora_core::protocols::Digest;
use pingora_core::upstreams::peer::HttpPeer;
use pingora_error::{Error, ErrorType, Result};
use pingora_http::{RequestHeader, ResponseHeader};
use pingora_proxy::{FailToProxy, ProxyHttp, ProxyWarnLogContext, PurgeStatus, RangeType, Session};
use std::sync::Arc;
use std::time::Duration;

impl BoardApi {
    /// Answers the request if its path is ours, from a `request_filter`.
    ///
    /// Returns `Ok(true)` when the response was written (the host must then
    /// return `Ok(true)` from its `request_filter` too), `Ok(false)` for
    /// paths outside `/api/` that belong to the host. It reads only the
    /// method, path, query, `If-None-Match`, the preflight headers and the
    /// client address; nothing of the request is forwarded to the provider.
    ///
    /// # Errors
    /// Only when writing to the client fails (the client went away).
    pub async fn handle(&self, session: &mut Session) -> Result<bool> {
        let req = session.req_header();
        let head = req.method == http::Method::HEAD;
        let parts = RequestParts {
            method: &req.method,
            path: req.uri.path(),
            query: req.uri.query(),
            headers: &req.headers,
            client_ip: session
                .client_addr()
                .and_then(|a| a.as_inet())
                .map(|a| a.ip()),
        };
        let Some(response) = self.respond(parts).await else {
            return Ok(false);
        };
        write(session, response, head).await?;
        Ok(true)
    }
}

/// Writes an [`ApiResponse`] through Pingora's downstream modules
/// (compression applies). `HEAD` gets the same headers, `Content-Length`
/// included, and no body.
async fn write(session: &mut Session, response: ApiResponse, head: bool) -> Result<()> {
    let mut header = ResponseHeader::build(response.status, Some(response.headers.len() + 1))?;
    for (name, value) in &response.headers {
        header.append_header(name.clone(), value.clone())?;
    }
    let body = response.has_body();
    if body {
        header.insert_header(header::CONTENT_LENGTH, response.body.len())?;
    }
    let has_bytes = body && !response.body.is_empty();
    // A HEAD answer is written as if a body followed (end_of_stream false),
    // so the downstream modules (compression) shape its headers exactly as
    // for the GET; Pingora sends no body bytes for HEAD, and once we return
    // `Ok(true)` it finishes the response without running module filters.
    session
        .write_response_header(Box::new(header), !has_bytes)
        .await?;
    if has_bytes && !head {
        session
            .write_response_body(Some(response.body), true)
            .await?;
    }
    Ok(())
}

/// A request summary for logs that never includes the query: the `url`
/// parameter carries the permission id.
fn redacted_summary(session: &Session) -> String {
    let req = session.req_header();
    format!("{} {} (query redacted)", req.method, req.uri.path())
}

/// The standalone service: every path is answered by the API (unknown ones
/// with `404 NOT_FOUND`); nothing is proxied.
pub struct BoardApiService {
    api: Arc<BoardApi>,
    compression_level: u32,
}

impl BoardApiService {
    pub fn new(api: Arc<BoardApi>, compression_level: u32) -> Self {
        BoardApiService {
            api,
            compression_level,
        }
    }
}

#[async_trait]
impl ProxyHttp for BoardApiService {
    type CTX = ();
    fn new_ctx(&self) -> Self::CTX {}

    fn init_downstream_modules(&self, modules: &mut HttpModules) {
        modules.add_module(ResponseCompressionBuilder::enable(self.compression_level));
    }

    async fn request_filter(&self, session: &mut Session, _ctx: &mut ()) -> Result<bool> {
        if self.api.handle(session).await? {
            return Ok(true);
        }
        // Unreachable with `answer_all_paths`; refuse rather than proxy anywhere.
        session.respond_error(404).await?;
        Ok(true)
    }

    async fn upstream_peer(&self, _session: &mut Session, _ctx: &mut ()) -> Result<Box<HttpPeer>> {
        Error::e_explain(ErrorType::InternalError, "the board API never proxies")
    }

    fn suppress_error_log(&self, _session: &Session, _ctx: &(), error: &Error) -> bool {
        // A client that disconnects is not our error.
        matches!(
            error.etype(),
            ErrorType::ConnectionClosed | ErrorType::ReadError | ErrorType::WriteError
        )
    }

    fn request_summary(&self, session: &Session, _ctx: &()) -> String {
        redacted_summary(session)
    }
}

/// Wraps a host's `ProxyHttp` so that it also serves our API: requests to
/// `/api/...` are answered by [`BoardApi`] before the host's own
/// `request_filter` runs; every other request, and every other phase, is
/// the host's, unchanged.
pub struct WithBoardApi<P> {
    api: Arc<BoardApi>,
    inner: P,
}

impl<P> WithBoardApi<P> {
    pub fn new(api: Arc<BoardApi>, inner: P) -> Self {
        WithBoardApi { api, inner }
    }

    pub fn inner(&self) -> &P {
        &self.inner
    }
}

#[async_trait]
impl<P> ProxyHttp for WithBoardApi<P>
where
    P: ProxyHttp + Send + Sync,
    P::CTX: Send + Sync,
{
    type CTX = P::CTX;

    fn new_ctx(&self) -> Self::CTX {
        self.inner.new_ctx()
    }

    async fn request_filter(&self, session: &mut Session, ctx: &mut Self::CTX) -> Result<bool> {
        if self.api.handle(session).await? {
            return Ok(true);
        }
        self.inner.request_filter(session, ctx).await
    }

    fn request_summary(&self, session: &Session, ctx: &Self::CTX) -> String {
        if self.api.owns(session.req_header().uri.path()) {
            return redacted_summary(session);
        }
        self.inner.request_summary(session, ctx)
    }

    // Everything below forwards to the host's proxy unchanged.

    async fn upstream_peer(
        &self,
        session: &mut Session,
        ctx: &mut Self::CTX,
    ) -> Result<Box<HttpPeer>> {
        self.inner.upstream_peer(session, ctx).await
    }

    fn init_downstream_modules(&self, modules: &mut HttpModules) {
        self.inner.init_downstream_modules(modules)
    }

    async fn early_request_filter(&self, session: &mut Session, ctx: &mut Self::CTX) -> Result<()> {
        self.inner.early_request_filter(session, ctx).await
    }

    fn allow_spawning_subrequest(&self, session: &Session, ctx: &Self::CTX) -> bool {
        self.inner.allow_spawning_subrequest(session, ctx)
    }

    async fn request_body_filter(
        &self,
        session: &mut Session,
        body: &mut Option<Bytes>,
        end_of_stream: bool,
        ctx: &mut Self::CTX,
    ) -> Result<()> {
        self.inner
            .request_body_filter(session, body, end_of_stream, ctx)
            .await
    }

    fn request_cache_filter(&self, session: &mut Session, ctx: &mut Self::CTX) -> Result<()> {
        self.inner.request_cache_filter(session, ctx)
    }

    fn cache_key_callback(&self, session: &Session, ctx: &mut Self::CTX) -> Result<CacheKey> {
        self.inner.cache_key_callback(session, ctx)
    }

    fn cache_miss(&self, session: &mut Session, ctx: &mut Self::CTX) {
        self.inner.cache_miss(session, ctx)
    }

    async fn cache_hit_filter(
        &self,
        session: &mut Session,
        meta: &CacheMeta,
        hit_handler: &mut HitHandler,
        is_fresh: bool,
        ctx: &mut Self::CTX,
    ) -> Result<Option<ForcedFreshness>> {
        self.inner
            .cache_hit_filter(session, meta, hit_handler, is_fresh, ctx)
            .await
    }

    async fn proxy_upstream_filter(
        &self,
        session: &mut Session,
        ctx: &mut Self::CTX,
    ) -> Result<bool> {
        self.inner.proxy_upstream_filter(session, ctx).await
    }

    fn response_cache_filter(
        &self,
        session: &Session,
        resp: &ResponseHeader,
        ctx: &mut Self::CTX,
    ) -> Result<RespCacheable> {
        self.inner.response_cache_filter(session, resp, ctx)
    }

    fn cache_vary_filter(
        &self,
        meta: &CacheMeta,
        ctx: &mut Self::CTX,
        req: &RequestHeader,
    ) -> Option<HashBinary> {
        self.inner.cache_vary_filter(meta, ctx, req)
    }

    fn cache_not_modified_filter(
        &self,
        session: &Session,
        resp: &ResponseHeader,
        ctx: &mut Self::CTX,
    ) -> Result<bool> {
        self.inner.cache_not_modified_filter(session, resp, ctx)
    }

    fn range_header_filter(
        &self,
        session: &mut Session,
        resp: &mut ResponseHeader,
        ctx: &mut Self::CTX,
    ) -> RangeType {
        self.inner.range_header_filter(session, resp, ctx)
    }

    async fn upstream_request_filter(
        &self,
        session: &mut Session,
        upstream_request: &mut RequestHeader,
        ctx: &mut Self::CTX,
    ) -> Result<()> {
        self.inner
            .upstream_request_filter(session, upstream_request, ctx)
            .await
    }

    async fn upstream_response_filter(
        &self,
        session: &mut Session,
        upstream_response: &mut ResponseHeader,
        ctx: &mut Self::CTX,
    ) -> Result<()> {
        self.inner
            .upstream_response_filter(session, upstream_response, ctx)
            .await
    }

    async fn response_filter(
        &self,
        session: &mut Session,
        upstream_response: &mut ResponseHeader,
        ctx: &mut Self::CTX,
    ) -> Result<()> {
        self.inner
            .response_filter(session, upstream_response, ctx)
            .await
    }

    fn upstream_response_body_filter(
        &self,
        session: &mut Session,
        body: &mut Option<Bytes>,
        end_of_stream: bool,
        ctx: &mut Self::CTX,
    ) -> Result<Option<Duration>> {
        self.inner
            .upstream_response_body_filter(session, body, end_of_stream, ctx)
    }

    fn upstream_response_trailer_filter(
        &self,
        session: &mut Session,
        upstream_trailers: &mut http::HeaderMap,
        ctx: &mut Self::CTX,
    ) -> Result<()> {
        self.inner
            .upstream_response_trailer_filter(session, upstream_trailers, ctx)
    }

    fn response_body_filter(
        &self,
        session: &mut Session,
        body: &mut Option<Bytes>,
        end_of_stream: bool,
        ctx: &mut Self::CTX,
    ) -> Result<Option<Duration>> {
        self.inner
            .response_body_filter(session, body, end_of_stream, ctx)
    }

    async fn response_trailer_filter(
        &self,
        session: &mut Session,
        upstream_trailers: &mut http::HeaderMap,
        ctx: &mut Self::CTX,
    ) -> Result<Option<Bytes>> {
        self.inner
            .response_trailer_filter(session, upstream_trailers, ctx)
            .await
    }

    async fn logging(&self, session: &mut Session, e: Option<&Error>, ctx: &mut Self::CTX) {
        self.inner.logging(session, e, ctx).await
    }

    fn suppress_error_log(&self, session: &Session, ctx: &Self::CTX, error: &Error) -> bool {
        self.inner.suppress_error_log(session, ctx, error)
    }

    fn suppress_proxy_warn_log(
        &self,
        session: &Session,
        ctx: &Self::CTX,
        error: &Error,
        context: ProxyWarnLogContext,
    ) -> bool {
        self.inner
            .suppress_proxy_warn_log(session, ctx, error, context)
    }

    fn error_while_proxy(
        &self,
        peer: &HttpPeer,
        session: &mut Session,
        e: Box<Error>,
        ctx: &mut Self::CTX,
        client_reused: bool,
    ) -> Box<Error> {
        self.inner
            .error_while_proxy(peer, session, e, ctx, client_reused)
    }

    fn fail_to_connect(
        &self,
        session: &mut Session,
        peer: &HttpPeer,
        ctx: &mut Self::CTX,
        e: Box<Error>,
    ) -> Box<Error> {
        self.inner.fail_to_connect(session, peer, ctx, e)
    }

    async fn fail_to_proxy(
        &self,
        session: &mut Session,
        e: &Error,
        ctx: &mut Self::CTX,
    ) -> FailToProxy {
        self.inner.fail_to_proxy(session, e, ctx).await
    }

    fn should_serve_stale(
        &self,
        session: &mut Session,
        ctx: &mut Self::CTX,
        error: Option<&Error>,
    ) -> bool {
        self.inner.should_serve_stale(session, ctx, error)
    }

    async fn connected_to_upstream(
        &self,
        session: &mut Session,
        reused: bool,
        peer: &HttpPeer,
        #[cfg(unix)] fd: std::os::unix::io::RawFd,
        #[cfg(windows)] sock: std::os::windows::io::RawSocket,
        digest: Option<&Digest>,
        ctx: &mut Self::CTX,
    ) -> Result<()> {
        self.inner
            .connected_to_upstream(
                session,
                reused,
                peer,
                #[cfg(unix)]
                fd,
                #[cfg(windows)]
                sock,
                digest,
                ctx,
            )
            .await
    }

    fn is_purge(&self, session: &Session, ctx: &Self::CTX) -> bool {
        self.inner.is_purge(session, ctx)
    }

    fn purge_action(&self, session: &Session, ctx: &Self::CTX) -> PurgeAction {
        self.inner.purge_action(session, ctx)
    }

    fn purge_response_filter(
        &self,
        session: &Session,
        ctx: &mut Self::CTX,
        purge_status: PurgeStatus,
        purge_response: &mut std::borrow::Cow<'static, ResponseHeader>,
    ) -> Result<()> {
        self.inner
            .purge_response_filter(session, ctx, purge_status, purge_response)
    }

    fn persist_connection_context(
        &self,
        session: &Session,
        ctx: &Self::CTX,
    ) -> Option<Box<dyn std::any::Any + Send + Sync>> {
        self.inner.persist_connection_context(session, ctx)
    }

    fn on_connection_reuse(
        &self,
        session: &mut Session,
        ctx: &mut Self::CTX,
        prev_ctx: Box<dyn std::any::Any + Send + Sync>,
    ) {
        self.inner.on_connection_reuse(session, ctx, prev_ctx)
    }
}
