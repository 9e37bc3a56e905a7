//! Prometheus metrics, in the default registry that
//! `pingora-prometheus`'s exporter serves at `board_api.metrics.listen`.

use prometheus::{register_histogram, register_int_counter_vec, Histogram, IntCounterVec};
use std::sync::LazyLock;

/// `board_api_requests_total{endpoint, status}`: answers by endpoint and status.
static REQUESTS: LazyLock<Option<IntCounterVec>> = LazyLock::new(|| {
    register_int_counter_vec!(
        "board_api_requests_total",
        "Responses of the board API by endpoint and HTTP status",
        &["endpoint", "status"]
    )
    .ok()
});

/// `board_api_cache_total{result}`: document cache hits and misses.
static CACHE: LazyLock<Option<IntCounterVec>> = LazyLock::new(|| {
    register_int_counter_vec!(
        "board_api_cache_total",
        "Board document cache lookups by result (hit, miss)",
        &["result"]
    )
    .ok()
});

/// `board_api_upstream_seconds`: time to fetch and normalize a board on a miss.
static UPSTREAM: LazyLock<Option<Histogram>> = LazyLock::new(|| {
    register_histogram!(
        "board_api_upstream_seconds",
        "Time to fetch and normalize one board from the provider on a cache miss",
        vec![0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 30.0]
    )
    .ok()
});

pub fn request(endpoint: &str, status: u16) {
    if let Some(m) = REQUESTS.as_ref() {
        m.with_label_values(&[endpoint, itoa(status)]).inc();
    }
}

pub fn cache(hit: bool) {
    if let Some(m) = CACHE.as_ref() {
        m.with_label_values(&[if hit { "hit" } else { "miss" }])
            .inc();
    }
}

pub fn upstream_seconds(seconds: f64) {
    if let Some(m) = UPSTREAM.as_ref() {
        m.observe(seconds);
    }
}

/// Status labels without allocating for the ones the API answers with.
fn itoa(status: u16) -> &'static str {
    match status {
        200 => "200",
        204 => "204",
        304 => "304",
        400 => "400",
        403 => "403",
        404 => "404",
        405 => "405",
        429 => "429",
        500 => "500",
        502 => "502",
        504 => "504",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_are_registered_and_counted() {
        request("search", 200);
        request("search", 200);
        cache(true);
        upstream_seconds(0.2);
        let text = prometheus::TextEncoder::new()
            .encode_to_string(&prometheus::gather())
            .expect("encodes");
        assert!(
            text.contains("board_api_requests_total{endpoint=\"search\",status=\"200\"} 2"),
            "{text}"
        );
        assert!(text.contains("board_api_cache_total{result=\"hit\"} 1"));
        assert!(text.contains("board_api_upstream_seconds_count 1"));
    }
}
