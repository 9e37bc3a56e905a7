//! The last level of the store: a load from the provider. It waits for an
//! admission slot (within the fetch deadline), fetches through the provider
//! client, then builds the sanitized document on the work pool.
//!
//! The admission gate stands here, in front of the provider only: requests
//! answered by the process cache or the fleet tier never take a slot.

use super::{CacheSettings, Doc, LoadError, LoadTiming};
use crate::document::Coverage;
use crate::governance::{trim_heap, Admission, Limits, Refused, WorkPool};
use crate::metrics::Metrics;
use crate::pipeline::load::build;
use crate::provider::client::{Hooked, Job, Offload, Pace, ProviderClient, ProviderSettings};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tracing::field::Empty;
use tracing::Instrument as _;

/// The work pool runs the provider client's CPU work too.
impl Offload for WorkPool {
    fn run_job(&self, job: Job) -> Hooked<'_, ()> {
        Box::pin(async move {
            // A job that panicked or a closed pool: the client sees that no
            // result came back.
            let _ = self.run(job).await;
        })
    }
}

/// Fetches and builds boards, one admitted load at a time per slot.
pub(crate) struct Loader {
    client: ProviderClient,
    provider_name: String,
    pool: WorkPool,
    admission: Admission,
    fetch_deadline: Duration,
    /// Resident bytes below which a load's freed heap is kept for the next
    /// one (see [`trim_heap`]).
    retain_bytes: usize,
}

/// Resident memory kept for loads beside the cache's budget before freed
/// heap is handed back: the process itself and a few cold loads of a large
/// board (one of a 5 MB board peaks at about three times its size).
pub(crate) const LOAD_HEADROOM_BYTES: usize = 64 << 20;

impl Loader {
    /// The provider client is built here, handed the pool for its CPU work,
    /// the upstream cap of `limits` and the fleet's `pace` if any;
    /// `cache` gives the byte budget the heap may keep beyond a load.
    ///
    /// # Errors
    /// The pool's threads could not be started, or the provider client
    /// could not be built (e.g. an unreadable `ca_file`).
    pub(crate) fn new(
        provider: ProviderSettings,
        provider_name: String,
        limits: &Limits,
        pace: Option<Arc<dyn Pace>>,
        cache: &Option<CacheSettings>,
        metrics: &Option<Metrics>,
    ) -> Result<Self, String> {
        let pool = WorkPool::reporting(limits.work_threads, limits.work_queue, metrics.clone())
            .map_err(|e| format!("work pool: {e}"))?;
        let fetch_deadline = provider.fetch_deadline;
        let provider = ProviderSettings {
            max_in_flight: limits.max_upstream_requests,
            ..provider
        };
        let offload: Arc<dyn Offload> = Arc::new(pool.clone());
        let client =
            ProviderClient::with_hooks(provider, Some(offload), pace).map_err(|e| e.to_string())?;
        Ok(Loader {
            client,
            provider_name,
            pool,
            admission: Admission::reporting(
                limits.max_cold_loads,
                limits.cold_queue,
                metrics.clone(),
            ),
            fetch_deadline,
            retain_bytes: cache
                .as_ref()
                .map_or(0, |c| c.budget_bytes)
                .saturating_add(LOAD_HEADROOM_BYTES),
        })
    }

    pub(crate) fn pool(&self) -> &WorkPool {
        &self.pool
    }

    /// The deadline of a load that starts now.
    pub(crate) fn deadline(&self) -> Instant {
        Instant::now() + self.fetch_deadline
    }

    /// One cold load: wait for a slot, fetch until `deadline`, then build
    /// on the pool; the slot is held until the board is built.
    pub(crate) async fn load(
        &self,
        board_id: &str,
        permission_id: &str,
        coverage: Coverage,
        deadline: Instant,
    ) -> Result<Doc, LoadError> {
        let started = Instant::now();
        // A queued load waits at most half of what is left, so an admitted
        // one always has at least that half for the provider. One that
        // never got a slot never asked the provider: that is our overload,
        // answered `503` with `Retry-After`, not an upstream timeout.
        let queue_deadline = started + deadline.saturating_duration_since(started) / 2;
        let _slot = match self
            .admission
            .enter(queue_deadline)
            .instrument(tracing::info_span!("shared_board_api.admission"))
            .await
        {
            Ok(slot) => slot,
            Err(Refused::Overloaded | Refused::TimedOut) => return Err(LoadError::Overloaded),
        };
        let fetch_started = Instant::now();
        let upstream_span =
            tracing::info_span!("shared_board_api.upstream", boards_fetched = Empty);
        let fetched = self
            .client
            .fetch_until(board_id, permission_id, deadline)
            .instrument(upstream_span.clone())
            .await
            .map_err(LoadError::Fetch)?;
        upstream_span.record("boards_fetched", fetched.loaded_boards.len());
        let upstream = fetch_started.elapsed();
        let build_started = Instant::now();
        let name = self.provider_name.clone();
        let board_id = board_id.to_owned();
        let retain = self.retain_bytes;
        let board = self
            .pool
            .run(move || {
                // `build` drops the raw answers as soon as it no longer needs them.
                let built = build(fetched, &board_id, &name, coverage);
                trim_heap(retain, false);
                built
            })
            .instrument(tracing::info_span!("shared_board_api.build"))
            .await
            .map_err(|e| LoadError::Internal(e.to_string()))?
            .map_err(LoadError::Fetch)?;
        let build = build_started.elapsed();
        // The last load of a burst may have come within a second of the
        // previous trim: trim once more if the process is over its bound.
        if self.admission.running() <= 1 && self.admission.queued() == 0 {
            let _ = self.pool.run(move || trim_heap(retain, true)).await;
        }
        Ok(Doc::new(board, LoadTiming { upstream, build }))
    }
}
