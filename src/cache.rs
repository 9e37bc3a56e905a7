//! The short-lived in-memory cache of sanitized documents, keyed by
//! (board id, permission id), with request coalescing (DESIGN.md section 8):
//! N concurrent requests for one board cost one upstream fetch.
//!
//! Built on `pingora-memory-cache`'s `RTCache`. Failures are cached too, for
//! a few seconds, so that a burst against a broken or revoked link also costs
//! one upstream request instead of N.

use crate::api::error::ApiError;
use crate::api::respond::{self, Rendered};
use crate::api::route::Endpoint;
use crate::api::share_link::ShareLink;
use crate::document::sanitize::sanitize;
use crate::provider::client::ProviderClient;
use crate::provider::error::FetchError;
use crate::provider::normalize::normalize;
use crate::select::Selection;
use async_trait::async_trait;
use pingora_memory_cache::{CacheStatus, Lookup, RTCache};
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A sanitized full document, shared by every request that reads it, with
/// the responses rendered from it so far.
pub type Document = Arc<CachedBoard>;

/// How many distinct (endpoint, selection) renders one board keeps; popular
/// selections repeat, and the renders die with the board's cache entry.
pub const MAX_RENDERS_PER_BOARD: usize = 8;

/// One fetched board: the sanitized document and the bodies rendered from it.
pub struct CachedBoard {
    pub document: Value,
    renders: Mutex<VecDeque<(Endpoint, String, Rendered)>>,
}

impl CachedBoard {
    pub fn new(document: Value) -> Self {
        CachedBoard {
            document,
            renders: Mutex::new(VecDeque::with_capacity(MAX_RENDERS_PER_BOARD)),
        }
    }

    /// The response body and ETag of `selection` on this document, rendered
    /// once per (endpoint, selection) and then reused.
    ///
    /// # Errors
    /// As [`respond::render`].
    pub fn rendered(
        &self,
        endpoint: Endpoint,
        selection: &Selection,
    ) -> Result<Rendered, ApiError> {
        let canonical = selection.canonical();
        let found = self
            .lock()
            .iter()
            .find(|(e, c, _)| *e == endpoint && *c == canonical)
            .map(|(_, _, r)| r.clone());
        if let Some(rendered) = found {
            return Ok(rendered);
        }
        // Rendered outside the lock; two racing requests may both render once.
        let data = selection.apply(&self.document);
        let rendered = respond::render(endpoint, &canonical, &data)?;
        let mut renders = self.lock();
        if renders.len() == MAX_RENDERS_PER_BOARD {
            renders.pop_front();
        }
        renders.push_back((endpoint, canonical, rendered.clone()));
        Ok(rendered)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<(Endpoint, String, Rendered)>> {
        // A panic while holding the lock leaves a valid list behind.
        self.renders.lock().unwrap_or_else(|e| e.into_inner())
    }
}

type Outcome = Result<Document, FetchError>;

/// Cache limits, validated by the config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheSettings {
    /// How long a fetched document is served (default 60 s, the success `max-age`).
    pub ttl: Duration,
    /// How long a failed fetch is remembered (default 5 s).
    pub error_ttl: Duration,
    /// Entries kept at most (default 1024).
    pub max_entries: usize,
    /// A document estimated larger than this (default 8 MiB) is kept only
    /// for a second, so it still coalesces a burst but cannot pin memory:
    /// the cache holds at most about `max_entries * max_document_bytes`,
    /// plus up to [`MAX_RENDERS_PER_BOARD`] rendered bodies per entry.
    pub max_document_bytes: usize,
}

impl Default for CacheSettings {
    fn default() -> Self {
        CacheSettings {
            ttl: Duration::from_secs(60),
            error_ttl: Duration::from_secs(5),
            max_entries: 1024,
            max_document_bytes: 8 << 20,
        }
    }
}

/// Fetches, normalizes and sanitizes one board: the work behind a cache miss.
pub struct BoardLoader {
    client: ProviderClient,
    provider_name: String,
}

impl BoardLoader {
    pub fn new(client: ProviderClient, provider_name: String) -> Self {
        BoardLoader {
            client,
            provider_name,
        }
    }

    /// # Errors
    /// The provider's [`FetchError`]; a document the normalizer cannot use
    /// is an upstream error.
    pub async fn load(&self, link: &ShareLink) -> Outcome {
        let fetched = self
            .client
            .fetch(&link.board_id, &link.permission_id)
            .await?;
        let document = normalize(&fetched, &self.provider_name).map_err(|e| {
            FetchError::Upstream(format!("board {} not normalizable: {e:?}", link.board_id))
        })?;
        let mut value = serde_json::to_value(&document)
            .map_err(|e| FetchError::Upstream(format!("document not serializable: {e}")))?;
        sanitize(&mut value);
        Ok(Arc::new(CachedBoard::new(value)))
    }
}

/// What a lookup needs; `RTCache`'s `Lookup::lookup` has no `&self`.
struct LookupContext {
    loader: Arc<BoardLoader>,
    link: ShareLink,
    settings: CacheSettings,
}

struct BoardLookup;

#[async_trait]
impl Lookup<(String, String), Outcome, LookupContext> for BoardLookup {
    async fn lookup(
        _key: &(String, String),
        extra: Option<&LookupContext>,
    ) -> Result<(Outcome, Option<Duration>), Box<dyn std::error::Error + Send + Sync>> {
        let ctx = extra.ok_or("board lookup without context")?;
        let outcome = ctx.loader.load(&ctx.link).await;
        let ttl = match &outcome {
            Ok(board) if approx_json_size(&board.document) <= ctx.settings.max_document_bytes => {
                ctx.settings.ttl
            }
            Ok(_) => Duration::from_secs(1),
            Err(_) => ctx.settings.error_ttl,
        };
        Ok((outcome, Some(ttl)))
    }
}

/// The documents cache, or a pass-through when caching is off.
pub struct BoardCache {
    loader: Arc<BoardLoader>,
    settings: Option<CacheSettings>,
    cache: Option<RTCache<(String, String), Outcome, BoardLookup, LookupContext>>,
}

impl BoardCache {
    /// `settings: None` turns caching (and coalescing) off. `fetch_deadline`
    /// bounds how long requests wait on another's fetch of the same board: a
    /// fetch that was cancelled or panicked never leaves its key locked.
    pub fn new(
        loader: BoardLoader,
        settings: Option<CacheSettings>,
        fetch_deadline: Duration,
    ) -> Self {
        let lock = fetch_deadline + Duration::from_secs(1);
        let cache = settings
            .as_ref()
            .map(|s| RTCache::new(s.max_entries, Some(lock), Some(lock)));
        BoardCache {
            loader: Arc::new(loader),
            settings,
            cache,
        }
    }

    /// The sanitized document for `link`, and whether it came from the cache.
    ///
    /// # Errors
    /// The provider's [`FetchError`], possibly remembered from a recent attempt.
    pub async fn get(&self, link: &ShareLink) -> (Outcome, bool) {
        let (Some(cache), Some(settings)) = (&self.cache, &self.settings) else {
            return (self.loader.load(link).await, false);
        };
        let key = (link.board_id.clone(), link.permission_id.clone());
        let ctx = LookupContext {
            loader: self.loader.clone(),
            link: link.clone(),
            settings: settings.clone(),
        };
        let (result, status) = cache.get(&key, Some(settings.ttl), Some(&ctx)).await;
        let hit = matches!(status, CacheStatus::Hit | CacheStatus::LockHit);
        match result {
            Ok(outcome) => (outcome, hit),
            Err(e) => (
                Err(FetchError::Upstream(format!("cache lookup failed: {e}"))),
                false,
            ),
        }
    }
}

/// A cheap over-estimate of a value's serialized size, without serializing.
pub fn approx_json_size(value: &Value) -> usize {
    let mut total = 0;
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        total += match v {
            Value::Null | Value::Bool(_) => 5,
            Value::Number(_) => 24,
            Value::String(s) => s.len() + 2,
            Value::Array(items) => {
                stack.extend(items.iter());
                2 + items.len()
            }
            Value::Object(map) => {
                stack.extend(map.values());
                2 + map.keys().map(|k| k.len() + 4).sum::<usize>()
            }
        };
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_are_reused_per_endpoint_and_selection() {
        use crate::select::View;
        let board = CachedBoard::new(
            json!({"version": 1, "source": {"provider": "p", "boardId": "b"}, "fetchedAt": "t", "board": {"id": "b", "type": "BOARD", "title": "T", "children": []}}),
        );
        let compact = Selection::view(View::Compact);
        let first = board.rendered(Endpoint::Search, &compact).expect("renders");
        let again = board.rendered(Endpoint::Search, &compact).expect("renders");
        // The same bytes, not a re-render: `Bytes` clones share storage.
        assert_eq!(first.body.as_ptr(), again.body.as_ptr());
        let detail = board.rendered(Endpoint::Detail, &compact).expect("renders");
        assert_ne!(detail.etag, first.etag);
        // Beyond the cap the oldest render is dropped and rebuilt when asked again.
        for i in 0..MAX_RENDERS_PER_BOARD {
            let sel = Selection::include(&format!(
                "version,board.id{}",
                ",board.title".repeat(i.min(1))
            ))
            .expect("valid");
            let _ = board.rendered(
                if i % 2 == 0 {
                    Endpoint::Detail
                } else {
                    Endpoint::Search
                },
                &sel,
            );
        }
        assert!(board.lock().len() <= MAX_RENDERS_PER_BOARD);
        let rebuilt = board.rendered(Endpoint::Search, &compact).expect("renders");
        assert_eq!(rebuilt, first);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_cancelled_fetch_never_leaves_its_board_locked() {
        use crate::provider::client::ProviderSettings;
        use crate::provider::sample::SampleUpstream;
        let sample = SampleUpstream::start(([127, 0, 0, 1], 0).into())
            .await
            .expect("sample upstream");
        let settings = ProviderSettings {
            origin: url::Url::parse(&sample.origin()).expect("origin"),
            fetch_deadline: Duration::from_millis(400),
            ..ProviderSettings::default()
        };
        let client = ProviderClient::new(settings.clone()).expect("client");
        let cache = BoardCache::new(
            BoardLoader::new(client, "milanote".into()),
            Some(CacheSettings::default()),
            settings.fetch_deadline,
        );
        let link = ShareLink {
            board_id: "1W3ZZU1Qvua02H".into(),
            permission_id: "fault-slow".into(),
        };
        // A host that wraps our handler in its own timeout drops the first fetch...
        let first = tokio::time::timeout(Duration::from_millis(50), cache.get(&link)).await;
        assert!(first.is_err(), "the slow fetch cannot finish in 50 ms");
        // ...and the next request for that board still gets an answer.
        let second = tokio::time::timeout(Duration::from_secs(10), cache.get(&link)).await;
        let (outcome, _) = second.expect("not stuck behind the dropped fetch");
        assert!(
            matches!(outcome, Err(FetchError::Timeout)),
            "{:?}",
            outcome.err()
        );
    }

    #[test]
    fn size_estimate_covers_the_serialized_size() {
        let docs = [
            json!(null),
            json!({"a": [1, 2.5, "x", true, null], "b": {"c": "long string here"}}),
            json!([[], {}, [[[]]]]),
        ];
        for doc in docs {
            let real = serde_json::to_vec(&doc).expect("serializes").len();
            assert!(approx_json_size(&doc) >= real, "{doc}");
        }
    }
}
