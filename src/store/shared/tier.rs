//! The fleet tier's calls to Redis or Valkey (through `fred`): every call
//! bounded by the timeout and guarded by the breaker, an error, a timeout or
//! a reply of the wrong shape reported as "the tier did not answer", never
//! as a failure of the request. What the tier holds is read with its
//! remaining lifetime and checked before it counts (see [`super`]).

use super::breaker::{Breaker, Opened, Permit, COOLDOWN};
use super::format;
use super::keys::{self, BoardKeys};
use super::seal::Seal;
use super::{Endpoint, SharedSettings};
use crate::document::Coverage;
use crate::metrics;
use crate::provider::client::{Hooked, OverBudget, Pace};
use crate::provider::error::FetchError;
use bytes::Bytes;
use fred::prelude::{
    Builder, ClientLike, Config, Expiration, KeysInterface, LuaInterface, ReconnectPolicy,
    SetOptions, TransactionInterface, Value,
};
use std::future::Future;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::OnceCell;
use tokio::time::Instant;

/// Takes a board's lock (`ARGV[1]` the token, `ARGV[2]` its life in ms)
/// when no lock is there, or the one there has no expiry or a longer one
/// than a lock can have: such a lock counts as expired.
const TAKE: &str = "local t = redis.call('PTTL', KEYS[1]) \
     if t == -2 or t == -1 or t > tonumber(ARGV[2]) then \
     redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end \
     return 0";

/// Releases a lock only if it still holds the caller's token.
const UNLOCK: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then \
     return redis.call('DEL', KEYS[1]) else return 0 end";

/// GCRA over the server's clock: `ARGV[1]` is the interval between
/// requests and `ARGV[2]` the burst tolerance, in microseconds. Returns 0
/// when a request may go now (and counts it), else the microseconds to wait.
/// A counter this script cannot have written (not a number, past
/// `now + burst + interval`, or without an expiry) is reset, so no value
/// written by anyone else holds the fleet's loads back.
const BUDGET: &str = "local t = redis.call('TIME') \
     local now = tonumber(t[1]) * 1000000 + tonumber(t[2]) \
     local interval = tonumber(ARGV[1]) \
     local tat = tonumber(redis.call('GET', KEYS[1])) \
     if not tat or tat ~= tat or tat < now or tat > now + tonumber(ARGV[2]) + interval \
     or redis.call('PTTL', KEYS[1]) < 0 then tat = now end \
     local wait = tat - tonumber(ARGV[2]) - now \
     if wait > 0 then return math.ceil(wait) end \
     local new = tat + interval \
     redis.call('SET', KEYS[1], string.format('%d', new), 'PX', math.ceil((new - now) / 1000) + 1000) \
     return 0";

/// How long a node's first call waits for the first connection.
const FIRST_CONNECT: Duration = Duration::from_secs(1);

/// Waits between polls for another node's document start here and double
/// up to [`MAX_POLL`].
const FIRST_POLL: Duration = Duration::from_millis(5);
const MAX_POLL: Duration = Duration::from_millis(100);

/// Rejected values are logged at most this often (each is counted).
const REJECT_LOG_EVERY_MS: i64 = 60_000;

/// What a lookup found.
pub(crate) enum Looked {
    /// A stored document whose header checked out, with the time it has
    /// left (the least of its header's, the Redis key's and this node's
    /// TTL); its tag and body are checked when it is decoded.
    Doc {
        value: Bytes,
        key: String,
        left: Duration,
    },
    /// The provider's refusal, shared by another node, and how long it has
    /// left.
    Failure(FetchError, Duration),
    /// Nothing stored; whether a load holds the lock.
    Miss { locked: bool },
    /// The tier did not answer (error, timeout, breaker open).
    Unavailable,
}

/// The outcome of trying to take a board's lock.
pub(crate) enum Lock {
    /// This node loads; release with the token.
    Taken(String),
    /// Another node is loading.
    Held,
    /// The tier did not answer.
    Unavailable,
}

/// What a node accepts from the tier, and how long it keeps it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TierLimits {
    /// Documents over this are neither stored nor read back.
    pub max_document_bytes: usize,
    /// Board nodes a document read back may hold.
    pub max_nodes: usize,
    /// This node's TTL: no shared document is kept longer.
    pub ttl: Duration,
    /// How long a shared `403`/`404` lives (and is kept at most).
    pub error_ttl: Duration,
}

/// A connection (pool) to the tier, shared by every request of the node.
pub(crate) struct SharedTier {
    client: fred::clients::Client,
    connected: OnceCell<()>,
    settings: SharedSettings,
    breaker: Breaker,
    seal: Seal,
    limits: TierLimits,
}

impl SharedTier {
    /// Builds the client; it connects on first use, in the caller's
    /// runtime, and reconnects by itself (with backoff) whenever the
    /// server goes away.
    ///
    /// # Errors
    /// A URL the client cannot use.
    pub(crate) fn new(settings: SharedSettings, limits: TierLimits) -> Result<Self, String> {
        let mut config = client_config(&settings.endpoint)?;
        if let Some(password) = &settings.password {
            config.password = Some(password.clone());
        }
        let timeout = settings.timeout;
        let client = Builder::from_config(config)
            .with_performance_config(|p| p.default_command_timeout = timeout)
            .with_connection_config(|c| {
                c.connection_timeout = timeout.max(Duration::from_millis(500));
                // Commands queued while disconnected are bounded too.
                c.max_command_buffer_len = 10_000;
                c.max_command_attempts = 1;
            })
            .set_policy(ReconnectPolicy::new_exponential(0, 100, 2_000, 2))
            .build()
            .map_err(|e| format!("fleet tier client: {e}"))?;
        Ok(SharedTier {
            client,
            connected: OnceCell::new(),
            seal: Seal::new(&settings.secret, settings.previous_secret.as_ref()),
            settings,
            breaker: Breaker::new(COOLDOWN),
            limits,
        })
    }

    pub(crate) fn keys(&self, board_id: &str, permission_id: &str) -> BoardKeys {
        BoardKeys::new(&self.settings.key_prefix, board_id, permission_id)
    }

    pub(crate) fn limits(&self) -> TierLimits {
        self.limits
    }

    /// How long a load's lock lives (`lock_ms`).
    pub(crate) fn lock_life(&self) -> Duration {
        self.settings.lock
    }

    /// The fleet key's seal, for the values this node writes and reads.
    pub(crate) fn seal(&self) -> &Seal {
        &self.seal
    }

    /// One call, bounded by the timeout and guarded by the breaker; `None`
    /// when the tier did not answer.
    async fn call<T, E: std::fmt::Display>(
        &self,
        call: impl Future<Output = Result<T, E>>,
    ) -> Option<T> {
        if self.breaker.permit() == Permit::Skip {
            metrics::fleet("skipped");
            return None;
        }
        self.connected
            .get_or_init(|| async {
                // The connection task reconnects by itself from now on. The
                // first caller waits for the first connection (bounded), so
                // a node's first requests do not all miss a healthy tier.
                drop(self.client.connect());
                let first = self.client.wait_for_connect();
                if tokio::time::timeout(FIRST_CONNECT, first).await.is_err() {
                    log::debug!("fleet tier: no connection within {FIRST_CONNECT:?}");
                }
            })
            .await;
        let error = match tokio::time::timeout(self.settings.timeout, call).await {
            Ok(Ok(value)) => {
                if self.breaker.is_open() {
                    log::info!("fleet tier answers again; using it");
                    metrics::fleet_breaker(false);
                }
                self.breaker.succeeded();
                return Some(value);
            }
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("no answer within {:?}", self.settings.timeout),
        };
        metrics::fleet("error");
        if self.breaker.failed() == Opened::Now {
            log::warn!(
                "fleet tier failing ({error}); skipping it for {COOLDOWN:?} at a time until it answers"
            );
            metrics::fleet_breaker(true);
        } else {
            log::debug!("fleet tier call failed: {error}");
        }
        None
    }

    /// The board's document of at least `coverage`, its shared failure, or
    /// whether someone is loading it, each with its remaining life: one
    /// transaction on the board's slot, `MGET` then a `PTTL` per key, so
    /// every value is read with its own life at one instant. (A script
    /// could do the same, but Lua copies a value in and out: 1.07 ms against
    /// 0.09 ms for `MGET` of an 818 KB value, measured with
    /// `redis-benchmark`.) A document or failure with no
    /// expiry, or one that is not ours, is deleted; a lock with no expiry
    /// or a longer one than `lock_ms` counts as expired.
    pub(crate) async fn lookup(&self, keys: &BoardKeys, coverage: Coverage) -> Looked {
        let mut names = vec![keys.doc(coverage)];
        if coverage == Coverage::Outline {
            names.push(keys.doc(Coverage::Full));
        }
        names.push(keys.failure());
        names.push(keys.lock(coverage));
        let count = names.len();
        let read = async {
            let trx = self.client.multi();
            let queued = async {
                trx.mget::<(), _>(names.clone()).await?;
                for name in &names {
                    trx.pttl::<(), _>(name.as_str()).await?;
                }
                trx.exec::<Value>(true).await
            };
            let reply = queued.await.map_err(|e| e.to_string())?;
            entries(reply, count)
        };
        let Some(values) = self.call(read).await else {
            return Looked::Unavailable;
        };
        let docs = count - 2;
        let now = now_ms();
        for (name, (value, pttl)) in names.iter().zip(&values).take(docs) {
            let Some(value) = value else { continue };
            if *pttl < 0 {
                self.reject(name, &format::Invalid("a document with no expiry"))
                    .await;
                continue;
            }
            match format::header(value) {
                Ok(h) if h.expires_at_ms > now => {
                    metrics::fleet("hit");
                    let left = (h.expires_at_ms - now).min(*pttl);
                    return Looked::Doc {
                        value: value.clone(),
                        key: name.clone(),
                        left: Duration::from_millis(left as u64).min(self.limits.ttl),
                    };
                }
                // Expired by our clock while the server still has it.
                Ok(_) => {}
                Err(e) => self.reject(name, &e).await,
            }
        }
        if let Some((Some(failure), pttl)) = values.get(docs) {
            let name = keys.failure();
            match format::read_failure(failure, &self.seal, &name) {
                Ok(_) if *pttl < 0 => {
                    self.reject(&name, &format::Invalid("a failure with no expiry"))
                        .await
                }
                Ok((status, expires)) if expires > now => {
                    let left = Duration::from_millis((expires - now).min(*pttl) as u64);
                    let e = match status {
                        403 => FetchError::AccessDenied,
                        _ => FetchError::NotFound,
                    };
                    return Looked::Failure(e, left.min(self.limits.error_ttl));
                }
                Ok(_) => {}
                Err(e) => self.reject(&name, &e).await,
            }
        }
        metrics::fleet("miss");
        let lock_ms = self.settings.lock.as_millis() as i64;
        Looked::Miss {
            locked: values
                .get(docs + 1)
                .is_some_and(|(v, pttl)| v.is_some() && (1..=lock_ms).contains(pttl)),
        }
    }

    /// Deletes a value that must not be served; counted, and logged at WARN
    /// at most once a minute (with how many were deleted meanwhile).
    pub(crate) async fn reject(&self, key: &str, why: &format::Invalid) {
        static LAST_WARN_MS: AtomicI64 = AtomicI64::new(i64::MIN);
        static SINCE: AtomicU64 = AtomicU64::new(0);
        metrics::fleet("rejected");
        let now = now_ms();
        let last = LAST_WARN_MS.load(Ordering::Relaxed);
        let due = now.saturating_sub(last) >= REJECT_LOG_EVERY_MS
            && LAST_WARN_MS
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok();
        if due {
            let others = SINCE.swap(0, Ordering::Relaxed);
            log::warn!(
                "fleet tier: {why}; deleted ({others} more since the last warning; at most one warning a minute, board_api_fleet_total{{result=\"rejected\"}} counts them all)"
            );
        } else {
            SINCE.fetch_add(1, Ordering::Relaxed);
            log::debug!("fleet tier: {why}; deleted");
        }
        let _ = self.call(self.client.del::<i64, _>(key)).await;
    }

    /// Takes the board's lock for a load of `coverage`.
    pub(crate) async fn lock(&self, keys: &BoardKeys, coverage: Coverage) -> Lock {
        let token = token();
        let ms = self.settings.lock.as_millis().max(1).to_string();
        match self
            .call(self.client.eval::<i64, _, _, _>(
                TAKE,
                keys.lock(coverage),
                vec![token.clone(), ms],
            ))
            .await
        {
            Some(1) => Lock::Taken(token),
            Some(_) => Lock::Held,
            None => Lock::Unavailable,
        }
    }

    /// Releases the lock if it is still `token`'s.
    pub(crate) async fn unlock(&self, keys: &BoardKeys, coverage: Coverage, token: &str) {
        let _ = self
            .call(self.client.eval::<i64, _, _, _>(
                UNLOCK,
                keys.lock(coverage),
                vec![token.to_owned()],
            ))
            .await;
    }

    /// Stores an encoded document for `ttl`. A transient one (a board that
    /// a retry may fill) never replaces a document already there.
    pub(crate) async fn store(
        &self,
        keys: &BoardKeys,
        coverage: Coverage,
        value: Vec<u8>,
        ttl: Duration,
        transient: bool,
    ) {
        let bytes = value.len();
        let stored = self
            .call(self.client.set::<Option<String>, _, _>(
                keys.doc(coverage),
                Bytes::from(value),
                Some(Expiration::PX(ttl.as_millis().max(1) as i64)),
                transient.then_some(SetOptions::NX),
                false,
            ))
            .await;
        if let Some(Some(_)) = stored {
            metrics::fleet_stored(bytes);
        }
    }

    /// Shares the provider's `403` or `404` for `error_ttl`; other failures
    /// are this node's own and are not shared.
    pub(crate) async fn store_failure(&self, keys: &BoardKeys, e: &FetchError) {
        let code = match e {
            FetchError::AccessDenied => 403,
            FetchError::NotFound => 404,
            _ => return,
        };
        let ttl = self.limits.error_ttl;
        let name = keys.failure();
        let value = format::failure(code, Self::expiry(ttl), &self.seal, &name);
        let _ = self
            .call(self.client.set::<Option<String>, _, _>(
                name,
                Bytes::from(value),
                Some(Expiration::PX(ttl.as_millis().max(1) as i64)),
                None,
                false,
            ))
            .await;
    }

    /// Waits for another node's load of the board: polls with backoff until
    /// a document or failure is there, the lock is gone, the tier stops
    /// answering, or `deadline`.
    pub(crate) async fn wait(
        &self,
        keys: &BoardKeys,
        coverage: Coverage,
        deadline: Instant,
    ) -> Option<Looked> {
        metrics::fleet_lock_wait();
        let mut pause = FIRST_POLL;
        loop {
            let wake = Instant::now() + pause;
            if wake >= deadline {
                return None;
            }
            tokio::time::sleep_until(wake).await;
            match self.lookup(keys, coverage).await {
                Looked::Miss { locked: true } => pause = (pause * 2).min(MAX_POLL),
                other => return Some(other),
            }
        }
    }

    /// How long a value written now for `ttl` lives, as its header says.
    pub(crate) fn expiry(ttl: Duration) -> i64 {
        now_ms() + ttl.as_millis() as i64
    }
}

/// The fleet's shared budget toward the provider: one script call per
/// request. A tier that does not answer paces nothing.
impl Pace for SharedTier {
    fn admit(&self, deadline: Instant) -> Hooked<'_, Result<(), OverBudget>> {
        Box::pin(async move {
            let Some(rate) = self.settings.fleet_requests_per_second else {
                return Ok(());
            };
            let interval = 1_000_000 / u64::from(rate.max(1));
            // A second's worth of requests may go at once.
            let burst = interval * u64::from(rate.max(1) - 1);
            let key = keys::budget(&self.settings.key_prefix);
            loop {
                let args = vec![interval.to_string(), burst.to_string()];
                let Some(wait) = self
                    .call(self.client.eval::<i64, _, _, _>(BUDGET, key.as_str(), args))
                    .await
                else {
                    return Ok(());
                };
                if wait <= 0 {
                    return Ok(());
                }
                let wake = Instant::now() + Duration::from_micros(wait as u64);
                if wake >= deadline {
                    return Err(OverBudget);
                }
                tokio::time::sleep_until(wake).await;
            }
        })
    }
}

/// The `count` (value, remaining life) pairs of a lookup's reply (the
/// `MGET`'s values, then each key's `PTTL`: -1 when it has no expiry, -2
/// when it is gone); any other shape is an error of the tier (it counts
/// toward the breaker).
fn entries(reply: Value, count: usize) -> Result<Vec<(Option<Bytes>, i64)>, String> {
    let wrong = || format!("a lookup reply of the wrong shape for {count} keys");
    let Value::Array(mut items) = reply else {
        return Err(wrong());
    };
    if items.len() != 1 + count {
        return Err(wrong());
    }
    let pttls = items.split_off(1);
    let Some(Value::Array(values)) = items.pop() else {
        return Err(wrong());
    };
    if values.len() != count {
        return Err(wrong());
    }
    let mut out = Vec::with_capacity(count);
    for (value, pttl) in values.into_iter().zip(pttls) {
        let value = match value {
            Value::Null => None,
            Value::Bytes(b) => Some(b),
            Value::String(s) => Some(s.into_inner()),
            _ => return Err(wrong()),
        };
        let Value::Integer(pttl) = pttl else {
            return Err(wrong());
        };
        out.push((value, pttl));
    }
    Ok(out)
}

/// The client's configuration for `endpoint`; a cluster's nodes become one
/// `redis-cluster://` URL (credentials and scheme from the first).
fn client_config(endpoint: &Endpoint) -> Result<Config, String> {
    let config = match endpoint {
        Endpoint::Server(url) => Config::from_url_centralized(url),
        Endpoint::Cluster(urls) => {
            let mut first = url::Url::parse(urls.first().ok_or("no cluster node")?)
                .map_err(|e| e.to_string())?;
            let scheme = format!("{}-cluster", first.scheme());
            first
                .set_scheme(&scheme)
                .map_err(|()| "cluster URL scheme".to_string())?;
            for other in &urls[1..] {
                let u = url::Url::parse(other).map_err(|e| e.to_string())?;
                let node = format!(
                    "{}:{}",
                    u.host_str().unwrap_or_default(),
                    u.port().unwrap_or(6379)
                );
                first.query_pairs_mut().append_pair("node", &node);
            }
            Config::from_url_clustered(first.as_str())
        }
    };
    config.map_err(|e| format!("not a Redis URL the client accepts: {}", e.details()))
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// A lock token no other node draws.
fn token() -> String {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 16];
    if ring::rand::SystemRandom::new().fill(&mut bytes).is_err() {
        // No system randomness: the time and an address still differ per
        // node and call.
        let seed = now_ms() as u128 ^ (&bytes as *const _ as usize as u128);
        bytes = seed.to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lookup_reply_of_another_shape_is_an_error_of_the_tier() {
        let value = |b: &'static [u8]| Value::Bytes(Bytes::from_static(b));
        let good = Value::Array(vec![
            Value::Array(vec![value(b"doc"), Value::Null]),
            Value::Integer(900),
            Value::Integer(-2),
        ]);
        assert_eq!(
            entries(good, 2),
            Ok(vec![(Some(Bytes::from_static(b"doc")), 900), (None, -2)])
        );
        let wrong = [
            Value::Integer(1),
            // The script's flat shape of earlier versions.
            Value::Array(vec![
                value(b"doc"),
                Value::Integer(900),
                Value::Null,
                Value::Integer(-2),
            ]),
            Value::Array(vec![Value::Array(vec![value(b"doc")]), Value::Integer(900)]),
            Value::Array(vec![
                Value::Array(vec![value(b"doc"), Value::Null]),
                Value::Integer(900),
            ]),
            Value::Array(vec![
                Value::Array(vec![Value::Integer(7), Value::Null]),
                Value::Integer(1),
                Value::Integer(1),
            ]),
            Value::Array(vec![
                Value::Array(vec![value(b"doc"), Value::Null]),
                value(b"900"),
                Value::Integer(1),
            ]),
        ];
        for reply in wrong {
            assert!(entries(reply, 2).is_err());
        }
    }
}
