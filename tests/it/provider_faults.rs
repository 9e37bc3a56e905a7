//! Provider client fault handling against the sample upstream's fault
//! scenarios (table in `src/provider/sample/mod.rs`): every outcome maps to the
//! specified `FetchError`, deadlines and size limits hold, and no error text
//! carries the permission id or the token.

use shared_board_api::demo::SampleUpstream;
use shared_board_api::internals::provider::client::{ProviderClient, ProviderSettings};
use shared_board_api::internals::provider::error::FetchError;
use std::collections::HashSet;
use std::time::{Duration, Instant};

const PERMISSION: &str = "permSECRET42";

/// The sample upstream and a client for it with a 5 s deadline and a
/// 1 MiB body cap, then `tweak`.
async fn setup(tweak: impl FnOnce(&mut ProviderSettings)) -> (SampleUpstream, ProviderClient) {
    crate::provider_client::setup(|settings| {
        settings.fetch_deadline = Duration::from_secs(5);
        settings.max_response_bytes = 1024 * 1024;
        tweak(settings);
    })
    .await
}

#[derive(Debug, PartialEq)]
enum Want {
    Denied,
    NotFound,
    Upstream,
    /// The bot wall (AWS WAF) answered instead of the provider.
    Challenged,
}

fn kind(e: &FetchError) -> Want {
    match e {
        FetchError::AccessDenied => Want::Denied,
        FetchError::NotFound => Want::NotFound,
        FetchError::Upstream(_) => Want::Upstream,
        FetchError::Challenged => Want::Challenged,
        FetchError::Timeout => panic!("unexpected timeout"),
        FetchError::OverBudget => panic!("unexpected pacing: no fleet budget is set"),
    }
}

/// Every token the sample issued, from the boards requests it saw.
fn issued_tokens(sample: &SampleUpstream) -> Vec<String> {
    sample
        .requests()
        .iter()
        .filter_map(|t| t.split("tokens=").nth(1))
        .map(|rest| rest.split('&').next().unwrap_or_default().to_owned())
        .collect()
}

/// Fetches `board` with `permission`, expects the failure `want`, and checks
/// that neither the permission nor any issued token is in the error's text.
async fn assert_fails_quietly(
    client: &ProviderClient,
    sample: &SampleUpstream,
    board: &str,
    permission: &str,
    want: Want,
) {
    let err = client.fetch(board, permission).await.unwrap_err();
    assert_eq!(kind(&err), want, "{board}/{permission}: {err}");
    let tokens = issued_tokens(sample);
    let mut secrets: Vec<&str> = tokens.iter().map(String::as_str).collect();
    secrets.push(permission);
    assert_no_secrets(&err, &secrets);
}

fn assert_no_secrets(e: &FetchError, secrets: &[&str]) {
    let texts = [e.to_string(), format!("{e:?}")];
    for text in texts {
        for secret in secrets.iter().filter(|s| !s.is_empty()) {
            assert!(!text.contains(secret), "{text:?} contains a secret");
        }
    }
}

#[tokio::test]
async fn token_endpoint_faults() {
    use Want::*;
    let (sample, client) = setup(|_| {}).await;
    let cases = [
        ("fault-denied", Denied),
        ("fault-missing", Denied),
        ("fault-wrong-token", Denied),
        ("fault-401", Denied),
        ("fault-403", Denied),
        ("fault-404", NotFound),
        ("fault-500", Upstream),
        ("fault-challenge", Challenged),
        ("fault-waf-challenge", Challenged),
        ("fault-waf-captcha", Challenged),
        ("fault-garbage", Upstream),
        ("fault-huge", Upstream),
        ("fault-huge-chunked", Upstream),
        ("fault-gzip-bomb", Upstream),
        ("fault-reset", Upstream),
        ("fault-token-empty", Upstream),
        ("fault-token-space", Upstream),
        ("fault-token-ctrl", Upstream),
        ("fault-token-long", Upstream),
        ("fault-token-number", Upstream),
    ];
    for (permission, want) in cases {
        assert_fails_quietly(&client, &sample, "t-root", permission, want).await;
    }
}

#[tokio::test]
async fn root_board_faults() {
    use Want::*;
    let (sample, client) = setup(|_| {}).await;
    let cases = [
        ("fault-denied", Denied),
        ("fault-board-denied", Denied),
        ("fault-password", Denied),
        ("fault-skeleton", Denied),
        ("fault-not-returned", Denied),
        ("fault-401", Denied),
        ("fault-403", Denied),
        ("fault-not-found", NotFound),
        ("fault-deleted", NotFound),
        ("fault-board-deleted", NotFound),
        ("no-such-board", NotFound),
        ("fault-404", NotFound),
        ("fault-odd-error", Upstream),
        ("fault-not-board", Upstream),
        ("fault-no-elements", Upstream),
        ("fault-500", Upstream),
        ("fault-challenge", Challenged),
        ("fault-waf-challenge", Challenged),
        ("fault-waf-captcha", Challenged),
        ("fault-garbage", Upstream),
        ("fault-huge", Upstream),
        ("fault-huge-chunked", Upstream),
        ("fault-gzip-bomb", Upstream),
        ("fault-reset", Upstream),
    ];
    for (board, want) in cases {
        assert_fails_quietly(&client, &sample, board, PERMISSION, want).await;
    }
}

#[tokio::test]
async fn upstream_errors_say_which_check_refused_the_answer() {
    let (_sample, client) = setup(|_| {}).await;
    let cases = [
        ("fault-garbage", "not JSON"),
        ("fault-huge", "announces"),
        ("fault-huge-chunked", "over the 1048576-byte limit"),
        ("fault-gzip-bomb", "inflates past"),
        ("fault-500", "HTTP 500"),
        ("fault-token-ctrl", "control characters"),
        ("fault-token-space", "whitespace"),
        ("fault-token-long", "longer than 8192"),
    ];
    for (permission, needle) in cases {
        match client.fetch("t-root", permission).await {
            Err(FetchError::Upstream(msg)) => assert!(msg.contains(needle), "{permission}: {msg}"),
            other => panic!("{permission}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn deadline_before_the_root_is_a_timeout() {
    let (_sample, client) = setup(|s| s.fetch_deadline = Duration::from_millis(300)).await;
    for (board, permission) in [("t-root", "fault-slow"), ("fault-slow", PERMISSION)] {
        let started = Instant::now();
        let err = client.fetch(board, permission).await.unwrap_err();
        let elapsed = started.elapsed();
        assert_eq!(err, FetchError::Timeout, "{board}/{permission}");
        assert!(elapsed >= Duration::from_millis(250), "{elapsed:?}");
        assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
    }
}

#[tokio::test]
async fn read_timeout_is_a_timeout() {
    let (_sample, client) = setup(|s| s.read_timeout = Duration::from_millis(200)).await;
    let started = Instant::now();
    let err = client.fetch("t-root", "fault-slow").await.unwrap_err();
    assert_eq!(err, FetchError::Timeout);
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn nested_faults_only_unload_their_own_board() {
    let (sample, client) = setup(|s| {
        s.batch_size = 1;
        s.fetch_deadline = Duration::from_millis(1500);
    })
    .await;
    let started = Instant::now();
    let fetched = client.fetch("s-nested-faults", PERMISSION).await.unwrap();
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_secs(4), "{elapsed:?}");
    let loaded: HashSet<&str> = fetched.loaded_boards.iter().map(String::as_str).collect();
    assert_eq!(loaded, HashSet::from(["s-nested-faults", "t-mid-b"]));
    // Failed boards keep their own element; a SKELETON answer never replaces a BOARD.
    for id in ["fault-500", "fault-slow", "fault-denied", "fault-skeleton"] {
        assert_eq!(fetched.elements[id].head.element_type(), "BOARD", "{id}");
    }
    assert!(fetched.elements.contains_key("t-task-1"));
    assert_eq!(sample.board_batches().len(), 6);
}

#[tokio::test]
async fn deadline_after_the_root_returns_what_was_loaded() {
    // Slow board in the same batch as the others: the whole batch is lost, the root is kept.
    let (_sample, client) = setup(|s| s.fetch_deadline = Duration::from_millis(500)).await;
    let started = Instant::now();
    let fetched = client.fetch("s-nested-faults", PERMISSION).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(
        fetched.loaded_boards,
        HashSet::from(["s-nested-faults".to_string()])
    );
}

#[tokio::test]
async fn default_size_limit_refuses_an_announced_huge_body() {
    let (_sample, client) =
        setup(|s| s.max_response_bytes = ProviderSettings::default().max_response_bytes).await;
    let started = Instant::now();
    let err = client.fetch("fault-huge", PERMISSION).await.unwrap_err();
    assert!(
        matches!(err, FetchError::Upstream(ref m) if m.contains("limit")),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn unreachable_provider_is_an_upstream_error() {
    // A port that was just free: connection refused on loopback.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let settings = ProviderSettings {
        origin: url::Url::parse(&format!("http://127.0.0.1:{port}")).unwrap(),
        ..ProviderSettings::default()
    };
    let client = ProviderClient::new(settings).unwrap();
    let err = client.fetch("t-root", PERMISSION).await.unwrap_err();
    assert!(matches!(err, FetchError::Upstream(_)), "{err}");
    assert_no_secrets(&err, &[PERMISSION]);
}

#[tokio::test]
async fn tls_origin_speaking_plain_http_is_an_upstream_error() {
    // The https path (rustls, SNI, per-peer CA) against the plain sample: the
    // handshake fails, quickly and without a panic.
    let sample = SampleUpstream::start("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let ca = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/demo/fixtures/scenarios/tls/test-ca.pem");
    let settings = ProviderSettings {
        origin: url::Url::parse(&format!("https://{}", sample.addr())).unwrap(),
        ca_file: Some(ca),
        ..ProviderSettings::default()
    };
    let client = ProviderClient::new(settings).unwrap();
    let started = Instant::now();
    let err = client.fetch("t-root", PERMISSION).await.unwrap_err();
    assert!(matches!(err, FetchError::Upstream(_)), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_no_secrets(&err, &[PERMISSION]);
}
