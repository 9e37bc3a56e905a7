//! Changes as they happen on a fleet: three gateways on one real Redis
//! (started here) in front of a sample upstream of this file's own, 300
//! event streams spread over them on one board. The sample counts what
//! Milanote would be asked: one load per interval for the whole fleet.
//! Every stream gets each change once, and when a node goes away its
//! clients resume elsewhere with `Last-Event-ID` and miss nothing. A forged
//! announcement is ignored, and a fleet whose Redis dies keeps delivering,
//! each node polling for itself.

use crate::common::redis::{fleet_key_var, Proxy, Redis};
use crate::common::*;
use crate::live::{open, Event, Stream};
use shared_board_api::demo::SampleUpstream;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The shortest `every` the configuration takes.
const EVERY: Duration = Duration::from_secs(10);

/// Streams per node.
const PER_NODE: usize = 100;

/// `board_api` lines of a fleet node: the tier at `redis`, live at its
/// shortest interval, every stream of the test's one address admitted,
/// metrics under `api`.
fn fleet_conf(redis: &str, api: &str) -> String {
    format!(
        "  name: {api}\n  cache:\n    shared:\n      url: {redis}\n      secret_env: {}\n      timeout_ms: 2000\n  live:\n    every: 10\n    max_streams_per_client: 1000\n",
        fleet_key_var()
    )
}

/// The sum of a metric's samples for `api` in this process (every node
/// runs here) whose labels include `with`.
fn metric_with(name: &str, api: &str, with: &str) -> f64 {
    let text = prometheus::TextEncoder::new()
        .encode_to_string(&prometheus::gather())
        .unwrap_or_default();
    let label = format!("api=\"{api}\"");
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) && l.contains(&label) && l.contains(with))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

fn metric(name: &str, api: &str) -> f64 {
    metric_with(name, api, "")
}

fn loads(upstream: &SampleUpstream, permission: &str) -> usize {
    let prefix = format!("/api/permissions/token/{permission}?");
    upstream
        .requests()
        .iter()
        .filter(|t| t.starts_with(&prefix))
        .count()
}

fn edit(upstream: &SampleUpstream) {
    let r = request(upstream.addr(), "POST", &format!("/demo/edit/{BOARD}"), &[]);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
}

fn query(permission: &str) -> String {
    format!("url={}", link(BOARD, permission))
}

/// One client: its stream now, and every event it got on any stream.
struct Client {
    stream: Stream,
    events: Vec<Event>,
}

impl Client {
    fn open(addr: SocketAddr, query: &str, last: Option<&str>) -> Client {
        let headers: Vec<(&str, &str)> = last.map(|id| ("Last-Event-ID", id)).into_iter().collect();
        let stream = open(addr, query, &headers);
        assert_eq!(stream.status, 200, "{}", stream.text);
        Client {
            stream,
            events: Vec::new(),
        }
    }

    /// Every event already sent to it.
    fn drain(&mut self) {
        let _ = self
            .stream
            .conn
            .set_read_timeout(Some(Duration::from_millis(2)));
        for _ in 0..3 {
            self.stream.read_some();
        }
        while let Some(event) = self.stream.next(Duration::ZERO) {
            self.events.push(event);
        }
    }

    /// The `board.changed` events it got, as (from, to).
    fn changes(&self) -> Vec<(String, String)> {
        self.events
            .iter()
            .filter(|e| e.event == "board.changed")
            .map(|e| {
                let data = e.json();
                let text = |k: &str| data[k].as_str().unwrap_or_default().to_owned();
                (text("from"), text("to"))
            })
            .collect()
    }
}

/// `redis-cli SUBSCRIBE` on the fleet's channel: every line it printed.
fn listen(redis: &Redis, channel: &str) -> (std::process::Child, Arc<Mutex<Vec<String>>>) {
    let mut child = Command::new("redis-cli")
        .args([
            "-s",
            &redis.socket().to_string_lossy(),
            "subscribe",
            channel,
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run redis-cli ({e}): install redis-tools"));
    let lines = Arc::new(Mutex::new(Vec::new()));
    let out = child.stdout.take().expect("stdout");
    let seen = Arc::clone(&lines);
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            seen.lock().unwrap_or_else(|e| e.into_inner()).push(line);
        }
    });
    (child, lines)
}

#[test]
fn a_fleet_of_three_polls_a_board_once_per_interval_and_no_stream_misses_a_change() {
    const API: &str = "live-fleet";
    const PERMISSION: &str = "live-fleet-secret";
    let redis = Redis::start();
    let proxy = Proxy::start(&redis.socket());
    let upstream =
        SampleUpstream::start_in_thread(([127, 0, 0, 1], 0).into()).expect("sample upstream");
    // The nodes connect as the ACL user docs/fleet.md documents.
    let url = proxy.url().replacen(
        "redis://",
        &format!(
            "redis://sbapi:{}@",
            redis.documented_acl_user("live-acl-test")
        ),
        1,
    );
    let conf = fleet_conf(&url, API);
    let mut nodes: Vec<Option<Gateway>> = (0..3)
        .map(|_| Some(start_gateway_at(&upstream.origin(), "", &conf)))
        .collect();
    let addrs: Vec<SocketAddr> = nodes.iter().flatten().map(|n| n.addr).collect();
    let (mut subscriber, announced) = listen(&redis, "sbapi:live");

    // 100 streams a node; node 0's first, so it follows the board first
    // and takes its lease first.
    let q = query(PERMISSION);
    let mut clients: Vec<(usize, Client)> = Vec::new();
    for (n, addr) in addrs.iter().enumerate() {
        for _ in 0..PER_NODE {
            clients.push((n, Client::open(*addr, &q, None)));
        }
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut v0 = None;
    for (_, c) in &mut clients {
        let first = c
            .stream
            .next(deadline - Instant::now())
            .expect("a first event");
        assert_eq!(first.event, "board.version");
        let id = first.id.clone().expect("an id");
        assert_eq!(
            v0.get_or_insert_with(|| id.clone()),
            &id,
            "one version fleet-wide"
        );
        c.events.push(first);
    }
    let v0 = v0.expect("a version");
    assert_eq!(
        loads(&upstream, PERMISSION),
        1,
        "opening 300 streams: one load"
    );

    // An edit: every stream gets it once, the fleet loading the board once
    // per interval.
    let polls = || metric("board_api_live_polls_total", API);
    let (loads0, polls0, started) = (loads(&upstream, PERMISSION), polls(), Instant::now());
    edit(&upstream);
    let until = Instant::now() + EVERY * 3 + Duration::from_secs(30);
    let mut v1 = None;
    for (_, c) in &mut clients {
        let event = loop {
            let e = c
                .stream
                .next(until - Instant::now())
                .expect("the edit, on every stream");
            if e.event == "board.changed" {
                break e;
            }
        };
        let to = event.id.clone().expect("an id");
        assert_ne!(to, v0);
        assert_eq!(v1.get_or_insert_with(|| to.clone()), &to);
        c.events.push(event);
    }
    let v1 = v1.expect("a new version");
    // Four polls since the edit: with a poller per node they would come
    // within about one interval and a third, as four loads.
    assert!(
        wait_for_within(|| polls() >= polls0 + 4.0, EVERY * 8),
        "the fleet keeps polling"
    );
    let (fleet_loads, elapsed) = (loads(&upstream, PERMISSION) - loads0, started.elapsed());
    let intervals = elapsed.as_secs_f64() / EVERY.as_secs_f64();
    eprintln!(
        "live fleet: {fleet_loads} loads in {:.1} s ({:.2} intervals, {:.2} loads per interval) for 300 streams on 3 nodes",
        elapsed.as_secs_f64(),
        intervals,
        fleet_loads as f64 / intervals
    );
    assert!(
        fleet_loads as f64 <= intervals.ceil() + 1.0,
        "{fleet_loads} loads in {intervals:.2} intervals"
    );
    assert_eq!(
        metric("board_api_live_leases", API),
        1.0,
        "one node holds the lease"
    );
    assert!(metric_with("board_api_live_messages_total", API, "received") >= 1.0);
    assert_eq!(
        metric_with("board_api_live_messages_total", API, "ignored"),
        0.0
    );
    assert_eq!(
        metric("board_api_live_local_polls_total", API),
        0.0,
        "nobody polled for itself"
    );

    // Node 0 goes away (it holds the lease); its clients come back on the
    // others with the last id they saw, while the board changes again.
    nodes[0] = None;
    edit(&upstream);
    for (i, (n, c)) in clients.iter_mut().filter(|(n, _)| *n == 0).enumerate() {
        let last = c.events.last().and_then(|e| e.id.clone()).expect("an id");
        assert_eq!(last, v1);
        let to = 1 + i % 2;
        let resumed = Client::open(addrs[to], &q, Some(&last));
        c.stream = resumed.stream;
        *n = to;
    }
    let until = Instant::now() + EVERY * 4 + Duration::from_secs(30);
    let mut v2 = None;
    for (_, c) in &mut clients {
        let to = loop {
            let e = c
                .stream
                .next(until - Instant::now())
                .expect("the second edit, on every stream");
            c.events.push(e.clone());
            if e.event == "board.changed" {
                break e.id.expect("an id");
            }
        };
        assert_ne!(to, v1);
        assert_eq!(v2.get_or_insert_with(|| to.clone()), &to);
    }
    let v2 = v2.expect("a third version");
    // One more poll after it, then nothing else came to anyone.
    let polls2 = polls();
    assert!(
        wait_for_within(|| polls() > polls2, EVERY * 4),
        "a poll after the edit"
    );
    for (_, c) in &mut clients {
        c.drain();
        assert_eq!(
            c.changes(),
            [(v0.clone(), v1.clone()), (v1.clone(), v2.clone())],
            "each change exactly once"
        );
    }

    // No key, channel or message names the permission id or the board.
    let _ = subscriber.kill();
    let _ = subscriber.wait();
    let lines = announced.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let messages: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains(&v2[..8]) || l.contains(&v1[..8]))
        .collect();
    assert!(messages.len() >= 2, "announcements seen: {lines:?}");
    for text in lines.iter().chain(&redis.keys()) {
        assert!(
            !text.contains(PERMISSION) && !text.contains(BOARD),
            "{text}"
        );
    }
    drop(nodes);
    assert_eq!(redis.cli(&["acl", "log"]), "", "no command was denied");
}

#[test]
fn a_fleet_whose_redis_dies_keeps_delivering_each_node_polling_for_itself() {
    const API: &str = "live-fleet-down";
    const PERMISSION: &str = "live-fleet-down";
    let mut redis = Redis::start();
    let proxy = Proxy::start(&redis.socket());
    let upstream =
        SampleUpstream::start_in_thread(([127, 0, 0, 1], 0).into()).expect("sample upstream");
    let conf = fleet_conf(&proxy.url(), API);
    let node = start_gateway_at(&upstream.origin(), "", &conf);
    let q = query(PERMISSION);
    let mut client = Client::open(node.addr, &q, None);
    let first = client
        .stream
        .next(Duration::from_secs(30))
        .expect("a first event");
    let v0 = first.id.clone().expect("an id");
    client.events.push(first);
    assert!(
        wait_for_within(|| metric("board_api_live_leases", API) == 1.0, EVERY * 3),
        "the node takes the lease"
    );

    // A message without the fleet key's seal is read and ignored.
    let forged = format!(
        "{}:{}:1:{}",
        "ab".repeat(16),
        "cd".repeat(16),
        "00".repeat(32)
    );
    redis.cli(&["publish", "sbapi:live", &forged]);
    assert!(
        wait_for_within(
            || metric_with("board_api_live_messages_total", API, "ignored") >= 1.0,
            EVERY
        ),
        "a forged announcement is counted as ignored"
    );
    assert_eq!(
        metric_with("board_api_live_messages_total", API, "received"),
        0.0
    );

    redis.kill();
    edit(&upstream);
    let until = Instant::now() + EVERY * 3 + Duration::from_secs(30);
    let changed = loop {
        let e = client
            .stream
            .next(until - Instant::now())
            .expect("the edit, without Redis");
        if e.event == "board.changed" {
            break e;
        }
    };
    assert_eq!(changed.json()["from"], v0.as_str());
    assert!(metric_with("board_api_live_local_polls_total", API, "unavailable") >= 1.0);
}
