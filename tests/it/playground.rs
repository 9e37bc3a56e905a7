//! The playground page (`board_api.server.playground`): served at `GET /` and
//! `HEAD /` by the standalone service only, never by the embedded module.

use crate::common::*;
use shared_board_api::config::Settings;
use shared_board_api::{BoardApi, RequestParts};

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
    // The page passes through the API: it has a request id too.
    assert!(page.header("x-request-id").is_some_and(|id| !id.is_empty()));
    let html = String::from_utf8_lossy(&page.body);
    assert!(html.contains("shared-board-api playground"), "{html:.200}");
    assert!(
        html.contains("href=\"/api/mcp\""),
        "the page links to the MCP endpoint"
    );

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
    let settings = Settings::from_yaml(&config_with(1, "", "", "    playground: true\n"))
        .expect("valid config")
        .api()
        .clone();
    let api = BoardApi::new(&settings)
        .expect("api builds")
        .serve_playground(true);
    let headers = http::HeaderMap::new();
    for method in [http::Method::GET, http::Method::HEAD] {
        let answer = api
            .respond(RequestParts::new(&method, "/", None, &headers))
            .await;
        assert!(answer.is_none(), "{method} / was answered embedded");
    }
}

#[test]
fn the_flag_defaults_to_off() {
    let settings = Settings::from_yaml(&config(1, "", "")).expect("valid config");
    assert!(!settings.playground());
}

/// The `<script>` blocks of a page without attributes, as a browser hashes them.
fn inline_scripts(html: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find("<script") {
        let after = &rest[start + "<script".len()..];
        let Some(open_end) = after.find('>') else {
            break;
        };
        assert_eq!(&after[..open_end], "", "a script with attributes");
        let body = &after[open_end + 1..];
        let Some(end) = body.find("</script>") else {
            break;
        };
        out.push(&body[..end]);
        rest = &body[end..];
    }
    out
}

#[test]
fn the_policy_allows_the_served_scripts_by_hash_and_nothing_inline() {
    use base64::Engine as _;
    let gw = start_gateway_with("", "", "    playground: true\n");
    let page = request(gw.addr, "GET", "/", &[]);
    assert_eq!(page.status, 200);
    let csp = page.header("content-security-policy").expect("a CSP");
    let directive = |name: &str| -> Vec<String> {
        csp.split(';')
            .map(str::trim)
            .find_map(|d| d.strip_prefix(name)?.strip_prefix(' '))
            .unwrap_or_else(|| panic!("{name} missing from {csp}"))
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    for (name, sources) in [
        ("default-src", "'none'"),
        ("base-uri", "'none'"),
        ("form-action", "'none'"),
        ("frame-ancestors", "'none'"),
        ("img-src", "https: http: data:"),
    ] {
        assert_eq!(directive(name).join(" "), sources, "{name}");
    }
    let connect = directive("connect-src");
    assert!(connect.contains(&"http:".to_owned()) && connect.contains(&"https:".to_owned()));

    let html = String::from_utf8(page.body.clone()).expect("UTF-8 page");
    let scripts = inline_scripts(&html);
    assert_eq!(scripts.len(), 2, "the canvas script and the page script");
    let mut expected: Vec<String> = scripts
        .iter()
        .map(|s| {
            let digest = ring::digest::digest(&ring::digest::SHA256, s.as_bytes());
            let b64 = base64::engine::general_purpose::STANDARD.encode(digest.as_ref());
            format!("'sha256-{b64}'")
        })
        .collect();
    let mut allowed = directive("script-src");
    expected.sort();
    allowed.sort();
    assert_eq!(
        allowed, expected,
        "script-src is exactly the served scripts' hashes"
    );
    assert!(!csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"));
    // A changed script would not run: its hash is not in the policy.
    let tampered = format!("{}\n", scripts[1]);
    let digest = ring::digest::digest(&ring::digest::SHA256, tampered.as_bytes());
    let tampered = base64::engine::general_purpose::STANDARD.encode(digest.as_ref());
    assert!(!csp.contains(&tampered));
}

#[test]
fn nothing_in_assets_builds_markup_from_strings() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("assets/") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("text asset");
        seen += 1;
        for needle in [
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "createContextualFragment",
            "DOMParser",
        ] {
            assert!(!text.contains(needle), "{} uses {needle}", path.display());
        }
    }
    assert!(seen >= 2, "playground.html and canvas.js");
}

#[test]
fn demo_images_are_served_by_the_sample_upstream_the_board_points_at() {
    let gw = start_gateway("", "");
    let detail = request(
        gw.addr,
        "GET",
        &format!("/api/detail?url={}", link(BOARD, PERMISSION)),
        &[],
    );
    assert_eq!(detail.status, 200);
    let body = detail.json();
    let image = body["data"]["board"]["children"]
        .as_array()
        .expect("children")
        .iter()
        .find(|c| c["type"] == "IMAGE")
        .expect("the demo board has an image")["image"]["url"]
        .as_str()
        .expect("an image URL")
        .to_owned();
    let origin = upstream_origin();
    let path = image
        .strip_prefix(&origin)
        .unwrap_or_else(|| panic!("{image} is not on {origin}"));
    let png = request(sample().addr(), "GET", path, &[]);
    assert_eq!(png.status, 200);
    assert_eq!(png.header("content-type"), Some("image/png"));
    assert!(png.body.starts_with(b"\x89PNG\r\n\x1a\n") && png.body.len() < 8192);
    assert!(!String::from_utf8_lossy(&detail.body).contains("sample-upstream.invalid"));
}
