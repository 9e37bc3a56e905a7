//! The open arrays and objects of the copy, whichever reader drives them
//! (the serde visitor, [`Item`], or the byte reader, [`super::bytes`]):
//! [`Array`] and [`Object`] keep what their items and members reported and
//! where their copy stands, take back what was dropped, and on closing
//! write their plain-text part ([`NodeText`]). An object whose key
//! repeated, or that is a mention, is rewritten from the spans of its
//! members when it closes ([`CopyBuffers::rewrite`]).

use super::{
    role_of, write_json, write_string, CopyBuffers, Info, Item, Member, Named, Role, Seen,
};
use crate::document::sanitize::{is_mention, is_mention_person_key, is_sensitive};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::ops::Range;

/// An array being read, whichever reader drives it: what its items
/// report and where its copy is.
pub(super) struct Array {
    /// Past the level bound: read, not written.
    dropped: bool,
    write: bool,
    /// Levels left for its items.
    inner: usize,
    role: Role,
    child_role: Role,
    /// Whether an item was written (the next one follows a comma).
    any: bool,
    /// Its first part in [`CopyBuffers::spans`], and where the item being
    /// read started writing its part in [`CopyBuffers::text`].
    spans_base: usize,
    item_text: usize,
}

impl Array {
    /// Opens an array read with `levels` levels left (counting itself).
    pub(super) fn open(copy: &mut CopyBuffers, levels: usize, write: bool, role: Role) -> Array {
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
            spans_base: copy.spans.len(),
            item_text: copy.text.len(),
        }
    }

    /// Before an item (or the end): where the copy stood, then the comma
    /// that follows a written item.
    pub(super) fn before_item(&mut self, copy: &mut CopyBuffers) -> usize {
        self.item_text = copy.text.len();
        let mark = copy.out.len();
        if self.write && self.any {
            copy.out.push(b',');
        }
        mark
    }

    /// How the next item is read.
    pub(super) fn item<'c>(&self, copy: &'c mut CopyBuffers) -> Item<'c> {
        Item {
            copy,
            levels: self.inner,
            write: self.write,
            role: self.child_role,
        }
    }

    /// After an item: a dropped one is taken back (with its comma); in a
    /// node list, where its part is noted (a dropped node's too: the plain
    /// text keeps what the copy leaves out).
    pub(super) fn after_item(&mut self, copy: &mut CopyBuffers, mark: usize, seen: Seen<'_>) {
        if seen.dropped {
            copy.out.truncate(mark);
        } else {
            self.any = true;
        }
        if self.role == Role::NodeList {
            copy.note_part(self.item_text);
        }
    }

    /// Closes the array: what it reports for its role.
    pub(super) fn close<'de>(self, copy: &mut CopyBuffers) -> Seen<'de> {
        if self.write {
            copy.out.push(b']');
        }
        let info = match self.role {
            Role::NodeList => Info::Parts(self.spans_base..copy.spans.len()),
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
    /// Where its first member's copy starts in [`CopyBuffers::out`].
    start: usize,
    /// Its first member in [`CopyBuffers::members`].
    base: usize,
    /// Where its part goes in [`CopyBuffers::text`] (its children's parts
    /// come first), and its children's first in [`CopyBuffers::spans`].
    text_mark: usize,
    spans_base: usize,
    repeated: bool,
    /// The [`Named`] keys among its written members, one bit each: a named
    /// key repeats when its bit is set, without comparing keys.
    named: u8,
    many: Option<HashSet<Vec<u8>>>,
}

/// A member whose key was read and whose value comes next.
pub(super) struct Pending {
    levels: usize,
    write: bool,
    role: Role,
    key: Named,
    /// Where the copy stood before the member, where its key is and where
    /// its value starts in [`CopyBuffers::out`] (`None` when the value is
    /// read and not written).
    written: Option<(usize, Range<usize>, usize)>,
}

impl Pending {
    /// How the value is read.
    pub(super) fn item<'c>(&self, copy: &'c mut CopyBuffers) -> Item<'c> {
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
    pub(super) fn open(
        copy: &mut CopyBuffers,
        levels: usize,
        write: bool,
        role: Role,
    ) -> Object<'de> {
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
            text_mark: copy.text.len(),
            spans_base: copy.spans.len(),
            repeated: false,
            named: 0,
            many: None,
        }
    }

    /// A member's key, read: written (with the comma before it) unless the
    /// object is not written or the key is sensitive. `borrowed`: the key
    /// is the text's own (it had no escape there).
    #[inline(always)]
    pub(super) fn key(&mut self, copy: &mut CopyBuffers, key: &str, borrowed: bool) -> Pending {
        let named = Named::of(key);
        let role = role_of(self.role, named);
        if !self.write {
            return Pending {
                levels: 0,
                write: false,
                role,
                key: named,
                written: None,
            };
        }
        if named == Named::Other && is_sensitive(key) {
            return Pending {
                levels: 0,
                write: false,
                role: Role::Plain,
                key: Named::Other,
                written: None,
            };
        }
        let mark = copy.out.len();
        if copy.out.len() > self.start {
            copy.out.push(b',');
        }
        let key_start = copy.out.len();
        write_string(&mut copy.out, key, borrowed);
        let key_range = key_start..copy.out.len();
        copy.out.push(b':');
        Pending {
            levels: self.inner,
            write: true,
            role,
            key: named,
            written: Some((mark, key_range, copy.out.len())),
        }
    }

    /// A member's value, read: noted among the members when written (a
    /// dropped one is taken back with its key), and what it reported kept
    /// for the object's role.
    #[inline(always)]
    pub(super) fn value(&mut self, copy: &mut CopyBuffers, pending: Pending, seen: Seen<'de>) {
        if let Some((mark, key_range, value_start)) = pending.written {
            let value = if seen.dropped {
                copy.out.truncate(mark);
                None
            } else {
                Some(value_start..copy.out.len())
            };
            self.repeated |= match pending.key {
                Named::Other => copy.is_repeated(self.base, &key_range, &mut self.many),
                named => {
                    let again = self.named & named.bit() != 0;
                    self.named |= named.bit();
                    again
                }
            };
            copy.members.push(Member {
                key: key_range,
                value,
            });
        }
        let node = &mut self.node;
        match (self.role, pending.key, seen.info) {
            (_, Named::Type, info) => self.kind = info.into_str(),
            (Role::Node | Role::DraftBlock, Named::Text, info) => node.text = info.into_str(),
            (Role::Attrs, Named::Label, info) => node.label = info.into_str(),
            (Role::Attrs, Named::Title, info) => node.title = info.into_str(),
            (Role::Node, Named::Content, info) => {
                node.children = match info {
                    Info::Parts(parts) => parts,
                    _ => 0..0,
                }
            }
            (Role::Node, Named::Attrs, info) => {
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
    pub(super) fn close(self, copy: &mut CopyBuffers) -> Seen<'de> {
        if self.write {
            let mention = self.kind.as_deref().is_some_and(is_mention);
            if self.repeated || mention {
                copy.rewrite(self.start, self.base, mention);
            }
            copy.out.push(b'}');
        }
        copy.members.truncate(self.base);
        let info = match self.role {
            Role::Node => {
                self.node.write_part(self.kind, copy, self.text_mark);
                Info::None
            }
            Role::DraftBlock => {
                copy.write_part(self.text_mark, &self.node.text.unwrap_or_default());
                Info::None
            }
            Role::Attrs => Info::Attrs(self.node.label, self.node.title),
            _ => Info::None,
        };
        copy.spans.truncate(self.spans_base);
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
    /// Its last `content`'s parts, in [`CopyBuffers::spans`].
    children: Range<usize>,
}

impl NodeText<'_> {
    /// Writes the node's part, by the rules of the module docs of
    /// `rich_text`, at `mark` in [`CopyBuffers::text`], in place of what its
    /// children wrote there.
    fn write_part(self, kind: Option<Cow<'_, str>>, copy: &mut CopyBuffers, mark: usize) {
        if let Some(text) = self.text {
            return copy.write_part(mark, &text);
        }
        let kind = kind.as_deref().unwrap_or_default();
        match kind {
            "hardBreak" => copy.write_part(mark, "\n"),
            "mention" => write_mention(copy, mark, &self.label.unwrap_or_default()),
            "inlineBoardLink" => copy.write_part(mark, &self.title.unwrap_or_default()),
            _ => {
                let separator = match kind {
                    "paragraph" | "heading" | "smallText" | "codeBlock" | "listItem"
                    | "taskItem" => "",
                    _ => "\n",
                };
                copy.join_in_place(mark, self.children, separator);
            }
        }
    }
}

/// A mention's words: `@` and its label (trimmed), one `@` when the label
/// has one (none when it is blank).
fn write_mention(copy: &mut CopyBuffers, mark: usize, label: &str) {
    let trimmed = label.trim();
    copy.text.truncate(mark);
    if !(trimmed.is_empty() || trimmed.starts_with('@')) {
        copy.text.push('@');
    }
    copy.text.push_str(trimmed);
}

impl CopyBuffers {
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
        let key_of = |range: &Range<usize>| self.out.get(range.clone()).unwrap_or_default();
        let bytes = key_of(key);
        let earlier = &self.members[base..];
        if let Some(set) = many {
            return !set.insert(bytes.to_vec());
        }
        let found = earlier.iter().any(|m| key_of(&m.key) == bytes);
        if earlier.len() >= LINEAR {
            let mut set: HashSet<Vec<u8>> =
                earlier.iter().map(|m| key_of(&m.key).to_vec()).collect();
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
        let key_of = |range: &Range<usize>| {
            written
                .get(range.start - start..range.end - start)
                .unwrap_or_default()
        };
        let mut order: Vec<(Range<usize>, Option<Range<usize>>)> = Vec::new();
        let mut first_place: HashMap<&[u8], usize> = HashMap::new();
        for member in &self.members[base..] {
            let key = key_of(&member.key);
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
            let key = key_of(&key);
            let bare = key.get(1..key.len().saturating_sub(1)).unwrap_or_default();
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
