//! The `redis` outbox: the fleet tier's Redis or Valkey, so every node of a
//! fleet sees each job's last version and every pending delivery, and
//! leases decide which node runs a job and which makes a delivery.
//!
//! - **Keys** carry no link or URL: `{prefix}watch:{<hash of the job>}:…`
//!   for a job's state (per board hash), its deliveries and its leases;
//!   `{prefix}watch:pending` is the set of pending deliveries.
//! - **Sealed** with the fleet key for the value's own key name, as every
//!   value of the tier; one that does not open, parse or check out is
//!   deleted. Every key expires.
//! - **Leases**: `SET NX PX` through a script that also takes over a lease
//!   without expiry or with a longer one than a lease can have (so nobody
//!   can pin one); released only when the value is still the holder's
//!   token (a compare-and-delete script). A node that dies holding one
//!   loses it when it expires.

use super::{
    read_delivery, read_state, token, warn_rejected, Delivery, JobState, Lease, Unavailable,
    MAX_PENDING,
};
use crate::store::shared::{SharedSettings, SharedTier, TierLimits};
use bytes::Bytes;
use fred::prelude::{Expiration, KeysInterface, LuaInterface, SetOptions};
use std::time::Duration;

/// A job's state lives this long after its last run.
const STATE_LIFE: Duration = Duration::from_secs(30 * 24 * 3600);
/// A delivery (and the pending set) lives this long after its last write.
const DELIVERY_LIFE: Duration = Duration::from_secs(7 * 24 * 3600);
/// The longest lease any caller takes.
const MAX_LEASE: Duration = Duration::from_secs(24 * 3600 + 60);

/// Takes a lease: when absent, without expiry, or living longer than a
/// lease can (`ARGV[3]`).
const TAKE: &str = "local t = redis.call('PTTL', KEYS[1]) \
     if t == -2 or t == -1 or t > tonumber(ARGV[3]) then \
     redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end return 0";

/// Extends a lease only if it still holds the caller's token.
const RENEW: &str = "if redis.pcall('GET', KEYS[1]) == ARGV[1] then \
     return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0";

/// Releases a lease only if it still holds the caller's token.
const RELEASE: &str = "local v = redis.pcall('GET', KEYS[1]) \
     if v == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

/// The pending set's scripts. A key of another type there (written by
/// anyone who can reach the server) is deleted and the set starts afresh,
/// so it never stops deliveries.
const SADD: &str = "local n = redis.pcall('SADD', KEYS[1], ARGV[1]) \
     if type(n) == 'table' and n.err then redis.call('DEL', KEYS[1]) \
     n = redis.call('SADD', KEYS[1], ARGV[1]) end \
     redis.call('PEXPIRE', KEYS[1], ARGV[2]) return n";
const SREM: &str = "local n = redis.pcall('SREM', KEYS[1], ARGV[1]) \
     if type(n) == 'table' and n.err then redis.call('DEL', KEYS[1]) return 0 end return n";
const SCARD: &str = "local n = redis.pcall('SCARD', KEYS[1]) \
     if type(n) == 'table' and n.err then redis.call('DEL', KEYS[1]) return 0 end return n";
const SRANDMEMBER: &str = "local m = redis.pcall('SRANDMEMBER', KEYS[1], ARGV[1]) \
     if type(m) == 'table' and m.err then redis.call('DEL', KEYS[1]) return {} end return m";

pub struct RedisOutbox {
    tier: SharedTier,
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn hash(text: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    super::hex(&digest.as_ref()[..16])
}

impl RedisOutbox {
    /// A client of the fleet tier's server; it connects on first use.
    ///
    /// # Errors
    /// A URL the client cannot use.
    pub fn new(settings: &SharedSettings) -> Result<Self, String> {
        let limits = TierLimits {
            max_document_bytes: super::MAX_BODY * 2,
            max_nodes: usize::MAX,
            ttl: DELIVERY_LIFE,
            error_ttl: Duration::from_secs(1),
        };
        Ok(RedisOutbox {
            tier: SharedTier::new(settings.clone(), limits, None)?,
        })
    }

    fn job_base(&self, job: &str) -> String {
        format!("{}watch:{{{}}}:", self.tier.key_prefix(), hash(job))
    }

    fn state_key(&self, job: &str, board: &str) -> String {
        format!("{}state:{}", self.job_base(job), hash(board))
    }

    fn delivery_key(&self, job: &str, id: &str) -> String {
        format!("{}d:{id}", self.job_base(job))
    }

    fn pending_key(&self) -> String {
        format!("{}watch:pending", self.tier.key_prefix())
    }

    /// The opened value at `key`: `Ok(None)` when absent or not ours (then
    /// deleted).
    async fn read(&self, key: &str, what: &str) -> Result<Option<Vec<u8>>, Unavailable> {
        let client = self.tier.client();
        let read = async { Ok::<_, String>(client.get::<Option<Bytes>, _>(key).await) };
        let value = match self.tier.call(read).await.ok_or(Unavailable)? {
            Ok(Some(value)) => value,
            Ok(None) => return Ok(None),
            Err(_) => {
                self.reject(key, what).await;
                return Ok(None);
            }
        };
        match self.tier.seal().open(key, &value) {
            Some(data) => Ok(Some(data.to_vec())),
            None => {
                self.reject(key, what).await;
                Ok(None)
            }
        }
    }

    async fn reject(&self, key: &str, what: &str) {
        warn_rejected(what);
        let _ = self.tier.call(self.tier.client().del::<i64, _>(key)).await;
    }

    async fn write(
        &self,
        key: String,
        data: Vec<u8>,
        life: Duration,
        only_new: bool,
    ) -> Result<bool, Unavailable> {
        let sealed = self.tier.seal().seal(&key, data);
        let set = self.tier.client().set::<Option<String>, _, _>(
            key,
            Bytes::from(sealed),
            Some(Expiration::PX(ms(life))),
            only_new.then_some(SetOptions::NX),
            false,
        );
        let done = self.tier.call(set).await.ok_or(Unavailable)?;
        Ok(done.is_some())
    }

    async fn script(
        &self,
        script: &str,
        key: String,
        args: Vec<String>,
    ) -> Result<i64, Unavailable> {
        self.tier
            .call(self.tier.client().eval::<i64, _, _, _>(script, key, args))
            .await
            .ok_or(Unavailable)
    }

    pub async fn state(&self, job: &str, board: &str) -> Result<Option<JobState>, Unavailable> {
        let key = self.state_key(job, board);
        let Some(data) = self.read(&key, "a job's state in the fleet tier").await? else {
            return Ok(None);
        };
        match read_state(&data) {
            Some(state) => Ok(Some(state)),
            None => {
                self.reject(&key, "a job's state in the fleet tier").await;
                Ok(None)
            }
        }
    }

    pub async fn set_state(
        &self,
        job: &str,
        board: &str,
        state: &JobState,
    ) -> Result<(), Unavailable> {
        let data = serde_json::to_vec(state).map_err(|_| Unavailable)?;
        self.write(self.state_key(job, board), data, STATE_LIFE, false)
            .await
            .map(drop)
    }

    pub async fn add(&self, delivery: &Delivery) -> Result<bool, Unavailable> {
        if self.count().await? >= MAX_PENDING {
            return Ok(false);
        }
        let data = serde_json::to_vec(delivery).map_err(|_| Unavailable)?;
        let key = self.delivery_key(&delivery.job, &delivery.id);
        let added = self.write(key, data, DELIVERY_LIFE, true).await?;
        // Listed even when another node stored it first: listing twice is
        // one member.
        let member = format!("{}/{}", delivery.job, delivery.id);
        self.script(
            SADD,
            self.pending_key(),
            vec![member, ms(DELIVERY_LIFE).to_string()],
        )
        .await?;
        Ok(added)
    }

    pub async fn pending(&self, limit: usize) -> Result<Vec<Delivery>, Unavailable> {
        let members = self
            .tier
            .call(self.tier.client().eval::<Vec<String>, _, _, _>(
                SRANDMEMBER,
                self.pending_key(),
                vec![limit.max(1).to_string()],
            ))
            .await
            .ok_or(Unavailable)?;
        let mut out = Vec::with_capacity(members.len());
        for member in members {
            let parsed = member
                .split_once('/')
                .filter(|(job, id)| job.len() <= 64 && id.len() <= 64 && !job.contains('{'));
            let Some((job, id)) = parsed else {
                warn_rejected("a pending delivery's name in the fleet tier");
                self.script(SREM, self.pending_key(), vec![member]).await?;
                continue;
            };
            let key = self.delivery_key(job, id);
            let delivery = self
                .read(&key, "a delivery in the fleet tier")
                .await?
                .and_then(|data| read_delivery(&data))
                .filter(|d| d.id == id && d.job == job);
            match delivery {
                Some(d) => out.push(d),
                None => {
                    // Delivered or given up by another node meanwhile, expired,
                    // or not ours: no longer pending.
                    self.script(SREM, self.pending_key(), vec![member]).await?;
                }
            }
        }
        Ok(out)
    }

    pub async fn get(&self, job: &str, id: &str) -> Result<Option<Delivery>, Unavailable> {
        let key = self.delivery_key(job, id);
        Ok(self
            .read(&key, "a delivery in the fleet tier")
            .await?
            .and_then(|data| read_delivery(&data))
            .filter(|d| d.id == id && d.job == job))
    }

    pub async fn count(&self) -> Result<usize, Unavailable> {
        let n = self.script(SCARD, self.pending_key(), Vec::new()).await?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    pub async fn update(&self, delivery: &Delivery) -> Result<(), Unavailable> {
        let data = serde_json::to_vec(delivery).map_err(|_| Unavailable)?;
        let key = self.delivery_key(&delivery.job, &delivery.id);
        self.write(key, data, DELIVERY_LIFE, false).await.map(drop)
    }

    pub async fn remove(&self, delivery: &Delivery) -> Result<(), Unavailable> {
        let key = self.delivery_key(&delivery.job, &delivery.id);
        self.tier
            .call(self.tier.client().del::<i64, _>(key))
            .await
            .ok_or(Unavailable)?;
        let member = format!("{}/{}", delivery.job, delivery.id);
        self.script(SREM, self.pending_key(), vec![member])
            .await
            .map(drop)
    }

    /// `name` is `run:<job>` or `delivery:<job>/<id>`.
    pub async fn lease(&self, name: &str, life: Duration) -> Option<Lease> {
        let (kind, rest) = name.split_once(':')?;
        let job = rest.split('/').next().unwrap_or(rest);
        let key = format!("{}lease:{kind}:{}", self.job_base(job), hash(rest));
        let token = token();
        let args = vec![
            token.clone(),
            ms(life.max(Duration::from_millis(1))).to_string(),
            ms(MAX_LEASE).to_string(),
        ];
        match self.script(TAKE, key.clone(), args).await {
            Ok(1) => Some(Lease { name: key, token }),
            _ => None,
        }
    }

    pub async fn renew(&self, lease: &Lease, life: Duration) -> bool {
        let args = vec![
            lease.token.clone(),
            ms(life.max(Duration::from_millis(1))).to_string(),
        ];
        matches!(self.script(RENEW, lease.name.clone(), args).await, Ok(1))
    }

    pub async fn release(&self, lease: &Lease) {
        let _ = self
            .script(RELEASE, lease.name.clone(), vec![lease.token.clone()])
            .await;
    }
}
