//! The `board_api` section of the YAML file, beside Pingora's own keys:
//! parsed with the same YAML crate as Pingora's `ServerConf` (one file, one
//! parser), then validated once at start-up. File structs (`...Conf`) are the
//! stable interface operators write; settings (`...Settings`) are what the
//! code runs on, so no value is checked at request time.
//!
//! Two parts: what the API needs ([`ApiSettings`]: prefix, provider, cache,
//! rate limit), which is all an embedding host configures, and what only the
//! standalone binary needs (`board_api.server`, inside [`Settings`]: listeners,
//! TLS, metrics endpoint, compression, playground).

mod cache;
mod limits;
mod provider;
mod rate_limit;
mod server;
mod shared;

use crate::governance::Limits;
use crate::provider::client::ProviderSettings;
use crate::store::{CacheSettings, SharedSettings};
use cache::CacheConf;
use limits::LimitsConf;
use provider::ProviderConf;
use rate_limit::RateLimitConf;
use serde::Deserialize;
pub(crate) use server::{ServerConf, ServerSettings};
use std::net::SocketAddr;
use std::time::Duration;

/// A configuration problem, naming the key: what every constructor of this
/// crate returns, whether the file, a value or a resource a value names (a CA
/// bundle, a TLS certificate) is at fault. `Display` is `key: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The key path, e.g. `board_api.provider.origin`, or `(file)`.
    pub key: String,
    /// What is wrong with it.
    pub message: String,
}

impl ConfigError {
    /// An error for `key`.
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError {
            key: key.into(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.key, self.message)
    }
}

impl std::error::Error for ConfigError {}

fn fail<T>(key: &str, message: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError {
        key: key.to_string(),
        message: message.into(),
    })
}

/// `board_api:` as written in the file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BoardApiConf {
    /// Where the endpoints live: `{prefix}/search`, `{prefix}/detail`
    /// (default `/api`).
    #[serde(default)]
    pub prefix: Option<String>,
    /// Embedded only: answer every other path under the prefix with our
    /// `404 NOT_FOUND` instead of leaving it to the host (default false).
    #[serde(default)]
    pub claim_prefix: Option<bool>,
    pub provider: ProviderConf,
    /// In-memory document cache; on with defaults when absent.
    #[serde(default)]
    pub cache: Option<CacheConf>,
    #[serde(default)]
    pub rate_limit: Option<RateLimitConf>,
    /// Work pool, cold-load admission and the upstream cap; defaults when absent.
    #[serde(default)]
    pub limits: Option<LimitsConf>,
    /// The standalone binary's own settings; an embedding host ignores them.
    #[serde(default)]
    pub server: Option<ServerConf>,
}

/// What the API runs on: everything an embedding host configures.
#[derive(Debug, Clone)]
pub struct ApiSettings {
    /// `/api` by default; never ends with `/`.
    pub(crate) prefix: String,
    /// Embedded: other paths under the prefix are our `404` (default false).
    pub(crate) claim_prefix: bool,
    pub(crate) provider_name: String,
    pub(crate) share_host: String,
    pub(crate) provider: ProviderSettings,
    /// `None`: caching off.
    pub(crate) cache: Option<CacheSettings>,
    /// The fleet tier, when `cache.shared` is set.
    pub(crate) shared: Option<SharedSettings>,
    pub(crate) rate_limit: Option<u32>,
    pub(crate) limits: Limits,
}

/// Both parts, for the standalone binary.
#[derive(Debug, Clone)]
pub struct Settings {
    pub(crate) api: ApiSettings,
    pub(crate) server: ServerSettings,
}

/// The part of the file we read; Pingora's keys beside it are Pingora's.
#[derive(Deserialize)]
struct FileConf {
    board_api: Option<BoardApiConf>,
}

/// Parses the whole file; serde's message names the key path and, where the
/// YAML parser knows it, the line and column.
fn parse(text: &str) -> Result<BoardApiConf, ConfigError> {
    let file: FileConf =
        serde_yaml::from_str(text).or_else(|e| fail("board_api", e.to_string()))?;
    match file.board_api {
        Some(conf) => Ok(conf),
        None => fail("board_api", "missing section"),
    }
}

fn read(path: &std::path::Path) -> Result<String, ConfigError> {
    std::fs::read_to_string(path)
        .or_else(|e| fail("(file)", format!("cannot read {}: {e}", path.display())))
}

impl ApiSettings {
    /// Reads the `board_api` section of a whole Pingora YAML file; a
    /// `board_api.server` section is parsed but not required or validated.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the first bad key.
    pub fn from_yaml(text: &str) -> Result<Self, ConfigError> {
        parse(text)?.validate_api()
    }

    /// Reads and validates a YAML file, as [`ApiSettings::from_yaml`].
    ///
    /// # Errors
    /// An unreadable file, or a [`ConfigError`] naming the first bad key.
    pub fn from_file(path: &std::path::Path) -> Result<Self, ConfigError> {
        Self::from_yaml(&read(path)?)
    }

    /// Where the endpoints live (`board_api.prefix`; default `/api`):
    /// `{prefix}/search` and `{prefix}/detail`. Never ends with `/`.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Where provider requests go (`board_api.provider.origin`; required).
    pub fn provider_origin(&self) -> &str {
        self.provider.origin.as_str()
    }

    /// Points the provider client at another origin, e.g. a local sample
    /// upstream, with the same checks as the file's key.
    ///
    /// # Errors
    /// A [`ConfigError`] for `board_api.provider.origin` when `origin` is not
    /// a bare `http(s)://host[:port]`.
    pub fn set_provider_origin(&mut self, origin: &str) -> Result<(), ConfigError> {
        const KEY: &str = "board_api.provider.origin";
        let mut provider = self.provider.clone();
        provider.origin = url::Url::parse(origin).or_else(|e| fail(KEY, e.to_string()))?;
        provider.validate().or_else(|e| fail(KEY, e))?;
        self.provider = provider;
        Ok(())
    }
}

impl Settings {
    /// The API part: everything an embedding host would configure.
    pub fn api(&self) -> &ApiSettings {
        &self.api
    }

    /// The API part, to adjust before building (see
    /// [`ApiSettings::set_provider_origin`]).
    pub fn api_mut(&mut self) -> &mut ApiSettings {
        &mut self.api
    }

    /// Whether the playground page is served at `GET /`
    /// (`board_api.server.playground`; default false).
    pub fn playground(&self) -> bool {
        self.server.playground
    }

    /// The standalone listeners (`board_api.server.listen`; required, at
    /// least one).
    pub fn listen(&self) -> &[SocketAddr] {
        &self.server.listen
    }

    /// Reads the whole `board_api` section, `server` included (required).
    ///
    /// # Errors
    /// A [`ConfigError`] naming the first bad key.
    pub fn from_yaml(text: &str) -> Result<Self, ConfigError> {
        let conf = parse(text)?;
        let server = conf.server.clone();
        let api = conf.validate_api()?;
        let Some(server) = server else {
            return fail(
                "board_api.server",
                "missing section (the standalone binary needs server.listen)",
            );
        };
        Ok(Settings {
            api,
            server: server.validate()?,
        })
    }

    /// Reads and validates a YAML file, as [`Settings::from_yaml`].
    ///
    /// # Errors
    /// An unreadable file, or a [`ConfigError`] naming the first bad key.
    pub fn from_file(path: &std::path::Path) -> Result<Self, ConfigError> {
        Self::from_yaml(&read(path)?)
    }
}

impl BoardApiConf {
    /// Checks every value of the API's part and applies defaults.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the first bad key.
    fn validate_api(mut self) -> Result<ApiSettings, ConfigError> {
        let prefix = validate_prefix(self.prefix.as_deref())?;
        let provider = self.provider.validate()?;
        let fleet_rps = provider.fleet_requests_per_second;
        let shared_conf = self.cache.as_mut().and_then(|c| c.shared.take());
        let cache = CacheConf::validate(self.cache)?;
        let shared = match shared_conf {
            None if fleet_rps.is_some() => {
                return fail(
                    "board_api.provider.fleet_requests_per_second",
                    "needs the fleet tier (board_api.cache.shared)",
                )
            }
            None => None,
            Some(_) if cache.is_none() => {
                return fail("board_api.cache.shared", "needs the cache on")
            }
            Some(conf) => Some(conf.validate(provider.settings.fetch_deadline, fleet_rps)?),
        };
        let rate_limit = match &self.rate_limit {
            Some(r) => Some(r.validate()?),
            None => None,
        };
        Ok(ApiSettings {
            prefix,
            claim_prefix: self.claim_prefix.unwrap_or(false),
            provider_name: provider.name,
            share_host: provider.share_host,
            provider: provider.settings,
            cache,
            shared,
            rate_limit,
            limits: limits::limits_settings(self.limits)?,
        })
    }
}

/// `/api` by default; one or more `/segment`s of unreserved characters, no
/// trailing `/` (a trailing `/` is dropped).
fn validate_prefix(prefix: Option<&str>) -> Result<String, ConfigError> {
    let Some(raw) = prefix else {
        return Ok("/api".into());
    };
    let trimmed = raw.trim_end_matches('/');
    let valid = trimmed.starts_with('/')
        && trimmed[1..].split('/').all(|segment| {
            !segment.is_empty()
                && segment
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
        });
    if !valid {
        return fail(
            "board_api.prefix",
            format!("{raw:?} is not a path prefix such as /api or /boards/v1"),
        );
    }
    Ok(trimmed.to_string())
}

/// A positive millisecond duration of at most ten minutes.
fn millis(key: &str, value: Option<u64>, default: Duration) -> Result<Duration, ConfigError> {
    match value {
        None => Ok(default),
        Some(ms) if (1..=600_000).contains(&ms) => Ok(Duration::from_millis(ms)),
        Some(_) => fail(key, "must be between 1 and 600000 milliseconds"),
    }
}

fn within(
    key: &str,
    value: Option<usize>,
    default: usize,
    min: usize,
    max: usize,
) -> Result<usize, ConfigError> {
    match value {
        None => Ok(default),
        Some(v) if (min..=max).contains(&v) => Ok(v),
        Some(_) => fail(key, format!("must be between {min} and {max}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "version: 1\nthreads: 2\nboard_api:\n  provider:\n    name: milanote\n    share_host: app.milanote.com\n    origin: https://app.milanote.com\n";

    fn with(extra: &str) -> Result<ApiSettings, ConfigError> {
        ApiSettings::from_yaml(&format!("{BASE}{extra}"))
    }

    /// The binary's view: `extra` lines go under `board_api.server`.
    fn server(extra: &str) -> Result<Settings, ConfigError> {
        Settings::from_yaml(&format!(
            "{BASE}  server:\n    listen: [\"127.0.0.1:8080\"]\n{extra}"
        ))
    }

    #[test]
    fn minimal_file_gets_defaults() {
        let s = with("").expect("valid without server");
        assert_eq!((s.prefix.as_str(), s.claim_prefix), ("/api", false));
        assert_eq!(s.provider_name, "milanote");
        assert_eq!(s.share_host, "app.milanote.com");
        assert_eq!(s.provider.fetch_deadline, Duration::from_millis(15_000));
        assert_eq!(s.provider.max_response_bytes, 33_554_432);
        assert_eq!(s.provider.max_boards, 100);
        assert_eq!(s.provider.batch_size, 50);
        assert_eq!(s.provider.concurrency, 4);
        assert_eq!(s.cache, Some(CacheSettings::default()));
        assert_eq!(s.rate_limit, None);
        let s = server("").expect("valid").server;
        assert_eq!(
            s.listen,
            vec!["127.0.0.1:8080".parse::<SocketAddr>().expect("addr")]
        );
        assert_eq!((s.compression_level, s.playground), (6, false));
    }

    #[test]
    fn the_binary_needs_a_server_section_and_a_host_does_not() {
        assert!(with("").is_ok());
        let err = Settings::from_yaml(BASE).expect_err("no server");
        assert_eq!(err.key, "board_api.server");
        // A host's file may carry the section; the API part ignores it.
        assert!(with("  server:\n    listen: [\"127.0.0.1:1\"]\n").is_ok());
    }

    #[test]
    fn prefixes() {
        let ok = [
            ("/api", "/api"),
            ("/api/", "/api"),
            ("/boards/v1", "/boards/v1"),
            ("/a-b_c.d~e", "/a-b_c.d~e"),
        ];
        for (given, want) in ok {
            let s = with(&format!("  prefix: \"{given}\"\n")).expect(given);
            assert_eq!(s.prefix, want, "{given}");
        }
        for bad in ["", "/", "api", "/api//x", "/a b", "/api?x", "/%41"] {
            let err = with(&format!("  prefix: \"{bad}\"\n")).expect_err(bad);
            assert_eq!(err.key, "board_api.prefix", "{bad}");
        }
        assert!(with("  claim_prefix: true\n").expect("valid").claim_prefix);
    }

    #[test]
    fn errors_name_the_key() {
        let cases = [
            ("    bogus: 1\n", "board_api"),
            ("  bogus: 1\n", "board_api"),
            (
                "    fetch_deadline_ms: 0\n",
                "board_api.provider.fetch_deadline_ms",
            ),
            ("    batch_size: 51\n", "board_api.provider.batch_size"),
            ("    max_boards: 0\n", "board_api.provider.max_boards"),
            ("    concurrency: 0\n", "board_api.provider.concurrency"),
            (
                "    max_response_bytes: 10\n",
                "board_api.provider.max_response_bytes",
            ),
            (
                "    ca_file: /nonexistent/ca.pem\n",
                "board_api.provider.ca_file",
            ),
            (
                "  cache:\n    ttl_seconds: 86401\n",
                "board_api.cache.ttl_seconds",
            ),
            (
                "  rate_limit:\n    requests_per_second: 0\n",
                "board_api.rate_limit.requests_per_second",
            ),
        ];
        for (extra, key) in cases {
            let err = with(extra).expect_err(extra);
            assert_eq!(err.key, key, "{extra}: {err}");
        }
        // serde's message names the unknown key, its path and its line.
        let err = with("    bogus: 1\n").expect_err("unknown key");
        assert!(err.message.contains("bogus"), "{err}");
        assert!(err.message.contains("board_api.provider"), "{err}");
        assert!(err.message.contains("line 8"), "{err}");
        let server_cases = [
            (
                "    compression_level: 10\n",
                "board_api.server.compression_level",
            ),
            (
                "    metrics:\n      listen: nowhere\n",
                "board_api.server.metrics.listen",
            ),
            (
                "    metrics:\n      listen: \"127.0.0.1:8080\"\n",
                "board_api.server.metrics.listen",
            ),
            (
                "    tls:\n      cert: /nonexistent.pem\n      key: /nonexistent.key\n",
                "board_api.server.tls.cert",
            ),
            ("    h2c: true\n    http2: false\n", "board_api.server.h2c"),
            (
                "    h2c: true\n    tls:\n      cert: Cargo.toml\n      key: Cargo.toml\n",
                "board_api.server.h2c",
            ),
            ("    http2: maybe\n", "board_api"),
            (
                "    access_log_buffer: 0\n",
                "board_api.server.access_log_buffer",
            ),
        ];
        for (extra, key) in server_cases {
            let err = server(extra).expect_err(extra);
            assert_eq!(err.key, key, "{extra}: {err}");
        }
        let defaults = server("").expect("defaults");
        assert!(defaults.server.http2 && !defaults.server.h2c);
        assert_eq!(defaults.server.access_log, None);
        let on = server("    h2c: true\n    access_log: true\n    access_log_buffer: 8\n")
            .expect("h2c and the access log");
        assert!(on.server.http2 && on.server.h2c);
        assert_eq!(on.server.access_log, Some(8));
        for level in 0..=9 {
            let s = server(&format!("    compression_level: {level}\n")).expect("in range");
            assert_eq!(s.server.compression_level, level);
        }
    }

    #[test]
    fn bad_values() {
        let bad = [
            ("origin: ftp://x", "board_api.provider.origin"),
            (
                "origin: https://app.milanote.com/path",
                "board_api.provider.origin",
            ),
            ("origin: nope", "board_api.provider.origin"),
            (
                "share_host: https://app.milanote.com",
                "board_api.provider.share_host",
            ),
            (
                "share_host: app.milanote.com:443",
                "board_api.provider.share_host",
            ),
            ("name: \"\"", "board_api.provider.name"),
        ];
        for (replace, key) in bad {
            let (k, _) = replace.split_once(": ").expect("k: v");
            let text: String = BASE
                .lines()
                .map(|l| {
                    if l.trim_start().starts_with(&format!("{k}:")) {
                        format!("{}{replace}\n", &l[..l.len() - l.trim_start().len()])
                    } else {
                        format!("{l}\n")
                    }
                })
                .collect();
            let err = ApiSettings::from_yaml(&text).expect_err(replace);
            assert_eq!(err.key, key, "{replace}: {err}");
        }
        for listen in ["[]", "[\"localhost\"]"] {
            let text = format!("{BASE}  server:\n    listen: {listen}\n");
            let err = Settings::from_yaml(&text).expect_err(listen);
            assert_eq!(err.key, "board_api.server.listen", "{listen}");
        }
        assert_eq!(
            ApiSettings::from_yaml("version: 1\n")
                .expect_err("no section")
                .key,
            "board_api"
        );
    }

    #[test]
    fn cache_can_be_turned_off() {
        for off in ["enabled: false", "ttl: 0", "ttl_seconds: 0"] {
            let settings = with(&format!("  cache:\n    {off}\n")).expect(off);
            assert_eq!(settings.cache, None, "{off}");
        }
    }

    #[test]
    fn cache_accepts_design_names_ttl_and_size() {
        let c = with("  cache:\n    ttl: 30\n    size: 4194304\n").expect("valid");
        let c = c.cache.expect("on");
        assert_eq!(c.ttl, Duration::from_secs(30));
        assert_eq!((c.budget_bytes, c.max_entry_bytes), (4 << 20, 1 << 20));
        let c = with("  cache:\n    budget_bytes: 1073741824\n    max_document_bytes: 5000\n")
            .expect("valid");
        let c = c.cache.expect("on");
        assert_eq!((c.budget_bytes, c.max_entry_bytes), (1 << 30, 5000));
        let err = with("  cache:\n    size: 10\n").expect_err("tiny");
        assert_eq!(err.key, "board_api.cache.budget_bytes");
    }

    #[test]
    fn limits_default_and_refuse_values_that_could_fail_later() {
        let s = with("").expect("valid");
        assert_eq!(s.limits, Limits::default());
        assert!(s.limits.work_threads >= 1);
        let s = with("  limits:\n    work_threads: 3\n    max_cold_loads: 1\n    cold_queue: 0\n    max_upstream_requests: 8\n")
            .expect("valid");
        assert_eq!(
            (
                s.limits.work_threads,
                s.limits.max_cold_loads,
                s.limits.cold_queue
            ),
            (3, 1, 0)
        );
        assert_eq!(s.limits.max_upstream_requests, 8);
        let s = with("  limits:\n    work_threads: 3\n").expect("valid");
        assert_eq!(s.limits.max_cold_loads, 3, "follows work_threads");
        let bad = [
            ("    work_threads: 0\n", "board_api.limits.work_threads"),
            (
                "    work_threads: 100000\n",
                "board_api.limits.work_threads",
            ),
            ("    work_queue: 0\n", "board_api.limits.work_queue"),
            ("    max_cold_loads: 0\n", "board_api.limits.max_cold_loads"),
            (
                "    cold_queue: 18446744073709551615\n",
                "board_api.limits.cold_queue",
            ),
            (
                "    max_upstream_requests: 0\n",
                "board_api.limits.max_upstream_requests",
            ),
            ("    bogus: 1\n", "board_api"),
            ("    cold_queue: -1\n", "board_api"),
        ];
        for (extra, key) in bad {
            let err = with(&format!("  limits:\n{extra}")).expect_err(extra);
            assert_eq!(err.key, key, "{extra}: {err}");
        }
        let cache_bad = [
            ("    budget_bytes: 1000\n", "board_api.cache.budget_bytes"),
            (
                "    budget_bytes: 2097152\n    max_document_bytes: 4194304\n",
                "board_api.cache.max_document_bytes",
            ),
            (
                "    max_error_entries: 0\n",
                "board_api.cache.max_error_entries",
            ),
            (
                "    error_ttl_seconds: 18446744073709551615\n",
                "board_api.cache.error_ttl_seconds",
            ),
            ("    max_entries: 5\n", "board_api"),
        ];
        for (extra, key) in cache_bad {
            let err = with(&format!("  cache:\n{extra}")).expect_err(extra);
            assert_eq!(err.key, key, "{extra}: {err}");
        }
    }

    #[test]
    fn shipped_configs_are_valid() {
        let root = env!("CARGO_MANIFEST_DIR");
        let mut seen = 0;
        for entry in std::fs::read_dir(format!("{root}/conf")).expect("conf/ exists") {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|e| e == "yaml") {
                Settings::from_file(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                seen += 1;
            }
        }
        assert!(seen >= 2);
        let host = std::path::Path::new(root).join("examples/host_gateway.yaml");
        let api = ApiSettings::from_file(&host).expect("the host example's file is valid");
        assert_eq!(api.prefix, "/boards");
    }
}
