//! The store's levels against the sample upstream: cancellation, coverage.

use super::*;
use crate::demo::SampleUpstream;
use crate::provider::client::ProviderSettings;

fn token_requests(sample: &SampleUpstream, p: &str) -> usize {
    sample
        .requests()
        .iter()
        .filter(|t| t.starts_with(&format!("/api/permissions/token/{p}")))
        .count()
}

async fn settled(boards: &Boards) {
    let cache = boards.inner.cache.as_ref().expect("cache on");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while cache.loads.in_flight() > 0 {
        assert!(std::time::Instant::now() < deadline, "load never ended");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_fetch_does_not_wedge_its_key() {
    let sample = SampleUpstream::start(([127, 0, 0, 1], 0).into())
        .await
        .expect("sample upstream");
    let fetch_deadline = Duration::from_millis(400);
    let provider = ProviderSettings {
        origin: url::Url::parse(&sample.origin()).expect("origin"),
        fetch_deadline,
        ..ProviderSettings::default()
    };
    let cache = CacheSettings {
        error_ttl: Duration::from_secs(1),
        ..CacheSettings::default()
    };
    let boards = Boards::new(
        provider,
        "milanote".into(),
        Some(cache),
        None,
        &Limits::default(),
    )
    .expect("boards");
    let (board, p) = ("1W3ZZU1Qvua02H", "fault-slow");
    // A host that wraps our handler in its own timeout drops the request:
    // nobody else waits for its load, so the load stops and leaves neither
    // a key in flight nor a remembered outcome.
    let dropped =
        tokio::time::timeout(Duration::ZERO, boards.document(board, p, Coverage::Full)).await;
    assert!(dropped.is_err());
    settled(&boards).await;
    // The task may or may not have reached the provider before it stopped.
    let asked = token_requests(&sample, p);
    assert!(asked <= 1, "{asked}");
    // N concurrent requests then cost one upstream fetch...
    let mut all = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let boards = boards.clone();
        all.spawn(async move { boards.document(board, p, Coverage::Full).await });
    }
    while let Some(done) = all.join_next().await {
        let (outcome, _) = done.expect("task");
        assert_eq!(outcome.err(), Some(LoadError::Fetch(FetchError::Timeout)));
    }
    // The dropped load's request, when it was on the wire, may be recorded
    // by the sample only now (the count above raced it): at most once.
    let asked = asked.max(token_requests(&sample, p).saturating_sub(1).min(1));
    assert_eq!(token_requests(&sample, p), asked + 1);
    // ...and the next one is answered from the cache.
    let (outcome, source) = boards.document(board, p, Coverage::Full).await;
    let cached = source == Source::Hit;
    assert!(cached);
    assert_eq!(outcome.err(), Some(LoadError::Fetch(FetchError::Timeout)));
    assert_eq!(token_requests(&sample, p), asked + 1);

    // The same for a board that loads: the dropped caller's load stops, the
    // next caller loads the board, and later callers are hits.
    let ok = "demo";
    let dropped =
        tokio::time::timeout(Duration::ZERO, boards.document(board, ok, Coverage::Full)).await;
    assert!(dropped.is_err());
    settled(&boards).await;
    let (outcome, source) = boards.document(board, ok, Coverage::Full).await;
    assert!(outcome.is_ok() && source == Source::Miss, "{source:?}");
    for _ in 0..4 {
        let (outcome, source) = boards.document(board, ok, Coverage::Full).await;
        let cached = source == Source::Hit;
        assert!(outcome.is_ok() && cached);
    }
    assert!(token_requests(&sample, ok) <= 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outline_is_loaded_only_when_no_full_document_is_there() {
    let sample = SampleUpstream::start(([127, 0, 0, 1], 0).into())
        .await
        .expect("sample upstream");
    let provider = ProviderSettings {
        origin: url::Url::parse(&sample.origin()).expect("origin"),
        ..ProviderSettings::default()
    };
    let boards = Boards::new(
        provider,
        "milanote".into(),
        Some(CacheSettings::default()),
        None,
        &Limits::default(),
    )
    .expect("boards");
    let (board, p) = ("1W3ZZU1Qvua02H", "demo");
    // A cold outline request loads an outline...
    let (outline, source) = boards.document(board, p, Coverage::Outline).await;
    let cached = source == Source::Hit;
    let outline = outline.expect("loads");
    assert!(!cached);
    assert_eq!(outline.board.coverage(), Coverage::Outline);
    let (again, source) = boards.document(board, p, Coverage::Outline).await;
    let cached = source == Source::Hit;
    assert!(cached && again.expect("cached").board.coverage() == Coverage::Outline);
    assert_eq!(token_requests(&sample, p), 1);
    // ...which cannot serve a full request: that one loads the board.
    let (full, source) = boards.document(board, p, Coverage::Full).await;
    let cached = source == Source::Hit;
    assert!(!cached && full.expect("loads").board.coverage() == Coverage::Full);
    assert_eq!(token_requests(&sample, p), 2);
    // From then on both are answered from the cache.
    let (doc, source) = boards.document(board, p, Coverage::Full).await;
    let cached = source == Source::Hit;
    assert!(cached && doc.expect("cached").board.coverage() == Coverage::Full);
    let (doc, source) = boards.document(board, p, Coverage::Outline).await;
    let cached = source == Source::Hit;
    assert!(cached && doc.is_ok());
    assert_eq!(token_requests(&sample, p), 2);
    // A full document cached first serves an outline request.
    let third = "demo-3";
    let (_, source) = boards.document(board, third, Coverage::Full).await;
    let cached = source == Source::Hit;
    assert!(!cached);
    let (doc, source) = boards.document(board, third, Coverage::Outline).await;
    let cached = source == Source::Hit;
    assert!(cached && doc.expect("cached").board.coverage() == Coverage::Full);
    assert_eq!(token_requests(&sample, third), 1);
    // An outline request while a full load is in flight joins it.
    let other = "demo-2";
    let (first, second) = tokio::join!(
        boards.document(board, other, Coverage::Full),
        boards.document(board, other, Coverage::Outline)
    );
    assert_eq!(first.0.expect("loads").board.coverage(), Coverage::Full);
    assert_eq!(second.0.expect("loads").board.coverage(), Coverage::Full);
    assert_eq!(token_requests(&sample, other), 1);
}
