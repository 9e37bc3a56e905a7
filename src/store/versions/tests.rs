//! Tests of the kept versions' common code: the owner key, the writer's
//! queue and the stores behind [`super::Versions`].

use super::*;

fn board(n: usize) -> Arc<LoadedBoard> {
    let doc = format!(
        r#"{{"version":1,"source":{{"provider":"milanote","boardId":"B"}},"fetchedAt":"t","board":{{"id":"B","type":"BOARD","title":"v{n}","children":[]}}}}"#
    );
    Arc::new(LoadedBoard::from_json(doc.into_bytes()))
}

fn memory_store() -> Versions {
    let settings = VersionSettings {
        store: StoreKind::Memory,
        redis: None,
        bounds: Bounds {
            keep_versions: 100,
            keep: Duration::from_secs(60),
            max_bytes: 1 << 20,
            max_document_bytes: 1 << 20,
        },
    };
    Versions::open(&settings, None).expect("memory")
}

/// Waits (a bounded while) for `version` of `owner` to be kept.
async fn kept(versions: &Versions, pool: &WorkPool, owner: &str, version: &str) -> bool {
    for _ in 0..200 {
        if versions
            .get(pool, owner, version)
            .await
            .ok()
            .flatten()
            .is_some()
        {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

#[tokio::test(flavor = "current_thread")]
async fn a_store_slower_than_new_versions_holds_at_most_the_queues_bytes() {
    let mut versions = memory_store();
    let pool = WorkPool::new(1, 16).expect("a pool");
    let counted = NOT_KEPT.as_ref().map_or(0, prometheus::IntCounter::get);
    let boards: Vec<_> = (0..10).map(board).collect();
    // Room for three documents and a half.
    let size = boards[0].document_json().len();
    versions.queue_bytes = 3 * size + size / 2;
    // Nothing yields: the writer cannot take one before all are offered.
    for b in &boards {
        versions.keep(&pool, "B:x", b);
    }
    let not_kept = versions.not_kept.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(not_kept, 7, "the rest is counted");
    let metric = NOT_KEPT.as_ref().map_or(0, prometheus::IntCounter::get);
    assert!(metric >= counted + not_kept, "and in the metric");
    // The queued ones are written, the last queued among them.
    let last = boards[2].version().expect("a version").to_owned();
    assert!(
        kept(&versions, &pool, "B:x", &last).await,
        "a queued version is kept"
    );
    let dropped = boards[3].version().expect("a version").to_owned();
    assert_eq!(versions.get(&pool, "B:x", &dropped).await, Ok(None));
    // Written, they no longer count against the bound.
    assert_eq!(
        versions.queued.load(std::sync::atomic::Ordering::Relaxed),
        0
    );
    versions.keep(&pool, "B:x", &boards[9]);
    let later = boards[9].version().expect("a version").to_owned();
    assert!(kept(&versions, &pool, "B:x", &later).await, "room again");
}

#[tokio::test(flavor = "current_thread")]
async fn a_burst_of_new_links_is_kept_whole() {
    // Many links opened at once (streams of as many boards): each one's
    // first version is what its `/changes` and stream compare with later.
    let versions = memory_store();
    let pool = WorkPool::new(1, 16).expect("a pool");
    let boards: Vec<_> = (0..50).map(board).collect();
    for (i, b) in boards.iter().enumerate() {
        versions.keep(&pool, &format!("B:{i}"), b);
    }
    assert_eq!(
        versions.not_kept.load(std::sync::atomic::Ordering::Relaxed),
        0
    );
    for (i, b) in boards.iter().enumerate() {
        let version = b.version().expect("a version");
        assert!(
            kept(&versions, &pool, &format!("B:{i}"), version).await,
            "{i}"
        );
    }
}

#[test]
fn the_owner_key_keeps_links_apart_and_shows_no_permission() {
    let a = owner("B", "perm-one");
    assert_eq!(a, owner("B", "perm-one"));
    assert_ne!(a, owner("B", "perm-two"));
    assert_ne!(owner("ab", "c"), owner("a", "bc"));
    assert!(a.starts_with("B:") && !a.contains("perm"));
    assert_eq!(a.len(), 2 + 32);
}
