//! Holding text that was captured or skipped to what a whole-value parse
//! accepts.
//!
//! serde_json's capture of a [`RawValue`] (and its skipping of a value)
//! checks the syntax and the UTF-8 of the text only. A parse into a value
//! refuses three more things: a `\u` escape that is a lone surrogate, a
//! number out of range of an `f64`, and nesting past its limit. [`checked`]
//! first scans the text for anything that could be one of the three
//! ([`plain`]: a `\u` escape in `D800..=DFFF`'s range of leading digits, a
//! number with an exponent or of more than [`SHORT_NUMBER`] bytes, nesting
//! near the limit); text without any (nearly all of it) is what a value
//! parse accepts, since it passed the capture's syntax check. Text with one
//! is read once more as a value would be, building nothing ([`Check`]), so
//! the verdict is always serde_json's own.

use crate::provider::words::{bytes_equal, first_marked, word_at};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use std::fmt;

/// Most nested array/object levels a body may have: what parsing it as one
/// value allows (serde_json's recursion limit of 128). Values kept or
/// skipped as text are not covered by that limit while the answer is read,
/// so each is checked against what is left of this one where it sits.
pub(super) const MAX_LEVELS: usize = 127;

/// Numbers of at most this many bytes and without an exponent are below
/// 10^300 in magnitude, so within an `f64`'s range (a value parse turns a
/// long integer into an `f64`, and refuses only one that is infinite).
const SHORT_NUMBER: usize = 300;

/// JSON text read as a [`RawValue`] below `levels` enclosing levels, held to
/// what a whole-value parse would accept there.
pub(super) fn checked<E: de::Error>(raw: &RawValue, levels: usize) -> Result<&RawValue, E> {
    let levels = MAX_LEVELS.saturating_sub(levels);
    if plain(raw.get().as_bytes(), levels) {
        return Ok(raw);
    }
    check_as_value(raw.get(), levels).map_err(E::custom)?;
    Ok(raw)
}

/// Reads `text` as a value parse would, with at most `levels` nested levels.
pub(super) fn check_as_value(text: &str, levels: usize) -> Result<(), serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    Check { levels }.deserialize(&mut de)?;
    de.end()
}

/// Whether `text`, valid JSON syntax as a capture checks it, holds none of
/// what a value parse with `levels` levels could refuse: no `\u` escape
/// starting with `d` or `D` (every surrogate does, and so do some valid
/// escapes, which are then checked in full), no number with an exponent or
/// longer than [`SHORT_NUMBER`] bytes, and fewer than `levels` nested
/// levels. `false` means "read it as a value", not "refused".
pub(super) fn plain(text: &[u8], levels: usize) -> bool {
    let mut depth = 0usize;
    let mut i = 0;
    while let Some(&b) = text.get(i) {
        match b {
            b'"' => match string_end(text, i + 1) {
                Some(end) => i = end,
                None => return false,
            },
            b'[' | b'{' => {
                depth += 1;
                if depth >= levels {
                    return false;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            b'-' | b'0'..=b'9' => {
                let len = text[i..]
                    .iter()
                    .position(|c| !matches!(c, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                    .unwrap_or(text.len() - i);
                let number = &text[i..i + len];
                if len > SHORT_NUMBER || number.iter().any(|c| matches!(c, b'e' | b'E')) {
                    return false;
                }
                i += len - 1;
            }
            _ => {}
        }
        i += 1;
    }
    true
}

/// The index of the closing quote of the string whose text starts at
/// `start`, eight bytes at a time between escapes; `None` when an escape
/// could be a surrogate (`\u` then `d` or `D`) or the string does not end.
fn string_end(text: &[u8], start: usize) -> Option<usize> {
    let mut i = start;
    loop {
        while let Some(word) = word_at(text, i) {
            let found = bytes_equal(word, b'"') | bytes_equal(word, b'\\');
            if found != 0 {
                i += first_marked(found);
                break;
            }
            i += 8;
        }
        match *text.get(i)? {
            b'"' => return Some(i),
            b'\\' => {
                if text.get(i + 1) == Some(&b'u') && matches!(text.get(i + 2), Some(b'd' | b'D')) {
                    return None;
                }
                i += 2;
            }
            _ => i += 1,
        }
    }
}

/// Reads a value as a whole-value parse does (strings decoded, numbers
/// converted, at most `levels` nested levels) and keeps nothing.
#[derive(Clone, Copy)]
struct Check {
    levels: usize,
}

impl<'de> DeserializeSeed<'de> for Check {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Check {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let inner = self.inner::<A::Error>()?;
        while map.next_key_seed(inner)?.is_some() {
            map.next_value_seed(inner)?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let inner = self.inner::<A::Error>()?;
        while seq.next_element_seed(inner)?.is_some() {}
        Ok(())
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

impl Check {
    /// The check one level down, or an error when no level is left.
    fn inner<E: de::Error>(self) -> Result<Check, E> {
        match self.levels.checked_sub(1) {
            Some(levels) => Ok(Check { levels }),
            None => Err(E::custom("nested too deeply")),
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// JSON text with what a value parse may refuse: surrogate escapes
    /// (paired, lone, and valid escapes that start with `d`), numbers with
    /// exponents and long ones near the limits of an `f64`, and nesting.
    pub(in crate::provider::answer) fn json_text() -> impl Strategy<Value = String> {
        let string = prop::collection::vec(
            prop_oneof![
                Just("a".to_owned()),
                Just("é".to_owned()),
                Just(r"\ud83d\ude00".to_owned()),
                Just(r"\ud800".to_owned()),
                Just(r"\uDC00x".to_owned()),
                Just(r"\ud83d\u0041".to_owned()),
                Just(r"\u00e9".to_owned()),
                Just(r"\u0dff".to_owned()),
                Just(r"\\u".to_owned()),
                Just(r"\\ud800".to_owned()),
                Just(r#"\""#.to_owned()),
                Just("\\\\".to_owned()),
                Just(r"\n".to_owned()),
                Just("0123456789abcdef".to_owned()),
            ],
            0..6,
        )
        .prop_map(|parts| format!("\"{}\"", parts.concat()));
        let number = prop_oneof![
            Just("0".to_owned()),
            Just("-0".to_owned()),
            Just("1.5".to_owned()),
            Just("1e308".to_owned()),
            Just("1e309".to_owned()),
            Just("-1E400".to_owned()),
            Just("1e-400".to_owned()),
            Just("2.5E+3".to_owned()),
            Just("1.7976931348623157e308".to_owned()),
            Just("1.7976931348623159e308".to_owned()),
            Just("12345678901234567890123".to_owned()),
            (1usize..330).prop_map(|n| "9".repeat(n)),
            (1usize..330).prop_map(|n| format!("-{}.5", "9".repeat(n))),
            (1usize..330).prop_map(|n| format!("0.{}1", "0".repeat(n))),
        ];
        let leaf = prop_oneof![
            string.clone(),
            number,
            Just("true".to_owned()),
            Just("null".to_owned()),
        ];
        leaf.prop_recursive(10, 64, 4, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4)
                    .prop_map(|items| format!("[{}]", items.join(","))),
                prop::collection::vec((string.clone(), inner), 0..4).prop_map(|members| {
                    let members: Vec<String> = members
                        .into_iter()
                        .map(|(k, v)| format!("{k} : {v}"))
                        .collect();
                    format!("{{ {} }}", members.join(", "))
                }),
            ]
        })
    }

    /// What [`checked`] answers for `text` with `levels` left.
    fn verdict(text: &str, levels: usize) -> Option<bool> {
        let raw: &RawValue = serde_json::from_str(text).ok()?;
        let held = MAX_LEVELS - levels.min(MAX_LEVELS);
        Some(checked::<serde_json::Error>(raw, held).is_ok())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// The scan passes only text that a value parse accepts, and
        /// [`checked`] gives a value parse's verdict whatever the scan says.
        #[test]
        fn checked_is_a_value_parse(text in json_text(), levels in 0usize..12) {
            let Some(got) = verdict(&text, levels) else {
                return Ok(());
            };
            let want = check_as_value(&text, levels).is_ok();
            prop_assert_eq!(got, want, "{}", text);
            if plain(text.as_bytes(), levels) {
                prop_assert!(want, "scan passed {}", text);
            }
            // The value parse itself (serde_json's own limit is deeper).
            if levels >= 11 {
                prop_assert_eq!(serde_json::from_str::<serde_json::Value>(&text).is_ok(), want);
            }
        }
    }

    #[test]
    fn what_the_scan_leaves_to_a_value_parse() {
        for (text, plain_text) in [
            (r#"{"a":[1,"x\"y",{"b":null}],"c":-1.25}"#, true),
            (r#""\u00e9\\ud800""#, true),
            (r#""\ud83d\ude00""#, false),
            (r#""\uDC00""#, false),
            ("1e3", false),
            ("[1E3]", false),
            (&"9".repeat(SHORT_NUMBER), true),
            (&"9".repeat(SHORT_NUMBER + 1), false),
            ("[[[]]]", true),
        ] {
            assert_eq!(plain(text.as_bytes(), 4), plain_text, "{text}");
        }
        assert!(plain(b"[[[]]]", 4));
        assert!(!plain(b"[[[[]]]]", 4));
        assert!(check_as_value("[[[[]]]]", 4).is_ok());
        assert!(check_as_value("[[[[[]]]]]", 4).is_err());
    }
}
