//! Nothing promised is lost, for a fleet: the real binary as
//! nodes on one real `redis-server` (reached through a loopback proxy on
//! port 0), a sample upstream and webhook receivers of each test's own, as
//! in tests/watch.rs (whose node and receiver these tests share).
//!
//! - a node whose configuration lacks a job leaves that job's deliveries
//!   to the nodes that know it (a rolling deploy);
//! - a receiver that hangs does not hold back another job's delivery;
//! - 10,000 junk members in the pending index, a run lease pinned for
//!   longer than any run, and a Redis that keeps nothing on disk neither
//!   stop a delivery nor go unsaid.

use crate::common::redis::{Proxy, Redis};
use crate::watch::node::Node;
use crate::watch::receiver::{sha256, Receiver, Reply};
use crate::watch::{edit, first_run, run_until_delivered, started, verify, wait_until};
use std::time::{Duration, Instant};

fn fleet(proxy: &Proxy) -> String {
    format!(
        "  cache:\n    ttl_seconds: 1\n    shared:\n      url: {}\n      secret_env: SBAPI_TEST_FLEET_KEY\n  changes:\n    store: redis\n",
        proxy.url()
    )
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// The stored deliveries' keys.
fn stored(redis: &Redis) -> Vec<String> {
    redis
        .keys()
        .into_iter()
        .filter(|k| k.contains(":d:msg_"))
        .collect()
}

#[test]
fn a_node_without_the_job_leaves_its_deliveries_to_the_nodes_that_know_it() {
    let redis = Redis::start();
    let proxy = Proxy::start(&redis.socket());
    // The first attempt is answered 429, Retry-After 15 s: the delivery
    // stays pending, due again then.
    let (dir, upstream, receiver) = started("rolling", &[Reply::TooMany(15)]);
    let idle = Receiver::start(&[]);
    // A node of the new configuration, without the job `trip`.
    let newer = Node::start_jobs(
        &dir,
        &upstream,
        &fleet(&proxy),
        "1h",
        &[("other", &idle, 8)],
    );
    let older = Node::start(&dir, &upstream, &receiver, &fleet(&proxy), 8);
    first_run(&older);
    edit(&upstream);
    run_until_delivered(&[&older], &receiver, 1);
    let id = receiver.seen()[0].header("webhook-id").to_owned();
    // Killed once it has stored when the next attempt is due.
    wait_until("the failed attempt is logged", || {
        older.logged("attempt 1 failed")
    });
    let member = format!("trip/{id}");
    // (Before the post the attempt stored a due time 30 s on, the end of
    // its lease; after the 429, 15 s on.)
    wait_until("the retry's due time is stored", || {
        let score = redis.cli(&["ZSCORE", "sbapi:watch:due", &member]);
        score
            .parse::<f64>()
            .is_ok_and(|s| (s as u64) < now_ms() + 22_000)
    });
    drop(older);
    let due = redis
        .cli(&["ZSCORE", "sbapi:watch:due", &member])
        .parse::<f64>()
        .expect("a score") as u64;
    // The newer node scans at least every 5 s: give it two scans after the
    // delivery is due (nothing to wait on: it must do nothing).
    while now_ms() < due + 12_000 {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(stored(&redis).len(), 1, "the delivery is kept");
    assert!(
        !newer.logged("dropped") && !newer.logged("no longer configured"),
        "the newer node dropped it"
    );
    assert_eq!(receiver.count(), 1, "and did not make it");

    // A node that knows the job makes it.
    let restarted = Node::start(&dir, &upstream, &receiver, &fleet(&proxy), 8);
    wait_until("the delivery is made", || receiver.count() >= 2);
    let seen = receiver.seen();
    assert_eq!(seen[1].header("webhook-id"), id, "the same delivery");
    for r in &seen {
        verify(r);
    }
    wait_until("nothing stored", || stored(&redis).is_empty());
    drop(restarted);
}

#[test]
fn a_receiver_that_hangs_does_not_delay_another_jobs_delivery() {
    let redis = Redis::start();
    let proxy = Proxy::start(&redis.socket());
    let (dir, upstream, slow) = started("hang", &[Reply::Hang]);
    let fast = Receiver::start(&[]);
    let node = Node::start_jobs(
        &dir,
        &upstream,
        &fleet(&proxy),
        "1h",
        &[("slow", &slow, 8), ("fast", &fast, 8)],
    );
    for id in ["slow", "fast"] {
        wait_until("each job's first run", || {
            node.job_named(id)["lastVersion"].is_string()
        });
    }
    edit(&upstream);
    wait_until("the slow receiver holds an attempt", || {
        if slow.count() >= 1 {
            return true;
        }
        node.run_job("slow");
        std::thread::sleep(Duration::from_millis(400));
        slow.count() >= 1
    });
    let hung_at = slow.seen()[0].at;
    wait_until("the fast job's delivery arrives", || {
        if fast.count() >= 1 {
            return true;
        }
        node.run_job("fast");
        std::thread::sleep(Duration::from_millis(400));
        fast.count() >= 1
    });
    let waited = fast.seen()[0].at - hung_at;
    // The hanging attempt lasts 15 s (its deadline); the other job's
    // delivery does not wait for it.
    assert!(
        waited < Duration::from_secs(10),
        "the fast job's delivery came {waited:?} after the hang began"
    );
    verify(&fast.seen()[0]);
}

#[test]
fn junk_a_pinned_run_lease_and_an_unfit_redis_neither_stop_a_delivery_nor_go_unsaid() {
    let redis = Redis::start();
    let proxy = Proxy::start(&redis.socket());
    let (dir, upstream, receiver) = started("junk", &[]);
    // Anyone with write access and no fleet key: 10,000 members that name
    // nothing stored, in the pending index and in the pending set of
    // earlier versions, and the job's run lease pinned for 200 s.
    let fill = "for i = 1, 5000 do \
        redis.call('ZADD', KEYS[1], '-inf', 'junk' .. i) \
        redis.call('ZADD', KEYS[1], '-inf', string.format('trip/msg_%032x', i)) \
        redis.call('SADD', KEYS[2], 'junk' .. i, string.format('trip/msg_%032x', 100000 + i)) end";
    redis.cli(&["EVAL", fill, "2", "sbapi:watch:due", "sbapi:watch:pending"]);
    let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let job = hex(&sha256(b"trip")[..16]);
    let pinned = format!("sbapi:watch:{{{job}}}:lease:run:{job}");
    redis.cli(&["SET", &pinned, "forged", "PX", "200000"]);

    let started_at = Instant::now();
    let node = Node::start(&dir, &upstream, &receiver, &fleet(&proxy), 8);
    first_run(&node);
    assert!(
        started_at.elapsed() < Duration::from_secs(100),
        "the pinned lease held the job"
    );
    edit(&upstream);
    run_until_delivered(&[&node], &receiver, 1);
    verify(&receiver.seen()[0]);
    wait_until("nothing pending", || node.job()["pendingDeliveries"] == 0);

    // The test server keeps nothing on disk: said at start, and on /watch.
    let warnings = node.watch()["storeWarnings"].clone();
    assert!(
        warnings.as_array().is_some_and(|w| w
            .iter()
            .any(|l| l.as_str().unwrap_or("").contains("nothing on disk"))),
        "{warnings}"
    );
    assert!(node.logged("keeps nothing on disk"));
    node.assert_log_is_clean();
}

#[test]
fn an_attempt_cut_short_by_a_crash_keeps_its_number() {
    let redis = Redis::start();
    let proxy = Proxy::start(&redis.socket());
    // The first attempt is never answered: the node dies during it.
    let (dir, upstream, receiver) = started("crash", &[Reply::Hang]);
    let node = Node::start(&dir, &upstream, &receiver, &fleet(&proxy), 8);
    first_run(&node);
    edit(&upstream);
    run_until_delivered(&[&node], &receiver, 1);
    drop(node);
    let id = receiver.seen()[0].header("webhook-id").to_owned();

    let restarted = Node::start(&dir, &upstream, &receiver, &fleet(&proxy), 8);
    wait_until("the delivery is made again", || receiver.count() >= 2);
    assert_eq!(receiver.seen()[1].header("webhook-id"), id);
    wait_until("the attempt is logged", || restarted.logged(&id));
    assert!(
        restarted.logged(&format!("delivery {id} made (HTTP 200, attempt 2)")),
        "the second attempt is numbered 2"
    );
}
