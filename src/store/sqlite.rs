//! The SQLite file that holds the state this service owns when
//! `board_api.changes.store` is `sqlite`: the kept versions
//! ([`super::versions::sqlite`]) and the watches' job state, outbox and
//! leases (`watch::outbox::sqlite`). One connection per process, shared by
//! both, opened on first use in the process that uses it.
//!
//! Why this shape, from SQLite's own rules:
//! - **Never across `fork`.** POSIX locks are not inherited by a child, so a
//!   connection opened before Pingora's daemon fork holds none of SQLite's
//!   locks in the daemon: another process that opens the file (`-t`, the
//!   next upgrade) then believes it is alone, checkpoints, and deletes the
//!   `-wal` and `-shm` the daemon still writes to. Nothing here opens at
//!   construction; the first call opens, in the process that serves. A
//!   connection found in a process other than the one that opened it (a
//!   host that forks after use) is leaked, never used or closed there, and
//!   a new one opened.
//! - **An error is not absence.** Busy, locked, I/O, full: the call fails
//!   and its caller retries or reports; nothing is deleted or moved. Only a
//!   file that is not a database (`SQLITE_NOTADB`) or holds our tables in
//!   another shape is moved aside, with its `-wal` and `-shm` (never
//!   deleted), and a new one made; any other error while opening is
//!   returned, and the binary stops its start with it.
//! - **Private.** A new directory is made `0700` and a new file `0600`
//!   (SQLite gives the `-wal` and `-shm` the file's mode).
//!
//! Every call is blocking: callers run it on tokio's blocking threads.

use rusqlite::{Connection, ErrorCode};
use std::fs::OpenOptions;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// Every table this file holds, as this version writes them. Each
/// statement is idempotent.
const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS board_versions (
    board TEXT NOT NULL,
    version TEXT NOT NULL,
    stored_at INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    value BLOB NOT NULL,
    first_kept INTEGER,
    PRIMARY KEY (board, version)
);
CREATE INDEX IF NOT EXISTS board_versions_age ON board_versions (stored_at);
CREATE TABLE IF NOT EXISTS watch_jobs (
    job TEXT NOT NULL,
    board TEXT NOT NULL,
    value BLOB NOT NULL,
    seal BLOB NOT NULL,
    PRIMARY KEY (job, board)
);
CREATE TABLE IF NOT EXISTS watch_outbox (
    id TEXT PRIMARY KEY NOT NULL,
    job TEXT NOT NULL,
    due_ms INTEGER NOT NULL,
    created_ms INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    value BLOB NOT NULL,
    seal BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS watch_outbox_due ON watch_outbox (due_ms);
CREATE TABLE IF NOT EXISTS watch_leases (
    name TEXT PRIMARY KEY NOT NULL,
    token TEXT NOT NULL,
    until_ms INTEGER NOT NULL
);";

/// A query of every column of every table: fails when a table of one of
/// our names has another shape.
const PROBE: &str = "SELECT board, version, stored_at, bytes, value FROM board_versions LIMIT 0;
SELECT job, board, value, seal FROM watch_jobs LIMIT 0;
SELECT id, job, due_ms, created_ms, bytes, value, seal FROM watch_outbox LIMIT 0;
SELECT name, token, until_ms FROM watch_leases LIMIT 0;";

/// How long a statement waits for another process's lock (an upgrade's
/// old and new process share the file for a while).
const BUSY: Duration = Duration::from_secs(5);

/// Why a call did not complete. Never a reason to delete anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DbError {
    /// SQLite's message, or why the file could not be opened. Holds no
    /// value from the file.
    pub message: String,
    /// The disk (or the file's page limit) is full: what can give way
    /// (kept versions) may make room, then the call is worth one retry.
    pub full: bool,
}

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<rusqlite::Error> for DbError {
    fn from(e: rusqlite::Error) -> Self {
        let full = e.sqlite_error_code() == Some(ErrorCode::DiskFull);
        DbError {
            message: e.to_string(),
            full,
        }
    }
}

/// The connection and the process that opened it.
struct Open {
    conn: Connection,
    pid: u32,
}

/// The state file of one process. Cheap to share behind an `Arc`.
pub struct Db {
    path: PathBuf,
    busy: Duration,
    open: Mutex<Option<Open>>,
}

impl Db {
    /// The file at `path`, not opened yet: nothing is read, written or
    /// locked until the first call (or [`Db::open_now`]).
    pub fn new(path: &Path) -> Self {
        Db {
            path: path.to_owned(),
            busy: BUSY,
            open: Mutex::new(None),
        }
    }

    /// How long a statement waits for another process's lock (default
    /// 5 s; tests shorten it).
    #[cfg(test)]
    pub(crate) fn with_busy_timeout(mut self, busy: Duration) -> Self {
        self.busy = busy;
        self
    }

    /// Closes this process's connection (the next call opens it again), as
    /// a restart would.
    #[cfg(test)]
    pub(crate) fn close(&self) {
        *self.open.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// The file's path (for log lines; it holds no secret).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens the file now unless it is open in this process: the binary
    /// calls it once its server runs (after the fork of `-d`), so that a
    /// file that cannot be used stops the start instead of the first
    /// request.
    ///
    /// # Errors
    /// The file cannot be opened or made (see the module's doc).
    pub fn open_now(&self) -> Result<(), DbError> {
        self.with(|_| Ok(()))
    }

    /// Runs `job` on the connection, opening it first when this process
    /// has none. Blocking.
    ///
    /// # Errors
    /// The file cannot be opened, or `job` failed.
    pub fn with<T>(
        &self,
        job: impl FnOnce(&mut Connection) -> rusqlite::Result<T>,
    ) -> Result<T, DbError> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let pid = std::process::id();
        if let Some(stale) = open.take_if(|o| o.pid != pid) {
            // Opened by the parent of a fork: closing it here could
            // checkpoint and delete files the parent still uses.
            std::mem::forget(stale);
        }
        if open.is_none() {
            let conn = open_file(&self.path, self.busy)?;
            *open = Some(Open { conn, pid });
        }
        match open.as_mut() {
            Some(o) => job(&mut o.conn).map_err(DbError::from),
            None => Err(DbError {
                message: "not open".into(),
                full: false,
            }),
        }
    }
}

/// A connection to `path` with our tables; a file that is not ours moved
/// aside first.
fn open_file(path: &Path, busy: Duration) -> Result<Connection, DbError> {
    private_dir(path)?;
    private_file(path)?;
    // Told before SQLite opens it: SQLite, closing a connection to a file
    // that is not a database, may delete a `-wal` beside it.
    let checked = match database_header(path) {
        Ok(true) => prepare(path, busy),
        Ok(false) => Err(Refused::NotOurs("not a database (SQLITE_NOTADB)".into())),
        Err(e) => {
            return Err(DbError {
                message: format!("cannot read {}: {e}", path.display()),
                full: false,
            })
        }
    };
    match checked {
        Ok(conn) => Ok(conn),
        Err(Refused::NotOurs(why)) => {
            let aside = move_aside(path)?;
            log::warn!(
                "board_api.changes.path: {} is not a state file of this service ({why}); \
                 moved to {} with its -wal and -shm, and started afresh",
                path.display(),
                aside.display()
            );
            private_file(path)?;
            prepare(path, busy).map_err(|e| e.into_error(path))
        }
        Err(e) => Err(e.into_error(path)),
    }
}

/// Why [`prepare`] did not give a connection.
enum Refused {
    /// `SQLITE_NOTADB`, or a table of ours in another shape.
    NotOurs(String),
    /// Anything else: busy, locked, I/O, permissions, full, corrupt.
    Failed(rusqlite::Error),
}

impl Refused {
    fn into_error(self, path: &Path) -> DbError {
        let (message, full) = match self {
            Refused::NotOurs(why) => (why, false),
            Refused::Failed(e) => {
                let full = e.sqlite_error_code() == Some(ErrorCode::DiskFull);
                (e.to_string(), full)
            }
        };
        DbError {
            message: format!("{}: {message}", path.display()),
            full,
        }
    }
}

/// Whether the file at `path` is empty (new) or starts as every SQLite
/// database does.
fn database_header(path: &Path) -> std::io::Result<bool> {
    use std::io::Read as _;
    let mut head = [0u8; 16];
    let mut file = std::fs::File::open(path)?;
    let mut read = 0;
    while read < head.len() {
        match file.read(&mut head[read..])? {
            0 => break,
            n => read += n,
        }
    }
    Ok(read == 0 || (read == head.len() && &head == b"SQLite format 3\0"))
}

fn prepare(path: &Path, busy: Duration) -> Result<Connection, Refused> {
    let refused = |e: rusqlite::Error| match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) => Refused::NotOurs(e.to_string()),
        _ => Refused::Failed(e),
    };
    let mut conn = Connection::open(path).map_err(refused)?;
    conn.busy_timeout(busy).map_err(refused)?;
    // Our tables' shape, before anything is written: a file that holds a
    // table of one of our names in another shape is not ours, and is left
    // as it was found. The first read of the file: a file that is not a
    // database fails here with SQLITE_NOTADB.
    let ours: Vec<String> = {
        let mut stmt = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
            .map_err(refused)?;
        let names = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(refused)?
            .collect::<Result<_, _>>()
            .map_err(refused)?;
        names
    };
    for probe in PROBE.lines() {
        let table = probe
            .split(" FROM ")
            .nth(1)
            .and_then(|t| t.split(' ').next());
        if table.is_some_and(|t| ours.iter().any(|n| n == t)) {
            if let Err(e) = conn.prepare(probe.trim_end_matches(';')) {
                return Err(match e.sqlite_error_code() {
                    Some(ErrorCode::Unknown) | None => {
                        Refused::NotOurs(format!("a table of another shape ({e})"))
                    }
                    _ => refused(e),
                });
            }
        }
    }
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(refused)?;
    // FULL: a queued delivery survives a power cut too, not only a crash
    // of the process; writes are one per new version or delivery.
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(refused)?;
    conn.execute_batch(SCHEMA).map_err(refused)?;
    migrate(&mut conn).map_err(refused)?;
    Ok(conn)
}

/// Adds to a file an older build made what this one writes, keeping every
/// row: `board_versions.first_kept` (when a version was first kept, for
/// feeds), from each row's last sight, the best time known. Nullable, so
/// that an older build sharing the file (an upgrade's old process) still
/// writes its rows. In one write transaction: two processes opening the
/// file at once add it once.
fn migrate(conn: &mut Connection) -> rusqlite::Result<()> {
    let has = |conn: &Connection| {
        conn.query_row(
            "SELECT COUNT(*) FROM pragma_table_info('board_versions') WHERE name = 'first_kept'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .map(|n| n > 0)
    };
    if has(conn)? {
        return Ok(());
    }
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    if !has(&tx)? {
        tx.execute_batch(
            "ALTER TABLE board_versions ADD COLUMN first_kept INTEGER;
             UPDATE board_versions SET first_kept = stored_at;",
        )?;
    }
    tx.commit()
}

/// Makes the file's directory `0700` when it does not exist yet (an
/// existing directory is the operator's, left as it is).
fn private_dir(path: &Path) -> Result<(), DbError> {
    let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) else {
        return Ok(());
    };
    if dir.is_dir() {
        return Ok(());
    }
    let made = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir);
    made.map_err(|e| DbError {
        message: format!("cannot make the directory {}: {e}", dir.display()),
        full: e.raw_os_error() == Some(libc::ENOSPC),
    })
}

/// Creates the file `0600` when it does not exist, so SQLite never
/// creates it with the process's umask.
fn private_file(path: &Path) -> Result<(), DbError> {
    let made = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path);
    match made {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(DbError {
            message: format!("cannot create {}: {e}", path.display()),
            full: e.raw_os_error() == Some(libc::ENOSPC),
        }),
    }
}

/// Renames `path` and its `-wal` and `-shm` to `<path>.unreadable-<secs>`
/// (and `-wal`, `-shm` after it); returns the new name of the file.
fn move_aside(path: &Path) -> Result<PathBuf, DbError> {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let aside = with_suffix(path, &format!(".unreadable-{secs}"));
    for side in ["", "-wal", "-shm"] {
        let from = with_suffix(path, side);
        if !from.exists() {
            continue;
        }
        let to = with_suffix(&aside, side);
        std::fs::rename(&from, &to).map_err(|e| DbError {
            message: format!("cannot move {} aside: {e}", from.display()),
            full: false,
        })?;
        // Moved, not copied: the mode stays; make sure it is private.
        let _ = std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o600));
    }
    Ok(aside)
}

/// `path` with `suffix` appended to its last component.
pub fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("sbapi-db-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir.join("state").join("state.sqlite")
    }

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path)
            .expect("exists")
            .permissions()
            .mode()
            & 0o777
    }

    #[test]
    fn nothing_is_touched_before_the_first_call_and_files_are_private() {
        let path = temp("private");
        let db = Db::new(&path);
        assert!(!path.exists(), "constructing opens nothing");
        db.open_now().expect("opens");
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        assert_eq!(mode(&path), 0o600);
        let n: i64 = db
            .with(|c| c.query_row("SELECT COUNT(*) FROM watch_outbox", [], |r| r.get(0)))
            .expect("a table of ours");
        assert_eq!(n, 0);
        let _ = std::fs::remove_dir_all(path.parent().unwrap().parent().unwrap());
    }

    #[test]
    fn a_file_that_is_not_a_database_is_moved_aside_whole() {
        let path = temp("notadb");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, vec![b'x'; 8192]).unwrap();
        std::fs::write(with_suffix(&path, "-wal"), b"their wal").unwrap();
        let db = Db::new(&path);
        db.open_now().expect("a fresh start");
        let moved = moved_aside(&path);
        assert_eq!(moved.len(), 2, "{moved:?}");
        let wal = moved.iter().find(|n| n.ends_with("-wal")).expect("the wal");
        assert_eq!(
            std::fs::read(path.parent().unwrap().join(wal)).unwrap(),
            b"their wal",
            "moved, never deleted"
        );
        let _ = std::fs::remove_dir_all(path.parent().unwrap().parent().unwrap());
    }

    /// The names in the directory of `path` that were moved aside.
    fn moved_aside(path: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".unreadable-"))
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_table_of_ours_in_another_shape_moves_the_file_aside() {
        let path = temp("shape");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        Connection::open(&path)
            .unwrap()
            .execute_batch(
                "CREATE TABLE watch_outbox (x INTEGER); INSERT INTO watch_outbox VALUES (1);",
            )
            .unwrap();
        Db::new(&path).open_now().expect("a fresh start");
        let moved = moved_aside(&path);
        let file = moved
            .iter()
            .find(|n| !n.ends_with("-wal") && !n.ends_with("-shm"))
            .expect("moved aside");
        let theirs: i64 = Connection::open(path.parent().unwrap().join(file))
            .unwrap()
            .query_row("SELECT x FROM watch_outbox", [], |r| r.get(0))
            .expect("their row, kept");
        assert_eq!(theirs, 1);
        let _ = std::fs::remove_dir_all(path.parent().unwrap().parent().unwrap());
    }

    #[test]
    fn a_locked_file_is_an_error_and_stays_where_it_is() {
        let path = temp("locked");
        Db::new(&path).open_now().expect("opens");
        // Another process's exclusive lock (here another connection's).
        let holder = Connection::open(&path).unwrap();
        holder
            .execute_batch("PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE;")
            .unwrap();
        let db = Db {
            busy: Duration::from_millis(50),
            ..Db::new(&path)
        };
        let e = db.open_now().expect_err("locked by the holder");
        assert!(e.message.contains("locked"), "{e}");
        assert!(moved_aside(&path).is_empty(), "a lock is not 'not ours'");
        drop(holder);
        db.open_now().expect("opens once the lock is gone");
        let _ = std::fs::remove_dir_all(path.parent().unwrap().parent().unwrap());
    }
}
