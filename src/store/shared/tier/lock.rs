//! A board's load lock in the fleet tier: taken before a node loads a board
//! that no node has stored, so the fleet loads it once.
//!
//! A lock can delay a load, never fail it. Anyone who can write to the key
//! prefix can write a lock, so a lock counts only when it is a live one of
//! the fleet's:
//!
//! - its value is a random token sealed with the fleet key for the lock's
//!   own key name ([`LockValue`]), so a node tells a lock another node took
//!   from one written by anyone else, which counts as absent and is taken
//!   over (compare-and-set on the value seen, so a live lock taken
//!   meanwhile is left alone);
//! - a lock of another type than a string counts as absent and is replaced;
//! - one with no expiry, or a longer one than `lock_ms`, counts as expired;
//! - a node waits for a live lock's holder at most its share of its own
//!   deadline ([`wait_share`]), polling with back-off, and then loads the
//!   board itself: a lock held by a node that hangs (or by someone holding
//!   the fleet key) costs a request that share, never a `504`.

use super::{Looked, SharedTier};
use crate::document::Coverage;
use crate::metrics::Metrics;
use crate::random::{self, hex};
use crate::store::shared::keys::BoardKeys;
use crate::store::shared::seal::Seal;
use bytes::Bytes;
use fred::prelude::LuaInterface;
use std::time::Duration;
use tokio::time::Instant;

/// Takes a board's lock (`ARGV[1]` the sealed token, `ARGV[2]` its life in
/// ms) when none is there, when the one there is not a string (replaced),
/// has no expiry or a longer one than a lock can have (expired), or still
/// holds `ARGV[3]`, a value the caller found not to be the fleet's.
///
/// The type is told by a `GET` that fails (`redis.pcall`), not by `TYPE`,
/// so the ACL user documented for the tier needs no command it lacked.
const TAKE: &str = "local v = redis.pcall('GET', KEYS[1]) \
     if type(v) == 'table' and v.err then redis.call('DEL', KEYS[1]) v = false end \
     local t = redis.call('PTTL', KEYS[1]) \
     if t == -2 or t == -1 or t > tonumber(ARGV[2]) or (ARGV[3] ~= '' and v == ARGV[3]) then \
     redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end \
     return 0";

/// Releases a lock only if it still holds the caller's value.
const UNLOCK: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then \
     return redis.call('DEL', KEYS[1]) else return 0 end";

/// Waits between polls for another node's document start here and double
/// up to [`MAX_POLL`].
const FIRST_POLL: Duration = Duration::from_millis(5);
const MAX_POLL: Duration = Duration::from_millis(100);

/// The random bytes of a lock's token.
const TOKEN_BYTES: usize = 16;

/// What a lookup saw of a board's lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LockSeen {
    /// No lock, or one that counts as expired or absent (another type, no
    /// expiry, too long a life): taking it succeeds.
    Free,
    /// A lock of the fleet's, within its life: a node is loading.
    Live,
    /// A string that is not a lock of the fleet's: taken over if it is
    /// still there.
    Foreign(Bytes),
}

impl LockSeen {
    /// The lock as a lookup read it: its value (`None` when absent or not a
    /// string) and its remaining life in ms (`-1` none, `-2` gone).
    pub(crate) fn read(
        value: Option<&Bytes>,
        pttl: i64,
        name: &str,
        seal: &Seal,
        lock_ms: i64,
    ) -> Self {
        match value {
            None => LockSeen::Free,
            Some(v) if !LockValue::verifies(v, name, seal) => LockSeen::Foreign(v.clone()),
            Some(_) if (1..=lock_ms).contains(&pttl) => LockSeen::Live,
            Some(_) => LockSeen::Free,
        }
    }
}

/// The outcome of trying to take a board's lock.
pub(crate) enum Lock {
    /// This node loads; release with the value.
    Taken(LockValue),
    /// Another node is loading.
    Held,
    /// The tier did not answer.
    Unavailable,
}

/// A lock's value: a fresh random token and its seal for the lock's key
/// name, as hex text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LockValue(String);

impl LockValue {
    fn new(name: &str, seal: &Seal) -> LockValue {
        LockValue(hex(
            &seal.seal(name, random::bytes::<TOKEN_BYTES>().to_vec())
        ))
    }

    /// Whether `value` is a lock the fleet's key sealed for `name`.
    fn verifies(value: &[u8], name: &str, seal: &Seal) -> bool {
        unhex(value).is_some_and(|bytes| {
            seal.open(name, &bytes)
                .is_some_and(|token| token.len() == TOKEN_BYTES)
        })
    }
}

/// How long a request waits for another node's load of its board before it
/// loads the board itself: half the time it has left, and no longer than a
/// lock lives. Half leaves its own load as much time as the wait.
pub(crate) fn wait_share(now: Instant, deadline: Instant, lock_life: Duration) -> Instant {
    let left = deadline.saturating_duration_since(now);
    now + (left / 2).min(lock_life)
}

/// Back-off between the polls of one request's waits.
#[derive(Debug)]
pub(crate) struct Backoff(Duration);

impl Default for Backoff {
    fn default() -> Self {
        Backoff(FIRST_POLL)
    }
}

impl Backoff {
    /// The pause before the next poll; each one doubles the next, up to
    /// [`MAX_POLL`].
    fn next(&mut self) -> Duration {
        let pause = self.0;
        self.0 = (self.0 * 2).min(MAX_POLL);
        pause
    }
}

impl SharedTier {
    /// Takes the board's lock for a load of `coverage`, taking over `seen`
    /// when it is a value that is not the fleet's.
    pub(crate) async fn lock(&self, keys: &BoardKeys, coverage: Coverage, seen: &LockSeen) -> Lock {
        let name = keys.lock(coverage);
        let value = LockValue::new(&name, &self.seal);
        let ms = self.settings.lock.as_millis().max(1).to_string();
        let foreign = match seen {
            LockSeen::Foreign(v) => v.clone(),
            _ => Bytes::new(),
        };
        let args: Vec<Bytes> = vec![value.0.clone().into(), ms.into(), foreign];
        match self
            .call(self.client.eval::<i64, _, _, _>(TAKE, name, args))
            .await
        {
            Some(1) => Lock::Taken(value),
            Some(_) => Lock::Held,
            None => Lock::Unavailable,
        }
    }

    /// Releases the lock if it still holds `value`.
    pub(crate) async fn unlock(&self, keys: &BoardKeys, coverage: Coverage, value: &LockValue) {
        let _ = self
            .call(self.client.eval::<i64, _, _, _>(
                UNLOCK,
                keys.lock(coverage),
                vec![value.0.clone()],
            ))
            .await;
    }

    /// Waits for another node's load of the board: polls with `backoff`
    /// until a document or failure is there, no live lock is, the tier
    /// stops answering, or `until` (`None` then).
    pub(crate) async fn wait(
        &self,
        keys: &BoardKeys,
        coverage: Coverage,
        until: Instant,
        backoff: &mut Backoff,
    ) -> Option<Looked> {
        self.report(Metrics::fleet_lock_wait);
        loop {
            let wake = Instant::now() + backoff.next();
            if wake >= until {
                return None;
            }
            tokio::time::sleep_until(wake).await;
            match self.lookup(keys, coverage).await {
                Looked::Miss(LockSeen::Live) => {}
                other => return Some(other),
            }
        }
    }
}

/// The bytes of lower-case hex text; `None` for anything else.
pub(crate) fn unhex(text: &[u8]) -> Option<Vec<u8>> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    if !text.len().is_multiple_of(2) {
        return None;
    }
    text.chunks_exact(2)
        .map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::shared::seal::Secret;

    fn seal(fill: u8) -> Seal {
        Seal::new(&Secret::new(vec![fill; 32]).expect("long enough"), None)
    }

    const NAME: &str = "sbapi:{ab}:lock:full";

    #[test]
    fn only_a_sealed_token_for_its_own_key_is_a_live_lock() {
        let fleet = seal(1);
        let ours = LockValue::new(NAME, &fleet);
        let bytes = Bytes::from(ours.0.clone());
        let seen =
            |v: &Bytes, pttl, name: &str| LockSeen::read(Some(v), pttl, name, &fleet, 15_000);
        assert_eq!(seen(&bytes, 900, NAME), LockSeen::Live);
        // No expiry, or longer than a lock lives: expired.
        assert_eq!(seen(&bytes, -1, NAME), LockSeen::Free);
        assert_eq!(seen(&bytes, 15_001, NAME), LockSeen::Free);
        // Moved to another board's key, forged, or sealed with another key.
        for other in [
            seen(&bytes, 900, "sbapi:{cd}:lock:full"),
            seen(&Bytes::from_static(b"x"), 900, NAME),
            seen(&Bytes::from(LockValue::new(NAME, &seal(2)).0), 900, NAME),
            seen(&Bytes::from(ours.0.to_uppercase()), 900, NAME),
        ] {
            assert!(matches!(other, LockSeen::Foreign(_)), "{other:?}");
        }
        assert_eq!(
            LockSeen::read(None, 900, NAME, &fleet, 15_000),
            LockSeen::Free
        );
    }

    #[test]
    fn hex_round_trips_and_refuses_other_text() {
        assert_eq!(
            unhex(hex(&[0, 1, 0xab, 0xff]).as_bytes()),
            Some(vec![0, 1, 0xab, 0xff])
        );
        for bad in [&b"abc"[..], b"zz", b"AB", b"0g"] {
            assert_eq!(unhex(bad), None);
        }
    }

    #[test]
    fn a_wait_takes_half_the_time_left_and_never_longer_than_a_lock() {
        let now = Instant::now();
        let s = Duration::from_secs;
        assert_eq!(wait_share(now, now + s(10), s(15)), now + s(5));
        assert_eq!(wait_share(now, now + s(10), s(2)), now + s(2));
        assert_eq!(wait_share(now, now, s(2)), now);
        let mut backoff = Backoff::default();
        let pauses: Vec<u64> = (0..7).map(|_| backoff.next().as_millis() as u64).collect();
        assert_eq!(pauses, [5, 10, 20, 40, 80, 100, 100]);
    }
}
