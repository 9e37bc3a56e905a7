//! The fleet tier's calls to Redis or Valkey (through `fred`): every call
//! bounded by the timeout and guarded by the breaker, an error, a timeout or
//! a reply of the wrong shape reported as "the tier did not answer", never
//! as a failure of the request. What the tier holds is read with its
//! remaining lifetime and checked before it counts (see [`super`]).

use super::breaker::{Breaker, Opened, Permit, COOLDOWN};
use super::format;
use super::keys::BoardKeys;
use super::seal::Seal;
use super::{Endpoint, SharedSettings};
use crate::clock::now_ms_i64 as now_ms;
use crate::document::Coverage;
use crate::log_throttle::Throttle;
use crate::metrics::Metrics;
use crate::provider::error::FetchError;
use bytes::Bytes;
use fred::prelude::{
    Builder, ClientLike, Config, Expiration, KeysInterface, ReconnectPolicy, SetOptions,
    TransactionInterface, Value,
};
use std::future::Future;
use std::time::Duration;
use tokio::sync::OnceCell;

mod budget;
mod lock;

pub(crate) use lock::{unhex, wait_share, Backoff, Lock, LockSeen, LockValue};

/// How long a node's first call waits for the first connection.
const FIRST_CONNECT: Duration = Duration::from_secs(1);

/// How far a value's expiry, written by another node's clock, may run past
/// what this node's clock allows before the value counts as out of range.
const CLOCK_SKEW_MS: i64 = 1_000;

/// What a lookup found.
pub(crate) enum Looked {
    /// A stored document whose header checked out, with the time it has
    /// left (the least of its header's, the Redis key's and this node's
    /// TTL); its tag and body are checked when it is decoded.
    Doc {
        value: Bytes,
        key: String,
        /// The coverage of the key it was read under, which its header
        /// names too.
        coverage: Coverage,
        left: Duration,
    },
    /// The provider's refusal, shared by another node, and how long it has
    /// left.
    Failure(FetchError, Duration),
    /// Nothing stored; what the board's lock is.
    Miss(LockSeen),
    /// The tier did not answer (error, timeout, breaker open).
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
    /// The API's fleet series; `None` for a tier that reports nowhere (the
    /// versions store's own connection).
    metrics: Option<Metrics>,
}

impl SharedTier {
    /// Builds the client; it connects on first use, in the caller's
    /// runtime, and reconnects by itself (with backoff) whenever the
    /// server goes away.
    ///
    /// # Errors
    /// A URL the client cannot use.
    pub(crate) fn new(
        settings: SharedSettings,
        limits: TierLimits,
        metrics: Option<Metrics>,
    ) -> Result<Self, String> {
        let client = builder(&settings)?
            .build()
            .map_err(|e| format!("fleet tier client: {e}"))?;
        Ok(SharedTier {
            client,
            connected: OnceCell::new(),
            seal: Seal::new(&settings.secret, settings.previous_secret.as_ref()),
            settings,
            breaker: Breaker::new(COOLDOWN),
            limits,
            metrics,
        })
    }

    /// A client for the fleet's announcements (`SUBSCRIBE`), configured as
    /// this tier's; it connects on first use.
    ///
    /// # Errors
    /// A URL the client cannot use.
    pub(crate) fn subscriber(&self) -> Result<fred::clients::SubscriberClient, String> {
        builder(&self.settings)?
            .build_subscriber_client()
            .map_err(|e| format!("fleet tier subscriber: {e}"))
    }

    /// Moves the API's fleet series, when this tier reports to them.
    pub(crate) fn report(&self, event: impl FnOnce(&Metrics)) {
        if let Some(m) = &self.metrics {
            event(m);
        }
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

    /// The client, for the kept versions' calls (each made through
    /// [`SharedTier::call`]).
    pub(crate) fn client(&self) -> &fred::clients::Client {
        &self.client
    }

    /// `key_prefix`: every key this node writes starts with it.
    pub(crate) fn key_prefix(&self) -> &str {
        &self.settings.key_prefix
    }

    /// One call, bounded by the timeout and guarded by the breaker; `None`
    /// when the tier did not answer.
    pub(crate) async fn call<T, E: std::fmt::Display>(
        &self,
        call: impl Future<Output = Result<T, E>>,
    ) -> Option<T> {
        if self.breaker.permit() == Permit::Skip {
            self.report(|m| m.fleet("skipped"));
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
                    self.report(|m| m.fleet_breaker(false));
                }
                self.breaker.succeeded();
                return Some(value);
            }
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("no answer within {:?}", self.settings.timeout),
        };
        self.report(|m| m.fleet("error"));
        if self.breaker.failed() == Opened::Now {
            log::warn!(
                "fleet tier failing ({error}); skipping it for {COOLDOWN:?} at a time until it answers"
            );
            self.report(|m| m.fleet_breaker(true));
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
    /// expiry, one that is not ours, a document whose header names another
    /// coverage than its key's, and a failure that would outlive
    /// `error_ttl` are deleted; a lock counts as [`LockSeen`] says.
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
        for (i, (name, (value, pttl))) in names.iter().zip(&values).take(docs).enumerate() {
            let Some(value) = value else { continue };
            if *pttl < 0 {
                self.reject(name, &format::Invalid("a document with no expiry"))
                    .await;
                continue;
            }
            // The first key is the coverage asked for, the second the full
            // document an outline may be read from.
            let key_coverage = if i == 0 { coverage } else { Coverage::Full };
            match format::header(value) {
                Ok(h) if h.coverage != key_coverage => {
                    let why = format::Invalid("a document of another coverage than its key's");
                    self.reject(name, &why).await;
                }
                Ok(h) if h.expires_at_ms > now => {
                    self.report(|m| m.fleet("hit"));
                    let left = (h.expires_at_ms - now).min(*pttl);
                    return Looked::Doc {
                        value: value.clone(),
                        key: name.clone(),
                        coverage: key_coverage,
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
            // A failure is written for `error_ttl`: one that claims to live
            // longer, by its Redis expiry or its sealed one, is not one a
            // node wrote, and is not kept alive by being read again.
            let error_ttl_ms = self.limits.error_ttl.as_millis() as i64;
            match format::read_failure(failure, &self.seal, &name) {
                Ok(_) if *pttl < 0 || *pttl > error_ttl_ms => {
                    let why = format::Invalid("a failure with no expiry or too long a one");
                    self.reject(&name, &why).await
                }
                Ok((_, expires)) if expires > now + error_ttl_ms + CLOCK_SKEW_MS => {
                    let why = format::Invalid("a failure sealed to outlive error_ttl");
                    self.reject(&name, &why).await
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
        self.report(|m| m.fleet("miss"));
        let lock_ms = self.settings.lock.as_millis() as i64;
        let lock_name = keys.lock(coverage);
        Looked::Miss(match values.get(docs + 1) {
            Some((value, pttl)) => {
                LockSeen::read(value.as_ref(), *pttl, &lock_name, &self.seal, lock_ms)
            }
            None => LockSeen::Free,
        })
    }

    /// Deletes a value that must not be served; counted, and logged at WARN
    /// at most once a minute (with how many were deleted meanwhile).
    pub(crate) async fn reject(&self, key: &str, why: &format::Invalid) {
        static WARN: Throttle = Throttle::new();
        self.report(|m| m.fleet("rejected"));
        match WARN.due() {
            Some(others) => log::warn!(
                "fleet tier: {why}; deleted ({others} more since the last warning; at most one warning a minute, board_api_fleet_total{{result=\"rejected\"}} counts them all)"
            ),
            None => log::debug!("fleet tier: {why}; deleted"),
        }
        let _ = self.call(self.client.del::<i64, _>(key)).await;
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
            self.report(|m| m.fleet_stored(bytes));
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

    /// How long a value written now for `ttl` lives, as its header says.
    pub(crate) fn expiry(ttl: Duration) -> i64 {
        now_ms() + ttl.as_millis() as i64
    }
}

/// A client builder for the tier at `settings`: every call bounded by its
/// timeout, commands queued while disconnected bounded, reconnection with
/// backoff.
fn builder(settings: &SharedSettings) -> Result<Builder, String> {
    let mut config = client_config(&settings.endpoint)?;
    if let Some(password) = &settings.password {
        config.password = Some(password.clone());
    }
    let timeout = settings.timeout;
    let mut builder = Builder::from_config(config);
    builder
        .with_performance_config(|p| p.default_command_timeout = timeout)
        .with_connection_config(|c| {
            c.connection_timeout = timeout.max(Duration::from_millis(500));
            c.max_command_buffer_len = 10_000;
            c.max_command_attempts = 1;
        })
        .set_policy(ReconnectPolicy::new_exponential(0, 100, 2_000, 2));
    Ok(builder)
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
