//! The watches' Prometheus metrics, in the default registry the operator
//! listener serves. Labels are job ids and outcomes only: never a link, a
//! URL or a secret.

use prometheus::{register_int_counter_vec, register_int_gauge, IntCounterVec, IntGauge};
use std::sync::LazyLock;

/// `board_api_watch_runs_total{job, outcome}`: `unchanged`, `changed`,
/// `first` (the version recorded), `failed` (the load or the store).
static RUNS: LazyLock<Option<IntCounterVec>> = LazyLock::new(|| {
    register_int_counter_vec!(
        "board_api_watch_runs_total",
        "Watch runs by job and outcome (first, unchanged, changed, failed)",
        &["job", "outcome"]
    )
    .ok()
});

/// `board_api_watch_deliveries_total{outcome}`: `delivered`, `retried`,
/// `failed` (given up), `dropped` (the outbox full), `expired` (of a job
/// no node ran for `MAX_DELIVERY_AGE`).
static DELIVERIES: LazyLock<Option<IntCounterVec>> = LazyLock::new(|| {
    register_int_counter_vec!(
        "board_api_watch_deliveries_total",
        "Webhook delivery attempts' outcomes (delivered, retried, failed, dropped, expired)",
        &["outcome"]
    )
    .ok()
});

/// `board_api_watch_pending_deliveries`: deliveries not yet made.
static PENDING: LazyLock<Option<IntGauge>> = LazyLock::new(|| {
    register_int_gauge!(
        "board_api_watch_pending_deliveries",
        "Webhook deliveries queued and not yet delivered or given up"
    )
    .ok()
});

/// Registers every series of `jobs` at zero.
pub fn register(jobs: &[String]) {
    if let Some(m) = RUNS.as_ref() {
        for job in jobs {
            for outcome in ["first", "unchanged", "changed", "failed"] {
                m.with_label_values(&[job.as_str(), outcome]);
            }
        }
    }
    if let Some(m) = DELIVERIES.as_ref() {
        for outcome in ["delivered", "retried", "failed", "dropped", "expired"] {
            m.with_label_values(&[outcome]);
        }
    }
    LazyLock::force(&PENDING);
}

pub fn run(job: &str, outcome: &str) {
    if let Some(m) = RUNS.as_ref() {
        m.with_label_values(&[job, outcome]).inc();
    }
}

pub fn delivery(outcome: &str) {
    if let Some(m) = DELIVERIES.as_ref() {
        m.with_label_values(&[outcome]).inc();
    }
}

pub fn pending(n: usize) {
    if let Some(m) = PENDING.as_ref() {
        m.set(i64::try_from(n).unwrap_or(i64::MAX));
    }
}
