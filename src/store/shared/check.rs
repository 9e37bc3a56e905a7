//! What a document read back from the fleet tier must be before a node
//! uses it. The tier is shared with whatever else can write to its key
//! prefix, so a value is not trusted because its MAC checks out: it is read
//! the way a provider answer is, with limits, before any walk touches it.
//!
//! [`document`] reads the document's bytes without recursion (one pass for
//! UTF-8 and control bytes, one for the grammar) and accepts only what this
//! service writes:
//!
//! - compact JSON (no whitespace between tokens), valid UTF-8, strings with
//!   valid escapes and no raw control characters, numbers that serde_json
//!   reads as finite, one object at the top;
//! - at most [`MAX_DEPTH`] nested containers, the walks' own limit, and at
//!   most `max_nodes` board nodes (the root and every object in a
//!   `children` array);
//! - no sensitive key ([`is_sensitive`]) anywhere;
//! - `source.boardId` and `board.id` equal to the board the key is for,
//!   and no member of the document itself repeated (readers differ on
//!   which of two `board` members they take);
//! - as complete as the header says: its nested boards not loaded counted
//!   again here.
//!
//! Whatever it accepts, every view and selection renders as JSON and as
//! Markdown (the `tier_value` fuzz target holds it to that).
//!
//! The pass also notes where each top-level entry of the document lies,
//! so that the full view's ETag, which hashes those entries, does not need
//! a second walk over the document ([`crate::pipeline::LoadedBoard::with_entries`]).
//!
//! Its cost is most of what a shared hit of a large board adds, so it is
//! built for speed without giving up any rule: the containers whose
//! members it does not read (rich text, positions, timestamps) go through
//! a loop that keeps a flag per level rather than a frame; a key is
//! compared with the sensitive names only when its length and end bytes
//! have the shape of one, and then only with the names of its length;
//! strings are scanned sixteen bytes at a time with the walks' own scan
//! (`select::stream::text_run`), once control bytes are refused.

use super::format::Invalid;
use crate::document::sanitize::is_sensitive;
use crate::document::Completeness;
use crate::select::stream::{text_run, MAX_DEPTH};
use std::ops::Range;

mod sensitive;

use sensitive::sensitive_key;

/// What a container is, for the few members the check reads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Other,
    /// The document itself.
    Root,
    /// `source` at the top.
    Source,
    /// A board node: `board`, or an object in a `children` array.
    Node {
        root: bool,
    },
    /// A `children` array.
    Children,
}

/// An open container.
#[derive(Clone, Copy)]
struct Frame {
    array: bool,
    role: Role,
    /// Of a node: `type` is `BOARD`, `childrenLoaded` is `false`, and the
    /// `unloadedReason` says a retry may load it (or is absent).
    board: bool,
    unloaded: bool,
    lasting: bool,
}

/// A scalar the check keeps: which member it is the value of.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wanted {
    None,
    SourceBoardId,
    BoardId,
    Type,
    ChildrenLoaded,
    Reason,
}

/// What the check found in a document it accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// The nested boards not loaded, as counted here.
    pub completeness: Completeness,
    /// The byte ranges of the top-level entries (`"key":value`), in order.
    pub entries: Vec<Range<usize>>,
}

/// Checks `json`, a document read from the tier for `board_id`, against
/// what this service writes (see the module doc), and returns its
/// completeness as counted here and where its top-level entries lie.
///
/// # Errors
/// [`Invalid`] naming the first thing that does not check out.
pub fn document(json: &[u8], board_id: &str, max_nodes: usize) -> Result<Checked, Invalid> {
    std::str::from_utf8(json).map_err(|_| Invalid("not UTF-8"))?;
    // Compact JSON has no byte below 0x20 anywhere: not between tokens (no
    // whitespace) and not in a string (control characters are escaped).
    // One pass over the whole document, which the compiler vectorizes,
    // spares the string scans that test.
    if json.iter().fold(false, |seen, &c| seen | (c < 0x20)) {
        return Err(MALFORMED);
    }
    let mut scan = Scan {
        b: json,
        i: 0,
        stack: Vec::with_capacity(MAX_DEPTH),
        nodes: 0,
        max_nodes,
        source_board: None,
        board: None,
        completeness: Completeness::default(),
        entries: Vec::new(),
        entry_start: 0,
        top_keys: Vec::new(),
        arrays: [false; MAX_DEPTH + 1],
    };
    if json.first() != Some(&b'{') {
        return Err(Invalid("not an object"));
    }
    scan.run()?;
    if scan.source_board != Some(board_id.as_bytes()) || scan.board != Some(board_id.as_bytes()) {
        return Err(Invalid("another board"));
    }
    Ok(Checked {
        completeness: scan.completeness,
        entries: scan.entries,
    })
}

struct Scan<'a> {
    b: &'a [u8],
    i: usize,
    stack: Vec<Frame>,
    nodes: usize,
    max_nodes: usize,
    source_board: Option<&'a [u8]>,
    board: Option<&'a [u8]>,
    completeness: Completeness,
    /// The top-level entries read so far, and where the current one began.
    entries: Vec<Range<usize>>,
    entry_start: usize,
    /// The document's own member names so far (a handful).
    top_keys: Vec<&'a [u8]>,
    /// Of the containers [`Scan::other`] has open, which are arrays.
    arrays: [bool; MAX_DEPTH + 1],
}

const MALFORMED: Invalid = Invalid("not compact JSON");

impl<'a> Scan<'a> {
    fn peek(&self) -> Result<u8, Invalid> {
        self.b.get(self.i).copied().ok_or(MALFORMED)
    }

    /// The whole document: values, keys and the punctuation between them,
    /// with an explicit stack of open containers.
    fn run(&mut self) -> Result<(), Invalid> {
        // The role of the value about to be read, and which scalar it is.
        let mut role = Role::Root;
        let mut wanted = Wanted::None;
        loop {
            // A value.
            match self.peek()? {
                // Rich text, positions, timestamps: most of a document,
                // read by the lighter loop.
                open @ (b'{' | b'[') if container_role(open == b'[', role) == Role::Other => {
                    self.other()?;
                }
                open @ (b'{' | b'[') => {
                    self.open(open == b'[', role)?;
                    self.i += 1;
                    let close = if open == b'[' { b']' } else { b'}' };
                    if self.peek()? != close {
                        if open == b'[' {
                            role = self.item_role()?;
                            wanted = Wanted::None;
                        } else {
                            (role, wanted) = self.key()?;
                        }
                        continue;
                    }
                    self.i += 1;
                    self.close();
                }
                b'"' => {
                    let start = self.i + 1;
                    self.i = string_end(self.b, start)?.0;
                    self.keep(wanted, &self.b[start..self.i - 1])?;
                }
                b't' => self.i = literal(self.b, self.i, b"true")?,
                b'f' => {
                    self.i = literal(self.b, self.i, b"false")?;
                    if wanted == Wanted::ChildrenLoaded {
                        if let Some(top) = self.stack.last_mut() {
                            top.unloaded = true;
                        }
                    }
                }
                b'n' => self.i = literal(self.b, self.i, b"null")?,
                b'-' | b'0'..=b'9' => self.i = number(self.b, self.i)?,
                _ => return Err(MALFORMED),
            }
            // After a value: the next entry or item, or the end of
            // containers.
            loop {
                if self.stack.len() == 1 {
                    // A value of the document itself ends here.
                    self.entries.push(self.entry_start..self.i);
                }
                let Some(top) = self.stack.last().copied() else {
                    return if self.i == self.b.len() {
                        Ok(())
                    } else {
                        Err(MALFORMED)
                    };
                };
                match (self.peek()?, top.array) {
                    (b',', false) => {
                        self.i += 1;
                        (role, wanted) = self.key()?;
                        break;
                    }
                    (b',', true) => {
                        self.i += 1;
                        role = self.item_role()?;
                        wanted = Wanted::None;
                        break;
                    }
                    (b'}', false) | (b']', true) => {
                        self.i += 1;
                        self.close();
                    }
                    _ => return Err(MALFORMED),
                }
            }
        }
    }

    /// A container starts: one level deeper, refused past [`MAX_DEPTH`];
    /// a node counts toward `max_nodes`.
    fn open(&mut self, array: bool, role: Role) -> Result<(), Invalid> {
        if self.stack.len() >= MAX_DEPTH {
            return Err(Invalid("nested too deep"));
        }
        let role = container_role(array, role);
        if let Role::Node { .. } = role {
            self.nodes += 1;
            if self.nodes > self.max_nodes {
                return Err(Invalid("too many nodes"));
            }
        }
        self.stack.push(Frame {
            array,
            role,
            board: false,
            unloaded: false,
            lasting: false,
        });
        Ok(())
    }

    /// A container whose members the check does not read (its role is
    /// [`Role::Other`]), from its opening bracket at the cursor to past its
    /// closing one: the grammar, the depth and the keys are checked as
    /// everywhere else, with a flag per level for arrays and objects
    /// instead of a frame. Nothing in it is a board node: only `children`
    /// of a node holds nodes.
    fn other(&mut self) -> Result<(), Invalid> {
        let b = self.b;
        let room = MAX_DEPTH - self.stack.len();
        let mut i = self.i;
        // `arrays[d]`: the container `d` levels in is an array. A byte per
        // level, kept in the scan so as not to be cleared on every call:
        // each level is written when it opens, before it is read.
        let arrays = &mut self.arrays;
        let mut depth = 0;
        loop {
            // A value at `i`.
            match b.get(i) {
                Some(&open @ (b'{' | b'[')) => {
                    depth += 1;
                    if depth > room {
                        return Err(Invalid("nested too deep"));
                    }
                    i += 1;
                    let array = open == b'[';
                    let close = if array { b']' } else { b'}' };
                    if b.get(i) == Some(&close) {
                        i += 1;
                        depth -= 1;
                    } else {
                        arrays[depth] = array;
                        if !array {
                            i = member_key(b, i)?;
                        }
                        continue;
                    }
                }
                Some(b'"') => i = string_end(b, i + 1)?.0,
                Some(b't') => i = literal(b, i, b"true")?,
                Some(b'f') => i = literal(b, i, b"false")?,
                Some(b'n') => i = literal(b, i, b"null")?,
                Some(b'-' | b'0'..=b'9') => i = number(b, i)?,
                _ => return Err(MALFORMED),
            }
            // After a value: the next member or item, or the end of
            // containers.
            loop {
                if depth == 0 {
                    self.i = i;
                    return Ok(());
                }
                let array = arrays[depth];
                match (b.get(i), array) {
                    (Some(b','), false) => {
                        i = member_key(b, i + 1)?;
                        break;
                    }
                    (Some(b','), true) => {
                        i += 1;
                        break;
                    }
                    (Some(b'}'), false) | (Some(b']'), true) => {
                        i += 1;
                        depth -= 1;
                    }
                    _ => return Err(MALFORMED),
                }
            }
        }
    }

    /// A container ends; a nested board not loaded is counted.
    fn close(&mut self) {
        if let Some(frame) = self.stack.pop() {
            if frame.role == (Role::Node { root: false }) && frame.board && frame.unloaded {
                self.completeness.unloaded = self.completeness.unloaded.saturating_add(1);
                self.completeness.transient |= !frame.lasting;
            }
        }
    }

    /// The role of an item of the innermost (array) container.
    fn item_role(&self) -> Result<Role, Invalid> {
        let top = self.stack.last().ok_or(MALFORMED)?;
        Ok(match top.role {
            Role::Children => Role::Node { root: false },
            _ => Role::Other,
        })
    }

    /// One key of the innermost object and its `:`: the role of its value
    /// and which scalar it is, if the check keeps it.
    fn key(&mut self) -> Result<(Role, Wanted), Invalid> {
        if self.stack.len() == 1 {
            self.entry_start = self.i;
        }
        let start = self.i + 1;
        self.i = member_key(self.b, self.i)?;
        let b: &'a [u8] = self.b;
        let key = &b[start..self.i - 2];
        if self.stack.len() == 1 {
            if self.top_keys.contains(&key) {
                return Err(Invalid("a repeated member of the document"));
            }
            self.top_keys.push(key);
        }
        let top = self.stack.last().map_or(Role::Other, |f| f.role);
        if top == Role::Other {
            // Most objects of a document (rich text, positions, ...).
            return Ok((Role::Other, Wanted::None));
        }
        Ok(match (top, key) {
            (Role::Root, b"source") => (Role::Source, Wanted::None),
            (Role::Root, b"board") => (Role::Node { root: true }, Wanted::None),
            (Role::Source, b"boardId") => (Role::Other, Wanted::SourceBoardId),
            (Role::Node { root: true }, b"id") => (Role::Other, Wanted::BoardId),
            (Role::Node { .. }, b"children") => (Role::Children, Wanted::None),
            (Role::Node { .. }, b"type") => (Role::Other, Wanted::Type),
            (Role::Node { .. }, b"childrenLoaded") => (Role::Other, Wanted::ChildrenLoaded),
            (Role::Node { .. }, b"unloadedReason") => (Role::Other, Wanted::Reason),
            _ => (Role::Other, Wanted::None),
        })
    }

    /// A string value the check keeps (its text as written). The board ids
    /// are read once: a repeated member is refused, since readers differ on
    /// which one they take.
    fn keep(&mut self, wanted: Wanted, text: &'a [u8]) -> Result<(), Invalid> {
        let once = |slot: &mut Option<&'a [u8]>| match slot.replace(text) {
            Some(_) => Err(Invalid("a repeated board id")),
            None => Ok(()),
        };
        match wanted {
            Wanted::SourceBoardId => once(&mut self.source_board)?,
            Wanted::BoardId => once(&mut self.board)?,
            Wanted::Type | Wanted::Reason => {
                if let Some(top) = self.stack.last_mut() {
                    if wanted == Wanted::Type {
                        top.board = text == b"BOARD";
                    } else {
                        top.lasting = !matches!(text, b"DEADLINE" | b"UPSTREAM_ERROR");
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// The role of a container opened as the value whose role is `role`.
fn container_role(array: bool, role: Role) -> Role {
    match (array, role) {
        (false, Role::Node { .. } | Role::Root | Role::Source) => role,
        (true, Role::Children) => role,
        _ => Role::Other,
    }
}

/// A member's key at `i` and its `:`, refused when it names a sensitive
/// field; where its value starts.
#[inline(always)]
fn member_key(b: &[u8], i: usize) -> Result<usize, Invalid> {
    if b.get(i) != Some(&b'"') {
        return Err(MALFORMED);
    }
    let (end, escaped) = string_end(b, i + 1)?;
    if b.get(end) != Some(&b':') {
        return Err(MALFORMED);
    }
    let sensitive = if escaped {
        // serde_json escapes only quotes, backslashes and control
        // characters; read the key as it would.
        serde_json::from_slice::<String>(&b[i..end]).map_or(true, |k| is_sensitive(&k))
    } else {
        sensitive_key(&b[i + 1..end - 1])
    };
    if sensitive {
        return Err(Invalid("a sensitive field"));
    }
    Ok(end + 1)
}

/// Past a string whose text starts at `i` (after its opening quote): where
/// it ends (past the closing quote), and whether it holds escapes.
#[inline(always)]
fn string_end(b: &[u8], mut i: usize) -> Result<(usize, bool), Invalid> {
    let mut escaped = false;
    loop {
        i = text_run(b, i);
        match b.get(i) {
            Some(b'"') => return Ok((i + 1, escaped)),
            Some(b'\\') => {
                escaped = true;
                i = escape(b, i)?;
            }
            _ => return Err(MALFORMED),
        }
    }
}

/// Past one escape at `i` (`\` and what follows): a `\u` escape of a
/// surrogate must be a whole pair, as serde_json requires.
fn escape(b: &[u8], i: usize) -> Result<usize, Invalid> {
    match b.get(i + 1) {
        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(i + 2),
        Some(b'u') => {
            let unit = hex4(b, i + 2)?;
            let i = i + 6;
            match unit {
                0xD800..=0xDBFF => {
                    if b.get(i..i + 2) != Some(b"\\u") {
                        return Err(MALFORMED);
                    }
                    let low = hex4(b, i + 2)?;
                    if !(0xDC00..=0xDFFF).contains(&low) {
                        return Err(MALFORMED);
                    }
                    Ok(i + 6)
                }
                0xDC00..=0xDFFF => Err(MALFORMED),
                _ => Ok(i),
            }
        }
        _ => Err(MALFORMED),
    }
}

fn hex4(b: &[u8], at: usize) -> Result<u32, Invalid> {
    let digits = b.get(at..at + 4).ok_or(MALFORMED)?;
    let mut unit = 0;
    for &d in digits {
        let v = (d as char).to_digit(16).ok_or(MALFORMED)?;
        unit = unit * 16 + v;
    }
    Ok(unit)
}

/// Past `word` at `i`.
fn literal(b: &[u8], i: usize, word: &[u8]) -> Result<usize, Invalid> {
    if b.get(i..i + word.len()) != Some(word) {
        return Err(MALFORMED);
    }
    Ok(i + word.len())
}

/// Past a number at `start`: JSON's grammar, and finite as serde_json
/// reads it.
fn number(b: &[u8], start: usize) -> Result<usize, Invalid> {
    let mut i = start;
    let digits = |i: &mut usize| {
        let from = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - from
    };
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    let int_start = i;
    let whole = digits(&mut i);
    if whole == 0 || (whole > 1 && b[int_start] == b'0') {
        return Err(MALFORMED);
    }
    let mut plain = whole <= 18;
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return Err(MALFORMED);
        }
        plain = false;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return Err(MALFORMED);
        }
        plain = false;
    }
    if !plain {
        // ASCII by the grammar above.
        let text = std::str::from_utf8(&b[start..i]).map_err(|_| MALFORMED)?;
        if !text.parse::<f64>().is_ok_and(f64::is_finite) {
            return Err(Invalid("a number out of range"));
        }
    }
    Ok(i)
}

#[cfg(test)]
mod tests;
