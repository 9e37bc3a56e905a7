//! The short-lived in-memory cache of loaded boards, keyed by
//! (board id, permission id), with request coalescing (DESIGN.md section 8):
//! N concurrent requests for one board cost one upstream fetch.
//!
//! Built on `pingora-memory-cache`'s `RTCache`. Failures are cached too, for
//! a few seconds, so that a burst against a broken or revoked link also costs
//! one upstream request instead of N.

use crate::pipeline::{BoardLoader, LoadedBoard};
use crate::provider::error::FetchError;
use async_trait::async_trait;
use pingora_memory_cache::{CacheStatus, Lookup, RTCache};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// A loaded board, shared by every request that reads it.
pub type Document = Arc<LoadedBoard>;

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

/// What a lookup needs; `RTCache`'s `Lookup::lookup` has no `&self`.
struct LookupContext {
    loader: Arc<BoardLoader>,
    board_id: String,
    permission_id: String,
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
        let outcome = ctx.loader.load(&ctx.board_id, &ctx.permission_id).await;
        let ttl = match &outcome {
            Ok(board) if board.weight() <= ctx.settings.max_document_bytes => ctx.settings.ttl,
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
    pub async fn get(&self, board_id: &str, permission_id: &str) -> (Outcome, bool) {
        let (Some(cache), Some(settings)) = (&self.cache, &self.settings) else {
            return (self.loader.load(board_id, permission_id).await, false);
        };
        let key = (board_id.to_owned(), permission_id.to_owned());
        let ctx = LookupContext {
            loader: self.loader.clone(),
            board_id: key.0.clone(),
            permission_id: key.1.clone(),
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

    #[cfg(feature = "demo")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_cancelled_fetch_never_leaves_its_board_locked() {
        use crate::demo::SampleUpstream;
        use crate::provider::client::ProviderClient;
        use crate::provider::client::ProviderSettings;
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
        let link = ("1W3ZZU1Qvua02H", "fault-slow");
        // A host that wraps our handler in its own timeout drops the first fetch...
        let first =
            tokio::time::timeout(Duration::from_millis(50), cache.get(link.0, link.1)).await;
        assert!(first.is_err(), "the slow fetch cannot finish in 50 ms");
        // ...and the next request for that board still gets an answer.
        let second = tokio::time::timeout(Duration::from_secs(10), cache.get(link.0, link.1)).await;
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
