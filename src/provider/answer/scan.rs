//! A cursor over an answer body: the members of the objects the reader
//! walks, and every other value skipped in one pass that finds its end,
//! checks its syntax and checks it as a value parse would.
//!
//! serde_json's own skip (what capturing a `RawValue` does) checks syntax
//! only, so the reader used to scan each kept or skipped text a second time
//! for what a parse into a value refuses besides (a `\u` escape that is a
//! lone surrogate, a number out of an `f64`'s range, nesting past the
//! limit). Here the skip notes those as it goes: nesting is counted exactly,
//! and a text with a `\u` escape starting with `d` or `D` (every surrogate
//! does), or a number with an exponent or of more than
//! [`SHORT_NUMBER`] bytes, is read once more by serde_json as a value
//! ([`check_as_value`]), so the verdict on those is serde_json's own. Nearly
//! no text has one.
//!
//! The syntax is serde_json's: whitespace is space, tab, line feed and
//! carriage return; a string holds no control character and only the
//! escapes `\" \\ \/ \b \f \n \r \t \uXXXX`; a number has no leading zero,
//! and digits after its point and in its exponent; no trailing commas.

use super::check::{check_as_value, MAX_LEVELS, SHORT_NUMBER};
use crate::select::stream::json_text_run;
use serde::de::value::{BorrowedStrDeserializer, I64Deserializer, U64Deserializer};
use serde::de::DeserializeSeed;
use std::borrow::Cow;

/// The body is not what a value parse accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Bad;

/// A position in a body's text.
pub(super) struct Scan<'b> {
    text: &'b str,
    at: usize,
}

impl<'b> Scan<'b> {
    pub(super) fn new(text: &'b str) -> Scan<'b> {
        Scan { text, at: 0 }
    }

    /// A cursor at `at`, a position in `text` (one that an earlier scan
    /// of the same text reached).
    pub(super) fn at(text: &'b str, at: usize) -> Scan<'b> {
        Scan { text, at }
    }

    /// Where the cursor is.
    pub(super) fn position(&self) -> usize {
        self.at
    }

    /// Moves the cursor back to `at`, a position it was at before.
    pub(super) fn rewind(&mut self, at: usize) {
        self.at = at;
    }

    /// The whole text being scanned.
    pub(super) fn text(&self) -> &'b str {
        self.text
    }

    fn bytes(&self) -> &'b [u8] {
        self.text.as_bytes()
    }

    /// The next byte after whitespace, not taken.
    pub(super) fn peek(&mut self) -> Option<u8> {
        self.at = skip_ws(self.bytes(), self.at);
        self.bytes().get(self.at).copied()
    }

    /// Whether only whitespace is left.
    pub(super) fn at_end(&mut self) -> bool {
        self.peek().is_none()
    }

    /// Takes the `{` of an object when the next value is one.
    pub(super) fn open_object(&mut self) -> bool {
        let open = self.peek() == Some(b'{');
        self.at += usize::from(open);
        open
    }

    /// The name of the next member of the object being read, its `:` taken;
    /// `None` once its `}` is taken. `first` is true until a member is read.
    /// Inlined where members are read (about 120,000 names of elements'
    /// heads a load of the bench board), the rare escaped name read apart.
    #[inline(always)]
    pub(super) fn next_key(&mut self, first: &mut bool) -> Result<Option<Cow<'b, str>>, Bad> {
        // Positions kept in a local and stored once.
        let bytes = self.bytes();
        let mut at = skip_ws(bytes, self.at);
        match bytes.get(at) {
            Some(b'}') => {
                self.at = at + 1;
                return Ok(None);
            }
            Some(b',') if !*first => at = skip_ws(bytes, at + 1),
            Some(b'"') if *first => {}
            _ => return Err(Bad),
        }
        *first = false;
        if bytes.get(at) != Some(&b'"') {
            return Err(Bad);
        }
        let start = at + 1;
        let (end, escaped) = string_end(bytes, start)?;
        let colon = skip_ws(bytes, end + 1);
        if bytes.get(colon) != Some(&b':') {
            return Err(Bad);
        }
        self.at = colon + 1;
        if !escaped {
            return Ok(Some(Cow::Borrowed(&self.text[start..end])));
        }
        self.escaped_name(start, end)
    }

    /// The name whose escaped text lies between `start` and `end`,
    /// unescaped as a value parse would, a lone surrogate refused.
    #[cold]
    #[inline(never)]
    fn escaped_name(&self, start: usize, end: usize) -> Result<Option<Cow<'b, str>>, Bad> {
        serde_json::from_str::<String>(&self.text[start - 1..=end])
            .map(|name| Some(Cow::Owned(name)))
            .map_err(|_| Bad)
    }

    /// Skips the next value, held to what a value parse accepts below
    /// `levels` enclosing levels; the bounds of its text.
    pub(super) fn value(&mut self, levels: usize) -> Result<(usize, usize), Bad> {
        let left = MAX_LEVELS.saturating_sub(levels);
        self.peek();
        let start = self.at;
        let (end, suspect) = skip_value(self.bytes(), start, left)?;
        self.at = end;
        if suspect {
            check_as_value(&self.text[start..end], left).map_err(|_| Bad)?;
        }
        Ok((start, end))
    }

    /// Reads the next value (below `levels` enclosing levels) with `seed`,
    /// as a value parse of the whole body would hand it over: by serde_json
    /// from the value's own text, or for the commonest scalars directly.
    pub(super) fn read<S: DeserializeSeed<'b>>(
        &mut self,
        levels: usize,
        seed: S,
    ) -> Result<S::Value, Bad> {
        // The scalars a head holds most, read where they are scanned rather
        // than skipped as a value and looked at again, as serde_json hands
        // them over: a string without escapes (ids, types, places) as itself.
        match self.peek() {
            Some(b'"') => {
                let start = self.at + 1;
                let (end, escaped) = string_end(self.bytes(), start)?;
                if !escaped {
                    self.at = end + 1;
                    return seed
                        .deserialize(BorrowedStrDeserializer::new(&self.text[start..end]))
                        .map_err(|_: serde_json::Error| Bad);
                }
            }
            // An integer (times, places: about 56,000 a load of the bench board).
            Some(b'-' | b'0'..=b'9') => {
                if let Some((integer, end)) = plain_integer(self.bytes(), self.at) {
                    self.at = end;
                    return match integer {
                        Integer::Unsigned(n) => seed.deserialize(U64Deserializer::new(n)),
                        Integer::Negative(n) => seed.deserialize(I64Deserializer::new(n)),
                    }
                    .map_err(|_: serde_json::Error| Bad);
                }
            }
            _ => {}
        }
        // Everything else is read by serde_json itself.
        let (start, end) = self.value(levels)?;
        seed.deserialize(&mut serde_json::Deserializer::from_str(
            &self.text[start..end],
        ))
        .map_err(|_: serde_json::Error| Bad)
    }
}

/// An integer as serde_json hands it to a visitor.
enum Integer {
    Unsigned(u64),
    Negative(i64),
}

/// The integer at `i` and where it ends, when serde_json hands it over as
/// one: at most 19 digits (below 2^64), or a minus and at most 18. `None`
/// for the rest, left to serde_json: a fraction, an exponent or `-0` (a
/// float), a leading zero before a digit (refused), more or no digits.
#[inline(always)]
fn plain_integer(bytes: &[u8], i: usize) -> Option<(Integer, usize)> {
    let negative = bytes.get(i) == Some(&b'-');
    let first = i + usize::from(negative);
    let mut end = first;
    let mut n: u64 = 0;
    while let Some(&digit @ b'0'..=b'9') = bytes.get(end) {
        // Past 19 digits the value is not used.
        n = n.wrapping_mul(10).wrapping_add(u64::from(digit - b'0'));
        end += 1;
    }
    let digits = end - first;
    let most = if negative { 18 } else { 19 };
    if digits == 0
        || digits > most
        || (digits > 1 && bytes[first] == b'0')
        || matches!(bytes.get(end), Some(b'.' | b'e' | b'E'))
    {
        return None;
    }
    match (negative, n) {
        (false, n) => Some((Integer::Unsigned(n), end)),
        (true, 0) => None,
        // At most 18 digits: below 2^63, so the cast and the negation are exact.
        (true, n) => Some((Integer::Negative(-(n as i64)), end)),
    }
}

#[inline(always)]
fn skip_ws(bytes: &[u8], mut i: usize) -> usize {
    // Compact JSON has none, and no byte above the space is whitespace.
    if bytes.get(i).is_some_and(|&b| b > b' ') {
        return i;
    }
    while let Some(b' ' | b'\n' | b'\t' | b'\r') = bytes.get(i) {
        i += 1;
    }
    i
}

/// The end of the value that starts at `start` (no whitespace before it),
/// with at most `left` nested levels, and whether it holds something only
/// a value parse can judge.
fn skip_value(bytes: &[u8], start: usize, left: usize) -> Result<(usize, bool), Bad> {
    let mut i = start;
    let mut suspect = false;
    // Bit n set: level n + 1 is an object. `left` is at most MAX_LEVELS.
    let mut objects: u128 = 0;
    let mut depth = 0usize;
    // Whether level `depth` is an object: read from `objects` only when a
    // level opens or closes, not after every value.
    let mut in_object = false;
    let is_object = |objects: u128, depth: usize| depth > 0 && (objects >> (depth - 1)) & 1 != 0;
    loop {
        // A value starts at `i`.
        match bytes.get(i) {
            Some(&open @ (b'{' | b'[')) => {
                depth += 1;
                if depth > left {
                    return Err(Bad);
                }
                i = skip_ws(bytes, i + 1);
                if open == b'{' {
                    objects |= 1 << (depth - 1);
                    if bytes.get(i) == Some(&b'}') {
                        i += 1;
                        depth -= 1;
                        in_object = is_object(objects, depth);
                    } else {
                        in_object = true;
                        i = member_name(bytes, i, &mut suspect)?;
                        continue;
                    }
                } else {
                    objects &= !(1 << (depth - 1));
                    if bytes.get(i) == Some(&b']') {
                        i += 1;
                        depth -= 1;
                        in_object = is_object(objects, depth);
                    } else {
                        in_object = false;
                        continue;
                    }
                }
            }
            Some(b'"') => {
                let (end, escaped) = string_end(bytes, i + 1)?;
                suspect |= escaped && maybe_surrogate(&bytes[i + 1..end]);
                i = end + 1;
            }
            Some(b'-' | b'0'..=b'9') => {
                let end = number_end(bytes, i)?;
                suspect |= end - i > SHORT_NUMBER
                    || bytes[i..end].iter().any(|&b| matches!(b, b'e' | b'E'));
                i = end;
            }
            Some(b't') => i = literal(bytes, i, b"true")?,
            Some(b'f') => i = literal(bytes, i, b"false")?,
            Some(b'n') => i = literal(bytes, i, b"null")?,
            _ => return Err(Bad),
        }
        // After a value: close what it ends, until the next value starts.
        loop {
            if depth == 0 {
                return Ok((i, suspect));
            }
            i = skip_ws(bytes, i);
            match (bytes.get(i), in_object) {
                (Some(b','), true) => {
                    i = member_name(bytes, skip_ws(bytes, i + 1), &mut suspect)?;
                    break;
                }
                (Some(b','), false) => {
                    i = skip_ws(bytes, i + 1);
                    break;
                }
                (Some(b'}'), true) | (Some(b']'), false) => {
                    i += 1;
                    depth -= 1;
                    in_object = is_object(objects, depth);
                }
                _ => return Err(Bad),
            }
        }
    }
}

/// A member's name at `i` and its `:`; where its value starts.
#[inline(always)]
fn member_name(bytes: &[u8], i: usize, suspect: &mut bool) -> Result<usize, Bad> {
    if bytes.get(i) != Some(&b'"') {
        return Err(Bad);
    }
    let (end, escaped) = string_end(bytes, i + 1)?;
    *suspect |= escaped && maybe_surrogate(&bytes[i + 1..end]);
    let colon = skip_ws(bytes, end + 1);
    if bytes.get(colon) != Some(&b':') {
        return Err(Bad);
    }
    Ok(skip_ws(bytes, colon + 1))
}

/// The index of the closing quote of the string whose text starts at
/// `start`, and whether it holds an escape; its escapes are checked.
///
/// Most strings of an answer (keys, ids, a text node's words) end in their
/// first plain run, so that case is inlined where strings are skipped, and
/// anything else (an escape, a control character, the end of the text) is
/// left to [`string_end_from`]: about 420,000 strings a load of the bench
/// board, each called for before.
#[inline(always)]
fn string_end(bytes: &[u8], start: usize) -> Result<(usize, bool), Bad> {
    let i = json_text_run(bytes, start);
    match bytes.get(i) {
        Some(b'"') => Ok((i, false)),
        _ => string_end_from(bytes, i),
    }
}

/// [`string_end`] from `i`, a stop of a plain run that is not the closing
/// quote (or the end of the text).
#[inline(never)]
fn string_end_from(bytes: &[u8], mut i: usize) -> Result<(usize, bool), Bad> {
    let mut escaped = false;
    loop {
        match bytes.get(i) {
            Some(b'"') => return Ok((i, escaped)),
            Some(b'\\') => {
                escaped = true;
                i += match bytes.get(i + 1) {
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => 2,
                    Some(b'u') => {
                        let hex = bytes.get(i + 2..i + 6).ok_or(Bad)?;
                        if !hex.iter().all(u8::is_ascii_hexdigit) {
                            return Err(Bad);
                        }
                        6
                    }
                    _ => return Err(Bad),
                };
            }
            // A control character, or the end of the text.
            _ => return Err(Bad),
        }
        i = json_text_run(bytes, i);
    }
}

/// Whether a string's escaped text has a `\u` escape starting with `d` or
/// `D`, as every surrogate does (so do some other escapes).
fn maybe_surrogate(text: &[u8]) -> bool {
    let mut i = 0;
    while let Some(at) = text
        .get(i..)
        .and_then(|rest| rest.iter().position(|&b| b == b'\\'))
    {
        i += at;
        if text.get(i + 1) == Some(&b'u') && matches!(text.get(i + 2), Some(b'd' | b'D')) {
            return true;
        }
        i += 2;
    }
    false
}

/// The end of the number that starts at `i`, in JSON's grammar.
fn number_end(bytes: &[u8], mut i: usize) -> Result<usize, Bad> {
    let digits = |bytes: &[u8], i: usize| {
        i + bytes.get(i..).map_or(0, |rest| {
            rest.iter().take_while(|b| b.is_ascii_digit()).count()
        })
    };
    if bytes.get(i) == Some(&b'-') {
        i += 1;
    }
    match bytes.get(i) {
        Some(b'0') => {
            i += 1;
            if bytes.get(i).is_some_and(u8::is_ascii_digit) {
                return Err(Bad);
            }
        }
        Some(b'1'..=b'9') => i = digits(bytes, i + 1),
        _ => return Err(Bad),
    }
    if bytes.get(i) == Some(&b'.') {
        let end = digits(bytes, i + 1);
        if end == i + 1 {
            return Err(Bad);
        }
        i = end;
    }
    if let Some(b'e' | b'E') = bytes.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = bytes.get(i) {
            i += 1;
        }
        let end = digits(bytes, i);
        if end == i {
            return Err(Bad);
        }
        i = end;
    }
    Ok(i)
}

fn literal(bytes: &[u8], i: usize, word: &[u8]) -> Result<usize, Bad> {
    match bytes.get(i..i + word.len()) {
        Some(found) if found == word => Ok(i + word.len()),
        _ => Err(Bad),
    }
}

#[cfg(test)]
mod tests;
