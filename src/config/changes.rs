//! `board_api.changes`: where the versions `/changes` compares are kept,
//! and how many, for how long, in how many bytes. Without the section,
//! versions are kept in memory with the defaults (nothing is written to a
//! file unless the file asks for it); with it, the store is `sqlite` unless
//! named.

use super::shared::SharedConf;
use super::{fail, files::state_file, within, ConfigError};
use crate::store::versions::{Bounds, StoreKind, VersionSettings};
use serde::Deserialize;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ChangesConf {
    /// `sqlite` (default), `redis` (the fleet tier's server, or `redis`
    /// below) or `memory`.
    #[serde(default)]
    pub store: Option<String>,
    /// The SQLite file (required with `store: sqlite`); created at start.
    #[serde(default)]
    pub path: Option<PathBuf>,
    /// Versions kept per board (default 20, 1 to 1000).
    #[serde(default)]
    pub keep_versions: Option<usize>,
    /// Seconds a version is kept after it was last seen (default 604800,
    /// 7 days; 60 to 31536000).
    #[serde(default)]
    pub keep_seconds: Option<u64>,
    /// Compressed bytes kept in all (per board with `redis`); default
    /// 268435456 (256 MiB), 67108864 (64 MiB) in memory.
    #[serde(default)]
    pub max_bytes: Option<usize>,
    /// With `store: redis`, a Redis or Valkey of the state's own, apart
    /// from the cache tier's (`cache.shared`'s keys: `url` or `cluster`,
    /// `secret_env`, ...): deliveries want `noeviction` and persistence, a
    /// cache wants `allkeys-lru` and none.
    #[serde(default)]
    pub redis: Option<SharedConf>,
}

/// Versions kept per board by default.
pub const DEFAULT_KEEP_VERSIONS: usize = 20;
/// How long a version is kept by default: 7 days.
pub const DEFAULT_KEEP_SECONDS: u64 = 7 * 24 * 3600;
/// Bytes kept by default in a file or Redis.
pub const DEFAULT_MAX_BYTES: usize = 256 << 20;
/// Bytes kept by default in memory.
pub const DEFAULT_MEMORY_BYTES: usize = 64 << 20;

impl ChangesConf {
    /// The settings of `conf` (`None`: the section is absent), documents
    /// inflating to at most `max_document_bytes`; `fleet` says whether the
    /// fleet tier is configured.
    ///
    /// # Errors
    /// A [`ConfigError`] for an unknown store, `sqlite` without a writable
    /// `path`, `redis` without `board_api.cache.shared`, or a bound out of
    /// its range.
    pub(crate) fn validate(
        conf: Option<ChangesConf>,
        max_document_bytes: usize,
        fleet: bool,
        fetch_deadline: Duration,
    ) -> Result<VersionSettings, ConfigError> {
        let present = conf.is_some();
        let mut conf = conf.unwrap_or_default();
        let redis = match conf.redis.take() {
            Some(own) if cfg!(feature = "fleet") => {
                Some(own.validate_at("board_api.changes.redis", fetch_deadline, None)?)
            }
            Some(_) => {
                return fail(
                    "board_api.changes.redis",
                    "needs the `fleet` feature of this build",
                )
            }
            None => None,
        };
        let fleet = fleet || redis.is_some();
        let store = match (conf.store.as_deref(), present) {
            (None, false) | (Some("memory"), _) => StoreKind::Memory,
            (None, true) | (Some("sqlite"), _) => {
                let Some(path) = conf.path.clone() else {
                    return fail(
                        "board_api.changes.path",
                        "required with store sqlite (the SQLite file, created at start)",
                    );
                };
                state_file("board_api.changes.path", &path)?;
                StoreKind::Sqlite(path)
            }
            (Some("redis"), _) if fleet => StoreKind::Redis,
            (Some("redis"), _) => {
                return fail(
                    "board_api.changes.store",
                    "redis needs a server: board_api.changes.redis, or the fleet tier (board_api.cache.shared)",
                )
            }
            (Some(other), _) => {
                return fail(
                    "board_api.changes.store",
                    format!("{other:?} is not sqlite, redis or memory"),
                )
            }
        };
        if conf.path.is_some() && !matches!(store, StoreKind::Sqlite(_)) {
            return fail("board_api.changes.path", "only with store sqlite");
        }
        let keep_versions = within(
            "board_api.changes.keep_versions",
            conf.keep_versions,
            DEFAULT_KEEP_VERSIONS,
            1,
            1000,
        )?;
        let keep_seconds = match conf.keep_seconds {
            None => DEFAULT_KEEP_SECONDS,
            Some(s) if (60..=31_536_000).contains(&s) => s,
            Some(_) => {
                return fail(
                    "board_api.changes.keep_seconds",
                    "must be between 60 and 31536000",
                )
            }
        };
        let default_bytes = match store {
            StoreKind::Memory => DEFAULT_MEMORY_BYTES,
            _ => DEFAULT_MAX_BYTES,
        };
        let max_bytes = within(
            "board_api.changes.max_bytes",
            conf.max_bytes,
            default_bytes,
            1 << 20,
            1 << 40,
        )?;
        if redis.is_some() && store != StoreKind::Redis {
            return fail("board_api.changes.redis", "only with store redis");
        }
        Ok(VersionSettings {
            store,
            redis,
            bounds: Bounds {
                keep_versions,
                keep: Duration::from_secs(keep_seconds),
                max_bytes,
                max_document_bytes,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(yaml: &str) -> Result<VersionSettings, ConfigError> {
        let conf: ChangesConf = serde_yaml::from_str(yaml).expect("parses");
        ChangesConf::validate(Some(conf), 1 << 20, false, Duration::from_secs(5))
    }

    #[test]
    fn defaults_and_checks() {
        let absent =
            ChangesConf::validate(None, 1 << 20, false, Duration::from_secs(5)).expect("valid");
        assert_eq!(absent.store, StoreKind::Memory);
        assert_eq!(absent.bounds.keep_versions, 20);
        assert_eq!(absent.bounds.keep, Duration::from_secs(604_800));
        assert_eq!(absent.bounds.max_bytes, 64 << 20);
        let dir = std::env::temp_dir().join("sbapi-changes-conf.sqlite");
        let sqlite = conf(&format!("path: {}", dir.display())).expect("valid");
        assert_eq!(sqlite.store, StoreKind::Sqlite(dir));
        assert_eq!(sqlite.bounds.max_bytes, 256 << 20);
        for (bad, key) in [
            ("store: sqlite", "board_api.changes.path"),
            ("store: disk", "board_api.changes.store"),
            ("store: redis", "board_api.changes.store"),
            ("store: memory\npath: /tmp/x", "board_api.changes.path"),
            (
                "store: memory\nkeep_versions: 0",
                "board_api.changes.keep_versions",
            ),
            (
                "store: memory\nkeep_seconds: 5",
                "board_api.changes.keep_seconds",
            ),
            (
                "store: memory\nmax_bytes: 10",
                "board_api.changes.max_bytes",
            ),
            // A missing directory is made at start when its parent exists;
            // a missing parent is refused.
            (
                "path: /nonexistent-dir/deeper/x.sqlite",
                "board_api.changes.path",
            ),
        ] {
            assert_eq!(conf(bad).map_err(|e| e.key), Err(key.to_owned()), "{bad}");
        }
    }

    #[cfg(feature = "fleet")]
    #[test]
    fn a_redis_of_its_own_without_the_fleet_tier() {
        std::env::set_var(
            "SBAPI_CONFIG_TEST_CHANGES_KEY",
            "0123456789abcdef0123456789abcdef",
        );
        let own = conf(
            "store: redis\nredis:\n  url: redis://127.0.0.1:6390\n  secret_env: SBAPI_CONFIG_TEST_CHANGES_KEY",
        )
        .expect("valid without cache.shared");
        assert_eq!(own.store, StoreKind::Redis);
        assert!(own.redis.is_some());
        for (bad, key) in [
            (
                "store: memory\nredis:\n  url: redis://127.0.0.1:6390\n  secret_env: SBAPI_CONFIG_TEST_CHANGES_KEY",
                "board_api.changes.redis",
            ),
            (
                "store: redis\nredis:\n  url: redis://127.0.0.1:6390",
                "board_api.changes.redis.secret_env",
            ),
            (
                "store: redis\nredis:\n  url: http://x\n  secret_env: SBAPI_CONFIG_TEST_CHANGES_KEY",
                "board_api.changes.redis.url",
            ),
        ] {
            assert_eq!(conf(bad).map_err(|e| e.key), Err(key.to_owned()), "{bad}");
        }
    }
}
