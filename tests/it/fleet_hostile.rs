//! The fleet tier against someone who can write to its key prefix (another
//! service on the same Redis, or its ACL user): every hostile value is
//! written in the tier's own format into a real `redis-server`, sealed
//! with the fleet key where the case needs it to show that the checks after
//! the MAC hold too. Every node stays up and every request answers `200`
//! with the right board, within `lock_ms` plus the load.
//!
//! The tests of this file run one at a time (they start servers of their
//! own and read process-wide metrics).

use crate::common::redis::{self, cache_level, wait_for, Proxy, Redis};
use crate::common::*;
use shared_board_api::internals::document::Coverage;
use shared_board_api::internals::store::shared::format::{self, Header};
use shared_board_api::internals::store::shared::keys::BoardKeys;
use shared_board_api::internals::store::shared::seal::{Seal, Secret};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// How long a lock may live on these nodes.
const LOCK_MS: u64 = 4_000;
/// A second fixture board, for values moved between boards.
const OTHER: &str = "2Xk9PqRt7LmN4v";

/// `board_api` lines for a tier at `url`, with `ttl` seconds of TTL.
fn tier(url: &str, ttl: u64, extra: &str) -> String {
    format!(
        "  cache:\n    ttl_seconds: {ttl}\n    error_ttl_seconds: 30\n    shared:\n      url: {url}\n      secret_env: {}\n      lock_ms: {LOCK_MS}\n{extra}",
        redis::fleet_key_var()
    )
}

fn seal() -> Seal {
    Seal::new(
        &Secret::new(redis::FLEET_KEY.to_vec()).expect("32 bytes"),
        None,
    )
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn header(expires_at_ms: i64) -> Header {
    Header {
        coverage: Coverage::Full,
        unloaded: 0,
        transient: false,
        expires_at_ms,
    }
}

/// `json` stored as a node of the fleet would store it under `name`.
fn sealed(json: &[u8], expires_at_ms: i64, name: &str) -> Vec<u8> {
    format::encode(&header(expires_at_ms), json, &seal(), name).expect("encodes")
}

fn doc_key(board: &str, p: &str) -> String {
    BoardKeys::new("sbapi:", board, p).doc(Coverage::Full)
}

/// The document of `board` as this service writes it: the `data` of a
/// full view, whose body is the document inside the envelope.
fn document_of(node: std::net::SocketAddr, board: &str) -> Vec<u8> {
    let r = request(
        node,
        "GET",
        &format!("/api/detail?url={}", link(board, "hostile-source")),
        &[],
    );
    assert_eq!(r.status, 200);
    let prefix = br#"{"ok":true,"data":"#;
    assert!(r.body.starts_with(prefix));
    r.body[prefix.len()..r.body.len() - 1].to_vec()
}

/// Every representation a crash was seen with, and the full view: each
/// answers `200` with `board`'s id, within `LOCK_MS` plus the load.
/// Returns the cache level of the first answer.
fn every_view_answers(node: std::net::SocketAddr, board: &str, p: &str) -> String {
    let query = format!("url={}", link(board, p));
    let targets = [
        (format!("/api/detail?{query}&view=standard"), false),
        (format!("/api/detail?{query}&include=**"), false),
        (format!("/api/search?{query}"), true),
        (format!("/api/detail?{query}"), false),
        (
            format!("/api/detail?{query}&exclude=board.children.title"),
            true,
        ),
    ];
    let mut first = None;
    for (target, markdown) in targets {
        let started = Instant::now();
        let headers: &[(&str, &str)] = if markdown {
            &[("accept", "text/markdown")]
        } else {
            &[]
        };
        let r = request(node, "GET", &target, headers);
        let took = started.elapsed();
        assert_eq!(
            r.status,
            200,
            "{target}: {}",
            String::from_utf8_lossy(&r.body)
        );
        assert!(
            took < Duration::from_millis(LOCK_MS),
            "{target} took {took:?}"
        );
        if markdown {
            assert!(r
                .header("content-type")
                .unwrap_or_default()
                .starts_with("text/markdown"));
        } else {
            let data = &r.json()["data"];
            if !data["board"]["id"].is_null() {
                assert_eq!(data["board"]["id"], board, "{target}");
            }
            if !data["source"]["boardId"].is_null() {
                assert_eq!(data["source"]["boardId"], board, "{target}");
            }
        }
        first.get_or_insert_with(|| cache_level(&r));
    }
    first.unwrap_or_default()
}

/// `{"version":1,...,"board":{"id":board,...,"children":[` a node holding a
/// node ... `levels` deep `]}}`, built as text.
fn nested(board: &str, levels: usize) -> Vec<u8> {
    let mut doc = format!(
        r#"{{"version":1,"source":{{"provider":"milanote","boardId":"{board}"}},"fetchedAt":"2026-11-25T05:00:00.000Z","board":{{"id":"{board}","type":"BOARD","title":"deep","children":"#
    )
    .into_bytes();
    for _ in 0..levels {
        doc.extend_from_slice(br#"[{"children":"#);
    }
    doc.extend_from_slice(b"[]");
    for _ in 0..levels {
        doc.extend_from_slice(b"}]");
    }
    doc.extend_from_slice(b"}}");
    doc
}

fn rejected() -> f64 {
    let text = prometheus::TextEncoder::new()
        .encode_to_string(&prometheus::gather())
        .unwrap_or_default();
    text.lines()
        .find_map(|l| {
            l.strip_prefix(r#"board_api_fleet_total{api="/api",result="rejected"}"#)
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0.0)
}

#[test]
fn hostile_documents_are_misses_on_every_node() {
    let _one = serial();
    let redis = Redis::start();
    let proxy = Proxy::start(&redis.socket());
    let tier = tier(&proxy.url(), 60, "");
    let a = start_gateway("", &tier);
    let b = start_gateway("", &tier);
    let good = document_of(a.addr, BOARD);
    let expires = now_ms() + 60_000;

    let mut cases: Vec<(&str, &str, Vec<u8>)> = Vec::new();
    // A stack overflow once: 30,000 and 200,000 nested children, sealed
    // with the fleet key (the depth check after the MAC refuses them).
    for (p, levels) in [("hostile-deep-30k", 30_000), ("hostile-deep-200k", 200_000)] {
        let value = sealed(&nested(BOARD, levels), expires, &doc_key(BOARD, p));
        cases.push((p, BOARD, value));
    }
    // Board A's value copied under board B's key: its tag is for A's key.
    let a_key = doc_key(BOARD, "hostile-copy");
    let b_key = doc_key(OTHER, "hostile-copy");
    cases.push(("hostile-copy", OTHER, sealed(&good, expires, &a_key)));
    // The same document sealed for B's key by a node of the fleet: the
    // board id inside is still A's.
    cases.push((
        "hostile-copy-sealed",
        OTHER,
        sealed(&good, expires, &doc_key(OTHER, "hostile-copy-sealed")),
    ));
    // A forged document: a token and a permission id, another board id,
    // seven unloaded boards in its header; without the fleet key...
    let forged = String::from_utf8_lossy(&good).replacen(
        "\"board\":{",
        "\"board\":{\"permissionId\":\"p\",\"token\":\"t\",\"userId\":\"u\",",
        1,
    );
    let other_key = Seal::new(&Secret::new(vec![b'x'; 32]).expect("key"), None);
    let name = doc_key(BOARD, "hostile-forged");
    let value =
        format::encode(&header(expires), forged.as_bytes(), &other_key, &name).expect("encodes");
    cases.push(("hostile-forged", BOARD, value));
    // ... and with it: the content check refuses the sensitive fields.
    let name = doc_key(BOARD, "hostile-forged-sealed");
    cases.push((
        "hostile-forged-sealed",
        BOARD,
        sealed(forged.as_bytes(), expires, &name),
    ));
    let name = doc_key(BOARD, "hostile-unloaded");
    let lying = Header {
        unloaded: 7,
        ..header(expires)
    };
    let value = format::encode(&lying, &good, &seal(), &name).expect("encodes");
    cases.push(("hostile-unloaded", BOARD, value));
    // Non-compact JSON, once a 500 kept in memory.
    let pretty = serde_json::to_vec_pretty(
        &serde_json::from_slice::<serde_json::Value>(&good).expect("JSON"),
    )
    .expect("serializes");
    let name = doc_key(BOARD, "hostile-pretty");
    cases.push(("hostile-pretty", BOARD, sealed(&pretty, expires, &name)));

    let before = rejected();
    for (p, board, value) in &cases {
        let key = if *p == "hostile-copy" {
            b_key.clone()
        } else {
            doc_key(board, p)
        };
        for node in [a.addr, b.addr] {
            // Each node meets the hostile value: the one before stored its
            // own load over it.
            redis.set_bytes(&key, value, Some(60_000));
            let written = redis.cli(&["--no-raw", "get", &key]);
            let level = every_view_answers(node, board, p);
            assert_eq!(level, "miss", "{p}: the hostile value was not served");
            let replaced = wait_for(|| redis.cli(&["--no-raw", "get", &key]) != written);
            assert!(replaced, "{p}: the node stored its own load");
        }
    }
    assert!(
        rejected() >= before + 2.0 * cases.len() as f64,
        "every hostile value was counted"
    );
    // Both nodes are up; the good values they stored serve the fleet.
    for (p, board, _) in &cases {
        for node in [a.addr, b.addr] {
            every_view_answers(node, board, p);
        }
    }
    let c = start_gateway("", &tier);
    assert_eq!(
        every_view_answers(c.addr, BOARD, "hostile-deep-30k"),
        "shared"
    );
}

#[test]
fn lifetimes_are_capped_by_the_key_and_the_node() {
    let _one = serial();
    let redis = Redis::start();
    let proxy = Proxy::start(&redis.socket());
    let a = start_gateway("", &tier(&proxy.url(), 60, ""));
    let good = document_of(a.addr, BOARD);
    // A header expiry in the year 2255, on a key that lives 1.5 s: served
    // from the tier, then never past the key's own expiry.
    let far = 9_000_000_000_000;
    let p = "hostile-far";
    redis.set_bytes(
        &doc_key(BOARD, p),
        &sealed(&good, far, &doc_key(BOARD, p)),
        Some(1_500),
    );
    assert_eq!(every_view_answers(a.addr, BOARD, p), "shared");
    // Redis's own expiry (it cannot be faked): wait until the key is gone.
    let far_key = doc_key(BOARD, p);
    assert!(
        wait_for(|| redis.cli(&["exists", &far_key]) == "0"),
        "the key expired"
    );
    assert_eq!(
        every_view_answers(a.addr, BOARD, p),
        "miss",
        "the node dropped it with the Redis key"
    );
    // A key that lives an hour, on a node whose TTL is 1 s: kept 1 s.
    let short = start_gateway("", &tier(&proxy.url(), 1, ""));
    let p = "hostile-far-ttl";
    redis.set_bytes(
        &doc_key(BOARD, p),
        &sealed(&good, far, &doc_key(BOARD, p)),
        Some(3_600_000),
    );
    assert_eq!(every_view_answers(short.addr, BOARD, p), "shared");
    // Process hits until the node's own TTL (1 s) passes, then the tier
    // again: the level each request reports, not a fixed wait, says when.
    let level = |r: &Response| cache_level(r);
    let target = format!("/api/detail?url={}", link(BOARD, p));
    assert!(
        wait_for(|| level(&request(short.addr, "GET", &target, &[])) == "shared"),
        "read again from the tier after the node's own TTL"
    );
    // A document without any expiry is not ours: deleted, and loaded.
    let p = "hostile-persist";
    let key = doc_key(BOARD, p);
    redis.set_bytes(&key, &sealed(&good, now_ms() + 60_000, &key), None);
    assert_eq!(every_view_answers(a.addr, BOARD, p), "miss");
}

#[test]
fn side_keys_without_expiry_or_out_of_range_change_nothing() {
    let _one = serial();
    let redis = Redis::start();
    let proxy = Proxy::start(&redis.socket());
    let budget = "    fleet_requests_per_second: 50\n";
    let a = start_gateway(budget, &tier(&proxy.url(), 60, ""));
    let keys = |p: &str| BoardKeys::new("sbapi:", BOARD, p);
    // A lock without expiry, and one that outlives any lock: expired.
    redis.cli(&["set", &keys("hostile-lock").lock(Coverage::Full), "x"]);
    redis.cli(&[
        "set",
        &keys("hostile-lock-long").lock(Coverage::Full),
        "x",
        "PX",
        "600000",
    ]);
    // Failures: a sealed 403 with no expiry, a plain `403` (once the
    // format), a status no node writes.
    let name = keys("hostile-fail").failure();
    redis.set_bytes(
        &name,
        &format::failure(403, now_ms() + 60_000, &seal(), &name),
        None,
    );
    redis.cli(&[
        "set",
        &keys("hostile-fail-plain").failure(),
        "403",
        "PX",
        "60000",
    ]);
    let name = keys("hostile-fail-418").failure();
    redis.set_bytes(
        &name,
        &format::failure(418, now_ms() + 60_000, &seal(), &name),
        Some(60_000),
    );
    // A budget counter far in the future, without expiry.
    redis.cli(&["set", "sbapi:budget", "99999999999999999999"]);
    for p in [
        "hostile-lock",
        "hostile-lock-long",
        "hostile-fail",
        "hostile-fail-plain",
        "hostile-fail-418",
        "hostile-budget",
    ] {
        assert_eq!(every_view_answers(a.addr, BOARD, p), "miss", "{p}");
    }
    for p in ["hostile-fail", "hostile-fail-plain", "hostile-fail-418"] {
        assert_eq!(
            redis.cli(&["exists", &keys(p).failure()]),
            "0",
            "{p} deleted"
        );
    }
    // The counter was reset by the budget script to a value it can write.
    let pttl: i64 = redis.cli(&["pttl", "sbapi:budget"]).parse().expect("pttl");
    assert!(pttl > 0, "the counter has an expiry again: {pttl}");
}

/// A lock as a node of the fleet writes it: a random token sealed with the
/// fleet key for the lock's own name, as hex text.
fn sealed_lock(name: &str) -> String {
    seal()
        .seal(name, vec![7; 16])
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Sends `target` to every node at once; each answer's status, body and
/// time.
fn at_once(nodes: &[std::net::SocketAddr], target: &str) -> Vec<(u16, String, Duration)> {
    std::thread::scope(|s| {
        let asked: Vec<_> = nodes
            .iter()
            .map(|&node| {
                s.spawn(move || {
                    let started = Instant::now();
                    let r = request(node, "GET", target, &[]);
                    let body = String::from_utf8_lossy(&r.body).into_owned();
                    (r.status, body, started.elapsed())
                })
            })
            .collect();
        asked
            .into_iter()
            .map(|h| h.join().expect("request thread"))
            .collect()
    })
}

/// The `calls` of one command in `INFO commandstats`.
fn calls(redis: &Redis, command: &str) -> u64 {
    let stats = redis.cli(&["info", "commandstats"]);
    stats
        .lines()
        .find_map(|l| l.strip_prefix(&format!("cmdstat_{command}:calls=")))
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[test]
fn a_lock_delays_a_load_and_never_fails_it() {
    let _one = serial();
    let redis = Redis::start();
    let proxy = Proxy::start(&redis.socket());
    // A deadline of 3 s: a request waits for a live lock 1.5 s at most.
    let provider = "    fetch_deadline_ms: 3000\n    fleet_requests_per_second: 5\n";
    let tier = tier(&proxy.url(), 60, "");
    let nodes: Vec<_> = (0..2).map(|_| start_gateway(provider, &tier)).collect();
    let addrs: Vec<_> = nodes.iter().map(|n| n.addr).collect();
    let keys = |p: &str| BoardKeys::new("sbapi:", BOARD, p);
    let detail = |p: &str| format!("/api/detail?url={}", link(BOARD, p));

    // One 30-byte write, no key needed: a lock that is not the fleet's is
    // taken over at once, by one node or both.
    let p = "hostile-forged-lock";
    let lock = keys(p).lock(Coverage::Full);
    redis.cli(&["set", &lock, "x", "PX", &LOCK_MS.to_string()]);
    for (status, body, took) in at_once(&addrs, &detail(p)) {
        assert_eq!(status, 200, "{body}");
        assert!(took < Duration::from_millis(1_500), "took {took:?}");
    }

    // A lock of another type, with an expiry: replaced, not polled.
    let p = "hostile-hash-lock";
    let lock = keys(p).lock(Coverage::Full);
    redis.cli(&["hset", &lock, "a", "b"]);
    redis.cli(&["pexpire", &lock, &LOCK_MS.to_string()]);
    let before = calls(&redis, "exec");
    for (status, body, took) in at_once(&addrs, &detail(p)) {
        assert_eq!(status, 200, "{body}");
        assert!(took < Duration::from_millis(1_500), "took {took:?}");
    }
    let lookups = calls(&redis, "exec") - before;
    assert!(lookups < 100, "{lookups} lookups for two requests");

    // A live lock of the fleet's (a holder that hangs, or someone with the
    // fleet key): each node waits its share of the deadline, then loads.
    let p = "hostile-sealed-lock";
    let lock = keys(p).lock(Coverage::Full);
    redis.cli(&[
        "set",
        &lock,
        &sealed_lock(&lock),
        "PX",
        &LOCK_MS.to_string(),
    ]);
    for (status, body, took) in at_once(&addrs, &detail(p)) {
        assert_eq!(status, 200, "{body}");
        assert!(took >= Duration::from_millis(1_000), "it waited: {took:?}");
    }

    // A budget counter of another type: reset, and the budget stays on.
    redis.cli(&["del", "sbapi:budget"]);
    redis.cli(&["rpush", "sbapi:budget", "a"]);
    assert_eq!(
        request(addrs[0], "GET", &detail("hostile-list-budget"), &[]).status,
        200
    );
    assert_eq!(redis.cli(&["type", "sbapi:budget"]), "string");
    let pttl: i64 = redis.cli(&["pttl", "sbapi:budget"]).parse().expect("pttl");
    assert!(pttl > 0, "the counter has an expiry: {pttl}");

    // Sealed with the fleet key: an outline under the full document's key,
    // and a document with a second `board` member.
    let good = document_of(addrs[0], BOARD);
    let p = "hostile-outline-as-full";
    let key = doc_key(BOARD, p);
    let outline = Header {
        coverage: Coverage::Outline,
        ..header(now_ms() + 60_000)
    };
    let value = format::encode(&outline, &good, &seal(), &key).expect("encodes");
    redis.set_bytes(&key, &value, Some(60_000));
    // The first node refuses it and loads; the other reads what it stored.
    assert_eq!(every_view_answers(addrs[0], BOARD, p), "miss");
    assert_eq!(every_view_answers(addrs[1], BOARD, p), "shared");
    let p = "hostile-second-board";
    let key = doc_key(BOARD, p);
    let mut two = good[..good.len() - 1].to_vec();
    two.extend_from_slice(br#","board":{"type":"BOARD","title":"Not this board"}}"#);
    redis.set_bytes(&key, &sealed(&two, now_ms() + 60_000, &key), Some(60_000));
    // The first node refuses it and loads; the other reads what it stored.
    assert_eq!(every_view_answers(addrs[0], BOARD, p), "miss");
    assert_eq!(every_view_answers(addrs[1], BOARD, p), "shared");

    // A sealed `403` that claims an hour: not kept past `error_ttl`.
    let p = "hostile-long-403";
    let name = keys(p).failure();
    let hour = now_ms() + 3_600_000;
    redis.set_bytes(
        &name,
        &format::failure(403, hour, &seal(), &name),
        Some(3_600_000),
    );
    assert_eq!(every_view_answers(addrs[0], BOARD, p), "miss");
    assert_eq!(redis.cli(&["exists", &name]), "0", "deleted");
}
