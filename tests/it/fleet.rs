//! The fleet tier against real Redis servers (started here, see
//! `common/redis.rs`) and real gateways in front of the sample upstream:
//! several nodes, one load; a dead lock holder; Redis killed and back; a
//! slow tier; corrupted values; a shared `403`; no secret in any key; a
//! `read_board` over MCP on two nodes; a
//! cluster; the fleet's upstream budget.
//!
//! The tests of this file run one at a time (they count every request the
//! shared sample upstream sees, and each starts servers of its own).

use crate::common::redis::{self, cache_level, wait_for, Cluster, Proxy, Redis};
use crate::common::*;
use shared_board_api::demo::SampleUpstream;
use shared_board_api::internals::document::Coverage;
use shared_board_api::internals::store::shared::keys::BoardKeys;
use shared_board_api::internals::store::shared::seal::{Seal, Secret};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// `board_api` lines for a tier at `url`, plus `extra` lines under `shared`.
fn tier(url: &str, extra: &str) -> String {
    format!(
        "  cache:\n    error_ttl_seconds: 30\n    shared:\n      url: {url}\n      secret_env: {}\n{extra}",
        redis::fleet_key_var()
    )
}

fn detail(addr: std::net::SocketAddr, p: &str) -> Response {
    request(
        addr,
        "GET",
        &format!("/api/detail?url={}", link(BOARD, p)),
        &[],
    )
}

/// The fleet's own sample upstream: its request counts are this file's
/// alone, whatever the binary's other tests ask theirs.
fn fleet_sample() -> &'static SampleUpstream {
    static SAMPLE: std::sync::OnceLock<SampleUpstream> = std::sync::OnceLock::new();
    SAMPLE.get_or_init(|| {
        SampleUpstream::start_in_thread(([127, 0, 0, 1], 0).into()).expect("sample upstream starts")
    })
}

/// A node of the fleet, in front of [`fleet_sample`].
fn node(provider_extra: &str, api_extra: &str) -> Gateway {
    start_gateway_at(&fleet_sample().origin(), provider_extra, api_extra)
}

/// Requests the fleet's sample upstream has seen so far.
fn upstream_requests() -> usize {
    fleet_sample().requests().len()
}

fn token_requests(p: &str) -> usize {
    let prefix = format!("/api/permissions/token/{p}?");
    fleet_sample()
        .requests()
        .iter()
        .filter(|t| t.starts_with(&prefix))
        .count()
}

fn fetched_at(r: &Response) -> String {
    r.json()["data"]["fetchedAt"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn metric(name: &str) -> f64 {
    let text = prometheus::TextEncoder::new()
        .encode_to_string(&prometheus::gather())
        .unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|v| v.trim().parse().ok()))
        .unwrap_or(0.0)
}

#[test]
fn a_fleet_loads_a_board_once_and_a_new_node_starts_warm() {
    let _one = serial();
    let redis = Redis::start();
    let proxy = Proxy::start(&redis.socket());
    // A call's timeout well above what a busy machine takes: this test is
    // about the fleet's lock, and a tier call that times out is (rightly)
    // "no tier", which loads again.
    let tier = tier(&proxy.url(), "      timeout_ms: 2000\n");

    // What one node costs the provider for this board: the baseline.
    let single = node("", "");
    let before = upstream_requests();
    for _ in 0..20 {
        assert_eq!(detail(single.addr, "fleet-one").status, 200);
    }
    let one_node = upstream_requests() - before;
    assert!(
        one_node >= 2,
        "a load is a token and a boards request at least"
    );

    // Four nodes, 200 concurrent requests spread round-robin.
    let nodes: Vec<Gateway> = (0..4).map(|_| node("", &tier)).collect();
    let addrs: Vec<_> = nodes.iter().map(|n| n.addr).collect();
    let before = upstream_requests();
    let answers: Vec<Response> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..200)
            .map(|i| {
                let addr = addrs[i % addrs.len()];
                s.spawn(move || detail(addr, "fleet-burst"))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("request"))
            .collect()
    });
    assert_eq!(
        upstream_requests() - before,
        one_node,
        "the burst costs one node's load"
    );
    assert_eq!(token_requests("fleet-burst"), 1);
    let etag = answers[0].header("etag").unwrap_or_default().to_owned();
    for r in &answers {
        assert_eq!(r.status, 200);
        assert_eq!(r.header("etag"), Some(etag.as_str()), "one ETag fleet-wide");
        assert_eq!(
            fetched_at(r),
            fetched_at(&answers[0]),
            "one fetchedAt fleet-wide"
        );
    }
    let misses = answers.iter().filter(|r| cache_level(r) == "miss").count();
    assert_eq!(misses, 1, "one node loaded, the rest shared, joined or hit");
    assert!(answers.iter().any(|r| cache_level(r) == "shared"));

    // A node that starts now (a deploy, a crash) adds no upstream request.
    let restarted = node("", &tier);
    let before = upstream_requests();
    let r = detail(restarted.addr, "fleet-burst");
    assert_eq!((r.status, cache_level(&r)), (200, "shared".to_owned()));
    assert_eq!(r.header("etag"), Some(etag.as_str()));
    assert_eq!(fetched_at(&r), fetched_at(&answers[0]));
    assert_eq!(upstream_requests(), before);
    // An ETag from one node revalidates on another.
    let r = request(
        addrs[3],
        "GET",
        &format!("/api/detail?url={}", link(BOARD, "fleet-burst")),
        &[("If-None-Match", &etag)],
    );
    assert_eq!(r.status, 304);

    // No key names a permission id or a board id.
    let keys = redis.keys();
    assert!(!keys.is_empty());
    for key in &keys {
        assert!(key.starts_with("sbapi:{"), "{key}");
        for secret in ["fleet-burst", "fleet-one", BOARD] {
            assert!(!key.contains(secret), "{key} names {secret}");
        }
    }
    let dump = redis.cli(&[
        "--no-raw",
        "mget",
        &BoardKeys::new("sbapi:", BOARD, "fleet-burst").doc(Coverage::Full),
    ]);
    assert!(
        !dump.contains("fleet-burst"),
        "the stored value holds no permission id"
    );
}

#[test]
fn a_read_board_on_one_node_and_on_another_cost_one_load() {
    use crate::common::mcp::{call, result};
    let _one = serial();
    let redis = Redis::start();
    let proxy = Proxy::start(&redis.socket());
    let tier = tier(&proxy.url(), "      timeout_ms: 2000\n");
    let nodes: Vec<Gateway> = (0..2).map(|_| node("", &tier)).collect();
    let share = format!("https://app.milanote.com/{BOARD}/slug?p=fleet-mcp");
    let args = serde_json::json!({"url": share});
    let before = upstream_requests();
    let first = call(nodes[0].addr, "read_board", args.clone());
    let loaded = upstream_requests() - before;
    assert!(loaded >= 2, "the first node loads: a token and the boards");
    let second = call(nodes[1].addr, "read_board", args);
    assert_eq!(
        upstream_requests() - before,
        loaded,
        "the second node reads the fleet tier"
    );
    assert_eq!(token_requests("fleet-mcp"), 1);
    assert_eq!(cache_level(&first), "miss");
    assert_eq!(cache_level(&second), "shared");
    let (a, b) = (result(&first), result(&second));
    assert_eq!(a["isError"], false);
    assert_eq!(
        a["content"], b["content"],
        "the same Markdown from both nodes"
    );
}

#[test]
fn when_the_lock_holder_dies_another_node_loads_after_it_expires() {
    let _one = serial();
    let redis = Redis::start();
    let proxy = Proxy::start(&redis.socket());
    let node = node("", &tier(&proxy.url(), ""));
    // A node took the lock (a token sealed with the fleet key, as hex) and
    // died before storing anything.
    let lock = BoardKeys::new("sbapi:", BOARD, "fleet-dead").lock(Coverage::Full);
    let seal = Seal::new(
        &Secret::new(redis::FLEET_KEY.to_vec()).expect("32 bytes"),
        None,
    );
    let value: String = seal
        .seal(&lock, vec![9; 16])
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(redis.cli(&["set", &lock, &value, "PX", "1500"]), "OK");
    let started = Instant::now();
    let r = detail(node.addr, "fleet-dead");
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert!(
        started.elapsed() >= Duration::from_millis(1000),
        "it waited for the lock to expire: {:?}",
        started.elapsed()
    );
    assert_eq!(token_requests("fleet-dead"), 1);
    // And it stored the document for the rest of the fleet.
    let doc = BoardKeys::new("sbapi:", BOARD, "fleet-dead").doc(Coverage::Full);
    let stored = wait_for(|| redis.cli(&["getrange", &doc, "0", "3"]) == "SBAD");
    assert!(stored, "the document was stored");
}

#[test]
fn redis_killed_then_back_every_request_answers_and_the_tier_is_used_again() {
    let _one = serial();
    let mut redis = Redis::start();
    let proxy = Proxy::start(&redis.socket());
    let node = node("", &tier(&proxy.url(), ""));
    assert_eq!(detail(node.addr, "fleet-kill-0").status, 200);
    redis.kill();
    for i in 1..=12 {
        let r = detail(node.addr, &format!("fleet-kill-{i}"));
        assert_eq!(r.status, 200, "request {i} with the tier down");
        assert_eq!(cache_level(&r), "miss");
    }
    redis.restart();
    assert!(redis.keys().is_empty());
    // Once the breaker's cooldown has passed, a probe finds the tier again
    // and new documents are stored in it.
    let mut i = 100;
    let back = wait_for(|| {
        i += 1;
        detail(node.addr, &format!("fleet-kill-{i}")).status == 200 && !redis.keys().is_empty()
    });
    assert!(back, "the tier was used again after Redis came back");
}

#[test]
fn a_slow_tier_bounds_every_request_and_opens_the_breaker() {
    let _one = serial();
    let redis = Redis::start();
    let proxy = Proxy::start(&redis.socket());
    // Its own metrics name: the series below are this node's alone.
    let api = format!(
        "  name: fleet-slow\n{}",
        tier(&proxy.url(), "      timeout_ms: 50\n")
    );
    let node = node("", &api);
    assert_eq!(detail(node.addr, "fleet-slow-0").status, 200);
    // A delay far past what a request may take on a busy machine, so the
    // bound below tells a call that waited for the tier from one that did not.
    proxy.set_delay(Duration::from_secs(10));
    let skipped = r#"board_api_fleet_total{api="fleet-slow",result="skipped"}"#;
    let skipped_before = metric(skipped);
    for i in 1..=12 {
        let started = Instant::now();
        let r = detail(node.addr, &format!("fleet-slow-{i}"));
        assert_eq!(r.status, 200);
        // Each call waits at most the 50 ms timeout, never the 10 s delay.
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "request {i} took {:?}",
            started.elapsed()
        );
    }
    assert!(metric(skipped) > skipped_before);
    assert_eq!(
        metric(r#"board_api_fleet_breaker_open{api="fleet-slow"}"#),
        1.0
    );
}

#[test]
fn corrupted_or_foreign_values_are_never_served() {
    let _one = serial();
    let redis = Redis::start();
    let proxy = Proxy::start(&redis.socket());
    let api = format!("  name: fleet-corrupt\n{}", tier(&proxy.url(), ""));
    let node = node("", &api);
    let cases = [
        ("fleet-garbage", "not a document at all"),
        // Another format version (byte 4), then enough bytes for a header.
        (
            "fleet-version",
            "SBAD\u{2}\u{1}\u{1}\u{1}0123456789abcdefghijklmnopq",
        ),
        ("fleet-truncated", "SBAD\u{1}\u{1}\u{1}"),
    ];
    for (p, value) in cases {
        let doc = BoardKeys::new("sbapi:", BOARD, p).doc(Coverage::Full);
        assert_eq!(redis.cli(&["set", &doc, value, "PX", "60000"]), "OK");
        let r = detail(node.addr, p);
        assert_eq!(r.status, 200, "{p}");
        assert_eq!(
            cache_level(&r),
            "miss",
            "{p}: loaded, not served from the bad value"
        );
        assert_eq!(r.json()["data"]["board"]["id"], BOARD);
        let replaced = wait_for(|| {
            redis.cli(&["getrange", &doc, "0", "3"]) == "SBAD"
                && redis.cli(&["strlen", &doc]).parse::<usize>().unwrap_or(0) > 40
        });
        assert!(replaced, "{p}: the bad value was replaced by a good one");
    }
    // A well-formed value whose body was tampered with: refused on decode.
    let good = BoardKeys::new("sbapi:", BOARD, "fleet-garbage").doc(Coverage::Full);
    let tampered = BoardKeys::new("sbapi:", BOARD, "fleet-tampered").doc(Coverage::Full);
    assert_eq!(redis.cli(&["copy", &good, &tampered]), "1");
    let len: usize = redis.cli(&["strlen", &tampered]).parse().expect("length");
    redis.cli(&["setrange", &tampered, &(len - 2).to_string(), "zz"]);
    let r = detail(node.addr, "fleet-tampered");
    assert_eq!((r.status, cache_level(&r)), (200, "miss".to_owned()));
    assert_eq!(
        metric(r#"board_api_fleet_total{api="fleet-corrupt",result="rejected"}"#),
        4.0
    );
}

#[test]
fn the_documented_acl_user_is_enough_for_two_nodes() {
    let _one = serial();
    let redis = Redis::start();
    // The ACL line of docs/fleet.md, as an operator pastes it.
    redis.documented_acl_user("acl-test");
    let proxy = Proxy::start(&redis.socket());
    let url = proxy
        .url()
        .replacen("redis://", "redis://sbapi:acl-test@", 1);
    let tier = tier(&url, "      timeout_ms: 2000\n");
    // The budget script runs on every load when the fleet budget is on.
    let budget = "    fleet_requests_per_second: 50\n";
    let a = node(budget, &tier);
    let b = node(budget, &tier);

    // A load (lock, budget, store, unlock), then a shared hit on the other.
    let r = detail(a.addr, "fleet-acl");
    assert_eq!((r.status, cache_level(&r)), (200, "miss".to_owned()));
    let doc = BoardKeys::new("sbapi:", BOARD, "fleet-acl").doc(Coverage::Full);
    let lock = BoardKeys::new("sbapi:", BOARD, "fleet-acl").lock(Coverage::Full);
    assert!(wait_for(
        || redis.cli(&["exists", &doc]) == "1" && redis.cli(&["exists", &lock]) == "0"
    ));
    let r = detail(b.addr, "fleet-acl");
    assert_eq!((r.status, cache_level(&r)), (200, "shared".to_owned()));
    // A shared failure, written by one node and read by the other.
    detail(a.addr, "fault-404").assert_error(404, "BOARD_NOT_FOUND", None);
    let failure = BoardKeys::new("sbapi:", BOARD, "fault-404").failure();
    assert!(wait_for(
        || redis.cli(&["getrange", &failure, "0", "3"]) == "SBAF"
    ));
    detail(b.addr, "fault-404").assert_error(404, "BOARD_NOT_FOUND", None);
    assert_eq!(token_requests("fault-404"), 1, "the failure was shared");

    assert_eq!(redis.cli(&["acl", "log"]), "", "no command was denied");
    let clients = redis.cli(&["client", "list"]);
    assert!(
        clients.lines().any(|c| c.contains(" user=sbapi ")),
        "the nodes connect as the ACL user: {clients}"
    );
}

#[test]
fn a_revoked_link_is_refused_once_for_the_whole_fleet() {
    let _one = serial();
    let redis = Redis::start();
    let proxy = Proxy::start(&redis.socket());
    let tier = tier(&proxy.url(), "");
    let a = node("", &tier);
    let b = node("", &tier);
    detail(a.addr, "fault-403").assert_error(403, "BOARD_ACCESS_DENIED", None);
    let failure = BoardKeys::new("sbapi:", BOARD, "fault-403").failure();
    assert!(wait_for(
        || redis.cli(&["getrange", &failure, "0", "3"]) == "SBAF"
    ));
    detail(b.addr, "fault-403").assert_error(403, "BOARD_ACCESS_DENIED", None);
    assert_eq!(
        token_requests("fault-403"),
        1,
        "one upstream check for the fleet"
    );
    let ttl: i64 = redis.cli(&["pttl", &failure]).parse().expect("pttl");
    assert!(ttl > 0 && ttl <= 30_000, "kept for the error TTL: {ttl}");
    // A 5xx is this node's own and is not shared.
    detail(a.addr, "fault-500").assert_error(502, "UPSTREAM_ERROR", None);
    let other = BoardKeys::new("sbapi:", BOARD, "fault-500").failure();
    assert_eq!(redis.cli(&["exists", &other]), "0");
}

#[test]
fn a_cluster_spreads_documents_over_its_slots_and_reads_them_back() {
    let _one = serial();
    let cluster = Cluster::start();
    let nodes: Vec<String> = cluster
        .ports
        .iter()
        .map(|p| format!("redis://127.0.0.1:{p}"))
        .collect();
    let tier = format!(
        "  cache:\n    shared:\n      cluster: [{}]\n      secret_env: {}\n",
        nodes.join(", "),
        redis::fleet_key_var()
    );
    let a = node("", &tier);
    let ps: Vec<String> = (0..12).map(|i| format!("fleet-cluster-{i}")).collect();
    for p in &ps {
        assert_eq!(detail(a.addr, p).status, 200);
    }
    let holding = |port: u16| {
        cluster
            .keys_on(port)
            .iter()
            .filter(|k| k.ends_with(":doc:full"))
            .count()
    };
    assert!(wait_for(|| cluster
        .ports
        .iter()
        .map(|p| holding(*p))
        .sum::<usize>()
        == ps.len()));
    let used = cluster.ports.iter().filter(|p| holding(**p) > 0).count();
    assert!(used >= 2, "12 boards on {used} of 3 masters");
    let b = node("", &tier);
    let before = upstream_requests();
    for p in &ps {
        let r = detail(b.addr, p);
        assert_eq!(
            (r.status, cache_level(&r)),
            (200, "shared".to_owned()),
            "{p}"
        );
    }
    assert_eq!(upstream_requests(), before);
}

#[test]
fn two_nodes_keep_together_under_the_fleet_budget() {
    let _one = serial();
    let redis = Redis::start();
    let proxy = Proxy::start(&redis.socket());
    let rate = 4.0;
    let tier = tier(&proxy.url(), "");
    let budget = "    fleet_requests_per_second: 4\n";
    let a = node(budget, &tier);
    let b = node(budget, &tier);
    let before = upstream_requests();
    let started = Instant::now();
    let statuses: Vec<u16> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..12)
            .map(|i| {
                let addr = if i % 2 == 0 { a.addr } else { b.addr };
                s.spawn(move || detail(addr, &format!("fleet-budget-{i}")).status)
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("request"))
            .collect()
    });
    let elapsed = started.elapsed().as_secs_f64();
    let sent = (upstream_requests() - before) as f64;
    // GCRA with a burst of one second's worth: at most rate * (t + 1).
    assert!(
        sent <= rate * (elapsed + 1.0) + 1.0,
        "{sent} requests in {elapsed:.1} s over a budget of {rate}/s"
    );
    assert!(sent >= 2.0 * 3.0, "loads went through: {sent}");
    for status in statuses {
        assert!(status == 200 || status == 503, "{status}");
    }
}

#[test]
fn a_transient_hole_is_shared_briefly_with_its_completeness() {
    let _one = serial();
    let redis = Redis::start();
    let proxy = Proxy::start(&redis.socket());
    let tier = tier(&proxy.url(), "");
    let deadline = "    fetch_deadline_ms: 1000\n";
    let a = node(deadline, &tier);
    let b = node(deadline, &tier);
    let target = format!("/api/detail?url={}", link("s-hole-slow", "fleet-hole"));
    let r = request(a.addr, "GET", &target, &[]);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("board-completeness"), Some("partial; unloaded=1"));
    // Kept for the error TTL (30 s here), not the 60 s TTL.
    let doc = BoardKeys::new("sbapi:", "s-hole-slow", "fleet-hole").doc(Coverage::Full);
    assert!(wait_for(|| redis.cli(&["exists", &doc]) == "1"));
    let ttl: i64 = redis.cli(&["pttl", &doc]).parse().expect("pttl");
    assert!(
        ttl > 0 && ttl <= 30_000,
        "a transient document lives {ttl} ms"
    );
    // Another node serves it from the tier with the same completeness.
    let r = request(b.addr, "GET", &target, &[]);
    assert_eq!((r.status, cache_level(&r)), (200, "shared".to_owned()));
    assert_eq!(r.header("board-completeness"), Some("partial; unloaded=1"));
    let unloaded = &r.json()["data"]["board"]["children"];
    assert!(unloaded
        .to_string()
        .contains("\"unloadedReason\":\"DEADLINE\""));
}
