//! End-to-end: a client cannot make the server write a log line per
//! request: 1,000 requests with an `Accept-Encoding` Pingora cannot parse
//! write one line, and the metric counts all of them.

use crate::common::*;
use std::sync::Mutex;

/// (level, message) of every record that reached the process's logger.
static RECORDS: Mutex<Vec<(log::Level, String)>> = Mutex::new(Vec::new());

struct Capture;

impl log::Log for Capture {
    fn enabled(&self, m: &log::Metadata) -> bool {
        m.level() <= log::Level::Info
    }
    fn log(&self, r: &log::Record) {
        RECORDS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((r.level(), r.args().to_string()));
    }
    fn flush(&self) {}
}

#[test]
fn bad_accept_encodings_write_one_line_per_minute() {
    // The process's one logger is this test's: it runs alone in a child.
    if !in_own_process(
        module_path!(),
        "bad_accept_encodings_write_one_line_per_minute",
    ) {
        return;
    }
    shared_board_api::logging::Redacting::new(Capture)
        .install(log::LevelFilter::Info)
        .expect("first logger");
    let (gw, metrics) = start_gateway_with_metrics("", "");
    for i in 0..1000 {
        let bad = format!("\"unterminated{i}");
        let r = request(gw.addr, "GET", "/api/nope", &[("Accept-Encoding", &bad)]);
        assert_eq!(r.status, 404);
    }
    let lines: Vec<(log::Level, String)> = RECORDS
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, m)| m.contains("accept-encoding"))
        .cloned()
        .collect();
    assert!(
        lines.len() <= 2,
        "{} lines: {:?}",
        lines.len(),
        &lines[..3.min(lines.len())]
    );
    assert!(!lines.is_empty(), "the first is written");
    let text = String::from_utf8_lossy(&request(metrics, "GET", "/metrics", &[]).body).into_owned();
    assert!(
        text.contains(r#"board_api_client_log_lines_total{kind="accept_encoding"} 1000"#),
        "{text}"
    );
}
