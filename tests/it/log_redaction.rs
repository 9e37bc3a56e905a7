//! No log line, at any level, carries the permission id, the provider token or
//! the share link: every record emitted while serving good and failing
//! requests is captured behind the same `Redacting` wrapper the binary
//! installs, and searched. Our own records must be clean even before it.
//! The access log is on, to a file: one bare JSON line per request, with the
//! path and never the query, and the board id where a board was read. MCP
//! tool calls, whose arguments carry the share link, are held to the same.

use crate::common::*;
use std::collections::BTreeMap;
use std::sync::Mutex;

static RECORDS: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());
static RAW: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

struct Capture;

/// Sees every record before redaction, to hold our own code to the stricter rule.
struct Raw<L>(L);

impl<L: log::Log> log::Log for Raw<L> {
    fn enabled(&self, m: &log::Metadata) -> bool {
        self.0.enabled(m)
    }
    fn log(&self, record: &log::Record) {
        RAW.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((record.target().to_string(), record.args().to_string()));
        self.0.log(record)
    }
    fn flush(&self) {}
}

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }
    fn log(&self, record: &log::Record) {
        let line = format!("{} {}", record.level(), record.args());
        RECORDS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((record.target().to_string(), line));
    }
    fn flush(&self) {}
}

#[test]
fn no_log_line_carries_a_secret() {
    // The process's one logger is this test's: it runs alone in a child.
    if !in_own_process(module_path!(), "no_log_line_carries_a_secret") {
        return;
    }
    log::set_boxed_logger(Box::new(Raw(shared_board_api::logging::Redacting::new(
        Capture,
    ))))
    .expect("first logger in this test binary");
    log::set_max_level(log::LevelFilter::Trace);
    let p = "LeakCanary7Qx9";
    let dir = std::env::temp_dir().join(format!("sba-redaction-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let access_file = dir.join("access.log");
    let gw = start_gateway_with(
        "    batch_size: 1\n    fetch_deadline_ms: 1500\n",
        "",
        &format!("    access_log: {}\n", access_file.display()),
    );
    // What each request got, to hold the access lines to: (path, status, board).
    let mut sent: Vec<(String, u16, Option<String>)> = Vec::new();
    let boards = [
        BOARD,
        "s-nested-faults",
        "fault-500",
        "fault-garbage",
        "fault-password",
        "fault-odd-error",
        "NoSuchBoard1",
    ];
    for board in boards {
        for endpoint in ["search", "detail"] {
            let r = request(
                gw.addr,
                "GET",
                &format!("/api/{endpoint}?url={}", link(board, p)),
                &[],
            );
            sent.push((
                format!("/api/{endpoint}"),
                r.status,
                Some(board.to_string()),
            ));
        }
    }
    // A refused link and a bad request carrying the permission elsewhere.
    let refused = request(
        gw.addr,
        "GET",
        &format!(
            "/api/search?url={}",
            encode(&format!("https://evil.example/{BOARD}?p={p}"))
        ),
        &[],
    );
    sent.push(("/api/search".into(), refused.status, None));
    let extra = request(
        gw.addr,
        "GET",
        &format!("/api/search?url={}&p={p}", link(BOARD, p)),
        &[],
    );
    sent.push(("/api/search".into(), extra.status, Some(BOARD.to_string())));
    // The same boards read by MCP tools: the arguments carry the link.
    for board in [BOARD, "fault-500", "NoSuchBoard1"] {
        let url = format!("https://app.milanote.com/{board}/x?p={p}");
        for (tool, args) in [
            ("read_board", serde_json::json!({"url": url})),
            (
                "search_board",
                serde_json::json!({"url": url, "query": "porto"}),
            ),
        ] {
            let r = crate::common::mcp::call(gw.addr, tool, args);
            assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
            assert!(!String::from_utf8_lossy(&r.body).contains(p));
            sent.push(("/api/mcp".into(), 200, Some(board.to_string())));
        }
    }
    let refused = crate::common::mcp::call(
        gw.addr,
        "read_board",
        serde_json::json!({"url": format!("https://evil.example/{BOARD}?p={p}")}),
    );
    assert!(!String::from_utf8_lossy(&refused.body).contains(p));
    sent.push(("/api/mcp".into(), 200, None));
    let tokens: Vec<String> = sample()
        .requests()
        .iter()
        .filter_map(|t| {
            t.split("tokens=")
                .nth(1)
                .map(|rest| rest.split('&').next().unwrap_or("").to_string())
        })
        .filter(|t| !t.is_empty())
        .collect();
    assert!(!tokens.is_empty(), "the provider was asked with a token");
    // Each request's line was queued before its connection closed; wait
    // for the writer thread to have written them all.
    let access = wait_for_lines(&access_file, sent.len());
    assert_access_lines(&access, &sent);
    let records = RECORDS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert!(
        records.iter().any(|(_, r)| r.contains("provider")),
        "the client logged: {records:?}"
    );
    // Pingora logs request URIs at TRACE: the wrapper has something to do.
    assert!(records.iter().any(|(_, r)| r.contains("[redacted]")));
    let raw = RAW.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let ours = raw
        .iter()
        .filter(|(target, _)| target.starts_with("shared_board_api"));
    let access = access.iter().map(|l| ("access log".to_string(), l.clone()));
    for (target, line) in ours.chain(records.iter()).cloned().chain(access) {
        let line = &format!("{target}: {line}");
        assert!(!line.contains(p), "permission id in log: {line}");
        assert!(
            !line.contains("p%3D") && !line.contains("?p="),
            "share link in log: {line}"
        );
        for token in &tokens {
            assert!(!line.contains(token.as_str()), "token in log: {line}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// One access line per request, as one bare JSON object: the path without
/// its query, the status the client got, and the board id of every request
/// that got as far as reading a board (all but the `400`s).
fn assert_access_lines(lines: &[String], sent: &[(String, u16, Option<String>)]) {
    type Key = (String, u16, Option<String>);
    let mut want: BTreeMap<Key, usize> = BTreeMap::new();
    for (path, status, board) in sent {
        let board = board.clone().filter(|_| *status != 400);
        *want.entry((path.clone(), *status, board)).or_default() += 1;
    }
    let mut got: BTreeMap<Key, usize> = BTreeMap::new();
    for line in lines {
        let v: serde_json::Value = serde_json::from_str(line).expect("one JSON object");
        let path = v["path"].as_str().expect("path").to_string();
        assert!(!path.contains('?'), "{line}");
        if path == "/api/mcp" {
            assert_eq!(v["method"], "POST", "{line}");
            assert_eq!(
                (&v["rpc"], &v["tool"].is_string()),
                (&"tools/call".into(), &true),
                "{line}"
            );
        } else {
            assert_eq!(v["method"], "GET", "{line}");
        }
        assert!(v["bytes"].is_u64() && v["ms"].is_number(), "{line}");
        assert_eq!(v["client"], "127.0.0.1", "{line}");
        let status = u16::try_from(v["status"].as_u64().expect("status")).expect("u16");
        if status == 200 && path != "/api/mcp" {
            assert!(v["cache"].is_string(), "{line}");
        }
        let board = v["board"].as_str().map(str::to_string);
        *got.entry((path, status, board)).or_default() += 1;
    }
    assert_eq!(got, want, "{lines:#?}");
}
