//! Loads for those who wait on a board (`board_api.live`), past the process
//! cache's TTL:
//!
//! - [`Boards::fresh_document`], the poll: the board as the provider has
//!   it now (never the fleet tier's still valid copy), written to the tier
//!   before it returns, so a node told of the new version reads it there;
//!   kept and remembered like any load.
//! - [`Boards::fleet_document`], what a node that does not poll reads when
//!   the polling node announced a version: the board through the levels
//!   below the process cache (coalescing, the fleet tier, and a load only
//!   when the tier has nothing), remembered on the way back up.

use super::versions::owner;
use super::{coalesce, Boards, LoadError, Loaded};
use crate::document::Coverage;
use std::sync::Arc;
use tracing::instrument::WithSubscriber as _;

/// The name of a followed board (one share link's board), for the live
/// endpoints and the fleet's leases and announcements: 32 hex digits of a
/// SHA-256 of the kept versions' owner key, as the kept versions' Redis
/// keys are named. It holds no permission id and no board id.
pub fn board_tag(board_id: &str, permission_id: &str) -> String {
    let key = owner(board_id, permission_id);
    let digest = ring::digest::digest(&ring::digest::SHA256, key.as_bytes());
    crate::random::hex(&digest.as_ref()[..16])
}

impl Boards {
    /// The full board for (board id, permission id), loaded from the
    /// provider now (through admission and limits), and when the fleet tier
    /// is configured stored there (or the provider's `403`/`404` shared)
    /// before this returns. The outcome is kept and remembered in the
    /// process cache, so the next request reads what the poll saw. It
    /// joins no load in flight: one that reads the tier may be older.
    pub async fn fresh_document(&self, board_id: &str, permission_id: &str) -> Loaded {
        let inner = Arc::clone(&self.inner);
        let (b, p) = (board_id.to_owned(), permission_id.to_owned());
        let mut task = coalesce::AbortOnDrop(tokio::spawn(
            async move {
                let deadline = inner.loader.deadline();
                let outcome = inner.loader.load(&b, &p, Coverage::Full, deadline).await;
                #[cfg(feature = "fleet")]
                if let (Some(tier), Some(cache)) = (&inner.shared, &inner.cache) {
                    let pool = inner.loader.pool();
                    super::shared::level::share(tier, pool, (&b, &p), &outcome, &cache.settings)
                        .await;
                }
                inner.keep_version(&b, &p, &outcome);
                if let Some(cache) = &inner.cache {
                    cache.remember((b, p), Coverage::Full, &outcome, cache.settings.ttl);
                }
                outcome
            }
            .with_current_subscriber(),
        ));
        (&mut task.0)
            .await
            .unwrap_or_else(|e| Err(LoadError::Internal(format!("load task failed: {e}"))))
    }

    /// The full board as the fleet has it: past the process cache's copy
    /// and remembered failure, through the levels below it as any miss
    /// goes (a load in flight joined, the fleet tier, a load when neither
    /// answers), then remembered and kept as for any load.
    #[cfg_attr(not(feature = "fleet"), allow(dead_code))]
    pub async fn fleet_document(&self, board_id: &str, permission_id: &str) -> Loaded {
        let Some(cache) = &self.inner.cache else {
            // Without the cache every load is fresh.
            return self
                .document(board_id, permission_id, Coverage::Full)
                .await
                .0;
        };
        let key = (board_id.to_owned(), permission_id.to_owned());
        let inner = Arc::clone(&self.inner);
        let joined = cache
            .loads
            .join((key.clone(), Coverage::Full), move || async move {
                inner.below_process(key, Coverage::Full).await
            });
        joined
            .value()
            .await
            .unwrap_or_else(|| Err(LoadError::Internal("load task panicked".into())))
    }
}

#[cfg(test)]
mod tests {
    use super::board_tag;

    #[test]
    fn a_tag_names_the_link_without_its_secret() {
        let t = board_tag("1W3ZZU1Qvua02H", "m441fkw92yV");
        assert_eq!(t.len(), 32);
        assert!(t
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
        assert!(!t.contains("m441fkw92yV") && !t.contains("1W3ZZU1Qvua02H"));
        assert_ne!(t, board_tag("1W3ZZU1Qvua02H", "other"));
        assert_ne!(board_tag("ab", "c"), board_tag("a", "bc"));
        assert_eq!(t, board_tag("1W3ZZU1Qvua02H", "m441fkw92yV"));
    }
}
