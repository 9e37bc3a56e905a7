//! One bounded `GET` to the provider over Pingora's client stack: the origin's
//! address (resolved asynchronously, cached, re-resolved), the `HttpPeer` with
//! TLS, SNI, per-peer CA and timeouts, the pooled connector, body limits and
//! gzip decoding. Used by `ProviderClient` for the token and boards requests.

use super::arriving::Arriving;
use super::body::decode_body;
use super::hooks::{self, Offload, Pace};
use super::settings::ProviderSettings;
use crate::provider::answer::{Answer, AnswerError};
use crate::provider::error::FetchError;
use bytes::Bytes;
use pingora_core::connectors::http::Connector;
use pingora_core::protocols::http::client::HttpSession;
use pingora_core::protocols::tls::CaType;
use pingora_core::upstreams::peer::HttpPeer;
use pingora_error::ErrorType;
use pingora_http::RequestHeader;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a resolved origin address is used before it is looked up again.
pub const RESOLVE_TTL: Duration = Duration::from_secs(60);
/// How long an idle pooled connection to the provider is kept.
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// A fully read provider response: status and decoded body.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub body: Bytes,
    /// The body read as a boards answer while it arrived, when that was
    /// asked for ([`Read::Answer`]) and the answer is a success, plain or
    /// gzip (`body` is then the inflated body).
    pub answer: Option<Box<Result<Answer, AnswerError>>>,
}

/// What a request's body is read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// Bytes only.
    Body,
    /// A boards answer, read as it arrives when it can be.
    Answer,
}

/// Where requests go: scheme, host, port and the names sent for it.
#[derive(Debug, Clone)]
struct Origin {
    tls: bool,
    /// Host name or IP literal (IPv6 without brackets), for lookup and SNI.
    host: String,
    port: u16,
    /// The `Host` header value (`host[:port]`, port only when not the default).
    host_header: String,
    /// Set when the host is an IP literal: no lookup needed.
    literal: Option<IpAddr>,
}

/// The Pingora connector plus everything needed to build a peer for the origin.
pub struct Transport {
    connector: Connector,
    origin: Origin,
    ca: Option<Arc<CaType>>,
    resolved: Mutex<Option<(SocketAddr, Instant)>>,
    user_agent: String,
    connect_timeout: Duration,
    read_timeout: Duration,
    max_response_bytes: usize,
    /// The global cap on exchanges in flight to the provider.
    in_flight: Arc<tokio::sync::Semaphore>,
    /// Where gzip bodies are inflated; inline when absent.
    offload: Option<Arc<dyn Offload>>,
    /// The fleet's shared budget toward the provider, when configured.
    pace: Option<Arc<dyn Pace>>,
}

impl Transport {
    /// Build the transport for validated `settings`, with the CA certificates
    /// already loaded from `settings.ca_file`.
    pub fn new(
        settings: &ProviderSettings,
        ca: Option<Arc<CaType>>,
        offload: Option<Arc<dyn Offload>>,
        pace: Option<Arc<dyn Pace>>,
    ) -> Result<Self, String> {
        let url = &settings.origin;
        let tls = match url.scheme() {
            "https" => true,
            "http" => false,
            other => return Err(format!("origin scheme must be http or https, not {other}")),
        };
        let host = match url.host() {
            Some(url::Host::Domain(d)) => d.to_owned(),
            Some(url::Host::Ipv4(ip)) => ip.to_string(),
            Some(url::Host::Ipv6(ip)) => ip.to_string(),
            None => return Err("origin has no host".into()),
        };
        let port = url
            .port_or_known_default()
            .ok_or_else(|| "origin has no port".to_owned())?;
        let host_str = url.host_str().unwrap_or_default();
        let host_header = match url.port() {
            Some(p) => format!("{host_str}:{p}"),
            None => host_str.to_owned(),
        };
        let literal = host.parse::<IpAddr>().ok();
        Ok(Transport {
            connector: Connector::new(None),
            origin: Origin {
                tls,
                host,
                port,
                host_header,
                literal,
            },
            ca,
            resolved: Mutex::new(None),
            user_agent: settings.user_agent.clone(),
            connect_timeout: settings.connect_timeout,
            read_timeout: settings.read_timeout,
            max_response_bytes: settings.max_response_bytes,
            in_flight: Arc::new(tokio::sync::Semaphore::new(
                settings
                    .max_in_flight
                    .clamp(1, tokio::sync::Semaphore::MAX_PERMITS),
            )),
            offload,
            pace,
        })
    }

    /// The origin's socket address: an IP literal as is, a host name from the
    /// cache while fresh, else looked up again (a stale address is kept when the
    /// lookup fails, so a resolver hiccup does not fail requests).
    async fn address(&self) -> Result<SocketAddr, FetchError> {
        if let Some(ip) = self.origin.literal {
            return Ok(SocketAddr::new(ip, self.origin.port));
        }
        let cached = *self.resolved.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((addr, at)) = cached {
            if at.elapsed() < RESOLVE_TTL {
                return Ok(addr);
            }
        }
        let host = (self.origin.host.as_str(), self.origin.port);
        let looked_up =
            tokio::time::timeout(self.connect_timeout, tokio::net::lookup_host(host)).await;
        let first = match looked_up {
            Ok(Ok(mut addrs)) => addrs.next().ok_or_else(|| "no address".to_string()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err("timed out".to_string()),
        };
        let host = &self.origin.host;
        match (first, cached) {
            (Ok(addr), _) => {
                *self.resolved.lock().unwrap_or_else(|e| e.into_inner()) =
                    Some((addr, Instant::now()));
                Ok(addr)
            }
            // Nothing fails: the one line that says the resolver did.
            (Err(why), Some((stale, _))) => {
                log::warn!("provider: resolving {host} failed ({why}); using {stale} as before");
                Ok(stale)
            }
            // The request's failure line says it (once per failure, not a
            // line here and another there).
            (Err(why), None) => Err(FetchError::upstream(format!(
                "cannot resolve provider host {host}: {why}"
            ))),
        }
    }

    /// The peer for one request: TLS with SNI (the name checked on the
    /// certificate) for `https`, the per-peer CA when configured, timeouts.
    fn peer(&self, addr: SocketAddr) -> HttpPeer {
        let sni = if self.origin.tls {
            self.origin.host.clone()
        } else {
            String::new()
        };
        let mut peer = HttpPeer::new(addr, self.origin.tls, sni);
        peer.options.connection_timeout = Some(self.connect_timeout);
        // TCP connect plus the TLS handshake.
        peer.options.total_connection_timeout = Some(self.connect_timeout * 2);
        peer.options.read_timeout = Some(self.read_timeout);
        peer.options.write_timeout = Some(self.read_timeout);
        peer.options.idle_timeout = Some(POOL_IDLE_TIMEOUT);
        peer.options.ca = self.ca.clone();
        peer
    }

    fn request_header(&self, target: &str) -> Result<RequestHeader, FetchError> {
        let build = || -> pingora_error::Result<RequestHeader> {
            let mut req = RequestHeader::build("GET", target.as_bytes(), Some(4))?;
            req.insert_header("Host", self.origin.host_header.as_str())?;
            req.insert_header("Accept", "application/json")?;
            req.insert_header("Accept-Encoding", "gzip")?;
            req.insert_header("User-Agent", self.user_agent.as_str())?;
            Ok(req)
        };
        build().map_err(|e| {
            FetchError::upstream(format!("building the request: {}", e.etype().as_str()))
        })
    }

    /// `GET target` (path and query, already percent-encoded): the status and
    /// the decoded body. The connection goes back to the pool after a fully
    /// read response and is dropped on any error.
    ///
    /// # Errors
    ///
    /// [`FetchError::Upstream`] when the provider is unreachable, sends an
    /// unsupported encoding or a body over the size limit;
    /// [`FetchError::Challenged`] when its bot wall asks for a challenge;
    /// [`FetchError::Timeout`] on a connect, write or read timeout;
    /// [`FetchError::OverBudget`] when the fleet's budget toward the
    /// provider has no room before `deadline`.
    pub async fn get(
        &self,
        what: &str,
        target: &str,
        read: Read,
        deadline: tokio::time::Instant,
    ) -> Result<Response, FetchError> {
        if let Some(pace) = &self.pace {
            pace.admit(deadline)
                .await
                .map_err(|_| FetchError::OverBudget)?;
        }
        let started = Instant::now();
        // One turn under the global cap per exchange (retry included); the
        // caller's deadline bounds the wait.
        let Ok(_turn) = self.in_flight.acquire().await else {
            return Err(FetchError::upstream("provider client closed"));
        };
        let result = self.get_once(target, read).await.map_err(|e| match e {
            FetchError::Upstream(msg) => FetchError::Upstream(format!("{what} request: {msg}")),
            other => other,
        });
        let ms = started.elapsed().as_millis();
        // `what` names the request; the target is never logged (it holds secrets).
        match &result {
            Ok(r) => log::debug!("provider: {what} request: HTTP {} in {ms} ms", r.status),
            Err(e) => log::debug!("provider: request failed in {ms} ms: {e:?}"),
        }
        result
    }

    async fn get_once(&self, target: &str, read: Read) -> Result<Response, FetchError> {
        let addr = self.address().await?;
        let peer = self.peer(addr);
        let mut attempt = 0;
        loop {
            let (mut session, reused) = self
                .connector
                .get_http_session(&peer)
                .await
                .map_err(|e| pingora_failure("connecting", &e))?;
            session.set_read_timeout(Some(self.read_timeout));
            session.set_write_timeout(Some(self.read_timeout));
            match self.exchange(&mut session, target, read).await {
                Ok(Exchanged::Done(response)) => {
                    if session.response_done() {
                        self.connector
                            .release_http_session(session, &peer, Some(POOL_IDLE_TIMEOUT))
                            .await;
                    }
                    return Ok(response);
                }
                Ok(Exchanged::Refused(e)) => return Err(e),
                Err(mut e) => {
                    // A pooled connection the provider closed meanwhile: try once more
                    // on a fresh one. Only errors Pingora marks retry-safe.
                    e.retry.decide_reuse(reused);
                    if attempt == 0 && e.retry() {
                        attempt += 1;
                        log::debug!(
                            "provider: reused connection failed ({}), retrying",
                            describe(&e)
                        );
                        continue;
                    }
                    return Err(pingora_failure("exchanging", &e));
                }
            }
        }
    }

    /// Write the request and read the whole response, within the limits.
    async fn exchange(
        &self,
        session: &mut HttpSession,
        target: &str,
        read: Read,
    ) -> pingora_error::Result<Exchanged> {
        let req = match self.request_header(target) {
            Ok(req) => req,
            Err(e) => return Ok(Exchanged::Refused(e)),
        };
        session.write_request_header(Box::new(req)).await?;
        session.finish_request_body().await?;
        // Skip informational (1xx) heads; bounded so a chatty server cannot
        // loop us. Past the bound the answer is refused before its body is
        // asked for: Pingora never starts its body reader after a `1xx`
        // head, and reading a body then panics.
        let mut head_reads = 0;
        let (status, encoding, length) = loop {
            session.read_response_header().await?;
            head_reads += 1;
            let Some(head) = session.response_header() else {
                return pingora_error::Error::e_explain(
                    ErrorType::InvalidHTTPHeader,
                    "no response header",
                );
            };
            let status = head.status.as_u16();
            if (100..200).contains(&status) {
                if head_reads < MAX_HEADS {
                    continue;
                }
                return Ok(Exchanged::Refused(FetchError::upstream(format!(
                    "more than {} interim (1xx) answers",
                    MAX_HEADS - 1
                ))));
            }
            if let Some(action) = head.headers.get(WAF_ACTION) {
                // The bot wall answered, not the provider: its body is a
                // page for a browser, never read.
                return Ok(Exchanged::Refused(waf_refusal(action.as_bytes(), status)));
            }
            let encoding = head.headers.get(http::header::CONTENT_ENCODING).map(|v| {
                String::from_utf8_lossy(v.as_bytes())
                    .trim()
                    .to_ascii_lowercase()
            });
            let length = head
                .headers
                .get(http::header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok());
            break (status, encoding, length);
        };
        let max = self.max_response_bytes;
        if length.is_some_and(|n| n > max as u64) {
            return Ok(Exchanged::Refused(FetchError::upstream(format!(
                "HTTP {status} body announces {} bytes, over the {max}-byte limit",
                length.unwrap_or_default()
            ))));
        }
        // One buffer for the whole body, sized from the announced length
        // (already held to `max`): a large allocation is mapped lazily, so a
        // length that overstates the body costs address space, not memory.
        // Without a length it grows by doubling.
        let initial = length.map_or(64 * 1024, |n| usize::try_from(n).unwrap_or(max));
        let initial = initial.min(max);
        // A boards answer that is a success, plain or gzip, is read while it
        // arrives; anything else once it is whole.
        let coding = match encoding.as_deref() {
            None | Some("" | "identity") => Some(false),
            Some("gzip" | "x-gzip") => Some(true),
            Some(_) => None,
        };
        let mut sink = if let (Read::Answer, Some(gzip), 200..=299) = (read, coding, status) {
            let offload = self.offload.clone();
            Sink::Arriving(Box::new(Arriving::new(initial, gzip, max, offload)))
        } else {
            Sink::Whole(Vec::with_capacity(initial))
        };
        let mut received = 0usize;
        let over = || {
            Exchanged::Refused(FetchError::upstream(format!(
                "HTTP {status} body over the {max}-byte limit"
            )))
        };
        match session {
            // HTTP/1.1: each read is copied once, from the connection's
            // buffer into the body (`read_response_body` copies it into a
            // new chunk first).
            HttpSession::H1(h1) => {
                while let Some(chunk) = h1.read_body_ref().await? {
                    received += chunk.len();
                    if received > max {
                        return Ok(over());
                    }
                    sink.push(chunk).await;
                }
            }
            _ => {
                while let Some(chunk) = session.read_response_body().await? {
                    received += chunk.len();
                    if received > max {
                        return Ok(over());
                    }
                    sink.push(&chunk).await;
                }
            }
        }
        let body = match sink {
            Sink::Whole(body) => body,
            Sink::Arriving(arriving) => {
                return Ok(match arriving.finish().await {
                    Ok((body, answer)) => Exchanged::Done(Response {
                        status,
                        body,
                        answer: Some(Box::new(answer)),
                    }),
                    Err(e) => Exchanged::Refused(e),
                });
            }
        };
        let decoded = match (&self.offload, encoding.as_deref()) {
            // Inflating is CPU work: off the async threads when a pool is set.
            (Some(offload), Some(_)) => {
                let encoding = encoding.clone();
                hooks::run_on(Some(offload.as_ref()), move || {
                    decode_body(encoding.as_deref(), body, max)
                })
                .await
                .unwrap_or_else(|| Err(FetchError::upstream("inflating did not return")))
            }
            _ => decode_body(encoding.as_deref(), body, max),
        };
        let body = match decoded {
            Ok(body) => body,
            Err(e) => return Ok(Exchanged::Refused(e)),
        };
        Ok(Exchanged::Done(Response {
            status,
            body,
            answer: None,
        }))
    }
}

/// Where a body's reads go.
enum Sink {
    /// Into one buffer, read once it is whole.
    Whole(Vec<u8>),
    /// To a boards answer's reader, as they come.
    Arriving(Box<Arriving>),
}

impl Sink {
    async fn push(&mut self, chunk: &[u8]) {
        match self {
            Sink::Whole(body) => body.extend_from_slice(chunk),
            Sink::Arriving(arriving) => arriving.push(chunk).await,
        }
    }
}

/// Response heads read at most for one request: the interim (`1xx`) ones
/// and the final one.
const MAX_HEADS: usize = 5;

/// The header AWS WAF (in front of Milanote) sets on what it answers itself.
const WAF_ACTION: &str = "x-amzn-waf-action";

/// What an answer of the provider's bot wall means: `challenge` (HTTP 202)
/// and `captcha` (HTTP 405) ask for a browser to prove itself, which this
/// client never does: [`FetchError::Challenged`], counted in
/// `board_api_upstream_challenges_total`. Any other action is an unusable
/// answer like any other.
fn waf_refusal(action: &[u8], status: u16) -> FetchError {
    let action = action.trim_ascii();
    if action.eq_ignore_ascii_case(b"challenge") || action.eq_ignore_ascii_case(b"captcha") {
        crate::metrics::upstream_challenge();
        return FetchError::Challenged;
    }
    FetchError::upstream(format!(
        "the bot wall answered HTTP {status} ({WAF_ACTION})"
    ))
}

/// How an exchange ended when the transport itself did not fail.
enum Exchanged {
    /// A whole response.
    Done(Response),
    /// A response this client refuses (challenge, too big, bad encoding); the
    /// connection is dropped, not pooled.
    Refused(FetchError),
}

/// A Pingora error as a fetch error: timeouts are `Timeout`, the rest `Upstream`
/// with the error type and context only (no request target is ever in them, and
/// the caller redacts anyway).
fn pingora_failure(stage: &str, e: &pingora_error::Error) -> FetchError {
    match e.etype() {
        ErrorType::ConnectTimedout | ErrorType::ReadTimedout | ErrorType::WriteTimedout => {
            // The load's outcome (a timeout) is logged at WARN by its caller.
            log::debug!("provider: {stage} timed out: {}", describe(e));
            FetchError::Timeout
        }
        _ => FetchError::upstream(format!("{stage}: {}", describe(e))),
    }
}

/// A Pingora error for the log: its type, source and the kind of an I/O cause.
/// Never its context or message, which can quote the provider's raw bytes
/// (a malformed response header is reported with the buffer it came in).
fn describe(e: &pingora_error::Error) -> String {
    let mut text = format!("{} ({:?})", e.etype().as_str(), e.esource());
    let io = e
        .cause
        .as_ref()
        .and_then(|c| c.downcast_ref::<std::io::Error>());
    if let Some(io) = io {
        text.push_str(&format!(": {:?}", io.kind()));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    fn transport(origin: &str) -> Transport {
        let settings = ProviderSettings {
            origin: url::Url::parse(origin).unwrap(),
            ..ProviderSettings::default()
        };
        Transport::new(&settings, None, None, None).unwrap()
    }

    #[test]
    fn https_peer_uses_tls_and_sni_of_the_origin_host() {
        let t = transport("https://app.milanote.com");
        assert_eq!(t.origin.host_header, "app.milanote.com");
        assert_eq!(t.origin.port, 443);
        let peer = t.peer("192.0.2.1:443".parse().unwrap());
        assert_eq!(peer.sni, "app.milanote.com");
        assert!(peer.is_tls());
        assert_eq!(peer.options.connection_timeout, Some(t.connect_timeout));
    }

    #[test]
    fn http_origin_with_ip_literal_needs_no_lookup() {
        let t = transport("http://127.0.0.1:8089");
        assert_eq!(t.origin.literal, Some("127.0.0.1".parse().unwrap()));
        assert_eq!(t.origin.host_header, "127.0.0.1:8089");
        let peer = t.peer("127.0.0.1:8089".parse().unwrap());
        assert!(!peer.is_tls());
        let t = transport("http://[::1]:8089");
        assert_eq!(t.origin.host_header, "[::1]:8089");
        assert_eq!(t.origin.literal, Some("::1".parse().unwrap()));
    }

    #[test]
    fn the_bot_walls_challenge_and_captcha_are_named() {
        assert_eq!(waf_refusal(b"challenge", 202), FetchError::Challenged);
        assert_eq!(waf_refusal(b"Captcha ", 405), FetchError::Challenged);
        assert!(matches!(
            waf_refusal(b"block", 403),
            FetchError::Upstream(msg) if msg.contains("403")
        ));
    }

    #[test]
    fn request_header_carries_only_the_clients_own_headers() {
        let t = transport("http://127.0.0.1:8089");
        let req = t.request_header("/api/boards?ids=a").unwrap();
        let mut names: Vec<_> = req.headers.keys().map(|k| k.as_str().to_owned()).collect();
        names.sort();
        assert_eq!(names, ["accept", "accept-encoding", "host", "user-agent"]);
    }
}
