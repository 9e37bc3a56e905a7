//! The copy behind [`super::stream`]: one JSON value read once, written
//! as its bounded, sanitized compact copy (what `provider::raw::raw_leaf`
//! writes for the parsed value) while what the plain text needs is gathered.
//! Its rules live in [`Array`] and [`Object`] ([`states`]); two readers
//! drive them, the serde visitor ([`Item`]) and a reader of the bytes
//! themselves ([`bytes`], over a [`super::cursor::Cursor`]).
//!
//! The copy follows `raw_leaf`'s rules as the value arrives:
//! - a sensitive key
//!   ([`is_sensitive`](crate::document::sanitize::is_sensitive)) is read
//!   and not written;
//! - an array or object past the level bound is read and not written (an
//!   object loses that key, an array that item);
//! - a repeated key means its last value, in its first place, and an object
//!   whose `type` is a mention
//!   ([`is_mention`](crate::document::sanitize::is_mention)) loses the keys
//!   by which it points at a person, on itself and in its `attrs`. Both are
//!   known only when the object closes, so such an object (rare) is written
//!   as it comes and then rewritten from the spans of its members.
//!
//! The plain text is gathered by [`Role`]: a TipTap node writes its part
//! (its `text`, a break, a mention's label, or its children's parts joined)
//! and a Draft.js block its `text` to [`CopyBuffers::text`] as it closes, and
//! `attrs` reports its `label` and `title`. A node's children write their
//! parts first, where the node's own will go; a node list notes where each
//! non-empty one is ([`CopyBuffers::spans`]), and the node, once it knows its
//! `type` (which may come after its `content`), joins them in place with the
//! separator the type asks for. A paragraph's runs of text, the usual node,
//! are already joined as written; parts that need a separator between them
//! are joined through a scratch buffer that, like the others, is grown once.
//! No part is kept in a string of its own.

mod bytes;
mod states;

pub(super) use bytes::read_item;

use crate::select::stream::json_text_run;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use states::{Array, Object};
use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

/// The copy's buffers, reused across the blocks of a rich text and, on
/// the serving path, across every element of a load's walk: they grow to
/// the largest block of the board once, and go with the walk.
#[derive(Default)]
pub struct CopyBuffers {
    /// The block being written.
    pub out: Vec<u8>,
    /// The open objects' members, in the order read.
    members: Vec<Member>,
    /// The plain-text parts of the nodes read and not yet joined by the
    /// node or root that holds them.
    pub(super) text: String,
    /// The non-empty parts of the open node lists and of the root's blocks,
    /// as ranges of `text`.
    pub(super) spans: Vec<Range<usize>>,
    /// Where parts are joined before they replace themselves in `text`.
    scratch: String,
}

impl CopyBuffers {
    /// Empties the buffers, keeping their room.
    pub fn clear(&mut self) {
        self.out.clear();
        self.members.clear();
        self.text.clear();
        self.spans.clear();
    }

    /// After a node list's item or a root's block that started writing its
    /// part at `from` in [`Self::text`]: where that part is, when not empty.
    pub(super) fn note_part(&mut self, from: usize) {
        if self.text.len() > from {
            self.spans.push(from..self.text.len());
        }
    }

    /// The parts `spans` (indices into [`Self::spans`]) joined by `separator`,
    /// as a string of their own: a rich text's plain text.
    pub(super) fn joined(&self, spans: Range<usize>, separator: &str) -> String {
        let parts = self.spans.get(spans).unwrap_or_default();
        let len = parts.iter().map(|p| p.len() + separator.len()).sum();
        let mut joined = String::with_capacity(len);
        push_joined(&mut joined, &self.text, parts, separator);
        joined
    }

    /// Replaces what follows `mark` in [`Self::text`] (what a node's
    /// children wrote) with the parts `spans` joined by `separator`: the
    /// node's part. Parts already joined where they stand (one part, or
    /// parts side by side with no separator, from `mark` to the end) stay.
    fn join_in_place(&mut self, mark: usize, spans: Range<usize>, separator: &str) {
        let parts = self.spans.get(spans).unwrap_or_default();
        let (Some(first), Some(last)) = (parts.first(), parts.last()) else {
            self.text.truncate(mark);
            return;
        };
        let in_place = first.start == mark
            && last.end == self.text.len()
            && (parts.len() == 1
                || separator.is_empty() && parts.windows(2).all(|w| w[0].end == w[1].start));
        if in_place {
            return;
        }
        self.scratch.clear();
        push_joined(&mut self.scratch, &self.text, parts, separator);
        self.text.truncate(mark);
        self.text.push_str(&self.scratch);
    }

    /// Replaces what follows `mark` in [`Self::text`] with `part`.
    fn write_part(&mut self, mark: usize, part: &str) {
        self.text.truncate(mark);
        self.text.push_str(part);
    }
}

/// Appends to `out` the `parts` of `text` (ranges of it) joined by
/// `separator`.
fn push_joined(out: &mut String, text: &str, parts: &[Range<usize>], separator: &str) {
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            out.push_str(separator);
        }
        out.push_str(text.get(part.clone()).unwrap_or_default());
    }
}

/// One member of an open object, as written in [`CopyBuffers::out`]: its
/// key (quoted and escaped) and its value (`None` when the value was too deep
/// to keep). Both stay where they were written until the object closes: what
/// comes after a member (a later member, or a nested value rewritten or
/// taken back) never moves the bytes before it.
struct Member {
    key: Range<usize>,
    value: Option<Range<usize>>,
}

/// What a value is read for, besides its copy.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Nothing.
    Plain,
    /// Its string (a `type`, a `text`, a `label`, a `title`).
    Want,
    /// A TipTap node: its plain-text part.
    Node,
    /// A TipTap node's `content`: the parts of its nodes.
    NodeList,
    /// A TipTap node's `attrs`: `label` and `title`.
    Attrs,
    /// A Draft.js block: its `text`.
    DraftBlock,
}

/// What a value reported for its [`Role`].
pub enum Info<'de> {
    None,
    /// A string read as [`Role::Want`].
    Str(Cow<'de, str>),
    /// A node list: its non-empty parts, in [`CopyBuffers::text`] at the
    /// ranges `CopyBuffers::spans[range]`.
    Parts(Range<usize>),
    /// An `attrs` object's `label` and `title`.
    Attrs(Option<Cow<'de, str>>, Option<Cow<'de, str>>),
}

impl<'de> Info<'de> {
    /// The string a [`Role::Want`] value reported, if it was one.
    fn into_str(self) -> Option<Cow<'de, str>> {
        match self {
            Info::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// A value read once; the value of [`Item`].
pub struct Seen<'de> {
    pub info: Info<'de>,
    /// An array or object past the level bound: read, not written.
    pub dropped: bool,
}

/// Reads one value: writes its copy to [`CopyBuffers::out`] when `write` (with
/// `levels` array/object levels left, counting itself), and reports what
/// its `role` asks for.
pub struct Item<'c> {
    copy: &'c mut CopyBuffers,
    levels: usize,
    write: bool,
    role: Role,
}

impl<'c> Item<'c> {
    /// A value read for its role only, not copied.
    pub fn reading(copy: &'c mut CopyBuffers, role: Role) -> Item<'c> {
        Item {
            copy,
            levels: 0,
            write: false,
            role,
        }
    }

    /// A value copied with `levels` levels left.
    pub fn writing(copy: &'c mut CopyBuffers, levels: usize, role: Role) -> Item<'c> {
        Item {
            copy,
            levels,
            write: true,
            role,
        }
    }

    fn scalar<'de>(self, json: impl FnOnce(&mut Vec<u8>)) -> Seen<'de> {
        if self.write {
            json(&mut self.copy.out);
        }
        Seen {
            info: Info::None,
            dropped: false,
        }
    }

    #[inline(always)]
    fn string<'de>(self, s: Cow<'de, str>) -> Seen<'de> {
        if self.write {
            write_string(&mut self.copy.out, &s, matches!(s, Cow::Borrowed(_)));
        }
        let info = match self.role {
            Role::Want => Info::Str(s),
            _ => Info::None,
        };
        Seen {
            info,
            dropped: false,
        }
    }
}

/// A string as serde_json writes it. One borrowed from the text had no
/// escape there, and a string without one holds no quote, backslash or
/// control character (serde_json refuses those raw), so it is its own
/// escaped form: copied, not scanned for what to escape.
#[inline(always)]
fn write_string(out: &mut Vec<u8>, s: &str, borrowed: bool) {
    if borrowed {
        quote(out, s.as_bytes());
    } else {
        write_str(out, s);
    }
}

/// A string as serde_json writes it, in one pass: each run of bytes with
/// nothing to escape (found sixteen bytes at a time) is copied whole, and
/// each quote, backslash or control character after one is escaped as
/// serde_json escapes it ([`write_escape`]). Most strings (ids, times,
/// words) are one run; a plain text's newlines are the usual escapes.
/// Also the node writer's (`provider::normalize::node_json`).
pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut from = 0;
    loop {
        let stop = json_text_run(bytes, from);
        out.extend_from_slice(bytes.get(from..stop).unwrap_or_default());
        let Some(&special) = bytes.get(stop) else {
            break;
        };
        write_escape(out, special);
        from = stop + 1;
    }
    out.push(b'"');
}

/// A quote, backslash or control character as serde_json escapes it: the
/// short forms where JSON has one, else `\u00` and two lowercase hex digits.
fn write_escape(out: &mut Vec<u8>, byte: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let short = match byte {
        b'"' => b'"',
        b'\\' => b'\\',
        b'\n' => b'n',
        b'\r' => b'r',
        b'\t' => b't',
        0x08 => b'b',
        0x0c => b'f',
        _ => {
            let hex = |nibble: u8| HEX[usize::from(nibble & 0xf)];
            out.extend_from_slice(&[b'\\', b'u', b'0', b'0', hex(byte >> 4), hex(byte)]);
            return;
        }
    };
    out.extend_from_slice(&[b'\\', short]);
}

/// `s` between quotes, as it is: for a string with nothing to escape (a
/// borrowed one here, a time in the node writer).
pub(crate) fn quote(out: &mut Vec<u8>, s: &[u8]) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    out.extend_from_slice(s);
    out.push(b'"');
}

/// A float as a parsed value holds it: a number, or null when not finite.
fn write_f64(out: &mut Vec<u8>, v: f64) {
    match serde_json::Number::from_f64(v) {
        Some(n) => write_json(out, &n),
        None => out.extend_from_slice(b"null"),
    }
}

/// serde_json's compact text of a scalar (it cannot fail on a `Vec`).
fn write_json<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    let _ = serde_json::to_writer(out, value);
}

/// A key the copy's rules name, told apart once, when it is read: the
/// role of its value, what its value reports and whether it repeated all
/// follow from it, without comparing the key's text again.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Named {
    Type,
    Text,
    Label,
    Title,
    Content,
    Attrs,
    /// Any other key (a sensitive one among them: no named key is).
    Other,
}

impl Named {
    fn of(key: &str) -> Named {
        match key {
            "type" => Named::Type,
            "text" => Named::Text,
            "label" => Named::Label,
            "title" => Named::Title,
            "content" => Named::Content,
            "attrs" => Named::Attrs,
            _ => Named::Other,
        }
    }

    /// Its bit among an object's named keys already read.
    fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// The role of a member named `key` of an object read as `parent`.
fn role_of(parent: Role, key: Named) -> Role {
    match (parent, key) {
        (_, Named::Type) => Role::Want,
        (Role::Node, Named::Text) | (Role::DraftBlock, Named::Text) => Role::Want,
        (Role::Attrs, Named::Label) | (Role::Attrs, Named::Title) => Role::Want,
        (Role::Node, Named::Content) => Role::NodeList,
        (Role::Node, Named::Attrs) => Role::Attrs,
        _ => Role::Plain,
    }
}

impl<'de> DeserializeSeed<'de> for Item<'_> {
    type Value = Seen<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Seen<'de>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Item<'_> {
    type Value = Seen<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Seen<'de>, E> {
        Ok(self.scalar(|out| write_json(out, &v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Seen<'de>, E> {
        Ok(self.scalar(|out| write_json(out, &v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Seen<'de>, E> {
        Ok(self.scalar(|out| write_json(out, &v)))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Seen<'de>, E> {
        Ok(self.scalar(|out| write_f64(out, v)))
    }
    fn visit_unit<E>(self) -> Result<Seen<'de>, E> {
        Ok(self.scalar(|out| out.extend_from_slice(b"null")))
    }
    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Seen<'de>, E> {
        Ok(self.string(Cow::Borrowed(s)))
    }
    fn visit_str<E>(self, s: &str) -> Result<Seen<'de>, E> {
        Ok(self.string(Cow::Owned(s.to_owned())))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Seen<'de>, A::Error> {
        let copy = self.copy;
        let mut array = Array::open(copy, self.levels, self.write, self.role);
        loop {
            let mark = array.before_item(copy);
            let Some(seen) = seq.next_element_seed(array.item(copy))? else {
                copy.out.truncate(mark);
                break;
            };
            array.after_item(copy, mark, seen);
        }
        Ok(array.close(copy))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Seen<'de>, A::Error> {
        let copy = self.copy;
        let mut object = Object::open(copy, self.levels, self.write, self.role);
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let pending = object.key(copy, &key, matches!(key, Cow::Borrowed(_)));
            let seen = map.next_value_seed(pending.item(copy))?;
            object.value(copy, pending, seen);
        }
        Ok(object.close(copy))
    }
}

/// An object key, borrowed from the text when it has no escapes.
pub struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(s))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn written(s: &str) -> String {
        let mut out = Vec::new();
        write_str(&mut out, s);
        String::from_utf8(out).expect("the writer copies UTF-8 runs whole")
    }

    #[test]
    fn every_byte_below_0x80_escaped_as_serde_json_escapes_it() {
        for byte in 0u8..0x80 {
            let c = char::from(byte);
            for s in [
                c.to_string(),
                format!("ab{c}"),
                format!("{c}cd"),
                format!("long run {c}{c} of text"),
            ] {
                assert_eq!(written(&s), serde_json::to_string(&s).unwrap(), "{byte:#x}");
            }
        }
    }

    proptest! {
        #[test]
        fn writes_what_serde_json_writes(s in "(\\PC|[\\x00-\\x1f\"\\\\\u{7f}])*") {
            prop_assert_eq!(written(&s), serde_json::to_string(&s).unwrap());
        }
    }
}
