//! Prometheus metrics, in the default registry that
//! `pingora-prometheus`'s exporter serves at `board_api.metrics.listen`.
//!
//! Every series an API instance moves carries `api="<name>"`
//! (`board_api.name`, by default the prefix), so two instances in one
//! process (two plugin configs of a gateway, or the old and the new API
//! during a reload) are told apart. Each instance holds a [`Metrics`]: its
//! series resolved once, so a request's counters cost no label lookup.
//! Gauges are [`Level`]s: an instance adds what it holds and takes it back
//! when it is dropped, so two instances of one name add up rather than
//! overwrite each other, and a replaced API leaves nothing behind.
//!
//! Two counters stay process-wide, without `api`: the provider's bot-wall
//! answers (counted where the provider's answer is read, which is shared
//! code with no instance at hand) and access-log lines dropped (one log per
//! process).

use prometheus::{
    Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, LazyLock};

mod live;

/// Registers `metric` in the default registry. When a host registered the
/// same name first, ours still counts but is not exported: the host's
/// exporter shows its own, and nothing here fails.
fn registered<M: prometheus::core::Collector + Clone + 'static>(metric: M) -> M {
    if prometheus::register(Box::new(metric.clone())).is_err() {
        log::debug!("a metric of this name is registered already; ours is not exported");
    }
    metric
}

/// The names and label names below are constants checked by this module's
/// test; `new` only fails for an invalid one.
fn counter_vec(name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    registered(IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric name"))
}

fn gauge_vec(name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
    registered(IntGaugeVec::new(Opts::new(name, help), labels).expect("valid metric name"))
}

/// `board_api_requests_total{api, endpoint, status}`.
static REQUESTS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec(
        "board_api_requests_total",
        "Responses of the board API by endpoint and HTTP status",
        &["api", "endpoint", "status"],
    )
});

/// `board_api_cache_total{api, result}`: document cache hits and misses.
static CACHE: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec(
        "board_api_cache_total",
        "Board document cache lookups by result (hit, miss)",
        &["api", "result"],
    )
});

/// `board_api_upstream_seconds{api}`: time to fetch and normalize a board
/// on a miss.
static UPSTREAM: LazyLock<HistogramVec> = LazyLock::new(|| {
    let opts = HistogramOpts::new(
        "board_api_upstream_seconds",
        "Time to fetch and normalize one board from the provider on a cache miss",
    )
    .buckets(vec![
        0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 30.0,
    ]);
    registered(HistogramVec::new(opts, &["api"]).expect("valid metric name"))
});

/// `board_api_pool_jobs{api, state}`: work-pool jobs `queued` and threads
/// `busy`.
static POOL: LazyLock<IntGaugeVec> = LazyLock::new(|| {
    gauge_vec(
        "board_api_pool_jobs",
        "Work pool: jobs waiting for a thread (queued) and threads running one (busy)",
        &["api", "state"],
    )
});

/// `board_api_cold_loads{api, state}`: cold loads `running` and `queued`.
static COLD: LazyLock<IntGaugeVec> = LazyLock::new(|| {
    gauge_vec(
        "board_api_cold_loads",
        "Cold board loads holding a slot (running) and waiting for one (queued)",
        &["api", "state"],
    )
});

/// `board_api_overloaded_total{api}`: every request answered `503 OVERLOADED`.
static OVERLOADED: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec(
        "board_api_overloaded_total",
        "Requests answered 503 OVERLOADED: the cold-load queue full, a wait in it past the deadline, or the fleet's upstream budget spent",
        &["api"],
    )
});

/// `board_api_cache_bytes{api}` / `board_api_cache_entries{api}`: what the
/// budget holds.
static CACHE_BYTES: LazyLock<IntGaugeVec> = LazyLock::new(|| {
    gauge_vec(
        "board_api_cache_bytes",
        "Bytes accounted in the cache budget (documents, renders, compressed variants)",
        &["api"],
    )
});

static CACHE_ENTRIES: LazyLock<IntGaugeVec> = LazyLock::new(|| {
    gauge_vec(
        "board_api_cache_entries",
        "Entries in the cache budget",
        &["api"],
    )
});

/// `board_api_cache_evictions_total{api}`: entries pushed out to stay in
/// budget (or refused admission).
static EVICTIONS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec(
        "board_api_cache_evictions_total",
        "Cache entries evicted or refused to keep the byte budget",
        &["api"],
    )
});

/// `board_api_fleet_total{api, result}`: fleet tier calls by result
/// (`hit`, `miss`, `error`, `skipped` while the breaker is open, `rejected`
/// for a stored value that failed its checks).
#[cfg(feature = "fleet")]
static FLEET: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec(
        "board_api_fleet_total",
        "Fleet tier calls by result (hit, miss, error, skipped, rejected)",
        &["api", "result"],
    )
});

/// `board_api_fleet_lock_waits_total{api}`: loads that waited for another
/// node's.
#[cfg(feature = "fleet")]
static FLEET_WAITS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec(
        "board_api_fleet_lock_waits_total",
        "Board loads that waited for another node holding the fleet lock",
        &["api"],
    )
});

/// `board_api_fleet_breaker_open{api}`: 1 while the breaker skips the tier.
#[cfg(feature = "fleet")]
static FLEET_BREAKER: LazyLock<IntGaugeVec> = LazyLock::new(|| {
    gauge_vec(
        "board_api_fleet_breaker_open",
        "1 while the fleet tier is skipped after repeated errors, else 0",
        &["api"],
    )
});

/// `board_api_fleet_stored_bytes_total{api}`: compressed bytes written to
/// the tier.
#[cfg(feature = "fleet")]
static FLEET_STORED: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec(
        "board_api_fleet_stored_bytes_total",
        "Bytes of compressed documents written to the fleet tier",
        &["api"],
    )
});

/// `board_api_mcp_requests_total{api, method, tool, outcome}`: MCP requests
/// by JSON-RPC method (those served, `notification`, `other`), tool (empty
/// unless `tools/call`) and outcome (`ok`, `tool_error`, `error`,
/// `accepted` for a notification).
static MCP: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec(
        "board_api_mcp_requests_total",
        "MCP requests by JSON-RPC method, tool and outcome",
        &["api", "method", "tool", "outcome"],
    )
});

/// `board_api_upstream_challenges_total`: answers of the provider's bot
/// wall (a challenge or a CAPTCHA) instead of the provider's. Process-wide.
static CHALLENGES: LazyLock<IntCounter> = LazyLock::new(|| {
    registered(
        IntCounter::new(
            "board_api_upstream_challenges_total",
            "Provider requests answered by its bot wall (x-amzn-waf-action challenge or captcha)",
        )
        .expect("valid metric name"),
    )
});

/// `board_api_access_log_dropped_total`: access log lines dropped because
/// the buffer in front of the log's writer was full. Process-wide.
static ACCESS_DROPPED: LazyLock<IntCounter> = LazyLock::new(|| {
    registered(
        IntCounter::new(
            "board_api_access_log_dropped_total",
            "Access log lines dropped because the log's buffer was full",
        )
        .expect("valid metric name"),
    )
});

/// `board_api_client_log_lines_total{kind}`: log records a client can cause
/// (a bad `Accept-Encoding`, ...), written at most once a minute each.
/// Process-wide.
static CLIENT_LOG_LINES: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec(
        "board_api_client_log_lines_total",
        "Log records a client can cause, by kind; at most one a minute of each is written",
        &["kind"],
    )
});

/// `board_api_otlp_spans_total{outcome}`: finished spans of the binary's
/// export (`board_api.server.otlp`, the binary's or pingap's plugin's) by what became of them: `exported`,
/// `dropped` (the queue in front of the exporter was full) or `failed` (the
/// collector refused the batch or could not be reached). Process-wide.
static OTLP_SPANS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec(
        "board_api_otlp_spans_total",
        "Spans of the OTLP export by outcome (exported, dropped when the queue was full, failed)",
        &["outcome"],
    )
});

/// The outcomes of [`otlp_spans`].
pub const OTLP_OUTCOMES: [&str; 3] = ["exported", "dropped", "failed"];

/// Counts `n` spans of the export as `outcome` (one of [`OTLP_OUTCOMES`]);
/// the export is the binary's or pingap's plugin's (the `otlp` feature).
#[cfg(feature = "otlp")]
pub fn otlp_spans(outcome: &str, n: usize) {
    OTLP_SPANS
        .with_label_values(&[outcome])
        .inc_by(u64::try_from(n).unwrap_or(u64::MAX));
}

pub fn client_log_line(kind: &str) {
    CLIENT_LOG_LINES.with_label_values(&[kind]).inc();
}

pub fn upstream_challenge() {
    CHALLENGES.inc();
}

pub fn access_log_dropped() {
    ACCESS_DROPPED.inc();
}

/// One instance's share of a gauge. [`Level::set`] moves the exported
/// gauge by the difference from what this instance last said, and dropping
/// the level takes its share back: instances of one name add up.
#[derive(Debug)]
pub(crate) struct Level {
    gauge: IntGauge,
    mine: AtomicI64,
}

impl Level {
    fn new(gauge: IntGauge) -> Self {
        Level {
            gauge,
            mine: AtomicI64::new(0),
        }
    }

    pub(crate) fn set(&self, value: usize) {
        let value = i64::try_from(value).unwrap_or(i64::MAX);
        let before = self.mine.swap(value, Ordering::Relaxed);
        self.gauge.add(value.wrapping_sub(before));
    }

    pub(crate) fn add(&self, delta: i64) {
        self.mine.fetch_add(delta, Ordering::Relaxed);
        self.gauge.add(delta);
    }
}

impl Drop for Level {
    fn drop(&mut self) {
        self.gauge.sub(*self.mine.get_mut());
    }
}

/// The endpoints whose `200` and `304` counters are resolved up front.
const HOT_ENDPOINTS: [&str; 3] = ["search", "detail", "mcp"];

/// The MCP tools whose `ok` and `tool_error` counters are resolved up front.
const HOT_TOOLS: [&str; 3] = ["read_board", "search_board", "board_changes"];

#[cfg(feature = "fleet")]
const FLEET_RESULTS: [&str; 5] = ["hit", "miss", "error", "skipped", "rejected"];

/// One API instance's series. Cloning is cheap (one `Arc`); every part of
/// the instance that reports holds a clone.
#[derive(Clone, Debug)]
pub(crate) struct Metrics(Arc<Series>);

/// The fleet tier's series, in builds that have the tier.
#[cfg(feature = "fleet")]
#[derive(Debug)]
struct Fleet {
    /// In [`FLEET_RESULTS`]' order.
    results: [IntCounter; 5],
    waits: IntCounter,
    breaker: Level,
    stored: IntCounter,
}

#[derive(Debug)]
struct Series {
    api: Box<str>,
    /// `[endpoint: search, detail, mcp][status: 200, 304]`.
    hot_requests: [[IntCounter; 2]; 3],
    /// `[hit, miss]`.
    cache: [IntCounter; 2],
    upstream: Histogram,
    pool_queued: Level,
    pool_busy: Level,
    cold_running: Level,
    cold_queued: Level,
    overloaded: IntCounter,
    cache_bytes: Level,
    cache_entries: Level,
    evictions: IntCounter,
    #[cfg(feature = "fleet")]
    fleet: Fleet,
    /// `[tool: HOT_TOOLS][ok, tool_error]`.
    mcp_calls: [[IntCounter; 2]; 3],
}

impl Metrics {
    /// The series of the API named `api`, every known label value exported
    /// at 0 from now on, so a dashboard sees 0 rather than "no data" until
    /// the first event.
    pub(crate) fn new(api: &str) -> Self {
        for endpoint in ["search", "detail", "board", "changes", "canvas"] {
            for status in [200, 304, 400, 403, 404, 429, 500, 502, 503, 504] {
                REQUESTS.with_label_values(&[api, endpoint, status_label(status)]);
            }
        }
        LazyLock::force(&CHALLENGES);
        LazyLock::force(&ACCESS_DROPPED);
        for outcome in OTLP_OUTCOMES {
            OTLP_SPANS.with_label_values(&[outcome]);
        }
        CLIENT_LOG_LINES.with_label_values(&["accept_encoding"]);
        live::at_start(api);
        let level = |vec: &IntGaugeVec, labels: &[&str]| Level::new(vec.with_label_values(labels));
        let mcp = |tool: &str| {
            ["ok", "tool_error"].map(|o| MCP.with_label_values(&[api, "tools/call", tool, o]))
        };
        Metrics(Arc::new(Series {
            api: api.into(),
            hot_requests: HOT_ENDPOINTS.map(|endpoint| {
                [200, 304].map(|s| REQUESTS.with_label_values(&[api, endpoint, status_label(s)]))
            }),
            cache: ["hit", "miss"].map(|r| CACHE.with_label_values(&[api, r])),
            upstream: UPSTREAM.with_label_values(&[api]),
            pool_queued: level(&POOL, &[api, "queued"]),
            pool_busy: level(&POOL, &[api, "busy"]),
            cold_running: level(&COLD, &[api, "running"]),
            cold_queued: level(&COLD, &[api, "queued"]),
            overloaded: OVERLOADED.with_label_values(&[api]),
            cache_bytes: level(&CACHE_BYTES, &[api]),
            cache_entries: level(&CACHE_ENTRIES, &[api]),
            evictions: EVICTIONS.with_label_values(&[api]),
            #[cfg(feature = "fleet")]
            fleet: Fleet {
                results: FLEET_RESULTS.map(|r| FLEET.with_label_values(&[api, r])),
                waits: FLEET_WAITS.with_label_values(&[api]),
                breaker: level(&FLEET_BREAKER, &[api]),
                stored: FLEET_STORED.with_label_values(&[api]),
            },
            mcp_calls: HOT_TOOLS.map(mcp),
        }))
    }

    pub(crate) fn request(&self, endpoint: &str, status: u16) {
        let e = HOT_ENDPOINTS.iter().position(|hot| *hot == endpoint);
        let s = match status {
            200 => Some(0),
            304 => Some(1),
            _ => None,
        };
        match (e, s) {
            (Some(e), Some(s)) => self.0.hot_requests[e][s].inc(),
            _ => REQUESTS
                .with_label_values(&[&self.0.api, endpoint, status_label(status)])
                .inc(),
        }
    }

    pub(crate) fn cache(&self, hit: bool) {
        self.0.cache[usize::from(!hit)].inc();
    }

    pub(crate) fn upstream_seconds(&self, seconds: f64) {
        self.0.upstream.observe(seconds);
    }

    pub(crate) fn pool_queued(&self) -> &Level {
        &self.0.pool_queued
    }

    pub(crate) fn pool_busy(&self) -> &Level {
        &self.0.pool_busy
    }

    pub(crate) fn cold_running(&self) -> &Level {
        &self.0.cold_running
    }

    pub(crate) fn cold_queued(&self) -> &Level {
        &self.0.cold_queued
    }

    pub(crate) fn overloaded(&self) {
        self.0.overloaded.inc();
    }

    pub(crate) fn cache_size(&self, bytes: usize, entries: usize) {
        self.0.cache_bytes.set(bytes);
        self.0.cache_entries.set(entries);
    }

    pub(crate) fn evictions(&self, n: usize) {
        self.0.evictions.inc_by(n as u64);
    }

    /// `result`: one of `hit`, `miss`, `error`, `skipped`, `rejected`.
    #[cfg(feature = "fleet")]
    pub(crate) fn fleet(&self, result: &str) {
        match FLEET_RESULTS.iter().position(|r| *r == result) {
            Some(i) => self.0.fleet.results[i].inc(),
            None => FLEET.with_label_values(&[&self.0.api, result]).inc(),
        }
    }

    #[cfg(feature = "fleet")]
    pub(crate) fn fleet_lock_wait(&self) {
        self.0.fleet.waits.inc();
    }

    #[cfg(feature = "fleet")]
    pub(crate) fn fleet_breaker(&self, open: bool) {
        self.0.fleet.breaker.set(usize::from(open));
    }

    #[cfg(feature = "fleet")]
    pub(crate) fn fleet_stored(&self, bytes: usize) {
        self.0.fleet.stored.inc_by(bytes as u64);
    }

    pub(crate) fn mcp(&self, method: &str, tool: &str, outcome: &str) {
        let hot = match (method, outcome) {
            ("tools/call", "ok") => Some(0),
            ("tools/call", "tool_error") => Some(1),
            _ => None,
        };
        let t = HOT_TOOLS.iter().position(|hot| *hot == tool);
        match (t, hot) {
            (Some(t), Some(o)) => self.0.mcp_calls[t][o].inc(),
            _ => MCP
                .with_label_values(&[&self.0.api, method, tool, outcome])
                .inc(),
        }
    }
}

/// Status labels without allocating for the ones the API answers with.
fn status_label(status: u16) -> &'static str {
    match status {
        200 => "200",
        202 => "202",
        204 => "204",
        304 => "304",
        400 => "400",
        403 => "403",
        404 => "404",
        405 => "405",
        410 => "410",
        413 => "413",
        429 => "429",
        500 => "500",
        502 => "502",
        503 => "503",
        504 => "504",
        _ => "other",
    }
}

#[cfg(test)]
mod tests;
