//! No log line, at any level, carries the permission id, the provider token or
//! the share link: every record emitted while serving good and failing
//! requests is captured behind the same `Redacting` wrapper the binary
//! installs, and searched. Our own records must be clean even before it.

mod common;

use common::*;
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
    log::set_boxed_logger(Box::new(Raw(shared_board_api::logging::Redacting::new(
        Capture,
    ))))
    .expect("first logger in this test binary");
    log::set_max_level(log::LevelFilter::Trace);
    let p = "LeakCanary7Qx9";
    let gw = start_gateway("    batch_size: 1\n    fetch_deadline_ms: 1500\n", "");
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
            let _ = request(
                gw.addr,
                "GET",
                &format!("/api/{endpoint}?url={}", link(board, p)),
                &[],
            );
        }
    }
    // A refused link and a bad request carrying the permission elsewhere.
    let _ = request(
        gw.addr,
        "GET",
        &format!(
            "/api/search?url={}",
            encode(&format!("https://evil.example/{BOARD}?p={p}"))
        ),
        &[],
    );
    let _ = request(
        gw.addr,
        "GET",
        &format!("/api/search?url={}&p={p}", link(BOARD, p)),
        &[],
    );
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
    for (target, line) in ours.chain(records.iter()) {
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
}
