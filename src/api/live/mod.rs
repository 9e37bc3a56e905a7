//! Changes as they happen (`board_api.live`, docs/changes.md): what
//! `/changes` needs to answer while a board changes: the event stream
//! ([`stream`]), the long poll (`wait`), and under both the pollers
//! ([`poll`]).
//!
//! While someone waits on a board (one share link's board, named by its
//! tag, a hash of board id and permission id), one poller per node follows
//! it and publishes its version on a watch channel that every waiter of
//! that board reads. The last waiter to leave stops it. A waiter holds no
//! document: the board's tag and the version it last saw.
//!
//! Without the fleet tier each node's poller loads the board fresh every
//! `every`. With it, one node of the fleet polls a board per interval (it
//! holds the board's lease) and announces each new version; the others
//! hear it ([`fleet`]) and read the new document from the tier. When the
//! tier does not answer, every node polls for itself again.

#[cfg(feature = "fleet")]
mod fleet;
mod poll;
pub(crate) mod stream;

use super::error::ApiError;
use super::share_link::ShareLink;
use crate::config::LiveSettings;
use crate::metrics::Metrics;
use crate::store::{board_tag, Boards};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::watch;

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
    /// Boards someone waits on, by tag.
    watched: Mutex<HashMap<String, Watched>>,
    /// Streams and waits open on this node.
    open: AtomicUsize,
    /// Streams and waits open per client address.
    clients: Mutex<HashMap<IpAddr, usize>>,
    /// Flips to true when the server shuts down: streams end.
    shutdown: watch::Sender<bool>,
    /// The task reading the fleet's announcements, started with the first
    /// board followed.
    #[cfg(feature = "fleet")]
    listener: std::sync::OnceLock<tokio::task::AbortHandle>,
}

struct Watched {
    latest: watch::Sender<Latest>,
    /// The last version the fleet announced for the board, for its poller.
    #[cfg_attr(not(feature = "fleet"), allow(dead_code))]
    heard: watch::Sender<Option<Arc<str>>>,
    waiters: usize,
    poller: tokio::task::AbortHandle,
}

impl Drop for HubInner {
    fn drop(&mut self) {
        #[cfg(feature = "fleet")]
        if let Some(listener) = self.listener.get() {
            listener.abort();
        }
    }
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
                #[cfg(feature = "fleet")]
                listener: std::sync::OnceLock::new(),
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
        let key = board_tag(&link.board_id, &link.permission_id);
        let inner = &self.inner;
        #[cfg(feature = "fleet")]
        fleet::listen(inner);
        let mut watched = inner.watched.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = watched.entry(key.clone()).or_insert_with(|| {
            let (latest, _) = watch::channel(Latest::Version(Arc::from(seen)));
            let (heard, _) = watch::channel(None);
            let poller = poll::Poller {
                boards: inner.boards.clone(),
                metrics: inner.metrics.clone(),
                link: link.clone(),
                tag: key.clone(),
                every: inner.settings.every,
                latest: latest.clone(),
                heard: heard.subscribe(),
            };
            let poller = tokio::spawn(poller.run()).abort_handle();
            Watched {
                latest,
                heard,
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
