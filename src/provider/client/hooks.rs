//! What the provider client is handed when it is built, so that it depends on
//! no other part of the crate: where its CPU work runs ([`Offload`]), the
//! pace its requests must keep ([`Pace`], a fleet-wide budget) and who sees
//! its answers as they came ([`Tap`], for capturing a board). All are
//! optional; without them the work runs inline, nothing is paced or seen.

use std::future::Future;
use std::pin::Pin;
use tokio::time::Instant;

/// A boxed future, as the hooks return.
pub type Hooked<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A unit of CPU work the client hands off.
pub type Job = Box<dyn FnOnce() + Send + 'static>;

/// Runs the client's CPU work (inflating gzip, parsing and merging JSON) off
/// the async threads.
pub trait Offload: Send + Sync {
    /// Runs `job` and resolves once it has run (or could not: a job that
    /// panicked or a pool that closed resolves too, and the client sees
    /// that its result never came).
    fn run_job(&self, job: Job) -> Hooked<'_, ()>;
}

/// Why a request was not sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverBudget;

/// A budget of requests toward the provider that several clients (a fleet
/// of gateways) share. Asked once before every request.
pub trait Pace: Send + Sync {
    /// Resolves when one more request may be sent, waiting for the budget
    /// at most until `deadline`.
    ///
    /// # Errors
    /// [`OverBudget`] when the budget has no room before `deadline`.
    fn admit(&self, deadline: Instant) -> Hooked<'_, Result<(), OverBudget>>;
}

/// Which request an answer came for. The permission id and the token are
/// not part of it: whoever watches learns no secret from the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked<'a> {
    /// The token exchange for board `board_id`.
    Token { board_id: &'a str },
    /// The boards request for `ids`: the root alone, or one batch of
    /// `nested` boards.
    Boards { ids: &'a [String], nested: bool },
}

/// Sees every answer the provider sent, as the client read it (status and
/// body, after gzip decoding), before the client interprets it. Set only to
/// capture a board; a serving client has none.
pub trait Tap: Send + Sync {
    /// One answer to `asked`. Called on the task that made the request;
    /// keep it short (store the body, a cheap `Bytes` clone).
    fn answer(&self, asked: Asked<'_>, status: u16, body: &bytes::Bytes);
}

/// Runs `job` on `offload` when there is one, inline otherwise; `None` when
/// the job never returned (it panicked, or the pool closed).
pub(crate) async fn run_on<T: Send + 'static>(
    offload: Option<&dyn Offload>,
    job: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    let Some(offload) = offload else {
        return Some(job());
    };
    let (tx, rx) = tokio::sync::oneshot::channel();
    offload
        .run_job(Box::new(move || {
            // The caller may have gone away; nothing to do then.
            let _ = tx.send(job());
        }))
        .await;
    rx.await.ok()
}
