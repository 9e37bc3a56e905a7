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
pub mod reference;
pub mod render;

pub use load::BoardLoader;
pub use render::{render, RenderError, Rendered};

use crate::select::Selection;
use bytes::Bytes;
use std::collections::VecDeque;
use std::sync::Mutex;

/// How many distinct (endpoint, selection) renders one board keeps; popular
/// selections repeat, and the renders die with the board's cache entry.
pub const MAX_RENDERS_PER_BOARD: usize = 8;

type RenderKey = (&'static str, String);

/// One loaded board: the sanitized full document as compact JSON bytes
/// (its serialized form is its size in memory) and the bodies rendered from
/// it so far.
pub struct LoadedBoard {
    document: Bytes,
    renders: Mutex<VecDeque<(RenderKey, Rendered)>>,
}

impl LoadedBoard {
    /// A loaded board from the compact JSON of a sanitized full document,
    /// as [`load::build`] writes it.
    pub fn from_json(document: Vec<u8>) -> Self {
        LoadedBoard {
            document: Bytes::from(document),
            renders: Mutex::new(VecDeque::with_capacity(MAX_RENDERS_PER_BOARD)),
        }
    }

    /// The sanitized full document, compact JSON.
    pub fn document_json(&self) -> &[u8] {
        &self.document
    }

    /// Heap bytes held: the document and the bodies rendered so far.
    pub fn weight(&self) -> usize {
        let renders: usize = self
            .lock()
            .iter()
            .map(|((_, canonical), r)| canonical.len() + r.body.len())
            .sum();
        self.document.len() + renders
    }

    /// The response body and ETag of `selection` on this document for the
    /// endpoint named `scope`, rendered now and not kept.
    ///
    /// # Errors
    /// As [`render::render_bytes`].
    pub fn render(
        &self,
        scope: &'static str,
        selection: &Selection,
    ) -> Result<Rendered, RenderError> {
        render::render_bytes(scope, selection, &selection.canonical(), &self.document)
    }

    /// The response body and ETag of `selection` on this document for the
    /// endpoint named `scope`, rendered once per (scope, selection) and then
    /// reused.
    ///
    /// # Errors
    /// As [`render::render_bytes`].
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
        let rendered = render::render_bytes(scope, selection, &canonical, &self.document)?;
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
        let board = LoadedBoard::from_json(
            serde_json::to_vec(&json!({"version": 1, "source": {"provider": "p", "boardId": "b"}, "fetchedAt": "t", "board": {"id": "b", "type": "BOARD", "title": "T", "children": []}})).unwrap(),
        );
        let empty = board.weight();
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
        assert!(board.weight() > empty);
        let rebuilt = board.rendered("search", &compact).expect("renders");
        assert_eq!(rebuilt, first);
    }
}
