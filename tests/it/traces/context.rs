//! The trace context of requests, read back from the access log, error
//! bodies and what the sample upstream received.

use crate::common::mcp::post;
use crate::common::*;
use serde_json::{json, Value};
use shared_board_api::demo::SampleUpstream;

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";

fn traceparent() -> String {
    format!("00-{TRACE}-{PARENT}-01")
}

fn is_trace_id(v: &Value) -> bool {
    v.as_str().is_some_and(|s| {
        s.len() == 32
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            && s != "0".repeat(32)
    })
}

/// A gateway writing its access log to a file of its own.
fn logged(tag: &str) -> (Gateway, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("sba-traces-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("access.log");
    let gw = start_gateway_with("", "", &format!("    access_log: {}\n", path.display()));
    (gw, path)
}

fn line_of<'a>(lines: &'a [Value], request_id: &str) -> &'a Value {
    lines
        .iter()
        .find(|v| v["requestId"] == request_id)
        .unwrap_or_else(|| panic!("no line for {request_id}: {lines:#?}"))
}

#[test]
fn a_valid_traceparent_is_continued_in_the_log_and_the_error_body() {
    let (gw, path) = logged("valid");
    let tp = traceparent();
    let search = format!("/api/search?url={}", link(BOARD, PERMISSION));
    let ok = request(
        gw.addr,
        "GET",
        &search,
        &[
            ("X-Request-Id", "tp-ok"),
            ("traceparent", &tp),
            ("tracestate", "rojo=1"),
        ],
    );
    assert_eq!(ok.status, 200);
    let bad = request(
        gw.addr,
        "GET",
        "/api/detail?view=huge",
        &[("X-Request-Id", "tp-bad"), ("traceparent", &tp)],
    );
    bad.assert_error(400, "INVALID_REQUEST", Some("url"));
    assert_eq!(bad.json()["error"]["traceId"], TRACE);
    let fresh = request(
        gw.addr,
        "GET",
        "/api/nowhere",
        &[("X-Request-Id", "tp-none")],
    );
    let fresh_id = fresh.json()["error"]["traceId"].clone();
    assert!(is_trace_id(&fresh_id), "{fresh_id}");
    assert_ne!(fresh_id, TRACE);
    let lines: Vec<Value> = wait_for_lines(&path, 3)
        .iter()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(line_of(&lines, "tp-ok")["traceId"], TRACE);
    assert_eq!(line_of(&lines, "tp-bad")["traceId"], TRACE);
    assert_eq!(line_of(&lines, "tp-none")["traceId"], fresh_id);
}

#[test]
fn a_malformed_traceparent_starts_a_new_trace_and_is_written_nowhere() {
    let (gw, path) = logged("bad");
    let long = format!("00-{TRACE}-{PARENT}-01-{}", "a".repeat(8000));
    let values: Vec<(&str, String)> = vec![
        ("upper", format!("00-{}-{PARENT}-01", TRACE.to_uppercase())),
        ("zero-trace", format!("00-{}-{PARENT}-01", "0".repeat(32))),
        ("zero-span", format!("00-{TRACE}-{}-01", "0".repeat(16))),
        ("ff", format!("ff-{TRACE}-{PARENT}-01")),
        ("v00-longer", format!("00-{TRACE}-{PARENT}-01-00")),
        ("short", format!("00-{TRACE}-{PARENT}-1")),
        ("long", long),
        ("markup", format!("<script>{TRACE}</script>")),
        (
            "link",
            format!("00-{TRACE}-{PARENT}-01 https://app.milanote.com/x?p=SECRET9"),
        ),
        ("quote", format!("00-{TRACE}\"}},\"x\":\"{PARENT}")),
        ("hyphens", "-".repeat(55)),
    ];
    for (tag, value) in &values {
        let id = format!("bad-{tag}");
        let r = request(
            gw.addr,
            "GET",
            "/api/detail?view=huge",
            &[
                ("X-Request-Id", &id),
                ("traceparent", value),
                ("tracestate", "k=SECRET9"),
            ],
        );
        // Refused for its view, as without the header: never a 500.
        r.assert_error(400, "INVALID_REQUEST", Some("url"));
        let trace = &r.json()["error"]["traceId"];
        assert!(is_trace_id(trace), "{tag}: {trace}");
        assert_ne!(trace, TRACE, "{tag}: a new trace");
    }
    // Two headers, each valid alone: a new trace as well.
    let tp = traceparent();
    let twice = request(
        gw.addr,
        "GET",
        "/api/detail?view=huge",
        &[
            ("X-Request-Id", "bad-twice"),
            ("traceparent", &tp),
            ("traceparent", &tp),
        ],
    );
    assert_ne!(twice.json()["error"]["traceId"], TRACE);
    // A later version with a field after the flags is read as 00.
    let later = request(
        gw.addr,
        "GET",
        "/api/detail?view=huge",
        &[("traceparent", &format!("cc-{TRACE}-{PARENT}-01-later"))],
    );
    assert_eq!(later.json()["error"]["traceId"], TRACE);

    let lines = wait_for_lines(&path, values.len() + 2);
    let text = lines.join("\n");
    assert!(
        !text.contains("SECRET9") && !text.contains("<script>"),
        "{text}"
    );
    assert!(!text.contains(&TRACE.to_uppercase()), "{text}");
    for line in &lines {
        let v: Value = serde_json::from_str(line).expect("every line is JSON");
        assert!(is_trace_id(&v["traceId"]), "{line}");
    }
}

#[test]
fn an_mcp_message_carries_its_trace_in_meta() {
    let (gw, path) = logged("mcp");
    let tp = traceparent();
    let call = |id: &str, meta: Value| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "read_board",
            "arguments": {"url": format!("https://app.milanote.com/{BOARD}/slug?p={PERMISSION}")},
            "_meta": meta,
        }});
        let r = post(
            gw.addr,
            body.to_string().as_bytes(),
            &[("X-Request-Id", id), ("MCP-Protocol-Version", "2025-06-18")],
        );
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    };
    call("mcp-meta", json!({"traceparent": tp}));
    call("mcp-bad-meta", json!({"traceparent": "00-nonsense"}));
    let lines: Vec<Value> = wait_for_lines(&path, 2)
        .iter()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(line_of(&lines, "mcp-meta")["traceId"], TRACE);
    let other = &line_of(&lines, "mcp-bad-meta")["traceId"];
    assert!(is_trace_id(other) && other != TRACE, "{other}");
}

#[test]
fn the_provider_never_sees_a_trace_header() {
    // A sample of its own: every request it records is this test's.
    let upstream = SampleUpstream::start_in_thread(([127, 0, 0, 1], 0).into()).expect("sample");
    let gw = start_gateway_at(&upstream.origin(), "", "");
    let tp = traceparent();
    let r = request(
        gw.addr,
        "GET",
        &format!("/api/detail?url={}", link(BOARD, PERMISSION)),
        &[
            ("traceparent", &tp),
            ("tracestate", "rojo=1"),
            ("baggage", "k=v"),
        ],
    );
    assert_eq!(r.status, 200);
    let seen = upstream.request_log();
    assert!(!seen.is_empty(), "the board was loaded from the sample");
    for req in &seen {
        for (name, value) in &req.headers {
            let name = name.to_ascii_lowercase();
            assert!(
                !["traceparent", "tracestate", "baggage"].contains(&name.as_str()),
                "{name}: {value}"
            );
            assert!(
                !value.contains(TRACE) && !value.contains(PARENT),
                "{name}: {value}"
            );
        }
    }
}
