//! The copy behind [`super::stream`]: one JSON value read once, written
//! as its bounded, sanitized compact copy (what `provider::raw::raw_leaf`
//! writes for the parsed value) while what the plain text needs is gathered.
//! Its rules live in [`Array`] and [`Object`]; two readers drive them, the
//! serde visitor ([`Item`]) and a reader of the bytes themselves
//! ([`bytes`], over a [`super::cursor::Cursor`]).
//!
//! The copy follows `raw_leaf`'s rules as the value arrives:
//! - a sensitive key ([`is_sensitive`]) is read and not written;
//! - an array or object past the level bound is read and not written (an
//!   object loses that key, an array that item);
//! - a repeated key means its last value, in its first place, and an object
//!   whose `type` is a mention ([`is_mention`]) loses the keys by which it
//!   points at a person, on itself and in its `attrs`. Both are known only
//!   when the object closes, so such an object (rare) is written as it
//!   comes and then rewritten from the spans of its members.
//!
//! The plain text is gathered by [`Role`]: a TipTap node reports its part
//! (its `text`, a break, a mention's label, or its children's parts joined),
//! a Draft.js block its `text`, and `attrs` its `label` and `title`.

mod bytes;

pub(super) use bytes::read_item;

use crate::document::sanitize::{is_mention, is_mention_person_key, is_sensitive};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::ops::Range;

/// The copy's buffers, reused across the blocks of a rich text.
#[derive(Default)]
pub struct Copy {
    /// The block being written.
    pub out: Vec<u8>,
    /// The quoted, escaped keys of the open objects' members.
    keys: Vec<u8>,
    /// The open objects' members, in the order read.
    members: Vec<Member>,
}

/// One member of an open object: its key in [`Copy::keys`], its value in
/// [`Copy::out`] (`None` when the value was too deep to keep).
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
    /// A node's part or a Draft.js block's text (possibly empty).
    Part(Cow<'de, str>),
    /// The non-empty parts of a node list.
    Parts(Vec<Cow<'de, str>>),
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

/// Reads one value: writes its copy to [`Copy::out`] when `write` (with
/// `levels` array/object levels left, counting itself), and reports what
/// its `role` asks for.
pub struct Item<'c> {
    copy: &'c mut Copy,
    levels: usize,
    write: bool,
    role: Role,
}

impl<'c> Item<'c> {
    /// A value read for its role only, not copied.
    pub fn reading(copy: &'c mut Copy, role: Role) -> Item<'c> {
        Item {
            copy,
            levels: 0,
            write: false,
            role,
        }
    }

    /// A value copied with `levels` levels left.
    pub fn writing(copy: &'c mut Copy, levels: usize, role: Role) -> Item<'c> {
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
fn write_string(out: &mut Vec<u8>, s: &str, borrowed: bool) {
    if borrowed {
        quote(out, s);
    } else {
        write_str(out, s);
    }
}

/// A string as serde_json writes it: one with no quote, backslash or
/// control character is its own escaped form and is copied; any other
/// goes through serde_json. Also the node writer's
/// (`provider::normalize::node_json`).
pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    // Without an early exit, so the compiler checks many bytes at a time:
    // ids, times and most texts hold nothing to escape.
    let plain = !s.bytes().fold(false, |seen, b| {
        seen | (b < 0x20) | (b == b'"') | (b == b'\\')
    });
    if plain {
        quote(out, s);
    } else {
        write_json(out, s);
    }
}

/// `s` between quotes, as it is: for a string with nothing to escape.
fn quote(out: &mut Vec<u8>, s: &str) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    out.extend_from_slice(s.as_bytes());
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

/// The role of a member `key` of an object read as `parent`.
fn role_of(parent: Role, key: &str) -> Role {
    match (parent, key) {
        (_, "type") => Role::Want,
        (Role::Node, "text") | (Role::DraftBlock, "text") => Role::Want,
        (Role::Attrs, "label") | (Role::Attrs, "title") => Role::Want,
        (Role::Node, "content") => Role::NodeList,
        (Role::Node, "attrs") => Role::Attrs,
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
            object.value(copy, pending, &key, seen);
        }
        Ok(object.close(copy))
    }
}

/// An array being read, whichever reader drives it: what its items
/// report and where its copy is.
pub(super) struct Array<'de> {
    /// Past the level bound: read, not written.
    dropped: bool,
    write: bool,
    /// Levels left for its items.
    inner: usize,
    role: Role,
    child_role: Role,
    /// Whether an item was written (the next one follows a comma).
    any: bool,
    parts: Vec<Cow<'de, str>>,
}

impl<'de> Array<'de> {
    /// Opens an array read with `levels` levels left (counting itself).
    pub(super) fn open(copy: &mut Copy, levels: usize, write: bool, role: Role) -> Array<'de> {
        let dropped = write && levels == 0;
        let write = write && !dropped;
        if write {
            copy.out.push(b'[');
        }
        Array {
            dropped,
            write,
            inner: levels.saturating_sub(1),
            role,
            child_role: match role {
                Role::NodeList => Role::Node,
                _ => Role::Plain,
            },
            any: false,
            parts: Vec::new(),
        }
    }

    /// Before an item (or the end): where the copy stood, then the comma
    /// that follows a written item.
    pub(super) fn before_item(&self, copy: &mut Copy) -> usize {
        let mark = copy.out.len();
        if self.write && self.any {
            copy.out.push(b',');
        }
        mark
    }

    /// How the next item is read.
    pub(super) fn item<'c>(&self, copy: &'c mut Copy) -> Item<'c> {
        Item {
            copy,
            levels: self.inner,
            write: self.write,
            role: self.child_role,
        }
    }

    /// After an item: a dropped one is taken back (with its comma).
    pub(super) fn after_item(&mut self, copy: &mut Copy, mark: usize, seen: Seen<'de>) {
        if seen.dropped {
            copy.out.truncate(mark);
        } else {
            self.any = true;
        }
        if let Info::Part(part) = seen.info {
            if !part.is_empty() {
                self.parts.push(part);
            }
        }
    }

    /// Closes the array: what it reports for its role.
    pub(super) fn close(self, copy: &mut Copy) -> Seen<'de> {
        if self.write {
            copy.out.push(b']');
        }
        let info = match self.role {
            Role::NodeList => Info::Parts(self.parts),
            _ => Info::None,
        };
        Seen {
            info,
            dropped: self.dropped,
        }
    }
}

/// An object being read, whichever reader drives it: what its members
/// said and where its copy is.
pub(super) struct Object<'de> {
    dropped: bool,
    write: bool,
    inner: usize,
    role: Role,
    node: NodeText<'de>,
    kind: Option<Cow<'de, str>>,
    /// Where its first member's copy starts in [`Copy::out`].
    start: usize,
    /// Its first member in [`Copy::members`], and its first key's byte.
    base: usize,
    keys_base: usize,
    repeated: bool,
    many: Option<HashSet<Vec<u8>>>,
}

/// A member whose key was read and whose value comes next.
pub(super) struct Pending {
    levels: usize,
    write: bool,
    role: Role,
    /// Where the copy stood before the member, and its key in
    /// [`Copy::keys`] (`None` when the value is read and not written).
    written: Option<(usize, Range<usize>, usize)>,
}

impl Pending {
    /// How the value is read.
    pub(super) fn item<'c>(&self, copy: &'c mut Copy) -> Item<'c> {
        Item {
            copy,
            levels: self.levels,
            write: self.write,
            role: self.role,
        }
    }
}

impl<'de> Object<'de> {
    /// Opens an object read with `levels` levels left (counting itself).
    pub(super) fn open(copy: &mut Copy, levels: usize, write: bool, role: Role) -> Object<'de> {
        let dropped = write && levels == 0;
        let write = write && !dropped;
        let start = copy.out.len() + 1;
        if write {
            copy.out.push(b'{');
        }
        Object {
            dropped,
            write,
            inner: levels.saturating_sub(1),
            role,
            node: NodeText::default(),
            kind: None,
            start,
            base: copy.members.len(),
            keys_base: copy.keys.len(),
            repeated: false,
            many: None,
        }
    }

    /// A member's key, read: written (with the comma before it) unless the
    /// object is not written or the key is sensitive. `borrowed`: the key
    /// is the text's own (it had no escape there).
    pub(super) fn key(&mut self, copy: &mut Copy, key: &str, borrowed: bool) -> Pending {
        let role = role_of(self.role, key);
        if !self.write {
            return Pending {
                levels: 0,
                write: false,
                role,
                written: None,
            };
        }
        if is_sensitive(key) {
            return Pending {
                levels: 0,
                write: false,
                role: Role::Plain,
                written: None,
            };
        }
        let mark = copy.out.len();
        if copy.out.len() > self.start {
            copy.out.push(b',');
        }
        let key_start = copy.out.len();
        write_string(&mut copy.out, key, borrowed);
        let key_range = copy.keys.len()..copy.keys.len() + (copy.out.len() - key_start);
        let (written, key_bytes) = (&copy.out[key_start..], &mut copy.keys);
        key_bytes.extend_from_slice(written);
        copy.out.push(b':');
        Pending {
            levels: self.inner,
            write: true,
            role,
            written: Some((mark, key_range, copy.out.len())),
        }
    }

    /// A member's value, read: noted among the members when written (a
    /// dropped one is taken back with its key), and what it reported kept
    /// for the object's role.
    pub(super) fn value(&mut self, copy: &mut Copy, pending: Pending, key: &str, seen: Seen<'de>) {
        if let Some((mark, key_range, value_start)) = pending.written {
            let value = if seen.dropped {
                copy.out.truncate(mark);
                None
            } else {
                Some(value_start..copy.out.len())
            };
            self.repeated |= copy.is_repeated(self.base, &key_range, &mut self.many);
            copy.members.push(Member {
                key: key_range,
                value,
            });
        }
        let node = &mut self.node;
        match (self.role, key, seen.info) {
            (_, "type", info) => self.kind = info.into_str(),
            (Role::Node | Role::DraftBlock, "text", info) => node.text = info.into_str(),
            (Role::Attrs, "label", info) => node.label = info.into_str(),
            (Role::Attrs, "title", info) => node.title = info.into_str(),
            (Role::Node, "content", info) => {
                node.children = match info {
                    Info::Parts(parts) => parts,
                    _ => Vec::new(),
                }
            }
            (Role::Node, "attrs", info) => {
                (node.label, node.title) = match info {
                    Info::Attrs(label, title) => (label, title),
                    _ => (None, None),
                }
            }
            _ => {}
        }
    }

    /// Closes the object: rewritten when a key repeated or it is a
    /// mention; what it reports for its role.
    pub(super) fn close(self, copy: &mut Copy) -> Seen<'de> {
        if self.write {
            let mention = self.kind.as_deref().is_some_and(is_mention);
            if self.repeated || mention {
                copy.rewrite(self.start, self.base, mention);
            }
            copy.out.push(b'}');
        }
        copy.members.truncate(self.base);
        copy.keys.truncate(self.keys_base);
        let info = match self.role {
            Role::Node => Info::Part(self.node.part(self.kind)),
            Role::DraftBlock => Info::Part(self.node.text.unwrap_or_default()),
            Role::Attrs => Info::Attrs(self.node.label, self.node.title),
            _ => Info::None,
        };
        Seen {
            info,
            dropped: self.dropped,
        }
    }
}

/// What a node's or block's members said for its plain text, the last of
/// each key winning.
#[derive(Default)]
struct NodeText<'de> {
    text: Option<Cow<'de, str>>,
    label: Option<Cow<'de, str>>,
    title: Option<Cow<'de, str>>,
    children: Vec<Cow<'de, str>>,
}

impl<'de> NodeText<'de> {
    /// The node's part, by the rules of the module docs of `rich_text`.
    fn part(self, kind: Option<Cow<'de, str>>) -> Cow<'de, str> {
        if let Some(text) = self.text {
            return text;
        }
        let kind = kind.as_deref().unwrap_or_default();
        match kind {
            "hardBreak" => Cow::Borrowed("\n"),
            "mention" => mention_part(self.label.unwrap_or_default()),
            "inlineBoardLink" => self.title.unwrap_or_default(),
            _ => {
                let separator = match kind {
                    "paragraph" | "heading" | "smallText" | "codeBlock" | "listItem"
                    | "taskItem" => "",
                    _ => "\n",
                };
                let mut children = self.children;
                if children.len() == 1 {
                    return children.pop().unwrap_or_default();
                }
                Cow::Owned(children.join(separator))
            }
        }
    }
}

/// A mention's words: `@` and its label (trimmed), one `@` when the label
/// has one; borrowed from the text where it can be.
fn mention_part(label: Cow<'_, str>) -> Cow<'_, str> {
    let trimmed = label.trim();
    if trimmed.is_empty() || trimmed.starts_with('@') {
        match label {
            Cow::Borrowed(s) => Cow::Borrowed(s.trim()),
            Cow::Owned(s) => Cow::Owned(s.trim().to_owned()),
        }
    } else {
        Cow::Owned(format!("@{trimmed}"))
    }
}

impl Copy {
    /// Whether the key just written (`key`, not yet among the members)
    /// repeats one of the open object's keys since `base`. Past a few
    /// members the keys are also kept in a set, so an object with very many
    /// keys costs no more than a lookup per key.
    fn is_repeated(
        &self,
        base: usize,
        key: &Range<usize>,
        many: &mut Option<HashSet<Vec<u8>>>,
    ) -> bool {
        const LINEAR: usize = 16;
        let bytes = &self.keys[key.clone()];
        let earlier = &self.members[base..];
        if let Some(set) = many {
            return !set.insert(bytes.to_vec());
        }
        let found = earlier.iter().any(|m| &self.keys[m.key.clone()] == bytes);
        if earlier.len() >= LINEAR {
            let mut set: HashSet<Vec<u8>> = earlier
                .iter()
                .map(|m| self.keys[m.key.clone()].to_vec())
                .collect();
            set.insert(bytes.to_vec());
            *many = Some(set);
        }
        found
    }

    /// Rewrites the open object whose members start at `start` in `out`
    /// (members from `base`): each key once, in its first place, with its
    /// last value, and for a `mention` without its person keys, on itself
    /// and in its `attrs`.
    fn rewrite(&mut self, start: usize, base: usize, mention: bool) {
        let written = self.out.split_off(start);
        let mut order: Vec<(Range<usize>, Option<Range<usize>>)> = Vec::new();
        let mut first_place: HashMap<&[u8], usize> = HashMap::new();
        for member in &self.members[base..] {
            let key = &self.keys[member.key.clone()];
            match first_place.get(key) {
                Some(&i) => order[i].1.clone_from(&member.value),
                None => {
                    first_place.insert(key, order.len());
                    order.push((member.key.clone(), member.value.clone()));
                }
            }
        }
        let mut any = false;
        for (key, value) in order {
            let Some(value) = value else { continue };
            let key = &self.keys[key];
            let bare = key.get(1..key.len() - 1).unwrap_or_default();
            let bare = std::str::from_utf8(bare).unwrap_or_default();
            if mention && is_mention_person_key(bare) {
                continue;
            }
            if any {
                self.out.push(b',');
            }
            any = true;
            self.out.extend_from_slice(key);
            self.out.push(b':');
            let value = &written[value.start - start..value.end - start];
            if mention && bare == "attrs" && value.first() == Some(&b'{') {
                without_person_keys(value, &mut self.out);
            } else {
                self.out.extend_from_slice(value);
            }
        }
    }
}

/// A mention's `attrs` (compact JSON this module wrote) without its person
/// keys. Mentions are few and their `attrs` small, so it goes through a value.
fn without_person_keys(attrs: &[u8], out: &mut Vec<u8>) {
    match serde_json::from_slice::<Value>(attrs) {
        Ok(Value::Object(mut map)) => {
            map.retain(|key, _| !is_mention_person_key(key));
            write_json(out, &map);
        }
        _ => out.extend_from_slice(attrs),
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
