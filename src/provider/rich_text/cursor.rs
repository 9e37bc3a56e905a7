//! A cursor over JSON text that serde_json has already accepted as one
//! value (an element's `content` as the answer reader kept it, see
//! `provider::answer::JsonText`), for readers that walk the bytes
//! themselves instead of going through serde's visitor for every token.
//!
//! It reads what such text holds in the common case: objects, arrays,
//! strings (borrowed when they have no escape, decoded by serde_json when
//! they have one), numbers and literals. On anything it does not expect
//! (a byte out of place, a raw control character in a string, nesting
//! past [`MAX_DEPTH`]) it answers [`Unsupported`] and reads no further;
//! the caller then reads the same text through serde_json, whose verdict
//! stands. So a reader built on it only ever speeds up a read, and gives
//! whatever the serde reader would have given.

use crate::select::stream::json_text_run;
use std::borrow::Cow;

/// The text holds something the cursor does not read; read it with
/// serde_json instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unsupported;

/// Deepest nesting read (text within serde_json's limit never reaches
/// it; deeper text is handed back, so the readers' recursion is bounded).
pub const MAX_DEPTH: usize = 128;

/// A position in JSON text.
pub struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(text: &'a str) -> Cursor<'a> {
        Cursor { text, at: 0 }
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// The next byte that is not whitespace, not consumed.
    pub fn peek(&mut self) -> Result<u8, Unsupported> {
        let bytes = self.bytes();
        while let Some(&b) = bytes.get(self.at) {
            if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                return Ok(b);
            }
            self.at += 1;
        }
        Err(Unsupported)
    }

    /// Consumes the byte [`Cursor::peek`] returned.
    pub fn bump(&mut self) {
        self.at += 1;
    }

    /// Consumes `byte`, the next one that is not whitespace.
    pub fn expect(&mut self, byte: u8) -> Result<(), Unsupported> {
        if self.peek()? != byte {
            return Err(Unsupported);
        }
        self.bump();
        Ok(())
    }

    /// Right after `[` or `{`: consumes `close` when the container is
    /// empty.
    pub fn close_if(&mut self, close: u8) -> Result<bool, Unsupported> {
        let closed = self.peek()? == close;
        if closed {
            self.bump();
        }
        Ok(closed)
    }

    /// After an item or a member: `true` (the comma consumed) when another
    /// follows, `false` (`close` consumed) when the container ends.
    pub fn more(&mut self, close: u8) -> Result<bool, Unsupported> {
        match self.peek()? {
            b',' => {
                self.bump();
                Ok(true)
            }
            b if b == close => {
                self.bump();
                Ok(false)
            }
            _ => Err(Unsupported),
        }
    }

    /// Whether only whitespace is left.
    pub fn end(&mut self) -> Result<(), Unsupported> {
        match self.peek() {
            Err(Unsupported) => Ok(()),
            Ok(_) => Err(Unsupported),
        }
    }

    /// A member name: a string, then its `:`.
    #[inline(always)]
    pub fn key(&mut self) -> Result<Cow<'a, str>, Unsupported> {
        let key = self.string()?;
        self.expect(b':')?;
        Ok(key)
    }

    /// The string at the cursor: borrowed from the text when it has no
    /// escape, else decoded by serde_json.
    #[inline(always)]
    pub fn string(&mut self) -> Result<Cow<'a, str>, Unsupported> {
        if self.peek()? != b'"' {
            return Err(Unsupported);
        }
        let open = self.at;
        let start = open + 1;
        let i = json_text_run(self.bytes(), start);
        match self.bytes().get(i) {
            Some(b'"') => {
                let s = self.text.get(start..i).ok_or(Unsupported)?;
                self.at = i + 1;
                Ok(Cow::Borrowed(s))
            }
            Some(b'\\') => self.escaped(open),
            // A raw control character, or no closing quote.
            _ => Err(Unsupported),
        }
    }

    /// A string with an escape, its opening quote at `open`.
    fn escaped(&mut self, open: usize) -> Result<Cow<'a, str>, Unsupported> {
        let end = self.string_end(open)?;
        let quoted = self.text.get(open..end).ok_or(Unsupported)?;
        let decoded: String = serde_json::from_str(quoted).map_err(|_| Unsupported)?;
        self.at = end;
        Ok(Cow::Owned(decoded))
    }

    /// Just past the closing quote of the string that opens at `open`.
    fn string_end(&self, open: usize) -> Result<usize, Unsupported> {
        let bytes = self.bytes();
        let mut i = open + 1;
        loop {
            match bytes.get(i) {
                Some(b'"') => return Ok(i + 1),
                // An escape's second byte is never the closing quote; a
                // `\u` escape's four digits hold no quote or backslash.
                Some(b'\\') => i += 2,
                Some(_) => i += 1,
                None => return Err(Unsupported),
            }
        }
    }

    /// The number at the cursor, as its text.
    pub fn number(&mut self) -> Result<&'a str, Unsupported> {
        let bytes = self.bytes();
        let start = self.at;
        let len = bytes
            .get(start..)
            .unwrap_or_default()
            .iter()
            .position(|b| !matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
            .unwrap_or(bytes.len() - start);
        if len == 0 {
            return Err(Unsupported);
        }
        self.at = start + len;
        self.text.get(start..start + len).ok_or(Unsupported)
    }

    /// Consumes `word` (`true`, `false` or `null`).
    pub fn literal(&mut self, word: &str) -> Result<(), Unsupported> {
        let end = self.at + word.len();
        if self.bytes().get(self.at..end) != Some(word.as_bytes()) {
            return Err(Unsupported);
        }
        self.at = end;
        Ok(())
    }

    /// Steps over the value at the cursor and returns its text, for a
    /// caller that parses it with serde_json (which checks it).
    pub fn skip_value(&mut self) -> Result<&'a str, Unsupported> {
        let first = self.peek()?;
        let start = self.at;
        match first {
            b'"' => self.at = self.string_end(start)?,
            b'{' | b'[' => {
                let bytes = self.bytes();
                let mut depth = 0usize;
                let mut i = start;
                loop {
                    match bytes.get(i) {
                        Some(b'"') => {
                            i = self.string_end(i)?;
                            continue;
                        }
                        Some(b'{' | b'[') => {
                            depth += 1;
                            if depth > MAX_DEPTH {
                                return Err(Unsupported);
                            }
                        }
                        Some(b'}' | b']') => {
                            depth -= 1;
                            if depth == 0 {
                                self.at = i + 1;
                                break;
                            }
                        }
                        Some(_) => {}
                        None => return Err(Unsupported),
                    }
                    i += 1;
                }
            }
            b'-' | b'0'..=b'9' => {
                self.number()?;
            }
            b't' => self.literal("true")?,
            b'f' => self.literal("false")?,
            b'n' => self.literal("null")?,
            _ => return Err(Unsupported),
        }
        self.text.get(start..self.at).ok_or(Unsupported)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_skips_what_serde_json_accepted() {
        let text = r#" { "a" : [1, -2.5e3, true, null, {"b": "c\"d"}], "e\u0041": "x" } "#;
        let mut cur = Cursor::new(text);
        cur.expect(b'{').unwrap();
        assert_eq!(cur.key().unwrap(), "a");
        let skipped = cur.skip_value().unwrap();
        assert_eq!(skipped, r#"[1, -2.5e3, true, null, {"b": "c\"d"}]"#);
        assert!(cur.more(b'}').unwrap());
        let key = cur.key().unwrap();
        assert!(matches!(key, Cow::Owned(ref k) if k == "eA"), "{key:?}");
        assert_eq!(cur.string().unwrap(), "x");
        assert!(!cur.more(b'}').unwrap());
        assert_eq!(cur.end(), Ok(()));
    }

    #[test]
    fn hands_back_what_it_does_not_read() {
        for text in [
            "\"a\u{1}b\"",
            "\"unterminated",
            "\"\\ud800\"",
            "[1,",
            "{\"a\"1}",
            "+",
            "nul",
        ] {
            let mut cur = Cursor::new(text);
            let read = match cur.peek() {
                Ok(b'"') => cur.string().map(|_| ()),
                Ok(_) => cur.skip_value().and_then(|_| cur.end()),
                Err(e) => Err(e),
            };
            // `[1,` and `{"a"1}` skip as far as their brackets: the
            // callers hand such spans to serde_json, which refuses them.
            if text.starts_with(['[', '{']) {
                assert!(read.is_err() || serde_json::from_str::<serde_json::Value>(text).is_err());
            } else {
                assert_eq!(read, Err(Unsupported), "{text:?}");
            }
        }
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert_eq!(Cursor::new(&deep).skip_value(), Err(Unsupported));
    }
}
