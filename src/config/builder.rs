//! Settings in code: [`ApiSettingsBuilder`] takes the `board_api` keys a
//! host would write in YAML, by the same dotted names, and validates them
//! exactly as [`ApiSettings::from_yaml`] does. One name for one setting,
//! whichever way it arrives, and no check a file gets that code skips.

use super::{fail, yaml_fail, ApiSettings, BoardApiConf, ConfigError};
use serde_yaml::{Mapping, Value};

/// Builds [`ApiSettings`] from code, key by key, with the names of the
/// `board_api` section (`provider.origin`, `cache.ttl_seconds`, ...).
///
/// ```
/// use shared_board_api::config::ApiSettings;
///
/// let settings = ApiSettings::builder()
///     .set("prefix", "/boards")
///     .set("cache.ttl_seconds", 30)
///     .set("rate_limit.requests_per_second", 50)
///     .build()?;
/// assert_eq!(settings.prefix(), "/boards");
/// # Ok::<(), shared_board_api::config::ConfigError>(())
/// ```
///
/// Nothing is checked until [`build`](Self::build); a key set twice keeps
/// the last value. Default: every key at its documented default, as an
/// empty `board_api:` section.
#[derive(Debug, Clone, Default)]
pub struct ApiSettingsBuilder {
    section: Mapping,
    /// The first key that could not be placed (a path through a value that
    /// is not a section), reported by `build`.
    misplaced: Option<String>,
}

impl ApiSettings {
    /// A builder for settings in code (see [`ApiSettingsBuilder`]).
    pub fn builder() -> ApiSettingsBuilder {
        ApiSettingsBuilder::default()
    }
}

impl ApiSettingsBuilder {
    /// Sets the key at `path` under `board_api` (dot-separated, as the
    /// docs write it without the `board_api.` head) to `value`: a string,
    /// number, boolean, or a [`serde_yaml::Value`] for lists and sections.
    pub fn set(mut self, path: &str, value: impl Into<Value>) -> Self {
        let path = path.strip_prefix("board_api.").unwrap_or(path);
        let mut parts = path.split('.').peekable();
        let mut section = &mut self.section;
        while let Some(part) = parts.next() {
            let key = Value::String(part.to_owned());
            if parts.peek().is_none() {
                section.insert(key, value.into());
                break;
            }
            let entry = section
                .entry(key)
                .or_insert_with(|| Value::Mapping(Mapping::new()));
            match entry {
                Value::Mapping(inner) => section = inner,
                _ => {
                    self.misplaced.get_or_insert_with(|| path.to_owned());
                    break;
                }
            }
        }
        self
    }

    /// Validates the keys set so far, as a file's `board_api` section.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the first unknown or bad key.
    pub fn build(self) -> Result<ApiSettings, ConfigError> {
        if let Some(path) = self.misplaced {
            return fail(
                &format!("board_api.{path}"),
                "a part of this path is set to a value, not a section",
            );
        }
        let conf: BoardApiConf =
            serde_yaml::from_value(Value::Mapping(self.section)).or_else(|e| yaml_fail(&e))?;
        conf.validate_host()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_builder_is_the_empty_section() {
        let built = ApiSettings::builder().build().expect("defaults");
        let read = ApiSettings::from_yaml("board_api: {}\n").expect("defaults");
        assert_eq!(format!("{built:?}"), format!("{read:?}"));
    }

    #[test]
    fn keys_are_the_files_keys() {
        let built = ApiSettings::builder()
            .set("board_api.prefix", "/boards/v1")
            .set("provider.origin", "http://127.0.0.1:9")
            .set("cache.ttl_seconds", 30)
            .build()
            .expect("valid");
        let read = ApiSettings::from_yaml(
            "board_api:\n  prefix: /boards/v1\n  provider:\n    origin: http://127.0.0.1:9\n  cache:\n    ttl_seconds: 30\n",
        )
        .expect("valid");
        assert_eq!(format!("{built:?}"), format!("{read:?}"));
        assert_eq!(built.prefix(), "/boards/v1");
        assert_eq!(built.provider_origin(), "http://127.0.0.1:9/");
    }

    #[test]
    fn the_files_checks_apply() {
        let cases: [(ApiSettingsBuilder, &str); 4] = [
            (ApiSettings::builder().set("prefx", "/api"), "board_api"),
            (
                ApiSettings::builder().set("prefix", "api"),
                "board_api.prefix",
            ),
            (
                ApiSettings::builder().set("provider.origin", "ftp://x"),
                "board_api.provider.origin",
            ),
            (
                ApiSettings::builder()
                    .set("prefix", "/api")
                    .set("prefix.deeper", 1),
                "board_api.prefix.deeper",
            ),
        ];
        for (builder, key) in cases {
            let err = builder.build().expect_err("refused");
            assert!(err.to_string().contains(key), "{err} names {key}");
        }
    }
}
