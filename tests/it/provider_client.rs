//! Provider client against the bundled sample upstream over real loopback
//! sockets: the happy path, nested boards (breadth first, batching, limits),
//! headers, pooling and gzip. Fault scenarios: `provider_faults.rs`.

use shared_board_api::demo::SampleUpstream;
use shared_board_api::internals::document::UnloadedReason;
use shared_board_api::internals::provider::client::{ProviderClient, ProviderSettings};
use std::collections::HashSet;
use std::time::Duration;

const PERMISSION: &str = "permSECRET42";

/// The sample upstream on loopback and a client for it (a 10 s deadline),
/// then `tweak`.
pub async fn setup(tweak: impl FnOnce(&mut ProviderSettings)) -> (SampleUpstream, ProviderClient) {
    let sample = SampleUpstream::start("127.0.0.1:0".parse().unwrap())
        .await
        .expect("sample upstream binds");
    let mut settings = ProviderSettings {
        origin: url::Url::parse(&sample.origin()).unwrap(),
        user_agent: "provider-test/1".into(),
        fetch_deadline: Duration::from_secs(10),
        ..ProviderSettings::default()
    };
    tweak(&mut settings);
    let client = ProviderClient::new(settings).expect("valid settings");
    (sample, client)
}

fn set(ids: &[&str]) -> HashSet<String> {
    ids.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn fetches_root_and_nested_boards_breadth_first() {
    let (sample, client) = setup(|_| {}).await;
    let fetched = client.fetch("t-root", PERMISSION).await.unwrap();
    assert_eq!(fetched.root_id, "t-root");
    assert_eq!(
        fetched.loaded_boards,
        set(&["t-root", "t-mid-a", "t-mid-b", "t-leaf"])
    );
    for id in [
        "t-card-1", "t-col-1", "t-card-2", "t-task-1", "t-card-3", "t-thread",
    ] {
        assert!(fetched.elements.contains_key(id), "missing {id}");
    }
    assert!(fetched.comments.contains_key("t-comment-1"));
    assert_eq!(
        fetched.canvas_order["t-root"].value(),
        Some(serde_json::json!(["t-col-1", "t-card-1", "t-mid-a"]))
    );
    assert_eq!(fetched.fetched_time_ms, Some(1_767_225_600_000));
    assert!(fetched.fetched_at_ms > 1_700_000_000_000);
    // Root alone, then level 1 in one batch, then level 2.
    assert_eq!(
        sample.board_batches(),
        vec![
            vec!["t-root".to_string()],
            vec!["t-mid-a".to_string(), "t-mid-b".to_string()],
            vec!["t-leaf".to_string()],
        ]
    );
}

#[tokio::test]
async fn token_is_requested_once_and_used_on_every_boards_request() {
    let (sample, client) = setup(|_| {}).await;
    client.fetch("t-root", PERMISSION).await.unwrap();
    let requests = sample.requests();
    assert_eq!(
        requests[0],
        format!("/api/permissions/token/{PERMISSION}?elementId=t-root")
    );
    let boards: Vec<&String> = requests.iter().skip(1).collect();
    assert_eq!(boards.len(), 3);
    for target in boards {
        assert!(target.starts_with("/api/boards?ids="), "{target}");
        assert!(target.contains("&tokens=smpl."), "{target}");
        assert!(
            target.ends_with("&excludeSelf=false&loadAncestors=false&canvasOrder=true"),
            "{target}"
        );
        assert!(!target.contains(PERMISSION), "{target}");
    }
}

#[tokio::test]
async fn sends_only_its_own_headers() {
    let (sample, client) = setup(|_| {}).await;
    client.fetch("t-root", PERMISSION).await.unwrap();
    let host = sample.addr().to_string();
    for request in sample.request_log() {
        let mut names: Vec<&str> = request.headers.iter().map(|(n, _)| n.as_str()).collect();
        names.sort_unstable();
        assert_eq!(names, ["accept", "accept-encoding", "host", "user-agent"]);
        let header = |name: &str| {
            request
                .headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
                .unwrap()
        };
        assert_eq!(header("host"), host);
        assert_eq!(header("accept"), "application/json");
        assert_eq!(header("accept-encoding"), "gzip");
        assert_eq!(header("user-agent"), "provider-test/1");
        assert_eq!(request.method, "GET");
    }
}

#[tokio::test]
async fn nested_boards_go_in_batches_of_batch_size_level_by_level() {
    let (sample, client) = setup(|s| s.batch_size = 2).await;
    let fetched = client.fetch("s-wide", PERMISSION).await.unwrap();
    let batches = sample.board_batches();
    assert_eq!(batches.len(), 5, "{batches:?}");
    assert_eq!(batches[0], ["s-wide"]);
    // Level 1: five boards in three requests of at most two ids (in flight
    // together, so in any order), then level 2.
    let mut level1: Vec<Vec<String>> = batches[1..4].to_vec();
    level1.sort();
    assert_eq!(
        level1,
        vec![
            vec!["s-wide-1".to_string(), "s-wide-2".to_string()],
            vec!["s-wide-3".to_string(), "s-wide-4".to_string()],
            vec!["s-wide-5".to_string()],
        ]
    );
    assert_eq!(batches[4], ["s-wide-1-1"]);
    // Only s-wide-1 has a fixture; the others answer BOARD_NOT_FOUND.
    assert_eq!(fetched.loaded_boards, set(&["s-wide", "s-wide-1"]));
    assert!(fetched.elements.contains_key("s-wide-5"));
}

#[tokio::test]
async fn max_boards_counts_the_root() {
    let (sample, client) = setup(|s| s.max_boards = 2).await;
    let fetched = client.fetch("t-root", PERMISSION).await.unwrap();
    assert_eq!(fetched.loaded_boards, set(&["t-root", "t-mid-a"]));
    assert_eq!(
        sample.board_batches(),
        vec![vec!["t-root".to_string()], vec!["t-mid-a".to_string()]]
    );
    // The cut-off board keeps its own element.
    assert!(fetched.elements.contains_key("t-mid-b"));

    let (sample, client) = setup(|s| s.max_boards = 1).await;
    let fetched = client.fetch("t-root", PERMISSION).await.unwrap();
    assert_eq!(fetched.loaded_boards, set(&["t-root"]));
    assert_eq!(sample.board_batches().len(), 1);
}

#[tokio::test]
async fn max_elements_stops_merging_nested_boards() {
    // The root answer has 5 elements; level 1 would add more.
    let (_sample, client) = setup(|s| s.max_elements = 6).await;
    let fetched = client.fetch("t-root", PERMISSION).await.unwrap();
    assert_eq!(fetched.loaded_boards, set(&["t-root"]));
    assert_eq!(fetched.elements.len(), 5);

    let (_sample, client) = setup(|s| s.max_elements = 4).await;
    let err = client.fetch("t-root", PERMISSION).await.unwrap_err();
    assert!(matches!(
        err,
        shared_board_api::internals::provider::error::FetchError::Upstream(_)
    ));
}

#[tokio::test]
async fn one_board_per_request_and_one_request_in_flight_still_loads_everything() {
    let (sample, client) = setup(|s| {
        s.batch_size = 1;
        s.concurrency = 1;
    })
    .await;
    let fetched = client.fetch("t-root", PERMISSION).await.unwrap();
    assert_eq!(fetched.loaded_boards.len(), 4);
    assert!(sample.board_batches().iter().all(|b| b.len() == 1));
}

#[tokio::test]
async fn connections_are_pooled_across_requests_and_fetches() {
    let (sample, client) = setup(|s| s.concurrency = 1).await;
    client.fetch("t-root", PERMISSION).await.unwrap();
    client.fetch("t-root", PERMISSION).await.unwrap();
    assert_eq!(sample.requests().len(), 8);
    assert_eq!(sample.connections(), 1, "keep-alive connection reused");
}

#[tokio::test]
async fn gzip_answers_are_decoded() {
    let (sample, client) = setup(|_| {}).await;
    let plain = client.fetch("t-root", PERMISSION).await.unwrap();
    let gzipped = client.fetch("t-root", "fault-gzip").await.unwrap();
    assert_eq!(gzipped.elements, plain.elements);
    assert_eq!(gzipped.loaded_boards, plain.loaded_boards);
    assert_eq!(sample.requests().len(), 8);
}

#[tokio::test]
async fn same_board_same_result() {
    let (_sample, client) = setup(|s| s.batch_size = 1).await;
    let a = client.fetch("t-root", PERMISSION).await.unwrap();
    let b = client.fetch("t-root", PERMISSION).await.unwrap();
    assert_eq!(a.elements, b.elements);
    assert_eq!(a.loaded_boards, b.loaded_boards);
}

#[tokio::test]
async fn client_is_shared_by_concurrent_fetches() {
    let (_sample, client) = setup(|_| {}).await;
    let client = std::sync::Arc::new(client);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let client = client.clone();
        tasks.spawn(async move { client.fetch("t-root", PERMISSION).await });
    }
    while let Some(result) = tasks.join_next().await {
        assert_eq!(result.unwrap().unwrap().loaded_boards.len(), 4);
    }
}

#[test]
fn sample_upstream_runs_in_its_own_thread_without_a_runtime() {
    let sample = SampleUpstream::start_in_thread("127.0.0.1:0".parse().unwrap()).unwrap();
    let origin = sample.origin();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let fetched = runtime.block_on(async {
        let settings = ProviderSettings {
            origin: url::Url::parse(&origin).unwrap(),
            ..ProviderSettings::default()
        };
        ProviderClient::new(settings)
            .unwrap()
            .fetch("t-root", PERMISSION)
            .await
    });
    assert_eq!(fetched.unwrap().loaded_boards.len(), 4);
    assert_eq!(sample.requests().len(), 4);
    let addr = sample.addr();
    sample.shutdown();
    // The listener is gone once the thread has wound down.
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    while std::net::TcpStream::connect(addr).is_ok() {
        assert!(std::time::Instant::now() < deadline, "still listening");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test]
async fn nesting_depth_is_bounded() {
    use shared_board_api::internals::provider::client::MAX_NESTING_DEPTH;
    let (sample, client) = setup(|s| s.max_boards = 1000).await;
    let fetched = client.fetch("s-deep-0", PERMISSION).await.unwrap();
    assert_eq!(fetched.loaded_boards.len(), MAX_NESTING_DEPTH + 1);
    assert!(fetched
        .loaded_boards
        .contains(&format!("s-deep-{MAX_NESTING_DEPTH}")));
    // The first board below the limit is known (its element) but not fetched.
    let first_cut = format!("s-deep-{}", MAX_NESTING_DEPTH + 1);
    assert!(fetched.elements.contains_key(first_cut.as_str()));
    assert_eq!(
        fetched.unloaded_reason(&first_cut),
        Some(UnloadedReason::BoardLimit)
    );
    assert_eq!(sample.board_batches().len(), MAX_NESTING_DEPTH + 1);
}

#[tokio::test]
async fn nested_boards_past_max_elements_are_board_limit() {
    // The root's answer fits; its nested boards' answers would not.
    let (_sample, client) = setup(|s| s.max_elements = 7).await;
    let fetched = client.fetch("s-wide", PERMISSION).await.unwrap();
    assert_eq!(fetched.loaded_boards, HashSet::from(["s-wide".to_owned()]));
    for n in 1..=5 {
        let id = format!("s-wide-{n}");
        assert_eq!(
            fetched.unloaded_reason(&id),
            Some(UnloadedReason::BoardLimit),
            "{id}"
        );
    }
}

#[tokio::test]
async fn every_board_not_loaded_has_the_reason_the_client_found() {
    let (_sample, client) = setup(|s| {
        s.batch_size = 1;
        s.fetch_deadline = Duration::from_millis(1500);
    })
    .await;
    let fetched = client.fetch("s-nested-faults", PERMISSION).await.unwrap();
    for (id, reason) in [
        ("fault-500", UnloadedReason::UpstreamError),
        ("fault-slow", UnloadedReason::Deadline),
        ("fault-denied", UnloadedReason::AccessDenied),
        ("fault-skeleton", UnloadedReason::AccessDenied),
    ] {
        assert_eq!(fetched.unloaded.get(id), Some(&reason), "{id}");
    }
    assert_eq!(fetched.unloaded_reason("t-mid-b"), None);
    assert!(!fetched.unloaded.contains_key("t-mid-b"));
}

#[tokio::test]
async fn host_name_origins_are_resolved_asynchronously() {
    // `localhost` comes from /etc/hosts: no traffic leaves the machine. Skip
    // where it does not resolve to 127.0.0.1 first (the sample binds IPv4 only).
    let first = tokio::net::lookup_host(("localhost", 80))
        .await
        .ok()
        .and_then(|mut a| a.next());
    if first.map(|a| a.ip()) != Some("127.0.0.1".parse().unwrap()) {
        eprintln!("skipped: localhost does not resolve to 127.0.0.1 first");
        return;
    }
    let (sample, _) = setup(|_| {}).await;
    let port = sample.addr().port();
    let settings = ProviderSettings {
        origin: url::Url::parse(&format!("http://localhost:{port}")).unwrap(),
        ..ProviderSettings::default()
    };
    let client = ProviderClient::new(settings).unwrap();
    client.fetch("t-root", PERMISSION).await.unwrap();
    client.fetch("t-root", PERMISSION).await.unwrap();
    let log = sample.request_log();
    assert_eq!(log.len(), 8);
    for request in log {
        let host = request.headers.iter().find(|(n, _)| n == "host").unwrap();
        assert_eq!(host.1, format!("localhost:{port}"));
    }
}

#[tokio::test]
async fn a_cancelled_fetch_leaves_the_client_usable() {
    let (_sample, client) = setup(|s| s.batch_size = 1).await;
    // Cancel while a nested board (fault-slow) is in flight.
    let cancelled = tokio::time::timeout(
        Duration::from_millis(200),
        client.fetch("s-nested-faults", PERMISSION),
    )
    .await;
    assert!(cancelled.is_err(), "should still be waiting for fault-slow");
    let fetched = client.fetch("t-root", PERMISSION).await.unwrap();
    assert_eq!(fetched.loaded_boards.len(), 4);
}
