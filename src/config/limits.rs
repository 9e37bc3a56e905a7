//! `board_api.limits`: the work pool, cold-load admission and the cap on
//! requests in flight to the provider.

use super::{within, ConfigError};
use crate::governance::{Limits, WorkPool};
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LimitsConf {
    /// Threads for CPU-heavy steps (default half the cores, at least 1).
    pub work_threads: Option<usize>,
    /// Jobs waiting for a work thread (default 256).
    pub work_queue: Option<usize>,
    /// Cold loads (fetch + build) at once (default `work_threads`).
    pub max_cold_loads: Option<usize>,
    /// Cold loads waiting for a slot; past it `503 OVERLOADED` (default 64).
    pub cold_queue: Option<usize>,
    /// Requests in flight to the provider at once (default 32).
    pub max_upstream_requests: Option<usize>,
}

/// `board_api.limits`, with defaults. The bounds keep every value inside
/// what the pool, the semaphores and the OS accept, so nothing that passes
/// here can fail or panic later.
pub(crate) fn limits_settings(conf: Option<LimitsConf>) -> Result<Limits, ConfigError> {
    let d = Limits::default();
    let Some(l) = conf else {
        return Ok(d);
    };
    let work_threads = within(
        "board_api.limits.work_threads",
        l.work_threads,
        WorkPool::default_threads(),
        1,
        256,
    )?;
    Ok(Limits {
        work_threads,
        work_queue: within(
            "board_api.limits.work_queue",
            l.work_queue,
            d.work_queue,
            1,
            1_000_000,
        )?,
        max_cold_loads: within(
            "board_api.limits.max_cold_loads",
            l.max_cold_loads,
            work_threads,
            1,
            10_000,
        )?,
        cold_queue: within(
            "board_api.limits.cold_queue",
            l.cold_queue,
            d.cold_queue,
            0,
            1_000_000,
        )?,
        max_upstream_requests: within(
            "board_api.limits.max_upstream_requests",
            l.max_upstream_requests,
            d.max_upstream_requests,
            1,
            10_000,
        )?,
    })
}
