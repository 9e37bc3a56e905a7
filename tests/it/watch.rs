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

pub mod node;
pub mod receiver;

use crate::common::redis::{Proxy, Redis};
use crate::common::{request, BOARD};
use base64::Engine as _;
use node::{temp_dir, Node};
use receiver::{hmac_sha256, sha256, Received, Receiver, Reply};
use serde_json::Value;
use shared_board_api::demo::SampleUpstream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A permission id found nowhere else: it must never reach a payload or a
/// log line.
pub const PERMISSION: &str = "permWatchSecret42";
/// A token of the receiver's, in its URL: never in a log line.
pub const HOOK_TOKEN: &str = "hookTokenXyz987";
/// The signing key (32 bytes) and the secret that encodes it.
pub const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";

pub fn secret() -> String {
    format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(KEY)
    )
}

pub fn share_link() -> String {
    format!("https://app.milanote.com/{BOARD}/trip?p={PERMISSION}")
}

/// Polls `check` every 100 ms for up to 120 s: six tests, each with its
/// nodes, upstream and receiver, share a busy 2-core machine (one run of
/// the file took 65 s under a parallel build).
pub fn wait_until(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !check() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Checks a delivery's Standard Webhooks headers and signature; with
/// `SBAPI_WEBHOOK_VERIFY_PYTHON` set, the spec's Python library checks it
/// too.
pub fn verify(r: &Received) {
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
/// library), and the same delivery with one byte of its body changed: the
/// first verifies, the second does not (so the check can fail).
fn python_verify(python: &str, r: &Received) {
    let (ok, out) = python_check(python, r, &r.body);
    assert!(ok, "standardwebhooks refused the delivery: {out}");
    let mut tampered = r.body.clone();
    if let Some(last) = tampered.last_mut() {
        *last ^= 1;
    }
    let (ok, out) = python_check(python, r, &tampered);
    assert!(!ok, "standardwebhooks accepted a changed body: {out}");
}

fn python_check(python: &str, r: &Received, body: &[u8]) -> (bool, String) {
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
        .write_all(body)
        .expect("body to the verifier");
    let out = child.wait_with_output().expect("the verifier ends");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

pub fn sqlite(dir: &Path) -> String {
    format!(
        "  cache:\n    ttl_seconds: 1\n  changes:\n    store: sqlite\n    path: {}/versions.sqlite\n",
        dir.display()
    )
}

pub fn edit(upstream: &SampleUpstream) {
    let r = request(upstream.addr(), "POST", &format!("/demo/edit/{BOARD}"), &[]);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
}

/// Waits for the job's first run (the version recorded).
pub fn first_run(node: &Node) -> String {
    wait_until("the first run records the version", || {
        node.job()["lastVersion"].is_string()
    });
    node.job()["lastVersion"].as_str().unwrap().to_owned()
}

/// Asks `nodes` for runs until the receiver has seen `count` requests.
pub fn run_until_delivered(nodes: &[&Node], receiver: &Receiver, count: usize) {
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

pub fn started(tag: &str, plan: &[Reply]) -> (PathBuf, SampleUpstream, Receiver) {
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
    // Every attempt carries the traceparent of the run that queued it.
    let traceparent = seen[0].header("traceparent").to_owned();
    let fields: Vec<&str> = traceparent.split('-').collect();
    assert!(
        traceparent.len() == 55
            && fields.len() == 4
            && fields[0] == "00"
            && fields[1].len() == 32
            && fields[1] != "0".repeat(32),
        "traceparent {traceparent:?}"
    );
    for r in &seen {
        verify(r);
        assert_eq!(r.header("webhook-id"), seen[0].header("webhook-id"));
        assert_eq!(r.body, seen[0].body, "the same body on every attempt");
        assert_eq!(r.header("traceparent"), traceparent, "the same run's trace");
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
    // The operator routes: an unknown job, a wrong method.
    assert_eq!(
        request(
            node.metrics,
            "POST",
            "/watch/nope/run",
            &[("X-Requested-By", "test")]
        )
        .status,
        404
    );
    assert_eq!(
        request(node.metrics, "GET", "/watch/trip/run", &[]).status,
        405
    );
    assert_eq!(
        request(
            node.metrics,
            "POST",
            "/watch",
            &[("X-Requested-By", "test")]
        )
        .status,
        405
    );
    // SIGTERM: the watch service stops with the server, and the process
    // exits cleanly.
    node.stop();
}

/// A receiver that sends more interim (`1xx`) heads than an attempt reads,
/// with an answer after them or without: each such attempt is counted as
/// retried and the delivery made on the next one (an attempt that panicked
/// was never counted, and its delivery was tried again every 30 s forever).
#[test]
fn too_many_interim_answers_are_a_counted_retry() {
    let plan = [
        Reply::Interim {
            n: 5,
            then_answer: true,
        },
        Reply::Interim {
            n: 50,
            then_answer: false,
        },
    ];
    let (dir, upstream, receiver) = started("interim", &plan);
    let node = Node::start(&dir, &upstream, &receiver, &sqlite(&dir), 8);
    first_run(&node);
    edit(&upstream);
    run_until_delivered(&[&node], &receiver, 1);
    wait_until("two retries, then delivered", || {
        node.metric("board_api_watch_deliveries_total{outcome=\"delivered\"}") == 1.0
    });
    assert_eq!(receiver.count(), 3, "one delivery, three attempts");
    assert_eq!(
        node.metric("board_api_watch_deliveries_total{outcome=\"retried\"}"),
        2.0
    );
    assert_eq!(node.job()["pendingDeliveries"], 0);
    let seen = receiver.seen();
    for r in &seen {
        verify(r);
        assert_eq!(r.header("webhook-id"), seen[0].header("webhook-id"));
    }
    node.assert_log_is_clean();
}

/// A run asked for by hand reads the board fresh: right after an edit it
/// sees the change, though the board loaded by the run before is still in
/// the cache (10 s, the longest `every: 10s` allows).
#[test]
fn a_run_asked_for_by_hand_reads_past_the_cache() {
    let (dir, upstream, receiver) = started("fresh", &[]);
    let store = sqlite(&dir).replace("ttl_seconds: 1", "ttl_seconds: 10");
    let node = Node::start(&dir, &upstream, &receiver, &store, 8);
    let before = first_run(&node);
    let last_run = node.job()["lastRun"].clone();
    edit(&upstream);
    node.run_now();
    wait_until("the run asked for", || node.job()["lastRun"] != last_run);
    let job = node.job();
    assert_eq!(job["lastOutcome"], "changed", "{job}");
    assert_ne!(job["lastVersion"], before.as_str());
    wait_until("the delivery", || receiver.count() >= 1);
    assert_eq!(receiver.seen()[0].json()["data"]["from"], before.as_str());
    node.assert_log_is_clean();
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
    redis.cli(&["SET", "sbapi:watch:due", "not a sorted set"]);
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
            redis.cli(&["ZADD", "sbapi:watch:due", "0", "garbage", "0", &ghost]);
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
