//! Tests of the Redis store of kept versions, against a real `redis-server`.

use super::*;
use crate::store::shared::{Endpoint, Secret};
use crate::test_redis::{proxy, Server};

fn store(url: &str, max_bytes: usize) -> RedisVersions {
    let settings = SharedSettings {
        endpoint: Endpoint::Server(url.to_owned()),
        password: None,
        secret: Secret::new(b"versions-test-key-0123456789abcd".to_vec()).expect("key"),
        previous_secret: None,
        key_prefix: "t:".into(),
        timeout: Duration::from_secs(2),
        lock: Duration::from_secs(15),
        fleet_requests_per_second: None,
    };
    let bounds = Bounds {
        keep_versions: 20,
        keep: Duration::from_secs(3600),
        max_bytes,
        max_document_bytes: 1 << 20,
    };
    RedisVersions::new(&settings, bounds).expect("client")
}

fn version(n: u32) -> String {
    format!("{n:032x}")
}

async fn put(store: &RedisVersions, board: &str, n: u32, bytes: usize, now: u64) {
    let sealed = store.seal(board, &version(n), vec![7; bytes]);
    store.put(board, &version(n), sealed, now).await;
}

async fn kept(store: &RedisVersions, board: &str, n: u32) -> bool {
    matches!(store.get(board, &version(n)).await, Kept::Value(_))
}

/// The bytes of every kept version's value in the server.
fn held(server: &Server) -> usize {
    server
        .cli(&["--scan", "--pattern", "t:{*}:ver:*"])
        .lines()
        .map(|key| {
            server
                .cli(&["strlen", key])
                .parse::<usize>()
                .expect("a length")
        })
        .sum()
}

#[tokio::test]
async fn the_fleets_byte_bound_takes_from_the_largest_holder_first() {
    let server = Server::start(&["--save", "", "--appendonly", "no"]);
    let proxy = proxy(server.socket()).await;
    // Two nodes of one fleet, each with its own client.
    let (a, b) = (store(&proxy.url, 10_000), store(&proxy.url, 10_000));
    put(&a, "victim", 1, 2_000, 1).await;
    // Another link's boards, written after the victim's, through the
    // other node: together past the bound many times over.
    for n in 0..12 {
        put(
            &b,
            &format!("attacker{}", n % 3),
            100 + n,
            1_500,
            2 + u64::from(n),
        )
        .await;
    }
    assert!(
        kept(&a, "victim", 1).await,
        "the smaller, older holder keeps its version"
    );
    let total = held(&server);
    assert!(total <= 10_000, "{total} bytes held past the bound");
    let accounted: usize = server
        .cli(&["get", "t:{versions}:bytes"])
        .parse()
        .expect("a total");
    assert_eq!(accounted, total, "the accounting is what is held");
    assert!(
        !kept(&b, "attacker0", 100).await,
        "the largest's oldest went first"
    );
    assert!(kept(&b, "attacker2", 111).await, "the newest stays");
}

#[tokio::test]
async fn listed_newest_first_across_nodes_and_from_an_older_builds_index() {
    let server = Server::start(&["--save", "", "--appendonly", "no"]);
    let proxy = proxy(server.socket()).await;
    let (a, b) = (store(&proxy.url, 1 << 20), store(&proxy.url, 1 << 20));
    put(&a, "board", 1, 100, 1_000).await;
    put(&b, "board", 2, 100, 2_000).await;
    // Seen again, then written again (its value had gone): when it was
    // first kept stays.
    assert!(a.touch("board", &version(1), 3_000).await);
    put(&a, "board", 1, 100, 3_001).await;
    let order = |l: Option<Vec<Listed>>| {
        l.expect("the tier answers")
            .into_iter()
            .map(|l| (l.version, l.first_kept_ms))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        order(b.list("board", 10, 4_000).await),
        vec![(version(2), 2_000), (version(1), 1_000)]
    );
    assert_eq!(
        order(a.list("board", 1, 4_000).await),
        vec![(version(2), 2_000)],
        "bounded"
    );
    // An index as builds before feeds wrote it: three fields a line.
    let key = a.index_key(&RedisVersions::holder("board"));
    let text = format!(
        "{}{} 5000 100\n{} 6000 100\n",
        index::INDEX_MARK,
        version(3),
        version(4)
    );
    let sealed = a.tier.seal().seal(&key, text.into_bytes());
    a.set(key.clone(), sealed).await.expect("the tier answers");
    assert_eq!(
        order(a.list("board", 10, 7_000).await),
        vec![(version(4), 6_000), (version(3), 5_000)]
    );
    // One that is not ours: an empty list (and the index starts afresh),
    // never an error.
    server.cli(&["set", &key, "SBVI1\nnot a line"]);
    assert_eq!(order(a.list("board", 10, 7_000).await), Vec::new());
    assert_eq!(order(a.list("other", 10, 7_000).await), Vec::new());
}

#[tokio::test]
async fn hostile_accounting_is_counted_afresh_and_never_an_error() {
    let server = Server::start(&["--save", "", "--appendonly", "no"]);
    let proxy = proxy(server.socket()).await;
    let store = store(&proxy.url, 10_000);
    for (cmd, args) in [
        ("set", vec!["t:{versions}:bytes", "lots"]),
        ("set", vec!["t:{versions}:holders", "not a set"]),
        ("set", vec!["t:{versions}:written", "not a set"]),
        (
            "zadd",
            vec!["t:{versions}:holders", "99999999", "not-a-holder"],
        ),
        // Counted afresh from the set, which names a holder that is none.
        ("del", vec!["t:{versions}:bytes"]),
    ] {
        let mut line = vec![cmd];
        line.extend(args);
        server.cli(&line);
        put(&store, "board", 1, 3_000, 1).await;
        assert!(kept(&store, "board", 1).await, "after {line:?}");
        put(&store, "board", 2, 3_000, 2).await;
        assert!(kept(&store, "board", 2).await, "after {line:?}");
        let total: usize = server
            .cli(&["get", "t:{versions}:bytes"])
            .parse()
            .unwrap_or(usize::MAX);
        assert!(total <= 10_000, "after {line:?}: {total}");
    }
    // A holder that is no holder's name left the accounting.
    assert_eq!(
        server.cli(&["zscore", "t:{versions}:holders", "not-a-holder"]),
        ""
    );
}
