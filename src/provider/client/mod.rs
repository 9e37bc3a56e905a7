//! The Milanote provider client: fetch one shared board (token, root board,
//! nested boards breadth first) over Pingora's own client stack and hand the
//! merged raw answers ([`Fetched`]) to the normalizer. One [`ProviderClient`]
//! is shared by all requests; it owns the connection pool.
//!
//! Protocol rules live in `rules`, limits in `ProviderSettings`. Timeouts: a connect or read
//! timeout, or the overall `fetch_deadline` passing before the root board is
//! loaded, is [`FetchError::Timeout`]; after the root, the boards loaded by
//! then are returned.

mod arriving;
mod body;
mod ca;
mod discover;
mod hooks;
mod rules;
mod settings;
mod transport;

pub use ca::load_ca_file;
#[cfg(feature = "fleet")]
pub use hooks::OverBudget;
pub use hooks::{Asked, Hooked, Job, Offload, Pace, Tap};
pub use settings::ProviderSettings;

use crate::document::UnloadedReason;
use crate::provider::answer::Answer;
use crate::provider::error::{redact_permission, FetchError};
use crate::provider::fetched::Fetched;
use pingora_error::{Error, ErrorType};
use serde_json::Value;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;
use tokio::task::JoinSet;
use transport::{Read, Transport};

/// Nested boards more levels below the root than this are not fetched
/// (a guard against cycles and runaway chains; `max_boards` usually stops earlier).
pub const MAX_NESTING_DEPTH: usize = 32;

/// Fetches shared Milanote boards. `Send + Sync`, shared by all requests;
/// clones share the same connection pool.
#[derive(Clone)]
pub struct ProviderClient {
    inner: Arc<Inner>,
}

struct Inner {
    settings: ProviderSettings,
    transport: Transport,
    /// Where JSON parsing and merging run; inline when absent.
    offload: Option<Arc<dyn Offload>>,
    /// Who sees each answer as it came (a capture); nobody when absent.
    tap: Option<Arc<dyn Tap>>,
}

/// Why a load failed when a job of it on the work pool never returned (it
/// panicked, or the pool closed).
fn job_lost() -> FetchError {
    FetchError::upstream("a work pool job did not return")
}

impl Inner {
    /// Runs CPU work on the pool when there is one.
    async fn cpu<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, FetchError> {
        hooks::run_on(self.offload.as_deref(), job)
            .await
            .ok_or_else(job_lost)
    }

    /// A boards request's answer: read already, as its body arrived, or
    /// read now on the work pool.
    async fn boards_answer(&self, response: transport::Response) -> Result<Answer, FetchError> {
        if response.answer.is_some() {
            return rules::parse_boards(response);
        }
        self.cpu(move || rules::parse_boards(response)).await?
    }

    /// One request to the provider, its answer shown to the tap if any.
    async fn get(
        &self,
        asked: Asked<'_>,
        target: &str,
        deadline: tokio::time::Instant,
    ) -> Result<transport::Response, FetchError> {
        let what = match asked {
            Asked::Token { .. } => "token",
            Asked::Boards { nested: false, .. } => "root board",
            Asked::Boards { nested: true, .. } => "nested boards",
        };
        let read = match asked {
            Asked::Token { .. } => Read::Body,
            Asked::Boards { .. } => Read::Answer,
        };
        let response = self.transport.get(what, target, read, deadline).await?;
        if let Some(tap) = &self.tap {
            tap.answer(asked, response.status, &response.body);
        }
        Ok(response)
    }
}

impl std::fmt::Debug for ProviderClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderClient")
            .field("settings", &self.inner.settings)
            .finish_non_exhaustive()
    }
}

/// How one nested-board batch ended.
// One per batch of up to 50 boards, held until the level is merged: the
// size of the answer variant costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
enum Batch {
    /// The provider answered.
    Answered(Answer),
    /// Its request failed, for this reason.
    Failed(UnloadedReason),
    /// Still running when the deadline passed.
    Pending,
}

/// One nested-board batch's outcome: the batch's ids and how it ended.
type BatchResult = (Vec<String>, Batch);

impl ProviderClient {
    /// Validate `settings`, load the CA file if any, and set up the connector.
    ///
    /// # Errors
    ///
    /// A Pingora error of type `Custom("InvalidProviderSettings")` naming the bad
    /// setting, or `FileReadError`/`InvalidCert` when `ca_file` cannot be read or
    /// holds no usable certificate. Never panics.
    #[cfg(any(test, feature = "internals"))]
    pub fn new(settings: ProviderSettings) -> pingora_error::Result<Self> {
        Self::with_hooks(settings, None, None)
    }

    /// As [`ProviderClient::new`], with gzip decoding, JSON parsing and
    /// merging run on `offload` instead of the calling async thread, and
    /// every request to the provider first admitted by `pace`.
    ///
    /// # Errors
    /// As [`ProviderClient::new`].
    pub fn with_hooks(
        settings: ProviderSettings,
        offload: Option<Arc<dyn Offload>>,
        pace: Option<Arc<dyn Pace>>,
    ) -> pingora_error::Result<Self> {
        Self::build(settings, offload, pace, None)
    }

    /// As [`ProviderClient::new`], with every answer shown to `tap` as it
    /// came: how a board is captured, through the same requests a load makes.
    ///
    /// # Errors
    /// As [`ProviderClient::new`].
    #[cfg(any(feature = "demo", test, feature = "internals"))]
    pub fn tapped(settings: ProviderSettings, tap: Arc<dyn Tap>) -> pingora_error::Result<Self> {
        Self::build(settings, None, None, Some(tap))
    }

    fn build(
        settings: ProviderSettings,
        offload: Option<Arc<dyn Offload>>,
        pace: Option<Arc<dyn Pace>>,
        tap: Option<Arc<dyn Tap>>,
    ) -> pingora_error::Result<Self> {
        const INVALID: ErrorType = ErrorType::Custom("InvalidProviderSettings");
        settings
            .validate()
            .or_else(|msg| Error::e_explain(INVALID, msg))?;
        let ca = match &settings.ca_file {
            Some(path) => Some(ca::load_ca_file(path)?),
            None => None,
        };
        let transport = Transport::new(&settings, ca, offload.clone(), pace)
            .or_else(|msg| Error::e_explain(INVALID, msg))?;
        Ok(ProviderClient {
            inner: Arc::new(Inner {
                settings,
                transport,
                offload,
                tap,
            }),
        })
    }

    /// The settings this client runs with.
    #[cfg(any(test, feature = "internals"))]
    pub fn settings(&self) -> &ProviderSettings {
        &self.inner.settings
    }

    /// Fetch board `board_id` through share permission `permission_id`: the
    /// token, the root board, then nested boards breadth first within the limits.
    ///
    /// # Errors
    ///
    /// - [`FetchError::AccessDenied`]: token `null`/missing, HTTP 401/403, or the
    ///   root denied (denial code, children not returned, `SKELETON`).
    /// - [`FetchError::NotFound`]: HTTP 404 or a missing/deleted root.
    /// - [`FetchError::Upstream`]: unreachable, other statuses, bot challenge,
    ///   malformed or oversized bodies, a bad token, an unexpected root. Its text
    ///   never contains the permission id or the token.
    /// - [`FetchError::Timeout`]: the deadline (or a connect/read timeout) hit
    ///   before the root board was loaded.
    ///
    /// Nested boards never fail the fetch: one that fails or is cut off is
    /// not in [`Fetched::loaded_boards`], and [`Fetched::unloaded`] says why.
    #[cfg(any(feature = "demo", test, feature = "internals"))]
    pub async fn fetch(&self, board_id: &str, permission_id: &str) -> Result<Fetched, FetchError> {
        let deadline = tokio::time::Instant::now() + self.inner.settings.fetch_deadline;
        self.fetch_until(board_id, permission_id, deadline).await
    }

    /// As [`ProviderClient::fetch`], with a deadline set by the caller (the
    /// time a load waited for its turn counts toward `fetch_deadline`).
    ///
    /// # Errors
    /// As [`ProviderClient::fetch`].
    pub async fn fetch_until(
        &self,
        board_id: &str,
        permission_id: &str,
        deadline: tokio::time::Instant,
    ) -> Result<Fetched, FetchError> {
        let started = Instant::now();
        let who = redact_permission(permission_id);
        let mut token = None;
        let result = self
            .fetch_all(board_id, permission_id, &mut token, deadline)
            .await;
        let secrets = [permission_id, token.as_deref().unwrap_or_default()];
        let result = result.map_err(|e| e.redacted(&secrets));
        let ms = started.elapsed().as_millis();
        // DEBUG: one line per load is detail, not news. A failed load is
        // logged once more by whoever answers for it, at the level of whose
        // fault it is (the client's, the provider's or ours).
        match &result {
            Ok(f) => log::debug!(
                "provider: board {board_id} p={who}: ok, {} boards, {} elements in {ms} ms",
                f.loaded_boards.len(),
                f.elements.len()
            ),
            Err(FetchError::Upstream(msg)) => {
                log::debug!(
                    "provider: board {board_id} p={who}: upstream error after {ms} ms: {msg}"
                )
            }
            Err(e) => log::debug!("provider: board {board_id} p={who}: {e} after {ms} ms"),
        }
        result
    }

    async fn fetch_all(
        &self,
        board_id: &str,
        permission_id: &str,
        token_out: &mut Option<String>,
        deadline: tokio::time::Instant,
    ) -> Result<Fetched, FetchError> {
        let settings = &self.inner.settings;
        let inner = &self.inner;
        let root = tokio::time::timeout_at(deadline, async {
            let response = inner
                .get(
                    Asked::Token { board_id },
                    &rules::token_target(board_id, permission_id),
                    deadline,
                )
                .await?;
            let token = rules::parse_token(&response)?;
            *token_out = Some(token.clone());
            let ids = [board_id.to_owned()];
            let response = inner
                .get(
                    Asked::Boards {
                        ids: &ids,
                        nested: false,
                    },
                    &rules::boards_target(&ids, &token),
                    deadline,
                )
                .await?;
            let body = inner.boards_answer(response).await?;
            rules::check_root(&body, board_id)?;
            Ok::<_, FetchError>((token, body))
        })
        .await;
        let (token, body) = match root {
            Ok(result) => result?,
            Err(_) => return Err(FetchError::Timeout),
        };

        let mut fetched = Fetched::new(board_id, crate::clock::now_ms_i64());
        fetched.fetched_time_ms = body.fields.get("fetchedTime").and_then(epoch_ms);
        // On the work pool; the answer's values are moved in, not copied.
        let mut fetched = self
            .inner
            .cpu(move || {
                fetched.merge_answer(body);
                fetched
            })
            .await?;
        if fetched.element_count() > settings.max_elements {
            return Err(FetchError::upstream(format!(
                "root board has more than {} elements",
                settings.max_elements
            )));
        }
        fetched.loaded_boards.insert(board_id.to_owned());
        self.fetch_nested(&mut fetched, &token, deadline).await;
        Ok(fetched)
    }

    /// Breadth first, one level at a time: every board of a level is requested
    /// (in batches, `concurrency` in flight) and merged in batch order before the
    /// next level is discovered, so the result does not depend on timing.
    ///
    /// Every nested board found and not loaded gets its reason in
    /// [`Fetched::unloaded`]: the limits (`max_boards`, the nesting depth,
    /// `max_elements`) are `BOARD_LIMIT`, boards still unanswered or not yet
    /// asked for when the deadline passes are `DEADLINE`, a failed request
    /// is read as the root's would be ([`rules::request_failed`]) and an
    /// answer with the root's rules ([`rules::nested_verdict`]).
    async fn fetch_nested(
        &self,
        fetched: &mut Fetched,
        token: &str,
        deadline: tokio::time::Instant,
    ) {
        let settings = &self.inner.settings;
        let mut known: HashSet<String> = HashSet::from([fetched.root_id.clone()]);
        let mut budget = settings.max_boards.saturating_sub(1);
        for depth in 1.. {
            let mut level = discover::boards_to_fetch(fetched, &known);
            if level.is_empty() {
                return;
            }
            if depth > MAX_NESTING_DEPTH {
                log::debug!(
                    "provider: nesting depth limit reached, {} boards not fetched",
                    level.len()
                );
                mark(fetched, &level, UnloadedReason::BoardLimit);
                return;
            }
            if budget == 0 {
                log::debug!(
                    "provider: max_boards reached, {} boards not fetched",
                    level.len()
                );
                mark(fetched, &level, UnloadedReason::BoardLimit);
                return;
            }
            if level.len() > budget {
                mark(fetched, &level[budget..], UnloadedReason::BoardLimit);
                level.truncate(budget);
            }
            budget -= level.len();
            known.extend(level.iter().cloned());
            let batches: Vec<Vec<String>> = level
                .chunks(settings.batch_size)
                .map(<[String]>::to_vec)
                .collect();
            let (results, complete) = self.run_batches(batches, token, deadline).await;
            let mut results = results.into_iter();
            while let Some((ids, outcome)) = results.next() {
                let body = match outcome {
                    Batch::Answered(body) => body,
                    Batch::Failed(reason) => {
                        mark(fetched, &ids, reason);
                        continue;
                    }
                    Batch::Pending => {
                        mark(fetched, &ids, UnloadedReason::Deadline);
                        continue;
                    }
                };
                let incoming = body.element_count();
                if fetched.element_count() + incoming > settings.max_elements {
                    log::debug!("provider: max_elements reached, nested boards not merged");
                    mark(fetched, &ids, UnloadedReason::BoardLimit);
                    for (ids, outcome) in results {
                        let reason = match outcome {
                            Batch::Answered(_) => UnloadedReason::BoardLimit,
                            Batch::Failed(reason) => reason,
                            Batch::Pending => UnloadedReason::Deadline,
                        };
                        mark(fetched, &ids, reason);
                    }
                    return;
                }
                for id in ids {
                    match rules::nested_verdict(&body, &id) {
                        Ok(()) => {
                            fetched.loaded_boards.insert(id);
                        }
                        Err(reason) => fetched.mark_unloaded(&id, reason),
                    }
                }
                fetched.merge_answer(body);
            }
            if !complete {
                // The provider was too slow for the deadline: a provider failure.
                log::warn!("provider: fetch deadline passed, returning the boards loaded so far");
                // The boards the answers merged above revealed: never asked for.
                let next = discover::boards_to_fetch(fetched, &known);
                mark(fetched, &next, UnloadedReason::Deadline);
                return;
            }
        }
    }

    /// Run `batches` with at most `concurrency` in flight until all finish or the
    /// deadline passes. Returns the results in batch order and whether all finished.
    async fn run_batches(
        &self,
        batches: Vec<Vec<String>>,
        token: &str,
        deadline: tokio::time::Instant,
    ) -> (Vec<BatchResult>, bool) {
        let mut results: Vec<BatchResult> = batches
            .iter()
            .map(|ids| (ids.clone(), Batch::Pending))
            .collect();
        let mut pending = batches.into_iter().enumerate();
        let mut in_flight = JoinSet::new();
        let concurrency = self.inner.settings.concurrency;
        loop {
            while in_flight.len() < concurrency {
                let Some((index, ids)) = pending.next() else {
                    break;
                };
                let inner = Arc::clone(&self.inner);
                let token = token.to_owned();
                in_flight.spawn(async move {
                    let target = rules::boards_target(&ids, &token);
                    let answer = match inner
                        .get(
                            Asked::Boards {
                                ids: &ids,
                                nested: true,
                            },
                            &target,
                            deadline,
                        )
                        .await
                    {
                        Ok(response) => inner.boards_answer(response).await,
                        Err(e) => Err(e),
                    };
                    (index, answer.map_err(|e| e.redacted(&[&token])))
                });
            }
            if in_flight.is_empty() {
                return (results, true);
            }
            match tokio::time::timeout_at(deadline, in_flight.join_next()).await {
                Err(_) => {
                    // Dropping the JoinSet aborts the requests still in flight.
                    in_flight.abort_all();
                    return (results, false);
                }
                Ok(None) => return (results, true),
                Ok(Some(Err(join_error))) => {
                    // A task that panicked: our bug. Which batch it was is
                    // lost with the task: its boards stay `Pending`,
                    // reported as the deadline's.
                    log::error!("provider: nested board task failed: {join_error}");
                }
                Ok(Some(Ok((index, answer)))) => {
                    let outcome = match answer {
                        Ok(body) => Batch::Answered(body),
                        Err(e) => {
                            let n = results.get(index).map_or(0, |r| r.0.len());
                            // A denied or missing nested board is the board's
                            // content; any other failure is the provider's.
                            if matches!(e, FetchError::AccessDenied | FetchError::NotFound) {
                                log::debug!("provider: nested batch of {n} boards not loaded: {e}");
                            } else {
                                log::warn!("provider: nested batch of {n} boards not loaded: {e}");
                            }
                            Batch::Failed(rules::request_failed(&e))
                        }
                    };
                    if let Some(slot) = results.get_mut(index) {
                        slot.1 = outcome;
                    }
                }
            }
        }
    }
}

/// Records `reason` for each of `ids` (a reason found earlier stays).
fn mark(fetched: &mut Fetched, ids: &[String], reason: UnloadedReason) {
    for id in ids {
        fetched.mark_unloaded(id, reason);
    }
}

/// An epoch-milliseconds value sent as an integer or a float.
fn epoch_ms(v: &Value) -> Option<i64> {
    v.as_i64()
        .or_else(|| v.as_f64().filter(|f| f.is_finite()).map(|f| f as i64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<ProviderClient>();
    }

    #[test]
    fn invalid_settings_are_an_error_not_a_panic() {
        let settings = ProviderSettings {
            concurrency: 0,
            ..ProviderSettings::default()
        };
        let err = ProviderClient::new(settings).unwrap_err();
        assert!(err.to_string().contains("concurrency"), "{err}");
    }

    #[test]
    fn epoch_ms_accepts_integers_and_floats() {
        assert_eq!(epoch_ms(&serde_json::json!(5)), Some(5));
        assert_eq!(epoch_ms(&serde_json::json!(5.7)), Some(5));
        assert_eq!(epoch_ms(&serde_json::json!("5")), None);
    }
}
