//! The spec against what only some requests meet: timeouts, the rate limit
//! and the MCP endpoint's answers.

use super::*;

#[test]
fn timeouts_and_rate_limits_match_the_spec() {
    // 504: the sample's `fault-slow` answers after 30 s; the deadline is 300 ms.
    let slow = start_gateway("    fetch_deadline_ms: 300\n", "");
    let target = format!("/api/search?url={}", link(BOARD, "fault-slow"));
    assert_eq!(send(slow.addr, "GET", &target, &[]).0, 504);
    assert_eq!(send(slow.addr, "HEAD", &target, &[]).0, 504);
    drop(slow);

    // 429: one request per second per client; a burst of 50 cannot all fit
    // in one-second windows however slow the machine is.
    let limited = start_gateway("", "  rate_limit:\n    requests_per_second: 1\n");
    let target = format!("/api/search?url={}", link(BOARD, PERMISSION));
    let mut limited_seen = 0;
    for i in 0..50 {
        let method = if i % 2 == 0 { "GET" } else { "HEAD" };
        let (status, r) = send(limited.addr, method, &target, &[]);
        if status == 429 {
            assert_eq!(r.header("retry-after"), Some("1"));
            limited_seen += 1;
            if limited_seen >= 2 {
                break;
            }
        } else {
            assert_eq!(status, 200);
        }
    }
    assert!(limited_seen >= 2, "no 429 in a burst of 50 requests");
}

#[test]
fn mcp_answers_match_the_spec() {
    use crate::common::mcp::{call, modern, post};
    let gw = gateway();
    let share = format!("https://app.milanote.com/{BOARD}/demo?p={PERMISSION}");
    let mut statuses = BTreeSet::new();
    let answers = [
        modern(gw, 1, "server/discover", json!({})),
        modern(gw, 2, "tools/list", json!({})),
        call(gw, "read_board", json!({"url": share})),
        call(gw, "read_board", json!({"url": share, "format": "json"})),
        call(gw, "search_board", json!({"url": share, "query": "porto"})),
        call(gw, "read_board", json!({"url": "nope"})),
        modern(gw, 3, "resources/list", json!({})),
        post(
            gw,
            br#"{"jsonrpc":"2.0","id":1,"method":"prompts/list"}"#,
            &[],
        ),
        post(
            gw,
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            &[],
        ),
        post(gw, b"{", &[]),
        post(gw, br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, &[]),
        post(gw, &vec![b' '; 70 << 10], &[]),
        post(gw, b"{}", &[("Origin", "https://evil.example")]),
    ];
    for r in &answers {
        statuses.insert(check("POST", "/api/mcp", r));
    }
    assert_eq!(statuses, BTreeSet::from([200, 202, 400, 403, 404, 413]));
}
