//! `board_api.server`: what only the standalone binary reads (listeners, TLS,
//! HTTP/2, the operator listener, response compression, the playground, the
//! access log). An embedding host never needs this section.

use super::otlp::{OtlpConf, OtlpSettings};
use super::{fail, ConfigError};
use crate::client_addr::TrustedProxies;
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::PathBuf;

/// `board_api.server:`, read by the standalone binary only.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ServerConf {
    /// Addresses to listen on (required by the binary, at least one; a host
    /// sets none).
    #[serde(default)]
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
    /// Offer HTTP/2 by ALPN (`h2`, `http/1.1`) on TLS listeners (default true).
    #[serde(default)]
    pub http2: Option<bool>,
    /// Accept cleartext HTTP/2 with prior knowledge (default false).
    #[serde(default)]
    pub h2c: Option<bool>,
    /// One JSON line per API request: `stdout`, `stderr` (or `true`), a
    /// file path, or `false` (the default).
    #[serde(default)]
    pub access_log: Option<AccessLogConf>,
    /// Access log lines waiting to be written before new ones are dropped
    /// (default 4096).
    #[serde(default)]
    pub access_log_buffer: Option<usize>,
    /// Networks of the balancers whose forwarding headers name the client
    /// (default none).
    #[serde(default)]
    pub trusted_proxies: Option<Vec<String>>,
    /// How long a kept-alive connection may wait for its next request
    /// (default 60 seconds).
    #[serde(default)]
    pub keepalive_idle_seconds: Option<u64>,
    /// How long a client has to send a whole request head (default 10 seconds).
    #[serde(default)]
    pub head_timeout_seconds: Option<u64>,
    /// Span export over OTLP/HTTP (default off).
    #[serde(default)]
    pub otlp: Option<OtlpConf>,
}

/// `board_api.server.access_log` as written: a switch or a destination.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(crate) enum AccessLogConf {
    On(bool),
    To(String),
}

/// Where access lines go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccessTarget {
    Stdout,
    Stderr,
    /// Appended to, created when missing.
    File(PathBuf),
}

/// The access log, when on: its destination and its buffer in lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessLogSettings {
    pub target: AccessTarget,
    pub buffer: usize,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MetricsConf {
    /// Where Prometheus scrapes `/metrics` (plain HTTP), e.g. `127.0.0.1:9100`.
    pub listen: String,
    /// Host names the operator listener answers besides its own address and
    /// `localhost` (default none).
    #[serde(default)]
    pub hosts: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TlsConf {
    pub cert: PathBuf,
    pub key: PathBuf,
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
    /// ALPN `h2,http/1.1` on TLS listeners.
    pub http2: bool,
    /// Cleartext HTTP/2 with prior knowledge on plain listeners.
    pub h2c: bool,
    /// The access log, when on.
    pub access_log: Option<AccessLogSettings>,
    /// Whose forwarding headers name the client.
    pub trusted_proxies: TrustedProxies,
    /// Extra host names the operator listener answers (lower case).
    pub metrics_hosts: Vec<String>,
    /// The connection limits every listener applies (host/edge.rs).
    pub edge: EdgeTimes,
    /// Where spans are exported, when set.
    pub otlp: Option<OtlpSettings>,
}

/// `keepalive_idle_seconds` and `head_timeout_seconds`, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgeTimes {
    /// A kept-alive connection closes when no request starts within this.
    pub idle: std::time::Duration,
    /// A request head must be whole within this of its first byte (of the
    /// connection's start, for its first request).
    pub head: std::time::Duration,
}

impl Default for EdgeTimes {
    fn default() -> Self {
        EdgeTimes {
            idle: std::time::Duration::from_secs(60),
            head: std::time::Duration::from_secs(10),
        }
    }
}

/// Access log lines buffered by default: a few seconds of a busy node's
/// requests while the log's writer catches up, about 1 MiB at most.
const ACCESS_LOG_BUFFER: usize = 4096;

impl ServerConf {
    pub(crate) fn validate(self) -> Result<ServerSettings, ConfigError> {
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
        let http2 = self.http2.unwrap_or(true);
        let h2c = self.h2c.unwrap_or(false);
        if h2c && !http2 {
            return fail(
                "board_api.server.h2c",
                "needs HTTP/2 on (board_api.server.http2 is false)",
            );
        }
        if h2c && self.tls.is_some() {
            // Every listener is TLS then, where ALPN chooses the protocol.
            return fail(
                "board_api.server.h2c",
                "applies to cleartext listeners only, and board_api.server.tls makes every listener TLS",
            );
        }
        // The files last: a combination the settings refuse is named first.
        if let Some(tls) = &self.tls {
            super::files::tls_pair(&tls.cert, &tls.key)?;
        }
        let buffer = self.access_log_buffer.unwrap_or(ACCESS_LOG_BUFFER);
        if !(1..=1_048_576).contains(&buffer) {
            return fail(
                "board_api.server.access_log_buffer",
                "must be 1 to 1048576 lines",
            );
        }
        let seconds = |key: &str, value: Option<u64>, default: u64| match value.unwrap_or(default) {
            s @ 1..=3600 => Ok(std::time::Duration::from_secs(s)),
            _ => fail(
                &format!("board_api.server.{key}"),
                "must be 1 to 3600 seconds",
            ),
        };
        let edge = EdgeTimes {
            idle: seconds("keepalive_idle_seconds", self.keepalive_idle_seconds, 60)?,
            head: seconds("head_timeout_seconds", self.head_timeout_seconds, 10)?,
        };
        let metrics_hosts = self
            .metrics
            .as_ref()
            .map(|m| {
                m.hosts
                    .iter()
                    .map(|h| h.trim().to_ascii_lowercase())
                    .collect()
            })
            .unwrap_or_default();
        Ok(ServerSettings {
            listen,
            metrics_hosts,
            edge,
            tls: self.tls,
            metrics_listen,
            compression_level,
            playground: self.playground.unwrap_or(false),
            http2,
            h2c,
            access_log: access_target(self.access_log)?
                .map(|target| AccessLogSettings { target, buffer }),
            trusted_proxies: trusted(self.trusted_proxies.as_deref())?,
            otlp: self.otlp.map(OtlpConf::validate).transpose()?,
        })
    }

    /// What a host reads of this section: `trusted_proxies` alone, the rest
    /// being the binary's listeners and their options.
    ///
    /// # Errors
    /// A [`ConfigError`] for the first other key set (a host's own listeners
    /// serve the API, so a value there would be silently ignored), or for a
    /// bad `trusted_proxies`.
    pub(crate) fn host_part(&self) -> Result<TrustedProxies, ConfigError> {
        let set = [
            ("listen", !self.listen.is_empty()),
            ("tls", self.tls.is_some()),
            ("metrics", self.metrics.is_some()),
            ("compression_level", self.compression_level.is_some()),
            ("playground", self.playground.is_some()),
            ("http2", self.http2.is_some()),
            ("h2c", self.h2c.is_some()),
            ("access_log", self.access_log.is_some()),
            ("access_log_buffer", self.access_log_buffer.is_some()),
            (
                "keepalive_idle_seconds",
                self.keepalive_idle_seconds.is_some(),
            ),
            ("head_timeout_seconds", self.head_timeout_seconds.is_some()),
            ("otlp", self.otlp.is_some()),
        ];
        if let Some((key, _)) = set.iter().find(|(_, set)| *set) {
            return fail(
                &format!("board_api.server.{key}"),
                "read by the standalone binary only: an embedding host serves the API on \
                 its own listeners (of board_api.server it reads trusted_proxies alone)",
            );
        }
        trusted(self.trusted_proxies.as_deref())
    }
}

/// `board_api.server.trusted_proxies`: networks, default none.
pub(crate) fn trusted(networks: Option<&[String]>) -> Result<TrustedProxies, ConfigError> {
    TrustedProxies::parse(networks.unwrap_or_default().iter().map(String::as_str))
        .or_else(|e| fail("board_api.server.trusted_proxies", e))
}

/// `board_api.server.access_log`: off, or where the lines go. A path must be
/// a file this process can create or append to.
fn access_target(conf: Option<AccessLogConf>) -> Result<Option<AccessTarget>, ConfigError> {
    const KEY: &str = "board_api.server.access_log";
    Ok(match conf {
        None | Some(AccessLogConf::On(false)) => None,
        Some(AccessLogConf::On(true)) => Some(AccessTarget::Stderr),
        Some(AccessLogConf::To(to)) => match to.as_str() {
            "stdout" => Some(AccessTarget::Stdout),
            "stderr" | "true" => Some(AccessTarget::Stderr),
            // A quoted `"false"` means off, not a file named `false`.
            "false" => None,
            "" => return fail(KEY, "stdout, stderr, a file path, true or false"),
            path => {
                let path = PathBuf::from(path);
                super::files::writable_file(KEY, &path)?;
                Some(AccessTarget::File(path))
            }
        },
    })
}
