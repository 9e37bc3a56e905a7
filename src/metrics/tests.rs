//! The series' names and labels, and gauges of two instances adding up.

use super::*;

fn exported() -> String {
    prometheus::TextEncoder::new()
        .encode_to_string(&prometheus::gather())
        .expect("encodes")
}

fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn every_series_is_exported_with_its_api() {
    let m = Metrics::new("unit-a");
    m.request("search", 200);
    m.request("search", 200);
    m.request("changes", 410);
    m.cache(true);
    m.upstream_seconds(0.2);
    m.overloaded();
    m.cache_size(4096, 2);
    m.evictions(3);
    m.pool_busy().set(1);
    m.cold_queued().set(2);
    m.fleet("rejected");
    m.mcp("tools/call", "read_board", "ok");
    m.mcp("initialize", "", "ok");
    access_log_dropped();
    upstream_challenge();
    let text = exported();
    for (series, want) in [
        (
            r#"board_api_requests_total{api="unit-a",endpoint="search",status="200"}"#,
            2.0,
        ),
        (
            r#"board_api_requests_total{api="unit-a",endpoint="changes",status="410"}"#,
            1.0,
        ),
        (
            r#"board_api_requests_total{api="unit-a",endpoint="detail",status="504"}"#,
            0.0,
        ),
        (r#"board_api_cache_total{api="unit-a",result="hit"}"#, 1.0),
        (r#"board_api_upstream_seconds_count{api="unit-a"}"#, 1.0),
        (r#"board_api_overloaded_total{api="unit-a"}"#, 1.0),
        (r#"board_api_cache_bytes{api="unit-a"}"#, 4096.0),
        (r#"board_api_cache_entries{api="unit-a"}"#, 2.0),
        (r#"board_api_cache_evictions_total{api="unit-a"}"#, 3.0),
        (r#"board_api_pool_jobs{api="unit-a",state="busy"}"#, 1.0),
        (r#"board_api_cold_loads{api="unit-a",state="queued"}"#, 2.0),
        (
            r#"board_api_fleet_total{api="unit-a",result="rejected"}"#,
            1.0,
        ),
        (r#"board_api_fleet_breaker_open{api="unit-a"}"#, 0.0),
        (
            r#"board_api_mcp_requests_total{api="unit-a",method="tools/call",outcome="ok",tool="read_board"}"#,
            1.0,
        ),
        (
            r#"board_api_mcp_requests_total{api="unit-a",method="initialize",outcome="ok",tool=""}"#,
            1.0,
        ),
    ] {
        assert_eq!(value(&text, series), Some(want), "{series} in {text}");
    }
    // Process-wide, moved by other tests in this process too.
    for name in [
        "board_api_access_log_dropped_total",
        "board_api_upstream_challenges_total",
    ] {
        assert!(
            value(&text, name).is_some_and(|v| v >= 1.0),
            "{name} in {text}"
        );
    }
}

#[test]
fn gauges_of_one_name_add_up_and_a_dropped_instance_takes_its_share_back() {
    let bytes = r#"board_api_cache_bytes{api="unit-b"}"#;
    let first = Metrics::new("unit-b");
    let second = Metrics::new("unit-b");
    first.cache_size(1000, 1);
    second.cache_size(500, 1);
    assert_eq!(value(&exported(), bytes), Some(1500.0));
    first.cache_size(200, 1);
    assert_eq!(value(&exported(), bytes), Some(700.0));
    drop(first);
    assert_eq!(value(&exported(), bytes), Some(500.0));
    second.fleet_breaker(true);
    let other = Metrics::new("unit-c");
    other.cache_size(42, 1);
    let text = exported();
    assert_eq!(
        value(&text, r#"board_api_fleet_breaker_open{api="unit-b"}"#),
        Some(1.0)
    );
    assert_eq!(
        value(&text, r#"board_api_cache_bytes{api="unit-c"}"#),
        Some(42.0)
    );
    assert_eq!(value(&text, bytes), Some(500.0));
}
