//! What the provider client hands the normalizer: the raw `/api/boards`
//! responses of one share link, merged.

use crate::provider::normalize::raw::{claimed_id, replaces};
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

impl Fetched {
    /// An empty result for `root_id`, fetched at `fetched_at_ms`.
    pub fn new(root_id: &str, fetched_at_ms: i64) -> Self {
        Fetched {
            root_id: root_id.to_owned(),
            fetched_at_ms,
            ..Fetched::default()
        }
    }

    /// Merge one raw `/api/boards` response: its `elements`, `comments` and
    /// `canvasOrder` maps. Elements are keyed by their id (`id`, else `_id`,
    /// else the map key), so nested boards and parents
    /// are found by id whatever the provider keys its map by. A later copy
    /// replaces an earlier one, except that a `BOARD` is never replaced by a
    /// `SKELETON` of the same id. Keys of the wrong type are ignored.
    pub fn merge_response(&mut self, response: &Map<String, Value>) {
        if let Some(Value::Object(elements)) = response.get("elements") {
            for (key, element) in elements {
                let id = claimed_id(key, element);
                self.merge_element(&id, element.clone());
            }
        }
        if let Some(Value::Object(comments)) = response.get("comments") {
            for (id, comment) in comments {
                self.comments.insert(id.clone(), comment.clone());
            }
        }
        if let Some(Value::Object(order)) = response.get("canvasOrder") {
            for (id, children) in order {
                self.canvas_order.insert(id.clone(), children.clone());
            }
        }
    }

    /// [`Fetched::merge_response`] for an answer the caller is done with:
    /// its values are moved, not copied, so a cold load holds one copy of
    /// the provider's elements instead of two.
    pub fn merge_owned(&mut self, mut response: Map<String, Value>) {
        if let Some(Value::Object(elements)) = response.remove("elements") {
            for (key, element) in elements {
                let id = claimed_id(&key, &element);
                self.merge_element(&id, element);
            }
        }
        if let Some(Value::Object(comments)) = response.remove("comments") {
            self.comments.extend(comments);
        }
        if let Some(Value::Object(order)) = response.remove("canvasOrder") {
            self.canvas_order.extend(order);
        }
    }

    /// Insert one raw element under `id`, keeping an existing `BOARD` over a new `SKELETON`.
    pub fn merge_element(&mut self, id: &str, element: Value) {
        if let Some(existing) = self.elements.get(id) {
            if !replaces(existing, &element) {
                return;
            }
        }
        self.elements.insert(id.to_owned(), element);
    }

    /// Number of merged elements.
    pub fn element_count(&self) -> usize {
        self.elements.len()
    }
}

/// The raw `elementType` of an element, when it is a string.
pub fn element_type(element: &Value) -> Option<&str> {
    element.get("elementType").and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn response(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn elements_are_keyed_by_their_id() {
        let mut f = Fetched::new("r", 0);
        f.merge_response(&response(json!({"elements": {
            "e0": {"_id": "r", "elementType": "BOARD"},
            "e1": {"id": "b2", "_id": "x", "elementType": "BOARD"},
            "e2": {"elementType": "CARD"},
            "e3": {"id": "", "_id": "c4", "elementType": "CARD"}
        }})));
        let keys: Vec<&str> = f.elements.keys().map(String::as_str).collect();
        assert_eq!(keys, ["r", "b2", "e2", "c4"]);
        // A SKELETON under another key still never replaces the BOARD.
        f.merge_response(&response(
            json!({"elements": {"k": {"id": "b2", "elementType": "SKELETON"}}}),
        ));
        assert_eq!(element_type(&f.elements["b2"]), Some("BOARD"));
    }

    #[test]
    fn merge_owned_is_merge_response() {
        let answers = [
            json!({"elements": {"e0": {"_id": "r", "elementType": "BOARD"}, "k": {"id": "b", "elementType": "BOARD"}},
                   "comments": {"c1": {"text": "x"}}, "canvasOrder": {"r": ["b"]}}),
            json!({"elements": {"s": {"id": "b", "elementType": "SKELETON"}, "r": {"id": "q", "v": 1}},
                   "comments": {"c1": {"text": "y"}}, "canvasOrder": [1]}),
        ];
        let mut by_ref = Fetched::new("r", 0);
        let mut owned = Fetched::new("r", 0);
        for answer in answers {
            by_ref.merge_response(&response(answer.clone()));
            owned.merge_owned(response(answer));
        }
        assert_eq!(by_ref, owned);
        assert_eq!(owned.comments["c1"]["text"], "y");
    }

    #[test]
    fn later_copy_replaces_earlier() {
        let mut f = Fetched::new("r", 0);
        f.merge_response(&response(
            json!({"elements":{"a":{"elementType":"CARD","v":1}}}),
        ));
        f.merge_response(&response(
            json!({"elements":{"a":{"elementType":"CARD","v":2}}}),
        ));
        assert_eq!(f.elements["a"]["v"], 2);
    }

    #[test]
    fn board_is_never_replaced_by_skeleton() {
        let mut f = Fetched::new("r", 0);
        f.merge_response(&response(json!({"elements":{"b":{"elementType":"BOARD"}}})));
        f.merge_response(&response(
            json!({"elements":{"b":{"elementType":"SKELETON"}}}),
        ));
        assert_eq!(element_type(&f.elements["b"]), Some("BOARD"));
        // ...but a skeleton is replaced by a board.
        f.merge_response(&response(
            json!({"elements":{"s":{"elementType":"SKELETON"}}}),
        ));
        f.merge_response(&response(json!({"elements":{"s":{"elementType":"BOARD"}}})));
        assert_eq!(element_type(&f.elements["s"]), Some("BOARD"));
    }

    #[test]
    fn comments_and_canvas_order_merge_and_wrong_types_are_ignored() {
        let mut f = Fetched::new("r", 0);
        f.merge_response(&response(json!({
            "elements": [1, 2],
            "comments": {"c1": {"text": "x"}},
            "canvasOrder": {"r": ["a", "b"]}
        })));
        assert!(f.elements.is_empty());
        assert_eq!(f.comments.len(), 1);
        assert_eq!(f.canvas_order["r"], json!(["a", "b"]));
    }
}
