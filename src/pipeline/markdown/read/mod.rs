//! Reads the selected document into the value the Markdown writer walks
//! ([`V`]), in the same pass that selects it: [`Tree`] is a
//! [`Sink`] of the selection's walk over the cached compact JSON, so the
//! walk's kept entries become the value's entries directly, and what it
//! keeps whole (a subtree, or the whole document for `full`) is read here.
//! Selecting into JSON bytes and reading those again cost the JSON render
//! and then a second read of its output.
//!
//! The reader takes what this service wrote: compact JSON (no whitespace),
//! UTF-8. Anything else is [`Malformed`], never a panic. It gives exactly
//! the value that [`V::parse`] gives for the same bytes: strings borrowed
//! from the input unless they hold escapes, numbers as serde_json reads
//! them, the members in [`skipped`] left out, nesting limited to 127
//! containers as serde_json limits it. `tests/it/pipeline_differential.rs`
//! (every fixture, every kind of selection), a proptest in
//! `tests/it/select_props.rs`, the unit cases in `tests.rs` and the `pipeline` fuzz
//! target hold the value read here, and the Markdown written from it, to
//! the selected JSON read by [`V::parse`].

mod scalar;

use super::value::{alloc_in_reading_order, holds_children, skipped, V};
use crate::document::model::{Model, NodeId};
use crate::document::reading::ReadingKey;
use crate::select::stream::{self, Malformed, Sink, Walk};
use bumpalo::Bump;
use scalar::{escape, literal, number};

/// serde_json's nesting limit (it refuses the 128th nested container), so
/// both readers refuse the same documents.
const MAX_DEPTH: usize = 127;

/// The value being built: the containers still open, each gathering its
/// entries on the shared stacks (copied into the arena at their final size
/// when it closes), the key of the entry being written, and the finished
/// root.
pub struct Tree<'a> {
    arena: &'a Bump,
    items: Vec<V<'a>>,
    /// The reading key of each item of an open `children` array, taken as
    /// the item is attached, while its members are in cache.
    keys: Vec<ReadingKey>,
    members: Vec<(&'a str, V<'a>)>,
    open: Vec<Open<'a>>,
    /// The key of the next value in the innermost open object, unescaped.
    /// Whether it is [`skipped`] is asked only when a value comes: most
    /// keys the walk reads are dropped with their value unread.
    key: Option<&'a str>,
    root: Option<V<'a>>,
    /// The document being read, checked as UTF-8 once (a render reads one,
    /// or two for an exclude over a view): every string is then a slice of it.
    doc: &'a str,
    /// Unescaped text, before it is copied into the arena.
    text: String,
}

/// An open container: an object gathers on `members`, an array on `items`,
/// from `start`; `key` is the key it goes under in its parent. A
/// `children` array gathers its items' reading keys on `keys` from `keys`.
#[derive(Clone, Copy)]
struct Open<'a> {
    object: bool,
    start: usize,
    key: Option<&'a str>,
    children: bool,
    keys: usize,
}

/// A point [`Tree`] can go back to: the height of every stack.
#[derive(Clone, Copy)]
pub struct Mark<'a> {
    items: usize,
    keys: usize,
    members: usize,
    open: usize,
    key: Option<&'a str>,
    root: bool,
}

/// How a value is kept where a selector ended ([`Sink::keep_whole`]).
#[derive(Clone, Copy)]
enum Keep<'m> {
    /// At a model position: the containers of its fields are kept this way
    /// one position down, anything else whole; an emptied object is dropped.
    Model(&'m Model, NodeId),
    /// Inside a leaf: every object that is or becomes empty is dropped.
    Raw,
    /// As it is.
    Whole,
}

impl<'m> Keep<'m> {
    /// How a value at the model position `node` is kept.
    fn at(model: &'m Model, node: NodeId) -> Keep<'m> {
        if model.node(node).is_leaf() {
            Keep::Raw
        } else {
            Keep::Model(model, node)
        }
    }
}

/// A string read: its text, the index past its closing quote, and whether
/// it held an escape.
type Read<'a> = (&'a str, usize, bool);

impl<'a> Tree<'a> {
    pub fn new(arena: &'a Bump) -> Tree<'a> {
        Tree {
            arena,
            items: Vec::new(),
            keys: Vec::new(),
            members: Vec::new(),
            open: Vec::new(),
            key: None,
            root: None,
            doc: "",
            text: String::new(),
        }
    }

    /// The value the walk wrote.
    ///
    /// # Errors
    /// [`Malformed`] when nothing, or something unfinished, was written.
    pub fn finish(self) -> Walk<V<'a>> {
        match (self.root, self.open.is_empty()) {
            (Some(root), true) => Ok(root),
            _ => Err(Malformed),
        }
    }

    /// `doc` as text, checked once per document.
    fn text_of(&mut self, doc: &'a [u8]) -> Walk<&'a str> {
        if !std::ptr::eq(self.doc.as_bytes(), doc) {
            self.doc = std::str::from_utf8(doc).map_err(|_| Malformed)?;
        }
        Ok(self.doc)
    }

    /// Puts a finished value where it belongs: under the pending key of the
    /// innermost open object (nowhere when that key is skipped), as the next
    /// item of the innermost array, or as the root.
    fn attach(&mut self, value: V<'a>) {
        match self.open.last() {
            Some(open) if open.object => {
                if let Some(key) = self.key.take().filter(|key| !skipped(key)) {
                    self.members.push((key, value));
                }
            }
            Some(open) => {
                let children = open.children;
                self.push_item(value, children);
            }
            None => self.root = Some(value),
        }
    }

    /// Pushes the next item of the innermost array, with its reading key
    /// when the array holds `children`: the one place items and keys are
    /// kept in step.
    fn push_item(&mut self, item: V<'a>, children: bool) {
        if children {
            self.keys.push(item.reading_key());
        }
        self.items.push(item);
    }

    /// The members gathered on top of the stack since `start`, taken off it
    /// into the arena at their final size.
    fn gather_members(&mut self, start: usize) -> V<'a> {
        let members = self.arena.alloc_slice_copy(&self.members[start..]);
        self.members.truncate(start);
        V::Obj(members)
    }

    /// The items gathered on top of the stack since `start`, taken off it
    /// into the arena; a `children` array's (`keys`: where its items' keys
    /// start) in reading order.
    fn gather_items(&mut self, start: usize, keys: Option<usize>) -> V<'a> {
        let items = match keys {
            Some(keys) => {
                let items =
                    alloc_in_reading_order(self.arena, &self.items[start..], &self.keys[keys..]);
                self.keys.truncate(keys);
                items
            }
            None => self.arena.alloc_slice_copy(&self.items[start..]),
        };
        self.items.truncate(start);
        V::Arr(items)
    }

    /// Opens a container the walk writes into, under the pending key.
    fn open(&mut self, object: bool) {
        let start = if object {
            self.members.len()
        } else {
            self.items.len()
        };
        let key = self.key.take();
        self.open.push(Open {
            object,
            start,
            key,
            children: !object && holds_children(key),
            keys: self.keys.len(),
        });
    }

    /// Closes the innermost open container and puts it where it belongs.
    fn close(&mut self) {
        if let Some(open) = self.open.pop() {
            let value = if open.object {
                self.gather_members(open.start)
            } else {
                self.gather_items(open.start, open.children.then_some(open.keys))
            };
            self.key = open.key;
            self.attach(value);
        }
    }

    /// Whether the next value goes under a skipped key.
    fn leaves_out_next(&self) -> bool {
        self.open.last().is_some_and(|open| open.object) && self.key.is_none_or(skipped)
    }

    /// The value at `s[i]`, kept as `keep` says (`None`: dropped), and the
    /// index just past it; `children` when it is the value of a `children`
    /// member. `depth` counts the containers around it; a container past
    /// [`MAX_DEPTH`] is refused here, for objects and arrays alike.
    fn read(
        &mut self,
        s: &'a str,
        i: usize,
        keep: Keep,
        depth: usize,
        children: bool,
    ) -> Walk<(Option<V<'a>>, usize)> {
        let b = s.as_bytes();
        let scalar = match b.get(i) {
            Some(b'"') => self.string(s, i).map(|(text, end, _)| (V::Str(text), end)),
            Some(b'{' | b'[') if depth >= MAX_DEPTH => Err(Malformed),
            Some(b'{') => return self.object(s, i, keep, depth + 1),
            Some(b'[') => return self.array(s, i, keep, depth + 1, children),
            Some(b't') => literal(b, i, b"true", V::Bool(true)),
            Some(b'f') => literal(b, i, b"false", V::Bool(false)),
            Some(b'n') => literal(b, i, b"null", V::Null),
            Some(b'-' | b'0'..=b'9') => number(s, i),
            _ => Err(Malformed),
        };
        scalar.map(|(value, end)| (Some(value), end))
    }

    fn object(
        &mut self,
        s: &'a str,
        mut i: usize,
        keep: Keep,
        depth: usize,
    ) -> Walk<(Option<V<'a>>, usize)> {
        let b = s.as_bytes();
        let prunes = !matches!(keep, Keep::Whole);
        i += 1;
        if b.get(i) == Some(&b'}') {
            return Ok(((!prunes).then_some(V::Obj(&[])), i + 1));
        }
        let start = self.members.len();
        // Entries kept, counting those under skipped keys, which are kept
        // out of the value but still keep the object from being pruned.
        let mut kept = 0;
        loop {
            let (key, end, escaped) = self.string(s, i)?;
            if b.get(end) != Some(&b':') {
                return Err(Malformed);
            }
            i = end + 1;
            let inner = match keep {
                Keep::Model(model, node) => match (escaped, b.get(i)) {
                    // The walk looks keys up as written: an escaped one is
                    // never a field.
                    (false, Some(b'{' | b'[')) => model
                        .node(node)
                        .child(key)
                        .map_or(Keep::Whole, |child| Keep::at(model, child)),
                    _ => Keep::Whole,
                },
                other => other,
            };
            if skipped(key) {
                let (keeps, end) = keeps(b, i, inner, depth)?;
                kept += usize::from(keeps);
                i = end;
            } else {
                let (value, end) = self.read(s, i, inner, depth, holds_children(Some(key)))?;
                i = end;
                if let Some(value) = value {
                    kept += 1;
                    self.members.push((key, value));
                }
            }
            match b.get(i) {
                Some(b',') => i += 1,
                Some(b'}') => break,
                _ => return Err(Malformed),
            }
        }
        let value = self.gather_members(start);
        Ok(((!prunes || kept > 0).then_some(value), i + 1))
    }

    fn array(
        &mut self,
        s: &'a str,
        mut i: usize,
        keep: Keep,
        depth: usize,
        children: bool,
    ) -> Walk<(Option<V<'a>>, usize)> {
        let b = s.as_bytes();
        i += 1;
        if b.get(i) == Some(&b']') {
            return Ok((Some(V::Arr(&[])), i + 1));
        }
        let start = self.items.len();
        let keys = self.keys.len();
        loop {
            let (item, end) = self.read(s, i, keep, depth, false)?;
            if let Some(item) = item {
                self.push_item(item, children);
            }
            i = end;
            match b.get(i) {
                Some(b',') => i += 1,
                Some(b']') => break,
                _ => return Err(Malformed),
            }
        }
        Ok((
            Some(self.gather_items(start, children.then_some(keys))),
            i + 1,
        ))
    }

    /// The string at `s[i]` (its opening quote): a slice of `s` when it
    /// holds no escape, else unescaped into the arena.
    fn string(&mut self, s: &'a str, i: usize) -> Walk<Read<'a>> {
        let b = s.as_bytes();
        if b.get(i) != Some(&b'"') {
            return Err(Malformed);
        }
        let start = i + 1;
        let j = stream::json_text_run(b, start);
        match b.get(j) {
            Some(b'"') => Ok((s.get(start..j).ok_or(Malformed)?, j + 1, false)),
            Some(b'\\') => self.unescape(s, start, j),
            _ => Err(Malformed),
        }
    }

    /// The rest of a string from its first escape at `s[j]`, unescaped into
    /// the arena.
    fn unescape(&mut self, s: &'a str, start: usize, mut j: usize) -> Walk<Read<'a>> {
        let b = s.as_bytes();
        let mut text = std::mem::take(&mut self.text);
        text.clear();
        text.push_str(s.get(start..j).ok_or(Malformed)?);
        loop {
            // At a backslash.
            j = escape(b, j + 1, &mut text)?;
            let end = stream::json_text_run(b, j);
            text.push_str(s.get(j..end).ok_or(Malformed)?);
            j = end;
            match b.get(j) {
                Some(b'"') => break,
                Some(b'\\') => {}
                _ => return Err(Malformed),
            }
        }
        let copied = self.arena.alloc_str(&text);
        self.text = text;
        Ok((copied, j + 1, true))
    }
}

/// Whether [`Tree::read`] would keep the value at `b[i]` (as `keep`
/// says), and the index past it, without building it: for the values of
/// skipped members, which are left out but keep their object from being
/// pruned. Only an object can be dropped, and it is kept as soon as one
/// of its entries is.
fn keeps(b: &[u8], i: usize, keep: Keep, depth: usize) -> Walk<(bool, usize)> {
    if matches!(keep, Keep::Whole) || b.get(i) != Some(&b'{') {
        return Ok((true, stream::skip(b, i)?));
    }
    if depth + 1 > MAX_DEPTH {
        return Err(Malformed);
    }
    let open = i;
    let mut i = i + 1;
    if b.get(i) == Some(&b'}') {
        return Ok((false, i + 1));
    }
    loop {
        let key_start = i;
        i = stream::skip(b, i)?;
        if b.get(key_start) != Some(&b'"') || b.get(i) != Some(&b':') {
            return Err(Malformed);
        }
        let key = &b[key_start + 1..i - 1];
        i += 1;
        let inner = match keep {
            Keep::Model(model, node) => match b.get(i) {
                Some(b'{' | b'[') => std::str::from_utf8(key)
                    .ok()
                    .and_then(|key| model.node(node).child(key))
                    .map_or(Keep::Whole, |child| Keep::at(model, child)),
                _ => Keep::Whole,
            },
            other => other,
        };
        let (kept, end) = keeps(b, i, inner, depth + 1)?;
        if kept {
            return Ok((true, stream::skip(b, open)?));
        }
        i = end;
        match b.get(i) {
            Some(b',') => i += 1,
            Some(b'}') => return Ok((false, i + 1)),
            _ => return Err(Malformed),
        }
    }
}

impl<'a> Sink<'a> for Tree<'a> {
    type Mark = Mark<'a>;

    fn mark(&self) -> Mark<'a> {
        Mark {
            items: self.items.len(),
            keys: self.keys.len(),
            members: self.members.len(),
            open: self.open.len(),
            key: self.key,
            root: self.root.is_some(),
        }
    }

    fn rollback(&mut self, mark: Mark<'a>) {
        self.items.truncate(mark.items);
        self.keys.truncate(mark.keys);
        self.members.truncate(mark.members);
        self.open.truncate(mark.open);
        self.key = mark.key;
        if !mark.root {
            self.root = None;
        }
    }

    fn open_object(&mut self) {
        self.open(true);
    }

    fn key(&mut self, _: bool, key: &'a str, raw: &'a [u8]) -> Walk<()> {
        let key = if key.bytes().any(|b| b == b'\\') {
            let raw = std::str::from_utf8(raw).map_err(|_| Malformed)?;
            self.string(raw, 0)?.0
        } else {
            key
        };
        self.key = Some(key);
        Ok(())
    }

    fn close_object(&mut self) {
        self.close();
    }

    fn open_array(&mut self) {
        self.open(false);
    }

    fn item(&mut self, _: bool) {}

    fn close_array(&mut self) {
        self.close();
    }

    fn empty_object(&mut self) {
        self.attach(V::Obj(&[]));
    }

    fn value(&mut self, doc: &'a [u8], at: usize) -> Walk<usize> {
        if self.leaves_out_next() {
            return stream::skip(doc, at);
        }
        let doc = self.text_of(doc)?;
        let children = holds_children(self.key);
        let (value, end) = self.read(doc, at, Keep::Whole, self.open.len(), children)?;
        self.attach(value.ok_or(Malformed)?);
        Ok(end)
    }

    fn keep_whole(
        &mut self,
        model: &Model,
        node: NodeId,
        doc: &'a [u8],
        at: usize,
    ) -> Walk<(bool, usize)> {
        let doc = self.text_of(doc)?;
        let children = holds_children(self.key);
        let (value, end) = self.read(doc, at, Keep::at(model, node), self.open.len(), children)?;
        let kept = value.is_some();
        if let Some(value) = value {
            // Under a skipped key it is kept, and attach() leaves it out.
            self.attach(value);
        }
        Ok((kept, end))
    }
}

#[cfg(test)]
mod tests;
