//! The scalars of the one-pass reader ([`super::Tree`]): a string's
//! escapes, the literals `true`, `false` and `null`, and numbers, each read
//! to the value serde_json gives for the same bytes.

use crate::pipeline::markdown::value::{Num, V};
use crate::select::stream::{Malformed, Walk};

/// One escape after its `\` at `b[j]`, pushed onto `text`; the index past it.
pub(super) fn escape(b: &[u8], j: usize, text: &mut String) -> Walk<usize> {
    let c = match b.get(j) {
        Some(b'"') => '"',
        Some(b'\\') => '\\',
        Some(b'/') => '/',
        Some(b'b') => '\u{8}',
        Some(b'f') => '\u{c}',
        Some(b'n') => '\n',
        Some(b'r') => '\r',
        Some(b't') => '\t',
        Some(b'u') => {
            let high = hex4(b, j + 1)?;
            let (code, end) = match high {
                0xD800..=0xDBFF => {
                    if b.get(j + 5..j + 7) != Some(b"\\u") {
                        return Err(Malformed);
                    }
                    let low = hex4(b, j + 7)?;
                    if !(0xDC00..=0xDFFF).contains(&low) {
                        return Err(Malformed);
                    }
                    (0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00), j + 11)
                }
                0xDC00..=0xDFFF => return Err(Malformed),
                _ => (high, j + 5),
            };
            text.push(char::from_u32(code).ok_or(Malformed)?);
            return Ok(end);
        }
        _ => return Err(Malformed),
    };
    text.push(c);
    Ok(j + 1)
}

/// The four hex digits at `b[i..i + 4]`.
fn hex4(b: &[u8], i: usize) -> Walk<u32> {
    let digits = b.get(i..i + 4).ok_or(Malformed)?;
    digits.iter().try_fold(0, |code, &d| {
        let digit = char::from(d).to_digit(16).ok_or(Malformed)?;
        Ok(code * 16 + digit)
    })
}

#[inline]
pub(super) fn literal<'a>(b: &[u8], i: usize, word: &[u8], value: V<'a>) -> Walk<(V<'a>, usize)> {
    if b.get(i..i + word.len()) == Some(word) {
        Ok((value, i + word.len()))
    } else {
        Err(Malformed)
    }
}

/// The number at `s[i]`. A plain integer of up to 18 digits (positions,
/// indexes, sizes) is read here; anything else by serde_json itself, so that
/// every value (`-0`, integers past `u64`, the rounding of floats, what is
/// not a number) is the one it reads.
#[inline]
pub(super) fn number<'a>(s: &str, i: usize) -> Walk<(V<'a>, usize)> {
    let rest = s.get(i..).ok_or(Malformed)?;
    let len = rest
        .bytes()
        .position(|c| !matches!(c, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
        .unwrap_or(rest.len());
    let text = &rest[..len];
    let (negative, digits) = match text.strip_prefix('-') {
        Some(digits) => (true, digits),
        None => (false, text),
    };
    let plain = (1..=18).contains(&digits.len())
        && digits.bytes().all(|c| c.is_ascii_digit())
        && (digits.len() == 1 || !digits.starts_with('0'));
    let n = match digits.parse::<i64>() {
        Ok(0) if plain && negative => Num::F(-0.0),
        Ok(n) if plain && negative => Num::I(-n),
        Ok(n) if plain => Num::U(n.unsigned_abs()),
        _ => {
            let n: serde_json::Number = serde_json::from_str(text).map_err(|_| Malformed)?;
            if let Some(u) = n.as_u64() {
                Num::U(u)
            } else if let Some(s) = n.as_i64() {
                Num::I(s)
            } else {
                Num::F(n.as_f64().ok_or(Malformed)?)
            }
        }
    };
    Ok((V::Num(n), i + len))
}
