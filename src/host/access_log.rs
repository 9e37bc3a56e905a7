//! The standalone binary's access log (`board_api.server.access_log`): one
//! JSON object per API request and line, bare (no logger prefix), written to
//! stdout, stderr or a file of its own.
//!
//! A request only puts its facts into a bounded buffer and goes on; a thread
//! of its own turns them into lines and writes them. When the destination
//! falls behind (a slow disk, a blocked pipe) and the buffer is full, the
//! line is dropped and counted in `board_api_access_log_dropped_total`: a
//! request never waits for the log.
//!
//! The writer batches: it takes every line queued, writes them in whole-line
//! pieces of at most 4 KiB (`PIPE_BUF`, so on a pipe each write lands whole
//! even beside the other process of a `-u` upgrade), then rests a few
//! milliseconds. At tens of thousands of requests a second that is about
//! thirty lines per system call instead of one, and a quiet log holds
//! nothing back.

use crate::config::{AccessLogSettings, AccessTarget};
use crate::host::Answered;
use crate::metrics;
use serde::Serialize;
use std::fs::File;
use std::io::Write;
use std::net::IpAddr;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// The sending end of the buffer; the writer thread ends when it is dropped.
pub(crate) struct AccessLog {
    buffer: usize,
    /// Taken by the writer thread when it starts.
    sink: Mutex<Option<Sink>>,
    /// Made by the first request: a thread started before Pingora runs
    /// would not survive its fork into a daemon (`-d`). `None`: the thread
    /// could not start, and every line counts as dropped.
    lines: OnceLock<Option<SyncSender<Entry>>>,
}

/// Where the lines go.
enum Sink {
    Stdout,
    Stderr,
    File(File),
}

impl Sink {
    fn write(&mut self, piece: &[u8]) -> std::io::Result<()> {
        match self {
            Sink::Stdout => std::io::stdout().lock().write_all(piece),
            Sink::Stderr => std::io::stderr().lock().write_all(piece),
            Sink::File(f) => f.write_all(piece),
        }
    }
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
    /// An access log as `settings` say; a file is opened (created when
    /// missing, appended to) now, at start-up. Its writer thread starts with
    /// the first line.
    ///
    /// # Errors
    /// The file cannot be opened.
    pub(crate) fn new(settings: &AccessLogSettings) -> std::io::Result<Self> {
        let sink = match &settings.target {
            AccessTarget::Stdout => Sink::Stdout,
            AccessTarget::Stderr => Sink::Stderr,
            AccessTarget::File(path) => Sink::File(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)?,
            ),
        };
        Ok(AccessLog {
            buffer: settings.buffer,
            sink: Mutex::new(Some(sink)),
            lines: OnceLock::new(),
        })
    }

    /// Queues the line for `entry`, or drops and counts it when the buffer
    /// is full. Never blocks.
    pub(crate) fn record(&self, entry: Entry) {
        let lines = self.lines.get_or_init(|| {
            let sink = self.sink.lock().ok().and_then(|mut s| s.take())?;
            let (lines, rx) = sync_channel(self.buffer);
            match std::thread::Builder::new()
                .name("access-log".into())
                .spawn(move || write_all(&rx, sink))
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
/// Under load the next lines arrive meanwhile and are taken in one go, and a
/// request's send does not have to wake a sleeping thread (a system call and
/// a context switch per line); an idle log costs one wake-up.
const PAUSE: Duration = Duration::from_millis(5);

/// Lines held before they are written at the latest.
const BATCH: usize = 64 * 1024;

/// The most one `write(2)` carries: `PIPE_BUF` on Linux.
const ATOMIC_WRITE: usize = 4096;

fn write_all(rx: &Receiver<Entry>, mut sink: Sink) {
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        while let Ok(entry) = rx.try_recv() {
            push_line(&mut batch, &entry);
            if batch.len() >= BATCH {
                flush(&mut sink, &mut batch);
            }
        }
        flush(&mut sink, &mut batch);
        std::thread::sleep(PAUSE);
        let next = match rx.try_recv() {
            Err(TryRecvError::Empty) => rx.recv().ok(),
            other => other.ok(),
        };
        match next {
            Some(entry) => push_line(&mut batch, &entry),
            // Every sender is gone: the service was dropped.
            None => return flush(&mut sink, &mut batch),
        }
    }
}

fn push_line(batch: &mut Vec<u8>, entry: &Entry) {
    batch.extend_from_slice(line(entry).as_bytes());
    batch.push(b'\n');
}

/// Writes and empties `batch` in whole lines of at most [`ATOMIC_WRITE`]
/// bytes (a longer line is one write of its own).
fn flush(sink: &mut Sink, batch: &mut Vec<u8>) {
    for piece in line_chunks(batch, ATOMIC_WRITE) {
        // Nowhere to report a failed write of the log itself.
        if sink.write(piece).is_err() {
            break;
        }
    }
    batch.clear();
}

/// `bytes` cut after newlines into pieces of at most `max` bytes, except a
/// line longer than `max`, which is a piece of its own.
fn line_chunks(bytes: &[u8], max: usize) -> impl Iterator<Item = &[u8]> {
    let mut rest = bytes;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let window = &rest[..rest.len().min(max)];
        let end = if window.len() == rest.len() {
            rest.len()
        } else {
            match window.iter().rposition(|&b| b == b'\n') {
                Some(i) => i + 1,
                // One line longer than `max`: up to its end.
                None => rest
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(rest.len(), |i| i + 1),
            }
        };
        let (chunk, tail) = rest.split_at(end);
        rest = tail;
        Some(chunk)
    })
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
    /// The answer's `X-Request-Id`, as the client was told it.
    #[serde(rename = "requestId")]
    request_id: Option<&'a str>,
    /// The request's W3C trace id (the caller's `traceparent`, or one
    /// started here): 32 hex digits this service formatted.
    #[serde(rename = "traceId")]
    trace_id: Option<&'a str>,
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
        // Checked to be ASCII (the client's) or minted: never lossy.
        request_id: entry
            .answered
            .served
            .request_id
            .as_ref()
            .and_then(|id| id.to_str().ok()),
        trace_id: entry.answered.served.trace_id.as_deref(),
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
                    request_id: Some(http::HeaderValue::from_static("r-1")),
                    trace_id: Some("4bf92f3577b34da6a3ce929d0e0e4736".into()),
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
                "bytes": 1234, "ms": 2.345, "cache": "hit", "board": "b", "client": "127.0.0.1",
                "requestId": "r-1", "traceId": "4bf92f3577b34da6a3ce929d0e0e4736"})
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
        assert_eq!(json["requestId"], "r-1");
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
    fn lines_are_written_as_whole_lines_in_bounded_writes() {
        let chunks = |text: &str, max| -> Vec<String> {
            line_chunks(text.as_bytes(), max)
                .map(|c| String::from_utf8_lossy(c).into_owned())
                .collect()
        };
        assert_eq!(chunks("", 8), Vec::<String>::new());
        assert_eq!(chunks("a\nb\n", 8), ["a\nb\n"]);
        assert_eq!(chunks("aaa\nbbb\nccc\n", 8), ["aaa\nbbb\n", "ccc\n"]);
        assert_eq!(chunks("aaaaaaaaaa\nb\n", 8), ["aaaaaaaaaa\n", "b\n"]);
        assert_eq!(chunks("a\nbbbbbbbbbbbb", 8), ["a\n", "bbbbbbbbbbbb"]);
        // Every piece is whole lines, none over the bound unless one line is.
        let text: String = (0..500)
            .map(|i| format!("{}\n", "x".repeat(i % 97)))
            .collect();
        let pieces: Vec<&[u8]> = line_chunks(text.as_bytes(), 256).collect();
        assert_eq!(pieces.concat(), text.as_bytes());
        assert!(pieces.iter().all(|p| p.len() <= 256 && p.ends_with(b"\n")));
    }

    #[test]
    fn a_full_buffer_drops_without_blocking() {
        // No writer: the receiver is held, nothing drains it.
        let (lines, _rx) = sync_channel(2);
        let log = AccessLog {
            buffer: 2,
            sink: Mutex::new(None),
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
