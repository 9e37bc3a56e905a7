//! The embedding seam: one call from a host gateway's `request_filter`, and
//! a redacted request summary for the host's `request_summary`.

mod events;

use crate::api::request_id::{self, RequestIds};
use crate::api::respond::{ApiResponse, Served};
use crate::api::{BoardApi, RequestParts};
use http::header;
use pingora_error::Result;
use pingora_http::{RequestHeader, ResponseHeader};
use pingora_proxy::Session;

impl BoardApi {
    /// Answers the request if its path is ours; call it first thing in the
    /// host's `ProxyHttp::request_filter`.
    ///
    /// Returns `Ok(true)` when the request was answered (the host then
    /// returns `Ok(true)` from its `request_filter` too), `Ok(false)` for
    /// paths that belong to the host. It reads only the method, path, query,
    /// the body of a `POST` to `{prefix}/board` or `{prefix}/mcp`,
    /// `If-None-Match`, `Accept`, `Accept-Encoding`, `X-Request-Id`, the
    /// preflight headers and the client address; nothing of the request is
    /// forwarded to the provider.
    ///
    /// While the answer is prepared the client is watched: one that goes
    /// away (closes the connection, resets its HTTP/2 stream) is answered
    /// nothing, and a cold load that only it was waiting for is cancelled,
    /// its requests to the provider included.
    ///
    /// A client that goes away while the answer is written is not an error:
    /// a redacted line is logged at debug level and the request counts as
    /// answered, so Pingora never logs the request target (and with it the
    /// share link) as a failed request.
    ///
    /// # Errors
    /// None: a response that cannot be built or written is logged (redacted)
    /// and the request still counts as answered. The `Result` is the shape
    /// of Pingora's `request_filter`, so the call composes with `?`.
    pub async fn handle(&self, session: &mut Session) -> Result<bool> {
        Ok(self.serve(session).await?.is_some())
    }

    /// As [`BoardApi::handle`], and what a host's access log wants to know
    /// of an answered request: `Some` with the status (499 when the client
    /// went away first), the body bytes sent, the `X-Request-Id`, which
    /// level of the store answered and the board id (never the permission
    /// id); `None` for paths that belong to the host.
    ///
    /// # Errors
    /// None, as [`BoardApi::handle`].
    pub async fn serve(&self, session: &mut Session) -> Result<Option<Answered>> {
        if !self.owns(session.req_header().uri.path()) {
            return Ok(None);
        }
        // Each kind of request in a box of its own. This future is what the
        // host's `request_filter` holds for as long as the request lasts (an
        // event stream: hours), and a future is as large as its largest
        // state: inline, an open stream would hold room for a cold load, a
        // body being read and an answer being written. Boxing also keeps a
        // host's async block within the compiler's layout depth.
        if self.is_event_stream(session.req_header()) {
            let client_ip = self.client_ip(session);
            return Box::pin(self.serve_events(session, client_ip))
                .await
                .map(Some);
        }
        Box::pin(self.serve_request(session)).await
    }

    /// [`BoardApi::serve`] for every request but an event stream.
    async fn serve_request(&self, session: &mut Session) -> Result<Option<Answered>> {
        let Some(body) = self.body_within_deadline(session).await else {
            // A body still arriving at its deadline: the connection is not
            // reused, and the client is told why.
            let ids = RequestIds::for_request(&session.req_header().headers);
            session.set_keepalive(None);
            let mut header = ResponseHeader::build(408, Some(3))?;
            header.insert_header(header::CONTENT_LENGTH, 0)?;
            header.insert_header(header::CACHE_CONTROL, "no-store")?;
            header.insert_header(request_id::X_REQUEST_ID, ids.request_id.clone())?;
            session
                .write_response_header(Box::new(header), true)
                .await?;
            return Ok(Some(Answered {
                status: 408,
                bytes: 0,
                served: Served::of(&ids),
            }));
        };
        let client_ip = self.client_ip(session);
        // The answer is computed while the client is watched, so a client
        // that goes away stops what only it was waiting for (a cold load
        // nobody else joined). Watching needs the session mutably while the
        // request is read: its header is lent out for the time (moved, not
        // copied; an empty one stands in), after the body reader has read
        // the framing headers it needs.
        session.downstream_session.is_body_done();
        let lent = std::mem::replace(
            session.req_header_mut(),
            RequestHeader::from(http::Request::new(()).into_parts().0),
        );
        let head = lent.method == http::Method::HEAD;
        let parts = RequestParts::new(
            &lent.method,
            lent.uri.path(),
            lent.uri.query(),
            &lent.headers,
        )
        .with_client_ip(client_ip)
        .with_body(&body);
        let answer = tokio::select! {
            biased;
            response = self.respond(parts) => Some(response),
            () = client_gone(&mut session.downstream_session) => None,
        };
        let ids = answer
            .is_none()
            .then(|| RequestIds::for_request(&lent.headers));
        *session.req_header_mut() = lent;
        let Some(answer) = answer else {
            session.set_keepalive(None);
            log::debug!(
                "{}: client gone before the answer",
                self.request_summary(session).unwrap_or_default()
            );
            return Ok(Some(Answered {
                status: CLIENT_GONE,
                bytes: 0,
                served: ids.as_ref().map(Served::of).unwrap_or_default(),
            }));
        };
        let Some(mut response) = answer else {
            return Ok(None);
        };
        let mut answered = Answered {
            status: response.status.as_u16(),
            bytes: if head || !response.has_body() {
                0
            } else {
                response.body.len()
            },
            served: std::mem::take(&mut response.served),
        };
        if let Err(e) = write(session, response, head).await {
            answered.bytes = 0;
            log::debug!(
                "{}: client gone while answering: {}",
                self.request_summary(session).unwrap_or_default(),
                e.etype().as_str()
            );
        }
        Ok(Some(answered))
    }

    /// The client of the request: the TCP peer, or, when the peer is a
    /// trusted proxy ([`BoardApi::trust_proxies`]), the client its
    /// forwarding headers name.
    pub(crate) fn client_ip(&self, session: &Session) -> Option<std::net::IpAddr> {
        let peer = session.client_addr()?.as_inet()?.ip();
        Some(self.proxies().client(peer, &session.req_header().headers))
    }

    /// The request's body as [`BoardApi::respond`] wants it in
    /// [`RequestParts::with_body`]: read from the `Session` for a request
    /// that has one to read (a `POST` to the MCP endpoint), at most one byte
    /// past its limit (then answered `413`); empty for every other request,
    /// whose body is left alone. For a host that calls `respond` itself
    /// with a `Session` at hand (a gateway plugin). A body must arrive
    /// within [`BODY_DEADLINE`]: one still arriving then is answered as
    /// empty (not JSON, so refused), and the connection is not reused.
    pub async fn request_body(&self, session: &mut Session) -> Vec<u8> {
        self.body_within_deadline(session).await.unwrap_or_else(|| {
            session.set_keepalive(None);
            Vec::new()
        })
    }

    /// The request's body, or `None` when it did not arrive within
    /// [`BODY_DEADLINE`].
    async fn body_within_deadline(&self, session: &mut Session) -> Option<Vec<u8>> {
        let limit = {
            let req = session.req_header();
            self.body_limit(&req.method, req.uri.path())
        };
        if limit.is_some() && expects_continue(session.req_header()) {
            // The client waits for this before it sends the body (curl for a
            // second); a write that fails shows in the read that follows.
            let _ = session.write_continue_response().await;
        }
        match limit {
            Some(limit) => tokio::time::timeout(BODY_DEADLINE, read_body(session, limit))
                .await
                .ok(),
            None => Some(Vec::new()),
        }
    }

    /// A summary of the request for the host's log lines, for paths this
    /// API answers: method and path, and the whole query replaced by
    /// `[redacted]` however it is encoded (the `url` parameter carries the
    /// permission id), e.g. `GET /boards/detail?[redacted]`, the same text
    /// [`logging::scrub`](crate::logging::scrub) leaves. `None` for the
    /// host's paths, which the host summarizes its own way. Pingora calls
    /// `ProxyHttp::request_summary` for its error lines: delegate to this
    /// first, as the crate-level example does.
    pub fn request_summary(&self, session: &Session) -> Option<String> {
        let req = session.req_header();
        let path = req.uri.path();
        if !self.owns(path) {
            return None;
        }
        Some(RequestParts::new(&req.method, path, req.uri.query(), &req.headers).summary())
    }
}

/// Whether an HTTP/1.1 request asks `Expect: 100-continue` before its body.
fn expects_continue(req: &pingora_http::RequestHeader) -> bool {
    req.version == http::Version::HTTP_11
        && req.headers.get(http::header::EXPECT).is_some_and(|v| {
            v.as_bytes()
                .trim_ascii()
                .eq_ignore_ascii_case(b"100-continue")
        })
}

/// The status an access log records for a request whose client went away
/// before its answer was ready (nginx's 499); nothing is sent.
pub const CLIENT_GONE: u16 = 499;

/// Resolves when the client is gone: it closed the connection (HTTP/1) or
/// reset the stream (HTTP/2). A request body nobody reads is drained on the
/// way. Pingora's own proxy watches a client this way while it waits on an
/// upstream; a client that half-closes its side after the request counts as
/// gone there too.
async fn client_gone(downstream: &mut pingora_core::protocols::http::ServerSession) {
    let mut ended = false;
    loop {
        match downstream.read_body_or_idle(ended).await {
            Ok(Some(_)) => {}
            Ok(None) if !ended => ended = true,
            // A session kind with nothing to watch.
            Ok(None) => return std::future::pending().await,
            Err(_) => return,
        }
    }
}

/// How long a request body (an MCP message) may take to arrive, from the
/// end of its headers: a slow sender holds a connection and a task no
/// longer than this, however it paces its bytes.
pub const BODY_DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);

/// Reads a request body of at most `limit` bytes, stopping one byte past
/// it (the API answers `413` then): a client cannot make us hold more. A
/// body left unread, or that failed to arrive, makes the connection not
/// reused; what was read is answered (a truncated body is not JSON).
async fn read_body(session: &mut Session, limit: usize) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        match session.read_request_body().await {
            Ok(Some(chunk)) => {
                let room = (limit + 1).saturating_sub(body.len());
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if body.len() > limit {
                    session.set_keepalive(None);
                    return body;
                }
            }
            Ok(None) => return body,
            Err(e) => {
                log::debug!("request body not read: {}", e.etype().as_str());
                session.set_keepalive(None);
                return body;
            }
        }
    }
}

/// A request [`BoardApi::serve`] answered, for an access log.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Answered {
    /// The status sent, or [`CLIENT_GONE`] (499) when the client went away
    /// before the answer was ready and nothing was sent.
    pub status: u16,
    /// Body bytes as written (compressed when a coding was negotiated; 0
    /// for HEAD, `304` and a client that went away).
    pub bytes: usize,
    /// The store level that answered and the board id, when a board was read.
    pub served: Served,
}

/// Writes an [`ApiResponse`] through Pingora's downstream modules
/// (compression applies). `HEAD` gets the same headers, `Content-Length`
/// included, and no body.
async fn write(session: &mut Session, mut response: ApiResponse, head: bool) -> Result<()> {
    let header = response_header(&mut response);
    let has_bytes = response.has_body() && !response.body.is_empty();
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

/// The response header of `response`, with its `Content-Length` when its
/// status carries a body. Takes the answer's header map (the caller
/// sends the body alone after it).
///
/// The map becomes Pingora's header as it is, without Pingora's map of
/// the names' case: `append_header` would turn each name into its titled
/// bytes (copied, for a name that is not a standard one) and parse it back,
/// one name at a time, and keep a second map of them. Without that map
/// Pingora's HTTP/1.1 writer titles the names it knows (`Content-Type`)
/// and writes the others as they are: the bytes the case map holds for
/// names that come as `HeaderName`s (a test compares the two). HTTP/2
/// sends names in lower case either way.
///
/// `X-Request-Id` differs in every answer. Over HTTP/2 it goes out as an
/// HPACK literal never indexed (RFC 7541, 6.2.3; the h2 crate writes a
/// value marked sensitive so) instead of entering the connection's header
/// table, where a value no later answer repeats only evicts the ones every
/// answer repeats and lengthens the encoder's search. Indexed, it cost a
/// cached `/api/search` over h2c about 6 µs of CPU in our service, and
/// about 10 µs in a bare Pingora responder sending our headers
/// (`benches/README.md`, "Cached hot path"). HTTP/1.1 writes the same
/// bytes either way.
fn response_header(response: &mut ApiResponse) -> ResponseHeader {
    let mut headers = std::mem::take(&mut response.headers);
    if let Some(id) = headers.get_mut(request_id::X_REQUEST_ID) {
        id.set_sensitive(true);
    }
    if response.has_body() {
        headers.insert(header::CONTENT_LENGTH, response.body.len().into());
    }
    // Room for what the downstream modules add (compression's
    // `Content-Encoding`, `Transfer-Encoding`), so a short answer's map is
    // not grown and rehashed for its last headers.
    headers.reserve(4);
    let (mut parts, ()) = http::Response::new(()).into_parts();
    parts.status = response.status;
    parts.headers = headers;
    ResponseHeader::from(parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ApiSettings;

    /// Between two events an open stream holds the future of `serve` (in
    /// the box of the host's `request_filter`) and that of `serve_events`
    /// (in a box of its own), whatever the other requests' futures grow
    /// to: a cold load, a body being read, an answer being written.
    #[tokio::test]
    async fn an_open_stream_holds_small_futures() {
        let settings = ApiSettings::from_yaml("board_api: {}\n").expect("the defaults");
        let api = BoardApi::new(&settings).expect("an api");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a listener");
        let addr = listener.local_addr().expect("its address");
        let _client = tokio::net::TcpStream::connect(addr)
            .await
            .expect("a client");
        let (server, _) = listener.accept().await.expect("a connection");
        let stream = pingora_core::protocols::l4::stream::Stream::from(server);
        let mut session = Session::new_h1(Box::new(stream));
        let serve = std::mem::size_of_val(&api.serve(&mut session));
        let events = std::mem::size_of_val(&api.serve_events(&mut session, None));
        let request = std::mem::size_of_val(&api.serve_request(&mut session));
        eprintln!("futures: serve {serve} B, serve_events {events} B, serve_request {request} B");
        // 32 B and 1.7 KiB when written (a change's load inlined made the
        // second 17 KiB).
        assert!(serve <= 256, "serve's future: {serve} B");
        assert!(events <= 2048, "serve_events' future: {events} B");
    }

    /// The header written for an answer: its `X-Request-Id` alone is marked
    /// never to be indexed (HTTP/2's header table), and `Content-Length` is
    /// the body's.
    #[tokio::test]
    async fn only_the_request_id_is_never_indexed() {
        let settings = ApiSettings::from_yaml("board_api: {}\n").expect("the defaults");
        let api = BoardApi::new(&settings).expect("an api");
        let headers = http::HeaderMap::new();
        let method = http::Method::GET;
        let parts = RequestParts::new(&method, "/api/search", Some("url=x"), &headers);
        let mut response = api.respond(parts).await.expect("an answer");
        assert_eq!(response.status, 400);
        let sent = response.headers.clone();
        let header = response_header(&mut response);
        let id = header.headers.get(request_id::X_REQUEST_ID).expect("an id");
        assert!(id.is_sensitive());
        assert_eq!(Some(id), sent.get(request_id::X_REQUEST_ID));
        let indexed: Vec<_> = header
            .headers
            .iter()
            .filter(|(name, value)| **name != request_id::X_REQUEST_ID && !value.is_sensitive())
            .map(|(name, _)| name.as_str())
            .collect();
        assert_eq!(indexed.len(), header.headers.len() - 1, "{indexed:?}");
        assert!(indexed.contains(&"access-control-allow-origin"));
        let length = header
            .headers
            .get(header::CONTENT_LENGTH)
            .expect("a length");
        assert_eq!(
            length.to_str().ok(),
            Some(response.body.len().to_string().as_str())
        );
    }

    /// Over HTTP/1.1 the header built from the answer's map, without
    /// Pingora's map of the names' case, writes the bytes that appending
    /// each name and value through Pingora writes: the names Pingora knows
    /// titled (`Content-Type`, `Cache-Control`), the others as they are.
    #[tokio::test]
    async fn http1_writes_the_names_as_appending_them_would() {
        let settings = ApiSettings::from_yaml("board_api: {}\n").expect("the defaults");
        let api = BoardApi::new(&settings).expect("an api");
        let mut headers = http::HeaderMap::new();
        headers.insert(
            http::header::ORIGIN,
            "https://example.com".parse().expect("a value"),
        );
        let method = http::Method::GET;
        let parts = RequestParts::new(&method, "/api/search", Some("url=x"), &headers);
        let mut response = api.respond(parts).await.expect("an answer");
        assert!(response.headers.len() >= 5, "{:?}", response.headers);
        let mut appended = ResponseHeader::build(response.status, None).expect("a header");
        for (name, value) in &response.headers {
            appended.append_header(name, value).expect("appended");
        }
        let length = response.body.len();
        appended
            .insert_header(header::CONTENT_LENGTH, length)
            .expect("inserted");
        let built = response_header(&mut response);
        let wire = |h: &ResponseHeader| {
            let mut buf = Vec::new();
            h.header_to_h1_wire(&mut buf);
            String::from_utf8(buf).expect("text")
        };
        let (built, appended) = (wire(&built), wire(&appended));
        assert_eq!(built, appended);
        assert!(built.contains("Content-Type: application/json"), "{built}");
        assert!(built.contains("Cache-Control: "), "{built}");
        assert!(built.contains("access-control-allow-origin: "), "{built}");
        assert!(built.contains("x-request-id: "), "{built}");
        assert!(
            built.contains(&format!("Content-Length: {length}\r\n")),
            "{built}"
        );
    }
}
