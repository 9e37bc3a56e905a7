//! Which keys of a captured answer hold a person's, a permission's or a
//! token's value, and which object keys are data (an id) rather than a
//! field name; asked by the scrubber ([`super::Scrubber`]) of every key.
//!
//! The rule is wider than the sanitizer's on purpose: the sanitizer removes
//! exact names from a document whose fields are known, while a capture holds
//! the provider's answers as they came, with whatever fields the web app
//! sends that day. So every name the sanitizer removes counts here too (from
//! its own list, so the two cannot drift), but as a part of a key, in any
//! case and with any separators, beside the words below.

use crate::document::sanitize::{self, SENSITIVE_KEYS};

/// Words that, as a part of a key (compared with its letters and digits
/// only, lower-cased), mark it as naming a person, beside the sanitizer's
/// [`SENSITIVE_KEYS`].
const PERSON_WORDS: &[&str] = &[
    "user",
    "owner",
    "author",
    "editor",
    "member",
    "collaborator",
    "assign",
    "mention",
    "reaction",
    "participant",
    "viewer",
    "person",
    "people",
    "contact",
];

/// Whole words of a key (split at separators and at a lower-case letter or
/// digit followed by an upper-case one) that name a person wherever they
/// stand. `uid` is matched as a word only: as a part it is in `fluid`.
const PERSON_WHOLE_WORDS: &[&str] = &["uid", "uids"];

/// Whether the value under `key` is a person's, a permission's or a token's:
/// the key's letters and digits, lower-cased, hold a sensitive word; or its last word is
/// `by` (`updatedBy`, `seen_by`, `by`); or one of its words is `uid`. Every
/// key the sanitizer removes is one.
pub fn is_sensitive_key(key: &str) -> bool {
    if sanitize::is_sensitive(key) {
        return true;
    }
    let flat = folded(key);
    if SENSITIVE_KEYS
        .iter()
        .chain(PERSON_WORDS)
        .any(|w| flat.contains(w))
    {
        return true;
    }
    let words = words(key);
    words.last().is_some_and(|w| w.eq_ignore_ascii_case("by"))
        || words
            .iter()
            .any(|w| PERSON_WHOLE_WORDS.iter().any(|p| w.eq_ignore_ascii_case(p)))
}

/// What a found string is replaced by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    User,
    Permission,
    Token,
}

impl Kind {
    /// The kind of what sits under a sensitive `key`.
    pub fn of_key(key: &str) -> Kind {
        let flat = folded(key);
        if flat.contains("token") {
            Kind::Token
        } else if flat.contains("permission") {
            Kind::Permission
        } else {
            Kind::User
        }
    }

    pub fn prefix(self) -> &'static str {
        match self {
            Kind::User => "user",
            Kind::Permission => "permission",
            Kind::Token => "token",
        }
    }
}

/// `key`'s letters and digits, lower-cased as a client's `toLowerCase()`
/// would (and `ſ` as `s`, as the sanitizer folds it): `E_Mail`, `e-mail`
/// and `EMAIL` are all `email`, `Session-ID` is `sessionid`.
fn folded(key: &str) -> String {
    key.chars()
        .flat_map(char::to_lowercase)
        .map(|c| if c == 'ſ' { 's' } else { c })
        .filter(|c| c.is_alphanumeric())
        .collect()
}

/// `key` split into words: at every character that is not a letter or a
/// digit, and between a lower-case letter or a digit and an upper-case
/// letter (`lastEditedBy` is `last`, `Edited`, `By`; `UPDATED_BY` is
/// `UPDATED`, `BY`; `ownerUID` is `owner`, `UID`).
fn words(key: &str) -> Vec<&str> {
    let mut words = Vec::new();
    let mut start = None;
    let mut previous: Option<char> = None;
    for (i, c) in key.char_indices() {
        if !c.is_alphanumeric() {
            if let Some(s) = start.take() {
                words.push(&key[s..i]);
            }
        } else {
            let boundary =
                c.is_uppercase() && previous.is_some_and(|p| p.is_lowercase() || p.is_numeric());
            match start {
                Some(s) if boundary => {
                    words.push(&key[s..i]);
                    start = Some(i);
                }
                None => start = Some(i),
                Some(_) => {}
            }
        }
        previous = Some(c);
    }
    if let Some(s) = start {
        words.push(&key[s..]);
    }
    words
}

/// A key that is data, not a field name (under a sensitive key it is
/// replaced: an `acl` or a `viewers` map is keyed by person ids). A field
/// name is made of ASCII letters and `_`, in camelCase, PascalCase,
/// snake_case or UPPER_CASE: two upper-case letters in a row only when it
/// has no lower-case letter. Anything else is an id: a digit, an `@`, other
/// characters, or letters mixed the way a random id mixes them
/// (`AbCDefGhIJklMn`); a letters-only id that happens to read as camelCase
/// is caught only when it was found elsewhere as a value.
pub fn looks_like_id(key: &str) -> bool {
    if key.is_empty() {
        return false;
    }
    if !key.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_') {
        return true;
    }
    let has_lower = key.bytes().any(|b| b.is_ascii_lowercase());
    has_lower
        && key
            .as_bytes()
            .windows(2)
            .any(|w| w[0].is_ascii_uppercase() && w[1].is_ascii_uppercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_the_sanitizer_removes_is_sensitive_in_any_case() {
        for key in SENSITIVE_KEYS {
            let upper = key.to_ascii_uppercase();
            let first_up = format!("{}{}", key[..1].to_ascii_uppercase(), &key[1..]);
            for variant in [key.to_string(), upper, first_up] {
                assert!(is_sensitive_key(&variant), "{variant}");
                assert!(is_sensitive_key(&format!("x_{variant}_y")), "{variant}");
            }
        }
        for key in [
            "sessionId",
            "apiKey",
            "Cookie",
            "internalId",
            "authorization",
            "privateMetadata",
            "session_id",
            "X-Api-Key",
            "ſecret",
            "accessto\u{212A}en",
        ] {
            assert!(is_sensitive_key(key), "{key}");
        }
    }

    #[test]
    fn person_keys_by_the_wider_rule() {
        for key in [
            "updatedBy",
            "lastEditedBy",
            "deletedBy",
            "seenBy",
            "sharedBy",
            "invitedBy",
            "by",
            "BY",
            "updated_by",
            "UPDATED_BY",
            "uid",
            "ownerUID",
            "UIDs",
            "uid_list",
            "participants",
            "viewers",
            "person",
            "people",
            "e_mail",
            "E-Mail",
            "contact",
            "contactInfo",
            "userId",
            "creator",
            "modifiedBy",
            "mentionKey",
            "reactions",
        ] {
            assert!(is_sensitive_key(key), "{key}");
        }
        for key in [
            "title",
            "content",
            "elementType",
            "boardId",
            "x",
            "_id",
            "id",
            "text",
            "hobby",
            "fluid",
            "bytes",
            "byline",
            "location",
            "parentId",
            "label",
            "originalText",
        ] {
            assert!(!is_sensitive_key(key), "{key}");
        }
    }

    #[test]
    fn kinds_follow_the_key() {
        assert_eq!(Kind::of_key("accessToken"), Kind::Token);
        assert_eq!(Kind::of_key("Permission_ID"), Kind::Permission);
        assert_eq!(Kind::of_key("seenBy"), Kind::User);
    }

    #[test]
    fn ids_and_field_names() {
        for key in [
            "1XbZ5iAlice001",
            "a@b.example",
            "AbCDefGhIJklMn",
            "user-1",
            "x y",
        ] {
            assert!(looks_like_id(key), "{key}");
        }
        for key in [
            "public",
            "role",
            "OWNER",
            "ACCESS_DENIED",
            "lastSeen",
            "Name",
            "",
        ] {
            assert!(!looks_like_id(key), "{key}");
        }
    }
}
