//! Prometheus metrics, in the default registry that
//! `pingora-prometheus`'s exporter serves at `board_api.metrics.listen`.

use prometheus::{
    register_histogram, register_int_counter, register_int_counter_vec, register_int_gauge,
    register_int_gauge_vec, Histogram, IntCounter, IntCounterVec, IntGauge, IntGaugeVec,
};
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

/// `board_api_pool_jobs{state}`: work-pool jobs `queued` and threads `busy`.
static POOL: LazyLock<Option<IntGaugeVec>> = LazyLock::new(|| {
    register_int_gauge_vec!(
        "board_api_pool_jobs",
        "Work pool: jobs waiting for a thread (queued) and threads running one (busy)",
        &["state"]
    )
    .ok()
});

/// `board_api_cold_loads{state}`: cold loads `running` and `queued`.
static COLD: LazyLock<Option<IntGaugeVec>> = LazyLock::new(|| {
    register_int_gauge_vec!(
        "board_api_cold_loads",
        "Cold board loads holding a slot (running) and waiting for one (queued)",
        &["state"]
    )
    .ok()
});

/// `board_api_overloaded_total`: every request answered `503 OVERLOADED`.
static OVERLOADED: LazyLock<Option<IntCounter>> = LazyLock::new(|| {
    register_int_counter!(
        "board_api_overloaded_total",
        "Requests answered 503 OVERLOADED: the cold-load queue full, a wait in it past the deadline, or the fleet's upstream budget spent"
    )
    .ok()
});

/// `board_api_cache_bytes` / `board_api_cache_entries`: what the budget holds.
static CACHE_BYTES: LazyLock<Option<IntGauge>> = LazyLock::new(|| {
    register_int_gauge!(
        "board_api_cache_bytes",
        "Bytes accounted in the cache budget (documents, renders, compressed variants)"
    )
    .ok()
});

static CACHE_ENTRIES: LazyLock<Option<IntGauge>> = LazyLock::new(|| {
    register_int_gauge!("board_api_cache_entries", "Entries in the cache budget").ok()
});

/// `board_api_cache_evictions_total`: entries pushed out to stay in budget
/// (or refused admission).
static EVICTIONS: LazyLock<Option<IntCounter>> = LazyLock::new(|| {
    register_int_counter!(
        "board_api_cache_evictions_total",
        "Cache entries evicted or refused to keep the byte budget"
    )
    .ok()
});

/// `board_api_upstream_challenges_total`: answers of the provider's bot
/// wall (a challenge or a CAPTCHA) instead of the provider's.
static CHALLENGES: LazyLock<Option<IntCounter>> = LazyLock::new(|| {
    register_int_counter!(
        "board_api_upstream_challenges_total",
        "Provider requests answered by its bot wall (x-amzn-waf-action challenge or captcha)"
    )
    .ok()
});

pub fn upstream_challenge() {
    if let Some(m) = CHALLENGES.as_ref() {
        m.inc();
    }
}

fn gauge(vec: &LazyLock<Option<IntGaugeVec>>, label: &str, value: usize) {
    if let Some(m) = vec.as_ref() {
        m.with_label_values(&[label])
            .set(i64::try_from(value).unwrap_or(i64::MAX));
    }
}

pub fn pool_queued(n: usize) {
    gauge(&POOL, "queued", n);
}

pub fn pool_busy(n: usize) {
    gauge(&POOL, "busy", n);
}

pub fn cold_loads(n: usize) {
    gauge(&COLD, "running", n);
}

pub fn cold_queued(n: usize) {
    gauge(&COLD, "queued", n);
}

pub fn overloaded() {
    if let Some(m) = OVERLOADED.as_ref() {
        m.inc();
    }
}

pub fn cache_size(bytes: usize, entries: usize) {
    if let Some(m) = CACHE_BYTES.as_ref() {
        m.set(i64::try_from(bytes).unwrap_or(i64::MAX));
    }
    if let Some(m) = CACHE_ENTRIES.as_ref() {
        m.set(i64::try_from(entries).unwrap_or(i64::MAX));
    }
}

pub fn evictions(n: usize) {
    if let Some(m) = EVICTIONS.as_ref() {
        m.inc_by(n as u64);
    }
}

/// The counters every cached read touches, resolved once:
/// `with_label_values` hashes its labels and takes a lock on each call.
/// `[endpoint: search, detail][status: 200, 304]`.
static HOT_REQUESTS: LazyLock<Option<[[IntCounter; 2]; 3]>> = LazyLock::new(|| {
    let m = REQUESTS.as_ref()?;
    let of = |endpoint: &str| [200, 304].map(|s| m.with_label_values(&[endpoint, itoa(s)]));
    Some([of("search"), of("detail"), of("mcp")])
});

/// `[hit, miss]`.
static CACHE_OUTCOMES: LazyLock<Option<[IntCounter; 2]>> = LazyLock::new(|| {
    let m = CACHE.as_ref()?;
    Some(["hit", "miss"].map(|label| m.with_label_values(&[label])))
});

pub fn request(endpoint: &str, status: u16) {
    let e = match endpoint {
        "search" => Some(0),
        "detail" => Some(1),
        "mcp" => Some(2),
        _ => None,
    };
    let s = match status {
        200 => Some(0),
        304 => Some(1),
        _ => None,
    };
    if let (Some(hot), Some(e), Some(s)) = (HOT_REQUESTS.as_ref(), e, s) {
        hot[e][s].inc();
    } else if let Some(m) = REQUESTS.as_ref() {
        m.with_label_values(&[endpoint, itoa(status)]).inc();
    }
}

pub fn cache(hit: bool) {
    if let Some(outcomes) = CACHE_OUTCOMES.as_ref() {
        outcomes[usize::from(!hit)].inc();
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
        202 => "202",
        204 => "204",
        304 => "304",
        400 => "400",
        403 => "403",
        404 => "404",
        405 => "405",
        413 => "413",
        429 => "429",
        500 => "500",
        502 => "502",
        503 => "503",
        504 => "504",
        _ => "other",
    }
}

/// `board_api_fleet_total{result}`: fleet tier lookups by result (`hit`,
/// `miss`, `error`, `skipped` while the breaker is open, `rejected` for a
/// stored value that failed its checks).
static FLEET: LazyLock<Option<IntCounterVec>> = LazyLock::new(|| {
    register_int_counter_vec!(
        "board_api_fleet_total",
        "Fleet tier calls by result (hit, miss, error, skipped, rejected)",
        &["result"]
    )
    .ok()
});

/// `board_api_fleet_lock_waits_total`: loads that waited for another node's.
static FLEET_WAITS: LazyLock<Option<IntCounter>> = LazyLock::new(|| {
    register_int_counter!(
        "board_api_fleet_lock_waits_total",
        "Board loads that waited for another node holding the fleet lock"
    )
    .ok()
});

/// `board_api_fleet_breaker_open`: 1 while the breaker skips the tier.
static FLEET_BREAKER: LazyLock<Option<IntGauge>> = LazyLock::new(|| {
    register_int_gauge!(
        "board_api_fleet_breaker_open",
        "1 while the fleet tier is skipped after repeated errors, else 0"
    )
    .ok()
});

/// `board_api_fleet_stored_bytes_total`: compressed bytes written to the tier.
static FLEET_STORED: LazyLock<Option<IntCounter>> = LazyLock::new(|| {
    register_int_counter!(
        "board_api_fleet_stored_bytes_total",
        "Bytes of compressed documents written to the fleet tier"
    )
    .ok()
});

pub fn fleet(result: &str) {
    if let Some(c) = &*FLEET {
        c.with_label_values(&[result]).inc();
    }
}

pub fn fleet_lock_wait() {
    if let Some(c) = &*FLEET_WAITS {
        c.inc();
    }
}

pub fn fleet_breaker(open: bool) {
    if let Some(g) = &*FLEET_BREAKER {
        g.set(i64::from(open));
    }
}

pub fn fleet_stored(bytes: usize) {
    if let Some(c) = &*FLEET_STORED {
        c.inc_by(bytes as u64);
    }
}

/// `board_api_mcp_requests_total{method, tool, outcome}`: MCP requests by
/// JSON-RPC method (those served, `notification`, `other`), tool (empty
/// unless `tools/call`) and outcome (`ok`, `tool_error`, `error`,
/// `accepted` for a notification).
static MCP: LazyLock<Option<IntCounterVec>> = LazyLock::new(|| {
    register_int_counter_vec!(
        "board_api_mcp_requests_total",
        "MCP requests by JSON-RPC method, tool and outcome",
        &["method", "tool", "outcome"]
    )
    .ok()
});

/// The counters of tool calls, `[read_board, search_board]` by `[ok,
/// tool_error]`, looked up once: most MCP requests are tool calls.
static MCP_CALLS: LazyLock<Option<[[IntCounter; 2]; 2]>> = LazyLock::new(|| {
    let m = MCP.as_ref()?;
    let of =
        |tool: &str| ["ok", "tool_error"].map(|o| m.with_label_values(&["tools/call", tool, o]));
    Some([of("read_board"), of("search_board")])
});

pub fn mcp(method: &str, tool: &str, outcome: &str) {
    let call = match (method, tool, outcome) {
        ("tools/call", "read_board", "ok") => Some((0, 0)),
        ("tools/call", "read_board", "tool_error") => Some((0, 1)),
        ("tools/call", "search_board", "ok") => Some((1, 0)),
        ("tools/call", "search_board", "tool_error") => Some((1, 1)),
        _ => None,
    };
    if let (Some(calls), Some((t, o))) = (MCP_CALLS.as_ref(), call) {
        calls[t][o].inc();
    } else if let Some(c) = &*MCP {
        c.with_label_values(&[method, tool, outcome]).inc();
    }
}

/// `board_api_access_log_dropped_total`: access log lines dropped because
/// the buffer in front of the log's writer was full.
static ACCESS_DROPPED: LazyLock<Option<IntCounter>> = LazyLock::new(|| {
    register_int_counter!(
        "board_api_access_log_dropped_total",
        "Access log lines dropped because the log's buffer was full"
    )
    .ok()
});

pub fn access_log_dropped() {
    if let Some(c) = &*ACCESS_DROPPED {
        c.inc();
    }
}

/// Registers every metric with its known label values at 0, so a dashboard
/// sees 0 from the start rather than "no data" until the first event.
/// Called when the API is built; calling it again changes nothing.
pub fn register() {
    for endpoint in ["search", "detail", "board"] {
        for status in [200, 304, 400, 403, 404, 429, 500, 502, 503, 504] {
            if let Some(m) = REQUESTS.as_ref() {
                m.with_label_values(&[endpoint, itoa(status)]);
            }
        }
    }
    LazyLock::force(&HOT_REQUESTS);
    LazyLock::force(&CACHE_OUTCOMES);
    LazyLock::force(&UPSTREAM);
    for (vec, labels) in [(&POOL, ["queued", "busy"]), (&COLD, ["running", "queued"])] {
        for label in labels {
            if let Some(m) = vec.as_ref() {
                m.with_label_values(&[label]);
            }
        }
    }
    LazyLock::force(&OVERLOADED);
    LazyLock::force(&CHALLENGES);
    LazyLock::force(&CACHE_BYTES);
    LazyLock::force(&CACHE_ENTRIES);
    LazyLock::force(&EVICTIONS);
    if let Some(m) = FLEET.as_ref() {
        for result in ["hit", "miss", "error", "skipped", "rejected"] {
            m.with_label_values(&[result]);
        }
    }
    LazyLock::force(&FLEET_WAITS);
    LazyLock::force(&FLEET_BREAKER);
    LazyLock::force(&FLEET_STORED);
    LazyLock::force(&ACCESS_DROPPED);
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
        overloaded();
        cache_size(4096, 2);
        evictions(3);
        pool_busy(1);
        cold_queued(2);
        access_log_dropped();
        mcp("tools/call", "read_board", "ok");
        let text = prometheus::TextEncoder::new()
            .encode_to_string(&prometheus::gather())
            .expect("encodes");
        assert!(
            text.contains("board_api_requests_total{endpoint=\"search\",status=\"200\"} 2"),
            "{text}"
        );
        assert!(text.contains("board_api_cache_total{result=\"hit\"} 1"));
        assert!(text.contains("board_api_upstream_seconds_count 1"));
        // Other tests in this process move these too: check they are exported.
        for name in [
            "board_api_overloaded_total ",
            "board_api_cache_bytes ",
            "board_api_cache_entries ",
            "board_api_cache_evictions_total ",
            "board_api_pool_jobs{state=\"busy\"} ",
            "board_api_cold_loads{state=\"queued\"} ",
            "board_api_access_log_dropped_total ",
            "board_api_mcp_requests_total{method=\"tools/call\",outcome=\"ok\",tool=\"read_board\"} ",
        ] {
            assert!(text.contains(name), "{name} in {text}");
        }
    }
}
