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

/// One loaded board: the sanitized full document. What is rendered from it
/// is cached beside it, weighed in the same byte budget.
pub struct LoadedBoard {
    pub document: Value,
}

impl LoadedBoard {
    pub fn new(document: Value) -> Self {
        LoadedBoard { document }
    }

    /// The response body and ETag of `selection` on this document for the
    /// endpoint named `scope`. CPU work: callers run it on the work pool
    /// and cache the result.
    ///
    /// # Errors
    /// As [`render()`].
    pub fn render(
        &self,
        scope: &'static str,
        selection: &Selection,
    ) -> Result<Rendered, RenderError> {
        let data = selection.apply(&self.document);
        render(scope, &selection.canonical(), &data)
    }

    /// An over-estimate of the heap bytes this board holds, for the cache's
    /// byte budget.
    pub fn weight(&self) -> usize {
        std::mem::size_of::<Self>() + value_heap_bytes(&self.document)
    }
}

/// Heap bytes under a `serde_json::Value` (with `preserve_order`, objects
/// are index maps: a hash slot plus an entry of key, value and hash each),
/// rounded up generously: allocators round small allocations up too.
fn value_heap_bytes(value: &Value) -> usize {
    const VALUE: usize = std::mem::size_of::<Value>();
    // Key `String` + `Value` + cached hash, plus the index slot.
    const OBJECT_ENTRY: usize = std::mem::size_of::<String>() + VALUE + 8 + 8;
    // Every allocation costs its header and rounding: count 16 bytes each.
    const ALLOCATION: usize = 16;
    let mut total = 0;
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        total += match v {
            Value::Null | Value::Bool(_) | Value::Number(_) => 0,
            Value::String(s) => s.capacity() + ALLOCATION,
            Value::Array(items) => {
                stack.extend(items.iter());
                items.capacity() * VALUE + ALLOCATION
            }
            Value::Object(map) => {
                stack.extend(map.values());
                // Index maps grow by doubling: count the slack as used.
                let slots = map.len().next_power_of_two();
                slots * OBJECT_ENTRY
                    + 2 * ALLOCATION
                    + map.keys().map(|k| k.capacity() + ALLOCATION).sum::<usize>()
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
    fn render_is_per_endpoint_and_selection() {
        use crate::select::View;
        let board = LoadedBoard::new(
            json!({"version": 1, "source": {"provider": "p", "boardId": "b"}, "fetchedAt": "t", "board": {"id": "b", "type": "BOARD", "title": "T", "children": []}}),
        );
        let compact = Selection::view(View::Compact);
        let first = board.render("search", &compact).expect("renders");
        assert_eq!(board.render("search", &compact).expect("renders"), first);
        let detail = board.render("detail", &compact).expect("renders");
        assert_ne!(detail.etag, first.etag);
    }

    #[test]
    fn weight_covers_at_least_the_serialized_size() {
        let docs = [
            json!(null),
            json!({"a": [1, 2.5, "x", true, null], "b": {"c": "long string here"}}),
            json!({"board": {"children": (0..500).map(|i| json!({"id": format!("e{i}"), "title": "card ".repeat(i % 7)})).collect::<Vec<_>>()}}),
        ];
        for doc in docs {
            let real = serde_json::to_vec(&doc).expect("serializes").len();
            let board = LoadedBoard::new(doc);
            assert!(board.weight() >= real, "{} < {real}", board.weight());
        }
    }
}
