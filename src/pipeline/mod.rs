//! The board pipeline, in two halves that the cache sits between:
//!
//! - [`load`]: share link -> provider fetch -> normalize -> sanitize, the work
//!   behind a cache miss, producing a [`LoadedBoard`];
//! - [`render`]: a selection of a loaded board -> the success body and its
//!   weak ETag, done once per (endpoint, selection) and reused.
//!
//! Nothing here knows HTTP statuses or Pingora: the API maps outcomes to
//! answers, the cache stores loaded boards.

pub mod load;
pub mod render;

pub use load::BoardLoader;
pub use render::{render, RenderError, Rendered};

use crate::select::Selection;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::Mutex;

/// How many distinct (endpoint, selection) renders one board keeps; popular
/// selections repeat, and the renders die with the board's cache entry.
pub const MAX_RENDERS_PER_BOARD: usize = 8;

type RenderKey = (&'static str, String);

/// One loaded board: the sanitized full document and the bodies rendered
/// from it so far.
pub struct LoadedBoard {
    pub document: Value,
    renders: Mutex<VecDeque<(RenderKey, Rendered)>>,
}

impl LoadedBoard {
    pub fn new(document: Value) -> Self {
        LoadedBoard {
            document,
            renders: Mutex::new(VecDeque::with_capacity(MAX_RENDERS_PER_BOARD)),
        }
    }

    /// The response body and ETag of `selection` on this document for the
    /// endpoint named `scope`, rendered once per (scope, selection) and then
    /// reused.
    ///
    /// # Errors
    /// As [`render()`].
    pub fn rendered(
        &self,
        scope: &'static str,
        selection: &Selection,
    ) -> Result<Rendered, RenderError> {
        let canonical = selection.canonical();
        let found = self
            .lock()
            .iter()
            .find(|((s, c), _)| *s == scope && *c == canonical)
            .map(|(_, r)| r.clone());
        if let Some(rendered) = found {
            return Ok(rendered);
        }
        // Rendered outside the lock; two racing requests may both render once.
        let data = selection.apply(&self.document);
        let rendered = render(scope, &canonical, &data)?;
        let mut renders = self.lock();
        if renders.len() == MAX_RENDERS_PER_BOARD {
            renders.pop_front();
        }
        renders.push_back(((scope, canonical), rendered.clone()));
        Ok(rendered)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<(RenderKey, Rendered)>> {
        // A panic while holding the lock leaves a valid list behind.
        self.renders.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_are_reused_per_endpoint_and_selection() {
        use crate::select::View;
        let board = LoadedBoard::new(
            json!({"version": 1, "source": {"provider": "p", "boardId": "b"}, "fetchedAt": "t", "board": {"id": "b", "type": "BOARD", "title": "T", "children": []}}),
        );
        let compact = Selection::view(View::Compact);
        let first = board.rendered("search", &compact).expect("renders");
        let again = board.rendered("search", &compact).expect("renders");
        // The same bytes, not a re-render: `Bytes` clones share storage.
        assert_eq!(first.body.as_ptr(), again.body.as_ptr());
        let detail = board.rendered("detail", &compact).expect("renders");
        assert_ne!(detail.etag, first.etag);
        // Beyond the cap the oldest render is dropped and rebuilt when asked again.
        for i in 0..MAX_RENDERS_PER_BOARD {
            let sel = Selection::include(&format!(
                "version,board.id{}",
                ",board.title".repeat(i.min(1))
            ))
            .expect("valid");
            let _ = board.rendered(if i % 2 == 0 { "detail" } else { "search" }, &sel);
        }
        assert!(board.lock().len() <= MAX_RENDERS_PER_BOARD);
        let rebuilt = board.rendered("search", &compact).expect("renders");
        assert_eq!(rebuilt, first);
    }
}
