//! The `sqlite` store of kept versions (the default): the table
//! `board_versions` of the service's state file ([`crate::store::sqlite`],
//! shared with the watches), through rusqlite with SQLite compiled in.
//!
//! The file is untrusted like any store: a row of the wrong types is
//! deleted and counts as not kept. A database error is never absence: it
//! is returned as [`Kept::Unavailable`] (the client is asked to retry), and
//! nothing is deleted because of it. Every call is blocking I/O: the caller
//! runs it on tokio's blocking threads.
//!
//! Bounds: count per board key (a board as one share link opens it) and
//! age, then bytes in total, taken first from the board key that holds the
//! most, so one link's large boards never evict another's versions while
//! it holds more. When the disk is full, versions give way: the oldest of
//! the largest holder go until a write fits ([`Sqlite::shed`]).

use super::{Bounds, Kept, Listed};
use crate::pipeline::version::is_version;
use crate::store::sqlite::{Db, DbError};
use rusqlite::{params, Connection, OptionalExtension, Transaction};
use std::sync::Arc;

/// The SQLite store.
pub struct Sqlite {
    bounds: Bounds,
    db: Arc<Db>,
}

impl Sqlite {
    /// The versions in `db` (opened on first use).
    pub fn new(db: Arc<Db>, bounds: Bounds) -> Self {
        Sqlite { bounds, db }
    }

    /// Whether `version` of `board` is kept; marks it as seen `now`.
    ///
    /// # Errors
    /// The file did not answer.
    pub fn touch(&self, board: &str, version: &str, now: u64) -> Result<bool, DbError> {
        self.db.with(|conn| {
            conn.execute(
                "UPDATE board_versions SET stored_at = ?3 WHERE board = ?1 AND version = ?2",
                params![board, version, now as i64],
            )
            .map(|n| n > 0)
        })
    }

    /// Keeps `value` as `version` of `board`, then applies the bounds. A
    /// full disk makes room among the versions (never elsewhere) and tries
    /// once more.
    ///
    /// # Errors
    /// The file did not answer, or the disk stays full.
    pub fn put(&self, board: &str, version: &str, value: &[u8], now: u64) -> Result<(), DbError> {
        if value.len() > self.bounds.max_bytes {
            return Ok(());
        }
        let write = |conn: &mut Connection| {
            let tx = conn.transaction()?;
            // A row already there keeps when it was first kept (a row an
            // older build wrote has none: its last sight is the best known).
            tx.execute(
                "INSERT INTO board_versions (board, version, stored_at, bytes, value, first_kept)
                   VALUES (?1, ?2, ?3, ?4, ?5, ?3)
                 ON CONFLICT (board, version) DO UPDATE SET stored_at = excluded.stored_at,
                   bytes = excluded.bytes, value = excluded.value,
                   first_kept = COALESCE(board_versions.first_kept, board_versions.stored_at)",
                params![board, version, now as i64, value.len() as i64, value],
            )?;
            self.apply_bounds(&tx, board, now)?;
            tx.commit()
        };
        match self.db.with(write) {
            Err(e) if e.full => {
                self.shed(value.len())?;
                self.db.with(write)
            }
            done => done,
        }
    }

    fn apply_bounds(&self, tx: &Transaction<'_>, board: &str, now: u64) -> rusqlite::Result<()> {
        let oldest = now.saturating_sub(self.bounds.keep_ms()) as i64;
        tx.execute("DELETE FROM board_versions WHERE stored_at < ?1", [oldest])?;
        tx.execute(
            "DELETE FROM board_versions WHERE board = ?1 AND version NOT IN
               (SELECT version FROM board_versions WHERE board = ?1 ORDER BY stored_at DESC LIMIT ?2)",
            params![board, self.bounds.keep_versions as i64],
        )?;
        // `bytes` of a foreign row may lie: the value's own length counts.
        let mut total: i64 = tx.query_row(
            "SELECT COALESCE(SUM(length(value)), 0) FROM board_versions",
            [],
            |r| r.get(0),
        )?;
        while total > self.bounds.max_bytes as i64 {
            match evict_from_largest(tx)? {
                Some(freed) => total -= freed,
                None => break,
            }
        }
        Ok(())
    }

    /// Deletes kept versions, the oldest of the largest holder first, until
    /// about `bytes` are free: what a full disk asks of versions, so that
    /// the watches' outbox can still write.
    ///
    /// # Errors
    /// The file did not answer.
    pub fn shed(&self, bytes: usize) -> Result<usize, DbError> {
        let freed = self.db.with(|conn| shed_in(conn, bytes))?;
        if freed > 0 {
            log::warn!(
                "kept versions in {}: the disk is full; {freed} bytes of the oldest versions gave way",
                self.db.path().display()
            );
        }
        Ok(freed)
    }

    /// The value kept as `version` of `board`, if younger than the age
    /// bound. A row that cannot be read as ours is deleted.
    pub fn get(&self, board: &str, version: &str, now: u64) -> Kept {
        let oldest = now.saturating_sub(self.bounds.keep_ms()) as i64;
        let read = self.db.with(|conn| {
            let row = conn
                .query_row(
                    "SELECT value, stored_at FROM board_versions WHERE board = ?1 AND version = ?2",
                    params![board, version],
                    |r| Ok((r.get::<_, Vec<u8>>(0), r.get::<_, i64>(1))),
                )
                .optional()?;
            Ok(match row {
                Some((Ok(value), Ok(at))) if at >= oldest => Kept::Value(value),
                Some((Ok(_), Ok(_))) | None => Kept::Missing,
                Some(_) => {
                    // A value or time of another type: not a row we wrote.
                    conn.execute(
                        "DELETE FROM board_versions WHERE board = ?1 AND version = ?2",
                        params![board, version],
                    )?;
                    Kept::Rejected
                }
            })
        });
        match read {
            Ok(kept) => kept,
            Err(e) => {
                self.report(&e);
                Kept::Unavailable
            }
        }
    }

    /// The versions of `board` younger than the age bound, with when each
    /// was first kept, newest first, at most `max`. A row that does not
    /// read as ours (a token that is not one, times of another type) is
    /// left out, never an error; a row an older build wrote (no
    /// `first_kept`) counts from when it was last seen.
    ///
    /// # Errors
    /// The file did not answer.
    pub fn list(&self, board: &str, max: usize, now: u64) -> Result<Vec<Listed>, DbError> {
        let oldest = now.saturating_sub(self.bounds.keep_ms()) as i64;
        let limit = i64::try_from(max).unwrap_or(i64::MAX);
        self.db.with(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT version, COALESCE(first_kept, stored_at) FROM board_versions
                 WHERE board = ?1 AND typeof(stored_at) = 'integer' AND stored_at >= ?2
                   AND typeof(version) = 'text'
                   AND typeof(COALESCE(first_kept, stored_at)) = 'integer'
                 ORDER BY 2 DESC, version DESC LIMIT ?3",
            )?;
            let rows = stmt.query_map(params![board, oldest, limit], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
            })?;
            let mut listed = Vec::new();
            for row in rows {
                let (version, first) = row?;
                if is_version(&version) {
                    listed.push(Listed {
                        version,
                        first_kept_ms: u64::try_from(first).unwrap_or(0),
                    });
                }
            }
            Ok(listed)
        })
    }

    /// Deletes a row whose value did not open.
    ///
    /// # Errors
    /// The file did not answer.
    pub fn forget(&self, board: &str, version: &str) -> Result<(), DbError> {
        self.db.with(|conn| {
            conn.execute(
                "DELETE FROM board_versions WHERE board = ?1 AND version = ?2",
                params![board, version],
            )
            .map(drop)
        })
    }

    /// Logs a database error at most once a minute.
    pub fn report(&self, e: &DbError) {
        super::warn_at_most_every_minute(&format!("kept versions: {e}"));
    }
}

/// Deletes kept versions on `conn`, the oldest of the largest holder
/// first, until about `bytes` (at least one version) are freed; the bytes
/// freed. The state file's other tables call it when the disk is full.
///
/// # Errors
/// SQLite's.
pub fn shed_in(conn: &mut Connection, bytes: usize) -> rusqlite::Result<usize> {
    let tx = conn.transaction()?;
    let mut freed = 0usize;
    while freed < bytes.max(1) {
        match evict_from_largest(&tx)? {
            Some(n) => freed += usize::try_from(n).unwrap_or(0).max(1),
            None => break,
        }
    }
    tx.commit()?;
    Ok(freed)
}

/// Deletes the oldest version of the board key that holds the most bytes;
/// the bytes freed, `None` when nothing is kept.
fn evict_from_largest(tx: &Transaction<'_>) -> rusqlite::Result<Option<i64>> {
    let victim: Option<(i64, i64)> = tx
        .query_row(
            "SELECT rowid, length(value) FROM board_versions WHERE board =
               (SELECT board FROM board_versions GROUP BY board ORDER BY SUM(length(value)) DESC LIMIT 1)
             ORDER BY stored_at ASC, rowid ASC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let Some((rowid, bytes)) = victim else {
        return Ok(None);
    };
    tx.execute("DELETE FROM board_versions WHERE rowid = ?1", [rowid])?;
    Ok(Some(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use std::time::Duration;

    fn bounds(max_bytes: usize) -> Bounds {
        Bounds {
            keep_versions: 2,
            keep: Duration::from_secs(60),
            max_bytes,
            max_document_bytes: 1 << 20,
        }
    }

    fn store(name: &str, max_bytes: usize) -> (Sqlite, PathBuf) {
        let dir =
            std::env::temp_dir().join(format!("sbapi-versions-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let db = Arc::new(Db::new(&dir.join("state.sqlite")));
        (Sqlite::new(db, bounds(max_bytes)), dir)
    }

    #[test]
    fn bounded_by_count_and_age_on_disk() {
        let (store, dir) = store("bounds", 1 << 20);
        for (i, v) in ["a", "b", "c"].iter().enumerate() {
            assert_eq!(store.touch("B", v, i as u64), Ok(false));
            store.put("B", v, b"x", i as u64).expect("kept");
        }
        assert_eq!(store.get("B", "a", 3), Kept::Missing, "count");
        assert_eq!(store.touch("B", "b", 4), Ok(true));
        assert!(matches!(store.get("B", "c", 5), Kept::Value(_)));
        assert_eq!(store.get("B", "c", 120_000), Kept::Missing, "age");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn listed_newest_first_by_when_first_kept_and_across_a_restart() {
        let (store, dir) = store("list", 1 << 20);
        let v = |c: char| c.to_string().repeat(32);
        let (a, b, c) = (v('a'), v('b'), v('c'));
        store.put("B", &a, b"x", 100).expect("kept");
        store.put("B", &b, b"y", 101).expect("kept");
        // Seen again, and written again (a touch that found the file
        // busy): when it was first kept stays.
        assert_eq!(store.touch("B", &a, 150), Ok(true));
        store.put("B", &a, b"x", 151).expect("kept");
        let listed = |max| {
            store
                .list("B", max, 200)
                .expect("listed")
                .into_iter()
                .map(|l| (l.version, l.first_kept_ms))
                .collect::<Vec<_>>()
        };
        assert_eq!(listed(10), vec![(b.clone(), 101), (a.clone(), 100)]);
        // The count bound (2 per board) drops the least recently seen: b.
        store.put("B", &c, b"z", 160).expect("kept");
        assert_eq!(listed(10), vec![(c.clone(), 160), (a.clone(), 100)]);
        assert_eq!(listed(1), vec![(c.clone(), 160)], "bounded");
        // A restart reads the same times from the file.
        store.db.close();
        assert_eq!(listed(10), vec![(c.clone(), 160), (a.clone(), 100)]);
        // Foreign rows are left out, never an error.
        store
            .db
            .with(|conn| {
                conn.execute_batch(
                    "INSERT INTO board_versions (board, version, stored_at, bytes, value, first_kept)
                       VALUES ('B', 'not a token', 170, 1, x'00', 170),
                              ('B', 'dddddddddddddddddddddddddddddddd', 170, 1, x'00', 'soon');",
                )
            })
            .expect("foreign rows");
        assert_eq!(listed(10), vec![(c, 160), (a, 100)]);
        assert!(store.list("other", 10, 200).expect("listed").is_empty());
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_table_of_an_older_build_gains_first_kept_and_keeps_its_rows() {
        let dir =
            std::env::temp_dir().join(format!("sbapi-versions-{}-migrate", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a directory");
        let path = dir.join("state.sqlite");
        let v = "e".repeat(32);
        {
            // The table as builds before feeds made it, with a row.
            let old = Connection::open(&path).expect("opens");
            old.execute_batch(
                "CREATE TABLE board_versions (board TEXT NOT NULL, version TEXT NOT NULL,
                   stored_at INTEGER NOT NULL, bytes INTEGER NOT NULL, value BLOB NOT NULL,
                   PRIMARY KEY (board, version));",
            )
            .expect("old table");
            old.execute(
                "INSERT INTO board_versions VALUES ('B', ?1, 100, 1, x'01')",
                [&v],
            )
            .expect("old row");
        }
        let store = Sqlite::new(Arc::new(Db::new(&path)), bounds(1 << 20));
        assert_eq!(
            store.get("B", &v, 200),
            Kept::Value(vec![1]),
            "the row stays"
        );
        let listed = store.list("B", 10, 200).expect("listed");
        assert_eq!(
            listed,
            vec![Listed {
                version: v.clone(),
                first_kept_ms: 100
            }]
        );
        // Seen again later: when it was first kept stays what the row said.
        assert_eq!(store.touch("B", &v, 300), Ok(true));
        assert_eq!(
            store.list("B", 10, 400).expect("listed")[0].first_kept_ms,
            100
        );
        // An older build still writes its rows (no first_kept): they list
        // from when they were last seen.
        let w = "f".repeat(32);
        Connection::open(&path)
            .expect("opens")
            .execute(
                "INSERT INTO board_versions (board, version, stored_at, bytes, value) VALUES ('B', ?1, 350, 1, x'02')",
                [&w],
            )
            .expect("an older build's row");
        let listed = store.list("B", 10, 400).expect("listed");
        assert_eq!(
            listed
                .iter()
                .map(|l| (l.version.as_str(), l.first_kept_ms))
                .collect::<Vec<_>>(),
            vec![(w.as_str(), 350), (v.as_str(), 100)]
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn the_byte_bound_takes_from_the_largest_holder_first() {
        let (store, dir) = store("fair", 10_000);
        // The victim's one small version, kept first (the oldest).
        store.put("victim", "v", &[1; 1000], 1).expect("kept");
        // Another link's large versions push the total past the bound.
        for (i, v) in ["a", "b"].iter().enumerate() {
            store
                .put(&format!("attacker{i}"), v, &[2; 4500], 2 + i as u64)
                .expect("kept");
        }
        store.put("attacker2", "c", &[3; 4500], 9).expect("kept");
        assert!(
            matches!(store.get("victim", "v", 10), Kept::Value(_)),
            "the smallest holder keeps its version"
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_full_disk_makes_versions_give_way() {
        let (store, dir) = store("full", 1 << 30);
        store.put("B", "a", &[0; 64 << 10], 1).expect("kept");
        store.put("C", "a", &[0; 64 << 10], 2).expect("kept");
        // The file may not grow: the next write finds the disk full.
        let pages: i64 = store
            .db
            .with(|c| c.query_row("PRAGMA page_count", [], |r| r.get(0)))
            .unwrap();
        store
            .db
            .with(|c| c.pragma_update(None, "max_page_count", pages))
            .unwrap();
        store
            .put("D", "a", &[0; 64 << 10], 3)
            .expect("room made among the versions");
        assert!(matches!(store.get("D", "a", 4), Kept::Value(_)));
        let kept = ["B", "C"]
            .iter()
            .filter(|b| matches!(store.get(b, "a", 4), Kept::Value(_)))
            .count();
        assert!(kept < 2, "an older version gave way");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn an_error_is_unavailable_and_deletes_nothing() {
        let dir = std::env::temp_dir().join(format!("sbapi-versions-{}-error", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let db = Arc::new(
            Db::new(&dir.join("state.sqlite")).with_busy_timeout(Duration::from_millis(50)),
        );
        let store = Sqlite::new(Arc::clone(&db), bounds(1 << 20));
        store.put("B", "a", b"x", 1).expect("kept");
        // Another process writes: this one's writes find the file busy.
        let writer = Connection::open(db.path()).unwrap();
        writer
            .execute_batch("BEGIN IMMEDIATE; DELETE FROM watch_leases;")
            .unwrap();
        assert!(store.put("B", "b", b"y", 2).is_err());
        assert!(store.touch("B", "a", 2).is_err());
        drop(writer);
        // A restart that finds the file locked by another process.
        db.close();
        let holder = Connection::open(db.path()).unwrap();
        holder
            .execute_batch("PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE;")
            .unwrap();
        assert_eq!(store.get("B", "a", 3), Kept::Unavailable);
        drop(holder);
        assert_eq!(store.get("B", "a", 3), Kept::Value(b"x".to_vec()));
        let _ = std::fs::remove_dir_all(dir);
    }
}
