//! Following boards live across a fleet, in the fleet tier's Redis: which
//! node polls a followed board this interval (a lease), and how the new
//! versions it sees reach every other node (pub/sub). The API's live hub
//! (`api/live`) calls this once per followed board per interval, and
//! listens to the announcements.
//!
//! - **A board's name** here is its *tag* ([`crate::store::board_tag`]):
//!   32 hex digits of a SHA-256 of the kept versions' owner key, the hash
//!   the kept versions' Redis keys carry. No key, channel or message names
//!   a permission id or a board id.
//! - **The lease** (`{prefix}{<tag>}:live:lease`) holds this node's random
//!   token sealed with the fleet key for the lease's key name. Taking it
//!   succeeds when it is absent, already ours, has no expiry or too long a
//!   one, or holds a value that is not the fleet's (taken over only while
//!   it still holds what was seen). It lives `life`; its holder renews it
//!   every interval, so a node that dies loses it within `life`.
//! - **The board's last version** (`…:live:version`, sealed, for a few
//!   intervals) comes back with every attempt to take the lease: a node
//!   that missed a message (its subscription was down) catches up within
//!   one interval.
//! - **Announcements** go on one channel for the fleet (`{prefix}live`):
//!   `<tag>:<version>:<ms>:<hmac>`, the HMAC made with the fleet key for
//!   the channel's name over the rest. A message that does not verify, is
//!   older than [`MAX_AGE_MS`] (or as far in the future), or whose version
//!   is not one this service makes is ignored and counted.
//! - **Never a failure of its own**: every call goes through the tier's
//!   [`SharedTier::call`] (its timeout and breaker); when it does not
//!   answer, the caller polls for itself.

use super::tier::{unhex, SharedTier};
use crate::clock::now_ms_i64 as now_ms;
use crate::pipeline::version::is_version;
use crate::random::{self, hex};
use bytes::Bytes;
use fred::clients::SubscriberClient;
use fred::prelude::{ClientLike, EventInterface, LuaInterface, PubsubInterface, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast;

/// Takes or renews a board's lease (`KEYS[1]`) for `ARGV[1]` (this node's
/// sealed token) for `ARGV[2]` ms when it is absent, ours, not a string,
/// without expiry or longer lived than a lease can be, or still `ARGV[3]`
/// (a value the caller found not to be the fleet's). Returns whether it is
/// ours now, the lease's value, and the board's last version (`KEYS[2]`).
const CLAIM: &str = "local v = redis.pcall('GET', KEYS[1]) \
     if type(v) == 'table' and v.err then redis.call('DEL', KEYS[1]) v = false end \
     local t = redis.call('PTTL', KEYS[1]) \
     local last = redis.pcall('GET', KEYS[2]) \
     if type(last) == 'table' then last = false end \
     if v == false or v == ARGV[1] or t == -1 or t > tonumber(ARGV[2]) \
     or (ARGV[3] ~= '' and v == ARGV[3]) then \
     redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return {1, ARGV[1], last} end \
     return {0, v, last}";

/// Gives a lease back if it still holds the caller's token.
const RELEASE: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then \
     return redis.call('DEL', KEYS[1]) else return 0 end";

/// Stores a board's last version (`KEYS[1]`, `ARGV[1]` for `ARGV[2]` ms)
/// and announces it (`ARGV[4]` on channel `ARGV[3]`) in one call.
const ANNOUNCE: &str = "redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) \
     return redis.call('PUBLISH', ARGV[3], ARGV[4])";

/// A message older than this (or dated this far ahead, another node's
/// clock) is ignored: a replay of an old one changes nothing.
pub(crate) const MAX_AGE_MS: i64 = 5 * 60 * 1000;

/// How many lease lives a board's last version is kept for.
const VERSION_LIVES: u32 = 8;

/// The random bytes of a node's token.
const TOKEN_BYTES: usize = 16;

/// What an attempt to take a board's lease found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Claim {
    /// This node polls the board until the lease's life is over.
    Mine,
    /// Another node does; the last version it announced, when one is
    /// stored and verifies.
    Theirs(Option<String>),
    /// The tier did not answer: poll for yourself.
    Unavailable,
}

/// A verified announcement: a board's tag and its new version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Announced {
    pub tag: String,
    pub version: String,
}

/// This node's side of the fleet's live following.
pub(crate) struct FleetLive {
    tier: Arc<SharedTier>,
    subscriber: SubscriberClient,
    /// This node's random token (hex), sealed per lease key.
    node: String,
    channel: String,
    listening: tokio::sync::OnceCell<()>,
}

impl FleetLive {
    /// Builds the subscriber client (it connects on first use).
    ///
    /// # Errors
    /// A URL the client cannot use.
    pub(crate) fn new(tier: Arc<SharedTier>) -> Result<Self, String> {
        let subscriber = tier.subscriber()?;
        let channel = format!("{}live", tier.key_prefix());
        Ok(FleetLive {
            tier,
            subscriber,
            node: hex(&random::bytes::<TOKEN_BYTES>()),
            channel,
            listening: tokio::sync::OnceCell::new(),
        })
    }

    fn lease_key(&self, tag: &str) -> String {
        format!("{}{{{tag}}}:live:lease", self.tier.key_prefix())
    }

    fn version_key(&self, tag: &str) -> String {
        format!("{}{{{tag}}}:live:version", self.tier.key_prefix())
    }

    /// This node's token for the lease `name`.
    fn token(&self, name: &str) -> String {
        hex(&self.tier.seal().seal(name, self.node.as_bytes().to_vec()))
    }

    /// Whether `value` is a token the fleet key sealed for the lease `name`.
    fn is_fleet_token(&self, value: &[u8], name: &str) -> bool {
        unhex(value).is_some_and(|bytes| {
            self.tier
                .seal()
                .open(name, &bytes)
                .is_some_and(|node| node.len() == TOKEN_BYTES * 2)
        })
    }

    /// Takes or renews the lease of the board `tag` for `life`; another
    /// node's live lease is left alone, anything else is taken over.
    pub(crate) async fn claim(&self, tag: &str, life: Duration) -> Claim {
        let name = self.lease_key(tag);
        let mut foreign = Bytes::new();
        // At most twice: once, then once more to take over a value that is
        // not the fleet's.
        for _ in 0..2 {
            let args: Vec<Bytes> = vec![
                self.token(&name).into(),
                life.as_millis().max(1).to_string().into(),
                foreign.clone(),
            ];
            let keys = vec![name.clone(), self.version_key(tag)];
            let reply = self
                .tier
                .call(self.tier.client().eval::<Value, _, _, _>(CLAIM, keys, args))
                .await;
            let Some(Value::Array(items)) = reply else {
                return Claim::Unavailable;
            };
            let mut items = items.into_iter();
            let (Some(Value::Integer(taken)), Some(holder), last) =
                (items.next(), items.next(), items.next())
            else {
                return Claim::Unavailable;
            };
            if taken == 1 {
                return Claim::Mine;
            }
            let holder = bytes_of(holder).unwrap_or_default();
            if self.is_fleet_token(&holder, &name) {
                let version = last
                    .and_then(bytes_of)
                    .and_then(|v| self.read_version(tag, &v));
                return Claim::Theirs(version);
            }
            foreign = holder;
        }
        Claim::Theirs(None)
    }

    /// Gives the lease of `tag` back, if this node holds it.
    pub(crate) async fn release(&self, tag: &str) {
        let name = self.lease_key(tag);
        let token = self.token(&name);
        let _ = self
            .tier
            .call(
                self.tier
                    .client()
                    .eval::<i64, _, _, _>(RELEASE, name, vec![token]),
            )
            .await;
    }

    /// Stores `version` as the board's last and announces it to the fleet;
    /// false when the tier did not answer.
    pub(crate) async fn announce(&self, tag: &str, version: &str, life: Duration) -> bool {
        let key = self.version_key(tag);
        let stored = hex(&self.tier.seal().seal(&key, version.as_bytes().to_vec()));
        let message = self.message(tag, version, now_ms());
        let ms = (life * VERSION_LIVES).as_millis().max(1).to_string();
        let args = vec![stored, ms, self.channel.clone(), message];
        self.tier
            .call(self.tier.client().eval::<i64, _, _, _>(ANNOUNCE, key, args))
            .await
            .is_some()
    }

    /// A board's last version as stored under its key, when it verifies and
    /// is a version.
    fn read_version(&self, tag: &str, value: &[u8]) -> Option<String> {
        let bytes = unhex(value)?;
        let version = self.tier.seal().open(&self.version_key(tag), &bytes)?;
        let version = std::str::from_utf8(version).ok()?;
        is_version(version).then(|| version.to_owned())
    }

    /// The announcement of `version` of `tag`, dated `ms`.
    fn message(&self, tag: &str, version: &str, ms: i64) -> String {
        let body = format!("{tag}:{version}:{ms}");
        let mac = self.tier.seal().tag(&self.channel, body.as_bytes());
        format!("{body}:{}", hex(&mac))
    }

    /// What a message says, when it is one the fleet sent lately; `None`
    /// for anything else.
    pub(crate) fn read(&self, message: &[u8]) -> Option<Announced> {
        // 32 + 1 + 32 + 1 + up to 20 + 1 + 64.
        if message.len() > 160 {
            return None;
        }
        let text = std::str::from_utf8(message).ok()?;
        let (body, mac) = text.rsplit_once(':')?;
        let mut sealed = body.as_bytes().to_vec();
        sealed.extend(unhex(mac.as_bytes())?);
        self.tier.seal().open(&self.channel, &sealed)?;
        let mut parts = body.split(':');
        let (tag, version, ms) = (parts.next()?, parts.next()?, parts.next()?);
        let is_tag = tag.len() == 32 && tag.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        let ms: i64 = ms.parse().ok()?;
        let fresh = now_ms().abs_diff(ms) <= MAX_AGE_MS.unsigned_abs();
        (parts.next().is_none() && is_tag && is_version(version) && fresh).then(|| Announced {
            tag: tag.to_owned(),
            version: version.to_owned(),
        })
    }

    /// The fleet's announcements as they come (raw: check each with
    /// [`FleetLive::read`]). The first call connects and subscribes, in
    /// the background, again after every reconnection.
    pub(crate) async fn listen(&self) -> broadcast::Receiver<fred::types::Message> {
        let rx = self.subscriber.message_rx();
        self.listening
            .get_or_init(|| async {
                let subscriber = self.subscriber.clone();
                let channel = self.channel.clone();
                tokio::spawn(async move {
                    drop(subscriber.connect());
                    // Subscribed channels are subscribed again after every
                    // reconnection; the first subscription is retried until
                    // the server answers.
                    drop(subscriber.manage_subscriptions());
                    loop {
                        let _ = subscriber.wait_for_connect().await;
                        match subscriber.subscribe(channel.as_str()).await {
                            Ok(()) => break,
                            Err(e) => {
                                log::debug!("fleet tier: live announcements not subscribed: {e}");
                                tokio::time::sleep(Duration::from_secs(1)).await;
                            }
                        }
                    }
                });
            })
            .await;
        rx
    }
}

impl Drop for FleetLive {
    /// Disconnects the subscriber when the API that used it is dropped (a
    /// reload): its connection task would otherwise live on.
    fn drop(&mut self) {
        if !self.listening.initialized() {
            // Never connected: nothing to close.
            return;
        }
        let subscriber = self.subscriber.clone();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                let _ = subscriber.quit().await;
            });
        }
    }
}

/// The bytes of a reply's value; `None` for a nil or another type.
fn bytes_of(value: Value) -> Option<Bytes> {
    match value {
        Value::Bytes(b) => Some(b),
        Value::String(s) => Some(s.into_inner()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::board_tag as tag;
    use crate::store::shared::{Endpoint, Secret, SharedSettings, TierLimits};

    fn live(fill: u8) -> FleetLive {
        let settings = SharedSettings {
            endpoint: Endpoint::Server("redis://127.0.0.1:1".into()),
            password: None,
            secret: Secret::new(vec![fill; 32]).expect("long enough"),
            previous_secret: None,
            key_prefix: "sbapi:".into(),
            timeout: Duration::from_millis(100),
            lock: Duration::from_secs(15),
            fleet_requests_per_second: None,
        };
        let limits = TierLimits {
            max_document_bytes: 1 << 20,
            max_nodes: 1000,
            ttl: Duration::from_secs(60),
            error_ttl: Duration::from_secs(10),
        };
        let tier = SharedTier::new(settings, limits, None).expect("a client");
        FleetLive::new(Arc::new(tier)).expect("a subscriber")
    }

    const VERSION: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn only_a_recent_message_sealed_with_the_fleet_key_is_read() {
        let fleet = live(1);
        let t = tag("1W3ZZU1Qvua02H", "m441fkw92yV");
        let now = now_ms();
        let good = fleet.message(&t, VERSION, now);
        assert!(!good.contains("m441fkw92yV") && !good.contains("1W3ZZU1Qvua02H"));
        assert_eq!(
            fleet.read(good.as_bytes()),
            Some(Announced {
                tag: t.clone(),
                version: VERSION.into()
            })
        );
        // Another node of the fleet (another token, the same key) reads it.
        assert!(live(1).read(good.as_bytes()).is_some());
        let other_key = live(2).message(&t, VERSION, now);
        let changed = good.replacen(&VERSION[..4], "ffff", 1);
        let old = fleet.message(&t, VERSION, now - MAX_AGE_MS - 1000);
        let ahead = fleet.message(&t, VERSION, now + MAX_AGE_MS + 1000);
        let not_a_version = fleet.message(&t, "ABC", now);
        let not_a_tag = fleet.message("zz", VERSION, now);
        for bad in [
            other_key.as_str(),
            changed.as_str(),
            old.as_str(),
            ahead.as_str(),
            not_a_version.as_str(),
            not_a_tag.as_str(),
            "",
            "a:b:c:d",
            &good[..good.len() - 2],
        ] {
            assert_eq!(fleet.read(bad.as_bytes()), None, "{bad}");
        }
        assert_eq!(fleet.read(&[0xff; 300]), None);
    }

    #[test]
    fn tokens_and_versions_verify_only_under_their_own_key() {
        let fleet = live(1);
        let t = tag("b", "p");
        let lease = fleet.lease_key(&t);
        assert!(lease.starts_with("sbapi:{") && lease.ends_with("}:live:lease"));
        let mine = fleet.token(&lease);
        assert!(fleet.is_fleet_token(mine.as_bytes(), &lease));
        // Another node of the fleet's token is the fleet's too.
        assert!(fleet.is_fleet_token(live(1).token(&lease).as_bytes(), &lease));
        assert!(!fleet.is_fleet_token(live(2).token(&lease).as_bytes(), &lease));
        assert!(!fleet.is_fleet_token(mine.as_bytes(), &fleet.lease_key(&tag("b", "q"))));
        assert!(!fleet.is_fleet_token(b"x", &lease));
        let key = fleet.version_key(&t);
        let stored = hex(&fleet.tier.seal().seal(&key, VERSION.as_bytes().to_vec()));
        assert_eq!(
            fleet.read_version(&t, stored.as_bytes()),
            Some(VERSION.into())
        );
        assert_eq!(fleet.read_version(&tag("b", "q"), stored.as_bytes()), None);
        let bad = hex(&fleet.tier.seal().seal(&key, b"not a version".to_vec()));
        assert_eq!(fleet.read_version(&t, bad.as_bytes()), None);
    }
}
