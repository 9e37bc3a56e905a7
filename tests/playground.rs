//! The playground page (`board_api.server.playground`): served at `GET /` and
//! `HEAD /` by the standalone service only, never by the embedded module.

mod common;

use common::*;
use shared_board_api::config::{ApiSettings, Settings};
use shared_board_api::internals::api::{BoardApi, RequestParts};

#[test]
fn standalone_with_the_flag_serves_the_page_at_root_only() {
    let gw = start_gateway_with("", "", "    playground: true\n");
    let page = request(gw.addr, "GET", "/", &[]);
    assert_eq!(page.status, 200);
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(page.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(page.header("cache-control"), Some("no-cache"));
    let html = String::from_utf8_lossy(&page.body);
    assert!(html.contains("shared-board-api playground"), "{html:.200}");

    let head = request(gw.addr, "HEAD", "/", &[]);
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());
    assert_eq!(
        head.header("content-length"),
        Some(page.body.len().to_string().as_str())
    );

    // Only GET and HEAD on `/` itself; everything else stays 404 NOT_FOUND.
    for (method, path) in [
        ("POST", "/"),
        ("OPTIONS", "/"),
        ("GET", "/index.html"),
        ("GET", "/playground"),
        ("GET", "/api/"),
    ] {
        request(gw.addr, method, path, &[]).assert_error(404, "NOT_FOUND", None);
    }
    // The API itself is unchanged.
    let search = request(
        gw.addr,
        "GET",
        &format!("/api/search?url={}", link(BOARD, PERMISSION)),
        &[],
    );
    assert_eq!(search.status, 200);
}

#[test]
fn without_the_flag_root_is_not_found() {
    let gw = start_gateway_with("", "", "    playground: false\n");
    request(gw.addr, "GET", "/", &[]).assert_error(404, "NOT_FOUND", None);
    assert_eq!(request(gw.addr, "HEAD", "/", &[]).status, 404);
}

#[tokio::test]
async fn an_embedding_host_never_gets_the_page() {
    let settings = ApiSettings::from_yaml(&config_with(1, "", "", "    playground: true\n"))
        .expect("valid config");
    let api = BoardApi::new(&settings)
        .expect("api builds")
        .serve_playground(true);
    let headers = http::HeaderMap::new();
    for method in [http::Method::GET, http::Method::HEAD] {
        let answer = api
            .respond(RequestParts {
                method: &method,
                path: "/",
                query: None,
                headers: &headers,
                client_ip: None,
            })
            .await;
        assert!(answer.is_none(), "{method} / was answered embedded");
    }
}

#[test]
fn the_flag_defaults_to_off() {
    let settings = Settings::from_yaml(&config(1, "", "")).expect("valid config");
    assert!(!settings.playground());
}
