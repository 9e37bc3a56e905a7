//! The copy driven by the JSON bytes themselves ([`Cursor`]) instead of
//! serde's visitor: the same [`Array`] and [`Object`] rules, the same
//! strings and scalars, so the same copy and plain-text parts, for the
//! text a [`Cursor`] reads; anything else is [`Unsupported`] and is read by
//! the visitor.
//!
//! Why: a card's rich text is a few hundred bytes of short tokens (`type`,
//! `text`, a few words, `marks`), and through serde every token costs a
//! visitor call, a `Result` and a look at the next byte in each layer. Read
//! here, a token costs a byte match and the write.

use super::super::cursor::{Cursor, Unsupported, MAX_DEPTH};
use super::{write_f64, Array, Item, Object, Seen};
use std::borrow::Cow;

/// Reads the value at `cur` as [`Item`] reads it through serde, `depth`
/// levels down.
pub fn read_item<'a>(
    cur: &mut Cursor<'a>,
    item: Item<'_>,
    depth: usize,
) -> Result<Seen<'a>, Unsupported> {
    if depth > MAX_DEPTH {
        return Err(Unsupported);
    }
    match cur.peek()? {
        b'{' => {
            cur.bump();
            let copy = item.copy;
            let mut object = Object::open(copy, item.levels, item.write, item.role);
            if !cur.close_if(b'}')? {
                loop {
                    let key = cur.key()?;
                    let pending = object.key(copy, &key, matches!(key, Cow::Borrowed(_)));
                    let seen = read_item(cur, pending.item(copy), depth + 1)?;
                    object.value(copy, pending, seen);
                    if !cur.more(b'}')? {
                        break;
                    }
                }
            }
            Ok(object.close(copy))
        }
        b'[' => {
            cur.bump();
            let copy = item.copy;
            let mut array = Array::open(copy, item.levels, item.write, item.role);
            if !cur.close_if(b']')? {
                loop {
                    let mark = array.before_item(copy);
                    let seen = read_item(cur, array.item(copy), depth + 1)?;
                    array.after_item(copy, mark, seen);
                    if !cur.more(b']')? {
                        break;
                    }
                }
            }
            Ok(array.close(copy))
        }
        b'"' => {
            let s = cur.string()?;
            Ok(item.string(s))
        }
        b't' => {
            cur.literal("true")?;
            Ok(item.scalar(|out| out.extend_from_slice(b"true")))
        }
        b'f' => {
            cur.literal("false")?;
            Ok(item.scalar(|out| out.extend_from_slice(b"false")))
        }
        b'n' => {
            cur.literal("null")?;
            Ok(item.scalar(|out| out.extend_from_slice(b"null")))
        }
        b'-' | b'0'..=b'9' => {
            let number = cur.number()?;
            if is_integer_as_written(number) {
                Ok(item.scalar(|out| out.extend_from_slice(number.as_bytes())))
            } else {
                // What serde_json hands the visitor for it: a float.
                let v: f64 = serde_json::from_str(number).map_err(|_| Unsupported)?;
                Ok(item.scalar(|out| write_f64(out, v)))
            }
        }
        _ => Err(Unsupported),
    }
}

/// Whether serde_json reads `number` as an integer (a `u64`, or a negative
/// `i64`) that it writes back as these very bytes: digits without a
/// leading zero, within range, and not `-0` (which it reads as a float).
fn is_integer_as_written(number: &str) -> bool {
    let digits = number.strip_prefix('-').unwrap_or(number);
    let canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    if !canonical {
        return false;
    }
    if number.starts_with('-') {
        number.parse::<i64>().is_ok_and(|v| v != 0)
    } else {
        number.parse::<u64>().is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_written_as_read() {
        for (number, same) in [
            ("0", true),
            ("7", true),
            ("-7", true),
            ("18446744073709551615", true),
            ("18446744073709551616", false),
            ("-9223372036854775808", true),
            ("-9223372036854775809", false),
            ("-0", false),
            ("1.5", false),
            ("1e3", false),
            ("01", false),
            ("+1", false),
        ] {
            assert_eq!(is_integer_as_written(number), same, "{number}");
            // What serde_json writes for what it read is these bytes.
            if same {
                let value: serde_json::Value = serde_json::from_str(number).unwrap();
                assert_eq!(value.to_string(), number);
            }
        }
    }
}
