//! Changes as they happen (`board_api.live`, docs/changes.md): what
//! `/changes` needs to answer while a board changes: the event stream
//! ([`stream`]), the long poll (`wait`), and under both the pollers.
//!
//! While someone waits on a board (one share link's board, keyed by a hash
//! of board id and permission id), one poller per node loads it fresh every
//! `every` through the store's usual path ([`Boards::fresh_document`]:
//! coalescing, fleet tier, limits) and publishes its version on a watch
//! channel that every waiter of that board reads. The last waiter to leave
//! stops it. A waiter holds no document: the board key and the version it
//! last saw.

pub(crate) mod stream;

use super::error::ApiError;
use super::share_link::ShareLink;
use crate::config::LiveSettings;
use crate::metrics::Metrics;
use crate::provider::error::FetchError;
use crate::store::versions::owner;
use crate::store::{Boards, LoadError};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::watch;
use tracing::Instrument as _;

/// What a poller last saw of a board.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Latest {
    /// The board's version.
    Version(Arc<str>),
    /// The board is gone for this link: the API's error code
    /// (`BOARD_ACCESS_DENIED`, `BOARD_NOT_FOUND`).
    Gone(&'static str),
}

/// How long a client refused with `503 OVERLOADED` by the stream bound
/// should wait.
const RETRY_AFTER: Duration = Duration::from_secs(5);

/// The pollers and the bounds of one API instance. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Hub {
    inner: Arc<HubInner>,
}

struct HubInner {
    settings: LiveSettings,
    boards: Boards,
    metrics: Metrics,
    /// Boards someone waits on, by board key.
    watched: Mutex<HashMap<String, Watched>>,
    /// Streams and waits open on this node.
    open: AtomicUsize,
    /// Streams and waits open per client address.
    clients: Mutex<HashMap<IpAddr, usize>>,
    /// Flips to true when the server shuts down: streams end.
    shutdown: watch::Sender<bool>,
}

struct Watched {
    latest: watch::Sender<Latest>,
    waiters: usize,
    poller: tokio::task::AbortHandle,
}

impl Hub {
    pub(crate) fn new(settings: LiveSettings, boards: Boards, metrics: Metrics) -> Self {
        Hub {
            inner: Arc::new(HubInner {
                settings,
                boards,
                metrics,
                watched: Mutex::default(),
                open: AtomicUsize::new(0),
                clients: Mutex::default(),
                shutdown: watch::Sender::new(false),
            }),
        }
    }

    pub(crate) fn settings(&self) -> &LiveSettings {
        &self.inner.settings
    }

    pub(crate) fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// Ends every stream (the server is shutting down); new ones are not
    /// refused, but end at once.
    pub(crate) fn shut_down(&self) {
        self.inner.shutdown.send_replace(true);
    }

    /// Resolves when the server shuts down.
    pub(crate) fn shutting_down(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut rx = self.inner.shutdown.subscribe();
        async move {
            let _ = rx.wait_for(|down| *down).await;
        }
    }

    /// A place for one more stream or wait, within `max_streams` on the
    /// node and `max_streams_per_client` for `client`.
    ///
    /// # Errors
    /// `503 OVERLOADED` past the node's bound, `429 RATE_LIMITED` past the
    /// client's.
    pub(crate) fn admit(&self, client: Option<IpAddr>) -> Result<Slot, ApiError> {
        let inner = &self.inner;
        let max = inner.settings.max_streams;
        let taken = inner
            .open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            });
        if taken.is_err() {
            return Err(ApiError::Overloaded {
                retry_after: RETRY_AFTER,
            });
        }
        if let Some(ip) = client {
            let mut clients = inner.clients.lock().unwrap_or_else(PoisonError::into_inner);
            let count = clients.entry(ip).or_default();
            if *count >= inner.settings.max_streams_per_client {
                drop(clients);
                inner.open.fetch_sub(1, Ordering::AcqRel);
                return Err(ApiError::RateLimited {
                    retry_after: RETRY_AFTER,
                });
            }
            *count += 1;
        }
        inner.metrics.live_open(1);
        Ok(Slot {
            inner: Arc::clone(inner),
            client,
        })
    }
}

/// One stream's or wait's place within the bounds, given back when dropped.
pub(crate) struct Slot {
    inner: Arc<HubInner>,
    client: Option<IpAddr>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.inner.open.fetch_sub(1, Ordering::AcqRel);
        self.inner.metrics.live_open(-1);
        if let Some(ip) = self.client {
            let mut clients = self
                .inner
                .clients
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if let Some(count) = clients.get_mut(&ip) {
                *count -= 1;
                if *count == 0 {
                    clients.remove(&ip);
                }
            }
        }
    }
}

impl Slot {
    /// Waits on the board of `link`, whose version the caller knows as
    /// `seen`: joins its poller, or starts one (the first poll one `every`
    /// from now). A version the poller knows and `seen` is not counts as
    /// new at once.
    pub(crate) fn watch(&self, link: &ShareLink, seen: &str) -> Waiter {
        let key = owner(&link.board_id, &link.permission_id);
        let inner = &self.inner;
        let mut watched = inner.watched.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = watched.entry(key.clone()).or_insert_with(|| {
            let (latest, _) = watch::channel(Latest::Version(Arc::from(seen)));
            let poller = tokio::spawn(poll(
                inner.boards.clone(),
                inner.metrics.clone(),
                link.clone(),
                inner.settings.every,
                latest.clone(),
            ))
            .abort_handle();
            Watched {
                latest,
                waiters: 0,
                poller,
            }
        });
        entry.waiters += 1;
        let mut rx = entry.latest.subscribe();
        if !matches!(&*rx.borrow(), Latest::Version(v) if &**v == seen) {
            rx.mark_changed();
        }
        Waiter {
            inner: Arc::clone(inner),
            key,
            rx,
        }
    }
}

/// One waiter on a board's poller; the poller stops when the last one is
/// dropped.
pub(crate) struct Waiter {
    inner: Arc<HubInner>,
    key: String,
    rx: watch::Receiver<Latest>,
}

impl Waiter {
    /// What the poller sees next that this waiter has not seen.
    pub(crate) async fn next(&mut self) -> Latest {
        if self.rx.changed().await.is_err() {
            // The poller's channel is held while a waiter lives: never.
            return std::future::pending().await;
        }
        self.rx.borrow_and_update().clone()
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        let mut watched = self
            .inner
            .watched
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = watched.get_mut(&self.key) {
            entry.waiters -= 1;
            if entry.waiters == 0 {
                entry.poller.abort();
                watched.remove(&self.key);
            }
        }
    }
}

/// A board's poller: every `every`, a fresh load; a new version or the
/// board gone is published to its waiters.
async fn poll(
    boards: Boards,
    metrics: Metrics,
    link: ShareLink,
    every: Duration,
    latest: watch::Sender<Latest>,
) {
    let start = tokio::time::Instant::now() + every;
    let mut ticks = tokio::time::interval_at(start, every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        // Each poll is a trace of its own: no request is waiting on it.
        let span = crate::trace::spans::live_poll(&link.board_id);
        let done = |outcome: &'static str| {
            span.record("outcome", outcome);
            metrics.live_poll(outcome);
        };
        let now = match boards
            .fresh_document(&link.board_id, &link.permission_id)
            .instrument(span.clone())
            .await
        {
            Ok(doc) => match doc.board.version() {
                Some(version) => Latest::Version(Arc::from(version)),
                None => {
                    done("failed");
                    continue;
                }
            },
            Err(LoadError::Fetch(FetchError::AccessDenied)) => Latest::Gone("BOARD_ACCESS_DENIED"),
            Err(LoadError::Fetch(FetchError::NotFound)) => Latest::Gone("BOARD_NOT_FOUND"),
            Err(e) => {
                log::debug!(
                    "board {}: a fresh load for waiters failed: {e}",
                    link.board_id
                );
                done("failed");
                continue;
            }
        };
        let changed = latest.send_if_modified(|old| {
            if *old == now {
                false
            } else {
                *old = now.clone();
                true
            }
        });
        done(match (&now, changed) {
            (Latest::Gone(_), _) => "gone",
            (_, true) => "changed",
            (_, false) => "same",
        });
    }
}
