//! One webhook attempt over Pingora's own client stack (its connector and
//! `HttpPeer`, as the provider client uses): `POST` of the signed body,
//! bounded by a deadline, the answer read no further than its status and a
//! small part of its body, redirects not followed. Nothing here logs the
//! receiver's URL.

use super::sign::Signed;
use bytes::Bytes;
use pingora_core::connectors::http::Connector;
use pingora_core::upstreams::peer::HttpPeer;
use pingora_http::RequestHeader;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// The whole of one attempt: resolving, connecting, sending, the answer.
pub const ATTEMPT_DEADLINE: Duration = Duration::from_secs(15);
/// Connecting (TCP and TLS) within the attempt.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Bytes of a receiver's answer read at most (then the connection is
/// dropped).
const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// Response heads read at most: the interim (`1xx`) ones and the final
/// one. A receiver that sends more interim heads than `MAX_HEADS - 1` is
/// retried later, as a broken answer is.
pub const MAX_HEADS: usize = 5;
/// The longest `Retry-After` honoured.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(3600);

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// A `2xx`.
    Delivered(u16),
    /// Worth another attempt: a connection error, a timeout, `5xx`, `408`,
    /// `429`; with the receiver's `Retry-After` when it sent one.
    Retry {
        why: String,
        after: Option<Duration>,
    },
    /// Not worth another: another `4xx` (`410`: the receiver gave up), a
    /// redirect, a URL this client cannot use.
    Failed(String),
}

impl Attempt {
    /// `delivered`, `retry` or `failed`: a span's outcome.
    pub fn name(&self) -> &'static str {
        match self {
            Attempt::Delivered(_) => "delivered",
            Attempt::Retry { .. } => "retry",
            Attempt::Failed(_) => "failed",
        }
    }
}

/// What an answer's status means for the delivery.
pub fn classify(status: u16, retry_after: Option<Duration>) -> Attempt {
    match status {
        200..=299 => Attempt::Delivered(status),
        408 | 429 | 500..=599 => Attempt::Retry {
            why: format!("HTTP {status}"),
            after: retry_after,
        },
        410 => Attempt::Failed("HTTP 410: the receiver gave up on this webhook".into()),
        300..=399 => Attempt::Failed(format!("HTTP {status}: redirects are not followed")),
        _ => Attempt::Failed(format!("HTTP {status}")),
    }
}

/// `Retry-After` in seconds (an HTTP date is not honoured: the back-off
/// applies), capped.
pub fn retry_after(value: Option<&[u8]>) -> Option<Duration> {
    let text = std::str::from_utf8(value?).ok()?.trim();
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Digits past u64 (a 20-digit value) are "a very long time": capped,
    // never ignored.
    let seconds: u64 = text.parse().unwrap_or(u64::MAX);
    Some(Duration::from_secs(seconds).min(MAX_RETRY_AFTER))
}

/// Sends webhooks; one per process, shared by every job.
pub struct Sender {
    connector: Connector,
    user_agent: String,
}

impl Default for Sender {
    fn default() -> Self {
        Sender::named("webhook")
    }
}

impl Sender {
    /// A sender that names itself `agent` in `User-Agent` (the webhooks'
    /// is `shared-board-api/<version> (webhook)`).
    pub fn named(agent: &str) -> Self {
        Sender {
            connector: Connector::new(None),
            user_agent: format!("shared-board-api/{} ({agent})", env!("CARGO_PKG_VERSION")),
        }
    }

    /// `POST` of `body` to `url` with the signature headers and the
    /// `traceparent` of the run that made it, within [`ATTEMPT_DEADLINE`].
    pub async fn post(
        &self,
        url: &url::Url,
        signed: &Signed,
        body: Bytes,
        traceparent: Option<&str>,
    ) -> Attempt {
        let mut headers = vec![
            ("webhook-id", signed.id.as_str()),
            ("webhook-timestamp", signed.timestamp.as_str()),
            ("webhook-signature", signed.signature.as_str()),
        ];
        if let Some(traceparent) = traceparent {
            headers.push(("traceparent", traceparent));
        }
        self.send(url, "application/json", &headers, body, ATTEMPT_DEADLINE)
            .await
    }

    /// `POST` of `body` as `content_type` to `url` with `headers`, within
    /// `deadline`: the one HTTP client of the process's own requests
    /// (webhooks, the binary's span export).
    pub async fn send(
        &self,
        url: &url::Url,
        content_type: &str,
        headers: &[(&str, &str)],
        body: Bytes,
        deadline: Duration,
    ) -> Attempt {
        let exchange = self.exchange(url, content_type, headers, body, deadline);
        match tokio::time::timeout(deadline, exchange).await {
            Ok(attempt) => attempt,
            Err(_) => Attempt::Retry {
                why: "timed out".into(),
                after: None,
            },
        }
    }

    async fn exchange(
        &self,
        url: &url::Url,
        content_type: &str,
        headers: &[(&str, &str)],
        body: Bytes,
        deadline: Duration,
    ) -> Attempt {
        let retry = |why: String| Attempt::Retry { why, after: None };
        let tls = url.scheme() == "https";
        let Some(host) = url.host_str() else {
            return Attempt::Failed("the webhook URL has no host".into());
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let Some(port) = url.port_or_known_default() else {
            return Attempt::Failed("the webhook URL has no port".into());
        };
        let addr = match host.parse::<IpAddr>() {
            Ok(ip) => SocketAddr::new(ip, port),
            Err(_) => match tokio::net::lookup_host((host, port)).await {
                Ok(mut addrs) => match addrs.next() {
                    Some(addr) => addr,
                    None => return retry("the receiver's host has no address".into()),
                },
                Err(e) => return retry(format!("resolving the receiver's host: {}", e.kind())),
            },
        };
        let mut peer = HttpPeer::new(addr, tls, if tls { host.to_owned() } else { String::new() });
        peer.options.connection_timeout = Some(CONNECT_TIMEOUT);
        peer.options.total_connection_timeout = Some(CONNECT_TIMEOUT * 2);
        peer.options.read_timeout = Some(deadline);
        peer.options.write_timeout = Some(deadline);
        let (mut session, _) = match self.connector.get_http_session(&peer).await {
            Ok(s) => s,
            Err(e) => return retry(format!("connecting: {}", e.etype().as_str())),
        };
        let target = match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_owned(),
        };
        let host_header = match url.port() {
            Some(p) => format!("{}:{p}", url.host_str().unwrap_or_default()),
            None => url.host_str().unwrap_or_default().to_owned(),
        };
        let header = (|| -> pingora_error::Result<RequestHeader> {
            let mut req = RequestHeader::build("POST", target.as_bytes(), Some(4 + headers.len()))?;
            req.insert_header("Host", host_header.as_str())?;
            req.insert_header("Content-Type", content_type)?;
            req.insert_header("Content-Length", body.len().to_string())?;
            req.insert_header("User-Agent", self.user_agent.as_str())?;
            for (name, value) in headers {
                req.append_header(name.to_string(), *value)?;
            }
            Ok(req)
        })();
        let header = match header {
            Ok(h) => h,
            Err(_) => return Attempt::Failed("the URL's path or a header cannot be sent".into()),
        };
        let sent = async {
            session.write_request_header(Box::new(header)).await?;
            session.write_request_body(body, true).await?;
            session.finish_request_body().await?;
            // Interim (`1xx`) heads are skipped, up to a bound: past it the
            // answer is refused before its body is asked for (Pingora's
            // body reader is never started after a `1xx` head, and reading
            // a body then panics).
            let mut heads = 0;
            let status = loop {
                session.read_response_header().await?;
                heads += 1;
                let status = session.response_header().map_or(0, |h| h.status.as_u16());
                if !(100..200).contains(&status) {
                    break status;
                }
                if heads >= MAX_HEADS {
                    return Ok(Err(format!(
                        "more than {} interim (1xx) answers",
                        MAX_HEADS - 1
                    )));
                }
            };
            let head = session.response_header().ok_or_else(|| {
                pingora_error::Error::explain(
                    pingora_error::ErrorType::InvalidHTTPHeader,
                    "no answer",
                )
            })?;
            let after = retry_after(head.headers.get("retry-after").map(|v| v.as_bytes()));
            // Read a little of the answer (so a receiver that writes one
            // before closing is not cut off), then drop the connection.
            let mut read = 0;
            while read < MAX_ANSWER_BYTES {
                match session.read_response_body().await {
                    Ok(Some(chunk)) => read += chunk.len(),
                    _ => break,
                }
            }
            Ok::<_, Box<pingora_error::Error>>(Ok((status, after)))
        };
        match sent.await {
            Ok(Ok((status, after))) => classify(status, after),
            Ok(Err(why)) => retry(why),
            Err(e) => retry(format!("exchanging: {}", e.etype().as_str())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses() {
        let s = |n| classify(n, None);
        assert_eq!(s(200), Attempt::Delivered(200));
        assert_eq!(s(204), Attempt::Delivered(204));
        for n in [408, 429, 500, 502, 503, 599] {
            assert!(matches!(s(n), Attempt::Retry { .. }), "{n}");
        }
        for n in [301, 302, 307, 400, 401, 403, 404, 410, 413, 422] {
            assert!(matches!(s(n), Attempt::Failed(_)), "{n}");
        }
    }

    /// A receiver on loopback that reads one request and answers `interim`
    /// `1xx` heads, then `last` (or nothing, holding the connection).
    async fn interim_receiver(interim: usize, last: Option<&'static str>) -> url::Url {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut conn, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 8192];
            let mut read = Vec::new();
            while !read.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = conn.read(&mut buf).await.unwrap_or(0);
                if n == 0 {
                    return;
                }
                read.extend_from_slice(&buf[..n]);
            }
            let mut answer = String::new();
            for i in 0..interim {
                answer.push_str(if i % 2 == 0 {
                    "HTTP/1.1 100 Continue\r\n\r\n"
                } else {
                    "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"
                });
            }
            answer.push_str(last.unwrap_or(""));
            let _ = conn.write_all(answer.as_bytes()).await;
            tokio::time::sleep(Duration::from_secs(30)).await;
        });
        url::Url::parse(&format!("http://{addr}/hook")).unwrap()
    }

    async fn attempt(url: &url::Url) -> Attempt {
        let signed = crate::watch::sign::sign(b"0123456789abcdef", "msg_1", 1, b"{}");
        let sender = Sender::default();
        let sent = sender.post(url, &signed, Bytes::from_static(b"{}"), None);
        tokio::time::timeout(Duration::from_secs(10), sent)
            .await
            .expect("the attempt ends before the deadline")
    }

    const OK: Option<&str> = Some("HTTP/1.1 204 No Content\r\n\r\n");

    #[tokio::test]
    async fn interim_heads_within_the_bound_are_skipped() {
        for n in [0, 1, MAX_HEADS - 1] {
            let url = interim_receiver(n, OK).await;
            assert_eq!(attempt(&url).await, Attempt::Delivered(204), "{n}");
        }
    }

    #[tokio::test]
    async fn more_interim_heads_than_the_bound_are_a_retry_not_a_panic() {
        for (n, last) in [(5, OK), (5, None), (50, OK), (50, None)] {
            let url = interim_receiver(n, last).await;
            match attempt(&url).await {
                Attempt::Retry { why, after: None } => {
                    assert!(why.contains("interim"), "{n}: {why}");
                }
                other => panic!("{n} interim heads: {other:?}"),
            }
        }
    }

    #[test]
    fn retry_after_is_seconds_and_capped() {
        assert_eq!(retry_after(Some(b"3")), Some(Duration::from_secs(3)));
        assert_eq!(retry_after(Some(b" 7 ")), Some(Duration::from_secs(7)));
        assert_eq!(retry_after(Some(b"99999999")), Some(MAX_RETRY_AFTER));
        assert_eq!(
            retry_after(Some(b"99999999999999999999999")),
            Some(MAX_RETRY_AFTER)
        );
        assert_eq!(retry_after(Some(b"Wed, 21 Oct 2015 07:28:00 GMT")), None);
        assert_eq!(retry_after(Some(b"-1")), None);
        assert_eq!(retry_after(None), None);
    }
}
