//! The standalone binary's access log (`board_api.server.access_log`): one
//! JSON line per API request on the log target `shared_board_api::access`.
//!
//! A request only puts its facts into a bounded buffer and goes on; a thread
//! of its own turns them into lines and hands them to the process logger.
//! When the logger falls behind (a slow disk, a blocked pipe) and the buffer
//! is full, the line is dropped and counted in
//! `board_api_access_log_dropped_total`: a request never waits for the log.

use crate::host::Answered;
use crate::metrics;
use serde::Serialize;
use std::net::IpAddr;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// The log target of access lines, to route or filter them apart
/// (`RUST_LOG=shared_board_api::access=off` silences them).
pub const TARGET: &str = crate::logging::ACCESS_TARGET;

/// The sending end of the buffer; the writer thread ends when it is dropped.
pub(crate) struct AccessLog {
    buffer: usize,
    /// Made by the first request: a thread started before Pingora runs
    /// would not survive its fork into a daemon (`-d`). `None`: the thread
    /// could not start, and every line counts as dropped.
    lines: OnceLock<Option<SyncSender<Entry>>>,
}

/// What a request leaves for its line. The URI is kept whole (a cheap,
/// reference-counted clone) and only its path is ever written.
pub(crate) struct Entry {
    pub method: http::Method,
    pub uri: http::Uri,
    pub answered: Answered,
    pub elapsed: Duration,
    pub client: Option<IpAddr>,
}

impl AccessLog {
    /// An access log with a buffer of `buffer` lines; its writer thread
    /// starts with the first line.
    pub(crate) fn new(buffer: usize) -> Self {
        AccessLog {
            buffer,
            lines: OnceLock::new(),
        }
    }

    /// Queues the line for `entry`, or drops and counts it when the buffer
    /// is full. Never blocks.
    pub(crate) fn record(&self, entry: Entry) {
        let lines = self.lines.get_or_init(|| {
            let (lines, rx) = sync_channel(self.buffer);
            match std::thread::Builder::new()
                .name("access-log".into())
                .spawn(move || write_all(&rx))
            {
                Ok(_) => Some(lines),
                Err(e) => {
                    log::warn!("access log: cannot start its writer thread: {e}");
                    None
                }
            }
        });
        if lines.as_ref().is_none_or(|l| l.try_send(entry).is_err()) {
            metrics::access_log_dropped();
        }
    }
}

/// How long the writer rests after the buffer runs dry before it blocks.
/// Under load the next lines arrive meanwhile and are taken in one go,
/// and a request's send does not have to wake a sleeping thread (a system
/// call and a context switch per line); an idle log costs one wake-up.
const PAUSE: Duration = Duration::from_millis(5);

fn write_all(rx: &Receiver<Entry>) {
    loop {
        while let Ok(entry) = rx.try_recv() {
            write(&entry);
        }
        // The binary's logger holds access lines until now, to write them
        // in one go (`logging::init`); any other logger writes them at once.
        log::logger().flush();
        std::thread::sleep(PAUSE);
        let next = match rx.try_recv() {
            Err(TryRecvError::Empty) => rx.recv().ok(),
            other => other.ok(),
        };
        match next {
            Some(entry) => write(&entry),
            // Every sender is gone: the service was dropped.
            None => return,
        }
    }
}

fn write(entry: &Entry) {
    if log::log_enabled!(target: TARGET, log::Level::Info) {
        log::info!(target: TARGET, "{}", line(entry));
    }
}

/// One access line, as written.
#[derive(Serialize)]
struct Line<'a> {
    method: &'a str,
    path: &'a str,
    status: u16,
    bytes: usize,
    ms: f64,
    cache: Option<&'static str>,
    board: Option<&'a str>,
    client: Option<IpAddr>,
    /// MCP requests only: the JSON-RPC method and the tool called.
    #[serde(skip_serializing_if = "Option::is_none")]
    rpc: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool: Option<&'static str>,
}

/// The JSON object for `entry`. The path goes through the log scrubber as
/// every record does, here before the record is made: a share link pasted
/// into a path (percent-encoded) loses its query and permission there too.
fn line(entry: &Entry) -> String {
    let path = crate::logging::scrub(entry.uri.path());
    let board: Option<&Arc<str>> = entry.answered.served.board.as_ref();
    let micros = u64::try_from(entry.elapsed.as_micros()).unwrap_or(u64::MAX);
    let line = Line {
        method: entry.method.as_str(),
        path: &path,
        status: entry.answered.status,
        bytes: entry.answered.bytes,
        // Milliseconds with microsecond precision, as in `Server-Timing`.
        ms: micros as f64 / 1000.0,
        cache: entry.answered.served.cache,
        board: board.map(|b| &**b),
        client: entry.client,
        rpc: entry.answered.served.rpc,
        tool: entry.answered.served.tool,
    };
    serde_json::to_string(&line).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::respond::Served;

    fn entry(uri: &str, cache: Option<&'static str>, board: Option<&str>) -> Entry {
        Entry {
            method: http::Method::GET,
            uri: uri.parse().expect("uri"),
            answered: Answered {
                status: 200,
                bytes: 1234,
                served: Served {
                    cache,
                    board: board.map(Arc::from),
                    ..Served::default()
                },
            },
            elapsed: Duration::from_micros(2_345),
            client: Some(IpAddr::from([127, 0, 0, 1])),
        }
    }

    #[test]
    fn a_line_is_one_json_object_without_the_query() {
        let text = line(&entry(
            "/api/detail?url=https%3A%2F%2Fapp.milanote.com%2Fb%2Fx%3Fp%3DSECRET",
            Some("hit"),
            Some("b"),
        ));
        let json: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(
            json,
            serde_json::json!({"method": "GET", "path": "/api/detail", "status": 200,
                "bytes": 1234, "ms": 2.345, "cache": "hit", "board": "b", "client": "127.0.0.1"})
        );
        assert!(!text.contains("SECRET") && !text.contains('?'), "{text}");
    }

    #[test]
    fn a_link_in_the_path_is_scrubbed_and_missing_facts_are_null() {
        let text = line(&entry(
            "/api/search/https%3A%2F%2Fapp.milanote.com%2Fb%3Fp%3DSECRET",
            None,
            None,
        ));
        assert!(!text.contains("SECRET"), "{text}");
        let json: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(json["cache"], serde_json::Value::Null);
        assert_eq!(json["board"], serde_json::Value::Null);
    }

    #[test]
    fn an_mcp_line_names_its_method_and_tool_only() {
        let mut e = entry("/api/mcp", Some("hit"), Some("b"));
        e.method = http::Method::POST;
        e.answered.served.rpc = Some("tools/call");
        e.answered.served.tool = Some("read_board");
        let json: serde_json::Value = serde_json::from_str(&line(&e)).expect("JSON");
        assert_eq!(
            (&json["rpc"], &json["tool"]),
            (&"tools/call".into(), &"read_board".into())
        );
        let plain: serde_json::Value =
            serde_json::from_str(&line(&entry("/api/search", None, None))).expect("JSON");
        assert!(plain.get("rpc").is_none() && plain.get("tool").is_none());
    }

    #[test]
    fn a_full_buffer_drops_without_blocking() {
        // No writer: the receiver is held, nothing drains it.
        let (lines, _rx) = sync_channel(2);
        let log = AccessLog {
            buffer: 2,
            lines: OnceLock::from(Some(lines)),
        };
        for _ in 0..5 {
            log.record(entry("/api/search", None, None));
        }
        // Reaching this line is the point: three lines were dropped, none waited.
        let lines = log.lines.get().and_then(Option::as_ref).expect("sender");
        assert!(lines.try_send(entry("/x", None, None)).is_err());
    }
}
