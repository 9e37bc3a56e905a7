//! An element's `content` read from the JSON text the provider sent, for
//! the element types whose body is rich text (cards, tasks and documents:
//! `textContent`; links and colour swatches: `caption`): the rich text is
//! read straight into blocks and plain text ([`RichSeed`]), the few other
//! members into small values. Called by the tree walk on the serving path;
//! the reference pipeline parses the whole content into a value instead,
//! and the tests hold the two to the same document.

use crate::document::RichText;
use crate::provider::answer::JsonText;
use crate::provider::rich_text::RichSeed;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;

/// A content object's members but its rich text, and the rich text read.
#[derive(Default)]
pub struct Content {
    /// Every member but the rich-text one, as a parsed value holds them.
    pub members: Map<String, Value>,
    /// The rich-text member (its last copy), when it is rich text.
    pub rich: Option<RichText>,
}

/// Reads `raw` with `rich_key` as the rich-text member. Content that does
/// not parse, or is not an object, has no members (as when it is parsed
/// into a value: every field is read from an object).
pub fn read(raw: &JsonText, rich_key: &str) -> Content {
    let Some(text) = raw.text() else {
        return Content::default();
    };
    let mut de = serde_json::Deserializer::from_str(text);
    let seed = ContentSeed { rich_key };
    match seed.deserialize(&mut de) {
        Ok(content) if de.end().is_ok() => content,
        _ => Content::default(),
    }
}

struct ContentSeed<'k> {
    rich_key: &'k str,
}

impl<'de> DeserializeSeed<'de> for ContentSeed<'_> {
    type Value = Content;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Content, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ContentSeed<'_> {
    type Value = Content;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an element's content")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Content, A::Error> {
        let mut content = Content::default();
        while let Some(key) = map.next_key::<String>()? {
            if key == self.rich_key {
                content.rich = map.next_value_seed(RichSeed::default())?;
            } else {
                content.members.insert(key, map.next_value()?);
            }
        }
        Ok(content)
    }

    // Anything but an object is no content: read past, kept as nothing.
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Content::default())
    }
    fn visit_str<E>(self, _: &str) -> Result<Content, E> {
        Ok(Content::default())
    }
    fn visit_bool<E>(self, _: bool) -> Result<Content, E> {
        Ok(Content::default())
    }
    fn visit_i64<E>(self, _: i64) -> Result<Content, E> {
        Ok(Content::default())
    }
    fn visit_u64<E>(self, _: u64) -> Result<Content, E> {
        Ok(Content::default())
    }
    fn visit_f64<E>(self, _: f64) -> Result<Content, E> {
        Ok(Content::default())
    }
    fn visit_unit<E>(self) -> Result<Content, E> {
        Ok(Content::default())
    }
}
