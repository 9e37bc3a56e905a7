//! What is read of an element besides its `content`: its id, type, place,
//! times and thread id, read once from the element's fields when its answer
//! is read (the fields themselves are not kept). Also the one rule for which
//! element an id names.

use crate::document::{Location, Timestamps};
use crate::provider::normalize::fields;
use crate::provider::normalize::raw::ident;
use serde_json::Value;

/// One element's head.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Head {
    /// Whether the element is an object. Anything else is no element, but
    /// still claims its map key (and can be replaced there).
    pub is_object: bool,
    /// `id`, else `_id`, when it is an identifier.
    pub id: Option<String>,
    /// The raw `elementType`, when it is a string.
    pub element_type: Option<String>,
    /// `location`, normalized.
    pub location: Option<Location>,
    /// `timestamps` from `meta`, normalized.
    pub timestamps: Option<Timestamps>,
    /// The top-level `threadId`, when it is an identifier.
    pub thread_id: Option<String>,
}

impl Head {
    /// The head of a raw element (its `content` is not read).
    pub fn read(element: &Value) -> Head {
        let Value::Object(fields) = element else {
            return Head::default();
        };
        Head {
            is_object: true,
            id: ident(fields.get("id")).or_else(|| ident(fields.get("_id"))),
            element_type: fields
                .get("elementType")
                .and_then(Value::as_str)
                .map(str::to_owned),
            location: fields::location(fields),
            timestamps: fields::timestamps(fields),
            thread_id: ident(fields.get("threadId")),
        }
    }

    /// The raw `elementType`, `""` when it is missing or not a string.
    pub fn element_type(&self) -> &str {
        self.element_type.as_deref().unwrap_or_default()
    }

    /// The id this element claims under map key `key`: `id`, else `_id`,
    /// else the key.
    pub fn claimed_id(&self, key: &str) -> String {
        self.id.clone().unwrap_or_else(|| key.to_owned())
    }

    /// Whether `self` takes the place of `existing` when both claim one id:
    /// a later copy replaces an earlier one, except that a `SKELETON` never
    /// replaces a `BOARD`.
    pub fn replaces(&self, existing: &Head) -> bool {
        !(self.element_type() == "SKELETON" && existing.element_type() == "BOARD")
    }
}

/// The element of `elements` that is `id`: among the entries claiming `id`
/// ([`Head::claimed_id`]), the one that [`Head::replaces`] the others in map
/// order.
///
/// The one rule for "which element is this id": the client's root check
/// uses it on an answer, and merging answers applies it entry by entry, so
/// the root the client accepted is the root that is normalized.
pub fn find_element<'a>(
    elements: impl IntoIterator<Item = (&'a str, &'a Head)>,
    id: &str,
) -> Option<&'a Head> {
    let mut found: Option<&Head> = None;
    for (key, head) in elements {
        let claims = head.id.as_deref().unwrap_or(key) == id;
        if claims && found.is_none_or(|existing| head.replaces(existing)) {
            found = Some(head);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn claimed_id_table() {
        let cases: &[(Value, &str)] = &[
            (json!({"id": "a", "_id": "b"}), "a"),
            (json!({"_id": "b"}), "b"),
            (json!({}), "key"),
            (json!({"id": "", "_id": "b"}), "b"),
            (json!({"id": null, "_id": ""}), "key"),
            (json!({"id": 42}), "42"),
            (json!({"id": 4.5}), "key"),
            (json!({"id": ["x"], "_id": {"y": 1}}), "key"),
            (json!("not an object"), "key"),
            (json!([{"id": "a"}]), "key"),
        ];
        for (raw, want) in cases {
            assert_eq!(Head::read(raw).claimed_id("key"), *want, "{raw}");
        }
    }

    #[test]
    fn find_element_follows_the_id_rule() {
        let elements = json!({
            "r": {"id": "x", "elementType": "BOARD"},
            "k": {"id": "r", "elementType": "CARD"},
            "n": {"_id": 7, "elementType": "CARD"},
            "plain": {"elementType": "TASK"},
            "b": {"_id": "bb", "elementType": "BOARD"},
            "s": {"_id": "bb", "elementType": "SKELETON"},
            "c": {"id": "cc", "elementType": "A"},
            "d": {"id": "cc", "elementType": "B"},
            "e": 5
        });
        let heads: Vec<(String, Head)> = elements
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), Head::read(v)))
            .collect();
        let iter = || heads.iter().map(|(k, h)| (k.as_str(), h));
        let kind = |id: &str| find_element(iter(), id).map(|h| h.element_type().to_owned());
        // The map key "r" holds element "x": "r" is the element whose id is "r".
        assert_eq!(kind("r").as_deref(), Some("CARD"));
        assert_eq!(kind("x").as_deref(), Some("BOARD"));
        assert_eq!(kind("k"), None);
        assert_eq!(kind("7").as_deref(), Some("CARD"));
        assert_eq!(kind("plain").as_deref(), Some("TASK"));
        // A SKELETON never replaces a BOARD; otherwise the later copy wins.
        assert_eq!(kind("bb").as_deref(), Some("BOARD"));
        assert_eq!(kind("cc").as_deref(), Some("B"));
        // A non-object claims its key.
        assert_eq!(find_element(iter(), "e").map(|h| h.is_object), Some(false));
        for (key, head) in iter() {
            assert!(
                find_element(iter(), &head.claimed_id(key)).is_some(),
                "{key}"
            );
        }
    }
}
