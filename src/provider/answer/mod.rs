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
//! Other members are checked and skipped, never built.
//!
//! The body is walked by a cursor of its own (`scan`) rather than through
//! serde: the objects it reads member by member, and every value it keeps
//! as text or skips in one pass that finds the value's end and checks it.
//! Through serde_json, each such value was skipped by serde_json and then
//! scanned once more for what a value parse refuses beyond syntax. The
//! scalars of a [`Head`] are read by serde_json from their own text, so
//! they mean what they mean in a value.
//!
//! What is accepted is exactly what parsing the whole body as one value
//! accepts (same syntax, same nesting limit), and a repeated key means what
//! it means in a value: the last value wins and keeps the first one's place.
//!
//! The client reads a boards answer as its body arrives, with
//! [`AnswerStream`], which reads with this module's functions and gives the
//! same answer.

mod check;
mod comments;
mod scan;
mod stream;

use crate::provider::head::{
    Head, HeadFields, HeldField, HeldScalar, IdField, IdRead, LocationFields, MetaTimes,
    ParentField, SharedField, SharedStrs, TypeField,
};
use bytes::Bytes;
#[cfg(any(test, feature = "internals"))]
use check::MAX_LEVELS;
#[cfg(any(test, feature = "internals"))]
pub use comments::comments_of;
pub use comments::{Comments, IdHasher, RawComment};
use indexmap::IndexMap;
use scan::{Bad, Scan};
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::ops::Range;
pub use stream::AnswerStream;

/// Most nested levels an element's `content` (or any other field of an
/// element) may have, counting itself: it sits below three levels (the
/// answer, `elements`, the element).
#[cfg(any(test, feature = "internals"))]
pub const MAX_CONTENT_DEPTH: usize = MAX_LEVELS - 3;

/// One `/api/boards` answer.
#[derive(Debug, Default)]
#[cfg_attr(any(test, feature = "internals"), derive(PartialEq))]
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
///
/// Its bytes are always UTF-8: each constructor takes them from a str
/// (`JsonText::slice_of` from a body already read as one, on the str's
/// char boundaries), so [`JsonText::text`] does not check them again.
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

    /// `body[range]`, where `text` is `body` read as a str (the same
    /// bytes, not a copy) and `range` lies on its char boundaries; `None`
    /// otherwise. Both are checked in constant time.
    fn slice_of(body: &Bytes, text: &str, range: Range<usize>) -> Option<JsonText> {
        let same = text.as_ptr() == body.as_ptr() && text.len() == body.len();
        (same && text.get(range.clone()).is_some()).then(|| JsonText(body.slice(range)))
    }

    /// The JSON text.
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }

    /// The text as a str. Its UTF-8 was checked once, with the whole body
    /// it came from, rather than again here (the content texts of a large
    /// board are most of its body).
    pub fn text(&self) -> &str {
        // SAFETY: every constructor takes these bytes from a str, whole
        // (`of`, `from_text`) or as a slice between two of its char
        // boundaries (`slice_of` checks both, and that the str is the
        // body's own bytes). A slice of UTF-8 on char boundaries is UTF-8.
        unsafe { std::str::from_utf8_unchecked(&self.0) }
    }

    /// The text as a value.
    pub fn value(&self) -> Option<Value> {
        serde_json::from_str(self.text()).ok()
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
        let mut scan = Scan::new(text);
        let answer = if scan.open_object() {
            read_answer(&mut scan, body).map(Some)
        } else {
            scan.value(0).map(|_| None)
        };
        match answer {
            Ok(answer) if scan.at_end() => answer.ok_or(AnswerError::NotObject),
            _ => Err(AnswerError::NotJson),
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

/// Reads the answer's members (the cursor is past its `{`). A repeated
/// member replaces the earlier one, as in a value.
fn read_answer(scan: &mut Scan, body: &Bytes) -> Result<Answer, Bad> {
    let mut answer = Answer::default();
    let mut first = true;
    while let Some(key) = scan.next_key(&mut first)? {
        match &*key {
            "elements" => answer.elements = read_elements(scan, body)?,
            "comments" => answer.comments = read_comments(scan, body)?,
            "canvasOrder" => answer.canvas_order = read_canvas_order(scan, body)?,
            _ => {
                let value = scan.read(TOP_LEVELS, PhantomData::<Value>)?;
                answer.fields.insert(key.into_owned(), value);
            }
        }
    }
    Ok(answer)
}

/// The levels around a top-level member: the answer.
const TOP_LEVELS: usize = 1;

/// Reads the members of the object that comes next with `member`, which
/// reads each value; `None` (the value skipped, checked as a value) when it
/// is not an object. `levels` are the levels around the object.
fn object_of<'b, T>(
    scan: &mut Scan<'b>,
    levels: usize,
    mut out: T,
    member: impl FnMut(&mut Scan<'b>, Cow<'b, str>, &mut T) -> Result<(), Bad>,
) -> Result<Option<T>, Bad> {
    Ok(members_of(scan, levels, &mut out, member)?.then_some(out))
}

/// [`object_of`] into `out` where it lies, for what is too large to move
/// about cheaply (an element's fields): whether the value was an object.
fn members_of<'b, T>(
    scan: &mut Scan<'b>,
    levels: usize,
    out: &mut T,
    mut member: impl FnMut(&mut Scan<'b>, Cow<'b, str>, &mut T) -> Result<(), Bad>,
) -> Result<bool, Bad> {
    if !scan.open_object() {
        scan.value(levels)?;
        return Ok(false);
    }
    let mut first = true;
    while let Some(key) = scan.next_key(&mut first)? {
        member(scan, key, out)?;
    }
    Ok(true)
}

/// The text of the next value (below `levels` enclosing levels): a slice
/// of `body`, whose text the scan reads.
fn text_of(scan: &mut Scan, levels: usize, body: &Bytes) -> Result<JsonText, Bad> {
    let (start, end) = scan.value(levels)?;
    JsonText::slice_of(body, scan.text(), start..end).ok_or(Bad)
}

/// `elements`, by key.
fn read_elements(scan: &mut Scan, body: &Bytes) -> Result<Option<Elements>, Bad> {
    // The parent and root board ids read so far, each held once for all
    // the elements that name it.
    let mut parents = SharedStrs::default();
    let elements = Elements::with_capacity_and_hasher(0, IdHasher::default());
    let elements = object_of(scan, TOP_LEVELS, elements, |scan, key, elements| {
        let key: Box<str> = key.into();
        let (head, content) = read_element(scan, &key, &mut parents)?;
        let content = match content {
            Some(range) => Some(JsonText::slice_of(body, scan.text(), range).ok_or(Bad)?),
            None => None,
        };
        insert_element(elements, key, Element { head, content });
        Ok(())
    })?;
    Ok(elements.map(shrunk))
}

/// Puts `element` under `key`, and says at which index: a repeated key
/// replaces the earlier element in its place, as in a value.
fn insert_element(elements: &mut Elements, key: Box<str>, element: Element) -> usize {
    // Grown by doubling, explicitly: left to itself the map's list of
    // entries grew by one element at a time (reallocated on most inserts of
    // a 7,000-element board).
    if elements.len() == elements.capacity() {
        elements.reserve(elements.len().max(16));
    }
    elements.insert_full(key, element).0
}

/// `elements` once read whole: up to half of it is empty room, and the
/// merged board may keep it.
fn shrunk(mut elements: Elements) -> Elements {
    elements.shrink_to_fit();
    elements
}

/// The levels around an element's members: the answer, `elements`, the element.
const ELEMENT_LEVELS: usize = 3;

/// One element: its [`Head`], read member by member, and where the text of
/// its `content` lies in the scan's text. An element that is not an object
/// is kept too (with an empty head), since it still claims its key.
///
/// The members read are `content`, then the fields the provider client and
/// the normalizer read across elements (ids, type, placement, times, the
/// thread id). A reader of another element field must add it here; the
/// differential tests build every fixture both through this reader and from
/// whole values and require the same document.
fn read_element(
    scan: &mut Scan,
    key: &str,
    parents: &mut SharedStrs<IdHasher>,
) -> Result<(Head, Option<Range<usize>>), Bad> {
    const LEVELS: usize = ELEMENT_LEVELS;
    let mut read = (HeadFields::default(), None);
    let object = members_of(
        scan,
        LEVELS - 1,
        &mut read,
        |scan, name, (fields, content)| {
            match &*name {
                "content" => {
                    let (start, end) = scan.value(LEVELS)?;
                    *content = Some(start..end);
                }
                // A repeated `id` replaces the earlier one, as in a value.
                "id" => match scan.read(LEVELS, IdField(key))? {
                    IdRead::Key => (fields.id, fields.id_is_key) = (None, true),
                    IdRead::Held(id) => (fields.id, fields.id_is_key) = (id, false),
                },
                "_id" => fields.underscore_id = scan.read(LEVELS, held())?.0,
                "elementType" => {
                    fields.element_type = scan.read(LEVELS, PhantomData::<TypeField>)?.0
                }
                "location" => read_location(scan, parents, &mut fields.location)?,
                "meta" => {
                    let times = read_picked(scan, time_key, LEVELS)?;
                    fields.meta = times.map(MetaTimes::new);
                }
                "threadId" => fields.thread_id = scan.read(LEVELS, held())?.0,
                other => match flat_key(other) {
                    Some(i) => fields.flat[i] = scan.read(LEVELS, held())?.0,
                    None => {
                        scan.value(LEVELS)?;
                    }
                },
            }
            Ok(())
        },
    )?;
    let (fields, content) = read;
    Ok(if object {
        (Head::from_fields(fields, Some(key)), content)
    } else {
        (Head::default(), None)
    })
}

/// A name's place among the flat placement members an element and its
/// `location` may have, the order of their `flat` fields
/// ([`FLAT_POSITION_KEYS`](crate::provider::head::FLAT_POSITION_KEYS)), as
/// [`time_key`] finds it.
#[inline]
fn flat_key(name: &str) -> Option<usize> {
    match name {
        "positionX" => Some(0),
        "positionY" => Some(1),
        "positionIndex" => Some(2),
        "positionScore" => Some(3),
        _ => None,
    }
}

/// Reads a [`HeldField`].
fn held() -> PhantomData<HeldField> {
    PhantomData
}

/// `location` into `out` (a repeated one replaces the earlier one, as in a
/// value): the keys [`Head`] reads, the others checked and skipped.
fn read_location(
    scan: &mut Scan,
    parents: &mut SharedStrs<IdHasher>,
    out: &mut Option<LocationFields>,
) -> Result<(), Bad> {
    const LEVELS: usize = ELEMENT_LEVELS + 1;
    let location = out.insert(LocationFields::default());
    let object = members_of(scan, ELEMENT_LEVELS, location, |scan, name, location| {
        match &*name {
            "parentId" => location.parent_id = scan.read(LEVELS, ParentField(&mut *parents))?,
            "section" => location.section = scan.read(LEVELS, held())?.0,
            "rootBoard" => location.root_board = scan.read(LEVELS, SharedField(&mut *parents))?,
            "position" => location.position = read_picked(scan, position_key, LEVELS)?,
            other => match flat_key(other) {
                Some(i) => location.flat[i] = scan.read(LEVELS, held())?.0,
                None => {
                    scan.value(LEVELS)?;
                }
            },
        }
        Ok(())
    })?;
    if !object {
        *out = None;
    }
    Ok(())
}

/// An object's scalars under four names, as sent (the object below
/// `levels` enclosing levels); other members are checked and skipped.
/// `key` gives a name's place among the four.
fn read_picked(
    scan: &mut Scan,
    key: fn(&str) -> Option<usize>,
    levels: usize,
) -> Result<Option<[Option<HeldScalar>; 4]>, Bad> {
    object_of(scan, levels, Default::default(), |scan, name, values| {
        match key(&name) {
            Some(i) => values[i] = scan.read(levels + 1, held())?.0,
            None => {
                scan.value(levels + 1)?;
            }
        }
        Ok(())
    })
}

/// A name's place in [`TIME_KEYS`](crate::provider::head::TIME_KEYS).
/// Matched as literals, which compile to inline comparisons where a search
/// of the list called `memcmp` for each (about 28,000 names a load of the
/// bench board).
#[inline]
fn time_key(name: &str) -> Option<usize> {
    match name {
        "createdTime" => Some(0),
        "modifiedTime" => Some(1),
        "significantModified" => Some(2),
        "locationSectionModifiedTime" => Some(3),
        _ => None,
    }
}

/// A name's place in
/// [`POSITION_KEYS`](crate::provider::head::POSITION_KEYS), as
/// [`time_key`] finds it.
#[inline]
fn position_key(name: &str) -> Option<usize> {
    match name {
        "x" => Some(0),
        "y" => Some(1),
        "index" => Some(2),
        "score" => Some(3),
        _ => None,
    }
}

/// `canvasOrder`: each entry's text, checked as a value parse would check
/// it there; a repeated key replaces the earlier entry, as in a value.
fn read_canvas_order(scan: &mut Scan, body: &Bytes) -> Result<Option<CanvasOrder>, Bad> {
    let text = scan.text();
    read_canvas_entries(
        scan,
        |range| JsonText::slice_of(body, text, range),
        |_, _| {},
    )
}

/// `canvasOrder`, each entry's text made by `entry` of where it lies in
/// the scan's text; `placed` is told the index each entry took, and where
/// it lies (a stream makes the texts once the body is whole).
fn read_canvas_entries(
    scan: &mut Scan,
    mut entry: impl FnMut(Range<usize>) -> Option<JsonText>,
    mut placed: impl FnMut(usize, Range<usize>),
) -> Result<Option<CanvasOrder>, Bad> {
    // The levels around an entry: the answer, `canvasOrder`.
    const LEVELS: usize = 2;
    object_of(
        scan,
        TOP_LEVELS,
        CanvasOrder::default(),
        |scan, key, order| {
            let (start, end) = scan.value(LEVELS)?;
            let text = entry(start..end).ok_or(Bad)?;
            let (index, _) = order.insert_full(key.into_owned(), text);
            placed(index, start..end);
            Ok(())
        },
    )
}

/// `comments`: each entry as a [`RawComment`]; a repeated key replaces the
/// earlier entry in its place, as in a value.
fn read_comments(scan: &mut Scan, body: &Bytes) -> Result<Option<Comments>, Bad> {
    let comments = Comments::with_hasher(IdHasher::default());
    object_of(scan, TOP_LEVELS, comments, |scan, key, comments| {
        let comment = read_comment(scan, body)?;
        comments.insert(key.into_owned(), comment.unwrap_or_default());
        Ok(())
    })
}

/// One comment: the fields the normalizer reads, its `text` as text.
fn read_comment(scan: &mut Scan, body: &Bytes) -> Result<Option<RawComment>, Bad> {
    // The levels around a comment's members: the answer, `comments`, the comment.
    const LEVELS: usize = 3;
    let comment = RawComment {
        is_object: true,
        ..RawComment::default()
    };
    object_of(scan, LEVELS - 1, comment, |scan, name, comment| {
        let value = |scan: &mut Scan| scan.read(LEVELS, PhantomData::<Value>).map(Some);
        match &*name {
            "text" => comment.text = Some(text_of(scan, LEVELS, body)?),
            "id" => comment.id = value(scan)?,
            "_id" => comment.underscore_id = value(scan)?,
            "threadId" => comment.thread_id = value(scan)?,
            "createdAt" => comment.created_at = value(scan)?,
            "updatedAt" => comment.updated_at = value(scan)?,
            _ => {
                scan.value(LEVELS)?;
            }
        }
        Ok(())
    })
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

#[cfg(test)]
mod tests;
