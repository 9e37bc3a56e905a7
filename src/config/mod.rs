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

mod builder;
mod cache;
mod changes;
mod files;
mod limits;
mod live;
mod mcp;
mod otlp;
mod provider;
mod rate_limit;
mod server;
mod shared;
mod watch;

use crate::client_addr::TrustedProxies;
use crate::governance::Limits;
use crate::provider::client::ProviderSettings;
use crate::store::{CacheSettings, SharedSettings, VersionSettings};
pub use builder::ApiSettingsBuilder;
use cache::CacheConf;
use changes::ChangesConf;
pub(crate) use files::writable_file;
use limits::LimitsConf;
use live::LiveConf;
pub use live::LiveSettings;
use mcp::McpConf;
pub use mcp::McpSettings;
pub use otlp::OtlpSettings;
use provider::ProviderConf;
use rate_limit::RateLimitConf;
use serde::Deserialize;
pub use server::{AccessLogSettings, AccessTarget, EdgeTimes};
pub(crate) use server::{ServerConf, ServerSettings};
use std::net::SocketAddr;
use std::time::Duration;
use watch::WatchConf;
pub use watch::{JobSettings, WatchSettings};

/// A configuration problem, naming the key: what every constructor of this
/// crate returns, whether the file, a value or a resource a value names (a CA
/// bundle, a TLS certificate) is at fault. `Display` is `key: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
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

/// A YAML error as a [`ConfigError`]: serde_yaml starts its message with the
/// path of the key at fault (`board_api.cache: unknown field ...`), which
/// becomes the error's key rather than a repeat of it in the message.
pub(crate) fn yaml_fail<T>(e: &serde_yaml::Error) -> Result<T, ConfigError> {
    let text = e.to_string();
    match text.split_once(": ") {
        Some((path, rest)) if path == "board_api" || path.starts_with("board_api.") => {
            fail(path, rest)
        }
        _ => fail("board_api", text),
    }
}

/// `board_api:` as written in the file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BoardApiConf {
    /// This API's name in its metrics' `api` label (default: the prefix).
    #[serde(default)]
    pub name: Option<String>,
    /// Where the endpoints live: `{prefix}/search`, `{prefix}/detail`
    /// (default `/api`).
    #[serde(default)]
    pub prefix: Option<String>,
    /// Embedded only: answer every other path under the prefix with our
    /// `404 NOT_FOUND` instead of leaving it to the host (default false).
    #[serde(default)]
    pub claim_prefix: Option<bool>,
    /// The provider; Milanote's defaults when absent.
    #[serde(default)]
    pub provider: ProviderConf,
    /// In-memory document cache; on with defaults when absent.
    #[serde(default)]
    pub cache: Option<CacheConf>,
    #[serde(default)]
    pub rate_limit: Option<RateLimitConf>,
    /// Work pool, cold-load admission and the upstream cap; defaults when absent.
    #[serde(default)]
    pub limits: Option<LimitsConf>,
    /// The MCP endpoint at `{prefix}/mcp`; on with defaults when absent.
    #[serde(default)]
    pub mcp: Option<McpConf>,
    /// Kept versions for `{prefix}/changes`; in memory when absent.
    #[serde(default)]
    pub changes: Option<ChangesConf>,
    /// Watch jobs and their webhooks; none when absent.
    #[serde(default)]
    pub watch: Option<WatchConf>,
    /// Changes as they happen (streams, long polls, feeds); defaults when
    /// absent.
    #[serde(default)]
    pub live: Option<LiveConf>,
    /// The standalone binary's own settings; an embedding host ignores them.
    #[serde(default)]
    pub server: Option<ServerConf>,
}

/// What the API runs on: everything an embedding host configures.
#[derive(Debug, Clone)]
pub struct ApiSettings {
    /// `board_api.name`: the metrics' `api` label; the prefix by default.
    pub(crate) name: String,
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
    pub(crate) mcp: McpSettings,
    /// Where versions are kept (`board_api.changes`).
    pub(crate) changes: VersionSettings,
    /// Watch jobs (`board_api.watch`), run by the standalone binary.
    pub(crate) watch: WatchSettings,
    /// Streams, long polls and feeds (`board_api.live`).
    pub(crate) live: LiveSettings,
    /// `board_api.server.trusted_proxies`, which a host reads too.
    pub(crate) trusted_proxies: TrustedProxies,
    /// `board_api.server.otlp` as pingap's plugin reads it (the span export
    /// it runs itself); `None` for every other host, and for the binary,
    /// which exports from its own `server` settings.
    pub(crate) span_export: Option<OtlpSettings>,
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
    let file: FileConf = serde_yaml::from_str(text).or_else(|e| yaml_fail(&e))?;
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
    /// Reads the `board_api` section of a whole Pingora YAML file, as an
    /// embedding host uses it: of `board_api.server` (the standalone
    /// binary's section) only `trusted_proxies` is read (default none).
    ///
    /// # Errors
    /// A [`ConfigError`] naming the first bad key, including any other
    /// `board_api.server` key that is set: a host serves the API on its own
    /// listeners, so it would be ignored.
    pub fn from_yaml(text: &str) -> Result<Self, ConfigError> {
        parse(text)?.validate_host()
    }

    /// As [`ApiSettings::from_yaml`], for a file the standalone binary may
    /// read too (pingap's plugin, documented to take the binary's file):
    /// `trusted_proxies` and `otlp` (the plugin's span export) are read, the
    /// rest of `board_api.server` is the binary's and passes unread.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the first bad key.
    pub(crate) fn from_binary_yaml(text: &str) -> Result<Self, ConfigError> {
        let mut conf = parse(text)?;
        let proxies = match &conf.server {
            Some(server) => server::trusted(server.trusted_proxies.as_deref())?,
            None => TrustedProxies::none(),
        };
        let otlp = conf.server.as_mut().and_then(|server| server.otlp.take());
        conf.server = None;
        let mut api = conf.validate_api()?;
        api.trusted_proxies = proxies;
        if cfg!(feature = "otlp") {
            api.span_export = otlp.map(otlp::OtlpConf::validate).transpose()?;
        }
        Ok(api)
    }

    /// The balancers whose forwarding headers name the client
    /// (`board_api.server.trusted_proxies`; default none).
    pub fn trusted_proxies(&self) -> &TrustedProxies {
        &self.trusted_proxies
    }

    /// Reads and validates a YAML file, as [`ApiSettings::from_yaml`].
    ///
    /// # Errors
    /// An unreadable file, or a [`ConfigError`] naming the first bad key.
    pub fn from_file(path: &std::path::Path) -> Result<Self, ConfigError> {
        Self::from_yaml(&read(path)?)
    }

    /// This API's name (`board_api.name`; default the prefix): the `api`
    /// label of its metrics, which tells two instances in one process apart.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where the endpoints live (`board_api.prefix`; default `/api`):
    /// `{prefix}/search` and `{prefix}/detail`. Never ends with `/`.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Whether the MCP endpoint `{prefix}/mcp` is served (`board_api.mcp.enabled`).
    pub fn mcp_enabled(&self) -> bool {
        self.mcp.enabled
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

    /// Listens on `addr` alone instead (the binary's `--demo --listen`).
    pub fn set_listen(&mut self, addr: SocketAddr) {
        self.server.listen = vec![addr];
    }

    /// Where the binary exports its spans (`board_api.server.otlp`;
    /// default none).
    pub fn otlp(&self) -> Option<&OtlpSettings> {
        self.server.otlp.as_ref()
    }

    /// The operator listener (`board_api.server.metrics.listen`; default
    /// none).
    pub fn metrics_listen(&self) -> Option<SocketAddr> {
        self.server.metrics_listen
    }

    /// Reads the whole `board_api` section, `server` included (required).
    ///
    /// # Errors
    /// A [`ConfigError`] naming the first bad key.
    pub fn from_yaml(text: &str) -> Result<Self, ConfigError> {
        let conf = parse(text)?;
        let server = conf.server.clone();
        let mut api = conf.validate_api()?;
        let Some(server) = server else {
            return fail(
                "board_api.server",
                "missing section (the standalone binary needs server.listen)",
            );
        };
        let server = server.validate()?;
        api.trusted_proxies = server.trusted_proxies.clone();
        Ok(Settings { api, server })
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
    /// As [`BoardApiConf::validate_api`], for an embedding host: of the
    /// `server` section, `trusted_proxies` is read and any other key refused.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the first bad key.
    pub(crate) fn validate_host(mut self) -> Result<ApiSettings, ConfigError> {
        let proxies = match self.server.take() {
            Some(server) => server.host_part()?,
            None => TrustedProxies::none(),
        };
        let mut api = self.validate_api()?;
        api.trusted_proxies = proxies;
        Ok(api)
    }

    fn validate_api(mut self) -> Result<ApiSettings, ConfigError> {
        let prefix = validate_prefix(self.prefix.as_deref())?;
        let name = validate_name(self.name.as_deref(), &prefix)?;
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
        let max_document_bytes = cache
            .as_ref()
            .map_or(crate::store::DEFAULT_BUDGET_BYTES / 4, |c| {
                c.max_entry_bytes
            });
        let changes = ChangesConf::validate(
            self.changes,
            max_document_bytes,
            shared.is_some(),
            provider.settings.fetch_deadline,
        )?;
        let freshest = cache.as_ref().map_or(Duration::ZERO, |c| c.ttl);
        let watch = WatchConf::validate(self.watch, freshest)?;
        let rate_limit = match &self.rate_limit {
            Some(r) => Some(r.validate()?),
            None => None,
        };
        Ok(ApiSettings {
            name,
            prefix,
            claim_prefix: self.claim_prefix.unwrap_or(false),
            provider_name: provider.name,
            share_host: provider.share_host,
            provider: provider.settings,
            cache,
            shared,
            rate_limit,
            limits: limits::limits_settings(self.limits)?,
            mcp: McpConf::validate(self.mcp)?,
            changes,
            watch,
            live: LiveConf::validate(self.live)?,
            trusted_proxies: TrustedProxies::none(),
            span_export: None,
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

/// The metrics' `api` label: 1 to 64 printable ASCII characters (a label
/// value that dashboards and alert rules quote); the prefix by default.
fn validate_name(name: Option<&str>, prefix: &str) -> Result<String, ConfigError> {
    let Some(name) = name else {
        return Ok(prefix.to_owned());
    };
    if name.is_empty() || name.len() > 64 || !name.bytes().all(|b| b.is_ascii_graphic()) {
        return fail(
            "board_api.name",
            "must be 1 to 64 printable ASCII characters without spaces, such as edge-boards",
        );
    }
    Ok(name.to_owned())
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
mod tests;
