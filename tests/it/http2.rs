//! The endpoints over HTTP/2 answer as over HTTP/1.1: the same checks (status,
//! headers, HEAD `Content-Length`, `304`, gzip and brotli, an error body) run
//! over HTTP/1.1 and HTTP/2, on TLS with ALPN and in cleartext with prior
//! knowledge (`server.h2c`), against the real service on loopback. An HTTP/2
//! answer carries no connection-specific header. `server.http2: false` offers
//! no `h2`; without `server.h2c` a cleartext HTTP/2 preface is not served.
//!
//! The HTTP/2 client is the `h2` crate, the one Pingora's own HTTP/2 server
//! is built on, so what the server sent is seen frame by frame.

use crate::common::*;
use std::collections::BTreeSet;
use std::io::Read;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use tokio_rustls::rustls::{ClientConfig, RootCertStore};
use tokio_rustls::TlsConnector;

/// Headers HTTP/2 forbids (RFC 9113, 8.2.2).
const CONNECTION_SPECIFIC: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
];

/// How a request travels.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Via {
    H1,
    H1Tls,
    H2Tls,
    H2c,
}

struct Client {
    addr: SocketAddr,
    via: Via,
    tls: Option<TlsConnector>,
}

/// A self-signed certificate for `localhost` in PEM files of a directory
/// of its own; the certificate (DER) and the directory.
fn certificate(tag: &str) -> (CertificateDer<'static>, std::path::PathBuf) {
    let made =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("certificate");
    let dir = std::env::temp_dir().join(format!("sba-h2-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(dir.join("cert.pem"), made.cert.pem()).expect("write cert");
    std::fs::write(dir.join("key.pem"), made.key_pair.serialize_pem()).expect("write key");
    (made.cert.der().clone(), dir)
}

/// A TLS client trusting only `cert` and offering `alpn`.
fn connector(cert: &CertificateDer<'static>, alpn: &[&[u8]]) -> TlsConnector {
    let mut roots = RootCertStore::empty();
    roots.add(cert.clone()).expect("trust the test certificate");
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    TlsConnector::from(Arc::new(config))
}

impl Client {
    async fn send(&self, method: &str, target: &str, headers: &[(&str, &str)]) -> Response {
        let tcp = tokio::net::TcpStream::connect(self.addr)
            .await
            .expect("connect");
        let answer = async {
            match (self.via, &self.tls) {
                (Via::H1, _) => h1(tcp, method, target, headers).await,
                (Via::H2c, _) => h2(tcp, "http", method, target, headers).await,
                (via, Some(tls)) => {
                    let name = ServerName::try_from("localhost").expect("server name");
                    let stream = tls.connect(name, tcp).await.expect("TLS handshake");
                    let alpn = stream.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
                    if via == Via::H2Tls {
                        assert_eq!(alpn.as_deref(), Some(&b"h2"[..]), "ALPN agreed on h2");
                        h2(stream, "https", method, target, headers).await
                    } else {
                        assert_eq!(alpn.as_deref(), Some(&b"http/1.1"[..]));
                        h1(stream, method, target, headers).await
                    }
                }
                (via, None) => panic!("{via:?} needs a TLS client"),
            }
        };
        tokio::time::timeout(Duration::from_secs(30), answer)
            .await
            .expect("an answer in time")
    }
}

async fn h1<S: AsyncRead + AsyncWrite + Unpin>(
    mut io: S,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
) -> Response {
    let mut req = format!("{method} {target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    io.write_all(req.as_bytes()).await.expect("send");
    let mut raw = Vec::new();
    // A TLS peer may close without close_notify after Connection: close.
    let _ = io.read_to_end(&mut raw).await;
    parse_response(&raw, method == "HEAD")
}

async fn h2<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    io: S,
    scheme: &str,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
) -> Response {
    let (mut send, connection) = h2::client::handshake(io).await.expect("h2 handshake");
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let mut req = http::Request::builder()
        .method(method)
        .uri(format!("{scheme}://localhost{target}"));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req.body(()).expect("request");
    let (answer, _) = send.send_request(req, true).expect("send the request");
    let answer = answer.await.expect("an HTTP/2 answer");
    let (parts, mut body) = answer.into_parts();
    let mut data = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.expect("body data");
        let _ = body.flow_control().release_capacity(chunk.len());
        data.extend_from_slice(&chunk);
    }
    let headers = parts
        .headers
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or_default().to_string()))
        .collect();
    Response {
        status: parts.status.as_u16(),
        headers,
        body: data,
    }
}

fn header_names(r: &Response) -> BTreeSet<String> {
    // Set per connection or per moment, not per answer.
    const APART: &[&str] = &["date", "connection", "keep-alive", "transfer-encoding"];
    r.headers
        .iter()
        .map(|(k, _)| k.to_ascii_lowercase())
        .filter(|k| !APART.contains(&k.as_str()))
        .collect()
}

/// The checks every transport must pass; returns the answers to compare
/// across transports: GET, HEAD, 304, gzip, br, error.
async fn checks(c: &Client) -> Vec<Response> {
    let target = format!("/api/search?url={}", link(BOARD, PERMISSION));
    let get = c.send("GET", &target, &[]).await;
    assert_eq!(get.status, 200, "{:?}: {get:?}", c.via);
    assert_eq!(
        get.header("content-type"),
        Some("application/json; charset=utf-8")
    );
    get.assert_cors();
    assert_eq!(get.json()["data"]["board"]["id"], BOARD, "{:?}", c.via);
    assert_eq!(
        get.header("content-length"),
        Some(get.body.len().to_string().as_str()),
        "{:?}",
        c.via
    );
    assert!(get.header("server-timing").is_some());
    let etag = get.header("etag").expect("an ETag").to_string();
    assert!(etag.starts_with("W/\""), "{etag}");

    let head = c.send("HEAD", &target, &[]).await;
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty(), "{:?}: HEAD carried a body", c.via);
    assert_eq!(
        head.header("content-length"),
        Some(get.body.len().to_string().as_str()),
        "{:?}",
        c.via
    );
    assert_eq!(head.header("etag"), Some(etag.as_str()));

    let not_modified = c.send("GET", &target, &[("if-none-match", &etag)]).await;
    assert_eq!(not_modified.status, 304, "{:?}", c.via);
    assert!(not_modified.body.is_empty());
    assert_eq!(not_modified.header("etag"), Some(etag.as_str()));

    let gzip = c.send("GET", &target, &[("accept-encoding", "gzip")]).await;
    assert_eq!(gzip.status, 200);
    assert_eq!(gzip.header("content-encoding"), Some("gzip"), "{:?}", c.via);
    let mut plain = Vec::new();
    flate2::read::GzDecoder::new(&gzip.body[..])
        .read_to_end(&mut plain)
        .expect("gzip body");
    assert_eq!(plain, get.body, "{:?}: gzip body", c.via);

    let br = c.send("GET", &target, &[("accept-encoding", "br")]).await;
    assert_eq!(br.status, 200);
    assert_eq!(br.header("content-encoding"), Some("br"), "{:?}", c.via);
    let mut plain = Vec::new();
    brotli::Decompressor::new(&br.body[..], 4096)
        .read_to_end(&mut plain)
        .expect("brotli body");
    assert_eq!(plain, get.body, "{:?}: brotli body", c.via);

    let bad = format!("/api/search?url={}", encode("https://example.com/x?p=y"));
    let error = c.send("GET", &bad, &[]).await;
    error.assert_error(400, "INVALID_SHARE_URL", Some("url"));

    let answers = vec![get, head, not_modified, gzip, br, error];
    if matches!(c.via, Via::H2Tls | Via::H2c) {
        for r in &answers {
            for (name, _) in &r.headers {
                assert!(
                    !CONNECTION_SPECIFIC.contains(&name.to_ascii_lowercase().as_str()),
                    "{:?}: {name} on an HTTP/2 answer",
                    c.via
                );
            }
        }
    }
    answers
}

fn tls_extra(dir: &std::path::Path) -> String {
    format!(
        "    tls:\n      cert: {}\n      key: {}\n",
        dir.join("cert.pem").display(),
        dir.join("key.pem").display()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_answers_as_http1_over_tls_and_h2c() {
    let (cert, dir) = certificate("same");
    let tls = tls_extra(&dir);
    let (plain, secure) = tokio::task::spawn_blocking(move || {
        (
            start_gateway_with("", "", "    h2c: true\n"),
            start_gateway_with("", "", &tls),
        )
    })
    .await
    .expect("gateways start");
    let clients = [
        Client {
            addr: plain.addr,
            via: Via::H1,
            tls: None,
        },
        Client {
            addr: plain.addr,
            via: Via::H2c,
            tls: None,
        },
        Client {
            addr: secure.addr,
            via: Via::H1Tls,
            tls: Some(connector(&cert, &[b"http/1.1"])),
        },
        Client {
            addr: secure.addr,
            via: Via::H2Tls,
            tls: Some(connector(&cert, &[b"h2", b"http/1.1"])),
        },
    ];
    let mut seen = Vec::new();
    for c in &clients {
        seen.push((c.via, checks(c).await));
    }
    // The same header names on every answer, whichever way it travelled.
    let (first_via, first) = &seen[0];
    for (via, answers) in &seen[1..] {
        for (a, b) in first.iter().zip(answers) {
            assert_eq!(
                header_names(a),
                header_names(b),
                "{first_via:?} and {via:?}, status {}",
                a.status
            );
            assert_eq!(a.status, b.status);
        }
    }
    tokio::task::spawn_blocking(move || drop((plain, secure)))
        .await
        .expect("gateways stop");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_is_only_offered_when_configured() {
    let (cert, dir) = certificate("offer");
    let tls = format!("{}    http2: false\n", tls_extra(&dir));
    let (h1_only, no_h2c) = tokio::task::spawn_blocking(move || {
        (start_gateway_with("", "", &tls), start_gateway("", ""))
    })
    .await
    .expect("gateways start");

    // `server.http2: false`: a client offering h2 gets HTTP/1.1.
    let tcp = tokio::net::TcpStream::connect(h1_only.addr)
        .await
        .expect("connect");
    let name = ServerName::try_from("localhost").expect("server name");
    let stream = connector(&cert, &[b"h2", b"http/1.1"])
        .connect(name, tcp)
        .await
        .expect("TLS handshake");
    assert_ne!(stream.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let r = h1(stream, "GET", "/api/nothing", &[]).await;
    r.assert_error(404, "NOT_FOUND", None);

    // No `server.h2c`: the prior-knowledge preface is not HTTP/2 here.
    let tcp = tokio::net::TcpStream::connect(no_h2c.addr)
        .await
        .expect("connect");
    let refused = tokio::time::timeout(Duration::from_secs(30), async {
        let (mut send, connection) = h2::client::handshake(tcp).await.ok()?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        let req = http::Request::get("http://localhost/api/nothing")
            .body(())
            .ok()?;
        let (answer, _) = send.send_request(req, true).ok()?;
        answer.await.ok()
    })
    .await
    .expect("the attempt ends in time");
    assert!(refused.is_none(), "h2c answered without server.h2c");
    tokio::task::spawn_blocking(move || drop((h1_only, no_h2c)))
        .await
        .expect("gateways stop");
    let _ = std::fs::remove_dir_all(dir);
}
