//! The host gateway example, run in-process: its own routes stay its own
//! (`/api/health`, `/api/users`, other paths under our prefix unless claimed),
//! ours answer, and no line of its log holds a permission id, at trace
//! level, including when a client goes away before reading its answer.
//!
//! The host is `examples/host_gateway.rs` itself (included below), configured
//! from `examples/host_gateway.yaml` with the provider pointed at the sample
//! upstream.

#[allow(dead_code)]
#[path = "../../examples/host_gateway.rs"]
mod host_gateway;

use crate::common::*;
use host_gateway::{start_host_upstream, HostGateway};
use pingora_proxy::Session;
use shared_board_api::config::ApiSettings;
use shared_board_api::logging::Redacting;
use shared_board_api::BoardApi;
use std::io::Write;
use std::net::TcpStream;
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

/// The permission id every request here carries; it must never be logged.
const SECRET: &str = "HostLeak5Zq8Wm";

static LINES: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Records every line the host's logger would write, after the scrubber.
struct Capture;

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }
    fn log(&self, record: &log::Record) {
        let line = format!("{} {}: {}", record.level(), record.target(), record.args());
        LINES.lock().unwrap_or_else(|e| e.into_inner()).push(line);
    }
    fn flush(&self) {}
}

/// The host's logger, as the example installs it, at trace level.
fn capture_logs() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        Redacting::new(Capture)
            .install(log::LevelFilter::Trace)
            .expect("first logger in this test binary");
    });
}

fn assert_no_secret_logged() {
    let lines = LINES.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("TRACE") || l.starts_with("DEBUG")),
        "the capture saw no debug or trace line: {lines:?}"
    );
    for line in &lines {
        assert!(!line.contains(SECRET), "permission id in the log: {line}");
    }
}

/// The example's YAML with the provider at the sample upstream and the
/// prefix (and `claim_prefix`) replaced.
fn settings(prefix: &str, claim_prefix: bool) -> ApiSettings {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/host_gateway.yaml");
    let text = std::fs::read_to_string(path).expect("example config");
    assert!(
        text.contains("  prefix: /boards\n") && text.contains("origin: https://app.milanote.com")
    );
    let text = text
        .replace(
            "  prefix: /boards\n",
            &format!("  prefix: {prefix}\n  claim_prefix: {claim_prefix}\n"),
        )
        .replace(
            "origin: https://app.milanote.com",
            &format!("origin: {}", upstream_origin()),
        );
    ApiSettings::from_yaml(&text).expect("example config is valid")
}

fn start_host(prefix: &str, claim_prefix: bool) -> Gateway {
    capture_logs();
    let host = HostGateway {
        board_api: Arc::new(BoardApi::new(&settings(prefix, claim_prefix)).expect("board api")),
        upstream: start_host_upstream().expect("host upstream"),
    };
    let (gw, _) = start_server(1, |server, addrs| {
        let mut proxy = pingora_proxy::http_proxy_service(&server.configuration, host);
        proxy.add_tcp(&addrs[0].to_string());
        server.add_service(proxy);
    });
    gw
}

fn assert_hosts(r: &Response, status: u16, path: &str) {
    assert_eq!(
        r.status,
        status,
        "{path}: {}",
        String::from_utf8_lossy(&r.body)
    );
    assert_eq!(r.json()["from"], "host", "{path}");
}

fn assert_ours(r: &Response) {
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["data"]["board"]["id"], BOARD);
    r.assert_cors();
}

/// Sends a request for a board that takes several upstream calls, waits
/// until the upstream saw it, closes the socket without reading, then waits
/// until the seam logged how the request ended: that the client went away (before or
/// while answering, with the request's summary), or the board ready when the
/// load won the race. The line is held to the scrubber like every other.
fn disconnect_mid_response(gw: &Gateway, target: &str, board: &str) {
    let seen_before = sample()
        .requests()
        .iter()
        .filter(|t| t.contains(board))
        .count();
    let mut stream = TcpStream::connect(gw.addr).expect("connect");
    let req = format!("GET {target} HTTP/1.1\r\nHost: h\r\n\r\n");
    stream.write_all(req.as_bytes()).expect("send");
    // The socket stays open until the upstream saw the load start: closed
    // at once, the server can read the request and its end together and
    // drop it before asking anyone, a race CI lost once.
    let deadline = Instant::now() + Duration::from_secs(20);
    while sample()
        .requests()
        .iter()
        .filter(|t| t.contains(board))
        .count()
        == seen_before
    {
        assert!(
            Instant::now() < deadline,
            "the request never reached the upstream"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(stream);
    // The line the disconnect leaves: "client gone" with the request's
    // summary, or the board ready when its load won the race with the
    // client's reset.
    let path = target.split('?').next().unwrap_or("");
    let ready = format!("board {board} ready in ");
    while !LINES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .any(|l| (l.contains("client gone") && l.contains(path)) || l.contains(&ready))
    {
        assert!(
            Instant::now() < deadline,
            "neither \"client gone\" nor \"{ready}\" was logged: {:?}",
            LINES.lock().unwrap_or_else(|e| e.into_inner())
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn host_routes_stay_the_hosts_beside_boards() {
    // The process's one logger is this test's: it runs alone in a child.
    if !in_own_process(module_path!(), "host_routes_stay_the_hosts_beside_boards") {
        return;
    }
    let gw = start_host("/boards", false);
    for path in [
        "/api/health",
        "/api/users",
        &format!("/api/users?p={SECRET}"),
    ] {
        assert_hosts(&request(gw.addr, "GET", path, &[]), 200, path);
    }
    // Other paths under our prefix are the host's too (its upstream's 404).
    assert_hosts(
        &request(gw.addr, "GET", "/boards/elsewhere", &[]),
        404,
        "/boards/elsewhere",
    );
    let link = link(BOARD, SECRET);
    assert_ours(&request(
        gw.addr,
        "GET",
        &format!("/boards/search?url={link}"),
        &[],
    ));
    let r = request(
        gw.addr,
        "GET",
        &format!("/boards/detail?url={link}&%70={SECRET}"),
        &[],
    );
    r.assert_error(400, "INVALID_REQUEST", Some("p"));
    // A nested chain: several upstream calls, a large answer, no reader.
    let deep = "s-deep-0";
    let target = format!("/boards/detail?url={}", crate::common::link(deep, SECRET));
    disconnect_mid_response(&gw, &target, deep);
    // The host still serves after it.
    assert_hosts(
        &request(gw.addr, "GET", "/api/health", &[]),
        200,
        "/api/health",
    );
    assert_no_secret_logged();
}

#[test]
fn prefix_api_unclaimed_leaves_the_hosts_other_paths() {
    // The process's one logger is this test's: it runs alone in a child.
    if !in_own_process(
        module_path!(),
        "prefix_api_unclaimed_leaves_the_hosts_other_paths",
    ) {
        return;
    }
    let gw = start_host("/api", false);
    assert_hosts(
        &request(gw.addr, "GET", "/api/users", &[]),
        200,
        "/api/users",
    );
    assert_hosts(
        &request(gw.addr, "GET", "/api/health", &[]),
        200,
        "/api/health",
    );
    assert_ours(&request(
        gw.addr,
        "GET",
        &format!("/api/search?url={}", link(BOARD, SECRET)),
        &[],
    ));
    assert_no_secret_logged();
}

#[test]
fn prefix_api_claimed_answers_every_path_under_it() {
    // The process's one logger is this test's: it runs alone in a child.
    if !in_own_process(
        module_path!(),
        "prefix_api_claimed_answers_every_path_under_it",
    ) {
        return;
    }
    let gw = start_host("/api", true);
    for path in ["/api/users", "/api/health"] {
        request(gw.addr, "GET", path, &[]).assert_error(404, "NOT_FOUND", None);
    }
    assert_hosts(
        &request(gw.addr, "GET", "/elsewhere", &[]),
        404,
        "/elsewhere",
    );
    assert_ours(&request(
        gw.addr,
        "GET",
        &format!("/api/detail?url={}", link(BOARD, SECRET)),
        &[],
    ));
    assert_no_secret_logged();
}

/// `request_summary` of a request read from a loopback socket, as Pingora
/// would hand it to the host.
async fn summary(api: &BoardApi, target: &str) -> Option<String> {
    use tokio::io::AsyncWriteExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let mut client = tokio::net::TcpStream::connect(listener.local_addr().expect("addr"))
        .await
        .expect("connect");
    let req = format!("GET {target} HTTP/1.1\r\nHost: h\r\n\r\n");
    client.write_all(req.as_bytes()).await.expect("send");
    let (server, _) = listener.accept().await.expect("accept");
    let stream = pingora_core::protocols::l4::stream::Stream::from(server);
    let mut session = Session::new_h1(Box::new(stream));
    assert!(session.read_request().await.expect("a request"), "{target}");
    api.request_summary(&session)
}

#[tokio::test]
async fn request_summary_redacts_the_whole_query_of_our_paths() {
    let api = BoardApi::new(&settings("/boards", false)).expect("board api");
    let ours = "GET /boards/detail?[redacted]";
    for target in [
        format!("/boards/detail?url={}", link(BOARD, SECRET)),
        format!("/boards/detail?%75rl=x&%70={SECRET}"),
        format!("/boards/detail?%2570={SECRET};p={SECRET}+x"),
        format!("/boards/detail?{SECRET}"),
    ] {
        assert_eq!(
            summary(&api, &target).await.as_deref(),
            Some(ours),
            "{target}"
        );
    }
    assert_eq!(
        summary(&api, "/boards/search").await.as_deref(),
        Some("GET /boards/search")
    );
    // The host's paths are the host's to summarize.
    assert_eq!(summary(&api, &format!("/api/users?p={SECRET}")).await, None);
    assert_eq!(summary(&api, "/boards/elsewhere").await, None);
}
