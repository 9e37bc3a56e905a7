//! Secrets and person ids out of captured answers, before anything is written.
//!
//! The answers are read generically, as JSON of any shape, since the web
//! app's fields change: whatever sits under a key that names a person, a
//! permission or a token (`creator`, `modifiedBy`, `acl`, `userId`,
//! `permissionId`, `token`, `mentionKey`, `email`, ... at any depth; see
//! [`is_sensitive_key`]) is replaced, every string in it and every key in
//! it that looks like an id, and so is a TipTap `mention` node's
//! `attrs.id`. What was found that way (and the share link's permission
//! id, and the token) is then replaced wherever else it occurs, as a whole
//! string, an object key, or inside a longer string. Board content is kept.
//!
//! Placeholders are stable within one capture: the same id gives the same
//! `user-N` (or `permission-N`, `token-N`) in every file, so a reader of
//! the capture still sees who wrote what as "the same person".

use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

/// A string found under a sensitive key is replaced elsewhere (as a whole
/// string, a key, or inside a longer string) only from this length on: a
/// role such as `OWNER` or a short key must not eat the board's words.
/// Milanote's ids are 14 characters, its tokens far longer. The share
/// link's permission id and the token are replaced elsewhere whatever
/// their length (inside longer strings only from this length on).
const MIN_EMBEDDED: usize = 8;

/// Words that mark a key as naming a person, a permission or a token
/// (compared with the key lower-cased).
const SENSITIVE_WORDS: &[&str] = &[
    "user",
    "creator",
    "modifiedby",
    "createdby",
    "owner",
    "author",
    "editor",
    "member",
    "collaborator",
    "assign",
    "acl",
    "permission",
    "token",
    "password",
    "secret",
    "email",
    "mention",
    "reaction",
];

/// Whether the value under `key` is a person's, a permission's or a token's.
pub fn is_sensitive_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    SENSITIVE_WORDS.iter().any(|w| key.contains(w))
}

/// What a found string is replaced by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    User,
    Permission,
    Token,
}

impl Kind {
    fn of_key(key: &str) -> Kind {
        let key = key.to_ascii_lowercase();
        if key.contains("token") {
            Kind::Token
        } else if key.contains("permission") {
            Kind::Permission
        } else {
            Kind::User
        }
    }

    fn prefix(self) -> &'static str {
        match self {
            Kind::User => "user",
            Kind::Permission => "permission",
            Kind::Token => "token",
        }
    }
}

/// Learns what to replace from every answer of a capture ([`Scrubber::learn`]),
/// then replaces it in each ([`Scrubber::scrub`]).
#[derive(Debug, Default)]
pub struct Scrubber {
    /// Every found string and its placeholder.
    found: HashMap<String, String>,
    counts: [usize; 3],
    /// Found strings replaced outside sensitive keys too, as whole strings
    /// and keys (see [`MIN_EMBEDDED`]).
    global: HashSet<String>,
    /// Element and board ids: never taken for a person's id elsewhere.
    protected: HashSet<String>,
    /// Found strings replaced inside longer strings, longest first.
    embedded: Vec<(String, String)>,
    /// How many person ids are replaced everywhere.
    users: usize,
}

impl Scrubber {
    /// A scrubber that already knows the share link's permission id.
    pub fn new(permission_id: &str) -> Scrubber {
        let mut scrubber = Scrubber::default();
        scrubber.add(permission_id, Kind::Permission);
        scrubber.global.insert(permission_id.to_owned());
        scrubber
    }

    /// The token the provider gave for the share link, read from the token
    /// endpoint's answer.
    pub fn add_token(&mut self, token: &str) {
        self.add(token, Kind::Token);
        self.global.insert(token.to_owned());
    }

    /// How many distinct person ids (of an id's length) were found.
    pub fn users(&self) -> usize {
        self.users
    }

    fn add(&mut self, s: &str, kind: Kind) {
        if s.is_empty() || self.found.contains_key(s) {
            return;
        }
        let n = &mut self.counts[kind as usize];
        *n += 1;
        self.found
            .insert(s.to_owned(), format!("{}-{n}", kind.prefix()));
    }

    /// Pass one, over one answer: collects what sits under sensitive keys,
    /// and the element and board ids that must stay.
    pub fn learn(&mut self, answer: &Value) {
        if let Some(Value::Object(elements)) = answer.get("elements") {
            for (key, element) in elements {
                self.protected.insert(key.clone());
                for id in ["_id", "id"] {
                    if let Some(Value::String(id)) = element.get(id) {
                        self.protected.insert(id.clone());
                    }
                }
            }
        }
        if let Some(Value::Array(ids)) = answer.get("boardIds") {
            self.protected
                .extend(ids.iter().filter_map(Value::as_str).map(str::to_owned));
        }
        self.learn_value(answer, 0);
    }

    fn learn_value(&mut self, value: &Value, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        match value {
            Value::Object(map) => {
                if let Some(id) = mention_id(map) {
                    self.add(id, Kind::User);
                }
                for (key, v) in map {
                    if is_sensitive_key(key) {
                        self.learn_all(v, Kind::of_key(key), depth + 1);
                    } else {
                        self.learn_value(v, depth + 1);
                    }
                }
            }
            Value::Array(items) => {
                for v in items {
                    self.learn_value(v, depth + 1);
                }
            }
            _ => {}
        }
    }

    /// Everything below a sensitive key: its strings, and its keys that look
    /// like ids.
    fn learn_all(&mut self, value: &Value, kind: Kind, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        match value {
            Value::String(s) => self.add(s, kind),
            Value::Object(map) => {
                for (key, v) in map {
                    if looks_like_id(key) {
                        self.add(key, kind);
                    }
                    let kind = if is_sensitive_key(key) {
                        Kind::of_key(key)
                    } else {
                        kind
                    };
                    self.learn_all(v, kind, depth + 1);
                }
            }
            Value::Array(items) => {
                for v in items {
                    self.learn_all(v, kind, depth + 1);
                }
            }
            _ => {}
        }
    }

    /// Ends the learning: which found strings are replaced outside
    /// sensitive keys too, and inside longer strings.
    pub fn finish(&mut self) {
        for (s, placeholder) in &self.found {
            if s.len() >= MIN_EMBEDDED
                && !self.protected.contains(s)
                && self.global.insert(s.clone())
                && placeholder.starts_with("user-")
            {
                self.users += 1;
            }
        }
        let mut embedded: Vec<(String, String)> = self
            .found
            .iter()
            .filter(|(s, _)| s.len() >= MIN_EMBEDDED && self.global.contains(*s))
            .map(|(s, p)| (s.clone(), p.clone()))
            .collect();
        embedded.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        self.embedded = embedded;
    }

    /// Pass two, over one answer: replaces what was learned. Call
    /// [`Scrubber::finish`] first.
    pub fn scrub(&self, answer: &mut Value) {
        self.scrub_value(answer, 0);
    }

    fn scrub_value(&self, value: &mut Value, depth: usize) {
        if depth > MAX_DEPTH {
            *value = Value::Null;
            return;
        }
        match value {
            Value::String(s) => *s = self.text(s),
            Value::Object(map) => {
                let mention = mention_id(map).is_some();
                let old = std::mem::take(map);
                for (key, mut v) in old {
                    if is_sensitive_key(&key) {
                        self.scrub_all(&mut v, depth + 1);
                    } else if mention && key == "attrs" {
                        if let Some(id) = v.get_mut("id") {
                            self.scrub_all(id, depth + 2);
                        }
                        self.scrub_value(&mut v, depth + 1);
                    } else {
                        self.scrub_value(&mut v, depth + 1);
                    }
                    map.insert(self.text(&key), v);
                }
            }
            Value::Array(items) => {
                for v in items {
                    self.scrub_value(v, depth + 1);
                }
            }
            _ => {}
        }
    }

    /// Below a sensitive key every string goes, and every key that looks
    /// like an id.
    fn scrub_all(&self, value: &mut Value, depth: usize) {
        if depth > MAX_DEPTH {
            *value = Value::Null;
            return;
        }
        match value {
            Value::String(s) => {
                *s = match self.found.get(s.as_str()) {
                    Some(p) => p.clone(),
                    None if s.is_empty() => String::new(),
                    None => "redacted".to_owned(),
                }
            }
            Value::Object(map) => {
                let old = std::mem::take(map);
                for (key, mut v) in old {
                    self.scrub_all(&mut v, depth + 1);
                    let key = if looks_like_id(&key) {
                        self.found
                            .get(&key)
                            .cloned()
                            .unwrap_or_else(|| "redacted".to_owned())
                    } else {
                        key
                    };
                    map.insert(key, v);
                }
            }
            Value::Array(items) => {
                for v in items {
                    self.scrub_all(v, depth + 1);
                }
            }
            _ => {}
        }
    }

    /// A string outside sensitive keys: a found string as a whole, or
    /// inside it.
    fn text(&self, s: &str) -> String {
        if self.global.contains(s) {
            if let Some(p) = self.found.get(s) {
                return p.clone();
            }
        }
        let mut out: Option<String> = None;
        for (needle, placeholder) in &self.embedded {
            let current = out.as_deref().unwrap_or(s);
            if current.contains(needle.as_str()) {
                out = Some(current.replace(needle.as_str(), placeholder));
            }
        }
        out.unwrap_or_else(|| s.to_owned())
    }
}

/// Deeper than this, a captured value is dropped (`null`) rather than
/// walked: a parsed answer is never nested past 128 levels (serde_json's
/// limit), so only a value built otherwise can be.
const MAX_DEPTH: usize = 160;

/// A TipTap `mention` node's `attrs.id` (a person's id).
fn mention_id(map: &Map<String, Value>) -> Option<&str> {
    if map.get("type").and_then(Value::as_str) != Some("mention") {
        return None;
    }
    map.get("attrs")?.get("id")?.as_str()
}

/// A key that is data, not a field name: it has a digit, an `@` or a
/// character outside `[A-Za-z_]` (Milanote's ids always have digits).
fn looks_like_id(key: &str) -> bool {
    !key.is_empty() && key.bytes().any(|b| !(b.is_ascii_alphabetic() || b == b'_'))
}

#[cfg(test)]
mod tests;
