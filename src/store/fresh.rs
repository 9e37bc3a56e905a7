//! A fresh load for those who wait on a board (`board_api.live`): the
//! board as the provider has it now, past the process cache's TTL, through
//! the levels below it as any miss goes (coalescing, fleet tier, admission,
//! limits), and remembered on the way back up like any load, so the next
//! request reads what this one saw.

use super::{Boards, LoadError, Loaded};
use crate::document::Coverage;

impl Boards {
    /// The full board for (board id, permission id), loaded anew: never
    /// the process cache's document or remembered failure. A load already
    /// in flight for it is joined (it is as fresh); the outcome is
    /// remembered and its version kept, as for any load.
    pub async fn fresh_document(&self, board_id: &str, permission_id: &str) -> Loaded {
        let Some(cache) = &self.inner.cache else {
            // Without the cache every load is fresh.
            return self
                .document(board_id, permission_id, Coverage::Full)
                .await
                .0;
        };
        let key = (board_id.to_owned(), permission_id.to_owned());
        let inner = std::sync::Arc::clone(&self.inner);
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
