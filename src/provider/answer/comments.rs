//! The comments of an answer's top-level `comments` map, as the client
//! reads them: the fields the normalizer uses, and each comment's `text` as
//! the JSON text the provider sent.

use super::JsonText;
use indexmap::IndexMap;
#[cfg(any(test, feature = "internals"))]
use serde_json::Map;
use serde_json::Value;

/// The hasher of the tables keyed by element id, which a load consults
/// several times per element: aHash, keyed at random per table like std's
/// SipHash (ids come from board authors' data), at a fraction of its cost
/// on short keys.
pub type IdHasher = ahash::RandomState;

/// The raw comments of `comments` maps, by key, in the provider's order.
pub type Comments = IndexMap<String, RawComment, IdHasher>;

/// One entry of a `comments` map: the fields read of it, as sent, and its
/// `text` (rich text, a comment's bulk) as the JSON text the provider sent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawComment {
    /// Whether the entry is an object; anything else is no comment.
    pub is_object: bool,
    pub id: Option<Value>,
    pub underscore_id: Option<Value>,
    pub thread_id: Option<Value>,
    pub created_at: Option<Value>,
    pub updated_at: Option<Value>,
    pub text: Option<JsonText>,
}

impl RawComment {
    /// The comment of a whole value (tests, fixtures).
    #[cfg(any(test, feature = "internals"))]
    pub fn of(value: &Value) -> RawComment {
        let Value::Object(fields) = value else {
            return RawComment::default();
        };
        let get = |k: &str| fields.get(k).cloned();
        RawComment {
            is_object: true,
            id: get("id"),
            underscore_id: get("_id"),
            thread_id: get("threadId"),
            created_at: get("createdAt"),
            updated_at: get("updatedAt"),
            text: fields.get("text").map(JsonText::of),
        }
    }

    /// Its `text`, as a value (the reference pipeline reads it so).
    #[cfg(any(test, feature = "internals"))]
    pub fn text(&self) -> Option<Value> {
        self.text.as_ref()?.value()
    }
}

/// The comments of a whole `comments` map (tests, fixtures).
#[cfg(any(test, feature = "internals"))]
pub fn comments_of(map: &Map<String, Value>) -> Comments {
    map.iter()
        .map(|(k, v)| (k.clone(), RawComment::of(v)))
        .collect()
}
