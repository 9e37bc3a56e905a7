//! What the provider client hands the normalizer: the raw `/api/boards`
//! responses of one share link, merged (DESIGN.md section 4).

use serde_json::{Map, Value};
use std::collections::HashSet;

/// The merged raw responses for one root board and the nested boards fetched below it.
///
/// Raw values are kept as `serde_json::Value` so that the normalizer can read
/// them leniently: a field of the wrong type is omitted, never an error.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fetched {
    /// The requested (root) board id.
    pub root_id: String,
    /// Element id -> raw element, merged: a later copy replaces an earlier one,
    /// except that a `BOARD` is never replaced by a `SKELETON`.
    pub elements: Map<String, Value>,
    /// Comment id -> raw comment, from every response's top-level `comments`.
    pub comments: Map<String, Value>,
    /// Parent id -> raw array of child ids, from every response's `canvasOrder`.
    pub canvas_order: Map<String, Value>,
    /// Boards whose own children were returned (the root always; nested boards
    /// only when their fetch succeeded with `childrenReturned` true).
    pub loaded_boards: HashSet<String>,
    /// The root response's `fetchedTime` (epoch ms), when the provider sent one.
    pub fetched_time_ms: Option<i64>,
    /// When this service fetched the board (epoch ms): `fetchedAt` falls back to it.
    pub fetched_at_ms: i64,
}
