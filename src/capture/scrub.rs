//! Secrets and person ids out of captured answers, before anything is
//! written; called by [`super::capture`] once the fetch has ended.
//!
//! The answers are read generically, as JSON of any shape, since the web
//! app's fields change:
//!
//! - whatever sits under a key that names a person, a permission or a token
//!   ([`is_sensitive_key`]: every name the sanitizer removes, in any case
//!   and as a part of a key, person words such as `creator`, `viewers` or
//!   `participants`, a last word `by`, a word `uid`) is replaced at any
//!   depth: every string and number in it, and every key in it that is an
//!   id (an `acl` or a `viewers` map is keyed by person ids);
//! - a mention (a node or mark whose `type` ends in `mention`, in any case)
//!   loses what points at a person, on it and in its `attrs` (`id`,
//!   `mentionKey`), whatever their shape: the rule the document's own
//!   (`document::sanitize::MENTION_PERSON_KEYS`), so a capture replays to
//!   the live document;
//! - an e-mail address is replaced wherever it stands, under any key or
//!   none, in a key, inside a longer string (the `email` module);
//! - a string that is JSON itself (Draft.js text is stored so) is read and
//!   scrubbed by the same rules, and written back only when that changed it.
//!
//! What was found that way (and the share link's permission id, and the
//! token) is then replaced wherever else it occurs, as a whole string, an
//! object key, or inside a longer string. Board content is kept.
//!
//! Placeholders are stable within one capture: the same id gives the same
//! `user-N` (or `permission-N`, `token-N`) in every file, so a reader of
//! the capture still sees who wrote what as "the same person".

mod email;
mod keys;

use crate::document::sanitize::{self, is_mention_person_key};
pub use keys::is_sensitive_key;
use keys::{looks_like_id, Kind};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

/// A string found under a sensitive key is replaced elsewhere (as a whole
/// string, a key, or inside a longer string) only from this length on: a
/// role such as `OWNER` or a short key must not eat the board's words.
/// Milanote's ids are 14 characters, its tokens far longer. The share
/// link's permission id, the token and e-mail addresses are replaced
/// elsewhere whatever their length (inside longer strings only from this
/// length on, or, for an address, wherever it has the shape of one).
const MIN_EMBEDDED: usize = 8;

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
    /// E-mail addresses found anywhere: replaced everywhere, whatever
    /// their length.
    emails: HashSet<String>,
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
            Value::String(s) => {
                self.learn_emails(s);
                if let Some(inner) = embedded_json(s) {
                    self.learn_value(&inner, depth + 1);
                }
            }
            Value::Object(map) => {
                for id in mention_ids(map) {
                    self.learn_all(id, Kind::User, depth + 1);
                }
                for (key, v) in map {
                    self.learn_emails(key);
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
            Value::String(s) => {
                self.add(s, kind);
                self.learn_emails(s);
            }
            Value::Object(map) => {
                for (key, v) in map {
                    if looks_like_id(key) {
                        self.add(key, kind);
                    }
                    self.learn_emails(key);
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

    /// The e-mail addresses in `s`, each a person.
    fn learn_emails(&mut self, s: &str) {
        if !s.contains('@') {
            return;
        }
        for (start, end) in email::spans(s) {
            let address = &s[start..end];
            self.add(address, Kind::User);
            self.emails.insert(address.to_owned());
        }
    }

    /// Ends the learning: which found strings are replaced outside
    /// sensitive keys too, and inside longer strings.
    pub fn finish(&mut self) {
        for (s, placeholder) in &self.found {
            if (s.len() >= MIN_EMBEDDED || self.emails.contains(s))
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
            Value::String(s) => *s = self.scrub_text(s, depth),
            Value::Object(map) => {
                let mention = is_mention(map);
                let old = std::mem::take(map);
                for (key, mut v) in old {
                    if is_sensitive_key(&key) || (mention && is_mention_person_key(&key)) {
                        self.scrub_all(&mut v, depth + 1);
                    } else if mention && key == "attrs" {
                        if let Value::Object(attrs) = &mut v {
                            for (_, person) in
                                attrs.iter_mut().filter(|(k, _)| is_mention_person_key(k))
                            {
                                self.scrub_all(person, depth + 2);
                            }
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

    /// Below a sensitive key every string and number goes, and every key
    /// that is an id.
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
            // A person's id may be a number; a count under such a key is
            // not worth telling apart from one.
            Value::Number(_) => *value = Value::from(0),
            Value::Object(map) => {
                let old = std::mem::take(map);
                for (key, mut v) in old {
                    self.scrub_all(&mut v, depth + 1);
                    let key = match self.found.get(&key) {
                        Some(p) => p.clone(),
                        None if looks_like_id(&key) => "redacted".to_owned(),
                        None => key,
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

    /// A string outside sensitive keys: JSON text scrubbed as JSON when
    /// that changes it (re-encoded compactly, which its readers parse the
    /// same), else as text.
    fn scrub_text(&self, s: &str, depth: usize) -> String {
        if let Some(mut inner) = embedded_json(s) {
            let before = inner.clone();
            self.scrub_value(&mut inner, depth + 1);
            if inner != before {
                return serde_json::to_string(&inner).unwrap_or_else(|_| "redacted".to_owned());
            }
        }
        self.text(s)
    }

    /// A string outside sensitive keys: a found string as a whole, or
    /// inside it, and every e-mail address in it.
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
        let current = out.as_deref().unwrap_or(s);
        if email::contains(current) {
            out = Some(self.without_emails(current));
        }
        out.unwrap_or_else(|| s.to_owned())
    }

    /// `s` with each e-mail address replaced by its placeholder (one made
    /// of an id and a domain after the id was replaced is `redacted`).
    fn without_emails(&self, s: &str) -> String {
        let mut out = String::with_capacity(s.len());
        let mut last = 0;
        for (start, end) in email::spans(s) {
            out.push_str(&s[last..start]);
            out.push_str(
                self.found
                    .get(&s[start..end])
                    .map_or("redacted", String::as_str),
            );
            last = end;
        }
        out.push_str(&s[last..]);
        out
    }
}

/// Deeper than this, a captured value is dropped (`null`) rather than
/// walked: a parsed answer is never nested past 128 levels (serde_json's
/// limit), so only a value built otherwise can be.
const MAX_DEPTH: usize = 160;

/// Whether `map` is a mention: a node or mark whose `type` ends in
/// `mention` in any case (the document's rule: [`sanitize::is_mention`]).
fn is_mention(map: &Map<String, Value>) -> bool {
    map.get("type")
        .and_then(Value::as_str)
        .is_some_and(sanitize::is_mention)
}

/// A mention's person: the values of its [`sanitize::MENTION_PERSON_KEYS`], on it and
/// in its `attrs`, of any shape.
fn mention_ids(map: &Map<String, Value>) -> Vec<&Value> {
    if !is_mention(map) {
        return Vec::new();
    }
    let attrs = match map.get("attrs") {
        Some(Value::Object(attrs)) => Some(attrs),
        _ => None,
    };
    map.iter()
        .chain(attrs.into_iter().flatten())
        .filter(|(k, _)| is_mention_person_key(k))
        .map(|(_, v)| v)
        .collect()
}

/// `s` read as JSON when it is a JSON object or array (Draft.js text and
/// some raw contents are stored as strings).
fn embedded_json(s: &str) -> Option<Value> {
    let t = s.trim_start();
    if !(t.starts_with('{') || t.starts_with('[')) {
        return None;
    }
    serde_json::from_str::<Value>(s)
        .ok()
        .filter(|v| v.is_object() || v.is_array())
}

#[cfg(test)]
mod tests;
