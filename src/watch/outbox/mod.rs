//! Where watches keep what must survive the process: each job's last
//! version (per board), and each delivery from the moment it is queued until
//! it is delivered or given up. The store follows `board_api.changes.store`:
//! beside the kept versions in the SQLite file ([`sqlite`]), in the fleet
//! tier's Redis ([`redis`], sealed, with leases every node of a fleet
//! honours), or in the process ([`memory`], lost with it).
//!
//! (A build with neither SQLite nor Redis has only the memory outbox,
//! which reads nothing back: the readers below are then unused.)
//!
//! Everything read back is untrusted: a row or value that does not parse
//! or check out is deleted with a warning, never followed.

pub mod memory;
#[cfg(feature = "fleet")]
pub mod redis;
#[cfg(feature = "sqlite")]
pub mod sqlite;

use crate::pipeline::version::is_version;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The largest delivery body kept (bytes).
pub const MAX_BODY: usize = 1 << 20;
/// Pending deliveries kept at most; a delivery past this is dropped.
pub const MAX_PENDING: usize = 10_000;
/// Bytes of pending deliveries kept at most (bodies): a delivery past this
/// is dropped, as past [`MAX_PENDING`].
pub const MAX_PENDING_BYTES: usize = 64 << 20;
/// How long a delivery of a job no configuration here knows is left for a
/// node that knows it (a rolling deploy) before it is dropped.
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
pub const MAX_DELIVERY_AGE: Duration = Duration::from_secs(7 * 24 * 3600);

/// What a job saw last of one board.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobState {
    /// The board's version at the last run.
    pub version: String,
    /// Counts the changes seen (names each delivery).
    pub seq: u64,
    /// When the last run (any node's) ended, ms since the epoch.
    pub last_run_ms: u64,
    /// When the last change was seen.
    pub last_change_ms: Option<u64>,
    /// The delivery of the change this state records, written with it
    /// before the delivery is queued: a run that stops between the two
    /// leaves it here, and the next run queues it (the same id) before
    /// anything else, so a change is never lost nor sent under two ids.
    /// Absent once queued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued: Option<Delivery>,
}

#[cfg_attr(not(any(feature = "sqlite", feature = "fleet")), allow(dead_code))]
impl JobState {
    fn checked(mut self) -> Option<Self> {
        if let Some(d) = self.queued.take() {
            self.queued = Some(d.checked()?);
        }
        is_version(&self.version).then_some(self)
    }
}

/// One queued webhook delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Delivery {
    /// `webhook-id`: `msg_` and 32 hex digits, the same on every attempt.
    pub id: String,
    pub job: String,
    /// The JSON body, fixed when queued.
    pub body: String,
    /// Attempts made so far.
    pub attempts: u32,
    /// When the next attempt is due, ms since the epoch.
    pub next_at_ms: u64,
    pub created_ms: u64,
}

#[cfg_attr(not(any(feature = "sqlite", feature = "fleet")), allow(dead_code))]
impl Delivery {
    /// Whether a value read back is one this service could have written.
    fn checked(self) -> Option<Self> {
        let id_ok = self.id.len() == 36
            && self.id.starts_with("msg_")
            && self.id[4..].bytes().all(|b| b.is_ascii_hexdigit());
        let job_ok = (1..=64).contains(&self.job.len())
            && self
                .job
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
        (id_ok && job_ok && self.body.len() <= MAX_BODY && self.attempts <= 1000).then_some(self)
    }
}

/// Parses a stored job state; `None` for anything not ours.
#[cfg_attr(not(any(feature = "sqlite", feature = "fleet")), allow(dead_code))]
pub fn read_state(bytes: &[u8]) -> Option<JobState> {
    serde_json::from_slice::<JobState>(bytes).ok()?.checked()
}

/// Parses a stored delivery; `None` for anything not ours.
#[cfg_attr(not(any(feature = "sqlite", feature = "fleet")), allow(dead_code))]
pub fn read_delivery(bytes: &[u8]) -> Option<Delivery> {
    serde_json::from_slice::<Delivery>(bytes).ok()?.checked()
}

/// What one scan of the outbox found, for the delivery loop.
#[derive(Debug, Default)]
pub struct Scan {
    /// Due deliveries of the jobs this node knows, earliest first.
    pub due: Vec<Delivery>,
    /// When the earliest delivery of a known job that is not yet due is.
    pub next_at_ms: Option<u64>,
    /// Pending deliveries per known job.
    pub by_job: HashMap<String, usize>,
    /// Pending deliveries, every job's (as the store counts them).
    pub count: usize,
    /// Due deliveries of jobs this node does not know (a sample, now and
    /// then): left for the nodes that know them, dropped only when old.
    pub unknown: Vec<Delivery>,
    /// The scan removed entries that named nothing: scan again soon.
    pub cleaned: bool,
}

/// The store did not answer (a database error, the tier down): the caller
/// tries again later rather than acting on nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unavailable;

/// A lease held by this node: its name and the token that proves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub name: String,
    pub token: String,
}

/// The store of one process (one per process, behind an `Arc`: the
/// variants' sizes do not matter).
#[allow(clippy::large_enum_variant)]
pub enum Outbox {
    Memory(memory::Memory),
    #[cfg(feature = "sqlite")]
    Sqlite(sqlite::SqliteOutbox),
    #[cfg(feature = "fleet")]
    Redis(redis::RedisOutbox),
}

macro_rules! each {
    ($self:ident, $s:ident => $e:expr) => {
        match $self {
            Outbox::Memory($s) => $e,
            #[cfg(feature = "sqlite")]
            Outbox::Sqlite($s) => $e,
            #[cfg(feature = "fleet")]
            Outbox::Redis($s) => $e,
        }
    };
}

impl Outbox {
    /// The kind for `/watch` and the log.
    pub fn kind(&self) -> &'static str {
        match self {
            Outbox::Memory(_) => "memory",
            #[cfg(feature = "sqlite")]
            Outbox::Sqlite(_) => "sqlite",
            #[cfg(feature = "fleet")]
            Outbox::Redis(_) => "redis",
        }
    }

    pub async fn state(&self, job: &str, board: &str) -> Result<Option<JobState>, Unavailable> {
        each!(self, s => s.state(job, board).await)
    }

    pub async fn set_state(
        &self,
        job: &str,
        board: &str,
        state: &JobState,
    ) -> Result<(), Unavailable> {
        each!(self, s => s.set_state(job, board, state).await)
    }

    /// Stores `delivery` unless one with its id is stored: `Ok(true)` when
    /// it was added.
    pub async fn add(&self, delivery: &Delivery) -> Result<bool, Unavailable> {
        each!(self, s => s.add(delivery).await)
    }

    /// One scan for the delivery loop: the due deliveries of the `known`
    /// jobs (at most `limit`), when the next is due, and what is pending.
    pub async fn scan(
        &self,
        limit: usize,
        known: &[String],
        now: u64,
    ) -> Result<Scan, Unavailable> {
        #[cfg(feature = "fleet")]
        if let Outbox::Redis(s) = self {
            return s.scan(limit, known, now).await;
        }
        // One node's stores read by due time (SQLite: only the jobs it
        // knows; memory: every job's, a few times the limit so other jobs'
        // rarely crowd out the due ones), sorted out here.
        let all = self.pending(limit.saturating_mul(5)).await?;
        let mut scan = Scan {
            count: self.count().await.unwrap_or(all.len()),
            ..Scan::default()
        };
        for d in all {
            if !known.contains(&d.job) {
                scan.unknown.push(d);
                continue;
            }
            *scan.by_job.entry(d.job.clone()).or_default() += 1;
            if d.next_at_ms <= now {
                scan.due.push(d);
            } else {
                scan.next_at_ms = Some(
                    scan.next_at_ms
                        .map_or(d.next_at_ms, |n| n.min(d.next_at_ms)),
                );
            }
        }
        scan.due.sort_by_key(|d| d.next_at_ms);
        scan.due.truncate(limit);
        Ok(scan)
    }

    /// Up to `limit` pending deliveries (any order).
    pub async fn pending(&self, limit: usize) -> Result<Vec<Delivery>, Unavailable> {
        each!(self, s => s.pending(limit).await)
    }

    /// How many deliveries are pending.
    pub async fn count(&self) -> Result<usize, Unavailable> {
        each!(self, s => s.count().await)
    }

    /// The delivery `id` of `job` as stored now; `None` when it is no
    /// longer pending (delivered or given up by another node).
    pub async fn get(&self, job: &str, id: &str) -> Result<Option<Delivery>, Unavailable> {
        each!(self, s => s.get(job, id).await)
    }

    /// Writes back a delivery after an attempt.
    pub async fn update(&self, delivery: &Delivery) -> Result<(), Unavailable> {
        each!(self, s => s.update(delivery).await)
    }

    /// Forgets a delivery (delivered or given up).
    pub async fn remove(&self, delivery: &Delivery) -> Result<(), Unavailable> {
        each!(self, s => s.remove(delivery).await)
    }

    /// Takes the lease `name` for `life` unless another holder has it.
    pub async fn lease(&self, name: &str, life: Duration) -> Option<Lease> {
        each!(self, s => s.lease(name, life).await)
    }

    /// Releases `lease` if it is still this node's.
    pub async fn release(&self, lease: &Lease) {
        each!(self, s => s.release(lease).await)
    }

    /// Extends `lease` to `life` from now if it is still this node's:
    /// `Ok(false)` when it is not (lost: the work it guards should stop);
    /// `Err` when Redis did not answer (the lease may still be ours). The
    /// process's and the file's stores say false for both.
    pub async fn renew(&self, lease: &Lease, life: Duration) -> Result<bool, Unavailable> {
        match self {
            Outbox::Memory(s) => Ok(s.renew(lease, life).await),
            #[cfg(feature = "sqlite")]
            Outbox::Sqlite(s) => s.renew(lease, life).await,
            #[cfg(feature = "fleet")]
            Outbox::Redis(s) => s.renew(lease, life).await,
        }
    }

    /// Runs `work` while holding `lease`, renewing it to `life` every third
    /// of it; `None` (the work dropped) when the lease turned out to be
    /// another holder's. A store that does not answer a renewal is asked
    /// again: the lease may still be ours.
    pub async fn while_leased<T>(
        &self,
        lease: &Lease,
        life: Duration,
        work: impl std::future::Future<Output = T>,
    ) -> Option<T> {
        let renew = async {
            loop {
                tokio::time::sleep(life / 3).await;
                if self.renew(lease, life).await == Ok(false) {
                    return;
                }
            }
        };
        tokio::select! {
            done = work => Some(done),
            () = renew => None,
        }
    }

    /// Checks that the store keeps what it is given (a Redis that evicts
    /// keys or keeps nothing on disk is not fit for deliveries); one line
    /// per finding, each also logged at WARN.
    pub async fn check_fitness(&self) -> Vec<String> {
        #[cfg(feature = "fleet")]
        if let Outbox::Redis(s) = self {
            let found = s.fitness().await;
            for line in &found {
                log::warn!("watch: {line}");
            }
            return found;
        }
        Vec::new()
    }

    /// What [`Outbox::check_fitness`] found (`/watch`'s `storeWarnings`).
    pub fn warnings(&self) -> Vec<String> {
        match self {
            #[cfg(feature = "fleet")]
            Outbox::Redis(s) => s.warnings(),
            _ => Vec::new(),
        }
    }
}

/// Leases within one process (the memory and SQLite stores: one node).
#[derive(Default)]
pub struct LocalLeases {
    held: Mutex<HashMap<String, (String, Instant)>>,
}

impl LocalLeases {
    pub fn take(&self, name: &str, life: Duration) -> Option<Lease> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        held.retain(|_, (_, until)| *until > now);
        if held.contains_key(name) {
            return None;
        }
        let token = token();
        held.insert(name.to_owned(), (token.clone(), now + life));
        Some(Lease {
            name: name.to_owned(),
            token,
        })
    }

    pub fn renew(&self, lease: &Lease, life: Duration) -> bool {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        match held.get_mut(&lease.name) {
            Some((token, until)) if *token == lease.token => {
                *until = Instant::now() + life;
                true
            }
            _ => false,
        }
    }

    pub fn release(&self, lease: &Lease) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if held
            .get(&lease.name)
            .is_some_and(|(t, _)| *t == lease.token)
        {
            held.remove(&lease.name);
        }
    }
}

pub use crate::random::{hex, token};

/// Logs a rejected stored value at WARN at most once a minute.
#[cfg_attr(not(any(feature = "sqlite", feature = "fleet")), allow(dead_code))]
pub fn warn_rejected(what: &str) {
    static REJECTED: crate::log_throttle::Throttle = crate::log_throttle::Throttle::new();
    REJECTED.warn(&format!("watch: {what} that is not ours was deleted"));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delivery() -> Delivery {
        Delivery {
            id: format!("msg_{}", "a".repeat(32)),
            job: "trip".into(),
            body: "{}".into(),
            attempts: 0,
            next_at_ms: 1,
            created_ms: 1,
        }
    }

    #[test]
    fn only_values_this_service_writes_are_read_back() {
        let ok = serde_json::to_vec(&delivery()).expect("json");
        assert_eq!(read_delivery(&ok), Some(delivery()));
        for bad in [
            &b"not json"[..],
            b"{}",
            br#"{"id":"msg_x","job":"trip","body":"{}","attempts":0,"next_at_ms":1,"created_ms":1}"#,
            br#"{"id":"msg_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","job":"a b","body":"{}","attempts":0,"next_at_ms":1,"created_ms":1}"#,
        ] {
            assert_eq!(read_delivery(bad), None, "{}", String::from_utf8_lossy(bad));
        }
        assert_eq!(
            read_state(br#"{"version":"zz","seq":1,"last_run_ms":0,"last_change_ms":null}"#),
            None
        );
    }

    #[test]
    fn a_local_lease_is_one_holders_until_released_or_expired() {
        let leases = LocalLeases::default();
        let a = leases.take("run:j", Duration::from_secs(60)).expect("free");
        assert!(leases.take("run:j", Duration::from_secs(60)).is_none());
        leases.release(&Lease {
            name: a.name.clone(),
            token: "other".into(),
        });
        assert!(leases.take("run:j", Duration::from_secs(60)).is_none());
        leases.release(&a);
        assert!(leases.take("run:j", Duration::ZERO).is_some());
        assert!(
            leases.take("run:j", Duration::from_secs(1)).is_some(),
            "expired"
        );
    }
}
