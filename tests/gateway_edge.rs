//! End-to-end: what an operator expects at the edge:
//! rate limit, metrics, compression.

mod common;

use common::*;
use std::io::Read;

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
        text.contains("board_api_requests_total{endpoint=\"detail\",status=\"400\"}"),
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
