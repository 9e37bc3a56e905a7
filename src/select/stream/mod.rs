//! The `include` and `exclude` walks of [`super::apply`], run over the
//! compact JSON bytes of a sanitized document instead of a value tree: the
//! automaton steps on each key as it is read, and what is kept goes to a
//! [`Sink`] in document order. The JSON response's sink (`Vec<u8>`) copies
//! kept bytes straight to the output; the Markdown reader's builds its value
//! from them, so both representations are selected by the same walk and no
//! pruned copy of the document is built for either. An object is opened
//! lazily (taken back when nothing inside it was kept).
//!
//! The input is what this service serialized: compact JSON, valid UTF-8,
//! object keys escaped by serde_json. Keys with an escape sequence can never
//! be model keys (those are `[A-Za-z][A-Za-z0-9_]*`), so they are looked up
//! as written and step to nothing, exactly as their unescaped text would.
//! Malformed input is reported as [`Malformed`], never a panic. The walks
//! recurse along the document and count the containers they are inside: past
//! [`MAX_DEPTH`] the input is [`Malformed`], so no document, whoever wrote
//! it, can take a walk deeper than that (the normalizer writes at most 120
//! levels; what the fleet tier hands back is checked before it is used).

mod skip;
mod text;

pub(crate) use text::{json_text_run, text_run};

use super::compile::{Program, Step};
use crate::document::model::{self, Model, NodeId};

/// Most nested containers a walk enters: serde_json's own limit (it refuses
/// the 128th), so a document either reader accepts is walked whole.
pub const MAX_DEPTH: usize = 127;

/// Bytes the walks could not read as compact JSON (a bug, never client input).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

/// What a step of a walk gives: a value, or [`Malformed`] input.
pub type Walk<T> = Result<T, Malformed>;

/// Where a walk writes what it keeps, in document order: compact JSON bytes
/// (`Vec<u8>`, the JSON response) or a value built from them (the Markdown
/// reader). A walk writes an object or array before it knows whether
/// anything inside will be kept, and goes back to a [`Sink::mark`] when
/// nothing was, so a sink must be able to forget everything after a mark.
pub trait Sink<'a> {
    /// A point to go back to.
    type Mark: Copy;

    fn mark(&self) -> Self::Mark;

    /// Forgets everything written since `mark` was taken.
    fn rollback(&mut self, mark: Self::Mark);

    fn open_object(&mut self);

    /// Starts an entry of the open object (`first` when none was written
    /// before it in this object): `key` is the key's text as written
    /// (escapes included), `raw` the bytes `"key":`.
    ///
    /// # Errors
    /// [`Malformed`] when the key's escapes cannot be read.
    fn key(&mut self, first: bool, key: &'a str, raw: &'a [u8]) -> Walk<()>;

    fn close_object(&mut self);

    /// Opens an array; its items follow, each after [`Sink::item`].
    fn open_array(&mut self);

    /// Starts an item (`first` when none was written before it).
    fn item(&mut self, first: bool);

    fn close_array(&mut self);

    /// `{}`, written as a whole value.
    fn empty_object(&mut self);

    /// The value that starts at `doc[at]`, kept whole; returns the index
    /// just past it.
    ///
    /// # Errors
    /// [`Malformed`] when no compact JSON value starts there.
    fn value(&mut self, doc: &'a [u8], at: usize) -> Walk<usize>;

    /// Where a selector ends at the model position `node`: the value that
    /// starts at `doc[at]`, less the objects that are or become empty at
    /// model positions below it and anywhere inside leaves; returns whether
    /// anything was kept (nothing is written when not) and the index just
    /// past the value. The default walks it entry by entry through this
    /// sink; a sink may do the same in one piece, to the same effect.
    ///
    /// # Errors
    /// [`Malformed`] when no compact JSON value starts there.
    fn keep_whole(
        &mut self,
        model: &Model,
        node: NodeId,
        doc: &'a [u8],
        at: usize,
    ) -> Walk<(bool, usize)>
    where
        Self: Sized,
    {
        let mut r = Reader {
            b: doc,
            i: at,
            depth: 0,
        };
        let kept = keep_whole(model, &mut r, node, self)?;
        Ok((kept, r.i))
    }
}

/// The JSON response's sink: kept bytes are copied as they are.
impl<'a> Sink<'a> for Vec<u8> {
    type Mark = usize;

    fn mark(&self) -> usize {
        self.len()
    }

    fn rollback(&mut self, mark: usize) {
        self.truncate(mark);
    }

    fn open_object(&mut self) {
        self.push(b'{');
    }

    fn key(&mut self, first: bool, _: &'a str, raw: &'a [u8]) -> Walk<()> {
        if !first {
            self.push(b',');
        }
        self.extend_from_slice(raw);
        Ok(())
    }

    fn close_object(&mut self) {
        self.push(b'}');
    }

    fn open_array(&mut self) {
        self.push(b'[');
    }

    fn item(&mut self, first: bool) {
        if !first {
            self.push(b',');
        }
    }

    fn close_array(&mut self) {
        self.push(b']');
    }

    fn empty_object(&mut self) {
        self.extend_from_slice(b"{}");
    }

    fn value(&mut self, doc: &'a [u8], at: usize) -> Walk<usize> {
        let end = skip(doc, at)?;
        self.extend_from_slice(&doc[at..end]);
        Ok(end)
    }
}

/// `include` over `doc` (a JSON object), appended to `out`: `{}` when nothing is kept.
///
/// # Errors
/// [`Malformed`] when `doc` is not compact JSON.
pub fn include<'a>(program: &Program, doc: &'a [u8], out: &mut impl Sink<'a>) -> Walk<()> {
    let mut r = Reader {
        b: doc,
        i: 0,
        depth: 0,
    };
    let kept = match (program.start(), r.peek()?) {
        (Some(start), b'{') => include_object(program, &mut r, start, out)?,
        _ => {
            r.skip_value()?;
            false
        }
    };
    if !kept {
        out.empty_object();
    }
    r.end()
}

/// `exclude` over `doc` (a JSON object), appended to `out`; an emptied root is `{}`.
///
/// # Errors
/// [`Malformed`] when `doc` is not compact JSON.
pub fn exclude<'a>(program: &Program, doc: &'a [u8], out: &mut impl Sink<'a>) -> Walk<()> {
    let mut r = Reader {
        b: doc,
        i: 0,
        depth: 0,
    };
    match (program.start(), r.peek()?) {
        (Some(start), b'{') => {
            let mark = out.mark();
            if exclude_object(program, &mut r, start, out)? {
                out.rollback(mark);
                out.empty_object();
            }
        }
        _ => r.copy_value(out)?,
    }
    r.end()
}

/// Calls `entry` with the key text and the bytes `"key":value` of each
/// top-level entry of the object `doc`, in order.
///
/// # Errors
/// [`Malformed`] when `doc` is not a compact JSON object.
pub fn entries(doc: &[u8], mut entry: impl FnMut(&str, &[u8])) -> Walk<()> {
    let mut r = Reader {
        b: doc,
        i: 0,
        depth: 0,
    };
    if !r.open(b'{', b'}')? {
        loop {
            let start = r.i;
            let (key, _) = r.key()?;
            r.skip_value()?;
            entry(key, &doc[start..r.i]);
            if !r.next(b'}')? {
                break;
            }
        }
    }
    r.end()
}

/// The index just past the compact JSON value that starts at `doc[at]`.
///
/// # Errors
/// [`Malformed`] when no value starts there or it does not end.
pub fn skip(doc: &[u8], at: usize) -> Walk<usize> {
    let mut r = Reader {
        b: doc,
        i: at,
        depth: 0,
    };
    r.skip_value()?;
    Ok(r.i)
}

/// A cursor over compact JSON, and how many containers the walk is inside.
struct Reader<'a> {
    b: &'a [u8],
    i: usize,
    depth: usize,
}

impl<'a> Reader<'a> {
    /// A walk goes into a container: one level more, refused past
    /// [`MAX_DEPTH`]. Paired with [`Reader::leave`].
    fn enter(&mut self) -> Walk<()> {
        if self.depth >= MAX_DEPTH {
            return Err(Malformed);
        }
        self.depth += 1;
        Ok(())
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    fn peek(&self) -> Walk<u8> {
        self.b.get(self.i).copied().ok_or(Malformed)
    }

    fn expect(&mut self, byte: u8) -> Walk<()> {
        if self.peek()? != byte {
            return Err(Malformed);
        }
        self.i += 1;
        Ok(())
    }

    fn end(&self) -> Walk<()> {
        if self.i == self.b.len() {
            Ok(())
        } else {
            Err(Malformed)
        }
    }

    /// Past one string starting at the cursor; returns its text without quotes.
    fn string(&mut self) -> Walk<&'a [u8]> {
        self.expect(b'"')?;
        let start = self.i;
        loop {
            self.i = text_run(self.b, self.i);
            match self.b.get(self.i) {
                Some(b'"') => {
                    self.i += 1;
                    return Ok(&self.b[start..self.i - 1]);
                }
                Some(_) => self.i += 2,
                None => return Err(Malformed),
            }
        }
    }

    /// Past one value of any kind.
    fn skip_value(&mut self) -> Walk<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' | b'[' => {
                self.i = skip::container_end(self.b, self.i).ok_or(Malformed)?;
                Ok(())
            }
            _ => {
                while let Some(&c) = self.b.get(self.i) {
                    if matches!(c, b',' | b'}' | b']') {
                        break;
                    }
                    self.i += 1;
                }
                Ok(())
            }
        }
    }

    /// The value at the cursor, whole, into `out`.
    fn copy_value(&mut self, out: &mut impl Sink<'a>) -> Walk<()> {
        self.i = out.value(self.b, self.i)?;
        Ok(())
    }

    /// At `{`: past it; true when the object is empty (and then past `}` too).
    fn open(&mut self, byte: u8, close: u8) -> Walk<bool> {
        self.expect(byte)?;
        if self.peek()? == close {
            self.i += 1;
            return Ok(true);
        }
        Ok(false)
    }

    /// After an entry or item: true when another follows (past the `,`),
    /// false at the end of the container (past its closing byte).
    fn next(&mut self, close: u8) -> Walk<bool> {
        match self.peek()? {
            b',' => {
                self.i += 1;
                Ok(true)
            }
            c if c == close => {
                self.i += 1;
                Ok(false)
            }
            _ => Err(Malformed),
        }
    }

    /// One object key and its `:`: the raw key text and the bytes `"key":`.
    fn key(&mut self) -> Walk<(&'a str, &'a [u8])> {
        let start = self.i;
        let text = self.string()?;
        self.expect(b':')?;
        let key = std::str::from_utf8(text).map_err(|_| Malformed)?;
        Ok((key, &self.b[start..self.i]))
    }
}

fn is_container(c: u8) -> bool {
    c == b'{' || c == b'['
}

/// The kept keys of the object at the cursor, written as an object; false
/// (and nothing written) when none is kept.
fn include_object<'a, S: Sink<'a>>(
    program: &Program,
    r: &mut Reader<'a>,
    state: u32,
    out: &mut S,
) -> Walk<bool> {
    pruned_object(r, out, |key, r, out| match program.step(state, key) {
        Step::Skip => r.skip_value().map(|()| false),
        Step::End(node) => {
            let (kept, end) = out.keep_whole(model::get(), node as NodeId, r.b, r.i)?;
            r.i = end;
            Ok(kept)
        }
        Step::Descend(next) => include_value(program, r, next, out),
    })
}

/// Where selectors pass through: objects descend, arrays keep the items that
/// produced something and are always written; a scalar produces nothing.
fn include_value<'a, S: Sink<'a>>(
    program: &Program,
    r: &mut Reader<'a>,
    state: u32,
    out: &mut S,
) -> Walk<bool> {
    match r.peek()? {
        b'{' => include_object(program, r, state, out),
        b'[' => array(r, out, |r, out| include_value(program, r, state, out)),
        _ => r.skip_value().map(|()| false),
    }
}

/// Where a selector ends: the value whole, less the objects that are or
/// become empty at model positions and anywhere inside leaves; false when
/// the value itself is such an object (nothing written).
fn keep_whole<'a, S: Sink<'a>>(
    model: &Model,
    r: &mut Reader<'a>,
    node: NodeId,
    out: &mut S,
) -> Walk<bool> {
    let here = model.node(node);
    if here.is_leaf() {
        return prune_raw(r, out);
    }
    match r.peek()? {
        b'{' => pruned_object(r, out, |key, r, out| match here.child(key) {
            Some(child) if is_container(r.peek()?) => keep_whole(model, r, child, out),
            // Scalars, and keys outside the model, as they are.
            _ => r.copy_value(out).map(|()| true),
        }),
        b'[' => array(r, out, |r, out| keep_whole(model, r, node, out)),
        _ => r.copy_value(out).map(|()| true),
    }
}

/// [`keep_whole`] inside a leaf, where every key is raw.
fn prune_raw<'a, S: Sink<'a>>(r: &mut Reader<'a>, out: &mut S) -> Walk<bool> {
    match r.peek()? {
        b'{' => pruned_object(r, out, |_, r, out| prune_raw(r, out)),
        b'[' => array(r, out, prune_raw),
        _ => r.copy_value(out).map(|()| true),
    }
}

/// The object at the cursor, each entry written when `value` (called after
/// its key is written) says so; false, and nothing written, when no entry
/// is, so an object emptied this way is pruned.
fn pruned_object<'a, S: Sink<'a>>(
    r: &mut Reader<'a>,
    out: &mut S,
    mut value: impl FnMut(&'a str, &mut Reader<'a>, &mut S) -> Walk<bool>,
) -> Walk<bool> {
    let mark = out.mark();
    if r.open(b'{', b'}')? {
        return Ok(false);
    }
    r.enter()?;
    out.open_object();
    let mut written = 0;
    loop {
        let (key, key_bytes) = r.key()?;
        let before = out.mark();
        out.key(written == 0, key, key_bytes)?;
        if value(key, r, out)? {
            written += 1;
        } else {
            out.rollback(before);
        }
        if !r.next(b'}')? {
            break;
        }
    }
    r.leave();
    if written == 0 {
        out.rollback(mark);
        return Ok(false);
    }
    out.close_object();
    Ok(true)
}

/// An array whose items are written by `item` (false: the item is dropped);
/// the array itself is always written.
fn array<'a, S: Sink<'a>>(
    r: &mut Reader<'a>,
    out: &mut S,
    mut item: impl FnMut(&mut Reader<'a>, &mut S) -> Walk<bool>,
) -> Walk<bool> {
    out.open_array();
    if !r.open(b'[', b']')? {
        r.enter()?;
        let mut written = 0;
        loop {
            let before = out.mark();
            out.item(written == 0);
            if item(r, out)? {
                written += 1;
            } else {
                out.rollback(before);
            }
            if !r.next(b']')? {
                break;
            }
        }
        r.leave();
    }
    out.close_array();
    Ok(true)
}

/// The object at the cursor less every key where a selector ends; true when
/// it had keys and lost all of them (the caller drops what was written).
fn exclude_object<'a, S: Sink<'a>>(
    program: &Program,
    r: &mut Reader<'a>,
    state: u32,
    out: &mut S,
) -> Walk<bool> {
    if r.open(b'{', b'}')? {
        out.empty_object();
        return Ok(false);
    }
    r.enter()?;
    out.open_object();
    let mut written = 0;
    loop {
        let (key, key_bytes) = r.key()?;
        let before = out.mark();
        let kept = match program.step(state, key) {
            Step::Skip => {
                out.key(written == 0, key, key_bytes)?;
                r.copy_value(out).map(|()| true)?
            }
            Step::End(_) => r.skip_value().map(|()| false)?,
            Step::Descend(next) => {
                out.key(written == 0, key, key_bytes)?;
                match r.peek()? {
                    b'{' => !exclude_object(program, r, next, out)?,
                    b'[' => exclude_array(program, r, next, out).map(|()| true)?,
                    _ => r.copy_value(out).map(|()| true)?,
                }
            }
        };
        if kept {
            written += 1;
        } else {
            out.rollback(before);
        }
        if !r.next(b'}')? {
            break;
        }
    }
    r.leave();
    out.close_object();
    Ok(written == 0)
}

/// Items that are objects emptied by the exclusion are dropped; the array stays.
fn exclude_array<'a, S: Sink<'a>>(
    program: &Program,
    r: &mut Reader<'a>,
    state: u32,
    out: &mut S,
) -> Walk<()> {
    array(r, out, |r, out| match r.peek()? {
        b'{' => exclude_object(program, r, state, out).map(|emptied| !emptied),
        b'[' => exclude_array(program, r, state, out).map(|()| true),
        _ => r.copy_value(out).map(|()| true),
    })
    .map(drop)
}

#[cfg(test)]
mod tests;
