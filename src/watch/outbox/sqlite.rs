//! The `sqlite` outbox: the watch tables of the service's state file
//! ([`crate::store::sqlite`], shared with the kept versions), so a delivery
//! is on disk before its first attempt and a restarted node finds it.
//!
//! - **Sealed**: each job state and delivery row carries an HMAC-SHA256 of
//!   what it holds, with a key derived from its job's `whsec_` secret
//!   ([`seal_key`]). A row whose seal does not check is not ours (inserted
//!   by hand, or written for a secret since rotated): deleted with a
//!   warning, never posted. A row of a job this process does not know is
//!   left alone (another configuration, an upgrade in progress, may know
//!   it) until [`super::MAX_DELIVERY_AGE`].
//! - **By due time**: deliveries are read in the order they are due, so a
//!   dead receiver's backed-off deliveries never hide another job's.
//! - **Bounded** by count and bytes ([`MAX_PENDING`], [`MAX_PENDING_BYTES`]).
//! - **Leases in the file**, so the old and the new process of an upgrade,
//!   which share it for a while, never run one job or make one attempt
//!   twice at once. A lease that claims to live longer than twice the life
//!   it was taken for counts as absent.
//! - **An error is not absence**: a busy, locked or failing file makes the
//!   call `Unavailable` (retried later); nothing is deleted for it. A full
//!   disk makes kept versions give way, and the write is tried once more.
//!
//! Calls are blocking and run on tokio's blocking threads.

use super::{
    read_delivery, read_state, warn_rejected, Delivery, JobState, Lease, Unavailable,
    MAX_DELIVERY_AGE, MAX_PENDING, MAX_PENDING_BYTES,
};
use crate::store::sqlite::{Db, DbError};
use ring::hmac;
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The key that seals a job's rows: HMAC-SHA256 of a fixed label under the
/// job's signing key, so the signing key itself is never used for both.
pub fn seal_key(signing_key: &[u8]) -> hmac::Key {
    let outer = hmac::Key::new(hmac::HMAC_SHA256, signing_key);
    let derived = hmac::sign(&outer, b"shared-board-api outbox seal v1");
    hmac::Key::new(hmac::HMAC_SHA256, derived.as_ref())
}

/// The seal of one row: its table, its key columns and its value, each
/// length-prefixed.
fn seal(key: &hmac::Key, parts: &[&[u8]]) -> Vec<u8> {
    let mut ctx = hmac::Context::with_key(key);
    for part in parts {
        ctx.update(&(part.len() as u64).to_le_bytes());
        ctx.update(part);
    }
    ctx.sign().as_ref().to_vec()
}

fn checks(key: &hmac::Key, parts: &[&[u8]], tag: &[u8]) -> bool {
    let mut data = Vec::new();
    for part in parts {
        data.extend_from_slice(&(part.len() as u64).to_le_bytes());
        data.extend_from_slice(part);
    }
    hmac::verify(key, &data, tag).is_ok()
}

pub struct SqliteOutbox {
    db: Arc<Db>,
    /// Each configured job's sealing key.
    keys: Arc<HashMap<String, hmac::Key>>,
    /// Rows of the tables an earlier version wrote were moved over.
    migrated: Arc<AtomicBool>,
}

impl SqliteOutbox {
    /// The outbox in `db` (opened on first use) for the jobs of `keys`
    /// (job id, signing key).
    pub fn new(db: Arc<Db>, keys: &[(String, Vec<u8>)]) -> Self {
        let keys = keys
            .iter()
            .map(|(job, key)| (job.clone(), seal_key(key)))
            .collect();
        SqliteOutbox {
            db,
            keys: Arc::new(keys),
            migrated: Arc::new(AtomicBool::new(false)),
        }
    }

    async fn with<T: Send + 'static>(
        &self,
        job: impl FnOnce(&mut Connection, &HashMap<String, hmac::Key>) -> rusqlite::Result<T>
            + Send
            + 'static,
    ) -> Result<T, Unavailable> {
        let (db, keys, migrated) = (
            Arc::clone(&self.db),
            Arc::clone(&self.keys),
            Arc::clone(&self.migrated),
        );
        let done = tokio::task::spawn_blocking(move || {
            if !migrated.load(Ordering::Acquire) {
                db.with(|conn| migrate(conn, &keys))?;
                migrated.store(true, Ordering::Release);
            }
            db.with(|conn| job(conn, &keys))
        })
        .await;
        match done {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => {
                report(&e);
                Err(Unavailable)
            }
            Err(_) => Err(Unavailable),
        }
    }

    pub async fn state(&self, job: &str, board: &str) -> Result<Option<JobState>, Unavailable> {
        let (j, b) = (job.to_owned(), board.to_owned());
        self.with(move |conn, keys| {
            let row: Option<(Vec<u8>, Vec<u8>)> = conn
                .query_row(
                    "SELECT value, seal FROM watch_jobs WHERE job = ?1 AND board = ?2",
                    params![j, b],
                    |r| Ok((bytes(r, 0), bytes(r, 1))),
                )
                .optional()?;
            let Some((value, tag)) = row else {
                return Ok(None);
            };
            let Some(key) = keys.get(&j) else {
                return Ok(None);
            };
            let parts: [&[u8]; 4] = [b"state", j.as_bytes(), b.as_bytes(), &value];
            match checks(key, &parts, &tag)
                .then(|| read_state(&value))
                .flatten()
            {
                Some(state) => Ok(Some(state)),
                None => {
                    warn_rejected("a job's state in the SQLite file");
                    conn.execute(
                        "DELETE FROM watch_jobs WHERE job = ?1 AND board = ?2",
                        params![j, b],
                    )?;
                    Ok(None)
                }
            }
        })
        .await
    }

    pub async fn set_state(
        &self,
        job: &str,
        board: &str,
        state: &JobState,
    ) -> Result<(), Unavailable> {
        let (j, b) = (job.to_owned(), board.to_owned());
        let value = serde_json::to_vec(state).map_err(|_| Unavailable)?;
        self.with(move |conn, keys| {
            let Some(key) = keys.get(&j) else {
                return Ok(());
            };
            let tag = seal(key, &[b"state", j.as_bytes(), b.as_bytes(), &value]);
            conn.execute(
                "INSERT OR REPLACE INTO watch_jobs (job, board, value, seal) VALUES (?1, ?2, ?3, ?4)",
                params![j, b, value, tag],
            )
            .map(drop)
        })
        .await
    }

    /// Stores `delivery` unless one with its id is stored, or the outbox is
    /// full (by count or bytes): `Ok(true)` when it was added. A full disk
    /// makes kept versions give way first.
    pub async fn add(&self, delivery: &Delivery) -> Result<bool, Unavailable> {
        let d = delivery.clone();
        let value = serde_json::to_vec(delivery).map_err(|_| Unavailable)?;
        let db = Arc::clone(&self.db);
        let insert = move |conn: &mut Connection, keys: &HashMap<String, hmac::Key>| {
            let Some(key) = keys.get(&d.job) else {
                return Ok(false);
            };
            let (n, held): (i64, i64) = conn.query_row(
                "SELECT COUNT(*), COALESCE(SUM(length(value)), 0) FROM watch_outbox",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            if n >= MAX_PENDING as i64 || held as usize + value.len() > MAX_PENDING_BYTES {
                return Ok(false);
            }
            let write = |conn: &Connection| insert_sealed(conn, key, &d, &value);
            match write(conn) {
                Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull) => {
                    // Versions give way before a delivery does.
                    crate::store::versions::sqlite::shed_in(conn, value.len() * 2)?;
                    log::warn!(
                        "watch: the disk is full; kept versions in {} gave way to a delivery",
                        db.path().display()
                    );
                    write(conn).map(|n| n == 1)
                }
                done => done.map(|n| n == 1),
            }
        };
        self.with(insert).await
    }

    /// Up to `limit` pending deliveries of the jobs this process knows, the
    /// first due first. A row that does not check out is deleted; one of an
    /// unknown job is left for a process that knows it, and dropped only
    /// past [`MAX_DELIVERY_AGE`].
    pub async fn pending(&self, limit: usize) -> Result<Vec<Delivery>, Unavailable> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let now = super::super::now_ms();
        self.with(move |conn, keys| {
            let oldest = clamp(now.saturating_sub(ms(MAX_DELIVERY_AGE)));
            let known: Vec<&str> = keys.keys().map(String::as_str).collect();
            let stale = drop_unknown_and_old(conn, &known, oldest)?;
            if stale > 0 {
                log::warn!(
                    "watch: {stale} delivery(ies) of a job no configuration here knows, \
                     older than {} days, dropped",
                    MAX_DELIVERY_AGE.as_secs() / 86_400
                );
                for _ in 0..stale {
                    super::super::metrics::delivery("expired");
                }
            }
            let mut stmt = conn.prepare(
                "SELECT id, job, value, seal FROM watch_outbox WHERE job IN (SELECT value FROM json_each(?1))
                 ORDER BY due_ms, id LIMIT ?2",
            )?;
            let known_json = serde_json::to_string(&known).unwrap_or_else(|_| "[]".into());
            let rows: Vec<(String, String, Vec<u8>, Vec<u8>)> = stmt
                .query_map(params![known_json, limit], |r| {
                    Ok((text(r, 0), text(r, 1), bytes(r, 2), bytes(r, 3)))
                })?
                .collect::<Result<_, _>>()?;
            drop(stmt);
            let mut out = Vec::with_capacity(rows.len());
            for (id, job, value, tag) in rows {
                match open_delivery(keys, &id, &job, &value, &tag) {
                    Some(d) => out.push(d),
                    None => {
                        warn_rejected("a delivery in the SQLite file");
                        conn.execute("DELETE FROM watch_outbox WHERE id = ?1", [&id])?;
                    }
                }
            }
            Ok(out)
        })
        .await
    }

    pub async fn get(&self, job: &str, id: &str) -> Result<Option<Delivery>, Unavailable> {
        let (job, id) = (job.to_owned(), id.to_owned());
        self.with(move |conn, keys| {
            let row: Option<(String, Vec<u8>, Vec<u8>)> = conn
                .query_row(
                    "SELECT job, value, seal FROM watch_outbox WHERE id = ?1",
                    [&id],
                    |r| Ok((text(r, 0), bytes(r, 1), bytes(r, 2))),
                )
                .optional()?;
            let Some((stored_job, value, tag)) = row else {
                return Ok(None);
            };
            if stored_job != job || !keys.contains_key(&job) {
                return Ok(None);
            }
            match open_delivery(keys, &id, &job, &value, &tag) {
                Some(d) => Ok(Some(d)),
                None => {
                    warn_rejected("a delivery in the SQLite file");
                    conn.execute("DELETE FROM watch_outbox WHERE id = ?1", [&id])?;
                    Ok(None)
                }
            }
        })
        .await
    }

    pub async fn count(&self) -> Result<usize, Unavailable> {
        self.with(|conn, _| {
            conn.query_row("SELECT COUNT(*) FROM watch_outbox", [], |r| {
                r.get::<_, i64>(0)
            })
        })
        .await
        .map(|n| usize::try_from(n).unwrap_or(0))
    }

    pub async fn update(&self, delivery: &Delivery) -> Result<(), Unavailable> {
        let d = delivery.clone();
        let value = serde_json::to_vec(delivery).map_err(|_| Unavailable)?;
        self.with(move |conn, keys| {
            let Some(key) = keys.get(&d.job) else {
                return Ok(());
            };
            let tag = seal(key, &delivery_parts(&d.id, &d.job, &value));
            conn.execute(
                "UPDATE watch_outbox SET due_ms = ?2, bytes = ?3, value = ?4, seal = ?5 WHERE id = ?1 AND job = ?6",
                params![d.id, clamp(d.next_at_ms), value.len() as i64, value, tag, d.job],
            )
            .map(drop)
        })
        .await
    }

    pub async fn remove(&self, delivery: &Delivery) -> Result<(), Unavailable> {
        let (id, job) = (delivery.id.clone(), delivery.job.clone());
        self.with(move |conn, _| {
            conn.execute(
                "DELETE FROM watch_outbox WHERE id = ?1 AND job = ?2",
                params![id, job],
            )
            .map(drop)
        })
        .await
    }

    /// Takes the lease `name` for `life` unless another holder (this
    /// process or another sharing the file) has it.
    pub async fn lease(&self, name: &str, life: Duration) -> Option<Lease> {
        let (name, token) = (name.to_owned(), super::token());
        let now = super::super::now_ms();
        let (n, t) = (name.clone(), token.clone());
        let taken = self
            .with(move |conn, _| {
                let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
                // Expired, or claiming more than twice a real life: absent.
                tx.execute(
                    "DELETE FROM watch_leases WHERE name = ?1 AND (until_ms <= ?2 OR until_ms > ?3)",
                    params![
                        n,
                        clamp(now),
                        clamp(now.saturating_add(2 * ms(life)))
                    ],
                )?;
                let added = tx.execute(
                    "INSERT OR IGNORE INTO watch_leases (name, token, until_ms) VALUES (?1, ?2, ?3)",
                    params![n, t, clamp(now.saturating_add(ms(life)))],
                )?;
                tx.commit()?;
                Ok(added == 1)
            })
            .await;
        matches!(taken, Ok(true)).then_some(Lease { name, token })
    }

    /// Extends `lease` to `life` from now: `Ok(false)` when it is no longer
    /// this holder's.
    ///
    /// # Errors
    /// The file did not answer (the lease may still be ours: ask again).
    pub async fn renew(&self, lease: &Lease, life: Duration) -> Result<bool, Unavailable> {
        let (n, t) = (lease.name.clone(), lease.token.clone());
        let until = clamp(super::super::now_ms().saturating_add(ms(life)));
        let renewed = self
            .with(move |conn, _| {
                conn.execute(
                    "UPDATE watch_leases SET until_ms = ?3 WHERE name = ?1 AND token = ?2",
                    params![n, t, until],
                )
            })
            .await;
        renewed.map(|n| n == 1)
    }

    pub async fn release(&self, lease: &Lease) {
        let (n, t) = (lease.name.clone(), lease.token.clone());
        let _ = self
            .with(move |conn, _| {
                conn.execute(
                    "DELETE FROM watch_leases WHERE name = ?1 AND token = ?2",
                    params![n, t],
                )
            })
            .await;
    }
}

/// Inserts `d` (its JSON `value`) sealed with its job's `key`, unless a
/// delivery of its id is stored; how many rows were added (0 or 1).
fn insert_sealed(
    conn: &Connection,
    key: &hmac::Key,
    d: &Delivery,
    value: &[u8],
) -> rusqlite::Result<usize> {
    let tag = seal(key, &delivery_parts(&d.id, &d.job, value));
    conn.execute(
        "INSERT OR IGNORE INTO watch_outbox (id, job, due_ms, created_ms, bytes, value, seal)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            d.id,
            d.job,
            clamp(d.next_at_ms),
            clamp(d.created_ms),
            value.len() as i64,
            value,
            tag
        ],
    )
}

fn delivery_parts<'a>(id: &'a str, job: &'a str, value: &'a [u8]) -> [&'a [u8]; 4] {
    [b"delivery", id.as_bytes(), job.as_bytes(), value]
}

/// The seal a delivery row of `job` carries (what [`open_delivery`]
/// checks), for the fuzz target that checks the two agree.
#[cfg(feature = "internals")]
pub fn seal_delivery(key: &hmac::Key, id: &str, job: &str, value: &[u8]) -> Vec<u8> {
    seal(key, &delivery_parts(id, job, value))
}

/// The delivery of a row, when its seal checks for its job and its value
/// is one this service writes, for this id and job.
pub fn open_delivery(
    keys: &HashMap<String, hmac::Key>,
    id: &str,
    job: &str,
    value: &[u8],
    tag: &[u8],
) -> Option<Delivery> {
    let key = keys.get(job)?;
    if !checks(key, &delivery_parts(id, job, value), tag) {
        return None;
    }
    read_delivery(value).filter(|d| d.id == id && d.job == job)
}

/// Deletes deliveries of jobs not in `known` created before `oldest`; how
/// many.
fn drop_unknown_and_old(conn: &Connection, known: &[&str], oldest: i64) -> rusqlite::Result<usize> {
    let known_json = serde_json::to_string(known).unwrap_or_else(|_| "[]".into());
    conn.execute(
        "DELETE FROM watch_outbox WHERE created_ms < ?1 AND job NOT IN (SELECT value FROM json_each(?2))",
        params![oldest, known_json],
    )
}

/// Moves the rows of the tables an earlier version wrote (`watch_state`,
/// `watch_deliveries`: unsealed) into the sealed tables, for the jobs this
/// process knows; the old tables go once empty. Rows that do not read back
/// as ours are dropped with them.
fn migrate(conn: &mut Connection, keys: &HashMap<String, hmac::Key>) -> rusqlite::Result<()> {
    let has = |conn: &Connection, table: &str| -> rusqlite::Result<bool> {
        conn.query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [table],
            |r| r.get::<_, i64>(0),
        )
        .map(|n| n > 0)
    };
    if !has(conn, "watch_deliveries")? && !has(conn, "watch_state")? {
        return Ok(());
    }
    let tx = conn.transaction()?;
    let mut moved = 0usize;
    if has(&tx, "watch_deliveries")? {
        let rows: Vec<(String, Vec<u8>)> =
            match tx.prepare("SELECT id, value FROM watch_deliveries") {
                Ok(mut stmt) => stmt
                    .query_map([], |r| Ok((text(r, 0), bytes(r, 1))))?
                    .collect::<Result<_, _>>()?,
                // Not the shape an earlier version wrote: not ours to move.
                Err(_) => Vec::new(),
            };
        for (id, value) in rows {
            let Some(d) = read_delivery(&value).filter(|d| d.id == id) else {
                tx.execute("DELETE FROM watch_deliveries WHERE id IS ?1", [&id])?;
                continue;
            };
            let Some(key) = keys.get(&d.job) else {
                continue;
            };
            insert_sealed(&tx, key, &d, &value)?;
            tx.execute("DELETE FROM watch_deliveries WHERE id = ?1", [&id])?;
            moved += 1;
        }
        let left: i64 = tx
            .query_row("SELECT COUNT(*) FROM watch_deliveries", [], |r| r.get(0))
            .unwrap_or(0);
        if left == 0 {
            tx.execute_batch("DROP TABLE watch_deliveries")?;
        }
    }
    if has(&tx, "watch_state")? {
        let rows: Vec<(String, String, Vec<u8>)> =
            match tx.prepare("SELECT job, board, value FROM watch_state") {
                Ok(mut stmt) => stmt
                    .query_map([], |r| Ok((text(r, 0), text(r, 1), bytes(r, 2))))?
                    .collect::<Result<_, _>>()?,
                Err(_) => Vec::new(),
            };
        for (job, board, value) in rows {
            if read_state(&value).is_some() {
                // A job this process does not know: left for one that does.
                let Some(key) = keys.get(&job) else {
                    continue;
                };
                let tag = seal(key, &[b"state", job.as_bytes(), board.as_bytes(), &value]);
                tx.execute(
                    "INSERT OR IGNORE INTO watch_jobs (job, board, value, seal) VALUES (?1, ?2, ?3, ?4)",
                    params![job, board, value, tag],
                )?;
                moved += 1;
            }
            tx.execute(
                "DELETE FROM watch_state WHERE job IS ?1 AND board IS ?2",
                params![job, board],
            )?;
        }
        let left: i64 = tx
            .query_row("SELECT COUNT(*) FROM watch_state", [], |r| r.get(0))
            .unwrap_or(0);
        if left == 0 {
            tx.execute_batch("DROP TABLE watch_state")?;
        }
    }
    tx.commit()?;
    if moved > 0 {
        log::info!("watch: {moved} row(s) of an earlier version's tables moved to the sealed ones");
    }
    Ok(())
}

/// A column's bytes, whatever type SQLite stored it as (text or blob);
/// empty for another type, which no seal checks.
fn bytes(row: &rusqlite::Row<'_>, at: usize) -> Vec<u8> {
    match row.get::<_, rusqlite::types::Value>(at) {
        Ok(rusqlite::types::Value::Blob(b)) => b,
        Ok(rusqlite::types::Value::Text(t)) => t.into_bytes(),
        _ => Vec::new(),
    }
}

/// A column as text; empty for another type.
fn text(row: &rusqlite::Row<'_>, at: usize) -> String {
    match row.get::<_, rusqlite::types::Value>(at) {
        Ok(rusqlite::types::Value::Text(t)) => t,
        _ => String::new(),
    }
}

fn clamp(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Logs a store error at most once a minute.
fn report(e: &DbError) {
    static UNANSWERED: crate::log_throttle::Throttle = crate::log_throttle::Throttle::new();
    UNANSWERED.warn(&format!("watch: the state file did not answer: {e}"));
}

#[cfg(test)]
mod tests;
