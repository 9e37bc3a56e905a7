//! Admission of cold loads: at most `max_cold_loads` run at once, at most
//! `cold_queue` more wait (in arrival order) for a slot, and any beyond
//! that are refused at once so the caller can answer `503 OVERLOADED`.
//! Waiting counts toward the fetch deadline: a load that is still queued
//! when its deadline passes gives up.

use crate::metrics::Metrics;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// Why a cold load was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The queue was full: answer `503 OVERLOADED`.
    Overloaded,
    /// The wait deadline passed while queued (the caller answers `503`:
    /// the load never reached the provider).
    TimedOut,
}

/// The cold-load gate. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Admission {
    slots: Arc<Semaphore>,
    queued: Arc<AtomicUsize>,
    running: Arc<AtomicUsize>,
    queue_limit: usize,
    /// The API's cold-load gauges; `None` for a gate that reports nowhere.
    metrics: Option<Metrics>,
}

/// A running cold load's slot; dropping it lets the next queued load in.
#[derive(Debug)]
pub struct Slot {
    _permit: OwnedSemaphorePermit,
    running: Arc<AtomicUsize>,
    metrics: Option<Metrics>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.running.fetch_sub(1, Ordering::Relaxed);
        if let Some(m) = &self.metrics {
            m.cold_running().add(-1);
        }
    }
}

/// Counts a waiting load in the queue until dropped, however the wait ends
/// (admitted, timed out or the waiting future dropped).
struct Queued<'a> {
    count: &'a AtomicUsize,
    metrics: Option<&'a Metrics>,
}

impl<'a> Queued<'a> {
    /// Joins the queue; the count before joining.
    fn join(count: &'a AtomicUsize, metrics: Option<&'a Metrics>) -> (Self, usize) {
        let before = count.fetch_add(1, Ordering::Relaxed);
        if let Some(m) = metrics {
            m.cold_queued().add(1);
        }
        (Queued { count, metrics }, before)
    }
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::Relaxed);
        if let Some(m) = self.metrics {
            m.cold_queued().add(-1);
        }
    }
}

impl Admission {
    /// `max_running` at least 1; `queue_limit` may be 0 (no waiting).
    #[cfg(any(test, feature = "internals"))]
    pub fn new(max_running: usize, queue_limit: usize) -> Self {
        Self::reporting(max_running, queue_limit, None)
    }

    /// As [`Admission::new`], reporting running and queued loads to `metrics`.
    pub(crate) fn reporting(
        max_running: usize,
        queue_limit: usize,
        metrics: Option<Metrics>,
    ) -> Self {
        Admission {
            slots: Arc::new(Semaphore::new(max_running.max(1))),
            queued: Arc::new(AtomicUsize::new(0)),
            running: Arc::new(AtomicUsize::new(0)),
            queue_limit,
            metrics,
        }
    }

    /// A slot now, or after waiting in the queue until `deadline`.
    ///
    /// # Errors
    /// [`Refused::Overloaded`] when the queue is full,
    /// [`Refused::TimedOut`] when the deadline passes while queued.
    pub async fn enter(&self, deadline: Instant) -> Result<Slot, Refused> {
        if let Ok(permit) = Arc::clone(&self.slots).try_acquire_owned() {
            return Ok(self.slot(permit));
        }
        let (waiting, before) = Queued::join(&self.queued, self.metrics.as_ref());
        if before >= self.queue_limit {
            drop(waiting);
            return Err(Refused::Overloaded);
        }
        let acquired =
            tokio::time::timeout_at(deadline, Arc::clone(&self.slots).acquire_owned()).await;
        drop(waiting);
        match acquired {
            Ok(Ok(permit)) => Ok(self.slot(permit)),
            // The semaphore is never closed; treat it like a timeout anyway.
            Ok(Err(_)) | Err(_) => Err(Refused::TimedOut),
        }
    }

    fn slot(&self, permit: OwnedSemaphorePermit) -> Slot {
        self.running.fetch_add(1, Ordering::Relaxed);
        if let Some(m) = &self.metrics {
            m.cold_running().add(1);
        }
        Slot {
            _permit: permit,
            running: Arc::clone(&self.running),
            metrics: self.metrics.clone(),
        }
    }

    /// Cold loads waiting for a slot right now.
    pub fn queued(&self) -> usize {
        self.queued.load(Ordering::Relaxed)
    }

    /// Cold loads holding a slot right now.
    pub fn running(&self) -> usize {
        self.running.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn later(secs: u64) -> Instant {
        Instant::now() + Duration::from_secs(secs)
    }

    #[tokio::test]
    async fn running_then_queued_then_refused_then_admitted_when_a_slot_frees() {
        let gate = Admission::new(1, 1);
        let first = gate.enter(later(30)).await.expect("a free slot");
        assert_eq!(gate.running(), 1);
        let queued = tokio::spawn({
            let gate = gate.clone();
            async move { gate.enter(later(30)).await.map(|_| ()) }
        });
        // Wait (by events, not time) until the second one is queued.
        while gate.queued() == 0 {
            tokio::task::yield_now().await;
        }
        assert_eq!(gate.enter(later(30)).await.err(), Some(Refused::Overloaded));
        drop(first);
        assert_eq!(queued.await.expect("task"), Ok(()));
        assert_eq!((gate.queued(), gate.running()), (0, 0));
    }

    #[tokio::test]
    async fn a_queued_load_gives_up_at_its_deadline() {
        let gate = Admission::new(1, 4);
        let _held = gate.enter(later(30)).await.expect("a free slot");
        let soon = Instant::now() + Duration::from_millis(20);
        assert_eq!(gate.enter(soon).await.err(), Some(Refused::TimedOut));
        assert_eq!(gate.queued(), 0);
    }

    #[tokio::test]
    async fn no_queue_means_refused_at_once() {
        let gate = Admission::new(1, 0);
        let _held = gate.enter(later(30)).await.expect("a free slot");
        assert_eq!(gate.enter(later(30)).await.err(), Some(Refused::Overloaded));
    }
}
