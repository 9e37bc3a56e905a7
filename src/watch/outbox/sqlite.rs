//! The `sqlite` outbox: two tables in the SQLite file of the kept versions
//! (`board_api.changes.path`), through a connection of its own in WAL mode,
//! so a delivery is on disk before its first attempt and a restarted node
//! finds it. One node owns the file: leases are the process's.
//!
//! The file is untrusted: tables of another shape are dropped and made
//! again at start (logged); a row that does not read back as ours is
//! deleted. Calls are blocking and run on tokio's blocking threads.

use super::{
    read_delivery, read_state, warn_rejected, Delivery, JobState, Lease, LocalLeases, Unavailable,
    MAX_PENDING,
};
use rusqlite::{params, Connection, OptionalExtension};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS watch_state (
    job TEXT NOT NULL,
    board TEXT NOT NULL,
    value BLOB NOT NULL,
    PRIMARY KEY (job, board)
);
CREATE TABLE IF NOT EXISTS watch_deliveries (
    id TEXT PRIMARY KEY NOT NULL,
    value BLOB NOT NULL
);";

/// Checks that the tables have our columns (a query of each).
const PROBE: &str = "SELECT job, board, value FROM watch_state LIMIT 0;
SELECT id, value FROM watch_deliveries LIMIT 0;";

pub struct SqliteOutbox {
    conn: Arc<Mutex<Connection>>,
    leases: LocalLeases,
}

impl SqliteOutbox {
    /// Opens the file at `path` (the versions' file, already made).
    ///
    /// # Errors
    /// The file cannot be opened, or our tables cannot be made.
    pub fn open(path: &Path) -> Result<Self, String> {
        let conn = Connection::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        conn.busy_timeout(Duration::from_secs(5))
            .map_err(|e| e.to_string())?;
        let _ = conn.pragma_update(None, "journal_mode", "WAL");
        // FULL on this connection: a queued delivery survives a power cut
        // too, not only a crash of the process (writes here are rare).
        let _ = conn.pragma_update(None, "synchronous", "FULL");
        conn.execute_batch(SCHEMA).map_err(|e| e.to_string())?;
        if conn.execute_batch(PROBE).is_err() {
            log::warn!("watch: the SQLite file held watch tables of another shape; made afresh");
            conn.execute_batch(
                "DROP TABLE IF EXISTS watch_state; DROP TABLE IF EXISTS watch_deliveries;",
            )
            .and_then(|()| conn.execute_batch(SCHEMA))
            .map_err(|e| e.to_string())?;
        }
        Ok(SqliteOutbox {
            conn: Arc::new(Mutex::new(conn)),
            leases: LocalLeases::default(),
        })
    }

    async fn with<T: Send + 'static>(
        &self,
        job: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, Unavailable> {
        let conn = Arc::clone(&self.conn);
        let done = tokio::task::spawn_blocking(move || {
            let conn = conn.lock().unwrap_or_else(|e| e.into_inner());
            job(&conn)
        })
        .await;
        match done {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => {
                log::warn!("watch: SQLite: {e}");
                Err(Unavailable)
            }
            Err(_) => Err(Unavailable),
        }
    }

    pub async fn state(&self, job: &str, board: &str) -> Result<Option<JobState>, Unavailable> {
        let (j, b) = (job.to_owned(), board.to_owned());
        self.with(move |conn| {
            let value: Option<rusqlite::types::Value> = conn
                .query_row(
                    "SELECT value FROM watch_state WHERE job = ?1 AND board = ?2",
                    params![j, b],
                    |r| r.get(0),
                )
                .optional()?;
            let Some(value) = value else { return Ok(None) };
            match bytes_of(value).as_deref().and_then(read_state) {
                Some(state) => Ok(Some(state)),
                None => {
                    warn_rejected("a job's state in the SQLite file");
                    conn.execute(
                        "DELETE FROM watch_state WHERE job = ?1 AND board = ?2",
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
        self.with(move |conn| {
            conn.execute(
                "INSERT OR REPLACE INTO watch_state (job, board, value) VALUES (?1, ?2, ?3)",
                params![j, b, value],
            )
            .map(drop)
        })
        .await
    }

    pub async fn add(&self, delivery: &Delivery) -> Result<bool, Unavailable> {
        let id = delivery.id.clone();
        let value = serde_json::to_vec(delivery).map_err(|_| Unavailable)?;
        self.with(move |conn| {
            let n: i64 =
                conn.query_row("SELECT COUNT(*) FROM watch_deliveries", [], |r| r.get(0))?;
            if n >= MAX_PENDING as i64 {
                return Ok(false);
            }
            let added = conn.execute(
                "INSERT OR IGNORE INTO watch_deliveries (id, value) VALUES (?1, ?2)",
                params![id, value],
            )?;
            Ok(added == 1)
        })
        .await
    }

    pub async fn pending(&self, limit: usize) -> Result<Vec<Delivery>, Unavailable> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.with(move |conn| {
            let mut stmt = conn.prepare("SELECT id, value FROM watch_deliveries LIMIT ?1")?;
            let rows: Vec<(rusqlite::types::Value, rusqlite::types::Value)> = stmt
                .query_map([limit], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<_, _>>()?;
            let mut out = Vec::with_capacity(rows.len());
            for (id, value) in rows {
                let delivery = bytes_of(value).as_deref().and_then(read_delivery);
                match (delivery, &id) {
                    (Some(d), rusqlite::types::Value::Text(id)) if d.id == *id => out.push(d),
                    _ => {
                        warn_rejected("a delivery in the SQLite file");
                        conn.execute("DELETE FROM watch_deliveries WHERE id IS ?1", [id])?;
                    }
                }
            }
            Ok(out)
        })
        .await
    }

    pub async fn get(&self, job: &str, id: &str) -> Result<Option<Delivery>, Unavailable> {
        let (job, id) = (job.to_owned(), id.to_owned());
        self.with(move |conn| {
            let value: Option<rusqlite::types::Value> = conn
                .query_row(
                    "SELECT value FROM watch_deliveries WHERE id = ?1",
                    [&id],
                    |r| r.get(0),
                )
                .optional()?;
            let Some(value) = value else { return Ok(None) };
            match bytes_of(value).as_deref().and_then(read_delivery) {
                Some(d) if d.id == id && d.job == job => Ok(Some(d)),
                _ => {
                    warn_rejected("a delivery in the SQLite file");
                    conn.execute("DELETE FROM watch_deliveries WHERE id = ?1", [&id])?;
                    Ok(None)
                }
            }
        })
        .await
    }

    pub async fn count(&self) -> Result<usize, Unavailable> {
        self.with(|conn| {
            conn.query_row("SELECT COUNT(*) FROM watch_deliveries", [], |r| {
                r.get::<_, i64>(0)
            })
        })
        .await
        .map(|n| usize::try_from(n).unwrap_or(0))
    }

    pub async fn update(&self, delivery: &Delivery) -> Result<(), Unavailable> {
        let id = delivery.id.clone();
        let value = serde_json::to_vec(delivery).map_err(|_| Unavailable)?;
        self.with(move |conn| {
            conn.execute(
                "UPDATE watch_deliveries SET value = ?2 WHERE id = ?1",
                params![id, value],
            )
            .map(drop)
        })
        .await
    }

    pub async fn remove(&self, delivery: &Delivery) -> Result<(), Unavailable> {
        let id = delivery.id.clone();
        self.with(move |conn| {
            conn.execute("DELETE FROM watch_deliveries WHERE id = ?1", [id])
                .map(drop)
        })
        .await
    }

    pub async fn lease(&self, name: &str, life: Duration) -> Option<Lease> {
        self.leases.take(name, life)
    }

    pub async fn release(&self, lease: &Lease) {
        self.leases.release(lease);
    }
}

/// A column's bytes, whatever type SQLite stored it as (text or blob).
fn bytes_of(value: rusqlite::types::Value) -> Option<Vec<u8>> {
    match value {
        rusqlite::types::Value::Blob(b) => Some(b),
        rusqlite::types::Value::Text(t) => Some(t.into_bytes()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> std::path::PathBuf {
        let path =
            std::env::temp_dir().join(format!("sbapi-outbox-{}-{name}.sqlite", std::process::id()));
        for side in ["", "-wal", "-shm"] {
            let mut p = path.as_os_str().to_owned();
            p.push(side);
            let _ = std::fs::remove_file(std::path::PathBuf::from(p));
        }
        path
    }

    fn delivery(id: char) -> Delivery {
        Delivery {
            id: format!("msg_{}", id.to_string().repeat(32)),
            job: "trip".into(),
            body: "{}".into(),
            attempts: 0,
            next_at_ms: 0,
            created_ms: 0,
        }
    }

    #[tokio::test]
    async fn foreign_rows_are_deleted_and_tables_of_another_shape_made_afresh() {
        let path = temp("foreign");
        {
            let conn = Connection::open(&path).expect("a file");
            conn.execute_batch("CREATE TABLE watch_deliveries (x INTEGER);")
                .expect("a table of another shape");
        }
        let outbox = SqliteOutbox::open(&path).expect("made afresh");
        assert!(outbox.add(&delivery('a')).await.expect("stored"));
        assert!(
            !outbox.add(&delivery('a')).await.expect("once"),
            "one per id"
        );
        {
            let conn = Connection::open(&path).expect("the same file");
            let bad: [(&dyn rusqlite::ToSql, &dyn rusqlite::ToSql); 4] = [
                (&"msg_x", &"not json"),
                (&42, &vec![0u8, 1, 2]),
                (
                    &format!("msg_{}", "b".repeat(32)),
                    &serde_json::to_string(&delivery('c')).unwrap(),
                ),
                (&format!("msg_{}", "d".repeat(32)), &1.5),
            ];
            for (id, value) in bad {
                conn.execute(
                    "INSERT INTO watch_deliveries (id, value) VALUES (?1, ?2)",
                    params![id, value],
                )
                .expect("a foreign row");
            }
            conn.execute(
                "INSERT INTO watch_state (job, board, value) VALUES ('trip', 'b', x'00ff')",
                [],
            )
            .expect("a foreign state");
        }
        let pending = outbox.pending(100).await.expect("read");
        assert_eq!(pending, vec![delivery('a')]);
        assert_eq!(outbox.count().await, Ok(1), "the foreign rows are gone");
        assert_eq!(outbox.state("trip", "b").await, Ok(None));
        let state = JobState {
            version: "0".repeat(32),
            seq: 3,
            last_run_ms: 1,
            last_change_ms: Some(1),
        };
        outbox.set_state("trip", "b", &state).await.expect("stored");
        assert_eq!(outbox.state("trip", "b").await, Ok(Some(state)));
        // Reopened (a restart): what was pending is still there.
        drop(outbox);
        let outbox = SqliteOutbox::open(&path).expect("reopens");
        assert_eq!(
            outbox.get("trip", &delivery('a').id).await,
            Ok(Some(delivery('a')))
        );
        assert_eq!(outbox.get("other", &delivery('a').id).await, Ok(None));
        outbox.remove(&delivery('a')).await.expect("removed");
        assert_eq!(outbox.count().await, Ok(0));
        let _ = std::fs::remove_file(&path);
    }
}
