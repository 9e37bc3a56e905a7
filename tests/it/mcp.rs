//! The MCP endpoint over real sockets, in front of the sample upstream: the
//! raw HTTP cases an SDK never sends (bad JSON, a batch, an unknown method,
//! `GET`, a foreign `Origin`, a huge body), both eras' flows, the tools'
//! answers against the endpoints' own, and their errors.
//! (`tests/it/mcp_sdk.rs` drives the same endpoint with the official Python SDK.)

use crate::common::mcp::{call, handshake, modern, post, result, MODERN};
use crate::common::*;
use serde_json::{json, Value};

fn share(p: &str) -> String {
    format!("https://app.milanote.com/{BOARD}/slug?p={p}")
}

fn rpc_error(r: &Response, status: u16, code: i64) -> Value {
    assert_eq!(r.status, status, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.header("content-type"), Some("application/json"));
    let body = r.json();
    assert_eq!(body["jsonrpc"], "2.0");
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(body["error"]["message"]
        .as_str()
        .is_some_and(|m| !m.is_empty()));
    body
}

#[test]
fn what_an_sdk_never_sends_is_refused_with_the_standard_codes() {
    let gw = gateway();
    let bad = post(gw, b"{\"jsonrpc\": \"2.0\", ", &[]);
    assert_eq!(rpc_error(&bad, 400, -32700)["id"], Value::Null);
    let batch = post(
        gw,
        br#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]"#,
        &[],
    );
    assert_eq!(rpc_error(&batch, 400, -32600)["id"], Value::Null);
    let response = post(gw, br#"{"jsonrpc":"2.0","id":4,"result":{}}"#, &[]);
    assert_eq!(rpc_error(&response, 400, -32600)["id"], 4);
    let unknown = modern(gw, 5, "resources/list", json!({}));
    assert_eq!(rpc_error(&unknown, 404, -32601)["id"], 5);
    // The handshake era answered method errors with 200.
    let unknown = handshake(gw, "2025-11-25", 6, "prompts/list", json!({}));
    assert_eq!(rpc_error(&unknown, 200, -32601)["id"], 6);
    // ping is gone in 2026-07-28 and still there before.
    rpc_error(&modern(gw, 7, "ping", json!({})), 404, -32601);
    assert_eq!(
        result(&handshake(gw, "2025-06-18", 8, "ping", json!({}))),
        json!({})
    );

    for method in ["GET", "DELETE", "PUT", "HEAD"] {
        let r = request(gw, method, "/api/mcp", &[("Accept", "text/event-stream")]);
        assert_eq!(r.status, 405, "{method}");
        assert_eq!(r.header("allow"), Some("POST, OPTIONS"));
        if method != "HEAD" {
            rpc_error(&r, 405, -32600);
        }
    }

    let foreign = post(
        gw,
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        &[("Origin", "https://evil.example")],
    );
    rpc_error(&foreign, 403, -32600);
    assert_eq!(foreign.header("access-control-allow-origin"), None);

    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"pad":"{}"}}}}"#,
        "x".repeat(300 << 10)
    );
    rpc_error(&post(gw, huge.as_bytes(), &[]), 413, -32600);
    // Just under the default limit (64 KiB) is read and answered.
    let fits = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"pad":"{}"}}}}"#,
        "x".repeat(60 << 10)
    );
    result(&post(
        gw,
        fits.as_bytes(),
        &[("MCP-Protocol-Version", "2025-11-25")],
    ));
}

#[test]
fn the_modern_era_is_stateless_and_checks_its_headers() {
    let gw = gateway();
    let discover = modern(gw, 1, "server/discover", json!({}));
    let d = result(&discover);
    assert_eq!(d["resultType"], "complete");
    assert_eq!(
        d["supportedVersions"],
        json!([MODERN, "2025-11-25", "2025-06-18"])
    );
    assert_eq!(d["capabilities"]["tools"], json!({"listChanged": false}));
    assert_eq!(
        d["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "shared-board-api"
    );
    assert!(d["ttlMs"].as_u64().is_some() && d["cacheScope"] == "public");
    assert_eq!(discover.header("mcp-session-id"), None);
    assert_eq!(discover.header("cache-control"), Some("no-store"));

    let tools = result(&modern(gw, 2, "tools/list", json!({})));
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["read_board", "search_board", "board_changes"]);

    // Headers that disagree with the body, an unknown version, no _meta.
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}}}});
    let text = body.to_string();
    let mismatch = post(
        gw,
        text.as_bytes(),
        &[
            ("MCP-Protocol-Version", MODERN),
            ("Mcp-Method", "tools/call"),
        ],
    );
    rpc_error(&mismatch, 400, -32020);
    let no_meta = post(
        gw,
        br#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}"#,
        &[
            ("MCP-Protocol-Version", MODERN),
            ("Mcp-Method", "tools/list"),
        ],
    );
    rpc_error(&no_meta, 400, -32602);
    let future = text.replace(MODERN, "2031-01-01");
    let e = rpc_error(
        &post(
            gw,
            future.as_bytes(),
            &[
                ("MCP-Protocol-Version", "2031-01-01"),
                ("Mcp-Method", "tools/list"),
            ],
        ),
        400,
        -32022,
    );
    assert_eq!(e["error"]["data"]["requested"], "2031-01-01");
    assert_eq!(e["error"]["data"]["supported"][0], MODERN);
    // A notification in this era is accepted and dropped.
    let note = post(
        gw,
        br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
        &[("MCP-Protocol-Version", MODERN)],
    );
    assert_eq!((note.status, note.body.len()), (202, 0));
}

#[test]
fn the_handshake_era_initializes_without_a_session() {
    let gw = gateway();
    for version in ["2025-06-18", "2025-11-25"] {
        let init = post(
            gw,
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": version, "capabilities": {},
                "clientInfo": {"name": "socket-test", "version": "1"}}})
            .to_string()
            .as_bytes(),
            &[],
        );
        let r = result(&init);
        assert_eq!(r["protocolVersion"], version);
        assert_eq!(r["serverInfo"]["name"], "shared-board-api");
        assert_eq!(init.header("mcp-session-id"), None, "no session is issued");
        let initialized = post(
            gw,
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            &[("MCP-Protocol-Version", version)],
        );
        assert_eq!((initialized.status, initialized.body.len()), (202, 0));
        let list = result(&handshake(gw, version, 1, "tools/list", json!({})));
        assert!(list.get("resultType").is_none() && list["tools"].is_array());
        let read = handshake(
            gw,
            version,
            2,
            "tools/call",
            json!({"name": "read_board", "arguments": {"url": share(PERMISSION), "view": "compact"}}),
        );
        let r = result(&read);
        assert_eq!(r["isError"], false);
        assert!(r.get("resultType").is_none() && r.get("_meta").is_none());
    }
    // A version the server does not speak gets the newest one it does.
    let old = post(
        gw,
        br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}"#,
        &[],
    );
    assert_eq!(result(&old)["protocolVersion"], "2025-11-25");
    let stale = handshake(gw, "2025-03-26", 1, "tools/list", json!({}));
    rpc_error(&stale, 400, -32600);
    // `params` that is not an object: invalid params, answered `200` as
    // every handshake-era error is (with or without the version header),
    // and `400` in the 2026-07-28 era.
    for params in [json!(5), json!([1]), json!("x"), json!(null)] {
        rpc_error(
            &handshake(gw, "2025-11-25", 3, "tools/list", params.clone()),
            200,
            -32602,
        );
        let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params});
        rpc_error(&post(gw, body.to_string().as_bytes(), &[]), 200, -32602);
        rpc_error(
            &post(
                gw,
                body.to_string().as_bytes(),
                &[("MCP-Protocol-Version", "2026-07-28")],
            ),
            400,
            -32602,
        );
    }
}

#[test]
fn read_board_answers_what_the_detail_endpoint_answers() {
    let gw = gateway();
    let q = format!("/api/detail?url={}", link(BOARD, PERMISSION));
    let endpoint_md = request(gw, "GET", &q, &[("Accept", "text/markdown")]);
    assert_eq!(endpoint_md.status, 200);
    let md = call(gw, "read_board", json!({"url": share(PERMISSION)}));
    let r = result(&md);
    assert_eq!(r["resultType"], "complete");
    assert_eq!(r["isError"], false);
    assert_eq!(
        r["content"][0]["text"].as_str().map(str::as_bytes),
        Some(&endpoint_md.body[..]),
        "the Markdown of /api/detail"
    );
    let timing = md.header("server-timing").unwrap_or_default();
    assert!(timing.starts_with("cache;desc=hit"), "{timing}");

    let endpoint_json = request(gw, "GET", &q, &[]).json();
    let js = result(&call(
        gw,
        "read_board",
        json!({"url": share(PERMISSION), "format": "json"}),
    ));
    assert_eq!(js["structuredContent"], endpoint_json["data"]);
    let text: Value =
        serde_json::from_str(js["content"][0]["text"].as_str().expect("text")).expect("JSON text");
    assert_eq!(text, endpoint_json["data"]);

    let compact = result(&call(
        gw,
        "read_board",
        json!({"url": share(PERMISSION), "view": "compact", "format": "json"}),
    ));
    let q = format!("/api/detail?url={}&view=compact", link(BOARD, PERMISSION));
    assert_eq!(
        compact["structuredContent"],
        request(gw, "GET", &q, &[]).json()["data"]
    );
}

#[test]
fn tool_errors_are_results_with_the_api_code_and_no_secret() {
    let gw = gateway();
    let cases = [
        (
            json!({"url": share(PERMISSION), "include": "board.nope"}),
            "INVALID_FIELD_SELECTOR",
            Some("include"),
        ),
        (
            json!({"url": share(PERMISSION), "view": "full", "include": "board.title"}),
            "INVALID_REQUEST",
            None,
        ),
        (
            json!({"url": "https://example.com/board?p=s3cretperm"}),
            "INVALID_SHARE_URL",
            Some("url"),
        ),
        (
            json!({"url": format!("https://app.milanote.com/{BOARD}")}),
            "INVALID_SHARE_URL",
            Some("url"),
        ),
        (json!({}), "INVALID_REQUEST", Some("url")),
        (
            json!({"url": share(PERMISSION), "format": "html"}),
            "INVALID_REQUEST",
            Some("format"),
        ),
    ];
    for (arguments, code, field) in cases {
        let r = call(gw, "read_board", arguments.clone());
        let res = result(&r);
        assert_eq!(res["isError"], true, "{arguments}");
        let error = &res["structuredContent"]["error"];
        assert_eq!(error["code"], code, "{arguments}");
        assert_eq!(
            error.get("field").and_then(Value::as_str),
            field,
            "{arguments}"
        );
        let text = res["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.starts_with(&format!("{code}: ")), "{text}");
        let body = String::from_utf8_lossy(&r.body);
        assert!(!body.contains("s3cretperm"), "{body}");
    }
    // A revoked link: the provider's refusal, without the permission id.
    let denied = call(
        gw,
        "search_board",
        json!({"url": share("fault-denied"), "query": "x"}),
    );
    let res = result(&denied);
    assert_eq!(res["isError"], true);
    assert_eq!(
        res["structuredContent"]["error"]["code"],
        "BOARD_ACCESS_DENIED"
    );
    assert!(!String::from_utf8_lossy(&denied.body).contains("fault-denied"));

    // Protocol errors, not tool results: no such tool, arguments not an object.
    let e = rpc_error(&call(gw, "write_board", json!({})), 400, -32602);
    assert_eq!(e["id"], 7);
    let bad_args = modern(
        gw,
        8,
        "tools/call",
        json!({"name": "read_board", "arguments": [1]}),
    );
    rpc_error(&bad_args, 400, -32602);
}

/// `read_board` with each kind of cursor it refuses, twice in a row, in
/// each protocol revision: both answers are JSON, and the same tool error
/// (`INVALID_REQUEST` on `cursor`). A refusal was once cached as an empty
/// page: the second call answered `{"result":{}}`, or in 2026-07-28 a
/// body that was not JSON.
#[test]
fn a_refused_cursor_is_refused_again_in_every_era() {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let gw = gateway();
    let url = share(PERMISSION);
    let first = result(&call(
        gw,
        "read_board",
        json!({"url": url, "max_chars": 1000}),
    ));
    let cursor = first["structuredContent"]["nextCursor"]
        .as_str()
        .unwrap_or_else(|| panic!("a board of more than one page: {first}"))
        .to_owned();
    let text = String::from_utf8(b64.decode(&cursor).expect("base64")).expect("text");
    let parts: Vec<&str> = text.split('|').collect();
    assert_eq!(
        parts.len(),
        6,
        "form|renderer|board|version|bound|offset: {text}"
    );
    // The cursor with part `i` replaced by `with`.
    let forged = |i: usize, with: &str| {
        let mut p = parts.clone();
        p[i] = with;
        b64.encode(p.join("|"))
    };
    let offset: usize = parts[5].parse().expect("an offset");
    let zero_version = "0".repeat(32);
    let mid_block = (offset + 1).to_string();
    let cases = [
        ("malformed", json!({"url": url, "cursor": "not-a-cursor"})),
        (
            "not base64 text",
            json!({"url": url, "cursor": b64.encode([0xff, 0xfe, b'|'])}),
        ),
        (
            "another form",
            json!({"url": url, "cursor": forged(0, "1")}),
        ),
        (
            "another renderer",
            json!({"url": url, "cursor": forged(1, "0.0.0-another-build")}),
        ),
        (
            "another board",
            json!({"url": url, "cursor": forged(2, "OtherBoard0123")}),
        ),
        (
            "another version",
            json!({"url": url, "cursor": forged(3, &zero_version)}),
        ),
        (
            "another selection",
            json!({"url": url, "cursor": cursor, "view": "compact"}),
        ),
        (
            "an offset within a block",
            json!({"url": url, "cursor": forged(5, &mid_block)}),
        ),
        (
            "an offset past the end",
            json!({"url": url, "cursor": forged(5, "999999999")}),
        ),
    ];
    let eras = [MODERN, "2025-11-25", "2025-06-18"];
    let mut id = 100;
    for (what, args) in cases {
        for era in eras {
            let mut errors = Vec::new();
            for _ in 0..2 {
                id += 1;
                let params = json!({"name": "read_board", "arguments": args});
                let r = if era == MODERN {
                    modern(gw, id, "tools/call", params)
                } else {
                    handshake(gw, era, id, "tools/call", params)
                };
                // `json()` fails the test on a body that is not JSON.
                let res = result(&r);
                assert_eq!(res["isError"], true, "{what} ({era}): {res}");
                let error = res["structuredContent"]["error"].clone();
                assert_eq!(error["code"], "INVALID_REQUEST", "{what} ({era}): {res}");
                assert_eq!(error["field"], "cursor", "{what} ({era}): {res}");
                assert_eq!(
                    res["content"][0]["text"]
                        .as_str()
                        .map(|t| t.starts_with("INVALID_REQUEST: ")),
                    Some(true),
                    "{what} ({era}): {res}"
                );
                if era == MODERN {
                    assert_eq!(res["resultType"], "complete", "{what}: {res}");
                }
                errors.push(error);
            }
            assert_eq!(errors[0], errors[1], "{what} ({era}): the same error twice");
        }
    }
    // The cursor itself still reads the next page.
    let next = result(&call(
        gw,
        "read_board",
        json!({"url": url, "max_chars": 1000, "cursor": cursor}),
    ));
    assert_eq!(next["isError"], false, "{next}");
}

#[test]
fn search_board_finds_text_in_nested_boards_in_order() {
    let gw = gateway();
    let r = result(&call(
        gw,
        "search_board",
        json!({"url": share(PERMISSION), "query": "FRANCESINHA"}),
    ));
    assert_eq!(r["isError"], false);
    let found = &r["structuredContent"];
    assert!(found["total"].as_u64().is_some_and(|t| t >= 1), "{found}");
    let first = &found["matches"][0];
    let path: Vec<&str> = first["path"]
        .as_array()
        .expect("path")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(path.len() >= 2, "found below the root board: {path:?}");
    assert!(first["snippet"]
        .as_str()
        .is_some_and(|s| s.to_lowercase().contains("francesinha")));
    assert!(r["content"][0]["text"]
        .as_str()
        .is_some_and(|t| t.contains("francesinha")));

    // The limit lists the first and counts the rest.
    let all = result(&call(
        gw,
        "search_board",
        json!({"url": share(PERMISSION), "query": "o", "limit": 100}),
    ));
    let total = all["structuredContent"]["total"].as_u64().expect("total");
    assert!(total > 2, "{total}");
    let two = result(&call(
        gw,
        "search_board",
        json!({"url": share(PERMISSION), "query": "o", "limit": 2}),
    ));
    assert_eq!(two["structuredContent"]["total"].as_u64(), Some(total));
    assert_eq!(
        two["structuredContent"]["matches"],
        json!(
            all["structuredContent"]["matches"]
                .as_array()
                .expect("matches")[..2]
        )
    );
    let over = result(&call(
        gw,
        "search_board",
        json!({"url": share(PERMISSION), "query": "o", "limit": 101}),
    ));
    assert_eq!(over["structuredContent"]["error"]["field"], "limit");
}

#[test]
fn allowed_origins_and_a_disabled_endpoint() {
    let gw = start_gateway(
        "",
        "  mcp:\n    allowed_origins: [\"https://agent.example\"]\n",
    );
    let list = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let allowed = post(gw.addr, list, &[("Origin", "https://agent.example")]);
    result(&allowed);
    assert_eq!(
        allowed.header("access-control-allow-origin"),
        Some("https://agent.example")
    );
    assert!(allowed.header("vary").is_some_and(|v| v.contains("Origin")));
    rpc_error(
        &post(gw.addr, list, &[("Origin", "https://other.example")]),
        403,
        -32600,
    );
    let preflight = request(
        gw.addr,
        "OPTIONS",
        "/api/mcp",
        &[
            ("Origin", "https://agent.example"),
            ("Access-Control-Request-Method", "POST"),
        ],
    );
    assert_eq!(preflight.status, 204);
    assert_eq!(
        preflight.header("access-control-allow-methods"),
        Some("POST, OPTIONS")
    );

    let off = start_gateway("", "  mcp:\n    enabled: false\n");
    let r = post(off.addr, list, &[]);
    r.assert_error(404, "NOT_FOUND", None);
}

/// A body that stops arriving holds its connection no longer than the
/// body deadline: the client is answered `408` and the connection closed.
#[test]
fn a_body_sent_too_slowly_is_cut_off_at_its_deadline() {
    use std::io::{Read, Write};
    let gw = gateway();
    let mut conn = std::net::TcpStream::connect(gw).expect("connect");
    conn.write_all(
        b"POST /api/mcp HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n\
          Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"",
    )
    .expect("send the start of a body");
    let deadline = shared_board_api::host::BODY_DEADLINE;
    conn.set_read_timeout(Some(deadline * 3))
        .expect("read timeout");
    let mut answer = Vec::new();
    conn.read_to_end(&mut answer)
        .expect("the server answers and closes before the read timeout");
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 408 "), "{text}");
}

mod pages;
