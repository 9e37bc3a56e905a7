//! The delivery loop: scans the outbox for deliveries that are due, takes
//! each one's lease (one node makes an attempt, fleet-wide), signs and
//! posts it, then removes it (delivered, or given up) or writes back when
//! the next attempt is due: exponential back-off with jitter, at least the
//! receiver's `Retry-After`, up to the job's `max_attempts`.

use super::http::{Attempt, ATTEMPT_DEADLINE};
use super::outbox::{Delivery, Unavailable};
use super::{metrics, now_ms, sign, Watches};
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// Deliveries read per scan.
const SCAN: usize = 200;
/// Attempts made at once.
const CONCURRENT: usize = 8;
/// The longest pause between scans: deliveries another node queued, or one
/// whose lease a dead node held, are found within it.
const IDLE_SCAN: Duration = Duration::from_secs(5);
/// The first retry's delay; each retry doubles it, up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(3600);
/// How soon a delivery that is due but leased by another node is looked
/// at again.
const LEASED_ELSEWHERE: Duration = Duration::from_secs(1);
/// An attempt's lease outlives the attempt's deadline by this.
const LEASE_MARGIN: Duration = Duration::from_secs(15);

impl Watches {
    /// Makes due deliveries until the task is dropped.
    pub(super) async fn deliveries(self: Arc<Self>) {
        loop {
            let pause = match self.scan().await {
                Ok(next) => next,
                Err(Unavailable) => IDLE_SCAN,
            };
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                () = self.queued.notified() => {}
            }
        }
    }

    /// One scan: attempts every due delivery (at most [`CONCURRENT`] at
    /// once); returns how long to wait for the next due one.
    async fn scan(self: &Arc<Self>) -> Result<Duration, Unavailable> {
        let mut pending = self.outbox.pending(SCAN).await?;
        let mut by_job: HashMap<String, usize> = HashMap::new();
        for d in &pending {
            *by_job.entry(d.job.clone()).or_default() += 1;
        }
        self.set_pending(&by_job);
        metrics::pending(self.outbox.count().await.unwrap_or(pending.len()));
        let now = now_ms();
        let mut next = IDLE_SCAN;
        let mut due = Vec::new();
        {
            let mut holds = self.holds.lock().unwrap_or_else(|e| e.into_inner());
            holds.retain(|id, _| pending.iter().any(|d| d.id == *id));
            for d in &mut pending {
                if let Some(&at) = holds.get(&d.id) {
                    d.next_at_ms = d.next_at_ms.max(at);
                }
            }
        }
        for d in pending {
            if d.next_at_ms <= now {
                due.push(d);
            } else {
                next = next.min(Duration::from_millis(d.next_at_ms - now));
            }
        }
        due.sort_by_key(|d| d.next_at_ms);
        let mut tasks = tokio::task::JoinSet::new();
        if !due.is_empty() {
            // Due but leased by another node: look again soon.
            next = next.min(LEASED_ELSEWHERE);
        }
        for d in due.into_iter().take(CONCURRENT) {
            let me = Arc::clone(self);
            tasks.spawn(async move { me.attempt(d).await });
        }
        let mut attempted = false;
        while let Some(made) = tasks.join_next().await {
            attempted |= made.unwrap_or(false);
        }
        // After attempts, scan again at once: more may be due, and the
        // counts `/watch` and the gauge show are refreshed.
        Ok(if attempted { Duration::ZERO } else { next })
    }

    /// One attempt at `seen`, under its lease; whether one was made.
    async fn attempt(&self, seen: Delivery) -> bool {
        let name = format!("delivery:{}/{}", seen.job, seen.id);
        let life = ATTEMPT_DEADLINE + LEASE_MARGIN;
        let Some(lease) = self.outbox.lease(&name, life).await else {
            return false;
        };
        // Read again under the lease: another node may have made it since.
        let mut made = false;
        if let Ok(Some(current)) = self.outbox.get(&seen.job, &seen.id).await {
            if current.next_at_ms <= now_ms() {
                self.attempt_leased(current).await;
                made = true;
            }
        }
        self.outbox.release(&lease).await;
        made
    }

    /// Holds `d` back on this node until `at` (ms since the epoch).
    fn hold(&self, d: &Delivery, at: u64) {
        let mut holds = self.holds.lock().unwrap_or_else(|e| e.into_inner());
        holds.insert(d.id.clone(), at);
    }

    async fn attempt_leased(&self, mut d: Delivery) {
        let Some(job) = self.job(&d.job).cloned() else {
            log::warn!(
                "watch: delivery {} of job {} that is no longer configured: dropped",
                d.id,
                d.job
            );
            let _ = self.outbox.remove(&d).await;
            metrics::delivery("failed");
            return;
        };
        let settings = &job.settings;
        let body = Bytes::from(d.body.clone());
        let signed = sign::sign(&settings.key, &d.id, now_ms() / 1000, &body);
        let outcome = self.sender.post(&settings.webhook, &signed, body).await;
        d.attempts += 1;
        let id = settings.id.as_str();
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
