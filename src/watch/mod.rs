//! Watches (`board_api.watch.jobs`): each job loads one board on a schedule
//! through the same path as `/api/detail`, and when the board's version
//! differs from the one the job saw last, queues one webhook delivery of
//! what changed (the `/changes` comparison), signed as the Standard Webhooks
//! specification says, stored before its first attempt and retried with
//! back-off until delivered or given up.
//!
//! - [`Watches`] holds the jobs, the [`outbox`] and the sender; the
//!   standalone binary runs [`Watches::run`] as a background service and
//!   serves [`Watches::status`] and [`Watches::trigger`] on its operator
//!   listener (`GET /watch`, `POST /watch/<id>/run`).
//! - [`run`]: one run of a job; [`deliver`]: the delivery loop;
//!   [`http`]: one attempt over Pingora's client; [`sign`]: the signature.
//! - A fleet (`board_api.changes.store: redis`) shares the jobs' state and
//!   the deliveries in Redis; leases make each run and each attempt one
//!   node's.
//!
//! No share link, permission id, webhook URL or secret reaches a log line,
//! a metric label, `/watch` or a payload.

pub mod deliver;
pub mod http;
pub mod metrics;
pub mod outbox;
pub mod run;
pub mod sign;

use crate::api::share_link::{self, ShareLink};
use crate::api::BoardApi;
use crate::config::{ApiSettings, ConfigError, JobSettings};
use crate::store::versions::StoreKind;
use outbox::Outbox;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

/// One configured job and what this node knows of it.
pub struct Job {
    pub settings: JobSettings,
    link: ShareLink,
    run_now: Notify,
    status: Mutex<Status>,
}

/// What `/watch` shows of a job.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub id: String,
    pub every_seconds: u64,
    pub last_run: Option<String>,
    pub last_outcome: Option<&'static str>,
    pub last_version: Option<String>,
    pub last_change: Option<String>,
    pub pending_deliveries: usize,
    pub last_error: Option<String>,
}

/// The watch jobs of one process.
pub struct Watches {
    api: Arc<BoardApi>,
    jobs: Vec<Arc<Job>>,
    outbox: Outbox,
    sender: http::Sender,
    /// Wakes the delivery loop when a run queued a delivery.
    queued: Notify,
    /// When this node attempts each delivery next, whatever the store says:
    /// a store that failed to take an attempt's outcome must not make the
    /// next scan hammer the receiver. Kept until the time passes.
    holds: Mutex<HashMap<String, u64>>,
}

impl Watches {
    /// The jobs of `settings` (`None` when there are none), loading boards
    /// through `api`, with the outbox beside the kept versions
    /// (`board_api.changes.store`).
    ///
    /// # Errors
    /// A [`ConfigError`]: a job's link is not a share link of the
    /// configured share host, or the outbox cannot be opened.
    pub fn new(
        api: Arc<BoardApi>,
        settings: &ApiSettings,
    ) -> Result<Option<Arc<Self>>, ConfigError> {
        let configured = &settings.watch.jobs;
        if configured.is_empty() {
            return Ok(None);
        }
        let mut jobs = Vec::with_capacity(configured.len());
        for (at, job) in configured.iter().enumerate() {
            let link = share_link::parse(&job.link, api.share_host()).map_err(|e| {
                ConfigError::new(
                    format!("board_api.watch.jobs[{at}].url_env"),
                    format!("not a share link of {}: {}", api.share_host(), e.message()),
                )
            })?;
            jobs.push(Arc::new(Job {
                status: Mutex::new(Status {
                    id: job.id.clone(),
                    every_seconds: job.every.as_secs(),
                    ..Status::default()
                }),
                settings: job.clone(),
                link,
                run_now: Notify::new(),
            }));
        }
        let outbox = match &settings.changes.store {
            StoreKind::Memory => Outbox::Memory(outbox::memory::Memory::default()),
            #[cfg(not(feature = "sqlite"))]
            StoreKind::Sqlite(_) => {
                return Err(ConfigError::new(
                    "board_api.changes.store",
                    "sqlite needs the `sqlite` feature of this build",
                ))
            }
            #[cfg(feature = "sqlite")]
            StoreKind::Sqlite(_) => {
                // The kept versions' state file: one connection per process.
                let Some(db) = api.versions().and_then(|v| v.state_file()) else {
                    return Err(ConfigError::new(
                        "board_api.changes.store",
                        "sqlite: the state file is not open",
                    ));
                };
                let keys: Vec<(String, Vec<u8>)> = configured
                    .iter()
                    .map(|j| (j.id.clone(), j.key.clone()))
                    .collect();
                Outbox::Sqlite(outbox::sqlite::SqliteOutbox::new(
                    std::sync::Arc::clone(db),
                    &keys,
                ))
            }
            #[cfg(feature = "fleet")]
            // The state's own server when named, else the fleet tier's.
            StoreKind::Redis => {
                match settings.changes.redis.as_ref().or(settings.shared.as_ref()) {
                    Some(shared) => Outbox::Redis(
                        outbox::redis::RedisOutbox::new(shared)
                            .map_err(|e| ConfigError::new("board_api.changes.store", e))?,
                    ),
                    None => {
                        return Err(ConfigError::new(
                            "board_api.changes.store",
                            "redis needs the fleet tier (board_api.cache.shared)",
                        ))
                    }
                }
            }
            #[cfg(not(feature = "fleet"))]
            StoreKind::Redis => {
                return Err(ConfigError::new(
                    "board_api.changes.store",
                    "redis needs the `fleet` feature of this build",
                ))
            }
        };
        let ids: Vec<String> = jobs.iter().map(|j| j.settings.id.clone()).collect();
        metrics::register(&ids);
        Ok(Some(Arc::new(Watches {
            api,
            jobs,
            outbox,
            sender: http::Sender::default(),
            queued: Notify::new(),
            holds: Mutex::new(HashMap::new()),
        })))
    }

    /// Runs every job (the first run at once, then every `every`, with
    /// jitter) and the delivery loop until `shutdown` turns true. What is
    /// pending when it stops stays stored for the next start.
    ///
    /// `watch: stopped` is logged however the run ends: after `shutdown`,
    /// or when its runtime drops this future. Pingora with a grace period
    /// of 0 shuts the runtimes down right after it broadcasts the shutdown,
    /// which can come before this future is polled again.
    pub async fn run(self: Arc<Self>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
        let _stopped = LogOnDrop("watch: stopped");
        log::info!(
            "watch: {} job(s), deliveries kept in {}",
            self.jobs.len(),
            self.outbox.kind()
        );
        let mut tasks = tokio::task::JoinSet::new();
        // Said once at start, beside the jobs (a Redis slow to answer does
        // not hold them back): a store that can lose deliveries.
        let me = Arc::clone(&self);
        tasks.spawn(async move { drop(me.outbox.check_fitness().await) });
        for job in &self.jobs {
            let (me, job) = (Arc::clone(&self), Arc::clone(job));
            tasks.spawn(async move { me.schedule(&job).await });
        }
        let me = Arc::clone(&self);
        tasks.spawn(async move { me.deliveries().await });
        while !*shutdown.borrow() {
            if shutdown.changed().await.is_err() {
                break;
            }
        }
        // An attempt cut short stays pending: at least once, by design.
        tasks.shutdown().await;
    }

    /// One job's schedule: a run at start, then one per interval, and one
    /// whenever [`Watches::trigger`] asks.
    async fn schedule(&self, job: &Job) {
        let mut wait = Duration::ZERO;
        loop {
            let scheduled = tokio::select! {
                () = tokio::time::sleep(wait) => true,
                () = job.run_now.notified() => false,
            };
            self.run_job(job, scheduled).await;
            wait = jittered(job.settings.every);
        }
    }

    /// Asks for a run of job `id` now (the operator listener's
    /// `POST /watch/<id>/run`); false when no job has that id.
    pub fn trigger(&self, id: &str) -> bool {
        match self.jobs.iter().find(|j| j.settings.id == id) {
            Some(job) => {
                job.run_now.notify_one();
                true
            }
            None => false,
        }
    }

    /// `GET /watch`: every job's state on this node, as JSON.
    pub fn status(&self) -> Vec<u8> {
        let jobs: Vec<Status> = self
            .jobs
            .iter()
            .map(|j| j.status.lock().unwrap_or_else(|e| e.into_inner()).clone())
            .collect();
        let body = serde_json::json!({
            "store": self.outbox.kind(),
            "storeWarnings": self.outbox.warnings(),
            "jobs": jobs,
        });
        let mut out = serde_json::to_vec_pretty(&body).unwrap_or_default();
        out.push(b'\n');
        out
    }

    fn job(&self, id: &str) -> Option<&Arc<Job>> {
        self.jobs.iter().find(|j| j.settings.id == id)
    }

    /// Sets the pending counts `/watch` shows from a scan of the outbox.
    fn set_pending(&self, by_job: &HashMap<String, usize>) {
        for job in &self.jobs {
            let n = by_job.get(&job.settings.id).copied().unwrap_or(0);
            job.status
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .pending_deliveries = n;
        }
    }
}

impl Job {
    fn update(&self, f: impl FnOnce(&mut Status)) {
        f(&mut self.status.lock().unwrap_or_else(|e| e.into_inner()));
    }
}

/// `every` give or take a tenth, so that nodes and jobs started together
/// drift apart.
fn jittered(every: Duration) -> Duration {
    let spread = every.as_millis() as u64 / 5;
    if spread == 0 {
        return every;
    }
    let low = every - Duration::from_millis(spread / 2);
    low + Duration::from_millis(random_u64() % spread)
}

use crate::clock::now_ms;
use crate::random::u64 as random_u64;

/// `ms` since the epoch as RFC 3339 UTC with milliseconds.
fn rfc3339(ms: u64) -> String {
    chrono::DateTime::from_timestamp_millis(i64::try_from(ms).unwrap_or(0))
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default()
}

/// Logs its line at `INFO` when dropped: at the end of a future, whether it
/// ran to its end or was dropped by its runtime.
struct LogOnDrop(&'static str);

impl Drop for LogOnDrop {
    fn drop(&mut self) {
        log::info!("{}", self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_stays_within_a_tenth() {
        let every = Duration::from_secs(100);
        for _ in 0..200 {
            let d = jittered(every);
            assert!(
                d >= Duration::from_secs(90) && d < Duration::from_secs(110),
                "{d:?}"
            );
        }
    }

    #[test]
    fn times_are_rfc3339() {
        assert_eq!(rfc3339(1_614_265_330_123), "2021-02-25T15:02:10.123Z");
    }
}
