//! The `redis` outbox: the fleet tier's Redis or Valkey, so every node of a
//! fleet sees each job's last version and every pending delivery, and
//! leases decide which node runs a job and which makes a delivery.
//!
//! - **Keys** carry no link or URL: `{prefix}watch:{<hash of the job>}:…`
//!   for a job's state (per board hash), its deliveries, their tombstones
//!   and its leases; `{prefix}watch:due` is the index of pending
//!   deliveries, a sorted set of `<job>/<id>` scored by when each is due,
//!   so the outbox is read by due time and one dead receiver never hides
//!   another job's due deliveries.
//! - **Sealed** with the fleet key for the value's own key name, as every
//!   value of the tier. A value that is *present* and does not open, parse
//!   or check out (or is of another type) is deleted; a read that failed
//!   (a timeout, a lost connection, a busy server) is never taken for
//!   absence: the caller gets [`Unavailable`] and tries again later.
//!   Every key expires.
//! - **Index members** that do not name a delivery are removed as they are
//!   read (one pass of a script), and members whose value is gone are
//!   removed by whoever finds them so; the bound on pending deliveries
//!   counts only members that name a stored delivery (junk is pruned
//!   before `add` refuses one).
//! - **Tombstones**: a delivery removed (delivered or given up) leaves a
//!   small `done:<id>` key for the rest of its life, so the same id queued
//!   again (a run that crashed before recording its version) or its sealed
//!   value copied back is not delivered twice.
//! - **Leases**: `SET PX` through a script that also takes over a lease
//!   without expiry or living more than twice as long as asked (so nobody
//!   can pin one); renewed and released only while the value is still the
//!   holder's token (compare-and-extend, compare-and-delete). Leases are
//!   short and renewed while their work goes on, so a release that failed,
//!   or a node that died holding one, frees the job within one short life.

use super::{
    read_delivery, read_state, token, warn_rejected, Delivery, JobState, Lease, Scan, Unavailable,
    MAX_PENDING,
};
use crate::store::shared::{SharedSettings, SharedTier, TierLimits};
use bytes::Bytes;
use fred::prelude::{Expiration, KeysInterface, LuaInterface, SetOptions};
use std::sync::Mutex;
use std::time::{Duration, Instant};

mod fitness;
mod scripts;
use scripts::*;

/// A job's state lives this long after its last run.
const STATE_LIFE: Duration = Duration::from_secs(30 * 24 * 3600);
/// A delivery (and the index) lives this long after its last write.
const DELIVERY_LIFE: Duration = Duration::from_secs(7 * 24 * 3600);
/// Index members read at most per scan: twice the bound, so junk up to the
/// bound never hides a real delivery.
const EXAMINE: usize = 2 * MAX_PENDING;
/// Deliveries of jobs this node does not know, read per sweep.
const UNKNOWN_SAMPLE: usize = 100;
/// How often those are read (and the old pending set migrated).
const SWEEP_EVERY: Duration = Duration::from_secs(60);
/// How often the index is pruned of members without a delivery, at most,
/// when it is at its bound.
const PRUNE_EVERY: Duration = Duration::from_secs(10);

pub struct RedisOutbox {
    tier: SharedTier,
    /// When deliveries of unknown jobs were last read.
    swept: Mutex<Option<Instant>>,
    /// When the index was last pruned.
    pruned: Mutex<Option<Instant>>,
    /// What the fitness check found (`/watch`'s `storeWarnings`).
    warnings: Mutex<Vec<String>>,
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn hash(text: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    super::hex(&digest.as_ref()[..16])
}

/// `<job>/<id>` when `member` names a delivery as this service does.
fn parse_member(member: &str) -> Option<(&str, &str)> {
    member.split_once('/').filter(|(job, id)| {
        (1..=64).contains(&job.len())
            && job
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
            && id.len() == 36
            && id.starts_with("msg_")
            && id[4..].bytes().all(|b| b.is_ascii_hexdigit())
    })
}

fn member(d: &Delivery) -> String {
    format!("{}/{}", d.job, d.id)
}

/// Whether `last` is more than `every` ago (and marks now when so).
fn due_now(last: &Mutex<Option<Instant>>, every: Duration) -> bool {
    let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
    if last.is_some_and(|t| t.elapsed() < every) {
        return false;
    }
    *last = Some(Instant::now());
    true
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
            swept: Mutex::new(None),
            pruned: Mutex::new(None),
            warnings: Mutex::new(Vec::new()),
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

    fn tombstone_key(&self, job: &str, id: &str) -> String {
        format!("{}done:{id}", self.job_base(job))
    }

    fn due_key(&self) -> String {
        format!("{}watch:due", self.tier.key_prefix())
    }

    /// The set of pending deliveries of earlier versions.
    fn old_pending_key(&self) -> String {
        format!("{}watch:pending", self.tier.key_prefix())
    }

    /// The opened value at `key`: `Ok(None)` when absent, or present and
    /// not ours (then deleted); `Err` when the server did not answer (a
    /// timeout, a lost connection): never taken for absence.
    async fn read(&self, key: &str, what: &str) -> Result<Option<Vec<u8>>, Unavailable> {
        let client = self.tier.client();
        let value = match self.tier.call(client.get::<Option<Bytes>, _>(key)).await {
            Some(Some(value)) => value,
            Some(None) => return Ok(None),
            None => {
                // A value of another type answers with an error too: only
                // that (asked again, answered) is not ours.
                let kind = self.key_type(key).await?;
                if kind != "string" && kind != "none" {
                    self.reject(key, what).await;
                    return Ok(None);
                }
                return Err(Unavailable);
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

    async fn key_type(&self, key: &str) -> Result<String, Unavailable> {
        self.tier
            .call(self.tier.client().eval::<String, _, _, _>(
                TYPE,
                key.to_owned(),
                Vec::<String>::new(),
            ))
            .await
            .ok_or(Unavailable)
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

    async fn exists(&self, key: String) -> Result<bool, Unavailable> {
        let n = self
            .tier
            .call(self.tier.client().exists::<i64, _>(key))
            .await
            .ok_or(Unavailable)?;
        Ok(n > 0)
    }

    async fn unlist(&self, members: Vec<String>) -> Result<(), Unavailable> {
        for chunk in members.chunks(500) {
            self.script(ZREM, self.due_key(), chunk.to_vec()).await?;
        }
        Ok(())
    }

    async fn list(&self, d: &Delivery, only_new: bool) -> Result<(), Unavailable> {
        let args = vec![
            d.next_at_ms.to_string(),
            member(d),
            ms(DELIVERY_LIFE).to_string(),
            if only_new { "NX" } else { "-" }.to_owned(),
        ];
        self.script(ZADD, self.due_key(), args).await.map(drop)
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
        if self
            .exists(self.tombstone_key(&delivery.job, &delivery.id))
            .await?
        {
            // Delivered or given up already: the same change, queued again.
            return Ok(false);
        }
        if self.count().await? >= MAX_PENDING {
            // Members without a delivery (junk, or expired) do not count.
            self.prune().await?;
            if self.count().await? >= MAX_PENDING {
                return Ok(false);
            }
        }
        let data = serde_json::to_vec(delivery).map_err(|_| Unavailable)?;
        let key = self.delivery_key(&delivery.job, &delivery.id);
        let added = self.write(key, data, DELIVERY_LIFE, true).await?;
        // Listed even when another node stored it first (listing twice is
        // one member; an existing member keeps its due time).
        self.list(delivery, true).await?;
        Ok(added)
    }

    /// Removes members of the index that name no stored delivery, at most
    /// once per [`PRUNE_EVERY`].
    async fn prune(&self) -> Result<(), Unavailable> {
        if !due_now(&self.pruned, PRUNE_EVERY) {
            return Ok(());
        }
        let members = self
            .tier
            .call(self.tier.client().eval::<Vec<String>, _, _, _>(
                MEMBERS,
                self.due_key(),
                vec![EXAMINE.to_string()],
            ))
            .await
            .ok_or(Unavailable)?;
        let mut gone = Vec::new();
        for m in members {
            if let Some((job, id)) = parse_member(&m) {
                if !self.exists(self.delivery_key(job, id)).await? {
                    gone.push(m);
                }
            }
        }
        self.unlist(gone).await
    }

    /// Moves members of the earlier versions' pending set to the index
    /// (due at once), a batch at a time.
    async fn migrate(&self) -> Result<(), Unavailable> {
        let members = self
            .tier
            .call(self.tier.client().eval::<Vec<String>, _, _, _>(
                SRANDMEMBER,
                self.old_pending_key(),
                vec!["500".to_owned()],
            ))
            .await
            .ok_or(Unavailable)?;
        for m in members {
            if parse_member(&m).is_some() {
                let args = vec![
                    "0".to_owned(),
                    m.clone(),
                    ms(DELIVERY_LIFE).to_string(),
                    "NX".to_owned(),
                ];
                self.script(ZADD, self.due_key(), args).await?;
            }
            self.script(SREM, self.old_pending_key(), vec![m]).await?;
        }
        Ok(())
    }

    /// One scan for the delivery loop: the due deliveries of `known` jobs,
    /// earliest first (at most `limit`), when the next one is due, counts,
    /// and (once per [`SWEEP_EVERY`]) a sample of other jobs' deliveries.
    pub async fn scan(
        &self,
        limit: usize,
        known: &[String],
        now: u64,
    ) -> Result<Scan, Unavailable> {
        let sweep = due_now(&self.swept, SWEEP_EVERY);
        if sweep {
            self.migrate().await?;
        }
        let mut args = vec![
            now.to_string(),
            limit.max(1).to_string(),
            EXAMINE.to_string(),
            if sweep { UNKNOWN_SAMPLE } else { 0 }.to_string(),
        ];
        args.extend(known.iter().cloned());
        let reply = self
            .tier
            .call(
                self.tier
                    .client()
                    .eval::<Vec<String>, _, _, _>(DUE, self.due_key(), args),
            )
            .await
            .ok_or(Unavailable)?;
        let mut items = reply.into_iter();
        let mut next = || items.next().unwrap_or_default();
        let number = |s: String| s.parse::<f64>().unwrap_or(0.0);
        let mut scan = Scan::default();
        let next_at = next();
        if !next_at.is_empty() {
            scan.next_at_ms = Some(number(next_at).max(0.0) as u64);
        }
        scan.count = number(next()) as usize;
        scan.cleaned = number(next()) > 0.0;
        let due: Vec<String> = (0..number(next()) as usize)
            .map(|_| {
                let m = next();
                next();
                m
            })
            .collect();
        let unknown: Vec<String> = (0..number(next()) as usize).map(|_| next()).collect();
        loop {
            let job = next();
            if job.is_empty() {
                break;
            }
            let n = number(next()) as usize;
            scan.by_job.insert(job, n);
        }
        let mut gone = Vec::new();
        for m in due {
            match self.listed(&m).await? {
                Some(d) => scan.due.push(d),
                None => gone.push(m),
            }
        }
        for m in unknown {
            match self.listed(&m).await? {
                Some(d) => scan.unknown.push(d),
                None => gone.push(m),
            }
        }
        scan.cleaned |= !gone.is_empty();
        self.unlist(gone).await?;
        Ok(scan)
    }

    /// The delivery an index member names; `None` when it is gone (or was
    /// not ours): no longer pending.
    async fn listed(&self, member: &str) -> Result<Option<Delivery>, Unavailable> {
        let Some((job, id)) = parse_member(member) else {
            return Ok(None);
        };
        let key = self.delivery_key(job, id);
        Ok(self
            .read(&key, "a delivery in the fleet tier")
            .await?
            .and_then(|data| read_delivery(&data))
            .filter(|d| d.id == id && d.job == job))
    }

    /// Up to `limit` pending deliveries, earliest due first.
    pub async fn pending(&self, limit: usize) -> Result<Vec<Delivery>, Unavailable> {
        let members = self
            .tier
            .call(self.tier.client().eval::<Vec<String>, _, _, _>(
                MEMBERS,
                self.due_key(),
                vec![limit.max(1).to_string()],
            ))
            .await
            .ok_or(Unavailable)?;
        let mut out = Vec::with_capacity(members.len());
        for m in members {
            if let Some(d) = self.listed(&m).await? {
                out.push(d);
            }
        }
        Ok(out)
    }

    pub async fn get(&self, job: &str, id: &str) -> Result<Option<Delivery>, Unavailable> {
        if self.exists(self.tombstone_key(job, id)).await? {
            // Made already: a value copied back (or left by a crash
            // between the tombstone and the delete) is not made again.
            let key = self.delivery_key(job, id);
            self.tier
                .call(self.tier.client().del::<i64, _>(key))
                .await
                .ok_or(Unavailable)?;
            self.unlist(vec![format!("{job}/{id}")]).await?;
            return Ok(None);
        }
        self.listed(&format!("{job}/{id}")).await
    }

    pub async fn count(&self) -> Result<usize, Unavailable> {
        let n = self
            .tier
            .call(self.tier.client().eval::<i64, _, _, _>(
                "if redis.call('TYPE', KEYS[1]).ok ~= 'zset' then return 0 end \
                 return redis.call('ZCARD', KEYS[1])",
                self.due_key(),
                Vec::<String>::new(),
            ))
            .await
            .ok_or(Unavailable)?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    /// Writes `delivery` back and lists it at its `next_at_ms`.
    pub async fn update(&self, delivery: &Delivery) -> Result<(), Unavailable> {
        let data = serde_json::to_vec(delivery).map_err(|_| Unavailable)?;
        let key = self.delivery_key(&delivery.job, &delivery.id);
        self.write(key, data, DELIVERY_LIFE, false).await?;
        self.list(delivery, false).await
    }

    pub async fn remove(&self, delivery: &Delivery) -> Result<(), Unavailable> {
        // The tombstone first: a crash after it leaves a value nobody makes.
        let left =
            (delivery.created_ms + ms(DELIVERY_LIFE) as u64).saturating_sub(crate::watch::now_ms());
        let life = Duration::from_millis(left).max(Duration::from_secs(60));
        let tomb = self.tombstone_key(&delivery.job, &delivery.id);
        self.write(tomb, b"1".to_vec(), life, false).await?;
        let key = self.delivery_key(&delivery.job, &delivery.id);
        self.tier
            .call(self.tier.client().del::<i64, _>(key))
            .await
            .ok_or(Unavailable)?;
        self.unlist(vec![member(delivery)]).await
    }

    /// `name` is `run:<job>` or `delivery:<job>/<id>`.
    pub async fn lease(&self, name: &str, life: Duration) -> Option<Lease> {
        let (kind, rest) = name.split_once(':')?;
        let job = rest.split('/').next().unwrap_or(rest);
        let key = format!("{}lease:{kind}:{}", self.job_base(job), hash(rest));
        let token = token();
        let life = life.max(Duration::from_millis(1));
        let args = vec![
            token.clone(),
            ms(life).to_string(),
            // Twice the real life: a longer one was pinned, not taken.
            ms(life * 2).to_string(),
        ];
        match self.script(TAKE, key.clone(), args).await {
            Ok(1) => Some(Lease { name: key, token }),
            _ => None,
        }
    }

    /// Extends `lease` to `life` from now: `Ok(false)` when it is no
    /// longer this node's.
    pub async fn renew(&self, lease: &Lease, life: Duration) -> Result<bool, Unavailable> {
        let args = vec![lease.token.clone(), ms(life).to_string()];
        Ok(self.script(EXTEND, lease.name.clone(), args).await? == 1)
    }

    pub async fn release(&self, lease: &Lease) {
        let _ = self
            .script(RELEASE, lease.name.clone(), vec![lease.token.clone()])
            .await;
    }
}

#[cfg(test)]
#[path = "redis_tests.rs"]
mod tests;
