//! The `redis` store of kept versions: the fleet tier's Redis or Valkey
//! (`board_api.cache.shared`: its connection, key prefix, fleet key, timeout
//! and breaker), so every node of a fleet reads every version any node
//! kept.
//!
//! - **Keys** carry no secret: `{prefix}{<hash of the board id>}:ver:<version>`
//!   for a version (the token is a hash of content, not a secret) and
//!   `…:vers` for the board's index (version, when last seen, bytes, when
//!   first kept). The hash tag keeps a board's keys on one cluster slot.
//! - **Sealed**: every value ends in the fleet key's HMAC for its own key
//!   name, as the tier's documents do; a value that does not open is
//!   deleted and counts as not kept.
//! - **Bounded**: each key expires `keep_seconds` after the version was
//!   last seen (`PEXPIRE` on a touch); the index holds at most
//!   `keep_versions` versions and `max_bytes` bytes per board, and what
//!   falls out is deleted. Nodes writing one index at once may each drop
//!   the other's line: the value then lives until its key expires (a
//!   version kept a little longer, never one served that is not one).
//! - **Untrusted**: a value of another type, with no expiry or a longer one
//!   than `keep_seconds`, or an index that does not open or parse, is
//!   deleted (an index starts afresh); never an error to a client. A line
//!   of three fields (written before feeds) reads as first kept when last
//!   seen; a node of such a build reads a line of four as not ours, so
//!   while a fleet upgrades an index may start afresh once.

use super::{Bounds, Kept, Listed};
use crate::pipeline::version::is_version;
use crate::store::shared::format::Invalid;
use crate::store::shared::{SharedSettings, SharedTier, TierLimits};
use bytes::Bytes;
use fred::prelude::{Expiration, KeysInterface};
use std::fmt::Write as _;
use std::time::Duration;

/// The first line of an index value.
const INDEX_MARK: &str = "SBVI1\n";

/// The Redis store.
pub struct RedisVersions {
    tier: SharedTier,
    bounds: Bounds,
}

/// One line of a board's index.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Line {
    version: String,
    seen_ms: u64,
    bytes: usize,
    /// When first kept: never after `seen_ms` (a foreign line's is cut).
    first_ms: u64,
}

impl RedisVersions {
    /// A client of the fleet tier's server for the kept versions; it
    /// connects on first use.
    ///
    /// # Errors
    /// A URL the client cannot use.
    pub fn new(settings: &SharedSettings, bounds: Bounds) -> Result<Self, String> {
        let limits = TierLimits {
            max_document_bytes: bounds.max_document_bytes,
            max_nodes: usize::MAX,
            ttl: bounds.keep,
            error_ttl: Duration::from_secs(1),
        };
        Ok(RedisVersions {
            tier: SharedTier::new(settings.clone(), limits, None)?,
            bounds,
        })
    }

    fn base(&self, board: &str) -> String {
        let digest = ring::digest::digest(&ring::digest::SHA256, board.as_bytes());
        let mut base = String::with_capacity(self.tier.key_prefix().len() + 40);
        base.push_str(self.tier.key_prefix());
        base.push('{');
        for b in &digest.as_ref()[..16] {
            let _ = write!(base, "{b:02x}");
        }
        base.push_str("}:");
        base
    }

    fn value_key(&self, board: &str, version: &str) -> String {
        format!("{}ver:{version}", self.base(board))
    }

    fn index_key(&self, board: &str) -> String {
        format!("{}vers", self.base(board))
    }

    fn keep_ms(&self) -> i64 {
        i64::try_from(self.bounds.keep.as_millis()).unwrap_or(i64::MAX)
    }

    /// The bytes at `key`: `Ok(None)` when absent, `Err(())` when the key
    /// holds another type (then deleted); `None` when the tier did not
    /// answer.
    async fn get_bytes(&self, key: &str) -> Option<Result<Option<Bytes>, ()>> {
        let client = self.tier.client();
        // A WRONGTYPE reply is an answer about the value, not a failure of
        // the tier: it must not count toward the breaker.
        let read = async { Ok::<_, String>(client.get::<Option<Bytes>, _>(key).await) };
        match self.tier.call(read).await? {
            Ok(value) => Some(Ok(value)),
            Err(e) if e.to_string().contains("WRONGTYPE") => {
                self.tier
                    .reject(key, &Invalid("a kept version's key of another type"))
                    .await;
                Some(Err(()))
            }
            Err(_) => None,
        }
    }

    /// The board's index, newest last; empty when absent or not ours (then
    /// deleted: the board starts afresh).
    async fn index(&self, board: &str) -> Option<Vec<Line>> {
        let key = self.index_key(board);
        let value = match self.get_bytes(&key).await? {
            Ok(Some(value)) => value,
            Ok(None) | Err(()) => return Some(Vec::new()),
        };
        let lines = self
            .tier
            .seal()
            .open(&key, &value)
            .and_then(|data| std::str::from_utf8(data).ok())
            .and_then(parse_index);
        match lines {
            Some(lines) => Some(lines),
            None => {
                self.tier
                    .reject(&key, &Invalid("a kept versions' index that is not ours"))
                    .await;
                Some(Vec::new())
            }
        }
    }

    async fn write_index(&self, board: &str, lines: &[Line]) {
        let key = self.index_key(board);
        let mut text = String::from(INDEX_MARK);
        for l in lines {
            let _ = writeln!(
                text,
                "{} {} {} {}",
                l.version, l.seen_ms, l.bytes, l.first_ms
            );
        }
        let sealed = self.tier.seal().seal(&key, text.into_bytes());
        let _ = self.set(key, sealed).await;
    }

    /// Stores `value` under `key` for as long as versions are kept; `None`
    /// when the tier did not answer.
    async fn set(&self, key: String, value: Vec<u8>) -> Option<Option<String>> {
        let set = self.tier.client().set::<Option<String>, _, _>(
            key,
            Bytes::from(value),
            Some(Expiration::PX(self.keep_ms())),
            None,
            false,
        );
        self.tier.call(set).await
    }

    /// Whether `version` of `board` is kept; marks it as seen `now`.
    pub async fn touch(&self, board: &str, version: &str, now: u64) -> bool {
        let Some(mut lines) = self.index(board).await else {
            return false;
        };
        let Some(at) = lines.iter().position(|l| l.version == version) else {
            return false;
        };
        let client = self.tier.client();
        let renewed = self
            .tier
            .call(client.pexpire::<i64, _>(self.value_key(board, version), self.keep_ms(), None))
            .await;
        if renewed != Some(1) {
            // The value is gone (expired, evicted): keep it again.
            return false;
        }
        let mut line = lines.remove(at);
        line.seen_ms = now;
        lines.push(line);
        self.write_index(board, &lines).await;
        true
    }

    /// `value` sealed with the fleet key for the key of `version` of
    /// `board`. CPU work (an HMAC over the value): on the work pool.
    pub fn seal(&self, board: &str, version: &str, value: Vec<u8>) -> Vec<u8> {
        self.tier
            .seal()
            .seal(&self.value_key(board, version), value)
    }

    /// What [`RedisVersions::seal`] sealed, when the seal opens for the
    /// key of `version` of `board`. CPU work: on the work pool.
    pub fn open(&self, board: &str, version: &str, value: &[u8]) -> Option<Vec<u8>> {
        let key = self.value_key(board, version);
        self.tier.seal().open(&key, value).map(<[u8]>::to_vec)
    }

    /// Keeps `sealed` (made by [`RedisVersions::seal`]) as `version` of
    /// `board`, then applies the bounds.
    pub async fn put(&self, board: &str, version: &str, sealed: Vec<u8>, now: u64) {
        if sealed.len() > self.bounds.max_bytes {
            return;
        }
        let Some(mut lines) = self.index(board).await else {
            return;
        };
        let key = self.value_key(board, version);
        let bytes = sealed.len();
        if self.set(key, sealed).await.is_none() {
            return;
        }
        // Kept again (its value had gone): when it was first kept stays.
        let first_ms = lines
            .iter()
            .find(|l| l.version == version)
            .map_or(now, |l| l.first_ms.min(now));
        lines.retain(|l| l.version != version);
        lines.push(Line {
            version: version.to_owned(),
            seen_ms: now,
            bytes,
            first_ms,
        });
        let oldest = now.saturating_sub(u64::try_from(self.keep_ms()).unwrap_or(u64::MAX));
        let mut gone = Vec::new();
        let mut total: usize = lines.iter().map(|l| l.bytes).sum();
        while !lines.is_empty()
            && (lines.len() > self.bounds.keep_versions
                || total > self.bounds.max_bytes
                || lines[0].seen_ms < oldest)
        {
            let line = lines.remove(0);
            total -= line.bytes;
            gone.push(self.value_key(board, &line.version));
        }
        self.write_index(board, &lines).await;
        if !gone.is_empty() {
            let _ = self.tier.call(self.tier.client().del::<i64, _>(gone)).await;
        }
    }

    /// The value kept as `version` of `board`, still sealed (see
    /// [`RedisVersions::open`]), when its key's life is one a node gives.
    pub async fn get(&self, board: &str, version: &str) -> Kept {
        let key = self.value_key(board, version);
        let value = match self.get_bytes(&key).await {
            Some(Ok(Some(value))) => value,
            Some(Err(())) => return Kept::Rejected,
            Some(Ok(None)) => return Kept::Missing,
            // The tier did not answer: not an answer about the version.
            None => return Kept::Unavailable,
        };
        let client = self.tier.client();
        let life = self.tier.call(client.pttl::<i64, _>(key.as_str())).await;
        if let Some(ms) = life {
            // Written by a node: with an expiry, and not past keep_seconds.
            if ms < 0 || ms > self.keep_ms() {
                self.tier
                    .reject(
                        &key,
                        &Invalid("a kept version with no expiry or too long a one"),
                    )
                    .await;
                return Kept::Rejected;
            }
        }
        Kept::Value(value.to_vec())
    }

    /// The versions of `board` its index lists younger than the age bound,
    /// with when each was first kept, newest first, at most `max`; `None`
    /// when the tier did not answer. A line whose value has gone since
    /// (expired, evicted) is still listed: reading it back says so.
    pub async fn list(&self, board: &str, max: usize, now: u64) -> Option<Vec<Listed>> {
        let lines = self.index(board).await?;
        Some(listed(lines, max, now, self.bounds.keep_ms()))
    }

    /// Deletes a value that did not open as its version (counted and
    /// logged as the tier's rejections are).
    pub async fn forget(&self, board: &str, version: &str) {
        let key = self.value_key(board, version);
        self.tier
            .reject(&key, &Invalid("a kept version that is not its version"))
            .await;
    }
}

/// The lines younger than the age bound as [`Listed`], newest first.
fn listed(lines: Vec<Line>, max: usize, now: u64, keep_ms: u64) -> Vec<Listed> {
    let oldest = now.saturating_sub(keep_ms);
    let listed = lines
        .into_iter()
        .filter(|l| l.seen_ms >= oldest)
        .map(|l| Listed {
            version: l.version,
            first_kept_ms: l.first_ms,
        })
        .collect();
    super::newest_first(listed, max)
}

/// The lines of an index's text; `None` when any line is not one a node
/// writes: `version seen bytes first`, or `version seen bytes` as builds
/// before feeds wrote it (first kept then counts as last seen).
fn parse_index(text: &str) -> Option<Vec<Line>> {
    let body = text.strip_prefix(INDEX_MARK)?;
    let mut lines = Vec::new();
    for line in body.lines() {
        let mut parts = line.split(' ');
        let (Some(version), Some(seen), Some(bytes), first, None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return None;
        };
        if !is_version(version) || lines.len() >= 10_000 {
            return None;
        }
        let seen_ms: u64 = number(seen)?;
        let first_ms = match first {
            Some(first) => number::<u64>(first)?.min(seen_ms),
            None => seen_ms,
        };
        lines.push(Line {
            version: version.to_owned(),
            seen_ms,
            bytes: number(bytes)?,
            first_ms,
        });
    }
    Some(lines)
}

/// A field of digits only (`parse` alone would take a leading `+`).
fn number<T: std::str::FromStr>(field: &str) -> Option<T> {
    if field.is_empty() || field.len() > 20 || !field.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    field.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_is_read_only_as_written() {
        let v = "0a".repeat(16);
        let ok = format!("{INDEX_MARK}{v} 5 100 4\n{v} 6 7\n");
        let lines = parse_index(&ok).expect("reads");
        assert_eq!(
            lines
                .iter()
                .map(|l| (l.seen_ms, l.bytes, l.first_ms))
                .collect::<Vec<_>>(),
            vec![(5, 100, 4), (6, 7, 6)],
            "a line of an older build: first kept when last seen"
        );
        assert_eq!(parse_index(INDEX_MARK), Some(Vec::new()));
        // A first sight after the last one (a foreign line) is cut to it.
        let late = parse_index(&format!("{INDEX_MARK}{v} 5 100 99\n")).expect("reads");
        assert_eq!(late[0].first_ms, 5);
        for bad in [
            String::new(),
            format!("{v} 5 100\n"),
            format!("{INDEX_MARK}{v} 5\n"),
            format!("{INDEX_MARK}{v} 5 100 9 1\n"),
            format!("{INDEX_MARK}{v} 5 100 x\n"),
            format!("{INDEX_MARK}{v} 5 100 -9\n"),
            format!("{INDEX_MARK}{v} 5 100 +9\n"),
            format!("{INDEX_MARK}{v} 5 100 \n"),
            format!("{INDEX_MARK}{v} 5 100 99999999999999999999999\n"),
            format!("{INDEX_MARK}XYZ 5 100\n"),
            format!("{INDEX_MARK}{v} -5 100\n"),
            format!("{INDEX_MARK}{v} +5 100\n"),
        ] {
            assert_eq!(parse_index(&bad), None, "{bad:?}");
        }
    }

    #[test]
    fn listed_newest_first_by_when_first_kept() {
        let line = |c: char, seen_ms, first_ms| Line {
            version: c.to_string().repeat(32),
            seen_ms,
            bytes: 1,
            first_ms,
        };
        // The index's order is by last sight; the list's by first.
        let lines = vec![
            line('c', 120, 120),
            line('b', 130, 110),
            line('a', 140, 100),
        ];
        let order = |max, now| {
            listed(lines.clone(), max, now, 1000)
                .into_iter()
                .map(|l| (l.version.as_bytes()[0], l.first_kept_ms))
                .collect::<Vec<_>>()
        };
        assert_eq!(order(10, 200), vec![(b'c', 120), (b'b', 110), (b'a', 100)]);
        assert_eq!(order(1, 200), vec![(b'c', 120)], "bounded");
        assert_eq!(order(10, 1125), vec![(b'b', 110), (b'a', 100)], "aged");
    }
}
