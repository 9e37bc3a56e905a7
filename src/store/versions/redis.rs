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
//!   `keep_versions` versions, and what falls out is deleted. The fleet
//!   holds at most `max_bytes` in all: each write records what its board
//!   key holds in an accounting of the fleet's (`{prefix}{versions}:…`,
//!   one slot, updated by one script so concurrent nodes keep it exact),
//!   and when the total is over, the oldest versions of the holder with
//!   the most bytes go first, so one link's boards never evict another's
//!   while they hold more. Holders not written within `keep_seconds` leave
//!   the accounting, as their keys have expired. Nodes writing one index
//!   at once may each drop the other's line: the value then lives until
//!   its key expires (a version kept a little longer, never one served
//!   that is not one).
//! - **Untrusted**: a value of another type, with no expiry or a longer one
//!   than `keep_seconds`, or an index that does not open or parse, is
//!   deleted (an index starts afresh); never an error to a client. A line
//!   of three fields (written before feeds) reads as first kept when last
//!   seen; a node of such a build reads a line of four as not ours, so
//!   while a fleet upgrades an index may start afresh once.

mod index;

use super::{Bounds, Kept, Listed};
use crate::store::shared::format::Invalid;
use crate::store::shared::{SharedSettings, SharedTier, TierLimits};
use bytes::Bytes;
use fred::prelude::{Expiration, KeysInterface, LuaInterface};
use index::{apply_firsts, listed, parse_index, Line};
use std::fmt::Write as _;
use std::time::Duration;

/// Versions one write may evict from the largest holders to bring the
/// fleet within its byte bound (each a few calls; the next write goes on).
const MAX_EVICTIONS: usize = 16;

/// The fleet's byte accounting, atomic on one slot (`{versions}`): KEYS
/// holders (a sorted set: holder, bytes held), written (holder, when last
/// written, ms), the total; ARGV holder, its bytes, now, the oldest time
/// kept, the bound, the keys' life. Holders not written within the age
/// bound leave it (their keys have expired). A total that is not a number
/// or a set of another type is what a node never writes: counted afresh.
/// Answers the largest holder when over the bound, else nil.
const ACCOUNT: &str = r#"
local function fresh()
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
  return 0
end
local old = redis.pcall('ZSCORE', KEYS[1], ARGV[1])
if type(old) == 'table' and old.err then old = fresh() end
old = tonumber(old) or 0
local total = redis.pcall('GET', KEYS[3])
if type(total) == 'table' or (total and not tonumber(total)) then
  old = fresh()
  total = 0
elseif not total then
  total = 0
  local all = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
  for i = 2, #all, 2 do total = total + (tonumber(all[i]) or 0) end
else
  total = tonumber(total)
end
local written = redis.pcall('ZCARD', KEYS[2])
if type(written) == 'table' then fresh() total = 0 old = 0 end
total = total - old + tonumber(ARGV[2])
if tonumber(ARGV[2]) > 0 then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
  redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
else
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('ZREM', KEYS[2], ARGV[1])
end
local stale = redis.call('ZRANGE', KEYS[2], '-inf', '(' .. ARGV[4], 'BYSCORE', 'LIMIT', 0, 64)
for _, h in ipairs(stale) do
  total = total - (tonumber(redis.call('ZSCORE', KEYS[1], h)) or 0)
  redis.call('ZREM', KEYS[1], h)
  redis.call('ZREM', KEYS[2], h)
end
if total < 0 then total = 0 end
redis.call('SET', KEYS[3], total, 'PX', ARGV[6])
redis.call('PEXPIRE', KEYS[1], ARGV[6])
redis.call('PEXPIRE', KEYS[2], ARGV[6])
if total <= tonumber(ARGV[5]) then return false end
return redis.call('ZRANGE', KEYS[1], 0, 0, 'REV')[1]
"#;

/// Whether `name` is a holder's name as [`RedisVersions::holder`] makes it.
fn is_holder(name: &str) -> bool {
    name.len() == 32 && name.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The Redis store.
pub struct RedisVersions {
    tier: SharedTier,
    bounds: Bounds,
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

    /// A board key's name in keys: the first 16 bytes of its SHA-256, in hex.
    fn holder(board: &str) -> String {
        let digest = ring::digest::digest(&ring::digest::SHA256, board.as_bytes());
        let mut hex = String::with_capacity(32);
        for b in &digest.as_ref()[..16] {
            let _ = write!(hex, "{b:02x}");
        }
        hex
    }

    fn base(&self, holder: &str) -> String {
        format!("{}{{{holder}}}:", self.tier.key_prefix())
    }

    fn value_key(&self, holder: &str, version: &str) -> String {
        format!("{}ver:{version}", self.base(holder))
    }

    fn index_key(&self, holder: &str) -> String {
        format!("{}vers", self.base(holder))
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
    async fn index(&self, holder: &str) -> Option<Vec<Line>> {
        let key = self.index_key(holder);
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

    async fn write_index(&self, holder: &str, lines: &[Line]) {
        let key = self.index_key(holder);
        let sealed = self.tier.seal().seal(&key, index::text(lines).into_bytes());
        let _ = self.set(key, sealed).await;
    }

    fn firsts_key(&self, holder: &str) -> String {
        format!("{}firsts", self.base(holder))
    }

    /// Sets the first-kept times of `lines` from the holder's `…:firsts`;
    /// a value that is absent or not ours leaves them at the last sight.
    async fn read_firsts(&self, holder: &str, lines: &mut [Line]) {
        let key = self.firsts_key(holder);
        let Some(Ok(Some(value))) = self.get_bytes(&key).await else {
            return;
        };
        let text = self
            .tier
            .seal()
            .open(&key, &value)
            .and_then(|data| std::str::from_utf8(data).ok());
        if text.and_then(|t| apply_firsts(t, lines)).is_none() {
            self.tier
                .reject(&key, &Invalid("first-kept times that are not ours"))
                .await;
        }
    }

    async fn write_firsts(&self, holder: &str, lines: &[Line]) {
        let key = self.firsts_key(holder);
        let text = index::firsts_text(lines);
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
        let holder = Self::holder(board);
        let Some(mut lines) = self.index(&holder).await else {
            return false;
        };
        let Some(at) = lines.iter().position(|l| l.version == version) else {
            return false;
        };
        let client = self.tier.client();
        let renewed = self
            .tier
            .call(client.pexpire::<i64, _>(self.value_key(&holder, version), self.keep_ms(), None))
            .await;
        if renewed != Some(1) {
            // The value is gone (expired, evicted): keep it again.
            return false;
        }
        let mut line = lines.remove(at);
        line.seen_ms = now;
        lines.push(line);
        self.write_index(&holder, &lines).await;
        let firsts = client.pexpire::<i64, _>(self.firsts_key(&holder), self.keep_ms(), None);
        let _ = self.tier.call(firsts).await;
        true
    }

    /// `value` sealed with the fleet key for the key of `version` of
    /// `board`. CPU work (an HMAC over the value): on the work pool.
    pub fn seal(&self, board: &str, version: &str, value: Vec<u8>) -> Vec<u8> {
        self.tier
            .seal()
            .seal(&self.value_key(&Self::holder(board), version), value)
    }

    /// What [`RedisVersions::seal`] sealed, when the seal opens for the
    /// key of `version` of `board`. CPU work: on the work pool.
    pub fn open(&self, board: &str, version: &str, value: &[u8]) -> Option<Vec<u8>> {
        let key = self.value_key(&Self::holder(board), version);
        self.tier.seal().open(&key, value).map(<[u8]>::to_vec)
    }

    /// Keeps `sealed` (made by [`RedisVersions::seal`]) as `version` of
    /// `board`, then applies the bounds: the board key's count and age, then
    /// the fleet's bytes in all, taken from the largest holder first.
    pub async fn put(&self, board: &str, version: &str, sealed: Vec<u8>, now: u64) {
        if sealed.len() > self.bounds.max_bytes {
            return;
        }
        let holder = Self::holder(board);
        let Some(mut lines) = self.index(&holder).await else {
            return;
        };
        self.read_firsts(&holder, &mut lines).await;
        let key = self.value_key(&holder, version);
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
        let held = self.trim(&holder, &mut lines, now, 0).await;
        if !lines.is_empty() {
            self.write_firsts(&holder, &lines).await;
        }
        let mut largest = self.account(&holder, held, now).await;
        // Over the bound: the oldest versions of the largest holder go,
        // one call at a time (a holder whose keys expired counts 0 and
        // leaves the accounting).
        for _ in 0..MAX_EVICTIONS {
            let Some(victim) = largest.take() else {
                break;
            };
            if !is_holder(&victim) {
                largest = self.account(&victim, 0, now).await;
                continue;
            }
            let Some(mut lines) = self.index(&victim).await else {
                break;
            };
            let held = self.trim(&victim, &mut lines, now, 1).await;
            largest = self.account(&victim, held, now).await;
        }
    }

    /// Applies the count and age bounds to a holder's index, and drops
    /// `extra` more of its oldest versions; writes the index back, deletes
    /// what fell out, and answers the bytes it still holds.
    async fn trim(&self, holder: &str, lines: &mut Vec<Line>, now: u64, extra: usize) -> usize {
        let oldest = now.saturating_sub(u64::try_from(self.keep_ms()).unwrap_or(u64::MAX));
        let mut gone = Vec::new();
        let mut extra = extra;
        while let Some(first) = lines.first() {
            let out_of_bounds = lines.len() > self.bounds.keep_versions || first.seen_ms < oldest;
            if !out_of_bounds {
                if extra == 0 {
                    break;
                }
                extra -= 1;
            }
            let line = lines.remove(0);
            gone.push(self.value_key(holder, &line.version));
        }
        if lines.is_empty() {
            gone.push(self.index_key(holder));
            gone.push(self.firsts_key(holder));
        } else {
            self.write_index(holder, lines).await;
        }
        if !gone.is_empty() {
            let _ = self.tier.call(self.tier.client().del::<i64, _>(gone)).await;
        }
        lines.iter().map(|l| l.bytes).sum()
    }

    /// Records that `holder` holds `bytes` in the fleet's accounting and
    /// forgets holders not written within the age bound; the largest holder
    /// when the fleet holds more than the bound, `None` when within it or
    /// when the tier did not answer.
    async fn account(&self, holder: &str, bytes: usize, now: u64) -> Option<String> {
        let keep = self.keep_ms();
        let oldest = now.saturating_sub(u64::try_from(keep).unwrap_or(u64::MAX));
        let prefix = self.tier.key_prefix();
        let keys = vec![
            format!("{prefix}{{versions}}:holders"),
            format!("{prefix}{{versions}}:written"),
            format!("{prefix}{{versions}}:bytes"),
        ];
        let args = vec![
            holder.to_owned(),
            bytes.to_string(),
            now.to_string(),
            oldest.to_string(),
            self.bounds.max_bytes.to_string(),
            keep.to_string(),
        ];
        let call = self
            .tier
            .client()
            .eval::<Option<String>, _, _, _>(ACCOUNT, keys, args);
        self.tier.call(call).await.flatten()
    }

    /// The value kept as `version` of `board`, still sealed (see
    /// [`RedisVersions::open`]), when its key's life is one a node gives.
    pub async fn get(&self, board: &str, version: &str) -> Kept {
        let key = self.value_key(&Self::holder(board), version);
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
        let holder = Self::holder(board);
        let mut lines = self.index(&holder).await?;
        self.read_firsts(&holder, &mut lines).await;
        Some(listed(lines, max, now, self.bounds.keep_ms()))
    }

    /// Deletes a value that did not open as its version (counted and
    /// logged as the tier's rejections are).
    pub async fn forget(&self, board: &str, version: &str) {
        let key = self.value_key(&Self::holder(board), version);
        self.tier
            .reject(&key, &Invalid("a kept version that is not its version"))
            .await;
    }
}

#[cfg(test)]
mod tests;
