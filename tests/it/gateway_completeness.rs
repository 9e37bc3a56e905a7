//! End-to-end: why a nested board was not loaded. One sample-upstream
//! scenario per reason (`max_boards`, the deadline, a denial, a missing
//! board, a 5xx), each checked in the node's `unloadedReason` and in the
//! `Board-Completeness` header of `200`s and `304`s on both endpoints; and
//! the cache rule for transient holes, seen in the sample's request counts.

use crate::common::*;
use serde_json::Value;
use std::net::SocketAddr;
use std::time::Duration;

fn get(gw: SocketAddr, endpoint: &str, board: &str, p: &str, extra: &str) -> Response {
    request(
        gw,
        "GET",
        &format!("/api/{endpoint}?url={}{extra}", link(board, p)),
        &[],
    )
}

/// `(id, childrenLoaded, unloadedReason)` of every nested `BOARD` node.
fn nested_boards(data: &Value) -> Vec<(String, bool, Option<String>)> {
    let mut out = Vec::new();
    let mut stack: Vec<&Value> = data["board"]["children"]
        .as_array()
        .map(|c| c.iter().collect())
        .unwrap_or_default();
    while let Some(node) = stack.pop() {
        if node["type"] == "BOARD" {
            out.push((
                node["id"].as_str().unwrap_or_default().to_owned(),
                node["childrenLoaded"] == true,
                node["unloadedReason"].as_str().map(str::to_owned),
            ));
        }
        if let Some(children) = node["children"].as_array() {
            stack.extend(children);
        }
    }
    out.sort();
    out
}

/// The header on a `200` and a `304` of both endpoints, in every view, and
/// the nested boards of the full document.
fn completeness(
    gw: SocketAddr,
    board: &str,
    p: &str,
) -> (String, Vec<(String, bool, Option<String>)>) {
    let full = get(gw, "detail", board, p, "");
    assert_eq!(full.status, 200, "{}", String::from_utf8_lossy(&full.body));
    let header = full
        .header("board-completeness")
        .expect("Board-Completeness on a 200")
        .to_owned();
    for (endpoint, extra) in [
        ("search", ""),
        ("detail", "&view=compact"),
        ("search", "&include=board.id"),
        ("detail", "&exclude=board.children"),
    ] {
        let r = get(gw, endpoint, board, p, extra);
        assert_eq!(r.status, 200, "{endpoint}{extra}");
        assert_eq!(
            r.header("board-completeness"),
            Some(header.as_str()),
            "{endpoint}{extra}"
        );
        r.assert_cors();
        let etag = r.header("etag").expect("etag").to_owned();
        let target = format!("/api/{endpoint}?url={}{extra}", link(board, p));
        for method in ["GET", "HEAD"] {
            let again = request(gw, method, &target, &[("If-None-Match", &etag)]);
            assert_eq!(again.status, 304, "{method} {endpoint}{extra}");
            assert_eq!(again.header("board-completeness"), Some(header.as_str()));
            again.assert_cors();
        }
    }
    (header, nested_boards(&full.json()["data"]))
}

fn hole(id: &str, reason: &str) -> (String, bool, Option<String>) {
    (id.to_owned(), false, Some(reason.to_owned()))
}

#[test]
fn a_complete_board_says_so() {
    let gw = start_gateway("", "");
    let (header, boards) = completeness(gw.addr, BOARD, PERMISSION);
    assert_eq!(header, "complete");
    assert!(
        boards.len() >= 4 && boards.iter().all(|b| b.1 && b.2.is_none()),
        "{boards:?}"
    );
}

#[test]
fn max_boards_is_board_limit() {
    let gw = start_gateway("    max_boards: 2\n", "");
    let (header, boards) = completeness(gw.addr, "s-wide", PERMISSION);
    // The root and s-wide-1 (first by id) are the two; the rest are cut,
    // s-wide-1-1 one level further down too.
    let mut want = vec![("s-wide-1".to_owned(), true, None)];
    for id in ["s-wide-1-1", "s-wide-2", "s-wide-3", "s-wide-4", "s-wide-5"] {
        want.push(hole(id, "BOARD_LIMIT"));
    }
    want.sort();
    assert_eq!(boards, want);
    assert_eq!(header, "partial; unloaded=5");
}

#[test]
fn a_nested_board_slower_than_the_deadline_is_deadline() {
    let gw = start_gateway("    fetch_deadline_ms: 1500\n", "");
    let (header, boards) = completeness(gw.addr, "s-hole-slow", PERMISSION);
    assert_eq!(boards, [hole("fault-slow", "DEADLINE")]);
    assert_eq!(header, "partial; unloaded=1");
}

#[test]
fn a_denied_nested_board_is_access_denied() {
    let gw = start_gateway("", "");
    let (header, boards) = completeness(gw.addr, "s-hole-denied", PERMISSION);
    assert_eq!(boards, [hole("fault-denied", "ACCESS_DENIED")]);
    assert_eq!(header, "partial; unloaded=1");
}

#[test]
fn a_missing_nested_board_is_not_found() {
    let gw = start_gateway("", "");
    let (header, boards) = completeness(gw.addr, "s-hole-missing", PERMISSION);
    assert_eq!(boards, [hole("s-no-such-board", "NOT_FOUND")]);
    assert_eq!(header, "partial; unloaded=1");
}

#[test]
fn a_nested_board_answering_5xx_is_upstream_error() {
    let gw = start_gateway("", "");
    let (header, boards) = completeness(gw.addr, "s-hole-500", PERMISSION);
    assert_eq!(boards, [hole("fault-500", "UPSTREAM_ERROR")]);
    assert_eq!(header, "partial; unloaded=1");
}

#[test]
fn several_holes_in_one_board_each_say_why() {
    let gw = start_gateway("    batch_size: 1\n    fetch_deadline_ms: 1500\n", "");
    let r = get(gw.addr, "detail", "s-nested-faults", PERMISSION, "");
    assert_eq!(r.status, 200);
    let boards = nested_boards(&r.json()["data"]);
    let mut want = vec![
        hole("fault-500", "UPSTREAM_ERROR"),
        hole("fault-denied", "ACCESS_DENIED"),
        hole("fault-skeleton", "ACCESS_DENIED"),
        hole("fault-slow", "DEADLINE"),
    ];
    want.sort();
    assert_eq!(boards, want);
    assert_eq!(r.header("board-completeness"), Some("partial; unloaded=4"));
}

/// Token requests the sample received for permission `p`: one per load.
fn loads(p: &str) -> usize {
    let prefix = format!("/api/permissions/token/{p}?");
    sample()
        .requests()
        .iter()
        .filter(|t| t.starts_with(&prefix))
        .count()
}

#[test]
fn a_transient_hole_is_kept_for_error_ttl_and_a_stable_one_for_the_ttl() {
    let gw = start_gateway(
        "    fetch_deadline_ms: 1000\n    max_boards: 2\n",
        "  cache:\n    ttl_seconds: 600\n    error_ttl_seconds: 2\n",
    );
    // Permission ids of their own, so the counts are this test's.
    let (transient, stable) = ("completenessDeadline", "completenessLimit");
    for (board, p) in [("s-hole-slow", transient), ("s-wide", stable)] {
        for _ in 0..2 {
            let r = get(gw.addr, "detail", board, p, "");
            assert_eq!(r.status, 200, "{board}");
        }
        assert_eq!(loads(p), 1, "{board}: the second request is a cache hit");
    }
    // Once error_ttl (2 s) has passed, well inside the TTL, the DEADLINE
    // document is loaded again: asked until it is, not after a fixed wait.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while loads(transient) < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "the DEADLINE document is loaded again"
        );
        let r = get(gw.addr, "detail", "s-hole-slow", transient, "");
        assert_eq!(r.status, 200);
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        loads(transient),
        2,
        "loaded again once, not on every request"
    );
    let r = get(gw.addr, "detail", "s-wide", stable, "");
    assert_eq!(r.status, 200);
    assert_eq!(loads(stable), 1, "the BOARD_LIMIT document is kept");
}
