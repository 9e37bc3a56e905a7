//! Resource governance: how the API shares a host gateway's machine.
//!
//! The module runs inside someone else's Pingora server, so a burst of work
//! for one board must not starve everything else the host does. Four
//! mechanisms, all sized from `board_api.limits` and `board_api.cache`:
//!
//! - **Work pool** ([`WorkPool`]): a fixed number of plain OS threads
//!   (default half the cores) runs every CPU-heavy step: inflating gzip,
//!   parsing and merging the provider's JSON, normalizing and sanitizing,
//!   selecting, serializing and hashing a render, compressing it. The async
//!   worker threads only do I/O and headers, so a cached answer never waits
//!   behind a 5 MB parse. Jobs hand their result back through a oneshot
//!   channel; a job that panics is an error for its request, not a hung one.
//!   Plain threads rather than `spawn_blocking`: the pool's size is a hard
//!   bound the host can plan for, independent of whichever runtime calls.
//! - **Admission** ([`Admission`]): at most `max_cold_loads` loads (fetch
//!   plus build) run at once; up to `cold_queue` more wait in arrival order,
//!   their wait counted toward the fetch deadline; past that a cold request
//!   is refused at once with `503 OVERLOADED`, and so is one still queued
//!   after half its deadline (it never reached the provider, and an admitted
//!   load keeps at least half the deadline for the fetch). Only the load's leader takes
//!   a slot: requests for a board already loading join it, and requests for
//!   a cached board never touch the gate.
//! - **One memory budget** ([`crate::cache::Budget`]): documents, rendered
//!   bodies and their compressed variants live in one byte-weighed TinyUfo;
//!   each entry weighs its real size in memory, so the total stays under the
//!   budget whatever mix arrives. An entry heavier than `max_entry_bytes`
//!   is answered but not kept. Failures are remembered in a small
//!   count-bounded cache of their own, so bad links cannot push good boards
//!   out.
//! - **Coalescing that survives cancellation** ([`crate::cache::Coalescer`]):
//!   a load runs in its own task, which stores the result and then removes
//!   the key from the in-flight map through a drop guard (panics included);
//!   callers only wait. A caller dropped by a host's timeout neither cancels
//!   the load nor leaves the key locked.
//!
//! Pool threads run at a lower scheduling priority (Linux nice 10), so the
//! async threads answering cached requests get the CPU first, and after a
//! cold load freed heap is handed back to the OS (glibc `malloc_trim`, at
//! most once a second), so memory returns to about the budget.
//!
//! Upstream requests are capped too (`max_upstream_requests`, a semaphore in
//! the provider client around each exchange), so a flood of distinct links
//! cannot turn into a flood toward the provider.

mod admission;
mod pool;

pub use admission::{Admission, Refused};
pub use pool::{trim_heap, PoolError, WorkPool};

use crate::cache::{Budget, CacheSettings, Coalescer};
use crate::document::Coverage;
use crate::encoding::{self, Encoding};
use crate::pipeline::{load::build, LoadedBoard, Rendered, Representation};
use crate::provider::client::ProviderClient;
use crate::provider::error::FetchError;
use crate::select::Selection;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// `board_api.limits`, validated by the config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Threads of the work pool (default half the cores, at least 1).
    pub work_threads: usize,
    /// Jobs waiting for a pool thread beyond the running ones (default 256);
    /// callers past it wait asynchronously.
    pub work_queue: usize,
    /// Cold loads running at once (default `work_threads`: a load is almost
    /// all pool work, so more at once only adds memory, tens of MB each for
    /// a large board, without finishing sooner).
    pub max_cold_loads: usize,
    /// Cold loads waiting for a slot (default 32); past it, `503`.
    pub cold_queue: usize,
    /// Requests in flight to the provider at once (default 32).
    pub max_upstream_requests: usize,
}

impl Default for Limits {
    fn default() -> Self {
        let work_threads = WorkPool::default_threads();
        Limits {
            work_threads,
            work_queue: 256,
            max_cold_loads: work_threads,
            cold_queue: 32,
            max_upstream_requests: 32,
        }
    }
}

/// Why a board or a render could not be produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    /// The provider's answer (remembered for `error_ttl`).
    Fetch(FetchError),
    /// The cold-load queue is full.
    Overloaded,
    /// A bug (a job panicked, a body did not serialize); the text is for
    /// the log.
    Internal(String),
}

/// A loaded board and the generation that tells its renders from those of
/// an earlier load of the same link.
#[derive(Clone)]
pub struct Doc {
    pub board: Arc<LoadedBoard>,
    generation: u64,
    /// Estimated heap bytes, for the budget.
    weight: usize,
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
}

#[derive(Clone)]
enum Entry {
    Document(Doc),
    Render(Variant),
}

type Loaded = Result<Doc, LoadError>;

struct Cached {
    settings: CacheSettings,
    budget: Budget<Key, Entry>,
    failures: Budget<DocKey, FetchError>,
    loads: Coalescer<(DocKey, Coverage), Loaded>,
}

struct Inner {
    client: ProviderClient,
    provider_name: String,
    pool: WorkPool,
    admission: Admission,
    fetch_deadline: Duration,
    cache: Option<Cached>,
    generations: AtomicU64,
}

/// The governed read side of the API: documents and renders, cached,
/// coalesced, admitted and computed on the pool. Cheap to clone.
#[derive(Clone)]
pub struct Boards {
    inner: Arc<Inner>,
}

/// Bytes a render entry costs beside its body: key, ETag, bookkeeping.
const RENDER_OVERHEAD: usize = 256;

impl Boards {
    /// `cache: None` turns caching and coalescing off (every request loads).
    ///
    /// # Errors
    /// The pool's threads could not be started, or the provider client
    /// could not be built (e.g. an unreadable `ca_file`).
    pub fn new(
        provider: crate::provider::client::ProviderSettings,
        provider_name: String,
        cache: Option<CacheSettings>,
        limits: &Limits,
    ) -> Result<Self, String> {
        let pool = WorkPool::new(limits.work_threads, limits.work_queue)
            .map_err(|e| format!("work pool: {e}"))?;
        let fetch_deadline = provider.fetch_deadline;
        let provider = crate::provider::client::ProviderSettings {
            max_in_flight: limits.max_upstream_requests,
            ..provider
        };
        let client =
            ProviderClient::with_pool(provider, Some(pool.clone())).map_err(|e| e.to_string())?;
        let cache = cache.map(|settings| Cached {
            budget: Budget::new(settings.budget_bytes, settings.max_entry_bytes).reporting(),
            failures: Budget::counted(settings.max_error_entries),
            loads: Coalescer::default(),
            settings,
        });
        Ok(Boards {
            inner: Arc::new(Inner {
                client,
                provider_name,
                pool,
                admission: Admission::new(limits.max_cold_loads, limits.cold_queue),
                fetch_deadline,
                cache,
                generations: AtomicU64::new(1),
            }),
        })
    }

    /// The sanitized board for (board id, permission id), holding at least
    /// `coverage` of it, and whether it came from the cache (or from a load
    /// already in flight).
    ///
    /// An outline request takes a cached outline or full document, or joins
    /// a full load in flight; a full request takes only a full document. An
    /// outline is loaded only when no full document is there.
    pub async fn document(
        &self,
        board_id: &str,
        permission_id: &str,
        coverage: Coverage,
    ) -> (Loaded, bool) {
        let Some(cache) = &self.inner.cache else {
            let inner = Arc::clone(&self.inner);
            let (b, p) = (board_id.to_owned(), permission_id.to_owned());
            // Still in a task of its own: a dropped caller does not cut a
            // load off halfway (the provider's answer would be wasted).
            let task = tokio::spawn(async move { inner.load(b, p, coverage).await });
            let outcome = task
                .await
                .unwrap_or_else(|e| Err(LoadError::Internal(format!("load task failed: {e}"))));
            return (outcome, false);
        };
        // An outline request looks for an outline first, then for a full
        // document (either serves it); a full request only for the latter.
        let key = (board_id.to_owned(), permission_id.to_owned());
        let mut found = Key::Document(key, coverage);
        if let Some(Entry::Document(doc)) = cache.budget.get(&found) {
            return (Ok(doc), true);
        }
        if coverage == Coverage::Outline {
            let Key::Document(key, _) = found else {
                return (Err(LoadError::Internal("document key".into())), false);
            };
            found = Key::Document(key, Coverage::Full);
            if let Some(Entry::Document(doc)) = cache.budget.get(&found) {
                return (Ok(doc), true);
            }
        }
        // Built as a document key just above; taken back without a copy.
        let Key::Document(key, _) = found else {
            return (Err(LoadError::Internal("document key".into())), false);
        };
        if let Some(failure) = cache.failures.get(&key) {
            return (Err(LoadError::Fetch(failure)), true);
        }
        let full_loading = (coverage == Coverage::Outline)
            .then(|| cache.loads.joining(&(key.clone(), Coverage::Full)))
            .flatten();
        let joined = match full_loading {
            Some(joined) => joined,
            None => {
                let inner = Arc::clone(&self.inner);
                cache
                    .loads
                    .join((key.clone(), coverage), move || async move {
                        let outcome = inner.load(key.0.clone(), key.1.clone(), coverage).await;
                        inner.remember(key, coverage, &outcome);
                        outcome
                    })
            }
        };
        let coalesced = joined.joined;
        let outcome = joined
            .value()
            .await
            .unwrap_or_else(|| Err(LoadError::Internal("load task panicked".into())));
        (outcome, coalesced)
    }

    /// `doc` rendered for `scope` and `selection` as `representation` in
    /// `encoding`, from the cache or rendered (and compressed) on the pool
    /// and cached: a Markdown body is kept and compressed once, like JSON.
    ///
    /// # Errors
    /// [`LoadError::Internal`] when rendering or compressing failed.
    pub async fn variant(
        &self,
        doc: &Doc,
        scope: &'static str,
        selection: &Selection,
        representation: Representation,
        encoding: Encoding,
    ) -> Result<Variant, LoadError> {
        let canonical = selection.canonical_shared();
        let key = |encoding| Key::Render {
            generation: doc.generation,
            scope,
            selection: canonical.clone(),
            representation,
            encoding,
        };
        let identity = match self.cached_render(&key(Encoding::Identity)) {
            Some(v) => v,
            None => {
                let board = Arc::clone(&doc.board);
                let selection = selection.clone();
                let rendered = self
                    .inner
                    .pool
                    .run(move || board.render_as(representation, scope, &selection))
                    .await
                    .map_err(|e| LoadError::Internal(e.to_string()))?
                    .map_err(|e| LoadError::Internal(e.to_string()))?;
                let variant = Variant {
                    rendered,
                    encoding: Encoding::Identity,
                };
                self.keep_render(key(Encoding::Identity), &variant, canonical.len());
                variant
            }
        };
        if encoding == Encoding::Identity
            || identity.rendered.body.len() < encoding::MIN_COMPRESS_BYTES
        {
            return Ok(identity);
        }
        if let Some(v) = self.cached_render(&key(encoding)) {
            return Ok(v);
        }
        let body = identity.rendered.body.clone();
        let compressed = self
            .inner
            .pool
            .run(move || encoding::compress(encoding, &body))
            .await
            .map_err(|e| LoadError::Internal(e.to_string()))?
            .map_err(LoadError::Internal)?;
        let variant = Variant {
            rendered: Rendered {
                body: compressed,
                etag: identity.rendered.etag,
            },
            encoding,
        };
        self.keep_render(key(encoding), &variant, canonical.len());
        Ok(variant)
    }

    fn cached_render(&self, key: &Key) -> Option<Variant> {
        match self.inner.cache.as_ref()?.budget.get(key)? {
            Entry::Render(v) => Some(v),
            Entry::Document(_) => None,
        }
    }

    fn keep_render(&self, key: Key, variant: &Variant, key_bytes: usize) {
        if let Some(cache) = &self.inner.cache {
            let bytes = variant.rendered.body.len() + key_bytes + RENDER_OVERHEAD;
            cache.budget.put(
                key,
                Entry::Render(variant.clone()),
                bytes,
                cache.settings.ttl,
            );
        }
    }

    /// Bytes the cache budget accounts now (0 when caching is off).
    pub fn cache_bytes(&self) -> usize {
        self.inner.cache.as_ref().map_or(0, |c| c.budget.bytes())
    }

    /// Loads that hold a slot, and loads waiting for one.
    pub fn cold_loads(&self) -> (usize, usize) {
        (
            self.inner.admission.running(),
            self.inner.admission.queued(),
        )
    }

    /// The work pool, for callers with CPU work of their own.
    pub fn pool(&self) -> &WorkPool {
        &self.inner.pool
    }
}

impl Inner {
    /// One cold load: wait for a slot (within the fetch deadline), fetch,
    /// then build on the pool; the slot is held until the board is built.
    async fn load(&self, board_id: String, permission_id: String, coverage: Coverage) -> Loaded {
        let started = Instant::now();
        let deadline = started + self.fetch_deadline;
        // A queued load waits at most half the deadline, so an admitted one
        // always has at least half of it left for the provider. One that
        // never got a slot never asked the provider: that is our overload,
        // answered `503` with `Retry-After`, not an upstream timeout.
        let _slot = match self
            .admission
            .enter(started + self.fetch_deadline / 2)
            .await
        {
            Ok(slot) => slot,
            Err(Refused::Overloaded | Refused::TimedOut) => return Err(LoadError::Overloaded),
        };
        let fetched = self
            .client
            .fetch_until(&board_id, &permission_id, deadline)
            .await
            .map_err(LoadError::Fetch)?;
        let name = self.provider_name.clone();
        let (board, weight) = self
            .pool
            .run(move || {
                // `build` drops the raw answers as soon as it no longer needs them.
                let built = build(fetched, &board_id, &name, coverage).map(|board| {
                    let weight = board.weight();
                    (board, weight)
                });
                trim_heap(false);
                built
            })
            .await
            .map_err(|e| LoadError::Internal(e.to_string()))?
            .map_err(LoadError::Fetch)?;
        // The last load of a burst may have come within a second of the
        // previous trim: trim once more, so what the burst freed is returned.
        if self.admission.running() <= 1 && self.admission.queued() == 0 {
            let _ = self.pool.run(|| trim_heap(true)).await;
        }
        Ok(Doc {
            board: Arc::new(board),
            generation: self.generations.fetch_add(1, Ordering::Relaxed),
            weight,
        })
    }

    /// Stores a load's outcome where the next request looks first: a
    /// document in the budget for the full TTL (if it fits at all), a
    /// provider failure in the failures cache for `error_ttl`. Overload and
    /// internal errors are not remembered: they say nothing of the board.
    fn remember(&self, key: DocKey, coverage: Coverage, outcome: &Loaded) {
        let Some(cache) = &self.cache else { return };
        match outcome {
            Ok(doc) => {
                let bytes = doc.weight + key.0.len() + key.1.len();
                let kept = cache.budget.put(
                    Key::Document(key, coverage),
                    Entry::Document(doc.clone()),
                    bytes,
                    cache.settings.ttl,
                );
                if !kept {
                    log::debug!("board of {bytes} bytes served but not cached");
                }
            }
            Err(LoadError::Fetch(e)) => {
                cache
                    .failures
                    .put(key, e.clone(), 1, cache.settings.error_ttl);
            }
            Err(LoadError::Overloaded | LoadError::Internal(_)) => {}
        }
    }
}

#[cfg(all(test, feature = "demo"))]
mod tests {
    use super::*;
    use crate::demo::SampleUpstream;
    use crate::provider::client::ProviderSettings;

    fn token_requests(sample: &SampleUpstream, p: &str) -> usize {
        sample
            .requests()
            .iter()
            .filter(|t| t.starts_with(&format!("/api/permissions/token/{p}")))
            .count()
    }

    async fn settled(boards: &Boards) {
        let cache = boards.inner.cache.as_ref().expect("cache on");
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while cache.loads.in_flight() > 0 {
            assert!(std::time::Instant::now() < deadline, "load never ended");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_cancelled_fetch_does_not_wedge_its_key() {
        let sample = SampleUpstream::start(([127, 0, 0, 1], 0).into())
            .await
            .expect("sample upstream");
        let fetch_deadline = Duration::from_millis(400);
        let provider = ProviderSettings {
            origin: url::Url::parse(&sample.origin()).expect("origin"),
            fetch_deadline,
            ..ProviderSettings::default()
        };
        let cache = CacheSettings {
            error_ttl: Duration::from_secs(1),
            ..CacheSettings::default()
        };
        let boards = Boards::new(provider, "milanote".into(), Some(cache), &Limits::default())
            .expect("boards");
        let (board, p) = ("1W3ZZU1Qvua02H", "fault-slow");
        // A host that wraps our handler in its own timeout drops the request.
        let dropped =
            tokio::time::timeout(Duration::ZERO, boards.document(board, p, Coverage::Full)).await;
        assert!(dropped.is_err());
        settled(&boards).await;
        assert_eq!(token_requests(&sample, p), 1);
        // Past the old lock age (deadline + 1 s) and the remembered failure...
        tokio::time::sleep(fetch_deadline + Duration::from_millis(1200)).await;
        // ...N concurrent requests cost one upstream fetch...
        let mut all = tokio::task::JoinSet::new();
        for _ in 0..8 {
            let boards = boards.clone();
            all.spawn(async move { boards.document(board, p, Coverage::Full).await });
        }
        while let Some(done) = all.join_next().await {
            let (outcome, _) = done.expect("task");
            assert_eq!(outcome.err(), Some(LoadError::Fetch(FetchError::Timeout)));
        }
        assert_eq!(token_requests(&sample, p), 2);
        // ...and the next one is answered from the cache.
        let (outcome, cached) = boards.document(board, p, Coverage::Full).await;
        assert!(cached);
        assert_eq!(outcome.err(), Some(LoadError::Fetch(FetchError::Timeout)));
        assert_eq!(token_requests(&sample, p), 2);

        // The same for a board that loads: the dropped caller's load is
        // kept, and later callers are hits.
        let ok = "demo";
        let dropped =
            tokio::time::timeout(Duration::ZERO, boards.document(board, ok, Coverage::Full)).await;
        assert!(dropped.is_err());
        settled(&boards).await;
        for _ in 0..4 {
            let (outcome, cached) = boards.document(board, ok, Coverage::Full).await;
            assert!(outcome.is_ok() && cached);
        }
        assert_eq!(token_requests(&sample, ok), 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_outline_is_loaded_only_when_no_full_document_is_there() {
        let sample = SampleUpstream::start(([127, 0, 0, 1], 0).into())
            .await
            .expect("sample upstream");
        let provider = ProviderSettings {
            origin: url::Url::parse(&sample.origin()).expect("origin"),
            ..ProviderSettings::default()
        };
        let boards = Boards::new(
            provider,
            "milanote".into(),
            Some(CacheSettings::default()),
            &Limits::default(),
        )
        .expect("boards");
        let (board, p) = ("1W3ZZU1Qvua02H", "demo");
        // A cold outline request loads an outline...
        let (outline, cached) = boards.document(board, p, Coverage::Outline).await;
        let outline = outline.expect("loads");
        assert!(!cached);
        assert_eq!(outline.board.coverage(), Coverage::Outline);
        let (again, cached) = boards.document(board, p, Coverage::Outline).await;
        assert!(cached && again.expect("cached").board.coverage() == Coverage::Outline);
        assert_eq!(token_requests(&sample, p), 1);
        // ...which cannot serve a full request: that one loads the board.
        let (full, cached) = boards.document(board, p, Coverage::Full).await;
        assert!(!cached && full.expect("loads").board.coverage() == Coverage::Full);
        assert_eq!(token_requests(&sample, p), 2);
        // From then on both are answered from the cache.
        let (doc, cached) = boards.document(board, p, Coverage::Full).await;
        assert!(cached && doc.expect("cached").board.coverage() == Coverage::Full);
        let (doc, cached) = boards.document(board, p, Coverage::Outline).await;
        assert!(cached && doc.is_ok());
        assert_eq!(token_requests(&sample, p), 2);
        // A full document cached first serves an outline request.
        let third = "demo-3";
        let (_, cached) = boards.document(board, third, Coverage::Full).await;
        assert!(!cached);
        let (doc, cached) = boards.document(board, third, Coverage::Outline).await;
        assert!(cached && doc.expect("cached").board.coverage() == Coverage::Full);
        assert_eq!(token_requests(&sample, third), 1);
        // An outline request while a full load is in flight joins it.
        let other = "demo-2";
        let (first, second) = tokio::join!(
            boards.document(board, other, Coverage::Full),
            boards.document(board, other, Coverage::Outline)
        );
        assert_eq!(first.0.expect("loads").board.coverage(), Coverage::Full);
        assert_eq!(second.0.expect("loads").board.coverage(), Coverage::Full);
        assert_eq!(token_requests(&sample, other), 1);
    }
}
