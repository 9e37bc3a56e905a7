//! A followed board's poller on one node: every `every`, a fresh load of
//! the board (without the fleet tier, or when it does not answer), or with
//! the tier an attempt at the board's lease: the node that holds it loads
//! the board fresh and announces a new version to the fleet; the others
//! read what was announced from the tier ([`Boards::fleet_document`]). A
//! new version, or the board gone, is published to the board's waiters.

use super::super::share_link::ShareLink;
use super::Latest;
use crate::metrics::Metrics;
use crate::provider::error::FetchError;
use crate::store::{Boards, LoadError};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::Instrument;

/// One board's poller.
pub(super) struct Poller {
    pub boards: Boards,
    pub metrics: Metrics,
    pub link: ShareLink,
    /// The board's tag: its name in the fleet's leases and messages.
    #[cfg_attr(not(feature = "fleet"), allow(dead_code))]
    pub tag: String,
    pub every: Duration,
    /// What the board's waiters read.
    pub latest: watch::Sender<Latest>,
    /// What the fleet announced for the board.
    #[cfg_attr(not(feature = "fleet"), allow(dead_code))]
    pub heard: watch::Receiver<Option<Arc<str>>>,
}

/// How long a board's lease lives: its holder renews it every `every`, so
/// half an interval is left for a renewal that comes late (a slow load
/// delays the next tick); a holder that died loses it within this.
#[cfg(feature = "fleet")]
fn lease_life(every: Duration) -> Duration {
    every * 3 / 2
}

impl Poller {
    /// Polls until aborted (the board's last waiter left); the first poll
    /// one `every` from now.
    pub(super) async fn run(self) {
        let start = Instant::now() + self.every;
        let mut ticks = tokio::time::interval_at(start, self.every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        #[cfg(feature = "fleet")]
        if let Some(fleet) = self.boards.fleet_live().cloned() {
            return self.follow(fleet, ticks).await;
        }
        loop {
            ticks.tick().await;
            self.poll().await;
        }
    }

    /// A fresh load; the version it saw is published. `Some((version,
    /// changed))` when the load gave one.
    async fn poll(&self) -> Option<(Arc<str>, bool)> {
        let link = &self.link;
        // Each poll is a trace of its own: no request is waiting on it.
        let span = crate::trace::spans::live_poll(&link.board_id);
        let done = |outcome: &'static str| {
            span.record("outcome", outcome);
            self.metrics.live_poll(outcome);
        };
        let now = match self
            .boards
            .fresh_document(&link.board_id, &link.permission_id)
            .instrument(span.clone())
            .await
        {
            Ok(doc) => match doc.board.version() {
                Some(version) => Latest::Version(Arc::from(version)),
                None => {
                    done("failed");
                    return None;
                }
            },
            Err(e) => match gone(&e) {
                Some(code) => Latest::Gone(code),
                None => {
                    log::debug!(
                        "board {}: a fresh load for waiters failed: {e}",
                        link.board_id
                    );
                    done("failed");
                    return None;
                }
            },
        };
        let changed = self.publish(&now);
        done(match (&now, changed) {
            (Latest::Gone(_), _) => "gone",
            (_, true) => "changed",
            (_, false) => "same",
        });
        match now {
            Latest::Version(v) => Some((v, changed)),
            Latest::Gone(_) => None,
        }
    }

    /// Tells the waiters of `now` when it differs from what they know.
    fn publish(&self, now: &Latest) -> bool {
        self.latest.send_if_modified(|old| {
            if old == now {
                false
            } else {
                *old = now.clone();
                true
            }
        })
    }

    #[cfg(feature = "fleet")]
    fn knows(&self, version: &str) -> bool {
        matches!(&*self.latest.borrow(), Latest::Version(v) if &**v == version)
    }
}

/// The error code of a load that says the board is gone for this link.
fn gone(e: &LoadError) -> Option<&'static str> {
    match e {
        LoadError::Fetch(FetchError::AccessDenied) => Some("BOARD_ACCESS_DENIED"),
        LoadError::Fetch(FetchError::NotFound) => Some("BOARD_NOT_FOUND"),
        _ => None,
    }
}

#[cfg(feature = "fleet")]
mod fleet {
    use super::{gone, lease_life, Latest, Poller};
    use crate::store::shared::live::{Claim, FleetLive};
    use std::sync::Arc;
    use tokio::time::{Instant, Interval};

    /// This node's hold on a board's lease, for the gauge; given back when
    /// the poller stops (its last waiter left, the server stops).
    struct Held {
        fleet: Arc<FleetLive>,
        tag: String,
        metrics: crate::metrics::Metrics,
        held: bool,
    }

    impl Held {
        fn set(&mut self, held: bool) {
            if held != self.held {
                self.held = held;
                self.metrics.live_lease(if held { 1 } else { -1 });
            }
        }
    }

    impl Drop for Held {
        fn drop(&mut self) {
            if self.held {
                self.metrics.live_lease(-1);
                let (fleet, tag) = (Arc::clone(&self.fleet), std::mem::take(&mut self.tag));
                if let Ok(handle) = tokio::runtime::Handle::try_current() {
                    handle.spawn(async move { fleet.release(&tag).await });
                }
            }
        }
    }

    impl Poller {
        /// The poller with the fleet tier: each tick, the lease; between
        /// ticks, what the fleet announces.
        pub(super) async fn follow(mut self, fleet: Arc<FleetLive>, mut ticks: Interval) {
            let mut held = Held {
                fleet: Arc::clone(&fleet),
                tag: self.tag.clone(),
                metrics: self.metrics.clone(),
                held: false,
            };
            // When this node last polled for itself because the tier was
            // behind an announcement: at most once an interval.
            let mut behind: Option<Instant> = None;
            loop {
                tokio::select! {
                    _ = ticks.tick() => {
                        match fleet.claim(&self.tag, lease_life(self.every)).await {
                            Claim::Mine => {
                                held.set(true);
                                if let Some((version, true)) = self.poll().await {
                                    fleet.announce(&self.tag, &version, lease_life(self.every)).await;
                                }
                            }
                            Claim::Theirs(last) => {
                                held.set(false);
                                if let Some(version) = last {
                                    self.adopt(&version, &mut behind).await;
                                }
                            }
                            Claim::Unavailable => {
                                held.set(false);
                                self.metrics.live_local_poll("unavailable");
                                self.poll().await;
                            }
                        }
                    }
                    Ok(()) = self.heard.changed() => {
                        let heard = self.heard.borrow_and_update().clone();
                        if let Some(version) = heard {
                            self.adopt(&version, &mut behind).await;
                        }
                    }
                }
            }
        }

        /// Another node saw `version`: the board as the fleet tier has it
        /// now is read (past this node's process cache, so the streams'
        /// answers are computed from it) and its version published. When
        /// the tier does not hold the version announced (too large to
        /// share, a write that failed), this node loads the board itself,
        /// at most once an interval.
        async fn adopt(&self, version: &str, behind: &mut Option<Instant>) {
            if self.knows(version) {
                return;
            }
            let link = &self.link;
            let now = match self
                .boards
                .fleet_document(&link.board_id, &link.permission_id)
                .await
            {
                Ok(doc) => match doc.board.version() {
                    Some(v) => Latest::Version(Arc::from(v)),
                    None => return,
                },
                Err(e) => match gone(&e) {
                    Some(code) => Latest::Gone(code),
                    None => return,
                },
            };
            let caught_up = matches!(&now, Latest::Version(v) if &**v == version);
            self.publish(&now);
            if caught_up || matches!(now, Latest::Gone(_)) {
                return;
            }
            if behind.is_some_and(|at| at.elapsed() < self.every) {
                return;
            }
            *behind = Some(Instant::now());
            self.metrics.live_local_poll("behind");
            self.poll().await;
        }
    }
}
