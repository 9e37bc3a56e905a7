//! The selected `data`, read for the Markdown writer: a JSON value whose
//! strings borrow from the input bytes where they hold no escapes, and
//! which leaves out members no rendering rule reads (positions, times,
//! palettes, drawings), so reading a large board costs little more than
//! scanning it. Any JSON reads: a member of an unexpected type is simply
//! not what a rule looks for, so rendering never fails on a shape.

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

/// Members never rendered, skipped while reading (wherever they appear:
/// inside a rich-text block such a key is not read either).
const SKIPPED: &[&str] = &[
    "location",
    "timestamps",
    "icon",
    "defaultColorPalette",
    "textStyles",
    "columnWidths",
    "drawing",
    "entityRanges",
    "colors",
    "control",
    "lineStyle",
    "background",
    "provider",
    "faviconUrl",
];

/// A JSON value borrowed from the selected document.
#[derive(Debug, Clone, PartialEq)]
pub enum V<'a> {
    Null,
    Bool(bool),
    Num(Num),
    Str(Cow<'a, str>),
    Arr(Vec<V<'a>>),
    Obj(Vec<(Cow<'a, str>, V<'a>)>),
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

static EMPTY: Vec<V<'static>> = Vec::new();

impl<'a> V<'a> {
    /// Reads compact or pretty JSON.
    ///
    /// # Errors
    /// The bytes are not JSON, or nest deeper than serde_json's limit.
    pub fn parse(json: &'a [u8]) -> Result<V<'a>, serde_json::Error> {
        serde_json::from_slice(json)
    }

    /// The member `key` of an object.
    pub fn get(&self, key: &str) -> Option<&V<'a>> {
        match self {
            V::Obj(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
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

    /// The items of an array; none for anything else.
    pub fn items(&self) -> &[V<'a>] {
        match self {
            V::Arr(items) => items,
            _ => &EMPTY,
        }
    }

    /// The items of the array member `key`.
    pub fn list(&self, key: &str) -> &[V<'a>] {
        self.get(key).map_or(&EMPTY, V::items)
    }
}

impl<'de> Deserialize<'de> for V<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = V<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<V<'de>, E> {
        Ok(V::Null)
    }

    fn visit_bool<E>(self, b: bool) -> Result<V<'de>, E> {
        Ok(V::Bool(b))
    }

    fn visit_u64<E>(self, n: u64) -> Result<V<'de>, E> {
        Ok(V::Num(Num::U(n)))
    }

    fn visit_i64<E>(self, n: i64) -> Result<V<'de>, E> {
        Ok(V::Num(Num::I(n)))
    }

    fn visit_f64<E>(self, n: f64) -> Result<V<'de>, E> {
        Ok(V::Num(Num::F(n)))
    }

    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<V<'de>, E> {
        Ok(V::Str(Cow::Borrowed(s)))
    }

    fn visit_str<E>(self, s: &str) -> Result<V<'de>, E> {
        Ok(V::Str(Cow::Owned(s.to_owned())))
    }

    fn visit_string<E>(self, s: String) -> Result<V<'de>, E> {
        Ok(V::Str(Cow::Owned(s)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<V<'de>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(V::Arr(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<V<'de>, A::Error> {
        // Most objects of a board (text nodes, marks, cells) hold a few
        // members: room for four saves the first regrowths.
        let mut members = Vec::with_capacity(4);
        while let Some(Key(key)) = map.next_key()? {
            if SKIPPED.contains(&&*key) {
                map.next_value::<IgnoredAny>()?;
            } else {
                members.push((key, map.next_value()?));
            }
        }
        Ok(V::Obj(members))
    }
}

/// An object key, borrowed when it holds no escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s.to_owned())))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_borrow_and_skipped_members_are_left_out() {
        let json =
            br#"{"id":"a","title":"T\u00e9","location":{"x":1},"n":-2,"f":1.5,"b":[true,null]}"#;
        let v = V::parse(json).expect("json");
        assert!(matches!(v.get("id"), Some(V::Str(Cow::Borrowed("a")))));
        assert!(matches!(v.get("title"), Some(V::Str(Cow::Owned(t))) if t == "Té"));
        assert_eq!(v.get("location"), None);
        assert_eq!(v.get("n").and_then(V::as_num), Some(Num::I(-2)));
        assert_eq!(
            v.get("f").and_then(V::as_num).map(|n| n.to_string()),
            Some("1.5".into())
        );
        assert_eq!(v.list("b"), &[V::Bool(true), V::Null]);
        assert!(v.list("id").is_empty() && v.list("none").is_empty());
    }
}
