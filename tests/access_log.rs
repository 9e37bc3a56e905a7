//! The access log never holds a request up: with the log's writer stuck in
//! a logger that does not return (a blocked pipe, a full disk), requests are
//! answered all the same, the lines beyond the buffer are dropped and
//! counted in `board_api_access_log_dropped_total`, and the buffered ones
//! are written once the logger returns.

mod common;

use common::*;
use std::sync::mpsc::{channel, Sender};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

const ACCESS: &str = "shared_board_api::access";
const BUFFER: usize = 4;

/// Access lines written so far.
static LINES: Mutex<Vec<String>> = Mutex::new(Vec::new());
static WRITTEN: Condvar = Condvar::new();
/// False while the logger holds the writer on an access line.
static OPEN: Mutex<bool> = Mutex::new(false);
static OPENED: Condvar = Condvar::new();

/// A logger that blocks on access lines until the test opens it, and says
/// when it first does.
struct Stuck(Mutex<Option<Sender<()>>>);

impl log::Log for Stuck {
    fn enabled(&self, m: &log::Metadata) -> bool {
        m.target() == ACCESS
    }
    fn log(&self, record: &log::Record) {
        if record.target() != ACCESS {
            return;
        }
        if let Some(first) = self.0.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = first.send(());
        }
        let open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
        drop(
            OPENED
                .wait_while(open, |open| !*open)
                .unwrap_or_else(|e| e.into_inner()),
        );
        LINES
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(record.args().to_string());
        WRITTEN.notify_all();
    }
    fn flush(&self) {}
}

fn dropped() -> u64 {
    prometheus::gather()
        .iter()
        .find(|f| f.name() == "board_api_access_log_dropped_total")
        .and_then(|f| {
            f.get_metric()
                .first()
                .map(|m| m.get_counter().value() as u64)
        })
        .unwrap_or(0)
}

#[test]
fn a_stuck_log_drops_and_counts_lines_and_never_holds_a_request() {
    let (first, stuck) = channel();
    log::set_boxed_logger(Box::new(Stuck(Mutex::new(Some(first))))).expect("first logger");
    log::set_max_level(log::LevelFilter::Info);
    let gw = start_gateway_with(
        "",
        "",
        &format!("    access_log: true\n    access_log_buffer: {BUFFER}\n"),
    );
    let search = format!("/api/search?url={}", link(BOARD, PERMISSION));
    let before = dropped();

    // The first line goes to the logger, which holds the writer from now on.
    assert_eq!(request(gw.addr, "GET", &search, &[]).status, 200);
    stuck
        .recv_timeout(Duration::from_secs(30))
        .expect("the writer reached the logger");

    // Every request is answered while the writer is stuck (a request that
    // waited for room in the buffer would never be). `request` reads until
    // the server closes the connection, after the line was queued or dropped.
    let more = 20;
    for _ in 0..more {
        assert_eq!(request(gw.addr, "GET", &search, &[]).status, 200);
    }
    assert_eq!(dropped() - before, (more - BUFFER) as u64);

    // Opened, the logger writes the held line and the buffered ones.
    *OPEN.lock().unwrap_or_else(|e| e.into_inner()) = true;
    OPENED.notify_all();
    let lines = WRITTEN
        .wait_timeout_while(
            LINES.lock().unwrap_or_else(|e| e.into_inner()),
            Duration::from_secs(30),
            |lines| lines.len() < 1 + BUFFER,
        )
        .map(|(lines, _)| lines.clone())
        .unwrap_or_else(|e| e.into_inner().0.clone());
    assert_eq!(lines.len(), 1 + BUFFER, "{lines:#?}");
    for line in &lines {
        let v: serde_json::Value = serde_json::from_str(line).expect("JSON line");
        assert_eq!(v["path"], "/api/search", "{line}");
        assert_eq!(v["status"], 200, "{line}");
    }
    drop(gw);
}
