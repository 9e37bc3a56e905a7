//! An element's `content` read from the JSON text the provider sent, for
//! the element types whose body is rich text (cards, tasks and documents:
//! `textContent`; links and colour swatches: `caption`) or a table
//! (`tableContent`, [`TableSeed`]): the rich text is read straight into
//! blocks and plain text (from the bytes by [`rich_text_at`], else by
//! [`RichSeed`]), the few other members into small values. Called by the
//! tree walk on the serving path;
//! the reference pipeline parses the whole content into a value instead,
//! and the tests hold the two to the same document.

use super::fields::{Lookup, Rich};
use super::table::TableSeed;
use crate::provider::answer::JsonText;
use crate::provider::rich_text::cursor::{Cursor, Unsupported};
use crate::provider::rich_text::{rich_text_at, CopyBuffers, KeySeed, RichSeed};
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;

/// A content object's members but its body, and the body read.
pub struct Content<'a> {
    /// Every member but the body, as a parsed value holds them.
    pub members: Members<'a>,
    /// The body member (its last copy): rich text, or a table's cells.
    pub body: Rich,
}

impl Default for Content<'_> {
    /// No members and no body (no rich text, no table).
    fn default() -> Self {
        Content {
            members: Members::default(),
            body: Rich::Read(None),
        }
    }
}

/// A content object's members but its body, in the order read, each key
/// borrowed from the text when it has no escape. A card has none or one
/// (`background`), a link a few, so a list searched from its end (where a
/// repeated key's last copy is, the one a map keeps) answers what a map
/// would, in one allocation where a map made three (its table, its entries
/// and an owned key). A hostile content with many members costs a scan of
/// them per field read, a dozen at most.
#[derive(Default)]
pub struct Members<'a>(Vec<(Cow<'a, str>, Value)>);

impl<'a> Members<'a> {
    fn push(&mut self, key: Cow<'a, str>, value: Value) {
        self.0.push((key, value));
    }
}

impl Lookup for Members<'_> {
    fn get(&self, key: &str) -> Option<&Value> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

/// Reads `raw` with `rich_key` as the body member. Content that does
/// not parse, or is not an object, has no members (as when it is parsed
/// into a value: every field is read from an object).
///
/// The bytes are read first by a [`Cursor`] ([`from_bytes`]); text it
/// does not read (rare: a table, a raw control character) goes through
/// serde_json's visitor, as all of it did before. Both give the same
/// content; the tests hold them to it, and to the value reader. `copy`:
/// the rich-text copy's buffers, reused from one element to the next.
pub fn read<'a>(raw: &'a JsonText, rich_key: &str, copy: &mut CopyBuffers) -> Content<'a> {
    let text = raw.text();
    if let Ok(content) = from_bytes(text, rich_key, copy) {
        return content;
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let seed = ContentSeed { rich_key };
    match seed.deserialize(&mut de) {
        Ok(content) if de.end().is_ok() => content,
        _ => Content::default(),
    }
}

/// [`read`] from the bytes: the content object's members read by a
/// [`Cursor`], the rich text straight into blocks and plain text
/// ([`rich_text_at`]), each other member parsed from its own text into a
/// value. [`Unsupported`]: read `text` through serde instead.
fn from_bytes<'a>(
    text: &'a str,
    rich_key: &str,
    copy: &mut CopyBuffers,
) -> Result<Content<'a>, Unsupported> {
    let mut cur = Cursor::new(text);
    if cur.peek()? != b'{' || rich_key == "tableContent" {
        return Err(Unsupported);
    }
    cur.bump();
    let mut content = Content::default();
    if !cur.close_if(b'}')? {
        loop {
            let key = cur.key()?;
            if key == rich_key {
                content.body = Rich::Read(rich_text_at(&mut cur, copy)?);
            } else {
                let value = serde_json::from_str(cur.skip_value()?).map_err(|_| Unsupported)?;
                content.members.push(key, value);
            }
            if !cur.more(b'}')? {
                break;
            }
        }
    }
    cur.end()?;
    Ok(content)
}

struct ContentSeed<'k> {
    rich_key: &'k str,
}

impl<'de> DeserializeSeed<'de> for ContentSeed<'_> {
    type Value = Content<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Content<'de>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ContentSeed<'_> {
    type Value = Content<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an element's content")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Content<'de>, A::Error> {
        let mut content = Content::default();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            if key != self.rich_key {
                content.members.push(key, map.next_value()?);
            } else if key == "tableContent" {
                content.body = Rich::Table(map.next_value_seed(TableSeed)?);
            } else {
                content.body = Rich::Read(map.next_value_seed(RichSeed::default())?);
            }
        }
        Ok(content)
    }

    // Anything but an object is no content: read past, kept as nothing.
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content<'de>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Content::default())
    }
    fn visit_str<E>(self, _: &str) -> Result<Content<'de>, E> {
        Ok(Content::default())
    }
    fn visit_bool<E>(self, _: bool) -> Result<Content<'de>, E> {
        Ok(Content::default())
    }
    fn visit_i64<E>(self, _: i64) -> Result<Content<'de>, E> {
        Ok(Content::default())
    }
    fn visit_u64<E>(self, _: u64) -> Result<Content<'de>, E> {
        Ok(Content::default())
    }
    fn visit_f64<E>(self, _: f64) -> Result<Content<'de>, E> {
        Ok(Content::default())
    }
    fn visit_unit<E>(self) -> Result<Content<'de>, E> {
        Ok(Content::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::fetched::parse_content;
    use crate::provider::head::Head;
    use crate::provider::normalize::fields::{self, rich_key};
    use serde_json::json;

    /// The fields and size of an element of type `kind` with `content`,
    /// read from its text (with `copy`, as left by the reads before) and
    /// from its value, as JSON.
    fn both(kind: &str, content: &Value, copy: &mut CopyBuffers) -> (String, String) {
        both_of_text(kind, &JsonText::of(content), copy)
    }

    /// [`both`] for the content's text `raw`.
    fn both_of_text(kind: &str, raw: &JsonText, copy: &mut CopyBuffers) -> (String, String) {
        let head = Head::read(&json!({"elementType": kind}));
        let key = rich_key(kind).expect("a type with a body");
        let read = read(raw, key, copy);
        let mut body = read.body;
        let new = fields::kind_of(&head, &read.members, None, &mut body, None, true);
        let new_size = fields::size(Some(&read.members));
        let value = parse_content(raw);
        let old = fields::kind(&head, value.as_ref(), Rich::Tree, None, true);
        let old_size = fields::size(value.as_ref().and_then(Value::as_object));
        let show = |k: &crate::document::NodeKind, s: &crate::document::Size| {
            serde_json::to_string(&(k, s)).unwrap_or_default()
        };
        (show(&new, &new_size), show(&old, &old_size))
    }

    #[test]
    fn text_and_value_readers_agree() {
        let doc = json!({"type": "doc", "content": [{"type": "paragraph", "content": [{"type": "text", "text": "t"}]}]});
        let cases: Vec<(&str, Value)> = vec![
            (
                "TABLE",
                json!({"width": 3, "tableContent": {
                "data": [[{"value": "", "draftContent": "{\"blocks\":[{\"text\":\"c\"}]}"}, 3, null, [1], "s", 1.5,
                          {"textContent": doc, "draftContent": 5}, {"value": "v", "textContent": "plain"},
                          {"draftContent": {"blocks": [{"text": "D"}]}, "textContent": "T"}],
                         "row", [], [{"value": false, "textStyle": ["b", {"token": "x"}], "background": "#fff", "userId": "u"}]],
                "colWidthsGU": [1, null, {"a": 1, "secret": 2}], "version": 2, "extra": {"deep": [1]}}}),
            ),
            (
                "TABLE",
                json!({"tableContent": {"data": "x", "version": "v"}}),
            ),
            ("TABLE", json!({"tableContent": {"colWidthsGU": 4}})),
            ("TABLE", json!({"tableContent": "x"})),
            ("TABLE", json!({"tableContent": null, "height": 2})),
            ("TABLE", json!({})),
            ("TABLE", json!([1])),
            ("TABLE", json!("text")),
            (
                "CARD",
                json!({"textContent": "plain", "background": "b", "transparent": {"enabled": true}, "width": 1}),
            ),
            ("CARD", json!({"textContent": doc, "transparent": false})),
            ("CARD", json!({"textContent": 5})),
            (
                "TASK",
                json!({"textContent": {"blocks": [{"text": "d"}]}, "isComplete": true, "dueReminderTimestamp": 5}),
            ),
            ("DOCUMENT", json!({"title": "T", "textContent": doc})),
            (
                "LINK",
                json!({"caption": {"blocks": [{"text": "c"}]}, "link": {"url": "u", "title": "t"}, "url": "x"}),
            ),
            (
                "COLOR_SWATCH",
                json!({"caption": "c", "color": {"value": "#000"}}),
            ),
            // Past the byte reader's nesting bound inside a node's
            // members: its read stops there (open objects left in the
            // buffers) and serde's reader reads it.
            (
                "CARD",
                json!({"textContent": {"type": "doc", "content": [
                    {"type": "paragraph", "attrs": {"a": 1}, "content": [{"type": "text", "text": "x", "marks": deep(140)}]}
                ]}}),
            ),
        ];
        // One set of buffers for every read, in both orders: what a read
        // leaves in them, one cut short included, changes no later read.
        let mut copy = CopyBuffers::default();
        for (kind, content) in cases.iter().chain(cases.iter().rev()) {
            let (new, old) = both(kind, content, &mut copy);
            assert_eq!(new, old, "{kind} {content}");
        }
    }

    #[test]
    fn a_repeated_member_reads_as_its_last_copy() {
        let cases = [
            // The cursor's read.
            (
                "CARD",
                r#"{"background":"a","textContent":"x","width":1,"background":"b","width":"w","transparent":true,"width":2}"#,
            ),
            // serde's read (a table's content always goes through it).
            (
                "TABLE",
                r#"{"width":1,"height":3,"tableContent":{"data":[["c"]]},"width":"w","width":2}"#,
            ),
        ];
        let mut copy = CopyBuffers::default();
        for (kind, text) in cases {
            let (new, old) = both_of_text(kind, &JsonText::from_text(text), &mut copy);
            assert_eq!(new, old, "{text}");
            assert!(new.contains(r#""width":2"#), "{new}");
        }
    }

    /// An array nested `levels` deep around an object.
    fn deep(levels: usize) -> Value {
        (0..levels).fold(json!({"type": "bold"}), |inner, _| json!([inner]))
    }
}
