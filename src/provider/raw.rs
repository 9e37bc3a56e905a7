//! Lenient readers over raw provider JSON, shared by the normalizer and the
//! rich-text reader: a field of the wrong type reads as absent, never an error.
//!
//! Raw JSON copied into the document (rich-text blocks, `UNKNOWN.content`,
//! palettes, colors, text styles, column widths) goes through
//! [`raw_leaf`], so that the document stays within serde_json's parse
//! depth (see [`MAX_RAW_DEPTH`]).

use crate::document::sanitize::{is_mention, is_mention_person_key, is_sensitive};
use crate::document::{Raw, Scalar};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

/// Most nested array/object levels a raw value keeps, counting itself.
///
/// Deeper arrays and objects are dropped (an object loses that key, an array
/// that item); scalars at the last level are kept. Together with
/// [`crate::provider::normalize::MAX_NODE_DEPTH`] this keeps every document at most 120 levels deep,
/// below the 127 that `serde_json::from_slice` accepts, so a client using
/// serde_json can read any document this service writes.
pub const MAX_RAW_DEPTH: usize = 48;

/// `value` as a [`Raw`] leaf, keeping at most `levels` nested array/object
/// levels and leaving out every sensitive key ([`is_sensitive`]) and the
/// keys of mentions that point at a person ([`is_mention_person_key`]) at
/// every depth,
/// written straight to compact JSON text (no copy of the tree).
///
/// Raw JSON reaches the document only through this function, and the typed
/// fields have no sensitive names, so the normalized document is sanitized
/// as it is built: it can be serialized straight to bytes without a
/// sanitizing walk over a value tree.
///
/// Returns `None` when `value` is itself a container and `levels` is 0.
/// Recursion is bounded by `levels`.
pub fn raw_leaf(value: &Value, levels: usize) -> Option<Raw> {
    if !fits(value, levels) {
        return None;
    }
    // Written by serde_json, so not parsed again (`to_raw_value`).
    serde_json::value::to_raw_value(&Bounded::new(value, levels))
        .ok()
        .map(Raw::from_json)
}

/// Whether `value` is kept with `levels` levels left: scalars always,
/// containers while a level is left.
fn fits(value: &Value, levels: usize) -> bool {
    levels > 0 || !matches!(value, Value::Array(_) | Value::Object(_))
}

/// Serializes a value the way [`raw_leaf`] keeps it: containers past the
/// level bound and sensitive keys are skipped as they are written, and so
/// are the keys by which a mention points at a person, on the node or mark
/// itself and in its `attrs` (the rule the capture's scrubber keeps too:
/// `document::sanitize::MENTION_PERSON_KEYS`).
struct Bounded<'a> {
    value: &'a Value,
    levels: usize,
    /// This object is a mention's `attrs`.
    mention_attrs: bool,
}

impl<'a> Bounded<'a> {
    fn new(value: &'a Value, levels: usize) -> Bounded<'a> {
        Bounded {
            value,
            levels,
            mention_attrs: false,
        }
    }
}

impl Serialize for Bounded<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let inner = self.levels.saturating_sub(1);
        match self.value {
            Value::Array(items) => {
                let mut seq = serializer.serialize_seq(None)?;
                for value in items.iter().filter(|v| fits(v, inner)) {
                    seq.serialize_element(&Bounded::new(value, inner))?;
                }
                seq.end()
            }
            Value::Object(map) => {
                let mut out = serializer.serialize_map(None)?;
                let mention = map
                    .get("type")
                    .and_then(Value::as_str)
                    .is_some_and(is_mention);
                for (key, value) in map {
                    if is_sensitive(key)
                        || !fits(value, inner)
                        || ((mention || self.mention_attrs) && is_mention_person_key(key))
                    {
                        continue;
                    }
                    out.serialize_entry(
                        key,
                        &Bounded {
                            value,
                            levels: inner,
                            mention_attrs: mention && key == "attrs",
                        },
                    )?;
                }
                out.end()
            }
            scalar => scalar.serialize(serializer),
        }
    }
}

/// Raw pass-through of any non-null value, depth-bounded.
pub fn raw(value: Option<&Value>) -> Option<Raw> {
    match value? {
        Value::Null => None,
        v => raw_leaf(v, MAX_RAW_DEPTH),
    }
}

/// An array, its items copied as [`Raw`] (nulls kept as the provider sent them).
pub fn raw_array(value: Option<&Value>) -> Option<Vec<Raw>> {
    let items = value?.as_array()?;
    let levels = MAX_RAW_DEPTH.saturating_sub(1);
    Some(items.iter().filter_map(|v| raw_leaf(v, levels)).collect())
}

/// A JSON scalar (string, number, boolean), as sent.
pub fn scalar(value: Option<&Value>) -> Option<Scalar> {
    Scalar::from_value(value?)
}

/// A string, as sent (possibly empty).
pub fn string(value: Option<&Value>) -> Option<String> {
    value?.as_str().map(str::to_owned)
}

/// A non-empty string: used for URLs and for fallbacks, where an empty string
/// means "not set" and the next candidate is tried.
pub fn non_empty(value: Option<&Value>) -> Option<String> {
    value?.as_str().filter(|s| !s.is_empty()).map(str::to_owned)
}

/// An identifier: a non-empty string, or an integer written in decimal.
pub fn ident(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        _ => None,
    }
}

/// The id an element or comment gives itself: `id`, else `_id`, when it is
/// an identifier ([`ident`]); its map key stands in when neither is.
pub fn own_id(id: Option<&Value>, underscore_id: Option<&Value>) -> Option<String> {
    ident(id).or_else(|| ident(underscore_id))
}

/// A boolean.
pub fn boolean(value: Option<&Value>) -> Option<bool> {
    value?.as_bool()
}

/// An object.
pub fn object(value: Option<&Value>) -> Option<&Map<String, Value>> {
    value?.as_object()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_mention_loses_its_id_and_nothing_else_does() {
        let block = json!({"type": "paragraph", "attrs": {"key": "k1", "id": "kept"}, "content": [
            {"type": "mention", "attrs": {"id": "u-PLANTED", "label": "Ann", "key": "m"}},
            {"attrs": {"id": "u-PLANTED-2", "label": "Bo"}, "type": "mention"},
            {"type": "Mention", "attrs": {"id": "u-PLANTED-4", "label": "Cy"}},
            {"type": "text", "text": "x", "marks": [{"type": "textMention", "attrs": {"userId": "u-PLANTED-3", "originalText": "@Ann"}}]},
            {"type": "inlineBoardLink", "attrs": {"id": "b1", "permissionId": "p-PLANTED", "title": "T"}}
        ]});
        let kept = raw_leaf(&block, MAX_RAW_DEPTH).unwrap();
        let text = serde_json::to_string(&kept).unwrap();
        assert!(!text.contains("PLANTED"), "{text}");
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["attrs"]["id"], "kept");
        assert_eq!(
            back["content"][0]["attrs"],
            json!({"label": "Ann", "key": "m"})
        );
        assert_eq!(back["content"][1]["attrs"], json!({"label": "Bo"}));
        assert_eq!(back["content"][2]["attrs"], json!({"label": "Cy"}));
        assert_eq!(
            back["content"][3]["marks"][0]["attrs"],
            json!({"originalText": "@Ann"})
        );
        let mark = json!({"type": "textMention", "attrs": {"mentionKey": "mk1", "userId": "u", "originalText": "@A"}});
        let kept = serde_json::to_string(&raw_leaf(&mark, MAX_RAW_DEPTH).unwrap()).unwrap();
        assert_eq!(
            kept,
            r#"{"type":"textMention","attrs":{"originalText":"@A"}}"#
        );
        assert_eq!(
            back["content"][4]["attrs"],
            json!({"id": "b1", "title": "T"})
        );
    }

    #[test]
    fn raw_leaf_table() {
        let cases: &[(Value, usize, Option<Value>)] = &[
            (json!(1), 0, Some(json!(1))),
            (json!([]), 0, None),
            (json!([]), 1, Some(json!([]))),
            (json!([1, [2], {"a": 3}]), 1, Some(json!([1]))),
            (
                json!({"a": {"b": {"c": 1}}, "d": 2}),
                2,
                Some(json!({"a": {}, "d": 2})),
            ),
            (
                json!({"a": {"b": {"c": 1}}}),
                3,
                Some(json!({"a": {"b": {"c": 1}}})),
            ),
            (
                json!([{"Token": 1, "a": [{"apiKey": {"x": 1}, "b": 2}]}]),
                9,
                Some(json!([{"a": [{"b": 2}]}])),
            ),
        ];
        for (value, levels, want) in cases {
            let got = raw_leaf(value, *levels).map(|r| r.to_value());
            assert_eq!(got, *want, "{value} {levels}");
        }
    }

    #[test]
    fn readers_table() {
        assert_eq!(scalar(Some(&json!("x"))), Some(Scalar(json!("x"))));
        assert_eq!(scalar(Some(&json!(null))), None);
        assert_eq!(scalar(Some(&json!({}))), None);
        assert_eq!(string(Some(&json!(""))), Some(String::new()));
        assert_eq!(string(Some(&json!(1))), None);
        assert_eq!(non_empty(Some(&json!(""))), None);
        assert_eq!(raw(Some(&json!(null))), None);
        assert_eq!(
            raw(Some(&json!({"a": 1}))),
            Some(Raw::verbatim(&json!({"a": 1})))
        );
        assert_eq!(
            raw_array(Some(&json!(["#fff", null]))),
            Some(vec![
                Raw::verbatim(&json!("#fff")),
                Raw::verbatim(&json!(null))
            ])
        );
        assert_eq!(raw_array(Some(&json!("#fff"))), None);
        assert_eq!(boolean(Some(&json!("true"))), None);
    }
}
