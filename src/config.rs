//! The `board_api` section of the YAML file (DESIGN.md section 7): parsed with
//! the same YAML crate as Pingora's `ServerConf`, then validated once at
//! start-up into [`ApiSettings`]. File structs (`...Conf`) are the stable
//! interface; settings are what the code runs on.

use crate::cache::CacheSettings;
use crate::provider::client::ProviderSettings;
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// A configuration problem, naming the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub key: String,
    pub message: String,
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
pub struct BoardApiConf {
    /// Addresses to listen on (required, at least one).
    pub listen: Vec<String>,
    /// Serve the playground page at `GET /` (standalone only; default false).
    #[serde(default)]
    pub playground: Option<bool>,
    pub provider: ProviderConf,
    /// In-memory document cache; on with defaults when absent.
    #[serde(default)]
    pub cache: Option<CacheConf>,
    #[serde(default)]
    pub rate_limit: Option<RateLimitConf>,
    #[serde(default)]
    pub tls: Option<TlsConf>,
    #[serde(default)]
    pub metrics: Option<MetricsConf>,
    /// Response compression level for gzip/brotli/zstd (0 turns it off; default 6).
    #[serde(default)]
    pub compression_level: Option<u32>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConf {
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
pub struct CacheConf {
    /// `false` turns caching and request coalescing off.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Seconds a document is served (DESIGN.md 7 calls it `ttl`); 0 turns
    /// caching off.
    #[serde(alias = "ttl")]
    pub ttl_seconds: Option<u64>,
    pub error_ttl_seconds: Option<u64>,
    pub max_entries: Option<usize>,
    pub max_document_bytes: Option<usize>,
    /// An approximate byte budget (DESIGN.md 7 `size`): sets
    /// `max_document_bytes` to at most it and `max_entries` to one entry per
    /// 64 KiB of it, unless those are given.
    pub size: Option<usize>,
}

/// The typical document size `cache.size` is divided by to count entries.
const TYPICAL_DOCUMENT_BYTES: usize = 64 * 1024;

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimitConf {
    /// Requests per second allowed per client address on the two endpoints.
    pub requests_per_second: u32,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsConf {
    /// Where Prometheus scrapes `/metrics` (plain HTTP), e.g. `127.0.0.1:9100`.
    pub listen: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsConf {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// The validated settings the service runs on.
#[derive(Debug, Clone)]
pub struct ApiSettings {
    pub listen: Vec<SocketAddr>,
    /// The standalone binary serves the playground page at `GET /`.
    pub playground: bool,
    pub provider_name: String,
    pub share_host: String,
    pub provider: ProviderSettings,
    /// `None`: caching off.
    pub cache: Option<CacheSettings>,
    pub rate_limit: Option<u32>,
    pub tls: Option<TlsConf>,
    /// The Prometheus exporter's address, when configured.
    pub metrics_listen: Option<SocketAddr>,
    pub compression_level: u32,
}

/// The part of the file we read; Pingora's keys beside it are Pingora's.
#[derive(Deserialize)]
struct FileConf {
    board_api: Option<serde_yaml::Value>,
}

impl ApiSettings {
    /// Reads the `board_api` section of a whole Pingora YAML file.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the first bad key.
    pub fn from_yaml(text: &str) -> Result<Self, ConfigError> {
        let file: FileConf =
            serde_yaml::from_str(text).or_else(|e| fail("(file)", e.to_string()))?;
        let Some(section) = file.board_api else {
            return fail("board_api", "missing section");
        };
        let conf: BoardApiConf =
            serde_yaml::from_value(section).or_else(|e| fail("board_api", e.to_string()))?;
        conf.validate()
    }

    /// Reads and validates a YAML file.
    ///
    /// # Errors
    /// An unreadable file, or a [`ConfigError`] naming the first bad key.
    pub fn from_file(path: &std::path::Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path)
            .or_else(|e| fail("(file)", format!("cannot read {}: {e}", path.display())))?;
        Self::from_yaml(&text)
    }
}

impl BoardApiConf {
    /// Checks every value and applies defaults.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the first bad key.
    pub fn validate(self) -> Result<ApiSettings, ConfigError> {
        if self.listen.is_empty() {
            return fail("board_api.listen", "at least one address is required");
        }
        let mut listen = Vec::with_capacity(self.listen.len());
        for addr in &self.listen {
            match addr.parse::<SocketAddr>() {
                Ok(a) => listen.push(a),
                Err(_) => {
                    return fail(
                        "board_api.listen",
                        format!("{addr:?} is not an IP:port address"),
                    )
                }
            }
        }
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
        if let Some(tls) = &self.tls {
            for (key, path) in [
                ("board_api.tls.cert", &tls.cert),
                ("board_api.tls.key", &tls.key),
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
                        "board_api.metrics.listen",
                        "must differ from board_api.listen",
                    )
                }
                Err(_) => {
                    return fail(
                        "board_api.metrics.listen",
                        format!("{:?} is not an IP:port address", m.listen),
                    )
                }
            },
        };
        let compression_level = self.compression_level.unwrap_or(6);
        if compression_level > 11 {
            return fail("board_api.compression_level", "must be 0 (off) to 11");
        }
        Ok(ApiSettings {
            listen,
            playground: self.playground.unwrap_or(false),
            provider_name: p.name,
            share_host,
            provider,
            cache,
            rate_limit: self.rate_limit.map(|r| r.requests_per_second),
            tls: self.tls,
            metrics_listen,
            compression_level,
        })
    }
}

/// `board_api.cache`, with defaults; `None` means the section was absent.
fn cache_settings(conf: Option<CacheConf>) -> Result<CacheSettings, ConfigError> {
    let d = CacheSettings::default();
    let Some(c) = conf else {
        return Ok(d);
    };
    let size = c
        .size
        .map(|s| within("board_api.cache.size", Some(s), s, 1024, 1 << 40))
        .transpose()?;
    let default_entries = size.map_or(d.max_entries, |s| (s / TYPICAL_DOCUMENT_BYTES).max(1));
    let default_document = size.map_or(d.max_document_bytes, |s| s.min(d.max_document_bytes));
    let secs = |key: &str, value: Option<u64>, default: Duration, max: usize| {
        within(
            key,
            value.map(|v| v as usize),
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
        max_entries: within(
            "board_api.cache.max_entries",
            c.max_entries,
            default_entries,
            1,
            10_000_000,
        )?,
        max_document_bytes: within(
            "board_api.cache.max_document_bytes",
            c.max_document_bytes,
            default_document,
            1024,
            1 << 32,
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

    const BASE: &str = "version: 1\nthreads: 2\nboard_api:\n  listen: [\"127.0.0.1:8080\"]\n  provider:\n    name: milanote\n    share_host: app.milanote.com\n    origin: https://app.milanote.com\n";

    fn with(extra: &str) -> Result<ApiSettings, ConfigError> {
        ApiSettings::from_yaml(&format!("{BASE}{extra}"))
    }

    #[test]
    fn minimal_file_gets_design_defaults() {
        let s = with("").expect("valid");
        assert_eq!(
            s.listen,
            vec!["127.0.0.1:8080".parse::<SocketAddr>().expect("addr")]
        );
        assert_eq!(s.provider_name, "milanote");
        assert_eq!(s.share_host, "app.milanote.com");
        assert_eq!(s.provider.fetch_deadline, Duration::from_millis(15_000));
        assert_eq!(s.provider.max_response_bytes, 33_554_432);
        assert_eq!(s.provider.max_boards, 100);
        assert_eq!(s.provider.batch_size, 50);
        assert_eq!(s.provider.concurrency, 4);
        assert_eq!(s.cache, Some(CacheSettings::default()));
        assert_eq!(s.rate_limit, None);
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
            ("  compression_level: 12\n", "board_api.compression_level"),
            (
                "  metrics:\n    listen: nowhere\n",
                "board_api.metrics.listen",
            ),
            (
                "  metrics:\n    listen: \"127.0.0.1:8080\"\n",
                "board_api.metrics.listen",
            ),
            (
                "  tls:\n    cert: /nonexistent.pem\n    key: /nonexistent.key\n",
                "board_api.tls.cert",
            ),
        ];
        for (extra, key) in cases {
            let err = with(extra).expect_err(extra);
            assert_eq!(err.key, key, "{extra}: {err}");
        }
        // serde's message names the unknown key itself.
        let err = with("    bogus: 1\n").expect_err("unknown key");
        assert!(err.message.contains("bogus"), "{err}");
    }

    #[test]
    fn bad_values() {
        let bad = [
            ("listen: []", "board_api.listen"),
            ("listen: [\"localhost\"]", "board_api.listen"),
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
        let c = with("  cache:\n    ttl: 30\n    size: 1048576\n").expect("valid");
        let c = c.cache.expect("on");
        assert_eq!(c.ttl, Duration::from_secs(30));
        assert_eq!((c.max_entries, c.max_document_bytes), (16, 1_048_576));
        let c = with("  cache:\n    size: 1073741824\n    max_entries: 5\n").expect("valid");
        let c = c.cache.expect("on");
        assert_eq!((c.max_entries, c.max_document_bytes), (5, 8 << 20));
        let err = with("  cache:\n    size: 10\n").expect_err("tiny");
        assert_eq!(err.key, "board_api.cache.size");
    }

    #[test]
    fn shipped_configs_are_valid() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/conf");
        let mut seen = 0;
        for entry in std::fs::read_dir(dir).expect("conf/ exists") {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|e| e == "yaml") {
                ApiSettings::from_file(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                seen += 1;
            }
        }
        assert!(seen >= 1);
    }
}
