//! What a parse into a value refuses besides syntax, judged by serde_json
//! itself: the reader's scan ([`super::scan`]) hands the texts it cannot
//! judge on its own (a possible lone surrogate escape, a number that may be
//! out of an `f64`'s range) to [`check_as_value`], which reads them as a
//! value parse would, building nothing.

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// Most nested array/object levels a body may have: what parsing it as one
/// value allows (serde_json's recursion limit of 128). Values kept or
/// skipped as text are not covered by that limit while the answer is read,
/// so each is checked against what is left of this one where it sits.
pub(super) const MAX_LEVELS: usize = 127;

/// Numbers of at most this many bytes and without an exponent are below
/// 10^300 in magnitude, so within an `f64`'s range (a value parse turns a
/// long integer into an `f64`, and refuses only one that is infinite).
pub(super) const SHORT_NUMBER: usize = 300;

/// Reads `text` as a value parse would, with at most `levels` nested levels.
pub(super) fn check_as_value(text: &str, levels: usize) -> Result<(), serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    Check { levels }.deserialize(&mut de)?;
    de.end()
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
    use super::super::scan::Scan;
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

    /// What the scan answers for `text` as a whole value with `levels` left.
    fn verdict(text: &str, levels: usize) -> bool {
        let mut scan = Scan::new(text);
        scan.value(MAX_LEVELS - levels.min(MAX_LEVELS)).is_ok() && scan.at_end()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// The scan accepts exactly what a value parse accepts, nesting
        /// limit included.
        #[test]
        fn the_scan_is_a_value_parse(text in json_text(), levels in 0usize..12) {
            let want = check_as_value(&text, levels).is_ok();
            prop_assert_eq!(verdict(&text, levels), want, "{}", text);
            // The value parse itself (serde_json's own limit is deeper).
            if levels >= 11 {
                prop_assert_eq!(serde_json::from_str::<serde_json::Value>(&text).is_ok(), want);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// One JSON byte put in, put over or taken out of a value: the scan
        /// still refuses exactly what a value parse refuses.
        #[test]
        fn a_broken_value_is_refused_as_a_value_parse_refuses_it(
            text in json_text(),
            at in any::<prop::sample::Index>(),
            byte in prop::sample::select(b"\"\\,:[]{}0-.eE+ \tx\x01u".to_vec()),
            edit in 0u8..3,
        ) {
            let mut bytes = text.into_bytes();
            let at = at.index(bytes.len() + 1);
            match edit {
                0 => bytes.insert(at, byte),
                1 if at < bytes.len() => bytes[at] = byte,
                _ if at < bytes.len() => { bytes.remove(at); }
                _ => bytes.push(byte),
            }
            // Only texts that are still UTF-8 reach the scan.
            let Ok(text) = String::from_utf8(bytes) else { return Ok(()); };
            let want = serde_json::from_str::<serde_json::Value>(&text).is_ok();
            prop_assert_eq!(verdict(&text, MAX_LEVELS), want, "{:?}", text);
        }
    }
}
