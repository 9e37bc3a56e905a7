//! One [`BoardApi`] per configuration file, shared by every caller that asks
//! for the same one: a gateway that rebuilds its plugins on a reload gets
//! the running API back, its warm cache included, instead of a cold copy.

use crate::api::BoardApi;
use crate::config::{ApiSettings, ConfigError};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

/// The APIs alive now, by file, content and whether they claim their whole
/// prefix. Weak: an API lives as long as someone holds it, not as long as
/// the process.
type Registry = Mutex<HashMap<(PathBuf, u128, bool), Weak<BoardApi>>>;

fn registry() -> &'static Registry {
    static REGISTRY: std::sync::OnceLock<Registry> = std::sync::OnceLock::new();
    REGISTRY.get_or_init(Registry::default)
}

impl BoardApi {
    /// The API for the `board_api` section of the YAML file at `path`, as
    /// [`BoardApi::from_file`], shared: while an API built from the same
    /// file with the same content is held anywhere, the caller gets that
    /// one. A changed file builds a new API; the old one ends (threads and
    /// cache) when its last holder drops it. Files the YAML names (a CA
    /// file) are read when an API is built, not compared.
    ///
    /// # Errors
    /// As [`BoardApi::from_file`]; a file that fails its checks is never
    /// shared.
    pub fn shared_from_file(path: &Path) -> Result<Arc<BoardApi>, ConfigError> {
        shared(path, false)
    }

    /// As [`BoardApi::shared_from_file`], for a host that routes a whole
    /// location to the API (a gateway plugin on the location of the
    /// prefix): every path under the prefix is answered, the unknown ones
    /// with `404 NOT_FOUND`, whatever `claim_prefix` says; paths outside it
    /// are still the host's. The file may be the standalone binary's own:
    /// `board_api.server` is left to the binary but for `trusted_proxies`,
    /// read as [`BoardApi::shared_from_file`] reads it, and `otlp`: set, the
    /// API exports the spans of its requests there itself, from a thread of
    /// its own, under a subscriber of its own that leaves the host's alone.
    ///
    /// # Errors
    /// As [`BoardApi::from_file`].
    pub fn shared_for_location(path: &Path) -> Result<Arc<BoardApi>, ConfigError> {
        shared(path, true)
    }
}

fn shared(path: &Path, whole_prefix: bool) -> Result<Arc<BoardApi>, ConfigError> {
    let text = std::fs::read(path)
        .map_err(|e| ConfigError::new("(file)", format!("cannot read {}: {e}", path.display())))?;
    let key = (
        std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()),
        xxhash_rust::xxh3::xxh3_128(&text),
        whole_prefix,
    );
    let mut apis = registry().lock().unwrap_or_else(|e| e.into_inner());
    apis.retain(|_, api| api.strong_count() > 0);
    if let Some(api) = apis.get(&key).and_then(Weak::upgrade) {
        return Ok(api);
    }
    let text = String::from_utf8(text)
        .map_err(|_| ConfigError::new("(file)", format!("{} is not UTF-8", path.display())))?;
    // A location of pingap's takes the standalone binary's file as it is
    // (docs/pingap.md); a host's own code gets every check of from_yaml.
    let settings = if whole_prefix {
        ApiSettings::from_binary_yaml(&text)?
    } else {
        ApiSettings::from_yaml(&text)?
    };
    let mut api = BoardApi::new(&settings)?;
    if whole_prefix {
        api.claim_whole_prefix();
    }
    // The plugin's span export: its own dispatch and sending thread, in a
    // process whose subscriber is the host's.
    #[cfg(feature = "otlp")]
    if let Some(otlp) = settings.span_export.as_ref() {
        let (spans, exporter) = crate::otlp::scoped(otlp);
        exporter.spawn_thread().map_err(|e| {
            ConfigError::new(
                "board_api.server.otlp",
                format!("cannot start the export: {e}"),
            )
        })?;
        api.export_spans(spans);
    }
    let api = Arc::new(api);
    apis.insert(key, Arc::downgrade(&api));
    Ok(api)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, origin: &str) {
        let text = format!(
            "board_api:\n  provider:\n    name: milanote\n    share_host: app.milanote.com\n    origin: {origin}\n"
        );
        std::fs::write(path, text).expect("write config");
    }

    #[test]
    fn the_same_file_shares_one_api_while_it_is_held() {
        let dir = std::env::temp_dir().join(format!("board-api-shared-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("board_api.yaml");
        write(&path, "http://127.0.0.1:9");
        let first = BoardApi::shared_from_file(&path).expect("valid");
        let again = BoardApi::shared_from_file(&path).expect("valid");
        assert!(
            Arc::ptr_eq(&first, &again),
            "a rebuild gets the running API"
        );

        write(&path, "http://127.0.0.1:10");
        let changed = BoardApi::shared_from_file(&path).expect("valid");
        assert!(
            !Arc::ptr_eq(&first, &changed),
            "a changed file is a new API"
        );

        let weak = Arc::downgrade(&changed);
        drop(changed);
        assert!(
            weak.upgrade().is_none(),
            "the registry does not keep it alive"
        );
        let rebuilt = BoardApi::shared_from_file(&path).expect("valid");
        assert!(!Arc::ptr_eq(&first, &rebuilt));

        let location = BoardApi::shared_for_location(&path).expect("valid");
        assert!(!Arc::ptr_eq(&location, &rebuilt), "another kind of host");
        assert!(location.owns("/api/other") && !rebuilt.owns("/api/other"));
        assert!(!location.owns("/other"));

        std::fs::write(&path, "board_api:\n  prefix: nope\n").expect("write");
        assert!(BoardApi::shared_from_file(&path).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
