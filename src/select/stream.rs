//! The `include` and `exclude` walks of [`super::apply`], run over the
//! compact JSON bytes of a sanitized document instead of a value tree: the
//! automaton steps on each key as it is read, kept bytes are copied straight
//! to the output, and an object is opened lazily (its `{` is taken back when
//! nothing inside it was kept), so no pruned copy of the document is built.
//!
//! The input is what this service serialized: compact JSON, valid UTF-8,
//! object keys escaped by serde_json. Keys with an escape sequence can never
//! be model keys (those are `[A-Za-z][A-Za-z0-9_]*`), so they are looked up
//! as written and step to nothing, exactly as their unescaped text would.
//! Malformed input is reported as `None`, never a panic. The walks recurse
//! along the document, whose depth the normalizer bounds.

use super::compile::{Program, Step};
use crate::document::model::{self, Model, NodeId};

/// Bytes the walks could not read as compact JSON (a bug, never client input).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

type Walk<T> = Result<T, Malformed>;

/// `include` over `doc` (a JSON object), appended to `out`: `{}` when nothing is kept.
///
/// # Errors
/// [`Malformed`] when `doc` is not compact JSON.
pub fn include(program: &Program, doc: &[u8], out: &mut Vec<u8>) -> Walk<()> {
    let mut r = Reader { b: doc, i: 0 };
    let kept = match (program.start(), r.peek()?) {
        (Some(start), b'{') => include_object(program, &mut r, start, out)?,
        _ => {
            r.skip_value()?;
            false
        }
    };
    if !kept {
        out.extend_from_slice(b"{}");
    }
    r.end()
}

/// `exclude` over `doc` (a JSON object), appended to `out`; an emptied root is `{}`.
///
/// # Errors
/// [`Malformed`] when `doc` is not compact JSON.
pub fn exclude(program: &Program, doc: &[u8], out: &mut Vec<u8>) -> Walk<()> {
    let mut r = Reader { b: doc, i: 0 };
    match (program.start(), r.peek()?) {
        (Some(start), b'{') => {
            let mark = out.len();
            if exclude_object(program, &mut r, start, out)? {
                out.truncate(mark);
                out.extend_from_slice(b"{}");
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
    let mut r = Reader { b: doc, i: 0 };
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

/// A cursor over compact JSON.
struct Reader<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Reader<'a> {
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
            match self.b.get(self.i) {
                Some(b'"') => {
                    self.i += 1;
                    return Ok(&self.b[start..self.i - 1]);
                }
                Some(b'\\') => self.i += 2,
                Some(_) => self.i += 1,
                None => return Err(Malformed),
            }
        }
    }

    /// Past one value of any kind.
    fn skip_value(&mut self) -> Walk<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.peek()? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.i += 1;
                                return Ok(());
                            }
                        }
                        _ => {}
                    }
                    self.i += 1;
                }
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

    fn copy_value(&mut self, out: &mut Vec<u8>) -> Walk<()> {
        let start = self.i;
        self.skip_value()?;
        out.extend_from_slice(&self.b[start..self.i]);
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

/// Starts an entry: a comma when one was written before, then `"key":`.
fn entry(out: &mut Vec<u8>, written: usize, key: &[u8]) {
    if written > 0 {
        out.push(b',');
    }
    out.extend_from_slice(key);
}

/// The kept keys of the object at the cursor, written as an object; false
/// (and nothing written) when none is kept.
fn include_object(program: &Program, r: &mut Reader, state: u32, out: &mut Vec<u8>) -> Walk<bool> {
    pruned_object(r, out, |key, r, out| match program.step(state, key) {
        Step::Skip => r.skip_value().map(|()| false),
        Step::End(node) => keep_whole(model::get(), r, node as NodeId, out),
        Step::Descend(next) => include_value(program, r, next, out),
    })
}

/// Where selectors pass through: objects descend, arrays keep the items that
/// produced something and are always written; a scalar produces nothing.
fn include_value(program: &Program, r: &mut Reader, state: u32, out: &mut Vec<u8>) -> Walk<bool> {
    match r.peek()? {
        b'{' => include_object(program, r, state, out),
        b'[' => array(r, out, |r, out| include_value(program, r, state, out)),
        _ => r.skip_value().map(|()| false),
    }
}

/// Where a selector ends: the value whole, less the objects that are or
/// become empty at model positions and anywhere inside leaves; false when
/// the value itself is such an object (nothing written).
fn keep_whole(model: &Model, r: &mut Reader, node: NodeId, out: &mut Vec<u8>) -> Walk<bool> {
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
fn prune_raw(r: &mut Reader, out: &mut Vec<u8>) -> Walk<bool> {
    match r.peek()? {
        b'{' => pruned_object(r, out, |_, r, out| prune_raw(r, out)),
        b'[' => array(r, out, prune_raw),
        _ => r.copy_value(out).map(|()| true),
    }
}

/// The object at the cursor, each entry written when `value` (called after
/// its key is written) says so; false, and nothing written, when no entry
/// is, so an object emptied this way is pruned.
fn pruned_object(
    r: &mut Reader,
    out: &mut Vec<u8>,
    mut value: impl FnMut(&str, &mut Reader, &mut Vec<u8>) -> Walk<bool>,
) -> Walk<bool> {
    let mark = out.len();
    if r.open(b'{', b'}')? {
        return Ok(false);
    }
    out.push(b'{');
    let mut written = 0;
    loop {
        let (key, key_bytes) = r.key()?;
        let before = out.len();
        entry(out, written, key_bytes);
        if value(key, r, out)? {
            written += 1;
        } else {
            out.truncate(before);
        }
        if !r.next(b'}')? {
            break;
        }
    }
    if written == 0 {
        out.truncate(mark);
        return Ok(false);
    }
    out.push(b'}');
    Ok(true)
}

/// An array whose items are written by `item` (false: the item is dropped);
/// the array itself is always written.
fn array(
    r: &mut Reader,
    out: &mut Vec<u8>,
    mut item: impl FnMut(&mut Reader, &mut Vec<u8>) -> Walk<bool>,
) -> Walk<bool> {
    out.push(b'[');
    if !r.open(b'[', b']')? {
        let mut written = 0;
        loop {
            let before = out.len();
            if written > 0 {
                out.push(b',');
            }
            if item(r, out)? {
                written += 1;
            } else {
                out.truncate(before);
            }
            if !r.next(b']')? {
                break;
            }
        }
    }
    out.push(b']');
    Ok(true)
}

/// The object at the cursor less every key where a selector ends; true when
/// it had keys and lost all of them (the caller drops what was written).
fn exclude_object(program: &Program, r: &mut Reader, state: u32, out: &mut Vec<u8>) -> Walk<bool> {
    if r.open(b'{', b'}')? {
        out.extend_from_slice(b"{}");
        return Ok(false);
    }
    out.push(b'{');
    let mut written = 0;
    loop {
        let (key, key_bytes) = r.key()?;
        let before = out.len();
        let kept = match program.step(state, key) {
            Step::Skip => {
                entry(out, written, key_bytes);
                r.copy_value(out).map(|()| true)?
            }
            Step::End(_) => r.skip_value().map(|()| false)?,
            Step::Descend(next) => {
                entry(out, written, key_bytes);
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
            out.truncate(before);
        }
        if !r.next(b'}')? {
            break;
        }
    }
    out.push(b'}');
    Ok(written == 0)
}

/// Items that are objects emptied by the exclusion are dropped; the array stays.
fn exclude_array(program: &Program, r: &mut Reader, state: u32, out: &mut Vec<u8>) -> Walk<()> {
    array(r, out, |r, out| match r.peek()? {
        b'{' => exclude_object(program, r, state, out).map(|emptied| !emptied),
        b'[' => exclude_array(program, r, state, out).map(|()| true),
        _ => r.copy_value(out).map(|()| true),
    })
    .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::select::apply;
    use crate::select::compile::compile;
    use crate::select::parse::parse_list;
    use serde_json::{json, Value};

    fn program(list: &str) -> Program {
        compile(&parse_list(list).expect("parses")).expect("compiles")
    }

    fn doc() -> Value {
        json!({
            "version": 1,
            "board": {
                "id": "b", "title": "a\"}b", "location": {"position": {}}, "icon": {},
                "children": [
                    {"id": "n", "location": {}, "children": [],
                     "content": {"k": {}, "v": [[{}], {"e": {}}, 1], "t\\\"": {"x": "]"}}},
                    {"id": "t", "table": {"rows": [[{}], [{"value": 1}, {}]]}, "children": []}
                ]
            }
        })
    }

    #[test]
    fn the_byte_walks_match_the_value_walks() {
        let lists = [
            "board",
            "**",
            "board.location",
            "board.icon,version",
            "board.children.table.rows",
            "board.children.table.rows.value",
            "board.children.content",
            "board.children.location",
            "board.**.id,board.**.title",
            "version",
            "board.location.position",
            "board.children.*",
            "board.id,board.location,board.icon,board.children,version",
        ];
        let bytes = serde_json::to_vec(&doc()).unwrap();
        for list in lists {
            let p = program(list);
            let mut out = Vec::new();
            include(&p, &bytes, &mut out).expect("reads");
            let want = serde_json::to_vec(&apply::include(&p, &doc())).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&out),
                String::from_utf8_lossy(&want),
                "include {list}"
            );
            let mut out = Vec::new();
            exclude(&p, &bytes, &mut out).expect("reads");
            let mut value = doc();
            apply::exclude(&p, &mut value);
            let want = serde_json::to_vec(&value).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&out),
                String::from_utf8_lossy(&want),
                "exclude {list}"
            );
        }
    }

    #[test]
    fn malformed_bytes_are_an_error_not_a_panic() {
        let p = program("board");
        for bad in [
            "",
            "{",
            "{\"board\"",
            "{\"board\":{\"id\":\"x}",
            "{}x",
            "[",
            "{\"a\":1,}",
        ] {
            let mut out = Vec::new();
            assert!(
                include(&p, bad.as_bytes(), &mut out).is_err()
                    | exclude(&p, bad.as_bytes(), &mut out).is_err(),
                "{bad}"
            );
        }
    }
}
