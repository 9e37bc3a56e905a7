//! An answer read while its body is still arriving.
//!
//! A board's answer is megabytes, and it takes milliseconds to come in (on
//! loopback the bench board's 5.3 MB take about 3 ms; from a real provider,
//! far longer). Read whole, its reading starts when its last byte has come.
//! [`AnswerStream`] is handed the body in parts as they come and reads what
//! it has so far, so that little is left to read when the last part comes.
//!
//! It reads in units it can take back: the answer's opening brace, one
//! top-level member, one element of `elements`, the brace that closes
//! either. A unit that runs past what has come (or ends exactly there,
//! where a number may go on) is not taken: the cursor goes back to the
//! unit's start, and the unit is read again once the body has grown by at
//! least as much as was tried, so that a large unit is not read over and
//! over (what is read again stays below twice the body).
//!
//! The texts an answer keeps are slices of the whole body, so they are
//! made when it is complete: each element's `content` and each entry of
//! `canvasOrder` is noted as where it lies, and of `comments` (small beside
//! `elements`) only where it lies, checked as any skipped value is, to be
//! read at the end by the reader the whole-body path uses.
//!
//! What it answers is exactly what [`Answer::parse_bytes`] answers for the
//! whole body. The units are read by the same functions, with the same
//! nesting levels; and unless the stream read the answer to its closing
//! brace with only whitespace after it, the whole body is read by
//! [`Answer::parse_bytes`] for the verdict (a body that is not an object,
//! not UTF-8 or not JSON is rare, and is read twice).

use super::scan::{Bad, Scan};
use super::{
    insert_element, read_canvas_entries, read_comments, read_element, shrunk, Answer, AnswerError,
    CanvasOrder, Element, Elements, IdHasher, JsonText, TOP_LEVELS,
};
use crate::provider::head::SharedStrs;
use bytes::{Bytes, BytesMut};
use serde_json::Value;
use std::marker::PhantomData;
use std::ops::Range;

/// An answer body being read as it arrives: [`AnswerStream::read_more`]
/// with each part, then [`AnswerStream::finish`] with the last.
#[derive(Default)]
pub struct AnswerStream {
    /// The body so far.
    body: BytesMut,
    /// Up to where the body is read: the end of the last unit taken,
    /// always a char boundary.
    read: usize,
    /// Up to where the body is known to be UTF-8: each read checks the
    /// text from `read` to the end of what has come, so the pieces checked
    /// join up (`read` lies on a char boundary of the last one), and the
    /// end does not check the whole body again.
    checked: usize,
    stage: Stage,
    /// What is read so far; element contents, `comments` and
    /// `canvasOrder` are filled in at the end.
    answer: Answer,
    /// Where each element's content lies in the body, by the element's
    /// index in `answer.elements`.
    contents: Vec<Option<Range<usize>>>,
    /// Where the value of the last `comments` member lies.
    comments: Option<Range<usize>>,
    /// The last `canvasOrder` member, when it is an object: its entries
    /// with empty texts, and where each entry's text lies, by index.
    canvas_order: Option<(CanvasOrder, Vec<Range<usize>>)>,
    /// The parent and root board ids read so far, each held once.
    parents: SharedStrs<IdHasher>,
    /// The body's length before which no unit is tried again.
    next_try: usize,
    /// Nothing more is read as it arrives: the whole body is read at the end.
    whole: bool,
    /// Bytes looked at by the reads as the body came (tests: the bound on
    /// reading a unit again).
    #[cfg(test)]
    scanned: usize,
}

/// Where the reading is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Stage {
    /// Before the answer's `{`.
    #[default]
    Open,
    /// Before a top-level member (or the closing `}`); `first` until one is read.
    Members { first: bool },
    /// Inside `elements`, before an element (or its closing `}`).
    Elements { first: bool },
    /// After the answer's closing `}`.
    Closed,
}

/// How a unit went.
enum Unit {
    Taken,
    /// The body cannot be read as it comes (it is not an object).
    Whole,
}

impl AnswerStream {
    /// A stream with no body yet.
    pub fn new() -> AnswerStream {
        AnswerStream::default()
    }

    /// Appends `more` to the body and reads on as far as it can. Parts
    /// split off one buffer, in order, are joined without a copy.
    pub fn read_more(&mut self, more: BytesMut) {
        self.body.unsplit(more);
        self.read_on(false);
    }

    /// Appends `last`, the end of the body, and reads what is left: the
    /// body, and the answer as [`Answer::parse_bytes`] reads it.
    pub fn finish(mut self, last: BytesMut) -> (Bytes, Result<Answer, AnswerError>) {
        self.body.unsplit(last);
        self.read_on(true);
        let body = std::mem::take(&mut self.body).freeze();
        let read = if !self.whole && self.stage == Stage::Closed {
            self.assemble(&body)
        } else {
            None
        };
        let answer = read.map_or_else(|| Answer::parse_bytes(&body), Ok);
        (body, answer)
    }

    /// Reads units from `read` on while they are whole; `complete` when no
    /// more of the body will come.
    fn read_on(&mut self, complete: bool) {
        if self.whole || self.stage == Stage::Closed {
            return;
        }
        let end = if complete {
            self.body.len()
        } else {
            whole_chars(&self.body)
        };
        if !complete && end < self.next_try {
            return;
        }
        // Taken out for the scan, which borrows it while the rest changes.
        let body = std::mem::take(&mut self.body);
        let base = self.read;
        #[cfg(test)]
        {
            self.scanned += end - base;
        }
        match std::str::from_utf8(&body[base..end]) {
            Ok(text) => {
                self.checked = end;
                let mut scan = Scan::new(text);
                while self.stage != Stage::Closed {
                    let start = scan.position();
                    match self.unit(&mut scan, base, complete) {
                        Ok(Unit::Taken) => {}
                        Ok(Unit::Whole) => {
                            self.whole = true;
                            break;
                        }
                        Err(Bad) => {
                            scan.rewind(start);
                            if complete {
                                self.whole = true;
                            } else {
                                self.next_try = end + (end - (base + start));
                            }
                            break;
                        }
                    }
                }
                let at = scan.position();
                // Every position of a scan is past ASCII syntax or at the
                // start of the text. Should one not be a char boundary, the
                // body is read whole: the pieces checked as UTF-8 must join.
                if !text.is_char_boundary(at) {
                    self.whole = true;
                }
                self.read = base + at;
            }
            // Not UTF-8: the whole body's reader refuses it.
            Err(_) => self.whole = true,
        }
        self.body = body;
    }

    /// Reads one unit at the cursor of `scan`, whose text starts at `base`
    /// in the body.
    fn unit(&mut self, scan: &mut Scan, base: usize, complete: bool) -> Result<Unit, Bad> {
        match self.stage {
            Stage::Open => {
                if scan.open_object() {
                    self.stage = Stage::Members { first: true };
                    return Ok(Unit::Taken);
                }
                // Nothing but whitespace yet, or a body that is no object.
                return match scan.peek() {
                    None => Err(Bad),
                    Some(_) => Ok(Unit::Whole),
                };
            }
            Stage::Members { mut first } => {
                let Some(key) = scan.next_key(&mut first)? else {
                    self.stage = Stage::Closed;
                    return Ok(Unit::Taken);
                };
                match &*key {
                    "elements" if scan.open_object() => {
                        let elements = Elements::with_capacity_and_hasher(0, IdHasher::default());
                        self.answer.elements = Some(elements);
                        self.contents.clear();
                        self.stage = Stage::Elements { first: true };
                        return Ok(Unit::Taken);
                    }
                    "elements" => {
                        extent(scan, complete)?;
                        self.answer.elements = None;
                        self.contents.clear();
                    }
                    "comments" => self.comments = Some(shifted(extent(scan, complete)?, base)),
                    "canvasOrder" => {
                        let mut at = Vec::new();
                        let order = read_canvas_entries(
                            scan,
                            |_| Some(JsonText(Bytes::new())),
                            |index, range| {
                                if at.len() <= index {
                                    at.resize(index + 1, 0..0);
                                }
                                at[index] = shifted(range, base);
                            },
                        )?;
                        settled(scan, complete)?;
                        self.canvas_order = order.map(|order| (order, at));
                    }
                    _ => {
                        let value = scan.read(TOP_LEVELS, PhantomData::<Value>)?;
                        settled(scan, complete)?;
                        self.answer.fields.insert(key.into_owned(), value);
                    }
                }
                self.stage = Stage::Members { first };
            }
            Stage::Elements { mut first } => {
                let Some(key) = scan.next_key(&mut first)? else {
                    self.answer.elements = self.answer.elements.take().map(shrunk);
                    self.stage = Stage::Members { first: false };
                    return Ok(Unit::Taken);
                };
                let key: Box<str> = key.into();
                let (head, content) = read_element(scan, &key, &mut self.parents)?;
                settled(scan, complete)?;
                let elements = self.answer.elements.get_or_insert_with(Elements::default);
                let element = Element {
                    head,
                    content: None,
                };
                let index = insert_element(elements, key, element);
                if self.contents.len() <= index {
                    self.contents.resize(index + 1, None);
                }
                self.contents[index] = content.map(|range| shifted(range, base));
                self.stage = Stage::Elements { first };
            }
            Stage::Closed => {}
        }
        Ok(Unit::Taken)
    }

    /// The answer, its texts made slices of the complete `body`; `None`
    /// when anything in it is not what the whole body's reader takes.
    fn assemble(self, body: &Bytes) -> Option<Answer> {
        // What came after the answer's closing brace was not read.
        std::str::from_utf8(body.get(self.checked..)?).ok()?;
        // SAFETY: `body[..checked]` is UTF-8: it was checked in pieces,
        // each from `read` to the piece's end, and `read` is a char
        // boundary of the piece before (so what lies before it is UTF-8);
        // a body only grows, and what was checked does not change.
        // `body[checked..]` was just checked. Two UTF-8 texts joined are
        // UTF-8.
        let text = unsafe { std::str::from_utf8_unchecked(body) };
        debug_assert!(std::str::from_utf8(body).is_ok());
        // Only whitespace after the answer.
        if !Scan::at(text, self.read).at_end() {
            return None;
        }
        let mut answer = self.answer;
        if let Some(elements) = &mut answer.elements {
            for (element, range) in elements.values_mut().zip(self.contents) {
                if let Some(range) = range {
                    element.content = Some(JsonText::slice_of(body, text, range)?);
                }
            }
        }
        if let Some(at) = self.comments {
            answer.comments = read_comments(&mut Scan::at(text, at.start), body).ok()?;
        }
        if let Some((mut order, at)) = self.canvas_order {
            for (entry, range) in order.values_mut().zip(at) {
                *entry = JsonText::slice_of(body, text, range)?;
            }
            answer.canvas_order = Some(order);
        }
        Some(answer)
    }
}

/// Skips the value at the cursor, checked as a value: where it lies.
fn extent(scan: &mut Scan, complete: bool) -> Result<Range<usize>, Bad> {
    let (start, end) = scan.value(TOP_LEVELS)?;
    settled(scan, complete)?;
    Ok(start..end)
}

/// `range` of a scan's text, as a range of the body the text starts at
/// `base` of.
fn shifted(range: Range<usize>, base: usize) -> Range<usize> {
    base + range.start..base + range.end
}

/// A unit just read is taken only when something follows it, or the body
/// is complete: a number at the end of what has come may go on.
fn settled(scan: &mut Scan, complete: bool) -> Result<(), Bad> {
    match scan.peek() {
        None if !complete => Err(Bad),
        _ => Ok(()),
    }
}

/// The length of `bytes` without a UTF-8 character cut off at its end.
/// Bytes that are not UTF-8 are left in, for the check to find.
fn whole_chars(bytes: &[u8]) -> usize {
    let len = bytes.len();
    for back in 1..=len.min(4) {
        let byte = bytes[len - back];
        // Not a continuation byte: the last character starts here.
        if byte & 0xC0 != 0x80 {
            let width = match byte {
                0x00..=0x7F => 1,
                0xC0..=0xDF => 2,
                0xE0..=0xEF => 3,
                _ => 4,
            };
            return if width > back { len - back } else { len };
        }
    }
    len
}

#[cfg(test)]
mod tests;
