//! End-to-end: what an operator expects at the edge:
//! rate limit, metrics, compression, the POST form that keeps the share link
//! out of URLs, and request ids.

use crate::common::*;
use serde_json::{json, Value};
use std::io::Read;

/// The demo board's share link, as a JSON body carries it.
fn share_link() -> String {
    format!("https://app.milanote.com/{BOARD}/slug?p={PERMISSION}")
}

fn post_board(body: &Value, headers: &[(&str, &str)]) -> Response {
    post_json(gateway(), "/api/board", &body.to_string(), headers)
}

fn target() -> String {
    format!("/api/search?url={}", link(BOARD, PERMISSION))
}

#[test]
fn rate_limit_answers_429_with_retry_after() {
    let gw = start_gateway("", "  rate_limit:\n    requests_per_second: 3\n");
    // Windows are one second long: within the first three requests of any
    // window nothing is limited, and a quick burst soon meets a 429.
    let statuses: Vec<u16> = (0..3)
        .map(|_| request(gw.addr, "GET", &target(), &[]).status)
        .collect();
    assert!(statuses.iter().all(|s| *s != 429), "{statuses:?}");
    let limited = (0..50)
        .map(|_| request(gw.addr, "GET", &target(), &[]))
        .find(|r| r.status == 429)
        .expect("a burst of 50 meets the limit of 3 per second");
    limited.assert_error(429, "RATE_LIMITED", None);
    assert_eq!(limited.header("retry-after"), Some("1"));
    // Preflights and unknown routes are never limited.
    assert_eq!(request(gw.addr, "OPTIONS", "/api/search", &[]).status, 204);
    assert_eq!(request(gw.addr, "GET", "/api/nope", &[]).status, 404);
}

#[test]
fn metrics_count_requests_by_endpoint_and_status() {
    let (gw, metrics_addr) = start_gateway_with_metrics("", "");
    request(gw.addr, "GET", "/api/detail?url=x", &[]).assert_error(
        400,
        "INVALID_SHARE_URL",
        Some("url"),
    );
    let mut text = String::new();
    for _ in 0..50 {
        let r = request(metrics_addr, "GET", "/metrics", &[]);
        text = String::from_utf8_lossy(&r.body).into_owned();
        if text.contains("board_api_requests_total") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        text.contains(r#"board_api_requests_total{api="/api",endpoint="detail",status="400"}"#),
        "{text}"
    );
}

#[test]
fn responses_are_compressed_on_request() {
    let gw = start_gateway("", "");
    let plain = request(gw.addr, "GET", &format!("{}&view=full", target()), &[]);
    assert_eq!(plain.status, 200);
    assert_eq!(plain.header("content-encoding"), None);
    let gz = request(
        gw.addr,
        "GET",
        &format!("{}&view=full", target()),
        &[("Accept-Encoding", "gzip")],
    );
    assert_eq!(gz.status, 200);
    assert_eq!(gz.header("content-encoding"), Some("gzip"));
    assert!(gz
        .header("vary")
        .is_some_and(|v| v.to_ascii_lowercase().contains("accept-encoding")));
    assert_eq!(gz.header("etag"), plain.header("etag"));
    let mut decoded = Vec::new();
    flate2::read::GzDecoder::new(&gz.body[..])
        .read_to_end(&mut decoded)
        .expect("gzip body");
    assert_eq!(decoded, plain.body);
}

// POST {prefix}/board

#[test]
fn the_post_form_answers_what_detail_answers_for_every_view_and_selector_form() {
    let include = ["board.title", "board.**.richText.plainText"];
    let exclude = ["**.timestamps", "**.location"];
    // The query after `url=`, and the bodies that mean the same.
    let cases: Vec<(String, Vec<Value>)> = vec![
        (String::new(), vec![json!({})]),
        ("&view=compact".into(), vec![json!({"view": "compact"})]),
        ("&view=standard".into(), vec![json!({"view": "standard"})]),
        (
            "&view=full".into(),
            vec![json!({"view": "full", "include": null})],
        ),
        (
            format!("&include={}", encode(&include.join(","))),
            vec![
                json!({"include": include.join(",")}),
                json!({"include": include}),
            ],
        ),
        (
            format!("&exclude={}", encode(&exclude.join(","))),
            vec![
                json!({"exclude": exclude.join(",")}),
                json!({"exclude": exclude}),
            ],
        ),
        (
            "&view=standard&exclude=board.children.title".into(),
            vec![json!({"view": "standard", "exclude": ["board.children.title"]})],
        ),
    ];
    for (query, bodies) in cases {
        let target = format!("/api/detail?url={}{query}", link(BOARD, PERMISSION));
        for accept in ["application/json", "text/markdown"] {
            let got = request(gateway(), "GET", &target, &[("Accept", accept)]);
            assert_eq!(got.status, 200, "{target}");
            for body in &bodies {
                let mut body = body.clone();
                body["url"] = json!(share_link());
                let posted = post_board(&body, &[("Accept", accept)]);
                assert_eq!(posted.status, 200, "{body} {accept}");
                assert_eq!(posted.body, got.body, "{body} {accept}");
                for name in [
                    "content-type",
                    "etag",
                    "board-completeness",
                    "board-version",
                    "vary",
                ] {
                    assert_eq!(posted.header(name), got.header(name), "{body} {name}");
                }
                assert_eq!(posted.header("cache-control"), Some("no-store"));
                posted.assert_cors();
                // Its own ETag sent back is still a 200: a POST is never 304.
                let etag = posted.header("etag").expect("etag");
                let again = post_board(&body, &[("Accept", accept), ("If-None-Match", etag)]);
                assert_eq!(again.status, 200, "{body}");
                assert_eq!(again.body, got.body);
            }
        }
    }
}

#[test]
fn each_refusal_of_the_post_form_gets_its_status() {
    let url = share_link();
    let cases: [(Value, u16, &str, Option<&str>); 11] = [
        (json!({}), 400, "INVALID_REQUEST", Some("url")),
        (json!([url]), 400, "INVALID_REQUEST", None),
        (
            json!({"url": url, "foo": 1}),
            400,
            "INVALID_REQUEST",
            Some("foo"),
        ),
        (json!({"url": 7}), 400, "INVALID_REQUEST", Some("url")),
        (
            json!({"url": url, "view": ["full"]}),
            400,
            "INVALID_REQUEST",
            Some("view"),
        ),
        (
            json!({"url": url, "include": [1]}),
            400,
            "INVALID_REQUEST",
            Some("include"),
        ),
        (
            json!({"url": url, "include": "board.title", "exclude": "**.x"}),
            400,
            "INVALID_REQUEST",
            None,
        ),
        (
            json!({"url": url, "view": "huge"}),
            400,
            "INVALID_REQUEST",
            Some("view"),
        ),
        (
            json!({"url": url, "include": ["board.Title"]}),
            400,
            "INVALID_FIELD_SELECTOR",
            Some("include"),
        ),
        (
            json!({"url": "https://example.com/b?p=x"}),
            400,
            "INVALID_SHARE_URL",
            Some("url"),
        ),
        (
            json!({"url": format!("https://app.milanote.com/fault-404/x?p={PERMISSION}")}),
            404,
            "BOARD_NOT_FOUND",
            None,
        ),
    ];
    for (body, status, code, field) in cases {
        let r = post_board(&body, &[]);
        r.assert_error(status, code, field);
        assert!(!String::from_utf8_lossy(&r.body).contains("p=x"), "{body}");
    }
    let body = json!({"url": url}).to_string();
    // Not JSON by its Content-Type: 415, whatever the body.
    for content_type in [
        None,
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
    ] {
        let headers: Vec<(&str, &str)> = content_type
            .map(|t| ("Content-Type", t))
            .into_iter()
            .collect();
        let r = request_with_body(gateway(), "POST", "/api/board", &headers, body.as_bytes());
        r.assert_error(415, "UNSUPPORTED_MEDIA_TYPE", None);
    }
    // Over 32 KiB: 413, however it is padded.
    let big = format!(
        r#"{{"url":"{url}","view":"full"{}}}"#,
        " ".repeat(32 * 1024)
    );
    post_json(gateway(), "/api/board", &big, &[]).assert_error(413, "PAYLOAD_TOO_LARGE", None);
    // Other methods: 405 naming POST; the read endpoints still refuse POST.
    for method in ["GET", "HEAD", "PUT", "DELETE"] {
        let r = request(gateway(), method, "/api/board", &[]);
        assert_eq!(r.status, 405, "{method}");
        assert_eq!(r.header("allow"), Some("POST, OPTIONS"));
        if method != "HEAD" {
            r.assert_error(405, "METHOD_NOT_ALLOWED", None);
        }
    }
    for path in ["/api/search", "/api/detail"] {
        let r = post_json(gateway(), path, &body, &[]);
        r.assert_error(405, "METHOD_NOT_ALLOWED", None);
        assert_eq!(r.header("allow"), Some("GET, HEAD, OPTIONS"));
    }
    // A browser on another origin may POST JSON: the preflight says so.
    let r = request(
        gateway(),
        "OPTIONS",
        "/api/board",
        &[
            ("Origin", "https://example.com"),
            ("Access-Control-Request-Method", "POST"),
            ("Access-Control-Request-Headers", "content-type"),
        ],
    );
    assert_eq!(r.status, 204);
    r.assert_cors();
    assert_eq!(
        r.header("access-control-allow-methods"),
        Some("POST, OPTIONS")
    );
    assert_eq!(
        r.header("access-control-allow-headers"),
        Some("content-type")
    );
}

// X-Request-Id

#[test]
fn request_ids_are_echoed_minted_or_replaced() {
    let ok = format!("/api/search?url={}", link(BOARD, PERMISSION));
    let long = "a".repeat(128);
    for (sent, echoed) in [
        ("trace-1.2:3_x", true),
        (long.as_str(), true),
        ("has space", false),
        ("<b>", false),
        ("p=secret&x", false),
    ] {
        for target in [ok.as_str(), "/api/search?view=huge", "/api/nope"] {
            let r = request(gateway(), "GET", target, &[("X-Request-Id", sent)]);
            let id = r.header("x-request-id").expect("an id on every answer");
            assert_eq!(id == sent, echoed, "{sent:?} {target}: {id}");
            r.assert_cors();
            if r.status != 200 {
                assert_eq!(r.json()["error"]["requestId"], id);
            }
        }
    }
    let too_long = "a".repeat(129);
    let r = request(gateway(), "GET", &ok, &[("X-Request-Id", &too_long)]);
    assert_ne!(r.header("x-request-id"), Some(too_long.as_str()));
    // Minted: present, well formed (assert_cors checks), and never repeated.
    let minted: std::collections::BTreeSet<String> = (0..20)
        .map(|_| {
            let r = request(gateway(), "GET", "/api/search", &[]);
            r.assert_error(400, "INVALID_REQUEST", Some("url"));
            r.header("x-request-id").expect("minted").to_string()
        })
        .collect();
    assert_eq!(minted.len(), 20);
    // Preflights, the POST form and MCP answers carry one too.
    let preflight = request(
        gateway(),
        "OPTIONS",
        "/api/detail",
        &[("X-Request-Id", "pre-1")],
    );
    assert_eq!(preflight.header("x-request-id"), Some("pre-1"));
    let posted = post_board(&json!({"url": share_link()}), &[("X-Request-Id", "post-1")]);
    assert_eq!(posted.header("x-request-id"), Some("post-1"));
    let mcp = post_json(
        gateway(),
        "/api/mcp",
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
        &[
            ("X-Request-Id", "mcp-1"),
            ("Accept", "application/json, text/event-stream"),
        ],
    );
    assert_eq!(mcp.header("x-request-id"), Some("mcp-1"), "{}", mcp.status);
    let mcp = post_json(gateway(), "/api/mcp", "not json", &[]);
    assert!(mcp.header("x-request-id").is_some(), "{}", mcp.status);
}

#[test]
fn a_post_that_expects_100_continue_hears_it_before_sending_its_body() {
    use std::io::Write;
    let body = json!({ "url": share_link() }).to_string();
    let mut c = std::net::TcpStream::connect(gateway()).expect("connect");
    let head = format!(
        "POST /api/board HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nExpect: 100-continue\r\n\r\n",
        body.len()
    );
    c.write_all(head.as_bytes()).expect("send the head");
    // curl waits a second for it; here the wait is bounded at 5 s.
    c.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .expect("timeout");
    let mut first = [0u8; 25];
    c.read_exact(&mut first)
        .expect("an interim answer before the body");
    assert!(
        first.starts_with(b"HTTP/1.1 100 Continue"),
        "{:?}",
        String::from_utf8_lossy(&first)
    );
    c.write_all(body.as_bytes()).expect("send the body");
    c.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .expect("timeout");
    let mut rest = Vec::new();
    c.read_to_end(&mut rest).expect("the answer");
    let text = String::from_utf8_lossy(&rest);
    let final_status = text
        .split("\r\n")
        .find(|l| l.starts_with("HTTP/1.1 ") && !l.starts_with("HTTP/1.1 100"))
        .unwrap_or("");
    assert!(final_status.starts_with("HTTP/1.1 200"), "{text}");
}
