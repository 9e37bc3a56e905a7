//! The `sqlite` store of kept versions (the default): one table in a SQLite
//! file at `board_api.changes.path`, in WAL mode, through rusqlite with
//! SQLite compiled in (no system library, no file format of our own).
//!
//! The file is untrusted like any store: a file that is not a database, a
//! table of another shape, or a row of the wrong types is never an error
//! to a client. At start a file that cannot hold our table is moved aside
//! and a new one made (a fresh start, logged); a row that cannot be read is
//! deleted and counts as not kept; a database error at run time counts as
//! not kept (`410`) and is logged at most once a minute. Every call is
//! blocking I/O: the caller runs it on tokio's blocking threads.

use super::{Bounds, Kept};
use rusqlite::{params, Connection, OptionalExtension};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS board_versions (
    board TEXT NOT NULL,
    version TEXT NOT NULL,
    stored_at INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    value BLOB NOT NULL,
    PRIMARY KEY (board, version)
);
CREATE INDEX IF NOT EXISTS board_versions_age ON board_versions (stored_at);";

/// The SQLite store.
pub struct Sqlite {
    bounds: Bounds,
    path: PathBuf,
    conn: Mutex<Connection>,
}

impl Sqlite {
    /// Opens (or creates) the file at `path`, in WAL mode, with our table;
    /// a file that is not a database or holds a table of another shape is
    /// moved aside to `<path>.unreadable` and a new one made.
    ///
    /// # Errors
    /// The file can be neither opened nor made (a directory that does not
    /// exist or is not writable).
    pub fn open(path: &Path, bounds: Bounds) -> Result<Self, String> {
        let conn = match prepare(path) {
            Ok(conn) => conn,
            Err(first) if path.exists() => {
                let aside = path.with_extension("unreadable");
                log::warn!(
                    "board_api.changes.path: {} is not a store of kept versions ({first}); moved to {} and started afresh",
                    path.display(),
                    aside.display()
                );
                std::fs::rename(path, &aside).map_err(|e| format!("{}: {e}", path.display()))?;
                for side in ["-wal", "-shm"] {
                    let mut name = path.as_os_str().to_owned();
                    name.push(side);
                    let _ = std::fs::remove_file(PathBuf::from(name));
                }
                prepare(path).map_err(|e| format!("{}: {e}", path.display()))?
            }
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        Ok(Sqlite {
            bounds,
            path: path.to_owned(),
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `version` of `board` is kept; marks it as seen `now`.
    pub fn touch(&self, board: &str, version: &str, now: u64) -> bool {
        let conn = self.conn();
        let touched = conn.execute(
            "UPDATE board_versions SET stored_at = ?3 WHERE board = ?1 AND version = ?2",
            params![board, version, now as i64],
        );
        self.ok(touched).is_some_and(|n| n > 0)
    }

    /// Keeps `value` as `version` of `board`, then applies the bounds.
    pub fn put(&self, board: &str, version: &str, value: &[u8], now: u64) {
        if value.len() > self.bounds.max_bytes {
            return;
        }
        let mut conn = self.conn();
        let done = (|| -> rusqlite::Result<()> {
            let tx = conn.transaction()?;
            tx.execute(
                "INSERT OR REPLACE INTO board_versions (board, version, stored_at, bytes, value) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![board, version, now as i64, value.len() as i64, value],
            )?;
            let oldest = now.saturating_sub(self.bounds.keep_ms()) as i64;
            tx.execute("DELETE FROM board_versions WHERE stored_at < ?1", [oldest])?;
            tx.execute(
                "DELETE FROM board_versions WHERE board = ?1 AND version NOT IN
                   (SELECT version FROM board_versions WHERE board = ?1 ORDER BY stored_at DESC LIMIT ?2)",
                params![board, self.bounds.keep_versions as i64],
            )?;
            // Oldest first until the total fits; `bytes` of a foreign row
            // may lie, so the value's own length is what is summed.
            let total: i64 = tx.query_row(
                "SELECT COALESCE(SUM(length(value)), 0) FROM board_versions",
                [],
                |r| r.get(0),
            )?;
            if total > self.bounds.max_bytes as i64 {
                tx.execute(
                    "DELETE FROM board_versions WHERE rowid IN (
                       SELECT rowid FROM (SELECT rowid, SUM(length(value)) OVER (ORDER BY stored_at DESC, rowid DESC) AS running
                                          FROM board_versions) WHERE running > ?1)",
                    [self.bounds.max_bytes as i64],
                )?;
            }
            tx.commit()
        })();
        self.ok(done);
    }

    /// The value kept as `version` of `board`, if younger than the age
    /// bound. A row that cannot be read as ours is deleted.
    pub fn get(&self, board: &str, version: &str, now: u64) -> Kept {
        let conn = self.conn();
        let oldest = now.saturating_sub(self.bounds.keep_ms()) as i64;
        let row = conn
            .query_row(
                "SELECT value, stored_at FROM board_versions WHERE board = ?1 AND version = ?2",
                params![board, version],
                |r| Ok((r.get::<_, Vec<u8>>(0), r.get::<_, i64>(1))),
            )
            .optional();
        match self.ok(row) {
            Some(Some((Ok(value), Ok(at)))) if at >= oldest => Kept::Value(value),
            Some(Some((Ok(_), Ok(_)))) | Some(None) => Kept::Missing,
            Some(Some(_)) => {
                // A value or time of another type: not a row we wrote.
                let _ = conn.execute(
                    "DELETE FROM board_versions WHERE board = ?1 AND version = ?2",
                    params![board, version],
                );
                Kept::Rejected
            }
            None => Kept::Missing,
        }
    }

    /// Deletes a row whose value did not open.
    pub fn forget(&self, board: &str, version: &str) {
        let conn = self.conn();
        let gone = conn.execute(
            "DELETE FROM board_versions WHERE board = ?1 AND version = ?2",
            params![board, version],
        );
        self.ok(gone);
    }

    /// `Some` of a success; a database error logged (at most once a
    /// minute) and `None`.
    fn ok<T>(&self, result: rusqlite::Result<T>) -> Option<T> {
        match result {
            Ok(v) => Some(v),
            Err(e) => {
                super::warn_at_most_every_minute(&format!(
                    "kept versions in {}: {e}",
                    self.path.display()
                ));
                None
            }
        }
    }
}

/// A connection to `path` with our table, or why not.
fn prepare(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(std::time::Duration::from_secs(1))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.execute_batch(SCHEMA)?;
    // A table of that name made by someone else fails here, at start.
    conn.prepare("SELECT board, version, stored_at, bytes, value FROM board_versions LIMIT 0")?;
    Ok(conn)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn bounds() -> Bounds {
        Bounds {
            keep_versions: 2,
            keep: Duration::from_secs(60),
            max_bytes: 1 << 20,
            max_document_bytes: 1 << 20,
        }
    }

    fn path(name: &str) -> PathBuf {
        let p =
            std::env::temp_dir().join(format!("sbapi-unit-{}-{name}.sqlite", std::process::id()));
        clean(&p);
        p
    }

    /// The file, its WAL and shared-memory sides, and one moved aside.
    fn clean(p: &Path) {
        let mut files = vec![p.to_owned(), p.with_extension("unreadable")];
        for side in ["-wal", "-shm"] {
            let mut name = p.as_os_str().to_owned();
            name.push(side);
            files.push(PathBuf::from(name));
        }
        for f in files {
            let _ = std::fs::remove_file(f);
        }
    }

    #[test]
    fn a_table_of_another_shape_is_moved_aside() {
        let p = path("foreign");
        let other = Connection::open(&p).expect("opens");
        other
            .execute_batch("CREATE TABLE board_versions (id INTEGER PRIMARY KEY, note TEXT); INSERT INTO board_versions (note) VALUES ('theirs');")
            .expect("writes");
        drop(other);
        let store = Sqlite::open(&p, bounds()).expect("a fresh start");
        assert!(p.with_extension("unreadable").exists());
        store.put("b", "v1", b"value", 1);
        assert_eq!(store.get("b", "v1", 2), Kept::Value(b"value".to_vec()));
        drop(store);
        clean(&p);
    }

    #[test]
    fn bounded_by_count_and_age_on_disk() {
        let p = path("bounds");
        let store = Sqlite::open(&p, bounds()).expect("opens");
        for (i, v) in ["a", "b", "c"].iter().enumerate() {
            assert!(!store.touch("B", v, i as u64));
            store.put("B", v, b"x", i as u64);
        }
        assert_eq!(store.get("B", "a", 3), Kept::Missing, "count");
        assert!(store.touch("B", "b", 4));
        assert!(matches!(store.get("B", "c", 5), Kept::Value(_)));
        assert_eq!(store.get("B", "c", 120_000), Kept::Missing, "age");
        drop(store);
        clean(&p);
    }
}
