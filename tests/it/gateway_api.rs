//! End-to-end: the real service on an ephemeral loopback port in front of the
//! bundled sample upstream. Every operation, combination, check and
//! row of the README's error table, with status, headers and body asserted.

use crate::common::*;
use serde_json::Value;

fn search(query: &str) -> Response {
    get(&format!("/api/search?{query}"))
}

fn detail(query: &str) -> Response {
    get(&format!("/api/detail?{query}"))
}

fn main_link() -> String {
    format!("url={}", link(BOARD, PERMISSION))
}

fn assert_success(r: &Response) -> Value {
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        r.header("cache-control"),
        Some("public, max-age=60, stale-while-revalidate=300")
    );
    assert_eq!(
        r.header("content-type"),
        Some("application/json; charset=utf-8")
    );
    let etag = r.header("etag").expect("etag on success");
    assert!(etag.starts_with("W/\"") && etag.ends_with('"'), "{etag}");
    r.assert_cors();
    assert_eq!(
        r.header("content-length")
            .and_then(|l| l.parse::<usize>().ok()),
        Some(r.body.len())
    );
    let body = r.json();
    assert_eq!(body["ok"], true);
    assert_eq!(
        body.as_object().map(|o| o.len()),
        Some(2),
        "envelope is exactly ok + data"
    );
    body["data"].clone()
}

/// Every key path (arrays invisible) in a JSON value.
fn key_paths(value: &Value, prefix: &str, out: &mut std::collections::BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                out.insert(path.clone());
                key_paths(v, &path, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| key_paths(v, prefix, out)),
        _ => {}
    }
}

// Operations.

#[test]
fn unknown_api_routes_are_not_found_for_any_method() {
    for (method, path) in [
        ("GET", "/api/boards"),
        ("POST", "/api/boards"),
        ("DELETE", "/api/search/x"),
        ("GET", "/api/search/"),
        ("OPTIONS", "/api/"),
        ("GET", "/api/SEARCH"),
        ("GET", "/"),
        ("GET", "/health"),
    ] {
        let r = request(gateway(), method, path, &[]);
        r.assert_error(404, "NOT_FOUND", None);
    }
}

#[test]
fn other_methods_are_not_allowed_with_allow() {
    for method in ["POST", "PUT", "DELETE", "PATCH", "TRACE"] {
        for path in ["/api/search", "/api/detail"] {
            let r = request(gateway(), method, &format!("{path}?{}", main_link()), &[]);
            r.assert_error(405, "METHOD_NOT_ALLOWED", None);
            assert_eq!(r.header("allow"), Some("GET, HEAD, OPTIONS"));
        }
    }
}

#[test]
fn options_is_a_cors_preflight() {
    let r = request(
        gateway(),
        "OPTIONS",
        "/api/search",
        &[("Origin", "https://example.com")],
    );
    assert_eq!(r.status, 204);
    assert!(r.body.is_empty());
    r.assert_cors();
    assert_eq!(
        r.header("access-control-allow-methods"),
        Some("GET, HEAD, OPTIONS")
    );
    assert_eq!(
        r.header("access-control-allow-headers"),
        Some("If-None-Match")
    );
    assert_eq!(r.header("access-control-max-age"), Some("86400"));
    let r = request(
        gateway(),
        "OPTIONS",
        "/api/detail",
        &[
            ("Origin", "https://example.com"),
            ("Access-Control-Request-Method", "GET"),
            ("Access-Control-Request-Headers", "if-none-match, x-trace"),
        ],
    );
    assert_eq!(r.status, 204);
    assert_eq!(
        r.header("access-control-allow-headers"),
        Some("if-none-match, x-trace")
    );
}

#[test]
fn head_has_the_get_status_and_headers_without_body() {
    let cases = [
        format!("/api/search?{}", main_link()),
        format!("/api/detail?{}", main_link()),
        "/api/search?view=full".to_string(),
        "/api/nope".to_string(),
    ];
    for target in cases {
        // Plain, and with compression negotiated: HEAD mirrors GET either way.
        for headers in [&[][..], &[("Accept-Encoding", "gzip")][..]] {
            let g = request(gateway(), "GET", &target, headers);
            let h = request(gateway(), "HEAD", &target, headers);
            assert_eq!(g.status, h.status, "{target}");
            assert!(h.body.is_empty());
            for name in [
                "content-length",
                "content-type",
                "content-encoding",
                "transfer-encoding",
                "cache-control",
                "etag",
                "board-completeness",
                "vary",
                "allow",
                "access-control-allow-origin",
                "access-control-expose-headers",
            ] {
                assert_eq!(
                    g.header(name),
                    h.header(name),
                    "{target} {headers:?} {name}"
                );
            }
        }
    }
}

#[test]
fn search_defaults_to_compact() {
    let data = assert_success(&search(&main_link()));
    let mut paths = std::collections::BTreeSet::new();
    key_paths(&data, "", &mut paths);
    // Only scalar leaves say what a view selected; objects on the way are kept for them.
    let leaves: Vec<&String> = paths
        .iter()
        .filter(|p| {
            !paths.iter().any(|q| {
                q.len() > p.len() && q.starts_with(p.as_str()) && q.as_bytes()[p.len()] == b'.'
            })
        })
        .collect();
    assert!(leaves.len() > 10);
    for path in leaves {
        let allowed = ["version", "source.provider", "source.boardId"].contains(&path.as_str())
            || path.starts_with("board.")
                && ["id", "type", "title", "children"]
                    .contains(&path.rsplit('.').next().unwrap_or(""));
        // `board.**.id` also matches e.g. `icon.id` and `file.type`: `**`
        // crosses every object level of the model.
        assert!(allowed, "compact carries {path}");
    }
    assert_eq!(data["version"], 1);
    assert_eq!(data["source"]["provider"], "milanote");
    assert_eq!(data["source"]["boardId"], BOARD);
    assert_eq!(data["board"]["id"], BOARD);
    assert_eq!(data["board"]["type"], "BOARD");
    assert!(data["board"]["title"].is_string());
    assert!(data.get("fetchedAt").is_none());
}

#[test]
fn detail_defaults_to_full_and_validates_against_the_schema() {
    let data = assert_success(&detail(&main_link()));
    assert_eq!(data["version"], 1);
    assert!(data["fetchedAt"]
        .as_str()
        .is_some_and(|t| t.ends_with('Z') && t.len() == 24));
    assert!(data["board"]["children"]
        .as_array()
        .is_some_and(|c| !c.is_empty()));
    let schema: Value =
        serde_json::from_str(shared_board_api::internals::document::schema::SCHEMA_JSON)
            .expect("schema");
    let validator = jsonschema::draft202012::new(&schema).expect("schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(&data)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    // search with view=full and detail agree on the data.
    let same = assert_success(&search(&format!("{}&view=full", main_link())));
    assert_eq!(same["board"], data["board"]);
}

#[test]
fn nothing_sensitive_ever_leaves() {
    for target in [
        format!("/api/detail?{}", main_link()),
        format!("/api/search?{}&view=full", main_link()),
        format!("/api/detail?{}&exclude=**.timestamps", main_link()),
    ] {
        let r = get(&target);
        assert_eq!(r.status, 200);
        let text = String::from_utf8_lossy(&r.body).to_lowercase();
        assert!(!text.contains("planted-secret"), "{target}");
        for key in [
            "\"password\"",
            "\"userid\"",
            "\"email\"",
            "\"token\"",
            "\"secret\"",
            "\"apikey\"",
            "\"creator\"",
        ] {
            assert!(!text.contains(key), "{target} carries {key}");
        }
        assert!(
            !text.contains(&format!("p={PERMISSION}")),
            "{target} echoes the link"
        );
    }
}

// Combinations.

#[test]
fn combinations() {
    let l = main_link();
    let compact = assert_success(&search(&l));
    let full = assert_success(&detail(&l));
    assert_eq!(
        assert_success(&detail(&format!("{l}&view=compact")))["board"],
        compact["board"]
    );
    let standard = assert_success(&detail(&format!("{l}&view=standard")));
    assert!(standard.get("fetchedAt").is_some());
    // `board.children` is kept whole, but for objects left empty inside it
    // (selection is over the model, not the data), e.g. an empty table cell: the same nodes remain.
    let ids = |v: &Value| {
        let mut paths = std::collections::BTreeSet::new();
        key_paths(v, "", &mut paths);
        (
            serde_json::to_string(v)
                .map(|s| s.matches("\"id\":").count())
                .unwrap_or(0),
            paths,
        )
    };
    assert_eq!(
        ids(&standard["board"]["children"]).0,
        ids(&full["board"]["children"]).0
    );
    assert!(standard["board"].get("timestamps").is_none());
    let included = assert_success(&search(&format!("{l}&include=version,board.title")));
    assert_eq!(
        included,
        serde_json::json!({"version": 1, "board": {"title": full["board"]["title"]}})
    );
    let excluded = assert_success(&search(&format!("{l}&exclude=board.**.title")));
    assert!(
        !String::from_utf8_lossy(&serde_json::to_vec(&excluded).expect("json"))
            .contains("\"title\"")
    );
    assert_eq!(excluded["board"]["id"], BOARD);
    let view_excluded = assert_success(&search(&format!("{l}&view=full&exclude=**.timestamps")));
    assert!(view_excluded.get("fetchedAt").is_some());
    assert!(!serde_json::to_string(&view_excluded)
        .expect("json")
        .contains("\"timestamps\""));
    for bad in [
        format!("{l}&include=version&exclude=version"),
        format!("{l}&view=full&include=version"),
        format!("{l}&view=full&include=version&exclude=version"),
    ] {
        search(&bad).assert_error(400, "INVALID_REQUEST", None);
    }
}

#[test]
fn include_matching_nothing_gives_empty_data() {
    // `board.children.table.rows.value` can match; this board may have no
    // table at the top level, so use a selector that matches no key at all.
    let data = assert_success(&search(&format!("{}&include=board.children.children.children.children.children.children.children.children.children.children.id", main_link())));
    assert!(data.is_object());
}

// Checks 3 to 7 of a request, in order.

#[test]
fn query_shape_errors() {
    let l = main_link();
    let long = format!("url={}", "a".repeat(2049));
    let cases = [
        (String::new(), Some("url")),
        ("view=full".to_string(), Some("url")),
        ("url=".to_string(), Some("url")),
        ("url=%20%20".to_string(), Some("url")),
        (long, Some("url")),
        (format!("{l}&{l}"), Some("url")),
        (format!("{l}&view=full&view=full"), Some("view")),
        (
            format!("{l}&include=version&include=version"),
            Some("include"),
        ),
        (
            format!("{l}&exclude=version&exclude=version"),
            Some("exclude"),
        ),
        (format!("{l}&callback=x"), Some("callback")),
        (format!("{l}&view=huge"), Some("view")),
        (format!("{l}&view="), Some("view")),
    ];
    for (query, field) in cases {
        search(&query).assert_error(400, "INVALID_REQUEST", field);
        detail(&query).assert_error(400, "INVALID_REQUEST", field);
    }
}

#[test]
fn selector_errors_name_the_parameter_and_item() {
    let l = main_link();
    let cases = [
        ("include", "board.password"),
        ("exclude", "board.password"),
        ("include", "board.caption"),
        ("include", "board..id"),
        ("exclude", "board.1id"),
        ("include", "nope"),
        ("exclude", "board.**.secret"),
    ];
    for (param, item) in cases {
        let r = search(&format!("{l}&{param}={}", encode(item)));
        r.assert_error(400, "INVALID_FIELD_SELECTOR", Some(param));
        let message = r.json()["error"]["message"]
            .as_str()
            .unwrap_or("")
            .to_string();
        assert!(
            message.starts_with(&format!("Unknown field selector: {param} item 1: ")),
            "{message}"
        );
        // The client's selector never comes back.
        let body = String::from_utf8_lossy(&r.body);
        assert!(!body.contains(item), "{body}");
    }
    let r = search(&format!("{l}&include={}", encode("version,,board.id")));
    r.assert_error(400, "INVALID_FIELD_SELECTOR", Some("include"));
    assert_eq!(
        r.json()["error"]["message"],
        "Unknown field selector: include item 2: empty selector"
    );
    // A permission id pasted into `include` is not echoed.
    let r = search(&format!("{l}&include={}", encode("version,9f2c1e7a44b0d3")));
    r.assert_error(400, "INVALID_FIELD_SELECTOR", Some("include"));
    let body = String::from_utf8_lossy(&r.body);
    assert!(!body.contains("9f2c1e7a44b0d3"), "{body}");
    // The message is exactly the contract's; a near miss names the
    // selector meant in `hint`, and only there.
    let table = [
        ("board.children.titel", Some("board.children.title")),
        ("board.Title", Some("board.title")),
        ("**.timestamp", Some("**.timestamps")),
        ("board.caption", None),
        ("board.password", None),
        ("nope", None),
        ("board..id", None),
    ];
    for (item, hint) in table {
        let r = search(&format!("{l}&include={}", encode(item)));
        r.assert_error(400, "INVALID_FIELD_SELECTOR", Some("include"));
        let error = &r.json()["error"];
        let message = error["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with("Unknown field selector: include item 1: "),
            "{message}"
        );
        assert!(!message.contains(item), "{message}");
        assert_eq!(error["hint"].as_str(), hint, "{item}");
    }
}

#[test]
fn selector_limits() {
    let l = main_link();
    let items = |n: usize| vec!["version"; n].join(",");
    assert_success(&search(&format!("{l}&include={}", items(100))));
    search(&format!("{l}&include={}", items(101))).assert_error(
        400,
        "INVALID_FIELD_SELECTOR",
        Some("include"),
    );
    let deep = |n: usize| {
        let mut segs = vec!["board"];
        segs.extend(std::iter::repeat_n("**", n - 2));
        segs.push("id");
        segs.join(".")
    };
    assert_success(&search(&format!("{l}&include={}", deep(20))));
    search(&format!("{l}&include={}", deep(21))).assert_error(
        400,
        "INVALID_FIELD_SELECTOR",
        Some("include"),
    );
    // 8192 characters: padding with whitespace around a valid item.
    let padded = |n: usize| format!("{}version", " ".repeat(n - 7));
    assert_success(&search(&format!("{l}&exclude={}", encode(&padded(8192)))));
    search(&format!("{l}&exclude={}", encode(&padded(8193)))).assert_error(
        400,
        "INVALID_FIELD_SELECTOR",
        Some("exclude"),
    );
}

#[test]
fn share_link_errors_never_echo_the_link() {
    let cases = [
        "https://example.com/1W3ZZU1Qvua02H?p=SECRETP",
        "http://app.milanote.com/1W3ZZU1Qvua02H?p=SECRETP",
        "https://app.milanote.com:8443/1W3ZZU1Qvua02H?p=SECRETP",
        "https://app.milanote.com/1W3ZZU1Qvua02H",
        "https://app.milanote.com/1W3ZZU1Qvua02H?p=SECRETP&p=SECRETP",
        "https://user@app.milanote.com/1W3ZZU1Qvua02H?p=SECRETP",
        "https://app.milanote.com/?p=SECRETP",
        "https://app.milanote.com/bad.id?p=SECRETP",
        "https://app.milanote.com/1W3ZZU1Qvua02H?p=SEC%24RETP",
        "not a link SECRETP",
    ];
    for link in cases {
        let r = search(&format!("url={}", encode(link)));
        r.assert_error(400, "INVALID_SHARE_URL", Some("url"));
        assert!(
            !String::from_utf8_lossy(&r.body).contains("SECRETP"),
            "{link}"
        );
    }
}

// Conditional requests.

#[test]
fn etags_revalidate_and_differ_by_selection() {
    let l = main_link();
    let first = search(&l);
    let etag = first.header("etag").expect("etag").to_string();
    assert_eq!(search(&l).header("etag"), Some(etag.as_str()));
    let r = request(
        gateway(),
        "GET",
        &format!("/api/search?{l}"),
        &[("If-None-Match", &etag)],
    );
    assert_eq!(r.status, 304);
    assert!(r.body.is_empty());
    assert_eq!(r.header("etag"), Some(etag.as_str()));
    assert_eq!(
        r.header("cache-control"),
        Some("public, max-age=60, stale-while-revalidate=300")
    );
    r.assert_cors();
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    // Several If-None-Match lines are one list (RFC 9110 section 5.3).
    let r = request(
        gateway(),
        "GET",
        &format!("/api/search?{l}"),
        &[("If-None-Match", "\"nope\""), ("If-None-Match", &etag)],
    );
    assert_eq!(r.status, 304);
    let list = format!("\"nope\", {etag}");
    assert_eq!(
        request(
            gateway(),
            "GET",
            &format!("/api/search?{l}"),
            &[("If-None-Match", &list)]
        )
        .status,
        304
    );
    assert_eq!(
        request(
            gateway(),
            "HEAD",
            &format!("/api/search?{l}"),
            &[("If-None-Match", &etag)]
        )
        .status,
        304
    );
    assert_eq!(
        request(
            gateway(),
            "GET",
            &format!("/api/search?{l}"),
            &[("If-None-Match", "W/\"other\"")]
        )
        .status,
        200
    );
    // A different selection, or the other endpoint, is a different ETag.
    let others = [
        format!("/api/detail?{l}"),
        format!("/api/search?{l}&view=full"),
        format!("/api/search?{l}&exclude=board.**.title"),
        format!("/api/search?{l}&include=version"),
    ];
    let mut seen = std::collections::BTreeSet::from([etag.clone()]);
    for target in others {
        let tag = get(&target).header("etag").expect("etag").to_string();
        assert!(seen.insert(tag), "{target} reuses an ETag");
        // ...and a stale ETag never produces a 304 there.
        assert_eq!(
            request(gateway(), "GET", &target, &[("If-None-Match", &etag)]).status,
            200
        );
    }
    // The same selection in another order is the same selection.
    let a = search(&format!("{l}&include=version,board.id"))
        .header("etag")
        .map(str::to_string);
    let b = search(&format!("{l}&include=board.id,version"))
        .header("etag")
        .map(str::to_string);
    assert_eq!(a, b);
    // Errors never 304.
    let r = request(
        gateway(),
        "GET",
        "/api/search?url=x",
        &[("If-None-Match", "*")],
    );
    r.assert_error(400, "INVALID_SHARE_URL", Some("url"));
}

/// One `Board-Version` for one board's content, whatever view, selectors
/// or representation were asked for; another board has another.
#[test]
fn the_board_version_is_the_same_for_every_view_of_a_board() {
    let l = main_link();
    let full = detail(&l);
    let version = full.header("board-version").expect("a version").to_owned();
    assert_eq!(version.len(), 32, "{version}");
    assert!(version
        .bytes()
        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    for query in [
        format!("{l}&view=standard"),
        format!("{l}&view=compact"),
        format!("{l}&include=board.title"),
        format!("{l}&exclude=board.children"),
    ] {
        let r = detail(&query);
        assert_eq!(r.header("board-version"), Some(version.as_str()), "{query}");
    }
    let markdown = request(
        gateway(),
        "GET",
        &format!("/api/detail?{l}"),
        &[("accept", "text/markdown")],
    );
    assert_eq!(markdown.header("board-version"), Some(version.as_str()));
    let other = detail(&format!("url={}", link("2Xk9PqRt7LmN4v", PERMISSION)));
    assert_eq!(other.status, 200);
    assert_ne!(other.header("board-version"), Some(version.as_str()));
}
