//! What the provider client hands the normalizer: the raw `/api/boards`
//! answers of one share link, merged.

use crate::document::UnloadedReason;
#[cfg(any(test, feature = "internals"))]
pub use crate::provider::answer::{canvas_order_of, comments_of};
use crate::provider::answer::{
    Answer, CanvasOrder, Element, Elements, JsonText, MapReader, ObjectOnly,
};
pub use crate::provider::answer::{Comments, IdHasher, RawComment};
#[cfg(any(test, feature = "internals"))]
use crate::provider::head::Head;
use serde::de::{DeserializeSeed as _, IgnoredAny, MapAccess};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

/// The merged raw answers for one root board and the nested boards fetched below it.
///
/// Of each element, what is read across elements is kept as its [`Head`]
/// (read leniently: a field of the wrong type is omitted, never an error),
/// and its `content`, the bulk of a board, as the JSON text the provider
/// sent (see [`crate::provider::answer`]).
#[derive(Debug, Clone, Default)]
pub struct Fetched {
    /// The requested (root) board id.
    pub root_id: String,
    /// Element id -> the element's head, merged in answer order: a later
    /// copy replaces an earlier one, except that a `BOARD` is never replaced
    /// by a `SKELETON`.
    pub elements: Elements,
    /// Comment key -> raw comment, from every response's top-level `comments`.
    pub comments: Comments,
    /// Parent id -> raw array of child ids (its JSON text), from every
    /// response's `canvasOrder`.
    pub canvas_order: CanvasOrder,
    /// Boards whose own children were returned (the root always; nested boards
    /// only when their fetch succeeded with `childrenReturned` true).
    pub loaded_boards: HashSet<String>,
    /// Why nested boards were not loaded, as the provider client found out
    /// (see [`Fetched::unloaded_reason`]).
    pub unloaded: HashMap<String, UnloadedReason, IdHasher>,
    /// The root response's `fetchedTime` (epoch ms), when the provider sent one.
    pub fetched_time_ms: Option<i64>,
    /// When this service fetched the board (epoch ms): `fetchedAt` falls back to it.
    pub fetched_at_ms: i64,
}

impl PartialEq for Fetched {
    fn eq(&self, other: &Fetched) -> bool {
        self.root_id == other.root_id
            && self.elements == other.elements
            && self.comments == other.comments
            && self.canvas_order == other.canvas_order
            && self.loaded_boards == other.loaded_boards
            && self.unloaded == other.unloaded
            && self.fetched_time_ms == other.fetched_time_ms
            && self.fetched_at_ms == other.fetched_at_ms
    }
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

    /// Root `root_id` with `elements`, a raw `elements` map (contents
    /// included), merged in map order: for tests and benchmarks. No board
    /// counts as loaded.
    #[cfg(any(test, feature = "internals"))]
    pub fn from_elements(root_id: &str, elements: Map<String, Value>) -> Self {
        let mut fetched = Fetched::new(root_id, 0);
        for (key, element) in elements {
            fetched.merge_element(&key, element);
        }
        fetched
    }

    /// Merge one raw `/api/boards` answer held as a value (tests, fixtures):
    /// read through the same [`Answer`] reader as a real body, then
    /// [`Fetched::merge_answer`].
    #[cfg(any(test, feature = "internals"))]
    pub fn merge_response(&mut self, response: &Map<String, Value>) {
        self.merge_answer(Answer::from_value(response));
    }

    /// Merge one answer: its `elements`, `comments` and `canvasOrder` maps.
    /// Elements are keyed by their id (`id`, else `_id`, else the map key),
    /// so nested boards and parents are found by id whatever the provider
    /// keys its map by. A later copy replaces an earlier one, except that a
    /// `BOARD` is never replaced by a `SKELETON` of the same id. Members of
    /// the wrong type are ignored. The answer's values are moved, not copied.
    pub fn merge_answer(&mut self, mut answer: Answer) {
        // Room for every entry at once: growing by doubling would hold two
        // tables for a moment, the largest transient of a merge.
        let count = answer.element_count();
        match answer.elements.take() {
            // The first answer, keyed by id as Milanote keys it: its table
            // becomes the board's, instead of being copied into a second one.
            Some(elements)
                if self.elements.is_empty()
                    && elements
                        .iter()
                        .all(|(key, e)| e.head.id().is_none_or(|id| id == &**key)) =>
            {
                self.elements = elements;
            }
            elements => {
                self.elements.reserve(count);
                for (key, element) in elements.into_iter().flatten() {
                    self.merge_entry(key, element);
                }
            }
        }
        if let Some(comments) = answer.comments.take() {
            self.comments.extend(comments);
        }
        if let Some(order) = answer.canvas_order.take() {
            self.canvas_order.extend(order);
        }
    }

    /// Merge one raw element (its `content` included, as in a provider
    /// answer) found under map key `key`, as [`Fetched::merge_answer`] does.
    #[cfg(any(test, feature = "internals"))]
    pub fn merge_element(&mut self, key: &str, element: Value) {
        let content = element.get("content").map(JsonText::of);
        self.merge_entry(
            key.into(),
            Element {
                head: Head::read_under(key, &element),
                content,
            },
        );
    }

    /// Insert one element under the id it claims, keeping an existing
    /// `BOARD` over a new `SKELETON`.
    fn merge_entry(&mut self, key: Box<str>, element: Element) {
        let id = match element.head.id() {
            Some(id) => id.into(),
            None => key,
        };
        match self.elements.entry(id) {
            indexmap::map::Entry::Occupied(mut existing) => {
                if element.head.replaces(&existing.get().head) {
                    *existing.get_mut() = element;
                }
            }
            indexmap::map::Entry::Vacant(slot) => {
                slot.insert(element);
            }
        }
    }

    /// The raw `content` of element `id`, as a value.
    #[cfg(any(test, feature = "internals"))]
    pub fn content(&self, id: &str) -> Option<Value> {
        self.elements.get(id)?.content.as_ref()?.value()
    }

    /// The bytes of raw `content` text held.
    pub fn content_bytes(&self) -> usize {
        self.elements
            .values()
            .filter_map(|e| e.content.as_ref())
            .map(|c| c.bytes().len())
            .sum()
    }

    /// Number of merged elements.
    pub fn element_count(&self) -> usize {
        self.elements.len()
    }

    /// `None` when board `id`'s own children were loaded; else why not.
    /// A board the client recorded no reason for is one it could not ask
    /// the provider about (an id it will not request): the provider sent
    /// something malformed, `UPSTREAM_ERROR`.
    pub fn unloaded_reason(&self, id: &str) -> Option<UnloadedReason> {
        if self.loaded_boards.contains(id) {
            return None;
        }
        Some(
            self.unloaded
                .get(id)
                .copied()
                .unwrap_or(UnloadedReason::UpstreamError),
        )
    }

    /// Records why board `id` was not loaded, unless a reason is already
    /// recorded (the first cause found is the one reported).
    pub fn mark_unloaded(&mut self, id: &str, reason: UnloadedReason) {
        if !self.unloaded.contains_key(id) {
            self.unloaded.insert(id.to_owned(), reason);
        }
    }
}

/// Raw `content` as a value.
pub fn parse_content(raw: &JsonText) -> Option<Value> {
    raw.value()
}

/// Raw `content` without the members that hold its body
/// ([`OUTLINE_SKIPPED`]), for an outline: those are skipped over, never
/// built. Content that is not an object is `None`: every field an outline
/// outputs is read from an object.
pub fn outline_content(raw: &JsonText) -> Option<Value> {
    let mut de = serde_json::Deserializer::from_str(raw.text());
    // The text was checked when the answer was read; it parses.
    let members = ObjectOnly(OutlineReader).deserialize(&mut de).ok()??;
    de.end().ok()?;
    Some(Value::Object(members))
}

/// The `content` members an outline leaves out: the rich text of cards,
/// tasks and documents, the caption of a link or a swatch, a table's cells,
/// a sketch's or an annotation's drawing.
pub const OUTLINE_SKIPPED: [&str; 4] = ["textContent", "caption", "tableContent", "drawing"];

/// A content object's members but [`OUTLINE_SKIPPED`].
struct OutlineReader;

impl<'de> MapReader<'de> for OutlineReader {
    type Out = Map<String, Value>;

    fn read<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if OUTLINE_SKIPPED.contains(&key.as_str()) {
                map.next_value::<IgnoredAny>()?;
                // A repeated member still means its last value: none.
                out.shift_remove(&key);
            } else {
                out.insert(key, map.next_value()?);
            }
        }
        Ok(out)
    }
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
        let keys: Vec<&str> = f.elements.keys().map(|k| &**k).collect();
        assert_eq!(keys, ["r", "b2", "e2", "c4"]);
        // A SKELETON under another key still never replaces the BOARD.
        f.merge_response(&response(
            json!({"elements": {"k": {"id": "b2", "elementType": "SKELETON"}}}),
        ));
        assert_eq!(f.elements["b2"].head.element_type(), "BOARD");
    }

    #[test]
    fn content_travels_with_its_element() {
        let answers = [
            json!({"elements": {"e0": {"_id": "r", "elementType": "BOARD", "content": {"title": "R"}},
                                "k": {"id": "b", "elementType": "BOARD", "content": {"title": "B"}},
                                "c": {"elementType": "CARD", "content": {"text": 1}}},
                   "comments": {"c1": {"text": "x"}}, "canvasOrder": {"r": ["b"]}}),
            json!({"elements": {"s": {"id": "b", "elementType": "SKELETON", "content": {"title": "S"}},
                                "c": {"elementType": "CARD"}},
                   "comments": {"c1": {"text": "y"}}, "canvasOrder": [1]}),
        ];
        let mut f = Fetched::new("r", 0);
        for answer in answers {
            let body = serde_json::to_vec(&answer).unwrap();
            f.merge_answer(Answer::parse(&body).unwrap());
        }
        assert_eq!(f.content("r"), Some(json!({"title": "R"})));
        // The SKELETON lost to the BOARD, and so did its content.
        assert_eq!(f.content("b"), Some(json!({"title": "B"})));
        // The later card replaced the earlier one, content and all.
        assert_eq!(f.content("c"), None);
        assert_eq!(f.comments["c1"].text(), Some(json!("y")));
        assert_eq!(f.canvas_order["r"].value(), Some(json!(["b"])));
    }

    #[test]
    fn later_copy_replaces_earlier() {
        let mut f = Fetched::new("r", 0);
        f.merge_response(&response(
            json!({"elements":{"a":{"elementType":"CARD","content":{"v":1}}}}),
        ));
        f.merge_response(&response(
            json!({"elements":{"a":{"elementType":"CARD","content":{"v":2}}}}),
        ));
        assert_eq!(f.content("a"), Some(json!({"v": 2})));
    }

    #[test]
    fn board_is_never_replaced_by_skeleton() {
        let mut f = Fetched::new("r", 0);
        f.merge_response(&response(json!({"elements":{"b":{"elementType":"BOARD"}}})));
        f.merge_response(&response(
            json!({"elements":{"b":{"elementType":"SKELETON"}}}),
        ));
        assert_eq!(f.elements["b"].head.element_type(), "BOARD");
        // ...but a skeleton is replaced by a board.
        f.merge_response(&response(
            json!({"elements":{"s":{"elementType":"SKELETON"}}}),
        ));
        f.merge_response(&response(json!({"elements":{"s":{"elementType":"BOARD"}}})));
        assert_eq!(f.elements["s"].head.element_type(), "BOARD");
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
        assert_eq!(f.canvas_order["r"].value(), Some(json!(["a", "b"])));
    }
}
