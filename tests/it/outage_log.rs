//! During a provider outage the log says so in words, once per failed load
//! and at WARN at most once a minute: the request that met the failure
//! logs it (WARN the first time in the minute, DEBUG after), the requests
//! that joined its load or got it from the error cache log at DEBUG. A
//! client that makes loads fail on purpose writes no WARN line per request.

use crate::common::*;
use std::sync::Mutex;

/// (level, target, message) of every record.
static RECORDS: Mutex<Vec<(log::Level, String, String)>> = Mutex::new(Vec::new());

struct Capture;

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }
    fn log(&self, r: &log::Record) {
        RECORDS.lock().unwrap_or_else(|e| e.into_inner()).push((
            r.level(),
            r.target().to_string(),
            r.args().to_string(),
        ));
    }
    fn flush(&self) {}
}

/// Our records about `board` at `level`.
fn count(level: log::Level, board: &str) -> usize {
    RECORDS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .filter(|(l, t, m)| *l == level && t.starts_with("shared_board_api") && m.contains(board))
        .count()
}

#[test]
fn one_warn_per_failed_load_in_words() {
    // The process's one logger is this test's: it runs alone in a child.
    if !in_own_process(module_path!(), "one_warn_per_failed_load_in_words") {
        return;
    }
    log::set_boxed_logger(Box::new(Capture)).expect("first logger");
    log::set_max_level(log::LevelFilter::Debug);
    // Failures are remembered for a minute here, so no reload happens
    // within the test on a slow machine.
    let gw = start_gateway("", "  cache:\n    error_ttl_seconds: 60\n");
    let board = "fault-500";

    // One after another: the first loads and fails, the rest replay it.
    let target = format!("/api/search?url={}", link(board, "first"));
    for _ in 0..6 {
        assert_eq!(request(gw.addr, "GET", &target, &[]).status, 502);
    }
    assert_eq!(
        count(log::Level::Warn, board),
        1,
        "{:#?}",
        RECORDS.lock().unwrap()
    );
    assert_eq!(count(log::Level::Debug, &format!("{board}: ")), 5);

    // At once, for another link: they share one load, and one line.
    let target = format!("/api/detail?url={}", link(board, "second"));
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| assert_eq!(request(gw.addr, "GET", &target, &[]).status, 502));
        }
    });
    let records = RECORDS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let warns: Vec<&String> = records
        .iter()
        .filter(|(l, t, m)| {
            *l == log::Level::Warn && t.starts_with("shared_board_api") && m.contains(board)
        })
        .map(|(_, _, m)| m)
        .collect();
    assert_eq!(
        warns.len(),
        1,
        "the second load's failure within the minute: {warns:#?}"
    );
    for line in warns {
        // Words, not a Rust Debug rendering.
        assert!(
            line.contains("failed after") && line.contains("provider error"),
            "{line}"
        );
        assert!(
            !line.contains("Fetch(") && !line.contains("Upstream("),
            "{line}"
        );
    }
    let failed_at_debug = |records: &[(log::Level, String, String)]| {
        records
            .iter()
            .filter(|(l, t, m)| {
                *l == log::Level::Debug
                    && t.starts_with("shared_board_api")
                    && m.contains(board)
                    && m.contains("failed after")
            })
            .count()
    };
    assert_eq!(failed_at_debug(&records), 1, "the second load's line");

    // A client failing loads on purpose, each under a link of its own.
    for n in 0..20 {
        let target = format!("/api/detail?url={}", link(board, &format!("many{n}")));
        assert_eq!(request(gw.addr, "GET", &target, &[]).status, 502);
    }
    let records = RECORDS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert_eq!(count(log::Level::Warn, board), 1, "still one WARN line");
    assert_eq!(failed_at_debug(&records), 21, "each at DEBUG");
    drop(gw);
}
