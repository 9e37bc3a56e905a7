//! The series of changes as they happen (`board_api.live`): streams and
//! waits open, events sent, the polls of followed boards, and with the
//! fleet tier the leases this node holds, the fleet's announcements it
//! read, and the polls it made for itself because the fleet could not.

use super::{counter_vec, gauge_vec, Metrics};
use prometheus::{IntCounterVec, IntGaugeVec};
use std::sync::LazyLock;

/// `board_api_live_streams{api}`: event streams and long polls open now.
static LIVE_OPEN: LazyLock<IntGaugeVec> = LazyLock::new(|| {
    gauge_vec(
        "board_api_live_streams",
        "Event streams and long polls of /changes open now",
        &["api"],
    )
});

/// `board_api_live_events_total{api}`: events sent on streams (keep-alive
/// comments aside).
static LIVE_EVENTS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec(
        "board_api_live_events_total",
        "Events sent on /changes event streams",
        &["api"],
    )
});

/// `board_api_live_polls_total{api, outcome}`: fresh loads of boards
/// someone waits on, by outcome (`same`, `changed`, `gone`, `failed`).
static LIVE_POLLS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec(
        "board_api_live_polls_total",
        "Fresh loads of boards someone waits on, by outcome",
        &["api", "outcome"],
    )
});

/// `board_api_live_leases{api}`: followed boards this node polls for the
/// whole fleet now (their lease is its own).
static LIVE_LEASES: LazyLock<IntGaugeVec> = LazyLock::new(|| {
    gauge_vec(
        "board_api_live_leases",
        "Followed boards whose fleet lease this node holds: it polls them for every node",
        &["api"],
    )
});

/// `board_api_live_messages_total{api, result}`: the fleet's announcements
/// of new versions read from Redis pub/sub, `received` (verified) or
/// `ignored` (not sealed with the fleet key, too old, malformed).
static LIVE_MESSAGES: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec(
        "board_api_live_messages_total",
        "Announcements of new board versions read from the fleet tier's pub/sub, by result (received, ignored)",
        &["api", "result"],
    )
});

/// `board_api_live_local_polls_total{api, reason}`: with the fleet tier, a
/// poll this node made for itself: the tier did not answer
/// (`unavailable`), or it did not hold the version another node announced
/// (`behind`).
static LIVE_LOCAL: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec(
        "board_api_live_local_polls_total",
        "With the fleet tier, polls of a followed board this node made for itself, by reason (unavailable, behind)",
        &["api", "reason"],
    )
});

/// Every label value of these series, exported at 0 for `api`.
pub(super) fn at_start(api: &str) {
    LIVE_OPEN.with_label_values(&[api]);
    LIVE_EVENTS.with_label_values(&[api]);
    for outcome in ["same", "changed", "gone", "failed"] {
        LIVE_POLLS.with_label_values(&[api, outcome]);
    }
    LIVE_LEASES.with_label_values(&[api]);
    for result in ["received", "ignored"] {
        LIVE_MESSAGES.with_label_values(&[api, result]);
    }
    for reason in ["unavailable", "behind"] {
        LIVE_LOCAL.with_label_values(&[api, reason]);
    }
}

impl Metrics {
    /// A stream or long poll opened (`1`) or ended (`-1`).
    pub(crate) fn live_open(&self, delta: i64) {
        LIVE_OPEN.with_label_values(&[&self.0.api]).add(delta);
    }

    /// An event sent on a stream.
    pub(crate) fn live_event(&self) {
        LIVE_EVENTS.with_label_values(&[&self.0.api]).inc();
    }

    /// A fresh load for waiters, by outcome.
    pub(crate) fn live_poll(&self, outcome: &str) {
        LIVE_POLLS.with_label_values(&[&self.0.api, outcome]).inc();
    }

    /// A board's fleet lease taken (`1`) or lost or given back (`-1`).
    #[cfg_attr(not(feature = "fleet"), allow(dead_code))]
    pub(crate) fn live_lease(&self, delta: i64) {
        LIVE_LEASES.with_label_values(&[&self.0.api]).add(delta);
    }

    /// An announcement read from the fleet, `received` or `ignored`.
    #[cfg_attr(not(feature = "fleet"), allow(dead_code))]
    pub(crate) fn live_message(&self, result: &str) {
        LIVE_MESSAGES
            .with_label_values(&[&self.0.api, result])
            .inc();
    }

    /// A poll made locally although the fleet tier is configured.
    #[cfg_attr(not(feature = "fleet"), allow(dead_code))]
    pub(crate) fn live_local_poll(&self, reason: &str) {
        LIVE_LOCAL.with_label_values(&[&self.0.api, reason]).inc();
    }
}
