//! Rich text read straight from its JSON text into [`RichText`]: the same
//! blocks and plain text as [`super::rich_text`] gives for the parsed
//! value, without building the value.
//!
//! Why a reader of its own: a card's rich text is most of a board, and
//! parsing it into a `serde_json::Value` allocates a map, a vector and a
//! string for nearly every node, which are then walked twice (for the plain
//! text and for the sanitized copy of each block) and freed. Here one serde
//! visitor walks the text once and, for each node, writes the block's copy
//! (`copy`: depth-bounded, without sensitive keys or a mention's
//! person keys) and gathers the node's plain text as it closes. Strings
//! without escapes are borrowed from the text, not copied. A typed serde
//! derive cannot express this input: the same key means different things by
//! the node's `type`, which may come after it, and a repeated key means its
//! last value; the visitor keeps what each rule needs until the node closes.
//!
//! Chosen by measurement (callgrind, one cold load of the 7,000-card board
//! in `examples/cold_build.rs`, `benches/README.md`): making the nodes went
//! from 481.7 M instructions with value trees to 289.4 M with this reader,
//! the whole load from 1,026 M to 832 M. A SIMD parser (sonic-rs) was
//! measured before: it wins where value trees are built and loses on the
//! checking and skipping reads, so with no trees left it has nothing to win.
//!
//! What a parse of the text into a value accepts, this reader accepts: every
//! value goes through serde_json's `deserialize_any`, so strings are decoded
//! (a lone surrogate escape is refused), numbers converted and nesting held
//! to serde_json's limit, and the callers treat a refusal as the value parse
//! failing.

use super::copy::{read_item, CopyBuffers, Info, Item, Role};
use super::cursor::{Cursor, Unsupported};
use crate::document::{Blocks, RichText};
use crate::provider::raw::MAX_RAW_DEPTH;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

/// Reads rich text from the JSON text of a value, in the shapes and with the
/// results of [`super::rich_text`] on the parsed value.
///
/// # Errors
/// When serde_json would not parse `text` into a value; the caller decides
/// what that means (an element's content that does not parse has no fields).
pub fn rich_text_from_str(text: &str) -> Result<Option<RichText>, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let rich = RichSeed::default().deserialize(&mut de)?;
    de.end()?;
    Ok(rich)
}

/// Reads the rich-text value at `cur` from its bytes, with the results of
/// [`RichSeed`] on the same text: the fast path for text serde_json has
/// already accepted (an element's `content`). [`Unsupported`]: read it
/// with [`RichSeed`].
///
/// `copy` is the copy's buffers, handed from one content to the next so
/// that they are grown once per load rather than once per element; what a
/// read before left in them (one cut short) is cleared first.
pub fn rich_text_at(
    cur: &mut Cursor<'_>,
    copy: &mut CopyBuffers,
) -> Result<Option<RichText>, Unsupported> {
    copy.clear();
    match cur.peek()? {
        b'{' => {
            cur.bump();
            let mut root = Root::default();
            if !cur.close_if(b'}')? {
                loop {
                    let key = cur.key()?;
                    match &*key {
                        "type" | "text" => {
                            let seen = read_item(cur, Item::reading(copy, Role::Want), 1)?;
                            root.set_string(&key, seen.info);
                        }
                        "content" => root.content = blocks_at(cur, copy, Role::Node)?,
                        "blocks" => root.blocks = blocks_at(cur, copy, Role::DraftBlock)?,
                        _ => {
                            read_item(cur, Item::reading(copy, Role::Plain), 1)?;
                        }
                    }
                    if !cur.more(b'}')? {
                        break;
                    }
                }
            }
            Ok(root.into_rich_text(copy))
        }
        b'"' => {
            let s = cur.string()?;
            Ok(Some(string_rich_text(&s)))
        }
        // An array or a scalar is no rich text; read through.
        _ => {
            read_item(cur, Item::reading(copy, Role::Plain), 0)?;
            Ok(None)
        }
    }
}

/// What [`BlocksSeed`] reads, from the bytes: the root's `content` or `blocks`.
fn blocks_at<'a>(
    cur: &mut Cursor<'a>,
    copy: &mut CopyBuffers,
    role: Role,
) -> Result<BlocksRead, Unsupported> {
    if cur.peek()? != b'[' {
        read_item(cur, Item::reading(copy, Role::Plain), 1)?;
        return Ok(None);
    }
    cur.bump();
    copy.out.clear();
    copy.out.push(b'[');
    let first_part = copy.spans.len();
    if !cur.close_if(b']')? {
        loop {
            let from = copy.text.len();
            let start = block_start(&mut copy.out);
            read_item(cur, Item::writing(copy, MAX_RAW_DEPTH, role), 2)?;
            copy.note_part(from);
            block_end(&copy.out, start).map_err(|_| Unsupported)?;
            if !cur.more(b']')? {
                break;
            }
        }
    }
    copy.out.push(b']');
    let blocks = blocks_of(&copy.out).map_err(|_| Unsupported)?;
    Ok(Some((blocks, first_part..copy.spans.len())))
}

/// Rich text read from its bytes alone ([`rich_text_at`] over the whole
/// text), for the tests that hold it to [`rich_text_from_str`].
#[cfg(any(test, feature = "internals"))]
pub fn rich_text_from_bytes(text: &str) -> Result<Option<RichText>, Unsupported> {
    let mut cur = Cursor::new(text);
    let rich = rich_text_at(&mut cur, &mut CopyBuffers::default())?;
    cur.end()?;
    Ok(rich)
}

/// Reads one rich-text value (an object or a JSON string) from a
/// deserializer, as [`rich_text_from_str`] does.
#[derive(Default)]
pub struct RichSeed {
    copy: CopyBuffers,
}

impl<'de> DeserializeSeed<'de> for RichSeed {
    type Value = Option<RichText>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(RootVisitor { copy: self.copy })
    }
}

struct RootVisitor {
    copy: CopyBuffers,
}

/// The root's `content` or `blocks`, when it is an array: its blocks and
/// their non-empty parts (a TipTap node's part, a Draft.js block's text),
/// in the copy's buffers ([`CopyBuffers::joined`]).
type BlocksRead = Option<(Blocks, Range<usize>)>;

/// What the root object's members said, the last of each key winning.
#[derive(Default)]
struct Root<'de> {
    kind: Option<Cow<'de, str>>,
    text: Option<Cow<'de, str>>,
    content: BlocksRead,
    blocks: BlocksRead,
}

impl<'de> Visitor<'de> for RootVisitor {
    type Value = Option<RichText>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("rich text")
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut root = Root::default();
        while let Some(key) = map.next_key_seed(super::copy::KeySeed)? {
            match &*key {
                "type" | "text" => {
                    let seen = map.next_value_seed(Item::reading(&mut self.copy, Role::Want))?;
                    root.set_string(&key, seen.info);
                }
                "content" => {
                    root.content = map.next_value_seed(BlocksSeed {
                        copy: &mut self.copy,
                        role: Role::Node,
                    })?;
                }
                "blocks" => {
                    root.blocks = map.next_value_seed(BlocksSeed {
                        copy: &mut self.copy,
                        role: Role::DraftBlock,
                    })?;
                }
                _ => {
                    map.next_value_seed(Item::reading(&mut self.copy, Role::Plain))?;
                }
            }
        }
        Ok(root.into_rich_text(&self.copy))
    }

    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(Some(string_rich_text(s)))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Some(string_rich_text(s)))
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq
            .next_element_seed(Item::reading(&mut self.copy, Role::Plain))?
            .is_some()
        {}
        Ok(None)
    }

    crate::provider::scalars_are_none!();
}

impl<'de> Root<'de> {
    /// `type` or `text`, read for its string: the string, or none.
    fn set_string(&mut self, key: &str, info: Info<'de>) {
        let value = match info {
            Info::Str(s) => Some(s),
            _ => None,
        };
        if key == "type" {
            self.kind = value;
        } else {
            self.text = value;
        }
    }

    /// The rich text the root's members make, its parts in `copy`.
    fn into_rich_text(self, copy: &CopyBuffers) -> Option<RichText> {
        if self.kind.as_deref() == Some("doc") {
            let (blocks, parts) = self.content.unwrap_or_default();
            let plain_text = match self.text {
                Some(text) => text.into_owned(),
                None => copy.joined(parts, "\n"),
            };
            return Some(RichText { blocks, plain_text });
        }
        let (blocks, parts) = self.blocks?;
        Some(RichText {
            blocks,
            plain_text: copy.joined(parts, "\n"),
        })
    }
}

/// A string is the rich text it encodes when it holds a TipTap or Draft.js
/// object, else plain text with no blocks.
fn string_rich_text(s: &str) -> RichText {
    let trimmed = s.trim_start();
    if trimmed.starts_with('{') {
        if let Ok(Some(rich)) = rich_text_from_str(trimmed) {
            return rich;
        }
    }
    RichText {
        blocks: Blocks::default(),
        plain_text: s.to_owned(),
    }
}

/// Before a block is copied into the array in `out` (which starts with its
/// `[`): the comma after the block before it. Where the block's copy starts.
fn block_start(out: &mut Vec<u8>) -> usize {
    if out.len() > 1 {
        out.push(b',');
    }
    out.len()
}

/// After a block was copied from `start`: refused when nothing was written.
/// A block is at most `MAX_RAW_DEPTH` levels, so it is never dropped
/// itself; an empty copy would be one.
fn block_end(out: &[u8], start: usize) -> Result<(), &'static str> {
    if out.len() > start {
        Ok(())
    } else {
        Err("a rich-text block was not written")
    }
}

/// The array of block copies in `copy` as [`Blocks`], without parsing it
/// again: one string for all of a rich text's blocks.
///
/// [`Item::writing`] has just written each block as one compact JSON value
/// ([`block_end`] refused an empty one), between the array's brackets and
/// commas: its strings are written escaped by serde_json and its numbers as
/// serde_json read them. `RawValue::from_string` would parse the text again
/// only to find that out, and for the rich text of a board that second parse
/// was 39 M instructions of a 780 M cold load (callgrind,
/// `examples/cold_build.rs`). Debug builds (the tests, the fuzz targets)
/// still parse every array: `from_string_unchecked` asserts it.
fn blocks_of(copy: &[u8]) -> Result<Blocks, &'static str> {
    if copy == b"[]" {
        return Ok(Blocks::default());
    }
    if copy.len() < 2 || copy.first() != Some(&b'[') || copy.last() != Some(&b']') {
        return Err("rich-text blocks were not written as an array");
    }
    let text = std::str::from_utf8(copy).map_err(|_| "rich-text blocks are not UTF-8")?;
    // SAFETY: `text` is one well-formed JSON array without surrounding
    // whitespace, as argued above; serde_json's debug assertion checks it
    // wherever debug assertions are on.
    let raw = unsafe { RawValue::from_string_unchecked(text.to_owned()) };
    Ok(Blocks::from_json(raw))
}

/// The root's `content` or `blocks`: when an array, each item copied as one
/// block and read for its plain-text part (a TipTap node's part, or a
/// Draft.js block's `text`; empty ones left out).
struct BlocksSeed<'c> {
    copy: &'c mut CopyBuffers,
    role: Role,
}

impl<'de> DeserializeSeed<'de> for BlocksSeed<'_> {
    type Value = BlocksRead;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for BlocksSeed<'_> {
    type Value = BlocksRead;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("rich-text blocks")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let first_part = self.copy.spans.len();
        self.copy.out.clear();
        self.copy.out.push(b'[');
        loop {
            let from = self.copy.text.len();
            let before = self.copy.out.len();
            let start = block_start(&mut self.copy.out);
            let item = Item::writing(self.copy, MAX_RAW_DEPTH, self.role);
            if seq.next_element_seed(item)?.is_none() {
                // No block after all: not the comma either.
                self.copy.out.truncate(before);
                break;
            }
            self.copy.note_part(from);
            block_end(&self.copy.out, start).map_err(de::Error::custom)?;
        }
        self.copy.out.push(b']');
        let blocks = blocks_of(&self.copy.out).map_err(de::Error::custom)?;
        Ok(Some((blocks, first_part..self.copy.spans.len())))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_key_seed(super::copy::KeySeed)?.is_some() {
            map.next_value_seed(Item::reading(self.copy, Role::Plain))?;
        }
        Ok(None)
    }

    fn visit_borrowed_str<E>(self, _: &'de str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    crate::provider::scalars_are_none!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_blocks_are_their_copy_and_an_empty_copy_is_refused() {
        let mut out = b"[".to_vec();
        let start = block_start(&mut out);
        assert!(block_end(&out, start).is_err());
        let block = br#"{"type":"text","text":"a \"b\"","marks":[{"type":"bold"}]}"#;
        out.extend_from_slice(block);
        assert!(block_end(&out, start).is_ok());
        let start = block_start(&mut out);
        out.extend_from_slice(b"{}");
        assert!(block_end(&out, start).is_ok());
        out.push(b']');
        let blocks = blocks_of(&out).unwrap();
        assert_eq!(blocks.json().as_bytes(), &out[..]);
        assert_eq!(
            serde_json::to_value(&blocks).unwrap(),
            serde_json::from_slice::<serde_json::Value>(&out).unwrap()
        );

        assert!(blocks_of(b"[]").unwrap().is_empty());
        for bad in [&b""[..], b"[", b"]", b"{}", b"[\xff]"] {
            assert!(blocks_of(bad).is_err(), "{bad:?}");
        }
    }
}
