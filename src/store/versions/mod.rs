//! Kept versions: each version of a board the service produces (for an
//! endpoint, for MCP, for a watch) is stored once, as its sanitized full
//! document sealed by [`codec`], so that `/changes` can compare a version a
//! client saw with the board now.
//!
//! - **Keyed by the link that loaded it**: a board id and a hash of the
//!   permission id ([`owner`]), so a link that is denied a nested board
//!   never reads it through a version another link loaded.
//! - **Bounded** by count per board key (`keep_versions`), age (`keep`)
//!   and bytes (`max_bytes`), in the store the configuration names:
//!   [`sqlite`] (the state file, [`crate::store::sqlite`]), [`memory`] (the
//!   process), or the fleet tier's Redis ([`redis`], `fleet` feature).
//! - **Written off the request's path** through a bounded queue and one
//!   writer: a slow store never holds more than [`QUEUE_BYTES`] of
//!   documents waiting (nor more than [`QUEUE`] of them), and a version
//!   that finds the queue full is not kept (counted, logged once a
//!   minute). The bound is in bytes so that a burst of small boards (many
//!   links opened at once, each one's first version) is kept whole: a
//!   version not kept is a `/changes` or a stream that cannot say what
//!   changed since it. Compressing runs on the work pool, the store's I/O on tokio's
//!   blocking threads; nothing fails a request.
//! - **Read back as untrusted** ([`codec::open`]); a store that does not
//!   answer is [`Unavailable`], never "not kept".

pub mod codec;
pub mod memory;
mod queue;
#[cfg(feature = "fleet")]
pub mod redis;
#[cfg(feature = "sqlite")]
pub mod sqlite;

use crate::governance::WorkPool;
use crate::pipeline::LoadedBoard;
#[cfg(feature = "sqlite")]
use crate::store::sqlite::Db;
use queue::Waiting;
use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

/// Bytes of documents (their JSON) waiting to be written at most; past it
/// a version is not kept. The documents are mostly the cache's own (shared,
/// not copied) while they wait.
pub const QUEUE_BYTES: usize = 64 << 20;

/// Versions waiting to be written at most, however small.
pub const QUEUE: usize = 1024;

/// `board_api_versions_not_kept_total`: the same count, for Prometheus
/// (process-wide, as the writer's queue is per store and a host may run
/// several APIs).
static NOT_KEPT: std::sync::LazyLock<Option<prometheus::IntCounter>> =
    std::sync::LazyLock::new(|| {
        prometheus::register_int_counter!(
            "board_api_versions_not_kept_total",
            "Versions not kept because the store was slower than new versions came"
        )
        .ok()
    });

/// The store did not answer: not the same as "not kept".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unavailable;

/// The key kept versions are stored under for the board `board_id` as the
/// permission `permission_id` opens it: the board id, `:`, and 32 hex
/// digits of a SHA-256 of both (length-prefixed), so no permission id is
/// stored and two links to one board keep apart.
pub fn owner(board_id: &str, permission_id: &str) -> String {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    ctx.update(b"kept-versions\0");
    ctx.update(&(board_id.len() as u64).to_le_bytes());
    ctx.update(board_id.as_bytes());
    ctx.update(permission_id.as_bytes());
    let digest = ctx.finish();
    let mut key = String::with_capacity(board_id.len() + 33);
    key.push_str(board_id);
    key.push(':');
    for b in &digest.as_ref()[..16] {
        use std::fmt::Write as _;
        let _ = write!(key, "{b:02x}");
    }
    key
}

/// How many versions are kept, and for how long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bounds {
    /// Versions kept per board (default 20).
    pub keep_versions: usize,
    /// How long a version is kept after it was last produced (default 7 days).
    pub keep: Duration,
    /// Compressed bytes kept in all (default 256 MiB), taken from the
    /// largest holder first.
    pub max_bytes: usize,
    /// Largest document a stored value may inflate to (the cache's
    /// `max_entry_bytes`).
    pub max_document_bytes: usize,
}

impl Bounds {
    fn keep_ms(&self) -> u64 {
        u64::try_from(self.keep.as_millis()).unwrap_or(u64::MAX)
    }
}

/// Where versions are kept (`board_api.changes.store`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreKind {
    /// A SQLite file (the default).
    Sqlite(PathBuf),
    /// In the process.
    Memory,
    /// The fleet tier's Redis or Valkey (`board_api.cache.shared`).
    Redis,
}

/// `board_api.changes`, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionSettings {
    pub store: StoreKind,
    /// With `Redis`: a server of the state's own (`board_api.changes.redis`),
    /// else the fleet tier's.
    pub redis: Option<super::SharedSettings>,
    pub bounds: Bounds,
}

/// One kept version of a board key, as [`Versions::list`] gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// The version's token.
    pub version: String,
    /// When it was first kept, in ms since the Unix epoch: seeing it again
    /// does not move it, so a list of versions stays in the order the board
    /// took them.
    pub first_kept_ms: u64,
}

/// The most versions [`Versions::list`] gives, whatever is asked.
pub const MAX_LISTED: usize = 1001;

/// `listed` newest first (by when first kept, then by token, so equal
/// times still give one order), each version once, at most `max`.
fn newest_first(mut listed: Vec<Listed>, max: usize) -> Vec<Listed> {
    listed.sort_by(|a, b| (b.first_kept_ms, &b.version).cmp(&(a.first_kept_ms, &a.version)));
    let mut seen = std::collections::HashSet::new();
    listed.retain(|l| seen.insert(l.version.clone()));
    listed.truncate(max.min(MAX_LISTED));
    listed
}

/// What a store holds under a (board, version). (A build with neither
/// SQLite nor Redis keeps only the memory store, which never rejects.)
#[cfg_attr(not(any(feature = "sqlite", feature = "fleet")), allow(dead_code))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kept {
    /// A value, not yet checked.
    Value(Vec<u8>),
    /// Nothing (never kept, expired, evicted).
    Missing,
    /// Something that is not a value of ours (deleted).
    Rejected,
    /// The store did not answer (busy, locked, I/O, unreachable).
    Unavailable,
}

// One per process, behind an `Arc`: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
enum Backend {
    Memory(memory::Memory),
    #[cfg(feature = "sqlite")]
    Sqlite(sqlite::Sqlite),
    #[cfg(feature = "fleet")]
    Redis(redis::RedisVersions),
}

/// One version waiting for the writer.
struct ToKeep {
    owner: String,
    version: String,
    board: Arc<LoadedBoard>,
    pool: WorkPool,
    /// Its share of [`QUEUE_BYTES`], given back when it is dropped.
    _waiting: Waiting,
}

/// The kept versions of every board. Cheap to share (`Arc`).
pub struct Versions {
    backend: Arc<Backend>,
    bounds: Bounds,
    /// The writer's queue, made with the writer on the first keep (in a
    /// runtime of the process that serves), and again if that runtime ended.
    queue: Mutex<Option<mpsc::Sender<ToKeep>>>,
    /// The state file, with `store: sqlite`: the watches share it.
    #[cfg(feature = "sqlite")]
    db: Option<Arc<Db>>,
    /// Versions this store did not keep because its queue was full.
    not_kept: std::sync::atomic::AtomicU64,
    /// Bytes of the versions waiting for the writer, and their bound.
    queued: Arc<AtomicUsize>,
    queue_bytes: usize,
}

impl Versions {
    /// The store `settings` name, opened on first use: the SQLite file is
    /// not touched here (the binary builds this before Pingora's fork);
    /// `redis` connects through the fleet tier's settings on first use.
    ///
    /// # Errors
    /// `redis` without the fleet tier (`shared` is `None`) or the `fleet`
    /// feature.
    pub fn open(
        settings: &VersionSettings,
        shared: Option<&super::SharedSettings>,
    ) -> Result<Self, String> {
        let bounds = settings.bounds.clone();
        // Exported at 0 from the start, as every series.
        std::sync::LazyLock::force(&NOT_KEPT);
        #[cfg(feature = "sqlite")]
        let mut db = None;
        let backend = match &settings.store {
            StoreKind::Memory => Backend::Memory(memory::Memory::new(bounds.clone())),
            #[cfg(feature = "sqlite")]
            StoreKind::Sqlite(path) => {
                let file = Arc::new(Db::new(path));
                db = Some(Arc::clone(&file));
                Backend::Sqlite(sqlite::Sqlite::new(file, bounds.clone()))
            }
            #[cfg(not(feature = "sqlite"))]
            StoreKind::Sqlite(_) => {
                return Err("store sqlite needs the `sqlite` feature of this build".into())
            }
            #[cfg(feature = "fleet")]
            StoreKind::Redis => match settings.redis.as_ref().or(shared) {
                Some(shared) => Backend::Redis(redis::RedisVersions::new(shared, bounds.clone())?),
                None => {
                    return Err("store redis needs the fleet tier (board_api.cache.shared)".into())
                }
            },
            #[cfg(not(feature = "fleet"))]
            StoreKind::Redis => {
                let _ = shared;
                return Err("store redis needs the `fleet` feature of this build".into());
            }
        };
        Ok(Versions {
            backend: Arc::new(backend),
            bounds,
            queue: Mutex::new(None),
            #[cfg(feature = "sqlite")]
            db,
            not_kept: std::sync::atomic::AtomicU64::new(0),
            queued: Arc::new(AtomicUsize::new(0)),
            queue_bytes: QUEUE_BYTES,
        })
    }

    /// The state file (`store: sqlite`), which the watches' outbox shares.
    #[cfg(feature = "sqlite")]
    pub fn state_file(&self) -> Option<&Arc<Db>> {
        self.db.as_ref()
    }

    /// Keeps `board` (a full document with its version) as a version of
    /// the board key `owner` ([`owner`]), through the writer's bounded
    /// queue: a version already kept is only marked as seen (so it is the
    /// last to age out); a new one is sealed on `pool` and written. Nothing
    /// is waited for and nothing fails a request; a full queue or a store
    /// that fails is counted and logged.
    pub fn keep(&self, pool: &WorkPool, owner: &str, board: &Arc<LoadedBoard>) {
        let Some(version) = board.version().map(str::to_owned) else {
            return;
        };
        // One that could not be read back is not worth writing.
        if board.document_json().len() > self.bounds.max_document_bytes {
            return;
        }
        let Some(queue) = self.queue() else {
            return;
        };
        let waiting = Waiting::reserve(&self.queued, board.document_json().len(), self.queue_bytes);
        let sent = waiting.is_some_and(|waiting| {
            let job = ToKeep {
                owner: owner.to_owned(),
                version,
                board: Arc::clone(board),
                pool: pool.clone(),
                _waiting: waiting,
            };
            queue.try_send(job).is_ok()
        });
        if !sent {
            // Full (the writer is behind), or closed (its runtime ended: the
            // next keep starts a writer in the caller's).
            self.not_kept
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if let Some(c) = NOT_KEPT.as_ref() {
                c.inc();
            }
            warn_at_most_every_minute(
                "kept versions: the store is slower than new versions come; a version was not kept",
            );
        }
    }

    /// The writer's queue, starting the writer in the caller's runtime on
    /// the first call (or when the runtime of the last one ended); `None`
    /// outside a runtime.
    fn queue(&self) -> Option<mpsc::Sender<ToKeep>> {
        let mut queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(tx) = queue.as_ref().filter(|tx| !tx.is_closed()) {
            return Some(tx.clone());
        }
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        std::sync::LazyLock::force(&NOT_KEPT);
        let (tx, rx) = mpsc::channel(QUEUE);
        runtime.spawn(write_versions(Arc::clone(&self.backend), rx));
        *queue = Some(tx.clone());
        Some(tx)
    }

    /// The document kept as `version` of the board key `owner`, checked:
    /// `Ok(None)` when it is not kept, or what is kept there is not that
    /// version (then it is deleted). Inflating and checking run on `pool`.
    ///
    /// # Errors
    /// [`Unavailable`]: the store did not answer (ask again later).
    pub async fn get(
        &self,
        pool: &WorkPool,
        owner: &str,
        version: &str,
    ) -> Result<Option<Vec<u8>>, Unavailable> {
        let board_id = owner;
        let value = match self.backend.get(board_id, version, now_ms()).await {
            Kept::Value(value) => value,
            Kept::Missing | Kept::Rejected => return Ok(None),
            Kept::Unavailable => return Err(Unavailable),
        };
        let (wanted, max) = (version.to_owned(), self.bounds.max_document_bytes);
        let (opener, board) = (Arc::clone(&self.backend), board_id.to_owned());
        let opened = pool
            .run(move || {
                let value = opener
                    .open(&board, &wanted, value)
                    .ok_or(codec::Rejected::Format)?;
                codec::open(&value, &wanted, max)
            })
            .await;
        match opened {
            Ok(Ok(document)) => Ok(Some(document)),
            Ok(Err(rejected)) => {
                warn_at_most_every_minute(&format!(
                    "board {board_id}: a kept version was rejected ({rejected}) and deleted"
                ));
                self.backend.forget(board_id, version).await;
                Ok(None)
            }
            // The pool refused (overloaded, shutting down): not an answer
            // about the version.
            Err(_) => Err(Unavailable),
        }
    }

    /// The versions kept of the board key `owner`, newest first by when
    /// each was first kept, at most `max` (and [`MAX_LISTED`]). A version
    /// listed may still be gone (or rejected) when it is read back.
    ///
    /// # Errors
    /// [`Unavailable`]: the store did not answer (ask again later).
    pub async fn list(&self, owner: &str, max: usize) -> Result<Vec<Listed>, Unavailable> {
        let max = max.min(MAX_LISTED);
        let listed = self.backend.list(owner, max, now_ms()).await?;
        Ok(newest_first(listed, max))
    }
}

/// The writer: one version at a time, so a slow store holds at most the
/// queue's documents and the one being written.
async fn write_versions(backend: Arc<Backend>, mut queue: mpsc::Receiver<ToKeep>) {
    while let Some(job) = queue.recv().await {
        let ToKeep {
            owner,
            version,
            board,
            pool,
            _waiting,
        } = job;
        let now = now_ms();
        match backend.touch(&owner, &version, now).await {
            Ok(true) => continue,
            Ok(false) => {}
            // Written again below: a duplicate write is one row.
            Err(Unavailable) => {}
        }
        let sealer = Arc::clone(&backend);
        let (b, v) = (owner.clone(), version.clone());
        // Nobody waits on it: the answers of the requests that came with
        // this version go first.
        let sealed = pool
            .run_background(move || {
                codec::seal(board.document_json()).map(|value| sealer.seal(&b, &v, value))
            })
            .await;
        match sealed {
            Ok(Ok(value)) => backend.put(&owner, &version, value, now).await,
            Ok(Err(e)) => log::warn!("kept versions: a version was not kept: {e}"),
            Err(e) => log::warn!("kept versions: a version was not kept: {e}"),
        }
    }
}

impl Backend {
    /// A value as this store keeps it (the fleet key's seal in Redis).
    /// CPU work: on the work pool.
    fn seal(&self, board: &str, version: &str, value: Vec<u8>) -> Vec<u8> {
        match self {
            #[cfg(feature = "fleet")]
            Backend::Redis(r) => r.seal(board, version, value),
            _ => {
                let _ = (board, version);
                value
            }
        }
    }

    /// What [`Backend::seal`] kept, when it opens. CPU work: on the pool.
    fn open(&self, board: &str, version: &str, value: Vec<u8>) -> Option<Vec<u8>> {
        match self {
            #[cfg(feature = "fleet")]
            Backend::Redis(r) => r.open(board, version, &value),
            _ => {
                let _ = (board, version);
                Some(value)
            }
        }
    }

    async fn touch(
        self: &Arc<Self>,
        board: &str,
        version: &str,
        now: u64,
    ) -> Result<bool, Unavailable> {
        match &**self {
            Backend::Memory(m) => Ok(m.touch(board, version, now)),
            #[cfg(feature = "sqlite")]
            Backend::Sqlite(_) => {
                let (me, b, v) = (Arc::clone(self), board.to_owned(), version.to_owned());
                let job = tokio::task::spawn_blocking(move || match &*me {
                    Backend::Sqlite(s) => s.touch(&b, &v, now).map_err(|e| s.report(&e)),
                    _ => Ok(false),
                });
                job.await
                    .map_err(|_| Unavailable)?
                    .map_err(|()| Unavailable)
            }
            #[cfg(feature = "fleet")]
            Backend::Redis(r) => Ok(r.touch(board, version, now).await),
        }
    }

    async fn put(self: &Arc<Self>, board: &str, version: &str, value: Vec<u8>, now: u64) {
        match &**self {
            Backend::Memory(m) => m.put(board, version, value, now),
            #[cfg(feature = "sqlite")]
            Backend::Sqlite(_) => {
                let (me, b, v) = (Arc::clone(self), board.to_owned(), version.to_owned());
                let _ = tokio::task::spawn_blocking(move || {
                    if let Backend::Sqlite(s) = &*me {
                        if let Err(e) = s.put(&b, &v, &value, now) {
                            s.report(&e);
                        }
                    }
                })
                .await;
            }
            #[cfg(feature = "fleet")]
            Backend::Redis(r) => r.put(board, version, value, now).await,
        }
    }

    async fn get(self: &Arc<Self>, board: &str, version: &str, now: u64) -> Kept {
        match &**self {
            Backend::Memory(m) => m.get(board, version, now),
            #[cfg(feature = "sqlite")]
            Backend::Sqlite(_) => {
                let (me, b, v) = (Arc::clone(self), board.to_owned(), version.to_owned());
                let job = tokio::task::spawn_blocking(move || match &*me {
                    Backend::Sqlite(s) => s.get(&b, &v, now),
                    _ => Kept::Missing,
                });
                job.await.unwrap_or(Kept::Unavailable)
            }
            #[cfg(feature = "fleet")]
            Backend::Redis(r) => r.get(board, version).await,
        }
    }

    async fn list(
        self: &Arc<Self>,
        board: &str,
        max: usize,
        now: u64,
    ) -> Result<Vec<Listed>, Unavailable> {
        match &**self {
            Backend::Memory(m) => Ok(m.list(board, max, now)),
            #[cfg(feature = "sqlite")]
            Backend::Sqlite(_) => {
                let (me, b) = (Arc::clone(self), board.to_owned());
                let job = tokio::task::spawn_blocking(move || match &*me {
                    Backend::Sqlite(s) => s.list(&b, max, now).map_err(|e| s.report(&e)),
                    _ => Ok(Vec::new()),
                });
                job.await
                    .map_err(|_| Unavailable)?
                    .map_err(|()| Unavailable)
            }
            #[cfg(feature = "fleet")]
            Backend::Redis(r) => r.list(board, max, now).await.ok_or(Unavailable),
        }
    }

    async fn forget(self: &Arc<Self>, board: &str, version: &str) {
        match &**self {
            Backend::Memory(_) => {
                let _ = (board, version);
            }
            #[cfg(feature = "sqlite")]
            Backend::Sqlite(_) => {
                let (me, b, v) = (Arc::clone(self), board.to_owned(), version.to_owned());
                let _ = tokio::task::spawn_blocking(move || {
                    if let Backend::Sqlite(s) = &*me {
                        if let Err(e) = s.forget(&b, &v) {
                            s.report(&e);
                        }
                    }
                })
                .await;
            }
            #[cfg(feature = "fleet")]
            Backend::Redis(r) => r.forget(board, version).await,
        }
    }
}

use crate::clock::now_ms;

/// Logs `line` at WARN unless a line was logged in the last minute (then at
/// DEBUG): a store that fails on every request is one line a minute.
fn warn_at_most_every_minute(line: &str) {
    static STORE: crate::log_throttle::Throttle = crate::log_throttle::Throttle::new();
    STORE.warn(line);
}

#[cfg(test)]
mod tests;

#[cfg(all(test, not(feature = "sqlite")))]
mod without_sqlite {
    use super::*;

    #[test]
    fn store_sqlite_is_refused_by_a_build_without_the_feature() {
        let settings = VersionSettings {
            store: StoreKind::Sqlite(PathBuf::from("/tmp/never-made.sqlite")),
            redis: None,
            bounds: Bounds {
                keep_versions: 1,
                keep: Duration::from_secs(60),
                max_bytes: 1 << 20,
                max_document_bytes: 1 << 20,
            },
        };
        let refused = Versions::open(&settings, None).err().expect("refused");
        assert!(refused.contains("`sqlite` feature"), "{refused}");
    }
}
