//! `board_api.cache`: the process cache's lifetimes and byte budget.

use super::shared::SharedConf;
use super::{within, ConfigError};
use crate::store::CacheSettings;
use serde::Deserialize;
use std::time::Duration;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CacheConf {
    /// `false` turns caching and request coalescing off.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Seconds a document (and what is rendered from it) is served; 0 turns
    /// caching off.
    #[serde(alias = "ttl")]
    pub ttl_seconds: Option<u64>,
    pub error_ttl_seconds: Option<u64>,
    /// One byte budget over documents, rendered bodies and their
    /// compressed variants (default 128 MiB).
    #[serde(alias = "size")]
    pub budget_bytes: Option<usize>,
    /// The heaviest single entry kept (default a quarter of the budget);
    /// heavier documents are served but not kept.
    pub max_document_bytes: Option<usize>,
    /// Failures remembered at most (default 1024).
    pub max_error_entries: Option<usize>,
    /// The fleet tier (Redis/Valkey) below the process cache; off when absent.
    #[serde(default)]
    pub shared: Option<SharedConf>,
}

fn yes() -> bool {
    true
}

impl CacheConf {
    /// `None` when the section turns caching off (`enabled: false` or
    /// `ttl_seconds: 0`).
    ///
    /// # Errors
    /// A [`ConfigError`] naming the first bad key.
    pub(crate) fn validate(conf: Option<CacheConf>) -> Result<Option<CacheSettings>, ConfigError> {
        match conf {
            Some(c) if !c.enabled || c.ttl_seconds == Some(0) => Ok(None),
            c => cache_settings(c).map(Some),
        }
    }
}

/// `board_api.cache`, with defaults; `None` means the section was absent.
fn cache_settings(conf: Option<CacheConf>) -> Result<CacheSettings, ConfigError> {
    let d = CacheSettings::default();
    let Some(c) = conf else {
        return Ok(d);
    };
    let budget_bytes = within(
        "board_api.cache.budget_bytes",
        c.budget_bytes,
        d.budget_bytes,
        1 << 20,
        1 << 40,
    )?;
    let max_entry_bytes = within(
        "board_api.cache.max_document_bytes",
        c.max_document_bytes,
        budget_bytes / 4,
        1024,
        budget_bytes,
    )?;
    let secs = |key: &str, value: Option<u64>, default: Duration, max: usize| {
        within(
            key,
            value.map(|v| usize::try_from(v).unwrap_or(usize::MAX)),
            default.as_secs() as usize,
            1,
            max,
        )
        .map(|v| Duration::from_secs(v as u64))
    };
    Ok(CacheSettings {
        ttl: secs("board_api.cache.ttl_seconds", c.ttl_seconds, d.ttl, 86_400)?,
        error_ttl: secs(
            "board_api.cache.error_ttl_seconds",
            c.error_ttl_seconds,
            d.error_ttl,
            3_600,
        )?,
        budget_bytes,
        max_entry_bytes,
        max_error_entries: within(
            "board_api.cache.max_error_entries",
            c.max_error_entries,
            d.max_error_entries,
            1,
            1_000_000,
        )?,
    })
}
