//! Sensitive-field removal: runs on every normalized
//! document before it is cached or selected, so no view, selector or cache entry
//! ever holds a credential or personal field.
//!
//! Keys are compared ASCII case-insensitively at every depth, inside arrays and
//! inside raw values (`blocks`, `UNKNOWN.content`) too. The walk uses an explicit
//! stack, so a deeply nested provider value cannot overflow the thread's stack.

#[cfg(any(test, feature = "internals"))]
use serde_json::Value;

/// The sensitive key names, lower case. A key equal to one of them, ignoring
/// ASCII case, is removed wherever it appears.
pub const SENSITIVE_KEYS: [&str; 18] = [
    "accesstoken",
    "internalid",
    "permission",
    "permissionid",
    "privatemetadata",
    "token",
    "userid",
    "acl",
    "assignments",
    "email",
    "password",
    "secret",
    "apikey",
    "authorization",
    "cookie",
    "sessionid",
    "creator",
    "modifiedby",
];

/// The lengths of the [`SENSITIVE_KEYS`], as a set of bits (all are under 64).
const SENSITIVE_LENGTHS: u64 = {
    let mut bits = 0;
    let mut i = 0;
    while i < SENSITIVE_KEYS.len() {
        bits |= 1 << SENSITIVE_KEYS[i].len();
        i += 1;
    }
    bits
};

/// The keys by which a mention ([`is_mention`]) points at a person, on the
/// node or mark itself and in its `attrs` (ASCII case ignored): TipTap's
/// `attrs.id`, Milanote's `mentionKey`, and any `id` of the mention itself.
/// (Its `userId` is a [`SENSITIVE_KEYS`] name wherever it stands.)
///
/// One rule for the document and the capture: the service leaves these out
/// of every raw value it copies (`provider::raw`), and a capture replaces
/// them (`capture::scrub`), so a captured board replays to the document the
/// board itself gives.
pub const MENTION_PERSON_KEYS: [&str; 2] = ["id", "mentionKey"];

/// Whether a rich-text node or mark of type `kind` is a mention: its type
/// ends in `mention`, in any ASCII case (TipTap's `mention` node,
/// Milanote's `textMention` mark, a `Mention`, a `userMention`).
pub fn is_mention(kind: &str) -> bool {
    let kind = kind.as_bytes();
    kind.len() >= 7 && kind[kind.len() - 7..].eq_ignore_ascii_case(b"mention")
}

/// Whether `key`, on a mention or in its `attrs`, points at a person
/// ([`MENTION_PERSON_KEYS`]).
pub fn is_mention_person_key(key: &str) -> bool {
    MENTION_PERSON_KEYS
        .iter()
        .any(|k| k.len() == key.len() && k.eq_ignore_ascii_case(key))
}

/// True when `key` names a sensitive field, compared case-insensitively.
///
/// ASCII keys (nearly all) are compared without allocating. A key with other
/// characters is also compared after Unicode lower-casing and case folding of
/// the characters that fold to ASCII letters (`K` KELVIN SIGN to `k`, `ſ` LONG
/// S to `s`), so no spelling that a client's `toLowerCase()` or `casefold()`
/// reads as a sensitive name gets through.
pub fn is_sensitive(key: &str) -> bool {
    if key.is_ascii() {
        // Most keys a board holds (`type`, `text`, `content`, `attrs`) have
        // no sensitive name of their length, or none with their first letter:
        // those are answered without comparing names.
        let bytes = key.as_bytes();
        if bytes.len() >= 64 || SENSITIVE_LENGTHS & (1 << bytes.len()) == 0 {
            return false;
        }
        // Every name starts with a lower-case letter, and `b | 0x20` is that
        // letter exactly when `b` is it in either case.
        let first = bytes.first().map_or(0, |b| b | 0x20);
        return SENSITIVE_KEYS.iter().any(|s| {
            s.len() == key.len() && s.as_bytes()[0] == first && s.eq_ignore_ascii_case(key)
        });
    }
    let folded: String = key
        .chars()
        .flat_map(char::to_lowercase)
        .map(|c| if c == 'ſ' { 's' } else { c })
        .collect();
    SENSITIVE_KEYS.contains(&folded.as_str())
}

/// Removes every sensitive key from `value`, at every depth, keeping the order
/// of the remaining keys.
#[cfg(any(test, feature = "internals"))]
pub fn sanitize(value: &mut Value) {
    let mut stack: Vec<&mut Value> = vec![value];
    while let Some(current) = stack.pop() {
        match current {
            Value::Object(map) => {
                // `retain` keeps order whether or not serde_json's `preserve_order` is on.
                map.retain(|key, _| !is_sensitive(key));
                stack.extend(map.values_mut());
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sensitive_names() {
        let cases: &[(&str, bool)] = &[
            ("token", true),
            ("Token", true),
            ("TOKEN", true),
            ("accessToken", true),
            ("AccessToken", true),
            ("internalId", true),
            ("permission", true),
            ("permissionId", true),
            ("privateMetadata", true),
            ("userId", true),
            ("USERID", true),
            ("acl", true),
            ("assignments", true),
            ("email", true),
            ("password", true),
            ("secret", true),
            ("apiKey", true),
            ("authorization", true),
            ("cookie", true),
            ("sessionId", true),
            ("creator", true),
            ("modifiedBy", true),
            ("tokens", false),
            ("user", false),
            ("user_id", false),
            ("emails", false),
            ("id", false),
            ("title", false),
            ("", false),
            ("secre", false),
            ("secrét", false),
            ("ſecret", true),
            ("accesstoK\u{212A}en", false),
            ("accessto\u{212A}en", true),
            ("ACCESSTOKEN", true),
            ("İd", false),
        ];
        for (key, expected) in cases {
            assert_eq!(is_sensitive(key), *expected, "{key}");
        }
    }

    proptest::proptest! {
        /// An ASCII key is sensitive exactly when it is one of the names,
        /// ignoring ASCII case: the names in any case, with one byte
        /// changed, cut or lengthened, and any other key.
        #[test]
        fn ascii_keys_are_compared_with_every_name(
            name in proptest::sample::select(SENSITIVE_KEYS.to_vec()),
            cases in proptest::collection::vec(proptest::bool::ANY, 15),
            at in 0usize..16,
            byte in 0x20u8..0x7f,
            edit in 0u8..4,
            other in "[ -~]{0,20}",
        ) {
            let mut key: Vec<u8> = name
                .bytes()
                .zip(&cases)
                .map(|(b, &up)| if up { b.to_ascii_uppercase() } else { b })
                .collect();
            let at = at.min(key.len() - 1);
            match edit {
                0 => key[at] = byte,
                1 => key.truncate(at),
                2 => key.insert(at, byte),
                _ => {}
            }
            for key in [String::from_utf8(key).unwrap(), other] {
                let plain = SENSITIVE_KEYS.iter().any(|s| s.eq_ignore_ascii_case(&key));
                proptest::prop_assert_eq!(is_sensitive(&key), plain, "{}", key);
            }
        }
    }

    #[test]
    fn mentions_and_their_person_keys() {
        for kind in [
            "mention",
            "Mention",
            "textMention",
            "userMention",
            "MENTION",
        ] {
            assert!(is_mention(kind), "{kind}");
        }
        for kind in ["mentions", "mentionGroup", "text", "", "ention"] {
            assert!(!is_mention(kind), "{kind}");
        }
        for key in ["id", "ID", "mentionKey", "mentionkey"] {
            assert!(is_mention_person_key(key), "{key}");
        }
        for key in ["label", "originalText", "ids", "key"] {
            assert!(!is_mention_person_key(key), "{key}");
        }
    }

    #[test]
    fn removes_at_every_depth_and_keeps_the_rest() {
        let mut doc = json!({
            "id": "b",
            "Token": "t",
            "board": {
                "title": "x",
                "children": [
                    {"type": "CARD", "richText": {"blocks": [{"type": "text", "attrs": {"userId": "u", "keep": 1}}], "plainText": "p"}},
                    {"type": "UNKNOWN", "content": {"email": "a@b", "nested": [[{"PASSWORD": "p", "ok": true}]]}}
                ],
                "acl": {"anything": 1}
            }
        });
        sanitize(&mut doc);
        assert_eq!(
            doc,
            json!({
                "id": "b",
                "board": {
                    "title": "x",
                    "children": [
                        {"type": "CARD", "richText": {"blocks": [{"type": "text", "attrs": {"keep": 1}}], "plainText": "p"}},
                        {"type": "UNKNOWN", "content": {"nested": [[{"ok": true}]]}}
                    ]
                }
            })
        );
    }

    #[test]
    fn keeps_key_order() {
        let text = r#"{"b":1,"secret":2,"a":3,"c":{"z":1,"token":2,"y":3},"Email":4}"#;
        let before: Value = serde_json::from_str(text).expect("json");
        let mut after = before.clone();
        sanitize(&mut after);
        let kept = |v: &Value| -> Vec<String> {
            v.as_object()
                .map(|m| m.keys().filter(|k| !is_sensitive(k)).cloned().collect())
                .unwrap_or_default()
        };
        assert_eq!(kept(&before), kept(&after));
        assert_eq!(
            kept(&after),
            after
                .as_object()
                .map(|m| m.keys().cloned().collect::<Vec<_>>())
                .unwrap_or_default()
        );
        assert_eq!(kept(&before["c"]), kept(&after["c"]));
        assert_eq!(after["c"].as_object().map(|m| m.len()), Some(2));
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        // Built by hand: serde_json's parser stops at depth 128.
        // (`json!` would serialize `doc` again, recursively, so build by hand.)
        let mut doc = json!({"secret": 1});
        for _ in 0..100_000 {
            let mut map = serde_json::Map::new();
            map.insert("a".into(), doc);
            map.insert("token".into(), Value::from(1));
            doc = Value::Array(vec![Value::Object(map)]);
        }
        sanitize(&mut doc);
        // Dropping a value this deep would recurse, so take it apart iteratively.
        let mut stack = vec![doc];
        let mut secrets = 0;
        while let Some(v) = stack.pop() {
            match v {
                Value::Object(map) => {
                    for (k, v) in map {
                        secrets += usize::from(is_sensitive(&k));
                        stack.push(v);
                    }
                }
                Value::Array(items) => stack.extend(items),
                _ => {}
            }
        }
        assert_eq!(secrets, 0);
    }
}
