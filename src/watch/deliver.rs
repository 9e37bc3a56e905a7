//! The delivery loop: scans the outbox for deliveries that are due, takes
//! each one's lease (one node makes an attempt, fleet-wide), stores the
//! attempt's number, signs and posts it, then removes it (delivered, or
//! given up) or writes back when the next attempt is due: exponential
//! back-off with jitter, at least the receiver's `Retry-After`, up to the
//! job's `max_attempts`. Attempts run beside the loop, bounded per job, so
//! a receiver that hangs never holds back another job's deliveries; a
//! delivery of a job this node does not know is left to the nodes that do.

use super::http::{Attempt, ATTEMPT_DEADLINE};
use super::outbox::{Delivery, Unavailable, MAX_DELIVERY_AGE};
use super::{metrics, now_ms, sign, Watches};
use crate::trace::spans;
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::{Id, JoinSet};
use tracing::Instrument as _;

/// Deliveries read per scan.
const SCAN: usize = 200;
/// Attempts in flight at once, every job's.
const CONCURRENT: usize = 16;
/// Attempts in flight at once of one job: a receiver that hangs holds back
/// its own job's deliveries at most, never another job's.
const PER_JOB: usize = 4;
/// The longest pause between scans: deliveries another node queued, or one
/// whose lease a dead node held, are found within it.
const IDLE_SCAN: Duration = Duration::from_secs(5);
/// The pause after a scan that removed entries naming nothing (more may
/// follow them in the store).
const CLEANED_SCAN: Duration = Duration::from_millis(50);
/// The first retry's delay; each retry doubles it, up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(3600);
/// How soon a delivery that is due but leased by another node (or whose
/// store did not answer) is looked at again.
const LEASED_ELSEWHERE: u64 = 1000;
/// An attempt's lease: the attempt's deadline and the store's calls around
/// it. The delivery is also stored as due only when it ends, so a node
/// that dies mid-attempt delays it by this much.
pub const ATTEMPT_LEASE: Duration = ATTEMPT_DEADLINE.saturating_add(Duration::from_secs(15));

/// The attempts this node has under way, by task: each delivery's id and
/// job, so none is started twice and each job's share is bounded.
#[derive(Default)]
struct InFlight {
    tasks: JoinSet<()>,
    ids: HashMap<Id, (String, String)>,
}

impl InFlight {
    fn has(&self, id: &str) -> bool {
        self.ids.values().any(|(d, _)| d == id)
    }

    fn of_job(&self, job: &str) -> usize {
        self.ids.values().filter(|(_, j)| j == job).count()
    }

    fn ended(&mut self, done: Result<(Id, ()), tokio::task::JoinError>) {
        let id = match done {
            Ok((id, ())) => id,
            Err(e) => e.id(),
        };
        self.ids.remove(&id);
    }
}

impl Watches {
    /// Makes due deliveries until the task is dropped (attempts under way
    /// are dropped with it, and stay pending). A scan never waits for the
    /// attempts it started: it runs again when one ends, when a run queues
    /// a delivery, or when the next is due.
    pub(super) async fn deliveries(self: Arc<Self>) {
        let mut flight = InFlight::default();
        loop {
            let pause = match self.scan(&mut flight).await {
                Ok(next) => next,
                Err(Unavailable) => IDLE_SCAN,
            };
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                () = self.queued.notified() => {}
                Some(done) = flight.tasks.join_next_with_id(), if !flight.tasks.is_empty() => {
                    flight.ended(done);
                }
            }
            while let Some(done) = flight.tasks.try_join_next_with_id() {
                flight.ended(done);
            }
        }
    }

    /// One scan: starts an attempt at every due delivery of a job this
    /// node knows (at most [`CONCURRENT`] under way, [`PER_JOB`] per job),
    /// earliest due first; returns how long to wait for the next due one.
    async fn scan(self: &Arc<Self>, flight: &mut InFlight) -> Result<Duration, Unavailable> {
        let now = now_ms();
        let known: Vec<String> = self.jobs.iter().map(|j| j.settings.id.clone()).collect();
        let scan = self.outbox.scan(SCAN, &known, now).await?;
        self.set_pending(&scan.by_job);
        metrics::pending(scan.count);
        self.drop_old(scan.unknown, now).await;
        let mut next = IDLE_SCAN;
        if let Some(at) = scan.next_at_ms {
            next = next.min(Duration::from_millis(at.saturating_sub(now)));
        }
        let holds = {
            let mut holds = self.holds.lock().unwrap_or_else(|e| e.into_inner());
            holds.retain(|_, at| *at > now);
            holds.clone()
        };
        for d in scan.due {
            if let Some(&at) = holds.get(&d.id) {
                next = next.min(Duration::from_millis(at.saturating_sub(now)));
                continue;
            }
            // One under way is not started again; one over the bounds is
            // started when an attempt ends (which wakes the loop).
            if flight.has(&d.id)
                || flight.ids.len() >= CONCURRENT
                || flight.of_job(&d.job) >= PER_JOB
            {
                continue;
            }
            let (id, job) = (d.id.clone(), d.job.clone());
            let me = Arc::clone(self);
            let task = flight.tasks.spawn(async move { me.attempt(d).await });
            flight.ids.insert(task.id(), (id, job));
        }
        Ok(if scan.cleaned {
            next.min(CLEANED_SCAN)
        } else {
            next
        })
    }

    /// Drops the deliveries of jobs this node does not know (a rolling
    /// deploy, a job removed: left to the nodes that know them) once they
    /// are older than [`MAX_DELIVERY_AGE`] (a node that knows the job would
    /// have made or given them up): logged and counted as `expired`.
    async fn drop_old(&self, unknown: Vec<Delivery>, now: u64) {
        let age = u64::try_from(MAX_DELIVERY_AGE.as_millis()).unwrap_or(u64::MAX);
        for d in unknown {
            if now.saturating_sub(d.created_ms) <= age {
                continue;
            }
            if self.outbox.remove(&d).await.is_ok() {
                log::warn!(
                    "watch: delivery {} of job {}, which no node made within {} s: dropped",
                    d.id,
                    d.job,
                    MAX_DELIVERY_AGE.as_secs()
                );
                metrics::delivery("expired");
            }
        }
    }

    /// One attempt at `seen`, under its lease.
    async fn attempt(&self, seen: Delivery) {
        let name = format!("delivery:{}/{}", seen.job, seen.id);
        let Some(lease) = self.outbox.lease(&name, ATTEMPT_LEASE).await else {
            // Another node makes it, or the store did not answer.
            self.hold(&seen, now_ms() + LEASED_ELSEWHERE);
            return;
        };
        // Read again under the lease: another node may have made it since.
        match self.outbox.get(&seen.job, &seen.id).await {
            Ok(Some(current)) if current.next_at_ms <= now_ms() => {
                self.attempt_leased(current).await;
            }
            Ok(Some(current)) => self.hold(&current, current.next_at_ms),
            Ok(None) => {}
            Err(Unavailable) => self.hold(&seen, now_ms() + LEASED_ELSEWHERE),
        }
        self.outbox.release(&lease).await;
    }

    /// Holds `d` back on this node until `at` (ms since the epoch).
    fn hold(&self, d: &Delivery, at: u64) {
        let mut holds = self.holds.lock().unwrap_or_else(|e| e.into_inner());
        holds.insert(d.id.clone(), at);
    }

    async fn attempt_leased(&self, mut d: Delivery) {
        // The scan offers only known jobs' deliveries; one whose job is not
        // known here is left for the nodes that know it.
        let Some(job) = self.job(&d.job).cloned() else {
            return;
        };
        let settings = &job.settings;
        let id = settings.id.as_str();
        // The attempt's number, and a due time at the end of its lease, are
        // stored before the post: a crash mid-attempt neither repeats the
        // number nor makes the delivery due while the lease still holds.
        d.attempts += 1;
        let lease_ms = u64::try_from(ATTEMPT_LEASE.as_millis()).unwrap_or(u64::MAX);
        d.next_at_ms = now_ms().saturating_add(lease_ms);
        if d.attempts > settings.max_attempts {
            // Attempts cut short (crashes) spent them all.
            log::warn!(
                "watch {id}: delivery {} given up after {} attempt(s) cut short",
                d.id,
                d.attempts - 1
            );
            if self.outbox.remove(&d).await.is_err() {
                self.hold(&d, now_ms() + 60_000);
            }
            metrics::delivery("failed");
            return;
        }
        if self.outbox.update(&d).await.is_err() {
            self.hold(&d, now_ms() + LEASED_ELSEWHERE);
            return;
        }
        let body = Bytes::from(d.body.clone());
        let signed = sign::sign(&settings.key, &d.id, now_ms() / 1000, &body);
        // The run's trace: the receiver's spans join it, and so does ours.
        let traceparent = super::run::delivery_trace(&d).map(|t| t.traceparent());
        let span = spans::watch_delivery(id, d.attempts, traceparent.as_deref());
        let outcome = self
            .sender
            .post(&settings.webhook, &signed, body, traceparent.as_deref())
            .instrument(span.clone())
            .await;
        span.record("outcome", outcome.name());
        match outcome {
            Attempt::Delivered(status) => {
                log::info!(
                    "watch {id}: delivery {} made (HTTP {status}, attempt {})",
                    d.id,
                    d.attempts
                );
                if self.outbox.remove(&d).await.is_err() {
                    // Delivered; made again (at least once) only if the
                    // store still lists it a minute from now.
                    self.hold(&d, now_ms() + 60_000);
                }
                metrics::delivery("delivered");
                job.update(|s| s.last_error = None);
            }
            Attempt::Retry { why, after } if d.attempts < settings.max_attempts => {
                let wait = backoff(d.attempts).max(after.unwrap_or_default());
                log::info!(
                    "watch {id}: delivery {} attempt {} failed ({why}); next in {} ms",
                    d.id,
                    d.attempts,
                    wait.as_millis()
                );
                d.next_at_ms =
                    now_ms().saturating_add(u64::try_from(wait.as_millis()).unwrap_or(u64::MAX));
                self.hold(&d, d.next_at_ms);
                let _ = self.outbox.update(&d).await;
                metrics::delivery("retried");
                job.update(|s| s.last_error = Some(format!("delivery {}: {why}", d.id)));
            }
            Attempt::Retry { why, .. } | Attempt::Failed(why) => {
                log::warn!(
                    "watch {id}: delivery {} given up after {} attempt(s): {why}",
                    d.id,
                    d.attempts
                );
                if self.outbox.remove(&d).await.is_err() {
                    self.hold(&d, now_ms() + 60_000);
                }
                metrics::delivery("failed");
                job.update(|s| s.last_error = Some(format!("delivery {} given up: {why}", d.id)));
            }
        }
    }
}

/// The wait after the `attempts`-th failed attempt: doubling from one
/// second, capped at an hour, between half and all of it at random (full
/// jitter over the upper half, so retries of many deliveries spread out).
pub fn backoff(attempts: u32) -> Duration {
    let exp = FIRST_BACKOFF
        .saturating_mul(1u32 << attempts.saturating_sub(1).min(20))
        .min(MAX_BACKOFF);
    let half = exp / 2;
    let spread = u64::try_from(half.as_millis()).unwrap_or(u64::MAX).max(1);
    half + Duration::from_millis(super::random_u64() % spread)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_and_is_capped() {
        for (attempts, base) in [
            (1u32, 1u64),
            (2, 2),
            (3, 4),
            (5, 16),
            (20, 3600),
            (99, 3600),
        ] {
            let d = backoff(attempts);
            let base = Duration::from_secs(base);
            assert!(d >= base / 2 && d <= base, "{attempts}: {d:?}");
        }
    }
}
