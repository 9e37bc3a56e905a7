//! The Redis outbox against a real `redis-server` (started here on a unix
//! socket in a temporary folder, no TCP port of its own) reached through a
//! loopback proxy bound to port 0 that can hold replies back: what a slow
//! or paused server does to a node's reads.

use super::*;
use crate::store::shared::{Endpoint, Secret};
use crate::test_redis::{proxy, Server};
use std::sync::atomic::Ordering;

fn outbox(url: &str) -> RedisOutbox {
    RedisOutbox::new(&SharedSettings {
        endpoint: Endpoint::Server(url.to_owned()),
        password: None,
        secret: Secret::new(b"outbox-test-key-0123456789abcdef".to_vec()).expect("key"),
        previous_secret: None,
        key_prefix: "t:".into(),
        timeout: SharedSettings::DEFAULT_TIMEOUT,
        lock: Duration::from_secs(15),
        fleet_requests_per_second: None,
    })
    .expect("client")
}

fn delivery(n: u32, job: &str) -> Delivery {
    Delivery {
        id: format!("msg_{n:032x}"),
        job: job.into(),
        body: "{}".into(),
        attempts: 0,
        next_at_ms: 1,
        created_ms: crate::watch::now_ms(),
    }
}

/// Asks until `f` answers (the breaker may skip calls for a while after
/// the faults); bounded at 30 s.
async fn answered<T>(mut f: impl AsyncFnMut() -> Result<T, Unavailable>) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(v) = f().await {
            return v;
        }
        assert!(Instant::now() < deadline, "the store never answered");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_read_that_fails_is_never_taken_for_absence() {
    let server = Server::start(&["--save", "", "--appendonly", "no"]);
    let proxy = proxy(server.socket()).await;
    let outbox = outbox(&proxy.url);
    let known = vec!["j".to_owned()];
    for n in 0..6 {
        assert_eq!(outbox.add(&delivery(n, "j")).await, Ok(true));
    }
    for round in 0..6 {
        // Slow replies (past the tier's 100 ms), a paused server, or a
        // connection lost before the reply, while the node reads every
        // delivery.
        match round % 3 {
            0 => proxy.delay.store(300, Ordering::SeqCst),
            1 => drop(server.cli(&["CLIENT", "PAUSE", "300"])),
            _ => proxy.cut.store(true, Ordering::SeqCst),
        }
        let _ = outbox.scan(200, &known, crate::watch::now_ms()).await;
        for n in 0..6 {
            let d = delivery(n, "j");
            let _ = outbox.get("j", &d.id).await;
            let _ = outbox.listed(&member(&d)).await;
        }
        proxy.delay.store(0, Ordering::SeqCst);
        proxy.cut.store(false, Ordering::SeqCst);
        let stored = server.cli(&["--scan", "--pattern", "t:watch:{*}:d:*"]);
        assert_eq!(stored.lines().count(), 6, "round {round}: {stored}");
        assert_eq!(server.cli(&["ZCARD", "t:watch:due"]), "6", "round {round}");
        // The tier's breaker may have opened: the next round's reads reach
        // the server only once it answers again.
        answered(async || outbox.count().await).await;
    }
    let scan = answered(async || outbox.scan(200, &known, crate::watch::now_ms()).await).await;
    assert_eq!(scan.due.len(), 6);
    assert_eq!(scan.by_job.get("j"), Some(&6));

    // A value that is present and not ours is deleted: another type, or
    // one whose seal does not open.
    let key = outbox.delivery_key("j", &delivery(0, "j").id);
    server.cli(&["DEL", &key]);
    server.cli(&["RPUSH", &key, "x"]);
    assert_eq!(
        answered(async || outbox.get("j", &delivery(0, "j").id).await).await,
        None
    );
    assert_eq!(server.cli(&["EXISTS", &key]), "0");
    let key = outbox.delivery_key("j", &delivery(1, "j").id);
    server.cli(&["SET", &key, "forged"]);
    assert_eq!(
        answered(async || outbox.get("j", &delivery(1, "j").id).await).await,
        None
    );
    assert_eq!(server.cli(&["EXISTS", &key]), "0");
}

#[tokio::test]
async fn junk_in_the_index_neither_fills_it_nor_hides_a_due_delivery() {
    let server = Server::start(&["--save", "", "--appendonly", "no"]);
    let proxy = proxy(server.socket()).await;
    let outbox = outbox(&proxy.url);
    // 10,000 members due before anything real: half name nothing, half
    // name deliveries of the job that are not stored; and the earlier
    // versions' pending set full of the same.
    let fill = "for i = 1, 5000 do \
        redis.call('ZADD', KEYS[1], '-inf', 'junk' .. i) \
        redis.call('ZADD', KEYS[1], '-inf', string.format('j/msg_%032x', 100000 + i)) \
        redis.call('SADD', KEYS[2], 'junk' .. i, string.format('j/msg_%032x', 200000 + i)) end";
    server.cli(&["EVAL", fill, "2", "t:watch:due", "t:watch:pending"]);
    assert_eq!(server.cli(&["ZCARD", "t:watch:due"]), "10000");
    let real = delivery(7, "j");
    assert_eq!(outbox.add(&real).await, Ok(true), "junk does not fill it");
    let mut found = false;
    for _ in 0..20 {
        let scan = outbox
            .scan(200, &["j".to_owned()], crate::watch::now_ms())
            .await
            .expect("scan");
        if scan.due.iter().any(|d| d.id == real.id) {
            found = true;
            break;
        }
        assert!(scan.cleaned, "a scan that finds nothing cleans");
    }
    assert!(found, "the real delivery is found within a few scans");
    // A delivery of a job this node does not know is neither due here nor
    // removed.
    let other = delivery(8, "k");
    assert_eq!(outbox.add(&other).await, Ok(true));
    let scan = outbox
        .scan(200, &["j".to_owned()], crate::watch::now_ms())
        .await
        .expect("scan");
    assert!(scan.due.iter().all(|d| d.job == "j"));
    assert!(!scan.by_job.contains_key("k"));
    assert_eq!(outbox.get("k", &other.id).await, Ok(Some(other)));
}

#[tokio::test]
async fn a_removed_delivery_queued_or_copied_back_is_not_made_again() {
    let server = Server::start(&["--save", "", "--appendonly", "no"]);
    let proxy = proxy(server.socket()).await;
    let outbox = outbox(&proxy.url);
    let d = delivery(3, "j");
    assert_eq!(outbox.add(&d).await, Ok(true));
    let key = outbox.delivery_key("j", &d.id);
    let sealed: Bytes = outbox.tier.client().get(&key).await.expect("the value");
    outbox.remove(&d).await.expect("removed");
    assert_eq!(outbox.add(&d).await, Ok(false), "queued again: refused");
    let _: () = outbox
        .tier
        .client()
        .set(&key, sealed, None, None, false)
        .await
        .expect("copied back");
    assert_eq!(outbox.get("j", &d.id).await, Ok(None));
    assert_eq!(server.cli(&["EXISTS", &key]), "0", "the copy is deleted");
}

#[tokio::test]
async fn a_lease_is_renewed_by_its_holder_only_and_an_overlong_one_is_taken_over() {
    let server = Server::start(&["--save", "", "--appendonly", "no"]);
    let proxy = proxy(server.socket()).await;
    let outbox = outbox(&proxy.url);
    let life = Duration::from_secs(30);
    let a = outbox.lease("run:j", life).await.expect("free");
    assert!(outbox.lease("run:j", life).await.is_none());
    assert_eq!(outbox.renew(&a, life).await, Ok(true));
    let forged = Lease {
        name: a.name.clone(),
        token: "other".into(),
    };
    assert_eq!(outbox.renew(&forged, life).await, Ok(false));
    // Past twice its life: pinned, not held; taken over.
    server.cli(&["PEXPIRE", &a.name, "61000"]);
    let b = outbox.lease("run:j", life).await.expect("taken over");
    assert_eq!(outbox.renew(&a, life).await, Ok(false), "no longer a's");
    outbox.release(&a).await;
    assert!(outbox.lease("run:j", life).await.is_none(), "still b's");
    outbox.release(&b).await;
    assert!(outbox.lease("run:j", life).await.is_some());
}

#[tokio::test]
async fn a_server_that_evicts_or_keeps_nothing_is_named_unfit() {
    let unfit = Server::start(&[
        "--save",
        "",
        "--appendonly",
        "no",
        "--maxmemory-policy",
        "allkeys-lru",
    ]);
    let proxy_a = proxy(unfit.socket()).await;
    let found = outbox(&proxy_a.url).fitness().await;
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].contains("allkeys-lru"), "{found:?}");
    assert!(found[1].contains("nothing on disk"), "{found:?}");

    let fit = Server::start(&["--save", "", "--appendonly", "yes"]);
    let proxy_b = proxy(fit.socket()).await;
    let outbox_b = outbox(&proxy_b.url);
    assert_eq!(outbox_b.fitness().await, Vec::<String>::new());
    assert!(outbox_b.warnings().is_empty());

    let hidden = Server::start(&["--rename-command", "CONFIG", ""]);
    let proxy_c = proxy(hidden.socket()).await;
    let found = outbox(&proxy_c.url).fitness().await;
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found.iter().all(|f| f.contains("could not check")),
        "{found:?}"
    );
}
