//! The board of a request, through the store (process cache, fleet tier,
//! coalescing, admission, the provider): the one place where the board
//! endpoints and `/changes` load a document, note the level that answered
//! and count it, and turn a failed load into the API's error and one log
//! line.

use super::respond::Served;
use super::share_link::ShareLink;
use super::{api_error, log_failure, BoardApi};
use crate::document::Coverage;
use crate::store::{Doc, Source};
use std::time::Instant;

impl BoardApi {
    /// The board's full document and the level that answered. Every answer
    /// carries the board's version, a hash of the whole document, and every
    /// version is kept: an outline could give neither (docs/decisions.md).
    ///
    /// # Errors
    /// The load's failure as the API answers it (logged here, once).
    pub(super) async fn load_full(
        &self,
        link: &ShareLink,
        served: &mut Served,
    ) -> Result<(Doc, Source), super::error::ApiError> {
        let started = Instant::now();
        let (outcome, source) = self
            .boards
            .document(&link.board_id, &link.permission_id, Coverage::Full)
            .await;
        served.cache = Some(source.name());
        let cached = source != Source::Miss;
        self.metrics.cache(cached);
        if !cached {
            self.metrics
                .upstream_seconds(started.elapsed().as_secs_f64());
        }
        // Provider texts are redacted by the client; the link is never logged.
        let doc = outcome.map_err(|e| {
            log_failure(&link.board_id, started.elapsed(), &e, source);
            api_error(e)
        })?;
        Ok((doc, source))
    }
}

impl BoardApi {
    /// The board behind `link` as a watch run loads it: through the same
    /// path as `/api/detail` (cache, coalescing, fleet tier, limits), full;
    /// when `fresh` (a run asked for by hand), from the provider, past the
    /// process cache and the fleet tier (see [`crate::store::Boards::document_fresh`]).
    ///
    /// # Errors
    /// The load's failure, as the API would answer it (logged once).
    pub(crate) async fn load_for_watch(
        &self,
        link: &ShareLink,
        fresh: bool,
    ) -> Result<Doc, super::error::ApiError> {
        if !fresh {
            let mut served = Served::default();
            return self.load_full(link, &mut served).await.map(|(doc, _)| doc);
        }
        let started = Instant::now();
        let outcome = self
            .boards
            .document_fresh(&link.board_id, &link.permission_id, Coverage::Full)
            .await;
        self.metrics.cache(false);
        self.metrics
            .upstream_seconds(started.elapsed().as_secs_f64());
        outcome.map_err(|e| {
            log_failure(&link.board_id, started.elapsed(), &e, Source::Miss);
            api_error(e)
        })
    }

    /// The document kept as `version` of the board behind `link`, as that
    /// link loaded it, checked; `Ok(None)` when not kept.
    ///
    /// # Errors
    /// The store did not answer.
    pub(crate) async fn kept_version(
        &self,
        link: &ShareLink,
        version: &str,
    ) -> Result<Option<Vec<u8>>, crate::store::versions::Unavailable> {
        self.boards
            .kept_version(&link.board_id, &link.permission_id, version)
            .await
    }

    /// The kept versions, when they are on (the watches share their
    /// state file).
    #[cfg(feature = "sqlite")]
    pub(crate) fn versions(&self) -> Option<&crate::store::Versions> {
        self.boards.versions()
    }

    /// The work pool, for CPU work beside the API's (comparing versions).
    pub(crate) fn pool(&self) -> &crate::governance::WorkPool {
        self.boards.pool()
    }

    /// The share host links must name (`board_api.provider.share_host`).
    pub(crate) fn share_host(&self) -> &str {
        &self.share_host
    }
}
