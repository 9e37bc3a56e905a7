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

use crate::cache::CacheSettings;
use crate::governance::{Limits, WorkPool};
use crate::provider::client::ProviderSettings;
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::PathBuf;
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

/// `board_api.server:`, read by the standalone binary only.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ServerConf {
    /// Addresses to listen on (required, at least one).
    pub listen: Vec<String>,
    #[serde(default)]
    pub tls: Option<TlsConf>,
    #[serde(default)]
    pub metrics: Option<MetricsConf>,
    /// Response compression level (0 turns it off; default 6).
    #[serde(default)]
    pub compression_level: Option<u32>,
    /// Serve the playground page at `GET /` (default false; on in `--demo`).
    #[serde(default)]
    pub playground: Option<bool>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProviderConf {
    /// `source.provider` in documents.
    pub name: String,
    /// The host accepted in `url=` share links.
    pub share_host: String,
    /// Where upstream requests go.
    pub origin: String,
    pub user_agent: Option<String>,
    /// PEM CA bundle for the origin instead of the system roots.
    pub ca_file: Option<PathBuf>,
    pub connect_timeout_ms: Option<u64>,
    pub read_timeout_ms: Option<u64>,
    pub fetch_deadline_ms: Option<u64>,
    pub max_response_bytes: Option<usize>,
    pub max_boards: Option<usize>,
    pub batch_size: Option<usize>,
    pub concurrency: Option<usize>,
    pub max_elements: Option<usize>,
}

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
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LimitsConf {
    /// Threads for CPU-heavy steps (default half the cores, at least 1).
    pub work_threads: Option<usize>,
    /// Jobs waiting for a work thread (default 256).
    pub work_queue: Option<usize>,
    /// Cold loads (fetch + build) at once (default `work_threads`).
    pub max_cold_loads: Option<usize>,
    /// Cold loads waiting for a slot; past it `503 OVERLOADED` (default 64).
    pub cold_queue: Option<usize>,
    /// Requests in flight to the provider at once (default 32).
    pub max_upstream_requests: Option<usize>,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RateLimitConf {
    /// Requests per second allowed per client address on the two endpoints.
    pub requests_per_second: u32,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MetricsConf {
    /// Where Prometheus scrapes `/metrics` (plain HTTP), e.g. `127.0.0.1:9100`.
    pub listen: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TlsConf {
    pub cert: PathBuf,
    pub key: PathBuf,
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
    pub(crate) rate_limit: Option<u32>,
    pub(crate) limits: Limits,
}

/// What only the standalone binary runs on (`board_api.server`).
#[derive(Debug, Clone)]
pub(crate) struct ServerSettings {
    pub listen: Vec<SocketAddr>,
    pub tls: Option<TlsConf>,
    /// The Prometheus exporter's address, when configured.
    pub metrics_listen: Option<SocketAddr>,
    /// 0 (off) to 9; the same level for gzip, brotli and zstd.
    pub compression_level: u32,
    /// Serve the playground page at `GET /`.
    pub playground: bool,
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

impl ServerConf {
    fn validate(self) -> Result<ServerSettings, ConfigError> {
        if self.listen.is_empty() {
            return fail(
                "board_api.server.listen",
                "at least one address is required",
            );
        }
        let mut listen = Vec::with_capacity(self.listen.len());
        for addr in &self.listen {
            match addr.parse::<SocketAddr>() {
                Ok(a) => listen.push(a),
                Err(_) => {
                    return fail(
                        "board_api.server.listen",
                        format!("{addr:?} is not an IP:port address"),
                    )
                }
            }
        }
        if let Some(tls) = &self.tls {
            for (key, path) in [
                ("board_api.server.tls.cert", &tls.cert),
                ("board_api.server.tls.key", &tls.key),
            ] {
                if !path.is_file() {
                    return fail(key, format!("{} is not a readable file", path.display()));
                }
            }
        }
        let metrics_listen = match &self.metrics {
            None => None,
            Some(m) => match m.listen.parse::<SocketAddr>() {
                Ok(a) if !listen.contains(&a) => Some(a),
                Ok(_) => {
                    return fail(
                        "board_api.server.metrics.listen",
                        "must differ from board_api.server.listen",
                    )
                }
                Err(_) => {
                    return fail(
                        "board_api.server.metrics.listen",
                        format!("{:?} is not an IP:port address", m.listen),
                    )
                }
            },
        };
        // Pingora hands one level to every codec; gzip (zlib-ng through
        // flate2) asserts on levels above 9, so 9 is the ceiling for all.
        let compression_level = self.compression_level.unwrap_or(6);
        if compression_level > 9 {
            return fail("board_api.server.compression_level", "must be 0 (off) to 9");
        }
        Ok(ServerSettings {
            listen,
            tls: self.tls,
            metrics_listen,
            compression_level,
            playground: self.playground.unwrap_or(false),
        })
    }
}

impl BoardApiConf {
    /// Checks every value of the API's part and applies defaults.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the first bad key.
    fn validate_api(self) -> Result<ApiSettings, ConfigError> {
        let prefix = validate_prefix(self.prefix.as_deref())?;
        let p = self.provider;
        if p.name.trim().is_empty() {
            return fail("board_api.provider.name", "must not be empty");
        }
        let share_host = p.share_host.trim().to_ascii_lowercase();
        match url::Url::parse(&format!("https://{share_host}/")) {
            Ok(u) if u.host_str() == Some(share_host.as_str()) && u.port().is_none() => {}
            _ => {
                return fail(
                    "board_api.provider.share_host",
                    "must be a bare host name such as app.milanote.com",
                )
            }
        }
        let origin = url::Url::parse(&p.origin).or_else(|e| {
            fail(
                "board_api.provider.origin",
                format!("not a URL ({e}); e.g. https://app.milanote.com"),
            )
        })?;
        let defaults = ProviderSettings::default();
        let user_agent = p.user_agent.unwrap_or(defaults.user_agent.clone());
        if let Some(ca) = &p.ca_file {
            if !ca.is_file() {
                return fail(
                    "board_api.provider.ca_file",
                    format!("{} is not a readable file", ca.display()),
                );
            }
        }
        let provider = ProviderSettings {
            origin,
            user_agent,
            ca_file: p.ca_file,
            connect_timeout: millis(
                "board_api.provider.connect_timeout_ms",
                p.connect_timeout_ms,
                defaults.connect_timeout,
            )?,
            read_timeout: millis(
                "board_api.provider.read_timeout_ms",
                p.read_timeout_ms,
                defaults.read_timeout,
            )?,
            fetch_deadline: millis(
                "board_api.provider.fetch_deadline_ms",
                p.fetch_deadline_ms,
                defaults.fetch_deadline,
            )?,
            max_response_bytes: within(
                "board_api.provider.max_response_bytes",
                p.max_response_bytes,
                defaults.max_response_bytes,
                1024,
                1 << 30,
            )?,
            max_boards: within(
                "board_api.provider.max_boards",
                p.max_boards,
                defaults.max_boards,
                1,
                10_000,
            )?,
            batch_size: within(
                "board_api.provider.batch_size",
                p.batch_size,
                defaults.batch_size,
                1,
                50,
            )?,
            concurrency: within(
                "board_api.provider.concurrency",
                p.concurrency,
                defaults.concurrency,
                1,
                64,
            )?,
            max_elements: within(
                "board_api.provider.max_elements",
                p.max_elements,
                defaults.max_elements,
                1,
                10_000_000,
            )?,
            // Set from `limits.max_upstream_requests` when the API is built.
            max_in_flight: defaults.max_in_flight,
        };
        // The client's own rules (origin shape, user agent, positive limits);
        // its messages start with the setting's name.
        provider.validate().or_else(|message| {
            let setting = message.split(':').next().unwrap_or("");
            fail(&format!("board_api.provider.{setting}"), message.clone())
        })?;
        let cache = match self.cache {
            Some(c) if !c.enabled || c.ttl_seconds == Some(0) => None,
            c => Some(cache_settings(c)?),
        };
        if let Some(r) = &self.rate_limit {
            if r.requests_per_second == 0 {
                return fail(
                    "board_api.rate_limit.requests_per_second",
                    "must be at least 1",
                );
            }
        }
        Ok(ApiSettings {
            prefix,
            claim_prefix: self.claim_prefix.unwrap_or(false),
            provider_name: p.name,
            share_host,
            provider,
            cache,
            rate_limit: self.rate_limit.map(|r| r.requests_per_second),
            limits: limits_settings(self.limits)?,
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

/// `board_api.limits`, with defaults. The bounds keep every value inside
/// what the pool, the semaphores and the OS accept, so nothing that passes
/// here can fail or panic later.
fn limits_settings(conf: Option<LimitsConf>) -> Result<Limits, ConfigError> {
    let d = Limits::default();
    let Some(l) = conf else {
        return Ok(d);
    };
    let work_threads = within(
        "board_api.limits.work_threads",
        l.work_threads,
        WorkPool::default_threads(),
        1,
        256,
    )?;
    Ok(Limits {
        work_threads,
        work_queue: within(
            "board_api.limits.work_queue",
            l.work_queue,
            d.work_queue,
            1,
            1_000_000,
        )?,
        max_cold_loads: within(
            "board_api.limits.max_cold_loads",
            l.max_cold_loads,
            work_threads,
            1,
            10_000,
        )?,
        cold_queue: within(
            "board_api.limits.cold_queue",
            l.cold_queue,
            d.cold_queue,
            0,
            1_000_000,
        )?,
        max_upstream_requests: within(
            "board_api.limits.max_upstream_requests",
            l.max_upstream_requests,
            d.max_upstream_requests,
            1,
            10_000,
        )?,
    })
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
        ];
        for (extra, key) in server_cases {
            let err = server(extra).expect_err(extra);
            assert_eq!(err.key, key, "{extra}: {err}");
        }
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
