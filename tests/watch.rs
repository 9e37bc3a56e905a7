//! Watches and webhooks against real parts: the real binary (a child
//! process, its listeners bound to port 0 here and handed over through
//! Pingora's upgrade socket), a sample upstream of each test's own whose
//! board the test edits (`POST /demo/edit/<board>`), a webhook receiver on
//! loopback port 0 that fails, answers `429` with `Retry-After` or `410`,
//! hangs, and recovers, a SQLite file on disk, and a real `redis-server`
//! for two nodes of a fleet.
//!
//! Every signature is checked with an HMAC-SHA256 written in this file
//! (not the service's `ring`). Runs are asked for with the documented
//! `POST /watch/<id>/run` on the operator listener, and every wait is on
//! observable state (the receiver's requests, `GET /watch`), polled with a
//! bound. With `SBAPI_WEBHOOK_VERIFY_PYTHON` set (CI sets it), each
//! delivery is also checked by the Standard Webhooks Python library.

mod common;

use base64::Engine as _;
use common::redis::{Proxy, Redis};
use common::{request, BOARD};
use pingora_core::server::Fds;
use serde_json::Value;
use shared_board_api::demo::SampleUpstream;
use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A permission id found nowhere else: it must never reach a payload or a
/// log line.
const PERMISSION: &str = "permWatchSecret42";
/// A token of the receiver's, in its URL: never in a log line.
const HOOK_TOKEN: &str = "hookTokenXyz987";
/// The signing key (32 bytes) and the secret that encodes it.
const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";

fn secret() -> String {
    format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(KEY)
    )
}

fn share_link() -> String {
    format!("https://app.milanote.com/{BOARD}/trip?p={PERMISSION}")
}

/// Polls `check` every 100 ms for up to 60 s (a busy 2-core machine).
fn wait_until(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !check() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

// ---------------------------------------------------------------- receiver

/// How the receiver answers one request.
#[derive(Debug, Clone, Copy)]
enum Reply {
    Status(u16),
    /// `429` with `Retry-After: n`.
    TooMany(u64),
    /// Reads the request and never answers (until the test ends).
    Hang,
}

/// One request the receiver read.
#[derive(Debug, Clone)]
struct Received {
    headers: HashMap<String, String>,
    body: Vec<u8>,
    at: Instant,
}

impl Received {
    fn header(&self, name: &str) -> &str {
        self.headers.get(name).map_or("", String::as_str)
    }
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }
}

/// A webhook receiver on 127.0.0.1, port 0, on a runtime of its own:
/// answers each request with the next planned reply (then `200`).
struct Receiver {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Received>>>,
    _runtime: tokio::runtime::Runtime,
}

impl Receiver {
    fn start(plan: &[Reply]) -> Receiver {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("non-blocking");
        let addr = listener.local_addr().expect("address");
        let plan = Arc::new(Mutex::new(plan.iter().copied().collect::<VecDeque<_>>()));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (p, s) = (Arc::clone(&plan), Arc::clone(&seen));
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            while let Ok((conn, _)) = listener.accept().await {
                let (p, s) = (Arc::clone(&p), Arc::clone(&s));
                tokio::spawn(async move { serve(conn, p, s).await });
            }
        });
        Receiver {
            addr,
            seen,
            _runtime: runtime,
        }
    }

    fn url(&self) -> String {
        format!("http://{}/hooks/in?token={HOOK_TOKEN}", self.addr)
    }

    fn seen(&self) -> Vec<Received> {
        self.seen.lock().unwrap().clone()
    }

    fn count(&self) -> usize {
        self.seen.lock().unwrap().len()
    }
}

async fn serve(
    mut conn: tokio::net::TcpStream,
    plan: Arc<Mutex<VecDeque<Reply>>>,
    seen: Arc<Mutex<Vec<Received>>>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        match conn.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        if buf.len() > 64 * 1024 {
            return;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut headers = HashMap::new();
    for line in head.lines().skip(1) {
        if let Some((k, v)) = line.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
        }
    }
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        match conn.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    headers.insert(
        "(request line)".into(),
        head.lines().next().unwrap_or("").into(),
    );
    let reply = plan
        .lock()
        .unwrap()
        .pop_front()
        .unwrap_or(Reply::Status(200));
    seen.lock().unwrap().push(Received {
        headers,
        body: buf[head_end..head_end + length].to_vec(),
        at: Instant::now(),
    });
    let (status, extra) = match reply {
        Reply::Status(s) => (s, String::new()),
        Reply::TooMany(after) => (429, format!("Retry-After: {after}\r\n")),
        Reply::Hang => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            return;
        }
    };
    let answer =
        format!("HTTP/1.1 {status} X\r\nContent-Length: 2\r\nConnection: close\r\n{extra}\r\nok");
    let _ = conn.write_all(answer.as_bytes()).await;
    let _ = conn.shutdown().await;
}

// ------------------------------------------- an HMAC-SHA256 of this file's

/// SHA-256 (FIPS 180-4), written here so the check does not share code
/// with the service.
fn sha256(data: &[u8]) -> [u8; 32] {
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];
    let mut h: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
        0x5be0cd19,
    ];
    let mut msg = data.to_vec();
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&((data.len() as u64) * 8).to_be_bytes());
    for block in msg.chunks(64) {
        let mut w = [0u32; 64];
        for i in 0..16 {
            w[i] = u32::from_be_bytes(block[i * 4..i * 4 + 4].try_into().unwrap());
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16]
                .wrapping_add(s0)
                .wrapping_add(w[i - 7])
                .wrapping_add(s1);
        }
        let mut v = h;
        for i in 0..64 {
            let s1 = v[4].rotate_right(6) ^ v[4].rotate_right(11) ^ v[4].rotate_right(25);
            let ch = (v[4] & v[5]) ^ (!v[4] & v[6]);
            let t1 = v[7]
                .wrapping_add(s1)
                .wrapping_add(ch)
                .wrapping_add(K[i])
                .wrapping_add(w[i]);
            let s0 = v[0].rotate_right(2) ^ v[0].rotate_right(13) ^ v[0].rotate_right(22);
            let maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
            let t2 = s0.wrapping_add(maj);
            v = [
                t1.wrapping_add(t2),
                v[0],
                v[1],
                v[2],
                v[3].wrapping_add(t1),
                v[4],
                v[5],
                v[6],
            ];
        }
        for (a, b) in h.iter_mut().zip(v) {
            *a = a.wrapping_add(b);
        }
    }
    let mut out = [0u8; 32];
    for (i, word) in h.iter().enumerate() {
        out[i * 4..i * 4 + 4].copy_from_slice(&word.to_be_bytes());
    }
    out
}

/// HMAC (RFC 2104) over [`sha256`].
fn hmac_sha256(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&sha256(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| block.iter().map(|b| b ^ byte).collect::<Vec<u8>>();
    let mut inner = pad(0x36);
    inner.extend_from_slice(data);
    let mut outer = pad(0x5c);
    outer.extend_from_slice(&sha256(&inner));
    sha256(&outer)
}

/// Checks a delivery's Standard Webhooks headers and signature; with
/// `SBAPI_WEBHOOK_VERIFY_PYTHON` set, the spec's Python library checks it
/// too.
fn verify(r: &Received) {
    let (id, ts, sig) = (
        r.header("webhook-id"),
        r.header("webhook-timestamp"),
        r.header("webhook-signature"),
    );
    assert!(
        id.starts_with("msg_") && id.len() == 36,
        "webhook-id {id:?}"
    );
    let ts_n: u64 = ts.parse().expect("webhook-timestamp is unix seconds");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(now.abs_diff(ts_n) < 300, "timestamp {ts_n} vs now {now}");
    let mut signed = format!("{id}.{ts}.").into_bytes();
    signed.extend_from_slice(&r.body);
    let want = format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(hmac_sha256(KEY, &signed))
    );
    assert!(
        sig.split(' ').any(|s| s == want),
        "signature {sig:?}, want {want:?}"
    );
    assert_eq!(r.header("content-type"), "application/json");
    assert!(r
        .header("(request line)")
        .starts_with("POST /hooks/in?token="));
    if let Ok(python) = std::env::var("SBAPI_WEBHOOK_VERIFY_PYTHON") {
        python_verify(&python, r);
    }
}

/// Hands one delivery to `scripts/webhook-verify.py` (the `standardwebhooks`
/// library): exit 0 when it verifies.
fn python_verify(python: &str, r: &Received) {
    use std::io::Write as _;
    let headers = serde_json::json!({
        "webhook-id": r.header("webhook-id"),
        "webhook-timestamp": r.header("webhook-timestamp"),
        "webhook-signature": r.header("webhook-signature"),
    });
    let mut child = Command::new(python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/webhook-verify.py"))
        .env("WEBHOOK_SECRET", secret())
        .env("WEBHOOK_HEADERS", headers.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the Python verifier starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&r.body)
        .expect("body to the verifier");
    let out = child.wait_with_output().expect("the verifier ends");
    assert!(
        out.status.success(),
        "standardwebhooks refused the delivery: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

// -------------------------------------------------------------------- node

static DIRS: AtomicU64 = AtomicU64::new(0);

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "sba-watch-{}-{tag}-{}",
        std::process::id(),
        DIRS.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    dir
}

/// The real binary as one node: its API and operator listeners bound here
/// and handed over; its stderr kept.
struct Node {
    child: Child,
    metrics: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Node {
    /// Starts a node in `dir` with `store` lines under `board_api` (the
    /// kept versions' store and anything beside it).
    fn start(
        dir: &Path,
        upstream: &SampleUpstream,
        receiver: &Receiver,
        api: &str,
        max_attempts: u32,
    ) -> Node {
        let listeners: Vec<TcpListener> = (0..2)
            .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind"))
            .collect();
        let (main, metrics) = (
            listeners[0].local_addr().unwrap(),
            listeners[1].local_addr().unwrap(),
        );
        let sock = dir.join(format!("upgrade-{}.sock", main.port()));
        let conf = dir.join(format!("node-{}.yaml", main.port()));
        let text = format!(
            "version: 1\nthreads: 2\npid_file: {dir}/pid\nupgrade_sock: {sock}\n\
             grace_period_seconds: 0\ngraceful_shutdown_timeout_seconds: 1\n\
             board_api:\n  provider:\n    origin: {origin}\n{api}\
             \n  watch:\n    jobs:\n      - id: trip\n        url_env: SBAPI_TEST_WATCH_LINK\n\
             \x20       every: 10s\n        max_attempts: {max_attempts}\n        webhook:\n\
             \x20         url_env: SBAPI_TEST_WATCH_URL\n          secret_env: SBAPI_TEST_WATCH_SECRET\n\
             \x20 server:\n    listen: [\"{main}\"]\n    metrics:\n      listen: \"{metrics}\"\n",
            dir = dir.display(),
            sock = sock.display(),
            origin = upstream.origin(),
        );
        std::fs::write(&conf, text).expect("write the configuration");
        let mut child = Command::new(env!("CARGO_BIN_EXE_shared-board-api"))
            .arg("-u")
            .arg("-c")
            .arg(&conf)
            .env("RUST_LOG", "info")
            .env("SBAPI_TEST_WATCH_LINK", share_link())
            .env("SBAPI_TEST_WATCH_URL", receiver.url())
            .env("SBAPI_TEST_WATCH_SECRET", secret())
            .env("SBAPI_TEST_FLEET_KEY", "test-fleet-key-0123456789abcdef!")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the binary");
        let log = Arc::new(Mutex::new(Vec::new()));
        let stderr = child.stderr.take().expect("stderr");
        let lines = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                lines.lock().unwrap().push(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        while !sock.exists() {
            assert!(
                Instant::now() < deadline,
                "no upgrade socket: {:?}",
                log.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(20));
        let mut fds = Fds::new();
        for l in &listeners {
            l.set_nonblocking(true).expect("non-blocking");
            fds.add(l.local_addr().unwrap().to_string(), l.as_raw_fd());
        }
        fds.send_to_sock(sock.to_string_lossy().as_ref())
            .expect("hand the listeners over");
        let node = Node {
            child,
            metrics,
            log,
        };
        wait_until("the operator listener answers /readyz", || {
            std::net::TcpStream::connect(metrics).is_ok()
                && request(metrics, "GET", "/readyz", &[]).status == 200
        });
        node
    }

    /// The job's entry of `GET /watch`.
    fn job(&self) -> Value {
        let r = request(self.metrics, "GET", "/watch", &[]);
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        r.json()["jobs"][0].clone()
    }

    fn run_now(&self) {
        let r = request(self.metrics, "POST", "/watch/trip/run", &[]);
        assert_eq!(r.status, 202, "{}", String::from_utf8_lossy(&r.body));
    }

    fn metric(&self, line_start: &str) -> f64 {
        let r = request(
            self.metrics,
            "GET",
            "/metrics",
            &[("Accept-Encoding", "identity")],
        );
        String::from_utf8_lossy(&r.body)
            .lines()
            .find(|l| l.starts_with(line_start))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0)
    }

    /// Sends SIGTERM and waits (bounded) for a clean exit that stopped the
    /// watch jobs.
    fn stop(mut self) {
        let pid = i32::try_from(self.child.id()).expect("a pid");
        // SAFETY: a signal to our own child, by its id.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                break status;
            }
            assert!(Instant::now() < deadline, "no exit after SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(status.success(), "{status:?}");
        wait_until("the log says the watch jobs stopped", || {
            self.log
                .lock()
                .unwrap()
                .iter()
                .any(|l| l.contains("watch: stopped"))
        });
    }

    /// No secret of the job in anything the node logged.
    fn assert_log_is_clean(&self) {
        let log = self.log.lock().unwrap();
        for line in log.iter() {
            for secret in [PERMISSION, HOOK_TOKEN, "/hooks/in", "whsec_"] {
                assert!(!line.contains(secret), "{secret} logged: {line}");
            }
        }
    }
}

fn sqlite(dir: &Path) -> String {
    format!(
        "  cache:\n    ttl_seconds: 1\n  changes:\n    store: sqlite\n    path: {}/versions.sqlite\n",
        dir.display()
    )
}

fn edit(upstream: &SampleUpstream) {
    let r = request(upstream.addr(), "POST", &format!("/demo/edit/{BOARD}"), &[]);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
}

/// Waits for the job's first run (the version recorded).
fn first_run(node: &Node) -> String {
    wait_until("the first run records the version", || {
        node.job()["lastVersion"].is_string()
    });
    node.job()["lastVersion"].as_str().unwrap().to_owned()
}

/// Asks `nodes` for runs until the receiver has seen `count` requests.
fn run_until_delivered(nodes: &[&Node], receiver: &Receiver, count: usize) {
    wait_until("a delivery arrives", || {
        if receiver.count() >= count {
            return true;
        }
        for node in nodes {
            node.run_now();
        }
        std::thread::sleep(Duration::from_millis(400));
        receiver.count() >= count
    });
}

fn started(tag: &str, plan: &[Reply]) -> (PathBuf, SampleUpstream, Receiver) {
    let dir = temp_dir(tag);
    let upstream = SampleUpstream::start_in_thread(([127, 0, 0, 1], 0).into()).expect("upstream");
    (dir, upstream, Receiver::start(plan))
}

// ------------------------------------------------------------------- tests

#[test]
fn a_change_is_delivered_once_signed_and_retried_until_the_receiver_recovers() {
    let (dir, upstream, receiver) = started("retry", &[Reply::Status(500), Reply::Status(503)]);
    let node = Node::start(&dir, &upstream, &receiver, &sqlite(&dir), 8);
    let before = first_run(&node);
    assert_eq!(node.job()["lastOutcome"], "first");
    assert_eq!(
        receiver.count(),
        0,
        "the first run only records the version"
    );

    edit(&upstream);
    run_until_delivered(&[&node], &receiver, 1);
    wait_until("two failures, then delivered", || receiver.count() >= 3);
    wait_until("nothing pending", || node.job()["pendingDeliveries"] == 0);
    let seen = receiver.seen();
    assert_eq!(seen.len(), 3, "one delivery, three attempts");
    for r in &seen {
        verify(r);
        assert_eq!(r.header("webhook-id"), seen[0].header("webhook-id"));
        assert_eq!(r.body, seen[0].body, "the same body on every attempt");
    }
    assert!(
        seen[2].at - seen[1].at >= Duration::from_millis(500),
        "back-off"
    );
    let event = seen[0].json();
    assert_eq!(event["type"], "board.changed");
    assert!(event["timestamp"].as_str().unwrap().ends_with('Z'));
    let data = &event["data"];
    assert_eq!(data["job"], "trip");
    assert_eq!(data["boardId"], BOARD);
    assert_eq!(data["from"], before.as_str());
    assert_ne!(data["to"], data["from"]);
    assert_eq!(node.job()["lastVersion"], data["to"]);
    let listed: usize = ["added", "removed", "changed", "moved"]
        .iter()
        .map(|k| data[k].as_array().map_or(0, Vec::len))
        .sum();
    assert!(listed > 0, "the edit is listed: {data}");
    let body = String::from_utf8_lossy(&seen[0].body);
    assert!(
        !body.contains(PERMISSION) && !body.contains("milanote.com"),
        "{body}"
    );

    // Another run sees no change: no second delivery.
    let last_run = node.job()["lastRun"].clone();
    node.run_now();
    wait_until("another run", || node.job()["lastRun"] != last_run);
    assert_eq!(node.job()["lastOutcome"], "unchanged");
    assert_eq!(receiver.count(), 3);
    assert_eq!(node.job()["lastError"], Value::Null);
    assert_eq!(
        node.metric("board_api_watch_deliveries_total{outcome=\"delivered\"}"),
        1.0
    );
    assert_eq!(
        node.metric("board_api_watch_deliveries_total{outcome=\"retried\"}"),
        2.0
    );
    assert_eq!(node.metric("board_api_watch_pending_deliveries"), 0.0);
    assert!(node.metric("board_api_watch_runs_total{job=\"trip\",outcome=\"changed\"}") >= 1.0);
    let status =
        String::from_utf8_lossy(&request(node.metrics, "GET", "/watch", &[]).body).into_owned();
    assert!(
        !status.contains(PERMISSION) && !status.contains(HOOK_TOKEN),
        "{status}"
    );
    node.assert_log_is_clean();
}

#[test]
fn a_node_killed_with_a_delivery_pending_delivers_it_after_a_restart_under_the_same_id() {
    // The first attempt is never answered: the node dies during it.
    let (dir, upstream, receiver) = started("kill", &[Reply::Hang]);
    let mut node = Node::start(&dir, &upstream, &receiver, &sqlite(&dir), 8);
    first_run(&node);
    edit(&upstream);
    run_until_delivered(&[&node], &receiver, 1);
    node.child.kill().expect("SIGKILL");
    node.child.wait().expect("reaped");
    let id = receiver.seen()[0].header("webhook-id").to_owned();

    let restarted = Node::start(&dir, &upstream, &receiver, &sqlite(&dir), 8);
    wait_until("the pending delivery is made again", || {
        receiver.count() >= 2
    });
    wait_until("nothing pending", || {
        restarted.job()["pendingDeliveries"] == 0
    });
    let seen = receiver.seen();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[1].header("webhook-id"), id, "the same delivery");
    assert_eq!(seen[1].body, seen[0].body);
    for r in &seen {
        verify(r);
    }
    // The restarted node's runs see the version it recorded: no new change.
    let last_run = restarted.job()["lastRun"].clone();
    restarted.run_now();
    wait_until("a run after the restart", || {
        restarted.job()["lastRun"] != last_run && !restarted.job()["lastRun"].is_null()
    });
    assert_eq!(restarted.job()["lastOutcome"], "unchanged");
    assert_eq!(receiver.count(), 2);
    restarted.assert_log_is_clean();
    drop(node);
}

#[test]
fn a_receiver_that_answers_410_is_given_up_at_once() {
    let (dir, upstream, receiver) = started("gone", &[Reply::Status(410)]);
    let node = Node::start(&dir, &upstream, &receiver, &sqlite(&dir), 8);
    first_run(&node);
    edit(&upstream);
    run_until_delivered(&[&node], &receiver, 1);
    wait_until("given up", || {
        node.metric("board_api_watch_deliveries_total{outcome=\"failed\"}") == 1.0
    });
    let job = node.job();
    assert_eq!(job["pendingDeliveries"], 0);
    assert!(
        job["lastError"].as_str().unwrap_or("").contains("410"),
        "{job}"
    );
    assert_eq!(
        node.metric("board_api_watch_deliveries_total{outcome=\"retried\"}"),
        0.0
    );
    assert_eq!(receiver.count(), 1, "never retried");
    verify(&receiver.seen()[0]);
    node.assert_log_is_clean();
    // SIGTERM: the watch service stops with the server, and the process
    // exits cleanly.
    node.stop();
}

#[test]
fn retry_after_is_honoured() {
    let (dir, upstream, receiver) = started("429", &[Reply::TooMany(3)]);
    let node = Node::start(&dir, &upstream, &receiver, &sqlite(&dir), 8);
    first_run(&node);
    edit(&upstream);
    run_until_delivered(&[&node], &receiver, 1);
    wait_until("the second attempt", || receiver.count() >= 2);
    let seen = receiver.seen();
    assert!(
        seen[1].at - seen[0].at >= Duration::from_secs(3),
        "{:?} after a Retry-After of 3 s",
        seen[1].at - seen[0].at
    );
    assert_eq!(seen[0].header("webhook-id"), seen[1].header("webhook-id"));
    for r in &seen {
        verify(r);
    }
}

#[test]
fn two_nodes_on_one_redis_make_one_delivery_per_change() {
    let redis = Redis::start();
    let proxy = Proxy::start(&redis.socket());
    let (dir, upstream, receiver) = started("fleet", &[]);
    let fleet = format!(
        "  cache:\n    ttl_seconds: 1\n    shared:\n      url: {}\n      secret_env: SBAPI_TEST_FLEET_KEY\n  changes:\n    store: redis\n",
        proxy.url()
    );
    // Hostile values before any node starts: the pending set of another
    // type, and the job's run lease pinned without an expiry.
    let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let job = hex(&sha256(b"trip")[..16]);
    redis.cli(&["SET", "sbapi:watch:pending", "not a set"]);
    let pinned = format!("sbapi:watch:{{{job}}}:lease:run:{job}");
    redis.cli(&["SET", &pinned, "forged"]);
    let a = Node::start(&dir, &upstream, &receiver, &fleet, 8);
    let b = Node::start(&dir, &upstream, &receiver, &fleet, 8);
    first_run(&a);
    for round in 1..=2 {
        if round == 2 {
            // Members that name nothing, or nothing of ours.
            let ghost = format!("trip/msg_{}", "f".repeat(32));
            redis.cli(&["SADD", "sbapi:watch:pending", "garbage", &ghost]);
        }
        edit(&upstream);
        run_until_delivered(&[&a, &b], &receiver, round);
        let to = receiver.seen()[round - 1].json()["data"]["to"].clone();
        // Both nodes run again after the change: neither queues it again.
        for node in [&a, &b] {
            wait_until("each node has run on the new version", || {
                node.run_now();
                std::thread::sleep(Duration::from_millis(300));
                node.job()["lastVersion"] == to
            });
        }
        wait_until("nothing pending", || {
            a.job()["pendingDeliveries"] == 0 && b.job()["pendingDeliveries"] == 0
        });
        assert_eq!(receiver.count(), round, "one delivery per change");
    }
    let seen = receiver.seen();
    assert_ne!(seen[0].header("webhook-id"), seen[1].header("webhook-id"));
    assert_eq!(seen[1].json()["data"]["from"], seen[0].json()["data"]["to"]);
    for r in &seen {
        verify(r);
    }
    // Nothing in Redis names the link, the permission id or the receiver.
    let dump = redis.keys().join("\n");
    assert!(dump.contains("watch:"), "{dump}");
    assert!(
        !dump.contains(PERMISSION) && !dump.contains(HOOK_TOKEN) && !dump.contains(BOARD),
        "{dump}"
    );
    a.assert_log_is_clean();
    b.assert_log_is_clean();
}

#[test]
fn dash_t_checks_every_variable_of_a_job() {
    let dir = temp_dir("dash-t");
    let conf = dir.join("watch.yaml");
    std::fs::write(
        &conf,
        "version: 1\nboard_api:\n  watch:\n    jobs:\n      - id: trip\n        url_env: SBAPI_T_LINK\n        webhook:\n          url_env: SBAPI_T_URL\n          secret_env: SBAPI_T_SECRET\n  server:\n    listen: [\"127.0.0.1:1\"]\n",
    )
    .expect("write");
    let run = |vars: &[(&str, &str)]| {
        let out = Command::new(env!("CARGO_BIN_EXE_shared-board-api"))
            .arg("-t")
            .arg("-c")
            .arg(&conf)
            .env("RUST_LOG", "error")
            .env_remove("SBAPI_T_LINK")
            .env_remove("SBAPI_T_URL")
            .env_remove("SBAPI_T_SECRET")
            .envs(vars.iter().copied())
            .output()
            .expect("runs");
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.code(), text)
    };
    let link = share_link();
    let secret = secret();
    let good = [
        ("SBAPI_T_LINK", link.as_str()),
        ("SBAPI_T_URL", "https://hooks.example.com/in"),
        ("SBAPI_T_SECRET", secret.as_str()),
    ];
    let (code, text) = run(&good);
    assert_eq!(code, Some(0), "{text}");
    let cases: [(usize, &str, &str); 5] = [
        (0, "https://example.com/x?p=y", "jobs[0].url_env"),
        (1, "ftp://hooks.example.com/in", "jobs[0].webhook.url_env"),
        (2, "whsec_c2hvcnQ=", "jobs[0].webhook.secret_env"),
        (2, "not-a-secret", "jobs[0].webhook.secret_env"),
        (0, "", "jobs[0].url_env"),
    ];
    for (at, value, key) in cases {
        let mut vars = good.to_vec();
        vars[at].1 = value;
        let (code, text) = run(&vars);
        assert_eq!(code, Some(2), "{value}: {text}");
        assert!(text.contains(key), "{value}: {text}");
        assert!(
            value.is_empty() || !text.contains(value),
            "the value is never echoed: {text}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
