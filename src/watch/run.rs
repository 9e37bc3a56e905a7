//! One run of a watch job: under the job's run lease, read the job's last
//! version of the board, load the board as `/api/detail` does, and when
//! its version differs, queue one delivery of what changed (compared as
//! `/changes` compares, on the work pool) before recording the new
//! version. A crash between the two queues the same delivery again under
//! the same id, which the outbox stores once.

use super::outbox::{Delivery, JobState, Unavailable, MAX_BODY};
use super::{metrics, now_ms, rfc3339, Job, Watches};
use crate::pipeline::changes::{self, Changes};
use crate::trace::{spans, TraceContext};
use std::time::Duration;
use tracing::Instrument as _;

/// A run's lease lives this long and is renewed (every third of it) while
/// the run goes on, however long its load takes; a node that dies mid-run,
/// or whose release failed, frees the job within it.
const RUN_LEASE: Duration = Duration::from_secs(30);

/// Entries listed at most per kind in one payload (then `truncated`).
const MAX_ENTRIES: usize = 1000;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The first version of this board the job saw: recorded.
    First,
    Unchanged,
    /// A delivery was queued.
    Changed,
    /// Another node ran the job within this interval, or runs it now.
    Skipped,
    Failed,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::First => "first",
            Outcome::Unchanged => "unchanged",
            Outcome::Changed => "changed",
            Outcome::Skipped => "skipped",
            Outcome::Failed => "failed",
        }
    }
}

impl Watches {
    /// Runs `job` once, unless another run of it holds the lease; a
    /// `scheduled` run is also skipped when a node ran the job less than
    /// most of an interval ago (a fleet runs each job once per interval).
    pub(super) async fn run_job(&self, job: &Job, scheduled: bool) -> Outcome {
        let id = job.settings.id.as_str();
        let Some(lease) = self.outbox.lease(&format!("run:{id}"), RUN_LEASE).await else {
            log::debug!("watch {id}: a run is in progress elsewhere");
            return Outcome::Skipped;
        };
        let run = self.run_leased(job, scheduled);
        let result = self
            .outbox
            .while_leased(&lease, RUN_LEASE, run)
            .await
            .unwrap_or_else(|| Err("the run lease was taken over".to_owned()));
        self.outbox.release(&lease).await;
        let outcome = match result {
            Ok(outcome) => outcome,
            Err(why) => {
                log::warn!("watch {id}: run failed: {why}");
                job.update(|s| s.last_error = Some(format!("run: {why}")));
                Outcome::Failed
            }
        };
        if outcome != Outcome::Skipped {
            metrics::run(id, outcome.name());
            job.update(|s| {
                s.last_run = Some(rfc3339(now_ms()));
                s.last_outcome = Some(outcome.name());
            });
        }
        outcome
    }

    async fn run_leased(&self, job: &Job, scheduled: bool) -> Result<Outcome, String> {
        let id = job.settings.id.as_str();
        let board = job.link.board_id.as_str();
        let unavailable = |_: Unavailable| "the watch store did not answer".to_owned();
        let mut state = self.outbox.state(id, board).await.map_err(unavailable)?;
        // A run that recorded a change may have stopped before queuing its
        // delivery: queued now, under its id (the store keeps one per id).
        if let Some(pending) = state.as_mut().and_then(|s| s.queued.take()) {
            self.queue(id, &pending).await.map_err(unavailable)?;
        }
        let now = now_ms();
        if let Some(state) = &state {
            let most = u64::try_from((job.settings.every * 4 / 5).as_millis()).unwrap_or(u64::MAX);
            if scheduled && now.saturating_sub(state.last_run_ms) < most {
                // What the node that ran it recorded.
                job.update(|s| {
                    s.last_run = Some(rfc3339(state.last_run_ms));
                    s.last_version = Some(state.version.clone());
                    s.last_change = state.last_change_ms.map(rfc3339);
                });
                return Ok(Outcome::Skipped);
            }
        }
        // Each run that loads the board is a trace of its own, whose ids
        // its delivery's body and time give back (see `run_trace`).
        let from = state.as_ref().map(|s| s.version.clone());
        let span = spans::watch_run(id, &run_trace(id, board, from.as_deref(), now));
        let outcome = self
            .run_traced(job, scheduled, state, now)
            .instrument(span.clone())
            .await;
        span.record("outcome", outcome.as_ref().map_or("failed", |o| o.name()));
        outcome
    }

    /// The run past its checks: the load, the comparison, the delivery.
    async fn run_traced(
        &self,
        job: &Job,
        scheduled: bool,
        state: Option<JobState>,
        now: u64,
    ) -> Result<Outcome, String> {
        let id = job.settings.id.as_str();
        let board = job.link.board_id.as_str();
        let unavailable = |_: Unavailable| "the watch store did not answer".to_owned();
        // A run asked for by hand reads the board fresh: right after an
        // edit, the cached board would say "unchanged".
        let doc = self
            .api
            .load_for_watch(&job.link, !scheduled)
            .await
            .map_err(|e| format!("loading board {board}: {}", e.code()))?;
        let Some(version) = doc.board.version().map(str::to_owned) else {
            return Err(format!("board {board}: a document without a version"));
        };
        let (outcome, next) = match state {
            None => (
                Outcome::First,
                JobState {
                    version: version.clone(),
                    seq: 0,
                    last_run_ms: now,
                    last_change_ms: None,
                    queued: None,
                },
            ),
            Some(state) if state.version == version => (
                Outcome::Unchanged,
                JobState {
                    last_run_ms: now,
                    ..state
                },
            ),
            Some(state) => {
                let seq = state.seq + 1;
                let body = self
                    .payload(job, &state.version, &version, &doc.board, now)
                    .await?;
                let delivery = Delivery {
                    id: delivery_id(id, board, seq, &state.version, &version),
                    job: id.to_owned(),
                    body,
                    attempts: 0,
                    next_at_ms: now,
                    created_ms: now,
                };
                let recorded = JobState {
                    version: version.clone(),
                    seq,
                    last_run_ms: now,
                    last_change_ms: Some(now),
                    queued: Some(delivery),
                };
                // The change and its delivery recorded together, then the
                // delivery queued (before any attempt): a stop between the
                // two is finished by the next run, under the same id.
                self.outbox
                    .set_state(id, board, &recorded)
                    .await
                    .map_err(unavailable)?;
                let mut next = recorded;
                if let Some(delivery) = next.queued.take() {
                    self.queue(id, &delivery).await.map_err(unavailable)?;
                }
                (Outcome::Changed, next)
            }
        };
        self.outbox
            .set_state(id, board, &next)
            .await
            .map_err(unavailable)?;
        job.update(|s| {
            s.last_version = Some(next.version.clone());
            s.last_change = next.last_change_ms.map(rfc3339);
            s.last_error = None;
        });
        Ok(outcome)
    }

    /// Stores `delivery` in the outbox (once per id) and wakes the delivery
    /// loop; a full outbox drops it, counted and logged.
    async fn queue(&self, job: &str, delivery: &Delivery) -> Result<(), Unavailable> {
        let added = self.outbox.add(delivery).await?;
        if !added && self.outbox.count().await.unwrap_or(0) >= super::outbox::MAX_PENDING {
            metrics::delivery("dropped");
            log::warn!(
                "watch {job}: the outbox is full; delivery {} is not kept",
                delivery.id
            );
        }
        self.queued.notify_one();
        Ok(())
    }

    /// The delivery body: what changed from `from` to `to`. When `from` is
    /// no longer kept the lists are empty and `complete` is false.
    async fn payload(
        &self,
        job: &Job,
        from: &str,
        to: &str,
        board: &std::sync::Arc<crate::pipeline::LoadedBoard>,
        now: u64,
    ) -> Result<String, String> {
        let board_id = job.link.board_id.clone();
        let older = self
            .api
            .kept_version(&job.link, from)
            .await
            .map_err(|_| "the store of kept versions did not answer".to_owned())?;
        let (newer, from_owned, to_owned) =
            (std::sync::Arc::clone(board), from.to_owned(), to.to_owned());
        let id = job.settings.id.clone();
        self.api
            .pool()
            .run_background(move || {
                let compared = older.and_then(|older| {
                    compare_kept(
                        &board_id,
                        &older,
                        &from_owned,
                        newer.document_json(),
                        &to_owned,
                    )
                });
                let changes = compared.unwrap_or_else(|| {
                    let mut none = Changes::none(&board_id, &from_owned, false);
                    none.to = to_owned.clone();
                    none
                });
                body(&id, changes, now)
            })
            .await
            .map_err(|e| format!("comparing versions: {e}"))?
    }
}

/// What changed from the kept document `older` (version `from`) to `newer`
/// (version `to`), when `older` is a document of `board_id`: `None` when it
/// is unreadable or another board's (as `/changes` checks it; the
/// comparison names the newer board, which is this one whatever was kept).
fn compare_kept(
    board_id: &str,
    older: &[u8],
    from: &str,
    newer: &[u8],
    to: &str,
) -> Option<Changes> {
    let old = changes::flat::read(older)
        .ok()
        .filter(|old| old.board_id == board_id)?;
    let new = changes::flat::read(newer).ok()?;
    Some(changes::compare_flat(&old, from, &new, to))
}

/// The trace of the run of job `job` on `board` that started from version
/// `from` (none on a first run) at `now`: ids hashed from these, so the
/// delivery the run queues gives them back ([`delivery_trace`]) from its
/// body and creation time, and nothing is stored beside it (a node of an
/// earlier build reads every delivery). Distinct runs differ in `now` or
/// `from`.
pub fn run_trace(job: &str, board: &str, from: Option<&str>, now: u64) -> TraceContext {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    for part in [
        job.as_bytes(),
        board.as_bytes(),
        from.unwrap_or("").as_bytes(),
    ] {
        ctx.update(part);
        ctx.update(&[0]);
    }
    ctx.update(&now.to_be_bytes());
    TraceContext::derived(ctx.finish().as_ref())
}

/// The trace of the run that queued `delivery`, from the job, board and
/// `from` version its body names and its creation time: its `traceparent`
/// is sent with every attempt. `None` for a body that names no change.
pub fn delivery_trace(delivery: &Delivery) -> Option<TraceContext> {
    let body: serde_json::Value = serde_json::from_str(&delivery.body).ok()?;
    let data = body.get("data")?;
    let text = |k: &str| data.get(k).and_then(serde_json::Value::as_str);
    Some(run_trace(
        text("job")?,
        text("boardId")?,
        Some(text("from")?),
        delivery.created_ms,
    ))
}

/// The JSON body of a `board.changed` event, at most [`MAX_BODY`] bytes:
/// lists cut at `MAX_ENTRIES`, and emptied (with `truncated`) when even
/// that does not fit.
pub fn body(job: &str, mut changes: Changes, now: u64) -> Result<String, String> {
    changes.truncate(MAX_ENTRIES);
    let make = |changes: &Changes| -> Result<String, String> {
        let mut data = serde_json::to_value(changes).map_err(|e| e.to_string())?;
        if let Some(map) = data.as_object_mut() {
            let mut with_job = serde_json::Map::with_capacity(map.len() + 1);
            with_job.insert("job".into(), job.into());
            with_job.append(map);
            data = with_job.into();
        }
        let event = serde_json::json!({
            "type": "board.changed",
            "timestamp": rfc3339(now),
            "data": data,
        });
        serde_json::to_string(&event).map_err(|e| e.to_string())
    };
    let text = make(&changes)?;
    if text.len() <= MAX_BODY {
        return Ok(text);
    }
    changes.truncate(0);
    changes.truncated = true;
    make(&changes)
}

/// A delivery's `webhook-id`: the same for the same change of the same
/// job's board, whichever node or run queues it.
pub fn delivery_id(job: &str, board: &str, seq: u64, from: &str, to: &str) -> String {
    let text = format!("{job}\n{board}\n{seq}\n{from}\n{to}");
    let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    format!("msg_{}", super::outbox::hex(&digest.as_ref()[..16]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_names_the_job_and_holds_no_more_than_its_bound() {
        let mut changes = Changes::none("b1", "0".repeat(32).as_str(), true);
        changes.to = "1".repeat(32);
        let text = body("trip", changes.clone(), 0).expect("json");
        let v: serde_json::Value = serde_json::from_str(&text).expect("json");
        assert_eq!(v["type"], "board.changed");
        assert_eq!(v["timestamp"], "1970-01-01T00:00:00.000Z");
        assert_eq!(v["data"]["job"], "trip");
        assert_eq!(v["data"]["boardId"], "b1");
        assert_eq!(v["data"]["to"], "1".repeat(32));
        assert_eq!(v["data"]["truncated"], false);
        let entry = changes::Entry {
            id: "e".into(),
            kind: "note".into(),
            title: "x".repeat(1000),
            parent_id: None,
            fields: None,
            from: None,
            to: None,
        };
        changes.added = vec![entry; 5000];
        let text = body("trip", changes, 0).expect("json");
        assert!(text.len() <= MAX_BODY);
        let v: serde_json::Value = serde_json::from_str(&text).expect("json");
        assert_eq!(v["data"]["truncated"], true);
    }

    #[test]
    fn a_delivery_gives_back_the_trace_of_the_run_that_queued_it() {
        let from = "0".repeat(32);
        let mut changes = Changes::none("b1", &from, true);
        changes.to = "1".repeat(32);
        let now = 1_700_000_000_123;
        let delivery = Delivery {
            id: delivery_id("trip", "b1", 1, &from, &changes.to.clone()),
            job: "trip".into(),
            body: body("trip", changes, now).expect("json"),
            attempts: 0,
            next_at_ms: now,
            created_ms: now,
        };
        let run = run_trace("trip", "b1", Some(&from), now);
        assert_eq!(delivery_trace(&delivery), Some(run.clone()));
        // Another time, job, board or starting version: another run.
        for other in [
            run_trace("trip", "b1", Some(&from), now + 1),
            run_trace("trap", "b1", Some(&from), now),
            run_trace("trip", "b2", Some(&from), now),
            run_trace("trip", "b1", None, now),
        ] {
            assert_ne!(other.trace_id, run.trace_id);
            assert_ne!(other.span_id, run.span_id);
        }
        let not_a_change = Delivery {
            body: "{}".into(),
            ..delivery
        };
        assert_eq!(delivery_trace(&not_a_change), None);
    }

    /// A document of `board` with one note titled `title`.
    fn doc(board: &str, title: &str) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "version": 1,
            "source": {"provider": "milanote", "boardId": board},
            "fetchedAt": "t",
            "board": {"id": board, "type": "BOARD", "title": "B", "children": [
                {"id": "n1", "type": "NOTE", "title": title,
                 "location": {"parentId": board, "section": "canvas", "position": {"x": 0, "y": 0}},
                 "children": []}
            ]}
        }))
        .expect("json")
    }

    #[test]
    fn the_kept_document_must_be_of_the_watched_board() {
        let newer = doc("b1", "after");
        let changes =
            compare_kept("b1", &doc("b1", "before"), "v1", &newer, "v2").expect("the same board");
        assert_eq!(changes.board_id, "b1");
        assert_eq!(changes.changed.len(), 1, "{changes:?}");
        // A kept document of another board (the newer one is this board's,
        // so checking the comparison's board id let it through).
        assert!(compare_kept("b1", &doc("other", "before"), "v1", &newer, "v2").is_none());
        assert!(compare_kept("b1", b"not json", "v1", &newer, "v2").is_none());
    }

    #[test]
    fn delivery_ids_are_stable_and_distinct() {
        let a = delivery_id("j", "b", 1, "x", "y");
        assert_eq!(a, delivery_id("j", "b", 1, "x", "y"));
        assert_eq!(a.len(), 36);
        assert_ne!(a, delivery_id("j", "b", 2, "x", "y"));
        assert_ne!(a, delivery_id("k", "b", 1, "x", "y"));
    }
}
