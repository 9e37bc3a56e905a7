//! A board document read flat for comparison: every element once, in
//! reading order, with its parent, its section and its fields as the raw
//! JSON bytes the document holds. Called by [`super::compare`].
//!
//! The document is read in one pass with borrowed slices and no tree of
//! values: each element is built as its members are read, its fields kept
//! as `&RawValue`s in one vector, its `children` read as elements again
//! (serde_json's nesting limit bounds that recursion). The elements are
//! then placed in reading order by a walk with its own stack. Comparing two
//! fields is comparing bytes: the service writes a document
//! deterministically (the same content gives the same bytes), so equal
//! bytes are equal fields; a document read back from a store that was
//! written otherwise can only make a field look changed.

use crate::document::reading::{numeric, reading_order, ReadingKey};
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::hash_map::Entry;
use std::collections::HashMap;

/// Elements nested deeper than this are left out: no document the service
/// writes or a store accepts has them (the walks' own bound is 127
/// containers, two per level).
pub const MAX_NESTED: usize = crate::pipeline::search::MAX_NESTED;

/// One element of a flat board.
pub struct Element<'a> {
    pub id: Cow<'a, str>,
    /// What [`Flat::by_id`] holds it under: its id, or for an id written
    /// with escapes (never by the service), the id's raw JSON text.
    pub key: &'a str,
    pub kind: Cow<'a, str>,
    /// Index of the parent in [`Flat::elements`]; `None` for the root.
    pub parent: Option<usize>,
    /// `location.section`, when a string.
    pub section: Option<Cow<'a, str>>,
    /// The compared fields, by name, in the document's order: every member
    /// but `id`, `type`, `children` and `timestamps`, with `location`'s
    /// `position` as `position` and its other members (but `parentId` and
    /// `section`, which make a move) as `location.<name>`.
    pub fields: Vec<(Cow<'a, str>, &'a RawValue)>,
    /// A nested board whose elements were not loaded.
    pub unloaded: bool,
}

/// A board document, flat, in reading order (pre-order: an element, then
/// its children in [`reading_order`]).
pub struct Flat<'a> {
    pub elements: Vec<Element<'a>>,
    /// Index of each id's first element.
    pub by_id: HashMap<&'a str, usize, ahash::RandomState>,
    /// `source.boardId` (or the root's id when absent).
    pub board_id: String,
}

/// The document could not be read as a board document.
#[derive(Debug)]
pub struct Unreadable(pub String);

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "board document not comparable: {}", self.0)
    }
}

impl std::error::Error for Unreadable {}

/// The members of an object in order, borrowed; a member named twice is
/// kept twice (the first one found is the one used).
struct Members<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::with_capacity(map.size_hint().unwrap_or(12));
                while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
                    let value: &'de RawValue = map.next_value()?;
                    out.push((key, value));
                }
                Ok(Members(out))
            }
        }
        d.deserialize_map(V)
    }
}

impl<'a> Members<'a> {
    fn get(&self, name: &str) -> Option<&'a RawValue> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| *v)
    }
}

/// A string borrowed from the document unless it holds escapes (a bare
/// `Cow` would always be copied).
#[derive(Deserialize)]
struct Text<'a>(#[serde(borrow)] Cow<'a, str>);

/// A string member, when it is one.
fn string<'a>(raw: Option<&'a RawValue>) -> Option<Cow<'a, str>> {
    raw.and_then(|r| serde_json::from_str::<Text<'a>>(r.get()).ok())
        .map(|t| t.0)
}

#[derive(Deserialize, Default)]
struct Position {
    #[serde(default)]
    x: Coord,
    #[serde(default)]
    y: Coord,
    #[serde(default)]
    index: Coord,
}

/// A coordinate as [`crate::document::reading::number`] reads one (a finite
/// number, or a string that is one), read without building a value.
#[derive(Default)]
struct Coord(Option<f64>);

impl<'de> Deserialize<'de> for Coord {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Coord;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a coordinate")
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Coord, E> {
                Ok(Coord(Some(v).filter(|f| f.is_finite())))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Coord, E> {
                Ok(Coord(Some(v as f64)))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Coord, E> {
                Ok(Coord(Some(v as f64)))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Coord, E> {
                Ok(Coord(numeric(v)))
            }
            fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Coord, E> {
                Ok(Coord(None))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Coord, E> {
                Ok(Coord(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Coord, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Coord(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Coord, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Coord(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// Reads `doc`, the compact JSON of a sanitized full document, in one
/// pass over its bytes: each element's fields are kept as raw slices as
/// its members are read, its `children` read as elements again
/// (serde_json's nesting limit, 128 containers, bounds the reader's
/// recursion: a deeper document is unreadable, and none the service writes
/// or a store accepts is).
///
/// # Errors
/// [`Unreadable`] when `doc` is not an object with a `board` object.
pub fn read(doc: &[u8]) -> Result<Flat<'_>, Unreadable> {
    let text = std::str::from_utf8(doc).map_err(|e| Unreadable(e.to_string()))?;
    let top: Top<'_> = serde_json::from_str(text).map_err(|e| Unreadable(e.to_string()))?;
    let board = top.board.ok_or_else(|| Unreadable("no board".into()))?;
    let source_board = top
        .source
        .and_then(|s| serde_json::from_str::<Members<'_>>(s.get()).ok())
        .and_then(|s| string(s.get("boardId")).map(Cow::into_owned));
    if board.element.is_none() {
        return Err(Unreadable("the board is not an object with an id".into()));
    }
    let mut flat = Flat {
        elements: Vec::new(),
        by_id: HashMap::default(),
        board_id: String::new(),
    };
    // Elements read, not yet placed, with their parent and depth; pushed
    // in reverse reading order, so popped in reading order.
    let mut stack = vec![(board, None, 0)];
    while let Some((tree, parent, depth)) = stack.pop() {
        let Some(mut element) = tree.element else {
            continue;
        };
        let index = flat.elements.len();
        // Never written by the service: an empty id, an id seen before
        // (the first element of an id wins).
        match flat.by_id.entry(element.key) {
            Entry::Vacant(slot) if !element.key.is_empty() => slot.insert(index),
            _ => continue,
        };
        element.parent = parent;
        flat.elements.push(element);
        if depth >= MAX_NESTED || tree.children.is_empty() {
            continue;
        }
        // Children without an id are left out, with what is below them.
        let children: Vec<Tree<'_>> = tree
            .children
            .into_iter()
            .filter(|c| c.element.is_some())
            .collect();
        let keys: Vec<ReadingKey> = children
            .iter()
            .filter_map(|c| c.element.as_ref().map(Element::reading_key))
            .collect();
        let mut slots: Vec<Option<Tree<'_>>> = children.into_iter().map(Some).collect();
        for i in reading_order(&keys).into_iter().rev() {
            stack.extend(slots[i].take().map(|c| (c, Some(index), depth + 1)));
        }
    }
    flat.board_id = source_board
        .or_else(|| flat.elements.first().map(|e| e.id.to_string()))
        .unwrap_or_default();
    Ok(flat)
}

/// The document's top level: `board` read as a tree, `source` kept raw,
/// the rest skipped; a repeated member is read once, the first.
#[derive(Default)]
struct Top<'a> {
    board: Option<Tree<'a>>,
    source: Option<&'a RawValue>,
}

/// An element as read in the one pass (its parent not yet known), and its
/// children; anything that is not an object, or has no string `id`, reads
/// as no element (left out, with what is below it).
#[derive(Default)]
struct Tree<'a> {
    element: Option<Element<'a>>,
    children: Vec<Tree<'a>>,
}

/// A `children` array; anything else reads as no children.
struct Forest<'a>(Vec<Tree<'a>>);

/// The scalar visits of a visitor that keeps nothing of a scalar.
macro_rules! skip_scalars {
    ($value:ty, $empty:expr) => {
        fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<$value, E> {
            Ok($empty)
        }
        fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<$value, E> {
            Ok($empty)
        }
        fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<$value, E> {
            Ok($empty)
        }
        fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<$value, E> {
            Ok($empty)
        }
        fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<$value, E> {
            Ok($empty)
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<$value, E> {
            Ok($empty)
        }
    };
}

impl<'de> Deserialize<'de> for Top<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Top<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a board document")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut top = Top::default();
                while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
                    match key.as_ref() {
                        "board" if top.board.is_none() => top.board = Some(map.next_value()?),
                        "source" if top.source.is_none() => top.source = Some(map.next_value()?),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(top)
            }
        }
        d.deserialize_map(V)
    }
}

impl<'de> Deserialize<'de> for Tree<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Tree<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an element")
            }
            skip_scalars!(Tree<'de>, Tree::default());
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Tree::default())
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                element(map)
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Forest<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Forest<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of elements")
            }
            skip_scalars!(Forest<'de>, Forest(Vec::new()));
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Forest(Vec::new()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                // No capacity up front: most elements' lists are empty.
                let mut out = Vec::new();
                while let Some(tree) = seq.next_element::<Tree<'de>>()? {
                    out.push(tree);
                }
                Ok(Forest(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// One element from its members, read once: the first `id` (`None` when it
/// is not a string) and `type`, the fields as [`Element::fields`] says, its
/// section, and its children. One vector per element: its fields.
fn element<'de, A: MapAccess<'de>>(mut map: A) -> Result<Tree<'de>, A::Error> {
    let mut id: Option<Option<(Cow<'de, str>, &'de str)>> = None;
    let mut kind: Option<Cow<'de, str>> = None;
    let mut children: Option<Vec<Tree<'de>>> = None;
    let mut section = None;
    let mut fields = Vec::with_capacity(8);
    let mut unloaded = false;
    while let Some(Text(name)) = map.next_key::<Text<'de>>()? {
        match name.as_ref() {
            "children" if children.is_none() => children = Some(map.next_value::<Forest<'de>>()?.0),
            "id" if id.is_none() => {
                let raw: &'de RawValue = map.next_value()?;
                id = Some(string(Some(raw)).map(|id| {
                    // An id written with escapes is held under its raw text.
                    let key = match &id {
                        Cow::Borrowed(id) => *id,
                        Cow::Owned(_) => raw.get(),
                    };
                    (id, key)
                }));
            }
            "type" if kind.is_none() => {
                let raw: &'de RawValue = map.next_value()?;
                kind = Some(string(Some(raw)).unwrap_or(Cow::Borrowed("UNKNOWN")));
            }
            "id" | "type" | "children" | "timestamps" => {
                map.next_value::<IgnoredAny>()?;
            }
            "location" => {
                let raw: &'de RawValue = map.next_value()?;
                if !location(raw, &mut fields, &mut section) {
                    fields.push((name, raw));
                }
            }
            "childrenLoaded" => {
                let raw: &'de RawValue = map.next_value()?;
                unloaded = raw.get() == "false";
                fields.push((name, raw));
            }
            _ => fields.push((name, map.next_value()?)),
        }
    }
    let element = id.flatten().map(|(id, key)| Element {
        id,
        key,
        kind: kind.unwrap_or(Cow::Borrowed("UNKNOWN")),
        parent: None,
        section,
        fields,
        unloaded,
    });
    Ok(Tree {
        element,
        children: children.unwrap_or_default(),
    })
}

/// Adds the members of a `location` object to `fields` (`position`, and
/// `location.<name>` but for `parentId` and `section`) and sets `section`;
/// false, with `fields` as it was, when `raw` is not an object.
fn location<'a>(
    raw: &'a RawValue,
    fields: &mut Vec<(Cow<'a, str>, &'a RawValue)>,
    section: &mut Option<Cow<'a, str>>,
) -> bool {
    if !raw.get().starts_with('{') {
        return false;
    }
    let before = fields.len();
    let mut de = serde_json::Deserializer::from_str(raw.get());
    let read = LocationInto { fields, section }.deserialize(&mut de);
    if read.and_then(|()| de.end()).is_err() {
        fields.truncate(before);
        return false;
    }
    true
}

/// Reads a `location` object straight into an element's fields.
struct LocationInto<'f, 'a> {
    fields: &'f mut Vec<(Cow<'a, str>, &'a RawValue)>,
    section: &'f mut Option<Cow<'a, str>>,
}

impl<'de> DeserializeSeed<'de> for LocationInto<'_, 'de> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for LocationInto<'_, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a location")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(Text(inner)) = map.next_key::<Text<'de>>()? {
            let v: &'de RawValue = map.next_value()?;
            match inner.as_ref() {
                "parentId" => {}
                "section" => *self.section = string(Some(v)),
                "position" => self.fields.push((Cow::Borrowed("position"), v)),
                other => self
                    .fields
                    .push((Cow::Owned(format!("location.{other}")), v)),
            }
        }
        Ok(())
    }
}

impl Element<'_> {
    /// Its place in its parent's reading order: its section and position.
    fn reading_key(&self) -> ReadingKey {
        let position: Position = self
            .field("position")
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or_default();
        ReadingKey::new(
            self.section.as_deref(),
            position.x.0,
            position.y.0,
            position.index.0,
        )
    }

    /// The raw value of field `name`.
    pub fn field(&self, name: &str) -> Option<&RawValue> {
        self.fields.iter().find(|(k, _)| k == name).map(|(_, v)| *v)
    }

    /// How the element is named: its title, else the first words of its
    /// text (rich text, then caption), else its URL or file name, else its
    /// type.
    pub fn label(&self) -> String {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Text<'a> {
            #[serde(borrow, default)]
            plain_text: Option<Cow<'a, str>>,
        }
        #[derive(Deserialize)]
        struct File<'a> {
            #[serde(borrow, default)]
            filename: Option<Cow<'a, str>>,
        }
        let text = |name: &str| {
            self.field(name)
                .and_then(|r| serde_json::from_str::<Text<'_>>(r.get()).ok())
                .and_then(|t| t.plain_text)
                .map(Cow::into_owned)
        };
        let candidates = [
            string(self.field("title")).map(Cow::into_owned),
            text("richText"),
            text("caption"),
            string(self.field("url")).map(Cow::into_owned),
            self.field("file")
                .and_then(|r| serde_json::from_str::<File<'_>>(r.get()).ok())
                .and_then(|f| f.filename)
                .map(Cow::into_owned),
        ];
        for candidate in candidates.into_iter().flatten() {
            let words = candidate.split_whitespace().collect::<Vec<_>>().join(" ");
            if words.is_empty() {
                continue;
            }
            return match words.char_indices().nth(LABEL_CHARS) {
                Some((i, _)) => format!("{}…", &words[..i]),
                None => words,
            };
        }
        self.kind.to_string()
    }
}

/// Characters of an untitled element's text that name it.
const LABEL_CHARS: usize = 40;

#[cfg(test)]
mod tests;
