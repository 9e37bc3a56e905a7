//! The standalone service over TLS (`board_api.server.tls`): a certificate
//! made in the test, the real service on loopback, and a rustls client that
//! trusts only that certificate.

use crate::common::*;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use tokio_rustls::rustls::{ClientConfig, RootCertStore};
use tokio_rustls::TlsConnector;

/// A self-signed certificate for `localhost`, written as PEM files in a
/// directory of its own; returns the certificate (DER) and the directory.
fn certificate() -> (CertificateDer<'static>, std::path::PathBuf) {
    let made =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("certificate");
    let dir = std::env::temp_dir().join(format!("sba-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(dir.join("cert.pem"), made.cert.pem()).expect("write cert");
    std::fs::write(dir.join("key.pem"), made.key_pair.serialize_pem()).expect("write key");
    (made.cert.der().clone(), dir)
}

fn client(cert: CertificateDer<'static>) -> TlsConnector {
    let mut roots = RootCertStore::empty();
    roots.add(cert).expect("trust the test certificate");
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    TlsConnector::from(Arc::new(config))
}

/// One request over TLS; returns the status and body of the answer.
async fn get_tls(connector: &TlsConnector, gw: &Gateway, target: &str) -> (u16, Vec<u8>) {
    let tcp = tokio::net::TcpStream::connect(gw.addr)
        .await
        .expect("connect");
    let name = ServerName::try_from("localhost").expect("server name");
    let mut tls = connector.connect(name, tcp).await.expect("TLS handshake");
    let req = format!("GET {target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    tls.write_all(req.as_bytes()).await.expect("send");
    let mut raw = Vec::new();
    // A TLS peer may close without close_notify after Connection: close; what
    // was read until then is the answer.
    let _ = tls.read_to_end(&mut raw).await;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no header end in {:?}", String::from_utf8_lossy(&raw)));
    let head = String::from_utf8_lossy(&raw[..split]);
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status code");
    (status, raw[split + 4..].to_vec())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_over_tls_with_a_configured_certificate() {
    let (cert, dir) = certificate();
    let server_extra = format!(
        "    tls:\n      cert: {}\n      key: {}\n",
        dir.join("cert.pem").display(),
        dir.join("key.pem").display()
    );
    let gw = tokio::task::spawn_blocking(move || start_gateway_with("", "", &server_extra))
        .await
        .expect("gateway starts");
    let connector = client(cert);
    let target = format!("/api/search?url={}", link(BOARD, PERMISSION));
    let (status, body) =
        tokio::time::timeout(Duration::from_secs(30), get_tls(&connector, &gw, &target))
            .await
            .expect("answer in time");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let json: serde_json::Value = serde_json::from_slice(&body).expect("JSON body");
    assert_eq!(json["data"]["board"]["id"], BOARD);

    // A client that does not trust the certificate is refused the handshake.
    let stranger = {
        let (other, _) = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])
            .map(|c| (c.cert.der().clone(), ()))
            .expect("another certificate");
        client(other)
    };
    let tcp = tokio::net::TcpStream::connect(gw.addr)
        .await
        .expect("connect");
    let name = ServerName::try_from("localhost").expect("server name");
    let refused = tokio::time::timeout(Duration::from_secs(30), stranger.connect(name, tcp))
        .await
        .expect("handshake ends in time");
    assert!(refused.is_err(), "an untrusted certificate was accepted");
    tokio::task::spawn_blocking(move || drop(gw))
        .await
        .expect("gateway stops");
    let _ = std::fs::remove_dir_all(dir);
}
