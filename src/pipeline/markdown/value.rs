//! The selected `data`, read for the Markdown writer: a JSON value whose
//! strings borrow from the input bytes where they hold no escapes, and
//! which leaves out members no rendering rule reads (positions, times,
//! palettes, drawings), so reading a large board costs little more than
//! scanning it. Any JSON reads: a member of an unexpected type is simply
//! not what a rule looks for, so rendering never fails on a shape.
//!
//! Arrays, objects, and the strings that held escapes (copied out
//! unescaped) live in one arena ([`Bump`]) for the length of a render;
//! every other string is a slice of the input. A board is hundreds of
//! thousands of small objects (text nodes, marks, cells), and allocating
//! and freeing each on the heap was most of the render's time.
//!
//! One change of order: the items of every `children` array are stored in
//! reading order ([`crate::document::reading`]), so the writer walks each
//! node's children as a person reads them. Both readers sort an array as
//! they close it, from keys taken off each child as it is attached; the
//! serving reader takes them while the child's members are still in cache
//! (a separate pass of the writer over 7,000 cards waited on memory for
//! each of them).
//!
//! The serving path builds the value while it selects ([`super::read`]);
//! [`V::parse`], serde_json reading already selected JSON, is the
//! reference it is held to.

use crate::document::reading::{self, ReadingKey};
pub use bumpalo::Bump;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::cell::RefCell;
use std::fmt;

/// Members never rendered, left out while reading (wherever they appear:
/// inside a rich-text block such a key is not read either). Of a node's
/// `location`, only `section` and the `x`, `y`, `index` of its `position`
/// are read: the reading order needs them.
pub fn skipped(key: &str) -> bool {
    matches!(
        key,
        "timestamps"
            | "parentId"
            | "rootBoard"
            | "score"
            | "icon"
            | "defaultColorPalette"
            | "textStyles"
            | "columnWidths"
            | "drawing"
            | "entityRanges"
            | "colors"
            | "control"
            | "lineStyle"
            | "background"
            | "provider"
            | "faviconUrl"
    )
}

/// A JSON value borrowed from the selected document and its arena.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum V<'a> {
    Null,
    Bool(bool),
    Num(Num),
    Str(&'a str),
    Arr(&'a [V<'a>]),
    Obj(&'a [(&'a str, V<'a>)]),
}

/// A JSON number as serde_json reads it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Num {
    U(u64),
    I(i64),
    F(f64),
}

impl fmt::Display for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Num::U(n) => write!(f, "{n}"),
            Num::I(n) => write!(f, "{n}"),
            Num::F(n) => write!(f, "{n}"),
        }
    }
}

impl<'a> V<'a> {
    /// Reads compact or pretty JSON into `arena` with serde_json: the
    /// reference reading (see the module docs).
    ///
    /// The bytes are checked as UTF-8 once, whole, and then read as text:
    /// read as bytes, serde_json checks every string it borrows again, one
    /// call each.
    ///
    /// # Errors
    /// The bytes are not JSON, or nest deeper than serde_json's limit.
    pub fn parse(json: &'a [u8], arena: &'a Bump) -> Result<V<'a>, serde_json::Error> {
        let json = std::str::from_utf8(json)
            .map_err(|_| <serde_json::Error as de::Error>::custom("the document is not UTF-8"))?;
        let mut reader = serde_json::Deserializer::from_str(json);
        let scratch = Scratch::default();
        let value = Seed {
            arena,
            scratch: &scratch,
            children: false,
        }
        .deserialize(&mut reader)?;
        reader.end()?;
        Ok(value)
    }

    /// The member `key` of an object.
    pub fn get(&self, key: &str) -> Option<&V<'a>> {
        match self {
            V::Obj(members) => members.iter().find(|(k, _)| *k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The string member `key`, if it is a string.
    pub fn str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(V::as_str)
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            V::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            V::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_num(&self) -> Option<Num> {
        match self {
            V::Num(n) => Some(*n),
            _ => None,
        }
    }

    /// The value as serde_json's (with `children` in reading order), to
    /// compare what two readers give.
    #[cfg(any(test, feature = "internals"))]
    pub fn plain(&self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            V::Null => Value::Null,
            V::Bool(b) => Value::Bool(*b),
            V::Num(Num::U(n)) => Value::from(*n),
            V::Num(Num::I(n)) => Value::from(*n),
            V::Num(Num::F(n)) => Value::from(*n),
            V::Str(s) => Value::from(*s),
            V::Arr(items) => items.iter().map(V::plain).collect(),
            V::Obj(members) => members
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.plain()))
                .collect::<serde_json::Map<_, _>>()
                .into(),
        }
    }

    /// The items of an array; none for anything else.
    pub fn items(&self) -> &'a [V<'a>] {
        match self {
            V::Arr(items) => items,
            _ => &[],
        }
    }

    /// The items of the array member `key`.
    pub fn list(&self, key: &str) -> &'a [V<'a>] {
        self.get(key).map_or(&[], V::items)
    }

    /// The reading key of a child node, from the `location` the selection
    /// kept (see [`crate::document::reading`]).
    pub fn reading_key(&self) -> ReadingKey {
        let location = self.get("location");
        let position = location.and_then(|l| l.get("position"));
        let coord = |key: &str| position.and_then(|p| p.get(key)).and_then(coordinate);
        ReadingKey::new(
            location.and_then(|l| l.str("section")),
            coord("x"),
            coord("y"),
            coord("index"),
        )
    }
}

/// Starts loading the node `node` into the cache, ahead of the walk
/// reaching it: the writer takes a node's children in reading order, which
/// is not the order they lie in memory, so the CPU cannot see the next one
/// coming. The arena fills downwards, so what a node holds (its rich text,
/// its location) lies just above its members: the two kilobytes from its
/// members on cover most cards whole.
#[inline]
pub fn prefetch(node: &V) {
    #[cfg(target_arch = "x86_64")]
    if let V::Obj(members) = node {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let start = members.as_ptr().cast::<i8>();
        for offset in (0..2048).step_by(64) {
            // SAFETY: a prefetch is only a hint: it reads nothing the
            // program sees and never faults, whatever the address.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(start.wrapping_add(offset)) }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = node;
}

/// A coordinate as the reading order reads it (see [`reading::number`]).
fn coordinate(value: &V) -> Option<f64> {
    match value {
        V::Num(Num::U(n)) => Some(*n as f64),
        V::Num(Num::I(n)) => Some(*n as f64),
        V::Num(Num::F(n)) => Some(*n),
        V::Str(s) => reading::numeric(s),
        _ => None,
    }
}

/// Whether an array under `key` holds a node's children (sorted into
/// reading order as it closes).
pub fn holds_children(key: Option<&str>) -> bool {
    key == Some("children")
}

/// `items`, the children of one node, copied into `arena` in reading order
/// by their `keys` (one per item, in the same order); as given when they
/// already are in it, ties in the given order. Keys that do not pair with
/// the items one to one (a reader's bug) leave them as given: an item is
/// never lost to a short list of keys.
pub fn alloc_in_reading_order<'a>(
    arena: &'a Bump,
    items: &[V<'a>],
    keys: &[ReadingKey],
) -> &'a [V<'a>] {
    debug_assert_eq!(items.len(), keys.len());
    if keys.len() != items.len() || reading::in_order(keys.iter().copied()) {
        return arena.alloc_slice_copy(items);
    }
    let mut keyed: Vec<(ReadingKey, V<'a>)> =
        keys.iter().copied().zip(items.iter().copied()).collect();
    reading::sort(&mut keyed);
    arena.alloc_slice_fill_iter(keyed.into_iter().map(|(_, item)| item))
}

/// The items and members of the containers being read, one stack each for
/// a whole parse: a container gathers its entries on top of the stack and
/// copies them into the arena at their final size when it closes (serde_json
/// does not know an array's length in advance, and a `Vec` grown inside the
/// arena would leave each smaller buffer behind).
#[derive(Default)]
struct Scratch<'a> {
    items: RefCell<Vec<V<'a>>>,
    members: RefCell<Vec<(&'a str, V<'a>)>>,
}

/// Reads one value into the arena; `children` when it is the value of a
/// `children` member ([`holds_children`]).
#[derive(Clone, Copy)]
struct Seed<'a, 's> {
    arena: &'a Bump,
    scratch: &'s Scratch<'a>,
    children: bool,
}

impl<'de: 'a, 'a> DeserializeSeed<'de> for Seed<'a, '_> {
    type Value = V<'a>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<V<'a>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for Seed<'a, '_> {
    type Value = V<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<V<'a>, E> {
        Ok(V::Null)
    }

    fn visit_bool<E>(self, b: bool) -> Result<V<'a>, E> {
        Ok(V::Bool(b))
    }

    fn visit_u64<E>(self, n: u64) -> Result<V<'a>, E> {
        Ok(V::Num(Num::U(n)))
    }

    fn visit_i64<E>(self, n: i64) -> Result<V<'a>, E> {
        Ok(V::Num(Num::I(n)))
    }

    fn visit_f64<E>(self, n: f64) -> Result<V<'a>, E> {
        Ok(V::Num(Num::F(n)))
    }

    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<V<'a>, E> {
        Ok(V::Str(s))
    }

    fn visit_str<E>(self, s: &str) -> Result<V<'a>, E> {
        Ok(V::Str(self.arena.alloc_str(s)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<V<'a>, A::Error> {
        // The stack is back at `start` whenever an item returns: each
        // container takes its own entries off it before returning.
        let start = self.scratch.items.borrow().len();
        let item_seed = Seed {
            children: false,
            ..self
        };
        while let Some(item) = seq.next_element_seed(item_seed)? {
            self.scratch.items.borrow_mut().push(item);
        }
        let mut items = self.scratch.items.borrow_mut();
        let slice = if self.children {
            let keys: Vec<ReadingKey> = items[start..].iter().map(V::reading_key).collect();
            alloc_in_reading_order(self.arena, &items[start..], &keys)
        } else {
            self.arena.alloc_slice_copy(&items[start..])
        };
        items.truncate(start);
        Ok(V::Arr(slice))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<V<'a>, A::Error> {
        let start = self.scratch.members.borrow().len();
        while let Some(key) = map.next_key_seed(Key(self.arena))? {
            if skipped(key) {
                map.next_value::<IgnoredAny>()?;
            } else {
                let seed = Seed {
                    children: holds_children(Some(key)),
                    ..self
                };
                let value = map.next_value_seed(seed)?;
                self.scratch.members.borrow_mut().push((key, value));
            }
        }
        let mut members = self.scratch.members.borrow_mut();
        let slice = self.arena.alloc_slice_copy(&members[start..]);
        members.truncate(start);
        Ok(V::Obj(slice))
    }
}

/// Reads an object key: borrowed when it holds no escapes, else copied
/// into the arena.
#[derive(Clone, Copy)]
struct Key<'a>(&'a Bump);

impl<'de: 'a, 'a> DeserializeSeed<'de> for Key<'a> {
    type Value = &'a str;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<&'a str, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for Key<'a> {
    type Value = &'a str;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<&'a str, E> {
        Ok(s)
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<&'a str, E> {
        Ok(self.0.alloc_str(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_borrow_and_skipped_members_are_left_out() {
        let json =
            br#"{"id":"a","title":"T\u00e9","timestamps":{"x":1},"n":-2,"f":1.5,"b":[true,null]}"#;
        let arena = Bump::new();
        let v = V::parse(json, &arena).expect("json");
        // Borrowed: the very bytes of the input.
        let Some(V::Str(id)) = v.get("id") else {
            panic!("id")
        };
        assert_eq!(id.as_ptr(), json[7..].as_ptr());
        assert_eq!(v.get("title").and_then(V::as_str), Some("Té"));
        assert_eq!(v.get("timestamps"), None);
        assert_eq!(v.get("n").and_then(V::as_num), Some(Num::I(-2)));
        assert_eq!(
            v.get("f").and_then(V::as_num).map(|n| n.to_string()),
            Some("1.5".into())
        );
        assert_eq!(v.list("b"), &[V::Bool(true), V::Null]);
        assert!(v.list("id").is_empty() && v.list("none").is_empty());
    }

    #[test]
    fn nested_containers_keep_their_own_entries() {
        for json in [
            r#"{"a":[1,[2,[],3],{"b":[4,{"c":[]}]},5],"d":{"e":{"f":{}}},"g":"h"}"#,
            r#"[[[[1]]],[],[{"x":[{"y":[true,null]}],"z":2}],3]"#,
            r#"{"blocks":[{"type":"p","content":[{"text":"a\"b"},{"text":"c"}]},{"type":"q"}]}"#,
            r#"[]"#,
            r#"{}"#,
        ] {
            let arena = Bump::new();
            let v = V::parse(json.as_bytes(), &arena).expect("json");
            let expected: serde_json::Value = serde_json::from_str(json).expect("json");
            assert_eq!(v.plain(), expected, "{json}");
        }
    }
}
