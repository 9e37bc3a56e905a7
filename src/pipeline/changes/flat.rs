//! A board document read flat for comparison: every element once, in
//! reading order, with its parent, its section and its fields as the raw
//! JSON bytes the document holds. Called by [`super::compare`].
//!
//! The document is read with borrowed slices and no tree of values: each
//! element's members are kept as `&RawValue`s, its `children` are read one
//! level at a time by a parser of their own (the walk keeps its own stack,
//! never recursing), so a deep board costs memory in proportion to its
//! depth, and comparing two fields is comparing bytes. The service writes a
//! document deterministically (the same content gives the same bytes), so
//! equal bytes are equal fields; a document read back from a store that
//! was written otherwise can only make a field look changed.

use crate::document::reading::{numeric, reading_order, ReadingKey};
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
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
/// pass over its bytes: each element's members are kept as raw slices,
/// its `children` read as elements again (serde_json's nesting limit, 128
/// containers, bounds the reader's recursion: a deeper document is
/// unreadable, and none the service writes or a store accepts is).
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
    let mut flat = Flat {
        elements: Vec::new(),
        by_id: HashMap::default(),
        board_id: String::new(),
    };
    let Some(root) = pending(board, None, 0) else {
        return Err(Unreadable("the board is not an object with an id".into()));
    };
    // Elements read, their children not yet placed; pushed in reverse
    // reading order, so popped in reading order.
    let mut stack = vec![root];
    while let Some(next) = stack.pop() {
        let index = flat.elements.len();
        let id = next.element.key;
        if id.is_empty() || flat.by_id.contains_key(id) {
            // Never written by the service: the first element of an id wins.
            continue;
        }
        flat.by_id.insert(id, index);
        flat.elements.push(next.element);
        if next.depth >= MAX_NESTED {
            continue;
        }
        let children: Vec<Pending<'_>> = next
            .children
            .into_iter()
            .filter_map(|c| pending(c, Some(index), next.depth + 1))
            .collect();
        let keys: Vec<ReadingKey> = children.iter().map(|c| c.element.reading_key()).collect();
        let mut slots: Vec<Option<Pending<'_>>> = children.into_iter().map(Some).collect();
        for i in reading_order(&keys).into_iter().rev() {
            stack.extend(slots[i].take());
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

/// An element as read in the one pass: its members but `children` raw, and
/// its children as trees; anything that is not an object reads as an
/// empty tree (no id: left out, with what is below it).
#[derive(Default)]
struct Tree<'a> {
    members: Vec<(Cow<'a, str>, &'a RawValue)>,
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
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut tree = Tree {
                    members: Vec::with_capacity(map.size_hint().unwrap_or(12)),
                    children: Vec::new(),
                };
                let mut seen_children = false;
                while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
                    if key == "children" && !seen_children {
                        seen_children = true;
                        tree.children = map.next_value::<Forest<'de>>()?.0;
                        continue;
                    }
                    let value: &'de RawValue = map.next_value()?;
                    tree.members.push((key, value));
                }
                Ok(tree)
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
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(8));
                while let Some(tree) = seq.next_element::<Tree<'de>>()? {
                    out.push(tree);
                }
                Ok(Forest(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// An element read, its children not yet placed.
struct Pending<'a> {
    element: Element<'a>,
    children: Vec<Tree<'a>>,
    depth: usize,
}

/// The element of `tree` under `parent`; `None` without a string `id`
/// (left out, with what is below it).
fn pending(tree: Tree<'_>, parent: Option<usize>, depth: usize) -> Option<Pending<'_>> {
    let members = Members(tree.members);
    let element = element(&members, parent)?;
    Some(Pending {
        element,
        children: tree.children,
        depth,
    })
}

/// One element from its members; `None` without a string `id`.
fn element<'a>(members: &Members<'a>, parent: Option<usize>) -> Option<Element<'a>> {
    let raw_id = members.get("id")?;
    let id = string(Some(raw_id))?;
    let key = match &id {
        Cow::Borrowed(id) => *id,
        Cow::Owned(_) => raw_id.get(),
    };
    let kind = string(members.get("type")).unwrap_or(Cow::Borrowed("UNKNOWN"));
    let mut section = None;
    let mut fields = Vec::with_capacity(members.0.len());
    let mut unloaded = false;
    for (name, value) in &members.0 {
        match name.as_ref() {
            "id" | "type" | "children" | "timestamps" => {}
            "location" => {
                let Ok(location) = serde_json::from_str::<Members<'_>>(value.get()) else {
                    fields.push((Cow::Borrowed("location"), *value));
                    continue;
                };
                for (inner, v) in location.0 {
                    match inner.as_ref() {
                        "parentId" => {}
                        "section" => section = string(Some(v)),
                        "position" => fields.push((Cow::Borrowed("position"), v)),
                        other => fields.push((Cow::Owned(format!("location.{other}")), v)),
                    }
                }
            }
            "childrenLoaded" => {
                unloaded = value.get() == "false";
                fields.push((name.clone(), *value));
            }
            _ => fields.push((name.clone(), *value)),
        }
    }
    Some(Element {
        id,
        key,
        kind,
        parent,
        section,
        fields,
        unloaded,
    })
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
mod tests {
    use super::*;

    #[test]
    fn elements_come_in_reading_order_with_their_parents() {
        let doc = br#"{"version":1,"source":{"provider":"m","boardId":"b"},"fetchedAt":"t","board":{"id":"b","type":"BOARD","title":"Root","children":[
            {"id":"low","type":"CARD","location":{"parentId":"b","section":"CANVAS","position":{"x":0,"y":9}},"richText":{"plainText":"  second   card ","blocks":[]},"children":[]},
            {"id":"col","type":"COLUMN","title":"Col","location":{"parentId":"b","section":"CANVAS","position":{"x":5,"y":1}},"children":[
                {"id":"n2","type":"CARD","location":{"parentId":"col","section":"INBOX","position":{"index":2}},"children":[]},
                {"id":"n1","type":"CARD","location":{"parentId":"col","section":"INBOX","position":{"index":1}},"timestamps":{"createdAt":"x"},"children":[]}]}]}}"#;
        let flat = read(doc).expect("reads");
        let ids: Vec<&str> = flat.elements.iter().map(|e| e.id.as_ref()).collect();
        assert_eq!(ids, ["b", "col", "n1", "n2", "low"]);
        assert_eq!(flat.elements[2].parent, Some(1));
        assert_eq!(flat.elements[2].section.as_deref(), Some("INBOX"));
        let names: Vec<&str> = flat.elements[2]
            .fields
            .iter()
            .map(|f| f.0.as_ref())
            .collect();
        assert_eq!(names, ["position"]);
        assert_eq!(flat.elements[4].label(), "second card");
        assert_eq!(flat.elements[3].label(), "CARD");
        assert_eq!(flat.board_id, "b");
    }

    #[test]
    fn what_is_not_a_board_is_unreadable_or_skipped() {
        for bad in [&b"[]"[..], b"{}", b"{\"board\":[]}", b"not json"] {
            assert!(read(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
        let odd =
            br#"{"board":{"id":"b","children":[1,{"id":2},{"id":"b"},{"id":"c","children":"x"}]}}"#;
        let flat = read(odd).expect("reads");
        let ids: Vec<&str> = flat.elements.iter().map(|e| e.id.as_ref()).collect();
        assert_eq!(ids, ["b", "c"]);
    }
}
