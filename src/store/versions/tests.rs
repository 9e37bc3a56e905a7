//! Tests of the kept versions' common code: the owner key, the writer's
//! queue and the stores behind [`super::Versions`].

use super::*;

fn board(n: usize) -> Arc<LoadedBoard> {
    let doc = format!(
        r#"{{"version":1,"source":{{"provider":"milanote","boardId":"B"}},"fetchedAt":"t","board":{{"id":"B","type":"BOARD","title":"v{n}","children":[]}}}}"#
    );
    Arc::new(LoadedBoard::from_json(doc.into_bytes()))
}

#[tokio::test(flavor = "current_thread")]
async fn a_store_slower_than_new_versions_holds_at_most_the_queue() {
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
    let versions = Versions::open(&settings, None).expect("memory");
    let pool = WorkPool::new(1, 16).expect("a pool");
    let counted = NOT_KEPT.as_ref().map_or(0, prometheus::IntCounter::get);
    // Nothing yields: the writer cannot take one before all are offered.
    let boards: Vec<_> = (0..10).map(board).collect();
    for b in &boards {
        versions.keep(&pool, "B:x", b);
    }
    let not_kept = versions.not_kept.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(not_kept, (10 - QUEUE) as u64, "the rest is counted");
    let metric = NOT_KEPT.as_ref().map_or(0, prometheus::IntCounter::get);
    assert!(metric >= counted + not_kept, "and in the metric");
    // The queued ones are written, the last queued among them.
    let last = boards[QUEUE - 1].version().expect("a version").to_owned();
    let mut found = None;
    for _ in 0..200 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        found = versions.get(&pool, "B:x", &last).await.ok().flatten();
        if found.is_some() {
            break;
        }
    }
    assert!(found.is_some(), "a queued version is kept");
    let dropped = boards[QUEUE].version().expect("a version").to_owned();
    assert_eq!(versions.get(&pool, "B:x", &dropped).await, Ok(None));
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
