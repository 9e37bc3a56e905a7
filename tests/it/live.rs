//! Changes as they happen (`board_api.live`), over real sockets in front of
//! a sample upstream of each test's own: the event stream of `/changes`
//! (the first event, an edit seen within `every` + 2 s, `Last-Event-ID`
//! resuming without a miss), the long poll (early on a change, on time
//! without one), the bounds (`503`, `429`) and the JSON errors before a
//! stream starts, and a burst of new links whose streams each get the
//! next change.

use crate::common::*;
use serde_json::Value;
use shared_board_api::config::Settings;
use shared_board_api::demo::SampleUpstream;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// The shortest `every` the configuration takes: the tests wait for it.
const EVERY: Duration = Duration::from_secs(10);

pub(crate) struct Node {
    pub gateway: Gateway,
    upstream: SampleUpstream,
}

/// A gateway without a process cache (a first event reads the board as
/// it is now) in front of a sample upstream of its own, `live` as given.
pub(crate) fn node(live: &str) -> Node {
    let upstream = SampleUpstream::start_in_thread(([127, 0, 0, 1], 0).into()).expect("starts");
    let origin = upstream.origin();
    let (gateway, _) = start_server(1, |server, addrs| {
        let text = format!(
            "version: 1\nthreads: 2\nboard_api:\n  server:\n    listen: [\"{}\"]\n  provider:\n    origin: {origin}\n  cache:\n    enabled: false\n  live:\n    every: 10\n{live}",
            addrs[0]
        );
        let settings = Settings::from_yaml(&text).expect("test config is valid");
        shared_board_api::host::service::add_services(server, &settings).expect("services build");
    });
    Node { gateway, upstream }
}

impl Node {
    pub(crate) fn edit(&self, board: &str) {
        let r = request(
            self.upstream.addr(),
            "POST",
            &format!("/demo/edit/{board}"),
            &[],
        );
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    }

    pub(crate) fn version(&self) -> String {
        let link = link(BOARD, PERMISSION);
        let r = request(
            self.gateway.addr,
            "GET",
            &format!("/api/detail?url={link}"),
            &[],
        );
        assert_eq!(r.status, 200);
        r.header("board-version").expect("a version").to_owned()
    }
}

/// One event of a stream.
#[derive(Debug, Default, Clone)]
pub(crate) struct Event {
    pub id: Option<String>,
    pub event: String,
    pub data: String,
}

impl Event {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.data).expect("data is JSON")
    }
}

/// An open event stream, read as it comes.
pub(crate) struct Stream {
    pub conn: TcpStream,
    pub status: u16,
    head: String,
    pub text: String,
    /// Where in `text` the events not yet returned start.
    at: usize,
}

pub(crate) fn open(addr: SocketAddr, query: &str, headers: &[(&str, &str)]) -> Stream {
    let mut conn = TcpStream::connect(addr).expect("connects");
    let mut req = format!(
        "GET /api/changes?{query} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n"
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    conn.write_all(req.as_bytes()).expect("sends");
    conn.set_read_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    let mut stream = Stream {
        conn,
        status: 0,
        head: String::new(),
        text: String::new(),
        at: 0,
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while !stream.text.contains("\r\n\r\n") && Instant::now() < deadline {
        if !stream.read_some() {
            break;
        }
    }
    let end = stream.text.find("\r\n\r\n").expect("a response head") + 4;
    stream.head = stream.text[..end].to_owned();
    stream.text = stream.text[end..].to_owned();
    stream.status = stream.head[9..12].parse().expect("a status");
    stream
}

impl Stream {
    /// Reads what arrived; false when the connection ended.
    pub(crate) fn read_some(&mut self) -> bool {
        let mut buf = [0u8; 8192];
        match self.conn.read(&mut buf) {
            Ok(0) => false,
            Ok(n) => {
                self.text.push_str(&String::from_utf8_lossy(&buf[..n]));
                true
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                true
            }
            Err(_) => false,
        }
    }

    pub(crate) fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    }

    /// The next event (comments and `retry` aside) within `within`; the
    /// framing of chunked transfer coding between events is skipped.
    pub(crate) fn next(&mut self, within: Duration) -> Option<Event> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(end) = self.text[self.at..].find("\n\n") {
                let block = self.text[self.at..self.at + end].to_owned();
                self.at += end + 2;
                let mut event = Event::default();
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id: ") {
                        event.id = Some(v.to_owned());
                    } else if let Some(v) = line.strip_prefix("event: ") {
                        event.event = v.to_owned();
                    } else if let Some(v) = line.strip_prefix("data: ") {
                        event.data = v.to_owned();
                    }
                }
                if !event.event.is_empty() {
                    return Some(event);
                }
                continue;
            }
            if Instant::now() >= deadline || !self.read_some() {
                return None;
            }
        }
    }
}

fn query(since: Option<&str>) -> String {
    let link = link(BOARD, PERMISSION);
    match since {
        Some(since) => format!("url={link}&since={since}"),
        None => format!("url={link}"),
    }
}

#[test]
fn a_stream_sees_an_edit_and_a_resumed_one_misses_nothing() {
    let node = node("");
    let gw = node.gateway.addr;
    let v1 = node.version();
    let mut stream = open(gw, &query(None), &[]);
    assert_eq!(stream.status, 200, "{}", stream.text);
    assert_eq!(
        stream.header("content-type").as_deref(),
        Some("text/event-stream; charset=utf-8")
    );
    assert_eq!(stream.header("cache-control").as_deref(), Some("no-store"));
    // What every answer of the endpoint carries, and the version the
    // stream starts from; not what only a whole answer needs.
    assert_eq!(stream.header("board-version").as_deref(), Some(v1.as_str()));
    assert_eq!(
        stream.header("vary").as_deref(),
        Some("Accept, Accept-Encoding")
    );
    assert_eq!(
        stream.header("x-content-type-options").as_deref(),
        Some("nosniff")
    );
    for absent in ["etag", "board-completeness", "server-timing"] {
        assert_eq!(stream.header(absent), None, "{absent} on a stream");
    }
    let first = stream.next(Duration::from_secs(5)).expect("a first event");
    assert!(
        stream.text.starts_with("retry: 5000\n\n") || stream.text.contains("\nretry: 5000\n\n")
    );
    assert_eq!(first.event, "board.version");
    assert_eq!(first.id.as_deref(), Some(v1.as_str()));
    assert_eq!(first.json()["boardId"], BOARD);
    assert_eq!(first.json()["version"], v1.as_str());

    // An edit: one event within `every` + 2 s.
    node.edit(BOARD);
    let edited = Instant::now();
    let changed = stream
        .next(EVERY + Duration::from_secs(2))
        .expect("the edit within every + 2 s");
    assert!(edited.elapsed() <= EVERY + Duration::from_secs(2));
    assert_eq!(changed.event, "board.changed");
    let data = changed.json();
    assert_eq!(data["boardId"], BOARD);
    assert_eq!(data["from"], v1.as_str());
    let v2 = data["to"].as_str().expect("to").to_owned();
    assert_ne!(v1, v2);
    assert_eq!(changed.id.as_deref(), Some(v2.as_str()));
    assert_eq!(data["added"].as_array().map(Vec::len), Some(1), "{data}");
    for kind in ["removed", "changed", "moved", "complete"] {
        assert!(data.get(kind).is_some(), "{kind} in {data}");
    }
    assert!(
        !changed.data.contains(PERMISSION_IN_LINK),
        "no permission id in an event"
    );
    drop(stream);

    // Away, the board changes; back with Last-Event-ID (which wins over
    // `since`), the first event tells of it at once.
    node.edit(BOARD);
    let asked = Instant::now();
    let mut resumed = open(gw, &query(Some(&v1)), &[("Last-Event-ID", &v2)]);
    assert_eq!(resumed.status, 200, "{}", resumed.text);
    let missed = resumed
        .next(Duration::from_secs(5))
        .expect("the change made while away");
    assert!(asked.elapsed() < Duration::from_secs(5));
    assert_eq!(missed.event, "board.changed");
    assert_eq!(missed.json()["from"], v2.as_str());
    let v3 = missed.id.clone().expect("an id");
    assert_ne!(v3, v2);
    assert_eq!(node.version(), v3);
    // The header names the version the stream opened at: the one its
    // first event goes to.
    assert_eq!(
        resumed.header("board-version").as_deref(),
        Some(v3.as_str())
    );
}

/// The permission id of the tests' link, as it would show in a share link.
const PERMISSION_IN_LINK: &str = "p=demo";

#[test]
fn a_long_poll_answers_early_on_a_change_and_on_time_without_one() {
    let node = node("");
    let gw = node.gateway.addr;
    let v1 = node.version();
    let since = query(Some(&v1));
    let target = move |wait: &str| format!("/api/changes?{since}&wait={wait}");

    for bad in ["0", "61", "x", "1.5"] {
        let r = request(gw, "GET", &target(bad), &[]);
        r.assert_error(400, "INVALID_REQUEST", Some("wait"));
    }

    // Nothing changes: the answer comes after `wait`, with empty lists.
    let started = Instant::now();
    let r = request(gw, "GET", &target("2"), &[]);
    let took = started.elapsed();
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert!(took >= Duration::from_secs(2), "{took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_eq!(r.json()["data"]["added"], serde_json::json!([]));

    // An edit during the wait: the answer comes with it, well before `wait`.
    let long = target("50");
    let poll = std::thread::spawn(move || {
        let started = Instant::now();
        let r = request(gw, "GET", &long, &[]);
        (r, started.elapsed())
    });
    std::thread::sleep(Duration::from_millis(500));
    node.edit(BOARD);
    let (r, took) = poll.join().expect("the poll");
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert!(took < EVERY + Duration::from_secs(3), "{took:?}");
    let data = r.json()["data"].clone();
    assert_eq!(data["from"], v1.as_str());
    assert_ne!(data["to"], v1.as_str());
    assert_eq!(data["added"].as_array().map(Vec::len), Some(1), "{data}");
}

#[test]
fn bounds_answer_503_and_429_and_errors_before_a_stream_are_json() {
    let node1 = node("    max_streams_per_client: 1\n");
    let gw = node1.gateway.addr;
    // Errors before the stream starts are the endpoint's JSON errors.
    let events = [("Accept", "text/event-stream")];
    let bad = request(
        gw,
        "GET",
        &format!("/api/changes?{}", query(Some("xyz"))),
        &events,
    );
    bad.assert_error(400, "INVALID_REQUEST", Some("since"));
    let bad_id = request(
        gw,
        "GET",
        &format!("/api/changes?{}", query(None)),
        &[("Accept", "text/event-stream"), ("Last-Event-ID", "nope")],
    );
    bad_id.assert_error(400, "INVALID_REQUEST", Some("Last-Event-ID"));
    // The other answers ignore a version there, and refuse what is not one.
    let version = node1.version();
    for accept in ["application/json", "text/markdown", "application/atom+xml"] {
        let since = if accept.contains("atom") {
            None
        } else {
            Some(version.as_str())
        };
        let target = format!("/api/changes?{}", query(since));
        let with = |id: &str| {
            request(
                gw,
                "GET",
                &target,
                &[("Accept", accept), ("Last-Event-ID", id)],
            )
        };
        assert_eq!(with(&version).status, 200, "{accept}");
        with("+0.0").assert_error(400, "INVALID_REQUEST", Some("Last-Event-ID"));
    }
    let gone = request(
        gw,
        "GET",
        &format!(
            "/api/changes?{}",
            query(Some("0123456789abcdef0123456789abcdef"))
        ),
        &events,
    );
    gone.assert_error(410, "VERSION_NOT_KEPT", Some("since"));
    let no_url = request(gw, "GET", "/api/changes", &events);
    no_url.assert_error(400, "INVALID_REQUEST", Some("url"));

    // One stream per client: the second is 429.
    let mut first = open(gw, &query(None), &[]);
    assert_eq!(first.status, 200);
    first.next(Duration::from_secs(5)).expect("a first event");
    let second = request(
        gw,
        "GET",
        &format!("/api/changes?{}", query(None)),
        &[("Accept", "text/event-stream")],
    );
    second.assert_error(429, "RATE_LIMITED", None);
    assert!(second.header("retry-after").is_some());
    // A long poll counts too.
    let v = node1.version();
    let wait = request(
        gw,
        "GET",
        &format!("/api/changes?{}&wait=1", query(Some(&v))),
        &[],
    );
    wait.assert_error(429, "RATE_LIMITED", None);

    // One stream per node: the second is 503 with Retry-After.
    let node2 = node("    max_streams: 1\n");
    let gw = node2.gateway.addr;
    let mut first = open(gw, &query(None), &[]);
    assert_eq!(first.status, 200);
    first.next(Duration::from_secs(5)).expect("a first event");
    let second = request(gw, "GET", &format!("/api/changes?{}", query(None)), &events);
    second.assert_error(503, "OVERLOADED", None);
    assert!(second.header("retry-after").is_some());
}

#[test]
fn board_changes_waits_for_a_change_when_asked() {
    use crate::common::mcp::{call, result};
    use serde_json::json;
    let node = node("");
    let gw = node.gateway.addr;
    let v1 = node.version();
    let url = format!("https://app.milanote.com/{BOARD}/slug?p={PERMISSION}");
    for wait in [json!(0), json!(31), json!("5")] {
        let r = result(&call(
            gw,
            "board_changes",
            json!({"url": url, "since": v1, "wait": wait}),
        ));
        assert_eq!(r["isError"], true, "{wait}");
        assert_eq!(r["structuredContent"]["error"]["field"], "wait", "{r}");
    }
    let args = json!({"url": url, "since": v1, "wait": 30, "format": "json"});
    let poll = std::thread::spawn(move || {
        let started = Instant::now();
        (result(&call(gw, "board_changes", args)), started.elapsed())
    });
    std::thread::sleep(Duration::from_millis(500));
    node.edit(BOARD);
    let (r, took) = poll.join().expect("the call");
    assert_eq!(r["isError"], false, "{r}");
    assert!(took < EVERY + Duration::from_secs(3), "{took:?}");
    let data = &r["structuredContent"];
    assert_eq!(data["from"], v1.as_str());
    assert_eq!(data["added"].as_array().map(Vec::len), Some(1), "{data}");
}

#[test]
fn open_streams_and_events_are_counted() {
    // A name of its own: the other tests' streams, open at the same time
    // in this process, count under the default one.
    let (gw, metrics) = start_gateway_with_metrics("", "  name: live-counted\n");
    let mut stream = open(gw.addr, &query(None), &[]);
    assert_eq!(stream.status, 200, "{}", stream.text);
    assert_eq!(
        stream
            .next(Duration::from_secs(5))
            .map(|e| e.event)
            .as_deref(),
        Some("board.version")
    );
    let text = String::from_utf8(request(metrics, "GET", "/metrics", &[]).body).expect("UTF-8");
    let value = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name) && l.contains("api=\"live-counted\""))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse::<f64>().ok())
    };
    assert_eq!(value("board_api_live_streams{"), Some(1.0), "{text}");
    assert!(
        value("board_api_live_events_total{").is_some_and(|v| v >= 1.0),
        "{text}"
    );
}

#[test]
fn a_stream_ends_cleanly_after_max_stream_seconds() {
    let node = node("    max_stream_seconds: 10\n");
    let mut stream = open(node.gateway.addr, &query(None), &[]);
    assert_eq!(stream.status, 200, "{}", stream.text);
    let opened = Instant::now();
    stream.next(Duration::from_secs(5)).expect("a first event");
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline && stream.read_some() {}
    let took = opened.elapsed();
    assert!(
        took >= Duration::from_secs(9) && took < Duration::from_secs(14),
        "{took:?}"
    );
    // Ended, not cut: the last chunk of a chunked body, or (the stream's
    // connection is not reused) a body delimited by the close that ends
    // with a whole event.
    let chunked = stream
        .header("transfer-encoding")
        .is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
    let end = if chunked { "0\r\n\r\n" } else { "\n\n" };
    assert!(stream.text.ends_with(end), "{:?}", stream.text);
}

#[test]
fn a_burst_of_new_links_each_gets_the_change() {
    // Links opened together (a page of boards, a crowd arriving): each
    // link's first version is kept as its load comes, so each stream can
    // be told what changed since it. Opened in threads, so their first
    // loads overlap.
    // The state file: its writer is the slower of the stores.
    let dir = std::env::temp_dir().join(format!("sba-live-burst-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let node = node(&format!(
        "    max_streams_per_client: 40\n  changes:\n    store: sqlite\n    path: {}\n",
        dir.join("state.sqlite").display()
    ));
    let gw = node.gateway.addr;
    let links = 24;
    let opened: Vec<Stream> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..links)
            .map(|i| {
                scope.spawn(move || {
                    let link = link(BOARD, &format!("burstPerm{i}"));
                    let mut stream = open(gw, &format!("url={link}"), &[]);
                    assert_eq!(stream.status, 200, "{}", stream.text);
                    let first = stream.next(Duration::from_secs(20)).expect("a first event");
                    assert_eq!(first.event, "board.version", "{i}");
                    stream
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("opened"))
            .collect()
    });
    node.edit(BOARD);
    for (i, mut stream) in opened.into_iter().enumerate() {
        let changed = stream
            .next(EVERY + Duration::from_secs(5))
            .unwrap_or_else(|| panic!("link {i}: no event after the edit"));
        assert_eq!(
            changed.event, "board.changed",
            "link {i}: {:?}",
            changed.data
        );
        assert_eq!(changed.json()["added"].as_array().map(Vec::len), Some(1));
    }
    drop(node);
    let _ = std::fs::remove_dir_all(&dir);
}
