//! How [`Boards`] uses the kept versions (`board_api.changes`): every full
//! document a load produces is handed to them, once per load and never on
//! the request's path, and `/changes` reads a kept version back through
//! [`Boards::kept_version`] (a feed lists them with
//! [`Boards::kept_versions`]).

use super::versions::{owner, Listed, Unavailable};
use super::{Boards, Inner, Loaded, Versions};
use std::sync::Arc;

impl Boards {
    /// Keeps every full document loaded from now on in `versions` (see
    /// [`Versions::keep`]). Call it before the first clone: a clone made
    /// before shares the store without it, and then this does nothing.
    pub fn with_versions(mut self, versions: Versions) -> Self {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => inner.versions = Some(versions),
            None => log::error!("Boards::with_versions after a clone: versions not kept"),
        }
        self
    }

    /// The document kept as `version` of `board_id` as loaded through
    /// `permission_id` (another link's versions are not read), checked;
    /// `Ok(None)` when no version is kept there (or none of this one, or
    /// what is kept is not it).
    ///
    /// # Errors
    /// [`Unavailable`]: the store did not answer.
    pub async fn kept_version(
        &self,
        board_id: &str,
        permission_id: &str,
        version: &str,
    ) -> Result<Option<Vec<u8>>, Unavailable> {
        let Some(versions) = self.inner.versions.as_ref() else {
            return Ok(None);
        };
        versions
            .get(self.pool(), &owner(board_id, permission_id), version)
            .await
    }

    /// The versions kept of `board_id` as loaded through `permission_id`,
    /// newest first by when each was first kept, at most `max`; empty when
    /// versions are not kept.
    ///
    /// # Errors
    /// [`Unavailable`]: the store did not answer.
    pub async fn kept_versions(
        &self,
        board_id: &str,
        permission_id: &str,
        max: usize,
    ) -> Result<Vec<Listed>, Unavailable> {
        let Some(versions) = self.inner.versions.as_ref() else {
            return Ok(Vec::new());
        };
        versions.list(&owner(board_id, permission_id), max).await
    }

    /// The kept versions, when they are on.
    #[cfg(feature = "sqlite")]
    pub fn versions(&self) -> Option<&Versions> {
        self.inner.versions.as_ref()
    }
}

impl Inner {
    /// Hands a full document just loaded (or read from the fleet tier) to
    /// the kept versions, if they are on: once per load, not per request.
    pub(super) fn keep_version(&self, board_id: &str, permission_id: &str, outcome: &Loaded) {
        if let (Some(versions), Ok(doc)) = (&self.versions, outcome) {
            let owner = owner(board_id, permission_id);
            versions.keep(self.loader.pool(), &owner, &doc.board);
        }
    }
}
