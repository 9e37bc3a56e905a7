//! One `/api/boards` answer, read in one pass over its bytes.
//!
//! A board's bulk is its elements' `content` (rich text above all), and the
//! normalizer reads each element's content once, when it writes that
//! element. So the answer is not parsed into one value tree: of every
//! element, the fields the client and the tree builder look up across
//! elements (id, type, location, meta) are read member by member into a
//! typed [`Head`], and its `content` is kept as the raw JSON text the
//! provider sent ([`JsonText`], a slice of the body: shared, not copied),
//! checked but not built. Comments are read the same way, their `text` kept
//! as text. A cold load then holds the content once, inside the body it came
//! in, instead of as a tree that costs several times its size.
//!
//! Members outside [`ELEMENT_KEYS`] are checked and skipped, never built.
//!
//! What is accepted is exactly what parsing the whole body as one value
//! accepts (same syntax, same nesting limit), and a repeated key means what
//! it means in a value: the last value wins and keeps the first one's place.

mod check;
mod comments;

use crate::provider::head::{
    Head, HeadFields, HeldField, HeldScalar, IdField, IdRead, LocationFields, MetaTimes,
    ParentField, SharedField, SharedStr, TypeField, POSITION_KEYS, TIME_KEYS,
};
use bytes::Bytes;
use check::checked;
#[cfg(any(test, feature = "internals"))]
use check::MAX_LEVELS;
#[cfg(any(test, feature = "internals"))]
pub use comments::comments_of;
pub use comments::{Comments, IdHasher, RawComment};
use indexmap::IndexMap;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::fmt;

/// Most nested levels an element's `content` (or any other field of an
/// element) may have, counting itself: it sits below three levels (the
/// answer, `elements`, the element).
#[cfg(any(test, feature = "internals"))]
pub const MAX_CONTENT_DEPTH: usize = MAX_LEVELS - 3;

/// One `/api/boards` answer.
#[derive(Debug, Default)]
pub struct Answer {
    /// The top-level members other than `elements`, `comments` and
    /// `canvasOrder` (`errors`, `childrenReturned`, `fetchedTime`, ...).
    pub fields: Map<String, Value>,
    /// `elements`, when it is an object, by map key in the provider's order.
    pub elements: Option<Elements>,
    /// `comments`, when it is an object.
    pub comments: Option<Comments>,
    /// `canvasOrder`, when it is an object: each parent's entry kept as
    /// the text the provider sent (a slice of the body), read only when
    /// that parent's children are ordered. A board's canvas lists every
    /// card, and as a value tree the list cost about 90 bytes an id.
    pub canvas_order: Option<CanvasOrder>,
}

/// A `canvasOrder` map: parent id -> its entry's JSON text.
pub type CanvasOrder = IndexMap<String, JsonText, IdHasher>;

/// A `canvasOrder` map held as a value (tests, fixtures, benchmarks).
#[cfg(any(test, feature = "internals"))]
pub fn canvas_order_of(map: &Map<String, Value>) -> CanvasOrder {
    map.iter()
        .map(|(key, entry)| (key.clone(), JsonText::of(entry)))
        .collect()
}

/// The entries of an `elements` map, by key.
pub type Elements = IndexMap<Box<str>, Element, IdHasher>;

/// One entry of an `elements` map.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Element {
    /// What is read of the element besides its content (an element that is
    /// not an object is kept too, since it still claims its key).
    pub head: Head,
    /// The element's `content`, as the provider wrote it.
    pub content: Option<JsonText>,
}

/// One JSON value as the provider wrote it: a slice of the answer body it
/// was read from, shared with the body rather than copied out of it, and
/// checked when the body was read as a whole-value parse would check it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonText(Bytes);

impl JsonText {
    /// The text of `value` (tests, fixtures).
    #[cfg(any(test, feature = "internals"))]
    pub fn of(value: &Value) -> JsonText {
        JsonText(Bytes::from(value.to_string()))
    }

    /// `text` as it is, unchecked (tests: texts a value cannot hold, such
    /// as an object with a repeated key).
    #[cfg(test)]
    pub fn from_text(text: &str) -> JsonText {
        JsonText(Bytes::copy_from_slice(text.as_bytes()))
    }

    /// The text of a value read from `body`: a slice of `body` (it always
    /// is one; a copy otherwise).
    fn within(body: &Bytes, raw: &RawValue) -> JsonText {
        let text = raw.get().as_bytes();
        let start = (text.as_ptr() as usize).checked_sub(body.as_ptr() as usize);
        match start {
            Some(start) if start <= body.len() && text.len() <= body.len() - start => {
                JsonText(body.slice(start..start + text.len()))
            }
            _ => JsonText(Bytes::copy_from_slice(text)),
        }
    }

    /// The JSON text.
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }

    /// The text as a str: UTF-8 is checked once for the whole text, in
    /// one pass, rather than string by string while it is parsed (a
    /// slice parse validates each string on its own; a rich text is
    /// thousands of short ones). `None` exactly when a slice parse would
    /// refuse the text for its encoding.
    pub fn text(&self) -> Option<&str> {
        std::str::from_utf8(&self.0).ok()
    }

    /// The text as a value.
    pub fn value(&self) -> Option<Value> {
        serde_json::from_str(self.text()?).ok()
    }
}

/// Why an answer could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerError {
    /// Not JSON (or nested deeper than a value may be).
    NotJson,
    /// JSON, but not an object.
    NotObject,
}

impl Answer {
    /// Reads an answer body.
    ///
    /// # Errors
    /// [`AnswerError`] when the body is not a JSON object.
    #[cfg(any(test, feature = "internals"))]
    pub fn parse(body: &[u8]) -> Result<Answer, AnswerError> {
        Answer::parse_bytes(&Bytes::copy_from_slice(body))
    }

    /// Reads an answer body; the raw texts it keeps are slices of `body`.
    ///
    /// The body's UTF-8 is checked once, in one pass over all of it, and
    /// the text then read as a str: read as bytes, each string and each
    /// captured text would be checked on its own (hundreds of thousands of
    /// short ones). Every byte of a body a value parse accepts is in a
    /// string or is JSON's ASCII syntax, so a body that is not UTF-8 is one
    /// it refuses either way.
    ///
    /// # Errors
    /// [`AnswerError`] when the body is not a JSON object.
    pub fn parse_bytes(body: &Bytes) -> Result<Answer, AnswerError> {
        let text = std::str::from_utf8(body).map_err(|_| AnswerError::NotJson)?;
        let mut de = serde_json::Deserializer::from_str(text);
        let top = ObjectOnly(AnswerReader { body }).deserialize(&mut de);
        match top.and_then(|top| de.end().map(|()| top)) {
            Ok(Some(answer)) => Ok(answer),
            Ok(None) => Err(AnswerError::NotObject),
            Err(_) => Err(AnswerError::NotJson),
        }
    }

    /// The answer held in a value (tests, fixtures, benchmarks): written out
    /// and read back, so it goes through the same reader as a real body.
    #[cfg(any(test, feature = "internals"))]
    pub fn from_value(value: &Map<String, Value>) -> Answer {
        let body = serde_json::to_vec(value).unwrap_or_default();
        Answer::parse(&body).unwrap_or_default()
    }

    /// The elements as `(key, head)`, in the provider's order.
    pub fn element_heads(&self) -> impl Iterator<Item = (&str, &Head)> {
        self.elements
            .iter()
            .flatten()
            .map(|(key, e)| (&**key, &e.head))
    }

    /// The number of elements.
    pub fn element_count(&self) -> usize {
        self.elements.as_ref().map_or(0, IndexMap::len)
    }
}

/// The body's top level, an answer; the kept texts are slices of `body`.
struct AnswerReader<'b> {
    body: &'b Bytes,
}

impl<'de> MapReader<'de> for AnswerReader<'_> {
    type Out = Answer;

    fn read<A: MapAccess<'de>>(self, mut map: A) -> Result<Answer, A::Error> {
        let mut answer = Answer::default();
        while let Some(key) = map.next_key::<String>()? {
            // A repeated `elements` or `comments` replaces the earlier one,
            // as in a value.
            if key == "elements" {
                let reader = ElementsReader { body: self.body };
                answer.elements = map.next_value_seed(ObjectOnly(reader))?;
            } else if key == "comments" {
                let reader = CommentsReader { body: self.body };
                answer.comments = map.next_value_seed(ObjectOnly(reader))?;
            } else if key == "canvasOrder" {
                let reader = CanvasOrderReader { body: self.body };
                answer.canvas_order = map.next_value_seed(ObjectOnly(reader))?;
            } else {
                answer.fields.insert(key, map.next_value()?);
            }
        }
        Ok(answer)
    }
}

/// `elements`, by key.
struct ElementsReader<'b> {
    body: &'b Bytes,
}

impl<'de> MapReader<'de> for ElementsReader<'_> {
    type Out = Elements;

    fn read<A: MapAccess<'de>>(self, mut map: A) -> Result<Elements, A::Error> {
        let hint = map.size_hint().unwrap_or(0);
        let mut elements = Elements::with_capacity_and_hasher(hint, IdHasher::default());
        // The parent and root board ids read so far, each held once for
        // all the elements that name it.
        let mut parents = HashSet::default();
        while let Some(key) = map.next_key::<Box<str>>()? {
            let seed = ElementSeed {
                body: self.body,
                key: &key,
                parents: &mut parents,
            };
            let (head, content) = map.next_value_seed(seed)?;
            // Grown by doubling, explicitly: serde_json gives no count, and
            // left to itself the map's list of entries grew by one element
            // at a time (reallocated on most inserts of a 7,000-element board).
            if elements.len() == elements.capacity() {
                elements.reserve(elements.len().max(16));
            }
            // A repeated key replaces the earlier element in its place, as
            // in a value.
            elements.insert(key, Element { head, content });
        }
        // Up to half of it is empty room, and the merged board may keep it.
        elements.shrink_to_fit();
        Ok(elements)
    }
}

/// One element: its [`Head`], read member by member, and `content` as text.
struct ElementSeed<'b> {
    body: &'b Bytes,
    /// The element's map key.
    key: &'b str,
    parents: &'b mut HashSet<SharedStr, IdHasher>,
}

impl<'de> DeserializeSeed<'de> for ElementSeed<'_> {
    type Value = (Head, Option<JsonText>);

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        let reader = ElementReader {
            body: self.body,
            key: self.key,
            parents: self.parents,
        };
        let element = deserializer.deserialize_any(ObjectOnly(reader))?;
        Ok(element.unwrap_or_default())
    }
}

/// The members of an element that are read: `content`, then the fields the
/// provider client and the normalizer read across elements (ids, type,
/// placement, times, the thread id), in the order the element reader matches
/// them. A reader of another element field must add it here; the
/// differential tests build every fixture both through this reader and from
/// whole values and require the same document.
pub const ELEMENT_KEYS: [&str; 11] = [
    "content",
    "id",
    "_id",
    "elementType",
    "location",
    "meta",
    "threadId",
    "positionX",
    "positionY",
    "positionIndex",
    "positionScore",
];

/// The levels around an element's members: the answer, `elements`, the element.
const ELEMENT_LEVELS: usize = 3;

struct ElementReader<'b> {
    body: &'b Bytes,
    key: &'b str,
    parents: &'b mut HashSet<SharedStr, IdHasher>,
}

impl<'de> MapReader<'de> for ElementReader<'_> {
    type Out = (Head, Option<JsonText>);

    fn read<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let mut fields = HeadFields::default();
        let mut content = None;
        while let Some(key) = map.next_key_seed(NameIn(&ELEMENT_KEYS))? {
            match key {
                Some(0) => {
                    let raw = checked::<A::Error>(map.next_value()?, ELEMENT_LEVELS)?;
                    content = Some(JsonText::within(self.body, raw));
                }
                // A repeated `id` replaces the earlier one, as in a value.
                Some(1) => match map.next_value_seed(IdField(self.key))? {
                    IdRead::Key => (fields.id, fields.id_is_key) = (None, true),
                    IdRead::Held(id) => (fields.id, fields.id_is_key) = (id, false),
                },
                Some(2) => fields.underscore_id = map.next_value::<HeldField>()?.0,
                Some(3) => fields.element_type = map.next_value::<TypeField>()?.0,
                Some(4) => {
                    let reader = LocationReader {
                        parents: &mut *self.parents,
                    };
                    fields.location = map.next_value_seed(ObjectOnly(reader))?;
                }
                Some(5) => {
                    let times = map.next_value_seed(ObjectOnly(Picked {
                        keys: &TIME_KEYS,
                        levels: ELEMENT_LEVELS + 1,
                    }))?;
                    fields.meta = times.map(MetaTimes::new);
                }
                Some(6) => fields.thread_id = map.next_value::<HeldField>()?.0,
                Some(i @ 7..=10) => fields.flat[i - 7] = map.next_value::<HeldField>()?.0,
                _ => {
                    checked::<A::Error>(map.next_value()?, ELEMENT_LEVELS)?;
                }
            }
        }
        Ok((Head::from_fields(fields, Some(self.key)), content))
    }
}

/// `canvasOrder`: each entry's text, checked as a value parse would check
/// it there; a repeated key replaces the earlier entry, as in a value.
struct CanvasOrderReader<'b> {
    body: &'b Bytes,
}

/// The levels around a `canvasOrder` entry: the answer, `canvasOrder`.
const CANVAS_ORDER_LEVELS: usize = 2;

impl<'de> MapReader<'de> for CanvasOrderReader<'_> {
    type Out = CanvasOrder;

    fn read<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let mut order = CanvasOrder::default();
        while let Some(key) = map.next_key::<String>()? {
            let raw = checked::<A::Error>(map.next_value()?, CANVAS_ORDER_LEVELS)?;
            order.insert(key, JsonText::within(self.body, raw));
        }
        Ok(order)
    }
}

/// `comments`: each entry as a [`RawComment`]; a repeated key replaces the
/// earlier entry in its place, as in a value.
struct CommentsReader<'b> {
    body: &'b Bytes,
}

impl<'de> MapReader<'de> for CommentsReader<'_> {
    type Out = Comments;

    fn read<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let mut comments =
            Comments::with_capacity_and_hasher(map.size_hint().unwrap_or(0), IdHasher::default());
        while let Some(key) = map.next_key::<String>()? {
            let comment = map.next_value_seed(ObjectOnly(CommentReader { body: self.body }))?;
            comments.insert(key, comment.unwrap_or_default());
        }
        Ok(comments)
    }
}

const COMMENT_KEYS: [&str; 6] = ["text", "id", "_id", "threadId", "createdAt", "updatedAt"];

/// The levels around a comment's members: the answer, `comments`, the comment.
const COMMENT_LEVELS: usize = 3;

struct CommentReader<'b> {
    body: &'b Bytes,
}

impl<'de> MapReader<'de> for CommentReader<'_> {
    type Out = RawComment;

    fn read<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let mut comment = RawComment {
            is_object: true,
            ..RawComment::default()
        };
        while let Some(key) = map.next_key_seed(NameIn(&COMMENT_KEYS))? {
            match key {
                Some(0) => {
                    let raw = checked::<A::Error>(map.next_value()?, COMMENT_LEVELS)?;
                    comment.text = Some(JsonText::within(self.body, raw));
                }
                Some(1) => comment.id = Some(map.next_value()?),
                Some(2) => comment.underscore_id = Some(map.next_value()?),
                Some(3) => comment.thread_id = Some(map.next_value()?),
                Some(4) => comment.created_at = Some(map.next_value()?),
                Some(5) => comment.updated_at = Some(map.next_value()?),
                _ => {
                    checked::<A::Error>(map.next_value()?, COMMENT_LEVELS)?;
                }
            }
        }
        Ok(comment)
    }
}

/// `location`: the keys [`Head`] reads, the others checked and skipped.
struct LocationReader<'p> {
    parents: &'p mut HashSet<SharedStr, IdHasher>,
}

const LOCATION_KEYS: [&str; 8] = [
    "parentId",
    "section",
    "rootBoard",
    "position",
    "positionX",
    "positionY",
    "positionIndex",
    "positionScore",
];

impl<'de> MapReader<'de> for LocationReader<'_> {
    type Out = LocationFields;

    fn read<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let mut location = LocationFields::default();
        while let Some(key) = map.next_key_seed(NameIn(&LOCATION_KEYS))? {
            match key {
                Some(0) => location.parent_id = map.next_value_seed(ParentField(self.parents))?,
                Some(1) => location.section = map.next_value::<HeldField>()?.0,
                Some(2) => location.root_board = map.next_value_seed(SharedField(self.parents))?,
                Some(3) => {
                    location.position = map.next_value_seed(ObjectOnly(Picked {
                        keys: &POSITION_KEYS,
                        levels: ELEMENT_LEVELS + 2,
                    }))?;
                }
                Some(i @ 4..=7) => location.flat[i - 4] = map.next_value::<HeldField>()?.0,
                _ => {
                    checked::<A::Error>(map.next_value()?, ELEMENT_LEVELS + 1)?;
                }
            }
        }
        Ok(location)
    }
}

/// An object's scalars under four names, as sent; other members are
/// checked (below `levels` enclosing levels) and skipped.
struct Picked {
    keys: &'static [&'static str; 4],
    levels: usize,
}

impl<'de> MapReader<'de> for Picked {
    type Out = [Option<HeldScalar>; 4];

    fn read<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let mut values: [Option<HeldScalar>; 4] = Default::default();
        while let Some(key) = map.next_key_seed(NameIn(self.keys))? {
            match key {
                Some(i) => values[i] = map.next_value::<HeldField>()?.0,
                None => {
                    checked::<A::Error>(map.next_value()?, self.levels)?;
                }
            }
        }
        Ok(values)
    }
}

/// Reads the members of an object. A repeated member is read again, so
/// the last one wins, as in a value.
pub(crate) trait MapReader<'de> {
    type Out;
    fn read<A: MapAccess<'de>>(self, map: A) -> Result<Self::Out, A::Error>;
}

/// `Some` of what `R` reads of an object; `None` for any other value (read
/// through, with the nesting limit of a value).
pub(crate) struct ObjectOnly<R>(pub(crate) R);

impl<'de, R: MapReader<'de>> DeserializeSeed<'de> for ObjectOnly<R> {
    type Value = Option<R::Out>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de, R: MapReader<'de>> Visitor<'de> for ObjectOnly<R> {
    type Value = Option<R::Out>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.0.read(map).map(Some)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<Value>()?.is_some() {}
        Ok(None)
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    crate::provider::scalars_are_none!();
}

/// A member name: its position in a table of names, `None` for any other,
/// read without allocating (escaped names are unescaped by serde_json).
struct NameIn<const N: usize>(&'static [&'static str; N]);

impl<'de, const N: usize> DeserializeSeed<'de> for NameIn<N> {
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de, const N: usize> Visitor<'de> for NameIn<N> {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E>(self, name: &str) -> Result<Self::Value, E> {
        Ok(self.0.iter().position(|k| *k == name))
    }
}

#[cfg(test)]
mod tests;
