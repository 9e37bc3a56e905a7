//! What a document read back from the fleet tier must be before a node
//! uses it. The tier is shared with whatever else can write to its key
//! prefix, so a value is not trusted because its MAC checks out: it is read
//! the way a provider answer is, with limits, before any walk touches it.
//!
//! [`document`] reads the document's bytes once, without recursion, and
//! accepts only what this service writes:
//!
//! - compact JSON (no whitespace between tokens), valid UTF-8, strings with
//!   valid escapes and no raw control characters, numbers that serde_json
//!   reads as finite, one object at the top;
//! - at most [`MAX_DEPTH`] nested containers, the walks' own limit, and at
//!   most `max_nodes` board nodes (the root and every object in a
//!   `children` array);
//! - no sensitive key ([`is_sensitive`]) anywhere;
//! - `source.boardId` and `board.id` equal to the board the key is for;
//! - as complete as the header says: its nested boards not loaded counted
//!   again here.
//!
//! Whatever it accepts, every view and selection renders as JSON and as
//! Markdown (the `tier_value` fuzz target holds it to that).
//!
//! The pass also notes where each top-level entry of the document lies,
//! so that the full view's ETag, which hashes those entries, does not need
//! a second walk over the document ([`crate::pipeline::LoadedBoard::with_entries`]).

use super::format::Invalid;
use crate::document::sanitize::{is_sensitive, SENSITIVE_KEYS};
use crate::document::Completeness;
use crate::select::stream::{text_run, MAX_DEPTH};
use std::ops::Range;

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
}

/// For each key length below 32, a bit for the first letter and one for
/// the last (`a` to `z`, ASCII case ignored) of each sensitive key name of
/// that length: an ASCII key whose two bits are not both set cannot be
/// sensitive, which passes nearly every key of a document without
/// comparing it to the names (all are ASCII letters, shorter than 32).
const SENSITIVE_ENDS: [(u32, u32); 32] = {
    let mut table = [(0u32, 0u32); 32];
    let mut i = 0;
    while i < SENSITIVE_KEYS.len() {
        let name = SENSITIVE_KEYS[i].as_bytes();
        let (first, last) = table[name.len()];
        table[name.len()] = (
            first | letter_bit(name[0]),
            last | letter_bit(name[name.len() - 1]),
        );
        i += 1;
    }
    table
};

/// The bit of an ASCII letter in a [`SENSITIVE_ENDS`] entry; 0 for any
/// other byte.
const fn letter_bit(byte: u8) -> u32 {
    match byte | 0x20 {
        lower @ b'a'..=b'z' => 1 << (lower - b'a'),
        _ => 0,
    }
}

/// Whether the key whose text (as written, without escapes) is `key`
/// names a sensitive field, as [`is_sensitive`] reads it.
fn sensitive_key(key: &[u8]) -> bool {
    match key.first() {
        None => false,
        Some(&first) if key.is_ascii() => {
            let last = key[key.len() - 1];
            SENSITIVE_ENDS
                .get(key.len())
                .is_some_and(|&(firsts, lasts)| {
                    firsts & letter_bit(first) != 0 && lasts & letter_bit(last) != 0
                })
                && SENSITIVE_KEYS
                    .iter()
                    .any(|name| name.as_bytes().eq_ignore_ascii_case(key))
        }
        // Other characters may fold to ASCII letters: the full comparison.
        Some(_) => std::str::from_utf8(key).map_or(true, is_sensitive),
    }
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
                    self.string()?;
                    self.keep(wanted, &self.b[start..self.i - 1])?;
                }
                b't' => self.literal(b"true")?,
                b'f' => {
                    self.literal(b"false")?;
                    if wanted == Wanted::ChildrenLoaded {
                        if let Some(top) = self.stack.last_mut() {
                            top.unloaded = true;
                        }
                    }
                }
                b'n' => self.literal(b"null")?,
                b'-' | b'0'..=b'9' => self.number()?,
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
        let role = match (array, role) {
            (false, Role::Node { .. } | Role::Root | Role::Source) => role,
            (true, Role::Children) => role,
            _ => Role::Other,
        };
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
        if self.peek()? != b'"' {
            return Err(MALFORMED);
        }
        if self.stack.len() == 1 {
            self.entry_start = self.i;
        }
        let start = self.i + 1;
        let escaped = self.string()?;
        let key = &self.b[start..self.i - 1];
        if self.peek()? != b':' {
            return Err(MALFORMED);
        }
        self.i += 1;
        let sensitive = if escaped {
            // serde_json escapes only quotes, backslashes and control
            // characters; read the key as it would.
            let quoted = &self.b[start - 1..self.i - 1];
            serde_json::from_slice::<String>(quoted).map_or(true, |k| is_sensitive(&k))
        } else {
            sensitive_key(key)
        };
        if sensitive {
            return Err(Invalid("a sensitive field"));
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

    /// Past a string at the cursor; whether it holds escapes.
    fn string(&mut self) -> Result<bool, Invalid> {
        self.i += 1; // the opening quote
        let mut escaped = false;
        loop {
            self.i = text_run(self.b, self.i, true);
            match self.b.get(self.i) {
                Some(b'"') => {
                    self.i += 1;
                    return Ok(escaped);
                }
                Some(b'\\') => {
                    escaped = true;
                    self.escape()?;
                }
                _ => return Err(MALFORMED),
            }
        }
    }

    /// Past one escape at the cursor (`\` and what follows): a `\u` escape
    /// of a surrogate must be a whole pair, as serde_json requires.
    fn escape(&mut self) -> Result<(), Invalid> {
        match self.b.get(self.i + 1) {
            Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {
                self.i += 2;
                Ok(())
            }
            Some(b'u') => {
                let unit = self.hex4(self.i + 2)?;
                self.i += 6;
                match unit {
                    0xD800..=0xDBFF => {
                        if self.b.get(self.i..self.i + 2) != Some(b"\\u") {
                            return Err(MALFORMED);
                        }
                        let low = self.hex4(self.i + 2)?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return Err(MALFORMED);
                        }
                        self.i += 6;
                        Ok(())
                    }
                    0xDC00..=0xDFFF => Err(MALFORMED),
                    _ => Ok(()),
                }
            }
            _ => Err(MALFORMED),
        }
    }

    fn hex4(&self, at: usize) -> Result<u32, Invalid> {
        let digits = self.b.get(at..at + 4).ok_or(MALFORMED)?;
        let mut unit = 0;
        for &d in digits {
            let v = (d as char).to_digit(16).ok_or(MALFORMED)?;
            unit = unit * 16 + v;
        }
        Ok(unit)
    }

    fn literal(&mut self, word: &[u8]) -> Result<(), Invalid> {
        if self.b.get(self.i..self.i + word.len()) != Some(word) {
            return Err(MALFORMED);
        }
        self.i += word.len();
        Ok(())
    }

    /// Past a number: JSON's grammar, and finite as serde_json reads it.
    fn number(&mut self) -> Result<(), Invalid> {
        let start = self.i;
        let digits = |s: &mut Self| {
            let from = s.i;
            while s.b.get(s.i).is_some_and(u8::is_ascii_digit) {
                s.i += 1;
            }
            s.i - from
        };
        if self.b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        let int_start = self.i;
        let whole = digits(self);
        if whole == 0 || (whole > 1 && self.b[int_start] == b'0') {
            return Err(MALFORMED);
        }
        let mut plain = whole <= 18;
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            if digits(self) == 0 {
                return Err(MALFORMED);
            }
            plain = false;
        }
        if matches!(self.b.get(self.i), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.b.get(self.i), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if digits(self) == 0 {
                return Err(MALFORMED);
            }
            plain = false;
        }
        if !plain {
            // ASCII by the grammar above.
            let text = std::str::from_utf8(&self.b[start..self.i]).map_err(|_| MALFORMED)?;
            if !text.parse::<f64>().is_ok_and(f64::is_finite) {
                return Err(Invalid("a number out of range"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
