//! `board_api.server`: what only the standalone binary reads (listeners, TLS,
//! the metrics listener, response compression, the playground). An embedding
//! host never needs this section.

use super::{fail, ConfigError};
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::PathBuf;

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
