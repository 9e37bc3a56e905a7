//! The transport-neutral entry: `BoardApi::respond` answers from plain
//! request parts, with no Pingora `Session`, as a gateway plugin calls it.

use crate::common::*;
use http::{header, HeaderMap, HeaderValue, Method};
use shared_board_api::config::Settings;
use shared_board_api::{BoardApi, RequestParts};

fn api() -> BoardApi {
    let settings = Settings::from_yaml(&config(0, "", ""))
        .expect("config")
        .api()
        .clone();
    BoardApi::new(&settings).expect("api")
}

#[tokio::test]
async fn a_search_is_answered_whole_from_parts() {
    let api = api();
    let headers = HeaderMap::new();
    let query = format!("url={}", link(BOARD, PERMISSION));
    let parts = RequestParts::new(&Method::GET, "/api/search", Some(&query), &headers)
        .with_client_ip(Some([127, 0, 0, 1].into()));
    let answer = api.respond(parts).await.expect("our path");
    assert_eq!(answer.status, 200);
    assert!(answer.has_body());
    let body: serde_json::Value = serde_json::from_slice(&answer.body).expect("JSON body");
    assert_eq!(body["ok"], true, "{body}");
    assert_eq!(answer.served.board.as_deref(), Some(BOARD));
    assert!(answer.served.cache.is_some());
    let etag = answer.headers.get(header::ETAG).expect("etag").clone();
    assert!(etag.to_str().expect("ascii").starts_with("W/\""));
    assert!(
        answer.headers.get(header::CONTENT_LENGTH).is_none(),
        "the host's stack sets the length"
    );

    // The same request with the ETag back: 304, no body to send.
    let mut conditional = HeaderMap::new();
    conditional.insert(header::IF_NONE_MATCH, etag.clone());
    let parts = RequestParts::new(&Method::GET, "/api/search", Some(&query), &conditional);
    let answer = api.respond(parts).await.expect("our path");
    assert_eq!(answer.status, 304);
    assert!(!answer.has_body());
    assert_eq!(answer.headers.get(header::ETAG), Some(&etag));
    assert_eq!(answer.served.cache, Some("hit"));
}

#[tokio::test]
async fn the_hosts_paths_are_not_answered() {
    let api = api();
    let headers = HeaderMap::new();
    for path in ["/", "/health", "/apix/search", "/api/other"] {
        let parts = RequestParts::new(&Method::GET, path, None, &headers);
        assert!(api.respond(parts).await.is_none(), "{path} was answered");
    }
}

#[tokio::test]
async fn errors_and_preflights_are_answers_too() {
    let api = api();
    let mut headers = HeaderMap::new();
    let bad = format!("url={}", encode("https://example.com/board?p=SECRET"));
    let parts = RequestParts::new(&Method::GET, "/api/detail", Some(&bad), &headers);
    let answer = api.respond(parts).await.expect("our path");
    assert_eq!(answer.status, 400);
    let text = String::from_utf8_lossy(&answer.body);
    assert!(!text.contains("SECRET"), "{text}");

    headers.insert(
        header::ACCESS_CONTROL_REQUEST_HEADERS,
        HeaderValue::from_static("if-none-match"),
    );
    let parts = RequestParts::new(&Method::OPTIONS, "/api/detail", None, &headers);
    let answer = api.respond(parts).await.expect("our path");
    assert_eq!(answer.status, 204);
    assert!(!answer.has_body());
}

#[test]
fn the_summary_never_carries_the_query() {
    let headers = HeaderMap::new();
    let query = format!("url={}", link(BOARD, "SECRET"));
    let parts = RequestParts::new(&Method::GET, "/api/detail", Some(&query), &headers);
    assert_eq!(parts.summary(), "GET /api/detail?[redacted]");
    let parts = RequestParts::new(&Method::HEAD, "/api/search", None, &headers);
    assert_eq!(parts.summary(), "HEAD /api/search");
    assert!(parts.body.is_empty());
}
