//! The board store: where a board is looked for, loaded and kept, and where
//! what is rendered from it is cached. It knows nothing of HTTP.
//!
//! A request for a board goes down the levels until one answers:
//!
//! 1. **The process cache** ([`budget`]): sanitized documents, rendered
//!    bodies and their compressed variants in one byte budget (TinyUfo, each
//!    entry weighed by its size in memory; an entry heavier than
//!    `max_entry_bytes` is answered but not kept). Provider failures are
//!    remembered apart, in a small count-bounded cache, so bad links cannot
//!    push good boards out.
//! 2. **Coalescing** ([`coalesce`]): concurrent requests for one board
//!    that missed the process cache share one lookup below. The lookup runs
//!    in its own task: a caller that goes away leaves it to the others, and
//!    when the last one goes it is aborted, so nobody's board is fetched
//!    and built for no one.
//! 3. **The fleet tier** ([`shared`], when `cache.shared` is set): the
//!    documents every node of a fleet shares through Redis or Valkey, and
//!    the fleet-wide lock that makes one node load a board while the
//!    others wait for it.
//! 4. **The load** ([`load`]): behind the admission gate (at most
//!    `max_cold_loads` at once, a bounded queue, `503` past it), a fetch
//!    from the provider and the build on the work pool.
//!
//! Documents are kept by coverage: an outline request takes a cached
//! outline or full document, or joins a full load in flight; a full request
//! takes only a full document. What is rendered from a document is cached
//! beside it ([`render`]).

mod budget;
mod coalesce;
mod fresh;
mod kept;
mod load;
mod outcome;
mod render;
pub mod shared;
#[cfg(feature = "sqlite")]
pub mod sqlite;
pub mod versions;

pub use budget::{Budget, CacheSettings, DEFAULT_BUDGET_BYTES};
pub use coalesce::{Coalescer, Stored};
pub use fresh::board_tag;
use outcome::loaded;
pub use outcome::{LoadError, LoadTiming, Source};
pub use shared::{Endpoint, SharedSettings};
pub use versions::{VersionSettings, Versions};

use crate::document::Coverage;
use crate::encoding::Encoding;
use crate::governance::{Limits, WorkPool};
use crate::metrics::Metrics;
use crate::pipeline::{LoadedBoard, Rendered, Representation};
use crate::provider::client::ProviderSettings;
use crate::provider::error::FetchError;
use crate::trace::spans;
use load::Loader;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tracing::instrument::WithSubscriber as _;
use tracing::Instrument as _;

/// A loaded board and the generation that tells its renders from those of
/// an earlier load of the same link.
#[derive(Clone)]
pub struct Doc {
    pub board: Arc<LoadedBoard>,
    /// How the load that produced it went (zero when it was not loaded
    /// from the provider by this node).
    pub timing: LoadTiming,
    /// Read from the fleet tier rather than loaded by this node.
    pub from_tier: bool,
    generation: u64,
}

/// Generations are only compared for equality: one counter for the process.
static GENERATIONS: AtomicU64 = AtomicU64::new(1);

impl Doc {
    fn new(board: LoadedBoard, timing: LoadTiming) -> Self {
        Doc {
            board: Arc::new(board),
            timing,
            from_tier: false,
            generation: GENERATIONS.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// A document read from the fleet tier.
    #[cfg_attr(not(feature = "fleet"), allow(dead_code))]
    fn from_tier(board: LoadedBoard, timing: LoadTiming) -> Self {
        Doc {
            from_tier: true,
            ..Doc::new(board, timing)
        }
    }
}

/// A rendered body in one content coding (its ETag is the identity
/// body's: a weak validator names the content, not the coding).
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    pub rendered: Rendered,
    pub encoding: Encoding,
}

type DocKey = (String, String);

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Document(DocKey, Coverage),
    Render {
        generation: u64,
        scope: &'static str,
        selection: Arc<str>,
        representation: Representation,
        encoding: Encoding,
    },
    /// What a caller derived from a document (see [`Boards::derived`]).
    Derived {
        generation: u64,
        kind: &'static str,
        key: Arc<str>,
    },
}

#[derive(Clone)]
enum Entry {
    Document(Doc),
    Render(Variant),
    Derived(bytes::Bytes),
}

type Loaded = Result<Doc, LoadError>;

/// The process cache and the coalescing in front of the levels below.
struct Cached {
    settings: CacheSettings,
    budget: Budget<Key, Entry>,
    failures: Budget<DocKey, FetchError>,
    loads: Coalescer<(DocKey, Coverage), Loaded>,
}

struct Inner {
    loader: Loader,
    cache: Option<Cached>,
    #[cfg(feature = "fleet")]
    shared: Option<Arc<shared::SharedTier>>,
    /// The fleet's side of following boards live (leases, announcements),
    /// with the tier.
    #[cfg(feature = "fleet")]
    live: Option<Arc<shared::live::FleetLive>>,
    /// Where each version loaded is kept, for `/changes`.
    versions: Option<Versions>,
}

/// The read side of the API: documents and renders, cached, coalesced,
/// admitted and computed on the pool. Cheap to clone.
#[derive(Clone)]
pub struct Boards {
    inner: Arc<Inner>,
}

/// Bytes a render entry costs beside its body: key, ETag, bookkeeping.
const RENDER_OVERHEAD: usize = 256;

impl Boards {
    /// [`Boards::reporting`] to no metrics, for the tests and benches.
    ///
    /// # Errors
    /// As [`Boards::reporting`].
    #[cfg(any(test, feature = "internals"))]
    pub fn new(
        provider: ProviderSettings,
        provider_name: String,
        cache: Option<CacheSettings>,
        shared: Option<SharedSettings>,
        limits: &Limits,
    ) -> Result<Self, String> {
        Self::reporting(provider, provider_name, cache, shared, limits, None)
    }

    /// `cache: None` turns caching and coalescing off (every request
    /// loads); `shared` adds the fleet tier below the process cache (it
    /// needs the cache on, and the `fleet` feature). The cache, pool, cold
    /// loads and fleet tier report to the API's `metrics`.
    ///
    /// # Errors
    /// The pool's threads could not be started, the provider client could
    /// not be built (e.g. an unreadable `ca_file`), or the fleet tier was
    /// asked for without the process cache or the `fleet` feature.
    pub(crate) fn reporting(
        provider: ProviderSettings,
        provider_name: String,
        cache: Option<CacheSettings>,
        shared: Option<SharedSettings>,
        limits: &Limits,
        metrics: Option<Metrics>,
    ) -> Result<Self, String> {
        #[cfg(feature = "fleet")]
        let (shared, pace) = match (shared, &cache) {
            (None, _) => (None, None),
            (Some(_), None) => return Err("cache.shared needs the cache on".into()),
            (Some(settings), Some(cache)) => {
                let paced = settings.fleet_requests_per_second.is_some();
                let limits = shared::TierLimits {
                    max_document_bytes: cache.max_entry_bytes,
                    // Every element, and the root board.
                    max_nodes: provider.max_elements.saturating_add(1),
                    ttl: cache.ttl,
                    error_ttl: cache.error_ttl,
                };
                let tier = Arc::new(shared::SharedTier::new(settings, limits, metrics.clone())?);
                let pace =
                    paced.then(|| Arc::clone(&tier) as Arc<dyn crate::provider::client::Pace>);
                (Some(tier), pace)
            }
        };
        #[cfg(not(feature = "fleet"))]
        let pace = match shared {
            Some(_) => return Err("cache.shared needs the `fleet` feature of this build".into()),
            None => None,
        };
        #[cfg(feature = "fleet")]
        let live = match &shared {
            Some(tier) => Some(Arc::new(shared::live::FleetLive::new(Arc::clone(tier))?)),
            None => None,
        };
        let loader = Loader::new(provider, provider_name, limits, pace, &cache, &metrics)?;
        let cache = cache.map(|settings| Cached {
            budget: Budget::new(settings.budget_bytes, settings.max_entry_bytes)
                .reporting(metrics.clone()),
            failures: Budget::counted(settings.max_error_entries),
            loads: Coalescer::default(),
            settings,
        });
        Ok(Boards {
            inner: Arc::new(Inner {
                loader,
                cache,
                #[cfg(feature = "fleet")]
                shared,
                #[cfg(feature = "fleet")]
                live,
                versions: None,
            }),
        })
    }

    /// The sanitized board for (board id, permission id), holding at least
    /// `coverage` of it, and the level that answered.
    ///
    /// A load runs in a task of its own and is shared by every caller that
    /// asks for the board meanwhile; when all of them have dropped this
    /// future before it finished, the load is aborted (its provider
    /// requests end, its queued pool jobs are dropped).
    pub async fn document(
        &self,
        board_id: &str,
        permission_id: &str,
        coverage: Coverage,
    ) -> (Loaded, Source) {
        let Some(cache) = &self.inner.cache else {
            let inner = Arc::clone(&self.inner);
            let (b, p) = (board_id.to_owned(), permission_id.to_owned());
            // In a task of its own, as with the cache, and stopped the same
            // way: its only caller gone, nobody waits for it.
            let span = spans::load(board_id);
            let mut task = coalesce::AbortOnDrop(tokio::spawn(
                async move {
                    let deadline = inner.loader.deadline();
                    let outcome = inner.loader.load(&b, &p, coverage, deadline).await;
                    loaded(&outcome);
                    outcome
                }
                .instrument(span)
                .with_current_subscriber(),
            ));
            let outcome = (&mut task.0)
                .await
                .unwrap_or_else(|e| Err(LoadError::Internal(format!("load task failed: {e}"))));
            self.inner.keep_version(board_id, permission_id, &outcome);
            return (outcome, Source::Miss);
        };
        let key = (board_id.to_owned(), permission_id.to_owned());
        if let Some(outcome) = cache.stored(&key, coverage) {
            return (outcome, Source::Hit);
        }
        let full_loading = (coverage == Coverage::Outline)
            .then(|| cache.loads.joining(&(key.clone(), Coverage::Full)))
            .flatten();
        let joined = match full_loading {
            Some(joined) => joined,
            None => {
                let inner = Arc::clone(&self.inner);
                // The load runs in a task of its own: its span is opened
                // here, a child of the request that started it.
                let span = spans::load(board_id);
                let load_key = key.clone();
                let load = move || {
                    async move {
                        let outcome = inner.below_process(load_key, coverage).await;
                        loaded(&outcome);
                        outcome
                    }
                    .instrument(span)
                };
                // A load of this key may have ended since the look above:
                // what it stored is looked for again where no load can end
                // unseen, so its outcome is not loaded a second time.
                let stored = || cache.stored(&key, coverage);
                match cache
                    .loads
                    .join_or_stored((key.clone(), coverage), stored, load)
                {
                    Ok(joined) => joined,
                    Err(Stored(outcome)) => return (outcome, Source::Hit),
                }
            }
        };
        let joined_load = joined.joined;
        let outcome = joined
            .value()
            .await
            .unwrap_or_else(|| Err(LoadError::Internal("load task panicked".into())));
        let source = match &outcome {
            _ if joined_load => Source::Coalesced,
            Ok(doc) if doc.from_tier => Source::Shared,
            _ => Source::Miss,
        };
        (outcome, source)
    }

    /// [`Boards::document`] read fresh: loaded from the provider, past the
    /// process cache, its remembered failures and the fleet tier (a watch
    /// run asked for by hand, right after an edit). The outcome is kept and
    /// remembered in the process cache as any load's, so the next request
    /// sees it; it joins no load in flight and no other caller joins it.
    pub async fn document_fresh(
        &self,
        board_id: &str,
        permission_id: &str,
        coverage: Coverage,
    ) -> Loaded {
        let inner = Arc::clone(&self.inner);
        let (b, p) = (board_id.to_owned(), permission_id.to_owned());
        // In a task of its own, as `document`'s loads, aborted when dropped.
        let span = spans::load(board_id);
        let mut task = coalesce::AbortOnDrop(tokio::spawn(
            async move {
                let deadline = inner.loader.deadline();
                let outcome = inner.loader.load(&b, &p, coverage, deadline).await;
                loaded(&outcome);
                inner.keep_version(&b, &p, &outcome);
                if let Some(cache) = &inner.cache {
                    cache.remember((b, p), coverage, &outcome, cache.settings.ttl);
                }
                outcome
            }
            .instrument(span)
            .with_current_subscriber(),
        ));
        (&mut task.0)
            .await
            .unwrap_or_else(|e| Err(LoadError::Internal(format!("load task failed: {e}"))))
    }

    /// The fleet's side of following boards live, when the fleet tier is
    /// configured.
    #[cfg(feature = "fleet")]
    pub(crate) fn fleet_live(&self) -> Option<&Arc<shared::live::FleetLive>> {
        self.inner.live.as_ref()
    }

    /// The work pool, for callers with CPU work of their own.
    pub fn pool(&self) -> &WorkPool {
        self.inner.loader.pool()
    }
}

impl Cached {
    /// What the process cache holds for `key`: a document with at least
    /// `coverage`, or a remembered provider failure.
    fn stored(&self, key: &DocKey, coverage: Coverage) -> Option<Loaded> {
        if let Some(doc) = self.document(key, coverage) {
            return Some(Ok(doc));
        }
        let failure = self.failures.get(key)?;
        Some(Err(LoadError::Fetch(failure)))
    }

    /// A cached document holding at least `coverage`: an outline request
    /// looks for an outline first, then for a full document (either serves
    /// it); a full request only for the latter.
    fn document(&self, key: &DocKey, coverage: Coverage) -> Option<Doc> {
        let mut wanted = Key::Document(key.clone(), coverage);
        if let Some(Entry::Document(doc)) = self.budget.get(&wanted) {
            return Some(doc);
        }
        if coverage == Coverage::Outline {
            wanted = Key::Document(key.clone(), Coverage::Full);
            if let Some(Entry::Document(doc)) = self.budget.get(&wanted) {
                return Some(doc);
            }
        }
        None
    }

    /// Stores an outcome where the next request looks first: a document in
    /// the budget for `ttl` (if it fits at all), or for at most `error_ttl`
    /// when a nested board is missing for a reason a retry may fix (the
    /// deadline, a failed request), so the hole is not served for long; a
    /// provider failure in the failures cache for `error_ttl`. Overload and
    /// internal errors are not remembered: they say nothing of the board.
    fn remember(&self, key: DocKey, coverage: Coverage, outcome: &Loaded, ttl: Duration) {
        match outcome {
            Ok(doc) => {
                let ttl = if doc.board.completeness().transient {
                    ttl.min(self.settings.error_ttl)
                } else {
                    ttl
                };
                let bytes = doc.board.weight() + key.0.len() + key.1.len();
                let kept = self.budget.put(
                    Key::Document(key, coverage),
                    Entry::Document(doc.clone()),
                    bytes,
                    ttl,
                );
                if !kept {
                    log::debug!("board of {bytes} bytes served but not cached");
                }
            }
            Err(LoadError::Fetch(FetchError::OverBudget)) => {}
            Err(LoadError::Fetch(e)) => {
                self.failures
                    .put(key, e.clone(), 1, self.settings.error_ttl);
            }
            Err(LoadError::Overloaded | LoadError::Internal(_)) => {}
        }
    }
}

impl Inner {
    /// What the levels below the process cache answer for a board that
    /// missed it, remembered in the process cache on the way back up.
    async fn below_process(&self, key: DocKey, coverage: Coverage) -> Loaded {
        let deadline = self.loader.deadline();
        let Some(cache) = &self.cache else {
            return self.loader.load(&key.0, &key.1, coverage, deadline).await;
        };
        let ttl = cache.settings.ttl;
        #[cfg(feature = "fleet")]
        let (outcome, ttl) = match &self.shared {
            Some(tier) => {
                let link = (key.0.as_str(), key.1.as_str());
                shared::level::through(
                    tier,
                    &self.loader,
                    link,
                    coverage,
                    deadline,
                    &cache.settings,
                )
                .instrument(tracing::info_span!("shared_board_api.tier"))
                .await
            }
            None => (
                self.loader.load(&key.0, &key.1, coverage, deadline).await,
                ttl,
            ),
        };
        #[cfg(not(feature = "fleet"))]
        let outcome = self.loader.load(&key.0, &key.1, coverage, deadline).await;
        self.keep_version(&key.0, &key.1, &outcome);
        cache.remember(key, coverage, &outcome, ttl);
        outcome
    }
}

#[cfg(all(test, feature = "demo"))]
mod tests;
