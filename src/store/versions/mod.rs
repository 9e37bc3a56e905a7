//! Kept versions: each version of a board the service produces (for an
//! endpoint, for MCP) is stored once, as its sanitized full document sealed
//! by [`codec`], keyed by board id and version token, so that `/changes`
//! can compare a version a client saw with the board now.
//!
//! Bounded by count per board (`keep_versions`), age (`keep`) and total
//! bytes (`max_bytes`), in the store the configuration names: [`sqlite`]
//! (a file), [`memory`] (the process), or the fleet tier's Redis
//! ([`redis`], with the `fleet` feature). Writing is off the request's
//! path (a task of its own; compressing on the work pool, the store's I/O
//! on tokio's blocking threads) and never fails a request; reading back
//! trusts nothing ([`codec::open`]).

pub mod codec;
pub mod memory;
#[cfg(feature = "fleet")]
pub mod redis;
pub mod sqlite;

use crate::governance::WorkPool;
use crate::pipeline::LoadedBoard;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How many versions are kept, and for how long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bounds {
    /// Versions kept per board (default 20).
    pub keep_versions: usize,
    /// How long a version is kept after it was last produced (default 7 days).
    pub keep: Duration,
    /// Compressed bytes kept in all (default 256 MiB; in Redis, per board).
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
    pub bounds: Bounds,
}

/// What a store holds under a (board, version).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kept {
    /// A value, not yet checked.
    Value(Vec<u8>),
    /// Nothing (never kept, expired, evicted, or the store failed).
    Missing,
    /// Something that is not a value of ours (deleted).
    Rejected,
}

// One per process, behind an `Arc`: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
enum Backend {
    Memory(memory::Memory),
    Sqlite(sqlite::Sqlite),
    #[cfg(feature = "fleet")]
    Redis(redis::RedisVersions),
}

/// The kept versions of every board. Cheap to share (`Arc`).
pub struct Versions {
    backend: Arc<Backend>,
    bounds: Bounds,
}

impl Versions {
    /// Opens the store `settings` name: the SQLite file is created (with
    /// its directory's permission) and its table made; `redis` connects
    /// through the fleet tier's settings.
    ///
    /// # Errors
    /// The SQLite file can be neither opened nor made; `redis` without the
    /// fleet tier (`shared` is `None`) or the `fleet` feature.
    pub fn open(
        settings: &VersionSettings,
        shared: Option<&super::SharedSettings>,
    ) -> Result<Self, String> {
        let bounds = settings.bounds.clone();
        let backend = match &settings.store {
            StoreKind::Memory => Backend::Memory(memory::Memory::new(bounds.clone())),
            StoreKind::Sqlite(path) => Backend::Sqlite(sqlite::Sqlite::open(path, bounds.clone())?),
            #[cfg(feature = "fleet")]
            StoreKind::Redis => match shared {
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
        })
    }

    /// Keeps `board` (a full document with its version) as a version of
    /// `board_id`, in a task of its own: a version already kept is only
    /// marked as seen (so it is the last to age out); a new one is sealed on
    /// `pool` and written. Nothing is waited for and nothing fails a
    /// request; a store that fails logs it.
    pub fn keep(&self, pool: &WorkPool, board_id: &str, board: &Arc<LoadedBoard>) {
        let Some(version) = board.version().map(str::to_owned) else {
            return;
        };
        // One that could not be read back is not worth writing.
        if board.document_json().len() > self.bounds.max_document_bytes {
            return;
        }
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let backend = Arc::clone(&self.backend);
        let (pool, board_id, board) = (pool.clone(), board_id.to_owned(), Arc::clone(board));
        tokio::spawn(async move {
            let now = now_ms();
            if backend.touch(&board_id, &version, now).await {
                return;
            }
            let sealer = Arc::clone(&backend);
            let (b, v) = (board_id.clone(), version.clone());
            let sealed = pool
                .run(move || {
                    codec::seal(board.document_json()).map(|value| sealer.seal(&b, &v, value))
                })
                .await;
            match sealed {
                Ok(Ok(value)) => backend.put(&board_id, &version, value, now).await,
                Ok(Err(e)) => log::warn!("board {board_id}: version not kept: {e}"),
                Err(e) => log::warn!("board {board_id}: version not kept: {e}"),
            }
        });
    }

    /// The document kept as `version` of `board_id`, checked: `None` when
    /// it is not kept, or what is kept there is not that version (then it
    /// is deleted). Inflating and checking run on `pool`.
    pub async fn get(&self, pool: &WorkPool, board_id: &str, version: &str) -> Option<Vec<u8>> {
        let value = match self.backend.get(board_id, version, now_ms()).await {
            Kept::Value(value) => value,
            Kept::Missing | Kept::Rejected => return None,
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
            Ok(Ok(document)) => Some(document),
            Ok(Err(rejected)) => {
                warn_at_most_every_minute(&format!(
                    "board {board_id}: a kept version was rejected ({rejected}) and deleted"
                ));
                self.backend.forget(board_id, version).await;
                None
            }
            Err(_) => None,
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

    async fn touch(self: &Arc<Self>, board: &str, version: &str, now: u64) -> bool {
        match &**self {
            Backend::Memory(m) => m.touch(board, version, now),
            Backend::Sqlite(_) => {
                let (me, b, v) = (Arc::clone(self), board.to_owned(), version.to_owned());
                let job = tokio::task::spawn_blocking(move || match &*me {
                    Backend::Sqlite(s) => s.touch(&b, &v, now),
                    _ => false,
                });
                job.await.unwrap_or(false)
            }
            #[cfg(feature = "fleet")]
            Backend::Redis(r) => r.touch(board, version, now).await,
        }
    }

    async fn put(self: &Arc<Self>, board: &str, version: &str, value: Vec<u8>, now: u64) {
        match &**self {
            Backend::Memory(m) => m.put(board, version, value, now),
            Backend::Sqlite(_) => {
                let (me, b, v) = (Arc::clone(self), board.to_owned(), version.to_owned());
                let _ = tokio::task::spawn_blocking(move || {
                    if let Backend::Sqlite(s) = &*me {
                        s.put(&b, &v, &value, now);
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
            Backend::Sqlite(_) => {
                let (me, b, v) = (Arc::clone(self), board.to_owned(), version.to_owned());
                let job = tokio::task::spawn_blocking(move || match &*me {
                    Backend::Sqlite(s) => s.get(&b, &v, now),
                    _ => Kept::Missing,
                });
                job.await.unwrap_or(Kept::Missing)
            }
            #[cfg(feature = "fleet")]
            Backend::Redis(r) => r.get(board, version).await,
        }
    }

    async fn forget(self: &Arc<Self>, board: &str, version: &str) {
        match &**self {
            Backend::Memory(_) => {}
            Backend::Sqlite(_) => {
                let (me, b, v) = (Arc::clone(self), board.to_owned(), version.to_owned());
                let _ = tokio::task::spawn_blocking(move || {
                    if let Backend::Sqlite(s) = &*me {
                        s.forget(&b, &v);
                    }
                })
                .await;
            }
            #[cfg(feature = "fleet")]
            Backend::Redis(r) => r.forget(board, version).await,
        }
    }
}

/// Milliseconds since the epoch (0 before it).
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Logs `line` at WARN unless a line was logged in the last minute (then at
/// DEBUG): a store that fails on every request is one line a minute.
fn warn_at_most_every_minute(line: &str) {
    static LAST: Mutex<Option<Instant>> = Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    if last.is_some_and(|t| t.elapsed() < Duration::from_secs(60)) {
        log::debug!("{line}");
        return;
    }
    *last = Some(Instant::now());
    log::warn!("{line}");
}
